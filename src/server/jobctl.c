/*
 * The job and task controllers, over the controllers' cache (ctl.c). A
 * Job's replicas become Pending Tasks (jobs.c builds them); gt_job_decide
 * says what the job needs and its status follows. A failure the restart
 * policy retries (or a preemption, lost node or drain) restarts the whole
 * gang: the job's generation goes up with the Restarting condition, every
 * task of the older generation is stopped (reason Restarting), and once all
 * are terminal and the back-off is over each is replaced in place, same
 * name, new uid, status.previous naming the old run's uid and node. A
 * finished job stops the tasks it still has (reason JobFinished or
 * DeadlineExceeded) and deletes finished ones as cleanPodPolicy says; a
 * job past ttlSecondsAfterFinished is deleted. The ended Tasks of finished
 * jobs beyond --terminated-task-gc-threshold are deleted, oldest first
 * (collect_tasks). A deleted job
 * (deletionTimestamp) stops its tasks, deletes each once it is Pending or
 * terminal, and goes when none is left. The task controller finishes what
 * the agent cannot: a Pending task that was stopped is recorded Failed with
 * the stop's reason, and a deleted task goes once Pending or terminal.
 *
 * At bind time each task gets ports, the job's distributed environment
 * and its replicas' host names (bindplan.c).
 *
 * Every write is conditional on the cached revision and skipped while an
 * earlier controller write to the same key is in flight.
 *
 * A job's first Queued status is held back (c->held_queued) for up to
 * HOLD_QUEUED_MS when every task of it is already bound by then (the
 * cycle that the job's reconcile waits for placed it): the tasks' next
 * reports (Running, or their end) usually come first, and the status
 * written for them carries the Queued condition as False, as it would be
 * had Queued been written (fold_queued). One write fewer per job that
 * starts at once; a job still bound but not running when the time is up
 * (an image pull, a slow node) has its Queued written then (gt_jobctl_tick),
 * and one that waits is written Queued at once as before.
 */
#include <stdlib.h>
#include <string.h>

#include "server/cache.h"
#include "server/events.h"
#include "server/feeder.h"
#include "server/jobctl.h"
#include "server/server_int.h"

#define MAX_JOB_TASKS 5000
#define HOLD_QUEUED_MS 1000

static char *now_str(char *buf, size_t len)
{
    return gt_time_format(gt_now_ms(), buf, len);
}

static bool bound(const struct gt_api_task *task)
{
    const char *node = task->spec.node_name;
    return node && *node;
}

static enum gt_task_phase phase_of(const struct gt_api_task *task)
{
    return (enum gt_task_phase)task->status.phase;
}

/* A copy of the task with spec.stop{reason, grace} (and deletionTimestamp
 * if deleting). */
static json_t *with_stop(const struct gt_api_task *task, const char *reason, bool deleting)
{
    char ts[32];
    return gt_task_with_stop(task, reason, deleting ? now_str(ts, sizeof(ts)) : NULL);
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
    const struct gt_api_task *task = gt_cobj_task(o);
    enum gt_task_phase p = phase_of(task);
    bool del = task->o.meta.deletion_timestamp != NULL;
    if (del && (gt_api_task_phase_terminal(p) || (p == GT_TASK_PENDING && !bound(task)))) {
        gt_ctl_write(c, GT_STORE_DELETE, key, NULL, o->rev, NULL, NULL);
        return;
    }
    if (task->spec.has_stop && p == GT_TASK_PENDING && !bound(task)) {
        /* never started: no agent will report it, so record its end here */
        json_t *t = json_deep_copy(o->obj);
        char ts[32];
        const char *reason = task->spec.stop.reason;
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
    const struct gt_cobj **o; /* both point into the same allocation */
    const struct gt_api_task **t;
    size_t n, expected;
};

/* The job's tasks in the cache, in one allocation sized for its replicas
 * (the caller free()s it): most jobs have a few, reconciles are frequent. */
static struct job_tasks *find_tasks(struct gt_ctl *c, const struct gt_api_job *job)
{
    const char *jname = job->o.meta.name;
    const char *project = job->o.meta.project;
    size_t max = 0;
    for (size_t r = 0; r < job->spec.replica_specs.n; r++) {
        int64_t reps = job->spec.replica_specs.v[r].replicas;
        max += reps > 0 && max < MAX_JOB_TASKS ? (size_t)reps : 0;
    }
    max = max < MAX_JOB_TASKS ? max : MAX_JOB_TASKS;
    struct job_tasks *jt =
        gt_xmalloc(sizeof(*jt) + (max ? max : 1) * (sizeof(*jt->o) + sizeof(*jt->t)));
    jt->o = (const struct gt_cobj **)(jt + 1);
    jt->t = (const struct gt_api_task **)(jt->o + (max ? max : 1));
    jt->n = jt->expected = 0;
    for (size_t r = 0; r < job->spec.replica_specs.n; r++) {
        const struct gt_api_replica_spec *rs = &job->spec.replica_specs.v[r];
        for (int64_t i = 0; i < rs->replicas && jt->n < MAX_JOB_TASKS; i++) {
            jt->expected++;
            char buf[256], *heap;
            const char *key = gt_job_task_key(buf, sizeof(buf), &heap, project, jname, rs->type, i);
            const struct gt_cobj *t = gt_ctl_get(c, GT_KIND_TASK, key);
            const char *tj = t ? gt_cobj_task(t)->spec.job : NULL;
            if (tj && !strcmp(tj, jname)) {
                jt->o[jt->n] = t;
                jt->t[jt->n] = gt_cobj_task(t);
                jt->n++;
            }
            free(heap);
        }
    }
    return jt;
}

static int32_t job_priority(const struct gt_ctl *c, const struct gt_api_job *job)
{
    const char *pc = job->spec.run_policy.scheduling_policy.priority_class;
    if (pc) {
        char *key = gt_xasprintf("/priorityclasses/%s", pc);
        const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_PRIORITYCLASS, key);
        free(key);
        return o ? (int32_t)((const struct gt_api_priority_class *)o->t)->value : 0;
    }
    return 0;
}

/* Create (or replace, for a restart) the job's missing tasks; returns how
 * many task writes it queued. */
static size_t create_tasks(struct gt_ctl *c, const struct gt_cobj *jo, int64_t generation)
{
    const struct gt_api_job *job = gt_cobj_job(jo);
    size_t n_written = 0;
    const char *project = job->o.meta.project;
    struct gt_job_task_opts opts = {.department = gt_ctl_project_department(c, project),
                                    .priority = job_priority(c, job),
                                    .privileged = gt_ctl_project_privileged(c, project),
                                    .stop_idle_gpu = gt_ctl_project_stop_idle(c, project),
                                    .generation = generation,
                                    .pip_index_url = c->s->cfg->pip_index_url,
                                    .pip_find_links = c->s->cfg->pip_find_links};
    json_t *tasks = gt_job_build_tasks(job, &opts);
    size_t i;
    json_t *t;
    char ts[32];
    now_str(ts, sizeof(ts));
    json_array_foreach(tasks, i, t)
    {
        char *key = gt_xasprintf("/tasks/%s/%s", project, gt_obj_name(t));
        const struct gt_cobj *was = gt_ctl_get(c, GT_KIND_TASK, key);
        const struct gt_api_task *wt = was ? gt_cobj_task(was) : NULL;
        char uid[40];
        gt_uuid4(&c->s->uuids, uid, sizeof(uid));
        json_t *md = json_object_get(t, "metadata");
        json_object_set_new(md, "uid", json_string(uid));
        json_object_set_new(md, "creationTimestamp", json_string(ts));
        if (gt_ctl_busy(c, key)) {
            /* wait for the write in flight */
        } else if (!was) {
            n_written += gt_ctl_write(c, GT_STORE_CREATE, key, t, 0, NULL, NULL) == 0;
        } else if (gt_task_generation(wt) < generation &&
                   gt_api_task_phase_terminal(phase_of(wt))) {
            /* the restart: the same name with a new uid, in one write */
            const char *puid = wt->o.meta.uid;
            const char *pnode = wt->spec.node_name;
            json_t *prev = json_pack("{s:s}", "uid", puid ? puid : "");
            if (pnode) {
                json_object_set_new(prev, "nodeName", json_string(pnode));
            }
            json_object_set_new(json_object_get(t, "status"), "previous", prev);
            n_written += gt_ctl_write(c, GT_STORE_UPDATE, key, t, was->rev, NULL, NULL) == 0;
        }
        free(key);
    }
    json_decref(tasks);
    return n_written;
}

static void delete_job(struct gt_ctl *c, const struct gt_cobj *o, struct job_tasks *jt)
{
    if (jt->n == 0) {
        gt_ctl_write(c, GT_STORE_DELETE, o->key, NULL, o->rev, NULL, NULL);
        return;
    }
    for (size_t i = 0; i < jt->n; i++) {
        const struct gt_cobj *t = jt->o[i];
        const struct gt_api_task *task = jt->t[i];
        if (gt_ctl_busy(c, t->key)) {
            continue;
        }
        enum gt_task_phase p = phase_of(task);
        if (gt_api_task_phase_terminal(p) || (p == GT_TASK_PENDING && !bound(task))) {
            gt_ctl_write(c, GT_STORE_DELETE, t->key, NULL, t->rev, NULL, NULL);
        } else if (!task->spec.has_stop || !task->o.meta.deletion_timestamp) {
            write_obj(c, t, with_stop(task, "Deleted", true));
        }
    }
}

static bool past_created(const struct gt_api_job *job)
{
    return job->status.conditions.n > 1;
}

/* Stop every live task of jt older than generation (all: INT64_MAX). */
static void stop_tasks(struct gt_ctl *c, const struct job_tasks *jt, int64_t generation,
                       const char *reason)
{
    for (size_t i = 0; i < jt->n; i++) {
        const struct gt_cobj *t = jt->o[i];
        const struct gt_api_task *task = jt->t[i];
        if (!gt_api_task_phase_terminal(phase_of(task)) && !gt_ctl_busy(c, t->key) &&
            !task->spec.has_stop && gt_task_generation(task) < generation) {
            write_obj(c, t, with_stop(task, reason, false));
        }
    }
}

/* cleanPodPolicy at the job's end: All deletes every finished task,
 * Running those that were still running (stopped by the job's end), None
 * keeps them all (and their logs). */
static void clean_tasks(struct gt_ctl *c, const struct gt_api_job *job, const struct job_tasks *jt)
{
    const char *pol = job->spec.run_policy.clean_pod_policy;
    if (!pol || !strcmp(pol, "None")) {
        return;
    }
    bool all = !strcmp(pol, "All");
    for (size_t i = 0; i < jt->n; i++) {
        const struct gt_cobj *t = jt->o[i];
        const char *sr = jt->t[i]->spec.has_stop ? jt->t[i]->spec.stop.reason : NULL;
        bool was_running =
            sr && (!strcmp(sr, GT_STOP_JOB_FINISHED) || !strcmp(sr, "DeadlineExceeded"));
        if (gt_api_task_phase_terminal(phase_of(jt->t[i])) && !gt_ctl_busy(c, t->key) &&
            (all || was_running)) {
            gt_ctl_write(c, GT_STORE_DELETE, t->key, NULL, t->rev, NULL, NULL);
        }
    }
}

static void expire_job(struct gt_ctl *c, const struct gt_cobj *o)
{
    json_t *j = json_deep_copy(o->obj);
    char ts[32];
    json_object_set_new(json_object_get(j, "metadata"), "deletionTimestamp",
                        json_string(now_str(ts, sizeof(ts))));
    write_obj(c, o, j);
}

/* An Event on the job for each condition st (its new status) turns True,
 * as the training operator's JobRunning, JobRestarting, JobSucceeded and
 * JobFailed: reason the condition's (BackoffLimitExceeded,
 * DeadlineExceeded, ...) or Job<Type>, Warning for Restarting and Failed.
 * Each further restart (a new Restarting message) is an Event too. */
static void record_transitions(struct gt_ctl *c, const struct gt_api_job *job,
                               const struct gt_api_conditions *st)
{
    static const struct {
        const char *type, *event_type;
    } watched[] = {{"Running", "Normal"},
                   {"Restarting", "Warning"},
                   {"Succeeded", "Normal"},
                   {"Failed", "Warning"}};
    for (size_t i = 0; i < GT_ARRAY_LEN(watched); i++) {
        const char *type = watched[i].type;
        const struct gt_api_condition *now =
            gt_api_condition_true(st, type) ? gt_api_condition_find(st, type) : NULL;
        const struct gt_api_condition *was =
            gt_api_condition_true(&job->status.conditions, type)
                ? gt_api_condition_find(&job->status.conditions, type)
                : NULL;
        const char *msg = now ? now->message : NULL;
        const char *was_msg = was ? was->message : NULL;
        bool again = !strcmp(type, "Restarting") && msg && (!was_msg || strcmp(msg, was_msg));
        if (!now || (was && !again)) {
            continue;
        }
        const char *reason = now->reason;
        char fallback[32];
        if (!reason || !strcmp(reason, type)) {
            snprintf(fallback, sizeof(fallback), "Job%s", type);
            reason = fallback;
        }
        gt_events_record(c->s->events, &job->o, watched[i].event_type, reason, msg ? msg : "");
    }
}

/* Whether the write of next (the job's new status) is held back: its
 * first Queued status (only Created recorded, no wait verdict) while every
 * task is bound (or its binding write in flight), until the hold started
 * here is due. */
static bool hold_queued(struct gt_ctl *c, const char *key, const struct gt_api_job *job,
                        const struct gt_api_job *next, const struct job_tasks *jt, const char *wait)
{
    if (job->status.conditions.n != 1 || (wait && *wait) || jt->n == 0 || jt->n < jt->expected ||
        !gt_api_condition_true(&next->status.conditions, "Queued")) {
        return false;
    }
    for (size_t i = 0; i < jt->n; i++) {
        if (!bound(jt->t[i]) && !gt_feed_task_placed(c, jt->o[i]->key)) {
            return false;
        }
    }
    int64_t now = gt_now_ms();
    void *due = gt_strmap_get(&c->held_queued, key);
    if (!due) {
        gt_strmap_put(&c->held_queued, key, (void *)(intptr_t)(now + HOLD_QUEUED_MS));
        return true;
    }
    return (int64_t)(intptr_t)due > now;
}

/* st (the new status of a job whose Queued status is held back, modified):
 * the Queued condition its write would have carried had Queued been
 * written: False once the job has moved on (Running, Restarting, or its
 * end), True if it has not (its tasks are gone: it then fails as
 * TasksGone, as a job recorded Queued does). Placed before the phases. */
static void fold_queued(json_t *st)
{
    static const char *const later[] = {"Running", "Restarting", "Succeeded", "Failed"};
    json_t *conds = json_object_get(st, "conditions");
    size_t at = json_array_size(conds), i;
    bool moved_on = false;
    json_t *cj;
    json_array_foreach(conds, i, cj)
    {
        const char *type = json_string_value(json_object_get(cj, "type"));
        if (!type || !strcmp(type, "Queued")) {
            return;
        }
        for (size_t k = 0; k < GT_ARRAY_LEN(later); k++) {
            if (!strcmp(type, later[k])) {
                at = i < at ? i : at;
                const char *status = json_string_value(json_object_get(cj, "status"));
                moved_on = moved_on || (status && !strcmp(status, "True"));
            }
        }
    }
    char ts[32];
    json_array_insert_new(conds, at,
                          json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "Queued", "status",
                                    moved_on ? "False" : "True", "reason", "Queued", "message",
                                    "waiting to be scheduled", "lastTransitionTime",
                                    now_str(ts, sizeof(ts))));
}

void gt_jobctl_reconcile_job(struct gt_ctl *c, const char *key)
{
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_JOB, key);
    /* any reconcile, also one skipped while our write is in flight, means
     * the write's return must reconcile again */
    gt_strmap_del(&c->settled, key);
    if (!o) {
        gt_strmap_del(&c->held_queued, key);
        return;
    }
    if (gt_ctl_busy(c, key)) {
        return;
    }
    const struct gt_api_job *job = gt_cobj_job(o);
    struct job_tasks *jt = find_tasks(c, job);
    bool held = gt_strmap_get(&c->held_queued, key) != NULL;
    if (job->o.meta.deletion_timestamp) {
        gt_strmap_del(&c->held_queued, key);
        delete_job(c, o, jt);
        free(jt);
        return;
    }
    struct gt_job_decision d;
    gt_job_decide(job, jt->t, jt->n, gt_now_ms(), c->s->cfg->restart_backoff_ms, &d);
    if (d.action == GT_JOB_EXPIRE) {
        expire_job(c, o);
        free(jt);
        return;
    }
    bool creating = false;
    /* a held job's tasks were created: the ones missing are gone */
    if ((jt->n < jt->expected && !past_created(job) && !held) || d.action == GT_JOB_RECREATE) {
        creating = create_tasks(c, o, d.generation) > 0;
    }
    if (creating && jt->n == 0) {
        /* a new job: its status is written once its tasks are back, and
         * there is no task to stop or clean */
        free(jt);
        return;
    }
    const char *wait = gt_feed_wait(c, key);
    json_t *st = gt_job_derive_status(job, jt->t, jt->n, &d, wait, gt_now_ms());
    if (held) {
        fold_queued(st);
    }
    bool differs = !json_equal(st, json_object_get(o->obj, "status"));
    json_t *j = json_copy(o->obj); /* cached objects never change: share the rest */
    json_object_set_new(j, "status", st);
    /* the job as it is to be, decoded before the write can change j; the
     * cached one when its status stays as it is */
    struct gt_api_job *next = differs ? gt_api_job_new(j) : NULL;
    const struct gt_api_job *to_be = next ? next : job;
    bool finished = gt_job_finished(to_be);
    const struct gt_api_condition *failed =
        gt_api_condition_find(&to_be->status.conditions, "Failed");
    bool deadline = failed && failed->reason && !strcmp(failed->reason, "DeadlineExceeded");
    /* tasks being written come back through the watch and reconcile the
     * job again: its status is written once, from them */
    bool changed = !creating && differs && !hold_queued(c, key, job, to_be, jt, wait);
    if (changed) {
        record_transitions(c, job, &to_be->status.conditions);
    }
    gt_api_job_free(next);
    bool wrote = false;
    if (changed) {
        gt_strmap_del(&c->held_queued, key);
        write_obj(c, o, j);
        wrote = gt_ctl_busy(c, key);
    } else {
        json_decref(j);
    }
    /* a status-only write that time cannot change: reconciling it again
     * once written would derive the same status (nothing else changed
     * unless something marks the job, which reconciles it) */
    if (wrote && !finished && d.action == GT_JOB_KEEP && d.wake_ms == 0) {
        gt_strmap_put(&c->settled, key, (void *)"");
    }
    if (finished) {
        /* tasks still running at a deadline are stopped as DeadlineExceeded */
        stop_tasks(c, jt, INT64_MAX, deadline ? "DeadlineExceeded" : GT_STOP_JOB_FINISHED);
        clean_tasks(c, job, jt);
    } else if (d.action == GT_JOB_RESTART) {
        stop_tasks(c, jt, d.generation, GT_STOP_RESTARTING);
    }
    free(jt);
}

static int tick_cb(const char *key, void *val, void *arg)
{
    (void)val;
    char *k = gt_xstrdup(key);
    const char *proj = k + strlen("/jobs/");
    char *slash = strchr(proj, '/');
    if (slash) {
        *slash = '\0';
        gt_ctl_mark_job(arg, proj, slash + 1);
    }
    free(k);
    return 0;
}

static int held_cb(const char *key, void *val, void *arg)
{
    return (int64_t)(intptr_t)val <= gt_now_ms() ? tick_cb(key, val, arg) : 0;
}

/* ---- the terminated-task collector ---- */

/* A pass every TASK_GC_PERIOD_MS at most, once the last one's choice is
 * all deleted, TASK_GC_INFLIGHT deletes at a time: a steady trickle of
 * writes among the others rather than a batch that holds up a commit. */
#define TASK_GC_PERIOD_MS 2000
#define TASK_GC_INFLIGHT 256

struct gc_cand {
    int64_t end_ms; /* status.finishTime (0: none) */
    const struct gt_cobj *o;
};

struct gc_scan {
    struct gt_ctl *c;
    struct gc_cand *v; /* the tasks it may delete */
    size_t n, cap;
};

/* A task the collector may delete: terminal, not being written or
 * deleted, its job finished or gone (an unfinished job's controller
 * counts its ended tasks). */
static int gc_scan_cb(const char *key, void *val, void *arg)
{
    struct gc_scan *g = arg;
    const struct gt_api_task *t = gt_cobj_task(val);
    if (!gt_api_task_phase_terminal(phase_of(t)) || t->o.meta.deletion_timestamp ||
        gt_ctl_busy(g->c, key)) {
        return 0;
    }
    const struct gt_cobj *job = gt_ctl_task_job(g->c, t);
    if (job && !gt_job_finished(gt_cobj_job(job))) {
        return 0;
    }
    GT_VEC_RESERVE(g->v, g->cap, g->n + 1, 1024);
    g->v[g->n++] = (struct gc_cand){.o = val};
    return 0;
}

/* Oldest end first, then by key. */
static int gc_older(const void *a, const void *b)
{
    const struct gc_cand *x = a, *y = b;
    if (x->end_ms != y->end_ms) {
        return x->end_ms < y->end_ms ? -1 : 1;
    }
    return strcmp(x->o->key, y->o->key);
}

void gt_jobctl_gc_free(struct gt_ctl *c)
{
    for (size_t i = c->task_gc.next; i < c->task_gc.n; i++) {
        free(c->task_gc.keys[i]);
    }
    free(c->task_gc.keys);
    c->task_gc.keys = NULL;
    c->task_gc.n = c->task_gc.next = 0;
}

static void gc_pump(struct gt_ctl *c);

static void gc_done(struct gt_ctl *c, int rc, void *arg)
{
    (void)rc; /* a task that changed meanwhile waits for a later pass */
    (void)arg;
    c->task_gc.inflight--;
    gc_pump(c);
}

/* Delete the chosen tasks still as they were chosen, TASK_GC_INFLIGHT at
 * a time. */
static void gc_pump(struct gt_ctl *c)
{
    while (c->task_gc.inflight < TASK_GC_INFLIGHT && c->task_gc.next < c->task_gc.n &&
           !c->s->draining) {
        char *key = c->task_gc.keys[c->task_gc.next++];
        const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_TASK, key);
        if (o && gt_api_task_phase_terminal(phase_of(gt_cobj_task(o))) && !gt_ctl_busy(c, key) &&
            gt_ctl_write(c, GT_STORE_DELETE, key, NULL, o->rev, gc_done, NULL) == 0) {
            c->task_gc.inflight++;
        }
        free(key);
    }
}

/* kube-controller-manager's PodGC for Tasks: when more ended Tasks of
 * finished (or deleted) jobs are cached than
 * --terminated-task-gc-threshold, delete the oldest ends down to it. The
 * jobs keep their status (replicaStatuses' counts stay: jobs.c); the
 * runs' GPU time is in the ledger already. Without it every finished
 * job's Task stays in the store and in this cache for good. */
static void collect_tasks(struct gt_ctl *c)
{
    int64_t keep = c->s->cfg->terminated_task_gc;
    int64_t now = gt_now_ms();
    if (keep <= 0 || c->task_gc.next < c->task_gc.n ||
        now - c->task_gc.pass_ms < TASK_GC_PERIOD_MS || c->objs[GT_KIND_TASK].n <= (size_t)keep) {
        return;
    }
    c->task_gc.pass_ms = now;
    struct gc_scan g = {.c = c};
    gt_strmap_each(&c->objs[GT_KIND_TASK], gc_scan_cb, &g);
    if (g.n > (size_t)keep) {
        for (size_t i = 0; i < g.n; i++) {
            const char *end = gt_cobj_task(g.v[i].o)->status.finish_time;
            if (!end || gt_time_parse(end, &g.v[i].end_ms) != 0) {
                g.v[i].end_ms = 0;
            }
        }
        qsort(g.v, g.n, sizeof(*g.v), gc_older);
        size_t n = g.n - (size_t)keep;
        gt_jobctl_gc_free(c);
        c->task_gc.keys = gt_xcalloc(n, sizeof(char *));
        for (size_t i = 0; i < n; i++) {
            c->task_gc.keys[i] = gt_xstrdup(g.v[i].o->key);
        }
        c->task_gc.n = n;
        gt_log_info("terminated tasks collected", "deleting=%zu terminated=%zu threshold=%lld", n,
                    g.n, (long long)keep);
        gc_pump(c);
    }
    free(g.v);
}

void gt_jobctl_tick(struct gt_ctl *c)
{
    gt_strmap_each(&c->timed, tick_cb, c);
    gt_strmap_each(&c->held_queued, held_cb, c);
    collect_tasks(c);
}

/* ---- admission and delete ---- */

int gt_jobctl_admit(struct gt_ctl *c, const struct gt_api_job *job,
                    const struct gt_server_user *user, struct gt_err *err)
{
    return gt_job_check_run_as(job, user->uid, gt_ctl_project_privileged(c, job->o.meta.project),
                               err);
}

/* The path of the first place where a and b differ (a leaf, or a member
 * one side lacks) into out, below prefix; false when they are equal.
 * Object members are compared in name order, so the answer is stable. */
static bool first_difference(const json_t *a, const json_t *b, const char *prefix, char *out,
                             size_t len)
{
    if (json_equal(a, b)) {
        return false;
    }
    if (json_is_object(a) && json_is_object(b)) {
        json_t *keys = json_array();
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v)
        {
            json_array_append_new(keys, json_string(k));
        }
        json_object_foreach((json_t *)b, k, v)
        {
            if (!json_object_get(a, k)) {
                json_array_append_new(keys, json_string(k));
            }
        }
        const char *best = NULL;
        size_t i;
        json_array_foreach(keys, i, v)
        {
            const char *key = json_string_value(v);
            if (!json_equal(json_object_get(a, key), json_object_get(b, key)) &&
                (!best || strcmp(key, best) < 0)) {
                best = key;
            }
        }
        char sub[GT_API_PATH_MAX];
        snprintf(sub, sizeof(sub), "%s.%s", prefix, best);
        bool found =
            first_difference(json_object_get(a, best), json_object_get(b, best), sub, out, len);
        json_decref(keys);
        return found;
    }
    if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
        for (size_t i = 0; i < json_array_size(a); i++) {
            char sub[GT_API_PATH_MAX];
            snprintf(sub, sizeof(sub), "%s[%zu]", prefix, i);
            if (first_difference(json_array_get(a, i), json_array_get(b, i), sub, out, len)) {
                return true;
            }
        }
    }
    snprintf(out, len, "%s", prefix);
    return true;
}

int gt_jobctl_check_update(struct gt_ctl *c, const struct gt_api_job *job, struct gt_err *err)
{
    char *key = gt_xasprintf("/jobs/%s/%s", job->o.meta.project, job->o.meta.name);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_JOB, key);
    free(key);
    const struct gt_api_job *was = o ? gt_cobj_job(o) : NULL;
    if (!was || (!was->status.start_time && !gt_job_finished(was))) {
        return 0; /* not started: it may still change as a whole */
    }
    /* what may change once it runs: its limits in time and restarts */
    static const char *const mutable_run[] = {"activeDeadlineSeconds", "ttlSecondsAfterFinished",
                                              "backoffLimit"};
    json_t *specs[2] = {json_deep_copy(json_object_get(o->obj, "spec")),
                        json_deep_copy(json_object_get(job->o.json, "spec"))};
    for (size_t i = 0; i < 2; i++) {
        json_t *rp = json_object_get(specs[i], "runPolicy");
        for (size_t k = 0; k < GT_ARRAY_LEN(mutable_run); k++) {
            json_object_del(rp, mutable_run[k]);
        }
    }
    char path[GT_API_PATH_MAX];
    int rc = 0;
    if (first_difference(specs[0], specs[1], "spec", path, sizeof(path))) {
        rc = gt_err_set(err, GT_EINVAL,
                        "%s: field is immutable once the job has started (only "
                        "spec.runPolicy.activeDeadlineSeconds, ttlSecondsAfterFinished and "
                        "backoffLimit may change); delete the job and create it again",
                        path);
    }
    json_decref(specs[0]);
    json_decref(specs[1]);
    return rc;
}

bool gt_jobctl_soft_delete(struct gt_ctl *c, enum gt_kind kind, json_t *stored)
{
    if (kind != GT_KIND_TASK && kind != GT_KIND_JOB) {
        return false;
    }
    /* the stored object as read for this delete: decoded here, not cached */
    struct gt_api_object *o = gt_api_object_new(kind, stored);
    json_t *t = NULL;
    bool soft = false, set_ts = false;
    if (kind == GT_KIND_TASK) {
        soft = gt_task_holds((const struct gt_api_task *)o);
        t = soft ? with_stop((const struct gt_api_task *)o, "Deleted", true) : NULL;
    } else {
        struct job_tasks *jt = find_tasks(c, (const struct gt_api_job *)o);
        soft = jt->n > 0;
        free(jt);
        set_ts = soft && !o->meta.deletion_timestamp;
    }
    gt_api_object_free(o); /* before stored changes: it borrows from it */
    if (t) {
        json_object_update(stored, t);
        json_decref(t);
    }
    if (set_ts) {
        char ts[32];
        json_object_set_new(json_object_get(stored, "metadata"), "deletionTimestamp",
                            json_string(now_str(ts, sizeof(ts))));
    }
    return soft;
}
