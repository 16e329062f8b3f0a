/*
 * The container side of an image task, run by the shim as root: the
 * task's root filesystem (the image's shared read-only rootfs under a
 * per-task overlayfs upper layer, or a private copy where overlayfs is not
 * available), the OCI runtime config (config.json, from umoci's config of
 * the image with the task's process, limits, namespaces, mounts and GPUs)
 * and the OCI runtime (runc, crun) invoked with an explicit argv.
 *
 * The bundle is the task's state directory: config.json, container.pid,
 * runtime.log; root.path names DATA_DIR/rootfs (the mount point) over
 * DATA_DIR/ovl/upper and ovl/work, in the task's directory on disk. The
 * container id is the last component of the cgroup path (the task uid);
 * the runtime's --root is the node's. The container runs detached
 * (`run -d`): its init is re-parented to the shim (a child subreaper), so
 * the shim waits for it as for a host task, and its stdout/stderr are the
 * task's log pipe. That init is the shim's own (static) binary,
 * bind-mounted read-only at GT_OCI_INIT_PATH and run as `--init-exec`
 * over the image's process: a script without a SIGTERM handler would
 * otherwise be PID 1 and ignore the stop (issue 16, defect 5); it reports
 * the process's wait status on the fd runc passes in (--preserve-fds).
 * Its cgroup is the one the shim created (cgroupsPath), so limits, OOM
 * counting and kill-all work unchanged; the runtime also
 * creates that path in the hierarchies gantry does not use and leaves
 * their parents behind after `delete`: gt_oci_cleanup removes them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/shim_spec.h"

/* Driver files nvidia-container-toolkit injects for compute (prefixes). */
static const char *const nvidia_libs[] = {
    "libcuda.so",        "libnvidia-ml.so",    "libnvidia-ptxjitcompiler.so",
    "libnvidia-nvvm.so", "libcudadebugger.so", "libnvidia-opencl.so",
};
static const char *const lib_dirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"};
static const char *const nvidia_bins[] = {"/usr/bin/nvidia-smi", "/usr/bin/nvidia-debugdump",
                                          "/usr/bin/nvidia-persistenced"};
static const char *const nvidia_ctl_nodes[] = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"};

static json_t *bind_mount_json(const char *src, const char *dst, bool read_only)
{
    json_t *opts = json_pack("[s, s, s]", "rbind", "nosuid", "nodev");
    if (read_only) {
        json_array_append_new(opts, json_string("ro"));
    }
    return json_pack("{s:s, s:s, s:s, s:o}", "destination", dst, "type", "bind", "source", src,
                     "options", opts);
}

/* A character device node of dev_dir into linux.devices and an allow rule. */
static void add_device(json_t *devices, json_t *rules, const char *dev_dir, const char *name)
{
    char path[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dev_dir, name);
    if (stat(path, &st) < 0 || !S_ISCHR(st.st_mode)) {
        return;
    }
    char dst[PATH_MAX];
    snprintf(dst, sizeof(dst), "/dev/%s", name);
    json_array_append_new(devices, json_pack("{s:s, s:s, s:I, s:I, s:i, s:i, s:i}", "path", dst,
                                             "type", "c", "major", (json_int_t)major(st.st_rdev),
                                             "minor", (json_int_t)minor(st.st_rdev), "fileMode",
                                             0666, "uid", 0, "gid", 0));
    json_array_append_new(rules, json_pack("{s:b, s:s, s:I, s:I, s:s}", "allow", 1, "type", "c",
                                           "major", (json_int_t)major(st.st_rdev), "minor",
                                           (json_int_t)minor(st.st_rdev), "access", "rwm"));
}

/* The task's GPU device nodes and the driver's files, as the toolkit does. */
static void add_gpus(const struct gt_shim_spec *spec, const char *dev_dir, json_t *mounts,
                     json_t *devices, json_t *rules)
{
    if (spec->limits.n_gpu_minors == 0) {
        return;
    }
    for (size_t i = 0; i < spec->limits.n_gpu_minors; i++) {
        char name[32];
        snprintf(name, sizeof(name), "nvidia%d", spec->limits.gpu_minors[i]);
        add_device(devices, rules, dev_dir, name);
    }
    for (size_t i = 0; i < GT_ARRAY_LEN(nvidia_ctl_nodes); i++) {
        add_device(devices, rules, dev_dir, nvidia_ctl_nodes[i]);
    }
    for (size_t d = 0; d < GT_ARRAY_LEN(lib_dirs); d++) {
        DIR *dir = opendir(lib_dirs[d]);
        struct dirent *de;
        while (dir && (de = readdir(dir)) != NULL) {
            for (size_t k = 0; k < GT_ARRAY_LEN(nvidia_libs); k++) {
                if (!strncmp(de->d_name, nvidia_libs[k], strlen(nvidia_libs[k]))) {
                    char p[PATH_MAX];
                    snprintf(p, sizeof(p), "%s/%s", lib_dirs[d], de->d_name);
                    json_array_append_new(mounts, bind_mount_json(p, p, true));
                }
            }
        }
        if (dir) {
            closedir(dir);
        }
    }
    for (size_t i = 0; i < GT_ARRAY_LEN(nvidia_bins); i++) {
        if (access(nvidia_bins[i], X_OK) == 0) {
            json_array_append_new(mounts, bind_mount_json(nvidia_bins[i], nvidia_bins[i], true));
        }
    }
}

static json_t *strv_json(char *const *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(a, json_string(v[i]));
    }
    return a;
}

static json_t *process_json(json_t *base, const struct gt_shim_spec *spec,
                            const struct gt_image_proc *proc, bool init)
{
    json_t *p = json_is_object(base) ? json_deep_copy(base) : json_object();
    json_t *groups = json_array();
    for (size_t i = 0; i < spec->n_groups; i++) {
        json_array_append_new(groups, json_integer(spec->groups[i]));
    }
    json_object_set_new(p, "terminal", json_false());
    json_object_set_new(p, "user",
                        json_pack("{s:I, s:I, s:o}", "uid", (json_int_t)spec->uid, "gid",
                                  (json_int_t)spec->gid, "additionalGids", groups));
    json_t *args = strv_json(proc->argv, proc->n_argv);
    if (init) {
        json_array_insert_new(args, 0, json_string(GT_OCI_INIT_PATH));
        json_array_insert_new(args, 1, json_string("--init-exec"));
        json_array_insert_new(args, 2, json_sprintf("%d", GT_OCI_INIT_FD));
    }
    json_object_set_new(p, "args", args);
    json_object_set_new(p, "env", strv_json(proc->env, proc->n_env));
    json_object_set_new(p, "cwd", json_string(proc->cwd));
    json_object_set_new(p, "noNewPrivileges", json_boolean(!spec->privileged));
    json_object_del(p, "rlimits"); /* inherited, as for host tasks */
    if (spec->uid != 0) {
        /* a task user has no capabilities, as on the host */
        json_t *caps = json_object_get(p, "capabilities");
        json_t *bounding = json_object_get(caps, "bounding");
        json_object_set_new(p, "capabilities",
                            json_pack("{s:O}", "bounding", bounding ? bounding : json_array()));
    }
    return p;
}

static json_t *resources_json(const struct gt_shim_spec *spec)
{
    json_t *r = json_object();
    json_t *rules = json_array();
    json_array_append_new(rules, json_pack("{s:b, s:s}", "allow", 0, "access", "rwm"));
    json_object_set_new(r, "devices", rules);
    if (spec->limits.memory_bytes > 0) {
        json_object_set_new(r, "memory",
                            json_pack("{s:I}", "limit", (json_int_t)spec->limits.memory_bytes));
    }
    if (spec->limits.cpu_milli > 0) {
        json_object_set_new(r, "cpu",
                            json_pack("{s:I, s:I}", "quota",
                                      (json_int_t)spec->limits.cpu_milli * 100, "period",
                                      (json_int_t)100000));
    }
    if (spec->limits.pids_max > 0) {
        json_object_set_new(r, "pids",
                            json_pack("{s:I}", "limit", (json_int_t)spec->limits.pids_max));
    }
    return r;
}

json_t *gt_oci_config_build(const json_t *base, const struct gt_shim_spec *spec,
                            const struct gt_image_proc *proc, const struct gt_oci_paths *paths)
{
    json_t *c = json_is_object(base) ? json_deep_copy(base) : json_object();
    json_object_set_new(c, "ociVersion", json_string("1.0.2"));
    json_object_set_new(
        c, "process", process_json(json_object_get(c, "process"), spec, proc, paths->init != NULL));
    json_object_set_new(c, "root", json_pack("{s:s, s:b}", "path", paths->rootfs, "readonly", 0));
    if (spec->hostname && (spec->namespaces & GT_NS_UTS)) {
        json_object_set_new(c, "hostname", json_string(spec->hostname));
    } else {
        json_object_del(c, "hostname");
    }
    json_t *mounts = json_object_get(c, "mounts");
    if (!json_is_array(mounts)) {
        mounts = json_array();
        json_object_set_new(c, "mounts", mounts);
    }
    for (size_t i = 0; i < spec->n_volumes; i++) {
        json_array_append_new(mounts,
                              bind_mount_json(paths->volume_sources[i], spec->volumes[i].mount_path,
                                              spec->volumes[i].read_only));
    }
    if (paths->hosts) {
        json_array_append_new(mounts, bind_mount_json(paths->hosts, "/etc/hosts", true));
    }
    if (proc->mount_work) {
        json_array_append_new(mounts, bind_mount_json(spec->cwd, GT_IMAGE_WORK_DIR, false));
    }
    if (paths->init) {
        json_array_append_new(mounts, bind_mount_json(paths->init, GT_OCI_INIT_PATH, true));
    }
    json_t *lnx = json_object_get(c, "linux");
    if (!json_is_object(lnx)) {
        lnx = json_object();
        json_object_set_new(c, "linux", lnx);
    }
    json_t *ns = json_pack("[{s:s}, {s:s}]", "type", "pid", "type", "mount");
    if (spec->namespaces & GT_NS_UTS) {
        json_array_append_new(ns, json_pack("{s:s}", "type", "uts"));
    }
    if (spec->namespaces & GT_NS_IPC) {
        json_array_append_new(ns, json_pack("{s:s}", "type", "ipc"));
    }
    json_object_set_new(lnx, "namespaces", ns);
    json_object_set_new(lnx, "cgroupsPath", json_sprintf("/%s", spec->cgroup_path));
    json_t *res = resources_json(spec);
    json_t *devices = json_array();
    add_gpus(spec, paths->dev_dir, mounts, devices, json_object_get(res, "devices"));
    json_object_set_new(lnx, "resources", res);
    json_object_set_new(lnx, "devices", devices);
    return c;
}

/* ---- the root file system ---- */

static int mkdir_in(const char *dir, const char *sub, mode_t mode, char *out, size_t len,
                    struct gt_err *err)
{
    snprintf(out, len, "%s/%s", dir, sub);
    if (mkdir(out, mode) < 0 && errno != EEXIST) {
        return gt_err_set(err, -errno, "mkdir %s: %s", out, strerror(errno));
    }
    return 0;
}

int gt_oci_rootfs_prepare(const char *image_rootfs, const char *data_dir, bool *mounted,
                          struct gt_err *err)
{
    char ovl[PATH_MAX], upper[PATH_MAX + 8], work[PATH_MAX + 8], rootfs[PATH_MAX];
    *mounted = false;
    int rc = mkdir_in(data_dir, "ovl", 0700, ovl, sizeof(ovl), err);
    rc = rc < 0 ? rc : mkdir_in(ovl, "upper", 0755, upper, sizeof(upper), err);
    rc = rc < 0 ? rc : mkdir_in(ovl, "work", 0700, work, sizeof(work), err);
    rc = rc < 0 ? rc : mkdir_in(data_dir, "rootfs", 0755, rootfs, sizeof(rootfs), err);
    if (rc < 0) {
        return rc;
    }
    char *opts = gt_xasprintf("lowerdir=%s,upperdir=%s,workdir=%s", image_rootfs, upper, work);
    if (mount("overlay", rootfs, "overlay", MS_NOSUID | MS_NODEV, opts) == 0) {
        free(opts);
        *mounted = true;
        return 0;
    }
    int e = errno;
    free(opts);
    gt_log_info("overlayfs unavailable, copying the image", "err=\"%s\"", strerror(e));
    char src[PATH_MAX + 8];
    snprintf(src, sizeof(src), "%s/.", image_rootfs);
    char *argv[] = {(char *)"cp", (char *)"-a", src, rootfs, NULL};
    char *env[] = {(char *)"PATH=" GT_GANTLET_DEFAULT_PATH, NULL};
    struct gt_buf eb;
    gt_buf_init(&eb);
    int st = gt_image_tool_run(argv, env, NULL, &eb);
    gt_buf_append(&eb, "", 0);
    if (st != 0) {
        rc = gt_err_set(err, GT_EINTERNAL, "copy the image rootfs: %s", eb.data);
    }
    gt_buf_fini(&eb);
    return rc;
}

/* ---- the runtime ---- */

/* The lock that keeps `run` (which creates gantry's parent cgroups in every
 * hierarchy) and the removal of empty parents apart. */
static int cgroup_lock(const struct gt_shim_image *im, int op)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/cgroups.lock", im->runtime_root);
    if (mkdir(im->runtime_root, 0700) < 0 && errno != EEXIST) {
        return -1;
    }
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    while (fd >= 0 && flock(fd, op) < 0) {
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

static const char *container_id(const struct gt_shim_spec *spec)
{
    const char *slash = strrchr(spec->cgroup_path, '/');
    return slash ? slash + 1 : spec->cgroup_path;
}

int gt_oci_run(const struct gt_shim_spec *spec, const char *state_dir, int out_fd, int err_fd,
               int init_fd, pid_t *pid, struct gt_err *err)
{
    const struct gt_shim_image *im = spec->image;
    char log[PATH_MAX + 16], pid_file[PATH_MAX + 16];
    snprintf(log, sizeof(log), "%s/runtime.log", state_dir);
    snprintf(pid_file, sizeof(pid_file), "%s/container.pid", state_dir);
    char *argv[] = {im->runtime,
                    (char *)"--root",
                    im->runtime_root,
                    (char *)"--log",
                    log,
                    (char *)"run",
                    (char *)"-d",
                    (char *)"--pid-file",
                    pid_file,
                    (char *)"--bundle",
                    (char *)state_dir,
                    (char *)"--preserve-fds",
                    (char *)"1",
                    NULL,
                    NULL};
    /* the id last: in place of --preserve-fds 1 when there is no init fd */
    size_t id_at = init_fd >= 0 ? 13 : 11;
    argv[id_at] = (char *)container_id(spec);
    argv[id_at + 1] = NULL;
    char *env[] = {(char *)"PATH=" GT_GANTLET_DEFAULT_PATH, NULL};
    int lock_fd = cgroup_lock(im, LOCK_SH);
    pid_t child = fork();
    if (child == 0) {
        /* the init's report fd goes to the runtime as the first fd after stdio */
        if (init_fd >= 0) {
            if (out_fd == GT_OCI_INIT_FD) {
                out_fd = dup(out_fd);
            }
            if (err_fd == GT_OCI_INIT_FD) {
                err_fd = dup(err_fd);
            }
            if (out_fd < 0 || err_fd < 0 || dup2(init_fd, GT_OCI_INIT_FD) < 0 ||
                fcntl(GT_OCI_INIT_FD, F_SETFD, 0) < 0) {
                _exit(127);
            }
        }
        gt_shim_exec_tool(argv, env, out_fd, err_fd);
    }
    int st = -1;
    while (child > 0 && waitpid(child, &st, 0) < 0 && errno == EINTR) {
    }
    if (lock_fd >= 0) {
        close(lock_fd);
    }
    if (child < 0) {
        return gt_err_set(err, -errno, "fork: %s", strerror(errno));
    }
    if (st != 0) {
        char *text = NULL, msg[700] = "";
        size_t len;
        if (gt_file_read(log, 1 << 20, &text, &len, NULL) == 0) {
            gt_image_tool_message(text, msg, sizeof(msg));
            free(text);
        }
        return gt_err_set(err, GT_EINTERNAL, "%s run: %s", im->runtime,
                          msg[0] ? msg : "failed (see the task log)");
    }
    char *text;
    size_t len;
    int rc = gt_file_read(pid_file, 64, &text, &len, err);
    if (rc < 0) {
        return rc;
    }
    *pid = (pid_t)strtol(text, NULL, 10);
    free(text);
    return *pid > 0 ? 0 : gt_err_set(err, GT_EINTERNAL, "%s: no pid", pid_file);
}

/* Whether mnt is a hierarchy gantry's own cgroup code manages. */
static bool gantry_hierarchy(const struct gt_cgroup_sys *sys, const char *mnt)
{
    if (sys->version == 2) {
        return !strcmp(sys->v2_root, mnt);
    }
    for (int c = 0; c < GT_CG_NCTRL; c++) {
        if (!strcmp(sys->v1_mount[c], mnt)) {
            return true;
        }
    }
    return false;
}

/* rmdir the empty parent of the task cgroup in the other hierarchies. */
static void remove_parents(const struct gt_shim_spec *spec, const struct gt_cgroup_sys *sys)
{
    const char *slash = strrchr(spec->cgroup_path, '/');
    if (!slash) {
        return;
    }
    int lock_fd = cgroup_lock(spec->image, LOCK_EX);
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096];
    while (f && fgets(line, sizeof(line), f)) {
        char mnt[256], fstype[32];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 ||
            sscanf(dash + 3, "%31s", fstype) != 1 ||
            (strcmp(fstype, "cgroup") != 0 && strcmp(fstype, "cgroup2") != 0) ||
            gantry_hierarchy(sys, mnt)) {
            continue;
        }
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/%.*s", mnt, (int)(slash - spec->cgroup_path),
                 spec->cgroup_path);
        if (rmdir(dir) < 0 && errno != ENOENT && errno != EBUSY && errno != ENOTEMPTY) {
            gt_log_warn("cannot remove an empty parent cgroup", "dir=%s err=\"%s\"", dir,
                        strerror(errno));
        }
    }
    if (f) {
        fclose(f);
    }
    if (lock_fd >= 0) {
        close(lock_fd);
    }
}

void gt_oci_cleanup(const struct gt_shim_spec *spec, const struct gt_cgroup_sys *sys,
                    const char *data_dir, bool rootfs_mounted)
{
    const struct gt_shim_image *im = spec->image;
    char *argv[] = {im->runtime,
                    (char *)"--root",
                    im->runtime_root,
                    (char *)"delete",
                    (char *)"--force",
                    (char *)container_id(spec),
                    NULL};
    char *env[] = {(char *)"PATH=" GT_GANTLET_DEFAULT_PATH, NULL};
    struct gt_buf eb;
    gt_buf_init(&eb);
    int st = gt_image_tool_run(argv, env, NULL, &eb);
    gt_buf_append(&eb, "", 0);
    if (st != 0 && !strstr(eb.data, "does not exist")) {
        gt_log_warn("runtime delete failed", "err=\"%s\"", eb.data);
    }
    gt_buf_fini(&eb);
    remove_parents(spec, sys);
    if (rootfs_mounted) {
        char rootfs[PATH_MAX];
        snprintf(rootfs, sizeof(rootfs), "%s/rootfs", data_dir);
        if (umount2(rootfs, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT) {
            gt_log_warn("cannot unmount the task rootfs", "err=\"%s\"", strerror(errno));
        }
    }
}
