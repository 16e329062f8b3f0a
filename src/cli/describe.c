/*
 * `gantry describe` layout, after kubectl's generic describer.
 *
 * A first block of aligned "Key:  value" lines for the object's identity
 * (metadata) and its top-level scalars (PriorityClass keeps its fields at the
 * top level), then one section per remaining top-level field (Spec, Status,
 * ...) printed as nested, indented blocks, then the object's Events as a
 * table. Field names are shown as kubectl's smartLabelFor does ("nodeName"
 * -> "Node Name"), except the keys of maps whose keys are data (labels,
 * resource amounts, replica types), which are shown verbatim.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"

enum { INDENT = 2 };

/* Fields whose keys are data, not field names. */
static const char *const verbatim_maps[] = {
    "labels",   "annotations", "quota",     "limit",        "limits",       "requests", "hard",
    "capacity", "allocatable", "allocated", "replicaSpecs", "nodeSelector", "used",     "borrowed",
};

static const char *const acronyms[] = {"API", "URL", "UID", "GPU", "CPU", "IP"};

static bool is_verbatim_map(const char *key)
{
    for (size_t i = 0; i < GT_ARRAY_LEN(verbatim_maps); i++) {
        if (strcmp(key, verbatim_maps[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* Append one camelCase word part [s, s+n) title-cased (or as an acronym). */
static void label_part(const char *s, size_t n, struct gt_buf *out)
{
    for (size_t i = 0; i < GT_ARRAY_LEN(acronyms); i++) {
        if (strlen(acronyms[i]) == n && strncasecmp(s, acronyms[i], n) == 0) {
            gt_buf_puts(out, acronyms[i]);
            return;
        }
    }
    char first = (char)toupper((unsigned char)s[0]);
    gt_buf_append(out, &first, 1);
    gt_buf_append(out, s + 1, n - 1);
}

/* kubectl's smartLabelFor: "creationTimestamp" -> "Creation Timestamp";
 * digits stay in their word ("latencyP99Ms" -> "Latency P99 Ms", where
 * kubectl keeps such a key as it is); keys that start with anything but a
 * letter or hold anything but letters, digits and '-' are kept as they are. */
static char *smart_label(const char *key)
{
    for (const char *p = key; *p; p++) {
        if ((!isalnum((unsigned char)*p) && *p != '-') || !isalpha((unsigned char)key[0])) {
            return gt_xstrdup(key);
        }
    }
    struct gt_buf b;
    gt_buf_init(&b);
    size_t start = 0, n = strlen(key);
    for (size_t i = 1; i <= n; i++) {
        bool split = i == n;
        if (!split && isupper((unsigned char)key[i])) {
            /* "nodeName" splits before N; "URLPath" splits before the P;
             * "p99Ms" before the M. */
            split = islower((unsigned char)key[i - 1]) || isdigit((unsigned char)key[i - 1]) ||
                    (i + 1 < n && islower((unsigned char)key[i + 1]));
        }
        if (split && i > start) {
            if (b.len) {
                gt_buf_append(&b, " ", 1);
            }
            label_part(key + start, i - start, &b);
            start = i;
        }
    }
    return gt_buf_take(&b);
}

static void pad(struct gt_buf *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        gt_buf_append(out, " ", 1);
    }
}

/* Printed on the key's own line: scalars, null and empty containers. */
static bool is_scalar_line(const json_t *v)
{
    if (json_is_object(v)) {
        return json_object_size(v) == 0;
    }
    return !json_is_array(v) || json_array_size(v) == 0;
}

static void put_scalar(const json_t *v, struct gt_buf *out)
{
    char *s = gt_cli_scalar_text(v);
    gt_buf_puts(out, s && *s ? s : "<none>");
    free(s);
}

static void render_value(const char *key, const json_t *v, size_t indent, struct gt_buf *out);

/* Lines of a map at indent, scalar values aligned two spaces past the
 * longest "Key:". verbatim: keep the keys as they are. */
static void render_map(const json_t *map, size_t indent, bool verbatim, struct gt_buf *out)
{
    const char *key;
    json_t *v;
    size_t width = 0;
    json_object_foreach((json_t *)map, key, v)
    {
        char *label = verbatim ? gt_xstrdup(key) : smart_label(key);
        if (is_scalar_line(v) && strlen(label) + 1 > width) {
            width = strlen(label) + 1;
        }
        free(label);
    }
    json_object_foreach((json_t *)map, key, v)
    {
        char *label = verbatim ? gt_xstrdup(key) : smart_label(key);
        pad(out, indent);
        gt_buf_printf(out, "%s:", label);
        if (is_scalar_line(v)) {
            pad(out, width - strlen(label) - 1 + 2);
            put_scalar(v, out);
            gt_buf_append(out, "\n", 1);
        } else {
            gt_buf_append(out, "\n", 1);
            render_value(key, v, indent + INDENT, out);
        }
        free(label);
    }
}

/* A non-empty object or array under key, at indent. Arrays of scalars give a
 * line per item; items that are objects are marked "- " as in YAML. */
static void render_value(const char *key, const json_t *v, size_t indent, struct gt_buf *out)
{
    if (json_is_object(v)) {
        render_map(v, indent, is_verbatim_map(key), out);
        return;
    }
    size_t i;
    json_t *item;
    json_array_foreach((json_t *)v, i, item)
    {
        if (json_is_object(item) && json_object_size(item) > 0) {
            size_t mark = out->len + indent;
            render_map(item, indent + INDENT, false, out);
            memcpy(out->data + mark, "- ", 2);
        } else if (json_is_array(item) && json_array_size(item) > 0) {
            pad(out, indent);
            gt_buf_puts(out, "-\n");
            render_value(key, item, indent + INDENT, out);
        } else {
            pad(out, indent);
            put_scalar(item, out);
            gt_buf_append(out, "\n", 1);
        }
    }
}

/* Labels or annotations as "k=v" lines under one aligned key. */
static char *pairs_text(const json_t *map, size_t value_col)
{
    if (!json_object_size(map)) {
        return gt_xstrdup("<none>");
    }
    struct gt_buf b;
    gt_buf_init(&b);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)map, k, v)
    {
        if (b.len) {
            gt_buf_append(&b, "\n", 1);
            pad(&b, value_col);
        }
        char *s = gt_cli_scalar_text(v);
        gt_buf_printf(&b, "%s=%s", k, s ? s : "");
        free(s);
    }
    return gt_buf_take(&b);
}

struct line {
    const char *key;
    char *value; /* NULL: "<none>" */
};

enum { MAX_HEAD = 32 };

static void head_add(struct line *lines, size_t *n, const char *key, char *value)
{
    if (*n < MAX_HEAD) {
        lines[(*n)++] = (struct line){key, value};
    } else {
        free(value);
    }
}

/* "2026-11-29T20:50:44Z (5m ago)" */
static char *created_text(const json_t *obj, int64_t now_ms)
{
    const char *ts = json_string_value(gt_json_path(obj, "metadata.creationTimestamp"));
    if (!ts) {
        return NULL;
    }
    char age[32];
    return gt_xasprintf("%s (%s ago)", ts, gt_cli_format_age(ts, now_ms, age, sizeof(age)));
}

static char *creator_text(const json_t *obj)
{
    const char *user = json_string_value(gt_json_path(obj, "metadata.creator.user"));
    char *uid = gt_cli_scalar_text(gt_json_path(obj, "metadata.creator.uid"));
    char *s = NULL;
    if (user) {
        s = uid ? gt_xasprintf("%s (uid %s)", user, uid) : gt_xstrdup(user);
    }
    free(uid);
    return s;
}

/* The identity block: metadata, then top-level scalars. Labels' extra lines
 * are indented to the value column, which is known only once every key is. */
static void render_head(const json_t *obj, int64_t now_ms, struct gt_buf *out)
{
    struct line lines[MAX_HEAD];
    size_t n = 0;
    const json_t *md = json_object_get(obj, "metadata");
    head_add(lines, &n, "Name", gt_cli_scalar_text(json_object_get(md, "name")));
    if (json_object_get(md, "project")) {
        head_add(lines, &n, "Project", gt_cli_scalar_text(json_object_get(md, "project")));
    }
    size_t labels_at = n;
    head_add(lines, &n, "Labels", NULL);
    head_add(lines, &n, "Annotations", NULL);
    head_add(lines, &n, "Kind", gt_cli_scalar_text(json_object_get(obj, "kind")));
    head_add(lines, &n, "Created", created_text(obj, now_ms));
    head_add(lines, &n, "Creator", creator_text(obj));
    head_add(lines, &n, "Resource Version",
             gt_cli_scalar_text(json_object_get(md, "resourceVersion")));
    head_add(lines, &n, "UID", gt_cli_scalar_text(json_object_get(md, "uid")));
    if (json_object_get(md, "deletionTimestamp")) {
        head_add(lines, &n, "Deletion Timestamp",
                 gt_cli_scalar_text(json_object_get(md, "deletionTimestamp")));
    }
    char *labels[MAX_HEAD];
    size_t n_labels = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (strcmp(key, "apiVersion") && strcmp(key, "kind") && strcmp(key, "metadata") &&
            is_scalar_line(v) && n < MAX_HEAD) {
            labels[n_labels] = smart_label(key);
            head_add(lines, &n, labels[n_labels++], gt_cli_scalar_text(v));
        }
    }
    size_t width = 0;
    for (size_t i = 0; i < n; i++) {
        if (strlen(lines[i].key) + 1 > width) {
            width = strlen(lines[i].key) + 1;
        }
    }
    lines[labels_at].value = pairs_text(json_object_get(md, "labels"), width + 2);
    lines[labels_at + 1].value = pairs_text(json_object_get(md, "annotations"), width + 2);
    for (size_t i = 0; i < n; i++) {
        gt_buf_printf(out, "%s:", lines[i].key);
        pad(out, width - strlen(lines[i].key) - 1 + 2);
        gt_buf_puts(out, lines[i].value && *lines[i].value ? lines[i].value : "<none>");
        gt_buf_append(out, "\n", 1);
        free(lines[i].value);
    }
    for (size_t i = 0; i < n_labels; i++) {
        free(labels[i]);
    }
}

static int64_t event_time_ms(const json_t *ev, const char *field)
{
    int64_t ms = 0;
    const char *ts = json_string_value(json_object_get(ev, field));
    if (!ts) {
        ts = json_string_value(gt_json_path(ev, "metadata.creationTimestamp"));
    }
    if (ts && gt_time_parse(ts, &ms) != 0) {
        ms = 0;
    }
    return ms;
}

static int by_last_seen(const void *a, const void *b)
{
    int64_t ta = event_time_ms(*(const json_t *const *)a, "lastTimestamp");
    int64_t tb = event_time_ms(*(const json_t *const *)b, "lastTimestamp");
    return ta < tb ? -1 : ta > tb;
}

/* kubectl's describe Age: "5m" or, for folded repeats, "5m (x3 over 20m)". */
static char *event_age(const json_t *ev, int64_t now_ms)
{
    char last[32], first[32];
    gt_cli_format_duration(now_ms - event_time_ms(ev, "lastTimestamp"), last, sizeof(last));
    json_int_t count = json_integer_value(json_object_get(ev, "count"));
    if (count <= 1) {
        return gt_xstrdup(last);
    }
    gt_cli_format_duration(now_ms - event_time_ms(ev, "firstTimestamp"), first, sizeof(first));
    return gt_xasprintf("%s (x%" JSON_INTEGER_FORMAT " over %s)", last, count, first);
}

static void render_events(const json_t *events, int64_t now_ms, struct gt_buf *out)
{
    size_t n = json_array_size(events);
    if (n == 0) {
        gt_buf_puts(out, "Events:  <none>\n");
        return;
    }
    const json_t **sorted = gt_xcalloc(n, sizeof(*sorted));
    for (size_t i = 0; i < n; i++) {
        sorted[i] = json_array_get(events, i);
    }
    qsort(sorted, n, sizeof(*sorted), by_last_seen);
    static const char *const headers[] = {"Type", "Reason", "Age", "From", "Message"};
    static const char *const rule[] = {"----", "------", "----", "----", "-------"};
    struct gt_cli_table t;
    gt_cli_table_init(&t, GT_ARRAY_LEN(headers), headers);
    gt_cli_table_add(&t, rule);
    for (size_t i = 0; i < n; i++) {
        char *age = event_age(sorted[i], now_ms);
        const char *from = json_string_value(gt_json_path(sorted[i], "source.component"));
        const char *cells[] = {
            json_string_value(json_object_get(sorted[i], "type")),
            json_string_value(json_object_get(sorted[i], "reason")),
            age,
            from ? from : json_string_value(json_object_get(sorted[i], "reportingComponent")),
            json_string_value(json_object_get(sorted[i], "message")),
        };
        gt_cli_table_add(&t, cells);
        free(age);
    }
    struct gt_buf tb;
    gt_buf_init(&tb);
    gt_cli_table_render(&t, true, &tb);
    gt_buf_puts(out, "Events:\n");
    for (char *line = tb.data, *nl; line && *line; line = nl + 1) {
        nl = strchr(line, '\n');
        gt_buf_puts(out, "  ");
        gt_buf_append(out, line, (size_t)(nl - line) + 1);
    }
    gt_buf_fini(&tb);
    gt_cli_table_fini(&t);
    free(sorted);
}

void gt_cli_describe_render(const json_t *obj, const json_t *events, int64_t now_ms,
                            struct gt_buf *out)
{
    render_head(obj, now_ms, out);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (!strcmp(key, "apiVersion") || !strcmp(key, "kind") || !strcmp(key, "metadata") ||
            is_scalar_line(v)) {
            continue;
        }
        char *label = smart_label(key);
        gt_buf_printf(out, "%s:\n", label);
        free(label);
        render_value(key, v, INDENT, out);
    }
    render_events(events, now_ms, out);
}

bool gt_cli_event_matches(const json_t *event, const struct gt_kind_info *k, const char *project,
                          const char *name)
{
    const char *kind = json_string_value(gt_json_path(event, "involvedObject.kind"));
    const char *obj_name = json_string_value(gt_json_path(event, "involvedObject.name"));
    if (!kind || !obj_name || strcasecmp(kind, k->name) != 0 || strcmp(obj_name, name) != 0) {
        return false;
    }
    if (!project) {
        return true;
    }
    const char *p = json_string_value(gt_json_path(event, "involvedObject.project"));
    if (!p) {
        p = json_string_value(gt_json_path(event, "metadata.project"));
    }
    return !p || strcmp(p, project) == 0;
}
