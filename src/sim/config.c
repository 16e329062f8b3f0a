/*
 * gantry-sim configuration: one "key = value" per line, '#' starts a
 * comment. One table names every key, its bounds and where it goes, so the
 * parser, the defaults and the documentation (philly-helios.conf) agree.
 */
#include <stdlib.h>
#include <string.h>

#include "sim/sim_int.h"

enum kind { K_SECONDS, K_COUNT, K_BOOL, K_DATE_FROM, K_DATE_TO, K_U64 };

struct key {
    const char *name;
    enum kind kind;
    size_t off;
    int64_t def, min, max;
};

#define OFF(f) offsetof(struct gt_sim_config, f)
static const struct key keys[] = {
    {"cycle_interval_s", K_SECONDS, OFF(cycle_interval_s), 60, 1, 86400},
    {"recheck_interval_s", K_SECONDS, OFF(recheck_interval_s), 600, 1, 86400 * 30},
    {"restart_overhead_s", K_SECONDS, OFF(restart_overhead_s), 60, 0, 86400},
    {"borrowing", K_BOOL, OFF(borrowing), 0, 0, 0},
    {"check", K_BOOL, OFF(check), 0, 0, 0},
    {"from", K_DATE_FROM, OFF(from_s), 1, 0, 0},
    {"to", K_DATE_TO, OFF(to_s), 0, 0, 0},
    {"seed", K_U64, OFF(seed), 42, 0, INT64_MAX},
    {"node_divisor", K_COUNT, OFF(node_divisor), 1, 1, 1024},
    {"jct_by_size", K_BOOL, OFF(jct_by_size), 0, 0, 0},
};

void gt_sim_config_default(struct gt_sim_config *c)
{
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < GT_ARRAY_LEN(keys); i++) {
        char *p = (char *)c + keys[i].off;
        switch (keys[i].kind) {
        case K_BOOL:
            *(bool *)p = keys[i].def != 0;
            break;
        case K_U64:
            *(uint64_t *)p = (uint64_t)keys[i].def;
            break;
        default:
            *(int64_t *)p = keys[i].def;
        }
    }
}

static const char *trim(const char *s, const char *e, const char **end)
{
    while (s < e && (*s == ' ' || *s == '\t')) {
        s++;
    }
    while (e > s && (e[-1] == ' ' || e[-1] == '\t')) {
        e--;
    }
    *end = e;
    return s;
}

static int set_value(struct gt_sim_config *c, const struct key *k, const char *v, size_t len,
                     unsigned line, struct gt_err *err)
{
    char *p = (char *)c + k->off;
    if (k->kind == K_BOOL) {
        bool on = len == 2 && memcmp(v, "on", 2) == 0;
        if (!on && !(len == 3 && memcmp(v, "off", 3) == 0)) {
            return gt_err_set(err, GT_EINVAL, "line %u: %s: want on or off", line, k->name);
        }
        *(bool *)p = on;
        return 0;
    }
    if (k->kind == K_DATE_FROM || k->kind == K_DATE_TO) {
        int64_t t;
        if (gt_sim_time_parse(v, len, &t) < 0) {
            return gt_err_set(err, GT_EINVAL, "line %u: %s: want YYYY-MM-DD[ HH:MM:SS]", line,
                              k->name);
        }
        /* A bare date as the end means the whole day. */
        *(int64_t *)p = k->kind == K_DATE_TO && len == 10 ? t + 86399 : t;
        return 0;
    }
    struct gt_sim_csv one = {.line = line, .n = 1};
    one.f[0] = (struct gt_sim_field){.p = v, .len = len};
    int64_t n;
    int rc = gt_sim_csv_i64(&one, 0, k->name, k->min, k->max, false, &n, err);
    if (rc < 0) {
        return rc;
    }
    if (k->kind == K_U64) {
        *(uint64_t *)p = (uint64_t)n;
    } else {
        *(int64_t *)p = n;
    }
    return 0;
}

int gt_sim_config_parse(const char *data, size_t len, struct gt_sim_config *c, struct gt_err *err)
{
    const char *p = data, *end = data + len;
    for (unsigned line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *hash = memchr(p, '#', (size_t)(le - p));
        const char *e;
        const char *s = trim(p, hash ? hash : le, &e);
        p = nl ? nl + 1 : end;
        if (s == e) {
            continue;
        }
        const char *eq = memchr(s, '=', (size_t)(e - s));
        if (!eq) {
            return gt_err_set(err, GT_EINVAL, "line %u: want key = value", line);
        }
        const char *ke, *ve;
        const char *k = trim(s, eq, &ke);
        const char *v = trim(eq + 1, e, &ve);
        const struct key *found = NULL;
        for (size_t i = 0; i < GT_ARRAY_LEN(keys); i++) {
            if (strlen(keys[i].name) == (size_t)(ke - k) &&
                memcmp(keys[i].name, k, (size_t)(ke - k)) == 0) {
                found = &keys[i];
            }
        }
        if (!found) {
            return gt_err_set(err, GT_EINVAL, "line %u: unknown key \"%.*s\"", line,
                              (int)(ke - k > 40 ? 40 : ke - k), k);
        }
        int rc = set_value(c, found, v, (size_t)(ve - v), line, err);
        if (rc < 0) {
            return rc;
        }
    }
    if (c->borrowing) {
        return gt_err_set(err, GT_EINVAL,
                          "borrowing: must be off (each cluster is one department)");
    }
    return 0;
}
