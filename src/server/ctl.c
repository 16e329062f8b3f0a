/*
 * The controllers' shell, above the cache (cache.c): the cache kept
 * current from the server's watch on all keys (each change also fed to
 * the scheduler model), and the two triggers that run the reconcilers: a
 * "kick" event made active by any change, so that the job/task
 * controllers and one scheduling cycle run at most once per loop turn,
 * and a one-second tick (node lifecycle, and a cycle at least once a
 * second).
 *
 * Controllers are level-triggered: each reconcile reads the cache and
 * writes what differs, conditional on the cached revision; a conflict
 * needs no handling because the newer object arrives through the watch
 * and triggers another reconcile. Everything runs on the loop thread.
 *
 * Costs, since every API create fans out into controller work: what this
 * process wrote is cached without parsing it back (cache.c); a kick syncs
 * the dirty jobs into the scheduler model and may run the cycle before it reconciles them, so a
 * new job's first status already says why it waits; and the gap between
 * cycles grows with their cost, which grows with the pending jobs.
 */
#include <stdlib.h>
#include <string.h>

#include "server/buildctl.h"
#include "server/cache.h"
#include "server/ctl.h"
#include "server/events.h"
#include "server/feeder.h"
#include "server/isvcctl.h"
#include "server/jobctl.h"
#include "server/ledger.h"
#include "server/modelctl.h"
#include "server/nbctl.h"
#include "server/nodes.h"
#include "server/secrets.h"
#include "server/server_int.h"
#include "server/statemetrics.h"
#include "server/telemetry.h"
#include "server/volctl.h"

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

/* Whether deleting task (its last state) may change its job: not when it
 * had ended and its job is finished and stays (cleanPodPolicy, the
 * terminated-task collector), which a reconcile would only confirm. */
static bool delete_moves_job(const struct gt_ctl *c, const struct gt_api_task *task)
{
    if (!gt_api_task_phase_terminal((enum gt_task_phase)task->status.phase)) {
        return true;
    }
    const struct gt_cobj *o = gt_ctl_task_job(c, task);
    const struct gt_api_job *job = o ? gt_cobj_job(o) : NULL;
    return !job || !gt_job_finished(job) || job->o.meta.deletion_timestamp;
}

void gt_ctl_event(struct gt_ctl *c, const struct gt_kind_info *kind,
                  const struct gt_store_event *ev)
{
    enum gt_kind k = kind->kind;
    if (k == GT_KIND_EVENT) {
        return;
    }
    /* not newer than what the cache holds: our own write, applied at its
     * commit (cache.c apply_own), or what came before it */
    const struct gt_cobj *held = gt_strmap_get(&c->objs[k], ev->key);
    int64_t gone = (int64_t)(intptr_t)gt_strmap_get(&c->gone, ev->key);
    if (gone && ev->mod_rev >= gone) {
        gt_strmap_del(&c->gone, ev->key);
    }
    if ((held && ev->mod_rev <= held->rev) || (gone && ev->mod_rev <= gone)) {
        return;
    }
    struct gt_cobj *old = NULL;
    bool mine = false;
    if (ev->type == GT_STORE_EV_DELETE) {
        old = gt_strmap_del(&c->objs[k], ev->key);
        if (old && old->t) {
            gt_events_forget(c->s->events, old->t->meta.uid);
        }
        if (k == GT_KIND_JOB) {
            gt_ctl_note_job(c, ev->key, NULL);
            gt_telemetry_job_gone(c->tel, ev->key);
        } else if (k == GT_KIND_TASK) {
            gt_ctl_holding_del(c, ev->key);
        }
    } else {
        /* what this process wrote is not parsed back from the stored text */
        json_t *obj = gt_ctl_take_fresh(c, ev->key, ev->mod_rev);
        mine = obj != NULL;
        if (!obj) {
            obj = json_loadb(ev->value, ev->value_len, 0, NULL);
        }
        gt_ctl_cache_put(c, k, ev->key, obj, ev->mod_rev, &old);
    }
    const struct gt_cobj *now = gt_ctl_get(c, k, ev->key);
    if (k == GT_KIND_TASK && old && old->t->meta.uid &&
        (!now || !now->t->meta.uid || strcmp(old->t->meta.uid, now->t->meta.uid) != 0)) {
        /* the run is gone: deleted, or replaced by a restart's new one */
        gt_ledger_task_gone(c->ledger, old->t->meta.uid);
    }
    gt_feed_change(c, k, ev->key, old ? old->t : NULL, now ? now->t : NULL);
    if (k == GT_KIND_VOLUME) {
        gt_volctl_changed(c, ev->key, old ? old->t : NULL, now ? now->t : NULL);
    } else if (k == GT_KIND_MODELVERSION) {
        gt_modelctl_changed(c, ev->key, old ? old->t : NULL, now ? now->t : NULL);
    }
    if (k == GT_KIND_JOB) {
        gt_modelctl_job_changed(c, ev->key, now ? now->t : NULL);
        /* our own settled status write needs the model's sync only */
        bool settled = gt_strmap_del(&c->settled, ev->key) != NULL && mine;
        gt_strmap_put(settled ? &c->sync_jobs : &c->dirty_jobs, ev->key, MARK);
    } else if (k == GT_KIND_TASK) {
        if (now) {
            gt_strmap_put(&c->dirty_tasks, ev->key, MARK);
            /* at once: a restart may replace this run's Task in the same turn */
            gt_ledger_note_task(c, ev->key);
        }
        if (now) {
            gt_ctl_mark_task_job(c, gt_cobj_task(now));
        } else if (old && delete_moves_job(c, gt_cobj_task(old))) {
            gt_ctl_mark_task_job(c, gt_cobj_task(old));
        }
    }
    if (now || old) {
        gt_nbctl_event(c->nb, k, ev->key, now ? now->t : old->t);
        gt_isvcctl_event(c->isvc, k, now ? now->t : old->t);
    }
    if (k == GT_KIND_IMAGEBUILD || k == GT_KIND_JOB || k == GT_KIND_TASK) {
        gt_buildctl_event(c, k, ev->key, now, old);
    }
    gt_cobj_free(old);
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
        gt_ledger_note_task(c, tasks.v[i]);
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
    gt_nbctl_reconcile(c->nb);
    gt_isvcctl_reconcile(c->isvc);
    gt_buildctl_run(c);
}

/* key: a job not finished (c->live_jobs) */
static int retry_job_cb(const char *key, void *val, void *arg)
{
    (void)val;
    struct gt_ctl *c = arg;
    if (!gt_strmap_get(&c->in_model, key)) {
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
    gt_telemetry_tick(c->tel, gt_now_ms());
    gt_ledger_tick(c);
    gt_nbctl_tick(c->nb);
    /* jobs that could not enter the model yet (department or tasks missing) */
    gt_strmap_each(&c->live_jobs, retry_job_cb, c);
    c->want_cycle = true;
    gt_ctl_kick(c);
}

/* ---- what the transport asks of the controllers ---- */

/* Every write of a Job or Task: hostPath volumes only beneath the
 * cluster's storage roots (gantlet checks again on the node, symlinks
 * included); Volumes and the entries naming them: gt_volctl_admit; a
 * Job's create: gt_jobctl_admit; a Job's replace: gt_jobctl_check_update;
 * a Notebook's writes: gt_nbctl_admit; a ModelVersion's: gt_modelctl_admit. */
static int admit_hook(struct gt_ctl *c, const struct gt_api_object *t, bool create,
                      const struct gt_server_user *user, struct gt_err *err)
{
    const struct gt_config_list *roots = &c->s->cfg->storage_roots;
    const struct gt_api_volumes *vols = NULL;
    if (t && t->kind == GT_KIND_JOB) {
        vols = &((const struct gt_api_job *)t)->spec.volumes;
    } else if (t && t->kind == GT_KIND_TASK) {
        vols = &((const struct gt_api_task *)t)->spec.volumes;
    }
    int rc = vols ? gt_job_check_volumes(vols, roots->items, roots->n, err) : 0;
    if (rc == 0) {
        rc = gt_volctl_admit(c, t, create, err);
    }
    if (rc == 0 && create && t && t->kind == GT_KIND_JOB) {
        rc = gt_jobctl_admit(c, (const struct gt_api_job *)t, user, err);
    }
    if (rc == 0 && !create && t && t->kind == GT_KIND_JOB) {
        rc = gt_jobctl_check_update(c, (const struct gt_api_job *)t, err);
    }
    if (rc == 0 && t && t->kind == GT_KIND_NOTEBOOK) {
        rc = gt_nbctl_admit(c, (const struct gt_api_notebook *)t, user, err);
    }
    if (rc == 0) {
        rc = gt_modelctl_admit(c, t, create, err);
    }
    return rc;
}

/* A Node's status.allocated from the cache; a Department's status: used
 * and borrowed as the scheduler counts them, used.storage,
 * borrowed.storage and storage as its Volumes hold it; a Volume's usage
 * and users. */
static void render_hook(const struct gt_ctl *c, enum gt_kind kind, json_t *obj)
{
    if (kind == GT_KIND_NODE) {
        json_t *st = json_object_get(obj, "status");
        if (!json_is_object(st)) {
            st = json_object();
            json_object_set_new(obj, "status", st);
        }
        json_object_set_new(st, "allocated", gt_nodectl_allocated(c, gt_obj_name(obj)));
    } else if (kind == GT_KIND_DEPARTMENT) {
        json_t *ds = gt_department_status(c->model, gt_obj_name(obj));
        if (ds) {
            json_t *storage = gt_volctl_department_storage(c, gt_obj_name(obj));
            json_object_set(json_object_get(ds, "used"), GT_RES_NAME_STORAGE,
                            json_object_get(storage, "allocated"));
            json_object_set(json_object_get(ds, "borrowed"), GT_RES_NAME_STORAGE,
                            json_object_get(storage, "borrowed"));
            json_object_set_new(ds, "storage", storage);
            json_object_set_new(obj, "status", ds);
        }
    } else if (kind == GT_KIND_VOLUME) {
        gt_volctl_render(c, obj);
    }
}

struct in_project {
    const char *prefix; /* "/<plural>/<project>/" */
    size_t len, n;
};

static int count_in_project(const char *key, void *val, void *arg)
{
    (void)val;
    struct in_project *p = arg;
    p->n += strncmp(key, p->prefix, p->len) == 0;
    return 0;
}

/* A Project goes only once it holds nothing but Events (which expire):
 * deleting one with jobs would leave them running in no project, so it is
 * refused, naming what it still holds. Every project-scoped kind counts,
 * whatever its table row. A Volume in use stays: gt_volctl_refuse_delete;
 * a Model with versions: gt_modelctl_refuse_delete. */
static int refuse_delete_hook(const struct gt_ctl *c, enum gt_kind kind, const char *project,
                              const char *name, struct gt_err *err)
{
    if (kind == GT_KIND_VOLUME) {
        return gt_volctl_refuse_delete(c, project, name, err);
    }
    if (kind == GT_KIND_MODEL) {
        return gt_modelctl_refuse_delete(c, project, name, err);
    }
    if (kind != GT_KIND_PROJECT) {
        return 0;
    }
    struct gt_buf held;
    gt_buf_init(&held);
    for (int k = 0; k < GT_KIND_COUNT; k++) {
        const struct gt_kind_info *ki = gt_kind_get((enum gt_kind)k);
        if (!ki || !ki->namespaced || k == GT_KIND_EVENT) {
            continue;
        }
        char *prefix = gt_xasprintf("/%s/%s/", ki->plural, name);
        struct in_project p = {.prefix = prefix, .len = strlen(prefix)};
        gt_strmap_each(&c->objs[k], count_in_project, &p);
        if (p.n) {
            gt_buf_printf(&held, "%s%zu %s", held.len ? ", " : "", p.n, ki->plural);
        }
        free(prefix);
    }
    int rc = 0;
    if (held.len) {
        rc = gt_err_set(err, GT_ECONFLICT,
                        "projects \"%s\" still holds %s: delete them first (gantry get jobs -p "
                        "%s), then the project",
                        name, held.data, name);
    }
    gt_buf_fini(&held);
    return rc;
}

/* A create's work before its store write: a Volume's disk image, a
 * ModelVersion's copy into the model store. */
static int prepare_hook(struct gt_ctl *c, enum gt_kind kind, const char *key, json_t *obj,
                        gt_prepared_fn done, void *arg, struct gt_err *err)
{
    int rc = gt_volctl_prepare(c, kind, key, obj, done, arg, err);
    return rc ? rc : gt_modelctl_prepare(c, kind, key, obj, done, arg, err);
}

static void created_hook(struct gt_ctl *c, enum gt_kind kind, const char *key, int rc)
{
    gt_volctl_created(c, kind, key, rc);
    gt_modelctl_created(c, kind, key, rc);
}

static bool proxy_hook(struct gt_ctl *c, struct gt_req *r, const char *path)
{
    (void)c;
    if (!gt_nbproxy_path(path)) {
        return false;
    }
    gt_nbproxy_serve(r, path);
    return true;
}

/* Telemetry (scalars, history, job stats), the ledger (usage) and the
 * tasks' secrets. */
static void serve_hook(struct gt_ctl *c, struct gt_req *r, int method, const struct evkeyvalq *q)
{
    enum gt_route_type t = r->route.type;
    if (t == GT_ROUTE_USAGE || t == GT_ROUTE_USAGE_RECORDS) {
        gt_ledger_serve(c, r, method, q);
    } else if (!strcmp(r->route.sub, "secrets")) {
        gt_secrets_serve(c, r, method, q);
    } else {
        gt_telemetry_serve(c, r, method, q);
    }
}

/* The controllers' /metrics series: the scheduler's (feeder.c), then the
 * state of the cached objects (statemetrics.c). */
static void metrics_hook(const struct gt_ctl *c, struct gt_buf *out, struct evbuffer *spill)
{
    gt_feed_metrics(c, out);
    gt_ctl_render_metrics(c, out, spill);
}

static const struct gt_ctl_hooks hooks = {
    .proxy = proxy_hook,
    .admit = admit_hook,
    .soft_delete = gt_jobctl_soft_delete,
    .refuse_delete = refuse_delete_hook,
    .name = gt_modelctl_name,
    .prepare = prepare_hook,
    .created = created_hook,
    .render = render_hook,
    .computed_kinds = 1u << GT_KIND_NODE | 1u << GT_KIND_DEPARTMENT | 1u << GT_KIND_VOLUME,
    .metrics = metrics_hook,
    .serve = serve_hook,
};

struct gt_ctl *gt_ctl_new(struct gt_server *s)
{
    struct gt_ctl *c = gt_xcalloc(1, sizeof(*c));
    c->s = s;
    for (int k = 0; k < GT_KIND_COUNT; k++) {
        gt_strmap_init(&c->objs[k]);
    }
    gt_strmap_init(&c->holding);
    gt_strmap_init(&c->holding_jobs);
    gt_strmap_init(&c->holding_on);
    gt_strmap_init(&c->inflight);
    gt_strmap_init(&c->dirty_jobs);
    gt_strmap_init(&c->dirty_tasks);
    gt_strmap_init(&c->dirty_builds);
    gt_strmap_init(&c->waits);
    gt_strmap_init(&c->in_model);
    gt_strmap_init(&c->fresh);
    gt_strmap_init(&c->gone);
    c->event = gt_ctl_event;
    gt_strmap_init(&c->unseen);
    gt_strmap_init(&c->timed);
    gt_strmap_init(&c->live_jobs);
    gt_strmap_init(&c->settled);
    gt_strmap_init(&c->held_queued);
    gt_strmap_init(&c->sync_jobs);
    gt_strmap_init(&c->vol_held);
    gt_strmap_init(&c->vol_claims);
    c->model = gt_sched_model_new();
    c->tel = gt_telemetry_new();
    c->nb = gt_nbctl_new(c);
    c->models = gt_modelctl_new(c, gt_volctl_storage_check);
    c->isvc = gt_isvcctl_new(c);
    gt_sched_decisions_init(&c->dec);
    s->metrics.schedule_seconds.bounds = gt_histogram_wait_bounds;
    s->ctl_hooks = &hooks;
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
    rc = gt_ledger_open(c, &c->ledger, err); /* first: jobs enter the model with its service */
    rc = rc ? rc : gt_feed_build(c, err);
    rc = rc ? rc : gt_isvcctl_start(c->isvc, err);
    if (rc) {
        return rc;
    }
    c->kick = event_new(c->s->base, -1, 0, on_kick, c);
    c->cycle_timer = evtimer_new(c->s->base, on_kick, c);
    c->tick = event_new(c->s->base, -1, EV_PERSIST, on_tick, c);
    struct timeval tv = {.tv_sec = 1, .tv_usec = 0};
    evtimer_add(c->tick, &tv);
    /* reconcile everything once: work may have been left half done */
    struct keys jobs = {0}, tasks = {0}, builds = {0};
    gt_strmap_each(&c->objs[GT_KIND_JOB], collect_cb, &jobs);
    gt_strmap_each(&c->objs[GT_KIND_TASK], collect_cb, &tasks);
    gt_strmap_each(&c->objs[GT_KIND_IMAGEBUILD], collect_cb, &builds);
    for (size_t i = 0; i < builds.n; i++) {
        gt_strmap_put(&c->dirty_builds, builds.v[i], MARK);
    }
    free_keys(&builds);
    for (size_t i = 0; i < jobs.n; i++) {
        gt_strmap_put(&c->dirty_jobs, jobs.v[i], MARK);
    }
    for (size_t i = 0; i < tasks.n; i++) {
        gt_strmap_put(&c->dirty_tasks, tasks.v[i], MARK);
    }
    free_keys(&jobs);
    free_keys(&tasks);
    struct keys nbs = {0};
    gt_strmap_each(&c->objs[GT_KIND_NOTEBOOK], collect_cb, &nbs);
    for (size_t i = 0; i < nbs.n; i++) {
        gt_nbctl_event(c->nb, GT_KIND_NOTEBOOK, nbs.v[i], NULL);
    }
    free_keys(&nbs);
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
    c->s->ctl_hooks = NULL;
    if (c->kick) {
        event_free(c->kick);
        event_free(c->cycle_timer);
    }
    if (c->tick) {
        event_free(c->tick);
    }
    for (int k = 0; k < GT_KIND_COUNT; k++) {
        gt_strmap_fini(&c->objs[k], gt_cobj_free);
    }
    gt_strmap_fini(&c->holding, NULL);
    gt_strmap_fini(&c->holding_jobs, free);
    gt_strmap_fini(&c->holding_on, gt_ctl_holding_map_free);
    gt_strmap_fini(&c->inflight, NULL);
    gt_strmap_fini(&c->dirty_jobs, NULL);
    gt_strmap_fini(&c->dirty_tasks, NULL);
    gt_strmap_fini(&c->dirty_builds, NULL);
    gt_strmap_fini(&c->waits, free);
    gt_strmap_fini(&c->in_model, NULL);
    gt_strmap_fini(&c->fresh, gt_ctl_fresh_free);
    gt_strmap_fini(&c->gone, NULL);
    gt_strmap_fini(&c->unseen, NULL);
    gt_strmap_fini(&c->timed, NULL);
    gt_jobctl_gc_free(c);
    gt_strmap_fini(&c->live_jobs, NULL);
    gt_strmap_fini(&c->settled, NULL);
    gt_strmap_fini(&c->held_queued, NULL);
    gt_strmap_fini(&c->sync_jobs, NULL);
    gt_volctl_fini(c);
    gt_sched_decisions_fini(&c->dec);
    gt_nbctl_free(c->nb);
    gt_modelctl_free(c->models);
    gt_isvcctl_free(c->isvc);
    gt_sched_model_free(c->model);
    gt_telemetry_free(c->tel);
    gt_ledger_free(c->ledger);
    free(c);
}
