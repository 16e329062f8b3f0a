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

#endif
