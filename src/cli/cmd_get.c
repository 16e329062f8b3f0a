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

enum output { OUT_TABLE, OUT_WIDE, OUT_JSON, OUT_YAML, OUT_NAME, OUT_JSONPATH, OUT_CUSTOM };

struct get_opts {
    const char *project;
    bool all_projects;
    const char *label_selector;
    const char *field_selector;
    enum output output;
    const char *output_arg;
    const char *template; /* after "jsonpath=" or "custom-columns=" in output_arg */
    const char *sort_by;  /* --sort-by JSONPATH */
    bool watch, no_headers, show_labels;
};

enum { OPT_FIELD_SELECTOR = 1000, OPT_NO_HEADERS, OPT_SHOW_LABELS, OPT_SORT_BY };

static const struct option long_opts[] = {
    {"project", required_argument, NULL, 'p'},
    {"all-projects", no_argument, NULL, 'A'},
    {"selector", required_argument, NULL, 'l'},
    {"field-selector", required_argument, NULL, OPT_FIELD_SELECTOR},
    {"output", required_argument, NULL, 'o'},
    {"watch", no_argument, NULL, 'w'},
    {"no-headers", no_argument, NULL, OPT_NO_HEADERS},
    {"show-labels", no_argument, NULL, OPT_SHOW_LABELS},
    {"sort-by", required_argument, NULL, OPT_SORT_BY},
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
    case OPT_NO_HEADERS:
        o->no_headers = true;
        break;
    case OPT_SHOW_LABELS:
        o->show_labels = true;
        break;
    case OPT_SORT_BY:
        o->sort_by = value;
        break;
    default:
        GT_ASSERT(!"unhandled option");
    }
    return 0;
}

/* -o FORMAT; for jsonpath=TEMPLATE and custom-columns=SPEC, *template
 * points into s after the '='. */
static int parse_output(const char *s, enum output *out, const char **template)
{
    static const struct {
        const char *prefix;
        enum output output;
    } templated[] = {{"jsonpath=", OUT_JSONPATH}, {"custom-columns=", OUT_CUSTOM}};
    for (size_t i = 0; i < GT_ARRAY_LEN(templated); i++) {
        size_t n = strlen(templated[i].prefix);
        if (!strncmp(s, templated[i].prefix, n) && s[n]) {
            *out = templated[i].output;
            *template = s + n;
            return 0;
        }
    }
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

enum { MAX_CUSTOM_COLS = 16 };

/* Printing state shared by the list and the watch events. */
struct printer {
    struct gt_cli_ctx *ctx;
    const struct gt_kind_info *kind;
    enum output output;
    const char *template; /* OUT_JSONPATH's */
    struct gt_cli_columns_opts cols;
    struct gt_cli_table table;
    bool headers_printed;                /* or --no-headers */
    char *custom_paths[MAX_CUSTOM_COLS]; /* OUT_CUSTOM's, owned */
    size_t n_custom;
};

/* custom-columns=HEADER:PATH,... into p's table and paths; GT_EBADREQ with
 * err naming a column without its ':'. */
static int custom_columns(struct printer *p, const char *spec, struct gt_err *err)
{
    const char *headers[MAX_CUSTOM_COLS];
    char *copy = gt_xstrdup(spec);
    int rc = 0;
    for (char *part = copy, *next; part && rc == 0; part = next) {
        next = strchr(part, ',');
        if (next) {
            *next++ = '\0';
        }
        char *colon = strchr(part, ':');
        if (!colon || colon == part || !colon[1] || p->n_custom == MAX_CUSTOM_COLS) {
            rc = gt_err_set(err, GT_EBADREQ,
                            "-o custom-columns: \"%s\": want HEADER:JSONPATH (at most %d)", part,
                            MAX_CUSTOM_COLS);
            break;
        }
        *colon = '\0';
        headers[p->n_custom] = part;
        p->custom_paths[p->n_custom++] = gt_xstrdup(colon + 1);
    }
    if (rc == 0) {
        gt_cli_table_init(&p->table, p->n_custom, headers);
    }
    free(copy);
    return rc;
}

/* obj as one row of the custom columns: each path's first value. */
static int custom_row(struct printer *p, const json_t *obj, struct gt_err *err)
{
    char *cells[MAX_CUSTOM_COLS] = {0};
    int rc = 0;
    for (size_t i = 0; i < p->n_custom && rc == 0; i++) {
        json_t *vals = NULL;
        rc = gt_cli_jsonpath_eval(p->custom_paths[i], obj, &vals, err);
        if (rc == 0 && json_array_size(vals) > 0) {
            struct gt_buf b;
            gt_buf_init(&b);
            size_t k;
            json_t *v;
            json_array_foreach(vals, k, v)
            {
                gt_buf_puts(&b, k ? "," : "");
                gt_cli_jsonpath_text(v, &b);
            }
            cells[i] = gt_buf_take(&b);
        }
        json_decref(vals);
    }
    if (rc == 0) {
        gt_cli_table_add(&p->table, (const char *const *)cells);
    }
    for (size_t i = 0; i < p->n_custom; i++) {
        free(cells[i]);
    }
    return rc;
}

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
static int print_items(struct printer *p, const json_t *whole, const json_t *items,
                       struct gt_err *err)
{
    size_t i;
    json_t *obj;
    int rc = 0;
    struct gt_buf b;
    switch (p->output) {
    case OUT_JSONPATH:
        gt_buf_init(&b);
        rc = gt_cli_jsonpath_render(p->template, whole, &b, err);
        fputs(rc == 0 && b.data ? b.data : "", p->ctx->out);
        gt_buf_fini(&b);
        break;
    case OUT_CUSTOM:
        json_array_foreach((json_t *)items, i, obj)
        {
            if (rc == 0) {
                rc = custom_row(p, obj, err);
            }
        }
        if (rc == 0 && p->table.n_rows) {
            flush_rows(p);
        }
        break;
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
    return rc;
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
    struct gt_err err = {0};
    int rc = print_items(p, obj, one, &err);
    json_decref(one);
    fflush(p->ctx->out);
    if (rc != 0) {
        gt_cli_fail(p->ctx, &err);
    }
    return rc;
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

/* An item and the value it sorts by. */
struct sort_key {
    const json_t *item, *key; /* key NULL: the path found nothing */
    size_t seq;
};

static int by_key(const void *a, const void *b)
{
    const struct sort_key *x = a, *y = b;
    int c = 0;
    if (!x->key || !y->key) {
        c = !x->key && !y->key ? 0 : !x->key ? -1 : 1; /* missing first, as kubectl */
    } else if (json_is_number(x->key) && json_is_number(y->key)) {
        double u = json_number_value(x->key), v = json_number_value(y->key);
        c = u < v ? -1 : u > v;
    } else {
        struct gt_buf bx, by;
        gt_buf_init(&bx);
        gt_buf_init(&by);
        gt_cli_jsonpath_text(x->key, &bx);
        gt_cli_jsonpath_text(y->key, &by);
        c = strcmp(bx.data ? bx.data : "", by.data ? by.data : "");
        gt_buf_fini(&bx);
        gt_buf_fini(&by);
    }
    return c ? c : x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* list's items sorted (stably) by the first value path finds in each, in
 * place. 0, or the path's error. */
static int sort_items(json_t *list, const char *path, struct gt_err *err)
{
    json_t *items = json_object_get(list, "items");
    size_t n = json_array_size(items);
    struct sort_key *keys = gt_xcalloc(n ? n : 1, sizeof(*keys));
    json_t **found = gt_xcalloc(n ? n : 1, sizeof(*found));
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        keys[i].item = json_array_get(items, i);
        keys[i].seq = i;
        rc = gt_cli_jsonpath_eval(path, keys[i].item, &found[i], err);
        keys[i].key = rc == 0 ? json_array_get(found[i], 0) : NULL;
    }
    if (rc == 0) {
        qsort(keys, n, sizeof(*keys), by_key);
        json_t *sorted = json_array();
        for (size_t i = 0; i < n; i++) {
            json_array_append(sorted, (json_t *)keys[i].item);
        }
        json_object_set_new(list, "items", sorted);
    }
    for (size_t i = 0; i < n; i++) {
        json_decref(found[i]);
    }
    free(found);
    free(keys);
    return rc;
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
    if (rc == 0 && !name && o->sort_by && json_is_array(json_object_get(resp, "items"))) {
        rc = sort_items(resp, o->sort_by, err);
    }
    if (rc == 0) {
        const json_t *items = name ? NULL : json_object_get(resp, "items");
        json_t *one = name ? json_pack("[O]", resp) : NULL;
        if (!name && !json_is_array(items)) {
            rc = gt_err_set(err, GT_EBADREQ, "the server's list has no items");
        } else {
            if (!name && json_array_size(items) == 0 &&
                (p->output == OUT_TABLE || p->output == OUT_WIDE || p->output == OUT_NAME ||
                 p->output == OUT_CUSTOM)) {
                if (!o->watch) {
                    no_resources(p, project);
                }
            } else {
                rc = print_items(p, resp, name ? one : items, err);
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

/* `get images`: the catalogue (cmd_images.c); only -p and -A apply. */
static int get_images(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd,
                      const struct get_opts *o, int n_pos)
{
    if (n_pos != 1 || o->watch || o->output_arg || o->label_selector || o->field_selector ||
        o->sort_by) {
        return gt_cli_usage_error(ctx, cmd, "get images takes only -p PROJECT or -A");
    }
    struct gt_err err = {0};
    struct gt_cli_client *client;
    if (gt_cli_ctx_client(ctx, &client, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    return gt_cli_get_images(ctx, client, o->project, &err) == 0 ? 0 : gt_cli_fail(ctx, &err);
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
        .template = o->template,
        .cols = {.wide = o->output == OUT_WIDE,
                 .with_project = o->all_projects,
                 .show_labels = o->show_labels},
        .headers_printed = o->no_headers,
    };
    int rc = 0;
    if (o->output == OUT_CUSTOM) {
        rc = custom_columns(&p, o->template, err);
    } else {
        gt_cli_columns_init(&p.table, kind, &p.cols);
    }
    char *rv = NULL;
    rc = rc ? rc : list_and_print(&p, client, o, project, name, &rv, err);
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
    for (size_t i = 0; i < p.n_custom; i++) {
        free(p.custom_paths[i]);
    }
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
    if (!strcmp(argv[first], "images") || !strcmp(argv[first], "image")) {
        return get_images(ctx, cmd, &o, n_pos);
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
    if (o.output_arg && parse_output(o.output_arg, &o.output, &o.template) != 0) {
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
