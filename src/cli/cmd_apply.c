/*
 * `gantry apply -f FILE|DIR|- [-R]`: create or update every object of YAML
 * or JSON files (several "---"-separated documents each), as kubectl does:
 * a directory's .yaml, .yml and .json files in name order (-R: its
 * subdirectories too, each where it sorts), the documents of a file in
 * order, all of them then in dependency order (Departments, PriorityClasses,
 * Projects, then the rest, each group in that order).
 *
 * Each document is read back first: absent (404) it is created with POST,
 * present it is replaced with PUT carrying the resourceVersion just read, so
 * a change made by someone else in between is refused (409) rather than
 * overwritten — unless what changed in between is only the object's status
 * (a controller reporting), when the PUT is retried on a fresh read, up to
 * APPLY_TRIES times; a PUT the server finds changes nothing keeps the
 * resourceVersion and is reported "unchanged". A failing document is
 * reported (which one, in which file) and the others are still applied; the
 * exit status says some failed, as there is no transaction across objects.
 * Reading and ordering the documents is manifests.c's; Kubeflow training
 * job documents (kubeflow.org/v1 TFJob, PyTorchJob, ...) are converted into gantry Jobs
 * there, before their document is sent, so a manifest with a field gantry
 * cannot honour fails without touching the cluster.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"

struct apply_opts {
    struct gt_cli_file_flags f;
    const char *project;
};

static int on_opt(int opt, const char *value, void *arg)
{
    struct apply_opts *o = arg;
    if (!gt_cli_file_flag(&o->f, opt, value)) {
        GT_ASSERT(opt == 'p');
        o->project = value;
    }
    return 0;
}

/* Tries of a PUT whose object changed only in its status meanwhile. */
#define APPLY_TRIES 5

/* Do a and b differ only in status and resourceVersion (and what the
 * server keeps with it)? */
static bool same_but_status(const json_t *a, const json_t *b)
{
    static const char *const paths[] = {"spec", "metadata.labels", "metadata.annotations",
                                        "metadata.uid"};
    for (size_t i = 0; i < GT_ARRAY_LEN(paths); i++) {
        const json_t *x = gt_json_path(a, paths[i]), *y = gt_json_path(b, paths[i]);
        if (!(x == y || (x && y && json_equal(x, y)))) {
            return false;
        }
    }
    return true;
}

/* GET the object; PUT over it with its resourceVersion, or POST if absent.
 * *outcome says which: "created", "configured", or "unchanged" when the
 * PUT's answer kept the resourceVersion (the server wrote nothing). */
static int apply_one(struct gt_cli_client *client, json_t *doc, const struct gt_cli_target *t,
                     const char **outcome, struct gt_err *err)
{
    char *path = gt_cli_kind_path(t->kind, t->project, t->name);
    json_t *current = NULL, *answer = NULL;
    int rc = gt_cli_client_request(client, "GET", path, NULL, &current, err);
    if (rc == GT_ENOTFOUND) {
        gt_err_clear(err);
        char *collection = gt_cli_kind_path(t->kind, t->project, NULL);
        rc = gt_cli_client_request(client, "POST", collection, doc, NULL, err);
        free(collection);
        *outcome = "created";
    }
    for (int tries = 1; rc == 0 && !*outcome; tries++) {
        json_t *md = json_object_get(doc, "metadata");
        json_t *rv = gt_json_path(current, "metadata.resourceVersion");
        if (rv) {
            json_object_set(md, "resourceVersion", rv);
        }
        json_decref(answer);
        answer = NULL;
        rc = gt_cli_client_request(client, "PUT", path, doc, &answer, err);
        json_t *now = gt_json_path(answer, "metadata.resourceVersion");
        if (rc == 0) {
            *outcome = rv && now && json_equal(rv, now) ? "unchanged" : "configured";
            break;
        }
        json_t *fresh = NULL;
        struct gt_err err2 = {0};
        if (rc != GT_ECONFLICT || tries >= APPLY_TRIES ||
            gt_cli_client_request(client, "GET", path, NULL, &fresh, &err2) != 0 ||
            !same_but_status(current, fresh)) {
            json_decref(fresh);
            break;
        }
        gt_err_clear(err);
        json_decref(current);
        current = fresh;
        rc = 0;
    }
    json_decref(answer);
    json_decref(current);
    free(path);
    return rc;
}

/* Apply one document; prints its outcome, or its error naming it. */
static int apply_doc(struct gt_cli_ctx *ctx, struct gt_cli_client *client,
                     struct gt_cli_manifest *d, const char *project, const char *default_project)
{
    struct gt_err err = {0};
    struct gt_cli_target t = {0};
    const char *outcome = NULL;
    char from_kind[64];
    int rc =
        gt_cli_manifest_target(d, project, default_project, &t, from_kind, sizeof(from_kind), &err);
    if (rc == 0) {
        rc = apply_one(client, d->obj, &t, &outcome, &err);
    }
    if (rc != 0) {
        gt_cli_manifest_describe_failure(&err, d->file, d->index, d->n_docs, &t);
        fflush(ctx->out);
        return gt_cli_fail(ctx, &err);
    }
    char res[64];
    gt_cli_kind_resource(t.kind, res, sizeof(res));
    if (from_kind[0]) {
        fprintf(ctx->out, "%s/%s %s (as %s/%s)\n", from_kind, t.name, outcome, res, t.name);
    } else {
        fprintf(ctx->out, "%s/%s %s\n", res, t.name, outcome);
    }
    fflush(ctx->out);
    return 0;
}

int gt_cli_cmd_apply(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                     char **argv)
{
    static const struct option long_opts[] = {
        {"filename", required_argument, NULL, 'f'},
        {"recursive", no_argument, NULL, 'R'},
        {"project", required_argument, NULL, 'p'},
        {NULL, 0, NULL, 0},
    };
    struct apply_opts o = {0};
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "f:p:R", long_opts, on_opt, &o, &first);
    if (rc != 0) {
        return rc;
    }
    if (o.f.n_files == 0) {
        return gt_cli_usage_error(ctx, cmd, "-f FILE is required");
    }
    if (o.f.too_many) {
        return gt_cli_usage_error(ctx, cmd, "at most %d -f files", GT_CLI_MAX_FILES);
    }
    if (first < argc) {
        return gt_cli_usage_error(ctx, cmd, "unexpected argument \"%s\"", argv[first]);
    }
    const char *default_project;
    struct gt_err err = {0};
    if (gt_cli_ctx_project(ctx, o.project, &default_project, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    struct gt_cli_manifests in;
    rc = gt_cli_manifests_read(&in, o.f.files, o.f.n_files, o.f.recursive, &err);
    struct gt_cli_client *client = NULL;
    if (rc == 0) {
        rc = gt_cli_ctx_client(ctx, &client, &err);
    }
    if (rc != 0) {
        gt_cli_manifests_fini(&in);
        return gt_cli_fail(ctx, &err);
    }
    int failed = 0;
    for (size_t i = 0; i < in.n; i++) {
        int one = apply_doc(ctx, client, &in.docs[i], o.project, default_project);
        failed = failed ? failed : one;
    }
    gt_cli_manifests_fini(&in);
    return failed;
}
