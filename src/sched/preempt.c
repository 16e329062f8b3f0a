/*
 * Preemption and reservations (DESIGN.md Scheduling, steps 4 and 5).
 *
 * gt_sched_reserve_for simulates: for each task of the gang that does not
 * fit, it finds the node where the cheapest set of candidate jobs, once
 * gone, lets the task fit, removes those jobs whole (gang-level: every task
 * they hold, on any node) with gt_sched_task_unhold, and places the task
 * with the policy's own placement. Only if the whole gang then fits is
 * anything decided: the GPUs the gang would take are reserved for the job
 * (reserved_by), and when preempting, every task of every victim job gets a
 * preempt decision. The model's holdings are then restored exactly.
 *
 * Candidates when preempting: jobs of the preemptor's department with a
 * strictly lower priority, or (policies with a rank: srtf's oracle remaining
 * time, tiresias' attained-service queue) with its priority and a greater
 * rank than its own; and, only when
 * the preemptor's department stays within its GPU guarantee with the gang (a
 * reclaim), jobs of other departments whose department stays at or above its
 * GPU guarantee without them (they lose borrowed capacity only). By rank,
 * a job that restarts from scratch is a candidate only while its current
 * run's service is below scratch_loss_pct % of what that run is still
 * expected to need (the learned history), so what preemption throws away
 * of such a job is bounded by what it would still take, and only for a
 * preemptor expected to need at most half of that (SERPT's order, with
 * room for the loss). Jobs
 * already being evicted and the preemptor itself are never candidates. Cost,
 * compared in order: highest victim priority, GPUs the victims hold, work
 * lost (sum of GPU-ms since bind), so the lowest-priority, smallest, newest
 * go first; by rank: highest victim priority, then the smallest rank in the
 * set (greater is cheaper), then GPUs, so the jobs of the greatest rank (the
 * longest remaining time, the queue of the most service) go first.
 * When only waiting (the head job's backfill reservation) every holding job
 * is a candidate and the cost puts the earliest expected end first (its
 * deadline end, else its learned estimate: resv.c).
 *
 * Quota preemption (GT_SCHED_RESV_QUOTA: the preemptor's department refused
 * it): first the candidates of its own department, cheapest first, are
 * taken until their exit would let the gang be admitted, then any of them
 * the others make unnecessary is put back, latest taken first but for the
 * last (Kueue's minimal set within a ClusterQueue); then the gang is placed
 * as above, with further victims if the nodes need them. The job's
 * department then counts the victims in n_evicting until they exit.
 *
 * A reservation lasts until its job binds or is removed, a GPU of it
 * vanishes, or (preemption) the victims have exited and the job still
 * cannot bind; a head-of-line one is remade every cycle. A preemptor whose
 * victims are still exiting never preempts again, so nothing loops.
 * Dropping a reservation and the backfill rule that lends one are resv.c's;
 * whether victims' exit lets a gang in is quota.c's admission rule.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/decisions.h"
#include "sched/history.h"
#include "sched/index.h"
#include "sched/job.h"
#include "sched/policy.h"
#include "sched/preempt.h"
#include "sched/quota.h"
#include "sched/resv.h"
#include "sched/sched_int.h"

/* What removing one candidate job costs and when its tasks end. */
struct cand {
    struct gt_sched_job *job;
    struct gt_resvec use; /* the group use of its holding tasks */
    int32_t priority;
    int64_t gpus, work_ms, end_ms, rank;
    size_t gpus_here;
    int64_t cpu_here, mem_here;
};

/* Nodes a victim search still compares once it has found a set: bounds a
 * search on a large cluster; smaller ones are searched whole. */
#define PREEMPT_TIE_NODES 256
/* Nodes a victim search looks at in all, so that a cycle's searches stay
 * bounded however large the cluster. */
#define PREEMPT_MAX_NODES 1024

struct cost {
    int64_t a, b, c; /* compared in order, smaller is cheaper */
};

static int cost_cmp(const struct cost *x, const struct cost *y)
{
    if (x->a != y->a) {
        return x->a < y->a ? -1 : 1;
    }
    if (x->b != y->b) {
        return x->b < y->b ? -1 : 1;
    }
    return (x->c > y->c) - (x->c < y->c);
}

struct attempt {
    struct gt_sched_model *m;
    struct gt_sched_job *job;
    bool preempt, reclaim;
    /* the policy's rank when preempting (srtf, tiresias: equal priority,
     * greater rank), else NULL; the preemptor's rank */
    int64_t (*rank)(const struct gt_sched_job *j);
    int64_t own_rank;
    int64_t scratch_loss_pct; /* the policy's, when preempting by rank */
    int64_t now_ms;
    /* victim jobs chosen so far, and the tasks unheld for them */
    struct gt_sched_job **victims;
    size_t n_victims, cap_victims;
    struct saved {
        struct gt_sched_task *task;
        struct gt_sched_node *node;
        struct gt_sched_gpu_share *shares;
        size_t n;
    } * saved;
    size_t n_saved, cap_saved;
};

static bool is_victim(const struct attempt *a, const struct gt_sched_job *j)
{
    for (size_t i = 0; i < a->n_victims; i++) {
        if (a->victims[i] == j) {
            return true;
        }
    }
    return false;
}

/* A preemptor takes a victim that restarts from scratch only if it is
 * expected to need at most this share of what the victim's run still is
 * (GPU-ms, both from the history). Tuned on the Philly quarter-size replay
 * (25/40/50/60/75/100: 41,226/40,875/38,260/40,601/39,526/39,707 s avg JCT
 * of gantry-restart before the order's width exponent; chaotic). */
#define SCRATCH_GAIN_PCT 50

/* Would preempting v, which restarts from scratch, throw away little
 * enough: its current run's service r under scratch_loss_pct % of
 * E[S - r | S > r], what that run is still expected to need (history.c)?
 * A run past every finished sample is expected to need as much again, so
 * it stays; with no history nothing is expected and it stays. And is the
 * preemptor expected to need at most SCRATCH_GAIN_PCT % of that? */
static bool scratch_victim(const struct attempt *a, const struct gt_sched_job *v)
{
    if (a->scratch_loss_pct <= 0) {
        return true;
    }
    int64_t run = gt_sched_job_service_ms(v);
    int64_t rest = gt_sched_history_expected_remaining_at_ms(v, run);
    int64_t mine = gt_sched_history_expected_remaining_ms(a->job);
    return (__int128)run * 100 < (__int128)rest * a->scratch_loss_pct &&
           (__int128)mine * 100 <= (__int128)rest * SCRATCH_GAIN_PCT;
}

/* May the preemptor take v's GPUs by rank (equal priority, greater rank)?
 * A job that restarts from scratch only while scratch_victim says so. */
static bool rank_victim(const struct attempt *a, const struct gt_sched_job *v)
{
    return a->rank && v->priority == a->job->priority && a->rank(v) > a->own_rank &&
           (!v->restarts_from_scratch || scratch_victim(a, v));
}

static bool eligible(const struct attempt *a, const struct gt_sched_job *v)
{
    if (v == a->job || v->n_holding == 0 || is_victim(a, v)) {
        return false;
    }
    for (size_t i = 0; i < v->n_tasks; i++) {
        if (v->tasks[i].evicting) {
            return false;
        }
    }
    if (!a->preempt) {
        return true;
    }
    if (v->dept == a->job->dept) {
        return v->priority < a->job->priority || rank_victim(a, v);
    }
    if (!a->reclaim) {
        return false;
    }
    int64_t held = 0;
    for (size_t i = 0; i < v->n_tasks; i++) {
        held += v->tasks[i].node ? v->tasks[i].group->use.v[GT_RES_GPU] : 0;
    }
    return v->dept->used.v[GT_RES_GPU] - held >= v->dept->guarantee.v[GT_RES_GPU];
}

/* When a holding task is expected to end: its activeDeadlineSeconds end;
 * when only waiting (backfill), else when its job's learned expected
 * remaining time does (gt_sched_resv_end_ms); INT64_MAX if unknown. */
static int64_t task_end_ms(const struct attempt *a, const struct gt_sched_task *t)
{
    return gt_sched_resv_end_ms(t->job, t->bound_ms, a->now_ms, !a->preempt);
}

/* Fill c's job-wide figures. */
static void cand_fill(struct cand *c, const struct attempt *a)
{
    const struct gt_sched_job *v = c->job;
    c->priority = v->priority;
    c->rank = a->rank ? a->rank(v) : 0;
    c->gpus = c->work_ms = 0;
    c->end_ms = 0;
    c->use = (struct gt_resvec){0};
    for (size_t i = 0; i < v->n_tasks; i++) {
        const struct gt_sched_task *t = &v->tasks[i];
        if (!t->node) {
            continue;
        }
        /* bounded: the department's use includes it */
        GT_ASSERT(gt_sched_res_add(&c->use, &t->group->use) == 0);
        int64_t g = (int64_t)t->n_gpus, age = a->now_ms > t->bound_ms ? a->now_ms - t->bound_ms : 0;
        c->gpus += g;
        int64_t w;
        if (gt_mul_i64(age, g > 0 ? g : 1, &w) < 0 || gt_add_i64(c->work_ms, w, &c->work_ms) < 0) {
            c->work_ms = INT64_MAX;
        }
        int64_t end = task_end_ms(a, t);
        c->end_ms = end > c->end_ms ? end : c->end_ms;
    }
}

static struct cost cand_cost(const struct attempt *a, const struct cand *c)
{
    if (a->rank) {
        /* greatest rank first; ranks are >= 0 */
        return (struct cost){c->priority, -c->rank, c->gpus};
    }
    if (a->preempt) {
        return (struct cost){c->priority, c->gpus, c->work_ms};
    }
    return (struct cost){c->end_ms, c->gpus, c->work_ms};
}

static int cand_sort_cmp(const void *x, const void *y, void *arg)
{
    const struct cand *p = x, *q = y;
    struct cost cp = cand_cost(arg, p), cq = cand_cost(arg, q);
    int r = cost_cmp(&cp, &cq);
    if (r == 0 && p->job->arrival_ms != q->job->arrival_ms) {
        r = p->job->arrival_ms > q->job->arrival_ms ? -1 : 1; /* newest first */
    }
    return r ? r : strcmp(p->job->id, q->job->id);
}

/* An upper bound on the whole GPUs candidates could free on node, from
 * cheap checks only (most nodes of a large cluster fail it). */
static size_t may_free(const struct attempt *a, const struct gt_sched_node *node)
{
    size_t n = 0;
    for (const struct gt_sched_task *t = node->task_head; t; t = t->node_next) {
        const struct gt_sched_job *v = t->job;
        if (t->group->req.gpus > 0 && !t->evicting && v != a->job &&
            (!a->preempt ||
             (v->dept == a->job->dept
                  ? v->priority < a->job->priority || (a->rank && v->priority == a->job->priority)
                  : a->reclaim))) {
            n += t->n_gpus;
        }
    }
    return n;
}

/* The cheapest victim set on node for a task asking req; n chosen into
 * *n_out (a prefix of cands, sorted), cost into *cost_out. false if none. */
static bool node_victims(const struct attempt *a, const struct gt_sched_node *node,
                         const struct gt_sched_task_req *req, struct cand **cands, size_t *cap,
                         size_t *n_out, struct cost *cost_out)
{
    size_t k = (size_t)req->gpus, usable = 0, healthy = 0, n = 0;
    for (size_t i = 0; i < node->n_gpus; i++) {
        const struct gt_sched_gpu *g = &node->gpus[i];
        healthy += g->healthy;
        usable += gt_sched_gpu_avail(g, a->job);
    }
    if (healthy < k || req->cpu_milli > node->cpu_milli_alloc ||
        req->memory_bytes > node->memory_bytes_alloc || usable + may_free(a, node) < k) {
        return false;
    }
    for (const struct gt_sched_task *t = node->task_head; t; t = t->node_next) {
        size_t j = 0;
        while (j < n && (*cands)[j].job != t->job) {
            j++;
        }
        if (j == n) {
            if (!eligible(a, t->job)) {
                continue;
            }
            GT_VEC_RESERVE(*cands, *cap, n + 1, 16);
            (*cands)[n++] = (struct cand){.job = t->job};
        }
        struct cand *c = &(*cands)[j];
        c->cpu_here += t->group->req.cpu_milli;
        c->mem_here += t->group->req.memory_bytes;
        for (size_t g = 0; g < t->n_gpus; g++) {
            const struct gt_sched_gpu *gpu = gt_sched_node_gpu(node, t->gpus[g].index);
            /* A GPU frees only if whole (a shared one may keep others) and
             * is usable by the job once free. */
            c->gpus_here += t->gpus[g].milli == 1000 && gpu->healthy &&
                            (!gpu->reserved_by || gpu->reserved_by == a->job);
        }
    }
    for (size_t j = 0; j < n; j++) {
        cand_fill(&(*cands)[j], a);
    }
    if (n > 1) {
        qsort_r(*cands, n, sizeof(**cands), cand_sort_cmp, (void *)a);
    }
    int64_t cpu_free = node->cpu_milli_alloc - node->cpu_milli_used;
    int64_t mem_free = node->memory_bytes_alloc - node->memory_bytes_used;
    struct cost total = {INT64_MIN, 0, 0};
    size_t used = 0;
    while (usable < k || cpu_free < req->cpu_milli || mem_free < req->memory_bytes) {
        if (used == n) {
            return false;
        }
        const struct cand *c = &(*cands)[used++];
        usable += c->gpus_here;
        cpu_free += c->cpu_here;
        mem_free += c->mem_here;
        struct cost cc = cand_cost(a, c);
        total.a = cc.a > total.a ? cc.a : total.a;
        if (a->rank) {
            /* the set's cost is its smallest rank, negated */
            total.b = used == 1 || cc.b > total.b ? cc.b : total.b;
        } else {
            total.b = cc.b > INT64_MAX - total.b ? INT64_MAX : total.b + cc.b;
        }
        total.c = cc.c > INT64_MAX - total.c ? INT64_MAX : total.c + cc.c;
    }
    *n_out = used;
    *cost_out = total;
    return used > 0;
}

/* Unhold every task victim holds, remembering it. */
static void take_victim(struct attempt *a, struct gt_sched_job *victim)
{
    GT_VEC_RESERVE(a->victims, a->cap_victims, a->n_victims + 1, 8);
    a->victims[a->n_victims++] = victim;
    for (size_t i = 0; i < victim->n_tasks; i++) {
        struct gt_sched_task *t = &victim->tasks[i];
        if (!t->node) {
            continue;
        }
        GT_VEC_RESERVE(a->saved, a->cap_saved, a->n_saved + 1, 16);
        struct saved *s = &a->saved[a->n_saved++];
        s->task = t;
        s->node = t->node;
        s->n = t->n_gpus;
        s->shares = gt_xcalloc(t->n_gpus, sizeof(*s->shares));
        memcpy(s->shares, t->gpus, t->n_gpus * sizeof(*s->shares));
        gt_sched_task_unhold(t);
    }
}

/* A lower bound on the first cost component of any victim set (the
 * highest victim priority, or the latest deadline end when waiting), from
 * the bands' holding counts; false if no job can be a candidate at all. */
static bool cost_floor(const struct attempt *a, int64_t *floor)
{
    const struct gt_sched_model *m = a->m;
    if (!a->preempt) {
        /* Without deadlines every candidate ends at INT64_MAX. */
        *floor = m->n_deadline_holding > 0 ? INT64_MIN : INT64_MAX;
        return true;
    }
    bool any = false;
    *floor = INT64_MAX;
    for (size_t d = 0; d < m->n_depts; d++) {
        const struct gt_sched_dept *dept = m->depts[d];
        bool own = dept == a->job->dept;
        /* eligible(): other departments only when reclaiming, and only if
         * above their guarantee */
        if (!own && (!a->reclaim || dept->used.v[GT_RES_GPU] < dept->guarantee.v[GT_RES_GPU])) {
            continue;
        }
        for (size_t b = 0; b < dept->n_bands; b++) {
            const struct gt_sched_band *band = &dept->bands[b];
            if (band->n_holding > 0 && (!own || band->value < a->job->priority ||
                                        (a->rank && band->value == a->job->priority))) {
                any = true;
                *floor = band->value < *floor ? band->value : *floor;
            }
        }
    }
    return any;
}

/* Choose and remove the victims that let task fit; false if none do.
 * The cheapest set over the schedulable nodes, ties to the first node by
 * name. Nodes are visited by avail GPUs, most first: a node lacking d GPUs
 * costs at least (floor, d, 0), since victims hold every GPU they free, so
 * the search stops once that bound exceeds the best set found. It also
 * stops PREEMPT_TIE_NODES nodes after the first set found, so on a large
 * cluster the set is the cheapest among the nodes missing the fewest GPUs
 * rather than over all of them, and it gives up after PREEMPT_MAX_NODES
 * (exact on clusters of up to PREEMPT_TIE_NODES nodes). */
static bool free_room(struct attempt *a, const struct gt_sched_task *task)
{
    int64_t floor;
    if (!cost_floor(a, &floor)) {
        return false;
    }
    const struct gt_sched_buckets *b = &a->m->idx[GT_SCHED_IDX_AVAIL];
    int64_t k = task->group->req.gpus;
    struct cand *cands = NULL;
    size_t cap = 0, best_n = 0;
    struct cost best_cost = {0};
    struct gt_sched_node *best = NULL;
    struct gt_sched_job **best_jobs = NULL;
    size_t window = PREEMPT_TIE_NODES, visited = 0;
    for (int32_t key = gt_sched_idx_last(b, GT_SCHED_N_BUCKETS - 1); key >= 0 && window > 0;
         key = key > 0 ? gt_sched_idx_last(b, (size_t)key - 1) : -1) {
        /* (by rank the second component is not GPUs: no bound) */
        struct cost bound = {floor, a->rank ? INT64_MIN : k > key ? k - key : 0, 0};
        if (best && cost_cmp(&bound, &best_cost) > 0) {
            break;
        }
        for (struct gt_sched_node *node = b->head[key]; node && window > 0;
             node = node->link[GT_SCHED_IDX_AVAIL].next) {
            size_t n;
            struct cost c;
            window -= best != NULL;
            if (++visited > PREEMPT_MAX_NODES) {
                window = 0;
                break;
            }
            if (!node->task_head || !gt_sched_marks_admit(&node->marks, &task->group->where) ||
                !node_victims(a, node, &task->group->req, &cands, &cap, &n, &c)) {
                continue;
            }
            int r = best ? cost_cmp(&c, &best_cost) : -1;
            if (r < 0 || (r == 0 && strcmp(node->name, best->name) < 0)) {
                best = node;
                best_cost = c;
                best_n = n;
                best_jobs = gt_xrealloc(best_jobs, n * sizeof(*best_jobs));
                for (size_t j = 0; j < n; j++) {
                    best_jobs[j] = cands[j].job;
                }
            }
        }
    }
    for (size_t j = 0; best && j < best_n; j++) {
        take_victim(a, best_jobs[j]);
    }
    free(best_jobs);
    free(cands);
    return best != NULL;
}

bool gt_sched_quota_may_free(const struct gt_sched_model *m, const struct gt_sched_job *job,
                             const struct gt_resvec *gang, bool by_rank)
{
    const struct gt_sched_dept *dept = job->dept;
    struct gt_resvec bound = {0};
    bool any = false;
    for (size_t b = 0; b < dept->n_bands; b++) {
        const struct gt_sched_band *band = &dept->bands[b];
        if (band->n_holding > 0 &&
            (band->value < job->priority || (by_rank && band->value == job->priority))) {
            any = true;
            GT_ASSERT(gt_sched_res_add(&bound, &band->held) == 0);
        }
    }
    return any && gt_sched_admit(m, dept, gang, &bound, NULL);
}

/* The use of cands[0..k) but skip and those put back (job NULL). */
static struct gt_resvec kept_use(const struct cand *cands, size_t k, size_t skip)
{
    struct gt_resvec sum = {0};
    for (size_t i = 0; i < k; i++) {
        if (i != skip && cands[i].job) {
            GT_ASSERT(gt_sched_res_add(&sum, &cands[i].use) == 0);
        }
    }
    return sum;
}

/* Take the cheapest minimal set of a's department's candidates whose exit
 * lets gang be admitted; false (nothing taken) if all of them would not. */
static bool quota_victims(struct attempt *a, const struct gt_resvec *gang)
{
    struct gt_sched_model *m = a->m;
    const struct gt_sched_dept *dept = a->job->dept;
    struct cand *cands = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < m->n_jobs; i++) {
        struct gt_sched_job *v = m->jobs[i];
        if (v->dept != dept || !eligible(a, v)) {
            continue;
        }
        GT_VEC_RESERVE(cands, cap, n + 1, 16);
        cands[n] = (struct cand){.job = v};
        cand_fill(&cands[n++], a);
    }
    if (n > 1) {
        qsort_r(cands, n, sizeof(*cands), cand_sort_cmp, a);
    }
    struct gt_resvec freed = {0};
    size_t k = 0;
    while (!gt_sched_admit(m, dept, gang, &freed, NULL)) {
        if (k == n) {
            free(cands);
            return false;
        }
        GT_ASSERT(gt_sched_res_add(&freed, &cands[k++].use) == 0);
    }
    for (size_t i = k > 0 ? k - 1 : 0; i-- > 0;) {
        struct gt_resvec without = kept_use(cands, k, i);
        if (gt_sched_admit(m, dept, gang, &without, NULL)) {
            cands[i].job = NULL;
        }
    }
    for (size_t i = 0; i < k; i++) {
        if (cands[i].job) {
            take_victim(a, cands[i].job);
        }
    }
    free(cands);
    return true;
}

/* Record job's reservation on the GPUs its simulated tasks hold. */
static void reserve(struct attempt *a, struct gt_sched_task **tasks, size_t n_tasks)
{
    struct gt_sched_resv *r = gt_xcalloc(1, sizeof(*r));
    size_t cap_node = 0, cap_gpu = 0;
    for (size_t i = 0; i < n_tasks; i++) {
        const struct gt_sched_task *t = tasks[i];
        for (size_t g = 0; t->group->req.gpus > 0 && g < t->n_gpus; g++) {
            GT_VEC_RESERVE(r->node, cap_node, r->n + 1, 8);
            GT_VEC_RESERVE(r->gpu_index, cap_gpu, r->n + 1, 8);
            r->node[r->n] = t->node;
            r->gpu_index[r->n++] = t->gpus[g].index;
        }
    }
    /* The tasks waited for are unheld by now: their saved copies count. */
    r->due_ms = a->now_ms;
    for (size_t i = 0; i < a->n_saved; i++) {
        int64_t end = task_end_ms(a, a->saved[i].task);
        r->due_ms = end > r->due_ms ? end : r->due_ms;
    }
    r->preempted = a->preempt;
    r->learned = !a->preempt;
    /* A backfill reservation is remade every cycle: its due time never
     * moves later than the first one's, so jobs it lends to cannot push its
     * job's start back (EASY backfill's guarantee, on estimates). */
    if (r->learned) {
        if (a->job->backfill_due_ms > 0 && a->job->backfill_due_ms < r->due_ms) {
            r->due_ms = a->job->backfill_due_ms;
        } else if (a->job->backfill_due_ms == 0 && r->due_ms != INT64_MAX) {
            a->job->backfill_due_ms = r->due_ms;
        }
    }
    a->job->resv = r;
}

/* Why victim is preempted for a's job (taken by the caller), and its kind. */
static char *victim_reason(const struct attempt *a, const struct gt_sched_job *victim,
                           const struct gt_sched_policy *policy, enum gt_sched_preempt_kind *kind)
{
    *kind = victim->dept != a->job->dept          ? GT_SCHED_PREEMPT_RECLAIM
            : victim->priority < a->job->priority ? GT_SCHED_PREEMPT_PRIORITY
                                                  : GT_SCHED_PREEMPT_POLICY;
    if (victim->dept != a->job->dept) {
        return gt_xasprintf("reclaimed: department %s needs its guarantee for job %s; "
                            "department %s is above its own",
                            a->job->dept->name, a->job->id, victim->dept->name);
    }
    if (victim->priority < a->job->priority) {
        return gt_xasprintf("preempted by job %s (priority %d over %d, policy %s)", a->job->id,
                            (int)a->job->priority, (int)victim->priority, policy->name);
    }
    return gt_xasprintf("preempted by job %s (%s %lld, under its %lld, policy %s)", a->job->id,
                        policy->rank_what, (long long)a->own_rank, (long long)a->rank(victim),
                        policy->name);
}

static void add_preempts(struct attempt *a, const struct gt_sched_policy *policy,
                         struct gt_sched_decisions *out)
{
    for (size_t v = 0; v < a->n_victims; v++) {
        struct gt_sched_job *victim = a->victims[v];
        for (size_t i = 0; i < victim->n_tasks; i++) {
            struct gt_sched_task *t = &victim->tasks[i];
            if (!t->node) {
                continue;
            }
            t->evicting = true;
            victim->dept->n_evicting++;
            enum gt_sched_preempt_kind kind;
            char *why = victim_reason(a, victim, policy, &kind);
            gt_sched_decisions_add_preempt(out, t, kind, why);
        }
    }
}

bool gt_sched_reserve_for(struct gt_sched_model *m, struct gt_sched_job *job,
                          struct gt_sched_task **tasks, size_t need, enum gt_sched_resv_mode mode,
                          const struct gt_sched_policy *policy, int64_t now_ms,
                          struct gt_sched_decisions *out, size_t *n_victims)
{
    gt_sched_resv_drop(job, m);
    bool preempt = mode != GT_SCHED_RESV_WAIT;
    struct attempt a = {.m = m,
                        .job = job,
                        .preempt = preempt,
                        .rank = preempt ? policy->rank : NULL,
                        .own_rank = preempt && policy->rank ? policy->rank(job) : 0,
                        .scratch_loss_pct = policy->scratch_loss_pct,
                        .now_ms = now_ms};
    struct gt_resvec gang = {0};
    for (size_t i = 0; i < need; i++) {
        /* bounded: job_add checked the sum */
        GT_ASSERT(gt_sched_res_add(&gang, &tasks[i]->group->use) == 0);
    }
    bool admitted = mode != GT_SCHED_RESV_QUOTA || quota_victims(&a, &gang);
    /* A reclaim only restores the preemptor's guarantee (once any quota
     * victims are gone). */
    a.reclaim =
        job->dept->used.v[GT_RES_GPU] + gang.v[GT_RES_GPU] <= job->dept->guarantee.v[GT_RES_GPU];
    size_t placed = 0;
    struct gt_sched_pick *pick = gt_xcalloc(1, sizeof(*pick));
    for (; admitted && placed < need; placed++) {
        const struct gt_sched_task *t = tasks[placed];
        if (!policy->place(m, t, now_ms, pick) &&
            (!free_room(&a, t) || !policy->place(m, t, now_ms, pick))) {
            break;
        }
        gt_sched_task_hold(tasks[placed], pick->node, pick->shares, pick->n);
    }
    free(pick);
    bool ok = admitted && placed == need && a.n_victims > 0;
    if (ok) {
        reserve(&a, tasks, need);
    }
    while (placed-- > 0) {
        gt_sched_task_unhold(tasks[placed]);
    }
    while (a.n_saved-- > 0) {
        struct saved *s = &a.saved[a.n_saved];
        gt_sched_task_hold(s->task, s->node, s->shares, s->n);
        free(s->shares);
    }
    if (ok) {
        struct gt_sched_resv *r = job->resv;
        for (size_t i = 0; i < r->n; i++) {
            gt_sched_node_gpu(r->node[i], r->gpu_index[i])->reserved_by = job;
        }
        for (size_t i = 0; i < r->n; i++) {
            if (i == 0 || r->node[i] != r->node[i - 1]) {
                gt_sched_node_reindex(r->node[i], false);
            }
        }
        GT_VEC_RESERVE(m->resv, m->cap_resv, m->n_resv + 1, 8);
        m->resv[m->n_resv++] = job;
        if (preempt) {
            add_preempts(&a, policy, out);
        }
        gt_sched_decisions_add_reserve(out, job);
    }
    if (n_victims) {
        *n_victims = ok ? a.n_victims : 0;
    }
    free(a.saved);
    free(a.victims);
    return ok;
}
