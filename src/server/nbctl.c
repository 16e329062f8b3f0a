/*
 * The notebook controller and its idle culler, over the controllers'
 * cache (ctl.c).
 *
 * A Notebook runs as a one-replica Job "nb-<name>" (label
 * gantry.dev/notebook: <name>, the notebook's creator as its creator) so
 * that admission, quota, priority, the scheduler and the agent treat it
 * as any other job; its task is "nb-<name>-worker-0". The job's template
 * is the notebook's, plus: the home volume (spec.volumes "home", the
 * project's Volume spec.home.volume or the hostPath, and its mount), HOME and the working directory
 * at the home's mount path, the notebook's own Jupyter token (JUPYTER_TOKEN: only a reference,
 * valueFrom.gantrySecret notebook-token, is stored; the value is derived
 * from the notebook's name and its job's uid, so each start has a new one,
 * by secrets.c for the agent and here for the proxy and the culler),
 * GANTRY_NOTEBOOK_BASE_URL, a port "http" unless the template
 * names ports (the first one is proxied), and, with neither command nor
 * image, Jupyter: `jupyter notebook` on GANTRY_PORT_HTTP, the port bound
 * at placement, with base_url /projects/P/notebooks/N/.
 *
 *   spec.stopped false:  (no job) -> create job: Pending -> Starting (task
 *                        bound) -> Running (task running) -> Failed (task
 *                        ended on its own)
 *   spec.stopped true:   job being deleted: Stopping -> Stopped, or Culled
 *                        when the culler stopped it (condition Culled)
 *   deleted notebook:    its job is deleted (the home volume stays)
 *
 * Stop deletes the job (deletionTimestamp: the job controller stops the
 * task, whose GPUs are free once its exit is recorded); Start creates a
 * new job on the same home volume.
 *
 * Culling (spec.idle.enabled, default on with GPUs): every
 * --notebook-check-interval-ms each running notebook's Jupyter is asked
 * for its kernels (a busy one is activity) and the node's agent for the
 * task's usage (CPU above --notebook-cpu-idle-milli since the last
 * sample, or any of its GPUs above 0 %, is activity); the proxy reports
 * traffic that is not mere polling, and WebSocket input
 * (gt_nbctl_activity). A notebook idle for its
 * timeout (spec.idle.timeoutSeconds, else the project's annotation
 * gantry.dev/notebook-idle-timeout-seconds, else --notebook-idle-timeout)
 * gets spec.stopped and phase Culled; a Warning Event IdleWarning comes
 * 10 minutes before (half the timeout when that is shorter), and always
 * at least one check before the cull. A check whose
 * questions are not all answered decides nothing: no cull on missing
 * evidence.
 */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/cache.h"
#include "server/events.h"
#include "server/feeder.h"
#include "server/isvcctl.h"
#include "server/nbctl.h"
#include "server/secretkey.h"
#include "server/server_int.h"

#define LABEL_NOTEBOOK "gantry.dev/notebook"
#define ANNOTATION_IDLE_TIMEOUT "gantry.dev/notebook-idle-timeout-seconds"
#define WARN_LEAD_MS (10 * 60 * 1000)
#define PROBE_TIMEOUT_S 10
#define PROBE_BODY_MAX (1024 * 1024)

static const char marker[] = "";
#define MARK ((void *)marker)

/* What the culler knows of one running notebook (not stored). */
struct nb_state {
    char task_uid[64];   /* the run it is about: a new task starts afresh */
    int64_t activity_ms; /* last activity */
    char what[96];       /* what it was */
    bool warned;         /* IdleWarning recorded for this idle stretch */
    unsigned waiting;    /* ASK_* questions of this round not answered yet */
    bool round_ok;       /* every answer of this round came */
    int64_t cpu_ns;      /* the task's CPU time at the last usage answer */
    int64_t cpu_at_ms;   /* when; 0: no sample yet */
};

/* The questions of one check. */
#define ASK_KERNELS 0x1u /* Jupyter: GET api/kernels */
#define ASK_USAGE 0x2u   /* the agent: GET /v1/tasks/{uid}/usage */

struct probe;

struct gt_nbctl {
    struct gt_ctl *c;
    struct gt_strmap dirty; /* notebook keys to reconcile */
    struct gt_strmap state; /* notebook key -> struct nb_state */
    int64_t last_check_ms;
    struct probe *asking; /* probes not answered yet */
    struct probe *spent;  /* answered: freed at the next tick (see probe_done) */
};

static void probes_free(struct probe **list);

struct gt_nbctl *gt_nbctl_new(struct gt_ctl *c)
{
    struct gt_nbctl *nb = gt_xcalloc(1, sizeof(*nb));
    nb->c = c;
    gt_strmap_init(&nb->dirty);
    gt_strmap_init(&nb->state);
    return nb;
}

void gt_nbctl_free(struct gt_nbctl *nb)
{
    if (!nb) {
        return;
    }
    probes_free(&nb->asking); /* their requests go without their callbacks */
    probes_free(&nb->spent);
    gt_strmap_fini(&nb->dirty, NULL);
    gt_strmap_fini(&nb->state, free);
    free(nb);
}

/* ---- names ---- */

static char *nb_key(const char *project, const char *name)
{
    return gt_xasprintf("/notebooks/%s/%s", project, name);
}

static char *job_key(const char *project, const char *name)
{
    return gt_xasprintf("/jobs/%s/" GT_NOTEBOOK_JOB_PREFIX "%s", project, name);
}

static char *task_key(const char *project, const char *name)
{
    return gt_xasprintf("/tasks/%s/" GT_NOTEBOOK_JOB_PREFIX "%s-worker-0", project, name);
}

static char *base_url(const char *project, const char *name)
{
    return gt_xasprintf("/projects/%s/notebooks/%s/", project, name);
}

/* The notebook a job or task name belongs to ("nb-x" or "nb-x-worker-0" -> "x"), or NULL. */
static char *notebook_of(const char *job)
{
    size_t n = strlen(GT_NOTEBOOK_JOB_PREFIX);
    return job && !strncmp(job, GT_NOTEBOOK_JOB_PREFIX, n) && job[n] ? gt_xstrdup(job + n) : NULL;
}

void gt_nbctl_event(struct gt_nbctl *nb, enum gt_kind kind, const char *key,
                    const struct gt_api_object *obj)
{
    char *name = NULL;
    if (kind == GT_KIND_NOTEBOOK) {
        gt_strmap_put(&nb->dirty, key, MARK);
        return;
    }
    if (kind == GT_KIND_JOB && obj) {
        name = notebook_of(obj->meta.name);
    } else if (kind == GT_KIND_TASK && obj) {
        name = notebook_of(((const struct gt_api_task *)obj)->spec.job);
    }
    if (name) {
        char *k = nb_key(obj->meta.project, name);
        gt_strmap_put(&nb->dirty, k, MARK);
        free(k);
        free(name);
    }
}

/* ---- the job of a notebook ---- */

static void env_set(json_t *env, const char *name, const char *value)
{
    if (!gt_json_find(env, "name", name)) {
        json_array_append_new(env, json_pack("{s:s, s:s}", "name", name, "value", value));
    }
}

/* The Jupyter command: the port is the one bound at placement. */
static json_t *jupyter_command(const char *base, const char *dir)
{
    char *line = gt_xasprintf("exec jupyter notebook --no-browser --ip=0.0.0.0 "
                              "--port=\"$GANTRY_PORT_HTTP\" --port-retries=0 "
                              "--NotebookApp.base_url=%s --NotebookApp.allow_origin='*' "
                              "--notebook-dir=%s",
                              base, dir);
    json_t *cmd = json_pack("[s, s, s]", "/bin/sh", "-c", line);
    free(line);
    return cmd;
}

/* The job that runs nbk (new, validated), or NULL with err. */
static json_t *build_job(struct gt_ctl *c, const struct gt_api_notebook *nbk, struct gt_err *err)
{
    const char *project = nbk->o.meta.project, *name = nbk->o.meta.name;
    json_t *spec = json_object_get(nbk->o.json, "spec");
    json_t *tmpl = json_deep_copy(json_object_get(spec, "template"));
    if (!json_is_object(tmpl)) {
        json_decref(tmpl);
        tmpl = json_object();
    }
    char *base = base_url(project, name);
    const char *home = nbk->spec.has_home ? nbk->spec.home.mount_path : NULL;
    json_t *env = json_object_get(tmpl, "env");
    if (!json_is_array(env)) {
        env = json_array();
        json_object_set_new(tmpl, "env", env);
    }
    /* the token is the derived one, whatever the template said */
    size_t i;
    json_t *e;
    json_array_foreach(env, i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "name")), "JUPYTER_TOKEN")) {
            json_array_remove(env, i);
            break;
        }
    }
    json_array_append_new(env, json_pack("{s:s, s:{s:s}}", "name", "JUPYTER_TOKEN", "valueFrom",
                                         "gantrySecret", GT_API_SECRET_NOTEBOOK_TOKEN));
    env_set(env, "GANTRY_NOTEBOOK_BASE_URL", base);
    if (home) {
        env_set(env, "HOME", home);
        if (!json_object_get(tmpl, "workingDir")) {
            json_object_set_new(tmpl, "workingDir", json_string(home));
        }
        json_t *mounts = json_object_get(tmpl, "volumeMounts");
        if (!json_is_array(mounts)) {
            mounts = json_array();
            json_object_set_new(tmpl, "volumeMounts", mounts);
        }
        json_array_append_new(mounts, json_pack("{s:s, s:s}", "name", "home", "mountPath", home));
    }
    if (json_array_size(json_object_get(tmpl, "ports")) == 0) {
        json_object_set_new(tmpl, "ports",
                            json_pack("[{s:s, s:i}]", "name", "http", "containerPort", 8888));
    }
    if (!json_object_get(tmpl, "image") && json_array_size(json_object_get(tmpl, "command")) == 0) {
        json_object_set_new(tmpl, "command", jupyter_command(base, home ? home : "/tmp"));
    }
    free(base);
    json_t *md = json_pack("{s:s+, s:s, s:{s:s}}", "name", GT_NOTEBOOK_JOB_PREFIX, name, "project",
                           project, "labels", LABEL_NOTEBOOK, name);
    char uid[40], ts[32];
    gt_uuid4(&c->s->uuids, uid, sizeof(uid));
    json_object_set_new(md, "uid", json_string(uid));
    json_object_set_new(md, "creationTimestamp",
                        json_string(gt_time_format(gt_now_ms(), ts, sizeof(ts))));
    json_t *creator = json_object_get(json_object_get(nbk->o.json, "metadata"), "creator");
    if (creator) {
        json_object_set(md, "creator", creator);
    }
    json_t *run_policy = json_pack("{s:i}", "backoffLimit", 0);
    if (nbk->spec.priority_class) {
        json_object_set_new(run_policy, "schedulingPolicy",
                            json_pack("{s:s}", "priorityClass", nbk->spec.priority_class));
    }
    json_t *jspec =
        json_pack("{s:{s:{s:i, s:s, s:o}}, s:o}", "replicaSpecs", "Worker", "replicas", 1,
                  "restartPolicy", "Never", "template", tmpl, "runPolicy", run_policy);
    if (home) {
        const char *vol = nbk->spec.home.volume;
        json_object_set_new(jspec, "volumes",
                            json_pack("[{s:s, s:s}]", "name", "home", vol ? "volume" : "hostPath",
                                      vol ? vol : nbk->spec.home.host_path));
    }
    json_t *job = json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", GT_API_VERSION, "kind", "Job",
                            "metadata", md, "spec", jspec);
    if (gt_api_validate(GT_KIND_JOB, job, err)) {
        gt_err_prefix(err, "the notebook's Job");
        json_decref(job);
        return NULL;
    }
    return job;
}

/* ---- status ---- */

static const struct gt_api_notebook *cobj_nb(const struct gt_cobj *o)
{
    return (const struct gt_api_notebook *)o->t;
}

/* Set condition type of conds (a JSON array, modified) to status with
 * reason and message, keeping its transition time when status is unchanged. */
static void cond_set(json_t *conds, const json_t *old, const char *type, bool status,
                     const char *reason, const char *message)
{
    const char *s = status ? "True" : "False";
    const json_t *was = gt_json_find(old, "type", type);
    const char *ts = json_string_value(json_object_get(was, "lastTransitionTime"));
    char now[32];
    if (!ts || strcmp(json_string_value(json_object_get(was, "status")), s) != 0) {
        ts = gt_time_format(gt_now_ms(), now, sizeof(now));
    }
    json_t *cnd = json_pack("{s:s, s:s, s:s, s:s}", "type", type, "status", s, "reason", reason,
                            "lastTransitionTime", ts);
    if (message && *message) {
        json_object_set_new(cnd, "message", json_string(message));
    }
    json_array_append_new(conds, cnd);
}

struct derived {
    enum gt_notebook_phase phase;
    const char *reason;
    char message[320];
};

static void derive(const struct gt_ctl *c, const struct gt_api_notebook *nbk,
                   const struct gt_cobj *jo, const struct gt_cobj *to, struct derived *d)
{
    const struct gt_api_task *task = to ? gt_cobj_task(to) : NULL;
    bool culled = gt_api_condition_true(&nbk->status.conditions, "Culled");
    d->message[0] = '\0';
    if (nbk->spec.stopped) {
        d->phase = jo ? GT_NB_STOPPING : culled ? GT_NB_CULLED : GT_NB_STOPPED;
        d->reason = jo ? "Stopping" : culled ? "Culled" : "Stopped";
        return;
    }
    if (!jo || gt_cobj_job(jo)->o.meta.deletion_timestamp) {
        d->phase = jo ? GT_NB_STOPPING : GT_NB_PENDING;
        d->reason = jo ? "Restarting" : "Creating";
        return;
    }
    enum gt_task_phase p = task ? (enum gt_task_phase)task->status.phase : GT_TASK_PENDING;
    if (!task || (p == GT_TASK_PENDING && !task->spec.node_name)) {
        const char *wait = gt_feed_wait(c, jo->key);
        d->phase = GT_NB_PENDING;
        d->reason = "Waiting";
        snprintf(d->message, sizeof(d->message), "%s", wait ? wait : "waiting to be scheduled");
    } else if (p == GT_TASK_PENDING || p == GT_TASK_BOUND) {
        d->phase = GT_NB_STARTING;
        d->reason = "Starting";
    } else if (p == GT_TASK_RUNNING) {
        d->phase = task->spec.has_stop ? GT_NB_STOPPING : GT_NB_RUNNING;
        d->reason = task->spec.has_stop ? "Stopping" : "Running";
    } else if (p == GT_TASK_TERMINATING) {
        d->phase = GT_NB_STOPPING;
        d->reason = "Stopping";
    } else {
        d->phase = GT_NB_FAILED;
        d->reason = task->status.reason ? task->status.reason : "Exited";
        snprintf(d->message, sizeof(d->message), "the notebook's task ended (exit code %lld)%s%s",
                 (long long)(task->status.exit_code == GT_API_UNSET ? -1 : task->status.exit_code),
                 task->status.message ? ": " : "",
                 task->status.message ? task->status.message : "");
    }
}

/* Write the notebook's status (new reference st, taken) if it differs and
 * no write to it is in flight. */
static void write_status(struct gt_ctl *c, const struct gt_cobj *o, json_t *st)
{
    if (gt_ctl_busy(c, o->key)) {
        json_decref(st);
        return;
    }
    gt_ctl_write_status(c, o, st);
}

/* The status of nbk: phase and conditions derived, url and task, the
 * culler's lastActivity kept (st, when the culler knows more). */
static json_t *status_of(const struct gt_ctl *c, const struct gt_api_notebook *nbk,
                         const struct gt_cobj *jo, const struct gt_cobj *to,
                         const struct nb_state *ns, const char *build_error)
{
    struct derived d;
    derive(c, nbk, jo, to, &d);
    if (build_error) {
        d.phase = GT_NB_FAILED;
        d.reason = "InvalidTemplate";
        snprintf(d.message, sizeof(d.message), "%.*s", (int)sizeof(d.message) - 1, build_error);
    }
    const json_t *old = json_object_get(nbk->o.json, "status");
    const json_t *old_conds = json_object_get(old, "conditions");
    json_t *st = json_object();
    gt_obj_set_str(st, "phase", gt_api_notebook_phase_name(d.phase));
    char *url = base_url(nbk->o.meta.project, nbk->o.meta.name);
    gt_obj_set_str(st, "url", url);
    free(url);
    if (to && !nbk->spec.stopped) {
        gt_obj_set_str(st, "task", gt_cobj_task(to)->o.meta.name);
    }
    char ts[32];
    if (ns && ns->activity_ms) {
        gt_obj_set_str(st, "lastActivityTime", gt_time_format(ns->activity_ms, ts, sizeof(ts)));
        gt_obj_set_str(st, "lastActivity", ns->what);
    } else {
        const char *t = json_string_value(json_object_get(old, "lastActivityTime"));
        const char *w = json_string_value(json_object_get(old, "lastActivity"));
        if (t) {
            gt_obj_set_str(st, "lastActivityTime", t);
        }
        if (w) {
            gt_obj_set_str(st, "lastActivity", w);
        }
    }
    const char *warn = json_string_value(json_object_get(old, "idleWarningTime"));
    if (warn && ns && ns->warned && d.phase == GT_NB_RUNNING) {
        gt_obj_set_str(st, "idleWarningTime", warn);
    }
    json_t *conds = json_array();
    cond_set(conds, old_conds, "Ready", d.phase == GT_NB_RUNNING, d.reason, d.message);
    const json_t *culled = gt_json_find(old_conds, "type", "Culled");
    if (culled && nbk->spec.stopped) {
        json_array_append(conds, (json_t *)culled);
    } else if (culled) {
        cond_set(conds, old_conds, "Culled", false, "Started", NULL);
    }
    json_object_set_new(st, "conditions", conds);
    return st;
}

static void reconcile_one(struct gt_nbctl *nb, const char *key)
{
    struct gt_ctl *c = nb->c;
    /* key: /notebooks/<project>/<name> */
    const char *pstart = key + strlen("/notebooks/");
    const char *slash = strchr(pstart, '/');
    if (!slash) {
        return;
    }
    char *project = gt_xstrndup(pstart, (size_t)(slash - pstart));
    const char *name = slash + 1;
    char *jk = job_key(project, name), *tk = task_key(project, name);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_NOTEBOOK, key);
    const struct gt_cobj *jo = gt_ctl_get(c, GT_KIND_JOB, jk);
    const struct gt_cobj *to = gt_ctl_get(c, GT_KIND_TASK, tk);
    if (jo && !json_object_get(gt_cobj_job(jo)->o.meta.labels, LABEL_NOTEBOOK)) {
        jo = NULL, to = NULL; /* someone else's job of that name */
    }
    if (to && jo &&
        strcmp(gt_cobj_task(to)->spec.job ? gt_cobj_task(to)->spec.job : "",
               gt_cobj_job(jo)->o.meta.name) != 0) {
        to = NULL;
    }
    char errbuf[512] = "";
    if (!o) {
        if (jo) {
            gt_ctl_delete_job(c, jo);
        }
        free(gt_strmap_del(&nb->state, key));
    } else if (!gt_ctl_busy(c, key)) {
        const struct gt_api_notebook *nbk = cobj_nb(o);
        if (nbk->spec.stopped && jo) {
            gt_ctl_delete_job(c, jo);
        } else if (!nbk->spec.stopped && !jo && !gt_ctl_busy(c, jk)) {
            struct gt_err err = {0};
            json_t *job = build_job(c, nbk, &err);
            if (job) {
                gt_ctl_write(c, GT_STORE_CREATE, jk, job, 0, NULL, NULL);
                json_decref(job);
            } else {
                snprintf(errbuf, sizeof(errbuf), "%s", err.msg);
            }
        }
        struct nb_state *ns = gt_strmap_get(&nb->state, key);
        write_status(c, o, status_of(c, nbk, jo, to, ns, errbuf[0] ? errbuf : NULL));
    }
    free(jk);
    free(tk);
    free(project);
}

struct keys GT_VEC(char *);

static int collect_cb(const char *key, void *val, void *arg)
{
    (void)val;
    *GT_VEC_PUSH((struct keys *)arg, 16) = gt_xstrdup(key);
    return 0;
}

void gt_nbctl_reconcile(struct gt_nbctl *nb)
{
    struct keys k = {0};
    gt_strmap_each(&nb->dirty, collect_cb, &k);
    gt_strmap_fini(&nb->dirty, NULL);
    gt_strmap_init(&nb->dirty);
    for (size_t i = 0; i < k.n; i++) {
        reconcile_one(nb, k.v[i]);
        free(k.v[i]);
    }
    GT_VEC_FREE(&k);
}

/* The home Volume is one of nbk's project, and Available unless nbk is stopped. */
static int admit_home_volume(const struct gt_ctl *c, const struct gt_api_notebook *nbk,
                             struct gt_err *err)
{
    const char *name = nbk->spec.home.volume, *project = nbk->o.meta.project;
    char *k = gt_xasprintf("/volumes/%s/%s", project, name);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_VOLUME, k);
    free(k);
    if (!o) {
        return gt_err_set(err, GT_EINVAL, "spec.home.volume: no Volume \"%s\" in project \"%s\"",
                          name, project);
    }
    const struct gt_api_volume_obj *v = (const struct gt_api_volume_obj *)o->t;
    if (v->status.phase != GT_VOLUME_AVAILABLE && !nbk->spec.stopped) {
        return gt_err_set(err, GT_EINVAL, "spec.home.volume: Volume \"%s\" is not Available", name);
    }
    return 0;
}

int gt_nbctl_admit(struct gt_ctl *c, const struct gt_api_notebook *nbk,
                   const struct gt_server_user *user, struct gt_err *err)
{
    const struct gt_config_list *roots = &c->s->cfg->storage_roots;
    if (nbk->spec.has_home && nbk->spec.home.volume) {
        int rc = admit_home_volume(c, nbk, err);
        if (rc) {
            return rc;
        }
    } else if (nbk->spec.has_home && nbk->spec.home.host_path) {
        struct gt_api_volume v = {.name = "home", .host_path = nbk->spec.home.host_path};
        struct gt_api_volumes vols = {.v = &v, .n = 1};
        int rc = gt_job_check_volumes(&vols, roots->items, roots->n, err);
        if (rc) {
            /* the message names spec.volumes[0].hostPath: the notebook's field is spec.home */
            const char *why = strstr(err->msg, ": ");
            char msg[sizeof(err->msg)];
            snprintf(msg, sizeof(msg), "spec.home.hostPath%s", why ? why : ": refused");
            return gt_err_set(err, GT_EINVAL, "%s", msg);
        }
    }
    int64_t run_as = nbk->spec.template.run_as_user;
    if (run_as != GT_API_UNSET && run_as != user->uid &&
        !gt_ctl_project_privileged(c, nbk->o.meta.project)) {
        return gt_err_set(err, GT_EINVAL,
                          "spec.template.runAsUser: must be your own uid (%lld) unless the project "
                          "allows privileged tasks",
                          (long long)user->uid);
    }
    return 0;
}

/* ---- the notebook's token ---- */

/* The token of the notebook project/name run by the job of uid job_uid. */
static void token_of(const struct gt_ctl *c, const char *project, const char *name,
                     const char *job_uid, char hex[65])
{
    char *subject = gt_xasprintf("%s/%s/%s", project, name, job_uid ? job_uid : "");
    gt_secretkey_derive(c->s, GT_API_SECRET_NOTEBOOK_TOKEN, subject, hex);
    free(subject);
}

/* The notebook whose job jo is (its name, borrowed), or NULL. */
static const char *job_notebook(const struct gt_cobj *jo)
{
    const struct gt_api_job *job = gt_cobj_job(jo);
    const char *nb = json_string_value(json_object_get(job->o.meta.labels, LABEL_NOTEBOOK));
    size_t pl = strlen(GT_NOTEBOOK_JOB_PREFIX);
    const char *jn = job->o.meta.name;
    return nb && jn && !strncmp(jn, GT_NOTEBOOK_JOB_PREFIX, pl) && !strcmp(jn + pl, nb) ? nb : NULL;
}

char *gt_nbctl_job_token(const struct gt_ctl *c, const struct gt_cobj *jo, struct gt_err *err)
{
    const char *nb = job_notebook(jo);
    const char *project = gt_cobj_job(jo)->o.meta.project;
    char *k = nb ? nb_key(project, nb) : NULL;
    bool exists = k && gt_ctl_get(c, GT_KIND_NOTEBOOK, k);
    free(k);
    if (!exists) {
        gt_err_set(err, GT_ECONFLICT, "job %s is not a notebook's", gt_cobj_job(jo)->o.meta.name);
        return NULL;
    }
    char hex[65];
    token_of(c, project, nb, gt_cobj_job(jo)->o.meta.uid, hex);
    return gt_xstrdup(hex);
}

/* ---- the proxy's view ---- */

int gt_nbctl_target(const struct gt_ctl *c, const char *project, const char *name,
                    struct gt_nb_target *t, struct gt_err *err)
{
    char *k = nb_key(project, name), *tk = task_key(project, name), *jk = job_key(project, name);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_NOTEBOOK, k);
    const struct gt_cobj *to = gt_ctl_get(c, GT_KIND_TASK, tk);
    const struct gt_cobj *jo = gt_ctl_get(c, GT_KIND_JOB, jk);
    free(k);
    free(tk);
    free(jk);
    if (!o) {
        return gt_err_set(err, GT_ENOTFOUND, "notebook %s/%s not found", project, name);
    }
    const struct gt_api_notebook *nbk = cobj_nb(o);
    const struct gt_api_task *task = to ? gt_cobj_task(to) : NULL;
    if (nbk->spec.stopped || !task || task->status.phase != GT_TASK_RUNNING ||
        task->spec.has_stop || !jo || !job_notebook(jo) || !task->spec.job ||
        strcmp(task->spec.job, gt_cobj_job(jo)->o.meta.name) != 0) {
        return gt_err_set(err, GT_ESTORE, "notebook %s/%s is not running (phase %s)", project, name,
                          gt_api_notebook_phase_name(nbk->status.phase));
    }
    token_of(c, project, name, gt_cobj_job(jo)->o.meta.uid, t->token);
    if (gt_task_endpoint(c, task, t->host, sizeof(t->host), &t->port) != 0) {
        return gt_err_set(err, GT_ESTORE, "notebook %s/%s has no address yet", project, name);
    }
    return 0;
}

static struct nb_state *state_of(struct gt_nbctl *nb, const char *key)
{
    struct nb_state *ns = gt_strmap_get(&nb->state, key);
    if (!ns) {
        ns = gt_xcalloc(1, sizeof(*ns));
        gt_strmap_put(&nb->state, key, ns);
    }
    return ns;
}

static void note_activity(struct nb_state *ns, const char *what, int64_t now_ms)
{
    if (now_ms >= ns->activity_ms) {
        ns->activity_ms = now_ms;
        snprintf(ns->what, sizeof(ns->what), "%s", what);
        ns->warned = false;
    }
}

void gt_nbctl_activity(struct gt_nbctl *nb, const char *project, const char *name, const char *what,
                       int64_t now_ms)
{
    char *k = nb_key(project, name);
    if (gt_ctl_get(nb->c, GT_KIND_NOTEBOOK, k)) {
        note_activity(state_of(nb, k), what, now_ms);
    }
    free(k);
}

bool gt_nb_is_polling(const char *method, const char *path)
{
    static const char *const lists[] = {"/api/status",    "/api/kernels",   "/api/sessions",
                                        "/api/terminals", "/api/contents",  "/api/kernelspecs",
                                        "/api/config",    "/api/nbconvert", "/api/me"};
    if (strcmp(method, "GET") != 0) {
        return false;
    }
    for (size_t i = 0; i < GT_ARRAY_LEN(lists); i++) {
        size_t n = strlen(lists[i]);
        if (!strncmp(path, lists[i], n) && (path[n] == '\0' || path[n] == '/' || path[n] == '?')) {
            return true;
        }
    }
    return false;
}

/* ---- the idle checks ---- */

static int64_t idle_timeout_ms(const struct gt_ctl *c, const struct gt_api_notebook *nbk)
{
    if (nbk->spec.idle.timeout_s != GT_API_UNSET) {
        return nbk->spec.idle.timeout_s * 1000;
    }
    char *pk = gt_xasprintf("/projects/%s", nbk->o.meta.project);
    const struct gt_cobj *po = gt_ctl_get(c, GT_KIND_PROJECT, pk);
    free(pk);
    const char *v = po ? json_string_value(json_object_get(
                             ((const struct gt_api_project *)po->t)->o.meta.annotations,
                             ANNOTATION_IDLE_TIMEOUT))
                       : NULL;
    char *end = NULL;
    long long s = v ? strtoll(v, &end, 10) : 0;
    if (v && end && *end == '\0' && s > 0) {
        return s * 1000;
    }
    return c->s->cfg->notebook_idle_timeout_s * 1000;
}

/* Cull: spec.stopped and the Culled condition in one write, an Event. */
static void cull(struct gt_nbctl *nb, const struct gt_cobj *o, int64_t idle_ms)
{
    struct gt_ctl *c = nb->c;
    const struct nb_state *ns = gt_strmap_get(&nb->state, o->key);
    char msg[256];
    snprintf(msg, sizeof(msg),
             "idle for %llds (last activity: %s); stopped, its GPUs freed and "
             "its home volume kept",
             (long long)(idle_ms / 1000), ns && ns->what[0] ? ns->what : "none");
    json_t *obj = json_deep_copy(o->obj);
    json_object_set_new(json_object_get(obj, "spec"), "stopped", json_true());
    json_t *st = json_object_get(obj, "status");
    if (!json_is_object(st)) {
        st = json_object();
        json_object_set_new(obj, "status", st);
    }
    gt_obj_set_str(st, "phase", "Stopping");
    json_t *conds = json_array();
    json_t *old = json_object_get(st, "conditions");
    size_t i;
    json_t *cnd;
    json_array_foreach(old, i, cnd)
    {
        const char *type = json_string_value(json_object_get(cnd, "type"));
        if (type && strcmp(type, "Culled") != 0) {
            json_array_append(conds, cnd);
        }
    }
    cond_set(conds, NULL, "Culled", true, "IdleTimeout", msg);
    json_object_set_new(st, "conditions", conds);
    if (gt_ctl_write(c, GT_STORE_UPDATE, o->key, obj, o->rev, NULL, NULL) == 0) {
        gt_events_record(c->s->events, o->t, "Normal", "Culled", msg);
        gt_log_info("notebook culled", "key=%s idle_ms=%lld", o->key, (long long)idle_ms);
    }
    json_decref(obj);
}

/* Decide for the notebook at key now that this round's questions were answered. */
static void decide(struct gt_nbctl *nb, const char *key)
{
    struct gt_ctl *c = nb->c;
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_NOTEBOOK, key);
    struct nb_state *ns = gt_strmap_get(&nb->state, key);
    if (!o || !ns || gt_ctl_busy(c, key)) {
        return;
    }
    const struct gt_api_notebook *nbk = cobj_nb(o);
    if (nbk->spec.stopped || !nbk->spec.idle.enabled || nbk->status.phase != GT_NB_RUNNING) {
        return;
    }
    int64_t now = gt_now_ms(), timeout = idle_timeout_ms(c, nbk);
    int64_t idle = now - ns->activity_ms;
    int64_t lead = timeout / 2 < WARN_LEAD_MS ? timeout / 2 : WARN_LEAD_MS;
    /* never a cull without the warning first: a round may come late */
    if (idle >= timeout && ns->warned) {
        cull(nb, o, idle);
        return;
    }
    if (idle >= timeout - lead && !ns->warned) {
        ns->warned = true;
        char msg[256];
        snprintf(msg, sizeof(msg), "idle for %llds: it will be stopped in %llds unless used",
                 (long long)(idle / 1000), (long long)((timeout - idle + 999) / 1000));
        gt_events_record(c->s->events, o->t, "Warning", "IdleWarning", msg);
        json_t *st = json_deep_copy(json_object_get(o->obj, "status"));
        char ts[32];
        gt_obj_set_str(st, "idleWarningTime", gt_time_format(now, ts, sizeof(ts)));
        write_status(c, o, st);
        return;
    }
    gt_strmap_put(&nb->dirty, key, MARK); /* lastActivity into the status */
    gt_ctl_kick(c);
}

/* Jupyter's [{id, execution_state, ...}]: a kernel that is not idle (busy,
 * or still starting with a request queued) is activity. */
static bool on_kernels(struct nb_state *ns, const json_t *kernels)
{
    size_t i;
    json_t *k;
    json_array_foreach(kernels, i, k)
    {
        const char *st = json_string_value(json_object_get(k, "execution_state"));
        if (st && strcmp(st, "idle") != 0) {
            char what[64];
            snprintf(what, sizeof(what), "kernel %.40s", st);
            note_activity(ns, what, gt_now_ms());
        }
    }
    return json_is_array(kernels);
}

/* The agent's {"cpuNanoseconds", "gpus": [{index, utilizationPercent}]}:
 * CPU above --notebook-cpu-idle-milli since the last sample, or any of
 * the task's GPUs above 0 %, is activity. */
static bool on_usage(struct gt_nbctl *nb, const char *key, struct nb_state *ns, const json_t *usage)
{
    const json_t *cpu = json_object_get(usage, "cpuNanoseconds");
    if (!json_is_integer(cpu)) {
        return false;
    }
    int64_t now = gt_now_ms(), ns_now = json_integer_value(cpu);
    if (ns->cpu_at_ms && now > ns->cpu_at_ms && ns_now > ns->cpu_ns) {
        int64_t milli = (ns_now - ns->cpu_ns) / (now - ns->cpu_at_ms) / 1000;
        if (milli > nb->c->s->cfg->notebook_cpu_idle_milli) {
            char what[64];
            snprintf(what, sizeof(what), "cpu %lldm", (long long)milli);
            note_activity(ns, what, now);
        }
    }
    ns->cpu_ns = ns_now;
    ns->cpu_at_ms = now;
    const struct gt_cobj *o = gt_ctl_get(nb->c, GT_KIND_NOTEBOOK, key);
    char *tk = o ? task_key(o->t->meta.project, o->t->meta.name) : NULL;
    const struct gt_cobj *to = tk ? gt_ctl_get(nb->c, GT_KIND_TASK, tk) : NULL;
    free(tk);
    const struct gt_api_task *task = to ? gt_cobj_task(to) : NULL;
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(usage, "gpus"), i, g)
    {
        int64_t index = json_integer_value(json_object_get(g, "index"));
        int64_t util = json_integer_value(json_object_get(g, "utilizationPercent"));
        for (size_t k = 0; task && k < task->spec.gpus.n; k++) {
            if (task->spec.gpus.v[k].index == index && util > 0) {
                char what[64];
                snprintf(what, sizeof(what), "gpu %lld at %lld%%", (long long)index,
                         (long long)util);
                note_activity(ns, what, now);
            }
        }
    }
    return true;
}

/* One question in flight, on a connection of its own. The probe owns the
 * connection: libevent's free-on-completion does not free a connection
 * whose connect failed (a Jupyter not listening yet), and a connection
 * cannot be freed inside its own callback, so an answered probe waits on
 * nb->spent for the next tick. */
struct probe {
    struct gt_nbctl *nb;
    struct probe *next, **pprev; /* on nb->asking, then nb->spent */
    struct evhttp_connection *conn;
    char *key;
    unsigned ask;
    bool answered; /* probe_done ran: it is on nb->spent */
};

static void probe_link(struct probe *p, struct probe **list)
{
    p->next = *list;
    if (p->next) {
        p->next->pprev = &p->next;
    }
    p->pprev = list;
    *list = p;
}

static void probe_unlink(struct probe *p)
{
    *p->pprev = p->next;
    if (p->next) {
        p->next->pprev = p->pprev;
    }
}

static void probes_free(struct probe **list)
{
    while (*list) {
        struct probe *p = *list;
        probe_unlink(p);
        evhttp_connection_free(p->conn);
        free(p->key);
        free(p);
    }
}

static void probe_done(struct evhttp_request *req, void *arg)
{
    struct probe *p = arg;
    p->answered = true;
    probe_unlink(p);
    probe_link(p, &p->nb->spent);
    struct nb_state *ns = gt_strmap_get(&p->nb->state, p->key);
    if (ns) {
        json_t *body = NULL;
        if (req && evhttp_request_get_response_code(req) == 200) {
            struct evbuffer *in = evhttp_request_get_input_buffer(req);
            size_t len = evbuffer_get_length(in);
            body = len <= PROBE_BODY_MAX
                       ? json_loadb((const char *)evbuffer_pullup(in, -1), len, 0, NULL)
                       : NULL;
        }
        bool ok = body && (p->ask == ASK_KERNELS ? on_kernels(ns, body)
                                                 : on_usage(p->nb, p->key, ns, body));
        json_decref(body);
        ns->round_ok = ns->round_ok && ok;
        ns->waiting &= ~p->ask;
        if (!ns->waiting && ns->round_ok) {
            decide(p->nb, p->key);
        }
    }
}

/* Ask host:port for uri with the Authorization value auth; the answer goes
 * to probe_done. false if the question could not be sent. */
static bool ask(struct gt_nbctl *nb, const char *key, unsigned what, const char *host, int port,
                const char *uri, const char *auth)
{
    struct evhttp_connection *conn =
        evhttp_connection_base_new(nb->c->s->base, NULL, host, (unsigned short)port);
    if (!conn) {
        return false;
    }
    evhttp_connection_set_timeout(conn, PROBE_TIMEOUT_S);
    struct probe *p = gt_xcalloc(1, sizeof(*p));
    p->nb = nb;
    p->conn = conn;
    p->key = gt_xstrdup(key);
    p->ask = what;
    struct evhttp_request *req = evhttp_request_new(probe_done, p);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Authorization", auth);
    evhttp_add_header(h, "Host", host);
    probe_link(p, &nb->asking);
    if (evhttp_make_request(conn, req, EVHTTP_REQ_GET, uri) != 0) {
        if (!p->answered) {
            probe_unlink(p);
            probe_link(p, &nb->spent);
        }
        return false;
    }
    return true;
}

/* Start a round: Jupyter's kernels and the agent's usage of the task. */
static void probe(struct gt_nbctl *nb, const char *key, const struct gt_api_notebook *nbk,
                  const struct gt_api_task *task, struct nb_state *ns)
{
    struct gt_ctl *c = nb->c;
    struct gt_nb_target t;
    if (gt_nbctl_target(c, nbk->o.meta.project, nbk->o.meta.name, &t, NULL)) {
        return;
    }
    char *nk = gt_xasprintf("/nodes/%s", task->spec.node_name);
    const struct gt_cobj *no = gt_ctl_get(c, GT_KIND_NODE, nk);
    free(nk);
    const char *url = no ? gt_api_node_address(gt_cobj_node(no), "AgentURL") : NULL;
    const struct gt_server_user *nu = gt_server_tokens_first_node(c->s->tokens);
    char agent_host[64];
    int agent_port = 0;
    if (!url || !nu || sscanf(url, "http://%63[^:/]:%d", agent_host, &agent_port) != 2) {
        return; /* no usage: no decision */
    }
    ns->waiting = ASK_KERNELS | ASK_USAGE;
    ns->round_ok = true;
    char auth[160];
    snprintf(auth, sizeof(auth), "token %s", t.token);
    char *uri = gt_xasprintf("/projects/%s/notebooks/%s/api/kernels?no_track_activity=1",
                             nbk->o.meta.project, nbk->o.meta.name);
    if (!ask(nb, key, ASK_KERNELS, t.host, t.port, uri, auth)) {
        ns->waiting &= ~ASK_KERNELS;
        ns->round_ok = false;
    }
    free(uri);
    snprintf(auth, sizeof(auth), "Bearer %s", nu->token);
    uri = gt_xasprintf("/v1/tasks/%s/usage", task->o.meta.uid);
    if (!ask(nb, key, ASK_USAGE, agent_host, agent_port, uri, auth)) {
        ns->waiting &= ~ASK_USAGE;
        ns->round_ok = false;
    }
    free(uri);
}

static void check_one(struct gt_nbctl *nb, const struct gt_cobj *o, int64_t now)
{
    const struct gt_api_notebook *nbk = cobj_nb(o);
    char *tk = task_key(nbk->o.meta.project, nbk->o.meta.name);
    const struct gt_cobj *to = gt_ctl_get(nb->c, GT_KIND_TASK, tk);
    free(tk);
    if (nbk->spec.stopped || nbk->status.phase != GT_NB_RUNNING || !to) {
        free(gt_strmap_del(&nb->state, o->key));
        return;
    }
    const char *uid = gt_cobj_task(to)->o.meta.uid;
    struct nb_state *ns = state_of(nb, o->key);
    if (!uid || strcmp(ns->task_uid, uid) != 0) {
        /* a new run: idle counts from its start */
        snprintf(ns->task_uid, sizeof(ns->task_uid), "%s", uid ? uid : "");
        note_activity(ns, "started", now);
        ns->cpu_at_ms = 0;
    }
    if (nbk->spec.idle.enabled && !ns->waiting && uid) {
        probe(nb, o->key, nbk, gt_cobj_task(to), ns);
    }
}

static int check_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct gt_nbctl *nb = arg;
    check_one(nb, val, gt_now_ms());
    return 0;
}

void gt_nbctl_tick(struct gt_nbctl *nb)
{
    probes_free(&nb->spent);
    int64_t now = gt_now_ms();
    if (now - nb->last_check_ms < nb->c->s->cfg->notebook_check_ms) {
        return;
    }
    nb->last_check_ms = now;
    gt_strmap_each(&nb->c->objs[GT_KIND_NOTEBOOK], check_cb, nb);
}
