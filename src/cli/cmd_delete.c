/*
 * `gantry delete KIND NAME... [-p PROJECT]`: delete objects by name, telling
 * each one's fate as kubectl does (`job.gantry.dev "train" deleted`). Every
 * name is tried; the exit status is 1 if any failed.
 */
#include <stdlib.h>

#include "cli/cli_int.h"

int gt_cli_cmd_delete(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                      char **argv)
{
    const char *project_flag, *project;
    const struct gt_kind_info *kind;
    int first;
    int rc = gt_cli_parse_project_opt(ctx, cmd, argc, argv, &project_flag, &first);
    if (rc != 0) {
        return rc;
    }
    if (argc - first < 2) {
        return gt_cli_usage_error(ctx, cmd, argc - first < 1 ? "name a kind" : "name an object");
    }
    rc = gt_cli_resolve_kind(ctx, cmd, argv[first], project_flag, &kind, &project);
    if (rc != 0) {
        return rc;
    }
    struct gt_cli_client *client;
    struct gt_err client_err = {0};
    if (gt_cli_ctx_client(ctx, &client, &client_err) != 0) {
        return gt_cli_fail(ctx, &client_err);
    }
    char res[64];
    gt_cli_kind_resource(kind, res, sizeof(res));
    int status = 0;
    for (int i = first + 1; i < argc; i++) {
        struct gt_err err = {0};
        char *path = gt_cli_kind_path(kind, project, argv[i]);
        if (gt_cli_client_request(client, "DELETE", path, NULL, NULL, &err) == 0) {
            fprintf(ctx->out, "%s \"%s\" deleted\n", res, argv[i]);
        } else {
            status = gt_cli_fail(ctx, &err);
        }
        free(path);
    }
    return status;
}
