/*
 * The Notebook kind's schema (api.h "Notebook"): spec.template is a Job
 * replica's container template whose command may be left out (the
 * notebook controller then runs Jupyter), spec.home the volume kept
 * across stops (a Volume of the project by name, or a hostPath), spec.idle the culling settings,
 * spec.priorityClass and spec.stopped; status is written only by the notebook controller. Defaults:
 * idle.enabled is whether the template asks for GPUs (nvidia.com/gpu or gantry.dev/gpu-milli, in
 * requests or limits).
 */
#include <string.h>

#include "api/api_int.h"

static const char *const notebook_phases[] = {"Pending", "Starting", "Running", "Stopping",
                                              "Stopped", "Culled",   "Failed",  NULL};

const char *gt_api_notebook_phase_name(enum gt_notebook_phase p)
{
    return (size_t)p < GT_ARRAY_LEN(notebook_phases) - 1 ? notebook_phases[p]
                                                         : notebook_phases[GT_NB_PENDING];
}

/* the template without the rule that a command is required without an image */
static const struct gt_schema nb_template_schema = {gt_api_template_fields, NULL,
                                                    sizeof(struct gt_api_template)};

static const struct gt_field home_fields[] = {
    STR("volume", DNS, AT(notebook_home, volume)),
    STR("hostPath", .check = gt_check_host_path, AT(notebook_home, host_path)),
    STR("mountPath", .check = gt_check_abs_path, AT(notebook_home, mount_path)),
    END,
};

/* One of volume and hostPath; mountPath defaults to the hostPath, or for
 * a Volume to GT_NOTEBOOK_VOLUME_HOME. */
static int home_post(json_t *home, const char *path, struct gt_err *err)
{
    const json_t *host = json_object_get(home, "hostPath");
    bool vol = json_object_get(home, "volume") != NULL;
    if (vol == (host != NULL)) {
        char sub[GT_API_PATH_MAX];
        return gt_err_set(err, GT_EINVAL, "%s: give volume (a Volume's name) or hostPath, %s",
                          gt_path_join(sub, sizeof(sub), path, vol ? "hostPath" : "volume"),
                          vol ? "not both" : "one is required");
    }
    if (!json_object_get(home, "mountPath")) {
        json_object_set_new(home, "mountPath",
                            vol ? json_string(GT_NOTEBOOK_VOLUME_HOME)
                                : json_incref((json_t *)host));
    }
    return 0;
}
static const struct gt_schema home_schema = {home_fields, home_post,
                                             sizeof(struct gt_api_notebook_home)};

static const struct gt_field idle_fields[] = {
    BOOL("enabled", AT(notebook_idle, enabled)),
    INT("timeoutSeconds", 1, INT32_MAX, AT(notebook_idle, timeout_s)),
    END,
};
static const struct gt_schema idle_schema = {idle_fields, NULL,
                                             sizeof(struct gt_api_notebook_idle)};

static bool asks_gpus(const json_t *tmpl)
{
    const json_t *res = json_object_get(tmpl, "resources");
    const char *const sides[] = {"requests", "limits"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *m = json_object_get(res, sides[i]);
        const json_t *gpu = json_object_get(m, GT_RES_NAME_GPU);
        if (json_object_get(m, GT_RES_NAME_GPU_MILLI) ||
            (json_is_integer(gpu) && json_integer_value(gpu) > 0)) {
            return true;
        }
    }
    return false;
}

/* idle.enabled defaults to whether the notebook has GPUs */
static int spec_post(json_t *spec, const char *path, struct gt_err *err)
{
    (void)path;
    (void)err;
    json_t *idle = json_object_get(spec, "idle");
    if (json_is_object(idle) && !json_object_get(idle, "enabled")) {
        json_object_set_new(idle, "enabled",
                            json_boolean(asks_gpus(json_object_get(spec, "template"))));
    }
    return 0;
}

static const struct gt_field spec_fields[] = {
    OBJ("template", nb_template_schema, .flags = GT_F_CREATE, AT(notebook_spec, template)),
    OBJ("home", home_schema, AT(notebook_spec, home), HAS(notebook_spec, has_home)),
    OBJ("idle", idle_schema, .flags = GT_F_CREATE, AT(notebook_spec, idle)),
    STR("priorityClass", DNS, AT(notebook_spec, priority_class)),
    BOOL("stopped", .flags = GT_F_DEFAULT, .def_int = 0, AT(notebook_spec, stopped)),
    END,
};
static const struct gt_schema spec_schema = {spec_fields, spec_post,
                                             sizeof(struct gt_api_notebook_spec)};

static const struct gt_field status_fields[] = {
    STR("phase", .enums = notebook_phases, IDX, AT(notebook_status, phase)),
    STR("url", .max_len = 512, AT(notebook_status, url)),
    STR("task", DNS, AT(notebook_status, task)),
    STR("lastActivityTime", TIME, AT(notebook_status, last_activity_time)),
    STR("lastActivity", SHORT, AT(notebook_status, last_activity)),
    STR("idleWarningTime", TIME, AT(notebook_status, idle_warning_time)),
    LIST("conditions", gt_api_condition_item, AT(notebook_status, conditions)),
    END,
};
static const struct gt_schema status_schema = {status_fields, NULL,
                                               sizeof(struct gt_api_notebook_status)};

/* the name leaves room for the task's "nb-" and "-worker-0" */
static int notebook_post(json_t *obj, const char *path, struct gt_err *err)
{
    (void)path;
    const char *name = gt_obj_name(obj);
    if (name && strlen(name) > GT_NOTEBOOK_NAME_MAX) {
        return gt_err_set(err, GT_EINVAL, "metadata.name: at most %d characters for a Notebook",
                          GT_NOTEBOOK_NAME_MAX);
    }
    return 0;
}

static const struct gt_field notebook_fields[] = {
    ROOT_FIELDS,
    OBJ("spec", spec_schema, .flags = GT_F_CREATE, AT(notebook, spec)),
    OBJ("status", status_schema, AT(notebook, status)),
    END,
};
const struct gt_schema gt_api_notebook_schema = {notebook_fields, notebook_post,
                                                 sizeof(struct gt_api_notebook)};
