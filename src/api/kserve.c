/*
 * KServe serving.kserve.io/v1beta1 InferenceService manifests converted
 * into gantry InferenceServices (api.h gt_api_kserve_convert), so the
 * manifests people have apply unchanged.
 *
 * The predictor is one of KServe's two spellings: `model: {modelFormat:
 * {name}, storageUri, ...}` or a framework key (`sklearn:`, `pytorch:`,
 * `tensorflow:`, ...) holding the same fields. It becomes the variant
 * "predictor"; minReplicas its replicas (KServe's default 1), maxReplicas,
 * scaleTarget and scaleMetric its own (autoscaled when maxReplicas is
 * above minReplicas; KServe's "no limit", maxReplicas 0 or absent, is a
 * fixed count here); canaryTrafficPercent spec.canaryTrafficPercent. protocolVersion is
 * accepted (gantry-model-server speaks the v2 protocol, whose paths also
 * answer a v1 client's health checks) and so are the TorchServe server's
 * own args (the runtime here is gantry-model-server, which has no such
 * flags). Every other field is refused with its path, as the Kubeflow
 * conversion does (kubeflow.c). The input is borrowed.
 */
#include <stdio.h>
#include <string.h>

#include "api/api_int.h"

#define KSERVE_GROUP "serving.kserve.io/"
#define KSERVE_VERSION "serving.kserve.io/v1beta1"

/* the framework keys a predictor may use instead of model.modelFormat */
static const char *const frameworks[] = {"sklearn",     "pytorch",  "tensorflow", "onnx",
                                         "xgboost",     "lightgbm", "triton",     "pmml",
                                         "huggingface", NULL};

bool gt_api_kserve_is(const json_t *doc)
{
    const char *v = json_string_value(json_object_get(doc, "apiVersion"));
    return v && strncmp(v, KSERVE_GROUP, strlen(KSERVE_GROUP)) == 0;
}

static bool in_list(const char *const *list, const char *s)
{
    for (size_t i = 0; list[i]; i++) {
        if (!strcmp(list[i], s)) {
            return true;
        }
    }
    return false;
}

/* Refuse any key of o (at path) not in known. */
static int only_keys(const json_t *o, const char *path, const char *const *known,
                     struct gt_err *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        if (!in_list(known, k)) {
            return gt_err_set(err, GT_EINVAL, "%s.%s: not supported by gantry", path, k);
        }
    }
    return 0;
}

/* The model fields (of model: or a framework key, at path) into variant. */
static int convert_model(const json_t *m, const char *format, const char *path, json_t *variant,
                         struct gt_err *err)
{
    static const char *const known[] = {"modelFormat", "storageUri", "protocolVersion",
                                        "args",        "resources",  "runtimeVersion",
                                        NULL};
    if (!json_is_object(m)) {
        return gt_err_set(err, GT_EINVAL, "%s: must be an object", path);
    }
    int rc = only_keys(m, path, known, err);
    if (rc) {
        return rc;
    }
    const json_t *mf = json_object_get(m, "modelFormat");
    if (!format) {
        format = json_string_value(json_object_get(mf, "name"));
    }
    if (!format) {
        return gt_err_set(err, GT_EINVAL, "%s.modelFormat.name: required", path);
    }
    const char *pv = json_string_value(json_object_get(m, "protocolVersion"));
    if (json_object_get(m, "protocolVersion") && (!pv || (strcmp(pv, "v1") && strcmp(pv, "v2")))) {
        return gt_err_set(err, GT_EINVAL, "%s.protocolVersion: v1 or v2", path);
    }
    const json_t *uri = json_object_get(m, "storageUri");
    if (!json_is_string(uri)) {
        return gt_err_set(err, GT_EINVAL, "%s.storageUri: required (a string)", path);
    }
    json_object_set_new(variant, "model",
                        json_pack("{s:s, s:O}", "format", format, "storageUri", uri));
    const json_t *res = json_object_get(m, "resources");
    if (res) {
        json_object_set(variant, "resources", (json_t *)res);
    }
    return 0;
}

static int convert_predictor(const json_t *p, json_t *spec, struct gt_err *err)
{
    static const char *const known[] = {"model",       "minReplicas", "canaryTrafficPercent",
                                        "sklearn",     "pytorch",     "tensorflow",
                                        "onnx",        "xgboost",     "lightgbm",
                                        "triton",      "pmml",        "huggingface",
                                        "maxReplicas", "scaleTarget", "scaleMetric",
                                        NULL};
    if (!json_is_object(p)) {
        return gt_err_set(err, GT_EINVAL, "spec.predictor: required (an object)");
    }
    int rc = only_keys(p, "spec.predictor", known, err);
    if (rc) {
        return rc;
    }
    json_t *variant = json_pack("{s:s}", "name", "predictor");
    json_object_set_new(spec, "variants", json_pack("[o]", variant));
    /* KServe's autoscaling fields, kept as they are named (a maxReplicas
     * equal to minReplicas, or absent, is a fixed count) */
    static const char *const scale_keys[][2] = {{"minReplicas", "replicas"},
                                                {"maxReplicas", "maxReplicas"},
                                                {"scaleTarget", "scaleTarget"},
                                                {"scaleMetric", "scaleMetric"}};
    for (size_t i = 0; i < GT_ARRAY_LEN(scale_keys); i++) {
        const json_t *x = json_object_get(p, scale_keys[i][0]);
        if (x && !(i == 1 && json_is_integer(x) && json_integer_value(x) == 0)) {
            json_object_set(variant, scale_keys[i][1], (json_t *)x);
        }
    }
    const char *metric = json_string_value(json_object_get(p, "scaleMetric"));
    if (metric && strcmp(metric, "concurrency") != 0 && strcmp(metric, "rps") != 0) {
        return gt_err_set(err, GT_EINVAL,
                          "spec.predictor.scaleMetric: %s is not supported by gantry (concurrency "
                          "or rps, from the gateway's counters)",
                          metric);
    }
    const json_t *canary = json_object_get(p, "canaryTrafficPercent");
    if (canary) {
        json_object_set(spec, "canaryTrafficPercent", (json_t *)canary);
    }
    const char *found = NULL;
    for (size_t i = 0; frameworks[i]; i++) {
        if (json_object_get(p, frameworks[i])) {
            if (found || json_object_get(p, "model")) {
                return gt_err_set(err, GT_EINVAL, "spec.predictor.%s: only one model per predictor",
                                  frameworks[i]);
            }
            found = frameworks[i];
        }
    }
    char path[64];
    snprintf(path, sizeof(path), "spec.predictor.%s", found ? found : "model");
    const json_t *m = json_object_get(p, found ? found : "model");
    if (!m) {
        return gt_err_set(err, GT_EINVAL, "spec.predictor.model: required");
    }
    return convert_model(m, found, path, variant, err);
}

int gt_api_kserve_convert(const json_t *in, json_t **out, struct gt_err *err)
{
    static const char *const known[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
    static const char *const md_known[] = {"name", "namespace", "labels", "annotations", NULL};
    static const char *const spec_known[] = {"predictor", NULL};
    *out = NULL;
    const char *v = json_string_value(json_object_get(in, "apiVersion"));
    const char *kind = json_string_value(json_object_get(in, "kind"));
    if (!v || strcmp(v, KSERVE_VERSION) != 0) {
        return gt_err_set(err, GT_EINVAL, "apiVersion: only %s is supported", KSERVE_VERSION);
    }
    if (!kind || strcmp(kind, "InferenceService") != 0) {
        return gt_err_set(err, GT_EINVAL, "kind: only InferenceService of %s is supported",
                          KSERVE_GROUP);
    }
    const json_t *md = json_object_get(in, "metadata");
    const json_t *spec = json_object_get(in, "spec");
    int rc = only_keys(in, "", known, err);
    if (rc == 0 && (!json_is_object(md) || !json_is_object(spec))) {
        rc = gt_err_set(err, GT_EINVAL, "%s: required", json_is_object(md) ? "spec" : "metadata");
    }
    rc = rc ? rc : only_keys(md, "metadata", md_known, err);
    rc = rc ? rc : only_keys(spec, "spec", spec_known, err);
    if (rc) {
        return rc;
    }
    json_t *gmd = json_object();
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)md, k, val)
    {
        json_object_set(gmd, strcmp(k, "namespace") ? k : "project", val);
    }
    json_t *gspec = json_object();
    json_t *obj = json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", GT_API_VERSION, "kind",
                            "InferenceService", "metadata", gmd, "spec", gspec);
    rc = convert_predictor(json_object_get(spec, "predictor"), gspec, err);
    if (rc) {
        json_decref(obj);
        return rc;
    }
    *out = obj;
    return 0;
}
