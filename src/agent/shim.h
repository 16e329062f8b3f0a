/*
 * The per-task shim (gantry-shim), as conmon is for CRI-O: the agent writes
 * a task's spec into its state directory and starts `gantry-shim
 * --status-fd 3 --state-dir DIR` in a session of its own, so it outlives
 * the agent; the shim creates the task's cgroup, starts the task in it in new
 * namespaces as the task's user, copies its output into size-capped,
 * rotated log files, waits for it and records how it ended. The agent, even
 * after a restart, learns everything from the state directory.
 *
 * State directory (every file written atomically: temporary + rename):
 *   spec.json    written by the agent before starting the shim (format below)
 *   shim.pid     the shim's pid, decimal
 *   task.pid     the task's host pid, decimal
 *   started      ms since the epoch when the task was exec'd, decimal
 *   stop         optional stop request written by the agent before it sends
 *                SIGTERM to the shim: {"reason": "...", "gracePeriodMs": N}
 *   exit.json    how the task ended (format below), fsynced; the shim's last act
 *   shim.log     the shim's own diagnostics
 *   <log dir>/task.log, task.log.1 ... task.log.<keepFiles>: stdout and
 *                stderr combined, newest first
 *
 * spec.json:
 *   {"argv": ["sh", "-c", "echo hi"],         required, argv[0] searched in
 *                                              the env's PATH when it has no '/'
 *    "env": ["K=V", ...],                      exactly the task's environment
 *    "cwd": "/abs/dir",                        required, absolute
 *    "uid": 1000, "gid": 1000,                 required; 0 only if privileged
 *    "groups": [1000],                         supplementary groups (default none)
 *    "privileged": false,
 *    "hostname": "job-worker-0",               UTS namespace hostname
 *    "namespaces": ["pid", "mount", "uts", "ipc"], default none; pid needs mount
 *    "cgroup": {"path": "gantry/<task-uid>", "cpuMilli": 0, "memoryBytes": 0,
 *               "pidsMax": 0, "gpuMinors": [0, 1]},  0 = no limit
 *    "log": {"dir": "/abs/dir", "maxBytes": 0, "keepFiles": 3},
 *    "dataDir": "/abs/dir",                    the task's own directory on disk for
 *                                              an image's rootfs/ and ovl/ (default
 *                                              the state directory)
 *    "stopGracePeriodMs": 30000,
 *    "source": {"git": "URL", "revision": "REF"},  optional; revision default HEAD
 *    "requirements": "path/in/source" | ["pkg==1", ...],   optional
 *    "pip": {"findLinks": "/dir", "indexUrl": "URL"},       optional
 *    "venvDir": "/abs/dir",                   where cached venvs live; required
 *                                              with requirements, writable by uid
 *    "volumes": [{"root": "/storage", "path": "rel/in/root", "mountPath": "/abs",
 *                 "readOnly": false}],         need the mount namespace
 *    "hosts": [{"ip": "10.0.0.2", "hostname": "job-worker-0"}],  ditto
 *    "image": {"ref": "HOST/NAME:TAG", "dir": "/abs/images",  optional; argv
 *              "runtime": "runc", "runtimeRoot": "/abs/oci",   may then be empty
 *              "command": [...], "args": [...], "workingDir": "/abs",
 *              "authFile": "/abs", "insecureRegistries": ["HOST:PORT"],
 *              "gcThresholdBytes": 0, "gcThresholdPercent": 80}}
 * Unknown fields are rejected.
 *
 * An image task (see image_pull.c, oci.c and docs/agent.md) is pulled
 * first (Pulling/Pulled lines in DIR/events; a failure is exit 127 with
 * reason ImagePullFailed), then runs through the OCI runtime with the
 * bundle in DIR (config.json, rootfs/, ovl/, container.pid, runtime.log)
 * instead of the clone below; the rest of the protocol is the same.
 *
 * Before the task's command (all in its cgroup and namespaces): volumes
 * are opened beneath their root (openat2, see gt_volume_open) by the shim
 * and bind-mounted (read-only if asked) at mountPath, missing mount points
 * created; with hosts, DIR/hosts (localhost lines + "ip hostname" lines) is
 * bind-mounted read-only over /etc/hosts. These mounts are made as root in
 * the task's mount namespace. Then, as the task's user, with source or
 * requirements the shim's own binary runs as "gantry-shim --prepare" (see
 * gt_shim_prepare_main), which fetches the source into cwd, makes or reuses
 * the virtual environment, and execs the command. Tasks that are not
 * privileged run with no_new_privs (setuid binaries do not elevate).
 *
 * exit.json:
 *   {"exitCode": 137, "signal": 9, "oomKilled": true, "startedAtMs": ...,
 *    "finishedAtMs": ..., "stopRequested": false, "stopReason": "",
 *    "error": "", "reason": ""}
 * exitCode is the shell convention (128 + signal when killed by one).
 * "error" is set when the task could not be started (exitCode 127 then);
 * "reason" then may name the cause: VolumeDenied, SourceFetchFailed,
 * RequirementsFailed (absent in older records).
 *
 * Stopping: SIGTERM (or SIGINT) to the shim sends SIGTERM to the task's
 * process group, waits the grace period (from DIR/stop, else the spec),
 * then SIGKILLs everything in the task's cgroup. Note that a task running
 * as PID 1 of its PID namespace only sees SIGTERM if it handles it.
 */
#ifndef GT_SHIM_H
#define GT_SHIM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/agent.h"

enum gt_shim_ns {
    GT_NS_PID = 1 << 0,
    GT_NS_MOUNT = 1 << 1,
    GT_NS_UTS = 1 << 2,
    GT_NS_IPC = 1 << 3,
};

/* A volume of a spec: root/path (path relative, "." for root) at mount_path. */
struct gt_shim_volume {
    char *root;
    char *path;
    char *mount_path;
    bool read_only;
};

/* One /etc/hosts entry. */
struct gt_shim_host {
    char *ip;
    char *hostname;
};

/* The container image of a task (spec "image"); NULL for host tasks. */
struct gt_shim_image {
    char *ref;          /* the image reference, as the template has it */
    char *dir;          /* the node's image directory (absolute) */
    char *runtime;      /* "runc" or "crun" */
    char *runtime_root; /* the runtime's --root (absolute) */
    char **command;     /* template.command, NULL-terminated (n 0: none) */
    size_t n_command;
    char **args; /* template.args, NULL-terminated (n 0: none) */
    size_t n_args;
    char *working_dir; /* template.workingDir, NULL when unset */
    char *auth_file;   /* registry credentials (skopeo --authfile), NULL: none */
    char **insecure;   /* HOST:PORT registries reached over plain HTTP */
    size_t n_insecure;
    int64_t gc_threshold_bytes;   /* images above this are collected (0: see percent) */
    int64_t gc_threshold_percent; /* ... or the image file system above this % full */
};

/* A parsed spec.json. Every pointer is owned by the spec. */
struct gt_shim_spec {
    char **argv; /* NULL-terminated */
    size_t n_argv;
    char **env; /* NULL-terminated */
    size_t n_env;
    char *cwd;
    uid_t uid;
    gid_t gid;
    gid_t *groups;
    size_t n_groups;
    bool privileged;
    char *hostname;                 /* NULL: keep the host's */
    unsigned namespaces;            /* GT_NS_* */
    char *cgroup_path;              /* relative to each hierarchy root */
    struct gt_cgroup_limits limits; /* gpu_minors points into minors */
    int *minors;
    char *log_dir;
    int64_t log_max_bytes; /* 0: unlimited */
    int log_keep_files;    /* rotated files kept besides task.log */
    int64_t stop_grace_ms;
    char *git_url;      /* NULL: no source */
    char *git_revision; /* NULL: HEAD */
    char *req_file;     /* requirements file, relative to cwd; or */
    char **req_list;    /* NULL-terminated requirement lines (NULL: none) */
    size_t n_req;
    char *pip_find_links; /* NULL: none */
    char *pip_index_url;  /* NULL: pip's default */
    char *venv_dir;
    char *data_dir; /* the task's directory on disk (image rootfs, overlay); NULL: DIR */
    struct gt_shim_volume *volumes;
    size_t n_volumes;
    struct gt_shim_host *hosts;
    size_t n_hosts;
    struct gt_shim_image *image; /* NULL: a host task */
};

/* How a task ended, as exit.json records it. */
struct gt_shim_exit {
    int exit_code;
    int signal; /* 0 unless killed by a signal */
    bool oom_killed;
    int64_t started_at_ms;
    int64_t finished_at_ms;
    bool stop_requested;
    char stop_reason[64];
    char error[1024];
    char reason[64]; /* why it could not start, "" when unknown or it ran */
};

/* Parse and validate spec.json text (len bytes) into spec (caller's
 * storage, fini with gt_shim_spec_fini). GT_EINVAL with the field path. */
int gt_shim_spec_parse(const char *text, size_t len, struct gt_shim_spec *spec, struct gt_err *err);
/* Serialize spec into a new JSON string (caller frees). */
char *gt_shim_spec_to_json(const struct gt_shim_spec *spec);
/* Release everything the spec owns; safe on a zeroed spec. */
void gt_shim_spec_fini(struct gt_shim_spec *spec);

/* Whether hostname (letters, digits, '-', '.'; at most 253) and ip (IPv4 or
 * IPv6) make a safe /etc/hosts line. */
bool gt_shim_host_valid(const char *hostname, const char *ip);

/* Read DIR/exit.json. -ENOENT while the task has not ended. */
int gt_shim_exit_read(const char *state_dir, struct gt_shim_exit *ex, struct gt_err *err);
/* Serialize an exit record into a new JSON string (caller frees). */
char *gt_shim_exit_to_json(const struct gt_shim_exit *ex);

/* Read a decimal pid file (DIR/shim.pid, DIR/task.pid). */
int gt_shim_read_pid(const char *state_dir, const char *name, pid_t *pid, struct gt_err *err);

/* Ask the shim of state_dir to stop its task: write DIR/stop with reason
 * (borrowed) and grace_ms, then SIGTERM the shim (checked to be a
 * gantry-shim). -ESRCH when the shim is gone. */
int gt_shim_stop(const char *state_dir, const char *reason, int64_t grace_ms, struct gt_err *err);

/* The shim program: run the task of state_dir as described above. The
 * caller made this process a session leader (posix_spawn with
 * POSIX_SPAWN_SETSID, as the agent does); it supervises here, writes one
 * byte on status_fd once the task started or its start failure is recorded
 * in exit.json, and does not return. Returns 1 when the spec is unusable or
 * the process is not a session leader (message on stderr). */
int gt_shim_main(const char *state_dir, int status_fd);

/* `gantry-shim --prepare --spec-fd N --status-fd M`, exec'd by the task's
 * process as the task's user after its setup: read the spec from fd N
 * (from offset 0), fetch the source into cwd (git init; git fetch --depth 1
 * URL REV; git checkout --detach FETCH_HEAD, with HOME=cwd and
 * GIT_TERMINAL_PROMPT=0), make or reuse the virtual environment of the
 * requirements (venvDir/<sha256 of the requirements>, built under a flock
 * on venvDir/<hash>.lock and marked complete last), then exec argv with
 * PATH and VIRTUAL_ENV set. Tool output goes to stdout (the task log). On
 * failure it writes "REASON\nMESSAGE" to fd M (the shim puts both in
 * exit.json) and returns 127; it never returns on success. */
int gt_shim_prepare_main(int spec_fd, int status_fd);

/* The rotating task log: task.log in dir, rotated to task.log.1..keep when
 * it would pass max_bytes (0: never). */
struct gt_shim_log {
    int dir_fd;
    int fd;
    int64_t size_bytes;
    int64_t max_bytes;
    int keep_files;
};

/* Open (append to) dir/task.log. 0 or -errno. */
int gt_shim_log_open(struct gt_shim_log *log, const char *dir, int64_t max_bytes, int keep_files,
                     struct gt_err *err);
/* Append data, rotating as needed (a chunk is split at the cap). */
int gt_shim_log_write(struct gt_shim_log *log, const char *data, size_t len, struct gt_err *err);
void gt_shim_log_close(struct gt_shim_log *log);

#endif
