/*
 * `gantry delete KIND NAME... | KIND/NAME... | KIND --all | -f FILE|DIR [-R]
 * [-p PROJECT]`: delete objects by name, telling each one's fate as kubectl
 * does (`job.gantry.dev "train" deleted`). KIND/NAME is what `get -o name`
 * prints, so its output can be fed back; each such argument may name
 * another kind. --all deletes every object of the kind in the project (or
 * of a cluster-scoped kind). -f deletes what the manifests name (read as
 * `apply -f` reads them), in the reverse of apply's order, so a project
 * goes after its jobs. Every object is tried; the exit status is 1 if any
 * failed.
 */
#include <getopt.h>
#include <stdlib.h>

#include "cli/cli_int.h"
#include "common/jsonutil.h"

struct delete_opts {
    const char *project;
    bool all;
    struct gt_cli_file_flags f;
};

static int on_opt(int opt, const char *value, void *arg)
{
    struct delete_opts *o = arg;
    if (opt == 'p') {
        o->project = value;
    } else if (!gt_cli_file_flag(&o->f, opt, value)) {
        GT_ASSERT(opt == 'a');
        o->all = true;
    }
    return 0;
}

/* DELETE one object; prints its fate. 0 (also when gone_ok and it is
 * gone already), or the error's status. */
static int delete_one(struct gt_cli_ctx *ctx, struct gt_cli_client *client,
                      const struct gt_kind_info *kind, const char *project, const char *name,
                      bool gone_ok)
{
    struct gt_err err = {0};
    char res[64];
    char *path = gt_cli_kind_path(kind, project, name);
    int rc = gt_cli_client_request(client, "DELETE", path, NULL, NULL, &err);
    free(path);
    if (rc == GT_ENOTFOUND && gone_ok) {
        return 0;
    }
    if (rc != 0) {
        return gt_cli_fail(ctx, &err);
    }
    fprintf(ctx->out, "%s \"%s\" deleted\n", gt_cli_kind_resource(kind, res, sizeof(res)), name);
    return 0;
}

/* Every object of kind in project, deleted one by one. */
static int delete_all(struct gt_cli_ctx *ctx, struct gt_cli_client *client,
                      const struct gt_kind_info *kind, const char *project)
{
    struct gt_err err = {0};
    char *path = gt_cli_kind_path(kind, project, NULL);
    json_t *list = NULL;
    int rc = gt_cli_client_request(client, "GET", path, NULL, &list, &err);
    free(path);
    if (rc != 0) {
        return gt_cli_fail(ctx, &err);
    }
    int status = 0;
    size_t i;
    json_t *obj;
    json_array_foreach(json_object_get(list, "items"), i, obj)
    {
        const char *name = json_string_value(gt_json_path(obj, "metadata.name"));
        /* one being deleted may go between the list and its turn */
        int one = name ? delete_one(ctx, client, kind, project, name, true) : 0;
        status = status ? status : one;
    }
    if (i == 0) {
        fprintf(ctx->err, "No resources found%s%s.\n", project ? " in project " : "",
                project ? project : "");
    }
    json_decref(list);
    return status;
}

/* What the manifests of o name, last applied first. */
static int delete_files(struct gt_cli_ctx *ctx, const struct delete_opts *o)
{
    struct gt_err err = {0};
    const char *default_project = NULL;
    struct gt_cli_manifests m = {0};
    struct gt_cli_client *client = NULL;
    int rc = gt_cli_ctx_project(ctx, o->project, &default_project, &err);
    rc = rc ? rc : gt_cli_manifests_read(&m, o->f.files, o->f.n_files, o->f.recursive, &err);
    rc = rc ? rc : gt_cli_ctx_client(ctx, &client, &err);
    if (rc != 0) {
        gt_cli_manifests_fini(&m);
        return gt_cli_fail(ctx, &err);
    }
    int status = 0;
    for (size_t i = m.n; i-- > 0;) {
        struct gt_cli_manifest *d = &m.docs[i];
        struct gt_cli_target t;
        char from_kind[64];
        gt_err_clear(&err);
        int one = gt_cli_manifest_target(d, o->project, default_project, &t, from_kind,
                                         sizeof(from_kind), &err);
        if (one != 0) {
            gt_cli_manifest_describe_failure(&err, d->file, d->index, d->n_docs, &t);
            one = gt_cli_fail(ctx, &err);
        } else {
            one = delete_one(ctx, client, t.kind, t.project, t.name, false);
        }
        status = status ? status : one;
    }
    gt_cli_manifests_fini(&m);
    return status;
}

int gt_cli_cmd_delete(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                      char **argv)
{
    static const struct option long_opts[] = {
        {"project", required_argument, NULL, 'p'},
        {"all", no_argument, NULL, 'a'},
        {"filename", required_argument, NULL, 'f'},
        {"recursive", no_argument, NULL, 'R'},
        {NULL, 0, NULL, 0},
    };
    struct delete_opts o = {0};
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "p:f:R", long_opts, on_opt, &o, &first);
    if (rc != 0) {
        return rc;
    }
    if (o.f.too_many) {
        return gt_cli_usage_error(ctx, cmd, "at most %d -f files", GT_CLI_MAX_FILES);
    }
    if (o.f.n_files) {
        if (first != argc || o.all) {
            return gt_cli_usage_error(ctx, cmd, "-f takes no KIND, names or --all");
        }
        return delete_files(ctx, &o);
    }
    char *kind_word = NULL;
    const char *ref_name = NULL;
    int split = first < argc ? gt_cli_kind_ref_split(argv[first], &kind_word, &ref_name) : 0;
    free(kind_word);
    if (first == argc) {
        return gt_cli_usage_error(ctx, cmd, "name a kind");
    }
    if (split == 0 && argc - first < 2 && !o.all) {
        return gt_cli_usage_error(ctx, cmd, "name an object (or --all)");
    }
    if (o.all && (split != 0 || argc - first > 1)) {
        return gt_cli_usage_error(ctx, cmd, "--all takes a KIND and no names");
    }
    const struct gt_kind_info *kind = NULL;
    const char *project = NULL, *ns_project = NULL; /* the project of project-scoped kinds */
    if (split == 0) {
        rc = gt_cli_resolve_kind(ctx, cmd, argv[first], o.project, &kind, &project);
        if (rc != 0) {
            return rc;
        }
        first++;
    }
    /* KIND/NAME: each argument names its own kind, all checked first */
    for (int i = first; split != 0 && i < argc; i++) {
        const char *name;
        kind_word = NULL;
        if (gt_cli_kind_ref_split(argv[i], &kind_word, &name) != 1) {
            free(kind_word);
            return gt_cli_usage_error(ctx, cmd, "%s: want KIND/NAME", argv[i]);
        }
        rc = gt_cli_resolve_kind(ctx, cmd, kind_word, o.project, &kind, &project);
        free(kind_word);
        if (rc != 0) {
            return rc;
        }
        ns_project = kind->namespaced ? project : ns_project;
    }
    struct gt_cli_client *client;
    struct gt_err client_err = {0};
    if (gt_cli_ctx_client(ctx, &client, &client_err) != 0) {
        return gt_cli_fail(ctx, &client_err);
    }
    if (o.all) {
        return delete_all(ctx, client, kind, project);
    }
    int status = 0;
    for (int i = first; i < argc; i++) {
        const char *name = argv[i];
        if (split != 0) {
            kind_word = NULL;
            gt_cli_kind_ref_split(argv[i], &kind_word, &name);
            kind = gt_cli_kind_lookup(kind_word);
            free(kind_word);
            project = kind->namespaced ? ns_project : NULL;
        }
        int one = delete_one(ctx, client, kind, project, name, false);
        status = status ? status : one;
    }
    return status;
}
