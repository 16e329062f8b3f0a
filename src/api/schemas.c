/*
 * The schema of every kind, as tables (see api_int.h for the row format),
 * plus the few rules that relate fields to each other (quota <= limit,
 * Master/Chief uniqueness, minAvailable <= replicas, mounts naming volumes,
 * image-or-command). Fields and bounds follow DESIGN.md "Resource model";
 * int32 bounds where Kubernetes uses int32.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"

static const char *const replica_types[] = {"Master",    "Chief",    "PS", "Worker",
                                            "Evaluator", "Launcher", NULL};
static const char *const restart_policies[] = {"Never", "OnFailure", "Always", "ExitCode", NULL};
static const char *const clean_pod_policies[] = {"All", "Running", "None", NULL};
static const char *const cond_statuses[] = {"True", "False", "Unknown", NULL};
static const char *const job_cond_types[] = {"Created",    "Queued",       "Running",
                                             "Restarting", "Succeeded",    "Failed",
                                             "Suspended",  "Inadmissible", NULL};
/* spec.runPolicy.schedulingPolicy.topology levels (sched.h enum
 * gt_sched_topology, in its order after NONE) */
static const char *const topology_levels[] = {"node", "gpu-group", "numa", NULL};
static const char *const roles[] = {"admin", "member", "viewer", NULL};
static const char *const preemption_policies[] = {"PreemptLowerPriority", "Never", NULL};
static const char *const taint_effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute", NULL};
static const char *const gpu_health[] = {"Healthy", "Unhealthy", NULL};
static const char *const address_types[] = {"InternalIP", "Hostname", "AgentURL", NULL};
static const char *const task_phases[] = {"Pending",   "Bound",  "Running", "Terminating",
                                          "Succeeded", "Failed", NULL};
static const char *const event_types[] = {"Normal", "Warning", NULL};
/* "None" is gantry's default (no file); Kubernetes' File as the one other */
static const char *const termination_policies[] = {"None", "File", NULL};
static const char *const access_modes[] = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", NULL};
static const char *const volume_phases[] = {"Pending", "Available", "Failed", NULL};

const char *gt_api_volume_access_name(enum gt_volume_access a)
{
    return (size_t)a < GT_ARRAY_LEN(access_modes) - 1 ? access_modes[a] : access_modes[0];
}

bool gt_api_volume_shared(enum gt_volume_access a, bool read_only)
{
    return a != GT_VOLUME_RWO || read_only;
}

bool gt_api_volume_mounts_ro(enum gt_volume_access a, bool read_only)
{
    return a == GT_VOLUME_ROX || read_only;
}

const char *gt_api_task_phase_name(enum gt_task_phase p)
{
    return (size_t)p < GT_ARRAY_LEN(task_phases) - 1 ? task_phases[p]
                                                     : task_phases[GT_TASK_PENDING];
}

bool gt_api_task_phase_terminal(enum gt_task_phase p)
{
    return p == GT_TASK_SUCCEEDED || p == GT_TASK_FAILED;
}

static int check_replica_type(const json_t *v, struct gt_err *err)
{
    for (const char *const *t = replica_types; *t; t++) {
        if (strcmp(json_string_value(v), *t) == 0) {
            return 0;
        }
    }
    return gt_err_set(err, GT_EINVAL,
                      "replica type must be one of Master, Chief, PS, Worker, "
                      "Evaluator, Launcher");
}

static const struct gt_field string_item = {.name = "item", .type = GT_F_STRING};
static const struct gt_field user_item = {.name = "item", .type = GT_F_STRING, SHORT};

/* ---- metadata and conditions, shared by all kinds ---- */

static const struct gt_field creator_fields[] = {
    STR("user", SHORT, AT(creator, user)),
    INT("uid", 0, UID_MAX, AT(creator, uid)),
    END,
};
static const struct gt_schema creator_schema = {creator_fields, NULL,
                                                sizeof(struct gt_api_creator)};

static const struct gt_field label_value = {
    .name = "value", .type = GT_F_STRING, .max_len = 63, .check = gt_check_label_value};
static const struct gt_field annotation_value = {
    .name = "value", .type = GT_F_STRING, .max_len = 256 * 1024};

/* DNS-1123 subdomain (Event names are "<object>.<hash>"): dot-separated
 * DNS labels, at most 253 characters. */
static int check_dns_subdomain(const json_t *v, struct gt_err *err)
{
    const char *s = json_string_value(v);
    size_t n = strlen(s);
    char label[254];
    if (n == 0 || n > 253) {
        return gt_err_set(err, GT_EINVAL, "must be a DNS-1123 subdomain of at most 253 characters");
    }
    for (const char *p = s;; p++) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        memcpy(label, p, len);
        label[len] = '\0';
        if (gt_api_check_name(label, NULL)) {
            return gt_err_set(err, GT_EINVAL,
                              "must be a DNS-1123 subdomain (dot-separated DNS-1123 labels)");
        }
        if (!dot) {
            return 0;
        }
        p = dot;
    }
}

#define METADATA_REST                                                                              \
    STR("project", DNS, AT(meta, project)),                                                        \
        {.name = "labels",                                                                         \
         .type = GT_F_MAP,                                                                         \
         .max_len = 256,                                                                           \
         .key_check = gt_check_label_key,                                                          \
         .elem = &label_value,                                                                     \
         AT(meta, labels)},                                                                        \
        {.name = "annotations",                                                                    \
         .type = GT_F_MAP,                                                                         \
         .key_check = gt_check_label_key,                                                          \
         .elem = &annotation_value,                                                                \
         .check = gt_check_annotations,                                                            \
         AT(meta, annotations)},                                                                   \
        STR("resourceVersion", .max_len = 20, .check = gt_check_digits,                            \
            AT(meta, resource_version)),                                                           \
        STR("uid", .max_len = 128, AT(meta, uid)),                                                 \
        STR("creationTimestamp", TIME, AT(meta, creation_timestamp)),                              \
        STR("deletionTimestamp", TIME, AT(meta, deletion_timestamp)),                              \
        OBJ("creator", creator_schema, AT(meta, creator)), END

static const struct gt_field metadata_fields[] = {STR("name", REQ, DNS, AT(meta, name)),
                                                  METADATA_REST};
static const struct gt_field event_metadata_fields[] = {
    STR("name", REQ, .max_len = 253, .check = check_dns_subdomain), METADATA_REST};
static const struct gt_schema event_metadata_schema = {event_metadata_fields, NULL, 0};
const struct gt_schema gt_api_metadata_schema = {metadata_fields, NULL, sizeof(struct gt_api_meta)};

#define CONDITION_FIELDS                                                                           \
    STR("status", REQ, .enums = cond_statuses, AT(condition, status)),                             \
        STR("reason", SHORT, AT(condition, reason)),                                               \
        STR("message", MESSAGE, AT(condition, message)),                                           \
        STR("lastTransitionTime", TIME, AT(condition, last_transition_time)),                      \
        STR("lastHeartbeatTime", TIME, AT(condition, last_heartbeat_time))

static const struct gt_field condition_fields[] = {STR("type", REQ, SHORT, AT(condition, type)),
                                                   CONDITION_FIELDS, END};
static const struct gt_schema condition_schema = {condition_fields, NULL,
                                                  sizeof(struct gt_api_condition)};
const struct gt_field gt_api_condition_item = ITEM(condition_schema);

static const struct gt_field job_condition_fields[] = {
    STR("type", REQ, .enums = job_cond_types, AT(condition, type)), CONDITION_FIELDS, END};
static const struct gt_schema job_condition_schema = {job_condition_fields, NULL,
                                                      sizeof(struct gt_api_condition)};
static const struct gt_field job_condition_item = ITEM(job_condition_schema);

/* ---- cross-field rules ---- */

/* spec.limit.<res> >= spec.quota.<res> for every resource named in both. */
static int dept_spec_post(json_t *spec, const char *path, struct gt_err *err)
{
    json_t *quota = json_object_get(spec, "quota");
    json_t *limit = json_object_get(spec, "limit");
    const char *res;
    json_t *lv;
    json_object_foreach(limit, res, lv)
    {
        json_t *qv = json_object_get(quota, res);
        int64_t l, q;
        if (qv && gt_resource_amount(res, lv, &l) == 0 && gt_resource_amount(res, qv, &q) == 0 &&
            l < q) {
            char sub[GT_API_PATH_MAX];
            char *quota_text = json_dumps(qv, JSON_ENCODE_ANY);
            gt_err_set(err, GT_EINVAL, "%s.%s: must be >= the quota (%s)",
                       gt_path_join(sub, sizeof(sub), path, "limit"), res, quota_text);
            free(quota_text);
            return GT_EINVAL;
        }
    }
    return 0;
}

static int64_t amount_of(const json_t *map, const char *res)
{
    int64_t v = 0;
    json_t *x = json_object_get(map, res);
    if (x && gt_resource_amount(res, x, &v) < 0) {
        v = 0;
    }
    return v;
}

/* gpu-milli within 1..1000 and never next to whole GPUs; requests <= limits. */
static int template_resources_post(json_t *res, const char *path, struct gt_err *err)
{
    json_t *requests = json_object_get(res, "requests");
    json_t *limits = json_object_get(res, "limits");
    bool whole = amount_of(requests, GT_RES_NAME_GPU) > 0 || amount_of(limits, GT_RES_NAME_GPU) > 0;
    const char *const names[] = {"requests", "limits"};
    json_t *const maps[] = {requests, limits};
    char sub[GT_API_PATH_MAX];
    for (size_t i = 0; i < 2; i++) {
        json_t *milli = json_object_get(maps[i], GT_RES_NAME_GPU_MILLI);
        if (!milli) {
            continue;
        }
        gt_path_join(sub, sizeof(sub), path, names[i]);
        int64_t m = json_integer_value(milli);
        if (m < 1 || m > 1000) {
            return gt_err_set(err, GT_EINVAL, "%s.gantry.dev/gpu-milli: must be between 1 and 1000",
                              sub);
        }
        if (whole) {
            return gt_err_set(err, GT_EINVAL,
                              "%s.gantry.dev/gpu-milli: may not be combined with nvidia.com/gpu",
                              sub);
        }
    }
    const char *name;
    json_t *rv;
    json_object_foreach(requests, name, rv)
    {
        if (json_object_get(limits, name) && amount_of(requests, name) > amount_of(limits, name)) {
            return gt_err_set(err, GT_EINVAL, "%s.%s: must be <= limits.%s",
                              gt_path_join(sub, sizeof(sub), path, "requests"), name, name);
        }
    }
    return 0;
}

static int template_post(json_t *tmpl, const char *path, struct gt_err *err)
{
    json_t *cmd = json_object_get(tmpl, "command");
    if (!json_object_get(tmpl, "image") && json_array_size(cmd) == 0) {
        char sub[GT_API_PATH_MAX];
        return gt_err_set(err, GT_EINVAL, "%s: required (non-empty) when there is no image",
                          gt_path_join(sub, sizeof(sub), path, "command"));
    }
    /* an image task's user namespace is the OCI runtime's business */
    if (json_object_get(tmpl, "image") && json_is_false(json_object_get(tmpl, "hostUsers"))) {
        char sub[GT_API_PATH_MAX];
        return gt_err_set(err, GT_EINVAL, "%s: false is for tasks without an image",
                          gt_path_join(sub, sizeof(sub), path, "hostUsers"));
    }
    return 0;
}

/* A validated sizeLimit (v, NULL: none) in bytes; 0 when none. */
static int64_t size_limit_bytes(const json_t *v)
{
    char text[32];
    int64_t bytes = 0;
    if (json_is_integer(v)) {
        snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    }
    const char *s = json_is_string(v) ? json_string_value(v) : text;
    if (v && gt_quantity_parse(s, GT_QTY_UNIT, &bytes, NULL) < 0) {
        bytes = 0; /* validated objects only */
    }
    return bytes;
}

/* The disk emptyDirs of volumes (a job's tasks each get them all) fit in
 * the ephemeral-storage limit (else request) of the template at tmpl_path,
 * as Kubernetes counts a pod's emptyDirs in its ephemeral storage: their
 * sizeLimits add up to at most it, and leave room for those without one,
 * which share the rest (the agent sizes them so). Memory-medium ones count
 * in memory instead. vol_path: where volumes is. */
static int scratch_fits(const json_t *volumes, const char *vol_path, const json_t *tmpl,
                        const char *tmpl_path, struct gt_err *err)
{
    const json_t *res = json_object_get(tmpl, "resources");
    const char *side = json_object_get(json_object_get(res, "limits"), GT_RES_NAME_EPHEMERAL)
                           ? "limits"
                           : "requests";
    int64_t limit = amount_of(json_object_get(res, side), GT_RES_NAME_EPHEMERAL);
    if (limit == 0) {
        return 0;
    }
    char lim_path[GT_API_PATH_MAX], sub[GT_API_PATH_MAX], a[32], b[32];
    snprintf(lim_path, sizeof(lim_path), "%s.resources.%s.%s", tmpl_path, side,
             GT_RES_NAME_EPHEMERAL);
    gt_quantity_format(limit, GT_QTY_UNIT, 1, b, sizeof(b));
    int64_t sum = 0;
    long unbounded = -1; /* the first disk emptyDir without a sizeLimit */
    size_t i;
    json_t *vol;
    json_array_foreach(volumes, i, vol)
    {
        const json_t *ed = json_object_get(vol, "emptyDir");
        const char *medium = json_string_value(json_object_get(ed, "medium"));
        if (!ed || (medium && strcmp(medium, "Memory") == 0)) {
            continue;
        }
        const json_t *sl = json_object_get(ed, "sizeLimit");
        if (!sl) {
            unbounded = unbounded < 0 ? (long)i : unbounded;
            continue;
        }
        if (gt_add_i64(sum, size_limit_bytes(sl), &sum) < 0) {
            sum = INT64_MAX;
        }
        if (sum > limit) {
            snprintf(sub, sizeof(sub), "%s[%zu].emptyDir.sizeLimit", vol_path, i);
            return gt_err_set(err, GT_EINVAL,
                              "%s: the disk emptyDirs' sizeLimits add up to %s, more than %s (%s)",
                              sub, gt_quantity_format(sum, GT_QTY_UNIT, 1, a, sizeof(a)), lim_path,
                              b);
        }
    }
    if (unbounded >= 0 && sum == limit) {
        snprintf(sub, sizeof(sub), "%s[%ld].emptyDir", vol_path, unbounded);
        return gt_err_set(err, GT_EINVAL,
                          "%s: no room left: the other disk emptyDirs' sizeLimits take all of %s "
                          "(%s); give this one a sizeLimit or the task more",
                          sub, lim_path, b);
    }
    return 0;
}

static bool has_volume(const json_t *volumes, const char *name)
{
    return gt_json_find(volumes, "name", name) != NULL;
}

/* Volume names unique; every mount names a volume; the scratch of every
 * replica type's tasks fits in its ephemeral-storage. */
static int job_volumes_check(json_t *spec, const char *path, struct gt_err *err)
{
    json_t *volumes = json_object_get(spec, "volumes");
    char sub[GT_API_PATH_MAX], vol_path[GT_API_PATH_MAX];
    gt_path_join(vol_path, sizeof(vol_path), path, "volumes");
    for (size_t i = 1; i < json_array_size(volumes); i++) {
        const char *name = json_string_value(json_object_get(json_array_get(volumes, i), "name"));
        for (size_t j = 0; j < i; j++) {
            json_t *other = json_object_get(json_array_get(volumes, j), "name");
            if (strcmp(name, json_string_value(other)) == 0) {
                snprintf(sub, sizeof(sub), "%s%svolumes[%zu].name", path, path[0] ? "." : "", i);
                return gt_err_set(err, GT_EINVAL, "%s: duplicate volume name \"%s\"", sub, name);
            }
        }
    }
    const char *type;
    json_t *rs;
    json_object_foreach(json_object_get(spec, "replicaSpecs"), type, rs)
    {
        json_t *tmpl = json_object_get(rs, "template");
        snprintf(sub, sizeof(sub), "%s%sreplicaSpecs.%s.template", path, path[0] ? "." : "", type);
        int rc = scratch_fits(volumes, vol_path, tmpl, sub, err);
        if (rc != 0) {
            return rc;
        }
        json_t *mounts = json_object_get(tmpl, "volumeMounts");
        size_t i;
        json_t *m;
        json_array_foreach(mounts, i, m)
        {
            const char *name = json_string_value(json_object_get(m, "name"));
            if (!has_volume(volumes, name)) {
                snprintf(sub, sizeof(sub), "%s%sreplicaSpecs.%s.template.volumeMounts[%zu].name",
                         path, path[0] ? "." : "", type, i);
                return gt_err_set(err, GT_EINVAL, "%s: no volume named \"%s\" in spec.volumes", sub,
                                  name);
            }
        }
    }
    return 0;
}

static int job_spec_post(json_t *spec, const char *path, struct gt_err *err)
{
    json_t *specs = json_object_get(spec, "replicaSpecs");
    char sub[GT_API_PATH_MAX];
    gt_path_join(sub, sizeof(sub), path, "replicaSpecs");
    if (json_object_size(specs) == 0) {
        return gt_err_set(err, GT_EINVAL, "%s: must name at least one replica type", sub);
    }
    if (json_object_get(specs, "Master") && json_object_get(specs, "Chief")) {
        return gt_err_set(err, GT_EINVAL, "%s: at most one of Master and Chief", sub);
    }
    int64_t total = 0;
    const char *type;
    json_t *rs;
    json_object_foreach(specs, type, rs)
    {
        int64_t n = json_integer_value(json_object_get(rs, "replicas"));
        if ((strcmp(type, "Master") == 0 || strcmp(type, "Chief") == 0) && n != 1) {
            return gt_err_set(err, GT_EINVAL, "%s.%s.replicas: must be 1", sub, type);
        }
        total += n; /* at most 5 types of at most 1000 */
    }
    json_t *min = gt_json_path(spec, "runPolicy.schedulingPolicy.minAvailable");
    if (min && json_integer_value(min) > total) {
        gt_path_join(sub, sizeof(sub), path, "runPolicy.schedulingPolicy.minAvailable");
        return gt_err_set(err, GT_EINVAL, "%s: must be <= the total replicas (%" PRId64 ")", sub,
                          total);
    }
    return job_volumes_check(spec, path, err);
}

/* ---- Department ---- */

static const struct gt_field dept_spec_fields[] = {
    RES("quota", GT_RESF_POOL, AT(department_spec, quota)),
    RES("limit", GT_RESF_POOL, AT(department_spec, limit)),
    LIST("admins", user_item, AT(department_spec, admins)),
    END,
};
static const struct gt_schema dept_spec_schema = {dept_spec_fields, dept_spec_post,
                                                  sizeof(struct gt_api_department_spec)};

static const struct gt_field dept_status_fields[] = {
    RES("used", GT_RESF_ALL, AT(department_status, used)),
    RES("borrowed", GT_RESF_ALL, AT(department_status, borrowed)),
    END,
};
static const struct gt_schema dept_status_schema = {dept_status_fields, NULL,
                                                    sizeof(struct gt_api_department_status)};

static const struct gt_field dept_fields[] = {
    ROOT_FIELDS,
    OBJ("spec", dept_spec_schema, .flags = GT_F_CREATE, AT(department, spec)),
    OBJ("status", dept_status_schema, AT(department, status)),
    END,
};
static const struct gt_schema dept_schema = {dept_fields, NULL, sizeof(struct gt_api_department)};

/* ---- Project ---- */

static const struct gt_field member_fields[] = {
    STR("user", REQ, SHORT, AT(member, user)),
    STR("role", REQ, .enums = roles, AT(member, role)),
    END,
};
static const struct gt_schema member_schema = {member_fields, NULL, sizeof(struct gt_api_member)};
static const struct gt_field member_item = ITEM(member_schema);

static const struct gt_field project_spec_fields[] = {
    STR("department", REQ, DNS, AT(project_spec, department)),
    LIST("members", member_item, AT(project_spec, members)),
    RES("hard", GT_RESF_POOL, AT(project_spec, hard), HAS(project_spec, has_hard)),
    BOOL("allowPrivileged", .flags = GT_F_DEFAULT, .def_int = 0,
         AT(project_spec, allow_privileged)),
    BOOL("stopIdleGPUJobs", .flags = GT_F_DEFAULT, .def_int = 0,
         AT(project_spec, stop_idle_gpu_jobs)),
    END,
};
static const struct gt_schema project_spec_schema = {project_spec_fields, NULL,
                                                     sizeof(struct gt_api_project_spec)};

static const struct gt_field project_fields[] = {
    ROOT_FIELDS,
    OBJ("spec", project_spec_schema, REQ, AT(project, spec)),
    END,
};
static const struct gt_schema project_schema = {project_fields, NULL,
                                                sizeof(struct gt_api_project)};

/* ---- PriorityClass: fields at the top level, as scheduling.k8s.io has them ---- */

static const struct gt_field pc_fields[] = {
    ROOT_FIELDS,
    INT("value", INT32_MIN, INT32_MAX, REQ, AT(priority_class, value)),
    STR("preemptionPolicy", .flags = GT_F_DEFAULT, .def_str = "PreemptLowerPriority",
        .enums = preemption_policies, AT(priority_class, preemption_policy)),
    BOOL("globalDefault", .flags = GT_F_DEFAULT, .def_int = 0, AT(priority_class, global_default)),
    STR("description", .max_len = 1024, AT(priority_class, description)),
    END,
};
static const struct gt_schema pc_schema = {pc_fields, NULL, sizeof(struct gt_api_priority_class)};

/* ---- Node ---- */

static const struct gt_field taint_fields[] = {
    STR("key", REQ, .max_len = 317, .check = gt_check_label_key, AT(taint, key)),
    STR("value", .max_len = 63, .check = gt_check_label_value, AT(taint, value)),
    STR("effect", REQ, .enums = taint_effects, AT(taint, effect)),
    STR("timeAdded", .check = gt_check_time, AT(taint, time_added)),
    END,
};
static const struct gt_schema taint_schema = {taint_fields, NULL, sizeof(struct gt_api_taint)};
static const struct gt_field taint_item = ITEM(taint_schema);

static const struct gt_field node_spec_fields[] = {
    BOOL("unschedulable", .flags = GT_F_DEFAULT, .def_int = 0, AT(node_spec, unschedulable)),
    LIST("taints", taint_item, AT(node_spec, taints)),
    END,
};
static const struct gt_schema node_spec_schema = {node_spec_fields, NULL,
                                                  sizeof(struct gt_api_node_spec)};

static const struct gt_field node_gpu_fields[] = {
    INT("index", 0, INT32_MAX, REQ, AT(node_gpu, index)),
    STR("uuid", .max_len = 128, AT(node_gpu, uuid)),
    STR("model", SHORT, AT(node_gpu, model)),
    INT("memoryBytes", 0, INT64_MAX, AT(node_gpu, memory_bytes)),
    INT("numaNode", -1, INT32_MAX, AT(node_gpu, numa_node)),
    STR("group", SHORT, AT(node_gpu, group)),
    STR("health", .enums = gpu_health, AT(node_gpu, health)),
    END,
};
static const struct gt_schema node_gpu_schema = {node_gpu_fields, NULL,
                                                 sizeof(struct gt_api_node_gpu)};
static const struct gt_field node_gpu_item = ITEM(node_gpu_schema);

static const struct gt_field address_fields[] = {
    STR("type", REQ, .enums = address_types, AT(address, type)),
    STR("address", REQ, .max_len = 1024, AT(address, address)),
    END,
};
static const struct gt_schema address_schema = {address_fields, NULL,
                                                sizeof(struct gt_api_address)};
static const struct gt_field address_item = ITEM(address_schema);

static const struct gt_field node_status_fields[] = {
    RES("capacity", GT_RESF_POOL, AT(node_status, capacity)),
    RES("allocatable", GT_RESF_POOL, AT(node_status, allocatable)),
    LIST("gpus", node_gpu_item, AT(node_status, gpus)),
    LIST("conditions", gt_api_condition_item, AT(node_status, conditions)),
    LIST("addresses", address_item, AT(node_status, addresses)),
    STR("lastHeartbeatTime", TIME, AT(node_status, last_heartbeat_time)),
    {.name = "allocated",
     .type = GT_F_FORBIDDEN,
     .why = "computed by the server on reads, never stored"},
    END,
};
static const struct gt_schema node_status_schema = {node_status_fields, NULL,
                                                    sizeof(struct gt_api_node_status)};

static const struct gt_field node_fields[] = {
    ROOT_FIELDS,
    OBJ("spec", node_spec_schema, .flags = GT_F_CREATE, AT(node, spec)),
    OBJ("status", node_status_schema, AT(node, status)),
    END,
};
static const struct gt_schema node_schema = {node_fields, NULL, sizeof(struct gt_api_node)};

/* ---- the container template, shared by Job replicas and Tasks ---- */

/* valueFrom.fieldRef.fieldPath: what of the task gantryd writes into value
 * when it binds the task (Kubernetes' downward API): its name, its
 * project, its node's InternalIP. */
static const char *const env_field_paths[] = {"metadata.name", "metadata.namespace",
                                              "status.hostIP", NULL};
static const struct gt_field field_ref_fields[] = {
    STR("fieldPath", REQ, .enums = env_field_paths),
    END,
};
static const struct gt_schema field_ref_schema = {field_ref_fields, NULL, 0};
/* valueFrom.gantrySecret: a value gantryd derives and never stores, set
 * only by its controllers (gt_api_check_no_secret_refs refuses it from
 * users). */
static const char *const env_secrets[] = {GT_API_SECRET_NOTEBOOK_TOKEN,
                                          GT_API_SECRET_REGISTRY_CREDENTIAL, NULL};
static const struct gt_field value_from_fields[] = {
    OBJ("fieldRef", field_ref_schema),
    STR("gantrySecret", .enums = env_secrets, AT(env_source, gantry_secret)),
    END,
};
/* Exactly one of fieldRef and gantrySecret. */
static int value_from_post(json_t *vf, const char *path, struct gt_err *err)
{
    bool ref = json_object_get(vf, "fieldRef") != NULL;
    bool secret = json_object_get(vf, "gantrySecret") != NULL;
    if (ref == secret) {
        return gt_err_set(err, GT_EINVAL, "%s: give fieldRef or gantrySecret, %s", path,
                          ref ? "not both" : "one is required");
    }
    return 0;
}
static const struct gt_schema value_from_schema = {value_from_fields, value_from_post,
                                                   sizeof(struct gt_api_env_source)};

static const struct gt_field env_fields[] = {
    STR("name", REQ, SHORT, .check = gt_check_env_name, AT(env, name)),
    STR("value", MESSAGE, AT(env, value)),
    OBJ("valueFrom", value_from_schema, AT(env, value_from)),
    END,
};
static const struct gt_schema env_schema = {env_fields, NULL, sizeof(struct gt_api_env)};
static const struct gt_field env_item = ITEM(env_schema);

static const struct gt_field container_port_fields[] = {
    STR("name", DNS, AT(container_port, name)),
    INT("containerPort", 1, 65535, REQ, AT(container_port, container_port)),
    END,
};
static const struct gt_schema container_port_schema = {container_port_fields, NULL,
                                                       sizeof(struct gt_api_container_port)};
static const struct gt_field container_port_item = ITEM(container_port_schema);

static const struct gt_field mount_fields[] = {
    STR("name", REQ, DNS, AT(mount, name)),
    STR("mountPath", REQ, .check = gt_check_host_path, AT(mount, mount_path)),
    BOOL("readOnly", AT(mount, read_only)),
    END,
};
static const struct gt_schema mount_schema = {mount_fields, NULL, sizeof(struct gt_api_mount)};
static const struct gt_field mount_item = ITEM(mount_schema);

static const struct gt_field template_resources_fields[] = {
    RES("requests", GT_RESF_TEMPLATE, AT(template_resources, requests)),
    RES("limits", GT_RESF_TEMPLATE, AT(template_resources, limits)),
    END,
};
const struct gt_schema gt_api_template_resources_schema = {
    template_resources_fields, template_resources_post, sizeof(struct gt_api_template_resources)};

/* A toleration (Kubernetes core/v1 Toleration): an empty key with
 * operator Exists tolerates every taint; Exists takes no value. */
static const char *const toleration_ops[] = {"Equal", "Exists", NULL};
static int toleration_post(json_t *t, const char *path, struct gt_err *err)
{
    const char *op = json_string_value(json_object_get(t, "operator"));
    const char *key = json_string_value(json_object_get(t, "key"));
    const char *effect = json_string_value(json_object_get(t, "effect"));
    bool exists = op && !strcmp(op, "Exists");
    char sub[GT_API_PATH_MAX];
    if (exists && json_object_get(t, "value")) {
        return gt_err_set(err, GT_EINVAL, "%s: must be empty when operator is Exists",
                          gt_path_join(sub, sizeof(sub), path, "value"));
    }
    if ((!key || !*key) && !exists) {
        return gt_err_set(err, GT_EINVAL,
                          "%s: an empty key needs operator Exists (it tolerates every taint)",
                          gt_path_join(sub, sizeof(sub), path, "operator"));
    }
    if (json_object_get(t, "tolerationSeconds") && (!effect || strcmp(effect, "NoExecute"))) {
        return gt_err_set(err, GT_EINVAL, "%s: only with effect NoExecute",
                          gt_path_join(sub, sizeof(sub), path, "tolerationSeconds"));
    }
    return 0;
}

static int check_label_key_or_empty(const json_t *v, struct gt_err *err)
{
    return *json_string_value(v) ? gt_check_label_key(v, err) : 0;
}

static const struct gt_field toleration_fields[] = {
    STR("key", .max_len = 317, .check = check_label_key_or_empty, AT(toleration, key)),
    STR("operator", .enums = toleration_ops, .flags = GT_F_DEFAULT, .def_str = "Equal",
        AT(toleration, op)),
    STR("value", .max_len = 63, .check = gt_check_label_value, AT(toleration, value)),
    STR("effect", .enums = taint_effects, AT(toleration, effect)),
    INT("tolerationSeconds", 0, INT64_MAX / 1000, AT(toleration, seconds)),
    END,
};
static const struct gt_schema toleration_schema = {toleration_fields, toleration_post,
                                                   sizeof(struct gt_api_toleration)};
static const struct gt_field toleration_item = ITEM(toleration_schema);

const struct gt_field gt_api_template_fields[] = {
    STR("image", .max_len = 512, .check = gt_check_image, AT(template, image)),
    LIST("command", string_item, AT(template, command)),
    LIST("args", string_item, AT(template, args)),
    LIST("env", env_item, AT(template, env)),
    STR("workingDir", .check = gt_check_abs_path, AT(template, working_dir)),
    OBJ("resources", gt_api_template_resources_schema, AT(template, resources)),
    LIST("ports", container_port_item, AT(template, ports)),
    LIST("volumeMounts", mount_item, AT(template, volume_mounts)),
    {.name = "nodeSelector",
     .type = GT_F_MAP,
     .max_len = 64,
     .key_check = gt_check_label_key,
     .elem = &label_value,
     AT(template, node_selector)},
    LIST("tolerations", toleration_item, .max_len = 64, AT(template, tolerations)),
    INT("runAsUser", 0, UID_MAX, AT(template, run_as_user)),
    INT("terminationGracePeriodSeconds", 0, INT32_MAX, AT(template, grace_period_s)),
    BOOL("hostUsers", AT(template, host_users), HAS(template, has_host_users)),
    STR("terminationMessagePolicy", .enums = termination_policies, IDX,
        AT(template, termination_policy)),
    END,
};
static const struct gt_schema template_schema = {gt_api_template_fields, template_post,
                                                 sizeof(struct gt_api_template)};

/* ---- Job ---- */

static const struct gt_field replica_spec_fields[] = {
    INT("replicas", 1, 1000, .flags = GT_F_DEFAULT, .def_int = 1, AT(replica_spec, replicas)),
    STR("restartPolicy", .flags = GT_F_DEFAULT, .def_str = "Never", .enums = restart_policies,
        AT(replica_spec, restart_policy)),
    OBJ("template", template_schema, REQ, AT(replica_spec, template)),
    END,
};
/* decoded as an entry of the replicaSpecs map: its key (the type) first */
static const struct gt_schema replica_spec_schema = {replica_spec_fields, NULL,
                                                     sizeof(struct gt_api_replica_spec)};
static const struct gt_field replica_spec_item = ITEM(replica_spec_schema);

/* At most one of required and preferred: a job asks for one level. */
static int topology_post(json_t *topo, const char *path, struct gt_err *err)
{
    if (json_object_get(topo, "required") && json_object_get(topo, "preferred")) {
        char sub[GT_API_PATH_MAX];
        return gt_err_set(err, GT_EINVAL, "%s: give required or preferred, not both",
                          gt_path_join(sub, sizeof(sub), path, "preferred"));
    }
    return 0;
}

static const struct gt_field topology_fields[] = {
    STR("required", .enums = topology_levels, AT(topology, required)),
    STR("preferred", .enums = topology_levels, AT(topology, preferred)),
    END,
};
static const struct gt_schema topology_schema = {topology_fields, topology_post,
                                                 sizeof(struct gt_api_topology)};

static const struct gt_field sched_policy_fields[] = {
    INT("minAvailable", 1, INT32_MAX, AT(sched_policy, min_available)),
    STR("queue", DNS, AT(sched_policy, queue)),
    STR("priorityClass", DNS, AT(sched_policy, priority_class)),
    OBJ("topology", topology_schema, AT(sched_policy, topology)),
    END,
};
static const struct gt_schema sched_policy_schema = {sched_policy_fields, NULL,
                                                     sizeof(struct gt_api_sched_policy)};

static const struct gt_field run_policy_fields[] = {
    INT("backoffLimit", 0, INT32_MAX, .flags = GT_F_DEFAULT, .def_int = 6,
        AT(run_policy, backoff_limit)),
    INT("activeDeadlineSeconds", 1, INT32_MAX, AT(run_policy, active_deadline_s)),
    INT("ttlSecondsAfterFinished", 0, INT32_MAX, AT(run_policy, ttl_after_finished_s)),
    STR("cleanPodPolicy", .flags = GT_F_DEFAULT, .def_str = "None", .enums = clean_pod_policies,
        AT(run_policy, clean_pod_policy)),
    OBJ("schedulingPolicy", sched_policy_schema, AT(run_policy, scheduling_policy)),
    END,
};
static const struct gt_schema run_policy_schema = {run_policy_fields, NULL,
                                                   sizeof(struct gt_api_run_policy)};

static const struct gt_field source_fields[] = {
    STR("git", REQ, .check = gt_check_git_url, AT(source, git)),
    STR("revision", SHORT, .check = gt_check_git_revision, AT(source, revision)),
    END,
};
static const struct gt_schema source_schema = {source_fields, NULL, sizeof(struct gt_api_source)};

/* emptyDir.sizeLimit: a quantity of bytes (string or integer), above 0. */
static int check_size_limit(const json_t *v, struct gt_err *err)
{
    char text[32];
    int64_t bytes = 0;
    if (json_is_integer(v)) {
        snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    }
    const char *s = json_is_string(v) ? json_string_value(v) : json_is_integer(v) ? text : NULL;
    if (!s) {
        return gt_err_set(err, GT_EINVAL, "must be a quantity of bytes (\"1Gi\")");
    }
    int rc = gt_quantity_parse(s, GT_QTY_UNIT, &bytes, err);
    if (rc == 0 && bytes <= 0) {
        rc = gt_err_set(err, GT_EINVAL, "must be more than 0 bytes");
    }
    return rc;
}

int64_t gt_api_empty_dir_bytes(const struct gt_api_empty_dir *d)
{
    return size_limit_bytes(d->size_limit);
}

/* "" is the node's disk (the task's data directory), as in Kubernetes;
 * HugePages is not offered. In the order of GT_API_MEDIUM_*. */
static const char *const empty_dir_media[] = {"", "Memory", NULL};
static const struct gt_field empty_dir_fields[] = {
    STR("medium", .enums = empty_dir_media, IDX, AT(empty_dir, medium)),
    {.name = "sizeLimit", .type = GT_F_ANY, .check = check_size_limit, AT(empty_dir, size_limit)},
    END,
};
static const struct gt_schema empty_dir_schema = {empty_dir_fields, NULL,
                                                  sizeof(struct gt_api_empty_dir)};

/* A spec.volumes entry names exactly one source: a hostPath beneath a
 * storage root, a Volume of the project or an emptyDir. */
static int volume_entry_post(json_t *vol, const char *path, struct gt_err *err)
{
    int host = json_object_get(vol, "hostPath") != NULL;
    int named = json_object_get(vol, "volume") != NULL;
    int scratch = json_object_get(vol, "emptyDir") != NULL;
    char sub[GT_API_PATH_MAX];
    if (host + named + scratch != 1) { /* name the second source given, if any */
        const char *field = !host + !named + !scratch == 3 ? "hostPath"
                            : host && named                ? "volume"
                                                           : "emptyDir";
        return gt_err_set(err, GT_EINVAL,
                          "%s: exactly one of hostPath, volume and emptyDir is required",
                          gt_path_join(sub, sizeof(sub), path, field));
    }
    if (scratch && json_is_true(json_object_get(vol, "readOnly"))) {
        return gt_err_set(err, GT_EINVAL,
                          "%s: must be false for an emptyDir (the task's own scratch space)",
                          gt_path_join(sub, sizeof(sub), path, "readOnly"));
    }
    if (json_object_get(vol, "image") && !named) {
        return gt_err_set(err, GT_EINVAL, "%s: only with volume",
                          gt_path_join(sub, sizeof(sub), path, "image"));
    }
    return 0;
}

#define VOLUME_ENTRY_FIELDS                                                                        \
    STR("name", REQ, DNS, AT(volume, name)),                                                       \
        STR("hostPath", .check = gt_check_host_path, AT(volume, host_path)),                       \
        STR("volume", DNS, AT(volume, volume)), BOOL("readOnly", AT(volume, read_only)),           \
        OBJ("emptyDir", empty_dir_schema, AT(volume, empty_dir), HAS(volume, has_empty_dir))

static const struct gt_field volume_fields[] = {
    VOLUME_ENTRY_FIELDS,
    {.name = "image", .type = GT_F_FORBIDDEN, .why = "set by the server on the job's tasks"},
    END,
};
static const struct gt_schema volume_schema = {volume_fields, volume_entry_post,
                                               sizeof(struct gt_api_volume)};
static const struct gt_field volume_item = ITEM(volume_schema);

/* a Task's entry also carries the Volume's disk image, written at bind */
static const struct gt_field task_volume_fields[] = {
    VOLUME_ENTRY_FIELDS,
    STR("image", .check = gt_check_host_path, AT(volume, image)),
    END,
};
static const struct gt_schema task_volume_schema = {task_volume_fields, volume_entry_post,
                                                    sizeof(struct gt_api_volume)};
static const struct gt_field task_volume_item = ITEM(task_volume_schema);

static const struct gt_field tensorboard_fields[] = {
    STR("logDir", REQ, .max_len = 4096, .check = gt_check_log_dir, AT(tensorboard, log_dir)),
    BOOL("server", .flags = GT_F_DEFAULT, .def_int = 0, AT(tensorboard, server)),
    END,
};
static const struct gt_schema tensorboard_schema = {tensorboard_fields, NULL,
                                                    sizeof(struct gt_api_tensorboard)};

static const struct gt_field job_spec_fields[] = {
    {.name = "replicaSpecs",
     .type = GT_F_MAP,
     .flags = GT_F_REQUIRED,
     .max_len = 5,
     .key_check = check_replica_type,
     .elem = &replica_spec_item,
     AT(job_spec, replica_specs)},
    OBJ("runPolicy", run_policy_schema, .flags = GT_F_CREATE, AT(job_spec, run_policy)),
    OBJ("source", source_schema, AT(job_spec, source), HAS(job_spec, has_source)),
    {.name = "requirements",
     .type = GT_F_ANY,
     .check = gt_check_requirements,
     AT(job_spec, requirements)},
    LIST("volumes", volume_item, .max_len = 64, AT(job_spec, volumes)),
    OBJ("tensorboard", tensorboard_schema, AT(job_spec, tensorboard),
        HAS(job_spec, has_tensorboard)),
    OBJ("outputs", gt_api_job_outputs_schema, AT(job_spec, outputs), HAS(job_spec, has_outputs)),
    END,
};
static const struct gt_schema job_spec_schema = {job_spec_fields, job_spec_post,
                                                 sizeof(struct gt_api_job_spec)};

static const struct gt_field replica_status_fields[] = {
    INT("active", 0, INT32_MAX, AT(replica_status, active)),
    INT("succeeded", 0, INT32_MAX, AT(replica_status, succeeded)),
    INT("failed", 0, INT32_MAX, AT(replica_status, failed)),
    END,
};
static const struct gt_schema replica_status_schema = {replica_status_fields, NULL,
                                                       sizeof(struct gt_api_replica_status)};
static const struct gt_field replica_status_item = ITEM(replica_status_schema);

static const struct gt_field job_status_fields[] = {
    LIST("conditions", job_condition_item, AT(job_status, conditions)),
    {.name = "replicaStatuses",
     .type = GT_F_MAP,
     .max_len = 5,
     .key_check = check_replica_type,
     .elem = &replica_status_item,
     AT(job_status, replica_statuses)},
    STR("startTime", TIME, AT(job_status, start_time)),
    STR("completionTime", TIME, AT(job_status, completion_time)),
    INT("restartCount", 0, INT32_MAX, AT(job_status, restart_count)),
    INT("requeueCount", 0, INT32_MAX, AT(job_status, requeue_count)),
    INT("imagePullBackOffs", 0, INT32_MAX, AT(job_status, image_pull_backoffs)),
    END,
};
static const struct gt_schema job_status_schema = {job_status_fields, NULL,
                                                   sizeof(struct gt_api_job_status)};

static const struct gt_field job_fields[] = {
    ROOT_FIELDS,
    OBJ("spec", job_spec_schema, REQ, AT(job, spec)),
    OBJ("status", job_status_schema, AT(job, status)),
    END,
};
static const struct gt_schema job_schema = {job_fields, NULL, sizeof(struct gt_api_job)};

/* ---- Task ---- */

static const struct gt_field task_gpu_fields[] = {
    INT("index", 0, INT32_MAX, REQ, AT(task_gpu, index)),
    STR("uuid", .max_len = 128, AT(task_gpu, uuid)),
    INT("milli", 1, 1000, AT(task_gpu, milli)),
    END,
};
static const struct gt_schema task_gpu_schema = {task_gpu_fields, NULL,
                                                 sizeof(struct gt_api_task_gpu)};
static const struct gt_field task_gpu_item = ITEM(task_gpu_schema);

static const struct gt_field task_port_fields[] = {
    STR("name", DNS, AT(task_port, name)),
    INT("port", 1, 65535, REQ, AT(task_port, port)),
    END,
};
static const struct gt_schema task_port_schema = {task_port_fields, NULL,
                                                  sizeof(struct gt_api_task_port)};
static const struct gt_field task_port_item = ITEM(task_port_schema);

/* spec.hosts of a Task: the job's host names, written into its /etc/hosts
 * by the agent (which rejects whitespace and bad addresses) */
static const struct gt_field task_host_fields[] = {
    STR("hostname", REQ, .max_len = 253, AT(task_host, hostname)),
    STR("ip", REQ, .max_len = 64, AT(task_host, ip)),
    END,
};
static const struct gt_schema task_host_schema = {task_host_fields, NULL,
                                                  sizeof(struct gt_api_task_host)};
static const struct gt_field task_host_item = ITEM(task_host_schema);

static const struct gt_field previous_fields[] = {
    STR("uid", .max_len = 128, AT(task_previous, uid)),
    STR("nodeName", DNS, AT(task_previous, node_name)),
    END,
};
static const struct gt_schema previous_schema = {previous_fields, NULL,
                                                 sizeof(struct gt_api_task_previous)};

static const struct gt_field stop_fields[] = {
    STR("reason", SHORT, AT(task_stop, reason)),
    INT("gracePeriodSeconds", 0, INT32_MAX, AT(task_stop, grace_period_s)),
    END,
};
static const struct gt_schema stop_schema = {stop_fields, NULL, sizeof(struct gt_api_task_stop)};

/* spec.pip of a Task: the cluster's pip configuration (gantryd
 * --pip-index-url, --pip-find-links), used by the agent for requirements */
static const struct gt_field task_pip_fields[] = {
    STR("indexUrl", .max_len = 4096, AT(pip, index_url)),
    STR("findLinks", .max_len = 4096, AT(pip, find_links)),
    END,
};
static const struct gt_schema task_pip_schema = {task_pip_fields, NULL, sizeof(struct gt_api_pip)};

static const struct gt_field task_spec_fields[] = {
    STR("job", DNS, AT(task_spec, job)),
    STR("replicaType", .enums = replica_types, AT(task_spec, replica_type)),
    INT("replicaIndex", 0, INT32_MAX, AT(task_spec, replica_index)),
    OBJ("template", template_schema, REQ, AT(task_spec, template)),
    STR("nodeName", DNS, AT(task_spec, node_name)),
    LIST("gpus", task_gpu_item, AT(task_spec, gpus)),
    LIST("ports", task_port_item, AT(task_spec, ports)),
    LIST("hosts", task_host_item, AT(task_spec, hosts)),
    OBJ("stop", stop_schema, AT(task_spec, stop), HAS(task_spec, has_stop)),
    INT("priority", INT32_MIN, INT32_MAX, AT(task_spec, priority)),
    STR("department", DNS, AT(task_spec, department)),
    BOOL("privileged", .flags = GT_F_DEFAULT, .def_int = 0, AT(task_spec, privileged)),
    BOOL("stopIdleGPU", .flags = GT_F_DEFAULT, .def_int = 0, AT(task_spec, stop_idle_gpu)),
    OBJ("source", source_schema, AT(task_spec, source), HAS(task_spec, has_source)),
    {.name = "requirements",
     .type = GT_F_ANY,
     .check = gt_check_requirements,
     AT(task_spec, requirements)},
    OBJ("pip", task_pip_schema, AT(task_spec, pip)),
    LIST("volumes", task_volume_item, .max_len = 64, AT(task_spec, volumes)),
    OBJ("tensorboard", tensorboard_schema, AT(task_spec, tensorboard),
        HAS(task_spec, has_tensorboard)),
    END,
};
/* The task's scratch fits in its ephemeral-storage (scratch_fits). */
static int task_spec_post(json_t *spec, const char *path, struct gt_err *err)
{
    char vol_path[GT_API_PATH_MAX], tmpl_path[GT_API_PATH_MAX];
    gt_path_join(vol_path, sizeof(vol_path), path, "volumes");
    gt_path_join(tmpl_path, sizeof(tmpl_path), path, "template");
    return scratch_fits(json_object_get(spec, "volumes"), vol_path,
                        json_object_get(spec, "template"), tmpl_path, err);
}

static const struct gt_schema task_spec_schema = {task_spec_fields, task_spec_post,
                                                  sizeof(struct gt_api_task_spec)};

static const struct gt_field task_status_fields[] = {
    STR("phase", .enums = task_phases, IDX, AT(task_status, phase)),
    INT("exitCode", INT32_MIN, INT32_MAX, AT(task_status, exit_code)),
    INT("signal", 0, INT32_MAX, AT(task_status, signal)),
    STR("reason", SHORT, AT(task_status, reason)),
    STR("message", MESSAGE, AT(task_status, message)),
    STR("boundTime", TIME, AT(task_status, bound_time)),
    STR("startTime", TIME, AT(task_status, start_time)),
    STR("finishTime", TIME, AT(task_status, finish_time)),
    INT("hostPid", 0, INT32_MAX, AT(task_status, host_pid)),
    OBJ("previous", previous_schema, AT(task_status, previous)),
    END,
};
static const struct gt_schema task_status_schema = {task_status_fields, NULL,
                                                    sizeof(struct gt_api_task_status)};

static const struct gt_field task_fields[] = {
    ROOT_FIELDS,
    OBJ("spec", task_spec_schema, REQ, AT(task, spec)),
    OBJ("status", task_status_schema, AT(task, status)),
    END,
};
static const struct gt_schema task_schema = {task_fields, NULL, sizeof(struct gt_api_task)};

/* ---- ImageBuild ---- */

static const char *const build_phases[] = {"Pending", "Running", "Succeeded", "Failed", NULL};

const char *gt_api_build_phase_name(enum gt_build_phase p)
{
    return (size_t)p < GT_ARRAY_LEN(build_phases) - 1 ? build_phases[p] : "Unknown";
}

/* A Dockerfile inline or a path in the source, never both; a path or a
 * context needs the source. */
static int imagebuild_spec_post(json_t *obj, const char *path, struct gt_err *err)
{
    bool inline_df = json_object_get(obj, "dockerfile") != NULL;
    bool has_path = json_object_get(obj, "dockerfilePath") != NULL;
    bool has_src = json_object_get(obj, "source") != NULL;
    if (inline_df && has_path) {
        return gt_err_set(err, GT_EINVAL, "%s.dockerfilePath: not with an inline dockerfile", path);
    }
    if (!inline_df && !has_src) {
        return gt_err_set(err, GT_EINVAL, "%s.dockerfile: required (or source with dockerfilePath)",
                          path);
    }
    if (json_object_get(obj, "context") && !has_src) {
        return gt_err_set(err, GT_EINVAL, "%s.context: needs source", path);
    }
    return 0;
}

static const struct gt_field imagebuild_spec_fields[] = {
    STR("dockerfile", .max_len = 65536, AT(imagebuild_spec, dockerfile)),
    STR("dockerfilePath", .max_len = 1024, .check = gt_check_rel_path,
        AT(imagebuild_spec, dockerfile_path)),
    OBJ("source", source_schema, AT(imagebuild_spec, source), HAS(imagebuild_spec, has_source)),
    STR("context", .max_len = 1024, .check = gt_check_rel_path, AT(imagebuild_spec, context)),
    LIST("buildArgs", env_item, .max_len = 256, AT(imagebuild_spec, build_args)),
    STR("image", REQ, .max_len = 256, .check = gt_check_image_name, AT(imagebuild_spec, image)),
    OBJ("resources", gt_api_template_resources_schema, AT(imagebuild_spec, resources)),
    END,
};
static const struct gt_schema imagebuild_spec_schema = {
    imagebuild_spec_fields, imagebuild_spec_post, sizeof(struct gt_api_imagebuild_spec)};

static const struct gt_field imagebuild_status_fields[] = {
    STR("phase", .enums = build_phases, IDX, AT(imagebuild_status, phase)),
    STR("reason", SHORT, AT(imagebuild_status, reason)),
    STR("message", MESSAGE, AT(imagebuild_status, message)),
    STR("image", .max_len = 512, AT(imagebuild_status, image)),
    STR("digest", SHORT, AT(imagebuild_status, digest)),
    STR("nodeName", DNS, AT(imagebuild_status, node_name)),
    STR("startTime", TIME, AT(imagebuild_status, start_time)),
    STR("completionTime", TIME, AT(imagebuild_status, completion_time)),
    INT("buildDurationMs", 0, INT64_MAX, AT(imagebuild_status, build_duration_ms)),
    END,
};
static const struct gt_schema imagebuild_status_schema = {imagebuild_status_fields, NULL,
                                                          sizeof(struct gt_api_imagebuild_status)};

static const struct gt_field imagebuild_fields[] = {
    ROOT_FIELDS,
    OBJ("spec", imagebuild_spec_schema, REQ, AT(imagebuild, spec)),
    OBJ("status", imagebuild_status_schema, AT(imagebuild, status)),
    END,
};
static const struct gt_schema imagebuild_schema = {imagebuild_fields, NULL,
                                                   sizeof(struct gt_api_imagebuild)};

/* ---- Event: fields at the top level, as core/v1 Event has them ---- */

static const struct gt_field involved_fields[] = {
    STR("kind", REQ, .max_len = 64),
    STR("name", REQ, DNS),
    STR("project", DNS),
    STR("uid", .max_len = 128),
    END,
};
static const struct gt_schema involved_schema = {involved_fields, NULL, 0};

static const struct gt_field event_source_fields[] = {STR("component", SHORT), END};
static const struct gt_schema event_source_schema = {event_source_fields, NULL, 0};

static const struct gt_field event_fields[] = {
    STR("apiVersion", REQ),
    STR("kind", REQ),
    OBJ("metadata", event_metadata_schema, REQ),
    OBJ("involvedObject", involved_schema, REQ),
    STR("reason", REQ, .max_len = 128, .check = gt_check_camel_word),
    STR("message", MESSAGE),
    STR("type", .flags = GT_F_DEFAULT, .def_str = "Normal", .enums = event_types),
    INT("count", 1, INT32_MAX, .flags = GT_F_DEFAULT, .def_int = 1),
    STR("firstTimestamp", TIME),
    STR("lastTimestamp", TIME),
    OBJ("source", event_source_schema),
    END,
};
static const struct gt_schema event_schema = {event_fields, NULL, 0};

/* ---- Volume ---- */

/* capacity.storage is required and positive. */
static int volume_spec_post(json_t *spec, const char *path, struct gt_err *err)
{
    char sub[GT_API_PATH_MAX];
    if (amount_of(json_object_get(spec, "capacity"), GT_RES_NAME_STORAGE) <= 0) {
        return gt_err_set(err, GT_EINVAL, "%s.storage: required (a size such as 64Mi, above 0)",
                          gt_path_join(sub, sizeof(sub), path, "capacity"));
    }
    return 0;
}

static const struct gt_field volume_spec_fields[] = {
    RES("capacity", GT_RESF_STORAGE, REQ, AT(volume_spec, capacity)),
    STR("accessMode", .flags = GT_F_DEFAULT, .def_str = "ReadWriteOnce", .enums = access_modes, IDX,
        AT(volume_spec, access_mode)),
    STR("storageClass", DNS, AT(volume_spec, storage_class)),
    BOOL("readOnly", .flags = GT_F_DEFAULT, .def_int = 0, AT(volume_spec, read_only)),
    END,
};
static const struct gt_schema volume_spec_schema = {volume_spec_fields, volume_spec_post,
                                                    sizeof(struct gt_api_volume_spec)};

static const struct gt_field volume_status_fields[] = {
    STR("phase", .enums = volume_phases, IDX, AT(volume_status, phase)),
    STR("message", MESSAGE, AT(volume_status, message)),
    STR("storageClass", DNS, AT(volume_status, storage_class)),
    STR("path", .max_len = 4096, AT(volume_status, path)),
    {.name = "usage",
     .type = GT_F_FORBIDDEN,
     .why = "computed by the server on reads, never stored"},
    {.name = "users",
     .type = GT_F_FORBIDDEN,
     .why = "computed by the server on reads, never stored"},
    END,
};
static const struct gt_schema volume_status_schema = {volume_status_fields, NULL,
                                                      sizeof(struct gt_api_volume_status)};

static const struct gt_field volume_kind_fields[] = {
    ROOT_FIELDS,
    OBJ("spec", volume_spec_schema, REQ, AT(volume_obj, spec)),
    OBJ("status", volume_status_schema, AT(volume_obj, status)),
    END,
};
static const struct gt_schema volume_kind_schema = {volume_kind_fields, NULL,
                                                    sizeof(struct gt_api_volume_obj)};

static const struct gt_schema *const kind_schemas[GT_KIND_COUNT] = {
    [GT_KIND_DEPARTMENT] = &dept_schema,
    [GT_KIND_PROJECT] = &project_schema,
    [GT_KIND_PRIORITYCLASS] = &pc_schema,
    [GT_KIND_NODE] = &node_schema,
    [GT_KIND_JOB] = &job_schema,
    [GT_KIND_TASK] = &task_schema,
    [GT_KIND_EVENT] = &event_schema,
    [GT_KIND_NOTEBOOK] = &gt_api_notebook_schema,
    [GT_KIND_VOLUME] = &volume_kind_schema,
    [GT_KIND_IMAGEBUILD] = &imagebuild_schema,
    [GT_KIND_MODEL] = &gt_api_model_schema,
    [GT_KIND_MODELVERSION] = &gt_api_modelversion_schema,
    [GT_KIND_INFERENCESERVICE] = &gt_api_isvc_schema,
};

const struct gt_schema *gt_kind_schema(enum gt_kind kind)
{
    return (unsigned)kind < GT_KIND_COUNT ? kind_schemas[kind] : NULL;
}
