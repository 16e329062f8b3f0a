/*
 * Unit tests of the controllers' pure parts: Tasks built from a Job, the
 * runAsUser admission rule, job status derived from task phases, a node's
 * computed status.allocated, and the node-lost decision.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/server.h"
#include "test_server_util.h"

static json_t *load(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    return j;
}

static const char *JOB =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"train\","
    "\"project\":\"p\",\"uid\":\"u1\",\"creator\":{\"user\":\"alice\",\"uid\":1001}},"
    "\"spec\":{\"replicaSpecs\":{\"Master\":{\"replicas\":1,\"template\":{\"command\":[\"x\"]}},"
    "\"Worker\":{\"replicas\":2,\"template\":{\"command\":[\"x\"],\"runAsUser\":1001,"
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\",\"cpu\":\"1\"}}}}}},"
    "\"status\":{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\"}]}}";

static void test_build_tasks(void **state)
{
    (void)state;
    struct gt_api_job *job = gt_api_job_new(load(JOB));
    json_decref(job->o.json); /* the typed job holds its own reference */
    struct gt_job_task_opts o = {.department = "d", .priority = 7, .privileged = false};
    json_t *tasks = gt_job_build_tasks(job, &o);
    assert_int_equal(json_array_size(tasks), 3);
    json_t *w1 = json_array_get(tasks, 2);
    assert_string_equal(gt_obj_name(w1), "train-worker-1");
    assert_string_equal(
        json_string_value(json_object_get(gt_json_path(w1, "metadata.labels"), "gantry.dev/job")),
        "train");
    assert_string_equal(json_string_value(gt_json_path(w1, "spec.replicaType")), "Worker");
    assert_int_equal(json_integer_value(gt_json_path(w1, "spec.replicaIndex")), 1);
    assert_int_equal(json_integer_value(gt_json_path(w1, "spec.priority")), 7);
    assert_string_equal(json_string_value(gt_json_path(w1, "spec.department")), "d");
    assert_string_equal(json_string_value(gt_json_path(w1, "metadata.creator.user")), "alice");
    assert_true(json_is_false(gt_json_path(w1, "spec.privileged")));
    struct gt_err err = {0};
    json_t *copy = json_deep_copy(w1);
    assert_int_equal(gt_api_validate(GT_KIND_TASK, copy, &err), 0);
    json_decref(copy);
    json_decref(tasks);
    assert_int_equal(gt_job_check_run_as(job, 1001, false, &err), 0);
    assert_int_equal(gt_job_check_run_as(job, 1002, false, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "spec.replicaSpecs.Worker.template.runAsUser"));
    assert_int_equal(gt_job_check_run_as(job, 1002, true, NULL), 0);
    gt_api_job_free(job);
}

static json_t *task(const char *type, const char *phase)
{
    return json_pack("{s:{s:s, s:s}, s:{s:s}, s:{s:s}}", "metadata", "name", "t", "project", "p",
                     "spec", "replicaType", type, "status", "phase", phase);
}

static const char *cond_true(const json_t *st)
{
    size_t i;
    json_t *c;
    const char *last = NULL;
    json_array_foreach(json_object_get(st, "conditions"), i, c)
    {
        if (!strcmp(json_string_value(json_object_get(c, "status")), "True")) {
            last = json_string_value(json_object_get(c, "type"));
        }
    }
    return last;
}

/* Decide, then derive, as the job controller does. */
static json_t *derive(const json_t *job, json_t *const *t, size_t n, const char *wait,
                      int64_t now_ms)
{
    struct gt_job_decision d;
    decide_json(job, t, n, now_ms, 10000, &d);
    return derive_json(job, t, n, &d, wait, now_ms);
}

static void test_derive_status(void **state)
{
    (void)state;
    json_t *job = load(JOB);
    json_t *t[3] = {task("Master", "Pending"), task("Worker", "Bound"), task("Worker", "Pending")};
    json_t *st = derive(job, t, 3, "no room", 1000);
    assert_string_equal(cond_true(st), "Queued");
    json_object_set(job, "status", st);
    json_t *again = derive(job, t, 3, "no room", 5000);
    assert_true(json_equal(st, again)); /* stable: no needless writes */
    json_decref(again);
    json_decref(st);

    json_object_set_new(json_object_get(t[1], "status"), "phase", json_string("Running"));
    st = derive(job, t, 3, NULL, 2000);
    assert_string_equal(cond_true(st), "Running");
    assert_non_null(json_object_get(st, "startTime"));
    assert_int_equal(json_integer_value(gt_json_path(st, "replicaStatuses.Worker.active")), 2);
    json_decref(st);

    /* the Master's success ends the job */
    json_object_set_new(json_object_get(t[0], "status"), "phase", json_string("Succeeded"));
    st = derive(job, t, 3, NULL, 3000);
    assert_string_equal(cond_true(st), "Succeeded");
    assert_non_null(json_object_get(st, "completionTime"));
    json_object_set(job, "status", st);
    assert_true(finished_json(job));
    json_decref(st);

    /* finished is sticky */
    json_object_set_new(json_object_get(t[2], "status"), "phase", json_string("Failed"));
    st = derive(job, t, 3, NULL, 4000);
    assert_string_equal(cond_true(st), "Succeeded");
    json_decref(st);

    /* a fresh job with a failed task fails */
    json_decref(job);
    job = load(JOB);
    st = derive(job, t, 3, NULL, 4000);
    assert_string_equal(cond_true(st), "Failed");
    json_decref(st);
    for (int i = 0; i < 3; i++) {
        json_decref(t[i]);
    }
    json_decref(job);
}

static const json_t *find_cond(const json_t *st, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(st, "conditions"), i, c)
    {
        if (!strcmp(json_string_value(json_object_get(c, "type")), type)) {
            return c;
        }
    }
    return NULL;
}

static const char *field(const json_t *c, const char *key)
{
    return json_string_value(json_object_get(c, key));
}

/* The Inadmissible condition follows the scheduler's verdict: True with
 * the verdict's code as reason while it stands, False (Admissible) once it
 * clears; the phase stays the last True condition. */
static void test_inadmissible_condition(void **state)
{
    (void)state;
    json_t *job = load(JOB);
    json_t *t[3] = {task("Master", "Pending"), task("Worker", "Pending"),
                    task("Worker", "Pending")};
    json_t *st = derive(job, t, 3,
                        "Inadmissible: ExceedsDepartmentLimit: the gang of 3 tasks needs "
                        "nvidia.com/gpu 3 but department d's limit is 2 (spec.limit)",
                        1000);
    assert_string_equal(cond_true(st), "Queued");
    const json_t *c = find_cond(st, "Inadmissible");
    assert_non_null(c);
    assert_string_equal(field(c, "status"), "True");
    assert_string_equal(field(c, "reason"), "ExceedsDepartmentLimit");
    assert_string_equal(field(c, "message"), "the gang of 3 tasks needs nvidia.com/gpu 3 but "
                                             "department d's limit is 2 (spec.limit)");
    assert_non_null(strstr(field(find_cond(st, "Queued"), "message"), "Inadmissible: "));
    json_object_set_new(job, "status", st);

    /* no verdict yet (after a restart): kept as it was */
    st = derive(job, t, 3, NULL, 2000);
    assert_string_equal(field(find_cond(st, "Inadmissible"), "status"), "True");
    json_decref(st);

    /* the limit was raised: it now waits for room, and is admissible */
    st = derive(job, t, 3, "Unschedulable: no node fits", 3000);
    c = find_cond(st, "Inadmissible");
    assert_string_equal(field(c, "status"), "False");
    assert_string_equal(field(c, "reason"), "Admissible");
    assert_string_equal(cond_true(st), "Queued");
    json_object_set_new(job, "status", st);
    json_t *again = derive(job, t, 3, "Unschedulable: no node fits", 4000);
    assert_true(json_equal(json_object_get(job, "status"), again)); /* stable */
    json_decref(again);

    /* bound at once after the verdict cleared: no longer Inadmissible,
     * though the last wait still says so */
    json_object_set_new(json_object_get(t[1], "status"), "phase", json_string("Bound"));
    st = derive(job, t, 3, "Inadmissible: ExceedsDepartmentLimit: old", 5000);
    assert_string_equal(field(find_cond(st, "Inadmissible"), "status"), "False");
    json_decref(st);
    json_object_set_new(json_object_get(t[1], "status"), "phase", json_string("Pending"));

    /* a job that never was Inadmissible has no such condition */
    json_t *fresh = load(JOB);
    st = derive(fresh, t, 3, "Quota: department d: needs nvidia.com/gpu 3", 1000);
    assert_null(find_cond(st, "Inadmissible"));
    json_decref(st);
    json_decref(fresh);
    for (size_t i = 0; i < 3; i++) {
        json_decref(t[i]);
    }
    json_decref(job);
}

static void test_allocated(void **state)
{
    (void)state;
    json_t *t[3] = {
        load("{\"metadata\":{\"name\":\"a\",\"project\":\"p\"},\"spec\":{\"nodeName\":\"n1\","
             "\"template\":{\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"1024\"}}},"
             "\"gpus\":[{\"index\":3,\"uuid\":\"G3\",\"milli\":1000}]},"
             "\"status\":{\"phase\":\"Running\"}}"),
        load("{\"metadata\":{\"name\":\"b\",\"project\":\"p\"},\"spec\":{\"nodeName\":\"n1\","
             "\"template\":{},\"gpus\":[{\"index\":4,\"milli\":1000}]},"
             "\"status\":{\"phase\":\"Succeeded\"}}"),
        load("{\"metadata\":{\"name\":\"c\",\"project\":\"p\"},\"spec\":{\"nodeName\":\"n2\","
             "\"template\":{},\"gpus\":[{\"index\":0,\"milli\":1000}]},"
             "\"status\":{\"phase\":\"Bound\"}}"),
    };
    json_t *a = allocated_json("n1", t, 3);
    assert_int_equal(json_array_size(json_object_get(a, "gpus")), 1);
    assert_string_equal(json_string_value(gt_json_path(a, "resources.cpu")), "2000m");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(a, "resources"), "nvidia.com/gpu")), "1");
    json_t *g = json_array_get(json_object_get(a, "gpus"), 0);
    assert_string_equal(json_string_value(json_object_get(g, "task")), "p/a");
    assert_string_equal(json_string_value(json_object_get(g, "uuid")), "G3");
    json_decref(a);
    for (int i = 0; i < 3; i++) {
        json_decref(t[i]);
    }
}

static void test_node_lost(void **state)
{
    (void)state;
    json_t *n = load("{\"metadata\":{\"name\":\"n1\"},\"status\":{\"conditions\":[{\"type\":"
                     "\"Ready\",\"status\":\"True\",\"lastHeartbeatTime\":"
                     "\"2024-01-01T00:00:00Z\"}]}}");
    int64_t hb = 0;
    assert_int_equal(gt_time_parse("2024-01-01T00:00:00Z", &hb), 0);
    assert_false(lost_json(n, hb + 40000, 40000, 0));
    assert_true(lost_json(n, hb + 40001, 40000, 0));
    /* gantryd just started: the grace counts from then */
    assert_false(lost_json(n, hb + 50000, 40000, hb + 20000));
    json_object_set_new(json_array_get(gt_json_path(n, "status.conditions"), 0), "status",
                        json_string("False"));
    assert_false(lost_json(n, hb + 90000, 40000, 0)); /* already NotReady */
    json_decref(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_tasks),
        cmocka_unit_test(test_derive_status),
        cmocka_unit_test(test_inadmissible_condition),
        cmocka_unit_test(test_allocated),
        cmocka_unit_test(test_node_lost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
