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

const char *gt_sched_res_text(enum gt_res r, int64_t v, char *buf, size_t len)
{
    switch (r) {
    case GT_RES_CPU:
        gt_quantity_format(v, GT_QTY_MILLI, 0, buf, len);
        break;
    case GT_RES_GPU:
        if (v % 1000 == 0) {
            snprintf(buf, len, "%lld", (long long)(v / 1000));
        } else {
            /* milli-GPUs as a decimal fraction: 1250 -> "1.25" */
            int n = snprintf(buf, len, "%lld.%03lld", (long long)(v / 1000),
                             (long long)((v < 0 ? -v : v) % 1000));
            while (n > 0 && (size_t)n < len && buf[n - 1] == '0') {
                buf[--n] = '\0';
            }
        }
        break;
    default: /* memory and storage: bytes */
        gt_quantity_format(v, GT_QTY_UNIT, 1, buf, len);
        break;
    }
    return buf;
}

const char *gt_sched_res_name(enum gt_res r)
{
    switch (r) {
    case GT_RES_CPU:
        return GT_RES_NAME_CPU;
    case GT_RES_MEMORY:
        return GT_RES_NAME_MEMORY;
    case GT_RES_STORAGE:
        return GT_RES_NAME_STORAGE;
    case GT_RES_GPU:
        return GT_RES_NAME_GPU;
    default:
        GT_ASSERT(!"a resource of enum gt_res");
        return NULL;
    }
}

struct gt_resvec gt_sched_res_vec(const struct gt_sched_res *r)
{
    struct gt_resvec v = {.v = {
                              [GT_RES_CPU] = r->cpu_milli,
                              [GT_RES_MEMORY] = r->memory_bytes,
                              [GT_RES_STORAGE] = r->storage_bytes,
                              [GT_RES_GPU] = r->gpu_milli,
                          }};
    return v;
}

struct gt_sched_res gt_sched_res_of(const struct gt_resvec *v)
{
    struct gt_sched_res r = {
        .cpu_milli = v->v[GT_RES_CPU],
        .memory_bytes = v->v[GT_RES_MEMORY],
        .storage_bytes = v->v[GT_RES_STORAGE],
        .gpu_milli = v->v[GT_RES_GPU],
    };
    return r;
}

int gt_sched_res_add(struct gt_resvec *a, const struct gt_resvec *b)
{
    struct gt_resvec sum;
    for (enum gt_res r = 0; r < GT_RES_COUNT; r++) {
        if (gt_add_i64(a->v[r], b->v[r], &sum.v[r]) < 0) {
            return -ERANGE;
        }
    }
    *a = sum;
    return 0;
}

void gt_sched_res_move(struct gt_resvec *a, const struct gt_resvec *b, int sign)
{
    for (enum gt_res r = 0; r < GT_RES_COUNT; r++) {
        a->v[r] += sign * b->v[r];
    }
}

/* Every resource at v. */
static struct gt_resvec res_all(int64_t v)
{
    struct gt_resvec all;
    for (enum gt_res r = 0; r < GT_RES_COUNT; r++) {
        all.v[r] = v;
    }
    return all;
}

/* The first resource where used + add (checked) exceeds cap, or
 * GT_RES_COUNT when none does. */
static enum gt_res res_over(const struct gt_resvec *used, const struct gt_resvec *add,
                            const struct gt_resvec *cap)
{
    for (enum gt_res r = 0; r < GT_RES_COUNT; r++) {
        int64_t sum;
        if (add->v[r] > 0 && (gt_add_i64(used->v[r], add->v[r], &sum) < 0 || sum > cap->v[r])) {
            return r;
        }
    }
    return GT_RES_COUNT;
}

bool gt_sched_dept_admits(const struct gt_sched_dept *dept, const struct gt_resvec *use,
                          struct gt_buf *why)
{
    enum gt_res r = res_over(&dept->used, use, &dept->limit);
    if (r < GT_RES_COUNT && why) {
        int64_t used = dept->used.v[r], limit = dept->limit.v[r];
        char t[3][32];
        gt_buf_printf(why, "department %s: needs %s %s, has %s of limit %s free", dept->name,
                      gt_sched_res_name(r), gt_sched_res_text(r, use->v[r], t[0], sizeof(t[0])),
                      gt_sched_res_text(r, limit > used ? limit - used : 0, t[1], sizeof(t[1])),
                      gt_sched_res_text(r, limit, t[2], sizeof(t[2])));
    }
    return r == GT_RES_COUNT;
}

bool gt_sched_project_admits(const struct gt_sched_project *project, const struct gt_resvec *use,
                             struct gt_buf *why)
{
    if (!project->capped) {
        return true;
    }
    enum gt_res r = res_over(&project->used, use, &project->hard);
    if (r < GT_RES_COUNT && why) {
        char t[3][32];
        gt_buf_printf(why, "project %s needs %s %s, hard cap %s reached (%s in use)", project->name,
                      gt_sched_res_name(r), gt_sched_res_text(r, use->v[r], t[0], sizeof(t[0])),
                      gt_sched_res_text(r, project->hard.v[r], t[1], sizeof(t[1])),
                      gt_sched_res_text(r, project->used.v[r], t[2], sizeof(t[2])));
    }
    return r == GT_RES_COUNT;
}

/* ---- departments: the admission rule ---- */

/* Can a department borrow resource r from the pool? Storage is quota-only:
 * there is no pool to borrow from, the limit rules. */
static bool pooled(enum gt_res r)
{
    return r != GT_RES_STORAGE;
}

/* Would the departments' claims on resource r fit the pool with add more
 * used by dept (and add less pending) and freed less used? protect: count
 * what other departments claim for their pending work within their
 * guarantee. */
static bool claims_fit(const struct gt_sched_model *m, const struct gt_sched_dept *dept,
                       enum gt_res r, int64_t add, int64_t freed, bool protect)
{
    __int128 claims = 0;
    for (size_t i = 0; i < m->n_depts; i++) {
        const struct gt_sched_dept *d = m->depts[i];
        __int128 u = d->used.v[r], p = protect ? d->pending[r] : 0, g = d->guarantee.v[r];
        if (d == dept) {
            u += (__int128)add - freed;
            p = p > add ? p - add : 0;
        }
        __int128 want = u + p < g ? u + p : g;
        claims += u > want ? u : want;
    }
    return claims <= m->pool.v[r];
}

bool gt_sched_admit(const struct gt_sched_model *m, const struct gt_sched_dept *dept,
                    const struct gt_resvec *add, const struct gt_resvec *freed, struct gt_buf *why)
{
    static const struct gt_resvec nothing;
    const struct gt_resvec *f = freed ? freed : &nothing;
    const struct gt_resvec *used = &dept->used, *g = &dept->guarantee, *a = add;
    if (!freed) {
        if (!gt_sched_dept_admits(dept, add, why)) {
            return false;
        }
    } else {
        for (enum gt_res r = 0; r < GT_RES_COUNT; r++) {
            if (a->v[r] > 0 && (__int128)used->v[r] - f->v[r] + a->v[r] > dept->limit.v[r]) {
                return false;
            }
        }
    }
    for (enum gt_res r = 0; r < GT_RES_COUNT; r++) {
        if (!pooled(r) || a->v[r] == 0 || (__int128)used->v[r] - f->v[r] + a->v[r] <= g->v[r] ||
            claims_fit(m, dept, r, a->v[r], f->v[r], true) ||
            !claims_fit(m, dept, r, a->v[r], f->v[r], false)) {
            continue;
        }
        if (why) {
            char t[3][32];
            gt_buf_printf(why,
                          "department %s: needs %s %s above its guarantee %s (using %s); "
                          "no idle capacity to borrow",
                          dept->name, gt_sched_res_name(r),
                          gt_sched_res_text(r, a->v[r], t[0], sizeof(t[0])),
                          gt_sched_res_text(r, g->v[r], t[1], sizeof(t[1])),
                          gt_sched_res_text(r, used->v[r], t[2], sizeof(t[2])));
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
        p->hard = res_all(GT_SCHED_NO_CAP);
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
    struct gt_resvec h = gt_sched_res_vec(hard);
    for (enum gt_res r = 0; r < GT_RES_COUNT; r++) {
        if (h.v[r] < 0) {
            return gt_err_set(err, GT_EINVAL, "project %s: negative hard cap %lld for %s", name,
                              (long long)h.v[r], gt_sched_res_name(r));
        }
    }
    struct gt_sched_project *p = project_get_or_add(m, name);
    p->hard = h;
    p->capped = true;
    gt_sched_capacity_changed(m);
    return 0;
}

int gt_sched_project_remove(struct gt_sched_model *m, const char *name, struct gt_err *err)
{
    struct gt_sched_project *p = name ? gt_sched_map_get(&m->project_map, name) : NULL;
    if (!p || !p->capped) {
        return gt_err_set(err, GT_ENOTFOUND, "project %s has no hard cap", name ? name : "(null)");
    }
    p->capped = false;
    p->hard = res_all(GT_SCHED_NO_CAP);
    project_free_unused(m, p);
    gt_sched_capacity_changed(m);
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
        *hard = gt_sched_res_of(&p->hard);
    }
    if (used) {
        *used = gt_sched_res_of(&p->used);
    }
    return 0;
}
