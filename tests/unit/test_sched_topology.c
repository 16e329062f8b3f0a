/*
 * Unit tests for topology constraints (topology.c) and verdicts
 * (verdict.c): required and preferred node, gpu-group (NVLink/PCIe groups)
 * and numa (each GPU's NUMA node) levels, the Inadmissible verdicts and
 * their recomputation when nodes, GPUs or quotas change, and the
 * placement-attempt count that shows an Inadmissible job costs no search.
 * Everything goes through the public API (sched.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/sched.h"

#define GIB (1024LL * 1024 * 1024)
#define MAX_GPUS 16

/* A node of n GPUs, GPU i in NVLink group group[i] and NUMA node numa[i]
 * (NULL: all 0). */
static void node_spec(struct gt_sched_node_spec *spec, struct gt_sched_gpu_spec *gpus,
                      const char *name, int n, const int *group, const int *numa)
{
    for (int i = 0; i < n; i++) {
        gpus[i] = (struct gt_sched_gpu_spec){
            .index = i, .group = group ? group[i] : 0, .numa = numa ? numa[i] : 0, .healthy = true};
    }
    *spec = (struct gt_sched_node_spec){.name = name,
                                        .cpu_milli = 64000,
                                        .memory_bytes = 256 * GIB,
                                        .ready = true,
                                        .gpus = gpus,
                                        .n_gpus = (size_t)n};
}

static void add_node(struct gt_sched_model *m, const char *name, int n, const int *group,
                     const int *numa)
{
    struct gt_sched_gpu_spec gpus[MAX_GPUS];
    struct gt_sched_node_spec spec;
    node_spec(&spec, gpus, name, n, group, numa);
    assert_int_equal(gt_sched_node_add(m, &spec, NULL), 0);
}

static void set_dept(struct gt_sched_model *m, const char *name, int64_t gpu_milli)
{
    struct gt_sched_res q = {
        .cpu_milli = INT64_C(1) << 40, .memory_bytes = INT64_C(1) << 50, .gpu_milli = gpu_milli};
    assert_int_equal(gt_sched_department_set(m, name, &q, &q, NULL), 0);
}

/* A job of `tasks` tasks of `gpus` whole GPUs each in department "d". */
static void add_job(struct gt_sched_model *m, const char *id, int tasks, int64_t gpus,
                    enum gt_sched_topology level, bool required)
{
    struct gt_sched_group_spec g = {
        .name = "worker", .replicas = tasks, .req = {.cpu_milli = 1000, .gpus = gpus}};
    struct gt_sched_job_spec spec = {.id = id,
                                     .department = "d",
                                     .groups = &g,
                                     .n_groups = 1,
                                     .topology = level,
                                     .topology_required = required};
    assert_int_equal(gt_sched_job_add(m, &spec, NULL), 0);
}

/* Bind task id on node to the GPUs listed (whole). */
static void hold(struct gt_sched_model *m, const char *task, const char *node, const int *idx,
                 size_t n)
{
    struct gt_sched_gpu_share sh[MAX_GPUS];
    for (size_t i = 0; i < n; i++) {
        sh[i] = (struct gt_sched_gpu_share){.index = idx[i], .milli = 1000};
    }
    assert_int_equal(gt_sched_task_bind(m, task, node, sh, n, 0, NULL), 0);
}

static void cycle(struct gt_sched_model *m, int64_t now_ms, struct gt_sched_decisions *d)
{
    assert_int_equal(gt_sched_cycle(m, now_ms, gt_sched_policy_by_name("gantry"), d), 0);
    assert_int_equal(gt_sched_model_check(m, NULL), 0);
}

static const struct gt_sched_bind *find_bind(const struct gt_sched_decisions *d, const char *task)
{
    for (size_t i = 0; i < d->n_binds; i++) {
        if (!strcmp(d->binds[i].task_id, task)) {
            return &d->binds[i];
        }
    }
    return NULL;
}

static const struct gt_sched_wait *find_wait(const struct gt_sched_decisions *d, const char *job)
{
    for (size_t i = 0; i < d->n_waits; i++) {
        if (!strcmp(d->waits[i].job_id, job)) {
            return &d->waits[i];
        }
    }
    return NULL;
}

static uint64_t attempts(const struct gt_sched_model *m, const char *job)
{
    struct gt_sched_job_info ji;
    assert_int_equal(gt_sched_job_get(m, job, &ji), 0);
    return ji.placement_attempts;
}

/* 2 nodes x 2 GPUs, one GPU of each held by a one-GPU job. */
static struct gt_sched_model *half_full(void)
{
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 2, NULL, NULL);
    add_node(m, "n2", 2, NULL, NULL);
    set_dept(m, "d", 100000);
    add_job(m, "b1", 1, 1, GT_SCHED_TOPO_NONE, false);
    add_job(m, "b2", 1, 1, GT_SCHED_TOPO_NONE, false);
    hold(m, "b1-worker-0", "n1", (int[]){0}, 1);
    hold(m, "b2-worker-0", "n2", (int[]){0}, 1);
    return m;
}

/* required node: the gang of two waits, naming the level, while each node
 * has one free GPU; it starts on one node once a node has two. */
static void test_required_node(void **state)
{
    (void)state;
    struct gt_sched_model *m = half_full();
    add_job(m, "g", 2, 1, GT_SCHED_TOPO_NODE, true);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    for (int i = 0; i < 3; i++) {
        cycle(m, 10 + i, &d);
        assert_int_equal(d.n_binds, 0);
        assert_int_equal(d.n_preempts, 0);
        const struct gt_sched_wait *w = find_wait(&d, "g");
        assert_non_null(w);
        assert_int_equal(w->reason, GT_SCHED_WAIT_UNSCHEDULABLE);
        assert_non_null(strstr(w->message, "required topology node"));
    }
    assert_int_equal(attempts(m, "g"), 3);
    assert_int_equal(gt_sched_task_exit(m, "b2-worker-0", false, NULL), 0);
    cycle(m, 20, &d);
    assert_int_equal(d.n_binds, 2);
    assert_string_equal(find_bind(&d, "g-worker-0")->node, "n2");
    assert_string_equal(find_bind(&d, "g-worker-1")->node, "n2");
    assert_null(find_wait(&d, "g"));
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* preferred node: the same gang starts at once across the nodes; where a
 * node holds it all, it goes there although best fit alone would split it. */
static void test_preferred_node(void **state)
{
    (void)state;
    struct gt_sched_model *m = half_full();
    add_job(m, "g", 2, 1, GT_SCHED_TOPO_NODE, false);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    cycle(m, 10, &d);
    assert_int_equal(d.n_binds, 2);
    assert_string_not_equal(find_bind(&d, "g-worker-0")->node, find_bind(&d, "g-worker-1")->node);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);

    /* n1: 1 free GPU, n2: 3 free; tasks of 1 GPU each */
    m = gt_sched_model_new();
    add_node(m, "n1", 2, NULL, NULL);
    add_node(m, "n2", 4, NULL, NULL);
    set_dept(m, "d", 100000);
    add_job(m, "b", 1, 1, GT_SCHED_TOPO_NONE, false);
    hold(m, "b-worker-0", "n1", (int[]){0}, 1);
    add_job(m, "plain", 2, 1, GT_SCHED_TOPO_NONE, false);
    gt_sched_decisions_init(&d);
    cycle(m, 10, &d);
    assert_int_equal(d.n_binds, 2);
    assert_string_not_equal(find_bind(&d, "plain-worker-0")->node,
                            find_bind(&d, "plain-worker-1")->node);
    assert_int_equal(gt_sched_task_exit(m, "plain-worker-0", false, NULL), 0);
    assert_int_equal(gt_sched_task_exit(m, "plain-worker-1", false, NULL), 0);
    add_job(m, "packed", 2, 1, GT_SCHED_TOPO_NODE, false);
    cycle(m, 20, &d);
    assert_int_equal(d.n_binds, 2);
    assert_string_equal(find_bind(&d, "packed-worker-0")->node, "n2");
    assert_string_equal(find_bind(&d, "packed-worker-1")->node, "n2");
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* gpu-group: NVLink groups {0,1} and {2,3}; GPUs 1 and 2 held, so 0 and 3
 * are free but in different groups. */
static void test_gpu_group(void **state)
{
    (void)state;
    static const int groups[] = {7, 7, 9, 9};
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 4, groups, NULL);
    set_dept(m, "d", 100000);
    add_job(m, "b", 2, 1, GT_SCHED_TOPO_NONE, false);
    hold(m, "b-worker-0", "n1", (int[]){1}, 1);
    hold(m, "b-worker-1", "n1", (int[]){2}, 1);
    add_job(m, "req", 1, 2, GT_SCHED_TOPO_GPU_GROUP, true);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    cycle(m, 10, &d);
    assert_int_equal(d.n_binds, 0);
    const struct gt_sched_wait *w = find_wait(&d, "req");
    assert_int_equal(w->reason, GT_SCHED_WAIT_UNSCHEDULABLE);
    assert_non_null(strstr(w->message, "required topology gpu-group"));
    assert_non_null(strstr(w->message, "NVLink/PCIe group"));

    /* preferred: it starts across the two groups */
    add_job(m, "pref", 1, 2, GT_SCHED_TOPO_GPU_GROUP, false);
    cycle(m, 20, &d);
    const struct gt_sched_bind *b = find_bind(&d, "pref-worker-0");
    assert_non_null(b);
    assert_int_equal(b->n_gpus, 2);
    assert_int_equal(b->gpus[0].index + b->gpus[1].index, 0 + 3);
    assert_int_equal(gt_sched_task_exit(m, "pref-worker-0", false, NULL), 0);

    /* GPU 1 frees: group {0,1} holds the task */
    assert_int_equal(gt_sched_task_exit(m, "b-worker-0", false, NULL), 0);
    cycle(m, 30, &d);
    b = find_bind(&d, "req-worker-0");
    assert_non_null(b);
    assert_int_equal(b->gpus[0].index, 0);
    assert_int_equal(b->gpus[1].index, 1);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* numa: NUMA node 0 = GPUs 0-3, 1 = GPUs 4-7, all in one NVLink group.
 * With 0, 1 and 4 held, a 3-GPU task fits only NUMA node 1 and a 2-GPU
 * task goes to the smaller domain that holds it (NUMA node 0). */
static void test_numa(void **state)
{
    (void)state;
    static const int numa[] = {0, 0, 0, 0, 1, 1, 1, 1};
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 8, NULL, numa);
    set_dept(m, "d", 100000);
    add_job(m, "b", 3, 1, GT_SCHED_TOPO_NONE, false);
    hold(m, "b-worker-0", "n1", (int[]){0}, 1);
    hold(m, "b-worker-1", "n1", (int[]){1}, 1);
    hold(m, "b-worker-2", "n1", (int[]){4}, 1);
    add_job(m, "three", 1, 3, GT_SCHED_TOPO_NUMA, true);
    add_job(m, "two", 1, 2, GT_SCHED_TOPO_NUMA, true);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    cycle(m, 10, &d);
    assert_int_equal(d.n_binds, 2);
    const struct gt_sched_bind *b = find_bind(&d, "three-worker-0");
    assert_non_null(b);
    for (size_t i = 0; i < b->n_gpus; i++) {
        assert_true(b->gpus[i].index >= 5);
    }
    b = find_bind(&d, "two-worker-0");
    assert_non_null(b);
    assert_int_equal(b->gpus[0].index, 2);
    assert_int_equal(b->gpus[1].index, 3);

    /* 2, 3 and 4 free again: three GPUs, but no NUMA node has three */
    assert_int_equal(gt_sched_task_exit(m, "two-worker-0", false, NULL), 0);
    assert_int_equal(gt_sched_task_exit(m, "b-worker-2", false, NULL), 0);
    add_job(m, "more", 1, 3, GT_SCHED_TOPO_NUMA, true);
    cycle(m, 20, &d);
    const struct gt_sched_wait *w = find_wait(&d, "more");
    assert_non_null(w);
    assert_int_equal(w->reason, GT_SCHED_WAIT_UNSCHEDULABLE);
    assert_non_null(strstr(w->message, "required topology numa"));

    /* a NUMA node of 4 can never hold 5: Inadmissible, and what would fit */
    add_job(m, "five", 1, 5, GT_SCHED_TOPO_NUMA, true);
    cycle(m, 30, &d);
    w = find_wait(&d, "five");
    assert_int_equal(w->reason, GT_SCHED_WAIT_INADMISSIBLE);
    assert_non_null(strstr(w->message, "TopologyUnsatisfiable: required topology numa: a worker "
                                       "task needs 5 GPUs in one NUMA node but the largest on a "
                                       "Ready node has 4; ask for at most 4 GPUs per task"));
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* An Inadmissible job: within one cycle, with what would make it fit; no
 * placement searched however many cycles it waits; it starts once the
 * limit is raised. */
static void test_inadmissible_limit(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 4, NULL, NULL);
    add_node(m, "n2", 4, NULL, NULL);
    set_dept(m, "d", 4000);
    add_job(m, "big", 8, 1, GT_SCHED_TOPO_NONE, false);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    for (int i = 0; i < 100; i++) {
        cycle(m, 1000 * i, &d);
        const struct gt_sched_wait *w = find_wait(&d, "big");
        assert_non_null(w);
        assert_int_equal(w->reason, GT_SCHED_WAIT_INADMISSIBLE);
        assert_string_equal(w->message, "ExceedsDepartmentLimit: the gang of 8 tasks needs "
                                        "nvidia.com/gpu 8 but department d's limit is 4 "
                                        "(spec.limit); raise it to at least 8 or ask for less");
        assert_int_equal(d.n_waiting[GT_SCHED_WAIT_INADMISSIBLE], 1);
    }
    struct gt_sched_job_info ji;
    assert_int_equal(gt_sched_job_get(m, "big", &ji), 0);
    assert_true(ji.inadmissible);
    assert_int_equal(ji.placement_attempts, 0);
    assert_int_equal(gt_sched_job_get(m, "nope", &ji), GT_ENOTFOUND);

    set_dept(m, "d", 8000);
    cycle(m, 200000, &d);
    assert_int_equal(d.n_binds, 8);
    assert_int_equal(attempts(m, "big"), 1);
    assert_int_equal(gt_sched_job_get(m, "big", &ji), 0);
    assert_false(ji.inadmissible);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* Cluster verdicts follow nodes and GPU health: a task larger than any
 * node, a required-node gang larger than any node, a required group larger
 * than any group; an unhealthy GPU makes a job Inadmissible, a recovered
 * one clears it. */
static void test_inadmissible_cluster(void **state)
{
    (void)state;
    static const int groups[] = {0, 0, 1, 1};
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 4, groups, NULL);
    add_node(m, "n2", 4, groups, NULL);
    set_dept(m, "d", 100000);
    add_job(m, "wide", 1, 5, GT_SCHED_TOPO_NONE, false);
    add_job(m, "onenode", 2, 3, GT_SCHED_TOPO_NODE, true);
    add_job(m, "group", 1, 3, GT_SCHED_TOPO_GPU_GROUP, true);
    add_job(m, "prefgroup", 1, 3, GT_SCHED_TOPO_GPU_GROUP, false);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    cycle(m, 10, &d);
    const struct gt_sched_wait *w = find_wait(&d, "wide");
    assert_int_equal(w->reason, GT_SCHED_WAIT_INADMISSIBLE);
    assert_non_null(strstr(w->message, "NoNodeLargeEnough: a worker task asks for "
                                       "nvidia.com/gpu 5 but the largest Ready node has 4"));
    w = find_wait(&d, "onenode");
    assert_int_equal(w->reason, GT_SCHED_WAIT_INADMISSIBLE);
    assert_non_null(strstr(w->message, "TopologyUnsatisfiable: required topology node: the gang "
                                       "of 2 tasks needs nvidia.com/gpu 6 on one node but the "
                                       "largest Ready node has 4; make the topology preferred"));
    w = find_wait(&d, "group");
    assert_int_equal(w->reason, GT_SCHED_WAIT_INADMISSIBLE);
    assert_non_null(strstr(w->message, "in one NVLink/PCIe group but the largest on a Ready "
                                       "node has 2"));
    /* preferred is never Inadmissible for its level */
    assert_non_null(find_bind(&d, "prefgroup-worker-0"));
    assert_int_equal(gt_sched_task_exit(m, "prefgroup-worker-0", false, NULL), 0);

    /* two unhealthy GPUs on each node: a 3-GPU task no longer fits one */
    add_job(m, "three", 1, 3, GT_SCHED_TOPO_NONE, false);
    struct gt_sched_gpu_spec gpus[MAX_GPUS];
    struct gt_sched_node_spec spec;
    for (int n = 1; n <= 2; n++) {
        node_spec(&spec, gpus, n == 1 ? "n1" : "n2", 4, groups, NULL);
        gpus[0].healthy = gpus[1].healthy = false;
        assert_int_equal(gt_sched_node_update(m, &spec, NULL), 0);
    }
    cycle(m, 20, &d);
    w = find_wait(&d, "three");
    assert_non_null(w);
    assert_int_equal(w->reason, GT_SCHED_WAIT_INADMISSIBLE);
    assert_non_null(strstr(w->message, "NoNodeLargeEnough"));
    uint64_t before = attempts(m, "three");
    cycle(m, 30, &d);
    assert_int_equal(attempts(m, "three"), before);

    /* n1 recovers: the verdict clears and it starts there */
    node_spec(&spec, gpus, "n1", 4, groups, NULL);
    assert_int_equal(gt_sched_node_update(m, &spec, NULL), 0);
    cycle(m, 40, &d);
    const struct gt_sched_bind *b = find_bind(&d, "three-worker-0");
    assert_non_null(b);
    assert_string_equal(b->node, "n1");
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* The gang against everything Ready: a node lost makes it Inadmissible. */
static void test_inadmissible_node_lost(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 2, NULL, NULL);
    add_node(m, "n2", 2, NULL, NULL);
    set_dept(m, "d", 100000);
    add_job(m, "b", 1, 1, GT_SCHED_TOPO_NONE, false);
    hold(m, "b-worker-0", "n1", (int[]){0}, 1);
    add_job(m, "g", 4, 1, GT_SCHED_TOPO_NONE, false);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    cycle(m, 10, &d);
    assert_int_equal(find_wait(&d, "g")->reason, GT_SCHED_WAIT_UNSCHEDULABLE);
    assert_int_equal(gt_sched_node_remove(m, "n2", NULL), 0);
    cycle(m, 20, &d);
    const struct gt_sched_wait *w = find_wait(&d, "g");
    assert_int_equal(w->reason, GT_SCHED_WAIT_INADMISSIBLE);
    assert_non_null(strstr(w->message, "ExceedsClusterCapacity: the gang of 4 tasks needs "
                                       "nvidia.com/gpu 4 but the Ready nodes have 2 in all"));
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

static void test_names_and_bad_spec(void **state)
{
    (void)state;
    assert_string_equal(gt_sched_topology_name(GT_SCHED_TOPO_NODE), "node");
    assert_string_equal(gt_sched_topology_name(GT_SCHED_TOPO_GPU_GROUP), "gpu-group");
    assert_string_equal(gt_sched_topology_name(GT_SCHED_TOPO_NUMA), "numa");
    assert_string_equal(gt_sched_topology_name(GT_SCHED_TOPO_NONE), "none");
    assert_string_equal(gt_sched_wait_reason_str(GT_SCHED_WAIT_INADMISSIBLE), "Inadmissible");
    struct gt_sched_model *m = gt_sched_model_new();
    set_dept(m, "d", 1000);
    struct gt_sched_group_spec g = {.name = "w", .replicas = 1, .req = {.gpus = 1}};
    struct gt_sched_job_spec spec = {.id = "j",
                                     .department = "d",
                                     .groups = &g,
                                     .n_groups = 1,
                                     .topology = (enum gt_sched_topology)9};
    struct gt_err err = {0};
    assert_int_equal(gt_sched_job_add(m, &spec, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "unknown topology"));
    gt_sched_model_free(m);
}

/* ---- randomized: the levels hold under churn ---- */

#define RW_NODES 6
#define RW_JOBS 400

struct rw {
    struct gt_sched_model *m;
    uint64_t rng;
    int n_jobs;
    char id[RW_JOBS][16];
    int tasks[RW_JOBS];
    enum gt_sched_topology level[RW_JOBS];
    bool required[RW_JOBS];
    bool live[RW_JOBS];
};

static uint64_t rw_rand(struct rw *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

/* Node i: 4 or 8 GPUs, two NVLink groups and two NUMA nodes that do not
 * coincide (groups split 0-1|2-3..., NUMA nodes halves), a random GPU
 * unhealthy now and then. */
static void rw_node(struct rw *w, int i, bool churn)
{
    int n = i % 2 ? 8 : 4;
    int group[8], numa[8];
    for (int g = 0; g < n; g++) {
        group[g] = (g / 2) % 2;
        numa[g] = g < n / 2 ? 0 : 1;
    }
    char name[8];
    snprintf(name, sizeof(name), "n%d", i);
    struct gt_sched_gpu_spec gpus[MAX_GPUS];
    struct gt_sched_node_spec spec;
    node_spec(&spec, gpus, name, n, group, numa);
    if (churn) {
        gpus[rw_rand(w) % (uint64_t)n].healthy = rw_rand(w) % 3 != 0;
        assert_int_equal(gt_sched_node_update(w->m, &spec, NULL), 0);
    } else {
        assert_int_equal(gt_sched_node_add(w->m, &spec, NULL), 0);
    }
}

/* After a cycle: every required level holds for every job holding
 * resources, and an Inadmissible job was searched no placement. */
static void rw_check(struct rw *w, const struct gt_sched_decisions *d, const uint64_t *before)
{
    for (int j = 0; j < w->n_jobs; j++) {
        if (!w->live[j]) {
            continue;
        }
        const char *node = NULL;
        for (int t = 0; t < w->tasks[j]; t++) {
            char tid[32];
            snprintf(tid, sizeof(tid), "%s-worker-%d", w->id[j], t);
            struct gt_sched_task_info ti;
            assert_int_equal(gt_sched_task_get(w->m, tid, &ti), 0);
            if (!ti.node || !w->required[j]) {
                continue;
            }
            if (w->level[j] == GT_SCHED_TOPO_NODE) {
                assert_true(!node || !strcmp(node, ti.node));
                node = ti.node;
            }
            for (size_t g = 1; g < ti.n_gpus; g++) {
                struct gt_sched_gpu_info a, b;
                assert_int_equal(gt_sched_gpu_get(w->m, ti.node, ti.gpus[0].index, &a), 0);
                assert_int_equal(gt_sched_gpu_get(w->m, ti.node, ti.gpus[g].index, &b), 0);
                if (w->level[j] == GT_SCHED_TOPO_GPU_GROUP) {
                    assert_int_equal(a.group, b.group);
                } else if (w->level[j] == GT_SCHED_TOPO_NUMA) {
                    assert_int_equal(a.numa, b.numa);
                }
            }
        }
        const struct gt_sched_wait *wt = find_wait(d, w->id[j]);
        if (wt && wt->reason == GT_SCHED_WAIT_INADMISSIBLE) {
            assert_int_equal(attempts(w->m, w->id[j]), before[j]);
        }
    }
}

static void test_randomized_levels(void **state)
{
    (void)state;
    struct rw w = {.m = gt_sched_model_new(), .rng = 0x70b0102ULL};
    for (int i = 0; i < RW_NODES; i++) {
        rw_node(&w, i, false);
    }
    set_dept(w.m, "d", 24000);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    size_t n_binds = 0, n_inadmissible = 0, n_waits = 0;
    uint64_t before[RW_JOBS];
    for (int step = 0; step < 4000; step++) {
        int r = (int)(rw_rand(&w) % 100);
        int j = -1, n_live = 0;
        for (int k = 0; k < w.n_jobs; k++) {
            n_live += w.live[k];
        }
        /* a live job, uniformly */
        for (int k = 0, pick = n_live ? (int)(rw_rand(&w) % (uint64_t)n_live) : -1; pick >= 0;
             k++) {
            if (w.live[k] && pick-- == 0) {
                j = k;
            }
        }
        if (r < 15 && w.n_jobs < RW_JOBS && n_live < 30) {
            int k = w.n_jobs++;
            snprintf(w.id[k], sizeof(w.id[k]), "j%d", k);
            w.tasks[k] = 1 + (int)(rw_rand(&w) % 3);
            w.level[k] = (enum gt_sched_topology)(rw_rand(&w) % 4);
            w.required[k] = rw_rand(&w) % 3 != 0;
            w.live[k] = true;
            add_job(w.m, w.id[k], w.tasks[k], 1 + (int64_t)(rw_rand(&w) % 5), w.level[k],
                    w.required[k]);
        } else if (r < 35 && j >= 0 && w.live[j]) {
            /* a task exits and is retried, or the job is deleted */
            bool gone = rw_rand(&w) % 3 != 0;
            for (int t = 0; t < w.tasks[j]; t++) {
                char tid[32];
                snprintf(tid, sizeof(tid), "%s-worker-%d", w.id[j], t);
                (void)gt_sched_task_exit(w.m, tid, !gone, NULL);
            }
            if (gone) {
                assert_int_equal(gt_sched_job_remove(w.m, w.id[j], NULL), 0);
                w.live[j] = false;
            }
        } else if (r < 42) {
            rw_node(&w, (int)(rw_rand(&w) % RW_NODES), true);
        } else if (r < 45) {
            set_dept(w.m, "d", 1000 * (int64_t)(4 + rw_rand(&w) % 24));
        } else {
            for (int k = 0; k < w.n_jobs; k++) {
                struct gt_sched_job_info ji = {0};
                before[k] = w.live[k] && gt_sched_job_get(w.m, w.id[k], &ji) == 0
                                ? ji.placement_attempts
                                : 0;
            }
            cycle(w.m, step * 100, &d);
            rw_check(&w, &d, before);
            n_binds += d.n_binds;
            n_inadmissible += d.n_waiting[GT_SCHED_WAIT_INADMISSIBLE];
            n_waits += d.n_waits;
        }
    }
    printf("test_randomized_levels: binds=%zu waits=%zu inadmissible=%zu\n", n_binds, n_waits,
           n_inadmissible);
    assert_true(n_binds > 200 && n_inadmissible > 50 && n_waits > n_inadmissible);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(w.m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_required_node),
        cmocka_unit_test(test_preferred_node),
        cmocka_unit_test(test_gpu_group),
        cmocka_unit_test(test_numa),
        cmocka_unit_test(test_inadmissible_limit),
        cmocka_unit_test(test_inadmissible_cluster),
        cmocka_unit_test(test_inadmissible_node_lost),
        cmocka_unit_test(test_names_and_bad_spec),
        cmocka_unit_test(test_randomized_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
