/*
 * Private to src/agent: the backend tables behind agent.h (GPU discovery,
 * cgroup versions) and the small file helpers the agent and the shim share.
 */
#ifndef GT_AGENT_INT_H
#define GT_AGENT_INT_H

#include "agent/agent.h"

/* A GPU discovery backend. discover fills an empty set (arg: the NVML
 * library path, or the fake spec); on failure it leaves zero GPUs. */
struct gt_gpu_ops {
    const char *name;
    int (*discover)(struct gt_gpu_set *set, const char *arg, const char *node_name,
                    struct gt_err *err);
    int (*poll_health)(struct gt_gpu_set *set, int timeout_ms, struct gt_err *err);
    void (*fini)(struct gt_gpu_set *set);
};

extern const struct gt_gpu_ops gt_gpu_nvml_ops;
extern const struct gt_gpu_ops gt_gpu_fake_ops;

/* Assign gpus[i].group from a union-find parent array over n_nodes >= n
 * nodes (extra nodes stand for NVSwitches and other link endpoints):
 * groups are numbered by their lowest GPU index. */
void gt_gpu_groups_assign(struct gt_gpu *gpus, size_t n, int *parent);
/* Union-find helpers over a parent array. */
int gt_gpu_uf_find(int *parent, int i);
void gt_gpu_uf_union(int *parent, int a, int b);

/* A cgroup version. Every function gets the task cgroup; see agent.h for
 * what each public wrapper promises. */
struct gt_cgroup_ops {
    const char *name;
    int (*create)(struct gt_cgroup *cg, const struct gt_cgroup_limits *lim, struct gt_err *err);
    int (*add_pid)(const struct gt_cgroup *cg, pid_t pid, struct gt_err *err);
    int (*procs_path)(const struct gt_cgroup *cg, char *buf, size_t len);
    int (*oom_fd)(struct gt_cgroup *cg, struct gt_err *err);
    int (*oom_kills)(const struct gt_cgroup *cg, int64_t *count, struct gt_err *err);
    int (*kill_all)(const struct gt_cgroup *cg, struct gt_err *err);
    int (*remove)(const struct gt_cgroup *cg, struct gt_err *err);
};

extern const struct gt_cgroup_ops gt_cgroup_v1_ops;
extern const struct gt_cgroup_ops gt_cgroup_v2_ops;

/* Shared cgroup file helpers (cgroup.c). Paths are dir + "/" + name. */
int gt_cgroup_write(const char *dir, const char *name, const char *value, struct gt_err *err);
/* Read a small control file into buf (NUL-terminated). 0 or -errno. */
int gt_cgroup_read(const char *dir, const char *name, char *buf, size_t len);
/* "key value" lines (memory.events, memory.oom_control): value of key. */
int gt_cgroup_read_key(const char *dir, const char *name, const char *key, int64_t *value);
/* mkdir -p of root/rel; *created tells whether the leaf was new. */
int gt_cgroup_mkdirs(const char *root, const char *rel, bool *created, struct gt_err *err);
/* rmdir root/rel, retrying EBUSY for about 2 s; ENOENT is success. */
int gt_cgroup_rmdir(const char *root, const char *rel, struct gt_err *err);
/* An existing task cgroup may be reused only when no process is in it:
 * 0, -EBUSY naming the count, or the error of listing its pids. */
int gt_cgroup_require_empty(const struct gt_cgroup *cg, struct gt_err *err);
/* SIGKILL the pids listed in procs_file until it is empty (about 5 s). */
int gt_cgroup_kill_loop(const char *procs_file, struct gt_err *err);
/* Parse a cgroup.procs file into a new array. Missing file: zero pids. */
int gt_cgroup_read_pids(const char *procs_file, pid_t **pids, size_t *n_pids, struct gt_err *err);

/* Files in a state directory (fsutil.c). */

/* Write data to dir/name atomically: a temporary file, then rename; with
 * sync, fsync the file before and the directory after the rename, so the
 * name holds the old or the new content after a crash. 0 or -errno. */
int gt_agent_file_write_atomic(const char *dir, const char *name, const void *data, size_t len,
                               bool sync, struct gt_err *err);
/* Read all of path (at most max_bytes) into a new NUL-terminated buffer
 * (*out, caller frees; *len without the NUL). -EFBIG past max_bytes. */
int gt_agent_file_read(const char *path, size_t max_bytes, char **out, size_t *len,
                       struct gt_err *err);

/* SHA-256 of len bytes of data as 64 lower-case hex digits + NUL (sha256.c). */
void gt_sha256_hex(const void *data, size_t len, char out[65]);

/* The interface owning the IP address of listen ("ADDR:PORT", "[V6]:PORT")
 * into ifname (len bytes). GT_EINVAL for a wildcard or non-IP address,
 * GT_ENOTFOUND when no interface has it (netif.c). */
int gt_netif_of_listen(const char *listen, char *ifname, size_t len, struct gt_err *err);

/* execve spec-style argv with env (NULL-terminated), searching argv[0] in
 * env's PATH (else a default) when it has no '/'. Returns only on failure,
 * with *err the errno to report (shim.c; async-signal-safe). */
void gt_shim_exec_search(char *const *argv, char *const *env, int *err);

/* ---- the gantlet daemon (daemon.c, tasks.c, logserve.c, apiclient.c) ---- */

#include <event2/http.h>
#include <jansson.h>
#include <limits.h>

#include "agent/gantlet.h"

/* HTTP client to gantryd (apiclient.c). */
struct gt_apic;
struct gt_apic_stream;
/* A finished request: status 0 when no answer came (connection failed);
 * body is the parsed JSON answer (borrowed for the call) or NULL. */
typedef void gt_apic_done_fn(int status, json_t *body, void *arg);
/* One watch event, parsed (borrowed for the call). */
typedef void gt_apic_line_fn(json_t *event, void *arg);
/* The stream ended (status 0: connection lost); the stream is freed
 * right after, so the owner drops its pointer here. */
typedef void gt_apic_end_fn(int status, void *arg);

/* A client of url ("http://HOST:PORT") sending "Bearer token" (copied).
 * GT_EINVAL for a bad URL. Free with gt_apic_free. */
int gt_apic_new(struct event_base *base, const char *url, const char *token, struct gt_apic **out,
                struct gt_err *err);
void gt_apic_free(struct gt_apic *c);
/* Send method path with body (borrowed, may be NULL); cb (may be NULL) runs
 * on the loop once answered or failed. */
void gt_apic_request(struct gt_apic *c, enum evhttp_cmd_type method, const char *path,
                     const json_t *body, gt_apic_done_fn *cb, void *arg);
/* GET path as a newline-delimited JSON stream on its own connection. */
struct gt_apic_stream *gt_apic_stream_open(struct gt_apic *c, const char *path,
                                           gt_apic_line_fn *line_cb, gt_apic_end_fn *end_cb,
                                           void *arg);
/* Stop a stream that has not ended; its end callback does not run. */
void gt_apic_stream_close(struct gt_apic_stream *s);

/* One task the agent knows, keyed by Task uid; its state directory is
 * the truth, this is a cache of it. */
struct gt_ltask {
    struct gt_ltask *next;
    char uid[128];
    char name[64];
    char project[64];
    char dir[PATH_MAX + 160];
    struct gt_task_local st;
    pid_t invoker_pid; /* the gantry-shim process starting it, 0 when none */
    pid_t host_pid;
    int64_t start_ms;    /* when the agent began starting it (wall clock) */
    json_t *obj;         /* last Task object seen from gantryd (owned); NULL until seen */
    int64_t retry_at_ms; /* no status write before this (monotonic) */
    bool put_in_flight;
    int gpus;  /* GPUs it holds on this node */
    bool seen; /* in the last full list */
};

/* The daemon's state, owned by gt_gantlet_run. */
struct gt_gantlet {
    const struct gt_gantlet_config *cfg;
    struct event_base *base;
    struct gt_apic *api;
    char *token;
    struct gt_gpu_set gpus;
    struct gt_cgroup_sys cgsys;
    bool have_cgroups;
    char tasks_dir[PATH_MAX];
    char venvs_dir[PATH_MAX];
    char cluster_ifname[64]; /* "" when unknown */
    char shim[PATH_MAX];
    char agent_url[300];
    struct gt_ltask *tasks;
    int64_t starts_total;
    struct evhttp *http;
    struct gt_apic_stream *watch;
    char watch_rv[32];
    bool registered;
    bool listing;
    bool stopping;
    int backoff_ms;
    struct event *heartbeat_ev, *poll_ev, *rewatch_ev;
};

/* tasks.c: the local task table. */

/* Load every ROOT/tasks/<uid>/ left by an earlier agent. */
void gt_gantlet_tasks_adopt(struct gt_gantlet *g);
/* Act on one Task object from a list or watch (borrowed); deleted: it is gone. */
void gt_gantlet_task_observe(struct gt_gantlet *g, json_t *task, bool deleted);
/* One Task object of a full list (borrowed). The list may be older than
 * what the watch has brought (up to watch_rev, 0 without a live watch): an
 * item older than the local copy only marks the task seen, and an unknown
 * task at or below watch_rev is not started (it is gone again). */
void gt_gantlet_task_listed(struct gt_gantlet *g, json_t *task, int64_t watch_rev);
/* After a full list taken at list_rev: act on local tasks the list did not
 * name (gone), except those whose Task object the agent has seen at a later
 * revision (created after the list was taken). The state of an exited one
 * stays while a Task names it as status.previous (asked of gantryd with one
 * more list, gt_task_previous_kept). Before the list,
 * gt_gantlet_tasks_unsee clears every task's seen mark. */
void gt_gantlet_tasks_unsee(struct gt_gantlet *g);
void gt_gantlet_tasks_gone(struct gt_gantlet *g, int64_t list_rev);
/* Check state directories for exits and reap children. */
void gt_gantlet_tasks_poll(struct gt_gantlet *g);
/* Tasks whose task is alive, and the GPUs they hold. */
void gt_gantlet_tasks_count(const struct gt_gantlet *g, int *running, int *gpus);
struct gt_ltask *gt_gantlet_task_find(const struct gt_gantlet *g, const char *uid);
void gt_gantlet_tasks_free(struct gt_gantlet *g);

/* logserve.c: the --listen server (logs, /healthz, /metrics). */
int gt_gantlet_http_start(struct gt_gantlet *g, struct gt_err *err);

#endif
