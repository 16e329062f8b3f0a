/*
 * Scheduler benchmark (issue 4, point 3): one thread, no store. 8-GPU nodes
 * in two PCIe groups of four, pre-filled to 70 % with randomly placed tasks
 * of a Philly-like mix; 100,000 pending tasks in 3 departments and 3
 * priorities, topped up by arrivals so 100,000 stay pending; 1 % of running
 * tasks end per cycle. Timed: the 200 cycles after the first; tasks/s =
 * tasks bound / (wall time of those cycles plus their model updates).
 * With preemption, 10 % of arrivals are of a higher priority class that
 * may preempt; their victims exit (requeued) before the next cycle.
 *
 * Usage: sched_bench NODES PREEMPT(0|1) SEED; prints one line:
 * tasks_per_s cycle_ms_p99 frag_pct mem_kb_per_1k_pending binds preempts
 *
 * sched_bench NODES 0 SEED POLICY PENDING_JOBS measures instead what one
 * cycle costs when little changed (issue 22): PENDING_JOBS jobs wait on a
 * full cluster and each of COST_CYCLES cycles follows one arrival or one
 * completion; prints the p99 cycle time in ms, wall-clock and the
 * thread's CPU time (which other processes on a shared machine do not
 * inflate).
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/sched.h"

#define GIB (1024LL * 1024 * 1024)
#define PENDING_TASKS 100000
#ifndef TIMED_CYCLES
#define TIMED_CYCLES 200
#endif
#define COST_CYCLES 1000

struct job {
    int n_tasks, gpus;
    int slot; /* in running[] while running */
    bool live, running;
};

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

static struct job *jobs;
static size_t n_jobs, cap_jobs;
static int *running; /* indices of running jobs */
static size_t n_running, running_tasks, pending_tasks;
static size_t n_done; /* jobs ended for good */

/* A Philly-like job: mostly 1 GPU; some 2, 4, 8 and 16/32-GPU gangs of
 * 8-GPU tasks. */
static void add_job(struct gt_sched_model *m, int64_t now, bool preempt)
{
    int r = (int)(rnd() % 100), tasks = 1, gpus = 1;
    if (r >= 70 && r < 80) {
        gpus = 2;
    } else if (r >= 80 && r < 90) {
        gpus = 4;
    } else if (r >= 90 && r < 96) {
        gpus = 8;
    } else if (r >= 96 && r < 98) {
        gpus = 8, tasks = 2;
    } else if (r >= 98) {
        gpus = 8, tasks = 4;
    }
    if (n_jobs == cap_jobs) {
        cap_jobs = cap_jobs ? cap_jobs * 2 : 1024;
        jobs = gt_xrealloc(jobs, cap_jobs * sizeof(*jobs));
    }
    static const char *const depts[] = {"cv", "nlp", "rl"};
    int prio = (int)(rnd() % 100);
    const char *cls = preempt && prio < 10 ? "top" : prio < 55 ? "mid" : "low";
    char id[32];
    snprintf(id, sizeof(id), "j%zu", n_jobs);
    struct gt_sched_group_spec g = {
        .name = "w",
        .replicas = tasks,
        .req = {.cpu_milli = 4000, .memory_bytes = 16 * GIB, .gpus = gpus}};
    struct gt_sched_job_spec spec = {.id = id,
                                     .department = depts[rnd() % 3],
                                     .project = "bench",
                                     .priority_class = cls,
                                     .arrival_ms = now,
                                     .groups = &g,
                                     .n_groups = 1};
    if (gt_sched_job_add(m, &spec, NULL) != 0) {
        abort();
    }
    jobs[n_jobs++] = (struct job){.n_tasks = tasks, .gpus = gpus, .live = true};
    pending_tasks += (size_t)tasks;
}

static size_t job_of(const char *task_id)
{
    return (size_t)strtoul(task_id + 1, NULL, 10);
}

static void running_add(size_t idx)
{
    jobs[idx].running = true;
    jobs[idx].slot = (int)n_running;
    running[n_running++] = (int)idx;
}

static void running_del(size_t idx)
{
    int slot = jobs[idx].slot;
    jobs[idx].running = false;
    running[slot] = running[--n_running];
    jobs[running[slot]].slot = slot;
}

/* Apply a cycle's decisions to the bench's own bookkeeping. */
static void note_binds(const struct gt_sched_decisions *d)
{
    for (size_t i = 0; i < d->n_binds; i++) {
        size_t idx = job_of(d->binds[i].task_id);
        pending_tasks--;
        running_tasks++;
        if (!jobs[idx].running) {
            running_add(idx);
        }
    }
}

static void end_job(struct gt_sched_model *m, size_t slot, bool requeue)
{
    size_t idx = (size_t)running[slot];
    struct job *j = &jobs[idx];
    char id[32], task[48];
    snprintf(id, sizeof(id), "j%zu", idx);
    for (int t = 0; t < j->n_tasks; t++) {
        snprintf(task, sizeof(task), "j%zu-w-%d", idx, t);
        if (gt_sched_task_exit(m, task, requeue, NULL) == 0) {
            running_tasks--;
            pending_tasks += requeue;
        }
    }
    if (!requeue) {
        if (gt_sched_job_remove(m, id, NULL) != 0) {
            abort();
        }
        j->live = false;
        n_done++;
    }
    running_del(idx);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A model of n_nodes 8-GPU nodes in three departments and three priority
 * classes (the top one preempts if preempt), pre-filled to 70 % with
 * randomly placed running tasks. */
static struct gt_sched_model *setup(int n_nodes, bool preempt)
{
    struct gt_sched_model *m = gt_sched_model_new();
    gt_sched_model_set_seed(m, rng_state);
    enum gt_sched_preemption pol = preempt ? GT_SCHED_PREEMPT_LOWER : GT_SCHED_PREEMPT_NEVER;
    gt_sched_priority_class_set(m, "low", 10, pol, true, NULL);
    gt_sched_priority_class_set(m, "mid", 50, pol, false, NULL);
    gt_sched_priority_class_set(m, "top", 100, pol, false, NULL);
    int64_t total_milli = (int64_t)n_nodes * 8000;
    struct gt_sched_res g = {.cpu_milli = (int64_t)n_nodes * 128000 / 3,
                             .memory_bytes = (int64_t)n_nodes * 1024 * GIB / 3,
                             .gpu_milli = total_milli / 3};
    struct gt_sched_res l = {.cpu_milli = (int64_t)n_nodes * 128000,
                             .memory_bytes = (int64_t)n_nodes * 1024 * GIB,
                             .gpu_milli = total_milli};
    gt_sched_department_set(m, "cv", &g, &l, NULL);
    gt_sched_department_set(m, "nlp", &g, &l, NULL);
    gt_sched_department_set(m, "rl", &g, &l, NULL);
    struct gt_sched_gpu_spec gpus[8];
    for (int i = 0; i < 8; i++) {
        gpus[i] =
            (struct gt_sched_gpu_spec){.index = i, .group = i / 4, .numa = i / 4, .healthy = true};
    }
    for (int i = 0; i < n_nodes; i++) {
        char name[32];
        snprintf(name, sizeof(name), "node-%05d", i);
        struct gt_sched_node_spec ns = {.name = name,
                                        .cpu_milli = 128000,
                                        .memory_bytes = 1024 * GIB,
                                        .ready = true,
                                        .gpus = gpus,
                                        .n_gpus = 8};
        gt_sched_node_add(m, &ns, NULL);
    }
    running = gt_xcalloc((size_t)n_nodes * 8 + 1, sizeof(*running));
    /* Prefill to 70 % with randomly placed tasks, bound directly (the
     * bench picks random nodes with room; no cycle, so setup is fast). */
    uint8_t *node_free = gt_xcalloc((size_t)n_nodes, sizeof(*node_free));
    memset(node_free, 0xff, (size_t)n_nodes);
    int64_t now = 0, used_milli = 0;
    while (used_milli < total_milli * 7 / 10) {
        add_job(m, now, false);
        size_t idx = n_jobs - 1;
        struct job *j = &jobs[idx];
        int where[4] = {-1, -1, -1, -1};
        for (int t = 0; t < j->n_tasks; t++) {
            where[t] = -1;
            for (int tries = 0; tries < 64 && where[t] < 0; tries++) {
                int node = (int)(rnd() % (uint64_t)n_nodes);
                bool taken = false;
                for (int u = 0; u < t; u++) {
                    taken = taken || where[u] == node;
                }
                if (!taken && __builtin_popcount(node_free[node]) >= j->gpus) {
                    where[t] = node;
                }
            }
            if (where[t] < 0) {
                break;
            }
        }
        if (where[j->n_tasks - 1] < 0) {
            continue; /* stays pending */
        }
        for (int t = 0; t < j->n_tasks; t++) {
            struct gt_sched_gpu_share sh[8];
            int n = 0;
            for (int gi = 0; gi < 8 && n < j->gpus; gi++) {
                if (node_free[where[t]] & (1u << gi)) {
                    node_free[where[t]] &= (uint8_t) ~(1u << gi);
                    sh[n++] = (struct gt_sched_gpu_share){.index = gi, .milli = 1000};
                }
            }
            char name[32], task[48];
            snprintf(name, sizeof(name), "node-%05d", where[t]);
            snprintf(task, sizeof(task), "j%zu-w-%d", idx, t);
            struct gt_err err = {0};
            if (gt_sched_task_bind(m, task, name, sh, (size_t)n, now, &err) != 0) {
                fprintf(stderr, "prefill: %s\n", err.msg);
                abort();
            }
            pending_tasks--;
            running_tasks++;
            used_milli += (int64_t)j->gpus * 1000;
        }
        running_add(idx);
    }
    free(node_free);
    return m;
}

/* The throughput run: 100,000 pending tasks topped up by arrivals, 1 % of
 * running tasks ending per cycle; prints the usage line's six figures. */
static void throughput(struct gt_sched_model *m, int n_nodes, bool preempt)
{
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    struct gt_sched_cycle_opts opts = {.max_waits = 100};
    int64_t now = 0;
    /* Top up to 100,000 pending, measuring the memory it takes. */
    struct mallinfo2 mi0 = mallinfo2();
    size_t p0 = pending_tasks;
    while (pending_tasks < PENDING_TASKS) {
        add_job(m, now, preempt);
    }
    struct mallinfo2 mi1 = mallinfo2();
    double mem_kb_per_1k =
        (double)(mi1.uordblks - mi0.uordblks) / 1024.0 / ((double)(pending_tasks - p0) / 1000.0);
    const struct gt_sched_policy *gantry = gt_sched_policy_by_name("gantry");
    double cycle_ms[TIMED_CYCLES], busy_s = 0;
    size_t binds = 0, preempts = 0;
    char **evict = NULL;
    size_t n_evict = 0, cap_evict = 0;
    for (int c = 0; c <= TIMED_CYCLES; c++) {
        now += 1000;
        double t0 = now_s();
        /* Model updates: victims exit, 1 % of running tasks end, arrivals. */
        for (size_t i = 0; i < n_evict; i++) {
            if (gt_sched_task_exit(m, evict[i], true, NULL) == 0) {
                size_t idx = job_of(evict[i]);
                running_tasks--;
                pending_tasks++;
                if (jobs[idx].running) {
                    running_del(idx);
                }
            }
            free(evict[i]);
        }
        n_evict = 0;
        size_t to_end = running_tasks / 100, ended = 0;
        while (ended < to_end && n_running > 0) {
            size_t slot = rnd() % n_running;
            ended += (size_t)jobs[running[slot]].n_tasks;
            end_job(m, slot, false);
        }
        while (pending_tasks < PENDING_TASKS) {
            add_job(m, now, preempt);
        }
        double t1 = now_s();
        gt_sched_cycle_ex(m, now, gantry, &opts, &d);
        double t2 = now_s();
        note_binds(&d);
        for (size_t i = 0; i < d.n_preempts; i++) {
            if (n_evict == cap_evict) {
                cap_evict = cap_evict ? cap_evict * 2 : 64;
                evict = gt_xrealloc(evict, cap_evict * sizeof(*evict));
            }
            evict[n_evict++] = gt_xstrdup(d.preempts[i].task_id);
        }
        if (c > 0) {
            cycle_ms[c - 1] = (t2 - t1) * 1000;
            busy_s += t2 - t0;
            binds += d.n_binds;
            preempts += d.n_preempts;
        }
    }
    for (size_t i = 0; i < n_evict; i++) {
        free(evict[i]);
    }
    free(evict);
    qsort(cycle_ms, TIMED_CYCLES, sizeof(double), cmp_double);
    /* Fragmentation: free GPUs on nodes that cannot host an 8-GPU task. */
    size_t free_all = 0, free_frag = 0;
    for (int i = 0; i < n_nodes; i++) {
        char name[32];
        snprintf(name, sizeof(name), "node-%05d", i);
        struct gt_sched_node_info ni;
        gt_sched_node_get(m, name, &ni);
        free_all += ni.n_gpus_free;
        free_frag += ni.n_gpus_free < 8 ? ni.n_gpus_free : 0;
    }
    printf("%.0f %.3f %.1f %.1f %zu %zu\n", (double)binds / busy_s,
           cycle_ms[TIMED_CYCLES * 99 / 100],
           free_all ? 100.0 * (double)free_frag / (double)free_all : 0.0, mem_kb_per_1k, binds,
           preempts);
    gt_sched_decisions_fini(&d);
}

/* The cycle-cost run: arrivals until PENDING jobs wait and no cycle binds
 * any more (the cluster is full), then COST_CYCLES cycles with gantryd's
 * options (every wait counted, changed ones reported), each after one
 * model change: an arrival while fewer than PENDING jobs wait, else the
 * completion of a random running job. Prints the p99 cycle time in ms,
 * wall-clock and thread CPU time. */
static void cycle_cost(struct gt_sched_model *m, const char *policy_name, size_t pending)
{
    const struct gt_sched_policy *policy = gt_sched_policy_by_name(policy_name);
    if (!policy) {
        fprintf(stderr, "sched_bench: unknown policy %s\n", policy_name);
        exit(2);
    }
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    const struct gt_sched_cycle_opts opts = {.max_waits = SIZE_MAX, .changed_waits_only = true};
    int64_t now = 0;
    size_t bound = 1;
    while (bound > 0 || n_jobs - n_done - n_running < pending) {
        while (n_jobs - n_done - n_running < pending) {
            add_job(m, now, false);
        }
        now += 1000;
        gt_sched_cycle_ex(m, now, policy, &opts, &d);
        note_binds(&d);
        bound = d.n_binds;
    }
    double cycle_ms[COST_CYCLES], cpu_ms[COST_CYCLES];
    for (int c = 0; c < COST_CYCLES; c++) {
        now += 1000;
        if (n_jobs - n_done - n_running < pending || n_running == 0) {
            add_job(m, now, false);
        } else {
            end_job(m, rnd() % n_running, false);
        }
        double t0 = now_s(), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        gt_sched_cycle_ex(m, now, policy, &opts, &d);
        cycle_ms[c] = (now_s() - t0) * 1000;
        cpu_ms[c] = (clock_s(CLOCK_THREAD_CPUTIME_ID) - c0) * 1000;
        note_binds(&d);
    }
    qsort(cycle_ms, COST_CYCLES, sizeof(double), cmp_double);
    qsort(cpu_ms, COST_CYCLES, sizeof(double), cmp_double);
    printf("%.3f %.3f\n", cycle_ms[COST_CYCLES * 99 / 100], cpu_ms[COST_CYCLES * 99 / 100]);
    gt_sched_decisions_fini(&d);
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 6) {
        fprintf(stderr, "usage: sched_bench NODES PREEMPT SEED [POLICY PENDING_JOBS]\n");
        return 2;
    }
    int n_nodes = (int)strtol(argv[1], NULL, 10);
    bool preempt = strtol(argv[2], NULL, 10) != 0;
    rng_state = strtoull(argv[3], NULL, 10) * 0x9e3779b97f4a7c15ULL + 1;
    struct gt_sched_model *m = setup(n_nodes, preempt);
    if (argc == 6) {
        cycle_cost(m, argv[4], (size_t)strtoul(argv[5], NULL, 10));
    } else {
        throughput(m, n_nodes, preempt);
    }
    gt_sched_model_free(m);
    free(running);
    free(jobs);
    return 0;
}
