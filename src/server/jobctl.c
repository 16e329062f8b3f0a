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
 * job past ttlSecondsAfterFinished is deleted. A deleted job
 * (deletionTimestamp) stops its tasks, deletes each once it is Pending or
 * terminal, and goes when none is left. The task controller finishes what
 * the agent cannot: a Pending task that was stopped is recorded Failed with
 * the stop's reason, and a deleted task goes once Pending or terminal.
 *
 * At bind time (gt_jobctl_bind_plan, called by the scheduler feeder) each
 * task gets ports from its node's --port-range, the job's distributed
 * environment and its replicas' host names (jobenv.c).
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
    const struct gt_cobj **o; /* both point into the same allocation */
    json_t **obj;
    size_t n, expected;
};

/* The job's tasks in the cache, in one allocation sized for its replicas
 * (the caller free()s it): most jobs have a few, reconciles are frequent. */
static struct job_tasks *find_tasks(struct gt_ctl *c, const json_t *job)
{
    const char *jname = gt_obj_name(job);
    const char *project = gt_obj_project(job);
    const char *type;
    json_t *rs;
    size_t max = 0;
    json_object_foreach(gt_json_path(job, "spec.replicaSpecs"), type, rs)
    {
        json_int_t reps = json_integer_value(json_object_get(rs, "replicas"));
        max += reps > 0 && max < MAX_JOB_TASKS ? (size_t)reps : 0;
    }
    max = max < MAX_JOB_TASKS ? max : MAX_JOB_TASKS;
    struct job_tasks *jt =
        gt_xmalloc(sizeof(*jt) + (max ? max : 1) * (sizeof(*jt->o) + sizeof(*jt->obj)));
    jt->o = (const struct gt_cobj **)(jt + 1);
    jt->obj = (json_t **)(jt->o + (max ? max : 1));
    jt->n = jt->expected = 0;
    json_object_foreach(gt_json_path(job, "spec.replicaSpecs"), type, rs)
    {
        json_int_t reps = json_integer_value(json_object_get(rs, "replicas"));
        for (json_int_t i = 0; i < reps && jt->n < MAX_JOB_TASKS; i++) {
            jt->expected++;
            char buf[256], *heap;
            const char *key = gt_job_task_key(buf, sizeof(buf), &heap, project, jname, type, i);
            const struct gt_cobj *t = gt_ctl_get(c, GT_KIND_TASK, key);
            const char *tj = t ? json_string_value(gt_json_path(t->obj, "spec.job")) : NULL;
            if (tj && !strcmp(tj, jname)) {
                jt->o[jt->n] = t;
                jt->obj[jt->n] = t->obj;
                jt->n++;
            }
            free(heap);
        }
    }
    return jt;
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

/* Create (or replace, for a restart) the job's missing tasks; returns how
 * many task writes it queued. */
static size_t create_tasks(struct gt_ctl *c, const json_t *job, int64_t generation)
{
    size_t n_written = 0;
    const char *project = gt_obj_project(job);
    struct gt_job_task_opts opts = {.department = gt_ctl_project_department(c, project),
                                    .priority = job_priority(c, job),
                                    .privileged = gt_ctl_project_privileged(c, project),
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
        char uid[40];
        gt_uuid4(c->s, uid, sizeof(uid));
        json_t *md = json_object_get(t, "metadata");
        json_object_set_new(md, "uid", json_string(uid));
        json_object_set_new(md, "creationTimestamp", json_string(ts));
        if (gt_ctl_busy(c, key)) {
            /* wait for the write in flight */
        } else if (!was) {
            n_written += gt_ctl_write(c, GT_STORE_CREATE, key, t, 0, NULL, NULL) == 0;
        } else if (gt_task_generation(was->obj) < generation &&
                   gt_task_phase_terminal(gt_task_phase_of(was->obj))) {
            /* the restart: the same name with a new uid, in one write */
            const char *puid = json_string_value(gt_json_path(was->obj, "metadata.uid"));
            const char *pnode = json_string_value(gt_json_path(was->obj, "spec.nodeName"));
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

/* Stop every live task of jt older than generation (all: INT64_MAX). */
static void stop_tasks(struct gt_ctl *c, const struct job_tasks *jt, int64_t generation,
                       const char *reason)
{
    for (size_t i = 0; i < jt->n; i++) {
        const struct gt_cobj *t = jt->o[i];
        if (!gt_task_phase_terminal(gt_task_phase_of(t->obj)) && !gt_ctl_busy(c, t->key) &&
            !gt_json_path(t->obj, "spec.stop") && gt_task_generation(t->obj) < generation) {
            write_obj(c, t, with_stop(t->obj, reason, false));
        }
    }
}

/* cleanPodPolicy at the job's end: All deletes every finished task,
 * Running those that were still running (stopped by the job's end), None
 * keeps them all (and their logs). */
static void clean_tasks(struct gt_ctl *c, const json_t *job, const struct job_tasks *jt)
{
    const char *pol = json_string_value(gt_json_path(job, "spec.runPolicy.cleanPodPolicy"));
    if (!pol || !strcmp(pol, "None")) {
        return;
    }
    bool all = !strcmp(pol, "All");
    for (size_t i = 0; i < jt->n; i++) {
        const struct gt_cobj *t = jt->o[i];
        const char *sr = json_string_value(gt_json_path(t->obj, "spec.stop.reason"));
        bool was_running = sr && (!strcmp(sr, "JobFinished") || !strcmp(sr, "DeadlineExceeded"));
        if (gt_task_phase_terminal(gt_task_phase_of(t->obj)) && !gt_ctl_busy(c, t->key) &&
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

/* The condition of type in conds (a status.conditions array) when its
 * status is True, else NULL (borrowed). */
static const json_t *true_cond(const json_t *conds, const char *type)
{
    size_t i;
    json_t *cnd;
    json_array_foreach(conds, i, cnd)
    {
        const char *t = json_string_value(json_object_get(cnd, "type"));
        const char *s = json_string_value(json_object_get(cnd, "status"));
        if (t && s && !strcmp(t, type) && !strcmp(s, "True")) {
            return cnd;
        }
    }
    return NULL;
}

/* An Event on the job for each condition st (its new status) turns True,
 * as the training operator's JobRunning, JobRestarting, JobSucceeded and
 * JobFailed: reason the condition's (BackoffLimitExceeded,
 * DeadlineExceeded, ...) or Job<Type>, Warning for Restarting and Failed.
 * Each further restart (a new Restarting message) is an Event too. */
static void record_transitions(struct gt_ctl *c, const json_t *job, const json_t *st)
{
    static const struct {
        const char *type, *event_type;
    } watched[] = {{"Running", "Normal"},
                   {"Restarting", "Warning"},
                   {"Succeeded", "Normal"},
                   {"Failed", "Warning"}};
    for (size_t i = 0; i < GT_ARRAY_LEN(watched); i++) {
        const char *type = watched[i].type;
        const json_t *now = true_cond(json_object_get(st, "conditions"), type);
        const json_t *was = true_cond(gt_json_path(job, "status.conditions"), type);
        const char *msg = json_string_value(json_object_get(now, "message"));
        const char *was_msg = json_string_value(json_object_get(was, "message"));
        bool again = !strcmp(type, "Restarting") && msg && (!was_msg || strcmp(msg, was_msg));
        if (!now || (was && !again)) {
            continue;
        }
        const char *reason = json_string_value(json_object_get(now, "reason"));
        char fallback[32];
        if (!reason || !strcmp(reason, type)) {
            snprintf(fallback, sizeof(fallback), "Job%s", type);
            reason = fallback;
        }
        gt_events_record(c->s->events, gt_kind_get(GT_KIND_JOB), job, watched[i].event_type, reason,
                         msg ? msg : "");
    }
}

void gt_jobctl_reconcile_job(struct gt_ctl *c, const char *key)
{
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_JOB, key);
    /* any reconcile, also one skipped while our write is in flight, means
     * the write's return must reconcile again */
    gt_strmap_del(&c->settled, key);
    if (!o || gt_ctl_busy(c, key)) {
        return;
    }
    struct job_tasks *jt = find_tasks(c, o->obj);
    if (has_del(o->obj)) {
        delete_job(c, o, jt);
        free(jt);
        return;
    }
    struct gt_job_decision d;
    gt_job_decide(o->obj, jt->obj, jt->n, gt_now_ms(), c->s->cfg->restart_backoff_ms, &d);
    if (d.action == GT_JOB_EXPIRE) {
        expire_job(c, o);
        free(jt);
        return;
    }
    bool creating = false;
    if ((jt->n < jt->expected && !past_created(o->obj)) || d.action == GT_JOB_RECREATE) {
        creating = create_tasks(c, o->obj, d.generation) > 0;
    }
    if (creating && jt->n == 0) {
        /* a new job: its status is written once its tasks are back, and
         * there is no task to stop or clean */
        free(jt);
        return;
    }
    json_t *st =
        gt_job_derive_status(o->obj, jt->obj, jt->n, &d, gt_feed_wait(c, key), gt_now_ms());
    /* tasks being written come back through the watch and reconcile the
     * job again: its status is written once, from them */
    bool wrote = false;
    if (!creating && !json_equal(st, json_object_get(o->obj, "status"))) {
        json_t *j = json_copy(o->obj); /* cached objects never change: share the rest */
        json_object_set(j, "status", st);
        record_transitions(c, o->obj, st);
        write_obj(c, o, j);
        wrote = gt_ctl_busy(c, key);
    }
    bool finished = gt_job_status_finished(st);
    /* a status-only write that time cannot change: reconciling it again
     * once written would derive the same status (nothing else changed
     * unless something marks the job, which reconciles it) */
    if (wrote && !finished && d.action == GT_JOB_KEEP && d.wake_ms == 0) {
        gt_strmap_put(&c->settled, key, (void *)"");
    }
    const char *why = json_string_value(json_object_get(
        gt_json_find(json_object_get(st, "conditions"), "type", "Failed"), "reason"));
    if (finished) {
        /* tasks still running at a deadline are stopped as DeadlineExceeded */
        stop_tasks(c, jt, INT64_MAX,
                   why && !strcmp(why, "DeadlineExceeded") ? "DeadlineExceeded" : "JobFinished");
        clean_tasks(c, o->obj, jt);
    } else if (d.action == GT_JOB_RESTART) {
        stop_tasks(c, jt, d.generation, GT_STOP_RESTARTING);
    }
    json_decref(st);
    free(jt);
}

static bool needs_time(const json_t *job)
{
    json_t *rp = gt_json_path(job, "spec.runPolicy");
    if (gt_job_finished(job)) {
        return json_object_get(rp, "ttlSecondsAfterFinished") != NULL;
    }
    if (json_object_get(rp, "activeDeadlineSeconds")) {
        return true;
    }
    size_t i;
    json_t *cnd;
    json_array_foreach(gt_json_path(job, "status.conditions"), i, cnd)
    {
        const char *t = json_string_value(json_object_get(cnd, "type"));
        const char *s = json_string_value(json_object_get(cnd, "status"));
        if (t && s && !strcmp(t, "Restarting") && !strcmp(s, "True")) {
            return true;
        }
    }
    return false;
}

void gt_jobctl_note_job(struct gt_ctl *c, const char *key, const json_t *job)
{
    if (job && needs_time(job)) {
        gt_strmap_put(&c->timed, key, (void *)"");
    } else {
        gt_strmap_del(&c->timed, key);
    }
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

void gt_jobctl_tick(struct gt_ctl *c)
{
    gt_strmap_each(&c->timed, tick_cb, c);
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
    struct job_tasks *jt = find_tasks(c, job);
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

/* ---- what a task is given at bind time ---- */

struct port_use {
    const char *node; /* borrowed from the cache or the binds */
    int32_t port;
};

struct plan_ctx GT_VEC(struct port_use);

static void use_port(struct plan_ctx *p, const char *node, int32_t port)
{
    *GT_VEC_PUSH(p, 64) = (struct port_use){node, port};
}

static int used_cb(const char *key, void *val, void *arg)
{
    (void)key;
    const struct gt_cobj *o = val;
    if (!gt_task_holds(o->obj)) {
        return 0;
    }
    const char *node = json_string_value(gt_json_path(o->obj, "spec.nodeName"));
    size_t i;
    json_t *pt;
    json_array_foreach(gt_json_path(o->obj, "spec.ports"), i, pt)
    {
        use_port(arg, node, (int32_t)json_integer_value(json_object_get(pt, "port")));
    }
    return 0;
}

/* The ports of task tmpl on node: one per template.ports entry, then the
 * "gantry" port; NULL if the range is full. */
static json_t *alloc_ports(struct plan_ctx *p, int32_t lo, int32_t hi, const char *node,
                           const json_t *tmpl)
{
    json_t *want = json_object_get(tmpl, "ports");
    size_t n = json_array_size(want) + 1;
    int32_t *used = gt_xcalloc(p->n ? p->n : 1, sizeof(*used));
    size_t n_used = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (p->v[i].node && !strcmp(p->v[i].node, node)) {
            used[n_used++] = p->v[i].port;
        }
    }
    int32_t *got = gt_xcalloc(n, sizeof(*got));
    json_t *ports = NULL;
    if (gt_jobenv_ports_alloc(lo, hi, used, n_used, n, got) == 0) {
        ports = json_array();
        for (size_t i = 0; i < n; i++) {
            const char *name =
                i + 1 < n ? json_string_value(json_object_get(json_array_get(want, i), "name"))
                          : "gantry";
            char dflt[32];
            snprintf(dflt, sizeof(dflt), "port-%zu", i);
            json_array_append_new(
                ports, json_pack("{s:s, s:i}", "name", name ? name : dflt, "port", got[i]));
            use_port(p, node, got[i]);
        }
    }
    free(got);
    free(used);
    return ports;
}

static int32_t gantry_port(const json_t *ports)
{
    return (int32_t)json_integer_value(
        json_object_get(gt_json_find(ports, "name", "gantry"), "port"));
}

static const char *node_ip(const struct gt_ctl *c, const char *node)
{
    if (!node) {
        return NULL;
    }
    char *key = gt_xasprintf("/nodes/%s", node);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_NODE, key);
    free(key);
    json_t *a =
        gt_json_find(o ? gt_json_path(o->obj, "status.addresses") : NULL, "type", "InternalIP");
    return json_string_value(json_object_get(a, "address"));
}

/* Fill entry (the plan of one bound task) with its env and hosts, from
 * its job's replicas as bound now or in this plan. */
static void plan_env(const struct gt_ctl *c, const json_t *plan, const json_t *task, json_t *entry)
{
    const char *project = gt_obj_project(task);
    const char *jname = json_string_value(gt_json_path(task, "spec.job"));
    char *jkey = gt_xasprintf("/jobs/%s/%s", project, jname ? jname : "");
    const struct gt_cobj *job = gt_ctl_get(c, GT_KIND_JOB, jkey);
    free(jkey);
    if (!job) {
        return;
    }
    json_t *specs = gt_json_path(job->obj, "spec.replicaSpecs");
    size_t n = 0, self = 0, cap = 0;
    const char *type;
    json_t *rs;
    json_object_foreach(specs, type, rs)
    {
        cap += (size_t)json_integer_value(json_object_get(rs, "replicas"));
    }
    struct gt_jobenv_member *m = gt_xcalloc(cap ? cap : 1, sizeof(*m));
    json_object_foreach(specs, type, rs)
    {
        json_int_t reps = json_integer_value(json_object_get(rs, "replicas"));
        for (json_int_t i = 0; i < reps && n < cap; i++, n++) {
            char *name = gt_job_task_name(jname, type, i);
            char *tkey = gt_xasprintf("/tasks/%s/%s", project, name);
            char *tid = gt_xasprintf("%s/%s", project, name);
            const struct gt_cobj *t = gt_ctl_get(c, GT_KIND_TASK, tkey);
            json_t *mine = json_object_get(plan, tid);
            m[n].type = type;
            m[n].index = i;
            if (mine) {
                m[n].port = gantry_port(json_object_get(mine, "ports"));
                m[n].ip = node_ip(c, json_string_value(json_object_get(mine, "node")));
            } else if (t && gt_task_holds(t->obj)) {
                m[n].port = gantry_port(gt_json_path(t->obj, "spec.ports"));
                m[n].ip = node_ip(c, json_string_value(gt_json_path(t->obj, "spec.nodeName")));
            }
            if (!strcmp(name, gt_obj_name(task))) {
                self = n;
            }
            free(tid);
            free(tkey);
            free(name);
        }
    }
    const char *fw = json_string_value(
        json_object_get(gt_json_path(job->obj, "metadata.annotations"), GT_ANNOTATION_FRAMEWORK));
    json_object_set_new(entry, "env", gt_jobenv_env(jname, project, fw, m, n, self));
    json_object_set_new(entry, "hosts", gt_jobenv_hosts(jname, project, m, n));
    free(m);
}

json_t *gt_jobctl_bind_plan(struct gt_ctl *c, const struct gt_sched_bind *binds, size_t n)
{
    json_t *plan = json_object();
    int32_t lo = 30000, hi = 32767;
    const char *range = c->s->cfg->port_range;
    if (!n || (range && gt_jobenv_port_range_parse(range, &lo, &hi, NULL))) {
        return plan;
    }
    struct plan_ctx p = {0};
    gt_strmap_each(&c->holding, used_cb, &p);
    const json_t **tasks = gt_xcalloc(n, sizeof(*tasks));
    for (size_t i = 0; i < n; i++) {
        char *key = gt_xasprintf("/tasks/%s", binds[i].task_id);
        const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_TASK, key);
        free(key);
        json_t *ports =
            o ? alloc_ports(&p, lo, hi, binds[i].node, gt_json_path(o->obj, "spec.template"))
              : NULL;
        if (ports) {
            tasks[i] = o->obj;
            json_object_set_new(plan, binds[i].task_id,
                                json_pack("{s:o, s:s}", "ports", ports, "node", binds[i].node));
        } else if (o) {
            gt_log_warn("no free port", "task=%s node=%s", binds[i].task_id, binds[i].node);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (tasks[i]) {
            plan_env(c, plan, tasks[i], json_object_get(plan, binds[i].task_id));
        }
    }
    free(tasks);
    GT_VEC_FREE(&p);
    return plan;
}

void gt_jobctl_bind_apply(const json_t *plan, const char *task_id, json_t *task)
{
    json_t *e = json_object_get(plan, task_id);
    if (!e) {
        return;
    }
    json_t *spec = json_object_get(task, "spec");
    json_object_set(spec, "ports", json_object_get(e, "ports"));
    json_t *hosts = json_object_get(e, "hosts");
    if (json_array_size(hosts)) {
        json_object_set(spec, "hosts", hosts);
    }
    json_t *env = json_object_get(e, "env");
    if (json_array_size(env)) {
        gt_jobenv_merge(json_object_get(spec, "template"), env);
    }
}
