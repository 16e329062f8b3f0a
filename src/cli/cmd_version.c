/*
 * `gantry version [--client]`, as kubectl has it: the CLI's release and,
 * unless --client, the server's (GET /version).
 */

#include "cli/cli_int.h"

enum { OPT_CLIENT = 1000 };

static int on_version_opt(int opt, const char *value, void *arg)
{
    (void)value;
    GT_ASSERT(opt == OPT_CLIENT);
    *(bool *)arg = true;
    return 0;
}

int gt_cli_cmd_version(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                       char **argv)
{
    static const struct option long_opts[] = {
        {"client", no_argument, NULL, OPT_CLIENT},
        {NULL, 0, NULL, 0},
    };
    bool client_only = false;
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "", long_opts, on_version_opt, &client_only,
                               &first);
    if (rc != 0) {
        return rc;
    }
    if (first < argc) {
        return gt_cli_usage_error(ctx, cmd, "too many arguments");
    }
    fprintf(ctx->out, "Client Version: %s\n", GT_VERSION);
    if (client_only) {
        return 0;
    }
    struct gt_err err = {0};
    struct gt_cli_client *client;
    json_t *ans = NULL;
    if (gt_cli_ctx_client(ctx, &client, &err) != 0 ||
        gt_cli_client_request(client, "GET", "/version", NULL, &ans, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    const char *v = json_string_value(json_object_get(ans, "version"));
    const char *api = json_string_value(json_object_get(ans, "apiVersion"));
    fprintf(ctx->out, "Server Version: %s\nAPI Version: %s\n", v ? v : "unknown",
            api ? api : "unknown");
    json_decref(ans);
    return 0;
}
