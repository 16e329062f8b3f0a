/*
 * The kinds table, the JSON codec entry point and the validation entry
 * points. Every kind lives at /apis/gantry.dev/v1/[projects/P/]<plural>;
 * the table is the one place that says which kinds are project-scoped.
 * Events are cluster-scoped in the URL; the project they concern is in
 * involvedObject.project.
 */
#include <string.h>
#include <strings.h>

#include "api/api_int.h"

static const struct gt_kind_info kinds[GT_KIND_COUNT] = {
    {GT_KIND_DEPARTMENT, "Department", "departments", false},
    {GT_KIND_PROJECT, "Project", "projects", false},
    {GT_KIND_PRIORITYCLASS, "PriorityClass", "priorityclasses", false},
    {GT_KIND_NODE, "Node", "nodes", false},
    {GT_KIND_JOB, "Job", "jobs", true},
    {GT_KIND_TASK, "Task", "tasks", true},
    {GT_KIND_EVENT, "Event", "events", false},
    {GT_KIND_NOTEBOOK, "Notebook", "notebooks", true},
    {GT_KIND_VOLUME, "Volume", "volumes", true},
    {GT_KIND_IMAGEBUILD, "ImageBuild", "imagebuilds", true},
    {GT_KIND_MODEL, "Model", "models", true},
    {GT_KIND_MODELVERSION, "ModelVersion", "modelversions", true},
    {GT_KIND_INFERENCESERVICE, "InferenceService", "inferenceservices", true},
};

const struct gt_kind_info *gt_kind_get(enum gt_kind kind)
{
    return (unsigned)kind < GT_KIND_COUNT ? &kinds[kind] : NULL;
}

const struct gt_kind_info *gt_kind_by_plural(const char *plural)
{
    for (size_t i = 0; plural && i < GT_ARRAY_LEN(kinds); i++) {
        if (strcmp(kinds[i].plural, plural) == 0) {
            return &kinds[i];
        }
    }
    return NULL;
}

const struct gt_kind_info *gt_kind_by_name(const char *name)
{
    for (size_t i = 0; name && i < GT_ARRAY_LEN(kinds); i++) {
        if (strcasecmp(kinds[i].name, name) == 0 || strcasecmp(kinds[i].plural, name) == 0) {
            return &kinds[i];
        }
    }
    return NULL;
}

int gt_api_parse(const char *text, size_t len, json_t **out, struct gt_err *err)
{
    json_error_t jerr;
    json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!v) {
        return gt_err_set(err, GT_EBADREQ, "invalid JSON at line %d column %d: %s", jerr.line,
                          jerr.column, jerr.text);
    }
    if (!json_is_object(v)) {
        json_decref(v);
        return gt_err_set(err, GT_EBADREQ, "invalid JSON: the body must be an object");
    }
    *out = v;
    return 0;
}

static int check_header(const char *field, const json_t *v, const char *want, struct gt_err *err)
{
    if (!v) {
        return gt_err_set(err, GT_EINVAL, "%s: required", field);
    }
    if (!json_is_string(v) || strcmp(json_string_value(v), want) != 0) {
        return gt_err_set(err, GT_EINVAL, "%s: must be \"%s\"", field, want);
    }
    return 0;
}

int gt_api_validate(enum gt_kind kind, json_t *obj, struct gt_err *err)
{
    const struct gt_kind_info *info = gt_kind_get(kind);
    if (!info) {
        return gt_err_set(err, GT_EINVAL, "unknown kind");
    }
    if (!json_is_object(obj)) {
        return gt_err_set(err, GT_EINVAL, "(root): must be an object");
    }
    int rc = check_header("apiVersion", json_object_get(obj, "apiVersion"), GT_API_VERSION, err);
    if (rc == 0) {
        rc = check_header("kind", json_object_get(obj, "kind"), info->name, err);
    }
    if (rc == 0) {
        rc = gt_schema_validate(gt_kind_schema(kind), obj, "", err);
    }
    if (rc < 0) {
        return rc;
    }
    bool has_project = gt_obj_project(obj) != NULL;
    if (info->namespaced && !has_project) {
        return gt_err_set(err, GT_EINVAL, "metadata.project: required for %s", info->name);
    }
    if (!info->namespaced && has_project) {
        return gt_err_set(err, GT_EINVAL, "metadata.project: must not be set: %s is %s", info->name,
                          kind == GT_KIND_EVENT ? "cluster-scoped (use involvedObject.project)"
                                                : "cluster-scoped");
    }
    return 0;
}

int gt_api_validate_status(enum gt_kind kind, json_t *status, struct gt_err *err)
{
    const struct gt_schema *s = gt_kind_schema(kind);
    if (!s) {
        return gt_err_set(err, GT_EINVAL, "unknown kind");
    }
    for (const struct gt_field *f = s->fields; f->name; f++) {
        if (strcmp(f->name, "status") == 0) {
            return gt_field_validate(f, status, "status", err);
        }
    }
    return gt_err_set(err, GT_EINVAL, "status: %s has no status", gt_kind_get(kind)->name);
}

const char *gt_obj_name(const json_t *obj)
{
    return json_string_value(gt_json_path(obj, "metadata.name"));
}

const char *gt_obj_project(const json_t *obj)
{
    return json_string_value(gt_json_path(obj, "metadata.project"));
}

const char *gt_obj_kind(const json_t *obj)
{
    return json_string_value(json_object_get(obj, "kind"));
}
