/*
 * Private to src/agent: the backend tables behind agent.h (GPU discovery,
 * cgroup versions) and the small file helpers the agent and the shim share.
 */
#ifndef GT_AGENT_INT_H
#define GT_AGENT_INT_H

#include "agent/agent.h"
#include "common/faultpoint.h"

/* Named fault points (common/faultpoint.h, docs/faults.md). gantlet's,
 * armed by --fault-points:
 *   shim-spawn                    a task's state directory is made, its shim
 *                                 not yet started; fail: the shim cannot run
 *   exit-recorded-before-reported the shim's exit record is read, the exit
 *                                 not yet sent; fail: the read fails (retried)
 * The shim's, armed by GANTRY_SHIM_FAULT_POINTS in its environment (the
 * agent's, which it inherits):
 *   image-unpack                  an image is fetched, about to be unpacked;
 *                                 fail: the unpack fails (ImagePullFailed)
 *   task-start-before-pidfile     the task runs, task.pid not yet written;
 *                                 fail: as crash (nothing to fail)
 *   exit-before-record            the task has ended, exit.json not yet
 *                                 written; fail: as crash */
#define GT_FP_SHIM_SPAWN "shim-spawn"
#define GT_FP_EXIT_BEFORE_REPORT "exit-recorded-before-reported"
#define GT_FP_IMAGE_UNPACK "image-unpack"
#define GT_FP_START_BEFORE_PIDFILE "task-start-before-pidfile"
#define GT_FP_EXIT_BEFORE_RECORD "exit-before-record"
#define GT_SHIM_FAULT_ENV "GANTRY_SHIM_FAULT_POINTS"

/* A GPU discovery backend. discover fills an empty set (arg: the NVML
 * library path, or the fake spec); on failure it leaves zero GPUs. */
struct gt_gpu_ops {
    const char *name;
    int (*discover)(struct gt_gpu_set *set, const char *arg, const char *node_name,
                    struct gt_err *err);
    int (*poll_health)(struct gt_gpu_set *set, int timeout_ms, struct gt_err *err);
    /* read GPU i's counters into out (zeroed by the caller); may update its
     * Xid fields; negative when the device does not answer */
    int (*sample)(struct gt_gpu_set *set, size_t i, struct gt_gpu_sample *out);
    void (*fini)(struct gt_gpu_set *set);
};

/* Is Xid a critical one? Not for the Xids applications cause (13, 31, 43,
 * 45, 68, 109: the NVIDIA k8s device plugin's list), nor 0 (none). */
bool gt_gpu_xid_critical(uint64_t xid);

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
    /* the task cgroup's directories whose cgroup.procs place a process
     * (each hierarchy on v1): *n of at most GT_CG_NCTRL */
    int (*procs_dirs)(const struct gt_cgroup *cg, char (*dirs)[768], size_t *n);
    int (*procs_path)(const struct gt_cgroup *cg, char *buf, size_t len);
    int (*oom_fd)(struct gt_cgroup *cg, struct gt_err *err);
    int (*oom_kills)(const struct gt_cgroup *cg, int64_t *count, struct gt_err *err);
    void (*stats)(const struct gt_cgroup *cg, struct gt_cgroup_stats *st);
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
/* A control file holding one integer: its value, or -1 (cgroup.c). */
int64_t gt_cgroup_read_int(const char *dir, const char *name);
/* usage minus the stat file's inactive-file key, at least 0; -1 when
 * usage is -1 (cgroup.c). */
int64_t gt_cgroup_working_set(const char *dir, int64_t usage, const char *stat_file,
                              const char *inactive_key);
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
/* The same, unsynced, readable by its owner only (0600): for what holds a
 * task's secrets. */
int gt_agent_file_write_private(const char *dir, const char *name, const void *data, size_t len,
                                struct gt_err *err);

/* SHA-256 of len bytes of data as 64 lower-case hex digits + NUL (sha256.c). */
void gt_sha256_hex(const void *data, size_t len, char out[65]);
/* HMAC-SHA256 (RFC 2104) of msg under key, as 64 lower-case hex digits + NUL. */
void gt_hmac_sha256_hex(const void *key, size_t key_len, const void *msg, size_t len, char out[65]);

/* The interface owning the IP address of listen ("ADDR:PORT", "[V6]:PORT")
 * into ifname (len bytes). GT_EINVAL for a wildcard or non-IP address,
 * GT_ENOTFOUND when no interface has it (netif.c). */
int gt_netif_of_listen(const char *listen, char *ifname, size_t len, struct gt_err *err);

/* execve spec-style argv with env (NULL-terminated), searching argv[0] in
 * env's PATH (else a default) when it has no '/'. Returns only on failure,
 * with *err the errno to report (shim_exec.c; async-signal-safe). */
void gt_shim_exec_search(char *const *argv, char *const *env, int *err);

/* In a freshly forked child running a helper tool (git, pip, skopeo, umoci,
 * runc): default signal mask and SIGPIPE/SIGHUP dispositions, stdin from
 * /dev/null, stdout to out_fd and stderr to err_fd, then
 * gt_shim_exec_search; on failure "cannot run ARGV0: ERROR" on err_fd and
 * _exit(127). Async-signal-safe (shim_exec.c). */
_Noreturn void gt_shim_exec_tool(char *const *argv, char *const *env, int out_fd, int err_fd);

/* ---- container images (image.c: pure parts; image_pull.c: the cache) ---- */

#include <jansson.h>
#include <limits.h>

/* An image reference [HOST[:PORT]/]NAME[:TAG][@sha256:HEX], as the
 * distribution spec has it: without a host, docker.io (library/ for a
 * one-component name); without tag or digest, tag latest. */
struct gt_image_ref {
    char host[256];  /* "127.0.0.1:5000", "docker.io" */
    char name[256];  /* "team/app" */
    char tag[129];   /* "" when only a digest was given */
    char digest[72]; /* "sha256:<64 hex>", "" when by tag */
};

/* Parse s (untrusted, borrowed) into ref. GT_EINVAL with err saying what
 * is wrong ("invalid image reference ..."). */
int gt_image_ref_parse(const char *s, struct gt_image_ref *ref, struct gt_err *err);
/* skopeo's "docker://HOST/NAME@DIGEST" for digest (when non-empty), else
 * "docker://HOST/NAME:TAG", into buf (len bytes). */
void gt_image_ref_transport(const struct gt_image_ref *ref, const char *digest, char *buf,
                            size_t len);

/* Where a task's fresh working directory appears in its container. */
#define GT_IMAGE_WORK_DIR "/work"

/* What the task says about its process (all borrowed). */
struct gt_image_task {
    char *const *command; /* template.command; n_command 0: the image's Entrypoint */
    size_t n_command;
    char *const *args; /* template.args; n_args 0: the image's Cmd (unless command) */
    size_t n_args;
    char *const *env; /* the task's NAME=value list, agent variables included */
    size_t n_env;
    const char *working_dir; /* template.workingDir or NULL */
};

/* The container's process. Owned; free with gt_image_proc_fini. */
struct gt_image_proc {
    char **argv; /* NULL-terminated */
    size_t n_argv;
    char **env; /* NULL-terminated */
    size_t n_env;
    char *cwd;
    bool mount_work; /* cwd is GT_IMAGE_WORK_DIR: mount the task's working directory there */
};

/* Merge an OCI image config (borrowed; its "config" object holds
 * Entrypoint, Cmd, Env, WorkingDir) with the task as Docker and Kubernetes
 * do: command replaces Entrypoint and drops Cmd; args replace Cmd; the
 * task's env overrides the image's by name, CUDA_VISIBLE_DEVICES renumbered
 * from 0, PATH defaulted; cwd = workingDir, else the image's, else
 * GT_IMAGE_WORK_DIR. The image's User is not used: the task's uid follows
 * runAsUser as for host tasks. GT_EINVAL when there is no command at all. */
int gt_image_process_merge(const json_t *image_config, const struct gt_image_task *t,
                           struct gt_image_proc *out, struct gt_err *err);
void gt_image_proc_fini(struct gt_image_proc *p);

/* --image-gc-threshold: bytes ("10Gi") into *bytes or "N%" into *percent
 * (the other 0). GT_EINVAL. */
int gt_image_gc_threshold_parse(const char *s, int64_t *bytes, int *percent, struct gt_err *err);

/* One cached image, for GC. */
struct gt_image_entry {
    char digest_hex[65];
    int64_t size_bytes;
    int64_t last_used_ms;
    bool in_use; /* a task holds it: never collected */
};

/* Which unused entries to remove, least recently used first, until
 * usage_bytes falls to limit_bytes: their indices into victims (room for
 * n). Returns how many. */
size_t gt_image_gc_plan(const struct gt_image_entry *entries, size_t n, int64_t usage_bytes,
                        int64_t limit_bytes, size_t *victims);

struct gt_shim_image;

/* A cached image a task uses: IMAGE_DIR/store/<hex>/ holding rootfs/,
 * config.json (umoci's runtime config), image.json (the image config).
 * use_fd holds a shared flock on its use lock while the task runs (GC
 * takes it exclusively); close it after the container is gone. */
struct gt_image_pulled {
    char digest[72];
    char dir[PATH_MAX];
    int64_t size_bytes;
    int64_t pull_ms; /* 0 when it was already cached */
    bool cached;
    int use_fd;
    json_t *config; /* the image config (owned) */
};

/* Resolve im->ref with the registry (a digest reference that is cached
 * needs no registry), pull it with skopeo into a temporary OCI layout and
 * unpack it with umoci, then rename it into the store; all under an
 * exclusive flock per digest, retried with back-off on transient errors.
 * Appends Pulling/Pulled lines to STATE_DIR/events (gt_image_event_add),
 * then collects unused images above the threshold. On failure err holds
 * the registry's or the tool's message. faults (borrowed, may be NULL):
 * the shim's, for image-unpack. out is the caller's storage;
 * gt_image_pulled_fini releases it. */
int gt_image_pull(const struct gt_shim_image *im, const char *state_dir, struct gt_faults *faults,
                  struct gt_image_pulled *out, struct gt_err *err);
void gt_image_pulled_fini(struct gt_image_pulled *p);

/* Append "REASON\tMESSAGE\n" to STATE_DIR/events for the agent to post
 * as an Event of the task (message without tabs or newlines). */
void gt_image_event_add(const char *state_dir, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Run argv (argv[0] searched in a default PATH; no shell) with env, stdin
 * /dev/null, its stdout into out (may be NULL: discarded) and stderr into
 * errout (may be NULL), at most 1 MiB each. Returns the wait status, or
 * -errno when it could not run. */
int gt_image_tool_run(char *const *argv, char *const *env, struct gt_buf *out,
                      struct gt_buf *errout);
/* The message of a Go tool's stderr: the last msg="..." (unquoted; skopeo's
 * misleading "Error parsing image name" lead for an unreachable registry
 * becomes "cannot reach registry HOST: ..."), else the last non-empty line,
 * into buf. */
void gt_image_tool_message(const char *stderr_text, char *buf, size_t len);

/* ---- the gantlet daemon (daemon.c, tasks.c, logserve.c, apiclient.c) ---- */

#include <event2/http.h>
#include <jansson.h>
#include <limits.h>

#include "agent/gantlet.h"
#include "common/strmap.h"

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

/* A client of url ("http://HOST:PORT", or several comma-separated: the
 * replicas, tried in turn) sending "Bearer token" (copied).
 * GT_EINVAL for a bad URL. Free with gt_apic_free, which drops the
 * requests not yet answered without running their callbacks. */
int gt_apic_new(struct event_base *base, const char *url, const char *token, struct gt_apic **out,
                struct gt_err *err);
void gt_apic_free(struct gt_apic *c);
/* Most keep-alive connections one client keeps for requests. */
#define GT_APIC_POOL_MAX 64
/* Use up to n_conns (1..GT_APIC_POOL_MAX) connections for requests, each
 * running one request at a time (4 unless set). */
void gt_apic_pool_set(struct gt_apic *c, int n_conns);
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
/* The message of an error answer (body: a Status object, borrowed, or
 * NULL): borrowed, "" when it has none. */
const char *gt_apic_message(const json_t *body);

/* One task the agent knows, keyed by Task uid; its state directory is
 * the truth, this is a cache of it. */
struct gt_ltask {
    struct gt_ltask *next;
    char uid[128];
    char name[64];
    char project[64];
    char *dir;  /* state directory, RUN/tasks/<uid> (owned) */
    char *data; /* its logs and working directory, ROOT/tasks/<uid> (owned) */
    struct gt_task_local st;
    int start_fd;           /* read end of the starting shim's status pipe; -1 none */
    struct event *start_ev; /* EV_READ on start_fd (owned); NULL none */
    pid_t host_pid;
    int64_t start_ms;        /* when the agent began starting it (wall clock) */
    struct gt_api_task *obj; /* last Task seen from gantryd (owned); NULL until seen */
    int64_t retry_at_ms;     /* no status write before this (monotonic) */
    int64_t started_mono_ms; /* when its start was reported here (monotonic); 0 adopted */
    int64_t shim_check_ms;   /* when its shim is next checked for life (monotonic) */
    bool put_in_flight;
    int gpus;            /* GPUs it holds on this node */
    bool seen;           /* in the last full list */
    int events_posted;   /* lines of DIR/events posted as Events */
    bool events_done;    /* DIR/events is complete and posted */
    bool quiet;          /* ended and reported: off the active list until its Task object changes */
    char boot_id[40];    /* the boot it started under (task.json); "" unknown */
    uint64_t shim_ticks; /* its shim's and its process's start times (clock ticks since */
    uint64_t task_ticks; /* boot, /proc/PID/stat field 22; task.json); 0 unknown */
    int64_t gpu_active_ms; /* last sample with one of its GPUs above 0 % (monotonic); 0 none */
    bool idle_warned;      /* its IdleGPU Event is posted */
    struct gt_ltask *act_prev, *act_next; /* the active list (not quiet) */
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
    char tasks_dir[PATH_MAX]; /* RUN/tasks: state directories */
    char data_dir[PATH_MAX];  /* ROOT/tasks: the tasks' directories on disk */
    char venvs_dir[PATH_MAX];
    char volumes_dir[PATH_MAX];        /* RUN/volumes: Volumes' disk images mounted (volmount.c) */
    char caches_dir[PATH_MAX];         /* ROOT/caches: rootless tasks' per-user caches */
    char images_dir[PATH_MAX];         /* the image cache */
    char runtime_root[PATH_MAX];       /* the OCI runtime's --root: ROOT/oci */
    struct gt_task_image_params image; /* borrows the two above and cfg */
    char **insecure;                   /* cfg's insecure registries + the cluster's; or NULL */
    char registry_auth[PATH_MAX];      /* ROOT/registry-auth.json once written */
    char cluster_ifname[64];           /* "" when unknown */
    char shim[PATH_MAX];
    char mpi_rsh_bin[PATH_MAX]; /* GT_MPI_RSH_AGENT next to gantlet: MPI launchers' rsh agent */
    char agent_url[300];
    char boot_id[40];        /* this boot's id (--boot-id-file); "" when unreadable */
    struct gt_ltask *tasks;  /* every local task */
    struct gt_ltask *active; /* those polls visit (not quiet) */
    struct gt_strmap by_uid; /* Task uid -> struct gt_ltask (borrowed) */
    struct gt_gid_cache gids;
    int64_t starts_total;
    struct gt_faults faults; /* --fault-points */
    struct evhttp *http;
    struct gt_exec_stream *xstreams; /* exec streams running (exec_stream.c) */
    struct gt_apic_stream *watch;
    char watch_rv[32];
    struct gt_strmap tel;     /* Task uid -> its telemetry state (telemetry.c) */
    struct gt_strmap secrets; /* Task uid -> a task waiting for its secrets (secrets.c) */
    struct event *secrets_ev; /* asks again after a failure; NULL until one */
    bool tel_in_flight;       /* a telemetry report is being sent */
    struct event *tel_ev;     /* once a second: gt_gantlet_telemetry_poll */
    bool registered;
    bool listing;
    bool stopping;
    int backoff_ms;
    struct event *heartbeat_ev, *poll_ev, *rewatch_ev, *gpu_ev;
};

/* daemon.c: what a node reports. This machine's memory (/proc/meminfo
 * MemTotal) and online CPUs in milli-CPUs. */
int64_t gt_agent_mem_total_bytes(void);
int64_t gt_agent_cpu_milli(void);
/* A new Node status (caller decrefs): capacity and allocatable of cpu_milli,
 * mem_bytes and set's GPUs, the GPUs, addresses InternalIP (the host of
 * listen, "ADDR:PORT") and AgentURL (agent_url), and Ready=True with
 * lastHeartbeatTime now. */
json_t *gt_agent_node_status(const struct gt_gpu_set *set, int64_t cpu_milli, int64_t mem_bytes,
                             const char *listen, const char *agent_url);

/* The cluster registry (registry.c). From GET clusterinfo's body info
 * (borrowed): its "registry" joins the insecure registries and, without
 * --registry-auth-file, gets an auth file with this node's token for
 * skopeo. 0 or -errno with err. */
int gt_agent_registry_apply(struct gt_gantlet *g, const json_t *info, struct gt_err *err);
/* Free what gt_agent_registry_apply allocated. */
void gt_agent_registry_free(struct gt_gantlet *g);
/* telemetry.c: each running task's cpu, memory and new TensorBoard
 * scalars, sent to gantryd in one report per round (about once a second). */
void gt_gantlet_telemetry_poll(struct gt_gantlet *g);
void gt_gantlet_telemetry_free(struct gt_gantlet *g);
/* nodelabels.c: the GPU feature discovery labels of the node's GPUs
 * (nvidia.com/gpu.present, .count, .product, .memory in MiB; none without
 * GPUs), a new object. */
json_t *gt_agent_gfd_labels(const struct gt_gpu_set *gpus);
/* Read the Node and write it back with those labels, if they differ (the
 * Node existed before this agent registered). Asynchronous, logs failures. */
void gt_agent_node_labels_sync(struct gt_gantlet *g);
/* scratch.c: a task's emptyDir volumes (see the file's comment). The
 * directory of emptyDir name of the task whose data directory is
 * data_dir, into buf. */
void gt_scratch_path(const char *data_dir, const char *name, char *buf, size_t len);
/* Make every emptyDir of vols (borrowed) beneath data_dir, owned by uid and
 * gid: a tmpfs for medium Memory (of sizeLimit, else the memory limit of
 * eff, the task's effective resources), an ext4 image of sizeLimit
 * loop-mounted for a disk one with a limit, or of its share of what those
 * leave of eff's ephemeral storage, else a plain directory. Already made
 * ones are kept. 0, or -errno / GT_EINTERNAL with err naming the emptyDir. */
int gt_scratch_make(const char *data_dir, const struct gt_api_volumes *vols, uid_t uid, gid_t gid,
                    const struct gt_api_effective *eff, struct gt_err *err);
/* Detach the scratch mounts beneath data_dir, before it is removed. */
void gt_scratch_unmount(const char *data_dir);
/* taskspec.c: the volume of vols called name (borrowed; NULL: none). */
const struct gt_api_volume *gt_task_volume_named(const struct gt_api_volumes *vols,
                                                 const char *name);

/* tasks.c: the local task table. */

/* Load every RUN/tasks/<uid>/ left by an earlier agent; remove each
 * ROOT/tasks/<uid>/ left without its state (after a reboot). */
void gt_gantlet_tasks_adopt(struct gt_gantlet *g);
/* Unmount the Volumes' disk images no task here that has not ended uses. */
void gt_gantlet_volumes_sweep(struct gt_gantlet *g);
/* Act on one Task from a list or watch, decoded where it arrived (taken:
 * kept as the task's Task, else freed); deleted: it is gone. */
void gt_gantlet_task_observe(struct gt_gantlet *g, struct gt_api_task *task, bool deleted);
/* One Task of a full list (taken, as above). The list may be older than
 * what the watch has brought (up to watch_rev, 0 without a live watch): an
 * item older than the local copy only marks the task seen, and an unknown
 * task at or below watch_rev is not started (it is gone again). */
void gt_gantlet_task_listed(struct gt_gantlet *g, struct gt_api_task *task, int64_t watch_rev);
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
/* Start a task not known here (taken: kept as the task's Task) with the
 * values of its gantry secrets (borrowed, {NAME: value}; NULL: none); with
 * fail (borrowed) it is not run but recorded as failed to start, reason
 * SecretUnavailable with that message. */
void gt_gantlet_task_start(struct gt_gantlet *g, struct gt_api_task *task, const json_t *secrets,
                           const char *fail);

/* secrets.c: tasks whose env has valueFrom.gantrySecret wait here for the
 * values gantryd makes for them, then start through start (as
 * gt_gantlet_task_start). fetch takes task (a newer version replaces the
 * waiting one); forget drops the task of uid if it waits (it is gone, or
 * not to be started). */
typedef void gt_gantlet_start_fn(struct gt_gantlet *g, struct gt_api_task *task,
                                 const json_t *secrets, const char *fail);
void gt_gantlet_secrets_fetch(struct gt_gantlet *g, struct gt_api_task *task,
                              gt_gantlet_start_fn *start);
void gt_gantlet_secrets_forget(struct gt_gantlet *g, const char *uid);
void gt_gantlet_secrets_free(struct gt_gantlet *g);

/* taskident.c: is an adopted task's record still a live task? */

/* The boot id: the first word of path (the kernel's
 * /proc/sys/kernel/random/boot_id, a UUID) into buf (len bytes). 0, or
 * -errno / GT_EINVAL with err naming the file. */
int gt_boot_id_read(const char *path, char *buf, size_t len, struct gt_err *err);
/* The start time of process pid in clock ticks since boot (/proc/PID/stat
 * field 22, proc(5)): 0, or -ESRCH when there is no such process or it is
 * a zombie. */
int gt_proc_start_ticks(pid_t pid, uint64_t *ticks);
/* For a task adopted from its state directory that has not exited: true
 * while its record names a live task (its shim running: it records the
 * end; or the end already recorded, then t->st.exited is set). false when
 * it is stale: the boot changed (reason NodeRebooted) or its shim is gone
 * (TaskLost), with reason and a message for its status into the buffers.
 * A process counts as the recorded one only with the recorded start time
 * (a reused pid is not) and, for the task, in its cgroup gantry/<uid>. */
bool gt_task_ident_check(const struct gt_gantlet *g, struct gt_ltask *t, char *reason,
                         size_t reason_len, char *msg, size_t msg_len);

/* image_events.c: post the new lines of a task's DIR/events as Events. */
void gt_gantlet_task_events(struct gt_gantlet *g, struct gt_ltask *t);
/* POST an Event of type ("Normal", "Warning") about t (borrowed): on its
 * Task, or with kind "Job" on its Job. Named after the object and a hash
 * of t's uid and reason, so one reason is posted once per task run (a
 * repeat is refused with 409, which is fine). Fire and forget. */
void gt_gantlet_event_post(struct gt_gantlet *g, const struct gt_ltask *t, const char *kind,
                           const char *type, const char *reason, const char *message);

/* gpuwatch.c: one GPU sample (gt_gpu_sample_all), then act on what
 * changed: health (Events on the tasks holding the GPU, a task on a lost
 * GPU stopped with reason GPULost) and idle GPUs (IdleGPU Warning on the
 * Job after --idle-gpu-seconds at 0 %). Runs every --gpu-sample-ms.
 * Returns true when a GPU changed health: the caller writes the Node
 * status now. */
bool gt_gantlet_gpus_tick(struct gt_gantlet *g);
/* The milli-share of GPU gpu (matched by index and UUID) that task t holds
 * while it lives: 1000 for a whole GPU, 0 when it holds none of it or has
 * exited. */
int64_t gt_gantlet_task_gpu_milli(const struct gt_ltask *t, const struct gt_gpu *gpu);
/* The task whose cgroup ("/gantry/<uid>" in /proc/PID/cgroup) holds host
 * pid, or NULL (borrowed from g). */
const struct gt_ltask *gt_gantlet_task_of_pid(const struct gt_gantlet *g, pid_t pid);
/* The utilization in percent of the node's GPU i (an index into g->gpus)
 * in its last sample, when t holds it; -1 when t does not, or the GPU has
 * no reading (never sampled, lost, or unsupported). */
int64_t gt_gantlet_task_gpu_util(const struct gt_gantlet *g, const struct gt_ltask *t, size_t i);
/* The device memory in bytes of t's processes in the last GPU samples
 * (NVML's running processes; fake GPUs: their "process" lines), summed
 * over the node's GPUs; -1 when none of its processes shows. */
int64_t gt_gantlet_task_gpu_memory(const struct gt_gantlet *g, const struct gt_ltask *t);
/* metrics.c: the node's /metrics (Prometheus text format 0.0.4) appended
 * to out: per GPU under dcgm-exporter's names with the holders' labels,
 * GPU memory per process, per task cgroup under cAdvisor's names
 * (docs/metrics.md lists every series). Reads the last GPU sample and the
 * tasks' cgroups now. */
void gt_gantlet_metrics_render(const struct gt_gantlet *g, struct gt_buf *out);

/* logserve.c: the --listen server (logs, exec, /healthz, /metrics). */
int gt_gantlet_http_start(struct gt_gantlet *g, struct gt_err *err);
/* exec.c: POST /v1/tasks/{uid}/exec of req (authorised already): run the
 * body's command inside task uid and answer its output and exit code.
 * Replies itself, now or once the command has ended. */
void gt_gantlet_exec_serve(struct gt_gantlet *g, struct evhttp_request *req, const char *uid);
enum { GT_EXEC_MAX_ARGS = 256 };
/* exec.c: the running task uid of an exec request, *body its parsed body
 * (caller json_decref()s) and argv (room for GT_EXEC_MAX_ARGS) its
 * "command", NULL-terminated, strings borrowed from *body; or NULL after
 * answering 404, 409, 413 or 400 (naming the field). */
struct gt_ltask *gt_gantlet_exec_request(struct gt_gantlet *g, struct evhttp_request *req,
                                         const char *uid, json_t **body, char **argv);
/* exec.c: fork a process that joins the task whose process is host_pid
 * (its cgroups, namespaces, root, cwd, environment and user) and runs argv
 * there with std[0..2] as its standard streams (tty: in a new session
 * whose controlling terminal is std[0]); the command's wait status is
 * written to status_fd when it ends. The pid, or -1 (errno). */
pid_t gt_gantlet_exec_spawn(pid_t host_pid, char **argv, const int std[3], bool tty, int status_fd);
/* exec_stream.c: POST /v1/tasks/{uid}/exec of req (authorised already)
 * with "Upgrade: GT_EXEC_PROTOCOL": answer 101 and run the body's command
 * (its "stdin" and "tty" say how) in task uid, streaming frames
 * (execframe.h) both ways until the command has ended and its status was
 * sent, or the client went away (the command is then killed). Takes over
 * req's connection; errors before the 101 as gt_gantlet_exec_request. */
void gt_gantlet_exec_stream(struct gt_gantlet *g, struct evhttp_request *req, const char *uid);
/* End every exec stream still running (their commands are killed), as the
 * agent stops: before evhttp_free, which would drop their connections
 * from under them. */
void gt_gantlet_exec_streams_free(struct gt_gantlet *g);
/* GET /v1/tasks/{uid}/usage (usage.c), authorized by the caller: the
 * task's CPU time so far, {"cpuNanoseconds": N} (its cgroup's, from
 * gt_cgroup_stats; 0 where unknown), and, where known, each
 * GPU of the task's, "gpus": [{"index", "utilizationPercent"}] from the
 * last GPU sample (NVML, or --fake-gpu-counters' util lines). */
void gt_gantlet_serve_usage(struct gt_gantlet *g, struct evhttp_request *req, const char *uid);

/* ---- the container of an image task (oci.c), run by the shim ---- */

/* Host paths a container config needs besides the spec (borrowed). */
struct gt_oci_paths {
    const char *rootfs;                /* the task's root file system */
    const char *hosts;                 /* bind-mounted over /etc/hosts, NULL: none */
    const char *const *volume_sources; /* resolved host path per spec volume */
    const char *dev_dir;               /* where /dev/nvidia* nodes are ("/dev") */
    const char *init;                  /* static gantry-shim for the init, NULL: none */
};

/* Where an image task's init (the shim binary, bind-mounted read-only) is
 * in its container, and the fd its report of the main process's wait
 * status is on there (runc's --preserve-fds 1: the first after stdio). */
#define GT_OCI_INIT_PATH "/sbin/gantry-init"
#define GT_OCI_INIT_FD 3

/* The OCI runtime config of spec's task: base (umoci's config.json of the
 * image, borrowed; defaults for mounts, masked paths) with the process
 * (borrowed), uid/gid/groups (no capabilities unless uid 0, no_new_privs
 * unless privileged), pid+mount(+uts+ipc) namespaces and no network
 * namespace, cgroupsPath /<cgroup path> with the spec's limits, devices
 * denied but the task's GPUs (+ nvidiactl, nvidia-uvm) and the driver's
 * files bind-mounted read-only, volumes, hosts and the working directory.
 * With paths->init, the process runs under the shim's init as PID 1
 * (`GT_OCI_INIT_PATH --init-exec GT_OCI_INIT_FD ARGS...`, as `docker
 * --init` wraps it in docker-init). Returns a new object (caller decrefs). */
json_t *gt_oci_config_build(const json_t *base, const struct gt_shim_spec *spec,
                            const struct gt_image_proc *proc, const struct gt_oci_paths *paths);
/* DATA_DIR/rootfs: an overlayfs of image_rootfs (read-only lower) and
 * DATA_DIR/ovl/{upper,work} (*mounted true), else a copy. data_dir is the
 * task's directory on disk. 0 or negative. */
int gt_oci_rootfs_prepare(const char *image_rootfs, const char *data_dir, bool *mounted,
                          struct gt_err *err);
/* `RUNTIME run -d` of the bundle STATE_DIR (config.json written) with
 * stdin /dev/null, stdout out_fd and stderr err_fd: *pid is the container's init
 * (host pid). init_fd (borrowed; -1: none) is passed to the container as
 * GT_OCI_INIT_FD (--preserve-fds 1). On failure err has the runtime's
 * message. */
int gt_oci_run(const struct gt_shim_spec *spec, const char *state_dir, int out_fd, int err_fd,
               int init_fd, pid_t *pid, struct gt_err *err);
/* After the container's processes are gone: `RUNTIME delete --force`,
 * the empty parent cgroups the runtime left in hierarchies outside sys
 * removed, the rootfs unmounted (when mounted). Best effort, logged. */
void gt_oci_cleanup(const struct gt_shim_spec *spec, const struct gt_cgroup_sys *sys,
                    const char *data_dir, bool rootfs_mounted);

#endif
