/*
 * JSON and YAML helpers over jansson and libyaml.
 *
 * The YAML loader walks libyaml's event stream with an explicit stack of open
 * containers (bounded depth, so hostile input cannot exhaust the C stack) and
 * builds jansson values; plain scalars are typed by YAML 1.2's core schema,
 * anything quoted stays a string. Anchors, aliases, unknown tags, non-string
 * or duplicate mapping keys, infinities and NaN are rejected: every manifest
 * must mean the same thing as the JSON it converts to. The dumper writes block
 * YAML and quotes each string the loader would otherwise read as another
 * type, so dump-then-load gives back an equal value.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/common.h"

/* Deeper nesting than any manifest needs is rejected. */
#define MAX_YAML_DEPTH 64

/* YAML limits implicit ("key: value") keys to 1024 characters; longer keys,
 * counting escapes, are written in the explicit "? key" form. */
#define MAX_IMPLICIT_KEY 128

#define TAG_STR "tag:yaml.org,2002:str"
#define TAG_MAP "tag:yaml.org,2002:map"
#define TAG_SEQ "tag:yaml.org,2002:seq"

/* What a plain scalar means under the core schema. */
enum plain_kind { P_STR, P_NULL, P_TRUE, P_FALSE, P_INT10, P_INT8, P_INT16, P_FLOAT, P_NONFINITE };

static bool span_is(const char *s, size_t n, const char *const *words)
{
    for (; *words; words++) {
        if (strlen(*words) == n && memcmp(s, *words, n) == 0) {
            return true;
        }
    }
    return false;
}

/* Count leading characters of s[0..n) found in set. */
static size_t span_of(const char *s, size_t n, const char *set)
{
    size_t i = 0;
    while (i < n && s[i] != '\0' && strchr(set, s[i])) {
        i++;
    }
    return i;
}

#define DIGITS "0123456789"

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool is_core_float(const char *s, size_t n)
{
    size_t i = span_of(s, n, "-+") > 0 ? 1 : 0;
    size_t int_digits = span_of(s + i, n - i, DIGITS);
    i += int_digits;
    if (i < n && s[i] == '.') {
        i++;
        size_t frac = span_of(s + i, n - i, DIGITS);
        if (int_digits == 0 && frac == 0) {
            return false;
        }
        i += frac;
    } else if (int_digits == 0) {
        return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+')) {
            i++;
        }
        size_t exp = span_of(s + i, n - i, DIGITS);
        if (exp == 0) {
            return false;
        }
        i += exp;
    }
    return i == n;
}

static enum plain_kind classify_plain(const char *s, size_t n)
{
    static const char *const nulls[] = {"~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    static const char *const nonfinite[] = {".inf",  ".Inf",  ".INF",  "+.inf", "+.Inf",
                                            "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
                                            ".NaN",  ".NAN",  NULL};
    if (n == 0 || span_is(s, n, nulls)) {
        return P_NULL;
    }
    if (span_is(s, n, trues)) {
        return P_TRUE;
    }
    if (span_is(s, n, falses)) {
        return P_FALSE;
    }
    if (span_is(s, n, nonfinite)) {
        return P_NONFINITE;
    }
    size_t sign = (s[0] == '-' || s[0] == '+') ? 1 : 0;
    if (n > sign && span_of(s + sign, n - sign, DIGITS) == n - sign) {
        return P_INT10;
    }
    if (n > 2 && s[0] == '0' && s[1] == 'o' && span_of(s + 2, n - 2, "01234567") == n - 2) {
        return P_INT8;
    }
    if (n > 2 && s[0] == '0' && s[1] == 'x' &&
        span_of(s + 2, n - 2, DIGITS "abcdefABCDEF") == n - 2) {
        return P_INT16;
    }
    return is_core_float(s, n) ? P_FLOAT : P_STR;
}

/* ---- loader ---- */

struct frame {
    json_t *node; /* borrowed: owned by its parent or by the loader's root */
    char *key;    /* pending mapping key, owned; NULL when a key is expected */
};

struct loader {
    yaml_parser_t parser;
    struct frame stack[MAX_YAML_DEPTH];
    int depth;
    json_t *root; /* the current document's root, owned */
    json_t *docs;
    struct gt_err *err;
};

static int fail_at(struct loader *l, const yaml_mark_t *mark, const char *what)
{
    return gt_err_set(l->err, GT_EBADREQ, "yaml: line %zu column %zu: %s", mark->line + 1,
                      mark->column + 1, what);
}

/* A plain scalar typed by the core schema. */
static int plain_value(struct loader *l, const yaml_event_t *ev, json_t **out)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    enum plain_kind kind = classify_plain(s, n);
    errno = 0;
    switch (kind) {
    case P_NULL:
        *out = json_null();
        return 0;
    case P_TRUE:
        *out = json_true();
        return 0;
    case P_FALSE:
        *out = json_false();
        return 0;
    case P_INT10:
    case P_INT8:
    case P_INT16: {
        int base = kind == P_INT10 ? 10 : kind == P_INT8 ? 8 : 16;
        long long v = strtoll(kind == P_INT10 ? s : s + 2, NULL, base);
        if (errno == ERANGE) {
            return fail_at(l, &ev->start_mark, "integer out of range");
        }
        *out = json_integer(v);
        return 0;
    }
    case P_FLOAT: {
        double d = strtod(s, NULL);
        if (!isfinite(d)) {
            return fail_at(l, &ev->start_mark, "number out of range");
        }
        *out = json_real(d);
        return 0;
    }
    case P_NONFINITE:
        return fail_at(l, &ev->start_mark, "infinity and NaN are not supported");
    case P_STR:
        break;
    }
    *out = json_stringn(s, n);
    return *out ? 0 : fail_at(l, &ev->start_mark, "invalid UTF-8");
}

static int scalar_value(struct loader *l, const yaml_event_t *ev, json_t **out)
{
    const char *tag = (const char *)ev->data.scalar.tag;
    if (tag && strcmp(tag, "!") != 0 && strcmp(tag, TAG_STR) != 0) {
        return fail_at(l, &ev->start_mark, "unsupported tag");
    }
    if (!tag && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        return plain_value(l, ev, out);
    }
    *out = json_stringn((const char *)ev->data.scalar.value, ev->data.scalar.length);
    return *out ? 0 : fail_at(l, &ev->start_mark, "invalid UTF-8");
}

/* Attach v (taken) to the open container or make it the document root. */
static void attach(struct loader *l, json_t *v)
{
    if (l->depth == 0) {
        json_decref(l->root);
        l->root = v;
        return;
    }
    struct frame *f = &l->stack[l->depth - 1];
    if (json_is_array(f->node)) {
        json_array_append_new(f->node, v);
    } else {
        json_object_set_new(f->node, f->key, v);
        free(f->key);
        f->key = NULL;
    }
}

static bool expecting_key(const struct loader *l)
{
    return l->depth > 0 && json_is_object(l->stack[l->depth - 1].node) &&
           l->stack[l->depth - 1].key == NULL;
}

static int on_scalar(struct loader *l, const yaml_event_t *ev)
{
    if (ev->data.scalar.anchor) {
        return fail_at(l, &ev->start_mark, "anchors are not supported");
    }
    json_t *v = NULL;
    int rc = scalar_value(l, ev, &v);
    if (rc < 0) {
        return rc;
    }
    if (!expecting_key(l)) {
        attach(l, v);
        return 0;
    }
    struct frame *f = &l->stack[l->depth - 1];
    if (!json_is_string(v)) {
        rc = fail_at(l, &ev->start_mark, "mapping keys must be strings");
    } else if (strlen(json_string_value(v)) != json_string_length(v)) {
        rc = fail_at(l, &ev->start_mark, "NUL in mapping key");
    } else if (json_object_get(f->node, json_string_value(v))) {
        rc = fail_at(l, &ev->start_mark, "duplicate mapping key");
    } else {
        f->key = gt_xstrdup(json_string_value(v));
    }
    json_decref(v);
    return rc;
}

static int on_container_start(struct loader *l, const yaml_event_t *ev)
{
    bool is_map = ev->type == YAML_MAPPING_START_EVENT;
    const yaml_char_t *anchor =
        is_map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
    const char *tag =
        (const char *)(is_map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag);
    if (anchor) {
        return fail_at(l, &ev->start_mark, "anchors are not supported");
    }
    if (tag && strcmp(tag, is_map ? TAG_MAP : TAG_SEQ) != 0) {
        return fail_at(l, &ev->start_mark, "unsupported tag");
    }
    if (expecting_key(l)) {
        return fail_at(l, &ev->start_mark, "mapping keys must be strings");
    }
    if (l->depth == MAX_YAML_DEPTH) {
        return fail_at(l, &ev->start_mark, "nesting too deep");
    }
    json_t *c = is_map ? json_object() : json_array();
    attach(l, c);
    l->stack[l->depth].node = c;
    l->stack[l->depth].key = NULL;
    l->depth++;
    return 0;
}

static int on_event(struct loader *l, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        json_decref(l->root);
        l->root = NULL;
        return 0;
    case YAML_DOCUMENT_END_EVENT:
        if (l->root && !json_is_null(l->root)) {
            json_array_append(l->docs, l->root);
        }
        json_decref(l->root);
        l->root = NULL;
        return 0;
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT:
        return on_container_start(l, ev);
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
        l->depth--;
        return 0;
    case YAML_SCALAR_EVENT:
        return on_scalar(l, ev);
    case YAML_ALIAS_EVENT:
        return fail_at(l, &ev->start_mark, "aliases are not supported");
    default:
        return 0;
    }
}

/* JSON texts take jansson's own decoder: exact numbers, exact errors. */
static bool try_json(const char *text, size_t len, json_t **docs)
{
    size_t i = span_of(text, len, " \t\r\n");
    if (i == len || (text[i] != '{' && text[i] != '[')) {
        return false;
    }
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    if (!doc) {
        return false; /* maybe flow-style YAML; let the YAML parser judge */
    }
    *docs = json_array();
    json_array_append_new(*docs, doc);
    return true;
}

int gt_yaml_load_documents(const char *text, size_t len, json_t **docs, struct gt_err *err)
{
    if (try_json(text, len, docs)) {
        return 0;
    }
    struct loader l = {.docs = json_array(), .err = err};
    int rc = 0;
    bool done = false;
    yaml_parser_initialize(&l.parser);
    yaml_parser_set_input_string(&l.parser, (const unsigned char *)text, len);
    while (!done && rc == 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&l.parser, &ev)) {
            rc = fail_at(&l, &l.parser.problem_mark,
                         l.parser.problem ? l.parser.problem : "malformed YAML");
            break;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        rc = on_event(&l, &ev);
        yaml_event_delete(&ev);
    }
    for (int i = 0; i < l.depth; i++) {
        free(l.stack[i].key);
    }
    json_decref(l.root);
    yaml_parser_delete(&l.parser);
    if (rc < 0) {
        json_decref(l.docs);
        return rc;
    }
    *docs = l.docs;
    return 0;
}

/* ---- dumper ---- */

static bool needs_quotes(const char *s, size_t n)
{
    if (n == 0 || classify_plain(s, n) != P_STR) {
        return true;
    }
    if (strchr("-?:,[]{}#&*!|>'\"%@`. ", s[0]) || s[n - 1] == ' ' || s[n - 1] == ':') {
        return true;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7f) {
            return true;
        }
        if (i + 1 < n && ((c == ':' && s[i + 1] == ' ') || (c == ' ' && s[i + 1] == '#'))) {
            return true;
        }
    }
    return false;
}

/* Decode one UTF-8 sequence at s (valid, as jansson guarantees); returns its
 * length and the code point in *cp. */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 1;
    if (len > n) {
        *cp = 0xfffd;
        return 1;
    }
    static const unsigned char lead_mask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
    uint32_t v = s[0] & lead_mask[len];
    for (size_t i = 1; i < len; i++) {
        v = (v << 6) | (s[i] & 0x3f);
    }
    *cp = v;
    return len;
}

/* A double-quoted YAML scalar; escapes everything YAML calls non-printable. */
static void put_quoted(struct gt_buf *b, const char *s, size_t n)
{
    gt_buf_puts(b, "\"");
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            gt_buf_printf(b, "\\%c", c);
        } else if (c == '\n') {
            gt_buf_puts(b, "\\n");
        } else if (c == '\t') {
            gt_buf_puts(b, "\\t");
        } else if (c < 0x20 || c == 0x7f) {
            gt_buf_printf(b, "\\x%02x", c);
        } else if (c >= 0x80) {
            uint32_t cp;
            size_t len = utf8_decode((const unsigned char *)s + i, n - i, &cp);
            if (cp <= 0x9f || cp == 0x2028 || cp == 0x2029 || cp == 0xfffe || cp == 0xffff ||
                cp == 0xfeff || (cp >= 0xd800 && cp <= 0xdfff)) {
                gt_buf_printf(b, "\\u%04" PRIx32, cp);
            } else {
                gt_buf_append(b, s + i, len);
            }
            i += len;
            continue;
        } else {
            gt_buf_append(b, s + i, 1);
        }
        i++;
    }
    gt_buf_puts(b, "\"");
}

static void put_string(struct gt_buf *b, const char *s, size_t n)
{
    if (needs_quotes(s, n)) {
        put_quoted(b, s, n);
    } else {
        gt_buf_append(b, s, n);
    }
}

static void put_scalar(struct gt_buf *b, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        put_string(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        gt_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL: {
        char *t = json_dumps(v, JSON_ENCODE_ANY);
        gt_buf_puts(b, t);
        free(t);
        break;
    }
    case JSON_TRUE:
        gt_buf_puts(b, "true");
        break;
    case JSON_FALSE:
        gt_buf_puts(b, "false");
        break;
    case JSON_OBJECT:
        gt_buf_puts(b, "{}"); /* only reached for empty containers */
        break;
    case JSON_ARRAY:
        gt_buf_puts(b, "[]");
        break;
    case JSON_NULL:
        gt_buf_puts(b, "null");
        break;
    }
}

static bool is_block(const json_t *v)
{
    return (json_is_object(v) && json_object_size(v) > 0) ||
           (json_is_array(v) && json_array_size(v) > 0);
}

static void dump_node(struct gt_buf *b, const json_t *v, int indent, bool inline_first);

static void indent_to(struct gt_buf *b, int indent)
{
    for (int i = 0; i < indent; i++) {
        gt_buf_puts(b, " ");
    }
}

/* The value after "key:"; block values start on the next line. */
static void dump_mapping_value(struct gt_buf *b, const json_t *v, int indent)
{
    if (json_is_object(v) && json_object_size(v) > 0) {
        gt_buf_puts(b, "\n");
        dump_node(b, v, indent + 2, false);
    } else if (is_block(v)) {
        gt_buf_puts(b, "\n");
        dump_node(b, v, indent, false); /* "- " items may sit at the key's column */
    } else {
        gt_buf_puts(b, " ");
        put_scalar(b, v);
        gt_buf_puts(b, "\n");
    }
}

/* Write a block container at indent. inline_first: the cursor already sits
 * after "- ", so the first line needs no indentation. */
static void dump_node(struct gt_buf *b, const json_t *v, int indent, bool inline_first)
{
    bool first = true;
    if (json_is_object(v)) {
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)v, key, val)
        {
            if (!(first && inline_first)) {
                indent_to(b, indent);
            }
            first = false;
            size_t n = strlen(key);
            if (n > MAX_IMPLICIT_KEY) {
                gt_buf_puts(b, "? ");
                put_string(b, key, n);
                gt_buf_puts(b, "\n");
                indent_to(b, indent);
            } else {
                put_string(b, key, n);
            }
            gt_buf_puts(b, ":");
            dump_mapping_value(b, val, indent);
        }
        return;
    }
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item)
    {
        if (!(first && inline_first)) {
            indent_to(b, indent);
        }
        first = false;
        gt_buf_puts(b, "- ");
        if (is_block(item)) {
            dump_node(b, item, indent + 2, true);
        } else {
            put_scalar(b, item);
            gt_buf_puts(b, "\n");
        }
    }
}

char *gt_yaml_dump(const json_t *v)
{
    struct gt_buf b;
    gt_buf_init(&b);
    if (is_block(v)) {
        dump_node(&b, v, 0, false);
    } else {
        put_scalar(&b, v);
        gt_buf_puts(&b, "\n");
    }
    return gt_buf_take(&b);
}

/* ---- JSON ---- */

json_t *gt_json_find(const json_t *array, const char *key, const char *value)
{
    size_t i;
    json_t *v;
    json_array_foreach(array, i, v)
    {
        const char *s = json_string_value(json_object_get(v, key));
        if (s && value && !strcmp(s, value)) {
            return v;
        }
    }
    return NULL;
}

json_t *gt_json_path(const json_t *obj, const char *dotted)
{
    const json_t *cur = obj;
    const char *p = dotted;
    while (cur && json_is_object(cur)) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        cur = json_object_getn(cur, p, n);
        if (!dot) {
            return (json_t *)cur;
        }
        p = dot + 1;
    }
    return NULL;
}

char *gt_json_dumps(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}
