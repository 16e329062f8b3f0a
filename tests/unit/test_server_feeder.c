/*
 * Unit tests of the scheduler wiring's pure parts: a department's computed
 * status (used and borrowed) from a real scheduler model, a Project's
 * spec.hard fed to the model as its hard cap, the drain test of a Node, and
 * the resource amounts status fields show.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/sched.h"
#include "server/server.h"

static const char *res_at(const json_t *st, const char *which, const char *res)
{
    return json_string_value(json_object_get(json_object_get(st, which), res));
}

static void test_department_status_used_and_borrowed(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    struct gt_sched_gpu_spec gpus[8];
    for (int i = 0; i < 8; i++) {
        gpus[i] = (struct gt_sched_gpu_spec){.index = i, .group = i / 4, .healthy = true};
    }
    struct gt_sched_node_spec node = {.name = "n1",
                                      .cpu_milli = 64000,
                                      .memory_bytes = 1LL << 40,
                                      .ready = true,
                                      .gpus = gpus,
                                      .n_gpus = 8};
    assert_int_equal(gt_sched_node_add(m, &node, NULL), 0);
    struct gt_sched_res g = {.cpu_milli = 8000, .memory_bytes = 1LL << 33, .gpu_milli = 4000};
    struct gt_sched_res l = {.cpu_milli = 8000, .memory_bytes = 1LL << 33, .gpu_milli = 8000};
    assert_int_equal(gt_sched_department_set(m, "cv", &g, &l, NULL), 0);
    assert_null(gt_department_status(m, "nlp"));

    json_t *st = gt_department_status(m, "cv");
    assert_string_equal(res_at(st, "used", "nvidia.com/gpu"), "0");
    assert_string_equal(res_at(st, "borrowed", "nvidia.com/gpu"), "0");
    json_decref(st);

    struct gt_sched_group_spec grp = {.name = "worker",
                                      .replicas = 6,
                                      .req = {.cpu_milli = 500, .memory_bytes = 1024, .gpus = 1}};
    struct gt_sched_job_spec job = {
        .id = "p/j", .department = "cv", .project = "p", .groups = &grp, .n_groups = 1};
    assert_int_equal(gt_sched_job_add(m, &job, NULL), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    gt_sched_cycle(m, 1000, gt_sched_policy_by_name("gantry"), &d);
    assert_int_equal(d.n_binds, 6);
    gt_sched_decisions_fini(&d);

    st = gt_department_status(m, "cv");
    assert_string_equal(res_at(st, "used", "nvidia.com/gpu"), "6");
    assert_string_equal(res_at(st, "used", "cpu"), "3000m");
    assert_string_equal(res_at(st, "used", "memory"), "6144");
    /* borrowed: only what is above the guarantee, per resource */
    assert_string_equal(res_at(st, "borrowed", "nvidia.com/gpu"), "2");
    assert_string_equal(res_at(st, "borrowed", "cpu"), "0m");
    json_decref(st);
    gt_sched_model_free(m);
}

static size_t cycle_binds(struct gt_sched_model *m, int64_t now_ms, char **wait)
{
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    gt_sched_cycle(m, now_ms, gt_sched_policy_by_name("gantry"), &d);
    size_t n = d.n_binds;
    *wait = d.n_waits ? gt_xstrdup(d.waits[0].message) : NULL;
    gt_sched_decisions_fini(&d);
    return n;
}

/* spec.hard caps the resources it names; without it the cap is gone. */
static void test_project_cap_from_spec_hard(void **state)
{
    (void)state;
    struct gt_sched_model *m = gt_sched_model_new();
    struct gt_sched_gpu_spec gpus[8];
    for (int i = 0; i < 8; i++) {
        gpus[i] = (struct gt_sched_gpu_spec){.index = i, .group = i / 4, .healthy = true};
    }
    struct gt_sched_node_spec node = {.name = "n1",
                                      .cpu_milli = 64000,
                                      .memory_bytes = 1LL << 40,
                                      .ready = true,
                                      .gpus = gpus,
                                      .n_gpus = 8};
    assert_int_equal(gt_sched_node_add(m, &node, NULL), 0);
    struct gt_sched_res q = {.cpu_milli = 64000, .memory_bytes = 1LL << 40, .gpu_milli = 8000};
    assert_int_equal(gt_sched_department_set(m, "cv", &q, &q, NULL), 0);

    json_t *p = json_loads("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"department\":\"cv\","
                           "\"hard\":{\"nvidia.com/gpu\":\"2\",\"cpu\":\"1500m\"}}}",
                           0, NULL);
    assert_non_null(p);
    assert_int_equal(gt_project_cap_sync(m, "p", p, NULL), 0);
    struct gt_sched_res hard;
    assert_int_equal(gt_sched_project_get(m, "p", &hard, NULL), 0);
    assert_int_equal(hard.gpu_milli, 2000);
    assert_int_equal(hard.cpu_milli, 1500);
    assert_int_equal(hard.memory_bytes, GT_SCHED_NO_CAP);
    assert_int_equal(hard.storage_bytes, GT_SCHED_NO_CAP);

    struct gt_sched_group_spec grp = {
        .name = "worker", .replicas = 3, .req = {.cpu_milli = 500, .gpus = 1}};
    struct gt_sched_job_spec job = {
        .id = "p/j", .department = "cv", .project = "p", .groups = &grp, .n_groups = 1};
    assert_int_equal(gt_sched_job_add(m, &job, NULL), 0);
    char *wait;
    assert_int_equal(cycle_binds(m, 1000, &wait), 0);
    assert_non_null(wait);
    assert_non_null(strstr(wait, "project p needs gpu_milli 3000, hard cap 2000 reached"));
    free(wait);

    /* spec.hard gone (edited out, or the Project deleted): no cap. */
    json_object_del(json_object_get(p, "spec"), "hard");
    assert_int_equal(gt_project_cap_sync(m, "p", p, NULL), 0);
    assert_int_equal(gt_project_cap_sync(m, "p", NULL, NULL), 0);
    assert_int_equal(gt_sched_project_get(m, "p", &hard, NULL), 0); /* its job keeps it */
    assert_int_equal(hard.gpu_milli, GT_SCHED_NO_CAP);
    assert_int_equal(cycle_binds(m, 2000, &wait), 3);
    free(wait);
    json_decref(p);
    gt_sched_model_free(m);
}

static void test_resources_json_fractions(void **state)
{
    (void)state;
    json_t *r = gt_resources_json(1500, 1 << 20, 2500);
    assert_string_equal(json_string_value(json_object_get(r, "nvidia.com/gpu")), "2500m");
    assert_string_equal(json_string_value(json_object_get(r, "cpu")), "1500m");
    assert_string_equal(json_string_value(json_object_get(r, "memory")), "1048576");
    json_decref(r);
}

static void test_node_draining_needs_no_execute(void **state)
{
    (void)state;
    json_t *n = json_loads("{\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"x\","
                           "\"effect\":\"NoSchedule\"}]}}",
                           0, NULL);
    assert_false(gt_node_draining(n)); /* cordoned only */
    json_array_append_new(
        json_object_get(json_object_get(n, "spec"), "taints"),
        json_pack("{s:s, s:s}", "key", "gantry.dev/drain", "effect", "NoExecute"));
    assert_true(gt_node_draining(n));
    json_decref(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_department_status_used_and_borrowed),
        cmocka_unit_test(test_project_cap_from_spec_hard),
        cmocka_unit_test(test_resources_json_fractions),
        cmocka_unit_test(test_node_draining_needs_no_execute),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
