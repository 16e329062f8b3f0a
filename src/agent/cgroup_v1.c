/*
 * cgroup v1: one directory per controller hierarchy (cpu, memory, pids,
 * devices, and cpuacct where it is not mounted with cpu), all with the same
 * relative path. The task is placed in every
 * mounted one; the pids (else memory, cpu, devices) hierarchy lists its
 * processes. OOM: an eventfd registered on memory.oom_control through
 * cgroup.event_control, and the oom_kill counter in memory.oom_control.
 *
 * Devices: the v1 devices controller starts from its parent's rules
 * (allow-all at the root). When nvidia device nodes exist, the task's
 * cgroup gets deny rules for every other /dev/nvidiaN, nvidia-modeset and
 * the nvidia-caps major; nvidiactl and nvidia-uvm stay allowed. (An allow
 * rule cannot punch a hole into a wildcard deny in allow-all mode, hence
 * one deny per foreign GPU.) Without nvidia nodes there is no rule to
 * write, and the task stays in its parent's devices cgroup.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agent/agent_int.h"

#define NVIDIA_MAJOR 195
#define CFS_PERIOD_US 100000
#define CFS_MIN_QUOTA_US 1000

static int dir_of(const struct gt_cgroup *cg, enum gt_cgroup_ctrl c, char *buf, size_t len)
{
    if (!cg->sys.v1_mount[c][0]) {
        return -ENOENT;
    }
    int n = snprintf(buf, len, "%s/%s", cg->sys.v1_mount[c], cg->path);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static bool in_list(const int *list, size_t n, int v)
{
    for (size_t i = 0; i < n; i++) {
        if (list[i] == v) {
            return true;
        }
    }
    return false;
}

/* Major of a character device named in /proc/devices, or -1. */
static int proc_devices_major(const char *name)
{
    FILE *f = fopen("/proc/devices", "re");
    if (!f) {
        return -1;
    }
    char line[128];
    int major = -1;
    bool chars = false;
    while (fgets(line, sizeof(line), f)) {
        char dev[64];
        int m;
        if (strncmp(line, "Character devices:", 18) == 0) {
            chars = true;
        } else if (strncmp(line, "Block devices:", 14) == 0) {
            chars = false;
        } else if (chars && sscanf(line, "%d %63s", &m, dev) == 2 && strcmp(dev, name) == 0) {
            major = m;
        }
    }
    fclose(f);
    return major;
}

/* "nvidia<digits>" (a GPU) or "nvidia-modeset"; not nvidiactl, nvidia-uvm. */
static bool is_denied_node_name(const char *name)
{
    if (strcmp(name, "nvidia-modeset") == 0) {
        return true;
    }
    if (strncmp(name, "nvidia", 6) != 0 || name[6] == '\0') {
        return false;
    }
    for (const char *p = name + 6; *p; p++) {
        if (*p < '0' || *p > '9') {
            return false;
        }
    }
    return true;
}

static int deny(const char *dir, const char *rule, struct gt_err *err)
{
    return gt_cgroup_write(dir, "devices.deny", rule, err);
}

/* Whether nvidia device nodes exist in dev_dir: only then has the devices
 * hierarchy rules to apply. */
static bool have_gpu_nodes(const struct gt_cgroup_sys *sys)
{
    char ctl[512];
    struct stat st;
    snprintf(ctl, sizeof(ctl), "%s/nvidiactl", sys->dev_dir);
    return stat(ctl, &st) == 0;
}

/* The deny rules; only called when nvidia nodes exist. */
static int apply_devices(const struct gt_cgroup *cg, const struct gt_cgroup_limits *lim,
                         struct gt_err *err)
{
    char dir[768], rule[64];
    struct stat st;
    int rc = dir_of(cg, GT_CG_DEVICES, dir, sizeof(dir));
    if (rc < 0) {
        return gt_err_set(err, -ENOTSUP, "GPU devices present but no devices controller");
    }
    DIR *d = opendir(cg->sys.dev_dir);
    if (!d) {
        rc = -errno;
        return gt_err_set(err, rc, "opendir %s: %s", cg->sys.dev_dir, strerror(errno));
    }
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        if (!is_denied_node_name(e->d_name)) {
            continue;
        }
        if (fstatat(dirfd(d), e->d_name, &st, 0) < 0 || !S_ISCHR(st.st_mode) ||
            major(st.st_rdev) != NVIDIA_MAJOR ||
            in_list(lim->gpu_minors, lim->n_gpu_minors, (int)minor(st.st_rdev))) {
            continue;
        }
        snprintf(rule, sizeof(rule), "c %u:%u rwm", major(st.st_rdev), minor(st.st_rdev));
        rc = deny(dir, rule, err);
    }
    closedir(d);
    int caps = proc_devices_major("nvidia-caps");
    if (rc == 0 && caps >= 0) {
        snprintf(rule, sizeof(rule), "c %d:* rwm", caps);
        rc = deny(dir, rule, err);
    }
    return rc;
}

static int write_limits(const struct gt_cgroup *cg, const struct gt_cgroup_limits *lim,
                        bool gpu_nodes, struct gt_err *err)
{
    char dir[768], val[32];
    int rc = 0;
    if (dir_of(cg, GT_CG_CPU, dir, sizeof(dir)) == 0) {
        int64_t quota = lim->cpu_milli * (CFS_PERIOD_US / 1000);
        snprintf(val, sizeof(val), "%d", CFS_PERIOD_US);
        rc = gt_cgroup_write(dir, "cpu.cfs_period_us", val, err);
        snprintf(val, sizeof(val), "%lld",
                 lim->cpu_milli ? (long long)(quota < CFS_MIN_QUOTA_US ? CFS_MIN_QUOTA_US : quota)
                                : -1LL);
        rc = rc < 0 ? rc : gt_cgroup_write(dir, "cpu.cfs_quota_us", val, err);
    } else if (lim->cpu_milli) {
        return gt_err_set(err, -ENOTSUP, "cpu limit asked but no cpu controller mounted");
    }
    if (rc == 0 && dir_of(cg, GT_CG_MEMORY, dir, sizeof(dir)) == 0) {
        snprintf(val, sizeof(val), "%lld", lim->memory_bytes ? (long long)lim->memory_bytes : -1LL);
        rc = gt_cgroup_write(dir, "memory.limit_in_bytes", val, err);
    } else if (rc == 0 && lim->memory_bytes) {
        return gt_err_set(err, -ENOTSUP, "memory limit asked but no memory controller mounted");
    }
    if (rc == 0 && dir_of(cg, GT_CG_PIDS, dir, sizeof(dir)) == 0) {
        if (lim->pids_max) {
            snprintf(val, sizeof(val), "%lld", (long long)lim->pids_max);
        } else {
            snprintf(val, sizeof(val), "max");
        }
        rc = gt_cgroup_write(dir, "pids.max", val, err);
    } else if (rc == 0 && lim->pids_max) {
        return gt_err_set(err, -ENOTSUP, "pids limit asked but no pids controller mounted");
    }
    /* without nvidia nodes: no real GPUs on this machine, nothing to isolate */
    return rc < 0 || !gpu_nodes ? rc : apply_devices(cg, lim, err);
}

static int v1_procs_path(const struct gt_cgroup *cg, char *buf, size_t len)
{
    static const enum gt_cgroup_ctrl order[] = {GT_CG_PIDS, GT_CG_MEMORY, GT_CG_CPU, GT_CG_DEVICES};
    for (size_t i = 0; i < GT_ARRAY_LEN(order); i++) {
        char dir[640];
        if (dir_of(cg, order[i], dir, sizeof(dir)) == 0) {
            int n = snprintf(buf, len, "%s/cgroup.procs", dir);
            return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
        }
    }
    return -ENOENT;
}

static int v1_remove(const struct gt_cgroup *cg, struct gt_err *err)
{
    int rc = 0;
    for (int c = 0; c < GT_CG_NCTRL; c++) {
        if (cg->sys.v1_mount[c][0]) {
            int r = gt_cgroup_rmdir(cg->sys.v1_mount[c], cg->path, err);
            rc = rc < 0 ? rc : r;
        }
    }
    return rc;
}

static int v1_create(struct gt_cgroup *cg, const struct gt_cgroup_limits *lim, struct gt_err *err)
{
    int rc = 0;
    bool any_new = false;
    bool gpu_nodes = have_gpu_nodes(&cg->sys);
    if (!gpu_nodes) {
        /* a devices cgroup without rules is its parent's: the task stays there */
        cg->sys.v1_mount[GT_CG_DEVICES][0] = '\0';
    }
    for (int c = 0; c < GT_CG_NCTRL && rc == 0; c++) {
        bool created;
        if (cg->sys.v1_mount[c][0]) {
            rc = gt_cgroup_mkdirs(cg->sys.v1_mount[c], cg->path, &created, err);
            any_new |= created;
        }
    }
    if (rc == 0 && !any_new) {
        rc = gt_cgroup_require_empty(cg, err);
    }
    rc = rc < 0 ? rc : write_limits(cg, lim, gpu_nodes, err);
    if (rc < 0) {
        v1_remove(cg, NULL);
    }
    return rc;
}

static int v1_procs_dirs(const struct gt_cgroup *cg, char (*dirs)[768], size_t *n)
{
    *n = 0;
    for (int c = 0; c < GT_CG_NCTRL; c++) {
        if (dir_of(cg, (enum gt_cgroup_ctrl)c, dirs[*n], sizeof(dirs[*n])) == 0) {
            ++*n;
        }
    }
    return 0;
}

static int v1_oom_fd(struct gt_cgroup *cg, struct gt_err *err)
{
    char dir[768], path[800], val[32];
    int rc = dir_of(cg, GT_CG_MEMORY, dir, sizeof(dir));
    if (rc < 0) {
        return gt_err_set(err, -ENOTSUP, "no memory controller mounted");
    }
    snprintf(path, sizeof(path), "%s/memory.oom_control", dir);
    int ctl_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (ctl_fd < 0) {
        rc = -errno;
        return gt_err_set(err, rc, "open %s: %s", path, strerror(errno));
    }
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0) {
        rc = -errno;
        close(ctl_fd);
        return gt_err_set(err, rc, "eventfd: %s", strerror(-rc));
    }
    snprintf(val, sizeof(val), "%d %d", efd, ctl_fd);
    rc = gt_cgroup_write(dir, "cgroup.event_control", val, err);
    if (rc < 0) {
        close(efd);
        close(ctl_fd);
        return rc;
    }
    cg->oom_fd = efd;
    cg->oom_ctl_fd = ctl_fd;
    return 0;
}

static int v1_oom_kills(const struct gt_cgroup *cg, int64_t *count, struct gt_err *err)
{
    char dir[768];
    if (dir_of(cg, GT_CG_MEMORY, dir, sizeof(dir)) < 0) {
        return 0; /* no memory controller, no OOM kills */
    }
    int rc = gt_cgroup_read_key(dir, "memory.oom_control", "oom_kill", count);
    return rc < 0 ? gt_err_set(err, rc, "%s/memory.oom_control: no oom_kill counter", dir) : 0;
}

static void v1_stats(const struct gt_cgroup *cg, struct gt_cgroup_stats *st)
{
    char dir[768];
    /* cpuacct mounted with cpu has no mount of its own */
    if (dir_of(cg, GT_CG_CPUACCT, dir, sizeof(dir)) == 0 ||
        dir_of(cg, GT_CG_CPU, dir, sizeof(dir)) == 0) {
        st->cpu_usage_ns = gt_cgroup_read_int(dir, "cpuacct.usage");
    }
    if (dir_of(cg, GT_CG_MEMORY, dir, sizeof(dir)) == 0) {
        st->memory_working_set_bytes =
            gt_cgroup_working_set(dir, gt_cgroup_read_int(dir, "memory.usage_in_bytes"),
                                  "memory.stat", "total_inactive_file");
    }
}

static int v1_kill_all(const struct gt_cgroup *cg, struct gt_err *err)
{
    char procs[768];
    int rc = v1_procs_path(cg, procs, sizeof(procs));
    return rc < 0 ? gt_err_set(err, rc, "no hierarchy lists processes")
                  : gt_cgroup_kill_loop(procs, err);
}

const struct gt_cgroup_ops gt_cgroup_v1_ops = {
    .name = "v1",
    .create = v1_create,
    .procs_dirs = v1_procs_dirs,
    .procs_path = v1_procs_path,
    .oom_fd = v1_oom_fd,
    .oom_kills = v1_oom_kills,
    .stats = v1_stats,
    .kill_all = v1_kill_all,
    .remove = v1_remove,
};
