/*
 * The manifests `gantry apply -f` and `gantry delete -f` read, as kubectl
 * does: a file's "---"-separated YAML or JSON documents in order, a
 * directory's .yaml, .yml and .json files in name order (recursive: its
 * subdirectories too, each where it sorts; dot files skipped), standard
 * input for "-"; a List (kind List or KIND + "List", as `get -o yaml`
 * writes a list) stands for its items, as kubectl flattens it; then every
 * document in dependency order (Departments,
 * PriorityClasses, Projects, then the rest, each group in reading order).
 * A kubeflow.org document becomes the gantry Job it converts to when its
 * target is worked out, so a field gantry cannot honour fails before
 * anything is sent.
 *
 * struct gt_cli_manifests owns the documents and the file names they point
 * at; gt_cli_manifests_fini frees both.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_int.h"

enum { MAX_INPUT_BYTES = 64 << 20, MAX_DIR_DEPTH = 16 };

/* Read all of path ("-": standard input) into a new buffer *text (caller
 * frees). 0 or -errno/GT_ETOOLARGE (over 64 MiB). */
static int read_input(const char *path, char **text, size_t *len, struct gt_err *err)
{
    if (strcmp(path, "-") == 0) {
        return gt_file_read_fd(STDIN_FILENO, path, MAX_INPUT_BYTES, text, len, err);
    }
    return gt_file_read(path, MAX_INPUT_BYTES, text, len, err);
}

static int resolve_target(json_t *doc, const char *project_flag, const char *default_project,
                          struct gt_cli_target *t, struct gt_err *err)
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
 * to (a serving.kserve.io InferenceService gantry's InferenceService), in project (-p, else the
 * configuration file's; may be NULL) when it names no namespace, as kubectl puts it in the
 * context's namespace; from_kind (e.g. "pytorchjob.kubeflow.org") names what it was, "" for a
 * gantry document. */
static int convert_kubeflow(json_t **doc, const char *project, char *from_kind, size_t len,
                            struct gt_err *err)
{
    from_kind[0] = '\0';
    bool kserve = gt_api_kserve_is(*doc);
    if (!gt_api_kubeflow_is(*doc) && !kserve) {
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
    snprintf(from_kind + n, len - n, kserve ? ".serving.kserve.io" : ".kubeflow.org");
    json_t *job = NULL;
    int rc =
        kserve ? gt_api_kserve_convert(*doc, &job, err) : gt_api_kubeflow_convert(*doc, &job, err);
    if (rc != 0) {
        const char *name = json_string_value(gt_json_path(*doc, "metadata.name"));
        gt_err_prefix(err, "%s \"%s\"", from_kind, name ? name : "");
        return rc;
    }
    json_decref(*doc);
    *doc = job;
    return 0;
}

/* Prefix err with which document failed. */
void gt_cli_manifest_describe_failure(struct gt_err *err, const char *file, size_t index,
                                      size_t n_docs, const struct gt_cli_target *t)
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

void gt_cli_manifests_fini(struct gt_cli_manifests *in)
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

/* Whether doc is a list of objects: kind "List" or "<Kind>List", with items. */
static bool is_list(const json_t *doc)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    size_t n = kind ? strlen(kind) : 0;
    return n >= 4 && !strcmp(kind + n - 4, "List") && json_is_array(json_object_get(doc, "items"));
}

/* docs with every list replaced by its items, in order (a new array). */
static json_t *flatten_lists(const json_t *docs)
{
    json_t *out = json_array();
    size_t i;
    json_t *d;
    json_array_foreach(docs, i, d)
    {
        if (is_list(d)) {
            json_array_extend(out, json_object_get(d, "items"));
        } else {
            json_array_append(out, d);
        }
    }
    return out;
}

/* Read the documents of one file ("-": standard input) onto in. */
static int read_file_docs(struct gt_cli_manifests *in, const char *file, struct gt_err *err)
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
    if (rc == 0) {
        json_t *flat = flatten_lists(docs);
        json_decref(docs);
        docs = flat;
    }
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
        in->docs[in->n] = (struct gt_cli_manifest){.obj = d,
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
static int read_path(struct gt_cli_manifests *in, const char *path, bool recursive, int depth,
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
    const struct gt_cli_manifest *x = a, *y = b;
    if (x->rank != y->rank) {
        return x->rank < y->rank ? -1 : 1;
    }
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

bool gt_cli_file_flag(struct gt_cli_file_flags *f, int opt, const char *value)
{
    if (opt == 'R') {
        f->recursive = true;
    } else if (opt == 'f' && f->n_files == GT_CLI_MAX_FILES) {
        f->too_many = true;
    } else if (opt == 'f') {
        f->files[f->n_files++] = value;
    } else {
        return false;
    }
    return true;
}

int gt_cli_manifests_read(struct gt_cli_manifests *m, const char *const *paths, size_t n_paths,
                          bool recursive, struct gt_err *err)
{
    *m = (struct gt_cli_manifests){0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n_paths; i++) {
        rc = read_path(m, paths[i], recursive, 0, err);
    }
    if (rc == 0 && m->n == 0) {
        rc = gt_err_set(err, GT_EBADREQ, "no manifests (.yaml, .yml, .json) in %s",
                        n_paths == 1 ? paths[0] : "the -f paths");
    }
    if (rc != 0) {
        gt_cli_manifests_fini(m);
        *m = (struct gt_cli_manifests){0};
        return rc;
    }
    qsort(m->docs, m->n, sizeof(*m->docs), by_rank);
    return 0;
}

int gt_cli_manifest_target(struct gt_cli_manifest *d, const char *project_flag,
                           const char *default_project, struct gt_cli_target *t, char *from_kind,
                           size_t len, struct gt_err *err)
{
    *t = (struct gt_cli_target){0};
    int rc = convert_kubeflow(&d->obj, project_flag ? project_flag : default_project, from_kind,
                              len, err);
    return rc ? rc : resolve_target(d->obj, project_flag, default_project, t, err);
}
