/*
 * `gantry model register NAME (--from-job JOB --path PATH [--task TASK] |
 * --file HOSTPATH) [--metric K=V]... [--format F] [-p PROJECT]` and
 * `gantry model stage NAME VERSION STAGE`: the model registry's verbs
 * (docs/api.md "Models"). register POSTs a ModelVersion (creating the
 * Model first when it is missing and --format says its framework); the
 * server copies the artifact into the model store, gives the version its
 * number and checks everything else. stage replaces the version's
 * spec.stage (None, Staging, Production, Archived).
 */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"

struct model_flags {
    const char *project, *job, *path, *task, *file, *format;
    json_t *metrics;
    const char *bad_metric;
};

static int on_model_opt(int opt, const char *value, void *arg)
{
    struct model_flags *f = arg;
    switch (opt) {
    case 'p':
        f->project = value;
        break;
    case 'j':
        f->job = value;
        break;
    case 'P':
        f->path = value;
        break;
    case 't':
        f->task = value;
        break;
    case 'f':
        f->file = value;
        break;
    case 'F':
        f->format = value;
        break;
    case 'm': {
        const char *eq = strchr(value, '=');
        char *end = NULL;
        double v = eq ? strtod(eq + 1, &end) : 0;
        if (!eq || eq == value || end == eq + 1 || *end || !isfinite(v)) {
            f->bad_metric = value;
            break;
        }
        char *k = gt_xstrdup(value);
        k[eq - value] = '\0';
        json_object_set_new(f->metrics, k, json_real(v));
        free(k);
        break;
    }
    default:
        break;
    }
    return 0;
}

/* The Model NAME exists, or is made with framework format (NULL: an error). */
static int ensure_model(struct gt_cli_client *client, const char *project, const char *name,
                        const char *format, struct gt_err *err)
{
    const struct gt_kind_info *k = gt_kind_get(GT_KIND_MODEL);
    char *path = gt_cli_kind_path(k, project, name);
    json_t *got = NULL;
    int rc = gt_cli_client_request(client, "GET", path, NULL, &got, err);
    free(path);
    json_decref(got);
    if (rc != GT_ENOTFOUND) {
        return rc;
    }
    if (!format) {
        return gt_err_set(
            err, GT_ENOTFOUND,
            "models \"%s\" not found in project \"%s\": give --format sklearn|pytorch "
            "to create it",
            name, project);
    }
    *err = (struct gt_err){0};
    json_t *m = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", GT_API_VERSION, "kind",
                          "Model", "metadata", "name", name, "project", project, "spec",
                          "framework", format);
    path = gt_cli_kind_path(k, project, NULL);
    rc = gt_cli_client_request(client, "POST", path, m, NULL, err);
    free(path);
    json_decref(m);
    return rc;
}

static int model_register(struct gt_cli_ctx *ctx, struct gt_cli_client *client, const char *project,
                          const char *name, const struct model_flags *f)
{
    struct gt_err err = {0};
    int rc = ensure_model(client, project, name, f->format, &err);
    if (rc) {
        return gt_cli_fail(ctx, &err);
    }
    json_t *src = json_object();
    if (f->job) {
        json_object_set_new(src, "job", json_string(f->job));
        json_object_set_new(src, "path", json_string(f->path));
        if (f->task) {
            json_object_set_new(src, "task", json_string(f->task));
        }
    } else {
        json_object_set_new(src, "hostPath", json_string(f->file));
    }
    json_t *spec = json_pack("{s:s, s:o}", "model", name, "source", src);
    if (f->format) {
        json_object_set_new(spec, "format", json_string(f->format));
    }
    if (json_object_size(f->metrics)) {
        json_object_set(spec, "metrics", f->metrics);
    }
    /* the server gives the name (<model>-v<N>) */
    json_t *mv =
        json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", GT_API_VERSION, "kind",
                  "ModelVersion", "metadata", "name", name, "project", project, "spec", spec);
    char *path = gt_cli_kind_path(gt_kind_get(GT_KIND_MODELVERSION), project, NULL);
    json_t *got = NULL;
    rc = gt_cli_client_request(client, "POST", path, mv, &got, &err);
    free(path);
    json_decref(mv);
    if (rc) {
        return gt_cli_fail(ctx, &err);
    }
    char res[64];
    fprintf(ctx->out, "%s/%s registered (version %lld, %s)\n",
            gt_cli_kind_resource(gt_kind_get(GT_KIND_MODELVERSION), res, sizeof(res)),
            gt_obj_name(got), (long long)json_integer_value(gt_json_path(got, "status.version")),
            json_string_value(gt_json_path(got, "status.digest")));
    json_decref(got);
    return 0;
}

static int model_stage(struct gt_cli_ctx *ctx, struct gt_cli_client *client, const char *project,
                       const char *name, const char *version, const char *stage)
{
    struct gt_err err = {0};
    char mv_name[128];
    snprintf(mv_name, sizeof(mv_name), "%s-v%s", name, version);
    char *path = gt_cli_kind_path(gt_kind_get(GT_KIND_MODELVERSION), project, mv_name);
    json_t *mv = NULL;
    int rc = gt_cli_client_request(client, "GET", path, NULL, &mv, &err);
    if (rc == 0) {
        json_object_del(mv, "status");
        json_object_set_new(json_object_get(mv, "spec"), "stage", json_string(stage));
        rc = gt_cli_client_request(client, "PUT", path, mv, NULL, &err);
    }
    free(path);
    json_decref(mv);
    if (rc) {
        return gt_cli_fail(ctx, &err);
    }
    char res[64];
    fprintf(ctx->out, "%s/%s staged %s\n",
            gt_cli_kind_resource(gt_kind_get(GT_KIND_MODELVERSION), res, sizeof(res)), mv_name,
            stage);
    return 0;
}

int gt_cli_cmd_model(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                     char **argv)
{
    static const struct option long_opts[] = {
        {"project", required_argument, NULL, 'p'}, {"from-job", required_argument, NULL, 'j'},
        {"path", required_argument, NULL, 'P'},    {"task", required_argument, NULL, 't'},
        {"file", required_argument, NULL, 'f'},    {"format", required_argument, NULL, 'F'},
        {"metric", required_argument, NULL, 'm'},  {NULL, 0, NULL, 0},
    };
    struct model_flags f = {.metrics = json_object()};
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "p:", long_opts, on_model_opt, &f, &first);
    const char *verb = argc - first >= 1 ? argv[first] : "";
    bool reg = !strcmp(verb, "register") && argc - first == 2;
    bool stage = !strcmp(verb, "stage") && argc - first == 4;
    if (rc == 0 && f.bad_metric) {
        rc = gt_cli_usage_error(ctx, cmd, "--metric: want NAME=NUMBER");
    } else if (rc == 0 && !reg && !stage) {
        rc = gt_cli_usage_error(ctx, cmd,
                                "want: model register NAME (--from-job JOB --path PATH | --file "
                                "HOSTPATH), or model stage NAME VERSION STAGE");
    } else if (rc == 0 && reg && !f.job == !f.file) {
        rc = gt_cli_usage_error(ctx, cmd, "register: give exactly one of --from-job and --file");
    } else if (rc == 0 && reg && f.job && !f.path) {
        rc = gt_cli_usage_error(ctx, cmd, "--path: required with --from-job (e.g. out/model.pt)");
    }
    struct gt_err err = {0};
    const char *project = NULL;
    struct gt_cli_client *client = NULL;
    if (rc == 0 && (gt_cli_ctx_project(ctx, f.project, &project, &err) ||
                    gt_cli_ctx_client(ctx, &client, &err))) {
        rc = gt_cli_fail(ctx, &err);
    }
    if (rc == 0 && !project) {
        rc = gt_cli_usage_error(ctx, cmd, "name a project with -p");
    }
    if (rc == 0) {
        rc = reg ? model_register(ctx, client, project, argv[first + 1], &f)
                 : model_stage(ctx, client, project, argv[first + 1], argv[first + 2],
                               argv[first + 3]);
    }
    json_decref(f.metrics);
    return rc;
}
