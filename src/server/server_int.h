/*
 * server internals, shared by the files of src/server only: the types
 * every layer sees (the daemon, a request, the controllers' cache). Each
 * file's functions are declared in its own header (cache.h for cache.c,
 * ...), which the files above it include; gantryd's life cycle
 * (server.c) is declared here.
 *
 * struct gt_server is the whole daemon: configuration, event loop, HTTP
 * server, store, tokens, the access index, metrics, watch streams and the
 * event recorder. Everything runs on the loop thread; the store's writer
 * thread reports back to it through its done callbacks.
 */
#ifndef GT_SERVER_INT_H
#define GT_SERVER_INT_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "common/faultpoint.h"
#include "common/strmap.h"
#include "sched/sched.h"
#include "server/server.h"
#include "store/store.h"

struct gt_watch_stream;
struct gt_events;
struct gt_ctl;
struct gt_nbctl;
struct gt_rcache;
struct gt_req;
struct evkeyvalq;

/* A create's preparation (struct gt_ctl_hooks.prepare) finished: rc 0 and
 * the object is ready to store, or the error with err. */
typedef void (*gt_prepared_fn)(void *arg, int rc, const struct gt_err *err);

/* The block size in which a /metrics answer is built (struct
 * gt_ctl_hooks.metrics). */
#define GT_METRICS_SPILL_BYTES (64 * 1024)

/* What the transport (HTTP, routes, auth, watch: write.c, reply.c) asks
 * of the controllers, which register this table in struct gt_server when
 * they are made (ctl.c): calls go from the transport up into them only
 * through it, so no transport file includes a controller's header. */
struct gt_ctl_hooks {
    /* Admission of t, the object a create (create: true) or an update by
     * user writes (validated and decoded, borrowed; NULL for a kind
     * without a typed form): 0, or GT_EINVAL with err naming the field. */
    int (*admit)(struct gt_ctl *c, const struct gt_api_object *t, bool create,
                 const struct gt_server_user *user, struct gt_err *err);
    /* DELETE of a stored object of kind: if it must not go at once, turn
     * stored (modified in place) into its soft-deleted form and return
     * true; false: delete now. */
    bool (*soft_delete)(struct gt_ctl *c, enum gt_kind kind, json_t *stored);
    /* DELETE of the object name of kind (borrowed; project: its project
     * for a project-scoped kind, else NULL): 0 to go ahead, or GT_ECONFLICT
     * with err saying why it must stay (a Project that still holds
     * objects, a Volume in use). */
    int (*refuse_delete)(const struct gt_ctl *c, enum gt_kind kind, const char *project,
                         const char *name, struct gt_err *err);
    /* A create of obj (kind, in project: borrowed; NULL project for a
     * cluster-scoped kind) before its validation: a kind whose names the
     * server gives (a ModelVersion's <model>-v<N>) gets metadata.name set
     * here. 0, or the error with err. */
    int (*name)(struct gt_ctl *c, enum gt_kind kind, const char *project, json_t *obj,
                struct gt_err *err);
    /* A create of obj (admitted, borrowed until done) at key that needs
     * work before its store write: 1 and done(arg, ...) runs later on the
     * loop; 0: none needed; else the error with err (done not called). */
    int (*prepare)(struct gt_ctl *c, enum gt_kind kind, const char *key, json_t *obj,
                   gt_prepared_fn done, void *arg, struct gt_err *err);
    /* The store write of a prepared create finished with rc. */
    void (*created)(struct gt_ctl *c, enum gt_kind kind, const char *key, int rc);
    /* Add to obj, a rendered object of a kind in computed_kinds (modified
     * in place), what is computed on reads and never stored. */
    void (*render)(const struct gt_ctl *c, enum gt_kind kind, json_t *obj);
    unsigned computed_kinds; /* bits 1u << enum gt_kind */
    /* A request a controller serves itself (the notebook proxy, for
     * /projects/P/notebooks/N/...): true if it took r (and frees it). */
    bool (*proxy)(struct gt_ctl *c, struct gt_req *r, const char *path);
    /* Append the controllers' own series to a /metrics answer (Prometheus
     * text format) in out; with spill (may be NULL), out's bytes move to
     * spill whenever they pass GT_METRICS_SPILL_BYTES, so that a large
     * cluster's answer (a few KiB per job) is not also built as one
     * growing block beside it. */
    void (*metrics)(const struct gt_ctl *c, struct gt_buf *out, struct evbuffer *spill);
    /* A request the controllers answer themselves (authenticated, r->user
     * set): the usage, usagerecords, jobstats and nodestats routes and the scalars,
     * history and telemetry subresources. method is an evhttp_cmd_type,
     * query its parsed query string (borrowed). Replies through r. */
    void (*serve)(struct gt_ctl *c, struct gt_req *r, int method, const struct evkeyvalq *query);
};

/* A replica's part (leader.c): not ready until its cache is loaded;
 * elected, it is a leader only once its cache has caught up. */
enum gt_server_role { GT_ROLE_NOT_READY, GT_ROLE_FOLLOWER, GT_ROLE_ELECTED, GT_ROLE_LEADER };

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
    struct gt_rcache *rcache;           /* the API's reads (readcache.c); NULL: from the store */
    struct gt_metrics metrics;
    struct gt_events *events;
    struct gt_ctl *ctl;                   /* controllers and the scheduler */
    const struct gt_ctl_hooks *ctl_hooks; /* registered by ctl; NULL before */
    struct gt_watch_stream *streams;      /* open watch streams (doubly linked) */
    struct event *sig_term, *sig_int, *sig_hup, *drain_timer, *fault_timer;
    struct gt_req *fault_req; /* /debug/fault waiting for in-flight writes to finish */
    enum gt_store_fault fault_point;
    int fault_nth;
    struct gt_faults faults;              /* --fault-points (fault.c names them) */
    int64_t n_inflight;                   /* store writes submitted, not yet done */
    bool draining;                        /* SIGTERM: no new work, exit once writes are done */
    bool failed;                          /* fsync failed: refuse writes and exit 1 */
    struct gt_uuid_pool uuids;            /* for metadata.uid */
    struct gt_registry_key *registry_key; /* --registry-key; NULL: the registry is open */
    unsigned char secret_key[32];         /* keys the values secrets.c derives */
    /* leadership (leader.c) */
    enum gt_server_role role;
    char *replica_id;
    struct gt_store_guard guard; /* strings owned; the controllers' writes carry it */
    bool have_guard;
    int64_t leader_rev;      /* elected at; controllers start once the cache has it */
    uint64_t leader_changes; /* times this replica became leader or lost it */
    struct event *leader_timer;
    /* stop taking work and exit once writes are done (server.c): for the
     * layers below the life cycle, e.g. on a failed fsync */
    void (*drain)(struct gt_server *s, int exit_code);
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
    bool read_ready; /* a read that waited for the cache (readcache.c) and may go on */
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
    bool prepared;    /* a create prepared by the controllers (hooks->created runs) */
};

/* One cached stored object: its JSON and, decoded once when cached, its
 * typed form (which holds a reference to obj; NULL for a kind without
 * one). Both are immutable while cached. */
struct gt_cobj {
    char *key;
    json_t *obj;
    struct gt_api_object *t;
    int64_t rev; /* mod_rev */
};

/* The typed form of a cached object of the named kind (borrowed, valid
 * while o is cached); o must be of that kind. */
static inline const struct gt_api_job *gt_cobj_job(const struct gt_cobj *o)
{
    return (const struct gt_api_job *)o->t;
}
static inline const struct gt_api_imagebuild *gt_cobj_build(const struct gt_cobj *o)
{
    return (const struct gt_api_imagebuild *)o->t;
}
static inline const struct gt_api_task *gt_cobj_task(const struct gt_cobj *o)
{
    return (const struct gt_api_task *)o->t;
}
static inline const struct gt_api_node *gt_cobj_node(const struct gt_cobj *o)
{
    return (const struct gt_api_node *)o->t;
}

struct gt_telemetry;
struct gt_ledger;

/* The runs of one job's tasks in c->holding that have a boundTime: their
 * GPUs (milli) and the sum of each one's milli x boundTime (ms since the
 * epoch), so that the GPU-ms they have served by now is
 * (milli x now - milli_bound) / 1000 without visiting the tasks. */
struct gt_run_sum {
    int64_t tasks;
    int64_t milli;
    __int128 milli_bound;
};

struct gt_ctl {
    struct gt_server *s;
    struct gt_telemetry *tel;             /* scalars and utilisation history (telemetry.c) */
    struct gt_ledger *ledger;             /* GPU-seconds per task run (ledger.c) */
    struct gt_strmap objs[GT_KIND_COUNT]; /* key -> struct gt_cobj (no Events) */
    struct gt_strmap holding;      /* task key -> its cobj (borrowed): tasks holding a node */
    struct gt_strmap holding_on;   /* node name -> struct gt_strmap * of its part of holding */
    struct gt_strmap holding_jobs; /* "project/job" -> struct gt_run_sum of its part of holding */
    struct gt_strmap inflight;     /* key -> count of controller writes in flight */
    struct gt_strmap dirty_jobs;   /* job keys to reconcile this turn */
    struct gt_strmap dirty_tasks;  /* task keys to reconcile this turn */
    struct gt_strmap dirty_builds; /* ImageBuild keys to reconcile this turn (buildctl.c) */
    struct gt_strmap waits;        /* job model id -> its last wait message (char *) */
    struct gt_strmap in_model;     /* job keys added to the scheduler model */
    /* job keys added to the model since the last cycle: their reconcile
     * waits for it, which marks them dirty */
    struct gt_strmap unseen;
    struct gt_strmap fresh; /* key -> a committed write of ours until its watch event */
    /* key -> revision of our committed delete, applied to the cache at once
     * on a shared store (cache.c), until the watch has passed it */
    struct gt_strmap gone;
    /* gt_ctl_event (ctl.c), for cache.c to apply a write of ours at once */
    void (*event)(struct gt_ctl *c, const struct gt_kind_info *kind,
                  const struct gt_store_event *ev);
    struct gt_strmap timed; /* job keys whose next step is due by time (gt_jobctl_tick) */
    /* the terminated-task collector (jobctl.c): its last pass, the task
     * keys that pass chose (oldest end first), the next to delete and how
     * many of its deletes are in flight */
    struct {
        int64_t pass_ms;
        char **keys;
        size_t n, next, inflight;
    } task_gc;
    /* job keys of cached jobs not finished: those the tick's retry of jobs
     * missing from the model visits (all jobs, finished ones kept, would
     * cost a scan of every job every second) */
    struct gt_strmap live_jobs;
    /* job keys with a status write of ours in flight after which a
     * reconcile would change nothing (jobctl.c): its write_done and watch
     * event do not mark the job dirty; the event puts it in sync_jobs, the
     * jobs that only the model sync (gt_feed_sync_job) must see */
    struct gt_strmap settled;
    /* job key -> when (gt_now_ms, as intptr_t) its held-back first Queued
     * status is due (jobctl.c hold_queued) */
    struct gt_strmap held_queued;
    struct gt_strmap sync_jobs;
    /* Volume keys -> struct held (volctl.c): creates whose capacity is held
     * until the cache has the stored Volume */
    struct gt_strmap vol_held;
    struct gt_strmap vol_claims; /* writable ReadWriteOnce Volume key -> claiming job key */
    struct event *kick;          /* runs once per loop turn when something changed */
    struct event *tick;          /* every second: node lifecycle, a cycle */
    bool want_cycle;
    struct event *cycle_timer;  /* a cycle deferred to keep the gap between cycles */
    int64_t last_cycle_ns;      /* monotonic (gt_now_ns), when the last cycle started */
    int64_t last_cycle_cost_ns; /* how long it took */
    int64_t start_ms;
    struct gt_sched_model *model;
    struct gt_nbctl *nb;        /* the notebook controller (nbctl.c) */
    struct gt_modelctl *models; /* the model registry (modelctl.c) */
    struct gt_isvcctl *isvc;    /* the serving controller and gateway (isvcctl.c) */
    const struct gt_sched_policy *policy;
    struct gt_sched_decisions dec;
};

/* ---- server.c ---- */
/* Start a daemon whose s->cfg, s->base (an event loop), s->store and
 * s->tokens are set: the access index and the controllers from the store,
 * the timers and signals, and the HTTP listener on cfg->listen (port 0: any
 * free one; s->bound says which). 0 or the error, with err; either way
 * gt_server_stop frees what s holds. */
int gt_server_start(struct gt_server *s, struct gt_err *err);
/* Free everything s holds: streams, listener, store, caches, tokens, loop. */
void gt_server_stop(struct gt_server *s);

#endif
