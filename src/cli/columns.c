/*
 * The columns `gantry get` shows for each kind.
 *
 * One const table per kind lists its columns (header, cell function, wide
 * only); NAME comes first and AGE last, as in kubectl, and -A puts PROJECT in
 * front for project-scoped kinds as kubectl puts NAMESPACE. A cell function
 * reads a validated object and returns a new string, or NULL for "<none>".
 * Quantities are shown as the server stores them (canonical strings).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

enum { MAX_COLS = 16 };

/* A column shows cell(obj), or, for an age column, the age of the
 * timestamp age_of(obj) returns. */
struct column {
    const char *header;
    char *(*cell)(const json_t *obj);
    const char *(*age_of)(const json_t *obj);
    bool wide_only;
};

static char *text_at(const json_t *obj, const char *dotted)
{
    return gt_cli_scalar_text(gt_json_path(obj, dotted));
}

/* Resource map lookup: keys like "nvidia.com/gpu" contain dots, so the map
 * is found by path and the key looked up directly. */
static const json_t *resource_at(const json_t *obj, const char *map_path, const char *resource)
{
    return json_object_get(gt_json_path(obj, map_path), resource);
}

static char *name_cell(const json_t *obj)
{
    return text_at(obj, "metadata.name");
}

static char *project_cell(const json_t *obj)
{
    return text_at(obj, "metadata.project");
}

static const char *created_at(const json_t *obj)
{
    return json_string_value(gt_json_path(obj, "metadata.creationTimestamp"));
}

/* Text of a resource amount, or fallback when absent. */
static char *amount(const json_t *v, const char *fallback)
{
    char *s = gt_cli_scalar_text(v);
    return s ? s : gt_xstrdup(fallback);
}

/* ---- departments ---- */

static char *dept_gpu_quota(const json_t *obj)
{
    return amount(resource_at(obj, "spec.quota", "nvidia.com/gpu"), "0");
}

static char *dept_cpu(const json_t *obj)
{
    return amount(resource_at(obj, "spec.quota", "cpu"), "0");
}

static char *dept_memory(const json_t *obj)
{
    return amount(resource_at(obj, "spec.quota", "memory"), "0");
}

/* A resource not named in limit has a limit equal to its quota (DESIGN.md). */
static char *dept_limit(const json_t *obj, const char *resource)
{
    const json_t *v = resource_at(obj, "spec.limit", resource);
    return amount(v ? v : resource_at(obj, "spec.quota", resource), "0");
}

/* status.used and status.borrowed (above the quota) are computed by gantryd
 * on reads from what its scheduler counts. */
static char *dept_gpu_limit(const json_t *obj)
{
    return dept_limit(obj, "nvidia.com/gpu");
}

static char *dept_gpu_used(const json_t *obj)
{
    return amount(resource_at(obj, "status.used", "nvidia.com/gpu"), "0");
}

static char *dept_gpu_borrowed(const json_t *obj)
{
    return amount(resource_at(obj, "status.borrowed", "nvidia.com/gpu"), "0");
}

static char *dept_cpu_limit(const json_t *obj)
{
    return dept_limit(obj, "cpu");
}

static char *dept_cpu_used(const json_t *obj)
{
    return amount(resource_at(obj, "status.used", "cpu"), "0");
}

static char *dept_cpu_borrowed(const json_t *obj)
{
    return amount(resource_at(obj, "status.borrowed", "cpu"), "0");
}

static char *dept_memory_limit(const json_t *obj)
{
    return dept_limit(obj, "memory");
}

static char *dept_memory_used(const json_t *obj)
{
    return amount(resource_at(obj, "status.used", "memory"), "0");
}

static char *dept_memory_borrowed(const json_t *obj)
{
    return amount(resource_at(obj, "status.borrowed", "memory"), "0");
}

/* Per resource: guarantee (QUOTA), LIMIT, USED and BORROWED; GPUs by
 * default, cpu and memory in full with -o wide. */
static const struct column department_cols[] = {
    {.header = "NAME", .cell = name_cell},
    {.header = "GPU QUOTA", .cell = dept_gpu_quota},
    {.header = "GPU LIMIT", .cell = dept_gpu_limit},
    {.header = "GPU USED", .cell = dept_gpu_used},
    {.header = "GPU BORROWED", .cell = dept_gpu_borrowed},
    {.header = "CPU", .cell = dept_cpu},
    {.header = "CPU LIMIT", .cell = dept_cpu_limit, .wide_only = true},
    {.header = "CPU USED", .cell = dept_cpu_used, .wide_only = true},
    {.header = "CPU BORROWED", .cell = dept_cpu_borrowed, .wide_only = true},
    {.header = "MEMORY", .cell = dept_memory},
    {.header = "MEMORY LIMIT", .cell = dept_memory_limit, .wide_only = true},
    {.header = "MEMORY USED", .cell = dept_memory_used, .wide_only = true},
    {.header = "MEMORY BORROWED", .cell = dept_memory_borrowed, .wide_only = true},
    {.header = "AGE", .age_of = created_at},
};

/* ---- projects ---- */

static char *proj_department(const json_t *obj)
{
    return text_at(obj, "spec.department");
}

static char *proj_members(const json_t *obj)
{
    return gt_xasprintf("%zu", json_array_size(gt_json_path(obj, "spec.members")));
}

static const struct column project_cols[] = {
    {.header = "NAME", .cell = name_cell},
    {.header = "DEPARTMENT", .cell = proj_department},
    {.header = "MEMBERS", .cell = proj_members},
    {.header = "AGE", .age_of = created_at},
};

/* ---- priorityclasses (fields at the top level, as in Kubernetes) ---- */

static char *pc_value(const json_t *obj)
{
    return amount(json_object_get(obj, "value"), "0");
}

static char *pc_global_default(const json_t *obj)
{
    return gt_xstrdup(json_is_true(json_object_get(obj, "globalDefault")) ? "true" : "false");
}

static char *pc_preemption(const json_t *obj)
{
    return amount(json_object_get(obj, "preemptionPolicy"), "PreemptLowerPriority");
}

static const struct column priorityclass_cols[] = {
    {.header = "NAME", .cell = name_cell},
    {.header = "VALUE", .cell = pc_value},
    {.header = "GLOBAL-DEFAULT", .cell = pc_global_default},
    {.header = "PREEMPTION", .cell = pc_preemption},
    {.header = "AGE", .age_of = created_at},
};

/* ---- nodes ---- */

/* status of the condition of type `type` in obj's status.conditions. */
static const char *condition_status(const json_t *obj, const char *type)
{
    json_t *c = gt_json_find(gt_json_path(obj, "status.conditions"), "type", type);
    return json_string_value(json_object_get(c, "status"));
}

static char *node_status(const json_t *obj)
{
    const char *ready = condition_status(obj, "Ready");
    bool is_ready = ready && strcmp(ready, "True") == 0;
    bool cordoned = json_is_true(gt_json_path(obj, "spec.unschedulable"));
    return gt_xasprintf("%s%s", is_ready ? "Ready" : "NotReady",
                        cordoned ? ",SchedulingDisabled" : "");
}

/* Allocatable amount of a resource, else its capacity. */
static const json_t *node_amount(const json_t *obj, const char *resource)
{
    const json_t *v = resource_at(obj, "status.allocatable", resource);
    return v ? v : resource_at(obj, "status.capacity", resource);
}

static char *node_gpus(const json_t *obj)
{
    const json_t *v = node_amount(obj, "nvidia.com/gpu");
    if (v) {
        return amount(v, "0");
    }
    return gt_xasprintf("%zu", json_array_size(gt_json_path(obj, "status.gpus")));
}

static char *node_cpu(const json_t *obj)
{
    return gt_cli_scalar_text(node_amount(obj, "cpu"));
}

static char *node_memory(const json_t *obj)
{
    return gt_cli_scalar_text(node_amount(obj, "memory"));
}

static const struct column node_cols[] = {
    {.header = "NAME", .cell = name_cell},     {.header = "STATUS", .cell = node_status},
    {.header = "GPUS", .cell = node_gpus},     {.header = "CPU", .cell = node_cpu},
    {.header = "MEMORY", .cell = node_memory}, {.header = "AGE", .age_of = created_at},
};

/* ---- jobs ---- */

/* Whole GPUs or gpu-milli as an int64 (canonical values may be JSON
 * integers or strings); 0 when absent or unreadable. */
static int64_t count_of(const json_t *v)
{
    int64_t n = 0;
    if (json_is_integer(v)) {
        n = json_integer_value(v);
    } else if (json_is_string(v) &&
               gt_quantity_parse(json_string_value(v), GT_QTY_UNIT, &n, NULL) != 0) {
        n = 0;
    }
    return n;
}

/* GPU share in milli-GPUs of a resource map (limits, else requests). */
static int64_t resources_gpu_milli(const json_t *resources)
{
    const json_t *map = json_object_get(resources, "limits");
    if (!map || !json_object_size(map)) {
        map = json_object_get(resources, "requests");
    }
    int64_t whole = count_of(json_object_get(map, "nvidia.com/gpu"));
    int64_t milli = count_of(json_object_get(map, "gantry.dev/gpu-milli"));
    int64_t total;
    if (gt_mul_i64(whole, 1000, &total) != 0 || gt_add_i64(total, milli, &total) != 0) {
        return INT64_MAX;
    }
    return total;
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

static char *job_status(const json_t *obj)
{
    const json_t *conds = gt_json_path(obj, "status.conditions");
    size_t n = json_array_size(conds);
    return n ? gt_cli_scalar_text(json_object_get(json_array_get(conds, n - 1), "type")) : NULL;
}

/* squeue's REASON: why the job is not running. While Queued, the short
 * reason of the scheduler's message ("Quota: department ...", else the
 * condition's reason unless it is just "Queued"); while Restarting or
 * Failed, the condition's reason (Preempted, Drained, TaskFailed...). */
static char *job_reason(const json_t *obj)
{
    const json_t *conds = gt_json_path(obj, "status.conditions");
    const json_t *cur = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c)
    {
        const char *st = json_string_value(json_object_get(c, "status"));
        if (st && !strcmp(st, "True")) {
            cur = c;
        }
    }
    const char *type = json_string_value(json_object_get(cur, "type"));
    const char *reason = json_string_value(json_object_get(cur, "reason"));
    const char *msg = json_string_value(json_object_get(cur, "message"));
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

static char *job_replicas(const json_t *obj)
{
    const char *type;
    json_t *spec;
    int64_t total = 0;
    json_object_foreach(gt_json_path(obj, "spec.replicaSpecs"), type, spec)
    {
        int64_t n = json_integer_value(json_object_get(spec, "replicas"));
        if (gt_add_i64(total, n, &total) != 0) {
            total = INT64_MAX;
        }
    }
    return gt_xasprintf("%" PRId64, total);
}

static char *job_gpus(const json_t *obj)
{
    const char *type;
    json_t *spec;
    int64_t total = 0, part;
    json_object_foreach(gt_json_path(obj, "spec.replicaSpecs"), type, spec)
    {
        int64_t n = json_integer_value(json_object_get(spec, "replicas"));
        int64_t each = resources_gpu_milli(gt_json_path(spec, "template.resources"));
        if (gt_mul_i64(n, each, &part) != 0 || gt_add_i64(total, part, &total) != 0) {
            total = INT64_MAX;
        }
    }
    return gpu_text(total);
}

static char *job_priority(const json_t *obj)
{
    return text_at(obj, "spec.runPolicy.schedulingPolicy.priorityClass");
}

static char *job_queue(const json_t *obj)
{
    return text_at(obj, "spec.runPolicy.schedulingPolicy.queue");
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

static char *task_phase(const json_t *obj)
{
    return amount(gt_json_path(obj, "status.phase"), "Pending");
}

static char *task_node(const json_t *obj)
{
    return text_at(obj, "spec.nodeName");
}

/* GPUs of the task: once bound, those of spec.gpus (each entry holds
 * `milli` of a device, a whole device when milli is absent); before, what
 * its template asks for, as kubectl shows a pending pod's requests. */
static char *task_gpus(const json_t *obj)
{
    size_t i;
    json_t *g;
    int64_t total = 0;
    const json_t *bound = gt_json_path(obj, "spec.gpus");
    if (!json_is_array(bound) && !json_string_value(gt_json_path(obj, "spec.nodeName"))) {
        return gpu_text(resources_gpu_milli(gt_json_path(obj, "spec.template.resources")));
    }
    json_array_foreach(bound, i, g)
    {
        const json_t *m = json_object_get(g, "milli");
        int64_t milli = m ? json_integer_value(m) : 1000;
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

/* ---- events (kubectl's columns; no NAME, they are named by the server) ---- */

/* Events are aged by their last occurrence, as kubectl's LAST SEEN. */
static const char *event_last_seen(const json_t *obj)
{
    static const char *const paths[] = {"lastTimestamp", "firstTimestamp",
                                        "metadata.creationTimestamp"};
    const char *ts = NULL;
    for (size_t i = 0; i < GT_ARRAY_LEN(paths) && !ts; i++) {
        ts = json_string_value(gt_json_path(obj, paths[i]));
    }
    return ts;
}

static char *event_type(const json_t *obj)
{
    return text_at(obj, "type");
}

static char *event_reason(const json_t *obj)
{
    return text_at(obj, "reason");
}

/* "job/train", as kubectl shows "pod/web-0". */
static char *event_object(const json_t *obj)
{
    const char *kind = json_string_value(gt_json_path(obj, "involvedObject.kind"));
    const char *name = json_string_value(gt_json_path(obj, "involvedObject.name"));
    char *s = gt_xasprintf("%s/%s", kind ? kind : "", name ? name : "");
    for (char *p = s; *p && *p != '/'; p++) {
        *p = (char)tolower((unsigned char)*p);
    }
    return s;
}

static char *event_message(const json_t *obj)
{
    return text_at(obj, "message");
}

static const struct column event_cols[] = {
    {.header = "LAST SEEN", .age_of = event_last_seen}, {.header = "TYPE", .cell = event_type},
    {.header = "REASON", .cell = event_reason},         {.header = "OBJECT", .cell = event_object},
    {.header = "MESSAGE", .cell = event_message},
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
};

static const struct column project_col = {.header = "PROJECT", .cell = project_cell};

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
    char age[32];
    for (size_t i = 0; i < n; i++) {
        if (cols[i]->age_of) {
            cells[i] =
                gt_xstrdup(gt_cli_format_age(cols[i]->age_of(obj), now_ms, age, sizeof(age)));
        } else {
            cells[i] = cols[i]->cell(obj);
        }
    }
    gt_cli_table_add(t, (const char *const *)cells);
    for (size_t i = 0; i < n; i++) {
        free(cells[i]);
    }
}
