/*
 * The InferenceService kind's schema (api.h "InferenceService"): named
 * variants, each a model (a KServe modelFormat and a storageUri) or a
 * container template serving HTTP on its port "http", with a weight and a
 * replica count (or a range, maxReplicas, autoscaled on scaleMetric
 * against scaleTarget as KServe names them); spec.public,
 * spec.readinessPath, spec.rollout, spec.autoscaling and KServe's
 * canaryTrafficPercent. status is written only by the serving
 * controller and is not checked field by field (it is the controller's
 * report: per-variant replicas, weights and traffic, the revisions).
 */
#include <string.h>

#include "api/api_int.h"

/* The KServe modelFormat names gantry knows; only sklearn and pytorch have
 * a runtime (gantry-model-server), the others wait naming the missing one. */
static const char *const model_formats[] = {"sklearn",     "pytorch",  "tensorflow", "onnx",
                                            "xgboost",     "lightgbm", "triton",     "pmml",
                                            "huggingface", NULL};

static const struct gt_field model_fields[] = {
    STR("format", REQ, .enums = model_formats, AT(isvc_model, format)),
    STR("storageUri", REQ, .max_len = 1024, AT(isvc_model, storage_uri)),
    END,
};
static const struct gt_schema model_schema = {model_fields, NULL, sizeof(struct gt_api_isvc_model)};

/* a container template whose command is required (it is the server) */
static const struct gt_schema variant_template_schema = {gt_api_template_fields, NULL,
                                                         sizeof(struct gt_api_template)};

/* the autoscaler's metrics (KServe's scaleMetric; cpu and memory are not
 * watched by gantry) */
static const char *const scale_metrics[] = {"concurrency", "rps", NULL};

/* exactly one of model and template; the template has a command or an
 * image; maxReplicas not below replicas */
static int variant_post(json_t *v, const char *path, struct gt_err *err)
{
    char sub[GT_API_PATH_MAX];
    bool model = json_object_get(v, "model") != NULL;
    const json_t *tmpl = json_object_get(v, "template");
    if (model == (tmpl != NULL)) {
        return gt_err_set(err, GT_EINVAL, "%s: exactly one of model and template is required",
                          gt_path_join(sub, sizeof(sub), path, "model"));
    }
    if (tmpl && !json_object_get(tmpl, "image") &&
        json_array_size(json_object_get(tmpl, "command")) == 0) {
        return gt_err_set(err, GT_EINVAL, "%s: required without an image (the server to run)",
                          gt_path_join(sub, sizeof(sub), path, "template.command"));
    }
    const json_t *maxr = json_object_get(v, "maxReplicas");
    json_int_t minr = json_integer_value(json_object_get(v, "replicas"));
    if (maxr && json_integer_value(maxr) < minr) {
        return gt_err_set(err, GT_EINVAL, "%s: at least replicas (%lld), the fewest that run",
                          gt_path_join(sub, sizeof(sub), path, "maxReplicas"), (long long)minr);
    }
    const char *name = json_string_value(json_object_get(v, "name"));
    if (name && strlen(name) > GT_ISVC_VARIANT_MAX) {
        return gt_err_set(err, GT_EINVAL, "%s: at most %d characters",
                          gt_path_join(sub, sizeof(sub), path, "name"), GT_ISVC_VARIANT_MAX);
    }
    return 0;
}

static const struct gt_field variant_fields[] = {
    STR("name", REQ, DNS, AT(isvc_variant, name)),
    INT("weight", 0, 100, .flags = GT_F_DEFAULT, .def_int = 100, AT(isvc_variant, weight)),
    INT("replicas", 0, GT_ISVC_REPLICAS_MAX, .flags = GT_F_DEFAULT, .def_int = 1,
        AT(isvc_variant, replicas)),
    INT("maxReplicas", 0, GT_ISVC_REPLICAS_MAX, AT(isvc_variant, max_replicas)),
    INT("scaleTarget", 1, 1000000, AT(isvc_variant, scale_target)),
    STR("scaleMetric", .enums = scale_metrics, AT(isvc_variant, scale_metric)),
    OBJ("model", model_schema, AT(isvc_variant, model), HAS(isvc_variant, has_model)),
    OBJ("template", variant_template_schema, AT(isvc_variant, template),
        HAS(isvc_variant, has_template)),
    OBJ("resources", gt_api_template_resources_schema, AT(isvc_variant, resources)),
    END,
};
static const struct gt_schema variant_schema = {variant_fields, variant_post,
                                                sizeof(struct gt_api_isvc_variant)};
static const struct gt_field variant_item = ITEM(variant_schema);

static const struct gt_field rollout_fields[] = {
    INT("maxSurge", 0, GT_ISVC_REPLICAS_MAX, .flags = GT_F_DEFAULT, .def_int = 1,
        AT(isvc_rollout, max_surge)),
    INT("maxUnavailable", 0, GT_ISVC_REPLICAS_MAX, .flags = GT_F_DEFAULT, .def_int = 0,
        AT(isvc_rollout, max_unavailable)),
    INT("maxErrorPercent", 0, 100, .flags = GT_F_DEFAULT, .def_int = 5,
        AT(isvc_rollout, max_error_percent)),
    INT("maxLatencyP99Ms", 0, 3600000, .flags = GT_F_DEFAULT, .def_int = 0,
        AT(isvc_rollout, max_latency_p99_ms)),
    END,
};
/* maxSurge and maxUnavailable both 0 could never replace a replica */
static int rollout_post(json_t *r, const char *path, struct gt_err *err)
{
    char sub[GT_API_PATH_MAX];
    if (json_integer_value(json_object_get(r, "maxSurge")) == 0 &&
        json_integer_value(json_object_get(r, "maxUnavailable")) == 0) {
        return gt_err_set(err, GT_EINVAL, "%s: maxSurge and maxUnavailable cannot both be 0",
                          gt_path_join(sub, sizeof(sub), path, "maxSurge"));
    }
    return 0;
}
static const struct gt_schema rollout_schema = {rollout_fields, rollout_post,
                                                sizeof(struct gt_api_isvc_rollout)};

static const struct gt_field autoscaling_fields[] = {
    INT("windowSeconds", 1, 3600, .flags = GT_F_DEFAULT, .def_int = GT_ISVC_SCALE_WINDOW_S,
        AT(isvc_autoscaling, window_s)),
    INT("scaleDownDelaySeconds", 0, 3600, .flags = GT_F_DEFAULT,
        .def_int = GT_ISVC_SCALE_DOWN_DELAY_S, AT(isvc_autoscaling, scale_down_delay_s)),
    END,
};
static const struct gt_schema autoscaling_schema = {autoscaling_fields, NULL,
                                                    sizeof(struct gt_api_isvc_autoscaling)};

/* variant names unique; canaryTrafficPercent only with one variant */
static int spec_post(json_t *spec, const char *path, struct gt_err *err)
{
    char sub[GT_API_PATH_MAX], item[64];
    const json_t *vs = json_object_get(spec, "variants");
    for (size_t i = 1; i < json_array_size(vs); i++) {
        const char *a = json_string_value(json_object_get(json_array_get(vs, i), "name"));
        for (size_t j = 0; a && j < i; j++) {
            const char *b = json_string_value(json_object_get(json_array_get(vs, j), "name"));
            if (b && !strcmp(a, b)) {
                snprintf(item, sizeof(item), "variants[%zu].name", i);
                return gt_err_set(err, GT_EINVAL, "%s: duplicate variant name \"%s\"",
                                  gt_path_join(sub, sizeof(sub), path, item), a);
            }
        }
    }
    if (json_object_get(spec, "canaryTrafficPercent") && json_array_size(vs) != 1) {
        return gt_err_set(err, GT_EINVAL,
                          "%s: only with exactly one variant (the canary is its new revision)",
                          gt_path_join(sub, sizeof(sub), path, "canaryTrafficPercent"));
    }
    return 0;
}

static const struct gt_field spec_fields[] = {
    LIST("variants", variant_item, REQ, .max_len = GT_ISVC_VARIANTS_MAX, AT(isvc_spec, variants)),
    BOOL("public", .flags = GT_F_DEFAULT, .def_int = 0, AT(isvc_spec, public_)),
    STR("readinessPath", .flags = GT_F_DEFAULT, .def_str = "/v2/health/ready",
        .check = gt_check_abs_path, AT(isvc_spec, readiness_path)),
    INT("canaryTrafficPercent", 0, 100, AT(isvc_spec, canary_percent)),
    OBJ("rollout", rollout_schema, .flags = GT_F_CREATE, AT(isvc_spec, rollout)),
    OBJ("autoscaling", autoscaling_schema, AT(isvc_spec, autoscaling)),
    STR("priorityClass", DNS, AT(isvc_spec, priority_class)),
    END,
};
static const struct gt_schema spec_schema = {spec_fields, spec_post,
                                             sizeof(struct gt_api_isvc_spec)};

/* the name leaves room for the replica jobs' prefix, variant and revision */
static int isvc_post(json_t *obj, const char *path, struct gt_err *err)
{
    (void)path;
    const char *name = gt_obj_name(obj);
    if (name && strlen(name) > GT_ISVC_NAME_MAX) {
        return gt_err_set(err, GT_EINVAL,
                          "metadata.name: at most %d characters for an InferenceService",
                          GT_ISVC_NAME_MAX);
    }
    const json_t *vs = json_object_get(json_object_get(obj, "spec"), "variants");
    if (json_array_size(vs) == 0) {
        return gt_err_set(err, GT_EINVAL, "spec.variants: at least one variant is required");
    }
    return 0;
}

static const struct gt_field isvc_fields[] = {
    ROOT_FIELDS,
    OBJ("spec", spec_schema, REQ, AT(isvc, spec)),
    {.name = "status", .type = GT_F_ANY},
    END,
};
const struct gt_schema gt_api_isvc_schema = {isvc_fields, isvc_post, sizeof(struct gt_api_isvc)};
