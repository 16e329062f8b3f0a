/*
 * `gantry apply -f FILE|-`: create or update every object of a YAML or JSON
 * file (several "---"-separated documents) in order.
 *
 * Each document is read back first: absent (404) it is created with POST,
 * present it is replaced with PUT carrying the resourceVersion just read, so
 * a change made by someone else in between is refused (409) rather than
 * overwritten. Apply stops at the first failure; the documents before it stay
 * applied and the error says so, as there is no transaction across objects.
 *
 * Kubeflow TFJob and PyTorchJob documents (kubeflow.org/v1) are converted
 * into gantry Jobs here, before anything is sent, so a manifest with a field
 * gantry cannot honour fails without touching the cluster.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_int.h"

enum { MAX_INPUT_BYTES = 64 << 20 };

enum { MAX_FILES = 64 };

struct apply_opts {
    const char *files[MAX_FILES]; /* -f may be repeated, applied in order (as kubectl) */
    size_t n_files;
    bool too_many;
    const char *project;
};

static int on_opt(int opt, const char *value, void *arg)
{
    struct apply_opts *o = arg;
    if (opt == 'f') {
        if (o->n_files == MAX_FILES) {
            o->too_many = true;
        } else {
            o->files[o->n_files++] = value;
        }
    } else {
        GT_ASSERT(opt == 'p');
        o->project = value;
    }
    return 0;
}

/* Read all of path ("-": standard input) into a new buffer *text (caller
 * frees). 0 or -errno/GT_ETOOLARGE (over 64 MiB). */
static int read_input(const char *path, char **text, size_t *len, struct gt_err *err)
{
    if (strcmp(path, "-") == 0) {
        return gt_file_read_fd(STDIN_FILENO, path, MAX_INPUT_BYTES, text, len, err);
    }
    return gt_file_read(path, MAX_INPUT_BYTES, text, len, err);
}

/* Where one document goes, worked out before talking to the server. */
struct target {
    const struct gt_kind_info *kind;
    const char *name;
    const char *project; /* NULL for cluster-scoped kinds */
};

static int resolve_target(json_t *doc, const char *project_flag, const char *default_project,
                          struct target *t, struct gt_err *err)
{
    if (!json_is_object(doc)) {
        return gt_err_set(err, GT_EBADREQ, "not an object");
    }
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!kind) {
        return gt_err_set(err, GT_EBADREQ, "kind: required");
    }
    t->kind = gt_kind_by_name(kind);
    if (!t->kind) {
        return gt_err_set(err, GT_EBADREQ, "kind: unknown kind \"%s\"", kind);
    }
    t->name = json_string_value(gt_json_path(doc, "metadata.name"));
    if (!t->name || !*t->name) {
        return gt_err_set(err, GT_EBADREQ, "metadata.name: required");
    }
    t->project = NULL;
    if (!t->kind->namespaced) {
        return 0;
    }
    const char *p = json_string_value(gt_json_path(doc, "metadata.project"));
    if (p && project_flag && strcmp(p, project_flag) != 0) {
        return gt_err_set(err, GT_EBADREQ, "metadata.project \"%s\" does not match -p \"%s\"", p,
                          project_flag);
    }
    t->project = p ? p : project_flag ? project_flag : default_project;
    if (!t->project) {
        return gt_err_set(err, GT_EBADREQ, "metadata.project: required (or pass -p PROJECT)");
    }
    return 0;
}

/* A kubeflow.org document in place in docs[i] becomes the gantry Job it
 * converts to, in project (-p, else the configuration file's; may be NULL)
 * when it names no namespace, as kubectl puts it in the context's
 * namespace; from_kind (e.g. "pytorchjob.kubeflow.org") names what it was,
 * "" for a gantry document. */
static int convert_kubeflow(json_t *docs, size_t i, const char *project, char *from_kind,
                            size_t len, struct gt_err *err)
{
    json_t *doc = json_array_get(docs, i);
    from_kind[0] = '\0';
    if (!gt_api_kubeflow_is(doc)) {
        return 0;
    }
    json_t *md = json_object_get(doc, "metadata");
    if (project && json_is_object(md) && !json_object_get(md, "namespace")) {
        /* as kubectl -n does; a namespace that differs from -p is refused
         * afterwards like a gantry document's project */
        json_object_set_new(md, "namespace", json_string(project));
    }
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    size_t n = 0;
    for (; kind && kind[n] && n + 1 < len; n++) {
        from_kind[n] = (char)tolower((unsigned char)kind[n]);
    }
    snprintf(from_kind + n, len - n, ".kubeflow.org");
    json_t *job = NULL;
    int rc = gt_api_kubeflow_convert(doc, &job, err);
    if (rc != 0) {
        const char *name = json_string_value(gt_json_path(doc, "metadata.name"));
        gt_err_prefix(err, "%s \"%s\"", from_kind, name ? name : "");
        return rc;
    }
    json_array_set_new(docs, i, job);
    return 0;
}

/* GET the object; PUT over it with its resourceVersion, or POST if absent.
 * *created tells which. */
static int apply_one(struct gt_cli_client *client, json_t *doc, const struct target *t,
                     bool *created, struct gt_err *err)
{
    char *path = gt_cli_kind_path(t->kind, t->project, t->name);
    json_t *current = NULL;
    int rc = gt_cli_client_request(client, "GET", path, NULL, &current, err);
    if (rc == GT_ENOTFOUND) {
        gt_err_clear(err);
        char *collection = gt_cli_kind_path(t->kind, t->project, NULL);
        rc = gt_cli_client_request(client, "POST", collection, doc, NULL, err);
        free(collection);
        *created = true;
    } else if (rc == 0) {
        json_t *md = json_object_get(doc, "metadata");
        json_t *rv = gt_json_path(current, "metadata.resourceVersion");
        if (rv) {
            json_object_set(md, "resourceVersion", rv);
        }
        rc = gt_cli_client_request(client, "PUT", path, doc, NULL, err);
        *created = false;
    }
    json_decref(current);
    free(path);
    return rc;
}

/* Prefix err with which document failed and how many were applied before. */
static void describe_failure(struct gt_err *err, const char *file, size_t index, size_t n_docs,
                             const struct target *t)
{
    struct gt_buf where;
    gt_buf_init(&where);
    char res[64];
    if (t->kind && t->name) {
        gt_buf_printf(&where, "%s \"%s\" (", gt_cli_kind_resource(t->kind, res, sizeof(res)),
                      t->name);
    }
    gt_buf_printf(&where, "document %zu of %zu in %s", index + 1, n_docs,
                  strcmp(file, "-") == 0 ? "standard input" : file);
    if (t->kind && t->name) {
        gt_buf_puts(&where, ")");
    }
    gt_err_prefix(err, "%s", where.data);
    gt_buf_fini(&where);
    if (index > 0) {
        size_t len = strlen(err->msg);
        snprintf(err->msg + len, sizeof(err->msg) - len,
                 " (the %zu document%s before it %s applied)", index, index == 1 ? "" : "s",
                 index == 1 ? "was" : "were");
    }
}

/* Apply every document of one file in order, in the project the document
 * names, else project (-p), else default_project (the configuration
 * file's; either may be NULL); *clientp is made on first use. 0 or an
 * error in errp. */
static int apply_file(struct gt_cli_ctx *ctx, struct gt_cli_client **clientp, const char *file,
                      const char *project, const char *default_project, struct gt_err *errp)
{
    struct gt_err err = {0};
    char *text = NULL;
    size_t len = 0;
    json_t *docs = NULL;
    int rc = read_input(file, &text, &len, &err);
    if (rc == 0 && gt_yaml_load_documents(text, len, &docs, &err)) {
        gt_err_prefix(&err, "%s", strcmp(file, "-") == 0 ? "standard input" : file);
        rc = GT_EBADREQ;
    }
    free(text);
    if (rc == 0 && json_array_size(docs) == 0) {
        rc = gt_err_set(&err, GT_EBADREQ, "no objects in %s", file);
    }
    if (rc == 0 && !*clientp) {
        rc = gt_cli_ctx_client(ctx, clientp, &err);
    }
    struct gt_cli_client *client = *clientp;
    size_t n_docs = json_array_size(docs);
    for (size_t i = 0; rc == 0 && i < n_docs; i++) {
        struct target t = {0};
        bool created = false;
        char from_kind[64];
        rc = convert_kubeflow(docs, i, project ? project : default_project, from_kind,
                              sizeof(from_kind), &err);
        json_t *doc = json_array_get(docs, i);
        if (rc == 0) {
            rc = resolve_target(doc, project, default_project, &t, &err);
        }
        if (rc == 0) {
            rc = apply_one(client, doc, &t, &created, &err);
        }
        if (rc != 0) {
            describe_failure(&err, file, i, n_docs, &t);
            break;
        }
        char res[64];
        gt_cli_kind_resource(t.kind, res, sizeof(res));
        if (from_kind[0]) {
            fprintf(ctx->out, "%s/%s %s (as %s/%s)\n", from_kind, t.name,
                    created ? "created" : "configured", res, t.name);
        } else {
            fprintf(ctx->out, "%s/%s %s\n", res, t.name, created ? "created" : "configured");
        }
        fflush(ctx->out);
    }
    json_decref(docs);
    *errp = err;
    return rc;
}

int gt_cli_cmd_apply(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                     char **argv)
{
    static const struct option long_opts[] = {
        {"filename", required_argument, NULL, 'f'},
        {"project", required_argument, NULL, 'p'},
        {NULL, 0, NULL, 0},
    };
    struct apply_opts o = {0};
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "f:p:", long_opts, on_opt, &o, &first);
    if (rc != 0) {
        return rc;
    }
    if (o.n_files == 0) {
        return gt_cli_usage_error(ctx, cmd, "-f FILE is required");
    }
    if (o.too_many) {
        return gt_cli_usage_error(ctx, cmd, "at most %d -f files", MAX_FILES);
    }
    if (first < argc) {
        return gt_cli_usage_error(ctx, cmd, "unexpected argument \"%s\"", argv[first]);
    }
    const char *default_project;
    struct gt_err err = {0};
    if (gt_cli_ctx_project(ctx, o.project, &default_project, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    struct gt_cli_client *client = NULL;
    for (size_t i = 0; rc == 0 && i < o.n_files; i++) {
        rc = apply_file(ctx, &client, o.files[i], o.project, default_project, &err);
    }
    return rc == 0 ? 0 : gt_cli_fail(ctx, &err);
}
