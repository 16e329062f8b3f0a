/*
 * The Model and ModelVersion kinds' schemas (api.h "Model and
 * ModelVersion"). A Model: spec.framework (required) and a description.
 * A ModelVersion: spec.model, spec.format (default: the Model's framework,
 * filled by gantryd), spec.source (exactly one of job, with path, and
 * hostPath), spec.metrics (name -> number), spec.stage (default None);
 * its status is gantryd's alone (the store digest and path, the number).
 * A Job's spec.outputs.model names the version it registers on success.
 */
#include <string.h>

#include "api/api_int.h"

static const char *const formats[] = {"sklearn", "pytorch", NULL};
static const char *const stages[] = {"None", "Staging", "Production", "Archived", NULL};
static const char *const mv_phases[] = {"Pending", "Ready", "Failed", NULL};

/* the name at index i of a NULL-terminated table of n + 1 entries */
static const char *name_at(const char *const *table, size_t n, int i)
{
    return i >= 0 && (size_t)i < n ? table[i] : table[0];
}

const char *gt_api_model_format_name(enum gt_model_format f)
{
    return name_at(formats, GT_ARRAY_LEN(formats) - 1, (int)f);
}

const char *gt_api_model_stage_name(enum gt_model_stage s)
{
    return name_at(stages, GT_ARRAY_LEN(stages) - 1, (int)s);
}

const char *gt_api_model_phase_name(enum gt_model_phase p)
{
    return name_at(mv_phases, GT_ARRAY_LEN(mv_phases) - 1, (int)p);
}

/* ---- Model ---- */

static const struct gt_field model_spec_fields[] = {
    STR("framework", REQ, .enums = formats, IDX, AT(model_spec, framework)),
    STR("description", .max_len = 1024, AT(model_spec, description)),
    END,
};
static const struct gt_schema model_spec_schema = {model_spec_fields, NULL,
                                                   sizeof(struct gt_api_model_spec)};

static const struct gt_field model_fields[] = {
    ROOT_FIELDS,
    OBJ("spec", model_spec_schema, REQ, AT(model, spec)),
    END,
};
const struct gt_schema gt_api_model_schema = {model_fields, NULL, sizeof(struct gt_api_model)};

/* ---- ModelVersion ---- */

/* spec.metrics: at most 64 names (label-key syntax), each a finite number */
static int check_metrics(const json_t *v, struct gt_err *err)
{
    if (!json_is_object(v) || json_object_size(v) > 64) {
        return gt_err_set(err, GT_EINVAL, "must be a map of at most 64 names to numbers");
    }
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x)
    {
        json_t *key = json_string(k);
        struct gt_err kerr = {0};
        int rc = gt_check_label_key(key, &kerr);
        json_decref(key);
        if (rc) {
            return gt_err_set(err, GT_EINVAL, "\"%s\": %s", k, kerr.msg);
        }
        if (!json_is_number(x)) {
            return gt_err_set(err, GT_EINVAL, "\"%s\": must be a number", k);
        }
    }
    return 0;
}

/* exactly one of job and hostPath; path and task only with job, path required there */
static int source_post(json_t *src, const char *path, struct gt_err *err)
{
    char sub[GT_API_PATH_MAX];
    bool job = json_object_get(src, "job") != NULL;
    bool host = json_object_get(src, "hostPath") != NULL;
    if (job == host) {
        return gt_err_set(err, GT_EINVAL, "%s: exactly one of job and hostPath is required",
                          gt_path_join(sub, sizeof(sub), path, "job"));
    }
    if (job && !json_object_get(src, "path")) {
        return gt_err_set(err, GT_EINVAL, "%s: required with job (the artifact, e.g. out/model.pt)",
                          gt_path_join(sub, sizeof(sub), path, "path"));
    }
    const char *const only_job[] = {"path", "task"};
    for (size_t i = 0; host && i < GT_ARRAY_LEN(only_job); i++) {
        if (json_object_get(src, only_job[i])) {
            return gt_err_set(err, GT_EINVAL, "%s: only with job",
                              gt_path_join(sub, sizeof(sub), path, only_job[i]));
        }
    }
    return 0;
}

/* an artifact path as the task saw it: relative or absolute, without ".." */
static const struct gt_field source_fields[] = {
    STR("job", DNS, AT(model_source, job)),
    STR("task", .max_len = 253, AT(model_source, task)),
    STR("path", .max_len = 4096, .check = gt_check_log_dir, AT(model_source, path)),
    STR("hostPath", .check = gt_check_host_path, AT(model_source, host_path)),
    END,
};
static const struct gt_schema source_schema = {source_fields, source_post,
                                               sizeof(struct gt_api_model_source)};

static const struct gt_field mv_spec_fields[] = {
    STR("model", REQ, DNS, AT(modelversion_spec, model)),
    STR("format", .enums = formats, AT(modelversion_spec, format)),
    OBJ("source", source_schema, REQ, AT(modelversion_spec, source)),
    {.name = "metrics", .type = GT_F_ANY, .check = check_metrics, AT(modelversion_spec, metrics)},
    STR("stage", .flags = GT_F_DEFAULT, .def_str = "None", .enums = stages, IDX,
        AT(modelversion_spec, stage)),
    END,
};
static const struct gt_schema mv_spec_schema = {mv_spec_fields, NULL,
                                                sizeof(struct gt_api_modelversion_spec)};

static const struct gt_field mv_status_fields[] = {
    STR("phase", .enums = mv_phases, IDX, AT(modelversion_status, phase)),
    INT("version", 1, INT32_MAX, AT(modelversion_status, version)),
    STR("digest", .max_len = 80, AT(modelversion_status, digest)),
    STR("path", .max_len = 4096, AT(modelversion_status, path)),
    INT("size", 0, INT64_MAX, AT(modelversion_status, size_bytes)),
    STR("sourceJob", DNS, AT(modelversion_status, source_job)),
    STR("sourceTask", .max_len = 253, AT(modelversion_status, source_task)),
    STR("createdTime", TIME, AT(modelversion_status, created_time)),
    STR("message", MESSAGE, AT(modelversion_status, message)),
    END,
};
static const struct gt_schema mv_status_schema = {mv_status_fields, NULL,
                                                  sizeof(struct gt_api_modelversion_status)};

static const struct gt_field mv_fields[] = {
    ROOT_FIELDS,
    OBJ("spec", mv_spec_schema, REQ, AT(modelversion, spec)),
    OBJ("status", mv_status_schema, AT(modelversion, status)),
    END,
};
const struct gt_schema gt_api_modelversion_schema = {mv_fields, NULL,
                                                     sizeof(struct gt_api_modelversion)};

/* ---- a Job's spec.outputs ---- */

static const struct gt_field output_model_fields[] = {
    STR("name", REQ, DNS, AT(output_model, name)),
    STR("path", REQ, .max_len = 4096, .check = gt_check_log_dir, AT(output_model, path)),
    STR("task", .max_len = 253, AT(output_model, task)),
    STR("format", .enums = formats, AT(output_model, format)),
    STR("metricsFile", .max_len = 4096, .check = gt_check_log_dir, AT(output_model, metrics_file)),
    END,
};
static const struct gt_schema output_model_schema = {output_model_fields, NULL,
                                                     sizeof(struct gt_api_output_model)};

static const struct gt_field outputs_fields[] = {
    OBJ("model", output_model_schema, AT(job_outputs, model), HAS(job_outputs, has_model)),
    END,
};
const struct gt_schema gt_api_job_outputs_schema = {outputs_fields, NULL,
                                                    sizeof(struct gt_api_job_outputs)};
