/*
 * One scheduling cycle: the part every policy shares (DESIGN.md
 * "Scheduling").
 *
 * 1. Order: the gantry order merges the departments' pending queues (no
 *    sort of all pending jobs): priority band by band, highest first; inside
 *    a band the department heads compete by aging tier (one tier per
 *    aging_tier_ms waited, higher first), then the department's dominant
 *    share (max over resources of used/guarantee, lower first, recomputed
 *    after every bind), then arrival and id. Other orders sort the queued
 *    jobs with their comparison, ties by arrival and id.
 * 2. Admit each job's gang against its department and project (quota.c).
 * 3. Place the gang with the policy's placement, all of it or none.
 * 4. A job that does not start may preempt (gantry, srtf) or, if it is the
 *    first such job (gantry), reserve the GPUs it waits for (backfill).
 *    Head-of-line orders (fifo, sjf) stop at the first job that does not
 *    start.
 * Once no avail GPU is left and no queued job asks for less than a whole
 * GPU, only jobs holding a reservation can still start: the cycle tries
 * those and stops considering the rest (they may still get a wait reason).
 * With no schedulable node at all nothing can start, preempt or reserve:
 * jobs without a reservation only get an Unschedulable wait. Once a cycle
 * has told every queued job so (model->dead_told), the next ones, while
 * still no node is schedulable, visit only the jobs queued since (the
 * rest are counted): a cluster without nodes accepting jobs at a high rate
 * does not walk its whole queue every cycle.
 *
 * Waits: with gt_sched_cycle_opts.changed_waits_only each job remembers the
 * last wait reported for it (job->wait_reason, wait_message) and an
 * unchanged one is only counted (out->n_waiting), so a cycle over many
 * waiting jobs allocates and reports only what changed. With every wait
 * wanted as well (gantryd's cycle), the gantry order also stops walking
 * once the cluster is full and no preemption is left to try: every job
 * still unvisited would be told "no free GPUs left this cycle", so only
 * those told anything else last cycle (kept in model->fresh with the jobs
 * queued since) are visited and the rest counted (tell_rest): a cycle over
 * 10,000 waiting jobs on a full cluster costs what changed, not the queue.
 * The model keeps the cycle's scratch (pick, pending) between cycles.
 *
 * Admission is quota.c's (gt_sched_admit, gt_sched_dept_admits,
 * gt_sched_project_admits): the cycle asks it for every gang.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/decisions.h"
#include "sched/history.h"
#include "sched/index.h"
#include "sched/job.h"
#include "sched/policy.h"
#include "sched/preempt.h"
#include "sched/queue.h"
#include "sched/quota.h"
#include "sched/resv.h"
#include "sched/sched_int.h"
#include "sched/topology.h"
#include "sched/verdict.h"

/* At most this many jobs try to preempt per cycle: each try scans the
 * cluster's nodes once per task that does not fit. */
#define MAX_PREEMPTORS_PER_CYCLE 16

struct cycle {
    struct gt_sched_model *m;
    int64_t now_ms;
    const struct gt_sched_policy *policy;
    struct gt_sched_decisions *out;
    size_t waits_left;
    bool changed_only;              /* report a wait only when it differs from the job's last */
    struct gt_sched_task **pending; /* collect's result, in the model's scratch */
    size_t n_preemptors;
    bool head_done; /* the head job has had its chance to reserve */
    bool full;      /* only reservation holders can start now */
    bool stop;      /* head-of-line: nothing more starts */
    bool dead;      /* no schedulable node: nothing can start, preempt or reserve */
    const char *blocked_by;
    /* tracking (see tell_rest): jobs told a wait other than FULL_WAIT this
     * cycle, and how many jobs seen this cycle are still queued */
    bool track;
    struct gt_sched_job **told;
    size_t n_told, cap_told, n_seen_queued;
    /* per department (model->depts order): the smallest gang GPU request
     * its admission refused this cycle; use only grows within a cycle, so
     * larger requests are refused without the O(departments) check */
    int64_t *refused_gpu_milli;
};

/* What every job without a reservation that cannot preempt is told once
 * the cluster is full. */
static const char FULL_WAIT[] = "no free GPUs left this cycle";

/* Count job's wait; when tracking, remember a job told anything but
 * FULL_WAIT. */
static void count_wait(struct cycle *c, struct gt_sched_job *job, enum gt_sched_wait_reason reason,
                       bool full)
{
    c->out->n_waiting[reason]++;
    if (c->track && !full) {
        GT_VEC_RESERVE(c->told, c->cap_told, c->n_told + 1, 64);
        c->told[c->n_told++] = job;
    }
}

/* Is (reason, message) the wait last reported for job? */
static bool same_wait(const struct gt_sched_job *job, enum gt_sched_wait_reason reason,
                      const char *message)
{
    return job->wait_message && job->wait_reason == reason && !strcmp(job->wait_message, message);
}

/* job waits for reason (message: taken; full: it is FULL_WAIT). With
 * changed_only, the job remembers it and an unchanged wait is counted but
 * not reported. */
static void add_wait_as(struct cycle *c, struct gt_sched_job *job, enum gt_sched_wait_reason reason,
                        char *message, bool full)
{
    if (c->waits_left == 0) {
        free(message);
        return;
    }
    count_wait(c, job, reason, full);
    if (c->changed_only) {
        if (same_wait(job, reason, message)) {
            free(message);
            return;
        }
        free(job->wait_message);
        job->wait_message = gt_xstrdup(message);
        job->wait_reason = reason;
    }
    c->waits_left--;
    gt_sched_decisions_add_wait(c->out, job, reason, message);
}

static void add_wait(struct cycle *c, struct gt_sched_job *job, enum gt_sched_wait_reason reason,
                     char *message)
{
    add_wait_as(c, job, reason, message, false);
}

/* add_wait with a fixed message (borrowed): an unchanged wait costs a
 * compare. */
static void add_wait_text(struct cycle *c, struct gt_sched_job *job,
                          enum gt_sched_wait_reason reason, const char *text)
{
    if (c->waits_left == 0) {
        return;
    }
    if (c->changed_only && same_wait(job, reason, text)) {
        count_wait(c, job, reason, text == FULL_WAIT);
        return;
    }
    add_wait_as(c, job, reason, gt_xstrdup(text), text == FULL_WAIT);
}

/* add_wait with a printf-style message, formatted on the stack first so
 * that an unchanged wait costs no allocation. */
static void add_waitf(struct cycle *c, struct gt_sched_job *job, enum gt_sched_wait_reason reason,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add_waitf(struct cycle *c, struct gt_sched_job *job, enum gt_sched_wait_reason reason,
                      const char *fmt, ...)
{
    if (c->waits_left == 0) {
        return;
    }
    char buf[256];
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    GT_ASSERT(n >= 0);
    char *message;
    if ((size_t)n < sizeof(buf)) {
        message = c->changed_only && same_wait(job, reason, buf) ? NULL : gt_xstrdup(buf);
    } else { /* a long job id */
        message = gt_xmalloc((size_t)n + 1);
        vsnprintf(message, (size_t)n + 1, fmt, ap2);
    }
    va_end(ap2);
    if (message) {
        add_wait(c, job, reason, message);
    } else {
        count_wait(c, job, reason, false);
    }
}

/* May t's job hold one more task of t's group: its department's limit
 * (beyond the gang, the whole admission rule) and its project's cap? */
static bool task_admitted(const struct cycle *c, const struct gt_sched_task *t, bool beyond_gang)
{
    const struct gt_sched_job *job = t->job;
    const struct gt_resvec *use = &t->group->use;
    bool dept_ok = beyond_gang ? gt_sched_admit(c->m, job->dept, use, NULL, NULL)
                               : gt_sched_dept_admits(job->dept, use, NULL);
    return dept_ok && (!job->project || gt_sched_project_admits(job->project, use, NULL));
}

/* Collect job's PENDING tasks into c->pending; how many. */
static size_t collect(struct cycle *c, struct gt_sched_job *job)
{
    struct gt_sched_model *m = c->m;
    if (job->n_pending > m->cap_pending) {
        m->cap_pending = job->n_pending;
        m->pending = gt_xrealloc(m->pending, m->cap_pending * sizeof(*m->pending));
    }
    c->pending = m->pending;
    size_t n = 0;
    for (size_t i = 0; i < job->n_tasks && n < job->n_pending; i++) {
        if (job->tasks[i].state == GT_SCHED_TASK_PENDING) {
            c->pending[n++] = &job->tasks[i];
        }
    }
    GT_ASSERT(n == job->n_pending && n > 0);
    return n;
}

/* Place pending[0..n): the gang first, then any further task that its
 * department and project admit. A job with a topology level is placed by
 * topology.c (level node: on the one node that holds its gang). How many
 * were placed (bound). */
static size_t place_gang(struct cycle *c, size_t n, size_t need, struct gt_sched_pick *pick)
{
    size_t placed = 0;
    struct gt_sched_job *job = c->pending[0]->job;
    struct gt_sched_node *pin = NULL;
    job->placement_attempts++;
    if (job->topology == GT_SCHED_TOPO_NODE) {
        pin = gt_sched_topo_gang_node(c->m, c->pending, need ? need : 1, c->now_ms, pick);
    }
    for (size_t i = 0; i < n && placed + (n - i) >= need; i++) {
        struct gt_sched_task *t = c->pending[i];
        /* The gang was admitted as its first tasks; a group with a larger
         * request placed instead must still keep the limit. */
        if (!task_admitted(c, t, placed >= need)) {
            continue;
        }
        if (job->topology != GT_SCHED_TOPO_NONE
                ? gt_sched_topo_place(c->m, c->policy, t, pin, c->now_ms, pick)
                : c->policy->place(c->m, t, c->now_ms, pick)) {
            gt_sched_task_take(t, pick->node, pick->shares, pick->n, c->now_ms);
            placed++;
        } else if (placed < need && c->policy->head_of_line) {
            break;
        }
    }
    return placed;
}

/* A job with a required topology neither preempts nor reserves: the
 * what-if searches (preempt.c) place by the policy alone, so they could
 * free room the level cannot use (INV-P). */
static bool may_preempt(const struct cycle *c, const struct gt_sched_job *job)
{
    return c->policy->preempt && job->preemption != GT_SCHED_PREEMPT_NEVER &&
           !job->topology_required && c->n_preemptors < MAX_PREEMPTORS_PER_CYCLE;
}

/* Nothing more can start or preempt and no more waits are wanted. */
static bool cycle_done(const struct cycle *c)
{
    return c->waits_left == 0 &&
           (c->stop || c->dead ||
            (c->full && !(c->policy->preempt && c->m->n_preemptor_queued > 0 &&
                          c->n_preemptors < MAX_PREEMPTORS_PER_CYCLE)));
}

/* The job did not start: preempt or reserve if the policy does, and say
 * why it waits. */
static void not_started(struct cycle *c, struct gt_sched_job *job, size_t need, size_t placed)
{
    size_t gang = need ? need : 1;
    bool made = false;
    if (job->resv && job->resv->preempted && gt_sched_resv_waiting(job)) {
        add_waitf(c, job, GT_SCHED_WAIT_UNSCHEDULABLE,
                  "waiting for preempted tasks to exit from its %zu reserved GPUs", job->resv->n);
        return;
    }
    if (may_preempt(c, job)) {
        c->n_preemptors++;
        made = gt_sched_reserve_for(c->m, job, c->pending, gang, GT_SCHED_RESV_PREEMPT, c->policy,
                                    c->now_ms, c->out, NULL);
    }
    if (!made && c->policy->reserve && !c->head_done && !job->topology_required &&
        gt_sched_job_service_ms(job) == 0) {
        c->head_done = true;
        made = gt_sched_reserve_for(c->m, job, c->pending, gang, GT_SCHED_RESV_WAIT, c->policy,
                                    c->now_ms, c->out, NULL);
    }
    if (made) {
        add_waitf(c, job, GT_SCHED_WAIT_UNSCHEDULABLE,
                  "no node fits its gang of %zu now; holds a reservation of %zu GPUs until the "
                  "tasks on them exit",
                  gang, job->resv->n);
    } else if (job->topology_required) {
        add_waitf(c, job, GT_SCHED_WAIT_UNSCHEDULABLE,
                  "required topology %s: no %s has room for %s now (gang of %zu task%s, %zu "
                  "placed); it starts when one does",
                  gt_sched_topology_name(job->topology),
                  job->topology == GT_SCHED_TOPO_NODE        ? "Ready node"
                  : job->topology == GT_SCHED_TOPO_GPU_GROUP ? "NVLink/PCIe group"
                                                             : "NUMA node",
                  job->topology == GT_SCHED_TOPO_NODE ? "the whole gang" : "each task's GPUs", gang,
                  gang == 1 ? "" : "s", placed);
    } else {
        add_waitf(c, job, GT_SCHED_WAIT_UNSCHEDULABLE,
                  "no node fits: gang needs %zu more task%s placed together, %zu fit on ready "
                  "nodes within the quota",
                  gang, gang == 1 ? "" : "s", placed);
    }
}

/* Does job hold a reservation made by preemption whose victims have not all
 * exited? One whose victims are gone while the job still cannot start is
 * dropped, so a job held back by quota holds no GPUs. A victim of a quota
 * preemption may hold no reserved GPU: any eviction still under way in
 * the job's department counts. */
static bool preempted_waiting(struct cycle *c, struct gt_sched_job *job)
{
    if (!job->resv || !job->resv->preempted) {
        return false;
    }
    if (gt_sched_resv_waiting(job) || job->dept->n_evicting > 0) {
        return true;
    }
    gt_sched_resv_drop(job, c->m);
    return false;
}

/* job's department refused its gang (admission, not a project cap): unless
 * it already waits for victims, preempt jobs of its own department that it
 * may preempt (lower priority; srtf: also longer remaining time) whose exit
 * lets the gang in and whose GPUs, with any further victims, let it fit
 * (DESIGN.md step 4). Returns the wait message (taken), why (the refusal,
 * consumed) with what it does. */
static char *quota_preempt(struct cycle *c, struct gt_sched_job *job, size_t gang,
                           const struct gt_resvec *use, struct gt_buf *why)
{
    const char *dept = job->dept->name;
    if (preempted_waiting(c, job)) {
        gt_buf_printf(why, "; waiting for the jobs it preempted to exit");
        return gt_buf_take(why);
    }
    size_t n_victims = 0, first = c->out->n_preempts;
    if (may_preempt(c, job) && gt_sched_quota_may_free(c->m, job, use, c->policy->rank != NULL)) {
        c->n_preemptors++;
        if (gt_sched_reserve_for(c->m, job, c->pending, gang, GT_SCHED_RESV_QUOTA, c->policy,
                                 c->now_ms, c->out, &n_victims)) {
            /* name the rank only when a victim was chosen by it */
            bool by_rank = false;
            for (size_t i = first; i < c->out->n_preempts; i++) {
                by_rank = by_rank || c->out->preempts[i].kind == GT_SCHED_PREEMPT_POLICY;
            }
            gt_buf_printf(why, "; preempting %zu %sjob%s of department %s%s%s%s for it", n_victims,
                          by_rank ? "" : "lower-priority ", n_victims == 1 ? "" : "s", dept,
                          by_rank ? " with a lower priority or a greater rank (" : "",
                          by_rank ? c->policy->rank_what : "", by_rank ? ")" : "");
        }
    }
    return gt_buf_take(why);
}

/* Is there anything left a job without a reservation could use? A
 * reservation whose due time is known may still lend its free GPUs to a
 * job with an early enough deadline (backfill). */
static bool cluster_full(const struct gt_sched_model *m)
{
    if (m->n_light_queued > 0 || gt_sched_idx_first(&m->idx[GT_SCHED_IDX_AVAIL], 1) >= 0) {
        return false;
    }
    for (size_t i = 0; i < m->n_resv; i++) {
        if (m->resv[i]->resv->due_ms != INT64_MAX) {
            return false;
        }
    }
    return true;
}

/* Try to start job (it has pending tasks). */
static void try_job(struct cycle *c, struct gt_sched_job *job, struct gt_sched_pick *pick)
{
    job->seen_cycle = c->m->n_cycles;
    if (c->stop) {
        add_waitf(c, job, GT_SCHED_WAIT_UNSCHEDULABLE, "blocked behind job %s (head of line)",
                  c->blocked_by);
        return;
    }
    /* Inadmissible (verdict.c, cached): no placement, preemption or
     * reservation can help, so none is searched. */
    const char *verdict = gt_sched_verdict(c->m, job);
    if (verdict) {
        if (job->resv) {
            gt_sched_resv_drop(job, c->m);
        }
        add_wait_text(c, job, GT_SCHED_WAIT_INADMISSIBLE, verdict);
        if (c->policy->head_of_line) {
            c->stop = true;
            c->blocked_by = job->id;
        }
        return;
    }
    if (c->dead && !job->resv) {
        /* no placement, preemption or reservation can help: skip them all */
        add_wait_text(c, job, GT_SCHED_WAIT_UNSCHEDULABLE, "no node is Ready and uncordoned");
        if (c->policy->head_of_line) {
            c->stop = true;
            c->blocked_by = job->id;
        }
        return;
    }
    if (c->full && !job->resv && !may_preempt(c, job)) {
        add_wait_text(c, job, GT_SCHED_WAIT_UNSCHEDULABLE, FULL_WAIT);
        return;
    }
    size_t n = collect(c, job);
    /* The gang still missing; DONE tasks (finished, or lost and not yet
     * restarted) cannot be placed, so they do not count against it. */
    size_t need = job->min_available > job->n_holding ? job->min_available - job->n_holding : 0;
    need = need > n ? n : need;

    /* Admission: the gang (or, if the gang is complete, the next task). */
    struct gt_resvec gang = {0};
    bool overflow = false;
    for (size_t i = 0; i < (need ? need : 1); i++) {
        overflow = overflow || gt_sched_res_add(&gang, &c->pending[i]->group->use) < 0;
    }
    /* A refusal stands for larger gangs of the department, unless the job
     * may preempt its way in (quota_preempt). */
    int64_t *refused = &c->refused_gpu_milli[job->dept->vec_index];
    if (!overflow && gang.v[GT_RES_GPU] > 0 && gang.v[GT_RES_GPU] >= *refused &&
        !(may_preempt(c, job) &&
          gt_sched_quota_may_free(c->m, job, &gang, c->policy->rank != NULL))) {
        preempted_waiting(c, job); /* only to drop a stale reservation */
        char t[32];
        add_waitf(c, job, GT_SCHED_WAIT_QUOTA,
                  "department %s: no quota for nvidia.com/gpu %s this cycle", job->dept->name,
                  gt_sched_res_text(GT_RES_GPU, gang.v[GT_RES_GPU], t, sizeof(t)));
        if (c->policy->head_of_line) {
            c->stop = true;
            c->blocked_by = job->id;
        }
        return;
    }
    struct gt_buf why;
    gt_buf_init(&why);
    bool dept_ok = !overflow && gt_sched_admit(c->m, job->dept, &gang, NULL, &why);
    if (!dept_ok || (job->project && !gt_sched_project_admits(job->project, &gang, &why))) {
        /* only the department's refusal holds for its other projects' jobs */
        if (!dept_ok && !overflow && gang.v[GT_RES_GPU] > 0 && gang.v[GT_RES_GPU] < *refused) {
            *refused = gang.v[GT_RES_GPU];
        }
        if (overflow) {
            gt_buf_printf(&why, "department %s: gang request overflows", job->dept->name);
        }
        /* a project cap never makes anything preemptable */
        bool by_dept = !dept_ok && !overflow &&
                       (!job->project || gt_sched_project_admits(job->project, &gang, NULL));
        add_wait(c, job, GT_SCHED_WAIT_QUOTA,
                 by_dept ? quota_preempt(c, job, need ? need : 1, &gang, &why) : gt_buf_take(&why));
        if (c->policy->head_of_line) {
            c->stop = true;
            c->blocked_by = job->id;
        }
        return;
    }
    gt_buf_fini(&why);

    size_t placed = place_gang(c, n, need, pick);
    if (placed == 0 || placed < need) {
        for (size_t i = 0; i < n; i++) {
            if (c->pending[i]->node) {
                gt_sched_task_release(c->pending[i], true);
            }
        }
        not_started(c, job, need, placed);
        if (c->policy->head_of_line) {
            c->stop = true;
            c->blocked_by = job->id;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            if (c->pending[i]->node) {
                gt_sched_decisions_add_bind(c->out, c->pending[i]);
            }
        }
        gt_sched_resv_drop(job, c->m);
    }
    c->full = c->full || cluster_full(c->m);
}

/* try_job, counting the jobs seen that still wait. */
static void schedule_job(struct cycle *c, struct gt_sched_job *job, struct gt_sched_pick *pick)
{
    try_job(c, job, pick);
    c->n_seen_queued += job->queued;
}

/* Once the cluster is full and no preemption is left to try, every job
 * without a reservation would be told FULL_WAIT. When tracking is valid
 * (model->told_valid: every queued job whose last wait is not FULL_WAIT is
 * in model->fresh, see gt_sched_cycle_ex; and no capacity change since, which
 * could make a job Inadmissible), only those need telling: tell
 * them and count the rest, so such a cycle costs what changed, not the
 * queue length. Reservation holders are left to the cycle's last loop. */
static bool tell_rest(struct cycle *c, struct gt_sched_pick *pick)
{
    struct gt_sched_model *m = c->m;
    if (!c->track || !m->told_valid || m->told_epoch != m->capacity_epoch || !c->full || c->dead ||
        (c->policy->preempt && m->n_preemptor_queued > 0 &&
         c->n_preemptors < MAX_PREEMPTORS_PER_CYCLE)) {
        return false;
    }
    for (size_t i = 0; i < m->n_fresh; i++) {
        struct gt_sched_job *job = m->fresh[i];
        if (job->queued && job->seen_cycle != m->n_cycles && !job->resv) {
            schedule_job(c, job, pick);
        }
    }
    size_t later = 0; /* holders the last loop visits */
    for (size_t i = 0; i < m->n_resv; i++) {
        later += m->resv[i]->queued && m->resv[i]->seen_cycle != m->n_cycles;
    }
    GT_ASSERT(m->n_queued >= c->n_seen_queued + later);
    c->out->n_waiting[GT_SCHED_WAIT_UNSCHEDULABLE] += m->n_queued - c->n_seen_queued - later;
    return true;
}

static int job_cmp(const void *a, const void *b, void *arg)
{
    const struct cycle *c = arg;
    const struct gt_sched_job *x = *(const struct gt_sched_job *const *)a;
    const struct gt_sched_job *y = *(const struct gt_sched_job *const *)b;
    int r = c->policy->order(x, y, c->now_ms);
    if (r != 0) {
        return r;
    }
    if (x->arrival_ms != y->arrival_ms) {
        return x->arrival_ms < y->arrival_ms ? -1 : 1;
    }
    return strcmp(x->id, y->id);
}

/* Sorted orders: every queued job, sorted. */
static void run_sorted(struct cycle *c, struct gt_sched_pick *pick)
{
    struct gt_sched_model *m = c->m;
    size_t n = 0, cap = 0;
    struct gt_sched_job **order = NULL;
    for (size_t d = 0; d < m->n_depts; d++) {
        for (size_t b = 0; b < m->depts[d]->n_bands; b++) {
            for (struct gt_sched_job *j = m->depts[d]->bands[b].head; j; j = j->queue_next) {
                GT_VEC_RESERVE(order, cap, n + 1, 64);
                order[n++] = j;
            }
        }
    }
    if (n > 1) {
        qsort_r(order, n, sizeof(*order), job_cmp, c);
    }
    for (size_t i = 0; i < n && !cycle_done(c); i++) {
        if (order[i]->n_pending > 0) {
            schedule_job(c, order[i], pick);
        }
    }
    free(order);
}

/* A department's dominant share: max over resources of used/guarantee
 * (any use of a resource without guarantee counts as very large). */
static double dominant_share(const struct gt_sched_dept *d)
{
    double share = 0;
    for (enum gt_res r = 0; r < GT_RES_COUNT; r++) {
        int64_t u = d->used.v[r], g = d->guarantee.v[r];
        double s = u <= 0 ? 0 : g > 0 ? (double)u / (double)g : 1e18;
        share = s > share ? s : share;
    }
    return share;
}

static int64_t aging_tier(const struct cycle *c, const struct gt_sched_job *j)
{
    int64_t tier_ms = c->m->aging_tier_ms;
    return tier_ms > 0 && c->now_ms > j->arrival_ms ? (c->now_ms - j->arrival_ms) / tier_ms : 0;
}

/* A queued job and its place inside its department's band under the
 * gantry order: least-attained-service queue, then gt_sched_job_order_key
 * (expected remaining wall time; for a job that restarts from scratch the
 * GPU time it is expected to cost in all, lost runs included: policy.c),
 * then arrival and id. */
struct keyed {
    struct gt_sched_job *job;
    int64_t las;
    double key;
};

static int keyed_cmp(const void *pa, const void *pb)
{
    const struct keyed *a = pa, *b = pb;
    if (a->las != b->las) {
        return a->las < b->las ? -1 : 1;
    }
    if (a->key != b->key) {
        return a->key < b->key ? -1 : 1;
    }
    if (a->job->arrival_ms != b->job->arrival_ms) {
        return a->job->arrival_ms < b->job->arrival_ms ? -1 : 1;
    }
    return strcmp(a->job->id, b->job->id);
}

/* One department's band as the merge walks it: its list itself while
 * nothing sets the jobs apart, else a sorted copy (v). */
struct band_walk {
    struct keyed *v;
    size_t n, cap, at;
    bool sorted;
    struct keyed list; /* unsorted: the list's current job (NULL: done) */
};

/* Start w on band b in the gantry order. The band's list is in arrival
 * order already; it is copied and sorted only when the model has learned
 * something (a job has attained service, or history exists), so a
 * cluster whose jobs report no attained service walks its lists as they
 * are, in time that grows with the jobs started, not the queue. */
static void band_walk_start(struct band_walk *w, const struct gt_sched_model *m,
                            const struct gt_sched_band *b)
{
    w->n = w->at = 0;
    w->list = (struct keyed){.job = b ? b->head : NULL};
    w->sorted = false;
    if (!b || (m->n_served == 0 && !gt_sched_history_known(m))) {
        return;
    }
    w->sorted = true;
    for (struct gt_sched_job *j = b->head; j; j = j->queue_next) {
        GT_VEC_RESERVE(w->v, w->cap, w->n + 1, 64);
        w->v[w->n++] = (struct keyed){
            .job = j, .las = gt_sched_las_queue(j), .key = gt_sched_job_order_key(j)};
    }
    if (w->n > 1) {
        qsort(w->v, w->n, sizeof(*w->v), keyed_cmp);
    }
}

/* The walk's current job (NULL: none left). */
static const struct keyed *band_walk_peek(const struct band_walk *w)
{
    if (w->sorted) {
        return w->at < w->n ? &w->v[w->at] : NULL;
    }
    return w->list.job ? &w->list : NULL;
}

static struct gt_sched_job *band_walk_next(struct band_walk *w)
{
    if (w->sorted) {
        return w->v[w->at++].job;
    }
    struct gt_sched_job *job = w->list.job;
    w->list.job = job->queue_next;
    return job;
}

static void band_walk_stop(struct band_walk *w)
{
    w->at = w->n;
    w->list.job = NULL;
}

/* Does job a (of department da) go before b (of db) inside one band? */
static bool gantry_before(const struct cycle *c, const struct keyed *ka, const struct keyed *kb)
{
    const struct gt_sched_job *a = ka->job, *b = kb->job;
    int64_t ta = aging_tier(c, a), tb = aging_tier(c, b);
    if (ta != tb) {
        return ta > tb;
    }
    double sa = dominant_share(a->dept), sb = dominant_share(b->dept);
    if (sa != sb) {
        return sa < sb;
    }
    return keyed_cmp(ka, kb) < 0;
}

static int cmp_desc_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x < y) - (x > y);
}

/* The gantry order: merge the department queues band by band. */
static void run_gantry(struct cycle *c, struct gt_sched_pick *pick)
{
    struct gt_sched_model *m = c->m;
    size_t n_values = 0, cap = 0;
    int32_t *values = NULL;
    for (size_t d = 0; d < m->n_depts; d++) {
        for (size_t b = 0; b < m->depts[d]->n_bands; b++) {
            GT_VEC_RESERVE(values, cap, n_values + 1, 16);
            values[n_values++] = m->depts[d]->bands[b].value;
        }
    }
    if (n_values > 1) {
        qsort(values, n_values, sizeof(*values), cmp_desc_i32);
    }
    struct band_walk *walk = gt_xcalloc(m->n_depts + 1, sizeof(*walk));
    for (size_t v = 0; v < n_values; v++) {
        if (v > 0 && values[v] == values[v - 1]) {
            continue;
        }
        for (size_t d = 0; d < m->n_depts; d++) {
            band_walk_start(&walk[d], m, gt_sched_dept_band(m->depts[d], values[v]));
        }
        for (;;) {
            if (cycle_done(c) || tell_rest(c, pick)) {
                goto done;
            }
            size_t best = m->n_depts;
            const struct keyed *best_key = NULL;
            for (size_t d = 0; d < m->n_depts; d++) {
                const struct keyed *k = band_walk_peek(&walk[d]);
                /* A department refused even one GPU: none of its whole-GPU
                 * jobs can start (light jobs keep it in). */
                if (k && c->waits_left == 0 && m->n_light_queued == 0 &&
                    c->refused_gpu_milli[d] <= 1000) {
                    band_walk_stop(&walk[d]);
                    k = NULL;
                }
                if (k && (!best_key || gantry_before(c, k, best_key))) {
                    best = d;
                    best_key = k;
                }
            }
            if (best == m->n_depts) {
                break;
            }
            schedule_job(c, band_walk_next(&walk[best]), pick);
        }
    }
done:
    for (size_t d = 0; d < m->n_depts; d++) {
        free(walk[d].v);
    }
    free(walk);
    free(values);
}

int gt_sched_cycle_ex(struct gt_sched_model *m, int64_t now_ms,
                      const struct gt_sched_policy *policy, const struct gt_sched_cycle_opts *opts,
                      struct gt_sched_decisions *out)
{
    GT_ASSERT(m && policy && out);
    gt_sched_decisions_reset(out);
    m->n_cycles++;
    /* Head-of-line reservations are remade every cycle. */
    for (size_t i = m->n_resv; i-- > 0;) {
        if (!m->resv[i]->resv->preempted) {
            gt_sched_resv_drop(m->resv[i], m);
        }
    }
    struct cycle c = {.m = m,
                      .now_ms = now_ms,
                      .policy = policy,
                      .out = out,
                      .waits_left = opts ? opts->max_waits : SIZE_MAX,
                      .changed_only = opts && opts->changed_waits_only};
    /* Tracking: the gantry order telling every wait that changed. */
    c.track = c.changed_only && c.waits_left == SIZE_MAX && !policy->order;
    c.full = cluster_full(m);
    /* schedulability changes only outside the cycle */
    c.dead = gt_sched_idx_first(&m->idx[GT_SCHED_IDX_AVAIL], 0) < 0;
    c.refused_gpu_milli = gt_xcalloc(m->n_depts + 1, sizeof(*c.refused_gpu_milli));
    for (size_t i = 0; i < m->n_depts; i++) {
        c.refused_gpu_milli[i] = INT64_MAX;
    }
    if (!m->pick) {
        m->pick = gt_xcalloc(1, sizeof(*m->pick));
    }
    struct gt_sched_pick *pick = m->pick;
    bool tell_all = !policy->order && !policy->head_of_line && c.changed_only && m->n_resv == 0;
    if (c.dead && tell_all && m->dead_told) {
        size_t told = 0;
        for (size_t i = 0; i < m->n_fresh && c.waits_left > 0; i++) {
            struct gt_sched_job *job = m->fresh[i];
            if (job->queued && job->n_pending > 0) {
                schedule_job(&c, job, pick);
                told++;
            }
        }
        out->n_waiting[GT_SCHED_WAIT_UNSCHEDULABLE] += m->n_queued - told;
    } else if (policy->order) {
        run_sorted(&c, pick);
    } else {
        run_gantry(&c, pick);
    }
    m->dead_told = c.dead && tell_all && c.waits_left > 0;
    for (size_t i = 0; i < m->n_fresh; i++) {
        m->fresh[i]->fresh = false;
    }
    m->n_fresh = 0;
    /* A tracking cycle with a node to run on told every queued job, or
     * (tell_rest) every one not told FULL_WAIT before: those told anything
     * else are visited first next time, with the jobs queued meanwhile. */
    m->told_valid = c.track && !c.dead;
    m->told_epoch = m->capacity_epoch;
    for (size_t i = 0; m->told_valid && i < c.n_told; i++) {
        struct gt_sched_job *job = c.told[i];
        if (job->queued && !job->fresh) {
            GT_VEC_RESERVE(m->fresh, m->cap_fresh, m->n_fresh + 1, 64);
            m->fresh[m->n_fresh++] = job;
            job->fresh = true;
        }
    }
    free(c.told);
    /* Reservation holders not reached (the cluster filled first). */
    size_t n_holders = m->n_resv;
    struct gt_sched_job **holders = gt_xcalloc(n_holders + 1, sizeof(*holders));
    if (n_holders > 0) {
        memcpy(holders, m->resv, n_holders * sizeof(*holders));
    }
    for (size_t i = 0; i < n_holders && !c.stop; i++) {
        if (holders[i]->seen_cycle != m->n_cycles && holders[i]->n_pending > 0) {
            schedule_job(&c, holders[i], pick);
        }
    }
    free(holders);
    free(c.refused_gpu_milli);
    return 0;
}

int gt_sched_cycle(struct gt_sched_model *m, int64_t now_ms, const struct gt_sched_policy *policy,
                   struct gt_sched_decisions *out)
{
    return gt_sched_cycle_ex(m, now_ms, policy, NULL, out);
}
