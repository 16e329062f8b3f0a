/*
 * The controllers' cache of stored objects and their writes, the layer the
 * controllers (feeder.c, jobctl.c, nodes.c) and the transport read and
 * write through: every stored object but Events, decoded once when cached,
 * kept current by ctl.c from the server's watch on all keys; the writes
 * controllers make (conditional on the cached revision, one in flight per
 * key); the dirty sets and the kick that runs the reconcilers (ctl.c) at
 * the end of the loop turn. Cached objects never change: a write replaces
 * the entry.
 *
 * An object this process wrote (controllers' writes, and the API's through
 * gt_ctl_written) is cached as the JSON value it encoded, not parsed back
 * from the watch event's text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/cache.h"
#include "server/server_int.h"
#include "server/storeio.h"

static const char marker[] = "";
#define MARK ((void *)marker)

void gt_cobj_free(void *p)
{
    struct gt_cobj *o = p;
    if (o) {
        free(o->key);
        gt_api_object_free(o->t);
        json_decref(o->obj);
        free(o);
    }
}

const struct gt_cobj *gt_ctl_get(const struct gt_ctl *c, enum gt_kind kind, const char *key)
{
    return c ? gt_strmap_get(&c->objs[kind], key) : NULL;
}

bool gt_ctl_busy(const struct gt_ctl *c, const char *key)
{
    return gt_strmap_get(&c->inflight, key) != NULL;
}

static const struct gt_api_project *project_obj(const struct gt_ctl *c, const char *project)
{
    char key[96];
    snprintf(key, sizeof(key), "/projects/%s", project ? project : "");
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_PROJECT, key);
    return o ? (const struct gt_api_project *)o->t : NULL;
}

bool gt_ctl_project_privileged(const struct gt_ctl *c, const char *project)
{
    const struct gt_api_project *p = project_obj(c, project);
    return p && p->spec.allow_privileged;
}

bool gt_ctl_project_stop_idle(const struct gt_ctl *c, const char *project)
{
    const struct gt_api_project *p = project_obj(c, project);
    return p && p->spec.stop_idle_gpu_jobs;
}

const char *gt_ctl_project_department(const struct gt_ctl *c, const char *project)
{
    const struct gt_api_project *p = project_obj(c, project);
    return p ? p->spec.department : NULL;
}

void gt_ctl_kick(struct gt_ctl *c)
{
    if (c->kick) {
        event_active(c->kick, EV_TIMEOUT, 0); /* no-op while already active */
    }
}

static void mark_job(struct gt_ctl *c, const char *project, const char *job)
{
    if (!project || !job) {
        return;
    }
    char *key = gt_xasprintf("/jobs/%s/%s", project, job);
    gt_strmap_put(&c->dirty_jobs, key, MARK);
    free(key);
}

void gt_ctl_mark_job(struct gt_ctl *c, const char *project, const char *job)
{
    mark_job(c, project, job);
    gt_ctl_kick(c);
}

const struct gt_cobj *gt_ctl_task_job(const struct gt_ctl *c, const struct gt_api_task *task)
{
    char key[512];
    int n = task->o.meta.project && task->spec.job
                ? snprintf(key, sizeof(key), "/jobs/%s/%s", task->o.meta.project, task->spec.job)
                : -1;
    return n > 0 && (size_t)n < sizeof(key) ? gt_ctl_get(c, GT_KIND_JOB, key) : NULL;
}

void gt_ctl_mark_task_job(struct gt_ctl *c, const struct gt_api_task *task)
{
    gt_ctl_mark_job(c, task->o.meta.project, task->spec.job);
}

/* ---- writes ---- */

struct wctx {
    struct gt_ctl *c;
    char *key;
    json_t *obj; /* what is written (a reference), NULL for DELETE */
    enum gt_kind kind;
    enum gt_store_op op;
    gt_ctl_done_fn done;
    void *arg;
    int64_t submit_ns;
};

static void inflight_add(struct gt_ctl *c, const char *key, intptr_t d)
{
    intptr_t n = (intptr_t)gt_strmap_get(&c->inflight, key) + d;
    if (n > 0) {
        gt_strmap_put(&c->inflight, key, (void *)n);
    } else {
        gt_strmap_del(&c->inflight, key);
    }
}

/* On a store other replicas write too, the watch may bring this write's
 * event only after other writers' earlier ones; meanwhile a reconcile would
 * read the object as it was before the write and undo in the scheduler
 * model what the write did (a bind). So the write goes into the cache at
 * once, as its event would, and gt_ctl_event passes over events of the
 * key that are not newer (a delete leaves its revision in c->gone). */
static void apply_own(struct gt_ctl *c, const struct wctx *w, int64_t rev)
{
    const struct gt_kind_info *ki = gt_kind_get(w->kind);
    if (!ki || w->kind == GT_KIND_EVENT) {
        return;
    }
    struct gt_store_event ev = {
        .type = w->op == GT_STORE_DELETE ? GT_STORE_EV_DELETE : GT_STORE_EV_PUT,
        .created = w->op == GT_STORE_CREATE,
        .key = w->key,
        .value = "",
        .mod_rev = rev,
        .create_rev = w->op == GT_STORE_CREATE ? rev : 0,
    };
    if (w->op == GT_STORE_DELETE) {
        gt_strmap_put(&c->gone, w->key, (void *)(intptr_t)rev);
    }
    c->event(c, ki, &ev);
}

/* A controller write of key ended with rc (or was refused before it was
 * submitted): its task (and the task's job) or its job is reconciled
 * again at the next kick, so a failed write is made anew and a done one's
 * effects are followed. Kicks nothing itself. */
static void mark_written(struct gt_ctl *c, enum gt_kind kind, const char *key, int rc)
{
    const struct gt_cobj *o = gt_ctl_get(c, kind, key);
    if (kind == GT_KIND_TASK) {
        gt_strmap_put(&c->dirty_tasks, key, MARK);
        if (o) {
            const struct gt_api_task *t = gt_cobj_task(o);
            mark_job(c, t->o.meta.project, t->spec.job);
        }
    } else if (kind == GT_KIND_JOB) {
        /* a settled write is caught up by its watch event (gt_ctl_event) */
        if (rc) {
            gt_strmap_del(&c->settled, key);
        }
        if (!gt_strmap_get(&c->settled, key)) {
            gt_strmap_put(&c->dirty_jobs, key, MARK);
        }
    }
}

static void write_done(int rc, int64_t rev, const struct gt_err *err, void *arg)
{
    struct wctx *w = arg;
    struct gt_ctl *c = w->c;
    gt_server_write_done(c->s, rc, w->submit_ns);
    inflight_add(c, w->key, -1);
    if (rc == 0 && w->obj) {
        gt_ctl_written(c, w->kind, w->key, rev, w->obj);
    }
    if (rc == 0 && gt_store_feeding(c->s->store)) {
        apply_own(c, w, rev);
    }
    json_decref(w->obj);
    if (rc && rc != GT_ECONFLICT && rc != GT_EEXISTS && rc != GT_ENOTFOUND) {
        gt_log_warn("controller write failed", "key=%s err=\"%s\"", w->key,
                    err && err->msg[0] ? err->msg : gt_errcode_str(rc));
    }
    if (w->done) {
        w->done(c, rc, w->arg);
    }
    mark_written(c, w->kind, w->key, rc);
    gt_ctl_kick(c);
    free(w->key);
    free(w);
}

/* The kind whose objects live under key's first segment ("/jobs/p/n"). */
static enum gt_kind kind_of_key(const char *key)
{
    char plural[32];
    const char *end = strchr(key + 1, '/');
    size_t n = end ? (size_t)(end - key - 1) : 0;
    const struct gt_kind_info *k = NULL;
    if (n > 0 && n < sizeof(plural)) {
        memcpy(plural, key + 1, n);
        plural[n] = '\0';
        k = gt_kind_by_plural(plural);
    }
    return k ? k->kind : GT_KIND_EVENT;
}

int gt_ctl_write(struct gt_ctl *c, enum gt_store_op op, const char *key, json_t *obj,
                 int64_t expected_rev, gt_ctl_done_fn done, void *arg)
{
    size_t len = 0;
    char *text = obj && op != GT_STORE_DELETE ? gt_api_encode(obj, &len) : NULL;
    struct wctx *w = gt_xcalloc(1, sizeof(*w));
    w->c = c;
    w->key = gt_xstrdup(key);
    w->obj = text ? json_incref(obj) : NULL;
    w->kind = kind_of_key(key);
    w->op = op;
    w->done = done;
    w->arg = arg;
    w->submit_ns = gt_now_ns();
    int rc = gt_server_write(c->s, true, op, key, text, len,
                             op == GT_STORE_CREATE ? 0 : expected_rev, write_done, w);
    free(text);
    if (rc) {
        /* refused at once (a store fault, or one closing or failed): tried
         * again at the next tick's kick, not in this loop turn */
        mark_written(c, w->kind, key, rc);
        json_decref(w->obj);
        free(w->key);
        free(w);
        return rc;
    }
    inflight_add(c, key, 1);
    return 0;
}

void gt_ctl_write_status(struct gt_ctl *c, const struct gt_cobj *o, json_t *st)
{
    if (json_equal(st, json_object_get(o->obj, "status"))) {
        json_decref(st);
        return;
    }
    json_t *obj = json_deep_copy(o->obj);
    json_object_set_new(obj, "status", st);
    gt_ctl_write(c, GT_STORE_UPDATE, o->key, obj, o->rev, NULL, NULL);
    json_decref(obj);
}

/* ---- the cache ---- */

/* A committed write whose watch event has not arrived yet. */
struct fresh {
    int64_t rev;
    json_t *obj;
};

void gt_ctl_fresh_free(void *p)
{
    struct fresh *f = p;
    if (f) {
        json_decref(f->obj);
        free(f);
    }
}

void gt_ctl_written(struct gt_ctl *c, enum gt_kind kind, const char *key, int64_t rev, json_t *obj)
{
    if (!c || !obj || kind == GT_KIND_EVENT) {
        return;
    }
    struct fresh *f = gt_xmalloc(sizeof(*f));
    f->rev = rev;
    f->obj = json_incref(obj);
    gt_ctl_fresh_free(gt_strmap_put(&c->fresh, key, f));
}

json_t *gt_ctl_take_fresh(struct gt_ctl *c, const char *key, int64_t rev)
{
    struct fresh *f = gt_strmap_del(&c->fresh, key);
    json_t *obj = NULL;
    if (f && f->rev == rev) {
        obj = json_incref(f->obj);
    }
    gt_ctl_fresh_free(f);
    return obj;
}

/* ---- c->holding and its index by node, c->holding_on ---- */

void gt_ctl_holding_map_free(void *p)
{
    struct gt_strmap *m = p;
    if (m) {
        gt_strmap_fini(m, NULL);
        free(m);
    }
}

/* Count task t's run in (sign 1) or out of (-1) its job's c->holding_jobs
 * entry: a task of a job, with a boundTime. */
static void run_sum_add(struct gt_ctl *c, const struct gt_api_task *t, int sign)
{
    int64_t bound_ms;
    if (!t->spec.job || !t->status.bound_time || gt_time_parse(t->status.bound_time, &bound_ms)) {
        return;
    }
    int64_t milli = 0;
    for (size_t i = 0; i < t->spec.gpus.n; i++) {
        milli += t->spec.gpus.v[i].milli == GT_API_UNSET ? 1000 : t->spec.gpus.v[i].milli;
    }
    char id[600];
    snprintf(id, sizeof(id), "%s/%s", t->o.meta.project, t->spec.job);
    struct gt_run_sum *sum = gt_strmap_get(&c->holding_jobs, id);
    if (!sum) {
        sum = gt_xcalloc(1, sizeof(*sum));
        gt_strmap_put(&c->holding_jobs, id, sum);
    }
    sum->tasks += sign;
    sum->milli += sign * milli;
    sum->milli_bound += (__int128)sign * milli * bound_ms;
    if (sum->tasks <= 0) {
        free(gt_strmap_del(&c->holding_jobs, id));
    }
}

static void holding_add(struct gt_ctl *c, const char *key, const struct gt_cobj *o)
{
    gt_strmap_put(&c->holding, key, (void *)o);
    run_sum_add(c, gt_cobj_task(o), 1);
    const char *node = gt_cobj_task(o)->spec.node_name;
    if (!node) {
        return;
    }
    struct gt_strmap *m = gt_strmap_get(&c->holding_on, node);
    if (!m) {
        m = gt_xcalloc(1, sizeof(*m));
        gt_strmap_init(m);
        gt_strmap_put(&c->holding_on, node, m);
    }
    gt_strmap_put(m, key, (void *)o);
}

void gt_ctl_holding_del(struct gt_ctl *c, const char *key)
{
    const struct gt_cobj *was = gt_strmap_del(&c->holding, key);
    if (was) {
        run_sum_add(c, gt_cobj_task(was), -1);
    }
    const char *node = was ? gt_cobj_task(was)->spec.node_name : NULL;
    struct gt_strmap *m = node ? gt_strmap_get(&c->holding_on, node) : NULL;
    if (m) {
        gt_strmap_del(m, key);
        if (!m->n) {
            gt_strmap_del(&c->holding_on, node);
            gt_ctl_holding_map_free(m);
        }
    }
}

const struct gt_strmap *gt_ctl_holding_on(const struct gt_ctl *c, const char *node)
{
    return gt_strmap_get(&c->holding_on, node);
}

void gt_ctl_cache_put(struct gt_ctl *c, enum gt_kind kind, const char *key, json_t *obj,
                      int64_t rev, struct gt_cobj **old)
{
    *old = NULL;
    if (!obj) {
        return;
    }
    struct gt_cobj *o = gt_xcalloc(1, sizeof(*o));
    o->key = gt_xstrdup(key);
    o->obj = obj;
    o->t = gt_api_object_new(kind, obj);
    o->rev = rev;
    *old = gt_strmap_put(&c->objs[kind], key, o);
    if (kind == GT_KIND_JOB) {
        gt_ctl_note_job(c, key, gt_cobj_job(o));
    } else if (kind == GT_KIND_TASK) {
        gt_ctl_holding_del(c, key);
        if (gt_task_holds(gt_cobj_task(o))) {
            holding_add(c, key, o);
        }
    }
}

void gt_ctl_load(struct gt_ctl *c, const struct gt_kind_info *kind, const struct gt_store_kv *kv)
{
    if (kind->kind == GT_KIND_EVENT) {
        return;
    }
    struct gt_cobj *old = NULL;
    gt_ctl_cache_put(c, kind->kind, kv->key, json_loadb(kv->value, kv->value_len, 0, NULL),
                     kv->mod_rev, &old);
    gt_cobj_free(old);
}

static bool needs_time(const struct gt_api_job *job)
{
    const struct gt_api_run_policy *rp = &job->spec.run_policy;
    if (gt_job_finished(job)) {
        return rp->ttl_after_finished_s != GT_API_UNSET;
    }
    return rp->active_deadline_s != GT_API_UNSET ||
           gt_api_condition_true(&job->status.conditions, "Restarting");
}

void gt_ctl_note_job(struct gt_ctl *c, const char *key, const struct gt_api_job *job)
{
    if (job && !gt_job_finished(job)) {
        gt_strmap_put(&c->live_jobs, key, (void *)"");
    } else {
        gt_strmap_del(&c->live_jobs, key);
    }
    if (job && needs_time(job)) {
        gt_strmap_put(&c->timed, key, (void *)"");
    } else {
        gt_strmap_del(&c->timed, key);
    }
}
