/*
 * Label selectors (the syntax of Kubernetes' labels.Parse: "a=b", "a==b",
 * "a!=b", "a in (x,y)", "a notin (x)", "a", "!a", comma-separated, all must
 * hold) and field selectors ("spec.nodeName=n1,status.phase!=Failed").
 *
 * Both are parsed once into terms that own copies of their strings; the
 * selector owns its terms. As in Kubernetes, "!=" and "notin" also match
 * objects that lack the label. Input length is bounded (query strings are
 * untrusted).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"

#define SELECTOR_MAX_LEN 8192

enum sel_op { OP_EQ, OP_NE, OP_IN, OP_NOTIN, OP_EXISTS, OP_NOT_EXISTS };

struct sel_term {
    enum sel_op op;
    char *key;
    char **values;
    size_t n_values, cap_values;
};

struct gt_selector {
    struct sel_term *terms;
    size_t n_terms, cap_terms;
};

struct lexer {
    const char *s;
    size_t pos;
    struct gt_err *err;
};

static int lex_fail(struct lexer *lx, const char *why)
{
    return gt_err_set(lx->err, GT_EBADREQ, "label selector: position %zu: %s", lx->pos + 1, why);
}

static void skip_spaces(struct lexer *lx)
{
    while (lx->s[lx->pos] == ' ' || lx->s[lx->pos] == '\t') {
        lx->pos++;
    }
}

/* A key or value: everything up to a delimiter. Caller frees. */
static char *lex_word(struct lexer *lx)
{
    size_t n = strcspn(lx->s + lx->pos, " \t,()=!");
    char *w = gt_xstrndup(lx->s + lx->pos, n);
    lx->pos += n;
    return w;
}

static bool lex_take(struct lexer *lx, const char *tok)
{
    size_t n = strlen(tok);
    if (strncmp(lx->s + lx->pos, tok, n) == 0) {
        lx->pos += n;
        return true;
    }
    return false;
}

static int check_with(gt_check_fn *fn, const char *s, struct lexer *lx)
{
    json_t *v = json_string(s);
    struct gt_err why = {0};
    int rc = v ? fn(v, &why) : GT_EINVAL;
    json_decref(v);
    return rc < 0 ? lex_fail(lx, why.msg[0] ? why.msg : "invalid UTF-8") : 0;
}

static int add_value(struct sel_term *t, struct lexer *lx)
{
    char *v = lex_word(lx);
    int rc = check_with(gt_check_label_value, v, lx);
    GT_VEC_RESERVE(t->values, t->cap_values, t->n_values + 1, 4);
    t->values[t->n_values++] = v;
    return rc;
}

/* "(v1, v2, ...)" after in/notin. */
static int parse_set(struct sel_term *t, struct lexer *lx)
{
    skip_spaces(lx);
    if (!lex_take(lx, "(")) {
        return lex_fail(lx, "expected '('");
    }
    for (;;) {
        skip_spaces(lx);
        int rc = add_value(t, lx);
        if (rc < 0) {
            return rc;
        }
        skip_spaces(lx);
        if (lex_take(lx, ")")) {
            return 0;
        }
        if (!lex_take(lx, ",")) {
            return lex_fail(lx, "expected ',' or ')'");
        }
    }
}

static int parse_term(struct sel_term *t, struct lexer *lx)
{
    skip_spaces(lx);
    bool negated = lex_take(lx, "!");
    if (negated) {
        skip_spaces(lx);
    }
    t->key = lex_word(lx);
    if (t->key[0] == '\0') {
        return lex_fail(lx, "expected a label key");
    }
    int rc = check_with(gt_check_label_key, t->key, lx);
    if (rc < 0) {
        return rc;
    }
    skip_spaces(lx);
    char c = lx->s[lx->pos];
    if (negated || c == '\0' || c == ',') {
        t->op = negated ? OP_NOT_EXISTS : OP_EXISTS;
        return 0;
    }
    if (lex_take(lx, "==") || lex_take(lx, "=")) {
        t->op = OP_EQ;
    } else if (lex_take(lx, "!=")) {
        t->op = OP_NE;
    } else {
        char *word = lex_word(lx);
        bool in = strcmp(word, "in") == 0;
        bool notin = strcmp(word, "notin") == 0;
        free(word);
        if (!in && !notin) {
            return lex_fail(lx, "expected =, ==, !=, in or notin");
        }
        t->op = in ? OP_IN : OP_NOTIN;
        return parse_set(t, lx);
    }
    skip_spaces(lx);
    return add_value(t, lx);
}

static void term_fini(struct sel_term *t)
{
    free(t->key);
    for (size_t i = 0; i < t->n_values; i++) {
        free(t->values[i]);
    }
    free(t->values);
}

int gt_selector_parse(const char *s, struct gt_selector **out, struct gt_err *err)
{
    s = s ? s : "";
    if (strnlen(s, SELECTOR_MAX_LEN + 1) > SELECTOR_MAX_LEN) {
        return gt_err_set(err, GT_EBADREQ, "label selector: longer than %d bytes",
                          SELECTOR_MAX_LEN);
    }
    struct gt_selector *sel = gt_xcalloc(1, sizeof(*sel));
    struct lexer lx = {.s = s, .err = err};
    int rc = 0;
    skip_spaces(&lx);
    while (rc == 0 && s[lx.pos] != '\0') {
        GT_VEC_RESERVE(sel->terms, sel->cap_terms, sel->n_terms + 1, 4);
        struct sel_term *t = &sel->terms[sel->n_terms++];
        memset(t, 0, sizeof(*t));
        rc = parse_term(t, &lx);
        if (rc < 0) {
            break;
        }
        skip_spaces(&lx);
        if (lex_take(&lx, ",")) {
            skip_spaces(&lx);
            if (s[lx.pos] == '\0') {
                rc = lex_fail(&lx, "expected a term after ','");
            }
        } else if (s[lx.pos] != '\0') {
            rc = lex_fail(&lx, "expected ','");
        }
    }
    if (rc < 0) {
        gt_selector_free(sel);
        return rc;
    }
    *out = sel;
    return 0;
}

static bool in_values(const struct sel_term *t, const char *v)
{
    for (size_t i = 0; v && i < t->n_values; i++) {
        if (strcmp(t->values[i], v) == 0) {
            return true;
        }
    }
    return false;
}

bool gt_selector_match(const struct gt_selector *sel, const json_t *labels)
{
    for (size_t i = 0; i < sel->n_terms; i++) {
        const struct sel_term *t = &sel->terms[i];
        const char *v = json_string_value(json_object_get(labels, t->key));
        bool ok;
        switch (t->op) {
        case OP_EQ:
        case OP_IN:
            ok = in_values(t, v);
            break;
        case OP_NE:
        case OP_NOTIN:
            ok = !in_values(t, v);
            break;
        case OP_EXISTS:
            ok = v != NULL;
            break;
        default:
            ok = v == NULL;
            break;
        }
        if (!ok) {
            return false;
        }
    }
    return true;
}

void gt_selector_free(struct gt_selector *sel)
{
    if (!sel) {
        return;
    }
    for (size_t i = 0; i < sel->n_terms; i++) {
        term_fini(&sel->terms[i]);
    }
    free(sel->terms);
    free(sel);
}

/* ---- field selectors ---- */

struct field_term {
    char *path;
    char *value;
    bool negated;
};

struct gt_fieldsel {
    struct field_term *terms;
    size_t n_terms, cap_terms;
};

/* Copy s[0..n) into a new string, undoing "\," "\=" "\\" escapes. */
static char *unescape(const char *s, size_t n)
{
    char *out = gt_xmalloc(n + 1);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) {
            i++;
        }
        out[j++] = s[i];
    }
    out[j] = '\0';
    return out;
}

/* End of the term starting at s: the first unescaped ',' or the end. */
static size_t term_len(const char *s)
{
    size_t i = 0;
    while (s[i] && s[i] != ',') {
        i += (s[i] == '\\' && s[i + 1]) ? 2 : 1;
    }
    return i;
}

static int parse_field_term(const char *s, size_t n, size_t at, struct field_term *t,
                            struct gt_err *err)
{
    size_t plen = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-/");
    if (plen == 0 || plen > n) {
        return gt_err_set(err, GT_EBADREQ, "field selector: position %zu: expected a field path",
                          at + 1);
    }
    size_t op_len;
    if (strncmp(s + plen, "!=", 2) == 0) {
        t->negated = true;
        op_len = 2;
    } else if (strncmp(s + plen, "==", 2) == 0) {
        op_len = 2;
    } else if (s[plen] == '=') {
        op_len = 1;
    } else {
        return gt_err_set(err, GT_EBADREQ,
                          "field selector: position %zu: expected =, == or !=", at + plen + 1);
    }
    if (plen + op_len > n) {
        return gt_err_set(err, GT_EBADREQ, "field selector: position %zu: expected a value",
                          at + n + 1);
    }
    t->path = gt_xstrndup(s, plen);
    t->value = unescape(s + plen + op_len, n - plen - op_len);
    return 0;
}

int gt_fieldsel_parse(const char *s, struct gt_fieldsel **out, struct gt_err *err)
{
    s = s ? s : "";
    if (strnlen(s, SELECTOR_MAX_LEN + 1) > SELECTOR_MAX_LEN) {
        return gt_err_set(err, GT_EBADREQ, "field selector: longer than %d bytes",
                          SELECTOR_MAX_LEN);
    }
    struct gt_fieldsel *sel = gt_xcalloc(1, sizeof(*sel));
    int rc = 0;
    size_t pos = 0;
    while (rc == 0 && s[pos] != '\0') {
        size_t n = term_len(s + pos);
        GT_VEC_RESERVE(sel->terms, sel->cap_terms, sel->n_terms + 1, 4);
        struct field_term *t = &sel->terms[sel->n_terms++];
        memset(t, 0, sizeof(*t));
        rc = parse_field_term(s + pos, n, pos, t, err);
        pos += n;
        if (rc == 0 && s[pos] == ',') {
            pos++;
            if (s[pos] == '\0') {
                rc = gt_err_set(err, GT_EBADREQ,
                                "field selector: position %zu: expected a term after ','", pos);
            }
        }
    }
    if (rc < 0) {
        gt_fieldsel_free(sel);
        return rc;
    }
    *out = sel;
    return 0;
}

/* Compare obj's value at t->path, as text, with t->value. */
static bool field_equals(const struct field_term *t, const json_t *obj)
{
    const json_t *v = gt_json_path(obj, t->path);
    char buf[32];
    const char *text;
    if (!v || json_is_null(v)) {
        text = "";
    } else if (json_is_string(v)) {
        text = json_string_value(v);
    } else if (json_is_integer(v)) {
        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        text = buf;
    } else if (json_is_boolean(v)) {
        text = json_is_true(v) ? "true" : "false";
    } else {
        return false; /* objects, lists and reals are not selectable */
    }
    return strcmp(text, t->value) == 0;
}

bool gt_fieldsel_match(const struct gt_fieldsel *sel, const json_t *obj)
{
    for (size_t i = 0; i < sel->n_terms; i++) {
        if (field_equals(&sel->terms[i], obj) == sel->terms[i].negated) {
            return false;
        }
    }
    return true;
}

void gt_fieldsel_free(struct gt_fieldsel *sel)
{
    if (!sel) {
        return;
    }
    for (size_t i = 0; i < sel->n_terms; i++) {
        free(sel->terms[i].path);
        free(sel->terms[i].value);
    }
    free(sel->terms);
    free(sel);
}
