/*
 * Quota: the admission rule (DESIGN.md "Scheduling", step 2) and the
 * resource arithmetic it counts in. The cycle (cycle.c) asks it for every
 * gang, and preemption (preempt.c) asks it what a set of victims would free;
 * nothing else decides whether a department or a project may hold more.
 * Projects (their hard caps and use) live here too.
 *
 * Admission, precisely: a gang (its use summed, checked) is admitted when
 * (a) its department stays within its limit in every resource, and (b) for
 * every resource where the department would go above its guarantee, the
 * departments' claims still fit in the pool: claim(d) = max(used(d),
 * min(guarantee(d), used(d) + pending(d))), i.e. what d uses, or for a
 * department below its guarantee, its use plus its own pending demand up to
 * its guarantee; the pool is the allocatable cpu/memory and healthy GPUs of
 * Ready, uncordoned nodes. So a department borrows only capacity that no
 * other department's guarantee claims for work it has waiting. (When the
 * claims would not fit even counting only what departments use, the cluster
 * is simply too small for the gang: that is left to placement, which says
 * Unschedulable rather than Quota.) (c) its project, if it has a hard cap,
 * stays within it in every resource. Use includes every bound, running or
 * terminating task and every bind made earlier in this cycle (binds are
 * applied as they are made).
 *
 * A job its department refuses (a or b) may preempt jobs of that department
 * it outranks (preempt.c, GT_SCHED_RESV_QUOTA): the cheapest set whose exit
 * lets it be admitted, if the gang then also fits on the nodes; it keeps a
 * Quota wait and a reservation until they have exited, and preempts nothing
 * more meanwhile. A job its project's cap refuses neither preempts nor
 * reserves, so a cap never makes anything preemptable.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/quantity.h"

#include "sched/quota.h"
#include "sched/sched_int.h"

/* The resources of a struct gt_sched_res, for loops over all four. */
#define N_RES GT_SCHED_N_RES
static const char *const res_names[N_RES] = {"cpu", "memory", "storage", "nvidia.com/gpu"};

const char *gt_sched_res_text(int r, int64_t v, char *buf, size_t len)
{
    if (r == 0) {
        gt_quantity_format(v, GT_QTY_MILLI, 0, buf, len);
    } else if (r < 3) {
        gt_quantity_format(v, GT_QTY_UNIT, 1, buf, len);
    } else if (v % 1000 == 0) {
        snprintf(buf, len, "%lld", (long long)(v / 1000));
    } else {
        /* milli-GPUs as a decimal fraction: 1250 -> "1.25" */
        int n = snprintf(buf, len, "%lld.%03lld", (long long)(v / 1000),
                         (long long)((v < 0 ? -v : v) % 1000));
        while (n > 0 && (size_t)n < len && buf[n - 1] == '0') {
            buf[--n] = '\0';
        }
    }
    return buf;
}

const char *gt_sched_res_name(int r)
{
    return res_names[r];
}

void gt_sched_res_unpack(const struct gt_sched_res *r, int64_t v[N_RES])
{
    v[0] = r->cpu_milli;
    v[1] = r->memory_bytes;
    v[2] = r->storage_bytes;
    v[3] = r->gpu_milli;
}

int gt_sched_res_add(struct gt_sched_res *a, const struct gt_sched_res *b)
{
    struct gt_sched_res r;
    if (gt_add_i64(a->cpu_milli, b->cpu_milli, &r.cpu_milli) < 0 ||
        gt_add_i64(a->memory_bytes, b->memory_bytes, &r.memory_bytes) < 0 ||
        gt_add_i64(a->storage_bytes, b->storage_bytes, &r.storage_bytes) < 0 ||
        gt_add_i64(a->gpu_milli, b->gpu_milli, &r.gpu_milli) < 0) {
        return -ERANGE;
    }
    *a = r;
    return 0;
}

/* The first resource where used + add (checked) exceeds cap, or -1; the
 * three unpacked into u, a, c for the caller's message. */
static int res_over(const struct gt_sched_res *used, const struct gt_sched_res *add,
                    const struct gt_sched_res *cap, int64_t u[N_RES], int64_t a[N_RES],
                    int64_t c[N_RES])
{
    gt_sched_res_unpack(used, u);
    gt_sched_res_unpack(add, a);
    gt_sched_res_unpack(cap, c);
    for (int i = 0; i < N_RES; i++) {
        int64_t sum;
        if (a[i] > 0 && (gt_add_i64(u[i], a[i], &sum) < 0 || sum > c[i])) {
            return i;
        }
    }
    return -1;
}

bool gt_sched_dept_admits(const struct gt_sched_dept *dept, const struct gt_sched_res *use,
                          struct gt_buf *why)
{
    int64_t used[N_RES], add[N_RES], limit[N_RES];
    int i = res_over(&dept->used, use, &dept->limit, used, add, limit);
    if (i >= 0 && why) {
        char t[3][32];
        gt_buf_printf(
            why, "department %s: needs %s %s, has %s of limit %s free", dept->name, res_names[i],
            gt_sched_res_text(i, add[i], t[0], sizeof(t[0])),
            gt_sched_res_text(i, limit[i] > used[i] ? limit[i] - used[i] : 0, t[1], sizeof(t[1])),
            gt_sched_res_text(i, limit[i], t[2], sizeof(t[2])));
    }
    return i < 0;
}

bool gt_sched_project_admits(const struct gt_sched_project *project, const struct gt_sched_res *use,
                             struct gt_buf *why)
{
    if (!project->capped) {
        return true;
    }
    int64_t used[N_RES], add[N_RES], hard[N_RES];
    int i = res_over(&project->used, use, &project->hard, used, add, hard);
    if (i >= 0 && why) {
        char t[3][32];
        gt_buf_printf(why, "project %s needs %s %s, hard cap %s reached (%s in use)", project->name,
                      res_names[i], gt_sched_res_text(i, add[i], t[0], sizeof(t[0])),
                      gt_sched_res_text(i, hard[i], t[1], sizeof(t[1])),
                      gt_sched_res_text(i, used[i], t[2], sizeof(t[2])));
    }
    return i < 0;
}

/* ---- departments: the admission rule ---- */

/* Would the departments' claims on resource r fit the pool with add more
 * used by dept (and add less pending) and freed less used? protect: count
 * what other departments claim for their pending work within their
 * guarantee. */
static bool claims_fit(const struct gt_sched_model *m, const struct gt_sched_dept *dept, int r,
                       int64_t add, int64_t freed, bool protect)
{
    int64_t pool[GT_SCHED_N_RES];
    gt_sched_res_unpack(&m->pool, pool);
    __int128 claims = 0;
    for (size_t i = 0; i < m->n_depts; i++) {
        const struct gt_sched_dept *d = m->depts[i];
        int64_t used[GT_SCHED_N_RES], g[GT_SCHED_N_RES];
        gt_sched_res_unpack(&d->used, used);
        gt_sched_res_unpack(&d->guarantee, g);
        __int128 u = used[r], p = protect ? d->pending[r] : 0;
        if (d == dept) {
            u += (__int128)add - freed;
            p = p > add ? p - add : 0;
        }
        __int128 want = u + p < g[r] ? u + p : g[r];
        claims += u > want ? u : want;
    }
    return claims <= pool[r];
}

bool gt_sched_admit(const struct gt_sched_model *m, const struct gt_sched_dept *dept,
                    const struct gt_sched_res *add, const struct gt_sched_res *freed,
                    struct gt_buf *why)
{
    int64_t used[GT_SCHED_N_RES], a[GT_SCHED_N_RES], g[GT_SCHED_N_RES], f[GT_SCHED_N_RES] = {0};
    gt_sched_res_unpack(&dept->used, used);
    gt_sched_res_unpack(add, a);
    gt_sched_res_unpack(&dept->guarantee, g);
    if (!freed) {
        if (!gt_sched_dept_admits(dept, add, why)) {
            return false;
        }
    } else {
        int64_t l[GT_SCHED_N_RES];
        gt_sched_res_unpack(freed, f);
        gt_sched_res_unpack(&dept->limit, l);
        for (int r = 0; r < GT_SCHED_N_RES; r++) {
            if (a[r] > 0 && (__int128)used[r] - f[r] + a[r] > l[r]) {
                return false;
            }
        }
    }
    for (int r = 0; r < GT_SCHED_N_RES; r++) {
        /* storage is quota-only: no pool to borrow from, the limit rules */
        if (r == 2 || a[r] == 0 || (__int128)used[r] - f[r] + a[r] <= g[r] ||
            claims_fit(m, dept, r, a[r], f[r], true) ||
            !claims_fit(m, dept, r, a[r], f[r], false)) {
            continue;
        }
        if (why) {
            char t[3][32];
            gt_buf_printf(why,
                          "department %s: needs %s %s above its guarantee %s (using %s); "
                          "no idle capacity to borrow",
                          dept->name, gt_sched_res_name(r),
                          gt_sched_res_text(r, a[r], t[0], sizeof(t[0])),
                          gt_sched_res_text(r, g[r], t[1], sizeof(t[1])),
                          gt_sched_res_text(r, used[r], t[2], sizeof(t[2])));
        }
        return false;
    }
    return true;
}
/* ---- projects ---- */

static void project_free_unused(struct gt_sched_model *m, struct gt_sched_project *p)
{
    if (p->capped || p->n_jobs > 0) {
        return;
    }
    gt_sched_map_del(&m->project_map, p->name);
    free(p->name);
    free(p);
}

static struct gt_sched_project *project_get_or_add(struct gt_sched_model *m, const char *name)
{
    struct gt_sched_project *p = gt_sched_map_get(&m->project_map, name);
    if (!p) {
        p = gt_xcalloc(1, sizeof(*p));
        p->name = gt_xstrdup(name);
        p->hard = (struct gt_sched_res){GT_SCHED_NO_CAP, GT_SCHED_NO_CAP, GT_SCHED_NO_CAP,
                                        GT_SCHED_NO_CAP};
        gt_sched_map_put(&m->project_map, p->name, p);
    }
    return p;
}

struct gt_sched_project *gt_sched_project_ref(struct gt_sched_model *m, const char *name)
{
    if (!name || !name[0]) {
        return NULL;
    }
    struct gt_sched_project *p = project_get_or_add(m, name);
    p->n_jobs++;
    return p;
}

void gt_sched_project_unref(struct gt_sched_model *m, struct gt_sched_project *project)
{
    if (project) {
        GT_ASSERT(project->n_jobs > 0);
        project->n_jobs--;
        project_free_unused(m, project);
    }
}

int gt_sched_project_set(struct gt_sched_model *m, const char *name,
                         const struct gt_sched_res *hard, struct gt_err *err)
{
    if (!name || !name[0] || !hard) {
        return gt_err_set(err, GT_EINVAL, "project: name and hard cap are required");
    }
    int64_t h[N_RES];
    gt_sched_res_unpack(hard, h);
    for (int i = 0; i < N_RES; i++) {
        if (h[i] < 0) {
            return gt_err_set(err, GT_EINVAL, "project %s: negative hard cap %lld for %s", name,
                              (long long)h[i], res_names[i]);
        }
    }
    struct gt_sched_project *p = project_get_or_add(m, name);
    p->hard = *hard;
    p->capped = true;
    return 0;
}

int gt_sched_project_remove(struct gt_sched_model *m, const char *name, struct gt_err *err)
{
    struct gt_sched_project *p = name ? gt_sched_map_get(&m->project_map, name) : NULL;
    if (!p || !p->capped) {
        return gt_err_set(err, GT_ENOTFOUND, "project %s has no hard cap", name ? name : "(null)");
    }
    p->capped = false;
    p->hard =
        (struct gt_sched_res){GT_SCHED_NO_CAP, GT_SCHED_NO_CAP, GT_SCHED_NO_CAP, GT_SCHED_NO_CAP};
    project_free_unused(m, p);
    return 0;
}

int gt_sched_project_get(const struct gt_sched_model *m, const char *name,
                         struct gt_sched_res *hard, struct gt_sched_res *used)
{
    const struct gt_sched_project *p = name ? gt_sched_map_get(&m->project_map, name) : NULL;
    if (!p) {
        return GT_ENOTFOUND;
    }
    if (hard) {
        *hard = p->hard;
    }
    if (used) {
        *used = p->used;
    }
    return 0;
}
