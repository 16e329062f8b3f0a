/*
 * The shim's records, parsed and written (shim_spec.c): a task's spec.json
 * and exit.json, whose formats shim.h describes, its pid files and the stop
 * request.
 */
#ifndef GT_SHIM_SPEC_H
#define GT_SHIM_SPEC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/agent.h"

enum gt_shim_ns {
    GT_NS_PID = 1 << 0,
    GT_NS_MOUNT = 1 << 1,
    GT_NS_UTS = 1 << 2,
    GT_NS_IPC = 1 << 3,
    GT_NS_USER = 1 << 4, /* the task is uid/gid 0 of a user namespace mapping only its own ids */
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
    /* the agent's cgroup layout, so that the shim need not detect it: the
     * v2 mount point, or the v1 mount point of each controller (by enum
     * gt_cgroup_ctrl; NULL where not mounted); all NULL: the shim detects */
    char *cg_unified;
    char *cg_mounts[GT_CG_NCTRL];
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
    /* a file the shim creates for the task (owned by it) whose first 1 KiB
     * becomes the exit's message; NULL: none */
    char *termination_log;
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

#endif
