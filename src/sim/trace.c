/*
 * Job traces: the Philly reader (Pollux's philly.csv plus Helios' VC sizes),
 * the generic CSV reader, and selection of the jobs a replay uses.
 *
 * Philly timestamps are local wall-clock times without a zone; they are
 * turned into seconds as if they were UTC, which keeps every difference and
 * the Helios window (also local dates) exact.
 */
#include <stdlib.h>
#include <string.h>

#include "sim/sim_int.h"

/* Bounds that keep every sum of times in int64. */
#define MAX_TIME_S (INT64_C(1) << 40)
#define MAX_GPUS 100000

void gt_sim_trace_init(struct gt_sim_trace *t)
{
    memset(t, 0, sizeof(*t));
}

void gt_sim_trace_fini(struct gt_sim_trace *t)
{
    for (size_t i = 0; i < t->n_vcs; i++) {
        free(t->vcs[i].name);
    }
    free(t->vcs);
    free(t->jobs);
    memset(t, 0, sizeof(*t));
}

static int32_t vc_find(const struct gt_sim_trace *t, const char *name, size_t len)
{
    for (size_t i = 0; i < t->n_vcs; i++) {
        if (strlen(t->vcs[i].name) == len && memcmp(t->vcs[i].name, name, len) == 0) {
            return (int32_t)i;
        }
    }
    return -1;
}

static int32_t vc_get(struct gt_sim_trace *t, const char *name, size_t len)
{
    int32_t i = vc_find(t, name, len);
    if (i >= 0) {
        return i;
    }
    GT_VEC_RESERVE(t->vcs, t->cap_vcs, t->n_vcs + 1, 16);
    t->vcs[t->n_vcs] =
        (struct gt_sim_vc){.name = gt_xstrndup(name, len), .nodes = -1, .gpus_per_node = 8};
    return (int32_t)t->n_vcs++;
}

int32_t gt_sim_trace_vc(struct gt_sim_trace *t, const char *name)
{
    return vc_get(t, name, strlen(name));
}

static void job_push(struct gt_sim_trace *t, const struct gt_sim_job *j)
{
    GT_VEC_RESERVE(t->jobs, t->cap_jobs, t->n_jobs + 1, 1024);
    t->jobs[t->n_jobs++] = *j;
}

/* Parse exactly n digits at s into *v. */
static bool digits(const char *s, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        *v = *v * 10 + (s[i] - '0');
    }
    return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int gt_sim_time_parse(const char *s, size_t len, int64_t *out_s)
{
    int y, mo, d, h = 0, mi = 0, se = 0;
    if (len != 10 && len != 19) {
        return GT_EINVAL;
    }
    if (!digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
        !digits(s + 8, 2, &d)) {
        return GT_EINVAL;
    }
    if (len == 19 && (s[10] != ' ' || !digits(s + 11, 2, &h) || s[13] != ':' ||
                      !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &se))) {
        return GT_EINVAL;
    }
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap) ||
        h > 23 || mi > 59 || se > 59) {
        return GT_EINVAL;
    }
    *out_s = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    return 0;
}

int gt_sim_philly_parse(const char *data, size_t len, struct gt_sim_trace *t, struct gt_err *err)
{
    struct gt_sim_csv c;
    gt_sim_csv_init(&c, data, len);
    int rc = gt_sim_csv_next(&c, err);
    if (rc == 0) {
        return gt_err_set(err, GT_EINVAL, "line 1: no header");
    }
    if (rc < 0 ||
        (rc = gt_sim_csv_expect(&c, 5, "timestamp,duration,num_gpus,gpu_time,cluster", err)) < 0) {
        return rc;
    }
    while ((rc = gt_sim_csv_next(&c, err)) > 0) {
        struct gt_sim_job j = {.line = c.line};
        int64_t gpus, gpu_time;
        if ((rc = gt_sim_csv_expect(&c, 5, NULL, err)) < 0) {
            return rc;
        }
        if (gt_sim_time_parse(c.f[0].p, c.f[0].len, &j.submit_s) < 0) {
            return gt_err_set(err, GT_EINVAL, "line %u: timestamp: not YYYY-MM-DD HH:MM:SS",
                              c.line);
        }
        if ((rc = gt_sim_csv_i64(&c, 1, "duration", 0, MAX_TIME_S, true, &j.duration_s, err)) < 0 ||
            (rc = gt_sim_csv_i64(&c, 2, "num_gpus", 0, MAX_GPUS, false, &gpus, err)) < 0 ||
            (rc = gt_sim_csv_i64(&c, 3, "gpu_time", 0, MAX_TIME_S * MAX_GPUS, true, &gpu_time,
                                 err)) < 0) {
            return rc;
        }
        if (gpu_time != j.duration_s * gpus) {
            return gt_err_set(err, GT_EINVAL, "line %u: gpu_time %lld != duration * num_gpus",
                              c.line, (long long)gpu_time);
        }
        if (c.f[4].len == 0) {
            return gt_err_set(err, GT_EINVAL, "line %u: cluster: empty", c.line);
        }
        j.num_gpu = (int32_t)gpus;
        j.vc = vc_get(t, c.f[4].p, c.f[4].len);
        job_push(t, &j);
    }
    return rc;
}

int gt_sim_vc_sizes_parse(const char *data, size_t len, struct gt_sim_trace *t, struct gt_err *err)
{
    struct gt_sim_csv c;
    gt_sim_csv_init(&c, data, len);
    int rc = gt_sim_csv_next(&c, err);
    if (rc == 0) {
        return gt_err_set(err, GT_EINVAL, "line 1: no header");
    }
    if (rc < 0 || (rc = gt_sim_csv_expect(&c, 2, "vc,node num", err)) < 0) {
        return rc;
    }
    while ((rc = gt_sim_csv_next(&c, err)) > 0) {
        int64_t nodes;
        if ((rc = gt_sim_csv_expect(&c, 2, NULL, err)) < 0 ||
            (rc = gt_sim_csv_i64(&c, 1, "node num", 1, 100000, false, &nodes, err)) < 0) {
            return rc;
        }
        if (c.f[0].len == 0) {
            return gt_err_set(err, GT_EINVAL, "line %u: vc: empty", c.line);
        }
        int32_t i = vc_get(t, c.f[0].p, c.f[0].len); /* may move t->vcs */
        struct gt_sim_vc *vc = &t->vcs[i];
        if (vc->nodes >= 0) {
            return gt_err_set(err, GT_EINVAL, "line %u: vc %s listed twice", c.line, vc->name);
        }
        vc->nodes = (int32_t)nodes;
        vc->gpus_per_node = 8;
    }
    return rc;
}

int gt_sim_csv_parse(const char *data, size_t len, struct gt_sim_trace *t, struct gt_err *err)
{
    static const char *const names[] = {"submission_time", "duration", "num_gpu", "vc"};
    enum { C_SUBMIT, C_DURATION, C_GPU, C_VC };
    struct gt_sim_csv c;
    gt_sim_csv_init(&c, data, len);
    int rc = gt_sim_csv_next(&c, err);
    if (rc == 0) {
        return gt_err_set(err, GT_EINVAL, "line 1: no header");
    }
    int col[GT_ARRAY_LEN(names)];
    if (rc < 0 || (rc = gt_sim_csv_columns(&c, names, GT_ARRAY_LEN(names), UINT32_C(1) << C_VC, col,
                                           err)) < 0) {
        return rc;
    }
    size_t cols = c.n;
    while ((rc = gt_sim_csv_next(&c, err)) > 0) {
        struct gt_sim_job j = {.line = c.line};
        int64_t gpus;
        if ((rc = gt_sim_csv_expect(&c, cols, NULL, err)) < 0 ||
            (rc = gt_sim_csv_i64(&c, (size_t)col[C_SUBMIT], "submission_time", 0, MAX_TIME_S, false,
                                 &j.submit_s, err)) < 0 ||
            (rc = gt_sim_csv_i64(&c, (size_t)col[C_DURATION], "duration", 0, MAX_TIME_S, false,
                                 &j.duration_s, err)) < 0 ||
            (rc = gt_sim_csv_i64(&c, (size_t)col[C_GPU], "num_gpu", 0, MAX_GPUS, false, &gpus,
                                 err)) < 0) {
            return rc;
        }
        const struct gt_sim_field *vc = col[C_VC] >= 0 ? &c.f[col[C_VC]] : NULL;
        if (vc && vc->len == 0) {
            return gt_err_set(err, GT_EINVAL, "line %u: vc: empty", c.line);
        }
        j.num_gpu = (int32_t)gpus;
        j.vc = vc ? vc_get(t, vc->p, vc->len) : vc_get(t, "default", 7);
        job_push(t, &j);
    }
    return rc;
}

void gt_sim_trace_divide_nodes(struct gt_sim_trace *t, int64_t divisor)
{
    GT_ASSERT(divisor >= 1);
    for (size_t i = 0; i < t->n_vcs; i++) {
        struct gt_sim_vc *vc = &t->vcs[i];
        if (vc->nodes > 0) {
            int64_t n = vc->nodes / divisor;
            vc->nodes = n > 0 ? (int32_t)n : 1;
        }
    }
}

static int job_cmp(const void *a, const void *b)
{
    const struct gt_sim_job *x = a, *y = b;
    if (x->submit_s != y->submit_s) {
        return x->submit_s < y->submit_s ? -1 : 1;
    }
    return (x->line > y->line) - (x->line < y->line);
}

void gt_sim_trace_select(struct gt_sim_trace *t, int64_t from_s, int64_t to_s)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n_jobs; i++) {
        const struct gt_sim_job *j = &t->jobs[i];
        if (j->num_gpu <= 0) {
            t->n_skipped_no_gpu++;
        } else if (from_s <= to_s && (j->submit_s < from_s || j->submit_s > to_s)) {
            t->n_skipped_window++;
        } else if (t->vcs[j->vc].nodes <= 0) {
            t->n_skipped_vc++;
        } else if (j->num_gpu > (int64_t)t->vcs[j->vc].nodes * t->vcs[j->vc].gpus_per_node) {
            t->n_skipped_too_big++;
        } else {
            t->jobs[k++] = *j;
        }
    }
    t->n_jobs = k;
    if (k > 1) {
        qsort(t->jobs, t->n_jobs, sizeof(*t->jobs), job_cmp);
    }
}
