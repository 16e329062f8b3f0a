/*
 * The replay engine: an event-driven virtual clock over one scheduler model
 * per cluster.
 *
 * Events, in time order, ties broken by kind (a finish frees GPUs before an
 * arrival at the same second, and both come before that second's cycle):
 *   finish   a running job's last second of work ends: its tasks exit and
 *            the job leaves the model;
 *   arrival  a job enters the model (gt_sched_job_add) and waits;
 *   cycle    gt_sched_cycle at a multiple of cycle_interval_s, run only after
 *            something changed (or, for orders by attained service, every
 *            recheck_interval_s while jobs wait), whose binds start jobs and
 *            whose preemptions stop them (their tasks exit and requeue);
 *   sample   the queue length, hourly.
 * Idle stretches cost nothing: the clock jumps to the next event.
 *
 * A job runs as a gang of tasks of equal GPUs on whole nodes where it can
 * (at most gpus_per_node GPUs per task). Its work (duration_s) is known only
 * here; a restart after preemption first loses restart_overhead_s, then
 * resumes where it stopped (checkpointing) or, for "-restart" rows, from
 * scratch. Finish events of a preempted run are recognised by their epoch
 * and ignored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"
#include "sim/sim_int.h"

#define SAMPLE_S 3600
#define HUGE_AMOUNT (INT64_C(1) << 50)

enum ev_kind { EV_FINISH, EV_ARRIVE, EV_CYCLE, EV_SAMPLE };
enum job_state { J_FUTURE, J_WAITING, J_RUNNING, J_DONE };

struct ev {
    int64_t t_s;
    uint32_t kind;
    uint32_t epoch;
    uint32_t idx; /* job (finish) or cluster (cycle) */
};

struct heap {
    struct ev *a;
    size_t n, cap;
};

/* Per trace job. */
struct sjob {
    enum job_state state;
    int32_t cluster;
    int32_t n_tasks, tasks_bound;
    int64_t done_s;         /* work done in earlier runs */
    int64_t run_start_s;    /* current run */
    int64_t overhead_s;     /* lost at the start of the current run */
    int64_t attained_gpu_s; /* GPU-seconds held in earlier runs */
    uint32_t epoch;
    size_t run_pos; /* in its cluster's running list */
};

struct cluster {
    struct gt_sched_model *m;
    int64_t cycle_at; /* -1: none pending */
    size_t n_waiting;
    uint32_t *running; /* job indices */
    size_t n_running;
};

struct engine {
    const struct gt_sim_trace *t;
    const struct gt_sim_config *c;
    const struct gt_sched_policy *policy;
    bool oracle, timed, scratch;
    struct cluster *cl; /* [t->n_vcs]; m NULL for VCs without jobs */
    struct sjob *jobs;
    struct heap h;
    struct gt_sim_run *r;
    struct gt_sched_decisions dec;
    size_t n_done;
    bool violation_logged;
};

/* Orders the simulator knows: which see durations (oracle) and which order
 * by attained service, so waiting jobs need a cycle now and then even when
 * nothing arrives or ends (timed). Unknown orders count as timed. */
static const struct {
    const char *name;
    bool oracle, timed;
} orders[] = {
    {"fifo", false, false},    {"sjf", true, false},    {"srtf", true, true},
    {"tiresias", false, true}, {"gantry", false, true}, {"firstfit", false, false},
};

static size_t order_len(const char *policy)
{
    return strcspn(policy, "/");
}

bool gt_sim_policy_is_oracle(const char *policy)
{
    size_t n = order_len(policy);
    for (size_t i = 0; i < GT_ARRAY_LEN(orders); i++) {
        if (strlen(orders[i].name) == n && memcmp(orders[i].name, policy, n) == 0) {
            return orders[i].oracle;
        }
    }
    return false;
}

static bool policy_is_timed(const char *policy)
{
    size_t n = order_len(policy);
    for (size_t i = 0; i < GT_ARRAY_LEN(orders); i++) {
        if (strlen(orders[i].name) == n && memcmp(orders[i].name, policy, n) == 0) {
            return orders[i].timed;
        }
    }
    return true;
}

/* ---- the event heap ---- */

static bool ev_less(const struct ev *a, const struct ev *b)
{
    if (a->t_s != b->t_s) {
        return a->t_s < b->t_s;
    }
    if (a->kind != b->kind) {
        return a->kind < b->kind;
    }
    return a->idx < b->idx;
}

static void heap_push(struct heap *h, struct ev e)
{
    GT_VEC_RESERVE(h->a, h->cap, h->n + 1, 1024);
    size_t i = h->n++;
    while (i > 0 && ev_less(&e, &h->a[(i - 1) / 2])) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = e;
}

static struct ev heap_pop(struct heap *h)
{
    struct ev top = h->a[0], last = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= h->n) {
            break;
        }
        if (k + 1 < h->n && ev_less(&h->a[k + 1], &h->a[k])) {
            k++;
        }
        if (!ev_less(&h->a[k], &last)) {
            break;
        }
        h->a[i] = h->a[k];
        i = k;
    }
    if (h->n > 0) {
        h->a[i] = last;
    }
    return top;
}

/* ---- helpers ---- */

/* GPUs per task of a job of g GPUs: the largest divisor of g that fits on
 * one node, so a gang uses as few nodes as it can. */
static int32_t task_gpus(int32_t g, int32_t per_node)
{
    for (int32_t d = g < per_node ? g : per_node; d > 1; d--) {
        if (g % d == 0) {
            return d;
        }
    }
    return 1;
}

static void task_id(char *buf, size_t len, size_t job, int32_t k)
{
    snprintf(buf, len, "%zu-w-%d", job, k);
}

static void job_id(char *buf, size_t len, size_t job)
{
    snprintf(buf, len, "%zu", job);
}

static void cycle_at(struct engine *e, int32_t ci, int64_t t_s)
{
    struct cluster *cl = &e->cl[ci];
    if (cl->cycle_at >= 0 && cl->cycle_at <= t_s) {
        return;
    }
    cl->cycle_at = t_s;
    heap_push(&e->h, (struct ev){.t_s = t_s, .kind = EV_CYCLE, .idx = (uint32_t)ci});
}

/* Schedule a cycle at the first tick at or after t_s (strictly after if
 * strict: the cycle at t_s has run). */
static void cycle_tick(struct engine *e, int32_t ci, int64_t t_s, bool strict)
{
    int64_t iv = e->c->cycle_interval_s;
    int64_t tick = (t_s / iv) * iv;
    if (tick < t_s || strict) {
        tick += iv;
    }
    cycle_at(e, ci, tick);
}

static void check_model(struct engine *e, int32_t ci)
{
    if (!e->c->check) {
        return;
    }
    struct gt_err err = {0};
    if (gt_sched_model_check(e->cl[ci].m, &err) < 0) {
        e->r->n_violations++;
        if (!e->violation_logged) {
            fprintf(stderr, "gantry-sim: invariant violated (vc %s): %s\n", e->t->vcs[ci].name,
                    err.msg);
            e->violation_logged = true;
        }
    }
}

static void running_add(struct engine *e, size_t j)
{
    struct cluster *cl = &e->cl[e->jobs[j].cluster];
    e->jobs[j].run_pos = cl->n_running;
    cl->running[cl->n_running++] = (uint32_t)j;
}

static void running_del(struct engine *e, size_t j)
{
    struct cluster *cl = &e->cl[e->jobs[j].cluster];
    size_t pos = e->jobs[j].run_pos;
    uint32_t last = cl->running[--cl->n_running];
    cl->running[pos] = last;
    e->jobs[last].run_pos = pos;
}

/* Release every task of job j (exit, requeue or not). */
static int release_tasks(struct engine *e, size_t j, bool requeue, struct gt_err *err)
{
    char id[64];
    for (int32_t k = 0; k < e->jobs[j].n_tasks; k++) {
        task_id(id, sizeof(id), j, k);
        int rc = gt_sched_task_exit(e->cl[e->jobs[j].cluster].m, id, requeue, err);
        if (rc < 0) {
            gt_err_prefix(err, "job %zu (line %u)", j, e->t->jobs[j].line);
            return rc;
        }
    }
    return 0;
}

/* Account for job j's current run ending at now_s. */
static void run_end(struct engine *e, size_t j, int64_t now_s)
{
    struct sjob *sj = &e->jobs[j];
    int64_t held = now_s - sj->run_start_s;
    int32_t gpus = e->t->jobs[j].num_gpu;
    e->r->busy_gpu_s[sj->cluster] += (double)held * gpus;
    sj->attained_gpu_s += held * gpus;
    running_del(e, j);
    sj->epoch++;
}

/* ---- event handlers ---- */

static int on_arrival(struct engine *e, size_t j, struct gt_err *err)
{
    const struct gt_sim_job *tj = &e->t->jobs[j];
    struct sjob *sj = &e->jobs[j];
    const struct gt_sim_vc *vc = &e->t->vcs[tj->vc];
    int32_t per = task_gpus(tj->num_gpu, vc->gpus_per_node);
    char id[32];
    job_id(id, sizeof(id), j);
    struct gt_sched_group_spec group = {
        .name = "w", .replicas = tj->num_gpu / per, .req = {.gpus = per}};
    struct gt_sched_job_spec spec = {
        .id = id,
        .department = "vc",
        .project = "trace",
        .arrival_ms = tj->submit_s * 1000,
        .groups = &group,
        .n_groups = 1,
        /* The one place a duration could reach the scheduler. */
        .runtime_estimate_ms = e->oracle ? tj->duration_s * 1000 : 0,
        .restarts_from_scratch = e->scratch,
    };
    int rc = gt_sched_job_add(e->cl[tj->vc].m, &spec, err);
    if (rc < 0) {
        gt_err_prefix(err, "line %u", tj->line);
        return rc;
    }
    e->r->n_estimates += e->oracle;
    sj->state = J_WAITING;
    sj->n_tasks = group.replicas;
    e->cl[tj->vc].n_waiting++;
    cycle_tick(e, tj->vc, tj->submit_s, false);
    return 0;
}

static int on_finish(struct engine *e, size_t j, int64_t now_s, struct gt_err *err)
{
    struct sjob *sj = &e->jobs[j];
    int rc = release_tasks(e, j, false, err);
    char id[32];
    job_id(id, sizeof(id), j);
    if (rc < 0 || (rc = gt_sched_job_remove(e->cl[sj->cluster].m, id, err)) < 0) {
        return rc;
    }
    run_end(e, j, now_s);
    sj->state = J_DONE;
    e->r->jobs[j].finish_s = now_s;
    if (now_s > e->r->end_s) {
        e->r->end_s = now_s;
    }
    e->n_done++;
    cycle_tick(e, sj->cluster, now_s, false);
    return 0;
}

static void job_start(struct engine *e, size_t j, int64_t now_s)
{
    struct sjob *sj = &e->jobs[j];
    struct gt_sim_outcome *o = &e->r->jobs[j];
    bool restart = o->start_s >= 0;
    if (!restart) {
        o->start_s = now_s;
    }
    sj->state = J_RUNNING;
    sj->run_start_s = now_s;
    sj->overhead_s = restart ? e->c->restart_overhead_s : 0;
    e->cl[sj->cluster].n_waiting--;
    running_add(e, j);
    int64_t left = e->t->jobs[j].duration_s - sj->done_s;
    heap_push(&e->h, (struct ev){.t_s = now_s + sj->overhead_s + left,
                                 .kind = EV_FINISH,
                                 .epoch = sj->epoch,
                                 .idx = (uint32_t)j});
}

static int preempt(struct engine *e, size_t j, int64_t now_s, struct gt_err *err)
{
    struct sjob *sj = &e->jobs[j];
    int rc = release_tasks(e, j, true, err);
    if (rc < 0) {
        return rc;
    }
    int64_t worked = now_s - sj->run_start_s - sj->overhead_s;
    sj->done_s = e->scratch ? 0 : sj->done_s + (worked > 0 ? worked : 0);
    run_end(e, j, now_s);
    sj->state = J_WAITING;
    sj->tasks_bound = 0;
    e->cl[sj->cluster].n_waiting++;
    e->r->jobs[j].preemptions++;
    e->r->n_preemptions++;
    return 0;
}

/* The job a task id "<job>-w-<k>" belongs to. */
static size_t task_job(const char *id)
{
    return (size_t)strtoull(id, NULL, 10);
}

static int on_cycle(struct engine *e, int32_t ci, int64_t now_s, struct gt_err *err)
{
    struct cluster *cl = &e->cl[ci];
    cl->cycle_at = -1;
    if (cl->n_waiting == 0) {
        return 0;
    }
    char id[32];
    for (size_t i = 0; e->timed && i < cl->n_running; i++) {
        size_t j = cl->running[i];
        const struct sjob *sj = &e->jobs[j];
        int64_t att = sj->attained_gpu_s + (now_s - sj->run_start_s) * e->t->jobs[j].num_gpu;
        job_id(id, sizeof(id), j);
        int rc = gt_sched_job_set_attained(cl->m, id, att * 1000, err);
        if (rc < 0) {
            return rc;
        }
    }
    gt_sched_cycle(cl->m, now_s * 1000, e->policy, &e->dec);
    e->r->n_cycles++;
    for (size_t i = 0; i < e->dec.n_binds; i++) {
        const char *tid = e->dec.binds[i].task_id;
        size_t j = task_job(tid);
        GT_ASSERT(j < e->t->n_jobs && e->jobs[j].state == J_WAITING);
        int rc = gt_sched_task_set_state(cl->m, tid, GT_SCHED_TASK_RUNNING, err);
        if (rc < 0) {
            return rc;
        }
        if (++e->jobs[j].tasks_bound == e->jobs[j].n_tasks) {
            job_start(e, j, now_s);
        }
    }
    for (size_t i = 0; i < e->dec.n_preempts; i++) {
        size_t j = task_job(e->dec.preempts[i].task_id);
        GT_ASSERT(j < e->t->n_jobs);
        if (e->jobs[j].state == J_RUNNING) {
            int rc = preempt(e, j, now_s, err);
            if (rc < 0) {
                return rc;
            }
        }
    }
    if (e->dec.n_preempts > 0) {
        cycle_tick(e, ci, now_s, true);
    } else if (e->timed && cl->n_waiting > 0 && cl->n_running > 0) {
        cycle_at(e, ci, now_s + e->c->recheck_interval_s);
    }
    return 0;
}

/* ---- set-up ---- */

static int cluster_init(struct engine *e, int32_t ci, size_t n_jobs, struct gt_err *err)
{
    const struct gt_sim_vc *vc = &e->t->vcs[ci];
    struct cluster *cl = &e->cl[ci];
    cl->m = gt_sched_model_new();
    cl->cycle_at = -1;
    cl->running = gt_xcalloc(n_jobs ? n_jobs : 1, sizeof(*cl->running));
    /* The VC's GPUs are its only limit. A quota of exactly those GPUs would
     * refuse a job at admission whenever the VC is full, and a job held back
     * by quota neither preempts nor reserves: srtf could never preempt, nor
     * gantry reserve for its head job. */
    struct gt_sched_res quota = {.cpu_milli = HUGE_AMOUNT,
                                 .memory_bytes = HUGE_AMOUNT,
                                 .storage_bytes = HUGE_AMOUNT,
                                 .gpu_milli = HUGE_AMOUNT};
    int rc = gt_sched_department_set(cl->m, "vc", &quota, &quota, err);
    struct gt_sched_gpu_spec *g = gt_xcalloc((size_t)vc->gpus_per_node, sizeof(*g));
    for (int32_t i = 0; i < vc->gpus_per_node; i++) {
        g[i] = (struct gt_sched_gpu_spec){.index = i, .healthy = true};
    }
    for (int32_t n = 0; rc == 0 && n < vc->nodes; n++) {
        char name[32];
        snprintf(name, sizeof(name), "node-%05d", n);
        struct gt_sched_node_spec spec = {.name = name,
                                          .cpu_milli = HUGE_AMOUNT,
                                          .memory_bytes = HUGE_AMOUNT,
                                          .ready = true,
                                          .gpus = g,
                                          .n_gpus = (size_t)vc->gpus_per_node};
        rc = gt_sched_node_add(cl->m, &spec, err);
    }
    free(g);
    if (rc < 0) {
        gt_err_prefix(err, "vc %s", vc->name);
    }
    return rc;
}

static void engine_fini(struct engine *e)
{
    for (size_t i = 0; e->cl && i < e->t->n_vcs; i++) {
        gt_sched_model_free(e->cl[i].m);
        free(e->cl[i].running);
    }
    free(e->cl);
    free(e->jobs);
    free(e->h.a);
    gt_sched_decisions_fini(&e->dec);
}

void gt_sim_run_init(struct gt_sim_run *r)
{
    memset(r, 0, sizeof(*r));
}

void gt_sim_run_fini(struct gt_sim_run *r)
{
    free(r->label);
    free(r->jobs);
    free(r->busy_gpu_s);
    free(r->samples);
    memset(r, 0, sizeof(*r));
}

static void sample(struct engine *e, int64_t now_s)
{
    struct gt_sim_run *r = e->r;
    GT_VEC_RESERVE(r->samples, r->cap_samples, r->n_samples + 1, 256);
    int64_t waiting = 0;
    for (size_t i = 0; i < e->t->n_vcs; i++) {
        waiting += (int64_t)e->cl[i].n_waiting;
    }
    r->samples[r->n_samples++] = (struct gt_sim_sample){.t_s = now_s, .waiting = waiting};
    if (e->n_done < e->t->n_jobs) {
        heap_push(&e->h, (struct ev){.t_s = now_s + SAMPLE_S, .kind = EV_SAMPLE});
    }
}

static int run_events(struct engine *e, struct gt_err *err)
{
    const struct gt_sim_trace *t = e->t;
    size_t next = 0;
    int rc = 0;
    if (t->n_jobs > 0) {
        heap_push(&e->h, (struct ev){.t_s = t->jobs[0].submit_s, .kind = EV_SAMPLE});
    }
    while (rc == 0 && (next < t->n_jobs || e->h.n > 0)) {
        struct ev arr = {.t_s = next < t->n_jobs ? t->jobs[next].submit_s : 0,
                         .kind = EV_ARRIVE,
                         .idx = (uint32_t)next};
        if (next < t->n_jobs && (e->h.n == 0 || ev_less(&arr, &e->h.a[0]))) {
            rc = on_arrival(e, next, err);
            check_model(e, t->jobs[next++].vc);
            continue;
        }
        struct ev ev = heap_pop(&e->h);
        switch (ev.kind) {
        case EV_FINISH:
            if (e->jobs[ev.idx].state == J_RUNNING && e->jobs[ev.idx].epoch == ev.epoch) {
                rc = on_finish(e, ev.idx, ev.t_s, err);
                check_model(e, e->jobs[ev.idx].cluster);
            }
            break;
        case EV_CYCLE:
            if (e->cl[ev.idx].cycle_at == ev.t_s) {
                rc = on_cycle(e, (int32_t)ev.idx, ev.t_s, err);
                check_model(e, (int32_t)ev.idx);
            }
            break;
        default:
            sample(e, ev.t_s);
        }
    }
    if (rc == 0 && e->n_done < t->n_jobs) {
        rc = gt_err_set(err, GT_EINTERNAL,
                        "%zu jobs never finished: the scheduler left them waiting on an idle "
                        "cluster",
                        t->n_jobs - e->n_done);
    }
    return rc;
}

int gt_sim_replay(const struct gt_sim_trace *t, const char *row, const struct gt_sim_config *c,
                  struct gt_sim_run *r, struct gt_err *err)
{
    size_t rl = strlen(row);
    bool scratch = rl > 8 && strcmp(row + rl - 8, "-restart") == 0;
    char *name = gt_xstrndup(row, scratch ? rl - 8 : rl);
    const struct gt_sched_policy *policy = gt_sched_policy_by_name(name);
    if (!policy) {
        int rc = gt_err_set(err, GT_ENOTFOUND, "unknown policy \"%s\"", name);
        free(name);
        return rc;
    }
    struct engine e = {.t = t,
                       .c = c,
                       .policy = policy,
                       .oracle = gt_sim_policy_is_oracle(name),
                       .timed = policy_is_timed(name),
                       .scratch = scratch,
                       .r = r};
    free(name);
    gt_sched_decisions_init(&e.dec);
    r->label = gt_xstrdup(row);
    r->n_jobs = t->n_jobs;
    r->jobs = gt_xcalloc(t->n_jobs ? t->n_jobs : 1, sizeof(*r->jobs));
    r->n_vcs = t->n_vcs;
    r->busy_gpu_s = gt_xcalloc(t->n_vcs ? t->n_vcs : 1, sizeof(*r->busy_gpu_s));
    e.jobs = gt_xcalloc(t->n_jobs ? t->n_jobs : 1, sizeof(*e.jobs));
    e.cl = gt_xcalloc(t->n_vcs ? t->n_vcs : 1, sizeof(*e.cl));
    size_t *per_vc = gt_xcalloc(t->n_vcs ? t->n_vcs : 1, sizeof(*per_vc));
    int rc = 0;
    for (size_t j = 0; j < t->n_jobs; j++) {
        const struct gt_sim_job *tj = &t->jobs[j];
        if (tj->vc < 0 || (size_t)tj->vc >= t->n_vcs || tj->num_gpu <= 0 ||
            tj->num_gpu > (int64_t)t->vcs[tj->vc].nodes * t->vcs[tj->vc].gpus_per_node ||
            (j > 0 && tj->submit_s < t->jobs[j - 1].submit_s)) {
            rc = gt_err_set(err, GT_EINVAL, "line %u: job not selected for replay", tj->line);
            break;
        }
        per_vc[tj->vc]++;
        e.jobs[j].cluster = tj->vc;
        r->jobs[j] = (struct gt_sim_outcome){.submit_s = tj->submit_s,
                                             .start_s = -1,
                                             .finish_s = -1,
                                             .num_gpu = tj->num_gpu,
                                             .vc = tj->vc};
    }
    for (size_t i = 0; rc == 0 && i < t->n_vcs; i++) {
        if (per_vc[i] > 0) {
            rc = cluster_init(&e, (int32_t)i, per_vc[i], err);
        }
    }
    free(per_vc);
    if (rc == 0) {
        rc = run_events(&e, err);
    }
    engine_fini(&e);
    return rc;
}
