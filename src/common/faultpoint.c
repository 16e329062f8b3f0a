/*
 * Named fault points (see faultpoint.h for the spec syntax). A program
 * keeps one struct gt_faults in its state and calls gt_fault_hit at each
 * named place; with nothing armed that is a loop over zero entries. A crash
 * is _exit, so nothing is flushed or cleaned up: what a SIGKILL at that
 * instant leaves is exactly what a restart must cope with.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/faultpoint.h"

static const char *known_name(const char *const *known, const char *name, size_t len)
{
    for (size_t i = 0; known && known[i]; i++) {
        if (strlen(known[i]) == len && !strncmp(known[i], name, len)) {
            return known[i];
        }
    }
    return NULL;
}

/* One "NAME=ACTION[:nth=N|:p=P]" entry of len bytes into fp. */
static int parse_entry(struct gt_fault_point *fp, const char *e, size_t len,
                       const char *const *known, struct gt_err *err)
{
    char buf[160];
    if (len == 0 || len >= sizeof(buf)) {
        return gt_err_set(err, GT_EINVAL, "an empty or overlong entry");
    }
    memcpy(buf, e, len);
    buf[len] = '\0';
    char *eq = strchr(buf, '=');
    if (!eq) {
        return gt_err_set(err, GT_EINVAL, "%s: want NAME=ACTION[:nth=N|:p=P]", buf);
    }
    fp->name = known_name(known, buf, (size_t)(eq - buf));
    if (!fp->name) {
        *eq = '\0';
        return gt_err_set(err, GT_EINVAL, "%s: no such fault point here", buf);
    }
    char *act = eq + 1, *trig = strchr(act, ':');
    if (trig) {
        *trig++ = '\0';
    }
    if (!strcmp(act, "crash")) {
        fp->action = GT_FAULT_CRASH;
    } else if (!strcmp(act, "fail")) {
        fp->action = GT_FAULT_FAIL;
    } else {
        return gt_err_set(err, GT_EINVAL, "%s: action must be crash or fail", fp->name);
    }
    fp->nth = 1;
    fp->p = 0;
    char *end = NULL;
    errno = 0;
    if (!trig) {
        return 0;
    }
    if (!strncmp(trig, "nth=", 4)) {
        long long n = strtoll(trig + 4, &end, 10);
        if (errno || end == trig + 4 || *end || n < 1) {
            return gt_err_set(err, GT_EINVAL, "%s: nth must be an integer >= 1", fp->name);
        }
        fp->nth = n;
        return 0;
    }
    if (!strncmp(trig, "p=", 2)) {
        double p = strtod(trig + 2, &end);
        if (errno || end == trig + 2 || *end || !(p > 0 && p <= 1)) {
            return gt_err_set(err, GT_EINVAL, "%s: p must be a number in (0, 1]", fp->name);
        }
        fp->nth = 0;
        fp->p = p;
        return 0;
    }
    return gt_err_set(err, GT_EINVAL, "%s: the trigger must be nth=N or p=P", fp->name);
}

int gt_faults_parse(struct gt_faults *f, const char *spec, const char *const *known, uint64_t seed,
                    struct gt_err *err)
{
    struct gt_faults out = {.rng = seed ? seed : 1};
    for (const char *s = spec; s && *s;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (out.n == GT_FAULT_MAX_POINTS) {
            return gt_err_set(err, GT_EINVAL, "more than %d entries", GT_FAULT_MAX_POINTS);
        }
        int rc = parse_entry(&out.v[out.n], s, len, known, err);
        if (rc < 0) {
            return rc;
        }
        out.n++;
        s = comma ? comma + 1 : s + len;
    }
    *f = out;
    return 0;
}

static double next_unit(struct gt_faults *f)
{
    uint64_t x = f->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    f->rng = x;
    return (double)(x >> 11) / (double)(1ULL << 53);
}

enum gt_fault_action gt_fault_hit(struct gt_faults *f, const char *name)
{
    for (size_t i = 0; f && i < f->n; i++) {
        struct gt_fault_point *fp = &f->v[i];
        if (strcmp(fp->name, name)) {
            continue;
        }
        fp->hits++;
        bool fire = fp->nth ? fp->hits == fp->nth : next_unit(f) < fp->p;
        if (!fire) {
            return GT_FAULT_NONE;
        }
        fp->fired++;
        gt_log_warn("fault point fired", "point=%s action=%s hit=%lld", name,
                    fp->action == GT_FAULT_CRASH ? "crash" : "fail", (long long)fp->hits);
        if (fp->action == GT_FAULT_CRASH) {
            _exit(GT_FAULT_CRASH_STATUS);
        }
        return GT_FAULT_FAIL;
    }
    return GT_FAULT_NONE;
}
