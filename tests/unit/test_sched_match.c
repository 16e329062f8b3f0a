/*
 * Node labels and taints against nodeSelector and tolerations
 * (src/sched/match.c): Kubernetes' toleration rules one by one, then
 * through whole cycles of every policy: a selector picks the only matching
 * node, a NoSchedule taint keeps off a task without its toleration, a
 * PreferNoSchedule one does not, and a job no node admits waits
 * Inadmissible with NoNodeMatches naming its selector, until a node is
 * labelled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sched/sched.h"

#define GIB (INT64_C(1) << 30)

static void test_tolerates(void **state)
{
    (void)state;
    const struct gt_sched_taint t = {
        .key = "dedicated", .value = "infer", .effect = GT_SCHED_NO_SCHEDULE};
    static const struct {
        struct gt_sched_toleration tol;
        bool want;
    } cases[] = {
        {{.key = "dedicated", .value = "infer", .effect = GT_SCHED_NO_SCHEDULE}, true},
        {{.key = "dedicated", .value = "infer"}, true}, /* no effect: every effect */
        {{.key = "dedicated", .value = "train"}, false},
        {{.key = "dedicated", .exists = true}, true},
        {{.key = "dedicated", .exists = true, .effect = GT_SCHED_NO_EXECUTE}, false},
        {{.key = "other", .exists = true}, false},
        {{.exists = true}, true}, /* empty key, Exists: everything */
        {{.key = "", .exists = true, .effect = GT_SCHED_NO_SCHEDULE}, true},
        {{.key = "", .value = "infer"}, false}, /* empty key needs Exists */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (gt_sched_tolerates(&cases[i].tol, 1, &t) != cases[i].want) {
            fail_msg("case %zu", i);
        }
    }
    assert_false(gt_sched_tolerates(NULL, 0, &t));
    assert_int_equal(gt_sched_effect_of("NoExecute"), GT_SCHED_NO_EXECUTE);
    assert_int_equal(gt_sched_effect_of("PreferNoSchedule"), GT_SCHED_PREFER_NO_SCHEDULE);
    assert_int_equal(gt_sched_effect_of(NULL), GT_SCHED_EFFECT_ANY);
    assert_int_equal(gt_sched_effect_of("Sometimes"), GT_SCHED_EFFECT_ANY);
}

static void add_node(struct gt_sched_model *m, const char *name, const char *const *labels,
                     size_t n_labels, const struct gt_sched_taint *taints, size_t n_taints,
                     bool update)
{
    struct gt_sched_gpu_spec gpus[2] = {{.index = 0, .healthy = true},
                                        {.index = 1, .healthy = true}};
    struct gt_sched_node_spec spec = {.name = name,
                                      .cpu_milli = 8000,
                                      .memory_bytes = 64 * GIB,
                                      .ready = true,
                                      .gpus = gpus,
                                      .n_gpus = 2,
                                      .labels = labels,
                                      .n_labels = n_labels,
                                      .taints = taints,
                                      .n_taints = n_taints};
    assert_int_equal(
        update ? gt_sched_node_update(m, &spec, NULL) : gt_sched_node_add(m, &spec, NULL), 0);
}

/* Add a one-task, one-GPU job and run a cycle of policy; the node it was
 * bound to, or NULL (then *wait gets its wait message, if any). */
static const char *place(struct gt_sched_model *m, const char *policy, const char *id,
                         const char *const *selector, size_t n_selector,
                         const struct gt_sched_toleration *tols, size_t n_tols, char *wait,
                         size_t wait_len)
{
    struct gt_sched_group_spec g = {.name = "worker",
                                    .replicas = 1,
                                    .req = {.cpu_milli = 1000, .memory_bytes = GIB, .gpus = 1},
                                    .node_selector = selector,
                                    .n_node_selector = n_selector,
                                    .tolerations = tols,
                                    .n_tolerations = n_tols};
    struct gt_sched_job_spec spec = {
        .id = id, .department = "d", .arrival_ms = 1, .groups = &g, .n_groups = 1};
    if (id) {
        assert_int_equal(gt_sched_job_add(m, &spec, NULL), 0);
    }
    static struct gt_sched_decisions d;
    static char node[32];
    gt_sched_decisions_init(&d);
    assert_int_equal(gt_sched_cycle(m, 10, gt_sched_policy_by_name(policy), &d), 0);
    assert_int_equal(gt_sched_model_check(m, NULL), 0);
    const char *out = NULL;
    if (d.n_binds == 1) {
        snprintf(node, sizeof(node), "%s", d.binds[0].node);
        out = node;
    }
    if (wait) {
        wait[0] = '\0';
        for (size_t i = 0; i < d.n_waits; i++) {
            snprintf(wait, wait_len, "%s", d.waits[i].message ? d.waits[i].message : "");
        }
    }
    gt_sched_decisions_fini(&d);
    return out;
}

static void test_cycles(void **state)
{
    (void)state;
    /* fifo and sjf block behind the waiting head job: not what is tested here */
    static const char *const policies[] = {"gantry", "firstfit", "bestfit", "random"};
    for (size_t p = 0; p < sizeof(policies) / sizeof(policies[0]); p++) {
        const char *policy = policies[p];
        if (!gt_sched_policy_by_name(policy)) {
            continue;
        }
        struct gt_sched_model *m = gt_sched_model_new();
        struct gt_sched_res q = {
            .cpu_milli = 1 << 20, .memory_bytes = INT64_C(1) << 40, .gpu_milli = 1 << 20};
        assert_int_equal(gt_sched_department_set(m, "d", &q, &q, NULL), 0);
        const char *const a100[] = {"nvidia.com/gpu.product=A100-80GB", "zone=a"};
        const char *const h100[] = {"nvidia.com/gpu.product=H100-80GB", "zone=a"};
        const struct gt_sched_taint infer = {
            .key = "dedicated", .value = "infer", .effect = GT_SCHED_NO_SCHEDULE};
        const struct gt_sched_taint soft = {.key = "spot", .effect = GT_SCHED_PREFER_NO_SCHEDULE};
        add_node(m, "n1", a100, 2, &soft, 1, false);
        add_node(m, "n2", h100, 2, NULL, 0, false);
        const char *const want_h100[] = {"nvidia.com/gpu.product=H100-80GB"};
        const char *const want_a100[] = {"nvidia.com/gpu.product=A100-80GB", "zone=a"};
        char wait[512];
        const char *got = place(m, policy, "h", want_h100, 1, NULL, 0, NULL, 0);
        assert_non_null(got);
        assert_string_equal(got, "n2");
        got = place(m, policy, "a", want_a100, 2, NULL, 0, NULL, 0); /* PreferNoSchedule: fine */
        assert_non_null(got);
        assert_string_equal(got, "n1");
        /* n1 tainted NoSchedule: a plain A100 task waits, Inadmissible */
        add_node(m, "n1", a100, 2, &infer, 1, true);
        got = place(m, policy, "a2", want_a100, 2, NULL, 0, wait, sizeof(wait));
        assert_null(got);
        assert_non_null(strstr(wait, "NoNodeMatches: no Ready node takes a worker task "
                                     "(nodeSelector nvidia.com/gpu.product=A100-80GB zone=a, 0 "
                                     "tolerations): n1: taint dedicated=infer:NoSchedule not "
                                     "tolerated; n2: no label nvidia.com/gpu.product=A100-80GB"));
        /* a tolerating one goes there */
        const struct gt_sched_toleration tol = {.key = "dedicated", .value = "infer"};
        got = place(m, policy, "a3", want_a100, 2, &tol, 1, wait, sizeof(wait));
        if (!got) {
            fail_msg("%s: a3 waits: %s", policy, wait);
        }
        assert_string_equal(got, "n1");
        /* the waiting one starts once n2 (with free GPUs) gets its labels */
        const char *const h100_labelled[] = {"nvidia.com/gpu.product=A100-80GB", "zone=a",
                                             "extra=1"};
        add_node(m, "n2", h100_labelled, 3, NULL, 0, true);
        got = place(m, policy, NULL, NULL, 0, NULL, 0, NULL, 0);
        assert_non_null(got);
        assert_string_equal(got, "n2");
        gt_sched_model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tolerates),
        cmocka_unit_test(test_cycles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
