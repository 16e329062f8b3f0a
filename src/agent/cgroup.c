/*
 * Task cgroups: detection of the machine's layout (v1 per-controller
 * hierarchies, or the v2 unified hierarchy), the public calls of agent.h
 * dispatched to the version's ops table, and the control-file helpers both
 * versions share. A task cgroup is named by one relative path
 * ("gantry/<task-uid>") that exists under every hierarchy gantry uses.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_int.h"

#define CGROUP2_SUPER_MAGIC 0x63677270 /* linux/magic.h */
#define SYS_FS_CGROUP "/sys/fs/cgroup"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int join(char *buf, size_t len, const char *dir, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int gt_cgroup_write(const char *dir, const char *name, const char *value, struct gt_err *err)
{
    char path[768];
    int rc = join(path, sizeof(path), dir, name);
    if (rc < 0) {
        return gt_err_set(err, rc, "%s/%s: path too long", dir, name);
    }
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = -errno;
        return gt_err_set(err, rc, "open %s: %s", path, strerror(errno));
    }
    size_t len = strlen(value);
    ssize_t w = write(fd, value, len);
    if (w < 0 || (size_t)w != len) {
        rc = w < 0 ? -errno : -EIO;
        gt_err_set(err, rc, "write \"%s\" to %s: %s", value, path, strerror(-rc));
    }
    close(fd);
    return rc;
}

int gt_cgroup_read(const char *dir, const char *name, char *buf, size_t len)
{
    char path[768];
    int rc = join(path, sizeof(path), dir, name);
    if (rc < 0) {
        return rc;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -errno;
    }
    size_t used = 0;
    while (used + 1 < len) {
        ssize_t r = read(fd, buf + used, len - 1 - used);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            rc = r < 0 ? -errno : 0;
            break;
        }
        used += (size_t)r;
    }
    buf[used] = '\0';
    close(fd);
    return rc;
}

int gt_cgroup_read_key(const char *dir, const char *name, const char *key, int64_t *value)
{
    char buf[4096];
    int rc = gt_cgroup_read(dir, name, buf, sizeof(buf));
    if (rc < 0) {
        return rc;
    }
    size_t klen = strlen(key);
    for (char *line = buf, *next; *line; line = next) {
        next = strchr(line, '\n');
        next = next ? next + 1 : line + strlen(line);
        long long v;
        if (strncmp(line, key, klen) == 0 && line[klen] == ' ' &&
            sscanf(line + klen + 1, "%lld", &v) == 1) {
            *value = v;
            return 0;
        }
    }
    return -ENOENT;
}

int64_t gt_cgroup_read_int(const char *dir, const char *name)
{
    char buf[64];
    long long v;
    return gt_cgroup_read(dir, name, buf, sizeof(buf)) == 0 && sscanf(buf, "%lld", &v) == 1
               ? (int64_t)v
               : -1;
}

int64_t gt_cgroup_working_set(const char *dir, int64_t usage, const char *stat_file,
                              const char *inactive_key)
{
    int64_t inactive = 0;
    if (usage < 0) {
        return -1;
    }
    if (gt_cgroup_read_key(dir, stat_file, inactive_key, &inactive) < 0) {
        inactive = 0;
    }
    return inactive > usage ? 0 : usage - inactive;
}

int gt_cgroup_mkdirs(const char *root, const char *rel, bool *created, struct gt_err *err)
{
    char path[768];
    int rc = join(path, sizeof(path), root, rel);
    if (rc < 0) {
        return gt_err_set(err, rc, "%s/%s: path too long", root, rel);
    }
    *created = false;
    /* the parents exist but for the first task: try the leaf first */
    if (mkdir(path, 0755) == 0) {
        *created = true;
        return 0;
    }
    for (size_t i = strlen(root) + 1;; i++) {
        char c = path[i];
        if (c != '/' && c != '\0') {
            continue;
        }
        path[i] = '\0';
        if (mkdir(path, 0755) == 0) {
            *created = c == '\0';
        } else if (errno != EEXIST) {
            rc = -errno;
            return gt_err_set(err, rc, "mkdir %s: %s", path, strerror(errno));
        }
        path[i] = c;
        if (c == '\0') {
            break;
        }
    }
    return 0;
}

int gt_cgroup_rmdir(const char *root, const char *rel, struct gt_err *err)
{
    char path[768];
    int rc = join(path, sizeof(path), root, rel);
    if (rc < 0) {
        return gt_err_set(err, rc, "%s/%s: path too long", root, rel);
    }
    /* the kernel reports EBUSY for a moment after the last process exits;
     * with processes still listed it is no moment, so give up at once */
    for (int i = 0; i < 200; i++) {
        if (rmdir(path) == 0 || errno == ENOENT) {
            return 0;
        }
        rc = -errno;
        char pids[16];
        if (rc != -EBUSY ||
            (gt_cgroup_read(path, "cgroup.procs", pids, sizeof(pids)) == 0 && pids[0] != '\0')) {
            break;
        }
        sleep_ms(10);
    }
    return gt_err_set(err, rc, "rmdir %s: %s", path, strerror(-rc));
}

int gt_cgroup_read_pids(const char *procs_file, pid_t **pids, size_t *n_pids, struct gt_err *err)
{
    *pids = NULL;
    *n_pids = 0;
    FILE *f = fopen(procs_file, "re");
    if (!f) {
        if (errno == ENOENT) {
            return 0;
        }
        int rc = -errno;
        return gt_err_set(err, rc, "open %s: %s", procs_file, strerror(errno));
    }
    size_t cap = 0;
    long v;
    while (fscanf(f, "%ld", &v) == 1) {
        GT_VEC_RESERVE(*pids, cap, *n_pids + 1, 16);
        (*pids)[(*n_pids)++] = (pid_t)v;
    }
    fclose(f);
    return 0;
}

int gt_cgroup_kill_loop(const char *procs_file, struct gt_err *err)
{
    for (int round = 0; round < 500; round++) {
        pid_t *pids;
        size_t n;
        int rc = gt_cgroup_read_pids(procs_file, &pids, &n, err);
        if (rc < 0 || n == 0) {
            return rc;
        }
        for (size_t i = 0; i < n; i++) {
            kill(pids[i], SIGKILL);
        }
        free(pids);
        sleep_ms(round < 10 ? 1 : 10);
    }
    return gt_err_set(err, -EBUSY, "%s: processes survive SIGKILL", procs_file);
}

/* ---- detection ---- */

static const char *const ctrl_names[GT_CG_NCTRL] = {
    [GT_CG_CPU] = "cpu",         [GT_CG_MEMORY] = "memory",   [GT_CG_PIDS] = "pids",
    [GT_CG_DEVICES] = "devices", [GT_CG_CPUACCT] = "cpuacct",
};

static bool has_option(const char *opts, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = opts; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0')) {
            return true;
        }
    }
    return false;
}

/* Controller mount points of the v1 hierarchies from /proc/self/mountinfo:
 * "<id> <parent> <maj:min> <root> <mountpoint> <opts> [optional...] - cgroup <src> <superopts>" */
static int detect_v1(struct gt_cgroup_sys *sys, struct gt_err *err)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f) {
        int rc = -errno;
        return gt_err_set(err, rc, "open /proc/self/mountinfo: %s", strerror(errno));
    }
    char line[4096];
    int found = 0;
    while (fgets(line, sizeof(line), f)) {
        char mnt[256], fstype[32], superopts[512];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 ||
            sscanf(dash + 3, "%31s %*s %511s", fstype, superopts) != 2 ||
            strcmp(fstype, "cgroup") != 0) {
            continue;
        }
        for (int c = 0; c < GT_CG_NCTRL; c++) {
            bool with_cpu = c == GT_CG_CPUACCT && !strcmp(sys->v1_mount[GT_CG_CPU], mnt);
            if (has_option(superopts, ctrl_names[c]) && !sys->v1_mount[c][0] && !with_cpu) {
                snprintf(sys->v1_mount[c], sizeof(sys->v1_mount[c]), "%s", mnt);
                found++;
            }
        }
    }
    fclose(f);
    if (found == 0) {
        return gt_err_set(err, -ENOENT,
                          "no cgroup v1 controllers (cpu, memory, pids, devices) "
                          "mounted and no cgroup v2 at " SYS_FS_CGROUP);
    }
    sys->version = 1;
    sys->ops = &gt_cgroup_v1_ops;
    return 0;
}

int gt_cgroup_sys_init_v2(struct gt_cgroup_sys *sys, const char *root, struct gt_err *err)
{
    memset(sys, 0, sizeof(*sys));
    snprintf(sys->dev_dir, sizeof(sys->dev_dir), "/dev");
    struct statfs st;
    char probe[64];
    if (statfs(root, &st) < 0) {
        int rc = -errno;
        return gt_err_set(err, rc, "statfs %s: %s", root, strerror(errno));
    }
    if (st.f_type != CGROUP2_SUPER_MAGIC ||
        gt_cgroup_read(root, "cgroup.controllers", probe, sizeof(probe)) < 0) {
        return gt_err_set(err, -ENOTSUP, "%s is not a cgroup v2 mount", root);
    }
    if (strlen(root) >= sizeof(sys->v2_root)) {
        return gt_err_set(err, -ENAMETOOLONG, "%s: path too long", root);
    }
    snprintf(sys->v2_root, sizeof(sys->v2_root), "%s", root);
    sys->version = 2;
    sys->ops = &gt_cgroup_v2_ops;
    return 0;
}

int gt_cgroup_sys_init_v1(struct gt_cgroup_sys *sys, const char *const mounts[GT_CG_NCTRL],
                          struct gt_err *err)
{
    memset(sys, 0, sizeof(*sys));
    snprintf(sys->dev_dir, sizeof(sys->dev_dir), "/dev");
    int found = 0;
    for (int c = 0; c < GT_CG_NCTRL; c++) {
        const char *m = mounts[c];
        if (!m || !m[0]) {
            continue;
        }
        if (m[0] != '/' || strlen(m) >= sizeof(sys->v1_mount[c])) {
            return gt_err_set(err, GT_EINVAL, "%s hierarchy \"%s\": want an absolute path",
                              ctrl_names[c], m);
        }
        snprintf(sys->v1_mount[c], sizeof(sys->v1_mount[c]), "%s", m);
        found++;
    }
    if (found == 0) {
        return gt_err_set(err, GT_EINVAL, "no cgroup v1 hierarchy given");
    }
    sys->version = 1;
    sys->ops = &gt_cgroup_v1_ops;
    return 0;
}

const char *gt_cgroup_ctrl_name(enum gt_cgroup_ctrl c)
{
    return c >= 0 && c < GT_CG_NCTRL ? ctrl_names[c] : "";
}

int gt_cgroup_sys_detect(struct gt_cgroup_sys *sys, struct gt_err *err)
{
    if (gt_cgroup_sys_init_v2(sys, SYS_FS_CGROUP, NULL) == 0) {
        return 0;
    }
    memset(sys, 0, sizeof(*sys));
    snprintf(sys->dev_dir, sizeof(sys->dev_dir), "/dev");
    return detect_v1(sys, err);
}

int gt_cgroup_sys_remove_dir(const struct gt_cgroup_sys *sys, const char *rel_path,
                             struct gt_err *err)
{
    if (sys->version == 2) {
        return gt_cgroup_rmdir(sys->v2_root, rel_path, err);
    }
    int rc = 0;
    for (int c = 0; c < GT_CG_NCTRL; c++) {
        if (sys->v1_mount[c][0]) {
            int r = gt_cgroup_rmdir(sys->v1_mount[c], rel_path, err);
            rc = rc < 0 ? rc : r;
        }
    }
    return rc;
}

/* ---- task cgroups ---- */

int gt_cgroup_init(struct gt_cgroup *cg, const struct gt_cgroup_sys *sys, const char *rel_path,
                   struct gt_err *err)
{
    memset(cg, 0, sizeof(*cg));
    cg->oom_fd = -1;
    cg->oom_ctl_fd = -1;
    if (!sys->ops) {
        return gt_err_set(err, GT_EINVAL, "cgroup layout not detected");
    }
    if (!rel_path[0] || rel_path[0] == '/' || strstr(rel_path, "..") ||
        rel_path[strlen(rel_path) - 1] == '/' || strlen(rel_path) >= sizeof(cg->path)) {
        return gt_err_set(err, GT_EINVAL, "cgroup path \"%s\": want a relative path without \"..\"",
                          rel_path);
    }
    cg->sys = *sys;
    snprintf(cg->path, sizeof(cg->path), "%s", rel_path);
    return 0;
}

int gt_cgroup_create(struct gt_cgroup *cg, const struct gt_cgroup_limits *lim, struct gt_err *err)
{
    static const struct gt_cgroup_limits none;
    int rc = cg->sys.ops->create(cg, lim ? lim : &none, err);
    if (rc < 0) {
        gt_err_prefix(err, "cgroup %s", cg->path);
    }
    return rc;
}

int gt_cgroup_procs_open(const struct gt_cgroup *cg, int *fds, size_t *n, struct gt_err *err)
{
    char dirs[GT_CG_NCTRL][768], path[800];
    cg->sys.ops->procs_dirs(cg, dirs, n);
    for (size_t i = 0; i < *n; i++) {
        snprintf(path, sizeof(path), "%.767s/cgroup.procs", dirs[i]);
        if ((fds[i] = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
            int rc = -errno;
            gt_err_set(err, rc, "open %s: %s", path, strerror(errno));
            while (i > 0) {
                close(fds[--i]);
            }
            *n = 0;
            return rc;
        }
    }
    return 0;
}

int gt_cgroup_pids(const struct gt_cgroup *cg, pid_t **pids, size_t *n_pids, struct gt_err *err)
{
    char procs[768];
    int rc = cg->sys.ops->procs_path(cg, procs, sizeof(procs));
    if (rc < 0) {
        *pids = NULL;
        *n_pids = 0;
        return gt_err_set(err, rc, "cgroup %s: no hierarchy lists its processes", cg->path);
    }
    return gt_cgroup_read_pids(procs, pids, n_pids, err);
}

int gt_cgroup_oom_fd(struct gt_cgroup *cg, int *fd, struct gt_err *err)
{
    if (cg->oom_fd < 0) {
        int rc = cg->sys.ops->oom_fd(cg, err);
        if (rc < 0) {
            return rc;
        }
    }
    *fd = cg->oom_fd;
    return 0;
}

int gt_cgroup_oom_kills(const struct gt_cgroup *cg, int64_t *count, struct gt_err *err)
{
    *count = 0;
    return cg->sys.ops->oom_kills(cg, count, err);
}

void gt_cgroup_stats(const struct gt_cgroup *cg, struct gt_cgroup_stats *st)
{
    st->cpu_usage_ns = -1;
    st->memory_working_set_bytes = -1;
    cg->sys.ops->stats(cg, st);
}

int gt_cgroup_kill_all(const struct gt_cgroup *cg, struct gt_err *err)
{
    return cg->sys.ops->kill_all(cg, err);
}

int gt_cgroup_remove(const struct gt_cgroup *cg, struct gt_err *err)
{
    return cg->sys.ops->remove(cg, err);
}

void gt_cgroup_fini(struct gt_cgroup *cg)
{
    if (cg->oom_fd >= 0) {
        close(cg->oom_fd);
    }
    if (cg->oom_ctl_fd >= 0) {
        close(cg->oom_ctl_fd);
    }
    cg->oom_fd = -1;
    cg->oom_ctl_fd = -1;
}

int gt_cgroup_require_empty(const struct gt_cgroup *cg, struct gt_err *err)
{
    pid_t *pids;
    size_t n;
    int rc = gt_cgroup_pids(cg, &pids, &n, err);
    free(pids);
    if (rc == 0 && n > 0) {
        return gt_err_set(err, -EBUSY, "exists and holds %zu processes", n);
    }
    return rc;
}
