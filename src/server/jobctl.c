/*
 * The job controller (restartPolicy Never) and the task controller, over
 * the controllers' cache (ctl.c). A Job's replicas become Pending Tasks
 * (jobs.c builds them); its status follows its tasks' phases; a finished
 * job stops the tasks it still has; a deleted job (deletionTimestamp)
 * stops its tasks, deletes each once it is Pending or terminal, and goes
 * when none is left. The task controller finishes what the agent cannot:
 * a Pending task that was stopped is recorded Failed with the stop's
 * reason, and a deleted task goes once Pending or terminal.
 *
 * Every write is conditional on the cached revision and skipped while an
 * earlier controller write to the same key is in flight.
 */
#include <stdlib.h>
#include <string.h>

#include "server/server_int.h"

#define MAX_JOB_TASKS 5000

static char *now_str(char *buf, size_t len)
{
    return gt_time_format(gt_now_ms(), buf, len);
}

static bool has_del(const json_t *obj)
{
    return gt_json_path(obj, "metadata.deletionTimestamp") != NULL;
}

static bool bound(const json_t *task)
{
    const char *node = json_string_value(gt_json_path(task, "spec.nodeName"));
    return node && *node;
}

/* A copy of task with spec.stop{reason, grace} (and deletionTimestamp if
 * deleting). */
static json_t *with_stop(const json_t *task, const char *reason, bool deleting)
{
    json_t *t = json_deep_copy(task);
    json_t *spec = json_object_get(t, "spec");
    if (!json_object_get(spec, "stop")) {
        json_object_set_new(
            spec, "stop",
            json_pack("{s:s, s:I}", "reason", reason, "gracePeriodSeconds",
                      (json_int_t)gt_task_grace_s(json_object_get(spec, "template"))));
    }
    if (deleting && !has_del(t)) {
        char ts[32];
        json_object_set_new(json_object_get(t, "metadata"), "deletionTimestamp",
                            json_string(now_str(ts, sizeof(ts))));
    }
    return t;
}

static void write_obj(struct gt_ctl *c, const struct gt_cobj *o, json_t *obj)
{
    gt_ctl_write(c, GT_STORE_UPDATE, o->key, obj, o->rev, NULL, NULL);
    json_decref(obj);
}

/* ---- tasks ---- */

void gt_jobctl_reconcile_task(struct gt_ctl *c, const char *key)
{
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_TASK, key);
    if (!o || gt_ctl_busy(c, key)) {
        return;
    }
    enum gt_task_phase p = gt_task_phase_of(o->obj);
    bool del = has_del(o->obj);
    json_t *stop = gt_json_path(o->obj, "spec.stop");
    if (del && (gt_task_phase_terminal(p) || (p == GT_TASK_PENDING && !bound(o->obj)))) {
        gt_ctl_write(c, GT_STORE_DELETE, key, NULL, o->rev, NULL, NULL);
        return;
    }
    if (stop && p == GT_TASK_PENDING && !bound(o->obj)) {
        /* never started: no agent will report it, so record its end here */
        json_t *t = json_deep_copy(o->obj);
        char ts[32];
        const char *reason = json_string_value(json_object_get(stop, "reason"));
        json_object_set_new(t, "status",
                            json_pack("{s:s, s:s, s:s, s:s}", "phase", "Failed", "reason",
                                      reason ? reason : "Killed", "message",
                                      "stopped before it was scheduled", "finishTime",
                                      now_str(ts, sizeof(ts))));
        write_obj(c, o, t);
    }
}

/* ---- jobs ---- */

struct job_tasks {
    const struct gt_cobj *o[MAX_JOB_TASKS];
    json_t *obj[MAX_JOB_TASKS];
    size_t n, expected;
};

static void find_tasks(struct gt_ctl *c, const json_t *job, struct job_tasks *jt)
{
    const char *jname = gt_obj_name(job);
    const char *project = gt_obj_project(job);
    const char *type;
    json_t *rs;
    jt->n = jt->expected = 0;
    json_object_foreach(gt_json_path(job, "spec.replicaSpecs"), type, rs)
    {
        json_int_t reps = json_integer_value(json_object_get(rs, "replicas"));
        for (json_int_t i = 0; i < reps && jt->n < MAX_JOB_TASKS; i++) {
            jt->expected++;
            char *name = gt_job_task_name(jname, type, i);
            char *key = gt_xasprintf("/tasks/%s/%s", project, name);
            const struct gt_cobj *t = gt_ctl_get(c, GT_KIND_TASK, key);
            const char *tj = t ? json_string_value(gt_json_path(t->obj, "spec.job")) : NULL;
            if (tj && !strcmp(tj, jname)) {
                jt->o[jt->n] = t;
                jt->obj[jt->n] = t->obj;
                jt->n++;
            }
            free(key);
            free(name);
        }
    }
}

static int32_t job_priority(const struct gt_ctl *c, const json_t *job)
{
    const char *pc =
        json_string_value(gt_json_path(job, "spec.runPolicy.schedulingPolicy.priorityClass"));
    if (pc) {
        char *key = gt_xasprintf("/priorityclasses/%s", pc);
        const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_PRIORITYCLASS, key);
        free(key);
        return o ? (int32_t)json_integer_value(json_object_get(o->obj, "value")) : 0;
    }
    return 0;
}

static void create_tasks(struct gt_ctl *c, const json_t *job)
{
    const char *project = gt_obj_project(job);
    struct gt_job_task_opts opts = {.department = gt_ctl_project_department(c, project),
                                    .priority = job_priority(c, job),
                                    .privileged = gt_ctl_project_privileged(c, project)};
    json_t *tasks = gt_job_build_tasks(job, &opts);
    size_t i;
    json_t *t;
    char ts[32];
    now_str(ts, sizeof(ts));
    json_array_foreach(tasks, i, t)
    {
        char *key = gt_xasprintf("/tasks/%s/%s", project, gt_obj_name(t));
        if (!gt_ctl_get(c, GT_KIND_TASK, key) && !gt_ctl_busy(c, key)) {
            char uid[40];
            gt_uuid4(uid, sizeof(uid));
            json_t *md = json_object_get(t, "metadata");
            json_object_set_new(md, "uid", json_string(uid));
            json_object_set_new(md, "creationTimestamp", json_string(ts));
            gt_ctl_write(c, GT_STORE_CREATE, key, t, 0, NULL, NULL);
        }
        free(key);
    }
    json_decref(tasks);
}

static void delete_job(struct gt_ctl *c, const struct gt_cobj *o, struct job_tasks *jt)
{
    if (jt->n == 0) {
        gt_ctl_write(c, GT_STORE_DELETE, o->key, NULL, o->rev, NULL, NULL);
        return;
    }
    for (size_t i = 0; i < jt->n; i++) {
        const struct gt_cobj *t = jt->o[i];
        if (gt_ctl_busy(c, t->key)) {
            continue;
        }
        enum gt_task_phase p = gt_task_phase_of(t->obj);
        if (gt_task_phase_terminal(p) || (p == GT_TASK_PENDING && !bound(t->obj))) {
            gt_ctl_write(c, GT_STORE_DELETE, t->key, NULL, t->rev, NULL, NULL);
        } else if (!json_object_get(json_object_get(t->obj, "spec"), "stop") || !has_del(t->obj)) {
            write_obj(c, t, with_stop(t->obj, "Deleted", true));
        }
    }
}

static bool past_created(const json_t *job)
{
    return json_array_size(gt_json_path(job, "status.conditions")) > 1;
}

void gt_jobctl_reconcile_job(struct gt_ctl *c, const char *key)
{
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_JOB, key);
    if (!o || gt_ctl_busy(c, key)) {
        return;
    }
    struct job_tasks *jt = gt_xmalloc(sizeof(*jt));
    find_tasks(c, o->obj, jt);
    if (has_del(o->obj)) {
        delete_job(c, o, jt);
        free(jt);
        return;
    }
    if (jt->n < jt->expected && !past_created(o->obj)) {
        create_tasks(c, o->obj);
    }
    json_t *st = gt_job_derive_status(o->obj, jt->obj, jt->n, gt_feed_wait(c, key), gt_now_ms());
    if (!json_equal(st, json_object_get(o->obj, "status"))) {
        json_t *j = json_deep_copy(o->obj);
        json_object_set(j, "status", st);
        write_obj(c, o, j);
    }
    json_t *fake = json_pack("{s:O}", "status", st);
    bool finished = gt_job_finished(fake);
    json_decref(fake);
    json_decref(st);
    for (size_t i = 0; finished && i < jt->n; i++) {
        const struct gt_cobj *t = jt->o[i];
        if (!gt_task_phase_terminal(gt_task_phase_of(t->obj)) && !gt_ctl_busy(c, t->key) &&
            !gt_json_path(t->obj, "spec.stop")) {
            write_obj(c, t, with_stop(t->obj, "JobFinished", false));
        }
    }
    free(jt);
}

/* ---- admission and delete ---- */

int gt_jobctl_admit(struct gt_ctl *c, const json_t *job, const struct gt_server_user *user,
                    struct gt_err *err)
{
    return gt_job_check_run_as(job, user->uid, gt_ctl_project_privileged(c, gt_obj_project(job)),
                               err);
}

static bool job_has_tasks(struct gt_ctl *c, const json_t *job)
{
    struct job_tasks *jt = gt_xmalloc(sizeof(*jt));
    find_tasks(c, job, jt);
    bool any = jt->n > 0;
    free(jt);
    return any;
}

bool gt_jobctl_soft_delete(struct gt_ctl *c, enum gt_kind kind, json_t *stored)
{
    if (kind == GT_KIND_TASK) {
        if (!gt_task_holds(stored)) {
            return false;
        }
        json_t *t = with_stop(stored, "Deleted", true);
        json_object_update(stored, t);
        json_decref(t);
        return true;
    }
    if (kind != GT_KIND_JOB || !job_has_tasks(c, stored)) {
        return false;
    }
    if (!has_del(stored)) {
        char ts[32];
        json_object_set_new(json_object_get(stored, "metadata"), "deletionTimestamp",
                            json_string(now_str(ts, sizeof(ts))));
    }
    return true;
}
