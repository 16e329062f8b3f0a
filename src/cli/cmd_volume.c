/*
 * `gantry volume create NAME --size 64Mi [--class C] [--access-mode M]
 * [--read-only] [-p PROJECT]`: POST a Volume, as `apply -f` of the same
 * manifest would (docs/api.md "Volumes"). The server checks everything
 * (the size, the storage class, the storage quota) and names the field it
 * refuses; the command only builds the object.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"

struct volume_flags {
    const char *project, *size, *class_name, *access_mode;
    bool read_only;
};

static int on_volume_opt(int opt, const char *value, void *arg)
{
    struct volume_flags *f = arg;
    switch (opt) {
    case 'p':
        f->project = value;
        break;
    case 's':
        f->size = value;
        break;
    case 'c':
        f->class_name = value;
        break;
    case 'a':
        f->access_mode = value;
        break;
    case 'r':
        f->read_only = true;
        break;
    default:
        break;
    }
    return 0;
}

json_t *gt_cli_volume_manifest(const char *project, const char *name, const char *size,
                               const char *class_name, const char *access_mode, bool read_only)
{
    json_t *spec = json_pack("{s:{s:s}}", "capacity", GT_RES_NAME_STORAGE, size);
    if (class_name) {
        json_object_set_new(spec, "storageClass", json_string(class_name));
    }
    if (access_mode) {
        json_object_set_new(spec, "accessMode", json_string(access_mode));
    }
    if (read_only) {
        json_object_set_new(spec, "readOnly", json_true());
    }
    return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", GT_API_VERSION, "kind",
                     "Volume", "metadata", "name", name, "project", project, "spec", spec);
}

int gt_cli_cmd_volume(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                      char **argv)
{
    static const struct option long_opts[] = {
        {"project", required_argument, NULL, 'p'}, {"size", required_argument, NULL, 's'},
        {"class", required_argument, NULL, 'c'},   {"access-mode", required_argument, NULL, 'a'},
        {"read-only", no_argument, NULL, 'r'},     {NULL, 0, NULL, 0},
    };
    struct volume_flags f = {0};
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "p:", long_opts, on_volume_opt, &f, &first);
    if (rc != 0) {
        return rc;
    }
    if (argc - first != 2 || strcmp(argv[first], "create") != 0) {
        return gt_cli_usage_error(ctx, cmd, "want: volume create NAME --size SIZE");
    }
    if (!f.size) {
        return gt_cli_usage_error(ctx, cmd, "--size: required (a size such as 64Mi)");
    }
    struct gt_err err = {0};
    const char *project;
    struct gt_cli_client *client;
    if (gt_cli_ctx_project(ctx, f.project, &project, &err) ||
        gt_cli_ctx_client(ctx, &client, &err)) {
        return gt_cli_fail(ctx, &err);
    }
    if (!project) {
        return gt_cli_usage_error(ctx, cmd, "name a project with -p");
    }
    const char *name = argv[first + 1];
    json_t *vol =
        gt_cli_volume_manifest(project, name, f.size, f.class_name, f.access_mode, f.read_only);
    char *path = gt_cli_kind_path(gt_kind_get(GT_KIND_VOLUME), project, NULL);
    rc = gt_cli_client_request(client, "POST", path, vol, NULL, &err);
    free(path);
    json_decref(vol);
    if (rc) {
        return gt_cli_fail(ctx, &err);
    }
    char res[64];
    fprintf(ctx->out, "%s/%s created\n",
            gt_cli_kind_resource(gt_kind_get(GT_KIND_VOLUME), res, sizeof(res)), name);
    return 0;
}
