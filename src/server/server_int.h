/*
 * server internals, shared by the files of src/server only.
 *
 * struct gt_server is the whole daemon: configuration, event loop, HTTP
 * server, store, tokens, the access index, metrics, watch streams and the
 * event recorder. Everything runs on the loop thread; the store's writer
 * thread reports back to it through its done callbacks.
 */
#ifndef GT_SERVER_INT_H
#define GT_SERVER_INT_H

#include <event2/event.h>
#include <event2/http.h>

#include "common/strmap.h"
#include "sched/sched.h"
#include "server/server.h"
#include "store/store.h"

struct gt_watch_stream;
struct gt_events;
struct gt_ctl;
struct evkeyvalq;

/* The daemon. */
struct gt_server {
    const struct gt_server_config *cfg;
    struct event_base *base;
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    struct gt_store *store;
    struct gt_server_tokens *tokens;
    struct gt_server_access *access;
    struct gt_store_watch *index_watch; /* all keys: access index and object counts */
    struct gt_metrics metrics;
    struct gt_events *events;
    struct gt_ctl *ctl;              /* controllers and the scheduler */
    struct gt_watch_stream *streams; /* open watch streams (doubly linked) */
    struct event *sig_term, *sig_int, *drain_timer, *fault_timer;
    struct gt_req *fault_req; /* /debug/fault waiting for in-flight writes to finish */
    enum gt_store_fault fault_point;
    int fault_nth;
    int64_t n_inflight;           /* store writes submitted, not yet done */
    bool draining;                /* SIGTERM: no new work, exit once writes are done */
    bool failed;                  /* fsync failed: refuse writes and exit 1 */
    unsigned char uuid_pool[512]; /* random bytes for gt_uuid4: the last */
    size_t uuid_pool_left;        /* uuid_pool_left of them are unused */
    int exit_code;
};

/* One HTTP request being served; lives until the reply is sent (for writes,
 * until the store's done callback). */
struct gt_req {
    struct gt_server *s;
    struct evhttp_request *req;
    const struct gt_server_user *user;
    struct gt_route route;
    enum gt_metrics_verb mverb;
    int64_t start_ns;
    /* writes */
    json_t *body;       /* parsed request body, or NULL */
    json_t *obj;        /* the object being written (without resourceVersion) */
    char *key;          /* its store key */
    char *value;        /* its stored text */
    int64_t client_rv;  /* resourceVersion the client asked for, 0: none */
    int64_t stored_rev; /* mod_rev of the stored object the write replaces */
    int64_t submit_ns;  /* when the store write was queued */
    int retries;
    bool soft_delete; /* DELETE became deletionTimestamp + spec.stop */
};

/* ---- http.c ---- */
int64_t gt_now_ns(void);
/* Finish r with a Status error; code is a GT_E* code. Frees r. */
void gt_req_error(struct gt_req *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Finish r with an error carried in err (its code and message). Frees r. */
void gt_req_error_err(struct gt_req *r, const struct gt_err *err);
/* Finish r with http_code and JSON text body (copied). Frees r. */
void gt_req_reply(struct gt_req *r, int http_code, const char *json, size_t len);
/* Finish r with http_code and body (copied) of Content-Type ctype. Frees r. */
void gt_req_reply_as(struct gt_req *r, int http_code, const char *ctype, const char *body,
                     size_t len);
/* Release r without replying (the stream took over the request). */
void gt_req_free(struct gt_req *r);
/* Append obj's stored text with metadata.resourceVersion = rev (and, for
 * Nodes, the computed status.allocated) to out. */
void gt_render_object(const struct gt_server *s, struct gt_buf *out,
                      const struct gt_kind_info *kind, const char *text, size_t len, int64_t rev);
/* Same as a JSON value (caller json_decref()s), or NULL if text is bad. */
json_t *gt_render_json(const struct gt_server *s, const struct gt_kind_info *kind, const char *text,
                       size_t len, int64_t rev);
/* The project an object of kind belongs to for access: its metadata.project,
 * a Project's own name, an Event's involvedObject.project; NULL if none. */
const char *gt_access_project_of(const struct gt_kind_info *kind, const json_t *obj);
/* The libevent request callback. */
void gt_http_handle(struct evhttp_request *req, void *arg);
/* Parse "resourceVersion" query values: 0 and *rev, or -GT_EBADREQ. */
int gt_parse_rev(const char *s, int64_t *rev);

/* ---- ui.c: the dashboard's files ---- */
/* Is path one of the dashboard's ("/", "/index.html", "/assets/...")? */
bool gt_ui_path(const char *path);
/* Answer a request for a dashboard path (no token needed): the file from
 * the dashboard directory with its cache headers, 404 when absent, 405 for
 * methods other than GET and HEAD. Frees r. */
void gt_ui_serve(struct gt_req *r, enum evhttp_cmd_type cmd, const char *path);

/* ---- write.c ---- */
void gt_write_create(struct gt_req *r);
void gt_write_update(struct gt_req *r); /* PUT of the object or its /status */
void gt_write_delete(struct gt_req *r, int64_t expected_rev);
void gt_write_binding(struct gt_req *r);
/* A fresh random UUID v4 into buf (>= 37 bytes), from s's pool of
 * getrandom bytes. */
void gt_uuid4(struct gt_server *s, char *buf, size_t len);

/* ---- watch.c ---- */
/* Start a watch stream for r's collection (r->route), from rev (-1: now),
 * filtered by the selectors (taken) and the caller's access. Replies itself. */
void gt_watch_start(struct gt_req *r, int64_t rev, struct gt_selector *lsel,
                    struct gt_fieldsel *fsel);
/* End every open stream cleanly (shutdown). */
void gt_watch_end_all(struct gt_server *s);

/* ---- events.c ---- */
struct gt_events *gt_events_new(struct gt_server *s);
/* Flush pending counts (shutdown) and free. */
void gt_events_free(struct gt_events *ev);
/* Record an Event about obj (a stored object of kind; borrowed): folded by
 * (uid, reason). type is "Normal" or "Warning". */
void gt_events_record(struct gt_events *ev, const struct gt_kind_info *kind, const json_t *obj,
                      const char *type, const char *reason, const char *message);
/* Queue the writes of every pending increment now. */
void gt_events_flush(struct gt_events *ev);

/* ---- ctl.c: the controllers' cache of stored objects and their writes ---- */

/* One cached stored object. */
struct gt_cobj {
    char *key;
    json_t *obj;
    int64_t rev; /* mod_rev */
};

struct gt_ctl {
    struct gt_server *s;
    struct gt_strmap objs[GT_KIND_COUNT]; /* key -> struct gt_cobj (no Events) */
    struct gt_strmap holding;     /* task key -> its cobj (borrowed): tasks holding a node */
    struct gt_strmap inflight;    /* key -> count of controller writes in flight */
    struct gt_strmap dirty_jobs;  /* job keys to reconcile this turn */
    struct gt_strmap dirty_tasks; /* task keys to reconcile this turn */
    struct gt_strmap waits;       /* job model id -> its last wait message (char *) */
    struct gt_strmap in_model;    /* job keys added to the scheduler model */
    /* job keys added to the model since the last cycle: their reconcile
     * waits for it, which marks them dirty */
    struct gt_strmap unseen;
    struct gt_strmap fresh; /* key -> a committed write of ours until its watch event */
    struct gt_strmap timed; /* job keys whose next step is due by time (gt_jobctl_tick) */
    /* job keys with a status write of ours in flight after which a
     * reconcile would change nothing (jobctl.c): its write_done and watch
     * event do not mark the job dirty; the event puts it in sync_jobs, the
     * jobs that only the model sync (gt_feed_sync_job) must see */
    struct gt_strmap settled;
    struct gt_strmap sync_jobs;
    struct event *kick; /* runs once per loop turn when something changed */
    struct event *tick; /* every second: node lifecycle, a cycle */
    bool want_cycle;
    struct event *cycle_timer;  /* a cycle deferred to keep the gap between cycles */
    int64_t last_cycle_ns;      /* monotonic (gt_now_ns), when the last cycle started */
    int64_t last_cycle_cost_ns; /* how long it took */
    int64_t start_ms;
    struct gt_sched_model *model;
    const struct gt_sched_policy *policy;
    struct gt_sched_decisions dec;
};

struct gt_ctl *gt_ctl_new(struct gt_server *s);
/* Free after the store is closed (its callbacks may still reach the cache). */
void gt_ctl_free(struct gt_ctl *c);
/* Cache one stored object at start-up (before gt_ctl_start). */
void gt_ctl_load(struct gt_ctl *c, const struct gt_kind_info *kind, const struct gt_store_kv *kv);
/* Build the scheduler model from the cache and start the timers. */
int gt_ctl_start(struct gt_ctl *c, struct gt_err *err);
/* A store change (from the server's watch on all keys). */
void gt_ctl_event(struct gt_ctl *c, const struct gt_kind_info *kind,
                  const struct gt_store_event *ev);
/* The cached object at key (borrowed), or NULL (always for Events, which
 * are not cached, and when c is NULL: a server without controllers). */
const struct gt_cobj *gt_ctl_get(const struct gt_ctl *c, enum gt_kind kind, const char *key);
/* Run the reconcilers and the scheduler at the end of this loop turn. */
void gt_ctl_kick(struct gt_ctl *c);
void gt_ctl_mark_job(struct gt_ctl *c, const char *project, const char *job);
/* Is a controller write to key in flight? */
bool gt_ctl_busy(const struct gt_ctl *c, const char *key);
typedef void (*gt_ctl_done_fn)(struct gt_ctl *c, int rc, void *arg);
/* Write obj (NULL for DELETE) at key on the controllers' behalf,
 * conditional on expected_rev (0: any; CREATE ignores it). done (may be
 * NULL) runs when it is durable or failed; the owning job is reconciled
 * again afterwards (not after a settled job status write: c->settled). A
 * reference to obj is kept and becomes the cached object once the write
 * commits, so the caller must not change obj after the call (drop its own
 * reference as usual). Returns 0 or the immediate error (done not
 * called). */
int gt_ctl_write(struct gt_ctl *c, enum gt_store_op op, const char *key, json_t *obj,
                 int64_t expected_rev, gt_ctl_done_fn done, void *arg);
/* A write of obj at key committed as revision rev (from a done callback,
 * which runs before the write's watch event): the cache takes a reference
 * and uses obj for that event instead of parsing the stored text, so obj
 * must equal what was stored and must not change afterwards. c NULL: no-op. */
void gt_ctl_written(struct gt_ctl *c, enum gt_kind kind, const char *key, int64_t rev, json_t *obj);
/* The project's allowPrivileged and department (borrowed, may be NULL). */
bool gt_ctl_project_privileged(const struct gt_ctl *c, const char *project);
const char *gt_ctl_project_department(const struct gt_ctl *c, const char *project);

/* ---- jobctl.c: the job and task controllers ---- */
/* Reconcile the cached job at key: its tasks, restarts, deletion and
 * status. A status-only write that a reconcile of its result would not
 * change leaves key in c->settled (see there). */
void gt_jobctl_reconcile_job(struct gt_ctl *c, const char *key);
void gt_jobctl_reconcile_task(struct gt_ctl *c, const char *key);
/* Admission of a Job create by user: 0, or GT_EINVAL with err. */
int gt_jobctl_admit(struct gt_ctl *c, const json_t *job, const struct gt_server_user *user,
                    struct gt_err *err);
/* DELETE of a Job or Task: if it must not go at once, turn stored (the
 * stored object, modified in place) into its soft-deleted form and return
 * true; false: delete now. */
bool gt_jobctl_soft_delete(struct gt_ctl *c, enum gt_kind kind, json_t *stored);
/* Mark the jobs whose next step is due by time (deadline, back-off, ttl);
 * every second. Visits only c->timed, not every job. */
void gt_jobctl_tick(struct gt_ctl *c);
/* The cached job at key is now job (borrowed; NULL: gone): keep c->timed,
 * the jobs gt_jobctl_tick visits, current. */
void gt_jobctl_note_job(struct gt_ctl *c, const char *key, const json_t *job);
/* What the tasks of this cycle's binds get in their binding write: a JSON
 * object task id -> {ports, node, env, hosts} (caller json_decref()s).
 * Ports come from each node's --port-range, lowest free among the tasks
 * holding it and the other binds; env and hosts from the job's replicas as
 * bound now (a gang binds in one cycle, so the master's port is known). */
json_t *gt_jobctl_bind_plan(struct gt_ctl *c, const struct gt_sched_bind *binds, size_t n);
/* Put task_id's plan (borrowed) into task (the binding's copy): spec.ports,
 * spec.hosts, and the env appended to spec.template.env. */
void gt_jobctl_bind_apply(const json_t *plan, const char *task_id, json_t *task);

/* ---- feeder.c: the scheduler model, kept from the store, and the cycle ---- */
int gt_feed_build(struct gt_ctl *c, struct gt_err *err);
/* A cached object changed: old and now are the previous and current JSON
 * (either NULL). */
void gt_feed_change(struct gt_ctl *c, enum gt_kind kind, const char *key, const json_t *old,
                    const json_t *now);
/* Add, re-sync or remove the job at key in the model as the cache says. A
 * job added waits in c->unseen for the next cycle. */
void gt_feed_sync_job(struct gt_ctl *c, const char *key);
/* Node lost: free everything on it in the model at once. */
void gt_feed_node_lost(struct gt_ctl *c, const json_t *node);
/* Run one scheduling cycle and apply its decisions; the jobs of c->unseen
 * become dirty. */
void gt_feed_cycle(struct gt_ctl *c);
/* The wait message last recorded for a job key (borrowed), or NULL:
 * "Reason: text" with Reason the wait reason (Quota, Unschedulable). */
const char *gt_feed_wait(const struct gt_ctl *c, const char *job_key);
/* Write spec.stop{reason, gracePeriodSeconds from the template} on the
 * cached task o unless it is stopped, ended or being written; record an
 * Event with reason and message (borrowed) on its job. 0 if written. */
int gt_feed_stop_task(struct gt_ctl *c, const struct gt_cobj *o, const char *reason,
                      const char *message);

/* ---- nodes.c ---- */
/* Mark lost nodes and fail their tasks, and stop the tasks of draining
 * nodes (every second). */
void gt_nodectl_tick(struct gt_ctl *c);
/* status.allocated of a node from the cache (new reference). */
json_t *gt_nodectl_allocated(const struct gt_ctl *c, const char *node);

/* ---- logproxy.c ---- */
/* GET .../tasks/T/log: proxy to the node's agent. Replies itself. */
void gt_logproxy_serve(struct gt_req *r, const struct evkeyvalq *q);

/* ---- server.c ---- */
/* Queue a store write on behalf of the server, counting it in flight;
 * returns gt_store_write's result. done must call gt_server_write_done. */
int gt_server_write(struct gt_server *s, enum gt_store_op op, const char *key, const char *value,
                    size_t len, int64_t expected_rev, gt_store_done_fn done, void *arg);
/* Account for a finished write (metrics, in-flight count, fsync failure). */
void gt_server_write_done(struct gt_server *s, int rc, int64_t submit_ns);
/* Answer /debug/fault. */
void gt_server_fault(struct gt_req *r);

#endif
