/*
 * Unit tests for the gantry scheduler's rules (src/sched policies other than
 * firstfit): admission with guarantee, limit and borrowing; priority order;
 * gang all-or-nothing for whole-cluster gangs; topology-aware placement;
 * preemption (victim choice, gang-level, reclaim, never looping, Never
 * policy, inside a department at its quota) with reservations; and a
 * property test over random events. Everything goes through sched/sched.h;
 * the model checker runs after every cycle.
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

static void check_model(const struct gt_sched_model *m)
{
    struct gt_err err = {0};
    if (gt_sched_model_check(m, &err) != 0) {
        fail_msg("model check: %s", err.msg);
    }
}

/* A node with n_gpus healthy GPUs in PCIe groups of four. */
static void add_node(struct gt_sched_model *m, const char *name, int n_gpus)
{
    struct gt_sched_gpu_spec gpus[16];
    for (int i = 0; i < n_gpus; i++) {
        gpus[i] =
            (struct gt_sched_gpu_spec){.index = i, .group = i / 4, .numa = i / 4, .healthy = true};
    }
    struct gt_sched_node_spec spec = {.name = name,
                                      .cpu_milli = 64000,
                                      .memory_bytes = 512 * GIB,
                                      .ready = true,
                                      .gpus = gpus,
                                      .n_gpus = (size_t)n_gpus};
    assert_int_equal(gt_sched_node_add(m, &spec, NULL), 0);
}

/* A department: GPU guarantee and limit in whole GPUs, plenty of the rest. */
static void add_dept(struct gt_sched_model *m, const char *name, int64_t guarantee_gpus,
                     int64_t limit_gpus)
{
    struct gt_sched_res g = {
        .cpu_milli = 1000000, .memory_bytes = 100000 * GIB, .gpu_milli = guarantee_gpus * 1000};
    struct gt_sched_res l = g;
    l.gpu_milli = limit_gpus * 1000;
    assert_int_equal(gt_sched_department_set(m, name, &g, &l, NULL), 0);
}

static void add_classes(struct gt_sched_model *m)
{
    assert_int_equal(gt_sched_priority_class_set(m, "low", 10, GT_SCHED_PREEMPT_LOWER, true, NULL),
                     0);
    assert_int_equal(
        gt_sched_priority_class_set(m, "high", 100, GT_SCHED_PREEMPT_LOWER, false, NULL), 0);
    assert_int_equal(
        gt_sched_priority_class_set(m, "polite", 100, GT_SCHED_PREEMPT_NEVER, false, NULL), 0);
}

/* What add_job_ex sets beyond add_job. */
struct job_opts {
    const char *project;
    int32_t min_available;
    int64_t active_deadline_ms;
    int64_t runtime_estimate_ms;
    bool restarts_from_scratch;
};

static int add_job_ex(struct gt_sched_model *m, const char *id, const char *dept,
                      const char *pclass, int64_t arrival_ms, int replicas, int64_t gpus,
                      const struct job_opts *o)
{
    struct gt_sched_group_spec g = {
        .name = "worker",
        .replicas = replicas,
        .req = {.cpu_milli = 1000, .memory_bytes = GIB, .gpus = gpus},
    };
    struct gt_sched_job_spec spec = {.id = id,
                                     .department = dept,
                                     .project = o->project,
                                     .priority_class = pclass,
                                     .arrival_ms = arrival_ms,
                                     .min_available = o->min_available,
                                     .groups = &g,
                                     .n_groups = 1,
                                     .active_deadline_ms = o->active_deadline_ms,
                                     .runtime_estimate_ms = o->runtime_estimate_ms,
                                     .restarts_from_scratch = o->restarts_from_scratch};
    return gt_sched_job_add(m, &spec, NULL);
}

static int add_job(struct gt_sched_model *m, const char *id, const char *dept, const char *pclass,
                   int64_t arrival_ms, int replicas, int64_t gpus)
{
    return add_job_ex(m, id, dept, pclass, arrival_ms, replicas, gpus, &(struct job_opts){0});
}

static void run(struct gt_sched_model *m, const char *policy, int64_t now_ms,
                struct gt_sched_decisions *d)
{
    const struct gt_sched_policy *p = gt_sched_policy_by_name(policy);
    assert_non_null(p);
    assert_int_equal(gt_sched_cycle(m, now_ms, p, d), 0);
    check_model(m);
}

static size_t binds_of(const struct gt_sched_decisions *d, const char *job)
{
    size_t n = 0, len = strlen(job);
    for (size_t i = 0; i < d->n_binds; i++) {
        n += strncmp(d->binds[i].task_id, job, len) == 0 && d->binds[i].task_id[len] == '-';
    }
    return n;
}

static size_t preempts_of(const struct gt_sched_decisions *d, const char *job)
{
    size_t n = 0, len = strlen(job);
    for (size_t i = 0; i < d->n_preempts; i++) {
        n += strncmp(d->preempts[i].task_id, job, len) == 0 && d->preempts[i].task_id[len] == '-';
    }
    return n;
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

/* The caller applies preemptions: every victim exits and is requeued. */
static void apply_preempts(struct gt_sched_model *m, const struct gt_sched_decisions *d)
{
    for (size_t i = 0; i < d->n_preempts; i++) {
        assert_int_equal(gt_sched_task_exit(m, d->preempts[i].task_id, true, NULL), 0);
    }
}

/* ---- names ---- */

static void test_policy_names(void **state)
{
    (void)state;
    static const char *const names[] = {"gantry",       "fifo",          "sjf",
                                        "srtf",         "tiresias",      "firstfit",
                                        "fifo/bestfit", "gantry/random", "tiresias/firstfit"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const struct gt_sched_policy *p = gt_sched_policy_by_name(names[i]);
        assert_non_null(p);
        assert_string_equal(gt_sched_policy_name(p), names[i]);
    }
    assert_null(gt_sched_policy_by_name("fifo/nope"));
    assert_null(gt_sched_policy_by_name("lifo"));
}

/* ---- admission ---- */

/* A limit check must count the incoming request, not only current use. */
static void test_cap_counts_request(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 8);
    add_dept(m, "cv", 4, 4);
    assert_int_equal(add_job(m, "a", "cv", NULL, 1, 1, 3), 0);
    assert_int_equal(add_job(m, "b", "cv", NULL, 2, 1, 2), 0); /* 3 + 2 > 4 */
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 10, &d);
    assert_int_equal(binds_of(&d, "a"), 1);
    assert_int_equal(binds_of(&d, "b"), 0);
    const struct gt_sched_wait *w = find_wait(&d, "b");
    assert_non_null(w);
    assert_int_equal(w->reason, GT_SCHED_WAIT_QUOTA);
    struct gt_sched_res used;
    assert_int_equal(gt_sched_department_get(m, "cv", NULL, NULL, &used), 0);
    assert_int_equal(used.gpu_milli, 3000);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* A negative request is rejected, so it can never create headroom. */
static void test_negative_request_rejected(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_dept(m, "cv", 4, 4);
    assert_int_equal(add_job(m, "neg", "cv", NULL, 1, 1, -4), GT_EINVAL);
    struct gt_sched_group_spec g = {.name = "w", .replicas = 1, .req = {.cpu_milli = -1}};
    struct gt_sched_job_spec spec = {.id = "neg2", .department = "cv", .groups = &g, .n_groups = 1};
    assert_int_equal(gt_sched_job_add(m, &spec, NULL), GT_EINVAL);
    g.req = (struct gt_sched_task_req){.memory_bytes = -GIB};
    assert_int_equal(gt_sched_job_add(m, &spec, NULL), GT_EINVAL);
    struct gt_sched_task_info ti;
    assert_int_equal(gt_sched_task_get(m, "neg-worker-0", &ti), GT_ENOTFOUND);
    gt_sched_model_free(m);
}

/* Borrowing: idle guaranteed capacity may be borrowed up to the limit, but
 * not capacity whose owner has work waiting for it. */
static void test_borrowing(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 8);
    add_dept(m, "cv", 4, 8);
    add_dept(m, "nlp", 4, 8);
    assert_int_equal(add_job(m, "cv1", "cv", NULL, 1, 6, 1), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 10, &d);
    assert_int_equal(binds_of(&d, "cv1"), 6); /* borrows 2 of nlp's idle 4 */
    /* nlp now waits for 3 GPUs within its guarantee: cv may not borrow more. */
    assert_int_equal(add_job(m, "nlp1", "nlp", NULL, 20, 1, 3), 0);
    assert_int_equal(add_job(m, "cv2", "cv", NULL, 21, 1, 1), 0);
    run(m, "gantry/bestfit", 30, &d);
    assert_int_equal(binds_of(&d, "cv2"), 0);
    assert_int_equal(find_wait(&d, "cv2")->reason, GT_SCHED_WAIT_QUOTA);
    /* nlp1 fits only by reclaiming: cv runs above its guarantee. */
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* ---- project hard caps ---- */

/* A hard cap on GPUs only (spec.hard: nvidia.com/gpu). */
static void set_cap(struct gt_sched_model *m, const char *project, int64_t gpus)
{
    struct gt_sched_res hard = {GT_SCHED_NO_CAP, GT_SCHED_NO_CAP, GT_SCHED_NO_CAP, gpus * 1000};
    assert_int_equal(gt_sched_project_set(m, project, &hard, NULL), 0);
}

static int64_t project_gpu_milli(const struct gt_sched_model *m, const char *project)
{
    struct gt_sched_res used;
    assert_int_equal(gt_sched_project_get(m, project, NULL, &used), 0);
    return used.gpu_milli;
}

/* Jobs admitted earlier in the same cycle count against the cap; another
 * project of the department is not held back by it. */
static void test_project_cap_same_cycle(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 8);
    add_dept(m, "cv", 8, 8);
    set_cap(m, "p", 4);
    const struct job_opts in_p = {.project = "p"}, in_q = {.project = "q"};
    assert_int_equal(add_job_ex(m, "a", "cv", NULL, 1, 1, 2, &in_p), 0);
    assert_int_equal(add_job_ex(m, "b", "cv", NULL, 2, 1, 2, &in_p), 0);
    assert_int_equal(add_job_ex(m, "c", "cv", NULL, 3, 1, 1, &in_p), 0);
    assert_int_equal(add_job_ex(m, "d", "cv", NULL, 4, 1, 3, &in_q), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 10, &d);
    assert_int_equal(binds_of(&d, "a") + binds_of(&d, "b"), 2);
    assert_int_equal(binds_of(&d, "c"), 0);
    assert_int_equal(binds_of(&d, "d"), 1);
    const struct gt_sched_wait *w = find_wait(&d, "c");
    assert_non_null(w);
    assert_int_equal(w->reason, GT_SCHED_WAIT_QUOTA);
    assert_string_equal(w->message,
                        "project p needs nvidia.com/gpu 1, hard cap 4 reached (4 in use)");
    assert_int_equal(project_gpu_milli(m, "p"), 4000);
    assert_int_equal(project_gpu_milli(m, "q"), 3000);
    /* Use follows exits: a task ends, the waiting job fits. */
    assert_int_equal(gt_sched_task_exit(m, "a-worker-0", false, NULL), 0);
    assert_int_equal(project_gpu_milli(m, "p"), 2000);
    run(m, "gantry", 20, &d);
    assert_int_equal(binds_of(&d, "c"), 1);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* The cap counts the incoming request, a gang's as a whole: nothing of a
 * gang that would cross it is bound, though part of it would fit. */
static void test_project_cap_counts_request(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 8);
    add_node(m, "n2", 8);
    add_dept(m, "cv", 16, 16);
    set_cap(m, "p", 4);
    const struct job_opts in_p = {.project = "p"};
    assert_int_equal(add_job_ex(m, "a", "cv", NULL, 1, 1, 3, &in_p), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 10, &d);
    assert_int_equal(binds_of(&d, "a"), 1);
    assert_int_equal(add_job_ex(m, "b", "cv", NULL, 2, 1, 2, &in_p), 0); /* 3 + 2 > 4 */
    assert_int_equal(add_job_ex(m, "g", "cv", NULL, 3, 3, 1, &in_p), 0); /* gang 3 > 1 left */
    run(m, "gantry", 20, &d);
    assert_int_equal(d.n_binds, 0);
    assert_int_equal(find_wait(&d, "b")->reason, GT_SCHED_WAIT_QUOTA);
    assert_non_null(strstr(find_wait(&d, "g")->message, "project p needs nvidia.com/gpu 3"));
    assert_int_equal(project_gpu_milli(m, "p"), 3000);
    /* A bad cap is refused and changes nothing. */
    struct gt_sched_res bad = {0, 0, 0, -1};
    assert_int_equal(gt_sched_project_set(m, "p", &bad, NULL), GT_EINVAL);
    assert_int_equal(gt_sched_project_set(m, "", &bad, NULL), GT_EINVAL);
    struct gt_sched_res hard;
    assert_int_equal(gt_sched_project_get(m, "p", &hard, NULL), 0);
    assert_int_equal(hard.gpu_milli, 4000);
    assert_int_equal(hard.cpu_milli, GT_SCHED_NO_CAP);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* Raising the cap lets the waiting job in; removing it lets the rest in;
 * a removed cap of a project without jobs leaves nothing behind. */
static void test_project_cap_raise_and_remove(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 8);
    add_dept(m, "cv", 8, 8);
    set_cap(m, "p", 2);
    const struct job_opts in_p = {.project = "p"};
    assert_int_equal(add_job_ex(m, "a", "cv", NULL, 1, 1, 2, &in_p), 0);
    assert_int_equal(add_job_ex(m, "b", "cv", NULL, 2, 1, 2, &in_p), 0);
    assert_int_equal(add_job_ex(m, "c", "cv", NULL, 3, 1, 3, &in_p), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 10, &d);
    assert_int_equal(d.n_binds, 1);
    assert_int_equal(binds_of(&d, "a"), 1);
    set_cap(m, "p", 4);
    run(m, "gantry", 20, &d);
    assert_int_equal(d.n_binds, 1);
    assert_int_equal(binds_of(&d, "b"), 1);
    assert_int_equal(find_wait(&d, "c")->reason, GT_SCHED_WAIT_QUOTA);
    assert_int_equal(gt_sched_project_remove(m, "p", NULL), 0);
    assert_int_equal(gt_sched_project_remove(m, "p", NULL), GT_ENOTFOUND);
    run(m, "gantry", 30, &d);
    assert_int_equal(binds_of(&d, "c"), 1);
    assert_int_equal(project_gpu_milli(m, "p"), 7000); /* still counted, uncapped */
    set_cap(m, "empty", 1);
    assert_int_equal(gt_sched_project_remove(m, "empty", NULL), 0);
    assert_int_equal(gt_sched_project_get(m, "empty", NULL, NULL), GT_ENOTFOUND);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* A job held back by its project's cap preempts nothing and reserves
 * nothing, though its priority would let it preempt without the cap. */
static void test_project_cap_never_preempts(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_classes(m);
    add_node(m, "n1", 8);
    add_dept(m, "cv", 8, 16);
    set_cap(m, "p", 4);
    const struct job_opts in_p = {.project = "p"}, in_q = {.project = "q"};
    assert_int_equal(add_job_ex(m, "low-p", "cv", "low", 1, 1, 4, &in_p), 0);
    assert_int_equal(add_job_ex(m, "low-q", "cv", "low", 2, 1, 4, &in_q), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 10, &d);
    assert_int_equal(d.n_binds, 2);
    assert_int_equal(add_job_ex(m, "high-p", "cv", "high", 20, 1, 4, &in_p), 0);
    for (int i = 0; i < 3; i++) {
        run(m, i == 1 ? "srtf" : "gantry", 30 + i, &d);
        assert_int_equal(d.n_preempts, 0);
        assert_int_equal(d.n_reserves, 0);
        assert_int_equal(find_wait(&d, "high-p")->reason, GT_SCHED_WAIT_QUOTA);
    }
    /* Without the cap the same job does preempt: the cap alone held it. */
    assert_int_equal(gt_sched_project_remove(m, "p", NULL), 0);
    run(m, "gantry", 40, &d);
    assert_int_equal(d.n_preempts, 1);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* ---- order ---- */

static void test_priority_and_fairness_order(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_classes(m);
    add_node(m, "n1", 4);
    add_dept(m, "cv", 4, 8);
    add_dept(m, "nlp", 4, 8);
    assert_int_equal(add_job(m, "cv-running", "cv", "low", 0, 1, 2), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 1, &d);
    assert_int_equal(d.n_binds, 1);
    /* Equal priority: nlp (share 0) goes before cv's older job. */
    assert_int_equal(add_job(m, "cv-old", "cv", "low", 5, 1, 1), 0);
    assert_int_equal(add_job(m, "nlp-new", "nlp", "low", 9, 1, 1), 0);
    /* Higher priority first, even arriving last. */
    assert_int_equal(add_job(m, "cv-high", "cv", "high", 10, 1, 1), 0);
    run(m, "gantry", 20, &d);
    assert_int_equal(d.n_binds, 2);
    assert_int_equal(binds_of(&d, "cv-high"), 1);
    assert_int_equal(binds_of(&d, "nlp-new"), 1);
    /* fifo would have taken cv-old, strictly by arrival. */
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* fifo and sjf are strictly head-of-line: nothing passes a blocked head. */
static void test_head_of_line(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 4);
    add_dept(m, "cv", 8, 8);
    assert_int_equal(add_job(m, "big", "cv", NULL, 1, 1, 8), 0);
    assert_int_equal(add_job(m, "small", "cv", NULL, 2, 1, 1), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "fifo", 10, &d);
    assert_int_equal(d.n_binds, 0);
    assert_non_null(strstr(find_wait(&d, "small")->message, "big"));
    run(m, "tiresias", 10, &d); /* skips the job that does not fit */
    assert_int_equal(binds_of(&d, "small"), 1);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* ---- gang ---- */

/* Two gangs each wanting the whole cluster: one starts whole, the other
 * holds nothing, cycle after cycle (no deadlock, no partial hold). */
static void test_two_whole_cluster_gangs(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 8);
    add_node(m, "n2", 8);
    add_dept(m, "cv", 32, 32);
    assert_int_equal(add_job(m, "g1", "cv", NULL, 1, 4, 4), 0);
    assert_int_equal(add_job(m, "g2", "cv", NULL, 1, 4, 4), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    for (int i = 0; i < 3; i++) {
        run(m, "gantry", 10 + i, &d);
        if (i == 0) {
            assert_int_equal(binds_of(&d, "g1"), 4);
        } else {
            assert_int_equal(d.n_binds, 0);
        }
        assert_int_equal(binds_of(&d, "g2"), 0);
        struct gt_sched_task_info ti;
        for (int t = 0; t < 4; t++) {
            char id[32];
            snprintf(id, sizeof(id), "g2-worker-%d", t);
            assert_int_equal(gt_sched_task_get(m, id, &ti), 0);
            assert_null(ti.node);
        }
    }
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* ---- topology ---- */

/* A 4-GPU task goes into one PCIe group; a 2-GPU task goes where the
 * smallest block fits, keeping the whole free group. */
static void test_topology(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 8);
    add_dept(m, "cv", 8, 8);
    assert_int_equal(add_job(m, "one", "cv", NULL, 1, 1, 2), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 10, &d);
    assert_int_equal(d.n_binds, 1);
    int group = d.binds[0].gpus[0].index / 4;
    assert_int_equal(d.binds[0].gpus[1].index / 4, group);
    assert_int_equal(add_job(m, "two", "cv", NULL, 2, 1, 2), 0);
    assert_int_equal(add_job(m, "four", "cv", NULL, 3, 1, 4), 0);
    run(m, "gantry", 20, &d);
    assert_int_equal(d.n_binds, 2);
    for (size_t b = 0; b < d.n_binds; b++) {
        int g0 = d.binds[b].gpus[0].index / 4;
        for (size_t i = 1; i < d.binds[b].n_gpus; i++) {
            assert_int_equal(d.binds[b].gpus[i].index / 4, g0);
        }
    }
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* ---- preemption ---- */

/* Two 2-GPU tasks of a high-priority job can preempt one 8-GPU low task;
 * the victims' GPUs are reserved until they exit, then the job binds. */
static void test_preempt_frees_enough(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_classes(m);
    add_node(m, "n1", 8);
    add_dept(m, "cv", 8, 16);
    assert_int_equal(add_job(m, "low", "cv", "low", 1, 1, 8), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 10, &d);
    assert_int_equal(binds_of(&d, "low"), 1);
    assert_int_equal(add_job(m, "high", "cv", "high", 20, 2, 2), 0);
    run(m, "gantry", 30, &d);
    assert_int_equal(preempts_of(&d, "low"), 1);
    assert_true(d.n_reserves >= 1);
    assert_string_equal(d.reserves[0].job_id, "high");
    /* Victim still exiting: no second preemption, nothing bound. */
    run(m, "gantry", 40, &d);
    assert_int_equal(d.n_preempts, 0);
    assert_int_equal(d.n_binds, 0);
    assert_non_null(find_wait(&d, "high"));
    /* A low job arriving meanwhile cannot take the reserved GPUs. */
    assert_int_equal(gt_sched_task_exit(m, "low-worker-0", true, NULL), 0);
    assert_int_equal(add_job(m, "sneak", "cv", "low", 41, 1, 1), 0);
    run(m, "gantry", 50, &d);
    assert_int_equal(binds_of(&d, "high"), 2);
    assert_int_equal(binds_of(&d, "low"), 0);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* Never equal priority in a department; Never-policy jobs never preempt. */
static void test_preempt_rules(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_classes(m);
    add_node(m, "n1", 4);
    add_dept(m, "cv", 8, 8);
    assert_int_equal(add_job(m, "r", "cv", "high", 1, 1, 4), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 10, &d);
    assert_int_equal(add_job(m, "peer", "cv", "high", 20, 1, 4), 0);
    run(m, "gantry", 30, &d);
    assert_int_equal(d.n_preempts, 0);
    assert_int_equal(gt_sched_job_remove(m, "peer", NULL), 0);
    /* A low job running, a polite (Never) high job waiting: no preemption. */
    assert_int_equal(gt_sched_task_exit(m, "r-worker-0", false, NULL), 0);
    assert_int_equal(add_job(m, "lowr", "cv", "low", 40, 1, 4), 0);
    run(m, "gantry", 50, &d);
    assert_int_equal(binds_of(&d, "lowr"), 1);
    assert_int_equal(add_job(m, "polite", "cv", "polite", 60, 1, 4), 0);
    run(m, "srtf", 70, &d);
    assert_int_equal(d.n_preempts, 0);
    run(m, "gantry", 80, &d);
    assert_int_equal(d.n_preempts, 0);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* A one-task job of gpus GPUs in department cv, estimated to run
 * estimate_min minutes. */
static int add_timed(struct gt_sched_model *m, const char *id, int64_t arrival_ms, int64_t gpus,
                     int64_t estimate_min)
{
    return add_job_ex(m, id, "cv", "low", arrival_ms, 1, gpus,
                      &(struct job_opts){.runtime_estimate_ms = estimate_min * 60 * 1000});
}

/* A cycle of policy at now_ms preempts victim (its reason naming reason),
 * not spared; once the victim has exited, the next cycle binds preemptor
 * and preempts nothing more. */
static void preempts_then_binds(struct gt_sched_model *m, const char *policy, int64_t now_ms,
                                const char *victim, const char *spared, const char *reason,
                                const char *preemptor, struct gt_sched_decisions *d)
{
    run(m, policy, now_ms, d);
    assert_int_equal(preempts_of(d, victim), 1);
    assert_int_equal(preempts_of(d, spared), 0);
    assert_non_null(strstr(d->preempts[0].reason, reason));
    apply_preempts(m, d);
    run(m, policy, now_ms + 10, d);
    assert_int_equal(binds_of(d, preemptor), 1);
    assert_int_equal(d->n_preempts, 0);
}

/* srtf preempts equal priority by remaining time: the running job with the
 * longest remaining time goes first, and only jobs whose remaining time is
 * longer than the preemptor's; a job without an estimate preempts nothing,
 * and the gantry order does not preempt equal priority while no job has
 * attained service. */
static void test_srtf_remaining(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_classes(m);
    add_node(m, "n1", 8);
    add_dept(m, "cv", 8, 16);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    assert_int_equal(add_timed(m, "long", 1, 4, 600), 0);
    assert_int_equal(add_timed(m, "mid", 2, 4, 120), 0);
    run(m, "srtf", 10, &d);
    assert_int_equal(d.n_binds, 2);
    /* An estimate longer than both remaining times, and none at all. */
    assert_int_equal(add_timed(m, "longer", 20, 4, 1200), 0);
    assert_int_equal(add_job(m, "blind", "cv", "low", 21, 1, 4), 0);
    run(m, "srtf", 30, &d);
    assert_int_equal(d.n_preempts, 0);
    assert_int_equal(gt_sched_job_remove(m, "longer", NULL), 0);
    assert_int_equal(gt_sched_job_remove(m, "blind", NULL), 0);
    /* One hour: "long" (10 h left) goes, not "mid" (2 h). */
    assert_int_equal(add_timed(m, "short", 40, 4, 60), 0);
    run(m, "gantry", 50, &d);
    assert_int_equal(d.n_preempts, 0);
    preempts_then_binds(m, "srtf", 60, "long", "mid", "remaining", "short", &d);
    /* Served time counts (attained GPU-ms over the job's GPUs): "mid" has
     * served 90 of its 120 min, so its 30 min left do not exceed the 30 min
     * of "next"; "short" has 59 min left and goes; "long" waits, holding
     * nothing. */
    assert_int_equal(gt_sched_job_set_attained(m, "mid", INT64_C(4) * 5400 * 1000, NULL), 0);
    assert_int_equal(add_timed(m, "next", 80, 4, 30), 0);
    assert_int_equal(gt_sched_job_set_attained(m, "short", INT64_C(4) * 60 * 1000, NULL), 0);
    run(m, "srtf", 90, &d);
    assert_int_equal(preempts_of(&d, "short"), 1);
    assert_int_equal(preempts_of(&d, "mid"), 0);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* tiresias is Tiresias' discretized 2D-LAS (its simulator's dlas-gpu):
 * queues at 3,250 and 7,200 GPU-seconds of attained service; a job that
 * does not fit preempts equal-priority running jobs of a later queue, the
 * last queue first, never one of its own queue; fifo never preempts. */
static void test_tiresias_las(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 8);
    add_dept(m, "cv", 8, 16);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    assert_int_equal(add_job(m, "q1", "cv", NULL, 1, 1, 4), 0);
    assert_int_equal(add_job(m, "q2", "cv", NULL, 2, 1, 4), 0);
    run(m, "tiresias", 10, &d);
    assert_int_equal(d.n_binds, 2);
    /* Just under the first threshold: both in queue 0, nothing to take. */
    assert_int_equal(gt_sched_job_set_attained(m, "q1", INT64_C(3250) * 1000 - 1, NULL), 0);
    assert_int_equal(gt_sched_job_set_attained(m, "q2", INT64_C(3250) * 1000 - 1, NULL), 0);
    assert_int_equal(add_job(m, "new", "cv", NULL, 20, 1, 4), 0);
    run(m, "tiresias", 30, &d);
    assert_int_equal(d.n_preempts, 0);
    assert_int_equal(d.n_binds, 0);
    /* At the thresholds: q1 in queue 1, q2 in queue 2; the new job (queue
     * 0) takes q2's GPUs, the last queue's, and only those. */
    assert_int_equal(gt_sched_job_set_attained(m, "q1", INT64_C(3250) * 1000, NULL), 0);
    assert_int_equal(gt_sched_job_set_attained(m, "q2", INT64_C(7200) * 1000, NULL), 0);
    run(m, "fifo", 40, &d);
    assert_int_equal(d.n_preempts, 0);
    preempts_then_binds(m, "tiresias", 50, "q2", "q1", "attained-service queue 0, under its 2",
                        "new", &d);
    /* q2 (queue 2) waits behind nobody but cannot take q1 (queue 1) nor the
     * new job (queue 0): a later queue never preempts an earlier one. */
    run(m, "tiresias", 70, &d);
    assert_int_equal(d.n_preempts, 0);
    assert_int_equal(d.n_binds, 0);
    /* Once the new job has served past 7,200 GPU-s it is in q2's queue:
     * still no preemption between equals. */
    assert_int_equal(gt_sched_job_set_attained(m, "new", INT64_C(8000) * 1000, NULL), 0);
    run(m, "tiresias", 80, &d);
    assert_int_equal(d.n_preempts, 0);
    /* A waiting job ordered by queue: q2 (queue 2) now after a fresh one. */
    assert_int_equal(add_job(m, "fresh", "cv", NULL, 90, 1, 4), 0);
    assert_int_equal(gt_sched_task_exit(m, "q1-worker-0", false, NULL), 0);
    assert_int_equal(gt_sched_job_remove(m, "q1", NULL), 0);
    run(m, "tiresias", 100, &d);
    assert_int_equal(binds_of(&d, "fresh"), 1);
    assert_int_equal(binds_of(&d, "q2"), 0);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* Run job (1 replica of gpus) on its own until it has attained gpu_s
 * GPU-seconds, then finish it: what the gantry order learns from. */
static void finish_with(struct gt_sched_model *m, const char *job, int64_t gpus, int64_t gpu_s,
                        struct gt_sched_decisions *d)
{
    char task[64];
    snprintf(task, sizeof(task), "%s-worker-0", job);
    assert_int_equal(add_job(m, job, "cv", NULL, 1, 1, gpus), 0);
    run(m, "gantry", 2, d);
    assert_int_equal(binds_of(d, job), 1);
    assert_int_equal(gt_sched_job_set_attained(m, job, gpu_s * 1000, NULL), 0);
    assert_int_equal(gt_sched_task_exit(m, task, false, NULL), 0);
    assert_int_equal(gt_sched_job_remove(m, job, NULL), 0);
}

/* The gantry order inside a department and priority: least attained
 * service first (queues at 300, 3,250, 7,200 and 72,000 GPU-s), a fresh
 * job preempting an equal-priority one of a later queue; among equals, the
 * shorter expected remaining wall time learned from finished jobs of the
 * same gang size; a job that has been served does not reserve. */
static void test_gantry_las_and_history(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 4);
    add_dept(m, "cv", 4, 4);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    /* Without history or service: arrival order, wide first. */
    assert_int_equal(add_job(m, "filler", "cv", NULL, 10, 1, 4), 0);
    run(m, "gantry", 20, &d);
    assert_int_equal(binds_of(&d, "filler"), 1);
    assert_int_equal(add_job(m, "wide", "cv", NULL, 30, 1, 4), 0);
    assert_int_equal(add_job(m, "narrow", "cv", NULL, 31, 1, 1), 0);
    run(m, "gantry", 40, &d);
    assert_int_equal(d.n_preempts, 0);
    /* filler passes 300 GPU-s: queue 1; wide (queue 0, first) preempts it */
    assert_int_equal(gt_sched_job_set_attained(m, "filler", INT64_C(400) * 1000, NULL), 0);
    preempts_then_binds(m, "gantry", 50, "filler", "narrow",
                        "attained-service queue 0, under its 1", "wide", &d);
    /* filler, served, waits behind narrow and reserves nothing */
    run(m, "gantry", 70, &d);
    assert_int_equal(d.n_binds, 0);
    assert_int_equal(d.n_reserves, 0);
    assert_int_equal(gt_sched_task_exit(m, "wide-worker-0", false, NULL), 0);
    assert_int_equal(gt_sched_job_remove(m, "wide", NULL), 0);
    assert_int_equal(gt_sched_job_remove(m, "filler", NULL), 0);
    run(m, "gantry", 80, &d);
    assert_int_equal(binds_of(&d, "narrow"), 1);
    assert_int_equal(gt_sched_task_exit(m, "narrow-worker-0", false, NULL), 0);
    assert_int_equal(gt_sched_job_remove(m, "narrow", NULL), 0);
    /* History: 1-GPU jobs finished after a minute, 4-GPU ones after ten
     * hours. Now the later 1-GPU job goes first. */
    for (int i = 0; i < 25; i++) {
        char name[32];
        snprintf(name, sizeof(name), "short-%d", i);
        finish_with(m, name, 1, 60, &d);
        snprintf(name, sizeof(name), "long-%d", i);
        finish_with(m, name, 4, 4 * 36000, &d);
    }
    assert_int_equal(add_job(m, "blocker", "cv", NULL, 90, 1, 4), 0);
    run(m, "gantry", 95, &d);
    assert_int_equal(binds_of(&d, "blocker"), 1);
    assert_int_equal(add_job(m, "wide2", "cv", NULL, 100, 1, 4), 0);
    assert_int_equal(add_job(m, "narrow2", "cv", NULL, 101, 1, 1), 0);
    assert_int_equal(gt_sched_task_exit(m, "blocker-worker-0", false, NULL), 0);
    assert_int_equal(gt_sched_job_remove(m, "blocker", NULL), 0);
    run(m, "gantry", 110, &d);
    assert_int_equal(binds_of(&d, "narrow2"), 1);
    assert_int_equal(binds_of(&d, "wide2"), 0);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* History for department cv: 25 finished one-task jobs of gpus GPUs that
 * each received gpu_s GPU-seconds (own_min_samples is 20). */
static void learn(struct gt_sched_model *m, const char *prefix, int64_t gpus, int64_t gpu_s,
                  struct gt_sched_decisions *d)
{
    for (int i = 0; i < 25; i++) {
        char name[32];
        snprintf(name, sizeof(name), "%s-%d", prefix, i);
        finish_with(m, name, gpus, gpu_s, d);
    }
}

/* A job that restarts from scratch (no checkpoint): the gantry order
 * counts only its current run's service (none while it waits) and takes
 * its GPUs by attained service only while that run's service is below
 * 8 % of what the run is still expected to need, from the history of its
 * department and gang size, and only for a job expected to need at most
 * half of that; with no history, or past every finished sample, never.
 * tiresias preempts it regardless. */
static void test_gantry_restarts_from_scratch(void **state)
{
    (void)state;
    const struct job_opts scratch = {.restarts_from_scratch = true};
    struct gt_sched_decisions d;

    /* No history: a job in a later queue (4,000 GPU-s) keeps its GPUs
     * under gantry; tiresias takes them. */
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 4);
    add_dept(m, "cv", 4, 4);
    gt_sched_decisions_init(&d);
    assert_int_equal(add_job_ex(m, "s", "cv", NULL, 1, 1, 4, &scratch), 0);
    run(m, "gantry", 10, &d);
    assert_int_equal(binds_of(&d, "s"), 1);
    assert_int_equal(gt_sched_job_set_attained(m, "s", INT64_C(4000) * 1000, NULL), 0);
    assert_int_equal(add_job_ex(m, "f", "cv", NULL, 20, 1, 4, &scratch), 0);
    for (int i = 0; i < 3; i++) {
        run(m, "gantry", 30 + i, &d);
        assert_int_equal(d.n_preempts, 0);
        assert_int_equal(d.n_binds, 0);
    }
    preempts_then_binds(m, "tiresias", 40, "s", "f", "attained-service queue 0, under its 1", "f",
                        &d);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);

    /* 4-GPU jobs of cv ran ten hours (144,000 GPU-s): a run of r GPU-s is
     * expected to need 144,000 - r more, so it is a victim while r is
     * below 8 % of that, r < 10,666 GPU-s, and only of a job expected to
     * need at most half of that: a 2-GPU one (they ran an hour, 7,200
     * GPU-s), never another 4-GPU one. */
    m = gt_sched_model_new();
    add_node(m, "n1", 4);
    add_dept(m, "cv", 4, 4);
    gt_sched_decisions_init(&d);
    learn(m, "ten-hours", 4, 4 * 36000, &d);
    learn(m, "hour", 2, 2 * 3600, &d);
    assert_int_equal(add_job_ex(m, "s", "cv", NULL, 10, 1, 4, &scratch), 0);
    run(m, "gantry", 20, &d);
    assert_int_equal(binds_of(&d, "s"), 1);
    assert_int_equal(gt_sched_job_set_attained(m, "s", INT64_C(10000) * 1000, NULL), 0);
    assert_int_equal(add_job_ex(m, "f4", "cv", NULL, 25, 1, 4, &scratch), 0);
    run(m, "gantry", 30, &d);
    assert_int_equal(d.n_preempts, 0);
    assert_int_equal(add_job_ex(m, "f1", "cv", NULL, 30, 1, 2, &scratch), 0);
    preempts_then_binds(m, "gantry", 40, "s", "f1", "attained-service queue 0, under its 3", "f1",
                        &d);
    /* Waiting, s counts none of its lost run for its queue (0), but its
     * key counts it: expected to cost 10,000 + 144,000 GPU-s in all, it
     * goes after the fresh f4 (144,000) once f1 ends, then runs again. */
    assert_int_equal(gt_sched_task_exit(m, "f1-worker-0", false, NULL), 0);
    assert_int_equal(gt_sched_job_remove(m, "f1", NULL), 0);
    run(m, "gantry", 60, &d);
    assert_int_equal(binds_of(&d, "f4"), 1);
    assert_int_equal(binds_of(&d, "s"), 0);
    assert_int_equal(d.n_preempts, 0);
    assert_int_equal(gt_sched_task_exit(m, "f4-worker-0", false, NULL), 0);
    assert_int_equal(gt_sched_job_remove(m, "f4", NULL), 0);
    run(m, "gantry", 61, &d);
    assert_int_equal(binds_of(&d, "s"), 1);
    assert_int_equal(d.n_preempts, 0);
    /* As a victim it is ranked by its new run alone: queue 0 while that
     * run is under 300 GPU-s, so a fresh 2-GPU job f2 (queue 0) does not
     * take it in the cycle that bound it nor after; past 300 GPU-s it
     * does. */
    assert_int_equal(add_job_ex(m, "f2", "cv", NULL, 62, 1, 2, &scratch), 0);
    assert_int_equal(gt_sched_job_set_attained(m, "s", INT64_C(10200) * 1000, NULL), 0);
    run(m, "gantry", 65, &d);
    assert_int_equal(d.n_preempts, 0);
    assert_int_equal(gt_sched_job_set_attained(m, "s", INT64_C(10400) * 1000, NULL), 0);
    preempts_then_binds(m, "gantry", 70, "s", "f2", "attained-service queue 0, under its 1", "f2",
                        &d);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);

    /* ... and at the bound it is not: runs of 10,665 GPU-s and 10,667 GPU-s
     * side by side, a fresh 2-GPU job takes the first's GPUs and never the
     * second's; past every sample (300,000 GPU-s of a 2-GPU job, expected
     * to need as much again) neither is taken by a 4-GPU one. tiresias
     * takes one of those two. */
    m = gt_sched_model_new();
    add_node(m, "n1", 8);
    add_dept(m, "cv", 8, 8);
    gt_sched_decisions_init(&d);
    learn(m, "ten-hours", 4, 4 * 36000, &d);
    learn(m, "hour", 2, 2 * 3600, &d);
    assert_int_equal(add_job_ex(m, "under", "cv", NULL, 10, 1, 4, &scratch), 0);
    assert_int_equal(add_job_ex(m, "at", "cv", NULL, 11, 1, 4, &scratch), 0);
    run(m, "gantry", 20, &d);
    assert_int_equal(d.n_binds, 2);
    assert_int_equal(gt_sched_job_set_attained(m, "under", INT64_C(10665) * 1000, NULL), 0);
    assert_int_equal(gt_sched_job_set_attained(m, "at", INT64_C(10667) * 1000, NULL), 0);
    assert_int_equal(add_job_ex(m, "f", "cv", NULL, 30, 1, 2, &scratch), 0);
    preempts_then_binds(m, "gantry", 40, "under", "at", "under its", "f", &d);
    assert_int_equal(gt_sched_job_set_attained(m, "f", INT64_C(300000) * 1000, NULL), 0);
    assert_int_equal(add_job_ex(m, "f2", "cv", NULL, 50, 1, 4, &scratch), 0);
    for (int i = 0; i < 3; i++) {
        run(m, "gantry", 60 + i, &d);
        assert_int_equal(d.n_preempts, 0);
        assert_int_equal(binds_of(&d, "f2"), 0);
    }
    run(m, "tiresias", 70, &d);
    assert_int_equal(d.n_preempts, 1);
    assert_true(preempts_of(&d, "at") == 1 || preempts_of(&d, "f") == 1);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* Waiting jobs that restart from scratch go by the GPU time they are
 * expected to need over their GPUs to the power 0.4, checkpointing ones by
 * the wall time: with 1-GPU jobs of ten hours (36,000 GPU-s) in the
 * history, a 4-GPU job goes first among checkpointing jobs whether 4-GPU
 * jobs ran five hours or three; among those that restart, a 1-GPU job goes
 * first against five hours (72,000 GPU-s / 4^0.4 = 41,400) and the 4-GPU
 * one against three (43,200 GPU-s / 4^0.4 = 24,800). */
static void test_gantry_scratch_order_by_gpu_time(void **state)
{
    (void)state;
    for (int restart = 0; restart < 2; restart++) {
        for (int hours = 3; hours <= 5; hours += 2) {
            const struct job_opts o = {.restarts_from_scratch = restart == 1};
            struct gt_sched_model *m = gt_sched_model_new();
            add_node(m, "n1", 4);
            add_dept(m, "cv", 4, 4);
            struct gt_sched_decisions d;
            gt_sched_decisions_init(&d);
            learn(m, "one", 1, 36000, &d);
            learn(m, "four", 4, 4 * (int64_t)hours * 3600, &d);
            assert_int_equal(add_job(m, "blocker", "cv", NULL, 10, 1, 4), 0);
            run(m, "gantry", 20, &d);
            assert_int_equal(binds_of(&d, "blocker"), 1);
            assert_int_equal(add_job_ex(m, "wide", "cv", NULL, 30, 1, 4, &o), 0);
            assert_int_equal(add_job_ex(m, "narrow", "cv", NULL, 31, 1, 1, &o), 0);
            assert_int_equal(gt_sched_task_exit(m, "blocker-worker-0", false, NULL), 0);
            assert_int_equal(gt_sched_job_remove(m, "blocker", NULL), 0);
            run(m, "gantry", 40, &d);
            bool narrow_first = restart && hours == 5;
            assert_int_equal(binds_of(&d, "narrow"), narrow_first ? 1 : 0);
            assert_int_equal(binds_of(&d, "wide"), narrow_first ? 0 : 1);
            gt_sched_decisions_fini(&d);
            gt_sched_model_free(m);
        }
    }
}

/* A waiting job that restarts from scratch is ordered by the GPU time it
 * is expected to cost in all: its lost runs (a) and a run from scratch,
 * E[S | S > a]. With 4-GPU jobs of 144,000 GPU-s and 2-GPU jobs of 7,200
 * in the history: a 4-GPU job that lost a run of 10,000 GPU-s (154,000
 * in all) waits behind a fresh 4-GPU one (144,000), while a 2-GPU job that
 * lost 1,000 GPU-s ((1,000 + 7,200) / 2^0.4 = 6,214) still goes before a
 * fresh 4-GPU one (144,000 / 4^0.4 = 82,700). */
static void test_gantry_scratch_lost_runs_count(void **state)
{
    (void)state;
    const struct job_opts scratch = {.restarts_from_scratch = true};
    const struct {
        int64_t lost_gpus, lost_gpu_s;
        bool lost_first;
    } cases[] = {{4, 10000, false}, {2, 1000, true}};
    for (size_t c = 0; c < GT_ARRAY_LEN(cases); c++) {
        struct gt_sched_model *m = gt_sched_model_new();
        add_node(m, "n1", 4);
        add_dept(m, "cv", 4, 4);
        struct gt_sched_decisions d;
        gt_sched_decisions_init(&d);
        learn(m, "ten-hours", 4, 4 * 36000, &d);
        learn(m, "hour", 2, 2 * 3600, &d);
        assert_int_equal(add_job_ex(m, "lost", "cv", NULL, 10, 1, cases[c].lost_gpus, &scratch), 0);
        run(m, "gantry", 20, &d);
        assert_int_equal(binds_of(&d, "lost"), 1);
        assert_int_equal(gt_sched_job_set_attained(m, "lost", cases[c].lost_gpu_s * 1000, NULL), 0);
        assert_int_equal(gt_sched_task_exit(m, "lost-worker-0", true, NULL), 0);
        assert_int_equal(add_job_ex(m, "fresh", "cv", NULL, 30, 1, 4, &scratch), 0);
        run(m, "gantry", 40, &d);
        assert_int_equal(binds_of(&d, "lost"), cases[c].lost_first ? 1 : 0);
        assert_int_equal(binds_of(&d, "fresh"), cases[c].lost_first ? 0 : 1);
        assert_int_equal(d.n_preempts, 0);
        gt_sched_decisions_fini(&d);
        gt_sched_model_free(m);
    }
}

/* Reclaim: a department under its guarantee takes back what another
 * borrows, never below the borrower's own guarantee; a job that can never
 * fit triggers no reclaim at all, cycle after cycle. */
static void test_reclaim_and_no_loop(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_classes(m);
    add_node(m, "n1", 8);
    add_dept(m, "cv", 4, 8);
    add_dept(m, "nlp", 4, 8);
    for (int i = 0; i < 8; i++) {
        char id[16];
        snprintf(id, sizeof(id), "b%d", i);
        assert_int_equal(add_job(m, id, "nlp", "low", i, 1, 1), 0);
    }
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 10, &d);
    assert_int_equal(d.n_binds, 8); /* nlp borrows all of cv's idle 4 */
    /* Never fits: 16 GPUs on an 8-GPU cluster, within cv's limit? No: and
     * bigger than any node. Nothing is preempted, however often. */
    assert_int_equal(add_job(m, "huge", "cv", "low", 20, 1, 16), 0);
    for (int i = 0; i < 3; i++) {
        run(m, "gantry", 30 + i, &d);
        assert_int_equal(d.n_preempts, 0);
    }
    assert_int_equal(gt_sched_job_remove(m, "huge", NULL), 0);
    /* cv wants 3 (within its guarantee): exactly 3 borrowers go, newest
     * first, and nlp stays at or above its guarantee of 4. */
    assert_int_equal(add_job(m, "own", "cv", "low", 40, 1, 3), 0);
    run(m, "gantry", 50, &d);
    assert_int_equal(d.n_preempts, 3);
    assert_int_equal(preempts_of(&d, "b7") + preempts_of(&d, "b6") + preempts_of(&d, "b5"), 3);
    apply_preempts(m, &d);
    run(m, "gantry", 60, &d);
    assert_int_equal(binds_of(&d, "own"), 1);
    assert_int_equal(d.n_preempts, 0);
    /* The requeued borrowers may not borrow back what cv now uses. */
    run(m, "gantry", 70, &d);
    assert_int_equal(d.n_binds, 0);
    assert_int_equal(d.n_preempts, 0);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* ---- preemption inside a department at its quota (DESIGN.md step 4) ---- */

/* Does job's wait say it is of reason and mentions text? */
static void assert_wait(const struct gt_sched_decisions *d, const char *job,
                        enum gt_sched_wait_reason reason, const char *text)
{
    const struct gt_sched_wait *w = find_wait(d, job);
    assert_non_null(w);
    assert_int_equal(w->reason, reason);
    if (text && !strstr(w->message, text)) {
        fail_msg("wait of %s: \"%s\" lacks \"%s\"", job, w->message, text);
    }
}

/* cv (guarantee = limit = 8 GPUs) runs a low job on all 8 of its GPUs; a
 * high job of cv needing 4 preempts exactly that job, waits (Quota) with a
 * reservation while it exits, then binds on the reserved GPUs. With one
 * node the GPUs are short too; with two only the quota is. */
static void test_quota_preempts_own_lower(void **state)
{
    (void)state;
    for (int n_nodes = 1; n_nodes <= 2; n_nodes++) {
        struct gt_sched_model *m = gt_sched_model_new();
        add_classes(m);
        add_node(m, "n1", 8);
        if (n_nodes == 2) {
            add_node(m, "n2", 8);
        }
        add_dept(m, "cv", 8, 8);
        assert_int_equal(add_job(m, "low", "cv", "low", 1, 2, 4), 0);
        struct gt_sched_decisions d;
        gt_sched_decisions_init(&d);
        run(m, "gantry", 10, &d);
        assert_int_equal(binds_of(&d, "low"), 2);
        assert_int_equal(add_job(m, "high", "cv", "high", 20, 1, 4), 0);
        run(m, "gantry", 30, &d);
        assert_int_equal(preempts_of(&d, "low"), 2);
        assert_int_equal(d.n_preempts, 2);
        assert_non_null(strstr(d.preempts[0].reason, "preempted by job high"));
        assert_int_equal(d.n_binds, 0);
        assert_int_equal(d.n_reserves, 1);
        assert_string_equal(d.reserves[0].job_id, "high");
        assert_int_equal(d.reserves[0].n_gpus, 4);
        assert_wait(&d, "high", GT_SCHED_WAIT_QUOTA,
                    "preempting 1 lower-priority job of department cv");
        char node[16];
        snprintf(node, sizeof(node), "%s", d.reserves[0].node);
        int32_t first_gpu = d.reserves[0].gpu_index[0];
        /* The victims are stopping: nothing more is preempted or bound. */
        for (int i = 0; i < 2; i++) {
            char task[32];
            snprintf(task, sizeof(task), "low-worker-%d", i);
            assert_int_equal(gt_sched_task_set_state(m, task, GT_SCHED_TASK_TERMINATING, NULL), 0);
        }
        for (int i = 0; i < 2; i++) {
            run(m, "gantry", 40 + i, &d);
            assert_int_equal(d.n_preempts, 0);
            assert_int_equal(binds_of(&d, "high"), 0);
            assert_wait(&d, "high", GT_SCHED_WAIT_QUOTA, "waiting for the jobs it preempted");
        }
        assert_int_equal(gt_sched_task_exit(m, "low-worker-0", true, NULL), 0);
        assert_int_equal(gt_sched_task_exit(m, "low-worker-1", true, NULL), 0);
        run(m, "gantry", 50, &d);
        assert_int_equal(binds_of(&d, "high"), 1);
        assert_int_equal(d.n_preempts, 0);
        struct gt_sched_task_info ti;
        assert_int_equal(gt_sched_task_get(m, "high-worker-0", &ti), 0);
        assert_string_equal(ti.node, node);
        assert_int_equal(ti.gpus[0].index, first_gpu);
        /* The requeued low job waits for quota and preempts nothing. */
        assert_int_equal(binds_of(&d, "low"), 0);
        assert_wait(&d, "low", GT_SCHED_WAIT_QUOTA, NULL);
        run(m, "gantry", 60, &d);
        assert_int_equal(d.n_preempts, 0);
        gt_sched_decisions_fini(&d);
        gt_sched_model_free(m);
    }
}

/* Two low jobs of 4 GPUs, the high job needs 4: only the younger goes. */
static void test_quota_preempts_youngest_only(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_classes(m);
    add_node(m, "n1", 8);
    add_node(m, "n2", 8);
    add_dept(m, "cv", 8, 8);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    assert_int_equal(add_job(m, "old", "cv", "low", 1, 1, 4), 0);
    run(m, "gantry", 10, &d);
    assert_int_equal(add_job(m, "young", "cv", "low", 15, 1, 4), 0);
    run(m, "gantry", 20, &d);
    assert_int_equal(binds_of(&d, "young"), 1);
    assert_int_equal(add_job(m, "high", "cv", "high", 30, 1, 4), 0);
    run(m, "gantry", 1000, &d);
    assert_int_equal(d.n_preempts, 1);
    assert_int_equal(preempts_of(&d, "young"), 1);
    assert_wait(&d, "high", GT_SCHED_WAIT_QUOTA, "preempting 1 lower-priority job");
    apply_preempts(m, &d);
    run(m, "gantry", 1010, &d);
    assert_int_equal(binds_of(&d, "high"), 1);
    assert_int_equal(d.n_preempts, 0);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* Equal priority never preempts; nor do the non-preemptive policies, nor a
 * Never-policy job; all keep the plain Quota wait. A Never job refused
 * first does not keep a later job of its department from preempting. */
static void test_quota_no_preempt(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_classes(m);
    add_node(m, "n1", 8);
    add_node(m, "n2", 8);
    add_dept(m, "cv", 8, 8);
    assert_int_equal(add_job(m, "r", "cv", "high", 1, 1, 8), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 10, &d);
    assert_int_equal(add_job(m, "peer", "cv", "high", 20, 1, 4), 0);
    run(m, "gantry", 30, &d);
    assert_int_equal(d.n_preempts, 0);
    assert_int_equal(d.n_reserves, 0);
    assert_wait(&d, "peer", GT_SCHED_WAIT_QUOTA, "department cv");
    assert_null(strstr(find_wait(&d, "peer")->message, "preempting"));
    assert_int_equal(gt_sched_job_remove(m, "peer", NULL), 0);
    assert_int_equal(gt_sched_task_exit(m, "r-worker-0", false, NULL), 0);
    assert_int_equal(add_job(m, "lowr", "cv", "low", 40, 1, 8), 0);
    run(m, "gantry", 50, &d);
    assert_int_equal(binds_of(&d, "lowr"), 1);
    assert_int_equal(add_job(m, "polite", "cv", "polite", 60, 1, 4), 0);
    run(m, "gantry", 70, &d);
    assert_int_equal(d.n_preempts, 0);
    assert_wait(&d, "polite", GT_SCHED_WAIT_QUOTA, NULL);
    assert_int_equal(add_job(m, "high", "cv", "high", 80, 1, 4), 0);
    const char *calm[] = {"fifo", "sjf", "fifo/bestfit"};
    for (size_t i = 0; i < sizeof(calm) / sizeof(calm[0]); i++) {
        run(m, calm[i], 90 + (int64_t)i, &d);
        assert_int_equal(d.n_preempts, 0);
        assert_int_equal(d.n_reserves, 0);
        assert_null(strstr(find_wait(&d, "high")->message, "preempting"));
    }
    run(m, "gantry", 100, &d);
    assert_int_equal(d.n_preempts, 1);
    assert_int_equal(preempts_of(&d, "lowr"), 1);
    assert_null(strstr(find_wait(&d, "polite")->message, "preempting"));
    assert_wait(&d, "high", GT_SCHED_WAIT_QUOTA, "preempting 1 lower-priority job");
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* Only the preemptor's own department gives victims for its quota: nlp's
 * low jobs stay, cv's low one goes; with none of cv's left, nothing does. */
static void test_quota_other_department_spared(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_classes(m);
    add_node(m, "n1", 8);
    add_node(m, "n2", 8);
    add_node(m, "n3", 8);
    add_dept(m, "cv", 8, 8);
    add_dept(m, "nlp", 0, 16);
    assert_int_equal(add_job(m, "cv-low", "cv", "low", 1, 1, 4), 0);
    assert_int_equal(add_job(m, "cv-mid", "cv", "high", 2, 1, 4), 0);
    assert_int_equal(add_job(m, "nlp-low", "nlp", "low", 3, 2, 4), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 10, &d);
    assert_int_equal(d.n_binds, 4);
    assert_int_equal(add_job(m, "cv-high", "cv", "high", 20, 1, 4), 0);
    run(m, "gantry", 30, &d);
    assert_int_equal(d.n_preempts, 1);
    assert_int_equal(preempts_of(&d, "cv-low"), 1);
    apply_preempts(m, &d);
    run(m, "gantry", 40, &d);
    assert_int_equal(binds_of(&d, "cv-high"), 1);
    /* cv is at its limit with high jobs only: another high one waits. */
    assert_int_equal(add_job(m, "cv-more", "cv", "high", 50, 1, 4), 0);
    run(m, "gantry", 60, &d);
    assert_int_equal(d.n_preempts, 0);
    assert_int_equal(d.n_reserves, 0);
    assert_wait(&d, "cv-more", GT_SCHED_WAIT_QUOTA, NULL);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* A project cap refusal never starts a quota preemption, even when the
 * department is at its limit too; without the cap the job preempts. */
static void test_quota_project_cap_no_preempt(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_classes(m);
    add_node(m, "n1", 8);
    add_node(m, "n2", 8);
    add_dept(m, "cv", 8, 8);
    set_cap(m, "p", 4);
    const struct job_opts in_p = {.project = "p"}, in_q = {.project = "q"};
    assert_int_equal(add_job_ex(m, "low-p", "cv", "low", 1, 1, 4, &in_p), 0);
    assert_int_equal(add_job_ex(m, "low-q", "cv", "low", 2, 1, 4, &in_q), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 10, &d);
    assert_int_equal(d.n_binds, 2);
    assert_int_equal(add_job_ex(m, "high-p", "cv", "high", 20, 1, 4, &in_p), 0);
    for (int i = 0; i < 2; i++) {
        run(m, i == 1 ? "srtf" : "gantry", 30 + i, &d);
        assert_int_equal(d.n_preempts, 0);
        assert_int_equal(d.n_reserves, 0);
        assert_wait(&d, "high-p", GT_SCHED_WAIT_QUOTA, NULL);
    }
    assert_int_equal(gt_sched_project_remove(m, "p", NULL), 0);
    run(m, "gantry", 40, &d);
    assert_int_equal(d.n_preempts, 1);
    assert_wait(&d, "high-p", GT_SCHED_WAIT_QUOTA, "preempting 1 lower-priority job");
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* ---- backfill (DESIGN.md Scheduling, step 5) ---- */

/* Bind task to GPUs first..first+n-1 of node at bound_ms (as restored). */
static void hold(struct gt_sched_model *m, const char *task, const char *node, int first, int n,
                 int64_t bound_ms)
{
    struct gt_sched_gpu_share sh[8];
    for (int i = 0; i < n; i++) {
        sh[i] = (struct gt_sched_gpu_share){.index = first + i, .milli = 1000};
    }
    assert_int_equal(gt_sched_task_bind(m, task, node, sh, (size_t)n, bound_ms, NULL), 0);
}

/* n1: a (3 GPUs, deadline ends at 100 s) and b (3 GPUs, deadline b_dl_ms
 * from 0, or none) bound at 0, GPUs 6 and 7 free; head job h wants all 8. */
static struct gt_sched_model *backfill_model(int64_t b_dl_ms)
{
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 8);
    add_dept(m, "cv", 64, 64);
    assert_int_equal(
        add_job_ex(m, "a", "cv", NULL, 0, 1, 3, &(struct job_opts){.active_deadline_ms = 100000}),
        0);
    assert_int_equal(
        add_job_ex(m, "b", "cv", NULL, 0, 1, 3, &(struct job_opts){.active_deadline_ms = b_dl_ms}),
        0);
    hold(m, "a-worker-0", "n1", 0, 3, 0);
    hold(m, "b-worker-0", "n1", 3, 3, 0);
    assert_int_equal(add_job(m, "h", "cv", NULL, 10, 1, 8), 0);
    return m;
}

static bool gpu_free(const struct gt_sched_model *m, const char *node, int index)
{
    struct gt_sched_gpu_info gi;
    assert_int_equal(gt_sched_gpu_get(m, node, index, &gi), 0);
    return gi.state == GT_SCHED_GPU_FREE;
}

/* The head job that cannot start reserves concrete GPUs: all 8 of n1,
 * remade each cycle; a job without a deadline cannot use the free ones. */
static void test_backfill_head_reserves(void **state)
{
    (void)state;
    struct gt_sched_model *m = backfill_model(200000);
    assert_int_equal(add_job(m, "z", "cv", NULL, 20, 1, 1), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    for (int cycle = 0; cycle < 2; cycle++) {
        run(m, "gantry", 1000 + cycle, &d);
        assert_int_equal(d.n_binds, 0);
        assert_int_equal(d.n_preempts, 0);
        assert_int_equal(d.n_reserves, 1);
        assert_string_equal(d.reserves[0].job_id, "h");
        assert_string_equal(d.reserves[0].node, "n1");
        assert_int_equal(d.reserves[0].n_gpus, 8);
        int seen = 0;
        for (size_t g = 0; g < d.reserves[0].n_gpus; g++) {
            seen |= 1 << d.reserves[0].gpu_index[g];
        }
        assert_int_equal(seen, 0xff);
        assert_int_equal(find_wait(&d, "z")->reason, GT_SCHED_WAIT_UNSCHEDULABLE);
        assert_true(gpu_free(m, "n1", 6) && gpu_free(m, "n1", 7));
    }
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* The due time is the latest deadline end among the tasks waited for (b's
 * 200 s, not a's 100 s): a job ending at 151 s is lent a reserved GPU, one
 * ending at 251 s is not. */
static void test_backfill_due_is_latest_end(void **state)
{
    (void)state;
    struct gt_sched_model *m = backfill_model(200000);
    assert_int_equal(add_job_ex(m, "late", "cv", NULL, 20, 1, 1,
                                &(struct job_opts){.active_deadline_ms = 250000}),
                     0);
    assert_int_equal(add_job_ex(m, "early", "cv", NULL, 30, 1, 1,
                                &(struct job_opts){.active_deadline_ms = 150000}),
                     0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 1000, &d);
    assert_int_equal(d.n_reserves, 1);
    assert_int_equal(d.n_binds, 1);
    assert_int_equal(binds_of(&d, "early"), 1);
    assert_string_equal(d.binds[0].node, "n1");
    assert_true(d.binds[0].gpus[0].index >= 6);
    assert_int_equal(find_wait(&d, "late")->reason, GT_SCHED_WAIT_UNSCHEDULABLE);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* If a task waited for has no deadline, no reserved GPU is lent, however
 * short the borrower's deadline. */
static void test_backfill_no_deadline_no_lend(void **state)
{
    (void)state;
    struct gt_sched_model *m = backfill_model(0);
    assert_int_equal(add_job_ex(m, "short", "cv", NULL, 20, 1, 1,
                                &(struct job_opts){.active_deadline_ms = 1000}),
                     0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 1000, &d);
    assert_int_equal(d.n_reserves, 1);
    assert_int_equal(d.n_binds, 0);
    assert_int_equal(find_wait(&d, "short")->reason, GT_SCHED_WAIT_UNSCHEDULABLE);
    assert_true(gpu_free(m, "n1", 6) && gpu_free(m, "n1", 7));
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* Jobs without a deadline use only GPUs outside the reservation, even once
 * those run out; a job whose deadline ends before the due time still gets
 * the reserved ones then (also when it may not preempt). */
static void test_backfill_outside_reservation(void **state)
{
    (void)state;
    struct gt_sched_model *m = backfill_model(200000);
    assert_int_equal(gt_sched_priority_class_set(m, "meek", 0, GT_SCHED_PREEMPT_NEVER, false, NULL),
                     0);
    add_node(m, "n2", 8);
    assert_int_equal(add_job(m, "c", "cv", NULL, 0, 1, 7), 0);
    hold(m, "c-worker-0", "n2", 0, 7, 0);
    assert_int_equal(add_job(m, "z1", "cv", NULL, 20, 1, 1), 0);
    assert_int_equal(add_job(m, "z2", "cv", NULL, 30, 1, 1), 0);
    assert_int_equal(
        add_job_ex(m, "w", "cv", "meek", 40, 1, 2, &(struct job_opts){.active_deadline_ms = 50000}),
        0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    run(m, "gantry", 1000, &d);
    assert_int_equal(d.n_reserves, 1);
    assert_string_equal(d.reserves[0].node, "n1"); /* waits for the earliest end */
    assert_int_equal(d.n_binds, 2);
    for (size_t b = 0; b < d.n_binds; b++) {
        bool is_z1 = strcmp(d.binds[b].task_id, "z1-worker-0") == 0;
        assert_true(is_z1 || strcmp(d.binds[b].task_id, "w-worker-0") == 0);
        assert_string_equal(d.binds[b].node, is_z1 ? "n2" : "n1");
    }
    assert_int_equal(find_wait(&d, "z2")->reason, GT_SCHED_WAIT_UNSCHEDULABLE);
    assert_false(gpu_free(m, "n1", 6) || gpu_free(m, "n1", 7));
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* Backfill on learned estimates: with no deadlines anywhere, the due time
 * of the head job's reservation is when the tasks it waits for are
 * expected to end (E[S - a | S > a] of their department and gang size,
 * over their GPUs), and a job is lent reserved GPUs only if it is expected
 * to end by then. The due time never moves later while the head job
 * waits, though the reservation is remade every cycle. */
static void test_backfill_learned_estimates(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    add_node(m, "n1", 8);
    add_dept(m, "cv", 64, 64);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    /* 3-GPU jobs ran 1,000 s, 1-GPU ones 100 s, 2-GPU ones 800 s */
    learn(m, "three", 3, 3 * 1000, &d);
    learn(m, "one", 1, 100, &d);
    learn(m, "two", 2, 2 * 800, &d);
    /* a and b (3 GPUs each, no deadline) run from 0; head job h wants all
     * 8 GPUs; GPUs 6 and 7 are free */
    assert_int_equal(add_job(m, "a", "cv", NULL, 0, 1, 3), 0);
    assert_int_equal(add_job(m, "b", "cv", NULL, 0, 1, 3), 0);
    hold(m, "a-worker-0", "n1", 0, 3, 0);
    hold(m, "b-worker-0", "n1", 3, 3, 0);
    assert_int_equal(add_job(m, "h", "cv", NULL, 10, 1, 8), 0);
    /* at 1,000 s: due at 2,000 s; short (100 s) is lent a reserved GPU */
    assert_int_equal(add_job(m, "short", "cv", NULL, 20, 1, 1), 0);
    run(m, "gantry", 1000000, &d);
    assert_int_equal(d.n_reserves, 1);
    assert_string_equal(d.reserves[0].job_id, "h");
    assert_int_equal(d.reserves[0].n_gpus, 8);
    assert_int_equal(d.n_binds, 1);
    assert_int_equal(binds_of(&d, "short"), 1);
    assert_true(d.binds[0].gpus[0].index >= 6);
    assert_int_equal(gt_sched_task_exit(m, "short-worker-0", false, NULL), 0);
    assert_int_equal(gt_sched_job_remove(m, "short", NULL), 0);
    /* at 1,500 s a and b still report no service: remade now, the due time
     * would be 2,500 s, but it stays at 2,000 s, so two (800 s, ending at
     * 2,300 s) waits; tiny (100 s) is still lent one */
    assert_int_equal(add_job(m, "two", "cv", NULL, 40, 1, 2), 0);
    run(m, "gantry", 1500000, &d);
    assert_int_equal(d.n_reserves, 1);
    assert_int_equal(d.n_binds, 0);
    assert_int_equal(find_wait(&d, "two")->reason, GT_SCHED_WAIT_UNSCHEDULABLE);
    assert_true(gpu_free(m, "n1", 6) && gpu_free(m, "n1", 7));
    assert_int_equal(add_job(m, "tiny", "cv", NULL, 50, 1, 1), 0);
    run(m, "gantry", 1501000, &d);
    assert_int_equal(d.n_binds, 1);
    assert_int_equal(binds_of(&d, "tiny"), 1);
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
}

/* ---- property test ---- */

struct rng {
    uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ULL;
}

enum { P_NODES = 8, P_JOBS = 64, P_DEPTS = 3, P_PROJECTS = 2, P_MAX_TASKS = 4 };
static const char *const p_depts[P_DEPTS] = {"cv", "nlp", "rl"};
static const char *const p_projects[P_PROJECTS + 1] = {"pa", "pb", NULL};

/* The live jobs of a property run: gang size and minAvailable (resolved),
 * and each job's tasks holding resources and pending before a cycle. */
struct p_jobs {
    bool live[P_JOBS];
    int tasks[P_JOBS], min_available[P_JOBS];
    size_t holding[P_JOBS], pending[P_JOBS];
    char task_id[P_JOBS][P_MAX_TASKS][40];
};

static void p_count(const struct gt_sched_model *m, const struct p_jobs *pj, int j, size_t *holding,
                    size_t *pending)
{
    *holding = *pending = 0;
    for (int t = 0; t < pj->tasks[j]; t++) {
        struct gt_sched_task_info ti;
        assert_int_equal(gt_sched_task_get(m, pj->task_id[j][t], &ti), 0);
        *holding += ti.node != NULL;
        *pending += ti.state == GT_SCHED_TASK_PENDING;
    }
}

/* No gang partly bound, exactly: a cycle releases nothing it did not bind,
 * so each job holds what it held plus its binds; and a job with binds holds
 * its whole gang (minAvailable, or every task not finished if fewer are
 * left), all of them counted. */
static void p_check_gangs(const struct gt_sched_model *m, const struct p_jobs *pj,
                          const struct gt_sched_decisions *d)
{
    size_t binds[P_JOBS] = {0};
    for (size_t b = 0; b < d->n_binds; b++) {
        long j = strtol(d->binds[b].task_id + 1, NULL, 10);
        assert_true(d->binds[b].task_id[0] == 'j' && j >= 0 && j < P_JOBS && pj->live[j]);
        binds[j]++;
    }
    for (int j = 0; j < P_JOBS; j++) {
        if (!pj->live[j]) {
            continue;
        }
        size_t holding, pending;
        p_count(m, pj, j, &holding, &pending);
        assert_int_equal(holding, pj->holding[j] + binds[j]);
        size_t open = pj->holding[j] + pj->pending[j], gang = (size_t)pj->min_available[j];
        assert_true(binds[j] == 0 || holding >= (gang < open ? gang : open));
    }
}
static const char *const p_classes[3] = {"low", "high", "polite"};

static void p_node(struct gt_sched_model *m, struct rng *r, int i, bool add)
{
    char name[16];
    snprintf(name, sizeof(name), "n%d", i);
    struct gt_sched_gpu_spec gpus[8];
    for (int g = 0; g < 8; g++) {
        gpus[g] = (struct gt_sched_gpu_spec){
            .index = g, .group = g / 4, .numa = g / 4, .healthy = rnd(r) % 20 != 0};
    }
    struct gt_sched_node_spec spec = {.name = name,
                                      .cpu_milli = 64000,
                                      .memory_bytes = 512 * GIB,
                                      .ready = rnd(r) % 10 != 0,
                                      .unschedulable = rnd(r) % 10 == 0,
                                      .gpus = gpus,
                                      .n_gpus = 8};
    assert_int_equal(add ? gt_sched_node_add(m, &spec, NULL) : gt_sched_node_update(m, &spec, NULL),
                     0);
}

static void p_quota(struct gt_sched_model *m, struct rng *r, const char *dept)
{
    int64_t g = (int64_t)(rnd(r) % 24), l = g + (int64_t)(rnd(r) % 24);
    add_dept(m, dept, g, l);
}

/* A project's GPU cap: set to 0..23 GPUs, or removed. */
static void p_cap(struct gt_sched_model *m, struct rng *r, const char *project)
{
    int64_t gpus = (int64_t)(rnd(r) % 28);
    if (gpus < 24) {
        set_cap(m, project, gpus);
    } else {
        (void)gt_sched_project_remove(m, project, NULL);
    }
}

/* Every decision checked against the model; folded into *digest. */
static void p_check(struct gt_sched_model *m, const struct gt_sched_decisions *d,
                    const struct gt_sched_res before[P_DEPTS + P_PROJECTS], uint64_t *digest)
{
    for (int i = 0; i < P_DEPTS; i++) {
        struct gt_sched_res lim, used;
        assert_int_equal(gt_sched_department_get(m, p_depts[i], NULL, &lim, &used), 0);
        assert_true(used.gpu_milli <= lim.gpu_milli || used.gpu_milli <= before[i].gpu_milli);
    }
    for (int i = 0; i < P_PROJECTS; i++) {
        struct gt_sched_res hard, used;
        if (gt_sched_project_get(m, p_projects[i], &hard, &used) == 0) {
            assert_true(used.gpu_milli <= hard.gpu_milli ||
                        used.gpu_milli <= before[P_DEPTS + i].gpu_milli);
        }
    }
    for (size_t b = 0; b < d->n_binds; b++) {
        struct gt_sched_task_info ti;
        assert_int_equal(gt_sched_task_get(m, d->binds[b].task_id, &ti), 0);
        assert_int_equal(ti.state, GT_SCHED_TASK_BOUND);
        assert_string_equal(ti.node, d->binds[b].node);
        for (size_t g = 0; g < d->binds[b].n_gpus; g++) {
            struct gt_sched_gpu_info gi;
            assert_int_equal(gt_sched_gpu_get(m, ti.node, d->binds[b].gpus[g].index, &gi), 0);
            assert_true(gi.healthy && gi.used_milli <= 1000);
            *digest = (*digest ^ (uint64_t)d->binds[b].gpus[g].index) * 1099511628211ULL;
        }
        for (const char *p = d->binds[b].task_id; *p; p++) {
            *digest = (*digest ^ (unsigned char)*p) * 1099511628211ULL;
        }
    }
    for (size_t i = 0; i < d->n_preempts; i++) {
        struct gt_sched_task_info ti;
        assert_int_equal(gt_sched_task_get(m, d->preempts[i].task_id, &ti), 0);
        assert_non_null(ti.node);
        *digest = (*digest ^ 0x9e37) * 1099511628211ULL;
    }
    for (size_t i = 0; i < d->n_reserves; i++) {
        for (size_t g = 0; g < d->reserves[i].n_gpus; g++) {
            struct gt_sched_gpu_info gi;
            assert_int_equal(
                gt_sched_gpu_get(m, d->reserves[i].node, d->reserves[i].gpu_index[g], &gi), 0);
        }
    }
}

static uint64_t p_run(uint64_t seed, long events, size_t *n_binds, size_t *n_preempts)
{
    struct rng r = {seed};
    struct gt_sched_model *m = gt_sched_model_new();
    add_classes(m);
    for (int i = 0; i < P_DEPTS; i++) {
        add_dept(m, p_depts[i], 8, 24);
    }
    bool up[P_NODES];
    for (int i = 0; i < P_NODES; i++) {
        p_node(m, &r, i, true);
        up[i] = true;
    }
    struct p_jobs *pj = gt_xcalloc(1, sizeof(*pj));
    bool *live = pj->live;
    int *gang = pj->tasks;
    for (int j = 0; j < P_JOBS; j++) {
        for (int t = 0; t < P_MAX_TASKS; t++) {
            snprintf(pj->task_id[j][t], sizeof(pj->task_id[j][t]), "j%d-worker-%d", j, t);
        }
    }
    char *evict[256];
    size_t n_evict = 0;
    uint64_t digest = 14695981039346656037ULL;
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    static const char *const pols[] = {"gantry", "gantry", "srtf", "fifo/bestfit",
                                       "tiresias/random"};
    for (long step = 0; step < events; step++) {
        int64_t now = step * 1000;
        int ev = (int)(rnd(&r) % 100), j = (int)(rnd(&r) % P_JOBS), ni = (int)(rnd(&r) % P_NODES);
        char id[16], task[40];
        snprintf(id, sizeof(id), "j%d", j);
        snprintf(task, sizeof(task), "j%d-worker-%d", j, (int)(rnd(&r) % 4));
        if (ev < 20 && !live[j]) { /* arrival */
            static const int64_t sizes[] = {1, 1, 1, 2, 4, 8, 16};
            gang[j] = (int)(rnd(&r) % P_MAX_TASKS) + 1;
            int64_t gpus = sizes[rnd(&r) % 7];
            struct job_opts o = {.project = p_projects[rnd(&r) % (P_PROJECTS + 1)],
                                 .min_available = (int32_t)(rnd(&r) % (uint64_t)(gang[j] + 1))};
            pj->min_available[j] = o.min_available ? o.min_available : gang[j];
            live[j] = add_job_ex(m, id, p_depts[rnd(&r) % P_DEPTS], p_classes[rnd(&r) % 3], now,
                                 gang[j], gpus, &o) == 0;
            assert_true(live[j]);
        } else if (ev < 40 && live[j]) { /* completion or failure of a task */
            struct gt_sched_task_info ti;
            if (gt_sched_task_get(m, task, &ti) == 0 && ti.node) {
                assert_int_equal(gt_sched_task_exit(m, task, rnd(&r) % 2, NULL), 0);
            } else if (gt_sched_task_get(m, task, &ti) == 0 && ti.state == GT_SCHED_TASK_DONE) {
                assert_int_equal(gt_sched_task_set_state(m, task, GT_SCHED_TASK_PENDING, NULL), 0);
            }
        } else if (ev < 45 && live[j]) { /* job deleted */
            for (int t = 0; t < gang[j]; t++) {
                snprintf(task, sizeof(task), "j%d-worker-%d", j, t);
                (void)gt_sched_task_exit(m, task, false, NULL);
            }
            assert_int_equal(gt_sched_job_remove(m, id, NULL), 0);
            live[j] = false;
        } else if (ev < 48) { /* node lost or back */
            char name[16];
            snprintf(name, sizeof(name), "n%d", ni);
            if (up[ni]) {
                assert_int_equal(gt_sched_node_remove(m, name, NULL), 0);
            } else {
                p_node(m, &r, ni, true);
            }
            up[ni] = !up[ni];
        } else if (ev < 52 && up[ni]) { /* health, readiness, cordon */
            p_node(m, &r, ni, false);
        } else if (ev < 53) {
            p_quota(m, &r, p_depts[rnd(&r) % P_DEPTS]);
        } else if (ev < 55) {
            p_cap(m, &r, p_projects[rnd(&r) % P_PROJECTS]);
        } else if (ev < 57) {
            assert_int_equal(gt_sched_priority_class_set(m, "high", (int32_t)(rnd(&r) % 200),
                                                         GT_SCHED_PREEMPT_LOWER, false, NULL),
                             0);
        } else if (ev < 70) { /* preempted victims exit */
            for (size_t i = 0; i < n_evict; i++) {
                (void)gt_sched_task_exit(m, evict[i], true, NULL);
                free(evict[i]);
            }
            n_evict = 0;
        } else {
            struct gt_sched_res before[P_DEPTS + P_PROJECTS] = {0};
            for (int i = 0; i < P_DEPTS; i++) {
                assert_int_equal(gt_sched_department_get(m, p_depts[i], NULL, NULL, &before[i]), 0);
            }
            for (int i = 0; i < P_PROJECTS; i++) {
                (void)gt_sched_project_get(m, p_projects[i], NULL, &before[P_DEPTS + i]);
            }
            for (int i = 0; i < P_JOBS; i++) {
                if (live[i]) {
                    p_count(m, pj, i, &pj->holding[i], &pj->pending[i]);
                }
            }
            run(m, pols[rnd(&r) % 5], now, &d);
            p_check(m, &d, before, &digest);
            p_check_gangs(m, pj, &d);
            *n_binds += d.n_binds;
            *n_preempts += d.n_preempts;
            for (size_t i = 0; i < d.n_preempts && n_evict < 256; i++) {
                evict[n_evict++] = gt_xstrdup(d.preempts[i].task_id);
            }
        }
        check_model(m);
    }
    for (size_t i = 0; i < n_evict; i++) {
        free(evict[i]);
    }
    gt_sched_decisions_fini(&d);
    gt_sched_model_free(m);
    free(pj);
    return digest;
}

/* 100,000 random events (GT_SCHED_PROP_EVENTS to change), same seed twice:
 * every invariant after every step, and the same decisions. */
static void test_property(void **state)
{
    (void)state;
    const char *env = getenv("GT_SCHED_PROP_EVENTS");
    long events = env ? strtol(env, NULL, 10) : 100000;
    uint64_t seed = 0x6a6e7472792026ULL;
    printf("test_property: seed=0x%llx events=%ld\n", (unsigned long long)seed, events);
    size_t b1 = 0, p1 = 0, b2 = 0, p2 = 0;
    uint64_t a = p_run(seed, events, &b1, &p1);
    uint64_t b = p_run(seed, events, &b2, &p2);
    printf("test_property: binds=%zu preempts=%zu digest=%016llx\n", b1, p1, (unsigned long long)a);
    assert_true(a == b && b1 == b2 && p1 == p2);
    assert_true(events < 1000 || (b1 > 100 && p1 > 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_names),
        cmocka_unit_test(test_cap_counts_request),
        cmocka_unit_test(test_negative_request_rejected),
        cmocka_unit_test(test_borrowing),
        cmocka_unit_test(test_project_cap_same_cycle),
        cmocka_unit_test(test_project_cap_counts_request),
        cmocka_unit_test(test_project_cap_raise_and_remove),
        cmocka_unit_test(test_project_cap_never_preempts),
        cmocka_unit_test(test_priority_and_fairness_order),
        cmocka_unit_test(test_head_of_line),
        cmocka_unit_test(test_two_whole_cluster_gangs),
        cmocka_unit_test(test_topology),
        cmocka_unit_test(test_preempt_frees_enough),
        cmocka_unit_test(test_srtf_remaining),
        cmocka_unit_test(test_tiresias_las),
        cmocka_unit_test(test_gantry_restarts_from_scratch),
        cmocka_unit_test(test_gantry_scratch_lost_runs_count),
        cmocka_unit_test(test_gantry_scratch_order_by_gpu_time),
        cmocka_unit_test(test_gantry_las_and_history),
        cmocka_unit_test(test_preempt_rules),
        cmocka_unit_test(test_reclaim_and_no_loop),
        cmocka_unit_test(test_quota_preempts_own_lower),
        cmocka_unit_test(test_quota_preempts_youngest_only),
        cmocka_unit_test(test_quota_no_preempt),
        cmocka_unit_test(test_quota_other_department_spared),
        cmocka_unit_test(test_quota_project_cap_no_preempt),
        cmocka_unit_test(test_backfill_head_reserves),
        cmocka_unit_test(test_backfill_due_is_latest_end),
        cmocka_unit_test(test_backfill_no_deadline_no_lend),
        cmocka_unit_test(test_backfill_outside_reservation),
        cmocka_unit_test(test_backfill_learned_estimates),
        cmocka_unit_test(test_property),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
