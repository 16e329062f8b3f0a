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
 * overwritten; a PUT the server finds changes nothing keeps the
 * resourceVersion and is reported "unchanged". A failing document is
 * reported (which one, in which file) and the others are still applied; the
 * exit status says some failed, as there is no transaction across objects.
 *
 * Kubeflow TFJob and PyTorchJob documents (kubeflow.org/v1) are converted
 * into gantry Jobs here, before anything is sent, so a manifest with a field
 * gantry cannot honour fails without touching the cluster.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_int.h"

enum { MAX_INPUT_BYTES = 64 << 20 };

enum { MAX_FILES = 64, MAX_DIR_DEPTH = 16 };

struct apply_opts {
    const char *files[MAX_FILES]; /* -f may be repeated, applied in order (as kubectl) */
    size_t n_files;
    bool too_many;
    bool recursive; /* -R */
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
    } else if (opt == 'R') {
        o->recursive = true;
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

/* A kubeflow.org document *doc becomes, in place, the gantry Job it converts
 * to, in project (-p, else the configuration file's; may be NULL) when it
 * names no namespace, as kubectl puts it in the context's namespace;
 * from_kind (e.g. "pytorchjob.kubeflow.org") names what it was, "" for a
 * gantry document. */
static int convert_kubeflow(json_t **doc, const char *project, char *from_kind, size_t len,
                            struct gt_err *err)
{
    from_kind[0] = '\0';
    if (!gt_api_kubeflow_is(*doc)) {
        return 0;
    }
    json_t *md = json_object_get(*doc, "metadata");
    if (project && json_is_object(md) && !json_object_get(md, "namespace")) {
        /* as kubectl -n does; a namespace that differs from -p is refused
         * afterwards like a gantry document's project */
        json_object_set_new(md, "namespace", json_string(project));
    }
    const char *kind = json_string_value(json_object_get(*doc, "kind"));
    size_t n = 0;
    for (; kind && kind[n] && n + 1 < len; n++) {
        from_kind[n] = (char)tolower((unsigned char)kind[n]);
    }
    snprintf(from_kind + n, len - n, ".kubeflow.org");
    json_t *job = NULL;
    int rc = gt_api_kubeflow_convert(*doc, &job, err);
    if (rc != 0) {
        const char *name = json_string_value(gt_json_path(*doc, "metadata.name"));
        gt_err_prefix(err, "%s \"%s\"", from_kind, name ? name : "");
        return rc;
    }
    json_decref(*doc);
    *doc = job;
    return 0;
}

/* GET the object; PUT over it with its resourceVersion, or POST if absent.
 * *outcome says which: "created", "configured", or "unchanged" when the
 * PUT's answer kept the resourceVersion (the server wrote nothing). */
static int apply_one(struct gt_cli_client *client, json_t *doc, const struct target *t,
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
    } else if (rc == 0) {
        json_t *md = json_object_get(doc, "metadata");
        json_t *rv = gt_json_path(current, "metadata.resourceVersion");
        if (rv) {
            json_object_set(md, "resourceVersion", rv);
        }
        rc = gt_cli_client_request(client, "PUT", path, doc, &answer, err);
        json_t *now = gt_json_path(answer, "metadata.resourceVersion");
        *outcome = rv && now && json_equal(rv, now) ? "unchanged" : "configured";
    }
    json_decref(answer);
    json_decref(current);
    free(path);
    return rc;
}

/* Prefix err with which document failed. */
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
}

/* One document of the input and where it came from. */
struct doc {
    json_t *obj;      /* owned */
    const char *file; /* borrowed from struct input's names */
    size_t index, n_docs;
    int rank; /* dependency order: lower first */
    size_t seq;
};

/* Everything apply reads, in reading order. */
struct input {
    struct doc *docs;
    size_t n, cap;
    char **names; /* file names read (owned) */
    size_t n_names, cap_names;
};

static void input_fini(struct input *in)
{
    for (size_t i = 0; i < in->n; i++) {
        json_decref(in->docs[i].obj);
    }
    for (size_t i = 0; i < in->n_names; i++) {
        free(in->names[i]);
    }
    free(in->docs);
    free(in->names);
}

/* The kinds others depend on, applied first in this order (as kubectl
 * applies namespaces first); the kind's table row decides nothing else. */
static int dependency_rank(const json_t *doc)
{
    static const enum gt_kind first[] = {GT_KIND_DEPARTMENT, GT_KIND_PRIORITYCLASS,
                                         GT_KIND_PROJECT};
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const struct gt_kind_info *k = kind && !gt_api_kubeflow_is(doc) ? gt_kind_by_name(kind) : NULL;
    for (size_t i = 0; k && i < GT_ARRAY_LEN(first); i++) {
        if (k->kind == first[i]) {
            return (int)i;
        }
    }
    return (int)GT_ARRAY_LEN(first);
}

/* Read the documents of one file ("-": standard input) onto in. */
static int read_file_docs(struct input *in, const char *file, struct gt_err *err)
{
    char *text = NULL;
    size_t len = 0;
    json_t *docs = NULL;
    int rc = read_input(file, &text, &len, err);
    if (rc == 0 && gt_yaml_load_documents(text, len, &docs, err)) {
        gt_err_prefix(err, "%s", strcmp(file, "-") == 0 ? "standard input" : file);
        rc = GT_EBADREQ;
    }
    free(text);
    if (rc == 0 && json_array_size(docs) == 0) {
        rc = gt_err_set(err, GT_EBADREQ, "no objects in %s", file);
    }
    if (rc != 0) {
        json_decref(docs);
        return rc;
    }
    GT_VEC_RESERVE(in->names, in->cap_names, in->n_names + 1, 8);
    char *name = in->names[in->n_names++] = gt_xstrdup(file);
    size_t n = json_array_size(docs);
    for (size_t i = 0; i < n; i++) {
        GT_VEC_RESERVE(in->docs, in->cap, in->n + 1, 16);
        json_t *d = json_incref(json_array_get(docs, i));
        in->docs[in->n] = (struct doc){.obj = d,
                                       .file = name,
                                       .index = i,
                                       .n_docs = n,
                                       .rank = dependency_rank(d),
                                       .seq = in->n};
        in->n++;
    }
    json_decref(docs);
    return 0;
}

static bool manifest_name(const char *name)
{
    static const char *const exts[] = {".yaml", ".yml", ".json"};
    size_t n = strlen(name);
    for (size_t i = 0; i < GT_ARRAY_LEN(exts); i++) {
        size_t k = strlen(exts[i]);
        if (n > k && !strcmp(name + n - k, exts[i])) {
            return true;
        }
    }
    return false;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* path onto in: a file's documents, or a directory's manifests in name
 * order (with recursive, its subdirectories where they sort, at most
 * MAX_DIR_DEPTH deep). */
static int read_path(struct input *in, const char *path, bool recursive, int depth,
                     struct gt_err *err)
{
    struct stat st;
    if (strcmp(path, "-") == 0 || stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return read_file_docs(in, path, err);
    }
    if (depth > MAX_DIR_DEPTH) {
        return gt_err_set(err, GT_EBADREQ, "%s: directories nested over %d deep", path,
                          MAX_DIR_DEPTH);
    }
    struct dirent **ents = NULL;
    int n = scandir(path, &ents, NULL, by_name);
    if (n < 0) {
        return gt_err_set(err, -errno, "%s: %s", path, strerror(errno));
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        char *sub = rc == 0 && name[0] != '.' ? gt_xasprintf("%s/%s", path, name) : NULL;
        bool dir = sub && stat(sub, &st) == 0 && S_ISDIR(st.st_mode);
        if (sub && (dir ? recursive : manifest_name(name))) {
            rc = read_path(in, sub, recursive, depth + 1, err);
        }
        free(sub);
        free(ents[i]);
    }
    free(ents);
    return rc;
}

static int by_rank(const void *a, const void *b)
{
    const struct doc *x = a, *y = b;
    if (x->rank != y->rank) {
        return x->rank < y->rank ? -1 : 1;
    }
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Apply one document; prints its outcome, or its error naming it. */
static int apply_doc(struct gt_cli_ctx *ctx, struct gt_cli_client *client, struct doc *d,
                     const char *project, const char *default_project)
{
    struct gt_err err = {0};
    struct target t = {0};
    const char *outcome = NULL;
    char from_kind[64];
    int rc = convert_kubeflow(&d->obj, project ? project : default_project, from_kind,
                              sizeof(from_kind), &err);
    if (rc == 0) {
        rc = resolve_target(d->obj, project, default_project, &t, &err);
    }
    if (rc == 0) {
        rc = apply_one(client, d->obj, &t, &outcome, &err);
    }
    if (rc != 0) {
        describe_failure(&err, d->file, d->index, d->n_docs, &t);
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
    struct input in = {0};
    for (size_t i = 0; rc == 0 && i < o.n_files; i++) {
        rc = read_path(&in, o.files[i], o.recursive, 0, &err);
    }
    if (rc == 0 && in.n == 0) {
        rc = gt_err_set(&err, GT_EBADREQ, "no manifests (.yaml, .yml, .json) in %s",
                        o.n_files == 1 ? o.files[0] : "the -f paths");
    }
    struct gt_cli_client *client = NULL;
    if (rc == 0) {
        rc = gt_cli_ctx_client(ctx, &client, &err);
    }
    if (rc != 0) {
        input_fini(&in);
        return gt_cli_fail(ctx, &err);
    }
    qsort(in.docs, in.n, sizeof(*in.docs), by_rank);
    int failed = 0;
    for (size_t i = 0; i < in.n; i++) {
        int one = apply_doc(ctx, client, &in.docs[i], o.project, default_project);
        failed = failed ? failed : one;
    }
    input_fini(&in);
    return failed;
}
