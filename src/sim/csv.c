/*
 * The strict CSV line reader (sim_int.h). It never reads past the buffer and
 * never allocates except in gt_sim_csv_str; every error names the line.
 */
#include <string.h>

#include "sim/sim_int.h"

void gt_sim_csv_init(struct gt_sim_csv *c, const char *data, size_t len)
{
    memset(c, 0, sizeof(*c));
    c->p = data;
    c->end = data + len;
}

/* Is everything from p to the end newlines only? */
static bool only_newlines(const char *p, const char *end)
{
    for (; p < end; p++) {
        if (*p != '\n') {
            return false;
        }
    }
    return true;
}

int gt_sim_csv_next(struct gt_sim_csv *c, struct gt_err *err)
{
    if (c->p >= c->end) {
        return 0;
    }
    c->line++;
    if (*c->p == '\n') {
        if (only_newlines(c->p, c->end)) {
            c->p = c->end;
            return 0;
        }
        return gt_err_set(err, GT_EINVAL, "line %u: empty line", c->line);
    }
    c->n = 0;
    const char *start = c->p;
    for (;;) {
        const char *q = c->p;
        bool eol = q >= c->end || *q == '\n';
        if (eol || *q == ',') {
            if (c->n == GT_SIM_CSV_MAX_FIELDS) {
                return gt_err_set(err, GT_EINVAL, "line %u: more than %d fields", c->line,
                                  GT_SIM_CSV_MAX_FIELDS);
            }
            c->f[c->n++] = (struct gt_sim_field){.p = start, .len = (size_t)(q - start)};
            c->p = q < c->end ? q + 1 : q;
            if (eol) {
                return 1;
            }
            start = c->p;
            continue;
        }
        unsigned char ch = (unsigned char)*q;
        if (ch < 0x20 || ch == 0x7f || ch == '"') {
            return gt_err_set(err, GT_EINVAL, "line %u: invalid byte 0x%02x", c->line, ch);
        }
        c->p++;
    }
}

int gt_sim_csv_expect(const struct gt_sim_csv *c, size_t n, const char *names, struct gt_err *err)
{
    if (c->n != n) {
        return gt_err_set(err, GT_EINVAL, "line %u: %zu fields, want %zu", c->line, c->n, n);
    }
    if (!names) {
        return 0;
    }
    const char *p = names;
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(p, ",");
        if (len != c->f[i].len || memcmp(p, c->f[i].p, len) != 0) {
            return gt_err_set(err, GT_EINVAL, "line %u: header field %zu is not \"%.*s\"", c->line,
                              i + 1, (int)len, p);
        }
        p += len + (p[len] == ',');
    }
    return 0;
}

int gt_sim_csv_columns(const struct gt_sim_csv *c, const char *const *names, size_t n,
                       uint32_t optional, int *idx, struct gt_err *err)
{
    GT_ASSERT(n <= 32);
    for (size_t k = 0; k < n; k++) {
        idx[k] = -1;
    }
    for (size_t i = 0; i < c->n; i++) {
        const struct gt_sim_field *f = &c->f[i];
        if (f->len == 0) {
            return gt_err_set(err, GT_EINVAL, "line %u: header field %zu is empty", c->line, i + 1);
        }
        for (size_t k = 0; k < n; k++) {
            if (strlen(names[k]) != f->len || memcmp(names[k], f->p, f->len) != 0) {
                continue;
            }
            if (idx[k] >= 0) {
                return gt_err_set(err, GT_EINVAL, "line %u: header names column %s twice", c->line,
                                  names[k]);
            }
            idx[k] = (int)i;
        }
    }
    for (size_t k = 0; k < n; k++) {
        if (idx[k] < 0 && !(optional & (UINT32_C(1) << k))) {
            return gt_err_set(err, GT_EINVAL, "line %u: header has no column %s", c->line,
                              names[k]);
        }
    }
    return 0;
}

int gt_sim_csv_i64(const struct gt_sim_csv *c, size_t i, const char *what, int64_t min, int64_t max,
                   bool whole_float, int64_t *out, struct gt_err *err)
{
    const struct gt_sim_field *f = &c->f[i];
    size_t len = f->len;
    if (whole_float && len > 2 && f->p[len - 2] == '.' && f->p[len - 1] == '0') {
        len -= 2;
    }
    size_t k = 0;
    bool neg = len > 0 && f->p[0] == '-';
    k += neg;
    if (k == len || len - k > 18) {
        return gt_err_set(err, GT_EINVAL, "line %u: %s: not an integer: \"%.*s\"", c->line, what,
                          (int)(f->len > 40 ? 40 : f->len), f->p);
    }
    int64_t v = 0;
    for (; k < len; k++) {
        if (f->p[k] < '0' || f->p[k] > '9') {
            return gt_err_set(err, GT_EINVAL, "line %u: %s: not an integer: \"%.*s\"", c->line,
                              what, (int)(f->len > 40 ? 40 : f->len), f->p);
        }
        v = v * 10 + (f->p[k] - '0');
    }
    v = neg ? -v : v;
    if (v < min || v > max) {
        return gt_err_set(err, GT_EINVAL, "line %u: %s: %lld out of range [%lld, %lld]", c->line,
                          what, (long long)v, (long long)min, (long long)max);
    }
    *out = v;
    return 0;
}

int gt_sim_csv_str(const struct gt_sim_csv *c, size_t i, const char *what, char **out,
                   struct gt_err *err)
{
    if (c->f[i].len == 0) {
        return gt_err_set(err, GT_EINVAL, "line %u: %s: empty", c->line, what);
    }
    *out = gt_xstrndup(c->f[i].p, c->f[i].len);
    return 0;
}
