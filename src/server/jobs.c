/*
 * The job controller's pure parts: the Tasks a Job becomes, the admission
 * rule for runAsUser, a job's status derived from its tasks' phases, and
 * what a task asks for. No I/O and no clock (times are passed in), so unit
 * tests reach every rule; jobctl.c applies them to the store.
 *
 * Inputs are validated, canonical objects (borrowed); every returned JSON
 * value is new and owned by the caller.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

#define DEFAULT_GRACE_S 30

static const char *const phase_names[] = {
    [GT_TASK_PENDING] = "Pending",     [GT_TASK_BOUND] = "Bound",
    [GT_TASK_RUNNING] = "Running",     [GT_TASK_TERMINATING] = "Terminating",
    [GT_TASK_SUCCEEDED] = "Succeeded", [GT_TASK_FAILED] = "Failed",
};

enum gt_task_phase gt_task_phase_of(const json_t *task)
{
    const char *p = json_string_value(gt_json_path(task, "status.phase"));
    for (size_t i = 0; p && i < GT_ARRAY_LEN(phase_names); i++) {
        if (!strcmp(p, phase_names[i])) {
            return (enum gt_task_phase)i;
        }
    }
    return GT_TASK_PENDING;
}

bool gt_task_phase_terminal(enum gt_task_phase p)
{
    return p == GT_TASK_SUCCEEDED || p == GT_TASK_FAILED;
}

bool gt_task_holds(const json_t *task)
{
    enum gt_task_phase p = gt_task_phase_of(task);
    const char *node = json_string_value(gt_json_path(task, "spec.nodeName"));
    return node && *node &&
           (p == GT_TASK_BOUND || p == GT_TASK_RUNNING || p == GT_TASK_TERMINATING);
}

void gt_task_request(const json_t *tmpl, struct gt_resources *out)
{
    memset(out, 0, sizeof(*out));
    struct gt_resources req = {0}, lim = {0};
    gt_api_resources(gt_json_path(tmpl, "resources.requests"), &req, NULL);
    gt_api_resources(gt_json_path(tmpl, "resources.limits"), &lim, NULL);
    /* as Kubernetes: a request defaults to its limit */
    out->cpu_milli = req.cpu_milli ? req.cpu_milli : lim.cpu_milli;
    out->memory_bytes = req.memory_bytes ? req.memory_bytes : lim.memory_bytes;
    out->gpu = req.gpu ? req.gpu : lim.gpu;
    out->gpu_milli = req.gpu_milli ? req.gpu_milli : lim.gpu_milli;
}

int64_t gt_task_grace_s(const json_t *tmpl)
{
    json_t *g = json_object_get(tmpl, "terminationGracePeriodSeconds");
    return json_is_integer(g) ? json_integer_value(g) : DEFAULT_GRACE_S;
}

char *gt_job_task_name(const char *job, const char *type, int64_t index)
{
    char lower[16];
    size_t i = 0;
    for (; type[i] && i + 1 < sizeof(lower); i++) {
        lower[i] = (char)tolower((unsigned char)type[i]);
    }
    lower[i] = '\0';
    return gt_xasprintf("%s-%s-%lld", job, lower, (long long)index);
}

int gt_job_check_run_as(const json_t *job, int64_t creator_uid, bool allow_privileged,
                        struct gt_err *err)
{
    if (allow_privileged) {
        return 0;
    }
    const char *type;
    json_t *rs;
    json_object_foreach(gt_json_path(job, "spec.replicaSpecs"), type, rs)
    {
        json_t *u = gt_json_path(rs, "template.runAsUser");
        if (u && json_integer_value(u) != creator_uid) {
            return gt_err_set(err, GT_EINVAL,
                              "spec.replicaSpecs.%s.template.runAsUser: must equal the creator's "
                              "uid (%lld) unless the project allows privileged tasks",
                              type, (long long)creator_uid);
        }
    }
    return 0;
}

json_t *gt_job_build_tasks(const json_t *job, const struct gt_job_task_opts *opts)
{
    json_t *out = json_array();
    const char *jname = gt_obj_name(job);
    const char *project = gt_obj_project(job);
    json_t *creator = gt_json_path(job, "metadata.creator");
    const char *type;
    json_t *rs;
    json_object_foreach(gt_json_path(job, "spec.replicaSpecs"), type, rs)
    {
        json_int_t n = json_integer_value(json_object_get(rs, "replicas"));
        for (json_int_t i = 0; i < n; i++) {
            char *name = gt_job_task_name(jname, type, i);
            char idx[24];
            snprintf(idx, sizeof(idx), "%lld", (long long)i);
            json_t *md =
                json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "name", name, "project", project,
                          "labels", "gantry.dev/job", jname, "gantry.dev/replica-type", type,
                          "gantry.dev/replica-index", idx);
            if (creator) {
                json_object_set(md, "creator", creator);
            }
            json_t *spec =
                json_pack("{s:s, s:s, s:I, s:O, s:I, s:b}", "job", jname, "replicaType", type,
                          "replicaIndex", i, "template", json_object_get(rs, "template"),
                          "priority", (json_int_t)opts->priority, "privileged", opts->privileged);
            if (opts->department) {
                json_object_set_new(spec, "department", json_string(opts->department));
            }
            json_array_append_new(out, json_pack("{s:o, s:s, s:s, s:o, s:{s:s}}", "metadata", md,
                                                 "apiVersion", GT_API_VERSION, "kind", "Task",
                                                 "spec", spec, "status", "phase", "Pending"));
            free(name);
        }
    }
    return out;
}

/* ---- status ---- */

static const char *const cond_order[] = {"Queued", "Running", "Succeeded", "Failed"};

static json_t *find_cond(const json_t *conds, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && !strcmp(t, type)) {
            return c;
        }
    }
    return NULL;
}

bool gt_job_finished(const json_t *job)
{
    json_t *conds = gt_json_path(job, "status.conditions");
    for (size_t i = 2; i < GT_ARRAY_LEN(cond_order); i++) {
        json_t *c = find_cond(conds, cond_order[i]);
        const char *st = json_string_value(json_object_get(c, "status"));
        if (st && !strcmp(st, "True")) {
            return true;
        }
    }
    return false;
}

/* Set condition type to status/reason/message, keeping its transition time
 * when nothing about it changed. */
static void set_cond(json_t *conds, const json_t *old, const char *type, const char *status,
                     const char *reason, const char *message, const char *now)
{
    json_t *was = find_cond(old, type);
    json_t *c = json_pack("{s:s, s:s, s:s, s:s}", "type", type, "status", status, "reason", reason,
                          "message", message);
    const char *ts = now;
    if (was && json_equal(json_object_get(was, "status"), json_object_get(c, "status"))) {
        const char *wt = json_string_value(json_object_get(was, "lastTransitionTime"));
        ts = wt ? wt : now;
    }
    json_object_set_new(c, "lastTransitionTime", json_string(ts));
    json_array_append_new(conds, c);
}

struct tally {
    size_t expected, found;
    size_t running, succeeded, failed, active;
    size_t lead, lead_succeeded; /* Master/Chief replicas */
    const char *failed_task;
};

static void count_tasks(const json_t *job, json_t *const *tasks, size_t n, struct tally *t,
                        json_t *replica_statuses)
{
    const char *type;
    json_t *rs;
    json_object_foreach(gt_json_path(job, "spec.replicaSpecs"), type, rs)
    {
        size_t reps = (size_t)json_integer_value(json_object_get(rs, "replicas"));
        bool lead = !strcmp(type, "Master") || !strcmp(type, "Chief");
        t->expected += reps;
        t->lead += lead ? reps : 0;
        json_int_t active = 0, succeeded = 0, failed = 0;
        for (size_t i = 0; i < n; i++) {
            const char *tt = json_string_value(gt_json_path(tasks[i], "spec.replicaType"));
            if (!tt || strcmp(tt, type)) {
                continue;
            }
            t->found++;
            enum gt_task_phase p = gt_task_phase_of(tasks[i]);
            if (p == GT_TASK_SUCCEEDED) {
                succeeded++;
                t->lead_succeeded += lead;
            } else if (p == GT_TASK_FAILED) {
                failed++;
                if (!t->failed_task) {
                    t->failed_task = gt_obj_name(tasks[i]);
                }
            } else {
                active++;
                t->running += p == GT_TASK_RUNNING;
            }
        }
        t->succeeded += (size_t)succeeded;
        t->failed += (size_t)failed;
        t->active += (size_t)active;
        json_object_set_new(replica_statuses, type,
                            json_pack("{s:I, s:I, s:I}", "active", active, "succeeded", succeeded,
                                      "failed", failed));
    }
}

json_t *gt_job_derive_status(const json_t *job, json_t *const *tasks, size_t n_tasks,
                             const char *wait_message, int64_t now_ms)
{
    const json_t *old = json_object_get(job, "status");
    json_t *old_conds = json_object_get(old, "conditions");
    char now[32];
    gt_time_format(now_ms, now, sizeof(now));
    json_t *st = json_object();
    json_t *reps = json_object();
    struct tally t = {0};
    count_tasks(job, tasks, n_tasks, &t, reps);
    json_object_set_new(st, "replicaStatuses", reps);

    /* the phase: sticky once finished (restartPolicy Never) */
    const char *phase = NULL;
    char msg[512] = "";
    bool was_queued = find_cond(old_conds, "Queued") != NULL;
    bool finished = gt_job_finished(job);
    json_t *fin_cond = NULL;
    for (size_t i = 2; finished && i < GT_ARRAY_LEN(cond_order); i++) {
        json_t *c = find_cond(old_conds, cond_order[i]);
        const char *s = json_string_value(json_object_get(c, "status"));
        if (s && !strcmp(s, "True")) {
            phase = cond_order[i];
            fin_cond = c;
        }
    }
    if (!phase && t.failed) {
        phase = "Failed";
        snprintf(msg, sizeof(msg), "task %s failed", t.failed_task);
    } else if (!phase && t.found < t.expected && was_queued) {
        phase = "Failed";
        snprintf(msg, sizeof(msg), "%zu of %zu tasks are gone", t.expected - t.found, t.expected);
    } else if (!phase && t.expected &&
               ((t.lead && t.lead_succeeded == t.lead) || t.succeeded == t.expected)) {
        phase = "Succeeded";
        snprintf(msg, sizeof(msg), "%s succeeded", t.lead ? "the lead replica" : "every task");
    } else if (!phase && t.running) {
        phase = "Running";
        snprintf(msg, sizeof(msg), "%zu of %zu tasks running", t.running, t.expected);
    } else if (!phase && (t.found == t.expected || was_queued) && t.expected) {
        phase = "Queued";
        /* no verdict from the scheduler yet (e.g. just after a restart): keep
         * the recorded reason rather than rewriting it back and forth */
        const char *old_msg =
            json_string_value(json_object_get(find_cond(old_conds, "Queued"), "message"));
        const char *why = wait_message && *wait_message ? wait_message
                          : old_msg                     ? old_msg
                                                        : "waiting to be scheduled";
        snprintf(msg, sizeof(msg), "%s", why);
    }

    json_t *conds = json_array();
    set_cond(conds, old_conds, "Created", "True", "Created", "job created", now);
    bool reached = false;
    for (size_t i = 0; phase && i < GT_ARRAY_LEN(cond_order); i++) {
        const char *type = cond_order[i];
        bool is = !strcmp(type, phase);
        json_t *was = find_cond(old_conds, type);
        if (is) {
            if (fin_cond) {
                json_array_append(conds, fin_cond);
            } else {
                set_cond(conds, old_conds, type, "True", type, msg, now);
            }
            reached = true;
        } else if (was && !reached) {
            const char *wm = json_string_value(json_object_get(was, "message"));
            set_cond(conds, old_conds, type, "False", type, wm ? wm : "", now);
        }
    }
    json_object_set_new(st, "conditions", conds);

    const char *start = json_string_value(json_object_get(old, "startTime"));
    if (start || t.running || t.succeeded || t.failed) {
        json_object_set_new(st, "startTime", json_string(start ? start : now));
    }
    const char *done = json_string_value(json_object_get(old, "completionTime"));
    if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) {
        json_object_set_new(st, "completionTime", json_string(done ? done : now));
    }
    json_t *rc = json_object_get(old, "restartCount");
    if (rc) {
        json_object_set(st, "restartCount", rc);
    }
    return st;
}
