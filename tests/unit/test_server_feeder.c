/*
 * Unit tests of the scheduler wiring: its pure parts (a department's
 * computed status (used and borrowed) from a real scheduler model, a
 * Project's spec.hard fed to the model as its hard cap, the drain test of
 * a Node, the resource amounts status fields show), and, over a real
 * controllers' cache, store (memory backend) and event loop, what a Job
 * create costs in writes: the cache takes the objects this process wrote
 * without parsing them back, a new job's first status waits for its first
 * cycle and carries its wait reason, and an unchanged wait reason is not
 * written again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <event2/event.h>

#include "sched/sched.h"
#include "server/cache.h"
#include "server/ctl.h"
#include "server/events.h"
#include "server/feeder.h"
#include "server/jobctl.h"
#include "server/ledger.h"
#include "server/server_int.h"
#include "test_server_util.h"

static const char *res_at(const json_t *st, const char *which, const char *res)
{
    return json_string_value(json_object_get(json_object_get(st, which), res));
}

/* A model with one Ready node "n1": 8 GPUs in two groups of 4, 64 CPUs, 1 TiB. */
static struct gt_sched_model *model_with_node(void)
{
    struct gt_sched_model *m = gt_sched_model_new();
    struct gt_sched_gpu_spec gpus[8];
    for (int i = 0; i < 8; i++) {
        gpus[i] = (struct gt_sched_gpu_spec){.index = i, .group = i / 4, .healthy = true};
    }
    struct gt_sched_node_spec node = {.name = "n1",
                                      .cpu_milli = 64000,
                                      .memory_bytes = 1LL << 40,
                                      .ready = true,
                                      .gpus = gpus,
                                      .n_gpus = 8};
    assert_int_equal(gt_sched_node_add(m, &node, NULL), 0);
    return m;
}

static void test_department_status_used_and_borrowed(void **state)
{
    (void)state;
    struct gt_sched_model *m = model_with_node();
    struct gt_sched_res g = {.cpu_milli = 8000, .memory_bytes = 1LL << 33, .gpu_milli = 4000};
    struct gt_sched_res l = {.cpu_milli = 8000, .memory_bytes = 1LL << 33, .gpu_milli = 8000};
    assert_int_equal(gt_sched_department_set(m, "cv", &g, &l, NULL), 0);
    assert_null(gt_department_status(m, "nlp"));

    json_t *st = gt_department_status(m, "cv");
    assert_string_equal(res_at(st, "used", "nvidia.com/gpu"), "0");
    assert_string_equal(res_at(st, "borrowed", "nvidia.com/gpu"), "0");
    json_decref(st);

    struct gt_sched_group_spec grp = {.name = "worker",
                                      .replicas = 6,
                                      .req = {.cpu_milli = 500, .memory_bytes = 1024, .gpus = 1}};
    struct gt_sched_job_spec job = {
        .id = "p/j", .department = "cv", .project = "p", .groups = &grp, .n_groups = 1};
    assert_int_equal(gt_sched_job_add(m, &job, NULL), 0);
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    gt_sched_cycle(m, 1000, gt_sched_policy_by_name("gantry"), &d);
    assert_int_equal(d.n_binds, 6);
    gt_sched_decisions_fini(&d);

    st = gt_department_status(m, "cv");
    assert_string_equal(res_at(st, "used", "nvidia.com/gpu"), "6");
    assert_string_equal(res_at(st, "used", "cpu"), "3000m");
    assert_string_equal(res_at(st, "used", "memory"), "6144");
    /* borrowed: only what is above the guarantee, per resource */
    assert_string_equal(res_at(st, "borrowed", "nvidia.com/gpu"), "2");
    assert_string_equal(res_at(st, "borrowed", "cpu"), "0m");
    json_decref(st);
    gt_sched_model_free(m);
}

static size_t cycle_binds(struct gt_sched_model *m, int64_t now_ms, char **wait)
{
    struct gt_sched_decisions d;
    gt_sched_decisions_init(&d);
    gt_sched_cycle(m, now_ms, gt_sched_policy_by_name("gantry"), &d);
    size_t n = d.n_binds;
    *wait = d.n_waits ? gt_xstrdup(d.waits[0].message) : NULL;
    gt_sched_decisions_fini(&d);
    return n;
}

/* spec.hard caps the resources it names; without it the cap is gone. */
static void test_project_cap_from_spec_hard(void **state)
{
    (void)state;
    struct gt_sched_model *m = model_with_node();
    struct gt_sched_res q = {.cpu_milli = 64000, .memory_bytes = 1LL << 40, .gpu_milli = 8000};
    assert_int_equal(gt_sched_department_set(m, "cv", &q, &q, NULL), 0);

    json_t *p = json_loads("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"department\":\"cv\","
                           "\"hard\":{\"nvidia.com/gpu\":\"2\",\"cpu\":\"1500m\"}}}",
                           0, NULL);
    assert_non_null(p);
    assert_int_equal(cap_sync_json(m, "p", p), 0);
    struct gt_sched_res hard;
    assert_int_equal(gt_sched_project_get(m, "p", &hard, NULL), 0);
    assert_int_equal(hard.gpu_milli, 2000);
    assert_int_equal(hard.cpu_milli, 1500);
    assert_int_equal(hard.memory_bytes, GT_SCHED_NO_CAP);
    assert_int_equal(hard.storage_bytes, GT_SCHED_NO_CAP);

    struct gt_sched_group_spec grp = {
        .name = "worker", .replicas = 3, .req = {.cpu_milli = 500, .gpus = 1}};
    struct gt_sched_job_spec job = {
        .id = "p/j", .department = "cv", .project = "p", .groups = &grp, .n_groups = 1};
    assert_int_equal(gt_sched_job_add(m, &job, NULL), 0);
    char *wait;
    assert_int_equal(cycle_binds(m, 1000, &wait), 0);
    assert_non_null(wait);
    assert_non_null(strstr(wait, "ExceedsProjectCap: the gang of 3 tasks needs nvidia.com/gpu "
                                 "3 but project p's hard cap is 2 (spec.hard)"));
    free(wait);

    /* spec.hard gone (edited out, or the Project deleted): no cap. */
    json_object_del(json_object_get(p, "spec"), "hard");
    assert_int_equal(cap_sync_json(m, "p", p), 0);
    assert_int_equal(cap_sync_json(m, "p", NULL), 0);
    assert_int_equal(gt_sched_project_get(m, "p", &hard, NULL), 0); /* its job keeps it */
    assert_int_equal(hard.gpu_milli, GT_SCHED_NO_CAP);
    assert_int_equal(cycle_binds(m, 2000, &wait), 3);
    free(wait);
    json_decref(p);
    gt_sched_model_free(m);
}

static void test_resources_json_fractions(void **state)
{
    (void)state;
    json_t *r = gt_resources_json(1500, 1 << 20, 2500);
    assert_string_equal(json_string_value(json_object_get(r, "nvidia.com/gpu")), "2500m");
    assert_string_equal(json_string_value(json_object_get(r, "cpu")), "1500m");
    assert_string_equal(json_string_value(json_object_get(r, "memory")), "1048576");
    json_decref(r);
}

static void test_node_draining_needs_no_execute(void **state)
{
    (void)state;
    json_t *n = json_loads("{\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"x\","
                           "\"effect\":\"NoSchedule\"}]}}",
                           0, NULL);
    assert_false(draining_json(n)); /* cordoned only */
    json_array_append_new(
        json_object_get(json_object_get(n, "spec"), "taints"),
        json_pack("{s:s, s:s}", "key", "gantry.dev/drain", "effect", "NoExecute"));
    assert_true(draining_json(n));
    json_decref(n);
}

/* ---- a daemon without HTTP: cache, store, event loop ---- */

struct env {
    struct gt_server_config cfg;
    struct gt_server s;
    char port_range[32];
    int job_events; /* watch events on /jobs/ */
    int task_events;
};

static void env_event(const struct gt_store_event *ev, void *arg)
{
    struct env *e = arg;
    char plural[32];
    const char *slash = strchr(ev->key + 1, '/');
    size_t n = slash ? (size_t)(slash - ev->key - 1) : 0;
    if (n == 0 || n >= sizeof(plural)) {
        return;
    }
    memcpy(plural, ev->key + 1, n);
    plural[n] = '\0';
    const struct gt_kind_info *k = gt_kind_by_plural(plural);
    if (!strcmp(plural, "ledger")) {
        return; /* records, no kind */
    }
    assert_non_null(k);
    e->job_events += k->kind == GT_KIND_JOB;
    e->task_events += k->kind == GT_KIND_TASK;
    gt_ctl_event(e->s.ctl, k, ev);
}

static void write_done(int rc, int64_t rev, const struct gt_err *err, void *arg)
{
    (void)rev;
    (void)err;
    *(int *)arg = rc == 0 ? 1 : -1;
}

/* Open with a Department "d" and a Project "p" cached, the ledger record
 * (JSON) at /ledger/r1 unless NULL, and the controllers started; the
 * store's writer thread reports through the loop. */
static void env_open_ledger(struct env *e, const char *record)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->port_range, sizeof(e->port_range), "30000-32767");
    e->cfg.port_range = e->port_range;
    e->s.cfg = &e->cfg;
    e->s.base = event_base_new();
    assert_non_null(e->s.base);
    struct gt_store_options o = {.backend = &gt_store_memory_backend, .base = e->s.base};
    assert_int_equal(gt_store_open(&o, &e->s.store, NULL), 0);
    e->s.events = gt_events_new(&e->s);
    e->s.ctl = gt_ctl_new(&e->s);
    static const char *const objs[][2] = {
        {"departments", "{\"metadata\":{\"name\":\"d\"}}"},
        {"projects", "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"department\":\"d\"}}"},
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(objs); i++) {
        char key[64];
        snprintf(key, sizeof(key), "/%s/%s", objs[i][0], i ? "p" : "d");
        struct gt_store_kv kv = {.key = key,
                                 .value = (char *)objs[i][1],
                                 .value_len = strlen(objs[i][1]),
                                 .create_rev = 0,
                                 .mod_rev = 0};
        gt_ctl_load(e->s.ctl, gt_kind_by_plural(objs[i][0]), &kv);
    }
    if (record) {
        int done = 0;
        assert_int_equal(gt_store_write(e->s.store, GT_STORE_CREATE, "/ledger/r1", record,
                                        strlen(record), 0, write_done, &done),
                         0);
        for (int i = 0; i < 5000 && !done; i++) {
            event_base_loop(e->s.base, EVLOOP_NONBLOCK);
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        assert_int_equal(done, 1);
    }
    assert_int_equal(gt_ctl_start(e->s.ctl, NULL), 0);
    assert_int_equal(gt_store_watch(e->s.store, "/", 0, env_event, e, &e->s.index_watch, NULL), 0);
}

static void env_open(struct env *e)
{
    env_open_ledger(e, NULL);
}

static void env_close(struct env *e)
{
    gt_store_unwatch(e->s.index_watch);
    gt_events_free(e->s.events);
    gt_store_close(e->s.store);
    gt_ctl_free(e->s.ctl);
    event_base_free(e->s.base);
}

/* Run the loop until done(e) or 5 s; returns done(e). */
static bool env_run(struct env *e, bool (*done)(struct env *e))
{
    for (int i = 0; i < 5000 && !done(e); i++) {
        event_base_loop(e->s.base, EVLOOP_NONBLOCK);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return done(e);
}

static const char *JOB_J =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\","
    "\"project\":\"p\",\"uid\":\"u1\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\","
    "\"creator\":{\"user\":\"alice\",\"uid\":1001}},\"spec\":{\"replicaSpecs\":{\"Worker\":"
    "{\"replicas\":1,\"restartPolicy\":\"Never\",\"template\":{\"command\":[\"true\"]}}}},"
    "\"status\":{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\"}]}}";

/* Store the object text at key, as an API create would. */
static void create(struct env *e, const char *key, const char *text)
{
    assert_int_equal(
        gt_store_write(e->s.store, GT_STORE_CREATE, key, text, strlen(text), 0, NULL, NULL), 0);
}

static const char *queued_message(struct env *e)
{
    const struct gt_cobj *o = gt_ctl_get(e->s.ctl, GT_KIND_JOB, "/jobs/p/j");
    size_t i;
    json_t *cnd;
    json_array_foreach(o ? gt_json_path(o->obj, "status.conditions") : NULL, i, cnd)
    {
        if (!strcmp(json_string_value(json_object_get(cnd, "type")), "Queued")) {
            return json_string_value(json_object_get(cnd, "message"));
        }
    }
    return NULL;
}

static bool job_waits(struct env *e)
{
    const char *m = queued_message(e);
    return m && !strncmp(m, "Unschedulable: ", 15) && !gt_ctl_busy(e->s.ctl, "/jobs/p/j") &&
           e->s.ctl->dirty_jobs.n == 0;
}

/* A Job on a cluster without nodes: its Task is created, and its status
 * is written once, with Queued already saying why it waits; the job's
 * status write does not wait for the task's write to come back in vain. */
static void test_job_create_writes_status_once(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    create(&e, "/jobs/p/j", JOB_J);
    assert_true(env_run(&e, job_waits));
    assert_int_equal(e.task_events, 1);
    assert_int_equal(e.job_events, 2); /* created, then its status once */
    const struct gt_cobj *t = gt_ctl_get(e.s.ctl, GT_KIND_TASK, "/tasks/p/j-worker-0");
    assert_non_null(t);
    assert_string_equal(json_string_value(gt_json_path(t->obj, "status.phase")), "Pending");
    assert_null(gt_strmap_get(&e.s.ctl->unseen, "/jobs/p/j"));
    /* its status write was settled: no reconcile followed it, and one
     * would have changed nothing */
    assert_int_equal(e.s.ctl->settled.n, 0);
    assert_int_equal(e.s.ctl->sync_jobs.n, 0);
    int64_t rev = gt_store_revision(e.s.store);
    gt_jobctl_reconcile_job(e.s.ctl, "/jobs/p/j");
    assert_false(gt_ctl_busy(e.s.ctl, "/jobs/p/j"));
    event_base_loop(e.s.base, EVLOOP_NONBLOCK);
    assert_int_equal(gt_store_revision(e.s.store), rev);
    env_close(&e);
}

/* A cycle that finds the same reason again writes nothing and marks no
 * job; a reported reason that differs is recorded and the job marked. */
static void test_unchanged_wait_not_rewritten(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    create(&e, "/jobs/p/j", JOB_J);
    assert_true(env_run(&e, job_waits));
    struct gt_ctl *c = e.s.ctl;
    const char *was = gt_feed_wait(c, "/jobs/p/j");
    assert_non_null(was);
    char *text = gt_xstrdup(was);
    int64_t rev = gt_store_revision(e.s.store);
    for (int i = 0; i < 3; i++) {
        gt_feed_cycle(c);
        assert_int_equal(c->dirty_jobs.n, 0);
        assert_ptr_equal(gt_feed_wait(c, "/jobs/p/j"), was);
    }
    event_base_loop(e.s.base, EVLOOP_NONBLOCK);
    assert_int_equal(gt_store_revision(e.s.store), rev);
    assert_int_equal(e.job_events, 2);

    /* the cycle reports only waits that changed in the model (so not this
     * one, though the feeder's record changed), and counts every one */
    free(gt_strmap_put(&c->waits, "p/j", gt_xstrdup("Quota: before")));
    gt_feed_cycle(c);
    assert_int_equal(c->dirty_jobs.n, 0);
    assert_string_equal(gt_feed_wait(c, "/jobs/p/j"), "Quota: before");
    assert_int_equal(c->s->metrics.jobs_pending[GT_SCHED_WAIT_UNSCHEDULABLE], 1);
    assert_int_equal(c->s->metrics.jobs_pending[GT_SCHED_WAIT_QUOTA], 0);

    /* a job new to the model has its wait reported, recorded and written */
    assert_int_equal(gt_sched_job_remove(c->model, "p/j", NULL), 0);
    gt_strmap_del(&c->in_model, "/jobs/p/j");
    gt_feed_sync_job(c, "/jobs/p/j");
    gt_feed_cycle(c);
    assert_non_null(gt_strmap_get(&c->dirty_jobs, "/jobs/p/j"));
    assert_string_equal(gt_feed_wait(c, "/jobs/p/j"), text);
    free(text);
    env_close(&e);
}

static const char *JOB_D =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"d\","
    "\"project\":\"p\",\"uid\":\"u2\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\","
    "\"creator\":{\"user\":\"alice\",\"uid\":1001}},\"spec\":{\"runPolicy\":"
    "{\"activeDeadlineSeconds\":600},\"replicaSpecs\":{\"Worker\":"
    "{\"replicas\":1,\"restartPolicy\":\"Never\",\"template\":{\"command\":[\"true\"]}}}},"
    "\"status\":{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\"}]}}";

static bool job_d_gone(struct env *e)
{
    return gt_ctl_get(e->s.ctl, GT_KIND_JOB, "/jobs/p/d") == NULL;
}

/* The tick visits only the jobs whose next step is due by time (here: an
 * activeDeadlineSeconds), kept as the cache changes. */
static void test_tick_visits_timed_jobs(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    create(&e, "/jobs/p/d", JOB_D);
    create(&e, "/jobs/p/j", JOB_J);
    assert_true(env_run(&e, job_waits));
    struct gt_ctl *c = e.s.ctl;
    assert_int_equal(c->timed.n, 1);
    assert_non_null(gt_strmap_get(&c->timed, "/jobs/p/d"));
    gt_strmap_fini(&c->dirty_jobs, NULL);
    gt_strmap_init(&c->dirty_jobs);
    gt_jobctl_tick(c);
    assert_int_equal(c->dirty_jobs.n, 1);
    assert_non_null(gt_strmap_get(&c->dirty_jobs, "/jobs/p/d"));

    /* gone from the cache: gone from the set */
    int64_t rev = gt_ctl_get(c, GT_KIND_JOB, "/jobs/p/d")->rev;
    assert_int_equal(
        gt_store_write(e.s.store, GT_STORE_DELETE, "/jobs/p/d", NULL, 0, rev, NULL, NULL), 0);
    assert_true(env_run(&e, job_d_gone));
    assert_int_equal(c->timed.n, 0);
    env_close(&e);
}

/* The cache keeps the object this process wrote (no parse of the stored
 * text) when the watch event is that write; any other event is parsed. */
static void test_cache_takes_written_object(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    struct gt_ctl *c = e.s.ctl;
    json_t *mine = json_loads(JOB_J, 0, NULL);
    assert_non_null(mine);
    gt_ctl_written(c, GT_KIND_JOB, "/jobs/p/j", 7, mine);
    struct gt_store_event ev = {.type = GT_STORE_EV_PUT,
                                .created = true,
                                .key = "/jobs/p/j",
                                .value = JOB_J,
                                .value_len = strlen(JOB_J),
                                .create_rev = 7,
                                .mod_rev = 7};
    gt_ctl_event(c, gt_kind_get(GT_KIND_JOB), &ev);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_JOB, "/jobs/p/j");
    assert_ptr_equal(o->obj, mine);
    assert_int_equal(o->rev, 7);
    assert_int_equal(c->fresh.n, 0);

    /* written as 8, but the event is a later write by someone else */
    json_t *stale = json_deep_copy(mine);
    json_object_set_new(stale, "kind", json_string("Stale"));
    gt_ctl_written(c, GT_KIND_JOB, "/jobs/p/j", 8, stale);
    ev.created = false;
    ev.mod_rev = 9;
    gt_ctl_event(c, gt_kind_get(GT_KIND_JOB), &ev);
    o = gt_ctl_get(c, GT_KIND_JOB, "/jobs/p/j");
    assert_ptr_not_equal(o->obj, stale);
    assert_true(json_equal(o->obj, mine));
    assert_int_equal(o->rev, 9);
    assert_int_equal(c->fresh.n, 0);
    json_decref(stale);
    json_decref(mine);
    env_close(&e);
}

/* The controllers register the transport's hooks: admission (hostPath
 * volumes beneath the storage roots on every write of a Job or Task,
 * runAsUser on a Job's create) and the kinds whose reads get computed
 * parts; freeing the controllers unregisters them. */
static const char *JOB_TOPO =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\","
    "\"project\":\"p\",\"uid\":\"u1\",\"creationTimestamp\":\"2026-01-01T00:00:00Z\","
    "\"creator\":{\"user\":\"alice\",\"uid\":1001}},\"spec\":{\"replicaSpecs\":{\"Worker\":"
    "{\"replicas\":2,\"restartPolicy\":\"Never\",\"template\":{\"command\":[\"true\"],"
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}}},"
    "\"runPolicy\":{\"schedulingPolicy\":{\"topology\":{\"required\":\"node\"}}}},"
    "\"status\":{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\"}]}}";

static const json_t *job_condition(struct env *e, const char *type)
{
    const struct gt_cobj *o = gt_ctl_get(e->s.ctl, GT_KIND_JOB, "/jobs/p/j");
    size_t i;
    json_t *cnd;
    json_array_foreach(o ? gt_json_path(o->obj, "status.conditions") : NULL, i, cnd)
    {
        if (!strcmp(json_string_value(json_object_get(cnd, "type")), type)) {
            return cnd;
        }
    }
    return NULL;
}

static bool job_inadmissible(struct env *e)
{
    const json_t *c = job_condition(e, "Inadmissible");
    return c && !strcmp(json_string_value(json_object_get(c, "status")), "True") &&
           !gt_ctl_busy(e->s.ctl, "/jobs/p/j") && e->s.ctl->dirty_jobs.n == 0;
}

/* schedulingPolicy.topology reaches the model (a required node gang of 2
 * GPUs on nodes of 1 GPU can never start), the verdict becomes the job's
 * Inadmissible condition, and /metrics lists its placement attempts:
 * none. */
static void test_topology_verdict_and_metrics(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    struct gt_ctl *c = e.s.ctl;
    struct gt_sched_res q = {.cpu_milli = 64000, .memory_bytes = 1LL << 40, .gpu_milli = 8000};
    assert_int_equal(gt_sched_department_set(c->model, "d", &q, &q, NULL), 0);
    for (int i = 0; i < 2; i++) {
        struct gt_sched_gpu_spec gpu = {.index = 0, .healthy = true};
        struct gt_sched_node_spec node = {.name = i ? "n2" : "n1",
                                          .cpu_milli = 64000,
                                          .memory_bytes = 1LL << 40,
                                          .ready = true,
                                          .gpus = &gpu,
                                          .n_gpus = 1};
        assert_int_equal(gt_sched_node_add(c->model, &node, NULL), 0);
    }
    create(&e, "/jobs/p/j", JOB_TOPO);
    assert_true(env_run(&e, job_inadmissible));
    const json_t *cnd = job_condition(&e, "Inadmissible");
    assert_string_equal(json_string_value(json_object_get(cnd, "reason")), "TopologyUnsatisfiable");
    assert_non_null(strstr(json_string_value(json_object_get(cnd, "message")),
                           "required topology node: the gang of 2 tasks needs nvidia.com/gpu 2 "
                           "on one node but the largest Ready node has 1"));
    assert_int_equal(c->s->metrics.jobs_pending[GT_SCHED_WAIT_INADMISSIBLE], 1);
    struct gt_buf b;
    gt_buf_init(&b);
    e.s.ctl_hooks->metrics(c, &b, NULL);
    assert_non_null(strstr(b.data, "# TYPE gantry_scheduler_placement_attempts_total counter\n"));
    assert_non_null(strstr(b.data, "gantry_scheduler_placement_attempts_total{job=\"p/j\"} 0\n"));
    gt_buf_fini(&b);
    env_close(&e);
}

/* A Job of one 1-GPU Worker named name, created at second sec of 2026;
 * it checkpoints (gantry.dev/checkpointed). Caller frees. */
static char *job_ckpt(const char *name, int sec)
{
    return gt_xasprintf(
        "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\","
        "\"project\":\"p\",\"uid\":\"u-%s\",\"creationTimestamp\":\"2026-01-01T00:00:%02dZ\","
        "\"annotations\":{\"gantry.dev/checkpointed\":\"true\"},"
        "\"creator\":{\"user\":\"alice\",\"uid\":1001}},\"spec\":{\"replicaSpecs\":{\"Worker\":"
        "{\"replicas\":1,\"restartPolicy\":\"Never\",\"template\":{\"command\":[\"true\"],"
        "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}}}},"
        "\"status\":{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\"}]}}",
        name, name, sec);
}

static bool both_in_model(struct env *e)
{
    return gt_strmap_get(&e->s.ctl->in_model, "/jobs/p/old") &&
           gt_strmap_get(&e->s.ctl->in_model, "/jobs/p/new") && e->s.ctl->dirty_jobs.n == 0;
}

static bool writes_done(struct env *e)
{
    return e->s.n_inflight == 0 && e->s.ctl->dirty_jobs.n == 0;
}

/* The scheduler's jobs carry the attained service of their runs in the
 * ledger: "old", with 4,000 GPU-s recorded (the gantry order's third
 * queue), goes after "new", which arrived later and has none, in the same
 * department; without the ledger's service arrival would put old first. */
static void test_ledger_service_orders_jobs(void **state)
{
    (void)state;
    struct env e;
    env_open_ledger(&e, "{\"uid\":\"r1\",\"project\":\"p\",\"job\":\"old\",\"task\":"
                        "\"old-worker-0\",\"seconds\":4000,\"gpuMilliSeconds\":4000000}");
    struct gt_ctl *c = e.s.ctl;
    assert_int_equal(gt_ledger_job_gpu_ms(c->ledger, "p/old"), INT64_C(4000000));
    assert_int_equal(gt_ledger_job_gpu_ms(c->ledger, "p/new"), 0);
    struct gt_sched_res q = {.cpu_milli = 64000, .memory_bytes = 1LL << 40, .gpu_milli = 8000};
    assert_int_equal(gt_sched_department_set(c->model, "d", &q, &q, NULL), 0);
    char *old = job_ckpt("old", 0), *fresh = job_ckpt("new", 10);
    create(&e, "/jobs/p/old", old);
    create(&e, "/jobs/p/new", fresh);
    free(old);
    free(fresh);
    assert_true(env_run(&e, both_in_model));
    /* one GPU for the two */
    struct gt_sched_gpu_spec gpu = {.index = 0, .healthy = true};
    struct gt_sched_node_spec node = {.name = "n1",
                                      .cpu_milli = 64000,
                                      .memory_bytes = 1LL << 40,
                                      .ready = true,
                                      .gpus = &gpu,
                                      .n_gpus = 1};
    assert_int_equal(gt_sched_node_add(c->model, &node, NULL), 0);
    gt_feed_cycle(c);
    assert_int_equal(c->dec.n_binds, 1);
    assert_string_equal(c->dec.binds[0].task_id, "p/new-worker-0");
    assert_true(env_run(&e, writes_done)); /* the waits it wrote */
    env_close(&e);
}

/* A task of job j holding GPUs in its cache entry: index0 (milli m0) and
 * index1 (milli m1, 0: none), bound at bound, in phase. */
static void put_task(struct gt_ctl *c, const char *name, const char *phase, const char *bound,
                     int m0, int m1)
{
    char *text = gt_xasprintf(
        "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Task\",\"metadata\":{\"name\":\"%s\","
        "\"project\":\"p\",\"uid\":\"u-%s\"},\"spec\":{\"job\":\"j\",\"nodeName\":\"n1\","
        "\"template\":{\"command\":[\"x\"]},\"gpus\":[{\"index\":0,\"milli\":%d}%s]},"
        "\"status\":{\"phase\":\"%s\",\"boundTime\":\"%s\"}}",
        name, name, m0, m1 ? ",{\"index\":1,\"milli\":1000}" : "", phase, bound);
    char *key = gt_xasprintf("/tasks/p/%s", name);
    struct gt_cobj *old = NULL;
    gt_ctl_cache_put(c, GT_KIND_TASK, key, json_loads(text, 0, NULL), 1, &old);
    gt_cobj_free(old);
    free(key);
    free(text);
}

/* The running service of a job's tasks holding GPUs is summed as they
 * enter and leave c->holding: GPUs in milli and milli x boundTime, so a
 * cycle costs the jobs, not their tasks. */
static void test_holding_jobs_sum(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    struct gt_ctl *c = e.s.ctl;
    int64_t t0;
    assert_int_equal(gt_time_parse("2026-01-01T00:00:00Z", &t0), 0);
    put_task(c, "a", "Running", "2026-01-01T00:00:00Z", 1000, 1000);
    put_task(c, "b", "Bound", "2026-01-01T00:00:10Z", 500, 0);
    const struct gt_run_sum *sum = gt_strmap_get(&c->holding_jobs, "p/j");
    assert_non_null(sum);
    assert_int_equal(sum->tasks, 2);
    assert_int_equal(sum->milli, 2500);
    /* at t0 + 20 s: a served 2 GPUs x 20 s, b 0.5 x 10 s: 45,000 GPU-ms */
    int64_t now = t0 + 20000;
    assert_true((__int128)sum->milli * now - sum->milli_bound == (__int128)45000 * 1000);
    /* b's status update leaves the sum as it was; a's end takes it out */
    put_task(c, "b", "Running", "2026-01-01T00:00:10Z", 500, 0);
    put_task(c, "a", "Succeeded", "2026-01-01T00:00:00Z", 1000, 1000);
    sum = gt_strmap_get(&c->holding_jobs, "p/j");
    assert_non_null(sum);
    assert_int_equal(sum->tasks, 1);
    assert_int_equal(sum->milli, 500);
    assert_true(sum->milli_bound == (__int128)500 * (t0 + 10000));
    gt_ctl_holding_del(c, "/tasks/p/b");
    assert_null(gt_strmap_get(&c->holding_jobs, "p/j"));
    env_close(&e);
}

static void test_ctl_hooks(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    const struct gt_ctl_hooks *h = e.s.ctl_hooks;
    assert_non_null(h);
    assert_true(h->computed_kinds & (1u << GT_KIND_NODE));
    assert_true(h->computed_kinds & (1u << GT_KIND_DEPARTMENT));
    assert_false(h->computed_kinds & (1u << GT_KIND_JOB));
    json_t *job = json_loads(
        "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\","
        "\"project\":\"p\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":1,"
        "\"template\":{\"command\":[\"x\"],\"runAsUser\":1001}}},"
        "\"volumes\":[{\"name\":\"v\",\"hostPath\":\"/data/x\"}]}}",
        0, NULL);
    struct gt_err err = {0};
    struct gt_api_object *t = NULL;
    if (gt_api_decode(GT_KIND_JOB, job, &t, &err)) {
        fail_msg("%s", err.msg);
    }
    struct gt_server_user alice = {.uid = 1001}, bob = {.uid = 1002};
    /* no storage root: the hostPath volume is refused, on an update too */
    assert_int_equal(h->admit(e.s.ctl, t, false, &alice, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "spec.volumes[0].hostPath"));
    gt_err_clear(&err);
    char *roots[] = {(char *)"/data"};
    e.cfg.storage_roots.items = roots;
    e.cfg.storage_roots.n = 1;
    assert_int_equal(h->admit(e.s.ctl, t, true, &alice, &err), 0);
    /* runAsUser is checked on a create only */
    assert_int_equal(h->admit(e.s.ctl, t, true, &bob, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "spec.replicaSpecs.Worker.template.runAsUser"));
    gt_err_clear(&err);
    assert_int_equal(h->admit(e.s.ctl, t, false, &bob, &err), 0);
    /* a kind without a typed form has nothing to admit */
    assert_int_equal(h->admit(e.s.ctl, NULL, true, &bob, &err), 0);
    gt_api_object_free(t);
    json_decref(job);
    e.cfg.storage_roots.items = NULL;
    e.cfg.storage_roots.n = 0;
    env_close(&e);
    assert_null(e.s.ctl_hooks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_department_status_used_and_borrowed),
        cmocka_unit_test(test_project_cap_from_spec_hard),
        cmocka_unit_test(test_resources_json_fractions),
        cmocka_unit_test(test_node_draining_needs_no_execute),
        cmocka_unit_test(test_job_create_writes_status_once),
        cmocka_unit_test(test_unchanged_wait_not_rewritten),
        cmocka_unit_test(test_tick_visits_timed_jobs),
        cmocka_unit_test(test_cache_takes_written_object),
        cmocka_unit_test(test_ctl_hooks),
        cmocka_unit_test(test_ledger_service_orders_jobs),
        cmocka_unit_test(test_holding_jobs_sum),
        cmocka_unit_test(test_topology_verdict_and_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
