/*
 * Hollow nodes (`gantlet --hollow N`), as kubemark's hollow kubelet: one
 * process registers N Nodes named NAME-0 .. NAME-(N-1), each with the fake
 * GPUs of --fake-gpus (UUIDs of its own) and this machine's CPUs and
 * memory, heartbeats them (staggered over the --heartbeat period) and plays
 * the lives of their tasks without starting a process: a Bound task is
 * reported Running after --hollow-start-ms, and Succeeded after the
 * duration its command asks for (seconds: the N of `sleep N`, or of a
 * shell script starting with it, `sh -c "sleep N; ..."`; else 0); a stop
 * ends it Failed with the stop's reason. A task ending within its start
 * delay is reported once, Bound to its end, as the real agent coalesces.
 * Status goes through the same calls a real gantlet makes (POST /nodes,
 * PUT /nodes/N/status, PUT .../tasks/T/status), on the shared API client.
 *
 * One watch on all Tasks feeds every hollow node: events for nodes not
 * ours are dropped by name. A task is forgotten once gantryd shows it
 * terminal or deleted. State: one struct hnode per node (its GPUs, ~2 KiB
 * for 8), one struct htask per task alive here, all owned by struct hollow.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "agent/agent_int.h"
#include "api/api.h"

#define API "/apis/gantry.dev/v1"
/* Heartbeats go out in slices this often, spread over the period. */
#define SLICE_MS 100
#define RETRY_MS 1000
#define BACKOFF_MAX_MS 10000

struct hollow;

struct hnode {
    struct hollow *h;
    char name[64];
    struct gt_gpu_set gpus;
    bool registered;
};

enum hstate {
    H_STARTING, /* Bound, its Running report waits for the start delay */
    H_RUNNING,  /* reported Running, its end waits for its duration */
    H_ENDED,    /* its end is written (or being written) */
};

struct htask {
    struct hollow *h;
    char *uid;
    char *status_path;  /* PUT target of its status */
    json_t *status;     /* the status gantryd last sent (owned) */
    int64_t started_ms; /* wall clock: when it "started" */
    int64_t run_ms;     /* how long it runs */
    enum hstate state;
    bool put_in_flight;
    const char *stop_reason; /* set when gantryd stopped it (points into stop_buf) */
    char stop_buf[64];
    struct event *ev; /* its next step */
};

struct hollow {
    const struct gt_gantlet_config *cfg;
    struct event_base *base;
    struct gt_apic *api;
    struct hnode *nodes;
    size_t n_nodes;
    size_t prefix_len;      /* strlen(cfg->name) */
    struct gt_strmap tasks; /* uid -> struct htask */
    int64_t cpu_milli, mem_bytes;
    size_t next_beat;  /* the node the next heartbeat slice starts at */
    double beat_carry; /* fraction of a node carried to the next slice */
    size_t n_registered;
    struct gt_apic_stream *watch;
    char watch_rv[32];
    int backoff_ms;
    struct event *slice_ev, *rewatch_ev;
    int64_t writes, write_errors; /* status writes answered, and failed */
};

/* ---- nodes ---- */

/* NAME-<i> -> node i, or NULL when the name is not one of ours. */
static struct hnode *node_of(struct hollow *h, const char *name)
{
    if (!name || strncmp(name, h->cfg->name, h->prefix_len) != 0 || name[h->prefix_len] != '-') {
        return NULL;
    }
    char *end;
    errno = 0;
    unsigned long i = strtoul(name + h->prefix_len + 1, &end, 10);
    return *end || errno || i >= h->n_nodes ? NULL : &h->nodes[i];
}

static void node_status_done(int status, json_t *body, void *arg)
{
    struct hnode *n = arg;
    if (status != 200 && status != 201) {
        gt_log_warn("hollow node status write failed", "node=%s status=%d message=\"%s\"", n->name,
                    status, gt_apic_message(body));
    }
}

static void node_status_put(struct hnode *n)
{
    struct hollow *h = n->h;
    json_t *st = json_pack("{s:o}", "status",
                           gt_agent_node_status(&n->gpus, h->cpu_milli, h->mem_bytes,
                                                h->cfg->listen, "http://127.0.0.1:0"));
    char *path = gt_xasprintf(API "/nodes/%s/status", n->name);
    gt_apic_request(h->api, EVHTTP_REQ_PUT, path, st, node_status_done, n);
    free(path);
    json_decref(st);
}

static void node_registered(int status, json_t *body, void *arg)
{
    struct hnode *n = arg;
    if (status != 201 && status != 200 && status != 409) {
        gt_log_warn("cannot register a hollow node", "node=%s status=%d message=\"%s\"", n->name,
                    status, gt_apic_message(body));
        return; /* its next heartbeat slice tries again */
    }
    n->registered = true;
    if (++n->h->n_registered == n->h->n_nodes) {
        gt_log_info("hollow nodes registered", "nodes=%zu", n->h->n_nodes);
    }
    node_status_put(n);
}

static void node_register(struct hnode *n)
{
    json_t *node = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "gantry.dev/v1", "kind", "Node",
                             "metadata", "name", n->name);
    gt_apic_request(n->h->api, EVHTTP_REQ_POST, API "/nodes", node, node_registered, n);
    json_decref(node);
}

/* One slice of the heartbeat period: its share of the nodes, in turn. */
static void on_slice(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct hollow *h = arg;
    h->beat_carry += (double)h->n_nodes * SLICE_MS / ((double)h->cfg->heartbeat_s * 1000);
    for (; h->beat_carry >= 1; h->beat_carry -= 1) {
        struct hnode *n = &h->nodes[h->next_beat];
        h->next_beat = (h->next_beat + 1) % h->n_nodes;
        if (n->registered) {
            node_status_put(n);
        } else {
            node_register(n);
        }
    }
}

/* ---- tasks ---- */

/* How long a task runs: the N of `sleep N` or `SHELL -c "sleep N..."`. */
static int64_t task_run_ms(const struct gt_api_task *task)
{
    const struct gt_api_template *t = &task->spec.template;
    const char *const *cmd = t->command.v;
    size_t n = t->command.n;
    const char *sleep = NULL;
    if (n == 2 && !strcmp(cmd[0], "sleep")) {
        sleep = cmd[1];
    } else if (n == 3 && !strcmp(cmd[1], "-c") && !strncmp(cmd[2], "sleep ", 6)) {
        sleep = cmd[2] + 6;
    }
    double s = sleep ? strtod(sleep, NULL) : 0;
    return s > 0 && s < 1e9 ? (int64_t)(s * 1000) : 0;
}

static void htask_free(struct htask *t)
{
    if (t->ev) {
        event_free(t->ev);
    }
    json_decref(t->status);
    free(t->uid);
    free(t->status_path);
    free(t);
}

/* t is out of the table already: free it now, or once its write is answered. */
static void htask_forget(struct htask *t)
{
    if (t->put_in_flight) {
        t->uid[0] = '\0'; /* the answer frees it */
        return;
    }
    htask_free(t);
}

static void task_step(struct htask *t);

static void put_done(int status, json_t *body, void *arg)
{
    struct htask *t = arg;
    struct hollow *h = t->h;
    t->put_in_flight = false;
    bool ok = status == 200 || status == 201;
    h->writes++;
    if (!t->uid[0]) {
        htask_free(t); /* forgotten meanwhile */
        return;
    }
    if (ok || status == 409 || status == 404) {
        if (ok && json_is_object(json_object_get(body, "status"))) {
            json_decref(t->status);
            t->status = json_deep_copy(json_object_get(body, "status"));
        }
        if (t->state == H_ENDED || status != 200) {
            return; /* ended (or nothing left to say): the watch forgets it */
        }
        task_step(t);
        return;
    }
    h->write_errors++;
    gt_log_warn("hollow task status write failed", "uid=%s status=%d message=\"%s\"", t->uid,
                status, gt_apic_message(body));
    if (t->state == H_ENDED) {
        t->state = H_RUNNING; /* write the end again */
    }
    struct timeval tv = {RETRY_MS / 1000, 0};
    evtimer_add(t->ev, &tv);
}

static void put_status(struct htask *t, json_t *status)
{
    json_t *body = json_pack("{s:o}", "status", status);
    t->put_in_flight = true;
    gt_apic_request(t->h->api, EVHTTP_REQ_PUT, t->status_path, body, put_done, t);
    json_decref(body);
}

static json_t *status_copy(const struct htask *t)
{
    return json_is_object(t->status) ? json_deep_copy(t->status) : json_object();
}

/* Write the task's end: Succeeded, or Failed with the stop's reason. */
static void report_end(struct htask *t)
{
    struct gt_shim_exit ex = {.started_at_ms = t->started_ms, .finished_at_ms = gt_now_ms()};
    if (t->stop_reason) {
        ex.stop_requested = true;
        snprintf(ex.stop_reason, sizeof(ex.stop_reason), "%s", t->stop_reason);
        ex.exit_code = 143;
        ex.signal = 15;
    }
    t->state = H_ENDED;
    put_status(t, gt_task_exit_status(t->status, &ex));
}

static void report_running(struct htask *t)
{
    json_t *st = status_copy(t);
    char ts[32];
    json_object_set_new(st, "phase", json_string("Running"));
    json_object_set_new(st, "startTime",
                        json_string(gt_time_format(t->started_ms, ts, sizeof(ts))));
    t->state = H_RUNNING;
    put_status(t, st);
}

/* Do what is due now, or wait for it. */
static void task_step(struct htask *t)
{
    if (t->put_in_flight || t->state == H_ENDED) {
        return;
    }
    int64_t start_ms = t->started_ms + t->h->cfg->hollow_start_ms;
    int64_t end_ms = start_ms + t->run_ms;
    int64_t now = gt_now_ms();
    int64_t due;
    if (t->stop_reason || now >= end_ms) {
        report_end(t);
        return;
    }
    if (t->state == H_STARTING && now >= start_ms) {
        report_running(t);
        return;
    }
    due = t->state == H_STARTING ? start_ms : end_ms;
    struct timeval tv = {(due - now) / 1000, (suseconds_t)((due - now) % 1000) * 1000};
    evtimer_add(t->ev, &tv);
}

static void on_task_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    task_step(arg);
}

/* A Task from the watch or the list (borrowed JSON). */
static void task_seen(struct hollow *h, json_t *obj, bool deleted)
{
    struct gt_api_task *task = gt_api_task_new(obj);
    const char *uid = task->o.meta.uid;
    struct htask *t = uid ? gt_strmap_get(&h->tasks, uid) : NULL;
    int phase = task->status.phase;
    if (!uid || !node_of(h, task->spec.node_name)) {
        goto out;
    }
    if (deleted || gt_api_task_phase_terminal(phase)) {
        if (t) {
            gt_strmap_del(&h->tasks, uid);
            htask_forget(t);
        }
        goto out;
    }
    if (!t && (phase == GT_TASK_BOUND || phase == GT_TASK_RUNNING) && task->o.meta.name &&
        task->o.meta.project) {
        t = gt_xcalloc(1, sizeof(*t));
        t->h = h;
        t->uid = gt_xstrdup(uid);
        t->status_path = gt_xasprintf(API "/projects/%s/tasks/%s/status", task->o.meta.project,
                                      task->o.meta.name);
        t->started_ms = gt_now_ms();
        t->run_ms = task_run_ms(task);
        t->state = phase == GT_TASK_RUNNING ? H_RUNNING : H_STARTING;
        t->ev = evtimer_new(h->base, on_task_timer, t);
        gt_strmap_put(&h->tasks, t->uid, t);
    }
    if (!t) {
        goto out;
    }
    json_decref(t->status);
    t->status = json_deep_copy(json_object_get(obj, "status"));
    if (task->spec.has_stop && !t->stop_reason) {
        snprintf(t->stop_buf, sizeof(t->stop_buf), "%s",
                 task->spec.stop.reason ? task->spec.stop.reason : "Deleted");
        t->stop_reason = t->stop_buf;
        evtimer_del(t->ev);
    }
    task_step(t);
out:
    gt_api_task_free(task);
}

/* ---- list and watch ---- */

static void list_start(struct hollow *h);

static void schedule_rewatch(struct hollow *h)
{
    h->backoff_ms = h->backoff_ms ? h->backoff_ms * 2 : 200;
    if (h->backoff_ms > BACKOFF_MAX_MS) {
        h->backoff_ms = BACKOFF_MAX_MS;
    }
    struct timeval tv = {h->backoff_ms / 1000, (h->backoff_ms % 1000) * 1000};
    evtimer_add(h->rewatch_ev, &tv);
}

static void watch_event(json_t *ev, void *arg)
{
    struct hollow *h = arg;
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    if (!type || !json_is_object(obj) || !strcmp(type, "ERROR")) {
        return;
    }
    const char *rv = json_string_value(gt_json_path(obj, "metadata.resourceVersion"));
    if (rv) {
        snprintf(h->watch_rv, sizeof(h->watch_rv), "%s", rv);
    }
    h->backoff_ms = 0;
    task_seen(h, obj, !strcmp(type, "DELETED"));
}

static void watch_end(int status, void *arg)
{
    struct hollow *h = arg;
    h->watch = NULL;
    gt_log_warn("hollow task watch ended", "status=%d", status);
    if (status == 410) {
        h->watch_rv[0] = '\0'; /* too old: list again */
    }
    schedule_rewatch(h);
}

static void watch_open(struct hollow *h)
{
    char *path = gt_xasprintf(API "/tasks?watch=true&resourceVersion=%s", h->watch_rv);
    h->watch = gt_apic_stream_open(h->api, path, watch_event, watch_end, h);
    free(path);
}

static void list_done(int status, json_t *body, void *arg)
{
    struct hollow *h = arg;
    json_t *items = json_object_get(body, "items");
    const char *rv = json_string_value(gt_json_path(body, "metadata.resourceVersion"));
    if (status != 200 || !json_is_array(items) || !rv) {
        gt_log_warn("cannot list tasks", "status=%d", status);
        schedule_rewatch(h);
        return;
    }
    size_t i;
    json_t *t;
    json_array_foreach(items, i, t)
    {
        task_seen(h, t, false);
    }
    snprintf(h->watch_rv, sizeof(h->watch_rv), "%s", rv);
    watch_open(h);
}

static void list_start(struct hollow *h)
{
    gt_apic_request(h->api, EVHTTP_REQ_GET, API "/tasks", NULL, list_done, h);
}

static void on_rewatch(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct hollow *h = arg;
    if (h->watch_rv[0]) {
        watch_open(h);
    } else {
        list_start(h);
    }
}

static void on_stop(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    event_base_loopbreak(arg);
}

static void task_free_cb(void *v)
{
    htask_free(v);
}

/* ---- setup ---- */

static int nodes_make(struct hollow *h, struct gt_err *err)
{
    h->nodes = gt_xcalloc(h->n_nodes, sizeof(*h->nodes));
    for (size_t i = 0; i < h->n_nodes; i++) {
        struct hnode *n = &h->nodes[i];
        n->h = h;
        int k = snprintf(n->name, sizeof(n->name), "%s-%zu", h->cfg->name, i);
        if (k < 0 || (size_t)k >= sizeof(n->name)) {
            return gt_err_set(err, GT_EINVAL, "--name %s: too long for hollow node names",
                              h->cfg->name);
        }
        int rc = gt_gpu_discover_fake(&n->gpus, h->cfg->fake_gpus, n->name, err);
        if (rc < 0) {
            gt_err_prefix(err, "--fake-gpus");
            return rc;
        }
    }
    return 0;
}

int gt_hollow_run(const struct gt_gantlet_config *cfg)
{
    struct hollow *h = gt_xcalloc(1, sizeof(*h));
    struct gt_err err = {0};
    char *token = NULL;
    int status = 1;
    h->cfg = cfg;
    h->n_nodes = (size_t)cfg->hollow;
    h->prefix_len = strlen(cfg->name);
    h->cpu_milli = gt_agent_cpu_milli();
    h->mem_bytes = gt_agent_mem_total_bytes();
    gt_strmap_init(&h->tasks);
    gt_log_set_level((enum gt_log_level)cfg->log_level);
    signal(SIGPIPE, SIG_IGN);
    struct event *sigs[2] = {NULL, NULL};
    int rc = cfg->fake_gpus ? 0 : gt_err_set(&err, GT_EINVAL, "--hollow needs --fake-gpus");
    rc = rc < 0 ? rc : gt_gantlet_token_read(cfg->token_file, &token, &err);
    rc = rc < 0 ? rc : nodes_make(h, &err);
    if (rc == 0) {
        h->base = event_base_new();
        rc = gt_apic_new(h->base, cfg->server, token, &h->api, &err);
    }
    if (rc < 0) {
        gt_log_error("gantlet --hollow cannot start", "err=\"%s\"", err.msg);
        goto out;
    }
    gt_apic_pool_set(h->api, (int)cfg->hollow_connections);
    const int signums[2] = {SIGTERM, SIGINT};
    for (int i = 0; i < 2; i++) {
        sigs[i] = evsignal_new(h->base, signums[i], on_stop, h->base);
        evsignal_add(sigs[i], NULL);
    }
    h->slice_ev = event_new(h->base, -1, EV_PERSIST, on_slice, h);
    h->rewatch_ev = evtimer_new(h->base, on_rewatch, h);
    struct timeval slice = {0, SLICE_MS * 1000};
    event_add(h->slice_ev, &slice);
    for (size_t i = 0; i < h->n_nodes; i++) {
        node_register(&h->nodes[i]);
    }
    list_start(h);
    gt_log_info("hollow nodes started", "nodes=%zu prefix=%s gpus=%s server=%s", h->n_nodes,
                cfg->name, cfg->fake_gpus, cfg->server);
    event_base_dispatch(h->base);
    gt_log_info("hollow nodes stopping", "tasks=%zu writes=%lld write_errors=%lld", h->tasks.n,
                (long long)h->writes, (long long)h->write_errors);
    status = 0;
    gt_apic_stream_close(h->watch);
    event_free(h->slice_ev);
    event_free(h->rewatch_ev);
out:
    for (int i = 0; i < 2; i++) {
        if (sigs[i]) {
            event_free(sigs[i]);
        }
    }
    gt_apic_free(h->api); /* before the tasks its pending answers point at */
    gt_strmap_fini(&h->tasks, task_free_cb);
    for (size_t i = 0; h->nodes && i < h->n_nodes; i++) {
        gt_gpu_set_fini(&h->nodes[i].gpus);
    }
    free(h->nodes);
    if (h->base) {
        event_base_free(h->base);
    }
    free(token);
    free(h);
    return status;
}
