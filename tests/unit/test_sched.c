/*
 * Unit tests for src/sched: the model's update functions and their
 * bookkeeping, and the firstfit policy through gt_sched_cycle. Everything
 * goes through the public interface in sched/sched.h, and the model's own
 * invariant checker runs after every scenario; the randomized test also
 * recomputes GPU and quota use independently of the model.
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

/* ---- helpers ---- */

static void check_model(const struct gt_sched_model *m)
{
    struct gt_err err = {0};
    int rc = gt_sched_model_check(m, &err);
    if (rc != 0) {
        fail_msg("model check: %s", err.msg);
    }
}

/* A node with n_gpus healthy GPUs in PCIe groups of four. */
static void node_spec(struct gt_sched_node_spec *spec, struct gt_sched_gpu_spec *gpus,
                      const char *name, int n_gpus)
{
    for (int i = 0; i < n_gpus; i++) {
        gpus[i] =
            (struct gt_sched_gpu_spec){.index = i, .group = i / 4, .numa = i / 4, .healthy = true};
    }
    *spec = (struct gt_sched_node_spec){.name = name,
                                        .cpu_milli = 64000,
                                        .memory_bytes = 512 * GIB,
                                        .ready = true,
                                        .gpus = gpus,
                                        .n_gpus = (size_t)n_gpus};
}

static void add_node(struct gt_sched_model *m, const char *name, int n_gpus)
{
    struct gt_sched_gpu_spec gpus[16];
    struct gt_sched_node_spec spec;
    node_spec(&spec, gpus, name, n_gpus);
    assert_int_equal(gt_sched_node_add(m, &spec, NULL), 0);
}

/* A department with plenty of cpu/memory and the given GPU limit. */
static void add_dept(struct gt_sched_model *m, const char *name, int64_t gpu_limit_milli)
{
    struct gt_sched_res g = {.cpu_milli = 0, .gpu_milli = 0};
    struct gt_sched_res l = {.cpu_milli = 1000000,
                             .memory_bytes = 100000 * GIB,
                             .storage_bytes = 0,
                             .gpu_milli = gpu_limit_milli};
    assert_int_equal(gt_sched_department_set(m, name, &g, &l, NULL), 0);
}

/* A job of one "worker" group; its tasks are "<id>-worker-<i>". */
static int add_job(struct gt_sched_model *m, const char *id, const char *dept, int64_t arrival_ms,
                   int replicas, int64_t gpus, int64_t gpu_milli, int min_available)
{
    struct gt_sched_group_spec g = {
        .name = "worker",
        .replicas = replicas,
        .req = {.cpu_milli = 1000, .memory_bytes = GIB, .gpus = gpus, .gpu_milli = gpu_milli},
    };
    struct gt_sched_job_spec spec = {.id = id,
                                     .department = dept,
                                     .project = "p",
                                     .arrival_ms = arrival_ms,
                                     .min_available = min_available,
                                     .groups = &g,
                                     .n_groups = 1};
    return gt_sched_job_add(m, &spec, NULL);
}

static const struct gt_sched_bind *find_bind(const struct gt_sched_decisions *d, const char *task)
{
    for (size_t i = 0; i < d->n_binds; i++) {
        if (strcmp(d->binds[i].task_id, task) == 0) {
            return &d->binds[i];
        }
    }
    return NULL;
}

static const struct gt_sched_wait *find_wait(const struct gt_sched_decisions *d, const char *job)
{
    for (size_t i = 0; i < d->n_waits; i++) {
        if (strcmp(d->waits[i].job_id, job) == 0) {
            return &d->waits[i];
        }
    }
    return NULL;
}

static void cycle(struct gt_sched_model *m, int64_t now_ms, struct gt_sched_decisions *d)
{
    const struct gt_sched_policy *ff = gt_sched_policy_by_name("firstfit");
    assert_non_null(ff);
    assert_int_equal(gt_sched_cycle(m, now_ms, ff, d), 0);
    assert_int_equal(d->n_preempts, 0);
    assert_int_equal(d->n_reserves, 0);
    check_model(m);
}

static enum gt_sched_task_state task_state(const struct gt_sched_model *m, const char *id)
{
    struct gt_sched_task_info ti;
    assert_int_equal(gt_sched_task_get(m, id, &ti), 0);
    return ti.state;
}

static int64_t dept_gpu_used(const struct gt_sched_model *m, const char *dept)
{
    struct gt_sched_res used;
    assert_int_equal(gt_sched_department_get(m, dept, NULL, NULL, &used), 0);
    return used.gpu_milli;
}

/* ---- update functions ---- */

static void test_policy_lookup(void **state)
{
    (void)state;
    const struct gt_sched_policy *p = gt_sched_policy_by_name("firstfit");
    assert_non_null(p);
    assert_string_equal(gt_sched_policy_name(p), "firstfit");
    assert_null(gt_sched_policy_by_name("nope"));
    assert_null(gt_sched_policy_by_name(NULL));
    assert_string_equal(gt_sched_wait_reason_str(GT_SCHED_WAIT_QUOTA), "Quota");
    assert_string_equal(gt_sched_wait_reason_str(GT_SCHED_WAIT_UNSCHEDULABLE), "Unschedulable");
}

static void test_bind_exit_usage(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 8);
    add_dept(m, "cv", 8000);
    assert_int_equal(add_job(m, "j", "cv", 1, 2, 2, 0, 0), 0);

    struct gt_sched_gpu_share g01[] = {{0, 1000}, {1, 1000}};
    struct gt_sched_gpu_share g23[] = {{2, 1000}, {3, 1000}};
    assert_int_equal(gt_sched_task_bind(m, "j-worker-0", "n1", g01, 2, 5, NULL), 0);
    assert_int_equal(gt_sched_task_bind(m, "j-worker-1", "n1", g23, 2, 6, NULL), 0);
    check_model(m);

    struct gt_sched_res used;
    assert_int_equal(gt_sched_department_get(m, "cv", NULL, NULL, &used), 0);
    assert_int_equal(used.gpu_milli, 4000);
    assert_int_equal(used.cpu_milli, 2000);
    assert_int_equal(used.memory_bytes, 2 * GIB);
    struct gt_sched_node_info ni;
    assert_int_equal(gt_sched_node_get(m, "n1", &ni), 0);
    assert_int_equal(ni.n_gpus_free, 4);
    assert_int_equal(ni.cpu_milli_free, 62000);
    assert_int_equal(ni.n_tasks, 2);
    struct gt_sched_task_info ti;
    assert_int_equal(gt_sched_task_get(m, "j-worker-1", &ti), 0);
    assert_int_equal(ti.state, GT_SCHED_TASK_BOUND);
    assert_string_equal(ti.node, "n1");
    assert_string_equal(ti.job, "j");
    assert_int_equal(ti.n_gpus, 2);
    assert_int_equal(ti.gpus[1].index, 3);
    assert_int_equal(ti.bound_ms, 6);

    /* Running and terminating tasks keep holding their resources. */
    assert_int_equal(gt_sched_task_set_state(m, "j-worker-0", GT_SCHED_TASK_RUNNING, NULL), 0);
    assert_int_equal(gt_sched_task_set_state(m, "j-worker-0", GT_SCHED_TASK_TERMINATING, NULL), 0);
    assert_int_equal(dept_gpu_used(m, "cv"), 4000);

    assert_int_equal(gt_sched_task_exit(m, "j-worker-0", false, NULL), 0);
    assert_int_equal(gt_sched_task_exit(m, "j-worker-1", true, NULL), 0);
    check_model(m);
    assert_int_equal(gt_sched_department_get(m, "cv", NULL, NULL, &used), 0);
    assert_int_equal(used.gpu_milli, 0);
    assert_int_equal(used.cpu_milli, 0);
    assert_int_equal(used.memory_bytes, 0);
    assert_int_equal(gt_sched_node_get(m, "n1", &ni), 0);
    assert_int_equal(ni.n_gpus_free, 8);
    assert_int_equal(ni.cpu_milli_free, 64000);
    assert_int_equal(ni.n_tasks, 0);
    assert_int_equal(task_state(m, "j-worker-0"), GT_SCHED_TASK_DONE);
    assert_int_equal(task_state(m, "j-worker-1"), GT_SCHED_TASK_PENDING);

    /* A finished task restarted is pending again; the job goes once nothing
     * is held. */
    assert_int_equal(gt_sched_task_set_state(m, "j-worker-0", GT_SCHED_TASK_PENDING, NULL), 0);
    assert_int_equal(task_state(m, "j-worker-0"), GT_SCHED_TASK_PENDING);
    assert_int_equal(gt_sched_job_set_attained(m, "j", 3600000, NULL), 0);
    assert_int_equal(gt_sched_job_remove(m, "j", NULL), 0);
    assert_int_equal(gt_sched_task_get(m, "j-worker-0", &ti), GT_ENOTFOUND);
    assert_int_equal(gt_sched_department_remove(m, "cv", NULL), 0);
    check_model(m);
    gt_sched_model_free(m);
}

/* Everything observable about the fixture of test_bad_updates. */
struct snapshot {
    struct gt_sched_node_info node;
    struct gt_sched_gpu_info gpu[4];
    struct gt_sched_res guarantee, limit, used;
    enum gt_sched_task_state t0, t1;
};

static void snap(const struct gt_sched_model *m, struct snapshot *s)
{
    memset(s, 0, sizeof(*s));
    assert_int_equal(gt_sched_node_get(m, "n1", &s->node), 0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(gt_sched_gpu_get(m, "n1", i, &s->gpu[i]), 0);
    }
    assert_int_equal(gt_sched_department_get(m, "cv", &s->guarantee, &s->limit, &s->used), 0);
    s->t0 = task_state(m, "j-worker-0");
    s->t1 = task_state(m, "j-worker-1");
}

static void snap_equal(const struct snapshot *a, const struct snapshot *b)
{
    assert_int_equal(a->node.cpu_milli_free, b->node.cpu_milli_free);
    assert_int_equal(a->node.memory_bytes_free, b->node.memory_bytes_free);
    assert_int_equal(a->node.n_gpus, b->node.n_gpus);
    assert_int_equal(a->node.n_gpus_free, b->node.n_gpus_free);
    assert_int_equal(a->node.n_tasks, b->node.n_tasks);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(a->gpu[i].state, b->gpu[i].state);
        assert_int_equal(a->gpu[i].used_milli, b->gpu[i].used_milli);
        assert_int_equal(a->gpu[i].healthy, b->gpu[i].healthy);
    }
    assert_memory_equal(&a->guarantee, &b->guarantee, sizeof(a->guarantee));
    assert_memory_equal(&a->limit, &b->limit, sizeof(a->limit));
    assert_memory_equal(&a->used, &b->used, sizeof(a->used));
    assert_int_equal(a->t0, b->t0);
    assert_int_equal(a->t1, b->t1);
}

/* Expect code from call (which may pass errp; the message is left in the
 * caller's `last`); then check the model is exactly as it was. */
#define EXPECT_FAIL(code, call)                                                                    \
    do {                                                                                           \
        struct gt_err *errp = &last;                                                               \
        gt_err_clear(errp);                                                                        \
        assert_int_equal((call), (code));                                                          \
        struct snapshot after;                                                                     \
        snap(m, &after);                                                                           \
        snap_equal(&before, &after);                                                               \
        check_model(m);                                                                            \
    } while (0)

static void test_bad_updates(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 4);
    add_dept(m, "cv", 8000);
    assert_int_equal(
        gt_sched_priority_class_set(m, "high", 100, GT_SCHED_PREEMPT_LOWER, false, NULL), 0);
    assert_int_equal(add_job(m, "j", "cv", 1, 2, 1, 0, 0), 0);
    struct gt_sched_gpu_share g0 = {0, 1000};
    assert_int_equal(gt_sched_task_bind(m, "j-worker-0", "n1", &g0, 1, 1, NULL), 0);
    struct snapshot before;
    snap(m, &before);
    struct gt_err last;

    struct gt_sched_gpu_spec gpus[16];
    struct gt_sched_node_spec ns;
    node_spec(&ns, gpus, "n1", 4);
    EXPECT_FAIL(GT_EEXISTS, gt_sched_node_add(m, &ns, errp));
    assert_int_equal(last.code, GT_EEXISTS);
    assert_non_null(strstr(last.msg, "n1"));
    node_spec(&ns, gpus, "n2", 4);
    ns.cpu_milli = -1;
    EXPECT_FAIL(GT_EINVAL, gt_sched_node_add(m, &ns, errp));
    node_spec(&ns, gpus, "n2", 4);
    gpus[2].index = 1;
    EXPECT_FAIL(GT_EINVAL, gt_sched_node_add(m, &ns, errp));
    node_spec(&ns, gpus, "n2", 4);
    ns.name = "";
    EXPECT_FAIL(GT_EINVAL, gt_sched_node_add(m, &ns, errp));
    /* A node update may not drop a held GPU nor shrink below use. */
    node_spec(&ns, gpus, "n1", 4);
    gpus[0].index = 7;
    EXPECT_FAIL(GT_EINVAL, gt_sched_node_update(m, &ns, errp));
    node_spec(&ns, gpus, "n1", 4);
    ns.cpu_milli = 10;
    EXPECT_FAIL(GT_EINVAL, gt_sched_node_update(m, &ns, errp));
    node_spec(&ns, gpus, "nx", 4);
    EXPECT_FAIL(GT_ENOTFOUND, gt_sched_node_update(m, &ns, errp));
    EXPECT_FAIL(GT_ENOTFOUND, gt_sched_node_remove(m, "nx", errp));

    /* Departments and priority classes. */
    struct gt_sched_res g = {.gpu_milli = 2000}, l = {.gpu_milli = 1000};
    EXPECT_FAIL(GT_EINVAL, gt_sched_department_set(m, "cv", &g, &l, errp));
    g = (struct gt_sched_res){.cpu_milli = -5};
    l = (struct gt_sched_res){0};
    EXPECT_FAIL(GT_EINVAL, gt_sched_department_set(m, "cv", &g, &l, errp));
    EXPECT_FAIL(GT_ECONFLICT, gt_sched_department_remove(m, "cv", errp));
    EXPECT_FAIL(GT_ENOTFOUND, gt_sched_department_remove(m, "nlp", errp));
    EXPECT_FAIL(GT_EINVAL,
                gt_sched_priority_class_set(m, "", 1, GT_SCHED_PREEMPT_NEVER, false, errp));

    /* Jobs. */
    EXPECT_FAIL(GT_EEXISTS, add_job(m, "j", "cv", 1, 1, 1, 0, 0));
    EXPECT_FAIL(GT_ENOTFOUND, add_job(m, "k", "nlp", 1, 1, 1, 0, 0));
    EXPECT_FAIL(GT_EINVAL, add_job(m, "k", "cv", 1, 1, -1, 0, 0));
    EXPECT_FAIL(GT_EINVAL, add_job(m, "k", "cv", 1, 1, 1, 500, 0));
    EXPECT_FAIL(GT_EINVAL, add_job(m, "k", "cv", 1, 1, 0, 1001, 0));
    EXPECT_FAIL(GT_EINVAL, add_job(m, "k", "cv", 1, 0, 1, 0, 0));
    EXPECT_FAIL(GT_EINVAL, add_job(m, "k", "cv", 1, 2, 1, 0, 3));
    EXPECT_FAIL(GT_EINVAL, add_job(m, "k", "cv", 1, 2, 1, 0, -1));
    EXPECT_FAIL(GT_EINVAL, add_job(m, "k", "cv", 1, 1, INT64_MAX / 10, 0, 0));
    {
        struct gt_sched_group_spec grp[2] = {
            {.name = "worker", .replicas = 1, .req = {.gpus = 1}},
            {.name = "worker", .replicas = 1, .req = {.gpus = 1}},
        };
        struct gt_sched_job_spec js = {.id = "k", .department = "cv", .groups = grp, .n_groups = 2};
        EXPECT_FAIL(GT_EEXISTS, gt_sched_job_add(m, &js, errp));
        js.groups = &grp[0];
        js.n_groups = 1;
        js.priority_class = "missing";
        EXPECT_FAIL(GT_ENOTFOUND, gt_sched_job_add(m, &js, errp));
    }
    EXPECT_FAIL(GT_ECONFLICT, gt_sched_job_remove(m, "j", errp));
    EXPECT_FAIL(GT_ENOTFOUND, gt_sched_job_remove(m, "zz", errp));
    EXPECT_FAIL(GT_EINVAL, gt_sched_job_set_attained(m, "j", -1, errp));

    /* Tasks. */
    struct gt_sched_gpu_share s0 = {0, 1000}, s1 = {1, 500}, s9 = {9, 1000};
    struct gt_sched_gpu_share twice[] = {{1, 1000}, {1, 1000}};
    EXPECT_FAIL(GT_ENOTFOUND, gt_sched_task_bind(m, "nope", "n1", &s0, 1, 1, errp));
    EXPECT_FAIL(GT_ENOTFOUND, gt_sched_task_bind(m, "j-worker-1", "nx", &s0, 1, 1, errp));
    EXPECT_FAIL(GT_ECONFLICT, gt_sched_task_bind(m, "j-worker-0", "n1", &s0, 1, 1, errp));
    EXPECT_FAIL(GT_EINVAL, gt_sched_task_bind(m, "j-worker-1", "n1", &s0, 1, 1, errp)); /* taken */
    EXPECT_FAIL(GT_EINVAL, gt_sched_task_bind(m, "j-worker-1", "n1", &s1, 1, 1, errp)); /* milli */
    EXPECT_FAIL(GT_EINVAL, gt_sched_task_bind(m, "j-worker-1", "n1", &s9, 1, 1, errp)); /* index */
    EXPECT_FAIL(GT_EINVAL, gt_sched_task_bind(m, "j-worker-1", "n1", twice, 2, 1, errp));
    EXPECT_FAIL(GT_EINVAL, gt_sched_task_bind(m, "j-worker-1", "n1", NULL, 0, 1, errp));
    EXPECT_FAIL(GT_ECONFLICT, gt_sched_task_exit(m, "j-worker-1", false, errp));
    EXPECT_FAIL(GT_ECONFLICT,
                gt_sched_task_set_state(m, "j-worker-1", GT_SCHED_TASK_RUNNING, errp));
    EXPECT_FAIL(GT_ECONFLICT,
                gt_sched_task_set_state(m, "j-worker-0", GT_SCHED_TASK_PENDING, errp));
    EXPECT_FAIL(GT_ENOTFOUND, gt_sched_task_exit(m, "nope", true, errp));

    /* Task ids must be unique across jobs: "a-b"/"c" and "a"/"b-c" both
     * make task "a-b-c-0". */
    struct gt_sched_group_spec gc = {.name = "c", .replicas = 1};
    struct gt_sched_job_spec ja = {.id = "a-b", .department = "cv", .groups = &gc, .n_groups = 1};
    assert_int_equal(gt_sched_job_add(m, &ja, NULL), 0);
    gc.name = "b-c";
    ja.id = "a";
    assert_int_equal(gt_sched_job_add(m, &ja, NULL), GT_EEXISTS);
    assert_int_equal(gt_sched_job_remove(m, "a", NULL), GT_ENOTFOUND);
    check_model(m);

    gt_sched_model_free(m);
}

/* ---- firstfit through the cycle ---- */

static void test_firstfit_binds(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "b", 8);
    add_node(m, "a", 8);
    add_dept(m, "cv", 16000);
    assert_int_equal(add_job(m, "j", "cv", 1, 1, 2, 0, 0), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    cycle(m, 1000, &d);
    assert_int_equal(d.n_binds, 1);
    assert_int_equal(d.n_waits, 0);
    const struct gt_sched_bind *b = find_bind(&d, "j-worker-0");
    assert_non_null(b);
    assert_string_equal(b->node, "a"); /* first node by name */
    assert_int_equal(b->n_gpus, 2);
    assert_int_equal(b->gpus[0].index, 0);
    assert_int_equal(b->gpus[1].index, 1);
    assert_int_equal(b->gpus[0].milli, 1000);
    /* Recorded in the model at once: the next cycle decides nothing. */
    struct gt_sched_task_info ti;
    assert_int_equal(gt_sched_task_get(m, "j-worker-0", &ti), 0);
    assert_int_equal(ti.state, GT_SCHED_TASK_BOUND);
    assert_int_equal(ti.bound_ms, 1000);
    assert_int_equal(dept_gpu_used(m, "cv"), 2000);
    cycle(m, 2000, &d);
    assert_int_equal(d.n_binds, 0);
    assert_int_equal(d.n_waits, 0);

    /* A failed binding write is reverted with exit(requeue); the next
     * cycle decides it again. */
    assert_int_equal(gt_sched_task_exit(m, "j-worker-0", true, NULL), 0);
    assert_int_equal(dept_gpu_used(m, "cv"), 0);
    cycle(m, 3000, &d);
    assert_int_equal(d.n_binds, 1);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

static void test_gang_all_or_nothing(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 1);
    add_node(m, "n2", 1);
    add_dept(m, "cv", 100000);
    assert_int_equal(add_job(m, "big", "cv", 1, 3, 1, 0, 0), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    cycle(m, 10, &d);
    assert_int_equal(d.n_binds, 0);
    /* 3 GPUs on a cluster of 2: Inadmissible, not a wait for room */
    const struct gt_sched_wait *w = find_wait(&d, "big");
    assert_non_null(w);
    assert_int_equal(w->reason, GT_SCHED_WAIT_INADMISSIBLE);
    assert_non_null(strstr(w->message, "ExceedsClusterCapacity: the gang of 3 tasks needs "
                                       "nvidia.com/gpu 3 but the Ready nodes have 2 in all"));
    assert_int_equal(dept_gpu_used(m, "cv"), 0);
    struct gt_sched_node_info ni;
    assert_int_equal(gt_sched_node_get(m, "n1", &ni), 0);
    assert_int_equal(ni.n_gpus_free, 1);
    assert_int_equal(task_state(m, "big-worker-0"), GT_SCHED_TASK_PENDING);

    /* minAvailable 2 of 3: the gang of two starts, the third waits. */
    assert_int_equal(add_job(m, "elastic", "cv", 2, 3, 1, 0, 2), 0);
    cycle(m, 20, &d);
    assert_int_equal(d.n_binds, 2);
    assert_non_null(find_bind(&d, "elastic-worker-0"));
    assert_non_null(find_bind(&d, "elastic-worker-1"));
    assert_null(find_wait(&d, "elastic"));
    assert_non_null(find_wait(&d, "big"));
    /* Its last task is placed alone when room appears (gang complete). */
    add_node(m, "n3", 1);
    cycle(m, 30, &d);
    assert_int_equal(d.n_binds, 1);
    assert_non_null(find_bind(&d, "elastic-worker-2"));
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

static void test_quota_blocks_admission(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 8);
    add_dept(m, "cv", 4000);
    add_dept(m, "nlp", 2000);
    assert_int_equal(add_job(m, "a", "cv", 1, 1, 3, 0, 0), 0);
    assert_int_equal(add_job(m, "b", "cv", 2, 1, 2, 0, 0), 0);   /* 3000 + 2000 > 4000 */
    assert_int_equal(add_job(m, "c", "nlp", 3, 3, 1, 0, 0), 0);  /* 3000 > 2000 */
    assert_int_equal(add_job(m, "d", "cv", 4, 2, 0, 500, 0), 0); /* 3000 + 1000 fits */
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    cycle(m, 10, &d);
    assert_non_null(find_bind(&d, "a-worker-0"));
    assert_non_null(find_bind(&d, "d-worker-0"));
    assert_non_null(find_bind(&d, "d-worker-1"));
    assert_int_equal(d.n_binds, 3);
    const struct gt_sched_wait *w = find_wait(&d, "b");
    assert_non_null(w);
    assert_int_equal(w->reason, GT_SCHED_WAIT_QUOTA);
    assert_non_null(strstr(w->message, "cv"));
    assert_non_null(strstr(w->message, "nvidia.com/gpu"));
    /* c's gang alone is above nlp's limit: it could never be admitted */
    w = find_wait(&d, "c");
    assert_non_null(w);
    assert_int_equal(w->reason, GT_SCHED_WAIT_INADMISSIBLE);
    assert_non_null(strstr(w->message, "ExceedsDepartmentLimit: the gang of 3 tasks needs "
                                       "nvidia.com/gpu 3 but department nlp's limit is 2"));
    assert_int_equal(d.n_waits, 2);
    assert_int_equal(dept_gpu_used(m, "cv"), 4000);
    assert_int_equal(dept_gpu_used(m, "nlp"), 0);

    /* Raising the limit admits it; lowering it below use is allowed but
     * admits nothing more. */
    add_dept(m, "nlp", 3000);
    cycle(m, 20, &d);
    assert_int_equal(d.n_binds, 3);
    add_dept(m, "cv", 1000);
    assert_int_equal(dept_gpu_used(m, "cv"), 4000);
    cycle(m, 30, &d);
    assert_int_equal(d.n_binds, 0);
    /* b's gang (2) is now above cv's limit (1): the verdict follows the
     * quota change */
    assert_int_equal(find_wait(&d, "b")->reason, GT_SCHED_WAIT_INADMISSIBLE);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

static void test_unusable_nodes_and_gpus(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    struct gt_sched_gpu_spec gpus[16];
    struct gt_sched_node_spec ns;
    node_spec(&ns, gpus, "a", 2);
    ns.ready = false;
    assert_int_equal(gt_sched_node_add(m, &ns, NULL), 0);
    node_spec(&ns, gpus, "b", 2);
    ns.unschedulable = true;
    assert_int_equal(gt_sched_node_add(m, &ns, NULL), 0);
    node_spec(&ns, gpus, "c", 2);
    gpus[0].healthy = false;
    assert_int_equal(gt_sched_node_add(m, &ns, NULL), 0);
    add_dept(m, "cv", 100000);
    assert_int_equal(add_job(m, "j1", "cv", 1, 1, 1, 0, 0), 0);
    assert_int_equal(add_job(m, "j2", "cv", 2, 1, 1, 0, 0), 0);
    assert_int_equal(add_job(m, "f", "cv", 3, 1, 0, 100, 0), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    cycle(m, 10, &d);
    assert_int_equal(d.n_binds, 1);
    const struct gt_sched_bind *b = find_bind(&d, "j1-worker-0");
    assert_non_null(b);
    assert_string_equal(b->node, "c");
    assert_int_equal(b->gpus[0].index, 1);
    assert_int_equal(find_wait(&d, "j2")->reason, GT_SCHED_WAIT_UNSCHEDULABLE);
    /* A fractional task does not go on the unhealthy GPU either. */
    assert_int_equal(find_wait(&d, "f")->reason, GT_SCHED_WAIT_UNSCHEDULABLE);

    /* Uncordoning b lets j2 and f in. */
    node_spec(&ns, gpus, "b", 2);
    assert_int_equal(gt_sched_node_update(m, &ns, NULL), 0);
    cycle(m, 20, &d);
    assert_int_equal(d.n_binds, 2);
    assert_string_equal(find_bind(&d, "j2-worker-0")->node, "b");
    assert_string_equal(find_bind(&d, "f-worker-0")->node, "b");
    assert_int_equal(find_bind(&d, "f-worker-0")->gpus[0].index, 1);

    /* A GPU turning unhealthy under a task keeps the task; the GPU does not
     * count as free after the task exits. */
    node_spec(&ns, gpus, "c", 2);
    gpus[0].healthy = false;
    gpus[1].healthy = false;
    assert_int_equal(gt_sched_node_update(m, &ns, NULL), 0);
    assert_int_equal(task_state(m, "j1-worker-0"), GT_SCHED_TASK_BOUND);
    assert_int_equal(gt_sched_task_exit(m, "j1-worker-0", false, NULL), 0);
    struct gt_sched_node_info ni;
    assert_int_equal(gt_sched_node_get(m, "c", &ni), 0);
    assert_int_equal(ni.n_gpus_free, 0);
    check_model(m);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

static void test_fractional_gpus(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 2);
    add_dept(m, "cv", 100000);
    /* Three 300-milli tasks share GPU 0; a fourth does not fit there. */
    assert_int_equal(add_job(m, "f", "cv", 1, 4, 0, 300, 1), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    cycle(m, 10, &d);
    assert_int_equal(d.n_binds, 4);
    for (int i = 0; i < 3; i++) {
        char id[32];
        snprintf(id, sizeof(id), "f-worker-%d", i);
        const struct gt_sched_bind *b = find_bind(&d, id);
        assert_non_null(b);
        assert_int_equal(b->n_gpus, 1);
        assert_int_equal(b->gpus[0].index, 0);
        assert_int_equal(b->gpus[0].milli, 300);
    }
    assert_int_equal(find_bind(&d, "f-worker-3")->gpus[0].index, 1);
    struct gt_sched_gpu_info gi;
    assert_int_equal(gt_sched_gpu_get(m, "n1", 0, &gi), 0);
    assert_int_equal(gi.state, GT_SCHED_GPU_SHARED);
    assert_int_equal(gi.used_milli, 900);

    /* A 100-milli task fills GPU 0 to exactly 1000; a whole-GPU task finds
     * no wholly free device and waits. */
    assert_int_equal(add_job(m, "g", "cv", 2, 1, 0, 100, 0), 0);
    assert_int_equal(add_job(m, "w", "cv", 3, 1, 1, 0, 0), 0);
    cycle(m, 20, &d);
    assert_int_equal(d.n_binds, 1);
    assert_int_equal(find_bind(&d, "g-worker-0")->gpus[0].index, 0);
    assert_int_equal(gt_sched_gpu_get(m, "n1", 0, &gi), 0);
    assert_int_equal(gi.used_milli, 1000);
    assert_int_equal(find_wait(&d, "w")->reason, GT_SCHED_WAIT_UNSCHEDULABLE);
    assert_int_equal(dept_gpu_used(m, "cv"), 1300);

    /* Binding a whole task onto a shared device is refused. */
    struct gt_sched_gpu_share s1 = {1, 1000};
    assert_int_equal(gt_sched_task_bind(m, "w-worker-0", "n1", &s1, 1, 30, NULL), GT_EINVAL);
    /* Once the sharer of GPU 1 exits, the whole task takes it; a further
     * fractional task finds no room on either device. */
    assert_int_equal(gt_sched_task_exit(m, "f-worker-3", false, NULL), 0);
    assert_int_equal(gt_sched_gpu_get(m, "n1", 1, &gi), 0);
    assert_int_equal(gi.state, GT_SCHED_GPU_FREE);
    assert_int_equal(add_job(m, "h", "cv", 4, 1, 0, 50, 0), 0);
    cycle(m, 40, &d);
    assert_int_equal(d.n_binds, 1);
    assert_int_equal(find_bind(&d, "w-worker-0")->gpus[0].index, 1);
    assert_int_equal(gt_sched_gpu_get(m, "n1", 1, &gi), 0);
    assert_int_equal(gi.state, GT_SCHED_GPU_WHOLE);
    assert_int_equal(find_wait(&d, "h")->reason, GT_SCHED_WAIT_UNSCHEDULABLE);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

static void test_arrival_order(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 1);
    add_dept(m, "cv", 100000);
    /* Added late-first: the earlier arrival still wins the only GPU. */
    assert_int_equal(add_job(m, "late", "cv", 200, 1, 1, 0, 0), 0);
    assert_int_equal(add_job(m, "early", "cv", 100, 1, 1, 0, 0), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    cycle(m, 300, &d);
    assert_int_equal(d.n_binds, 1);
    assert_non_null(find_bind(&d, "early-worker-0"));
    assert_non_null(find_wait(&d, "late"));

    /* Capacity freed by an exit lets the next job bind. */
    assert_int_equal(gt_sched_task_exit(m, "early-worker-0", false, NULL), 0);
    cycle(m, 400, &d);
    assert_int_equal(d.n_binds, 1);
    assert_non_null(find_bind(&d, "late-worker-0"));
    assert_int_equal(d.n_waits, 0);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* Build the same cluster and jobs, adding the jobs in the given order. */
static struct gt_sched_model *det_model(bool reverse)
{
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n2", 8);
    add_node(m, "n1", 4);
    add_dept(m, "cv", 9000);
    add_dept(m, "nlp", 100000);
    for (int k = 0; k < 12; k++) {
        int i = reverse ? 11 - k : k;
        char id[16];
        snprintf(id, sizeof(id), "job%02d", i);
        /* equal arrivals in pairs: the id breaks the tie */
        assert_int_equal(add_job(m, id, i % 3 ? "cv" : "nlp", i / 2, 1 + i % 3, i % 4 == 3 ? 0 : 1,
                                 i % 4 == 3 ? 250 : 0, 0),
                         0);
    }
    return m;
}

static void test_deterministic(void **state)
{
    (void)state;
    struct gt_sched_model *a = det_model(false), *b = det_model(true);
    struct gt_sched_decisions da, db;
    gt_sched_decisions_init(&da);
    gt_sched_decisions_init(&db);
    for (int round = 0; round < 2; round++) {
        cycle(a, 100, &da);
        cycle(b, 100, &db);
        assert_true(round > 0 || (da.n_binds > 0 && da.n_waits > 0));
        assert_int_equal(da.n_binds, db.n_binds);
        for (size_t i = 0; i < da.n_binds; i++) {
            assert_string_equal(da.binds[i].task_id, db.binds[i].task_id);
            assert_string_equal(da.binds[i].node, db.binds[i].node);
            assert_int_equal(da.binds[i].n_gpus, db.binds[i].n_gpus);
            assert_memory_equal(da.binds[i].gpus, db.binds[i].gpus,
                                da.binds[i].n_gpus * sizeof(*da.binds[i].gpus));
        }
        assert_int_equal(da.n_waits, db.n_waits);
        for (size_t i = 0; i < da.n_waits; i++) {
            assert_string_equal(da.waits[i].job_id, db.waits[i].job_id);
            assert_int_equal(da.waits[i].reason, db.waits[i].reason);
            assert_string_equal(da.waits[i].message, db.waits[i].message);
        }
        if (round == 0) {
            /* Free the same capacity in both and go again. */
            assert_int_equal(gt_sched_task_exit(a, "job00-worker-0", false, NULL), 0);
            assert_int_equal(gt_sched_task_exit(b, "job00-worker-0", false, NULL), 0);
        }
    }
    gt_sched_decisions_fini(&da);
    gt_sched_decisions_fini(&db);
    gt_sched_model_free(a);
    gt_sched_model_free(b);
}

static void test_node_lost(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 4);
    add_dept(m, "cv", 100000);
    assert_int_equal(add_job(m, "j", "cv", 1, 2, 2, 0, 0), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    cycle(m, 10, &d);
    assert_int_equal(d.n_binds, 2);
    assert_int_equal(gt_sched_node_remove(m, "n1", NULL), 0);
    check_model(m);
    assert_int_equal(dept_gpu_used(m, "cv"), 0);
    assert_int_equal(task_state(m, "j-worker-0"), GT_SCHED_TASK_DONE);
    struct gt_sched_node_info ni;
    assert_int_equal(gt_sched_node_get(m, "n1", &ni), GT_ENOTFOUND);
    /* Restarted by the job controller, the tasks bind on a new node. */
    add_node(m, "n2", 4);
    assert_int_equal(gt_sched_task_set_state(m, "j-worker-0", GT_SCHED_TASK_PENDING, NULL), 0);
    assert_int_equal(gt_sched_task_set_state(m, "j-worker-1", GT_SCHED_TASK_PENDING, NULL), 0);
    cycle(m, 20, &d);
    assert_int_equal(d.n_binds, 2);
    assert_string_equal(find_bind(&d, "j-worker-1")->node, "n2");
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

static void test_many_nodes_map(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    char name[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof(name), "node-%04d", (i * 7919) % 3000);
        add_node(m, name, 0);
    }
    for (int i = 0; i < 3000; i += 2) {
        snprintf(name, sizeof(name), "node-%04d", i);
        assert_int_equal(gt_sched_node_remove(m, name, NULL), 0);
    }
    for (int i = 0; i < 3000; i++) {
        struct gt_sched_node_info ni;
        snprintf(name, sizeof(name), "node-%04d", i);
        assert_int_equal(gt_sched_node_get(m, name, &ni), i % 2 ? 0 : GT_ENOTFOUND);
    }
    check_model(m);
    gt_sched_model_free(m);
}

/* ---- randomized ---- */

struct rng {
    uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
    /* xorshift64* */
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ULL;
}

static int64_t rnd_in(struct rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd(r) % (uint64_t)(hi - lo + 1));
}

enum { R_NODES = 10, R_GPUS = 8, R_DEPTS = 3, R_JOBS = 400, R_TASKS = 8 };

struct rjob {
    char id[16];
    char task[R_TASKS][40];
    int n_tasks;
    int min_available;
    bool live;
};

struct rworld {
    struct gt_sched_model *m;
    struct rng rng;
    struct rjob jobs[R_JOBS];
    int n_jobs;
    bool node_up[R_NODES];
    uint64_t digest; /* FNV over every decision, to compare runs */
    size_t n_binds, n_waits[2];
};

static const char *const dept_names[R_DEPTS] = {"cv", "nlp", "rl"};

static void r_node_spec(struct rworld *w, int i, struct gt_sched_node_spec *ns,
                        struct gt_sched_gpu_spec *gpus, char *name)
{
    snprintf(name, 16, "n%02d", i);
    node_spec(ns, gpus, name, R_GPUS);
    ns->cpu_milli = 32000;
    ns->memory_bytes = 256 * GIB;
    ns->ready = rnd(&w->rng) % 8 != 0;
    ns->unschedulable = rnd(&w->rng) % 8 == 0;
    for (int g = 0; g < R_GPUS; g++) {
        gpus[g].healthy = rnd(&w->rng) % 16 != 0;
    }
}

static void r_add_job(struct rworld *w, int64_t now)
{
    if (w->n_jobs == R_JOBS) {
        return;
    }
    struct rjob *j = &w->jobs[w->n_jobs];
    snprintf(j->id, sizeof(j->id), "j%d", w->n_jobs);
    struct gt_sched_group_spec grp[2];
    int n_groups = (int)rnd_in(&w->rng, 1, 2);
    j->n_tasks = 0;
    for (int g = 0; g < n_groups; g++) {
        int kind = (int)rnd_in(&w->rng, 0, 2);
        static const int64_t whole[] = {1, 1, 1, 2, 4, 8};
        grp[g] = (struct gt_sched_group_spec){
            .name = g == 0 ? "worker" : "ps",
            .replicas = (int32_t)rnd_in(&w->rng, 1, R_TASKS / 2),
            .req = {.cpu_milli = rnd_in(&w->rng, 0, 8) * 1000,
                    .memory_bytes = rnd_in(&w->rng, 1, 32) * GIB,
                    .gpus = kind == 0 ? whole[rnd(&w->rng) % 6] : 0,
                    .gpu_milli = kind == 1 ? rnd_in(&w->rng, 1, 10) * 100 : 0},
        };
        for (int i = 0; i < grp[g].replicas; i++) {
            /* (from a copy: gcc cannot tell j->id and j->task apart) */
            char id[sizeof(j->id)];
            memcpy(id, j->id, sizeof(id));
            snprintf(j->task[j->n_tasks++], sizeof(j->task[0]), "%s-%s-%d", id, grp[g].name, i);
        }
    }
    j->min_available = rnd(&w->rng) % 2 ? 0 : (int)rnd_in(&w->rng, 1, j->n_tasks);
    struct gt_sched_job_spec spec = {.id = j->id,
                                     .department = dept_names[rnd(&w->rng) % R_DEPTS],
                                     .arrival_ms = now - (int64_t)(rnd(&w->rng) % 50),
                                     .min_available = j->min_available,
                                     .groups = grp,
                                     .n_groups = (size_t)n_groups};
    assert_int_equal(gt_sched_job_add(w->m, &spec, NULL), 0);
    j->live = true;
    w->n_jobs++;
}

/* A random live job, or NULL. */
static struct rjob *r_pick_job(struct rworld *w)
{
    if (w->n_jobs == 0) {
        return NULL;
    }
    struct rjob *j = &w->jobs[rnd(&w->rng) % (uint64_t)w->n_jobs];
    return j->live ? j : NULL;
}

static void r_set_quota(struct rworld *w)
{
    struct gt_sched_res g = {.cpu_milli = rnd_in(&w->rng, 0, 50) * 1000,
                             .memory_bytes = rnd_in(&w->rng, 0, 200) * GIB,
                             .gpu_milli = rnd_in(&w->rng, 0, 20) * 1000};
    struct gt_sched_res l = {.cpu_milli = g.cpu_milli + rnd_in(&w->rng, 0, 200) * 1000,
                             .memory_bytes = g.memory_bytes + rnd_in(&w->rng, 0, 1000) * GIB,
                             .gpu_milli = g.gpu_milli + rnd_in(&w->rng, 0, 40) * 500};
    assert_int_equal(
        gt_sched_department_set(w->m, dept_names[rnd(&w->rng) % R_DEPTS], &g, &l, NULL), 0);
}

/* Check the cycle's decisions and the model independently of the model's
 * own indexes; fold the decisions into the digest. */
static void r_check_cycle(struct rworld *w, const struct gt_sched_decisions *d,
                          const struct gt_sched_res before[R_DEPTS])
{
    for (int i = 0; i < R_DEPTS; i++) {
        struct gt_sched_res lim, used;
        assert_int_equal(gt_sched_department_get(w->m, dept_names[i], NULL, &lim, &used), 0);
        /* The cycle never takes a department over its limit (a limit
         * lowered under existing use is not the cycle's doing). */
        assert_true(used.gpu_milli <= lim.gpu_milli || used.gpu_milli <= before[i].gpu_milli);
        assert_true(used.cpu_milli <= lim.cpu_milli || used.cpu_milli <= before[i].cpu_milli);
        assert_true(used.memory_bytes <= lim.memory_bytes ||
                    used.memory_bytes <= before[i].memory_bytes);
    }
    /* Per-GPU use recomputed from every task. */
    int64_t milli[R_NODES][R_GPUS] = {{0}};
    for (int j = 0; j < w->n_jobs; j++) {
        const struct rjob *rj = &w->jobs[j];
        int holding = 0, done = 0;
        for (int t = 0; rj->live && t < rj->n_tasks; t++) {
            struct gt_sched_task_info ti;
            assert_int_equal(gt_sched_task_get(w->m, rj->task[t], &ti), 0);
            done += ti.state == GT_SCHED_TASK_DONE;
            if (!ti.node) {
                continue;
            }
            holding++;
            int n = (ti.node[1] - '0') * 10 + (ti.node[2] - '0');
            for (size_t g = 0; g < ti.n_gpus; g++) {
                milli[n][ti.gpus[g].index] += ti.gpus[g].milli;
            }
        }
        /* A job that got binds this cycle holds its whole gang. */
        bool bound_now = false;
        for (size_t b = 0; b < d->n_binds; b++) {
            bound_now = bound_now || (strncmp(d->binds[b].task_id, rj->id, strlen(rj->id)) == 0 &&
                                      d->binds[b].task_id[strlen(rj->id)] == '-');
        }
        int gang = rj->min_available ? rj->min_available : rj->n_tasks;
        if (bound_now && gang > rj->n_tasks - done) {
            gang = rj->n_tasks - done;
        }
        assert_true(!bound_now || holding >= gang);
    }
    /* No device over 1000 milli; a whole-GPU task is 1000 on its own, so a
     * GPU given twice or shared with a whole task would show as more. The
     * model's per-GPU view must agree. */
    for (int n = 0; n < R_NODES; n++) {
        char name[16];
        snprintf(name, sizeof(name), "n%02d", n);
        for (int g = 0; g < R_GPUS; g++) {
            assert_true(milli[n][g] <= 1000);
            struct gt_sched_gpu_info gi;
            if (w->node_up[n]) {
                assert_int_equal(gt_sched_gpu_get(w->m, name, g, &gi), 0);
                assert_int_equal(gi.used_milli, milli[n][g]);
                assert_int_equal(gi.state == GT_SCHED_GPU_FREE, milli[n][g] == 0);
            } else {
                assert_int_equal(milli[n][g], 0);
            }
        }
    }
    for (size_t b = 0; b < d->n_binds; b++) {
        struct gt_sched_task_info ti;
        assert_int_equal(gt_sched_task_get(w->m, d->binds[b].task_id, &ti), 0);
        assert_int_equal(ti.state, GT_SCHED_TASK_BOUND);
        assert_string_equal(ti.node, d->binds[b].node);
        assert_int_equal(ti.n_gpus, d->binds[b].n_gpus);
        for (const char *p = d->binds[b].task_id; *p; p++) {
            w->digest = (w->digest ^ (unsigned char)*p) * 1099511628211ULL;
        }
        for (size_t g = 0; g < d->binds[b].n_gpus; g++) {
            w->digest = (w->digest ^ (uint64_t)d->binds[b].gpus[g].index) * 1099511628211ULL;
            w->digest = (w->digest ^ (uint64_t)d->binds[b].gpus[g].milli) * 1099511628211ULL;
        }
    }
    for (size_t i = 0; i < d->n_waits; i++) {
        w->n_waits[d->waits[i].reason == GT_SCHED_WAIT_QUOTA]++;
        w->digest = (w->digest ^ (uint64_t)d->waits[i].reason) * 1099511628211ULL;
    }
    w->n_binds += d->n_binds;
}

static uint64_t run_random(uint64_t seed, int steps)
{
    struct rworld *w = gt_xcalloc(1, sizeof(*w));
    w->m = gt_sched_model_new();
    w->rng.s = seed;
    w->digest = 14695981039346656037ULL;
    for (int i = 0; i < R_DEPTS; i++) {
        add_dept(w->m, dept_names[i], 8000);
    }
    for (int i = 0; i < R_NODES; i++) {
        struct gt_sched_gpu_spec gpus[16];
        struct gt_sched_node_spec ns;
        char name[16];
        r_node_spec(w, i, &ns, gpus, name);
        assert_int_equal(gt_sched_node_add(w->m, &ns, NULL), 0);
        w->node_up[i] = true;
    }
    const struct gt_sched_policy *ff = gt_sched_policy_by_name("firstfit");
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    for (int step = 0; step < steps; step++) {
        int64_t now = step * 100;
        int r = (int)(rnd(&w->rng) % 100);
        struct rjob *j = r_pick_job(w);
        const char *t = j ? j->task[rnd(&w->rng) % (uint64_t)j->n_tasks] : NULL;
        int ni = (int)(rnd(&w->rng) % R_NODES);
        char name[16];
        snprintf(name, sizeof(name), "n%02d", ni);
        if (r < 25) {
            r_add_job(w, now);
        } else if (r < 40 && t) {
            /* exits, preemption-like requeues, reverted binds, restarts */
            struct gt_sched_task_info ti;
            assert_int_equal(gt_sched_task_get(w->m, t, &ti), 0);
            if (ti.node) {
                assert_int_equal(gt_sched_task_exit(w->m, t, rnd(&w->rng) % 2, NULL), 0);
            } else if (ti.state == GT_SCHED_TASK_DONE) {
                assert_int_equal(gt_sched_task_set_state(w->m, t, GT_SCHED_TASK_PENDING, NULL), 0);
            }
        } else if (r < 46 && t) {
            enum gt_sched_task_state to =
                rnd(&w->rng) % 2 ? GT_SCHED_TASK_RUNNING : GT_SCHED_TASK_TERMINATING;
            (void)gt_sched_task_set_state(w->m, t, to, NULL);
        } else if (r < 52 && w->node_up[ni]) {
            struct gt_sched_gpu_spec gpus[16];
            struct gt_sched_node_spec ns;
            r_node_spec(w, ni, &ns, gpus, name);
            assert_int_equal(gt_sched_node_update(w->m, &ns, NULL), 0);
        } else if (r < 55) {
            if (w->node_up[ni]) {
                assert_int_equal(gt_sched_node_remove(w->m, name, NULL), 0);
            } else {
                struct gt_sched_gpu_spec gpus[16];
                struct gt_sched_node_spec ns;
                r_node_spec(w, ni, &ns, gpus, name);
                assert_int_equal(gt_sched_node_add(w->m, &ns, NULL), 0);
            }
            w->node_up[ni] = !w->node_up[ni];
        } else if (r < 58) {
            r_set_quota(w);
        } else if (r < 62 && j) {
            /* job deleted: its tasks exit, then it goes */
            for (int k = 0; k < j->n_tasks; k++) {
                (void)gt_sched_task_exit(w->m, j->task[k], false, NULL);
            }
            assert_int_equal(gt_sched_job_remove(w->m, j->id, NULL), 0);
            j->live = false;
        } else if (r >= 62) {
            struct gt_sched_res before[R_DEPTS];
            for (int i = 0; i < R_DEPTS; i++) {
                assert_int_equal(
                    gt_sched_department_get(w->m, dept_names[i], NULL, NULL, &before[i]), 0);
            }
            assert_int_equal(gt_sched_cycle(w->m, now, ff, &d), 0);
            r_check_cycle(w, &d, before);
        }
        check_model(w->m);
    }
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(w->m);
    printf("test_randomized: binds=%zu waits quota=%zu unschedulable=%zu digest=%016llx\n",
           w->n_binds, w->n_waits[1], w->n_waits[0], (unsigned long long)w->digest);
    /* The mix must exercise every outcome, or the checks above prove little. */
    assert_true(w->n_binds > 500 && w->n_waits[0] > 100 && w->n_waits[1] > 100);
    uint64_t digest = w->digest;
    free(w);
    return digest;
}

static void test_randomized(void **state)
{
    (void)state;
    const uint64_t seed = 0x5eed2026c0ffeeULL;
    printf("test_randomized: seed=0x%llx steps=4000\n", (unsigned long long)seed);
    uint64_t a = run_random(seed, 4000);
    /* Same seed, same events: the same decisions. */
    uint64_t b = run_random(seed, 4000);
    assert_true(a == b);
}

/* Twin models, one cycled as gantryd does (changed_waits_only, every wait)
 * and one with plain cycles, see the same random arrivals and completions
 * on a small full cluster: the same binds and reservations, the same wait
 * counts, and every wait the plain cycle gives is the last one the tracking
 * cycle reported for that job, though a tracking cycle on a full cluster
 * visits only the jobs whose wait may have changed (cycle.c tell_rest). */
static void test_tracked_waits_match(void **state)
{
    (void)state;
    enum { JOBS = 400 };
    struct gt_sched_model *m[2] = {gt_sched_model_new(), gt_sched_model_new()};
    for (int k = 0; k < 2; k++) {
        add_node(m[k], "n1", 4);
        add_node(m[k], "n2", 4);
        add_dept(m[k], "cv", 8000);
        /* a class that never preempts: tell_rest runs from the start */
        assert_int_equal(
            gt_sched_priority_class_set(m[k], "calm", 0, GT_SCHED_PREEMPT_NEVER, false, NULL), 0);
    }
    const struct gt_sched_policy *p = gt_sched_policy_by_name("gantry");
    const struct gt_sched_cycle_opts opts = {.max_waits = SIZE_MAX, .changed_waits_only = true};
    struct gt_sched_decisions d[2];
    gt_sched_decisions_init(&d[0]);
    gt_sched_decisions_init(&d[1]);
    char *last[JOBS] = {0};
    bool running[JOBS] = {0};
    int n_jobs = 0;
    struct rng r = {0x7e11};
    size_t told_full = 0;
    for (int step = 0; step < 1500; step++) {
        int64_t now = step * 1000;
        int what = (int)rnd_in(&r, 0, 9);
        char id[16];
        if (what < 5 && n_jobs < JOBS) {
            static const int64_t gpus[] = {1, 1, 2, 4};
            snprintf(id, sizeof(id), "j%d", n_jobs);
            struct gt_sched_group_spec g = {
                .name = "worker",
                .replicas = 1,
                .req = {.cpu_milli = 1000, .memory_bytes = GIB, .gpus = gpus[rnd_in(&r, 0, 3)]}};
            struct gt_sched_job_spec spec = {.id = id,
                                             .department = "cv",
                                             .priority_class = "calm",
                                             .arrival_ms = now,
                                             .groups = &g,
                                             .n_groups = 1};
            for (int k = 0; k < 2; k++) {
                assert_int_equal(gt_sched_job_add(m[k], &spec, NULL), 0);
            }
            n_jobs++;
        } else if (what < 8 && n_jobs > 0) {
            int j = (int)rnd_in(&r, 0, n_jobs - 1);
            if (running[j]) {
                char task[32];
                snprintf(id, sizeof(id), "j%d", j);
                snprintf(task, sizeof(task), "j%d-worker-0", j);
                for (int k = 0; k < 2; k++) {
                    assert_int_equal(gt_sched_task_exit(m[k], task, false, NULL), 0);
                    assert_int_equal(gt_sched_job_remove(m[k], id, NULL), 0);
                }
                running[j] = false;
            }
        } else {
            assert_int_equal(gt_sched_cycle_ex(m[0], now, p, &opts, &d[0]), 0);
            assert_int_equal(gt_sched_cycle(m[1], now, p, &d[1]), 0);
            check_model(m[0]);
            assert_int_equal(d[0].n_binds, d[1].n_binds);
            for (size_t i = 0; i < d[0].n_binds; i++) {
                assert_string_equal(d[0].binds[i].task_id, d[1].binds[i].task_id);
                running[strtol(d[0].binds[i].task_id + 1, NULL, 10)] = true;
            }
            assert_int_equal(d[0].n_reserves, d[1].n_reserves);
            assert_int_equal(d[0].n_preempts, d[1].n_preempts);
            for (int w = 0; w < GT_SCHED_N_WAIT_REASONS; w++) {
                assert_int_equal(d[0].n_waiting[w], d[1].n_waiting[w]);
            }
            for (size_t i = 0; i < d[0].n_waits; i++) {
                int j = (int)strtol(d[0].waits[i].job_id + 1, NULL, 10);
                free(last[j]);
                last[j] = gt_xstrdup(d[0].waits[i].message);
            }
            for (size_t i = 0; i < d[1].n_waits; i++) {
                int j = (int)strtol(d[1].waits[i].job_id + 1, NULL, 10);
                assert_non_null(last[j]);
                assert_string_equal(last[j], d[1].waits[i].message);
                told_full += strcmp(last[j], "no free GPUs left this cycle") == 0;
            }
        }
    }
    /* the mix reaches a full cluster with many jobs waiting */
    assert_true(told_full > 1000);
    for (int j = 0; j < JOBS; j++) {
        free(last[j]);
    }
    gt_sched_decisions_fini(&d[0]);
    gt_sched_decisions_fini(&d[1]);
    gt_sched_model_free(m[0]);
    gt_sched_model_free(m[1]);
}

/* changed_waits_only: with no schedulable node, N cpu-only pending jobs
 * each report their wait once, then nothing (still counted) until the
 * cluster changes what they wait for; a job new to the model reports its
 * own (the cycles in between visit only new jobs), also when jobs come and
 * go between cycles. Same waits as a plain cycle. */
static void test_changed_waits_only(void **state)
{
    (void)state;
    enum { N = 50 };
    struct gt_sched_model *m = gt_sched_model_new();
    add_dept(m, "cv", 8000);
    char id[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(id[i], sizeof(id[i]), "j%d", i);
        assert_int_equal(add_job(m, id[i], "cv", i, 1, 0, 0, 1), 0);
    }
    const struct gt_sched_policy *p = gt_sched_policy_by_name("gantry");
    const struct gt_sched_cycle_opts opts = {.max_waits = SIZE_MAX, .changed_waits_only = true};
    struct gt_sched_decisions d, plain;
    gt_sched_decisions_init(&d);
    gt_sched_decisions_init(&plain);
    assert_int_equal(gt_sched_cycle(m, 100, p, &plain), 0);
    assert_int_equal(plain.n_waits, N);
    assert_int_equal(gt_sched_cycle_ex(m, 100, p, &opts, &d), 0);
    assert_int_equal(d.n_waits, N);
    for (int i = 0; i < N; i++) {
        const struct gt_sched_wait *w = find_wait(&d, id[i]);
        assert_non_null(w);
        assert_int_equal(w->reason, GT_SCHED_WAIT_UNSCHEDULABLE);
        assert_string_equal(w->message, find_wait(&plain, id[i])->message);
    }
    for (int k = 0; k < 3; k++) {
        assert_int_equal(gt_sched_cycle_ex(m, 200 + k, p, &opts, &d), 0);
        assert_int_equal(d.n_waits, 0);
        assert_int_equal(d.n_waiting[GT_SCHED_WAIT_UNSCHEDULABLE], N);
        assert_int_equal(d.n_waiting[GT_SCHED_WAIT_QUOTA], 0);
    }
    /* a new job: only its wait */
    assert_int_equal(add_job(m, "late", "cv", 1000, 1, 0, 0, 1), 0);
    assert_int_equal(gt_sched_cycle_ex(m, 1000, p, &opts, &d), 0);
    assert_int_equal(d.n_waits, 1);
    assert_string_equal(d.waits[0].job_id, "late");
    assert_int_equal(d.n_waiting[GT_SCHED_WAIT_UNSCHEDULABLE], N + 1);
    /* jobs queued and gone between cycles (one removed, one dequeued by
     * its removal), and an old one removed: counts stay exact */
    assert_int_equal(add_job(m, "brief", "cv", 1100, 1, 0, 0, 1), 0);
    assert_int_equal(add_job(m, "kept", "cv", 1101, 1, 0, 0, 1), 0);
    assert_int_equal(gt_sched_job_remove(m, "brief", NULL), 0);
    assert_int_equal(gt_sched_job_remove(m, id[0], NULL), 0);
    assert_int_equal(gt_sched_cycle_ex(m, 1100, p, &opts, &d), 0);
    assert_int_equal(d.n_waits, 1);
    assert_string_equal(d.waits[0].job_id, "kept");
    assert_int_equal(d.n_waiting[GT_SCHED_WAIT_UNSCHEDULABLE], N + 1);
    assert_int_equal(gt_sched_cycle_ex(m, 1200, p, &opts, &d), 0);
    assert_int_equal(d.n_waits, 0);
    assert_int_equal(d.n_waiting[GT_SCHED_WAIT_UNSCHEDULABLE], N + 1);
    /* a node too small for them changes every wait: each reported once */
    struct gt_sched_gpu_spec gpus[1];
    struct gt_sched_node_spec spec;
    node_spec(&spec, gpus, "small", 0);
    spec.cpu_milli = 500;
    assert_int_equal(gt_sched_node_add(m, &spec, NULL), 0);
    assert_int_equal(gt_sched_cycle_ex(m, 2000, p, &opts, &d), 0);
    assert_int_equal(d.n_waits, N + 1);
    assert_int_equal(d.n_binds, 0);
    assert_null(find_wait(&d, id[0]));
    assert_int_equal(gt_sched_cycle_ex(m, 3000, p, &opts, &d), 0);
    assert_int_equal(d.n_waits, 0);
    check_model(m);
    gt_sched_decisions_fini(&d);
    gt_sched_decisions_fini(&plain);
    gt_sched_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_lookup),
        cmocka_unit_test(test_bind_exit_usage),
        cmocka_unit_test(test_bad_updates),
        cmocka_unit_test(test_firstfit_binds),
        cmocka_unit_test(test_gang_all_or_nothing),
        cmocka_unit_test(test_quota_blocks_admission),
        cmocka_unit_test(test_unusable_nodes_and_gpus),
        cmocka_unit_test(test_fractional_gpus),
        cmocka_unit_test(test_arrival_order),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_node_lost),
        cmocka_unit_test(test_many_nodes_map),
        cmocka_unit_test(test_randomized),
        cmocka_unit_test(test_changed_waits_only),
        cmocka_unit_test(test_tracked_waits_match),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
