/*
 * ephemeral-storage and emptyDir scratch: the quantity is accepted in a
 * template's requests and limits (canonical bytes, not pooled), and the
 * disk emptyDirs' sizeLimits must fit in the limit (else the request),
 * leaving room for those without one; Memory-medium ones do not count.
 * Refusals name the sizeLimit, the ephemeral-storage field and both
 * amounts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/api.h"

/* A Job (kind GT_KIND_JOB) or Task whose template has the resources
 * resources and whose spec has the volumes volumes (JSON texts). */
static json_t *make(enum gt_kind kind, const char *resources, const char *volumes)
{
    char text[2048];
    char tmpl[1024];
    snprintf(tmpl, sizeof(tmpl), "{\"command\":[\"x\"],\"resources\":%s}", resources);
    if (kind == GT_KIND_JOB) {
        snprintf(text, sizeof(text),
                 "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\","
                 "\"metadata\":{\"name\":\"j\",\"project\":\"vision\"},"
                 "\"spec\":{\"replicaSpecs\":{\"Worker\":{\"template\":%s}},\"volumes\":%s}}",
                 tmpl, volumes);
    } else {
        snprintf(text, sizeof(text),
                 "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Task\","
                 "\"metadata\":{\"name\":\"j-worker-0\",\"project\":\"vision\"},"
                 "\"spec\":{\"template\":%s,\"volumes\":%s}}",
                 tmpl, volumes);
    }
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    if (!v) {
        fail_msg("bad test JSON: %s: %s", jerr.text, text);
    }
    return v;
}

/* Validate; want NULL: must pass, else the error must contain want. */
static void check(enum gt_kind kind, const char *resources, const char *volumes, const char *want)
{
    json_t *v = make(kind, resources, volumes);
    struct gt_err err = {0};
    int rc = gt_api_validate(kind, v, &err);
    if (!want && rc != 0) {
        fail_msg("%s / %s: refused: %s", resources, volumes, err.msg);
    }
    if (want && (rc != GT_EINVAL || !strstr(err.msg, want))) {
        fail_msg("%s / %s: rc=%d \"%s\", want \"%s\"", resources, volumes, rc, err.msg, want);
    }
    json_decref(v);
}

#define LIM16 "{\"limits\":{\"ephemeral-storage\":\"16Mi\"}}"
#define JOB_LIMIT "spec.replicaSpecs.Worker.template.resources.limits.ephemeral-storage"

static void test_size_limits_fit(void **state)
{
    (void)state;
    /* an emptyDir without a sizeLimit gets the rest */
    check(GT_KIND_JOB, LIM16, "[{\"name\":\"a\",\"emptyDir\":{}}]", NULL);
    check(GT_KIND_JOB, LIM16,
          "[{\"name\":\"a\",\"emptyDir\":{\"sizeLimit\":\"8Mi\"}},"
          "{\"name\":\"b\",\"emptyDir\":{\"sizeLimit\":8388608}}]",
          NULL);
    /* Memory-medium scratch counts in memory, not here */
    check(GT_KIND_JOB, LIM16,
          "[{\"name\":\"a\",\"emptyDir\":{\"sizeLimit\":\"16Mi\"}},"
          "{\"name\":\"m\",\"emptyDir\":{\"medium\":\"Memory\",\"sizeLimit\":\"1Gi\"}}]",
          NULL);
    /* no ephemeral-storage: no bound from it */
    check(GT_KIND_JOB, "{\"limits\":{\"cpu\":\"1\"}}",
          "[{\"name\":\"a\",\"emptyDir\":{\"sizeLimit\":\"1Ti\"}}]", NULL);
    check(GT_KIND_TASK, LIM16, "[{\"name\":\"a\",\"emptyDir\":{\"sizeLimit\":\"16Mi\"}}]", NULL);
}

static void test_size_limits_past_the_limit_refused(void **state)
{
    (void)state;
    const char *two = "[{\"name\":\"a\",\"emptyDir\":{\"sizeLimit\":\"8Mi\"}},"
                      "{\"name\":\"b\",\"emptyDir\":{\"sizeLimit\":12582912}}]";
    check(GT_KIND_JOB, LIM16, two,
          "spec.volumes[1].emptyDir.sizeLimit: the disk emptyDirs' sizeLimits add up to 20Mi, "
          "more than " JOB_LIMIT " (16Mi)");
    check(GT_KIND_TASK, LIM16, two,
          "spec.volumes[1].emptyDir.sizeLimit: the disk emptyDirs' sizeLimits add up to 20Mi, "
          "more than spec.template.resources.limits.ephemeral-storage (16Mi)");
    /* the request bounds it where no limit is given */
    check(GT_KIND_JOB, "{\"requests\":{\"ephemeral-storage\":\"16Mi\"}}",
          "[{\"name\":\"a\",\"emptyDir\":{\"sizeLimit\":\"32Mi\"}}]",
          "spec.volumes[0].emptyDir.sizeLimit: the disk emptyDirs' sizeLimits add up to 32Mi, "
          "more than spec.replicaSpecs.Worker.template.resources.requests.ephemeral-storage "
          "(16Mi)");
    /* sizeLimits that take it all leave nothing for one without */
    check(
        GT_KIND_JOB, LIM16,
        "[{\"name\":\"a\",\"emptyDir\":{}},{\"name\":\"b\",\"emptyDir\":{\"sizeLimit\":\"16Mi\"}}]",
        "spec.volumes[0].emptyDir: no room left: the other disk emptyDirs' sizeLimits take all "
        "of " JOB_LIMIT " (16Mi)");
    /* sums that overflow are still refused */
    check(GT_KIND_JOB, "{\"limits\":{\"ephemeral-storage\":\"7Ei\"}}",
          "[{\"name\":\"a\",\"emptyDir\":{\"sizeLimit\":\"4Ei\"}},"
          "{\"name\":\"b\",\"emptyDir\":{\"sizeLimit\":\"4Ei\"}}]",
          "spec.volumes[1].emptyDir.sizeLimit: the disk emptyDirs' sizeLimits add up to");
}

static void test_quantity_checked(void **state)
{
    (void)state;
    const char *none = "[]";
    check(GT_KIND_JOB, "{\"limits\":{\"ephemeral-storage\":\"lots\"}}", none,
          "spec.replicaSpecs.Worker.template.resources.limits.ephemeral-storage: quantity "
          "\"lots\"");
    check(GT_KIND_JOB,
          "{\"requests\":{\"ephemeral-storage\":\"1Gi\"},\"limits\":{\"ephemeral-storage\":"
          "\"16Mi\"}}",
          none, "resources.requests.ephemeral-storage: must be <= limits.ephemeral-storage");
    /* a template's resource, not a pool's */
    json_t *d = json_loads("{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Department\","
                           "\"metadata\":{\"name\":\"research\"},"
                           "\"spec\":{\"quota\":{\"ephemeral-storage\":\"1Ti\"}}}",
                           0, NULL);
    struct gt_err err = {0};
    assert_int_equal(gt_api_validate(GT_KIND_DEPARTMENT, d, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "spec.quota.ephemeral-storage: resource not allowed here"));
    json_decref(d);
}

static void test_canonical_and_decoded(void **state)
{
    (void)state;
    json_t *v = make(GT_KIND_JOB,
                     "{\"requests\":{\"ephemeral-storage\":16777216},"
                     "\"limits\":{\"ephemeral-storage\":\"32768Ki\",\"memory\":\"1Gi\"}}",
                     "[]");
    assert_int_equal(gt_api_validate(GT_KIND_JOB, v, NULL), 0);
    json_t *res = gt_json_path(v, "spec.replicaSpecs.Worker.template.resources");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(res, "requests"), "ephemeral-storage")),
        "16Mi");
    json_t *lim = json_object_get(res, "limits");
    assert_string_equal(json_string_value(json_object_get(lim, "ephemeral-storage")), "32Mi");

    struct gt_api_template_resources r;
    gt_api_res_decode(json_object_get(res, "requests"), &r.requests);
    gt_api_res_decode(lim, &r.limits);
    assert_int_equal(r.limits.ephemeral_bytes, 32LL << 20);
    assert_true(r.limits.set & GT_RESF_EPHEMERAL);
    /* in no pooled slot: quotas and the scheduler never see it */
    assert_int_equal(r.requests.v.v[GT_RES_STORAGE], 0);
    assert_int_equal(r.limits.v.v[GT_RES_MEMORY], 1LL << 30);
    struct gt_api_effective eff;
    gt_api_resources_effective(&r, &eff);
    assert_int_equal(eff.ephemeral_bytes, 32LL << 20);
    r.limits.ephemeral_bytes = 0; /* a limit not given is the request */
    gt_api_resources_effective(&r, &eff);
    assert_int_equal(eff.ephemeral_bytes, 16LL << 20);

    struct gt_resources flat;
    assert_int_equal(gt_api_resources(lim, &flat, NULL), 0);
    assert_int_equal(flat.ephemeral_bytes, 32LL << 20);
    json_decref(v);
}

/* A PyTorchJob with a 1Gi ephemeral-storage limit and an emptyDir of
 * sizeLimit %s. */
#define PYTORCH_FMT                                                                                \
    "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\","                                 \
    "\"metadata\":{\"name\":\"pt\",\"namespace\":\"vision\"},"                                     \
    "\"spec\":{\"pytorchReplicaSpecs\":{\"Master\":{\"replicas\":1,\"template\":{\"spec\":{"       \
    "\"containers\":[{\"name\":\"pytorch\",\"command\":[\"true\"],"                                \
    "\"resources\":{\"limits\":{\"ephemeral-storage\":\"1Gi\"}},"                                  \
    "\"volumeMounts\":[{\"name\":\"x\",\"mountPath\":\"/x\"}]}],"                                  \
    "\"volumes\":[{\"name\":\"x\",\"emptyDir\":{\"sizeLimit\":\"%s\"}}]}}}}}}"

/* Kubeflow's container ephemeral-storage carries over and bounds the
 * pod's emptyDirs the same way. */
static void test_kubeflow_form(void **state)
{
    (void)state;
    char text[1024];
    snprintf(text, sizeof(text), PYTORCH_FMT, "512Mi");
    json_t *in = json_loads(text, 0, NULL);
    json_t *job = NULL;
    struct gt_err err = {0};
    assert_int_equal(gt_api_kubeflow_convert(in, &job, &err), 0);
    assert_string_equal(
        json_string_value(gt_json_path(job, "spec.replicaSpecs.Master.template.resources.limits."
                                            "ephemeral-storage")),
        "1Gi");
    json_decref(job);
    json_decref(in);

    snprintf(text, sizeof(text), PYTORCH_FMT, "2Gi");
    in = json_loads(text, 0, NULL);
    assert_int_equal(gt_api_kubeflow_convert(in, &job, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "sizeLimits add up to 2Gi, more than "
                                    "spec.replicaSpecs.Master.template.resources.limits."
                                    "ephemeral-storage (1Gi)"));
    json_decref(in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_limits_fit),
        cmocka_unit_test(test_size_limits_past_the_limit_refused),
        cmocka_unit_test(test_quantity_checked),
        cmocka_unit_test(test_canonical_and_decoded),
        cmocka_unit_test(test_kubeflow_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
