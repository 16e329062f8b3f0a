/*
 * `gantry get KIND[,KIND...] [NAME]` (or KIND/NAME, as -o name prints it):
 * list objects, or show one, as a table or as JSON/YAML/names, and with
 * --watch keep printing changes (of one kind). Several kinds print one
 * after another, tables separated by a blank line, as kubectl does.
 *
 * The list's resourceVersion is where the watch starts, so no change between
 * the list and the watch is lost or shown twice (the list-then-watch pattern
 * of Kubernetes informers). In table mode each watch event prints one row
 * lined up with the rows above it.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"

enum output { OUT_TABLE, OUT_WIDE, OUT_JSON, OUT_YAML, OUT_NAME };

struct get_opts {
    const char *project;
    bool all_projects;
    const char *label_selector;
    const char *field_selector;
    enum output output;
    const char *output_arg;
    bool watch;
};

enum { OPT_FIELD_SELECTOR = 1000 };

static const struct option long_opts[] = {
    {"project", required_argument, NULL, 'p'},
    {"all-projects", no_argument, NULL, 'A'},
    {"selector", required_argument, NULL, 'l'},
    {"field-selector", required_argument, NULL, OPT_FIELD_SELECTOR},
    {"output", required_argument, NULL, 'o'},
    {"watch", no_argument, NULL, 'w'},
    {NULL, 0, NULL, 0},
};

static int on_opt(int opt, const char *value, void *arg)
{
    struct get_opts *o = arg;
    switch (opt) {
    case 'p':
        o->project = value;
        break;
    case 'A':
        o->all_projects = true;
        break;
    case 'l':
        o->label_selector = value;
        break;
    case OPT_FIELD_SELECTOR:
        o->field_selector = value;
        break;
    case 'o':
        o->output_arg = value;
        break;
    case 'w':
        o->watch = true;
        break;
    default:
        GT_ASSERT(!"unhandled option");
    }
    return 0;
}

static int parse_output(const char *s, enum output *out)
{
    static const struct {
        const char *name;
        enum output output;
    } formats[] = {
        {"wide", OUT_WIDE},
        {"json", OUT_JSON},
        {"yaml", OUT_YAML},
        {"name", OUT_NAME},
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(formats); i++) {
        if (strcmp(s, formats[i].name) == 0) {
            *out = formats[i].output;
            return 0;
        }
    }
    return -1;
}

/* Printing state shared by the list and the watch events. */
struct printer {
    struct gt_cli_ctx *ctx;
    const struct gt_kind_info *kind;
    enum output output;
    struct gt_cli_columns_opts cols;
    struct gt_cli_table table;
    bool headers_printed;
};

static void print_name(struct printer *p, const json_t *obj)
{
    char res[64];
    const char *name = json_string_value(gt_json_path(obj, "metadata.name"));
    fprintf(p->ctx->out, "%s/%s\n", gt_cli_kind_resource(p->kind, res, sizeof(res)),
            name ? name : "");
}

static void print_document(struct printer *p, const json_t *v, bool yaml_separator)
{
    char *text;
    if (p->output == OUT_YAML) {
        text = gt_yaml_dump(v);
        fprintf(p->ctx->out, "%s%s", yaml_separator ? "---\n" : "", text);
    } else {
        text = json_dumps(v, JSON_INDENT(4));
        fprintf(p->ctx->out, "%s\n", text);
    }
    free(text);
}

/* Print the rows added to the table since the last flush. */
static void flush_rows(struct printer *p)
{
    struct gt_buf b;
    gt_buf_init(&b);
    gt_cli_table_render(&p->table, !p->headers_printed, &b);
    p->headers_printed = true;
    fputs(b.data ? b.data : "", p->ctx->out);
    fflush(p->ctx->out);
    gt_buf_fini(&b);
    gt_cli_table_clear(&p->table);
}

/* Print items (a list's items, or one object) in the chosen format. */
static void print_items(struct printer *p, const json_t *whole, const json_t *items)
{
    size_t i;
    json_t *obj;
    switch (p->output) {
    case OUT_JSON:
    case OUT_YAML:
        print_document(p, whole, false);
        break;
    case OUT_NAME:
        json_array_foreach((json_t *)items, i, obj)
        {
            print_name(p, obj);
        }
        break;
    case OUT_TABLE:
    case OUT_WIDE: {
        int64_t now_ms = gt_now_ms();
        json_array_foreach((json_t *)items, i, obj)
        {
            gt_cli_columns_add(&p->table, p->kind, &p->cols, obj, now_ms);
        }
        if (p->table.n_rows) {
            flush_rows(p);
        }
        break;
    }
    }
}

static int on_watch_event(const json_t *event, void *arg)
{
    struct printer *p = arg;
    const json_t *obj = json_object_get(event, "object");
    if (!json_is_object(obj)) {
        return 0;
    }
    if (p->output == OUT_JSON || p->output == OUT_YAML) {
        print_document(p, obj, true);
        fflush(p->ctx->out);
        return 0;
    }
    json_t *one = json_pack("[O]", obj);
    print_items(p, obj, one);
    json_decref(one);
    fflush(p->ctx->out);
    return 0;
}

/* Query string ("?labelSelector=...&...") for the options; extra_field is
 * one more field selector term or NULL; rv the watch's start. Caller frees. */
static char *query(const struct get_opts *o, const char *extra_field, bool watch, const char *rv)
{
    struct gt_buf b;
    gt_buf_init(&b);
    char *fs = NULL;
    if (o->field_selector && extra_field) {
        fs = gt_xasprintf("%s,%s", o->field_selector, extra_field);
    } else {
        fs = gt_xstrdup(o->field_selector ? o->field_selector : extra_field);
    }
    const char *keys[] = {"labelSelector", "fieldSelector", "watch", "resourceVersion"};
    const char *values[] = {o->label_selector, fs, watch ? "true" : NULL, rv};
    for (size_t i = 0; i < GT_ARRAY_LEN(keys); i++) {
        if (values[i]) {
            char *esc = gt_cli_url_escape(values[i]);
            gt_buf_printf(&b, "%c%s=%s", b.len ? '&' : '?', keys[i], esc);
            free(esc);
        }
    }
    free(fs);
    return gt_buf_take(&b);
}

static void no_resources(struct printer *p, const char *project)
{
    if (project) {
        fprintf(p->ctx->err, "No resources found in project %s.\n", project);
    } else {
        fprintf(p->ctx->err, "No resources found.\n");
    }
}

/* GET the list or the object and print it; *rv gets the revision to watch
 * from (caller frees). */
static int list_and_print(struct printer *p, struct gt_cli_client *client, const struct get_opts *o,
                          const char *project, const char *name, char **rv, struct gt_err *err)
{
    char *base = gt_cli_kind_path(p->kind, project, name);
    char *q = name ? gt_xstrdup("") : query(o, NULL, false, NULL);
    char *path = gt_xasprintf("%s%s", base, q);
    json_t *resp = NULL;
    int rc = gt_cli_client_request(client, "GET", path, NULL, &resp, err);
    if (rc == 0) {
        const json_t *items = name ? NULL : json_object_get(resp, "items");
        json_t *one = name ? json_pack("[O]", resp) : NULL;
        if (!name && !json_is_array(items)) {
            rc = gt_err_set(err, GT_EBADREQ, "the server's list has no items");
        } else {
            if (!name && json_array_size(items) == 0 &&
                (p->output == OUT_TABLE || p->output == OUT_WIDE || p->output == OUT_NAME)) {
                if (!o->watch) {
                    no_resources(p, project);
                }
            } else {
                print_items(p, resp, name ? one : items);
            }
            *rv = gt_cli_scalar_text(gt_json_path(resp, "metadata.resourceVersion"));
        }
        json_decref(one);
    }
    json_decref(resp);
    free(path);
    free(q);
    free(base);
    return rc;
}

/* List (or show name of) one kind, in project (NULL: all projects, or a
 * cluster-scoped kind), and print it; with --watch keep printing its
 * changes. */
static int get_kind(struct gt_cli_ctx *ctx, struct gt_cli_client *client, const struct get_opts *o,
                    const struct gt_kind_info *kind, const char *project, const char *name,
                    struct gt_err *err)
{
    project = kind->namespaced ? project : NULL;
    struct printer p = {
        .ctx = ctx,
        .kind = kind,
        .output = o->output,
        .cols = {.wide = o->output == OUT_WIDE, .with_project = o->all_projects},
    };
    gt_cli_columns_init(&p.table, kind, &p.cols);
    char *rv = NULL;
    int rc = list_and_print(&p, client, o, project, name, &rv, err);
    if (rc == 0 && o->watch) {
        char *name_term = name ? gt_xasprintf("metadata.name=%s", name) : NULL;
        char *base = gt_cli_kind_path(kind, project, NULL);
        char *q = query(o, name_term, true, rv);
        char *path = gt_xasprintf("%s%s", base, q);
        rc = gt_cli_client_watch(client, path, on_watch_event, &p, err);
        free(path);
        free(q);
        free(base);
        free(name_term);
    }
    free(rv);
    gt_cli_table_fini(&p.table);
    return rc == 0 ? 0 : gt_cli_fail(ctx, err);
}

enum { MAX_KINDS = 16 };

/* The kinds of a "KIND[,KIND...]" word into kinds (at most MAX_KINDS),
 * their number in *n. 0, or a usage error naming the unknown one. */
static int parse_kinds(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, const char *word,
                       const struct gt_kind_info **kinds, int *n)
{
    char *copy = gt_xstrdup(word);
    int rc = 0;
    *n = 0;
    for (char *part = copy, *next; part && rc == 0; part = next) {
        next = strchr(part, ',');
        if (next) {
            *next++ = '\0';
        }
        const struct gt_kind_info *k = *part ? gt_cli_kind_lookup(part) : NULL;
        if (!k) {
            rc = gt_cli_usage_error(ctx, cmd, "unknown kind \"%s\"", part);
        } else if (*n == MAX_KINDS) {
            rc = gt_cli_usage_error(ctx, cmd, "at most %d kinds", MAX_KINDS);
        } else {
            kinds[(*n)++] = k;
        }
    }
    free(copy);
    return rc;
}

int gt_cli_cmd_get(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc, char **argv)
{
    struct get_opts o = {.output = OUT_TABLE};
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "p:Al:o:w", long_opts, on_opt, &o, &first);
    if (rc != 0) {
        return rc;
    }
    int n_pos = argc - first;
    if (n_pos < 1 || n_pos > 2) {
        return gt_cli_usage_error(ctx, cmd, n_pos < 1 ? "name a kind" : "too many arguments");
    }
    /* KIND NAME, or KIND/NAME as -o name prints it */
    char *kind_word = NULL;
    const char *name = n_pos == 2 ? argv[first + 1] : NULL;
    int split = gt_cli_kind_ref_split(argv[first], &kind_word, &name);
    if (split < 0 || (split > 0 && n_pos == 2)) {
        return gt_cli_usage_error(ctx, cmd, "%s: want KIND/NAME alone", argv[first]);
    }
    const struct gt_kind_info *kinds[MAX_KINDS];
    int n_kinds = 0;
    rc = parse_kinds(ctx, cmd, kind_word ? kind_word : argv[first], kinds, &n_kinds);
    free(kind_word);
    if (rc != 0) {
        return rc;
    }
    if (o.output_arg && parse_output(o.output_arg, &o.output) != 0) {
        return gt_cli_usage_error(ctx, cmd, "unknown output format \"%s\"", o.output_arg);
    }
    if (o.all_projects && (o.project || name)) {
        return gt_cli_usage_error(ctx, cmd, "-A lists every project; it takes no %s",
                                  name ? "NAME" : "-p");
    }
    if (o.watch && n_kinds > 1) {
        return gt_cli_usage_error(ctx, cmd, "--watch follows one kind");
    }
    struct gt_err err = {0};
    const char *project = NULL;
    for (int i = 0; i < n_kinds; i++) {
        if (!kinds[i]->namespaced || o.all_projects) {
            continue;
        }
        if (!project && gt_cli_ctx_project(ctx, o.project, &project, &err) != 0) {
            return gt_cli_fail(ctx, &err);
        }
        if (!project) {
            return gt_cli_usage_error(ctx, cmd, "%s live in projects: pass -p PROJECT or -A",
                                      kinds[i]->plural);
        }
    }
    struct gt_cli_client *client;
    if (gt_cli_ctx_client(ctx, &client, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    int status = 0;
    for (int i = 0; i < n_kinds; i++) {
        if (i > 0 && (o.output == OUT_TABLE || o.output == OUT_WIDE)) {
            fputs("\n", ctx->out); /* kubectl's blank line between kinds' tables */
        }
        gt_err_clear(&err);
        rc = get_kind(ctx, client, &o, kinds[i], project, name, &err);
        status = status ? status : rc;
    }
    return status;
}
