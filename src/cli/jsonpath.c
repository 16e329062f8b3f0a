/*
 * kubectl's JSONPath templates, the part people type: `-o jsonpath=...`,
 * `-o custom-columns=NAME:PATH,...` and `--sort-by=PATH`.
 *
 * A template is literal text with {EXPRESSION} parts; an expression is a
 * path from the current object (its leading '.' or "$." optional):
 * ".field", "['field']" or "[\"field\"]", "[N]" (an index, negative from
 * the end), "[*]" (every element or member value), or "{range PATH}...{end}"
 * (the text between once per result, with it as the current object), or a
 * quoted string literal ({"\n"}, {'\t'}: \n, \t and \\ are unescaped).
 * Each result prints as kubectl prints it: strings bare, other scalars as
 * JSON, objects and lists as compact JSON; several results of one
 * expression are separated by a space. A path that finds nothing prints
 * nothing (kubectl's allowMissingKeys, its default). Filters ([?()]),
 * slices and recursive descent (..) are not supported and are refused.
 *
 * Nothing is kept between calls; results borrow from the input.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"

enum { MAX_DEPTH = 8 };

/* Append the values the path (len bytes) finds from root to out (a JSON
 * array, borrowed references appended as new ones). */
static int eval_path(const char *path, size_t len, const json_t *root, json_t *out,
                     struct gt_err *err)
{
    json_t *cur = json_array();
    json_array_append(cur, (json_t *)root);
    size_t i = 0;
    if (len && path[0] == '$') {
        i++;
    }
    int rc = 0;
    while (i < len && rc == 0) {
        json_t *next = json_array();
        char key[256];
        long index = 0;
        enum { K_FIELD, K_INDEX, K_ALL } what = K_FIELD;
        if (path[i] == '.' && i + 1 < len && path[i + 1] == '.') {
            rc = gt_err_set(err, GT_EBADREQ,
                            "jsonpath %.*s: recursive descent (..) is not "
                            "supported",
                            (int)len, path);
        } else if (path[i] == '.') {
            size_t s = ++i;
            while (i < len && path[i] != '.' && path[i] != '[') {
                i++;
            }
            if (i == s && i < len) {
                rc = gt_err_set(err, GT_EBADREQ, "jsonpath %.*s: empty field name", (int)len, path);
            }
            snprintf(key, sizeof(key), "%.*s", (int)(i - s), path + s);
            if (!key[0]) { /* "." alone: the object itself */
                json_decref(next);
                break;
            }
        } else if (path[i] == '[') {
            const char *close = memchr(path + i, ']', len - i);
            if (!close) {
                rc = gt_err_set(err, GT_EBADREQ, "jsonpath %.*s: unclosed [", (int)len, path);
            } else {
                const char *in = path + i + 1;
                size_t n = (size_t)(close - in);
                char *end;
                if (n == 1 && in[0] == '*') {
                    what = K_ALL;
                } else if (n >= 2 && (in[0] == '\'' || in[0] == '"') && in[n - 1] == in[0]) {
                    snprintf(key, sizeof(key), "%.*s", (int)(n - 2), in + 1);
                } else if (n > 0 && ((index = strtol(in, &end, 10)), end == close)) {
                    what = K_INDEX;
                } else {
                    rc = gt_err_set(err, GT_EBADREQ,
                                    "jsonpath %.*s: [%.*s] is not supported (want [N], [*] or "
                                    "['name'])",
                                    (int)len, path, (int)n, in);
                }
                i = (size_t)(close - path) + 1;
            }
        } else {
            rc = gt_err_set(err, GT_EBADREQ, "jsonpath %.*s: want .field or [...] at \"%.*s\"",
                            (int)len, path, (int)(len - i), path + i);
        }
        size_t k;
        json_t *v;
        json_array_foreach(cur, k, v)
        {
            if (rc != 0) {
                break;
            }
            if (what == K_FIELD && json_is_object(v) && json_object_get(v, key)) {
                json_array_append(next, json_object_get(v, key));
            } else if (what == K_INDEX && json_is_array(v)) {
                long n = (long)json_array_size(v);
                long at = index < 0 ? n + index : index;
                if (at >= 0 && at < n) {
                    json_array_append(next, json_array_get(v, (size_t)at));
                }
            } else if (what == K_ALL && json_is_array(v)) {
                json_array_extend(next, v);
            } else if (what == K_ALL && json_is_object(v)) {
                const char *mk;
                json_t *mv;
                json_object_foreach(v, mk, mv)
                {
                    json_array_append(next, mv);
                }
            }
        }
        json_decref(cur);
        cur = next;
    }
    if (rc == 0) {
        json_array_extend(out, cur);
    }
    json_decref(cur);
    return rc;
}

int gt_cli_jsonpath_eval(const char *expr, const json_t *root, json_t **out, struct gt_err *err)
{
    size_t len = strlen(expr);
    if (len >= 2 && expr[0] == '{' && expr[len - 1] == '}') {
        expr++;
        len -= 2;
    }
    *out = json_array();
    int rc = eval_path(expr, len, root, *out, err);
    if (rc != 0) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

void gt_cli_jsonpath_text(const json_t *v, struct gt_buf *out)
{
    if (json_is_string(v)) {
        gt_buf_append(out, json_string_value(v), json_string_length(v));
        return;
    }
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    gt_buf_puts(out, text ? text : "");
    free(text);
}

/* A quoted literal (q..q, len bytes with its quotes) unescaped onto out. */
static void literal(const char *s, size_t len, struct gt_buf *out)
{
    for (size_t i = 1; i + 1 < len; i++) {
        char c = s[i];
        if (c == '\\' && i + 2 < len) {
            char e = s[++i];
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
        }
        gt_buf_append(out, &c, 1);
    }
}

/* Render tmpl (len bytes) against cur onto out; depth counts nested
 * ranges. */
static int render(const char *tmpl, size_t len, const json_t *cur, struct gt_buf *out, int depth,
                  struct gt_err *err)
{
    size_t i = 0;
    while (i < len) {
        const char *open = memchr(tmpl + i, '{', len - i);
        size_t stop = open ? (size_t)(open - tmpl) : len;
        gt_buf_append(out, tmpl + i, stop - i);
        if (!open) {
            break;
        }
        const char *close = memchr(open, '}', len - stop);
        if (!close) {
            return gt_err_set(err, GT_EBADREQ, "jsonpath: unclosed { in \"%.*s\"", (int)len, tmpl);
        }
        const char *e = open + 1;
        size_t n = (size_t)(close - e);
        i = (size_t)(close - tmpl) + 1;
        if (n >= 2 && (e[0] == '"' || e[0] == '\'') && e[n - 1] == e[0]) {
            literal(e, n, out);
            continue;
        }
        if (n >= 6 && !strncmp(e, "range ", 6)) {
            /* the body up to the matching {end} */
            int nest = 1;
            size_t j = i, body_end = 0;
            while (nest && j < len) {
                const char *o = memchr(tmpl + j, '{', len - j);
                if (!o) {
                    break;
                }
                if (!strncmp(o, "{end}", 5)) {
                    nest--;
                    body_end = (size_t)(o - tmpl);
                    j = body_end + 5;
                } else {
                    nest += !strncmp(o, "{range ", 7);
                    j = (size_t)(o - tmpl) + 1;
                }
            }
            if (nest || depth >= MAX_DEPTH) {
                return gt_err_set(err, GT_EBADREQ,
                                  nest ? "jsonpath: {range} without its {end}"
                                       : "jsonpath: ranges nested too deep");
            }
            json_t *items = json_array();
            int rc = eval_path(e + 6, n - 6, cur, items, err);
            size_t k;
            json_t *v;
            json_array_foreach(items, k, v)
            {
                if (rc == 0) {
                    rc = render(tmpl + i, body_end - i, v, out, depth + 1, err);
                }
            }
            json_decref(items);
            if (rc != 0) {
                return rc;
            }
            i = j;
            continue;
        }
        if (n == 3 && !strncmp(e, "end", 3)) {
            return gt_err_set(err, GT_EBADREQ, "jsonpath: {end} without its {range}");
        }
        json_t *vals = json_array();
        int rc = eval_path(e, n, cur, vals, err);
        size_t k;
        json_t *v;
        json_array_foreach(vals, k, v)
        {
            if (k > 0) {
                gt_buf_puts(out, " ");
            }
            gt_cli_jsonpath_text(v, out);
        }
        json_decref(vals);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

int gt_cli_jsonpath_render(const char *tmpl, const json_t *root, struct gt_buf *out,
                           struct gt_err *err)
{
    return render(tmpl, strlen(tmpl), root, out, 0, err);
}
