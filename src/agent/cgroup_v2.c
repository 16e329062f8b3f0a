/*
 * cgroup v2: one unified hierarchy. Creating a task cgroup enables the cpu,
 * memory and pids controllers (those the kernel offers) in every ancestor's
 * cgroup.subtree_control, then writes cpu.max, memory.max (with
 * memory.swap.max 0, so the limit is not stretched by swap) and pids.max.
 * OOM kills are counted in memory.events, whose changes inotify reports.
 * cgroup.kill (Linux 5.14) kills everything at once where present.
 *
 * Device isolation on v2 needs an eBPF program attached to the cgroup;
 * gantry does not load one. On v2 machines GPU device isolation is provided
 * by the OCI runtime for image tasks, and the devices rule is not applied.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_int.h"

#define CPU_PERIOD_US 100000
#define CPU_MIN_QUOTA_US 1000

static const char *const controllers[] = {"cpu", "memory", "pids"};

static int dir_of(const struct gt_cgroup *cg, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/%s", cg->sys.v2_root, cg->path);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static bool offered(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(list, name); p; p = strstr(p + 1, name)) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0')) {
            return true;
        }
    }
    return false;
}

/* Enable the controllers this hierarchy offers in one cgroup's subtree. */
static int enable_in(const char *dir, struct gt_err *err)
{
    char avail[256], enabled[256];
    int rc = gt_cgroup_read(dir, "cgroup.controllers", avail, sizeof(avail));
    rc = rc < 0 ? rc : gt_cgroup_read(dir, "cgroup.subtree_control", enabled, sizeof(enabled));
    if (rc < 0) {
        return gt_err_set(err, rc, "%s: %s", dir, strerror(-rc));
    }
    for (size_t c = 0; c < GT_ARRAY_LEN(controllers) && rc == 0; c++) {
        char op[16];
        if (offered(avail, controllers[c]) && !offered(enabled, controllers[c])) {
            snprintf(op, sizeof(op), "+%s", controllers[c]);
            rc = gt_cgroup_write(dir, "cgroup.subtree_control", op, err);
        }
    }
    return rc;
}

/* Enable the controllers in the root and every ancestor of the task cgroup:
 * each '/' after the root ends one of them (root, root/a, ..., the parent). */
static int enable_controllers(const struct gt_cgroup *cg, struct gt_err *err)
{
    char dir[768];
    if (dir_of(cg, dir, sizeof(dir)) < 0) {
        return gt_err_set(err, -ENAMETOOLONG, "path too long");
    }
    int rc = 0;
    for (char *slash = dir + strlen(cg->sys.v2_root); slash && rc == 0;
         slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        rc = enable_in(dir, err);
        *slash = '/';
    }
    return rc;
}

/* Write name=value; a missing file means the controller is not available. */
static int write_limit(const char *dir, const char *name, const char *value, struct gt_err *err)
{
    int rc = gt_cgroup_write(dir, name, value, err);
    if (rc == -ENOENT) {
        gt_err_clear(err);
        return gt_err_set(err, -ENOTSUP, "%s asked but its controller is not available", name);
    }
    return rc;
}

static int write_limits(const struct gt_cgroup *cg, const struct gt_cgroup_limits *lim,
                        struct gt_err *err)
{
    char dir[768], val[64];
    dir_of(cg, dir, sizeof(dir));
    int rc = 0;
    if (lim->cpu_milli) {
        int64_t quota = lim->cpu_milli * (CPU_PERIOD_US / 1000);
        snprintf(val, sizeof(val), "%lld %d",
                 (long long)(quota < CPU_MIN_QUOTA_US ? CPU_MIN_QUOTA_US : quota), CPU_PERIOD_US);
        rc = write_limit(dir, "cpu.max", val, err);
    }
    if (rc == 0 && lim->memory_bytes) {
        snprintf(val, sizeof(val), "%lld", (long long)lim->memory_bytes);
        rc = write_limit(dir, "memory.max", val, err);
        char probe[32];
        if (rc == 0 && gt_cgroup_read(dir, "memory.swap.max", probe, sizeof(probe)) == 0) {
            rc = gt_cgroup_write(dir, "memory.swap.max", "0", err);
        }
    }
    if (rc == 0 && lim->pids_max) {
        snprintf(val, sizeof(val), "%lld", (long long)lim->pids_max);
        rc = write_limit(dir, "pids.max", val, err);
    }
    return rc;
}

static int v2_procs_path(const struct gt_cgroup *cg, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/%s/cgroup.procs", cg->sys.v2_root, cg->path);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int v2_remove(const struct gt_cgroup *cg, struct gt_err *err)
{
    return gt_cgroup_rmdir(cg->sys.v2_root, cg->path, err);
}

static int v2_create(struct gt_cgroup *cg, const struct gt_cgroup_limits *lim, struct gt_err *err)
{
    bool created;
    int rc = gt_cgroup_mkdirs(cg->sys.v2_root, cg->path, &created, err);
    if (rc < 0) {
        return rc;
    }
    if (!created) {
        rc = gt_cgroup_require_empty(cg, err);
    }
    rc = rc < 0 ? rc : enable_controllers(cg, err);
    rc = rc < 0 ? rc : write_limits(cg, lim, err);
    if (rc < 0) {
        v2_remove(cg, NULL);
    }
    return rc;
}

static int v2_procs_dirs(const struct gt_cgroup *cg, char (*dirs)[768], size_t *n)
{
    dir_of(cg, dirs[0], sizeof(dirs[0]));
    *n = 1;
    return 0;
}

static int v2_oom_fd(struct gt_cgroup *cg, struct gt_err *err)
{
    char path[800];
    snprintf(path, sizeof(path), "%s/%s/memory.events", cg->sys.v2_root, cg->path);
    int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (fd < 0) {
        int rc = -errno;
        return gt_err_set(err, rc, "inotify_init1: %s", strerror(errno));
    }
    if (inotify_add_watch(fd, path, IN_MODIFY) < 0) {
        int rc = errno == ENOENT ? -ENOTSUP : -errno;
        gt_err_set(err, rc, "watch %s: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    cg->oom_fd = fd;
    return 0;
}

static int v2_oom_kills(const struct gt_cgroup *cg, int64_t *count, struct gt_err *err)
{
    char dir[768];
    dir_of(cg, dir, sizeof(dir));
    int rc = gt_cgroup_read_key(dir, "memory.events", "oom_kill", count);
    if (rc == -ENOENT) {
        return 0; /* memory controller not enabled: no OOM kills to count */
    }
    return rc < 0 ? gt_err_set(err, rc, "%s/memory.events: %s", dir, strerror(-rc)) : 0;
}

static void v2_stats(const struct gt_cgroup *cg, struct gt_cgroup_stats *st)
{
    char dir[768];
    int64_t usec;
    dir_of(cg, dir, sizeof(dir));
    if (gt_cgroup_read_key(dir, "cpu.stat", "usage_usec", &usec) == 0) {
        st->cpu_usage_ns = usec * 1000;
    }
    st->memory_working_set_bytes = gt_cgroup_working_set(
        dir, gt_cgroup_read_int(dir, "memory.current"), "memory.stat", "inactive_file");
}

static int v2_kill_all(const struct gt_cgroup *cg, struct gt_err *err)
{
    char dir[768], procs[800];
    dir_of(cg, dir, sizeof(dir));
    v2_procs_path(cg, procs, sizeof(procs));
    if (gt_cgroup_write(dir, "cgroup.kill", "1", NULL) == 0) {
        /* cgroup.kill signals everything at once; wait for the exits to land */
        for (int i = 0; i < 1000; i++) {
            pid_t *pids;
            size_t n;
            int rc = gt_cgroup_read_pids(procs, &pids, &n, err);
            free(pids);
            if (rc < 0 || n == 0) {
                return rc;
            }
            struct timespec ts = {0, 5000000};
            nanosleep(&ts, NULL);
        }
    }
    return gt_cgroup_kill_loop(procs, err);
}

const struct gt_cgroup_ops gt_cgroup_v2_ops = {
    .name = "v2",
    .create = v2_create,
    .procs_dirs = v2_procs_dirs,
    .procs_path = v2_procs_path,
    .oom_fd = v2_oom_fd,
    .oom_kills = v2_oom_kills,
    .stats = v2_stats,
    .kill_all = v2_kill_all,
    .remove = v2_remove,
};
