/*
 * `gantry notebook create|open|stop|start|delete NAME` (docs/api.md
 * "Notebooks").
 *
 * create POSTs a Notebook whose template asks for --gpus, --cpu and
 * --memory (quantities as typed; the server checks them), with --image
 * (default: the node's environment, which runs Jupyter) and --home VOL
 * (its home: the project's Volume VOL, or, for an absolute path, that
 * hostPath). open prints the URL to open in a browser: gantryd's
 * address, the notebook's base URL and ?gantry-token= with the caller's
 * own token, which the proxy turns into a cookie. stop and start set
 * spec.stopped by a read-modify-write conditional on the resourceVersion,
 * retried on conflict (the controller writes the notebook's status).
 * delete removes the notebook (its home Volume or directory stays).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"
#include "common/resource.h"

#define MAX_CONFLICT_RETRIES 8

enum { OPT_GPUS = 1000, OPT_CPU, OPT_MEMORY, OPT_IMAGE, OPT_HOME };

struct nb_flags {
    const char *project, *gpus, *cpu, *memory, *image, *home;
};

static int on_opt(int opt, const char *value, void *arg)
{
    struct nb_flags *f = arg;
    switch (opt) {
    case 'p':
        f->project = value;
        break;
    case OPT_GPUS:
        f->gpus = value;
        break;
    case OPT_CPU:
        f->cpu = value;
        break;
    case OPT_MEMORY:
        f->memory = value;
        break;
    case OPT_IMAGE:
        f->image = value;
        break;
    case OPT_HOME:
        f->home = value;
        break;
    default:
        return GT_EUSAGE;
    }
    return 0;
}

static char *nb_path(const char *project, const char *name)
{
    return name ? gt_xasprintf("/apis/gantry.dev/v1/projects/%s/notebooks/%s", project, name)
                : gt_xasprintf("/apis/gantry.dev/v1/projects/%s/notebooks", project);
}

static void add_limit(json_t *limits, const char *res, const char *value)
{
    if (value) {
        json_object_set_new(limits, res, json_string(value));
    }
}

static int create(struct gt_cli_client *c, const struct nb_flags *f, const char *project,
                  const char *name, struct gt_err *err)
{
    json_t *limits = json_object();
    add_limit(limits, GT_RES_NAME_GPU, f->gpus);
    add_limit(limits, "cpu", f->cpu);
    add_limit(limits, "memory", f->memory);
    json_t *tmpl = json_pack("{s:{s:o}}", "resources", "limits", limits);
    if (f->image) {
        json_object_set_new(tmpl, "image", json_string(f->image));
    }
    json_t *spec = json_pack("{s:o}", "template", tmpl);
    if (f->home) {
        json_object_set_new(spec, "home",
                            json_pack("{s:s}", f->home[0] == '/' ? "hostPath" : "volume", f->home));
    }
    json_t *nb = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", GT_API_VERSION, "kind",
                           "Notebook", "metadata", "name", name, "project", project, "spec", spec);
    char *path = nb_path(project, NULL);
    int rc = gt_cli_client_request(c, "POST", path, nb, NULL, err);
    free(path);
    json_decref(nb);
    return rc;
}

/* spec.stopped = stopped, retried on conflict. */
static int set_stopped(struct gt_cli_client *c, const char *path, bool stopped, struct gt_err *err)
{
    int rc = 0;
    for (int i = 0; i < MAX_CONFLICT_RETRIES; i++) {
        json_t *nb = NULL;
        rc = gt_cli_client_request(c, "GET", path, NULL, &nb, err);
        if (rc != 0) {
            return rc;
        }
        json_t *spec = json_object_get(nb, "spec");
        if (!json_is_object(spec)) {
            spec = json_object();
            json_object_set_new(nb, "spec", spec);
        }
        json_object_set_new(spec, "stopped", json_boolean(stopped));
        rc = gt_cli_client_request(c, "PUT", path, nb, NULL, err);
        json_decref(nb);
        if (rc != GT_ECONFLICT) {
            return rc;
        }
    }
    return rc;
}

/* The browser's URL: server, base URL and the caller's token for the cookie. */
static int open_url(struct gt_cli_ctx *ctx, struct gt_cli_client *c, const char *path,
                    struct gt_err *err)
{
    json_t *nb = NULL;
    int rc = gt_cli_client_request(c, "GET", path, NULL, &nb, err);
    if (rc != 0) {
        return rc;
    }
    const char *url = json_string_value(gt_json_path(nb, "status.url"));
    const char *phase = json_string_value(gt_json_path(nb, "status.phase"));
    struct gt_cli_config cfg;
    rc = url ? gt_cli_config_resolve(ctx->server_flag, ctx->token_flag, &cfg, err)
             : gt_err_set(err, GT_ENOTFOUND, "the notebook has no URL yet");
    if (rc == 0) {
        size_t n = strlen(cfg.server);
        while (n > 0 && cfg.server[n - 1] == '/') {
            n--;
        }
        fprintf(ctx->out, "%.*s%s%s%s\n", (int)n, cfg.server, url,
                cfg.token ? "?gantry-token=" : "", cfg.token ? cfg.token : "");
        if (phase && strcmp(phase, "Running") != 0) {
            fprintf(ctx->err, "note: the notebook is %s\n", phase);
        }
        gt_cli_config_fini(&cfg);
    }
    json_decref(nb);
    return rc;
}

int gt_cli_cmd_notebook(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                        char **argv)
{
    static const struct option long_opts[] = {
        {"project", required_argument, NULL, 'p'},
        {"gpus", required_argument, NULL, OPT_GPUS},
        {"cpu", required_argument, NULL, OPT_CPU},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"image", required_argument, NULL, OPT_IMAGE},
        {"home", required_argument, NULL, OPT_HOME},
        {NULL, 0, NULL, 0},
    };
    struct nb_flags f = {0};
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "p:", long_opts, on_opt, &f, &first);
    if (rc != 0) {
        return rc;
    }
    static const char *const verbs[] = {"create", "open", "stop", "start", "delete"};
    const char *verb = first < argc ? argv[first] : NULL;
    size_t v = 0;
    while (verb && v < GT_ARRAY_LEN(verbs) && strcmp(verb, verbs[v]) != 0) {
        v++;
    }
    if (!verb || v == GT_ARRAY_LEN(verbs)) {
        return gt_cli_usage_error(ctx, cmd, "want one of create, open, stop, start, delete");
    }
    if (first + 2 != argc) {
        return gt_cli_usage_error(ctx, cmd, "notebook %s takes one NAME", verb);
    }
    if (v != 0 && (f.gpus || f.cpu || f.memory || f.image || f.home)) {
        return gt_cli_usage_error(ctx, cmd,
                                  "--gpus, --cpu, --memory, --image and --home are "
                                  "for create");
    }
    const char *name = argv[first + 1];
    struct gt_err err = {0};
    const char *project;
    struct gt_cli_client *c;
    if (gt_cli_ctx_project(ctx, f.project, &project, &err) != 0 ||
        gt_cli_ctx_client(ctx, &c, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    if (!project) {
        return gt_cli_usage_error(ctx, cmd, "no project: pass -p PROJECT (or run 'gantry up')");
    }
    char *path = nb_path(project, name);
    switch (v) {
    case 0:
        rc = create(c, &f, project, name, &err);
        break;
    case 1:
        rc = open_url(ctx, c, path, &err);
        break;
    case 2:
    case 3:
        rc = set_stopped(c, path, v == 2, &err);
        break;
    default:
        rc = gt_cli_client_request(c, "DELETE", path, NULL, NULL, &err);
        break;
    }
    free(path);
    if (rc != 0) {
        return gt_cli_fail(ctx, &err);
    }
    if (v != 1) {
        static const char *const done[] = {"created", "", "stopping", "starting", "deleted"};
        fprintf(ctx->out, "notebook.gantry.dev/%s %s\n", name, done[v]);
    }
    return 0;
}
