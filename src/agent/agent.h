/*
 * agent: the node-local parts of gantlet that talk to the machine: GPU
 * discovery (NVML loaded at run time, or fake GPUs declared on the command
 * line) and per-task cgroups (v1 or v2, detected at start). The per-task
 * shim and its state-directory format have their own header, shim.h.
 *
 * Nothing here keeps global state: a discovered GPU set and a detected
 * cgroup layout are values owned by the caller and passed explicitly.
 */
#ifndef GT_AGENT_H
#define GT_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/tfevents.h"
#include "common/common.h"

/* ---- GPUs ---- */

/* Default NVML library name, as the NVIDIA driver installs it. */
#define GT_NVML_LIBRARY "libnvidia-ml.so.1"

/* One GPU as the node reports it. */
struct gt_gpu {
    int index;      /* node-local index, 0..n-1 (CUDA_VISIBLE_DEVICES with PCI_BUS_ID order) */
    char uuid[64];  /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
    char model[64]; /* "NVIDIA A100-SXM4-80GB", or the fake model name */
    int64_t memory_bytes; /* total device memory */
    int numa_node;        /* NUMA node of its PCI device, -1 if unknown */
    char group[32];       /* NVLink/PCIe group: "g<N>", N counting from 0 by lowest member */
    bool healthy;         /* !lost && !xid_failed: offered to the scheduler */
    int minor;            /* /dev/nvidia<minor>; -1 for fake GPUs (no device node) */
    bool lost;            /* the device stopped answering (or never answered at start) */
    bool xid_failed;      /* a critical Xid was raised (NVML: until the agent restarts) */
    uint64_t last_xid;    /* the last Xid seen, 0 none (DCGM_FI_DEV_XID_ERRORS) */
    uint64_t n_xid;       /* critical Xid events seen since the agent started */
};

/* Most processes one GPU's sample lists (more are left out and counted). */
#define GT_GPU_PROCS_MAX 64

/* A process using a GPU: NVML's running compute and graphics processes. */
struct gt_gpu_proc {
    pid_t pid;          /* host pid */
    int64_t used_bytes; /* device memory it holds */
};

/* One GPU's readings at taken_ms, in DCGM exporter units. A field NVML
 * does not support on the device reads -1 (the exporter leaves it out). */
struct gt_gpu_sample {
    int64_t taken_ms;          /* wall clock; 0: never sampled */
    int64_t util_pct;          /* DCGM_FI_DEV_GPU_UTIL: % of time a kernel ran */
    int64_t mem_copy_util_pct; /* DCGM_FI_DEV_MEM_COPY_UTIL: % of time memory was read/written */
    int64_t fb_used_mib;       /* DCGM_FI_DEV_FB_USED, MiB */
    int64_t fb_free_mib;       /* DCGM_FI_DEV_FB_FREE, MiB */
    double power_w;            /* DCGM_FI_DEV_POWER_USAGE, W (-1 unknown) */
    int64_t temp_c;            /* DCGM_FI_DEV_GPU_TEMP, degrees C */
    int64_t sm_clock_mhz;      /* DCGM_FI_DEV_SM_CLOCK, MHz */
    struct gt_gpu_proc procs[GT_GPU_PROCS_MAX];
    size_t n_procs;
    size_t n_procs_dropped; /* processes past GT_GPU_PROCS_MAX */
};

struct gt_gpu_ops;

/* The GPUs of this node and the backend that found them. Caller-owned
 * storage; gt_gpu_set_fini releases what discovery allocated. */
struct gt_gpu_set {
    struct gt_gpu *gpus; /* n_gpus entries, owned by the set */
    size_t n_gpus;
    struct gt_gpu_sample *samples; /* n_gpus latest readings (gt_gpu_sample_all), owned */
    const struct gt_gpu_ops *ops;  /* backend that filled the set */
    void *impl;                    /* backend state (NVML handle), owned by the set */
};

/* Discover GPUs through NVML loaded from lib_path (NULL: GT_NVML_LIBRARY).
 * On success the set holds every GPU, grouped by NVLink and PCIe switch.
 * On any failure (library missing, a symbol missing, an NVML call failing)
 * the set holds zero GPUs, stays safe to fini, and the return is negative
 * with err saying why in one line for the caller to log. */
int gt_gpu_discover_nvml(struct gt_gpu_set *set, const char *lib_path, struct gt_err *err);

/* Declare fake GPUs from a spec "<count>x<model>-<N>GB[:groups=<a>+<b>...]",
 * e.g. "8xA100-80GB:groups=4+4": N GiB each, group sizes summing to count
 * (default one group), NUMA node = group number, UUIDs "GPU-" + a hash of
 * node_name (borrowed) and the index. Returns 0, or GT_EINVAL with err
 * naming what is wrong with the spec (the set then holds zero GPUs). */
int gt_gpu_discover_fake(struct gt_gpu_set *set, const char *spec, const char *node_name,
                         struct gt_err *err);

/* Wait up to timeout_ms for health events (critical Xid errors) and mark
 * the GPUs they name unhealthy. Returns the number of GPUs newly marked
 * unhealthy (>= 0), or a negative code with err set. Fake GPUs and NVML
 * without event support return 0 at once. */
int gt_gpu_poll_health(struct gt_gpu_set *set, int timeout_ms, struct gt_err *err);

/* Fake GPUs read their counters and health from files in dir (copied):
 * DIR/<index>, "key value" lines, any missing key (or file) reading as an
 * idle healthy device:
 *   util N | mem_copy_util N | fb_used_mib N | power_w X | temp_c N |
 *   sm_clock_mhz N   the readings (fb_free_mib is memory minus fb_used_mib)
 *   process PID MIB  one line per process using the device
 *   xid N            the last Xid the device raised; a critical one (not an
 *                    application Xid) makes it Unhealthy until the line goes
 *   lost 1           the device stops answering: Unhealthy, no readings
 * A file that cannot be parsed is logged and read as "lost". Call after
 * gt_gpu_discover_fake; without it fake GPUs stay idle and healthy. */
void gt_gpu_fake_counters(struct gt_gpu_set *set, const char *dir);

/* Read every GPU's counters into samples[i] and update its health:
 * NVML's queued critical-Xid events are taken first, then a device whose
 * readings fail is lost and one that answers again is found (its Xid state
 * stays). Returns how many GPUs changed health (0..n_gpus). Never fails:
 * a device that cannot be read is what it reports. */
size_t gt_gpu_sample_all(struct gt_gpu_set *set);

/* Release everything discovery allocated (NVML is shut down and unloaded).
 * Safe on a zeroed or already-finished set. */
void gt_gpu_set_fini(struct gt_gpu_set *set);

/* ---- cgroups ---- */

/* v1 controllers gantry uses; each may be mounted on its own hierarchy. */
/* (cpuacct: its own hierarchy only where it is not mounted with cpu.) */
enum gt_cgroup_ctrl {
    GT_CG_CPU,
    GT_CG_MEMORY,
    GT_CG_PIDS,
    GT_CG_DEVICES,
    GT_CG_CPUACCT,
    GT_CG_NCTRL
};

struct gt_cgroup_ops;

/* The machine's cgroup layout, detected once at start. Plain value; copy freely. */
struct gt_cgroup_sys {
    const struct gt_cgroup_ops *ops;
    int version;                     /* 1 or 2 */
    char v2_root[256];               /* v2: the unified mount point */
    char v1_mount[GT_CG_NCTRL][256]; /* v1: mount point per controller, "" if absent */
    char dev_dir[256];               /* where /dev/nvidia* nodes are looked for ("/dev") */
};

/* Limits of one task cgroup; zero means "no limit" for each number. */
struct gt_cgroup_limits {
    int64_t cpu_milli;     /* CPU quota in milli-CPUs, over a 100 ms period */
    int64_t memory_bytes;  /* memory limit; no swap beyond it on v2 */
    int64_t pids_max;      /* most processes/threads */
    const int *gpu_minors; /* borrowed: /dev/nvidia<minor> the task may open */
    size_t n_gpu_minors;
    /* Devices rule: on v1, when nvidia device nodes exist in dev_dir, every
     * /dev/nvidiaN not in gpu_minors (and nvidia-modeset, nvidia-caps) is
     * denied; nvidiactl and nvidia-uvm stay open. On v2 device control
     * needs an eBPF program; gantry does not load one, so on v2 device
     * isolation is left to the OCI runtime and this rule is not applied. */
};

/* One task's cgroup: a path relative to every hierarchy's root. */
struct gt_cgroup {
    struct gt_cgroup_sys sys; /* copy of the layout */
    char path[256];           /* "gantry/<task-uid>" */
    int oom_fd;               /* from gt_cgroup_oom_fd, -1 until asked */
    int oom_ctl_fd;           /* v1: memory.oom_control kept open for the eventfd, else -1 */
};

/* Detect the layout: v2 when /sys/fs/cgroup is a cgroup2 mount with
 * cgroup.controllers, else v1 with controller mounts from
 * /proc/self/mountinfo. Returns 0 or a negative code with err set. */
int gt_cgroup_sys_detect(struct gt_cgroup_sys *sys, struct gt_err *err);

/* Use cgroup v2 mounted at root (borrowed) regardless of what
 * /sys/fs/cgroup is; for tests and unusual mounts. 0 or -errno. */
int gt_cgroup_sys_init_v2(struct gt_cgroup_sys *sys, const char *root, struct gt_err *err);

/* Use cgroup v1 with the controllers mounted at mounts[c] (borrowed; NULL
 * or "" where controller c is not mounted), as gt_cgroup_sys_detect found
 * them in another process: the agent hands its layout to each shim, which
 * then parses no /proc/self/mountinfo. GT_EINVAL when none is mounted or a
 * path is not absolute or too long. */
int gt_cgroup_sys_init_v1(struct gt_cgroup_sys *sys, const char *const mounts[GT_CG_NCTRL],
                          struct gt_err *err);

/* The v1 name of controller c ("cpu", "memory", "pids", "devices", "cpuacct"). */
const char *gt_cgroup_ctrl_name(enum gt_cgroup_ctrl c);

/* Prepare cg for the task cgroup at rel_path under sys (copied). No I/O. */
int gt_cgroup_init(struct gt_cgroup *cg, const struct gt_cgroup_sys *sys, const char *rel_path,
                   struct gt_err *err);

/* Create the cgroup (and missing parents) and write its limits. An
 * existing, empty cgroup is reused; one with processes is -EBUSY. A limit
 * whose controller is absent fails with -ENOTSUP. On failure nothing is
 * left behind below the parents. */
int gt_cgroup_create(struct gt_cgroup *cg, const struct gt_cgroup_limits *lim, struct gt_err *err);

/* Open the cgroup.procs files (O_WRONLY, close-on-exec) that place a
 * process in the cgroup, one per hierarchy (*n of at most GT_CG_NCTRL,
 * caller closes): a process writing "0" to each joins the cgroup itself,
 * as a task does between clone and exec. 0 or -errno (none left open). */
int gt_cgroup_procs_open(const struct gt_cgroup *cg, int *fds, size_t *n, struct gt_err *err);

/* The pids in the cgroup, as a new array (*pids, caller frees; NULL when
 * *n_pids is 0). A missing cgroup has no pids. 0 or -errno. */
int gt_cgroup_pids(const struct gt_cgroup *cg, pid_t **pids, size_t *n_pids, struct gt_err *err);

/* A file descriptor that polls readable when the cgroup hits an OOM
 * (v1: eventfd on memory.oom_control; v2: inotify on memory.events).
 * Borrowed: owned by cg and closed by gt_cgroup_fini. 0 or -errno. */
int gt_cgroup_oom_fd(struct gt_cgroup *cg, int *fd, struct gt_err *err);

/* OOM kills so far in the cgroup (the kernel's oom_kill counter). */
int gt_cgroup_oom_kills(const struct gt_cgroup *cg, int64_t *count, struct gt_err *err);

/* A task cgroup's usage, as cAdvisor reads it; -1 where unknown. */
struct gt_cgroup_stats {
    int64_t cpu_usage_ns; /* CPU time of all its processes (v1 cpuacct.usage, v2 cpu.stat) */
    /* memory in use minus inactive file pages: cAdvisor's working set
     * (v1 memory.usage_in_bytes - total_inactive_file, v2 memory.current -
     * inactive_file), never below 0 */
    int64_t memory_working_set_bytes;
};

/* Read the cgroup's usage into st. A missing cgroup or controller leaves
 * its fields -1; never fails. */
void gt_cgroup_stats(const struct gt_cgroup *cg, struct gt_cgroup_stats *st);

/* SIGKILL every process in the cgroup until it is empty (v2: cgroup.kill
 * where the kernel has it). Gives up after about 5 s with -EBUSY. */
int gt_cgroup_kill_all(const struct gt_cgroup *cg, struct gt_err *err);

/* Remove the cgroup (rmdir, retried while the kernel still reports it
 * busy, about 2 s). A missing cgroup is fine. 0 or -errno. */
int gt_cgroup_remove(const struct gt_cgroup *cg, struct gt_err *err);

/* Close the descriptors cg holds. Does not remove the cgroup. */
void gt_cgroup_fini(struct gt_cgroup *cg);

/* rmdir rel_path (an empty parent such as "gantry") in every hierarchy;
 * missing is fine. 0 or -errno (-EBUSY when it still has children). */
int gt_cgroup_sys_remove_dir(const struct gt_cgroup_sys *sys, const char *rel_path,
                             struct gt_err *err);

/* ---- volumes beneath storage roots (volume.c) ---- */

/* Place host_path (absolute, borrowed) beneath the
 * longest of roots[0..n_roots) that is a whole-component prefix of it:
 * *root_index, and *rel pointing into host_path (or "." for the root
 * itself). GT_EFORBIDDEN when no root contains it. Lexical only. */
int gt_volume_locate(char *const *roots, size_t n_roots, const char *host_path, size_t *root_index,
                     const char **rel, struct gt_err *err);
/* Open root/rel as an O_PATH|O_CLOEXEC fd (*fd, caller closes) with
 * openat2 RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS from root's directory: a
 * symlink or ".." leaving root fails. GT_EFORBIDDEN with err saying why
 * (escape, missing path, bad root). */
int gt_volume_open(const char *root, const char *rel, int *fd, struct gt_err *err);
/* The same open, async-signal-safe: the fd, or -1 with errno (EXDEV: escape). */
int gt_volume_open_raw(const char *root, const char *rel);

/* ---- Volumes' disk images (volmount.c) ---- */

/* Where image (a Volume's disk image, borrowed) is mounted on this node:
 * volumes_dir/<its file name without ".img">, into buf. */
void gt_volume_mountpoint(const char *volumes_dir, const char *image, char *buf, size_t len);
/* Loop-mount image (beneath one of roots, opened as gt_volume_open does,
 * a regular file) at its mount point unless it is mounted there already;
 * read_only: mounted read-only (datasets). 0, GT_EFORBIDDEN (not beneath
 * a root, or not a file) or GT_EINTERNAL with mount's message. */
int gt_volume_attach(const char *volumes_dir, char *const *roots, size_t n_roots, const char *image,
                     bool read_only, struct gt_err *err);
/* Unmount (lazily) and remove every mount point in volumes_dir for which
 * in_use(name, arg) is false. */
void gt_volume_sweep(const char *volumes_dir, bool (*in_use)(const char *id, void *arg), void *arg);

#endif
