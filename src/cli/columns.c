/*
 * The columns `gantry get` shows for each kind.
 *
 * One const table per kind lists its columns (header, cell function, wide
 * only); NAME comes first and AGE last, as in kubectl, and -A puts PROJECT in
 * front for project-scoped kinds as kubectl puts NAMESPACE. A row is decoded
 * once into its kind's typed struct (api.h), which the cells that reason
 * over fields read (phases, conditions, replica counts, GPUs); the cells
 * that show a value as the server wrote it (quantities, whose text the
 * server chooses for computed ones) print the JSON. A cell returns a new
 * string, or NULL for "<none>".
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

enum { MAX_COLS = 16 };

/* One object of the list: as the server sent it, and decoded (o: NULL for
 * a kind without a typed form, Event). */
struct row {
    const json_t *json;
    const struct gt_api_object *o;
};

/* The typed form of a row of each kind. */
#define PROJ(r) ((const struct gt_api_project *)(r)->o)
#define PC(r) ((const struct gt_api_priority_class *)(r)->o)
#define NODE(r) ((const struct gt_api_node *)(r)->o)
#define JOB(r) ((const struct gt_api_job *)(r)->o)
#define TASK(r) ((const struct gt_api_task *)(r)->o)
#define NOTEBOOK(r) ((const struct gt_api_notebook *)(r)->o)

/* A column shows cell(row); for a text column, the scalar at the dotted
 * path text of the object; for an age column, the age of the timestamp
 * age_of(row) returns; for a department's amount column, the amount of
 * resource in the map at map_path. */
struct column {
    const char *header;
    char *(*cell)(const struct row *r);
    const char *text;
    const char *(*age_of)(const struct row *r);
    const char *map_path;
    const char *resource;
    bool wide_only;
};

static char *text_at(const json_t *obj, const char *dotted)
{
    return gt_cli_scalar_text(gt_json_path(obj, dotted));
}

static char *dup_or_null(const char *s)
{
    return s ? gt_xstrdup(s) : NULL;
}

/* Resource map lookup: keys like "nvidia.com/gpu" contain dots, so the map
 * is found by path and the key looked up directly. */
static const json_t *resource_at(const json_t *obj, const char *map_path, const char *resource)
{
    return json_object_get(gt_json_path(obj, map_path), resource);
}

static char *name_cell(const struct row *r)
{
    return dup_or_null(r->o->meta.name);
}

static char *project_cell(const struct row *r)
{
    return dup_or_null(r->o->meta.project);
}

static const char *created_at(const struct row *r)
{
    return r->o->meta.creation_timestamp;
}

/* Text of a resource amount, or fallback when absent. */
static char *amount(const json_t *v, const char *fallback)
{
    char *s = gt_cli_scalar_text(v);
    return s ? s : gt_xstrdup(fallback);
}

/* ---- departments ---- */

/* A department's amount of resource in the map at map_path ("0" when not
 * named); a resource not named in spec.limit has a limit equal to its quota
 * (DESIGN.md). status.used and status.borrowed (above the quota) are
 * computed by gantryd on reads from what its scheduler counts. */
static char *dept_amount(const struct row *r, const char *map_path, const char *resource)
{
    const json_t *v = resource_at(r->json, map_path, resource);
    if (!v && !strcmp(map_path, "spec.limit")) {
        v = resource_at(r->json, "spec.quota", resource);
    }
    return amount(v, "0");
}

#define DEPT_COL(h, map, res, ...)                                                                 \
    {                                                                                              \
        .header = h, .map_path = map, .resource = res, __VA_ARGS__                                 \
    }

/* Per resource: guarantee (QUOTA), LIMIT, USED and BORROWED; GPUs by
 * default, cpu and memory in full with -o wide, and storage's quota and
 * what its Volumes hold. */
static const struct column department_cols[] = {
    {.header = "NAME", .cell = name_cell},
    DEPT_COL("GPU QUOTA", "spec.quota", GT_RES_NAME_GPU),
    DEPT_COL("GPU LIMIT", "spec.limit", GT_RES_NAME_GPU),
    DEPT_COL("GPU USED", "status.used", GT_RES_NAME_GPU),
    DEPT_COL("GPU BORROWED", "status.borrowed", GT_RES_NAME_GPU),
    DEPT_COL("CPU", "spec.quota", GT_RES_NAME_CPU),
    DEPT_COL("CPU LIMIT", "spec.limit", GT_RES_NAME_CPU, .wide_only = true),
    DEPT_COL("CPU USED", "status.used", GT_RES_NAME_CPU, .wide_only = true),
    DEPT_COL("CPU BORROWED", "status.borrowed", GT_RES_NAME_CPU, .wide_only = true),
    DEPT_COL("MEMORY", "spec.quota", GT_RES_NAME_MEMORY),
    DEPT_COL("MEMORY LIMIT", "spec.limit", GT_RES_NAME_MEMORY, .wide_only = true),
    DEPT_COL("MEMORY USED", "status.used", GT_RES_NAME_MEMORY, .wide_only = true),
    DEPT_COL("MEMORY BORROWED", "status.borrowed", GT_RES_NAME_MEMORY, .wide_only = true),
    DEPT_COL("STORAGE", "spec.quota", GT_RES_NAME_STORAGE, .wide_only = true),
    DEPT_COL("STORAGE USED", "status.used", GT_RES_NAME_STORAGE, .wide_only = true),
    {.header = "AGE", .age_of = created_at},
};

/* ---- projects ---- */

static char *proj_department(const struct row *r)
{
    return dup_or_null(PROJ(r)->spec.department);
}

static char *proj_members(const struct row *r)
{
    return gt_xasprintf("%zu", PROJ(r)->spec.members.n);
}

static const struct column project_cols[] = {
    {.header = "NAME", .cell = name_cell},
    {.header = "DEPARTMENT", .cell = proj_department},
    {.header = "MEMBERS", .cell = proj_members},
    {.header = "AGE", .age_of = created_at},
};

/* ---- priorityclasses (fields at the top level, as in Kubernetes) ---- */

static char *pc_value(const struct row *r)
{
    int64_t v = PC(r)->value;
    return gt_xasprintf("%" PRId64, v == GT_API_UNSET ? 0 : v);
}

static char *pc_global_default(const struct row *r)
{
    return gt_xstrdup(PC(r)->global_default ? "true" : "false");
}

/* absent: the schema's default, PreemptLowerPriority */
static char *pc_preemption(const struct row *r)
{
    return dup_or_null(PC(r)->preemption_policy);
}

static const struct column priorityclass_cols[] = {
    {.header = "NAME", .cell = name_cell},
    {.header = "VALUE", .cell = pc_value},
    {.header = "GLOBAL-DEFAULT", .cell = pc_global_default},
    {.header = "PREEMPTION", .cell = pc_preemption},
    {.header = "AGE", .age_of = created_at},
};

/* ---- nodes ---- */

static char *node_status(const struct row *r)
{
    bool ready = gt_api_condition_true(&NODE(r)->status.conditions, "Ready");
    return gt_xasprintf("%s%s", ready ? "Ready" : "NotReady",
                        NODE(r)->spec.unschedulable ? ",SchedulingDisabled" : "");
}

/* Allocatable amount of a resource, else its capacity. */
static const json_t *node_amount(const struct row *r, const char *resource)
{
    const json_t *v = resource_at(r->json, "status.allocatable", resource);
    return v ? v : resource_at(r->json, "status.capacity", resource);
}

static char *node_gpus(const struct row *r)
{
    const json_t *v = node_amount(r, GT_RES_NAME_GPU);
    if (v) {
        return amount(v, "0");
    }
    return gt_xasprintf("%zu", NODE(r)->status.gpus.n);
}

static char *node_cpu(const struct row *r)
{
    return gt_cli_scalar_text(node_amount(r, GT_RES_NAME_CPU));
}

static char *node_memory(const struct row *r)
{
    return gt_cli_scalar_text(node_amount(r, GT_RES_NAME_MEMORY));
}

static const struct column node_cols[] = {
    {.header = "NAME", .cell = name_cell},     {.header = "STATUS", .cell = node_status},
    {.header = "GPUS", .cell = node_gpus},     {.header = "CPU", .cell = node_cpu},
    {.header = "MEMORY", .cell = node_memory}, {.header = "AGE", .age_of = created_at},
};

/* ---- jobs ---- */

/* milli-GPUs a container of this template holds: its effective GPU limit
 * (api's one defaulting rule: a limit not given is the request). */
static int64_t template_gpu_milli(const struct gt_api_template *tmpl)
{
    struct gt_api_effective eff;
    gt_api_resources_effective(&tmpl->resources, &eff);
    return eff.limit.v[GT_RES_GPU];
}

/* milli-GPUs as GPUs: "2", "0.5", "1.25". */
static char *gpu_text(int64_t milli)
{
    if (milli % 1000 == 0) {
        return gt_xasprintf("%" PRId64, milli / 1000);
    }
    char *s = gt_xasprintf("%" PRId64 ".%03" PRId64, milli / 1000, milli % 1000);
    size_t n = strlen(s);
    while (s[n - 1] == '0') {
        s[--n] = '\0';
    }
    return s;
}

/* The job's current state: the last condition that is True (a Restarting
 * condition stays in the list, False, once the job runs again), else the
 * last one. Borrowed, or NULL when there is none. */
static const struct gt_api_condition *current_condition(const struct row *r)
{
    const struct gt_api_conditions *conds = &JOB(r)->status.conditions;
    const struct gt_api_condition *cur = NULL;
    for (size_t i = 0; i < conds->n; i++) {
        const char *st = conds->v[i].status;
        if (st && !strcmp(st, "True")) {
            cur = &conds->v[i];
        }
    }
    return cur ? cur : conds->n ? &conds->v[conds->n - 1] : NULL;
}

static char *job_status(const struct row *r)
{
    const struct gt_api_condition *cur = current_condition(r);
    return cur ? dup_or_null(cur->type) : NULL;
}

/* squeue's REASON: why the job is not running. While Queued, the short
 * reason of the scheduler's message ("Quota: department ...", else the
 * condition's reason unless it is just "Queued"); while Restarting or
 * Failed, the condition's reason (Preempted, Drained, TaskFailed...). */
static char *job_reason(const struct row *r)
{
    const struct gt_api_condition *cur = current_condition(r);
    if (cur && (!cur->status || strcmp(cur->status, "True"))) {
        cur = NULL;
    }
    const char *type = cur ? cur->type : NULL;
    const char *reason = cur ? cur->reason : NULL;
    const char *msg = cur ? cur->message : NULL;
    if (!type || (strcmp(type, "Queued") && strcmp(type, "Restarting") && strcmp(type, "Failed"))) {
        return NULL;
    }
    if (!strcmp(type, "Queued") && msg) {
        size_t n = 0;
        while (isalpha((unsigned char)msg[n])) {
            n++;
        }
        if (n && isupper((unsigned char)msg[0]) && !strncmp(msg + n, ": ", 2)) {
            return gt_xasprintf("%.*s", (int)n, msg);
        }
    }
    return reason && strcmp(reason, type) ? gt_xstrdup(reason) : NULL;
}

static char *job_replicas(const struct row *r)
{
    int64_t total = 0;
    for (size_t i = 0; i < JOB(r)->spec.replica_specs.n; i++) {
        if (gt_add_i64(total, JOB(r)->spec.replica_specs.v[i].replicas, &total) != 0) {
            total = INT64_MAX;
        }
    }
    return gt_xasprintf("%" PRId64, total);
}

static char *job_gpus(const struct row *r)
{
    int64_t total = 0, part;
    for (size_t i = 0; i < JOB(r)->spec.replica_specs.n; i++) {
        const struct gt_api_replica_spec *rs = &JOB(r)->spec.replica_specs.v[i];
        if (gt_mul_i64(rs->replicas, template_gpu_milli(&rs->template), &part) != 0 ||
            gt_add_i64(total, part, &total) != 0) {
            total = INT64_MAX;
        }
    }
    return gpu_text(total);
}

static char *job_priority(const struct row *r)
{
    return dup_or_null(JOB(r)->spec.run_policy.scheduling_policy.priority_class);
}

static char *job_queue(const struct row *r)
{
    return dup_or_null(JOB(r)->spec.run_policy.scheduling_policy.queue);
}

static const struct column job_cols[] = {
    {.header = "NAME", .cell = name_cell},
    {.header = "STATUS", .cell = job_status},
    {.header = "REASON", .cell = job_reason},
    {.header = "REPLICAS", .cell = job_replicas},
    {.header = "GPUS", .cell = job_gpus, .wide_only = true},
    {.header = "PRIORITY", .cell = job_priority, .wide_only = true},
    {.header = "QUEUE", .cell = job_queue, .wide_only = true},
    {.header = "AGE", .age_of = created_at},
};

/* ---- tasks ---- */

/* the phase as the server wrote it */
static char *task_phase(const struct row *r)
{
    return amount(gt_json_path(r->json, "status.phase"), "Pending");
}

static char *task_node(const struct row *r)
{
    return dup_or_null(TASK(r)->spec.node_name);
}

/* GPUs of the task: once bound, those of spec.gpus (each entry holds
 * `milli` of a device, a whole device when milli is absent); before, what
 * its template asks for, as kubectl shows a pending pod's requests. */
static char *task_gpus(const struct row *r)
{
    const struct gt_api_task_spec *ts = &TASK(r)->spec;
    int64_t total = 0;
    if (ts->gpus.n == 0 && !ts->node_name) {
        return gpu_text(template_gpu_milli(&ts->template));
    }
    for (size_t i = 0; i < ts->gpus.n; i++) {
        int64_t milli = ts->gpus.v[i].milli == GT_API_UNSET ? 1000 : ts->gpus.v[i].milli;
        if (gt_add_i64(total, milli, &total) != 0) {
            total = INT64_MAX;
        }
    }
    return gpu_text(total);
}

static const struct column task_cols[] = {
    {.header = "NAME", .cell = name_cell},   {.header = "PHASE", .cell = task_phase},
    {.header = "NODE", .cell = task_node},   {.header = "GPUS", .cell = task_gpus},
    {.header = "AGE", .age_of = created_at},
};

/* ---- events (kubectl's columns; no NAME, they are named by the server;
 * an Event has no typed form, so its cells read the JSON) ---- */

/* Events are aged by their last occurrence, as kubectl's LAST SEEN. */
static const char *event_last_seen(const struct row *r)
{
    static const char *const paths[] = {"lastTimestamp", "firstTimestamp",
                                        "metadata.creationTimestamp"};
    const char *ts = NULL;
    for (size_t i = 0; i < GT_ARRAY_LEN(paths) && !ts; i++) {
        ts = json_string_value(gt_json_path(r->json, paths[i]));
    }
    return ts;
}

static char *event_type(const struct row *r)
{
    return text_at(r->json, "type");
}

static char *event_reason(const struct row *r)
{
    return text_at(r->json, "reason");
}

/* "job/train", as kubectl shows "pod/web-0". */
static char *event_object(const struct row *r)
{
    const char *kind = json_string_value(gt_json_path(r->json, "involvedObject.kind"));
    const char *name = json_string_value(gt_json_path(r->json, "involvedObject.name"));
    char *s = gt_xasprintf("%s/%s", kind ? kind : "", name ? name : "");
    for (char *p = s; *p && *p != '/'; p++) {
        *p = (char)tolower((unsigned char)*p);
    }
    return s;
}

static char *event_message(const struct row *r)
{
    return text_at(r->json, "message");
}

/* ---- volumes ---- */

#define VOL(r) ((const struct gt_api_volume_obj *)(r)->o)

static char *vol_capacity(const struct row *r)
{
    return text_at(r->json, "spec.capacity.storage");
}

static char *vol_usage(const struct row *r)
{
    return text_at(r->json, "status.usage");
}

static char *vol_access(const struct row *r)
{
    return gt_xstrdup(gt_api_volume_access_name((enum gt_volume_access)VOL(r)->spec.access_mode));
}

static char *vol_class(const struct row *r)
{
    return dup_or_null(VOL(r)->status.storage_class);
}

static char *vol_phase(const struct row *r)
{
    return text_at(r->json, "status.phase");
}

static char *vol_read_only(const struct row *r)
{
    return gt_xstrdup(VOL(r)->spec.read_only ? "true" : "false");
}

/* The tasks using it, comma-separated. */
static char *vol_users(const struct row *r)
{
    const json_t *users = gt_json_path(r->json, "status.users");
    if (json_array_size(users) == 0) {
        return NULL;
    }
    struct gt_buf b;
    gt_buf_init(&b);
    size_t i;
    const json_t *u;
    json_array_foreach(users, i, u)
    {
        gt_buf_printf(&b, "%s%s", i ? "," : "", json_string_value(u));
    }
    return gt_buf_take(&b);
}

static const struct column volume_cols[] = {
    {.header = "NAME", .cell = name_cell},         {.header = "CAPACITY", .cell = vol_capacity},
    {.header = "USAGE", .cell = vol_usage},        {.header = "ACCESS", .cell = vol_access},
    {.header = "READONLY", .cell = vol_read_only}, {.header = "CLASS", .cell = vol_class},
    {.header = "PHASE", .cell = vol_phase},        {.header = "USERS", .cell = vol_users},
    {.header = "AGE", .age_of = created_at},
};

static const struct column event_cols[] = {
    {.header = "LAST SEEN", .age_of = event_last_seen}, {.header = "TYPE", .cell = event_type},
    {.header = "REASON", .cell = event_reason},         {.header = "OBJECT", .cell = event_object},
    {.header = "MESSAGE", .cell = event_message},
};

/* ---- notebooks ---- */

static char *notebook_phase(const struct row *r)
{
    return gt_xstrdup(gt_api_notebook_phase_name(NOTEBOOK(r)->status.phase));
}

static char *notebook_activity(const struct row *r)
{
    return dup_or_null(NOTEBOOK(r)->status.last_activity);
}

static const char *notebook_activity_at(const struct row *r)
{
    return NOTEBOOK(r)->status.last_activity_time;
}

static char *notebook_url(const struct row *r)
{
    return dup_or_null(NOTEBOOK(r)->status.url);
}

static const struct column notebook_cols[] = {
    {.header = "NAME", .cell = name_cell},
    {.header = "PHASE", .cell = notebook_phase},
    {.header = "LAST ACTIVITY", .age_of = notebook_activity_at},
    {.header = "WHAT", .cell = notebook_activity},
    {.header = "URL", .cell = notebook_url, .wide_only = true},
    {.header = "AGE", .age_of = created_at},
};

/* ---- image builds ---- */

static const struct column imagebuild_cols[] = {
    {.header = "NAME", .cell = name_cell},
    {.header = "PHASE", .text = "status.phase"},
    {.header = "IMAGE", .text = "status.image"},
    {.header = "REASON", .text = "status.reason"},
    {.header = "DIGEST", .text = "status.digest", .wide_only = true},
    {.header = "AGE", .age_of = created_at},
};

/* ---- models and their versions ---- */

static int by_string(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const struct column model_cols[] = {
    {.header = "NAME", .cell = name_cell},
    {.header = "FRAMEWORK", .text = "spec.framework"},
    {.header = "DESCRIPTION", .text = "spec.description"},
    {.header = "AGE", .age_of = created_at},
};

/* "k=v,k2=v2" of a map of scalars in key order (labels, metrics), or NULL
 * when it is empty. */
static char *map_text(const json_t *m)
{
    size_t n = json_object_size(m);
    if (!n) {
        return NULL;
    }
    const char **keys = gt_xcalloc(n, sizeof(*keys));
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)m, k, v)
    {
        keys[i++] = k;
    }
    qsort(keys, n, sizeof(*keys), by_string);
    struct gt_buf b;
    gt_buf_init(&b);
    for (i = 0; i < n; i++) {
        char *t = gt_cli_scalar_text(json_object_get(m, keys[i]));
        gt_buf_printf(&b, "%s%s=%s", i ? "," : "", keys[i], t ? t : "");
        free(t);
    }
    free(keys);
    return gt_buf_take(&b);
}

static char *mv_metrics(const struct row *r)
{
    return map_text(gt_json_path(r->json, "spec.metrics"));
}

static const struct column modelversion_cols[] = {
    {.header = "NAME", .cell = name_cell},
    {.header = "MODEL", .text = "spec.model"},
    {.header = "VERSION", .text = "status.version"},
    {.header = "STAGE", .text = "spec.stage"},
    {.header = "PHASE", .text = "status.phase"},
    {.header = "METRICS", .cell = mv_metrics},
    {.header = "DIGEST", .text = "status.digest", .wide_only = true},
    {.header = "PATH", .text = "status.path", .wide_only = true},
    {.header = "AGE", .age_of = created_at},
};

/* ---- inference services ---- */

static char *isvc_ready(const struct row *r)
{
    const json_t *c = gt_json_find(gt_json_path(r->json, "status.conditions"), "type", "Ready");
    return text_at(c, "status");
}

/* Ready's reason; while Ready, the Scaled condition's when it is not
 * (a scale-up waiting: QuotaExceeded, Unschedulable, ScalingUp) */
static char *isvc_reason(const struct row *r)
{
    const json_t *cs = gt_json_path(r->json, "status.conditions");
    const json_t *c = gt_json_find(cs, "type", "Ready");
    const json_t *scaled = gt_json_find(cs, "type", "Scaled");
    const char *ready = json_string_value(json_object_get(c, "status"));
    const char *ok = json_string_value(json_object_get(scaled, "status"));
    return text_at(ready && !strcmp(ready, "True") && ok && strcmp(ok, "True") ? scaled : c,
                   "reason");
}

/* "ready/desired" replicas over the variants */
static char *isvc_replicas(const struct row *r)
{
    const json_t *vs = gt_json_path(r->json, "status.variants");
    json_int_t ready = 0, total = 0;
    size_t i;
    const json_t *v;
    json_array_foreach(vs, i, v)
    {
        ready += json_integer_value(json_object_get(v, "readyReplicas"));
        total += json_integer_value(json_object_get(v, "replicas"));
    }
    return gt_xasprintf("%lld/%lld", (long long)ready, (long long)total);
}

/* requests in flight and per second over the variants */
static char *isvc_in_flight(const struct row *r)
{
    json_int_t n = 0;
    size_t i;
    const json_t *v;
    json_array_foreach(gt_json_path(r->json, "status.variants"), i, v)
    {
        n += json_integer_value(json_object_get(v, "inFlight"));
    }
    return gt_xasprintf("%lld", (long long)n);
}

static char *isvc_rps(const struct row *r)
{
    double rps = 0;
    size_t i;
    const json_t *v;
    json_array_foreach(gt_json_path(r->json, "status.variants"), i, v)
    {
        rps += json_number_value(json_object_get(v, "requestsPerSecond"));
    }
    return gt_xasprintf("%.1f", rps);
}

/* "a=80,b=20": each variant's weight at the gateway */
static char *isvc_traffic(const struct row *r)
{
    const json_t *vs = gt_json_path(r->json, "status.variants");
    struct gt_buf b;
    gt_buf_init(&b);
    gt_buf_puts(&b, "");
    size_t i;
    const json_t *v;
    json_array_foreach(vs, i, v)
    {
        gt_buf_printf(&b, "%s%s=%lld", i ? "," : "", json_string_value(json_object_get(v, "name")),
                      (long long)json_integer_value(json_object_get(v, "weight")));
    }
    return gt_buf_take(&b);
}

static char *isvc_url(const struct row *r)
{
    return text_at(r->json, "status.url");
}

static const struct column isvc_cols[] = {
    {.header = "NAME", .cell = name_cell},
    {.header = "READY", .cell = isvc_ready},
    {.header = "REPLICAS", .cell = isvc_replicas},
    {.header = "TRAFFIC", .cell = isvc_traffic},
    {.header = "IN-FLIGHT", .cell = isvc_in_flight},
    {.header = "RPS", .cell = isvc_rps},
    {.header = "REASON", .cell = isvc_reason},
    {.header = "URL", .cell = isvc_url, .wide_only = true},
    {.header = "AGE", .age_of = created_at},
};

static const struct {
    const struct column *cols;
    size_t n;
} kind_cols[GT_KIND_COUNT] = {
    [GT_KIND_DEPARTMENT] = {department_cols, GT_ARRAY_LEN(department_cols)},
    [GT_KIND_PROJECT] = {project_cols, GT_ARRAY_LEN(project_cols)},
    [GT_KIND_PRIORITYCLASS] = {priorityclass_cols, GT_ARRAY_LEN(priorityclass_cols)},
    [GT_KIND_NODE] = {node_cols, GT_ARRAY_LEN(node_cols)},
    [GT_KIND_JOB] = {job_cols, GT_ARRAY_LEN(job_cols)},
    [GT_KIND_TASK] = {task_cols, GT_ARRAY_LEN(task_cols)},
    [GT_KIND_EVENT] = {event_cols, GT_ARRAY_LEN(event_cols)},
    [GT_KIND_NOTEBOOK] = {notebook_cols, GT_ARRAY_LEN(notebook_cols)},
    [GT_KIND_VOLUME] = {volume_cols, GT_ARRAY_LEN(volume_cols)},
    [GT_KIND_IMAGEBUILD] = {imagebuild_cols, GT_ARRAY_LEN(imagebuild_cols)},
    [GT_KIND_MODEL] = {model_cols, GT_ARRAY_LEN(model_cols)},
    [GT_KIND_MODELVERSION] = {modelversion_cols, GT_ARRAY_LEN(modelversion_cols)},
    [GT_KIND_INFERENCESERVICE] = {isvc_cols, GT_ARRAY_LEN(isvc_cols)},
};

static const struct column project_col = {.header = "PROJECT", .cell = project_cell};

/* --show-labels: "k=v,k2=v2" in key order, as kubectl prints them. */
static char *labels_cell(const struct row *r)
{
    return map_text(gt_json_path(r->json, "metadata.labels"));
}

static const struct column labels_col = {.header = "LABELS", .cell = labels_cell};

/* The columns shown for k under opts, in order, into out[MAX_COLS]. */
static size_t pick(const struct gt_kind_info *k, const struct gt_cli_columns_opts *opts,
                   const struct column **out)
{
    size_t n = 0;
    if (opts->with_project && k->namespaced) {
        out[n++] = &project_col;
    }
    for (size_t i = 0; i < kind_cols[k->kind].n; i++) {
        const struct column *c = &kind_cols[k->kind].cols[i];
        if (!c->wide_only || opts->wide) {
            GT_ASSERT(n < MAX_COLS);
            out[n++] = c;
        }
    }
    if (opts->show_labels) {
        GT_ASSERT(n < MAX_COLS);
        out[n++] = &labels_col;
    }
    return n;
}

void gt_cli_columns_init(struct gt_cli_table *t, const struct gt_kind_info *k,
                         const struct gt_cli_columns_opts *opts)
{
    const struct column *cols[MAX_COLS];
    const char *headers[MAX_COLS];
    size_t n = pick(k, opts, cols);
    for (size_t i = 0; i < n; i++) {
        headers[i] = cols[i]->header;
    }
    gt_cli_table_init(t, n, headers);
}

void gt_cli_columns_add(struct gt_cli_table *t, const struct gt_kind_info *k,
                        const struct gt_cli_columns_opts *opts, const json_t *obj, int64_t now_ms)
{
    const struct column *cols[MAX_COLS];
    char *cells[MAX_COLS] = {0};
    size_t n = pick(k, opts, cols);
    GT_ASSERT(n == t->n_cols);
    struct gt_api_object *o = gt_api_object_new(k->kind, (json_t *)obj);
    struct row r = {.json = obj, .o = o};
    /* every kind's table but Event's reads the typed form */
    GT_ASSERT(o || k->kind == GT_KIND_EVENT);
    char age[32];
    for (size_t i = 0; i < n; i++) {
        if (cols[i]->age_of) {
            cells[i] = gt_xstrdup(gt_cli_format_age(cols[i]->age_of(&r), now_ms, age, sizeof(age)));
        } else if (cols[i]->map_path) {
            cells[i] = dept_amount(&r, cols[i]->map_path, cols[i]->resource);
        } else if (cols[i]->text) {
            cells[i] = text_at(r.json, cols[i]->text);
        } else {
            cells[i] = cols[i]->cell(&r);
        }
    }
    gt_cli_table_add(t, (const char *const *)cells);
    for (size_t i = 0; i < n; i++) {
        free(cells[i]);
    }
    gt_api_object_free(o);
}
