/*
 * KServe InferenceService conversion and the InferenceService schema:
 * KServe's own samples (../shared/fixtures/kserve relative to the project
 * root) each convert into a valid gantry InferenceService with the
 * predictor's format, storageUri and canaryTrafficPercent, leaving the
 * input unchanged; fields gantry lacks are refused naming their path; the
 * schema's cross-field rules name the field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_api_util.h"

#include "api/api.h"
#include "common/common.h"

/* Convert doc (namespace vision) and validate; returns the service or fails. */
static json_t *convert(json_t *doc)
{
    json_t *md = json_object_get(doc, "metadata");
    json_object_set_new(md, "namespace", json_string("vision"));
    json_t *copy = json_deep_copy(doc);
    json_t *out = NULL;
    struct gt_err err = {0};
    if (gt_api_kserve_convert(doc, &out, &err) != 0) {
        fail_msg("convert: %s", err.msg);
    }
    assert_true(json_equal(doc, copy));
    json_decref(copy);
    if (gt_api_validate(GT_KIND_INFERENCESERVICE, out, &err) != 0) {
        fail_msg("validate: %s", err.msg);
    }
    return out;
}

static const struct {
    const char *path;
    const char *format;
    const char *uri;
    int canary; /* -1: none */
} samples[] = {
    {"sklearn/v1/sklearn.yaml", "sklearn", "gs://kfserving-examples/models/sklearn/1.0/model", -1},
    {"sklearn/v2/sklearn.yaml", "sklearn", "gs://seldon-models/sklearn/iris", -1},
    {"torchserve/v2/mnist.yaml", "pytorch",
     "gs://kfserving-examples/models/torchserve/image_classifier/v2", -1},
    {"rollout/default.yaml", "tensorflow", "gs://kfserving-examples/models/tensorflow/flowers", -1},
    {"rollout/canary.yaml", "tensorflow", "gs://kfserving-examples/models/tensorflow/flowers-2",
     10},
    {"rollout/promotion.yaml", "tensorflow", "gs://kfserving-examples/models/tensorflow/flowers-2",
     -1},
};

static void test_kserve_samples(void **state)
{
    (void)state;
    const char *src = getenv("GANTRY_SOURCE_DIR");
    for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
        char *path = gt_xasprintf("%s/../shared/fixtures/kserve/docs/samples/v1beta1/%s",
                                  src ? src : ".", samples[i].path);
        char *text = NULL;
        size_t len = 0;
        struct gt_err err = {0};
        if (gt_file_read(path, 1 << 20, &text, &len, &err) != 0) {
            fail_msg("%s: %s", path, err.msg);
        }
        json_t *doc = load_yaml(text);
        assert_true(gt_api_kserve_is(doc));
        json_t *out = convert(doc);
        assert_string_equal(json_string_value(gt_json_path(out, "metadata.project")), "vision");
        const json_t *v = json_array_get(gt_json_path(out, "spec.variants"), 0);
        assert_string_equal(json_string_value(json_object_get(v, "name")), "predictor");
        assert_string_equal(json_string_value(gt_json_path(v, "model.format")), samples[i].format);
        assert_string_equal(json_string_value(gt_json_path(v, "model.storageUri")), samples[i].uri);
        const json_t *c = gt_json_path(out, "spec.canaryTrafficPercent");
        assert_int_equal(c ? json_integer_value(c) : -1, samples[i].canary);
        json_decref(out);
        json_decref(doc);
        free(text);
        free(path);
    }
}

static void assert_refused(const char *yaml, const char *want)
{
    json_t *doc = load_yaml(yaml);
    json_t *out = NULL;
    struct gt_err err = {0};
    assert_int_not_equal(gt_api_kserve_convert(doc, &out, &err), 0);
    assert_null(out);
    if (!strstr(err.msg, want)) {
        fail_msg("got \"%s\", want \"%s\"", err.msg, want);
    }
    json_decref(doc);
}

static void test_kserve_refusals(void **state)
{
    (void)state;
    assert_refused("apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n"
                   "metadata: {name: x}\nspec:\n  predictor:\n    sklearn: {storageUri: /m}\n"
                   "    scaleMetric: cpu\n",
                   "spec.predictor.scaleMetric: cpu is not supported by gantry");
    assert_refused("apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n"
                   "metadata: {name: x}\nspec:\n  predictor:\n    sklearn: {storageUri: /m}\n"
                   "  transformer: {}\n",
                   "spec.transformer: not supported by gantry");
    assert_refused("apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n"
                   "metadata: {name: x}\nspec:\n  predictor:\n    sklearn: {storageUri: /m}\n"
                   "    pytorch: {storageUri: /m}\n",
                   "only one model per predictor");
    assert_refused("apiVersion: serving.kserve.io/v1alpha2\nkind: InferenceService\n"
                   "metadata: {name: x}\nspec: {}\n",
                   "apiVersion: only serving.kserve.io/v1beta1");
    /* modelFormat spelling */
    json_t *doc = load_yaml("apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n"
                            "metadata: {name: x}\nspec:\n  predictor:\n    minReplicas: 2\n"
                            "    model:\n      modelFormat: {name: pytorch}\n"
                            "      storageUri: models://vision/digits/1\n"
                            "      resources: {limits: {cpu: '1'}}\n");
    json_t *out = convert(doc);
    const json_t *v = json_array_get(gt_json_path(out, "spec.variants"), 0);
    assert_string_equal(json_string_value(gt_json_path(v, "model.format")), "pytorch");
    assert_int_equal(json_integer_value(json_object_get(v, "replicas")), 2);
    assert_non_null(gt_json_path(v, "resources.limits"));
    json_decref(out);
    json_decref(doc);
    /* KServe's autoscaling fields, as KServe's autoscaling sample spells them */
    doc = load_yaml("apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n"
                    "metadata: {name: x}\nspec:\n  predictor:\n    scaleTarget: 1\n"
                    "    scaleMetric: concurrency\n    minReplicas: 1\n    maxReplicas: 3\n"
                    "    sklearn: {storageUri: /m}\n");
    out = convert(doc);
    v = json_array_get(gt_json_path(out, "spec.variants"), 0);
    assert_int_equal(json_integer_value(json_object_get(v, "replicas")), 1);
    assert_int_equal(json_integer_value(json_object_get(v, "maxReplicas")), 3);
    assert_int_equal(json_integer_value(json_object_get(v, "scaleTarget")), 1);
    assert_string_equal(json_string_value(json_object_get(v, "scaleMetric")), "concurrency");
    json_decref(out);
    json_decref(doc);
    /* maxReplicas 0, KServe's "no limit": a fixed count */
    doc = load_yaml("apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n"
                    "metadata: {name: x}\nspec:\n  predictor:\n    maxReplicas: 0\n"
                    "    sklearn: {storageUri: /m}\n");
    out = convert(doc);
    v = json_array_get(gt_json_path(out, "spec.variants"), 0);
    assert_null(json_object_get(v, "maxReplicas"));
    json_decref(out);
    json_decref(doc);
}

static void assert_invalid(const char *spec, const char *want)
{
    char *text = gt_xasprintf("{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"InferenceService\","
                              "\"metadata\":{\"name\":\"s\",\"project\":\"p\"},\"spec\":%s}",
                              spec);
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    struct gt_err err = {0};
    assert_int_not_equal(gt_api_validate(GT_KIND_INFERENCESERVICE, v, &err), 0);
    if (!strstr(err.msg, want)) {
        fail_msg("got \"%s\", want \"%s\"", err.msg, want);
    }
    json_decref(v);
    free(text);
}

static void test_isvc_schema(void **state)
{
    (void)state;
    assert_invalid("{\"variants\":[]}", "spec.variants: at least one variant");
    assert_invalid("{\"variants\":[{\"name\":\"a\"}]}",
                   "spec.variants[0].model: exactly one of model and template");
    assert_invalid("{\"variants\":[{\"name\":\"a\",\"template\":{\"command\":[\"x\"]}},"
                   "{\"name\":\"a\",\"template\":{\"command\":[\"x\"]}}]}",
                   "spec.variants[1].name: duplicate variant name");
    assert_invalid("{\"canaryTrafficPercent\":10,\"variants\":["
                   "{\"name\":\"a\",\"template\":{\"command\":[\"x\"]}},"
                   "{\"name\":\"b\",\"template\":{\"command\":[\"x\"]}}]}",
                   "spec.canaryTrafficPercent: only with exactly one variant");
    assert_invalid(
        "{\"variants\":[{\"name\":\"a\",\"weight\":101,\"template\":{\"command\":[\"x\"]}}]}",
        "spec.variants[0].weight");
    assert_invalid("{\"variants\":[{\"name\":\"a\",\"template\":{}}]}",
                   "spec.variants[0].template.command: required without an image");
    assert_invalid("{\"rollout\":{\"maxSurge\":0},\"variants\":[{\"name\":\"a\","
                   "\"template\":{\"command\":[\"x\"]}}]}",
                   "spec.rollout.maxSurge: maxSurge and maxUnavailable cannot both be 0");
    assert_invalid("{\"variants\":[{\"name\":\"a\",\"model\":{\"format\":\"caffe\","
                   "\"storageUri\":\"/m\"}}]}",
                   "spec.variants[0].model.format");
    assert_invalid("{\"variants\":[{\"name\":\"a\",\"replicas\":2,\"maxReplicas\":1,"
                   "\"template\":{\"command\":[\"x\"]}}]}",
                   "spec.variants[0].maxReplicas: at least replicas (2)");
    assert_invalid("{\"variants\":[{\"name\":\"a\",\"scaleMetric\":\"cpu\","
                   "\"template\":{\"command\":[\"x\"]}}]}",
                   "spec.variants[0].scaleMetric");
    assert_invalid("{\"variants\":[{\"name\":\"a\",\"scaleTarget\":0,"
                   "\"template\":{\"command\":[\"x\"]}}]}",
                   "spec.variants[0].scaleTarget");
    assert_invalid("{\"autoscaling\":{\"windowSeconds\":0},\"variants\":[{\"name\":\"a\","
                   "\"template\":{\"command\":[\"x\"]}}]}",
                   "spec.autoscaling.windowSeconds");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kserve_samples),
        cmocka_unit_test(test_kserve_refusals),
        cmocka_unit_test(test_isvc_schema),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
