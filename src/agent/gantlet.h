/*
 * gantlet, the node agent daemon (docs/agent.md is the protocol it follows
 * with gantryd): its configuration, the pure decisions it takes (a Task
 * object turned into a shim spec, an exit record turned into a Task status,
 * what to do with a task given its local and remote state, where a log's
 * last N lines start) and the daemon entry point. The pure parts take no
 * locks, keep no state and do no network I/O, so unit tests drive them
 * directly.
 */
#ifndef GT_GANTLET_H
#define GT_GANTLET_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/agent.h"
#include "agent/shim.h"
#include "api/api.h"
#include "common/strmap.h"

/* ---- configuration (gantlet_config.c): one declarative table ---- */

struct gt_gantlet_config {
    char *server;            /* gantryd base URL, "http://host:port" */
    char *token_file;        /* the agent's token: first line, bare or token,user,uid,"groups" */
    char *name;              /* node name */
    char *listen;            /* ADDR:PORT for logs, /healthz, /metrics */
    char *fake_gpus;         /* NULL: NVML */
    char *nvml_lib;          /* NULL: GT_NVML_LIBRARY */
    char *fake_gpu_counters; /* NULL: fake GPUs stay idle and healthy */
    int64_t gpu_sample_ms;
    int64_t idle_gpu_s; /* 0: no IdleGPU Events */
    char *root;         /* data root: ROOT/tasks/<uid>/ (logs, working dirs), venvs, images */
    char *run_dir;      /* runtime state: RUN/tasks/<uid>/ (the shims' files) */
    char *boot_id_file; /* the kernel's boot id (/proc/sys/kernel/random/boot_id) */
    char *shim;         /* NULL: gantry-shim next to the gantlet binary */
    struct gt_config_list storage_roots;       /* allowed volume roots, owned */
    char *cluster_interface;                   /* NULL: the interface owning the --listen address */
    char *image_dir;                           /* NULL: ROOT/images */
    char *image_gc_threshold;                  /* "20Gi" or "80%" */
    char *registry_auth_file;                  /* NULL: none */
    struct gt_config_list insecure_registries; /* HOST:PORT, owned */
    char *oci_runtime;                         /* "runc" or "crun" */
    int64_t heartbeat_s;
    int64_t hollow;             /* > 0: run this many hollow nodes (hollow.c) instead */
    int64_t hollow_start_ms;    /* a hollow task's Bound -> Running delay */
    int64_t hollow_connections; /* the hollow nodes' API connections */
    int64_t log_max_bytes;      /* per task log file before rotation */
    int64_t log_level;          /* enum gt_log_level */
    char *fault_points;         /* --fault-points SPEC (common/faultpoint.h); NULL: none */
};

/* Parse argv (flags --name VALUE or --name=VALUE) and envp (GANTLET_<NAME>)
 * into cfg (caller's storage, zeroed here). *help is set on --help. Returns
 * 0 or GT_EINVAL with err naming the flag. Free with gt_gantlet_config_fini. */
int gt_gantlet_config_parse(struct gt_gantlet_config *cfg, int argc, char *const *argv,
                            char *const *envp, bool *help, struct gt_err *err);
void gt_gantlet_config_fini(struct gt_gantlet_config *cfg);
/* Print the flags, their defaults and help to f. */
void gt_gantlet_config_usage(FILE *f);

/* Run cfg->hollow hollow nodes (hollow.c) until SIGTERM or SIGINT: 0, or
 * 1 when they cannot start (logged). */
int gt_hollow_run(const struct gt_gantlet_config *cfg);

/* Read the token from the first line of path: "token,user,uid,..." or a
 * bare token. *token is a new string (caller frees). 0 or negative + err. */
int gt_gantlet_token_read(const char *path, char **token, struct gt_err *err);

/* ---- pure decisions (taskspec.c) ---- */

/* Default pids limit of a task cgroup. */
#define GT_GANTLET_PIDS_MAX 4096
/* PATH given to a task whose env has none. */
#define GT_GANTLET_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* The node's image configuration, for image tasks (all borrowed). */
struct gt_task_image_params {
    const char *dir;          /* the image cache */
    const char *runtime;      /* "runc" or "crun" */
    const char *runtime_root; /* the runtime's --root */
    const char *auth_file;    /* NULL: none */
    char *const *insecure;    /* HOST:PORT registries over plain HTTP */
    size_t n_insecure;
    int64_t gc_threshold_bytes;
    int gc_threshold_percent;
};

/* How long a uid's primary group is remembered (gt_gid_cache). */
#define GT_GID_CACHE_TTL_MS 60000

/* uid -> primary gid from the passwd database (getpwuid_r), remembered for
 * GT_GID_CACHE_TTL_MS as nscd would: a lookup may go through NSS modules
 * (systemd, sssd, LDAP) and cost more than the rest of a task's spec. */
struct gt_gid_cache {
    struct gt_strmap by_uid; /* decimal uid -> struct gid_entry (owned) */
};
void gt_gid_cache_init(struct gt_gid_cache *c);
void gt_gid_cache_fini(struct gt_gid_cache *c);
/* The primary gid of uid (uid itself when it has no passwd entry), looked
 * up at most once per TTL; now_ms is monotonic. c NULL: no caching. */
gid_t gt_gid_cache_get(struct gt_gid_cache *c, uid_t uid, int64_t now_ms);

/* What the agent adds to a Task to make a shim spec. */
struct gt_task_spec_params {
    const char *state_dir;         /* RUN/tasks/<uid>, absolute */
    const char *data_dir;          /* ROOT/tasks/<uid> on disk; NULL: state_dir */
    const struct gt_gpu_set *gpus; /* node GPUs, for device minors (borrowed, may be NULL) */
    int64_t log_max_bytes;
    int log_keep_files;
    char *const *storage_roots; /* allowed volume roots (borrowed) */
    size_t n_storage_roots;
    const char *venv_root;                    /* ROOT/venvs; NULL: requirements are refused */
    const char *cache_root;                   /* ROOT/caches; NULL: no GANTRY_CACHE_DIR */
    const char *cluster_ifname;               /* NULL: no GLOO/NCCL_SOCKET_IFNAME */
    const struct gt_task_image_params *image; /* NULL: images are refused */
    struct gt_gid_cache *gids;                /* NULL: look each uid up */
    const char *volumes_dir; /* RUN/volumes: Volumes' mount points; NULL: Volumes refused */
    /* the values of the env entries with valueFrom.gantrySecret, {NAME:
     * value} as gantryd made them (borrowed); NULL: none fetched */
    const json_t *secrets;
    /* for an MPI launcher (gt_task_mpi_hostfile): its rsh agent (the
     * GT_MPI_RSH_AGENT link to gantry), gantryd's URL and the node's token
     * (all borrowed) */
    const char *mpi_rsh_bin;
    const char *server_url;
    const char *node_token;
    /* the node's cgroup layout, handed to the shim (borrowed); NULL: the
     * shim detects it */
    const struct gt_cgroup_sys *cgsys;
};
/* Does task's template name a gantry secret (env valueFrom.gantrySecret),
 * whose value the agent must fetch before it starts the task? */
bool gt_task_needs_secrets(const struct gt_api_task *task);

/* The hostfile text of an MPI launcher task (borrowed from task), or NULL
 * when task is not one: a Launcher whose env has GT_MPI_HOSTFILE_ENV, as
 * gantryd writes it for an MPIJob (jobenv_mpi.c). Its shim spec then
 * mounts DATA_DIR/mpi read-only at GT_MPI_DIR and its environment carries
 * the rsh agent and credential (gt_task_spec_build). */
const char *gt_task_mpi_hostfile(const struct gt_api_task *task);

/* Build the shim spec of a Task (borrowed) into spec (caller's
 * storage; gt_shim_spec_fini frees it): argv = command + args, env =
 * template env + the CUDA/NVIDIA/GANTRY variables (+ PATH if absent) +
 * GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME (an entry with valueFrom.gantrySecret
 * takes its value from p->secrets: GT_EINVAL naming it when absent; an MPI
 * launcher: see gt_task_mpi_hostfile), uid = runAsUser else creator
 * uid (0 only with spec.privileged), cwd = workingDir else DATA_DIR/work, cgroup limits the
 * template's effective limits (gt_api_resources_effective: a limit not given is the request), log
 * files in DATA_DIR, dataDir DATA_DIR; spec.source and spec.requirements as they are (venvDir =
 * VENV_ROOT/<task uid>) with spec.pip's indexUrl and findLinks (the
 * cluster's, from gantryd), template.volumeMounts joined with spec.volumes and
 * placed beneath a storage root, spec.hosts (plus NAME.<project>.svc for
 * each NAME without a dot). GT_EFORBIDDEN when a volume is outside every
 * storage root (reason VolumeDenied), else GT_EINVAL, with err saying why. */
int gt_task_spec_build(const struct gt_api_task *task, const struct gt_task_spec_params *p,
                       struct gt_shim_spec *spec, struct gt_err *err);
/* A rootless task's (hostUsers: false) per-node cache, CACHE_ROOT/<uid>,
 * kept across its user's tasks (buildah's layer store) and named to it by
 * GANTRY_CACHE_DIR; the agent makes it (mode 0700, the user's). NULL when
 * the spec has no user namespace or cache_root is NULL; caller frees. */
char *gt_task_cache_dir(const char *cache_root, const struct gt_shim_spec *spec);

/* The image part of a Task's shim spec (template.image set): spec->image
 * from the template's image, command, args and workingDir and the node's
 * image parameters; the agent's default PATH dropped from spec->env unless
 * the template sets PATH (the image's then applies). GT_EINVAL when the
 * node has no image parameters. Called by gt_task_spec_build (image.c). */
int gt_task_spec_image(const struct gt_api_template *tmpl, const struct gt_task_spec_params *p,
                       struct gt_shim_spec *spec, struct gt_err *err);

/* telemetry.c: the node path of task's spec.tensorboard.logDir (set; borrowed), into
 * buf: relative to the working directory (workingDir, else DATA_DIR/work),
 * then, beneath a volume mount, in the volume's hostPath; otherwise, for a
 * task without an image, beneath its working directory. GT_EFORBIDDEN
 * (neither in a volume nor in the working directory) or GT_EINVAL, with
 * err naming the field. data_dir: the task's ROOT/tasks/<uid>. */
int gt_tel_log_dir_host(const struct gt_api_task *task, const char *data_dir, char *buf, size_t len,
                        struct gt_err *err);

/* The reason a stop request is reported with: "Deleted" (or none) is
 * "Killed", anything else as is. Returns a borrowed string. */
const char *gt_task_stop_reason(const char *stop_reason);

/* A terminal Task status for an exit record: prev (the Task's current
 * status, borrowed, may be NULL) keeps boundTime/startTime/hostPid; phase
 * Succeeded for exit 0 without a stop (or after a JobFinished stop, with
 * that reason), else Failed with reason OOMKilled, Error, or the stop's
 * reason. Returns a new object (caller decrefs). */
json_t *gt_task_exit_status(const json_t *prev, const struct gt_shim_exit *ex);
/* Also: a start failure with a reason (exit.json "reason") is reported
 * with that reason and the error as its message. */

/* What the agent knows locally about one task. */
struct gt_task_local {
    bool known;            /* a state directory exists */
    bool started;          /* the task's host pid is known */
    bool exited;           /* exit.json exists */
    bool reported;         /* the terminal status is recorded in gantryd */
    bool running_reported; /* phase Running was written by this agent process */
    bool stop_sent;        /* the shim was asked to stop */
    bool killing;          /* being killed because its Task is gone or terminal */
};

/* Actions for one task, a bit set. */
enum {
    GT_TA_START = 1 << 0,            /* write the spec, start the shim */
    GT_TA_REPORT_RUNNING = 1 << 1,   /* PUT phase Running */
    GT_TA_STOP = 1 << 2,             /* gt_shim_stop with the spec's stop */
    GT_TA_REPORT_EXIT = 1 << 3,      /* PUT the terminal status from exit.json */
    GT_TA_KILL = 1 << 4,             /* SIGKILL its cgroup; remove once exited */
    GT_TA_REMOVE = 1 << 5,           /* remove the state directory */
    GT_TA_MARK_REPORTED = 1 << 6,    /* gantryd already has a terminal status */
    GT_TA_REPORT_UNSTARTED = 1 << 7, /* stopped before it started: PUT Failed */
};

/* Decide what to do with a task from its local state and its Task
 * (borrowed; NULL when gantryd has no such Task). Returns GT_TA_* bits. */
unsigned gt_task_decide(const struct gt_task_local *l, const struct gt_api_task *task);

/* The grace period, in ms, the shim gives task when it is stopped: its
 * spec.stop's, else the template's terminationGracePeriodSeconds, else 30 s. */
int64_t gt_task_stop_grace_ms(const struct gt_api_task *task);

/* Is the state directory of run uid still wanted although its Task is gone
 * (replaced in place by a restart)? True when some of the n_tasks Tasks
 * (borrowed; those whose status.previous.nodeName is this node) names uid
 * as its status.previous.uid: `gantry logs --previous` reads it. Only the
 * latest previous run of a Task is named, so older ones go. */
bool gt_task_previous_kept(const char *uid, struct gt_api_task *const *tasks, size_t n_tasks);

/* Tail of a log read backwards in pieces: the last n lines start just
 * after the n-th '\n' counted from the end, not counting a '\n' that is the
 * log's very last byte (is_last: data ends the whole log). Scans
 * data[0..len) backwards counting at most n - *newlines more '\n' into
 * *newlines; returns the offset after the one that reached n, or 0 when
 * the piece ran out first (then continue with the piece before it). */
size_t gt_log_tail_offset(const char *data, size_t len, int64_t n, bool is_last, int64_t *newlines);

/* ---- the daemon (daemon.c) ---- */

/* Run gantlet until SIGTERM/SIGINT. Returns the process exit status. */
int gt_gantlet_run(const struct gt_gantlet_config *cfg);

#endif
