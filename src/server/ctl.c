/*
 * The controllers' shell: an in-memory cache of every stored object but
 * Events (filled from the server's list at start-up and kept current by
 * its watch on all keys), the bookkeeping of controller writes, and the two
 * triggers that run the reconcilers: a "kick" event made active by any
 * change, so that the job/task controllers and one scheduling cycle run at
 * most once per loop turn, and a one-second tick (node lifecycle, and a
 * cycle at least once a second).
 *
 * Controllers are level-triggered: each reconcile reads the cache and
 * writes what differs, conditional on the cached revision; a conflict
 * needs no handling because the newer object arrives through the watch
 * and triggers another reconcile. Everything runs on the loop thread.
 *
 * Costs, since every API create fans out into controller work: an object
 * this process wrote (controllers' writes, and the API's through
 * gt_ctl_written) is cached as the JSON value it encoded, not parsed back
 * from the watch event's text; a kick syncs the dirty jobs into the
 * scheduler model and may run the cycle before it reconciles them, so a
 * new job's first status already says why it waits; and the gap between
 * cycles grows with their cost, which grows with the pending jobs.
 */
#include <stdlib.h>
#include <string.h>

#include "server/server_int.h"

static const char marker[] = "";
#define MARK ((void *)marker)
/* Least time between two scheduling cycles: a burst of arrivals (or of
 * exits) is decided in one cycle instead of one per loop turn; short, as
 * GPUs freed wait for the next cycle. */
#define GT_CTL_CYCLE_GAP_MS 5
/* A cycle's cost grows with the pending jobs; the gap after one is at least
 * this many times its duration, so that under a burst cycles take at most
 * an eighth of the loop and requests keep being served. */
#define GT_CTL_CYCLE_GAP_FACTOR 8
#define GT_CTL_CYCLE_GAP_MAX_MS 1000

static void cobj_free(void *p)
{
    struct gt_cobj *o = p;
    if (o) {
        free(o->key);
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

static const json_t *project_obj(const struct gt_ctl *c, const char *project)
{
    char key[96];
    snprintf(key, sizeof(key), "/projects/%s", project ? project : "");
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_PROJECT, key);
    return o ? o->obj : NULL;
}

bool gt_ctl_project_privileged(const struct gt_ctl *c, const char *project)
{
    return json_is_true(gt_json_path(project_obj(c, project), "spec.allowPrivileged"));
}

const char *gt_ctl_project_department(const struct gt_ctl *c, const char *project)
{
    return json_string_value(gt_json_path(project_obj(c, project), "spec.department"));
}

void gt_ctl_kick(struct gt_ctl *c)
{
    if (c->kick) {
        event_active(c->kick, EV_TIMEOUT, 0); /* no-op while already active */
    }
}

void gt_ctl_mark_job(struct gt_ctl *c, const char *project, const char *job)
{
    if (!project || !job) {
        return;
    }
    char *key = gt_xasprintf("/jobs/%s/%s", project, job);
    gt_strmap_put(&c->dirty_jobs, key, MARK);
    free(key);
    gt_ctl_kick(c);
}

static void mark_task_job(struct gt_ctl *c, const json_t *task)
{
    gt_ctl_mark_job(c, gt_obj_project(task), json_string_value(gt_json_path(task, "spec.job")));
}

/* ---- writes ---- */

struct wctx {
    struct gt_ctl *c;
    char *key;
    json_t *obj; /* what is written (a reference), NULL for DELETE */
    enum gt_kind kind;
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

static void write_done(int rc, int64_t rev, const struct gt_err *err, void *arg)
{
    struct wctx *w = arg;
    struct gt_ctl *c = w->c;
    gt_server_write_done(c->s, rc, w->submit_ns);
    inflight_add(c, w->key, -1);
    if (rc == 0 && w->obj) {
        gt_ctl_written(c, w->kind, w->key, rev, w->obj);
    }
    json_decref(w->obj);
    if (rc && rc != GT_ECONFLICT && rc != GT_EEXISTS && rc != GT_ENOTFOUND) {
        gt_log_warn("controller write failed", "key=%s err=\"%s\"", w->key,
                    err && err->msg[0] ? err->msg : gt_errcode_str(rc));
    }
    if (w->done) {
        w->done(c, rc, w->arg);
    }
    const struct gt_cobj *o = gt_ctl_get(c, w->kind, w->key);
    if (w->kind == GT_KIND_TASK) {
        gt_strmap_put(&c->dirty_tasks, w->key, MARK);
        if (o) {
            mark_task_job(c, o->obj);
        }
    } else if (w->kind == GT_KIND_JOB) {
        /* a settled write is caught up by its watch event (gt_ctl_event) */
        if (rc) {
            gt_strmap_del(&c->settled, w->key);
        }
        if (!gt_strmap_get(&c->settled, w->key)) {
            gt_strmap_put(&c->dirty_jobs, w->key, MARK);
        }
    }
    gt_ctl_kick(c);
    free(w->key);
    free(w);
}

static enum gt_kind kind_of_key(const char *key)
{
    if (!strncmp(key, "/tasks/", 7)) {
        return GT_KIND_TASK;
    }
    if (!strncmp(key, "/jobs/", 6)) {
        return GT_KIND_JOB;
    }
    return !strncmp(key, "/nodes/", 7) ? GT_KIND_NODE : GT_KIND_EVENT;
}

int gt_ctl_write(struct gt_ctl *c, enum gt_store_op op, const char *key, json_t *obj,
                 int64_t expected_rev, gt_ctl_done_fn done, void *arg)
{
    size_t len = 0;
    char *text = obj && op != GT_STORE_DELETE ? gt_encode_object(obj, &len) : NULL;
    struct wctx *w = gt_xcalloc(1, sizeof(*w));
    w->c = c;
    w->key = gt_xstrdup(key);
    w->obj = text ? json_incref(obj) : NULL;
    w->kind = kind_of_key(key);
    w->done = done;
    w->arg = arg;
    w->submit_ns = gt_now_ns();
    int rc = gt_server_write(c->s, op, key, text, len, op == GT_STORE_CREATE ? 0 : expected_rev,
                             write_done, w);
    free(text);
    if (rc) {
        json_decref(w->obj);
        free(w->key);
        free(w);
        return rc;
    }
    inflight_add(c, key, 1);
    return 0;
}

/* ---- the cache ---- */

/* A committed write whose watch event has not arrived yet. */
struct fresh {
    int64_t rev;
    json_t *obj;
};

static void fresh_free(void *p)
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
    fresh_free(gt_strmap_put(&c->fresh, key, f));
}

/* The object written at key as revision rev, if this process wrote it
 * (new reference), else NULL. Forgets whatever was kept for key. */
static json_t *take_fresh(struct gt_ctl *c, const char *key, int64_t rev)
{
    struct fresh *f = gt_strmap_del(&c->fresh, key);
    json_t *obj = NULL;
    if (f && f->rev == rev) {
        obj = json_incref(f->obj);
    }
    fresh_free(f);
    return obj;
}

/* Cache obj (taken) at key; *old gets the replaced object (a reference) or
 * NULL. */
static void cache_put(struct gt_ctl *c, enum gt_kind kind, const char *key, json_t *obj,
                      int64_t rev, json_t **old)
{
    *old = NULL;
    if (!obj) {
        return;
    }
    struct gt_cobj *o = gt_xcalloc(1, sizeof(*o));
    o->key = gt_xstrdup(key);
    o->obj = obj;
    o->rev = rev;
    struct gt_cobj *was = gt_strmap_put(&c->objs[kind], key, o);
    if (kind == GT_KIND_JOB) {
        gt_jobctl_note_job(c, key, obj);
    } else if (kind == GT_KIND_TASK && gt_task_holds(obj)) {
        gt_strmap_put(&c->holding, key, o);
    } else if (kind == GT_KIND_TASK) {
        gt_strmap_del(&c->holding, key);
    }
    if (was) {
        *old = json_incref(was->obj);
        cobj_free(was);
    }
}

void gt_ctl_load(struct gt_ctl *c, const struct gt_kind_info *kind, const struct gt_store_kv *kv)
{
    if (kind->kind == GT_KIND_EVENT) {
        return;
    }
    json_t *old = NULL;
    cache_put(c, kind->kind, kv->key, json_loadb(kv->value, kv->value_len, 0, NULL), kv->mod_rev,
              &old);
    json_decref(old);
}

void gt_ctl_event(struct gt_ctl *c, const struct gt_kind_info *kind,
                  const struct gt_store_event *ev)
{
    enum gt_kind k = kind->kind;
    if (k == GT_KIND_EVENT) {
        return;
    }
    json_t *old = NULL;
    bool mine = false;
    if (ev->type == GT_STORE_EV_DELETE) {
        struct gt_cobj *was = gt_strmap_del(&c->objs[k], ev->key);
        if (k == GT_KIND_JOB) {
            gt_jobctl_note_job(c, ev->key, NULL);
        } else if (k == GT_KIND_TASK) {
            gt_strmap_del(&c->holding, ev->key);
        }
        if (was) {
            old = json_incref(was->obj);
            cobj_free(was);
        }
    } else {
        /* what this process wrote is not parsed back from the stored text */
        json_t *obj = take_fresh(c, ev->key, ev->mod_rev);
        mine = obj != NULL;
        if (!obj) {
            obj = json_loadb(ev->value, ev->value_len, 0, NULL);
        }
        cache_put(c, k, ev->key, obj, ev->mod_rev, &old);
    }
    const struct gt_cobj *now = gt_ctl_get(c, k, ev->key);
    const json_t *cur = now ? now->obj : NULL;
    gt_feed_change(c, k, ev->key, old, cur);
    if (k == GT_KIND_JOB) {
        /* our own settled status write needs the model's sync only */
        bool settled = gt_strmap_del(&c->settled, ev->key) != NULL && mine;
        gt_strmap_put(settled ? &c->sync_jobs : &c->dirty_jobs, ev->key, MARK);
    } else if (k == GT_KIND_TASK) {
        if (cur) {
            gt_strmap_put(&c->dirty_tasks, ev->key, MARK);
        }
        mark_task_job(c, cur ? cur : old);
    }
    json_decref(old);
    gt_ctl_kick(c);
}

/* ---- the triggers ---- */

struct keys GT_VEC(char *);

static int collect_cb(const char *key, void *val, void *arg)
{
    (void)val;
    struct keys *k = arg;
    *GT_VEC_PUSH(k, 16) = gt_xstrdup(key);
    return 0;
}

/* Take the keys of a dirty set, emptying it (reconcilers may refill it). */
static void take_keys(struct gt_strmap *m, struct keys *k)
{
    gt_strmap_each(m, collect_cb, k);
    gt_strmap_fini(m, NULL);
    gt_strmap_init(m);
}

static void free_keys(struct keys *k)
{
    for (size_t i = 0; i < k->n; i++) {
        free(k->v[i]);
    }
    GT_VEC_FREE(k);
}

/* Run the cycle if one is wanted and the gap since the last has passed;
 * else make sure the cycle timer will. */
static void maybe_cycle(struct gt_ctl *c)
{
    if (!c->want_cycle) {
        return;
    }
    /* arrivals in a burst share one cycle: at most one per gap (in ns: a
     * cycle of 0.3 ms is not rounded up to a whole one) */
    const int64_t ms = 1000000, lo = GT_CTL_CYCLE_GAP_MS * ms, hi = GT_CTL_CYCLE_GAP_MAX_MS * ms;
    int64_t gap_ns = GT_CTL_CYCLE_GAP_FACTOR * c->last_cycle_cost_ns;
    gap_ns = gap_ns < lo ? lo : gap_ns > hi ? hi : gap_ns;
    int64_t wait_ns = c->last_cycle_ns + gap_ns - gt_now_ns();
    if (wait_ns > 0) {
        if (!evtimer_pending(c->cycle_timer, NULL)) {
            struct timeval tv = {wait_ns / 1000000000, (suseconds_t)(wait_ns % 1000000000 / 1000)};
            evtimer_add(c->cycle_timer, &tv);
        }
        return;
    }
    c->want_cycle = false;
    c->last_cycle_ns = gt_now_ns();
    gt_feed_cycle(c);
    c->last_cycle_cost_ns = gt_now_ns() - c->last_cycle_ns;
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gt_ctl *c = arg;
    if (c->s->draining || c->s->failed) {
        return;
    }
    struct keys tasks = {0}, jobs = {0};
    take_keys(&c->dirty_tasks, &tasks);
    for (size_t i = 0; i < tasks.n; i++) {
        gt_jobctl_reconcile_task(c, tasks.v[i]);
    }
    free_keys(&tasks);
    /* the model first, then the cycle, then the jobs' status: a job that
     * entered the model waits for its first cycle, so that its first
     * status write already carries why it waits (or that it is bound) */
    take_keys(&c->sync_jobs, &jobs);
    gt_strmap_each(&c->dirty_jobs, collect_cb, &jobs);
    for (size_t i = 0; i < jobs.n; i++) {
        gt_feed_sync_job(c, jobs.v[i]);
    }
    free_keys(&jobs);
    maybe_cycle(c);
    jobs = (struct keys){0};
    take_keys(&c->dirty_jobs, &jobs);
    for (size_t i = 0; i < jobs.n; i++) {
        if (!gt_strmap_get(&c->unseen, jobs.v[i])) { /* else the cycle marks it again */
            gt_jobctl_reconcile_job(c, jobs.v[i]);
        }
    }
    free_keys(&jobs);
}

static int retry_job_cb(const char *key, void *val, void *arg)
{
    struct gt_ctl *c = arg;
    const struct gt_cobj *o = val;
    if (!gt_strmap_get(&c->in_model, key) && !gt_job_finished(o->obj)) {
        gt_strmap_put(&c->dirty_jobs, key, MARK);
    }
    return 0;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gt_ctl *c = arg;
    if (c->s->draining || c->s->failed) {
        return;
    }
    gt_nodectl_tick(c);
    gt_jobctl_tick(c);
    /* jobs that could not enter the model yet (department or tasks missing) */
    gt_strmap_each(&c->objs[GT_KIND_JOB], retry_job_cb, c);
    c->want_cycle = true;
    gt_ctl_kick(c);
}

struct gt_ctl *gt_ctl_new(struct gt_server *s)
{
    struct gt_ctl *c = gt_xcalloc(1, sizeof(*c));
    c->s = s;
    for (int k = 0; k < GT_KIND_COUNT; k++) {
        gt_strmap_init(&c->objs[k]);
    }
    gt_strmap_init(&c->holding);
    gt_strmap_init(&c->inflight);
    gt_strmap_init(&c->dirty_jobs);
    gt_strmap_init(&c->dirty_tasks);
    gt_strmap_init(&c->waits);
    gt_strmap_init(&c->in_model);
    gt_strmap_init(&c->fresh);
    gt_strmap_init(&c->unseen);
    gt_strmap_init(&c->timed);
    gt_strmap_init(&c->settled);
    gt_strmap_init(&c->sync_jobs);
    c->model = gt_sched_model_new();
    gt_sched_decisions_init(&c->dec);
    return c;
}

int gt_ctl_start(struct gt_ctl *c, struct gt_err *err)
{
    const char *name = c->s->cfg->scheduler_policy;
    c->policy = gt_sched_policy_by_name(name ? name : "gantry");
    if (!c->policy && !name) {
        c->policy = gt_sched_policy_by_name("firstfit");
    }
    if (!c->policy) {
        return gt_err_set(err, GT_EINVAL, "--scheduler-policy %s: unknown policy", name);
    }
    c->start_ms = gt_now_ms();
    int32_t lo, hi;
    int rc = gt_jobenv_port_range_parse(c->s->cfg->port_range, &lo, &hi, err);
    if (rc) {
        gt_err_prefix(err, "--port-range");
        return rc;
    }
    rc = gt_feed_build(c, err);
    if (rc) {
        return rc;
    }
    c->kick = event_new(c->s->base, -1, 0, on_kick, c);
    c->cycle_timer = evtimer_new(c->s->base, on_kick, c);
    c->tick = event_new(c->s->base, -1, EV_PERSIST, on_tick, c);
    struct timeval tv = {.tv_sec = 1, .tv_usec = 0};
    evtimer_add(c->tick, &tv);
    /* reconcile everything once: work may have been left half done */
    struct keys jobs = {0}, tasks = {0};
    gt_strmap_each(&c->objs[GT_KIND_JOB], collect_cb, &jobs);
    gt_strmap_each(&c->objs[GT_KIND_TASK], collect_cb, &tasks);
    for (size_t i = 0; i < jobs.n; i++) {
        gt_strmap_put(&c->dirty_jobs, jobs.v[i], MARK);
    }
    for (size_t i = 0; i < tasks.n; i++) {
        gt_strmap_put(&c->dirty_tasks, tasks.v[i], MARK);
    }
    free_keys(&jobs);
    free_keys(&tasks);
    c->want_cycle = true;
    gt_ctl_kick(c);
    gt_log_info("scheduler started", "policy=%s", gt_sched_policy_name(c->policy));
    return 0;
}

void gt_ctl_free(struct gt_ctl *c)
{
    if (!c) {
        return;
    }
    if (c->kick) {
        event_free(c->kick);
        event_free(c->cycle_timer);
    }
    if (c->tick) {
        event_free(c->tick);
    }
    for (int k = 0; k < GT_KIND_COUNT; k++) {
        gt_strmap_fini(&c->objs[k], cobj_free);
    }
    gt_strmap_fini(&c->holding, NULL);
    gt_strmap_fini(&c->inflight, NULL);
    gt_strmap_fini(&c->dirty_jobs, NULL);
    gt_strmap_fini(&c->dirty_tasks, NULL);
    gt_strmap_fini(&c->waits, free);
    gt_strmap_fini(&c->in_model, NULL);
    gt_strmap_fini(&c->fresh, fresh_free);
    gt_strmap_fini(&c->unseen, NULL);
    gt_strmap_fini(&c->timed, NULL);
    gt_strmap_fini(&c->settled, NULL);
    gt_strmap_fini(&c->sync_jobs, NULL);
    gt_sched_decisions_fini(&c->dec);
    gt_sched_model_free(c->model);
    free(c);
}
