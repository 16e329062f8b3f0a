/*
 * The job controller's pure parts: the Tasks a Job becomes, the admission
 * rules for runAsUser and for volumes' storage roots, a job's status
 * derived from its tasks' phases, and what a task asks for. No I/O and no
 * clock (times are passed in), so unit tests reach every rule; jobctl.c
 * applies them to the store.
 *
 * Inputs are validated, canonical objects (borrowed); every returned JSON
 * value is new and owned by the caller.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

#define DEFAULT_GRACE_S 30

bool gt_task_holds(const struct gt_api_task *task)
{
    enum gt_task_phase p = (enum gt_task_phase)task->status.phase;
    const char *node = task->spec.node_name;
    return node && *node &&
           (p == GT_TASK_BOUND || p == GT_TASK_RUNNING || p == GT_TASK_TERMINATING);
}

int64_t gt_task_grace_s(const struct gt_api_template *tmpl)
{
    return tmpl->grace_period_s != GT_API_UNSET ? tmpl->grace_period_s : DEFAULT_GRACE_S;
}

static void lower_type(const char *type, char *lower, size_t len)
{
    size_t i = 0;
    for (; type[i] && i + 1 < len; i++) {
        lower[i] = (char)tolower((unsigned char)type[i]);
    }
    lower[i] = '\0';
}

char *gt_job_task_name(const char *job, const char *type, int64_t index)
{
    char lower[16];
    lower_type(type, lower, sizeof(lower));
    return gt_xasprintf("%s-%s-%lld", job, lower, (long long)index);
}

const char *gt_job_task_key(char *buf, size_t len, char **heap, const char *project,
                            const char *job, const char *type, int64_t index)
{
    char lower[16];
    lower_type(type, lower, sizeof(lower));
    *heap = NULL;
    int n = snprintf(buf, len, "/tasks/%s/%s-%s-%lld", project, job, lower, (long long)index);
    if (n >= 0 && (size_t)n < len) {
        return buf;
    }
    *heap = gt_xasprintf("/tasks/%s/%s-%s-%lld", project, job, lower, (long long)index);
    return *heap;
}

int gt_job_check_run_as(const struct gt_api_job *job, int64_t creator_uid, bool allow_privileged,
                        struct gt_err *err)
{
    if (allow_privileged) {
        return 0;
    }
    for (size_t i = 0; i < job->spec.replica_specs.n; i++) {
        const struct gt_api_replica_spec *rs = &job->spec.replica_specs.v[i];
        int64_t u = rs->template.run_as_user;
        if (u != GT_API_UNSET && u != creator_uid) {
            return gt_err_set(err, GT_EINVAL,
                              "spec.replicaSpecs.%s.template.runAsUser: must equal the creator's "
                              "uid (%lld) unless the project allows privileged tasks",
                              rs->type, (long long)creator_uid);
        }
    }
    return 0;
}

bool gt_path_beneath(const char *path, const char *root)
{
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/') {
        n--;
    }
    if (n == 1 && root[0] == '/') {
        return true;
    }
    return !strncmp(path, root, n) && (path[n] == '\0' || path[n] == '/');
}

int gt_job_check_volumes(const struct gt_api_volumes *vols, char *const *roots, size_t n_roots,
                         struct gt_err *err)
{
    for (size_t i = 0; i < vols->n; i++) {
        const char *host = vols->v[i].host_path;
        if (!host) {
            continue;
        }
        if (!n_roots) {
            return gt_err_set(err, GT_EINVAL,
                              "spec.volumes[%zu].hostPath: hostPath volumes are refused: this "
                              "cluster has no storage root (an admin sets gantryd --storage-root)",
                              i);
        }
        bool ok = false;
        for (size_t r = 0; r < n_roots && !ok; r++) {
            ok = gt_path_beneath(host, roots[r]);
        }
        if (!ok) {
            struct gt_buf list;
            gt_buf_init(&list);
            for (size_t r = 0; r < n_roots; r++) {
                gt_buf_printf(&list, "%s%s", r ? ", " : "", roots[r]);
            }
            gt_err_set(err, GT_EINVAL,
                       "spec.volumes[%zu].hostPath: %s is not beneath a storage root of this "
                       "cluster (%s)",
                       i, host, list.data);
            gt_buf_fini(&list);
            return GT_EINVAL;
        }
    }
    return 0;
}

/* spec.pip of a task that installs requirements: the cluster's index. */
static void set_pip(json_t *spec, const struct gt_api_job *job, const struct gt_job_task_opts *opts)
{
    if (!job->spec.requirements || (!opts->pip_index_url && !opts->pip_find_links)) {
        return;
    }
    json_t *pip = json_object();
    if (opts->pip_index_url) {
        json_object_set_new(pip, "indexUrl", json_string(opts->pip_index_url));
    }
    if (opts->pip_find_links) {
        json_object_set_new(pip, "findLinks", json_string(opts->pip_find_links));
    }
    json_object_set_new(spec, "pip", pip);
}

json_t *gt_job_build_tasks(const struct gt_api_job *job, const struct gt_job_task_opts *opts)
{
    json_t *out = json_array();
    const char *jname = job->o.meta.name;
    const char *project = job->o.meta.project;
    /* the JSON the tasks copy: the creator, templates and job-wide fields */
    json_t *creator = gt_json_path(job->o.json, "metadata.creator");
    const json_t *jspec = json_object_get(job->o.json, "spec");
    const char *type;
    json_t *rs;
    size_t r = 0; /* replica_specs are in the document's order, as the foreach */
    json_object_foreach(json_object_get(jspec, "replicaSpecs"), type, rs)
    {
        int64_t n = job->spec.replica_specs.v[r++].replicas;
        for (int64_t i = 0; i < n; i++) {
            char *name = gt_job_task_name(jname, type, i);
            char idx[24];
            snprintf(idx, sizeof(idx), "%lld", (long long)i);
            char gen[24];
            snprintf(gen, sizeof(gen), "%lld", (long long)opts->generation);
            json_t *md = json_object();
            gt_obj_set_str(md, "name", name);
            gt_obj_set_str(md, "project", project);
            json_t *labels = json_object();
            gt_obj_set_str(labels, "gantry.dev/job", jname);
            gt_obj_set_str(labels, "gantry.dev/replica-type", type);
            gt_obj_set_str(labels, "gantry.dev/replica-index", idx);
            gt_obj_set_str(labels, GT_LABEL_GENERATION, gen);
            json_object_set_new_nocheck(md, "labels", labels);
            if (creator) {
                json_object_set(md, "creator", creator);
            }
            json_t *spec = json_object();
            gt_obj_set_str(spec, "job", jname);
            gt_obj_set_str(spec, "replicaType", type);
            json_object_set_new_nocheck(spec, "replicaIndex", json_integer(i));
            json_object_set_nocheck(spec, "template", json_object_get(rs, "template"));
            json_object_set_new_nocheck(spec, "priority", json_integer(opts->priority));
            json_object_set_new_nocheck(spec, "privileged", json_boolean(opts->privileged));
            if (opts->stop_idle_gpu) {
                json_object_set_new_nocheck(spec, "stopIdleGPU", json_true());
            }
            if (opts->department) {
                json_object_set_new(spec, "department", json_string(opts->department));
            }
            /* What the agent prepares before the command is job-wide. */
            static const char *const shared[] = {"volumes", "source", "requirements",
                                                 "tensorboard"};
            for (size_t k = 0; k < GT_ARRAY_LEN(shared); k++) {
                json_t *v = json_object_get(jspec, shared[k]);
                if (v) {
                    json_object_set(spec, shared[k], v);
                }
            }
            set_pip(spec, job, opts);
            json_t *task = json_object();
            json_object_set_new_nocheck(task, "metadata", md);
            gt_obj_set_str(task, "apiVersion", GT_API_VERSION);
            gt_obj_set_str(task, "kind", "Task");
            json_object_set_new_nocheck(task, "spec", spec);
            json_t *st = json_object();
            gt_obj_set_str(st, "phase", "Pending");
            json_object_set_new_nocheck(task, "status", st);
            json_array_append_new(out, task);
            free(name);
        }
    }
    return out;
}

json_t *gt_task_with_stop(const struct gt_api_task *task, const char *reason,
                          const char *deletion_ts)
{
    json_t *t = json_deep_copy(task->o.json);
    if (!task->spec.has_stop) {
        json_object_set_new(json_object_get(t, "spec"), "stop",
                            json_pack("{s:s, s:I}", "reason", reason, "gracePeriodSeconds",
                                      (json_int_t)gt_task_grace_s(&task->spec.template)));
    }
    if (deletion_ts && !task->o.meta.deletion_timestamp) {
        json_object_set_new(json_object_get(t, "metadata"), "deletionTimestamp",
                            json_string(deletion_ts));
    }
    return t;
}

/* ---- restart policies ---- */

/* Ends that are not the job's doing: its GPU lost (the agent's GPULost) counts as its node. */
static const char *const requeue_reasons[] = {"Preempted", "NodeLost", "Drained", "Evicted",
                                              "GPULost"};

enum gt_restart_verdict gt_job_restart_verdict(const char *policy, const struct gt_api_task *task)
{
    if (task->status.phase != GT_TASK_FAILED) {
        return GT_RESTART_NONE;
    }
    const char *reason = task->status.reason;
    if (reason && (!strcmp(reason, GT_STOP_RESTARTING) || !strcmp(reason, GT_STOP_JOB_FINISHED))) {
        return GT_RESTART_NONE;
    }
    if (reason && !strcmp(reason, "IdleGPU")) {
        return GT_RESTART_PERMANENT; /* its project stops idle jobs: whatever the policy */
    }
    for (size_t i = 0; reason && i < GT_ARRAY_LEN(requeue_reasons); i++) {
        if (!strcmp(reason, requeue_reasons[i])) {
            return GT_RESTART_REQUEUE;
        }
    }
    if (reason && !strcmp(reason, "ImagePullFailed")) {
        /* as kubelet pulls again whatever the restartPolicy: backed off
         * (ImagePullBackOff), never toward backoffLimit */
        return GT_RESTART_REQUEUE;
    }
    if (!policy || !strcmp(policy, "Never")) {
        return GT_RESTART_PERMANENT;
    }
    if (!strcmp(policy, "ExitCode")) {
        int64_t code = task->status.exit_code != GT_API_UNSET ? task->status.exit_code : -1;
        return code >= 128 && code <= 255 ? GT_RESTART_RETRY : GT_RESTART_PERMANENT;
    }
    return GT_RESTART_RETRY; /* OnFailure, Always */
}

int64_t gt_job_backoff_ms(int64_t n, int64_t base_ms)
{
    int64_t cap = base_ms * 30, d = base_ms;
    for (int64_t i = 1; i < n && d < cap; i++) {
        d *= 2;
    }
    return d < cap ? d : cap;
}

int64_t gt_task_generation(const struct gt_api_task *task)
{
    const char *g = json_string_value(json_object_get(task->o.meta.labels, GT_LABEL_GENERATION));
    return g ? strtoll(g, NULL, 10) : 0;
}

/* ---- status ---- */

static const char *const cond_order[] = {"Queued", "Running", "Restarting", "Succeeded", "Failed"};
#define FIRST_FINAL 3 /* cond_order index of Succeeded */

bool gt_job_finished(const struct gt_api_job *job)
{
    for (size_t i = FIRST_FINAL; i < GT_ARRAY_LEN(cond_order); i++) {
        if (gt_api_condition_true(&job->status.conditions, cond_order[i])) {
            return true;
        }
    }
    return false;
}

/* A count field: absent is 0. */
static int64_t count_of(int64_t v)
{
    return v != GT_API_UNSET ? v : 0;
}

/* A time field as ms, or 0 when absent or bad. */
static int64_t time_ms(const char *s)
{
    int64_t ms = 0;
    return s && gt_time_parse(s, &ms) == 0 ? ms : 0;
}

static void wake_at(struct gt_job_decision *d, int64_t at_ms)
{
    if (at_ms && (!d->wake_ms || at_ms < d->wake_ms)) {
        d->wake_ms = at_ms;
    }
}

/* When the restart under way may recreate its tasks: the Restarting
 * condition's time (rounded up: it has whole seconds) plus the back-off of
 * a counted restart; 0 when no restart is recorded. */
static int64_t restart_at(const struct gt_api_job *job, int64_t base_ms)
{
    const struct gt_api_condition *c = gt_api_condition_find(&job->status.conditions, "Restarting");
    if (!gt_api_condition_true(&job->status.conditions, "Restarting")) {
        return 0;
    }
    int64_t at = time_ms(c->last_transition_time) + 1000;
    if (c->reason && !strcmp(c->reason, "TaskFailed")) {
        at += gt_job_backoff_ms(count_of(job->status.restart_count), base_ms);
    } else if (c->reason && !strcmp(c->reason, "ImagePullBackOff")) {
        at += gt_job_backoff_ms(count_of(job->status.image_pull_backoffs), base_ms);
    }
    return at;
}

static void describe_failure(const struct gt_api_task *task, char *out, size_t len)
{
    const char *reason = task->status.reason;
    char code[40] = "";
    if (task->status.exit_code != GT_API_UNSET) {
        snprintf(code, sizeof(code), ", exit code %lld", (long long)task->status.exit_code);
    }
    snprintf(out, len, "task %s failed (%s%s)", task->o.meta.name, reason ? reason : "Error", code);
}

/* The replica spec of type in job (borrowed), or NULL. */
static const struct gt_api_replica_spec *replica_spec(const struct gt_api_job *job,
                                                      const char *type)
{
    for (size_t i = 0; type && i < job->spec.replica_specs.n; i++) {
        if (!strcmp(job->spec.replica_specs.v[i].type, type)) {
            return &job->spec.replica_specs.v[i];
        }
    }
    return NULL;
}

/* Did task t fail because its image could not be pulled? */
static bool pull_failed(const struct gt_api_task *t)
{
    return t->status.reason && !strcmp(t->status.reason, "ImagePullFailed");
}

/* Judge the current generation's tasks by their restart policies. */
static void judge_tasks(const struct gt_api_job *job, const struct gt_api_task *const *tasks,
                        size_t n, int64_t backoff_base_ms, struct gt_job_decision *d)
{
    const struct gt_api_task *worst[GT_RESTART_REQUEUE + 1] = {0};
    for (size_t i = 0; i < n; i++) {
        const struct gt_api_replica_spec *rs = replica_spec(job, tasks[i]->spec.replica_type);
        enum gt_restart_verdict v =
            gt_job_restart_verdict(rs ? rs->restart_policy : NULL, tasks[i]);
        if (!worst[v]) {
            worst[v] = tasks[i];
        }
    }
    char what[200];
    int64_t bl = job->spec.run_policy.backoff_limit;
    int64_t limit = bl != GT_API_UNSET ? bl : GT_JOB_BACKOFF_DEFAULT;
    int64_t restarts = count_of(job->status.restart_count);
    if (worst[GT_RESTART_PERMANENT]) {
        describe_failure(worst[GT_RESTART_PERMANENT], what, sizeof(what));
        d->action = GT_JOB_FAIL;
        snprintf(d->reason, sizeof(d->reason), "TaskFailed");
        snprintf(d->message, sizeof(d->message), "%s", what);
    } else if (worst[GT_RESTART_RETRY] && restarts >= limit) {
        describe_failure(worst[GT_RESTART_RETRY], what, sizeof(what));
        d->action = GT_JOB_FAIL;
        snprintf(d->reason, sizeof(d->reason), "BackoffLimitExceeded");
        snprintf(d->message, sizeof(d->message), "%s; backoffLimit %lld reached", what,
                 (long long)limit);
    } else if (worst[GT_RESTART_RETRY] || worst[GT_RESTART_REQUEUE]) {
        const struct gt_api_task *t =
            worst[GT_RESTART_RETRY] ? worst[GT_RESTART_RETRY] : worst[GT_RESTART_REQUEUE];
        describe_failure(t, what, sizeof(what));
        d->action = GT_JOB_RESTART;
        d->begins = true;
        d->counted = worst[GT_RESTART_RETRY] != NULL;
        d->pull_backoff = !d->counted && pull_failed(t);
        d->generation++;
        const char *r = t->status.reason;
        snprintf(d->reason, sizeof(d->reason), "%s",
                 d->pull_backoff    ? "ImagePullBackOff"
                 : d->counted || !r ? "TaskFailed"
                                    : r);
        if (d->pull_backoff) {
            int64_t tries = count_of(job->status.image_pull_backoffs) + 1;
            snprintf(d->message, sizeof(d->message),
                     "task %s: %.200s; its GPUs are released, pulling again in %llds",
                     t->o.meta.name, t->status.message ? t->status.message : "image pull failed",
                     (long long)(gt_job_backoff_ms(tries, backoff_base_ms) / 1000));
        } else if (d->counted && limit == GT_API_BACKOFF_UNLIMITED) {
            snprintf(d->message, sizeof(d->message), "%s; restart %lld (no backoffLimit)", what,
                     (long long)restarts + 1);
        } else if (d->counted) {
            snprintf(d->message, sizeof(d->message), "%s; restart %lld of at most %lld", what,
                     (long long)restarts + 1, (long long)limit);
        } else {
            snprintf(d->message, sizeof(d->message), "%s; requeued", what);
        }
    }
}

void gt_job_decide(const struct gt_api_job *job, const struct gt_api_task *const *tasks,
                   size_t n_tasks, int64_t now_ms, int64_t backoff_base_ms,
                   struct gt_job_decision *d)
{
    memset(d, 0, sizeof(*d));
    d->generation = count_of(job->status.restart_count) + count_of(job->status.requeue_count);
    const struct gt_api_run_policy *rp = &job->spec.run_policy;
    if (gt_job_finished(job)) {
        int64_t done = time_ms(job->status.completion_time);
        if (rp->ttl_after_finished_s != GT_API_UNSET && done) {
            int64_t at = done + rp->ttl_after_finished_s * 1000;
            d->action = now_ms >= at ? GT_JOB_EXPIRE : GT_JOB_KEEP;
            wake_at(d, at);
        }
        return;
    }
    int64_t ads = rp->active_deadline_s;
    int64_t start = time_ms(job->status.start_time);
    if (ads != GT_API_UNSET && start) {
        int64_t at = start + ads * 1000;
        if (now_ms >= at) {
            d->action = GT_JOB_FAIL;
            snprintf(d->reason, sizeof(d->reason), "DeadlineExceeded");
            snprintf(d->message, sizeof(d->message),
                     "the job ran longer than activeDeadlineSeconds (%lld s)", (long long)ads);
            return;
        }
        wake_at(d, at);
    }
    size_t old = 0, old_live = 0;
    const struct gt_api_task **cur = gt_xcalloc(n_tasks ? n_tasks : 1, sizeof(*cur));
    size_t n_cur = 0;
    for (size_t i = 0; i < n_tasks; i++) {
        if (gt_task_generation(tasks[i]) < d->generation) {
            old++;
            old_live += !gt_api_task_phase_terminal((enum gt_task_phase)tasks[i]->status.phase);
        } else {
            cur[n_cur++] = tasks[i];
        }
    }
    if (old) {
        int64_t at = restart_at(job, backoff_base_ms);
        if (old_live || now_ms < at) {
            const struct gt_api_condition *c =
                gt_api_condition_find(&job->status.conditions, "Restarting");
            const char *r = c ? c->reason : NULL;
            const char *m = c ? c->message : NULL;
            d->action = GT_JOB_RESTART;
            snprintf(d->reason, sizeof(d->reason), "%s", r ? r : "TaskFailed");
            snprintf(d->message, sizeof(d->message), "%s", m ? m : "restarting");
            if (!old_live) {
                wake_at(d, at);
            }
        } else {
            d->action = GT_JOB_RECREATE;
        }
    } else {
        judge_tasks(job, cur, n_cur, backoff_base_ms, d);
    }
    free(cur);
}

/* The job's status as stored, whose unchanged parts a new status shares:
 * the typed conditions and replica statuses, and the JSON they came from
 * (borrowed; NULL when absent). */
struct old_status {
    const struct gt_api_conditions *conds; /* of typed */
    const json_t *conds_json;
    const struct gt_api_job_status *typed;
    const json_t *replica_json;
    bool finished; /* a final condition is True */
};

static bool same_str(const char *a, const char *b)
{
    return a && !strcmp(a, b);
}

/* Set condition type to status/reason/message, keeping its transition time
 * when its status did not change. An unchanged condition is the old object
 * itself (cached objects never change): nothing to build, and the job's
 * versions share it. */
static void set_cond(json_t *conds, const struct old_status *old, const char *type,
                     const char *status, const char *reason, const char *message, const char *now)
{
    const struct gt_api_condition *was = gt_api_condition_find(old->conds, type);
    const char *wt = was ? was->last_transition_time : NULL;
    bool kept = was && same_str(was->status, status);
    /* the five fields set here and no other (the schema has no unknown ones) */
    if (kept && wt && !was->last_heartbeat_time && same_str(was->reason, reason) &&
        same_str(was->message, message)) {
        json_array_append(conds, json_array_get(old->conds_json, (size_t)(was - old->conds->v)));
        return;
    }
    json_t *c = json_object();
    gt_obj_set_str(c, "type", type);
    gt_obj_set_str(c, "status", status);
    gt_obj_set_str(c, "reason", reason);
    gt_obj_set_str(c, "message", message);
    gt_obj_set_str(c, "lastTransitionTime", kept && wt ? wt : now);
    json_array_append_new(conds, c);
}

struct tally {
    size_t expected, found;
    size_t running, succeeded;
    size_t lead, lead_succeeded;       /* Master/Chief/Launcher replicas */
    size_t workers, workers_succeeded; /* Worker replicas */
};

/* The stored replica status of type, or NULL. */
static const struct gt_api_replica_status *old_replica(const struct old_status *old,
                                                       const char *type)
{
    for (size_t i = 0; i < old->typed->replica_statuses.n; i++) {
        if (!strcmp(old->typed->replica_statuses.v[i].type, type)) {
            return &old->typed->replica_statuses.v[i];
        }
    }
    return NULL;
}

static void count_tasks(const struct gt_api_job *job, const struct old_status *old,
                        const struct gt_api_task *const *tasks, size_t n, int64_t generation,
                        struct tally *t, json_t *replica_statuses)
{
    for (size_t r = 0; r < job->spec.replica_specs.n; r++) {
        const char *type = job->spec.replica_specs.v[r].type;
        size_t reps = (size_t)job->spec.replica_specs.v[r].replicas;
        /* an MPIJob's launcher decides it, as the MPI operator's does */
        bool lead = !strcmp(type, "Master") || !strcmp(type, "Chief") || !strcmp(type, "Launcher");
        bool worker = !strcmp(type, "Worker");
        t->expected += reps;
        t->lead += lead ? reps : 0;
        t->workers += worker ? reps : 0;
        int64_t active = 0, succeeded = 0, failed = 0;
        for (size_t i = 0; i < n; i++) {
            const char *tt = tasks[i]->spec.replica_type;
            if (!tt || strcmp(tt, type)) {
                continue;
            }
            t->found++;
            enum gt_task_phase p = (enum gt_task_phase)tasks[i]->status.phase;
            bool current = gt_task_generation(tasks[i]) >= generation;
            if (p == GT_TASK_SUCCEEDED) {
                succeeded++;
                t->succeeded += current;
                t->lead_succeeded += lead && current;
                t->workers_succeeded += worker && current;
            } else if (p == GT_TASK_FAILED) {
                /* stopped by the job's own end: no failure of its replica
                 * type (the training operator deletes such pods) */
                const char *why = tasks[i]->status.reason;
                failed += !why || strcmp(why, GT_STOP_JOB_FINISHED) != 0;
            } else {
                active++;
                t->running += p == GT_TASK_RUNNING && current;
            }
        }
        const struct gt_api_replica_status *was = old_replica(old, type);
        if (was && old->finished) {
            /* a finished job's tasks may be deleted (cleanPodPolicy, the
             * terminated-task collector): the counts of its ends stay, as
             * the training operator keeps them */
            succeeded = succeeded > was->succeeded ? succeeded : was->succeeded;
            failed = failed > was->failed ? failed : was->failed;
        }
        if (was && was->active == active && was->succeeded == succeeded && was->failed == failed) {
            /* unchanged (all three counts, which are all it has): shared */
            json_object_set(replica_statuses, type, json_object_get(old->replica_json, type));
            continue;
        }
        json_t *counts = json_object();
        json_object_set_new_nocheck(counts, "active", json_integer(active));
        json_object_set_new_nocheck(counts, "succeeded", json_integer(succeeded));
        json_object_set_new_nocheck(counts, "failed", json_integer(failed));
        json_object_set_new(replica_statuses, type, counts);
    }
}

static bool succeeded(const struct tally *t)
{
    if (!t->expected) {
        return false;
    }
    if (t->lead) {
        return t->lead_succeeded == t->lead;
    }
    return t->workers ? t->workers_succeeded == t->workers : t->succeeded == t->expected;
}

/* The phase (a cond_order entry) and its reason and message. fin: the
 * recorded final condition when the job had finished. */
static const char *pick_phase(const struct old_status *old, const struct tally *t,
                              const struct gt_job_decision *d, const char *wait_message,
                              const json_t **fin, const char **reason, char *msg, size_t len)
{
    const struct gt_api_condition *queued = gt_api_condition_find(old->conds, "Queued");
    bool was_queued = queued != NULL;
    *reason = NULL;
    for (size_t i = FIRST_FINAL; i < GT_ARRAY_LEN(cond_order); i++) {
        if (gt_api_condition_true(old->conds, cond_order[i])) {
            const struct gt_api_condition *c = gt_api_condition_find(old->conds, cond_order[i]);
            *fin = json_array_get(old->conds_json, (size_t)(c - old->conds->v));
            return cond_order[i];
        }
    }
    if (d->action == GT_JOB_FAIL) {
        *reason = d->reason;
        snprintf(msg, len, "%s", d->message);
        return "Failed";
    }
    if (t->found < t->expected && was_queued) {
        *reason = "TasksGone";
        snprintf(msg, len, "%zu of %zu tasks are gone", t->expected - t->found, t->expected);
        return "Failed";
    }
    if (d->action == GT_JOB_RESTART) {
        *reason = d->reason;
        snprintf(msg, len, "%s", d->message);
        return "Restarting";
    }
    if (d->action != GT_JOB_RECREATE && succeeded(t)) {
        snprintf(msg, len, "%s succeeded",
                 t->lead      ? "the lead replica"
                 : t->workers ? "every worker"
                              : "every task");
        return "Succeeded";
    }
    if (d->action != GT_JOB_RECREATE && t->running) {
        snprintf(msg, len, "%zu of %zu tasks running", t->running, t->expected);
        return "Running";
    }
    if ((t->found == t->expected || was_queued) && t->expected) {
        /* no verdict from the scheduler yet (e.g. just after a restart): keep
         * the recorded reason rather than rewriting it back and forth */
        const char *old_msg = queued ? queued->message : NULL;
        const char *why = wait_message && *wait_message ? wait_message
                          : old_msg                     ? old_msg
                                                        : "waiting to be scheduled";
        snprintf(msg, len, "%s", why);
        return "Queued";
    }
    return NULL;
}

/* The Inadmissible condition (src/sched verdict.c): True while the job is
 * Queued with a wait "Inadmissible: Code: text" and none of its tasks is
 * bound (placed: one is), the code its reason and the text its message;
 * once the verdict clears (or the job leaves the queue) False, reason
 * Admissible. Kueue words it the same way. */
static void set_inadmissible(json_t *conds, const struct old_status *old, const char *phase,
                             const char *wait_message, bool placed, const char *now)
{
    static const char prefix[] = "Inadmissible: ";
    const char *w = wait_message;
    const char *code_end =
        w && !strncmp(w, prefix, sizeof(prefix) - 1) ? strstr(w + sizeof(prefix) - 1, ": ") : NULL;
    if (phase && !strcmp(phase, "Queued") && code_end && !placed) {
        const char *code = w + sizeof(prefix) - 1;
        char reason[64];
        snprintf(reason, sizeof(reason), "%.*s", (int)(code_end - code), code);
        set_cond(conds, old, "Inadmissible", "True", reason, code_end + 2, now);
        return;
    }
    const struct gt_api_condition *was = gt_api_condition_find(old->conds, "Inadmissible");
    bool no_verdict = phase && !strcmp(phase, "Queued") && (!w || !*w) && !placed;
    if (was && same_str(was->status, "True") && !no_verdict) {
        set_cond(conds, old, "Inadmissible", "False", "Admissible",
                 "fits the cluster's and its department's capacity", now);
    } else if (was) {
        /* unchanged (no verdict yet, e.g. just after a restart, keeps it) */
        set_cond(conds, old, "Inadmissible", was->status ? was->status : "False",
                 was->reason ? was->reason : "Admissible", was->message ? was->message : "", now);
    }
}

json_t *gt_job_derive_status(const struct gt_api_job *job, const struct gt_api_task *const *tasks,
                             size_t n_tasks, const struct gt_job_decision *d,
                             const char *wait_message, int64_t now_ms)
{
    /* the stored status, whose unchanged parts the new one shares */
    const struct old_status old = {
        .conds = &job->status.conditions,
        .conds_json = gt_api_conditions_json(job->o.json),
        .typed = &job->status,
        .replica_json = gt_json_path(job->o.json, "status.replicaStatuses"),
        .finished = gt_job_finished(job),
    };
    char now[32];
    gt_time_format(now_ms, now, sizeof(now));
    json_t *st = json_object();
    json_t *reps = json_object();
    struct tally t = {0};
    count_tasks(job, &old, tasks, n_tasks, d->generation, &t, reps);
    json_object_set_new(st, "replicaStatuses", reps);

    char msg[512] = "";
    const json_t *fin = NULL;
    const char *reason = NULL;
    const char *phase = pick_phase(&old, &t, d, wait_message, &fin, &reason, msg, sizeof(msg));

    json_t *conds = json_array();
    set_cond(conds, &old, "Created", "True", "Created", "job created", now);
    /* before the phases, so that the last True condition stays the phase */
    bool placed = false;
    for (size_t i = 0; i < n_tasks; i++) {
        placed = placed || tasks[i]->status.phase == GT_TASK_BOUND ||
                 tasks[i]->status.phase == GT_TASK_RUNNING;
    }
    set_inadmissible(conds, &old, phase, wait_message, placed, now);
    for (size_t i = 0; i < GT_ARRAY_LEN(cond_order); i++) {
        const char *type = cond_order[i];
        const struct gt_api_condition *was = gt_api_condition_find(old.conds, type);
        if (phase && !strcmp(type, phase)) {
            if (fin) {
                json_array_append(conds, (json_t *)fin);
            } else {
                set_cond(conds, &old, type, "True", reason ? reason : type, msg, now);
            }
        } else if (was) {
            const char *wr = was->reason, *wm = was->message;
            set_cond(conds, &old, type, "False", wr ? wr : type, wm ? wm : "", now);
        }
    }
    json_object_set_new(st, "conditions", conds);

    const char *start = job->status.start_time;
    bool begun = start != NULL;
    for (size_t i = 0; !begun && i < n_tasks; i++) {
        enum gt_task_phase p = (enum gt_task_phase)tasks[i]->status.phase;
        begun = p == GT_TASK_RUNNING || gt_api_task_phase_terminal(p);
    }
    if (begun) {
        json_object_set_new(st, "startTime", json_string(start ? start : now));
    }
    const char *done = job->status.completion_time;
    if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) {
        json_object_set_new(st, "completionTime", json_string(done ? done : now));
    }
    int64_t restarts = count_of(job->status.restart_count) + (d->begins && d->counted);
    int64_t requeues = count_of(job->status.requeue_count) + (d->begins && !d->counted);
    int64_t pulls = count_of(job->status.image_pull_backoffs) + (d->begins && d->pull_backoff);
    if (restarts || job->status.restart_count != GT_API_UNSET) {
        json_object_set_new(st, "restartCount", json_integer(restarts));
    }
    if (requeues) {
        json_object_set_new(st, "requeueCount", json_integer(requeues));
    }
    if (pulls) {
        json_object_set_new(st, "imagePullBackOffs", json_integer(pulls));
    }
    return st;
}
