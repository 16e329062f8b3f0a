/*
 * Unit tests for the placements (place.c). bestfit and random are the FGD
 * paper's baselines: bestfit takes the feasible node with the least cpu and
 * milli-GPU left (ties drawn from the seeded generator) and the fullest GPU
 * with room for a share; random draws a feasible node, and a GPU with room
 * for a share, uniformly. gantry's light tasks and node choice minimise
 * the growth of fragmentation for the workload seen (frag.c). Each test
 * places one single-task job per cycle through the public API and checks
 * where it went.
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

static void add_node(struct gt_sched_model *m, const char *name, int64_t cpu_milli, int n_gpus)
{
    struct gt_sched_gpu_spec gpus[8];
    for (int i = 0; i < n_gpus; i++) {
        gpus[i] = (struct gt_sched_gpu_spec){.index = i, .healthy = true};
    }
    struct gt_sched_node_spec spec = {.name = name,
                                      .cpu_milli = cpu_milli,
                                      .memory_bytes = 1024 * GIB,
                                      .ready = true,
                                      .gpus = gpus,
                                      .n_gpus = (size_t)n_gpus};
    assert_int_equal(gt_sched_node_add(m, &spec, NULL), 0);
}

/* A model with one department of ample quota, and its decisions. */
struct rig {
    struct gt_sched_model *m;
    struct gt_sched_decisions d;
    const char *policy;
    int64_t seq; /* jobs added */
};

static void rig_init(struct rig *r, const char *policy, uint64_t seed)
{
    r->m = gt_sched_model_new();
    gt_sched_model_set_seed(r->m, seed);
    gt_sched_decisions_init(&r->d);
    r->policy = policy;
    r->seq = 0;
    struct gt_sched_res q = {.cpu_milli = INT64_C(1) << 40,
                             .memory_bytes = INT64_C(1) << 50,
                             .gpu_milli = INT64_C(1) << 40};
    assert_int_equal(gt_sched_department_set(r->m, "d", &q, &q, NULL), 0);
}

static void rig_fini(struct rig *r)
{
    gt_sched_decisions_fini(&r->d);
    gt_sched_model_free(r->m);
}

/* Add a one-task job and run one cycle; its bind, or NULL if the task was
 * not placed (valid until the next call). */
static const struct gt_sched_bind *place(struct rig *r, int64_t cpu_milli, int64_t gpus,
                                         int64_t gpu_milli)
{
    char id[32];
    snprintf(id, sizeof(id), "j%lld", (long long)r->seq);
    struct gt_sched_group_spec g = {
        .name = "w",
        .replicas = 1,
        .req = {.cpu_milli = cpu_milli, .memory_bytes = GIB, .gpus = gpus, .gpu_milli = gpu_milli}};
    struct gt_sched_job_spec spec = {
        .id = id, .department = "d", .arrival_ms = r->seq, .groups = &g, .n_groups = 1};
    assert_int_equal(gt_sched_job_add(r->m, &spec, NULL), 0);
    gt_sched_decisions_reset(&r->d);
    const struct gt_sched_policy *p = gt_sched_policy_by_name(r->policy);
    assert_non_null(p);
    assert_int_equal(gt_sched_cycle(r->m, r->seq, p, &r->d), 0);
    assert_int_equal(gt_sched_model_check(r->m, NULL), 0);
    r->seq++;
    return r->d.n_binds == 1 ? &r->d.binds[0] : NULL;
}

/* Place a task that must fit; check its node and, for a GPU task, the
 * index of its first GPU. */
static void expect(struct rig *r, int64_t cpu_milli, int64_t gpus, int64_t gpu_milli,
                   const char *node, int32_t gpu_index)
{
    const struct gt_sched_bind *b = place(r, cpu_milli, gpus, gpu_milli);
    assert_non_null(b);
    assert_string_equal(b->node, node);
    if (gpus > 0 || gpu_milli > 0) {
        assert_true(b->n_gpus > 0);
        assert_int_equal(b->gpus[0].index, gpu_index);
        assert_int_equal(b->gpus[0].milli, gpus > 0 ? 1000 : gpu_milli);
    } else {
        assert_int_equal(b->n_gpus, 0);
    }
}

/* bestfit: least cpu and GPU left after the task, among nodes it fits;
 * shares on the fullest GPU with room. */
static void test_bestfit_least_left(void **state)
{
    (void)state;
    struct rig r;
    rig_init(&r, "fifo/bestfit", 7);
    add_node(r.m, "big", 96000, 8);
    add_node(r.m, "small", 16000, 2);
    expect(&r, 20000, 1, 0, "big", 0);  /* small lacks the cpu */
    expect(&r, 1000, 1, 0, "small", 0); /* small has less left */
    expect(&r, 1000, 0, 0, "small", 0); /* cpu-only alike */
    expect(&r, 1000, 0, 500, "small", 1);
    expect(&r, 1000, 0, 300, "small", 1); /* the fullest GPU with room */
    expect(&r, 1000, 0, 600, "big", 1);   /* small's GPU 1 has 200 left */
    expect(&r, 1000, 0, 300, "big", 1);   /* big's fullest, not small's */
    expect(&r, 1000, 0, 700, "big", 2);   /* no room on GPU 1: the next free */
    rig_fini(&r);
}

/* bestfit with the GPUs alike: the node with less cpu left wins. */
static void test_bestfit_cpu(void **state)
{
    (void)state;
    struct rig r;
    rig_init(&r, "fifo/bestfit", 7);
    add_node(r.m, "a", 64000, 2);
    add_node(r.m, "b", 32000, 2);
    expect(&r, 1000, 0, 0, "b", 0);
    expect(&r, 1000, 2, 0, "b", 0);
    expect(&r, 1000, 1, 0, "a", 0); /* b has no GPU left */
    rig_fini(&r);
}

/* bestfit ties are drawn from the seeded generator: the same seed picks
 * the same node, different seeds spread over the tied nodes, and the next
 * task then prefers the node the first one filled. */
static void test_bestfit_ties(void **state)
{
    (void)state;
    static const char *const names[] = {"n0", "n1", "n2", "n3"};
    bool seen[4] = {false};
    for (uint64_t seed = 1; seed <= 32; seed++) {
        char first[2][8];
        for (int rep = 0; rep < 2; rep++) {
            struct rig r;
            rig_init(&r, "fifo/bestfit", seed);
            for (size_t i = 0; i < 4; i++) {
                add_node(r.m, names[i], 32000, 4);
            }
            const struct gt_sched_bind *b = place(&r, 1000, 1, 0);
            assert_non_null(b);
            snprintf(first[rep], sizeof(first[rep]), "%s", b->node);
            expect(&r, 1000, 1, 0, first[rep], 1);
            rig_fini(&r);
        }
        assert_string_equal(first[0], first[1]);
        seen[first[0][1] - '0'] = true;
    }
    assert_true(seen[0] && seen[1] && seen[2] && seen[3]);
}

/* random: nodes drawn uniformly among those the task fits, never one it
 * does not; deterministic per seed. */
static void test_random_nodes(void **state)
{
    (void)state;
    static const char *const names[] = {"n0", "n1", "n2", "tiny"};
    size_t count[2][4] = {{0}};
    for (int rep = 0; rep < 2; rep++) {
        struct rig r;
        rig_init(&r, "fifo/random", 42);
        for (size_t i = 0; i < 4; i++) {
            add_node(r.m, names[i], i < 3 ? 64000 : 50, 8);
        }
        for (int k = 0; k < 600; k++) {
            const struct gt_sched_bind *b = place(&r, 100, 0, 0);
            assert_non_null(b);
            for (size_t i = 0; i < 4; i++) {
                count[rep][i] += strcmp(b->node, names[i]) == 0;
            }
        }
        rig_fini(&r);
    }
    assert_memory_equal(count[0], count[1], sizeof(count[0]));
    for (size_t i = 0; i < 3; i++) {
        /* 200 expected each, standard deviation about 11.5. */
        assert_in_range(count[0][i], 150, 250);
    }
    assert_int_equal(count[0][3], 0);
}

/* random: a share goes on a GPU drawn among those with room, where
 * bestfit fills the fullest first. */
static void test_random_shares(void **state)
{
    (void)state;
    struct rig r;
    rig_init(&r, "fifo/random", 42);
    add_node(r.m, "n", 64000, 8);
    int32_t used[8] = {0};
    for (int k = 0; k < 40; k++) {
        const struct gt_sched_bind *b = place(&r, 100, 0, 100);
        assert_non_null(b);
        assert_int_equal(b->n_gpus, 1);
        used[b->gpus[0].index] += 100;
    }
    size_t touched = 0;
    for (size_t i = 0; i < 8; i++) {
        assert_true(used[i] <= 1000);
        touched += used[i] > 0;
    }
    assert_true(touched >= 6); /* bestfit would touch 4 */
    rig_fini(&r);
    rig_init(&r, "fifo/bestfit", 42);
    add_node(r.m, "n", 64000, 8);
    for (int k = 0; k < 40; k++) {
        expect(&r, 100, 0, 100, "n", k / 10);
    }
    rig_fini(&r);
}

/* Bind a one-task job (counted in the workload like any arrival) onto
 * node, on GPU index gpu when gpus > 0. */
static void hold(struct rig *r, const char *node, int64_t cpu_milli, int64_t gpus, int32_t gpu)
{
    char id[32], task[40];
    snprintf(id, sizeof(id), "h%lld", (long long)r->seq);
    snprintf(task, sizeof(task), "%s-w-0", id);
    struct gt_sched_group_spec g = {
        .name = "w",
        .replicas = 1,
        .req = {.cpu_milli = cpu_milli, .memory_bytes = GIB, .gpus = gpus}};
    struct gt_sched_job_spec spec = {
        .id = id, .department = "d", .arrival_ms = r->seq, .groups = &g, .n_groups = 1};
    assert_int_equal(gt_sched_job_add(r->m, &spec, NULL), 0);
    struct gt_sched_gpu_share share = {.index = gpu, .milli = 1000};
    assert_int_equal(gt_sched_task_bind(r->m, task, node, &share, gpus > 0 ? 1 : 0, r->seq, NULL),
                     0);
    r->seq++;
}

/* gantry: a share goes where it grows the node's fragmentation for the
 * recent workload least, not on the fullest GPU: after a 500 share, a 300
 * share would leave 200 next to it, too little for a 500, so it opens the
 * other GPU; a 200 share then joins the 300 (leaving 500), not the 500
 * (leaving 300). */
static void test_gantry_share_frag(void **state)
{
    (void)state;
    struct rig r;
    rig_init(&r, "fifo", 1);
    add_node(r.m, "a", 64000, 1);
    add_node(r.m, "b", 64000, 1);
    const struct gt_sched_bind *first = place(&r, 100, 0, 500);
    assert_non_null(first);
    char *n500 = gt_xstrdup(first->node);
    const char *other = strcmp(n500, "a") == 0 ? "b" : "a";
    expect(&r, 100, 0, 300, other, 0);
    expect(&r, 100, 0, 200, other, 0);
    struct gt_sched_gpu_info gi;
    assert_int_equal(gt_sched_gpu_get(r.m, other, 0, &gi), 0);
    assert_int_equal(gi.used_milli, 500);
    free(n500);
    rig_fini(&r);
}

/* gantry: a cpu-only task keeps away from a node where its cpu would strand
 * a free GPU (the GPU tasks seen ask 4 cores each), though that node has
 * the fewest free GPUs; a whole-GPU task likewise takes the node whose
 * remaining GPU keeps enough cpu. */
static void test_gantry_cpu_frag(void **state)
{
    (void)state;
    struct rig r;
    rig_init(&r, "fifo", 1);
    add_node(r.m, "a", 10000, 2);
    add_node(r.m, "b", 64000, 4);
    hold(&r, "a", 4000, 1, 0); /* a: 1 GPU and 6 cores free */
    expect(&r, 4000, 0, 0, "b", 0);
    rig_fini(&r);

    rig_init(&r, "fifo", 1);
    add_node(r.m, "a", 10000, 2);
    add_node(r.m, "b", 64000, 4);
    hold(&r, "b", 8000, 1, 0);      /* b: 3 GPUs free; a: 2 GPUs, 10 cores */
    expect(&r, 8000, 1, 0, "b", 1); /* on a, the other GPU would keep 2 cores */
    rig_fini(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bestfit_least_left), cmocka_unit_test(test_bestfit_cpu),
        cmocka_unit_test(test_bestfit_ties),       cmocka_unit_test(test_random_nodes),
        cmocka_unit_test(test_random_shares),      cmocka_unit_test(test_gantry_share_frag),
        cmocka_unit_test(test_gantry_cpu_frag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
