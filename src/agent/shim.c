/*
 * gantry-shim's body (see shim.h for the state directory and the protocol).
 *
 * Processes: the agent starts the shim in a session of its own with a pipe
 * on --status-fd and the shim supervises from that process, reporting on
 * the pipe once the task runs (or its start failure is recorded). Alone in
 * its session it is untouched when the agent dies. It is a child
 * subreaper, so processes the task leaves behind are reaped here.
 *
 * The task is created with clone(CLONE_VM | CLONE_VFORK) directly in its
 * new PID/mount/UTS/IPC namespaces (the shim's own namespaces stay as they
 * were), as posix_spawn creates a process: it runs on a stack of its own
 * in the shim's memory while the shim waits, first joins the cgroup
 * through cgroup.procs files the shim opened, and only then sets itself up
 * and execs: nothing of the task runs outside its limits. Setup failures
 * in the child travel back over a close-on-exec pipe as (stage, errno);
 * end of file on it means the exec succeeded. In a PID namespace the
 * cloned process forks the task's main process and execs this binary as
 * its init (shim_init.c: signals forwarded, zombies reaped, the main
 * process's wait status reported on a pipe), so a script is not PID 1,
 * which ignores SIGTERM. Between clone and exec the
 * child calls only async-signal-safe functions and writes nothing of the
 * shim's memory but its own stack and the shared errno; whatever it needs
 * (mount sources, the preparer's argv) is computed before the clone.
 *
 * Volumes are opened (beneath their storage roots) and the hosts file is
 * written here as root; the child bind-mounts them in its mount namespace
 * before it drops privileges. A task with source or requirements execs
 * this same binary as its preparer (see gt_shim_prepare_main), which gets
 * the spec on an inherited fd and reports a failure's reason and message
 * on a pipe the shim reads when the task has ended.
 *
 * Single-threaded; one poll loop over a signalfd (SIGTERM, SIGINT, SIGCHLD)
 * and the read end of the task's output pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/shim.h"

#define DRAIN_MS 2000 /* how long to wait for the log pipe to close after the task exits */
#define STATUS_FD 3   /* the pipe to the agent that started the shim */

/* Where the child's setup failed; the index into stage_names. */
enum stage {
    ST_CGROUP,
    ST_SETSID,
    ST_MOUNT_PRIVATE,
    ST_MOUNT_PROC,
    ST_VOLUME,
    ST_HOSTS,
    ST_HOSTNAME,
    ST_STDIO,
    ST_SETGROUPS,
    ST_SETGID,
    ST_SETUID,
    ST_USERNS,
    ST_NO_NEW_PRIVS,
    ST_INIT,
    ST_CHDIR,
    ST_EXEC,
};

static const char *const stage_names[] = {
    [ST_CGROUP] = "join the cgroup",
    [ST_SETSID] = "setsid",
    [ST_MOUNT_PRIVATE] = "make / private",
    [ST_MOUNT_PROC] = "mount /proc",
    [ST_VOLUME] = "mount a volume",
    [ST_HOSTS] = "mount /etc/hosts",
    [ST_HOSTNAME] = "sethostname",
    [ST_STDIO] = "set up stdio",
    [ST_SETGROUPS] = "setgroups",
    [ST_SETGID] = "setgid",
    [ST_SETUID] = "setuid",
    [ST_USERNS] = "make the user namespace",
    [ST_NO_NEW_PRIVS] = "no_new_privs",
    [ST_INIT] = "start the task's init",
    [ST_CHDIR] = "chdir",
    [ST_EXEC] = "exec",
};

struct child_fail {
    int stage;
    int err;
};

struct shim {
    char dir[PATH_MAX];
    struct gt_shim_spec spec;
    struct gt_cgroup cg;
    bool cg_created;
    struct gt_shim_log log;
    int sig_fd;
    int log_rd_fd[2]; /* read ends of the task's stdout and stderr pipes (by
                       * enum gt_shim_stream); -1 at EOF */
    pid_t task_pid;
    bool exited;
    int status;         /* wait status of the task */
    int64_t kill_at_ms; /* monotonic; -1 when no stop is pending */
    int prep_rd_fd;     /* the preparer's failure report; -1 when none */
    int term_fd;        /* the task's termination log (spec.termination_log); -1 when none */
    int init_rd_fd;     /* the init's report of the main process's wait status; -1: none */
    bool *vol_is_dir;   /* per volume: a directory (else a file) */
    struct gt_shim_exit ex;
    struct gt_image_pulled img; /* an image task's image (use_fd -1 until pulled) */
    bool rootfs_mounted;        /* an image task's overlay is mounted */
    bool container;             /* the OCI runtime was asked to run it */
    struct gt_faults faults;    /* GT_SHIM_FAULT_ENV */
};

/* ---- the task's side: runs between clone and execve ---- */

/* What the child needs, prepared before the clone. */
struct child_fds {
    const struct gt_shim_spec *spec;
    int cg_fds[GT_CG_NCTRL]; /* the cgroup's cgroup.procs files, to join it */
    size_t n_cg_fds;
    int fail_wr_fd;
    int out_wr_fd, err_wr_fd;
    int null_fd;
    const bool *vol_is_dir;
    const char *hosts_src;   /* NULL: keep /etc/hosts */
    int exe_fd;              /* this binary, for the preparer and the init; -1 when neither */
    int spec_fd, prep_wr_fd; /* -1 when no preparer runs */
    char *const *prep_argv;
    int init_wr_fd; /* -1: no init (no PID namespace); see shim_init.c */
};

static _Noreturn void child_fail(const struct child_fds *fds, enum stage st, int e)
{
    struct child_fail f = {st, e};
    ssize_t w = write(fds->fail_wr_fd, &f, sizeof(f));
    (void)w;
    _exit(127);
}

/* mkdir -p of a missing mount point (its leaf an empty file when the
 * source is not a directory); existing parts are left as they are. */
static int make_mount_point(const char *path, bool leaf_is_dir)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') {
            continue;
        }
        char c = buf[i];
        buf[i] = '\0';
        if (c == '\0' && !leaf_is_dir) {
            int fd = open(buf, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (fd < 0 && errno != EEXIST) {
                return -1;
            }
            if (fd >= 0) {
                close(fd);
            }
        } else if (mkdir(buf, 0755) < 0 && errno != EEXIST) {
            return -1;
        }
        buf[i] = c;
    }
    return 0;
}

/* Bind src at target, then remount it nosuid,nodev (and read-only). */
static int bind_mount(const char *src, const char *target, bool read_only)
{
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (read_only ? MS_RDONLY : 0);
    if (mount(src, target, NULL, MS_BIND | MS_REC, NULL) < 0) {
        return -1;
    }
    return mount(NULL, target, NULL, flags, NULL);
}

/* "/proc/self/fd/<fd>" into buf (32 bytes), without stdio. */

/* Decimal digits of v (>= 0) into buf (12 bytes), without stdio. */
static void decimal(char *buf, long v)
{
    char digits[12];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0 && n < 11);
    char *p = buf;
    while (n > 0) {
        *p++ = digits[--n];
    }
    *p = '\0';
}

/* "/proc/self/fd/<fd>" into buf (32 bytes), without stdio. */
static void fd_path(char *buf, int fd)
{
    static const char prefix[] = "/proc/self/fd/";
    memcpy(buf, prefix, sizeof(prefix) - 1);
    decimal(buf + sizeof(prefix) - 1, fd);
}

static void child_mounts(const struct gt_shim_spec *spec, const struct child_fds *fds)
{
    /* opened before the volumes are mounted: one at /dev/shm (an emptyDir
     * of medium Memory) would hide a hosts file on a run directory there */
    int hosts_fd = -1;
    char hosts[32];
    if (fds->hosts_src) {
        hosts_fd = open(fds->hosts_src, O_PATH | O_CLOEXEC);
        if (hosts_fd < 0) {
            child_fail(fds, ST_HOSTS, errno);
        }
        fd_path(hosts, hosts_fd);
    }
    for (size_t i = 0; i < spec->n_volumes; i++) {
        const struct gt_shim_volume *v = &spec->volumes[i];
        char src[32];
        /* opened here: a bind source must be in this mount namespace */
        int fd = gt_volume_open_raw(v->root, v->path);
        if (fd < 0) {
            child_fail(fds, ST_VOLUME, errno);
        }
        fd_path(src, fd);
        if (make_mount_point(v->mount_path, fds->vol_is_dir[i]) < 0 ||
            bind_mount(src, v->mount_path, v->read_only) < 0) {
            child_fail(fds, ST_VOLUME, errno);
        }
        close(fd);
    }
    if (hosts_fd >= 0) {
        if (bind_mount(hosts, "/etc/hosts", true) < 0) {
            child_fail(fds, ST_HOSTS, errno);
        }
        close(hosts_fd);
    }
}

/* Write "0 ID 1" to /proc/PID/FILE; 0 or an errno. */
static int write_id_map(pid_t pid, const char *file, unsigned id)
{
    char path[64], line[32];
    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
    int n = snprintf(line, sizeof(line), "0 %u 1\n", id);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    int e = fd < 0 || write(fd, line, (size_t)n) != n ? errno : 0;
    if (fd >= 0) {
        close(fd);
    }
    return e;
}

/* A user namespace whose uid and gid 0 are the task's own ids needs its
 * maps written by a process privileged in the parent namespace (only that
 * one may leave setgroups allowed, which buildah and other tools that switch
 * users inside need), while the shim itself is suspended until the task
 * execs. So the child, still root, forks this helper (a raw fork: no atfork
 * handlers in the shared memory) before it drops its privileges; the helper
 * waits on go until the child has unshared, writes its maps, reports an
 * errno (0) on done and exits. Returns the helper's pid, or -errno. */
static pid_t userns_helper(const struct gt_shim_spec *spec, int go[2], int done[2])
{
    if (pipe2(go, O_CLOEXEC) < 0 || pipe2(done, O_CLOEXEC) < 0) {
        return -errno;
    }
    pid_t pid = (pid_t)syscall(SYS_fork);
    if (pid < 0) {
        return -errno;
    }
    if (pid > 0) {
        close(go[0]);
        close(done[1]);
        return pid;
    }
    char c;
    int e = read(go[0], &c, 1) == 1 ? 0 : EPIPE;
    pid_t parent = getppid();
    e = e ? e : write_id_map(parent, "uid_map", spec->uid);
    e = e ? e : write_id_map(parent, "gid_map", spec->gid);
    if (write(done[1], &e, sizeof(e)) != (ssize_t)sizeof(e)) {
        _exit(1);
    }
    _exit(0);
}

/* The child's side, after it dropped to the task's ids: unshare, let the
 * helper map, reap it, and leave no supplementary group behind (the host's
 * are unmapped inside). 0 or an errno. */
static int child_userns(pid_t helper, int go[2], int done[2])
{
    int e = unshare(CLONE_NEWUSER) < 0 ? errno : 0;
    if (write(go[1], "g", 1) != 1 && !e) {
        e = errno;
    }
    close(go[1]);
    int he = EPIPE;
    if (read(done[0], &he, sizeof(he)) != (ssize_t)sizeof(he)) {
        he = EPIPE;
    }
    close(done[0]);
    while (waitpid(helper, NULL, 0) < 0 && errno == EINTR) {
    }
    e = e ? e : he;
    if (!e && setgroups(0, NULL) < 0) {
        e = errno;
    }
    return e;
}

/* In PID 1 of the task's namespace: fork the main process (a raw clone,
 * so that nothing of libc's state in the shared memory is touched), which
 * returns here to go on as the task in a process group of its own; this
 * process execs this binary as the init over it. */
static void child_init(const struct child_fds *fds)
{
    long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid < 0) {
        child_fail(fds, ST_INIT, errno);
    }
    sigset_t set;
    if (pid == 0) {
        setpgid(0, 0);
        sigemptyset(&set);
        sigprocmask(SIG_SETMASK, &set, NULL);
        return;
    }
    /* PID 1 drops the signals it does not handle; blocked ones are kept
     * pending, across the exec, for the init to forward: a stop that
     * comes while it starts is not lost */
    sigfillset(&set);
    sigprocmask(SIG_SETMASK, &set, NULL);
    char pid_arg[12], fd_arg[12];
    decimal(pid_arg, pid);
    decimal(fd_arg, fds->init_wr_fd);
    char *argv[] = {(char *)"gantry-shim", (char *)"--init", pid_arg, fd_arg, NULL};
    if (fcntl(fds->init_wr_fd, F_SETFD, 0) < 0) {
        child_fail(fds, ST_INIT, errno);
    }
    fexecve(fds->exe_fd, argv, fds->spec->env);
    child_fail(fds, ST_INIT, errno);
}

/* The task's process: shares the suspended shim's memory (CLONE_VM |
 * CLONE_VFORK) on a stack of its own until it execs; joins the cgroup
 * before anything else, so nothing of the task runs outside its limits.
 * In a PID namespace it becomes the init (child_init) and its child the
 * task's main process. */
static int child_run(void *arg)
{
    const struct child_fds *fds = arg;
    const struct gt_shim_spec *spec = fds->spec;
    for (size_t i = 0; i < fds->n_cg_fds; i++) {
        if (write(fds->cg_fds[i], "0", 1) != 1) {
            child_fail(fds, ST_CGROUP, errno);
        }
    }
    if (setsid() < 0) {
        child_fail(fds, ST_SETSID, errno);
    }
    if ((spec->namespaces & GT_NS_MOUNT) && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        child_fail(fds, ST_MOUNT_PRIVATE, errno);
    }
    if ((spec->namespaces & GT_NS_PID) &&
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
        child_fail(fds, ST_MOUNT_PROC, errno);
    }
    child_mounts(spec, fds);
    if (spec->hostname && sethostname(spec->hostname, strlen(spec->hostname)) < 0) {
        child_fail(fds, ST_HOSTNAME, errno);
    }
    if (dup2(fds->null_fd, STDIN_FILENO) < 0 || dup2(fds->out_wr_fd, STDOUT_FILENO) < 0 ||
        dup2(fds->err_wr_fd, STDERR_FILENO) < 0) {
        child_fail(fds, ST_STDIO, errno);
    }
    /* the shim's mask (its signalfd's signals blocked) stays on until the
     * task's main process is on its own: see child_init */
    sigset_t none;
    sigemptyset(&none);
    if (fds->init_wr_fd < 0) {
        sigprocmask(SIG_SETMASK, &none, NULL);
    }
    signal(SIGPIPE, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    int ns_go[2] = {-1, -1}, ns_done[2] = {-1, -1};
    pid_t helper = -1;
    if (spec->namespaces & GT_NS_USER) {
        helper = userns_helper(spec, ns_go, ns_done);
        if (helper < 0) {
            child_fail(fds, ST_USERNS, -helper);
        }
    }
    if (setgroups(spec->n_groups, spec->groups) < 0) {
        child_fail(fds, ST_SETGROUPS, errno);
    }
    if (setgid(spec->gid) < 0) {
        child_fail(fds, ST_SETGID, errno);
    }
    if (setuid(spec->uid) < 0) {
        child_fail(fds, ST_SETUID, errno);
    }
    if ((spec->namespaces & GT_NS_USER) && helper >= 0) {
        int e = child_userns(helper, ns_go, ns_done);
        if (e) {
            child_fail(fds, ST_USERNS, e);
        }
    }
    if (!spec->privileged && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        child_fail(fds, ST_NO_NEW_PRIVS, errno);
    }
    if (fds->init_wr_fd >= 0) {
        child_init(fds);
    }
    if (chdir(spec->cwd) < 0) {
        child_fail(fds, ST_CHDIR, errno);
    }
    int e;
    if (fds->spec_fd >= 0) {
        /* the preparer inherits the spec and its report pipe */
        if (fcntl(fds->spec_fd, F_SETFD, 0) < 0 || fcntl(fds->prep_wr_fd, F_SETFD, 0) < 0) {
            child_fail(fds, ST_EXEC, errno);
        }
        fexecve(fds->exe_fd, fds->prep_argv, spec->env);
        e = errno;
    } else {
        gt_shim_exec_search(spec->argv, spec->env, &e);
    }
    child_fail(fds, ST_EXEC, e);
}

#define CHILD_STACK_BYTES (256 * 1024)

/* ---- the shim's side ---- */

/* Run child_run in a new process in the spec's namespaces, as posix_spawn
 * does: sharing this process's memory (no page tables copied, no
 * copy-on-write faults) while this process waits until the child has
 * exec'd or exited. -errno when it could not be created. */
static pid_t clone_task(struct child_fds *fds)
{
    unsigned ns = fds->spec->namespaces;
    int flags = CLONE_VM | CLONE_VFORK | SIGCHLD | ((ns & GT_NS_PID) ? CLONE_NEWPID : 0) |
                ((ns & GT_NS_MOUNT) ? CLONE_NEWNS : 0) | ((ns & GT_NS_UTS) ? CLONE_NEWUTS : 0) |
                ((ns & GT_NS_IPC) ? CLONE_NEWIPC : 0);
    /* the shim starts one task: a static stack, touched only as deep as
     * the child goes (no mapping made and unmapped for it) */
    static char stack[CHILD_STACK_BYTES] __attribute__((aligned(64)));
    pid_t pid = clone(child_run, stack + CHILD_STACK_BYTES, flags, fds);
    return pid < 0 ? -errno : pid;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static bool needs_preparer(const struct gt_shim_spec *spec)
{
    return spec->git_url || spec->req_file || spec->req_list;
}

/* Everything the child needs besides the pipes, computed before the clone. */
struct child_plan {
    char hosts_src[PATH_MAX + 16];
    char spec_arg[16], status_arg[16];
    char *prep_argv[7];
    int exe_fd, spec_fd, prep[2], init[2];
};

static int plan_child(struct shim *s, struct child_plan *pl, struct gt_err *err)
{
    snprintf(pl->hosts_src, sizeof(pl->hosts_src), "%s/hosts", s->dir);
    pl->exe_fd = pl->spec_fd = pl->prep[0] = pl->prep[1] = pl->init[0] = pl->init[1] = -1;
    bool init = s->spec.namespaces & GT_NS_PID;
    if (init || needs_preparer(&s->spec)) {
        pl->exe_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        if (pl->exe_fd < 0) {
            return gt_err_set(err, -errno, "open /proc/self/exe: %s", strerror(errno));
        }
    }
    if (init && (pipe2(pl->init, O_CLOEXEC) < 0 || fcntl(pl->init[0], F_SETFL, O_NONBLOCK) < 0)) {
        return gt_err_set(err, -errno, "set up the init: %s", strerror(errno));
    }
    if (!needs_preparer(&s->spec)) {
        return 0;
    }
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/spec.json", s->dir);
    pl->spec_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (pl->spec_fd < 0 || pipe2(pl->prep, O_CLOEXEC) < 0 ||
        fcntl(pl->prep[0], F_SETFL, O_NONBLOCK) < 0) {
        return gt_err_set(err, -errno, "set up the preparer: %s", strerror(errno));
    }
    snprintf(pl->spec_arg, sizeof(pl->spec_arg), "%d", pl->spec_fd);
    snprintf(pl->status_arg, sizeof(pl->status_arg), "%d", pl->prep[1]);
    char *argv[] = {(char *)"gantry-shim",
                    (char *)"--prepare",
                    (char *)"--spec-fd",
                    pl->spec_arg,
                    (char *)"--status-fd",
                    pl->status_arg,
                    NULL};
    memcpy(pl->prep_argv, argv, sizeof(argv));
    return 0;
}

static void plan_fini(struct child_plan *pl)
{
    close_fd(&pl->exe_fd);
    close_fd(&pl->spec_fd);
    close_fd(&pl->prep[0]);
    close_fd(&pl->prep[1]);
    close_fd(&pl->init[0]);
    close_fd(&pl->init[1]);
}

/* Start the task in the cgroup. 0, or negative with err set (nothing runs). */
static int start_task(struct shim *s, struct gt_err *err)
{
    int fail[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    struct child_fds fds = {.spec = &s->spec, .n_cg_fds = 0};
    struct child_plan pl;
    int rc = plan_child(s, &pl, err);
    rc = rc < 0 ? rc : gt_cgroup_procs_open(&s->cg, fds.cg_fds, &fds.n_cg_fds, err);
    if (rc < 0) {
        goto out;
    }
    if (null_fd < 0 || pipe2(fail, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
        pipe2(errp, O_CLOEXEC) < 0) {
        rc = gt_err_set(err, -errno, "pipes: %s", strerror(errno));
        goto out;
    }
    fds.fail_wr_fd = fail[1];
    fds.out_wr_fd = out[1];
    fds.err_wr_fd = errp[1];
    fds.null_fd = null_fd;
    fds.vol_is_dir = s->vol_is_dir;
    fds.hosts_src = s->spec.n_hosts ? pl.hosts_src : NULL;
    fds.exe_fd = pl.exe_fd;
    fds.spec_fd = pl.spec_fd;
    fds.prep_wr_fd = pl.prep[1];
    fds.prep_argv = pl.prep_argv;
    fds.init_wr_fd = pl.init[1];
    pid_t pid = clone_task(&fds);
    if (pid < 0) {
        rc = gt_err_set(err, pid, "clone: %s", strerror(-pid));
        goto out;
    }
    /* the child has exec'd or failed: its report is in the pipe */
    s->task_pid = pid;
    close_fd(&fail[1]);
    close_fd(&out[1]);
    close_fd(&errp[1]);
    close_fd(&pl.prep[1]);
    close_fd(&pl.init[1]);
    struct child_fail f;
    ssize_t r;
    while (rc == 0 && (r = read(fail[0], &f, sizeof(f))) != 0) {
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r != (ssize_t)sizeof(f) || f.stage < 0 || f.stage > ST_EXEC) {
            rc = gt_err_set(err, GT_EINTERNAL, "task setup died without a reason");
        } else if (f.stage == ST_CHDIR && f.err == EACCES) {
            rc = gt_err_set(err, -f.err,
                            "chdir %s: %s (uid %ld cannot reach the working directory: every "
                            "directory above it must be searchable by that uid)",
                            s->spec.cwd, strerror(f.err), (long)s->spec.uid);
        } else {
            const char *what = f.stage == ST_EXEC    ? s->spec.argv[0]
                               : f.stage == ST_CHDIR ? s->spec.cwd
                                                     : "";
            rc = gt_err_set(err, -f.err, "%s %s: %s", stage_names[f.stage], what, strerror(f.err));
            if (f.stage == ST_VOLUME) {
                snprintf(s->ex.reason, sizeof(s->ex.reason), "VolumeDenied");
            }
        }
    }
    if (rc < 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        s->task_pid = 0;
    } else {
        s->log_rd_fd[GT_SHIM_STDOUT] = out[0];
        s->log_rd_fd[GT_SHIM_STDERR] = errp[0];
        out[0] = errp[0] = -1;
        s->prep_rd_fd = pl.prep[0];
        pl.prep[0] = -1;
        s->init_rd_fd = pl.init[0];
        pl.init[0] = -1;
    }
out:
    plan_fini(&pl);
    for (size_t i = 0; i < fds.n_cg_fds; i++) {
        close(fds.cg_fds[i]);
    }
    close_fd(&fail[0]);
    close_fd(&fail[1]);
    close_fd(&out[0]);
    close_fd(&out[1]);
    close_fd(&errp[0]);
    close_fd(&errp[1]);
    close_fd(&null_fd);
    return rc;
}

/* The resolved host path of each volume (checked beneath its root), for
 * the runtime, which mounts them by path. */
static int volume_sources(struct shim *s, char ***out, struct gt_err *err)
{
    char **v = gt_xcalloc(s->spec.n_volumes + 1, sizeof(char *));
    *out = v;
    for (size_t i = 0; i < s->spec.n_volumes; i++) {
        int fd;
        int rc = gt_volume_open(s->spec.volumes[i].root, s->spec.volumes[i].path, &fd, err);
        if (rc < 0) {
            snprintf(s->ex.reason, sizeof(s->ex.reason), "VolumeDenied");
            return rc;
        }
        char link[32], target[PATH_MAX];
        fd_path(link, fd);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        close(fd);
        if (n < 0) {
            return gt_err_set(err, -errno, "volume at %s: %s", s->spec.volumes[i].mount_path,
                              strerror(errno));
        }
        target[n] = '\0';
        v[i] = gt_xstrdup(target);
    }
    return 0;
}

/* Where an image task's rootfs/ and ovl/ go: on disk, not in the state
 * directory (which may be on tmpfs). */
static const char *data_dir(const struct shim *s)
{
    return s->spec.data_dir ? s->spec.data_dir : s->dir;
}

/* This binary's path into path when it is statically linked (no program
 * interpreter: it runs in any image's root as the container's init), else
 * false. */
static bool static_self(char *path, size_t len)
{
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
    size_t n = getauxval(AT_PHNUM);
    for (size_t i = 0; ph && i < n; i++) {
        if (ph[i].p_type == PT_INTERP) {
            return false;
        }
    }
    ssize_t r = readlink("/proc/self/exe", path, len - 1);
    if (!ph || r <= 0) {
        return false;
    }
    path[r] = '\0';
    return true;
}

/* An image task: its process merged from the image, its rootfs, its
 * config.json, then the runtime, with the shim's init as the container's
 * PID 1 where this binary is static (else the process itself, which
 * ignores an unhandled SIGTERM). 0, or negative with err set. */
static int start_container(struct shim *s, struct gt_err *err)
{
    const struct gt_shim_image *im = s->spec.image;
    struct gt_image_task t = {.command = im->command,
                              .n_command = im->n_command,
                              .args = im->args,
                              .n_args = im->n_args,
                              .env = s->spec.env,
                              .n_env = s->spec.n_env,
                              .working_dir = im->working_dir};
    struct gt_image_proc proc;
    char lower[PATH_MAX + 16], rootfs[PATH_MAX + 16], hosts[PATH_MAX + 16], base[PATH_MAX + 16];
    char self[PATH_MAX];
    char **sources = NULL, *text = NULL;
    int out[2] = {-1, -1}, errp[2] = {-1, -1}, init[2] = {-1, -1};
    bool has_init = static_self(self, sizeof(self));
    json_t *cfg = NULL, *base_cfg = NULL;
    int rc = gt_image_process_merge(s->img.config, &t, &proc, err);
    if (rc < 0) {
        return rc;
    }
    snprintf(lower, sizeof(lower), "%s/rootfs", s->img.dir);
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", data_dir(s));
    snprintf(hosts, sizeof(hosts), "%s/hosts", s->dir);
    snprintf(base, sizeof(base), "%s/config.json", s->img.dir);
    rc = volume_sources(s, &sources, err);
    rc = rc < 0 ? rc : gt_oci_rootfs_prepare(lower, data_dir(s), &s->rootfs_mounted, err);
    size_t len;
    rc = rc < 0 ? rc : gt_file_read(base, 1 << 20, &text, &len, err);
    if (rc == 0) {
        base_cfg = json_loadb(text, len, 0, NULL);
        free(text);
        rc = base_cfg ? 0 : gt_err_set(err, GT_EINVAL, "%s: not JSON", base);
    }
    if (rc == 0) {
        struct gt_oci_paths paths = {.rootfs = rootfs,
                                     .hosts = s->spec.n_hosts ? hosts : NULL,
                                     .volume_sources = (const char *const *)sources,
                                     .dev_dir = s->cg.sys.dev_dir,
                                     .init = has_init ? self : NULL};
        cfg = gt_oci_config_build(base_cfg, &s->spec, &proc, &paths);
        text = gt_json_dumps(cfg);
        /* the task's environment, its secrets too: for root only */
        rc = gt_agent_file_write_private(s->dir, "config.json", text, strlen(text), err);
        free(text);
    }
    if (rc == 0 &&
        (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
         (has_init && (pipe2(init, O_CLOEXEC) < 0 || fcntl(init[0], F_SETFL, O_NONBLOCK) < 0)))) {
        rc = gt_err_set(err, -errno, "pipe: %s", strerror(errno));
    }
    if (rc == 0) {
        s->container = true;
        rc = gt_oci_run(&s->spec, s->dir, out[1], errp[1], init[1], &s->task_pid, err);
    }
    if (rc == 0) {
        s->log_rd_fd[GT_SHIM_STDOUT] = out[0];
        s->log_rd_fd[GT_SHIM_STDERR] = errp[0];
        out[0] = errp[0] = -1;
        s->init_rd_fd = init[0];
        init[0] = -1;
    }
    close_fd(&out[0]);
    close_fd(&out[1]);
    close_fd(&errp[0]);
    close_fd(&errp[1]);
    close_fd(&init[0]);
    close_fd(&init[1]);
    for (size_t i = 0; sources && i < s->spec.n_volumes; i++) {
        free(sources[i]);
    }
    free(sources);
    json_decref(cfg);
    json_decref(base_cfg);
    gt_image_proc_fini(&proc);
    return rc;
}

static void write_number(struct shim *s, const char *name, long long v)
{
    char buf[32];
    struct gt_err err = {0};
    int n = snprintf(buf, sizeof(buf), "%lld\n", v);
    if (gt_agent_file_write_atomic(s->dir, name, buf, (size_t)n, false, &err) < 0) {
        gt_log_error("cannot write state file", "file=%s err=\"%s\"", name, err.msg);
    }
}

/* Read DIR/stop (if the agent wrote one) for the reason and grace period. */
static void read_stop_request(struct shim *s, int64_t *grace_ms)
{
    char path[PATH_MAX + 8], *text;
    size_t len;
    snprintf(path, sizeof(path), "%s/stop", s->dir);
    *grace_ms = s->spec.stop_grace_ms;
    if (gt_file_read(path, 4096, &text, &len, NULL) < 0) {
        return;
    }
    json_t *o = json_loadb(text, len, 0, NULL);
    free(text);
    const char *reason = NULL;
    json_int_t grace = -1;
    if (o && json_unpack(o, "{s?s, s?I}", "reason", &reason, "gracePeriodMs", &grace) == 0) {
        if (reason) {
            snprintf(s->ex.stop_reason, sizeof(s->ex.stop_reason), "%s", reason);
        }
        if (grace >= 0) {
            *grace_ms = grace;
        }
    }
    json_decref(o);
}

static void on_signal(struct shim *s)
{
    struct signalfd_siginfo si;
    while (read(s->sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
            int st;
            pid_t p;
            while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
                if (p == s->task_pid) {
                    s->exited = true;
                    s->status = st;
                }
            }
        } else if (!s->ex.stop_requested && !s->exited) {
            int64_t grace_ms;
            s->ex.stop_requested = true;
            read_stop_request(s, &grace_ms);
            gt_log_info("stopping task", "pid=%d grace_ms=%lld", (int)s->task_pid,
                        (long long)grace_ms);
            kill(-s->task_pid, SIGTERM);
            kill(s->task_pid, SIGTERM);
            s->kill_at_ms = gt_mono_ms() + grace_ms;
        }
    }
}

static void kill_everything(struct shim *s)
{
    struct gt_err err = {0};
    if (s->task_pid > 0 && !s->exited) {
        kill(s->task_pid, SIGKILL);
    }
    if (gt_cgroup_kill_all(&s->cg, &err) < 0) {
        gt_log_error("cannot empty the task cgroup", "err=\"%s\"", err.msg);
    }
}

static void copy_output(struct shim *s, enum gt_shim_stream stream)
{
    char buf[65536];
    ssize_t r = read(s->log_rd_fd[stream], buf, sizeof(buf));
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) {
        return;
    }
    if (r <= 0) {
        close_fd(&s->log_rd_fd[stream]);
        return;
    }
    struct gt_err err = {0};
    if (gt_shim_log_write(&s->log, stream, buf, (size_t)r, &err) < 0) {
        gt_log_error("task output lost", "err=\"%s\"", err.msg);
    }
}

/* Run until the task has exited and its output is drained. */
static void supervise(struct shim *s)
{
    int64_t drain_until_ms = -1;
    while (!s->exited || s->log_rd_fd[0] >= 0 || s->log_rd_fd[1] >= 0) {
        int64_t now = gt_mono_ms();
        if (s->kill_at_ms >= 0 && now >= s->kill_at_ms) {
            gt_log_info("grace period over, killing the task's cgroup", NULL);
            kill_everything(s);
            s->kill_at_ms = -1;
        }
        if (s->exited && drain_until_ms < 0) {
            /* whatever the task left behind holds the pipe open: end it */
            kill_everything(s);
            s->kill_at_ms = -1;
            drain_until_ms = gt_mono_ms() + DRAIN_MS;
        }
        if (drain_until_ms >= 0 && now >= drain_until_ms) {
            gt_log_warn("task output pipe still open after the task's exit", NULL);
            close_fd(&s->log_rd_fd[0]);
            close_fd(&s->log_rd_fd[1]);
            break;
        }
        int64_t wait_ms = -1;
        int64_t deadline = s->kill_at_ms >= 0 ? s->kill_at_ms : drain_until_ms;
        if (deadline >= 0) {
            wait_ms = deadline > now ? deadline - now : 0;
        }
        /* a closed pipe's entry (fd -1) is ignored by poll */
        struct pollfd pfd[3] = {{s->sig_fd, POLLIN, 0},
                                {s->log_rd_fd[GT_SHIM_STDOUT], POLLIN, 0},
                                {s->log_rd_fd[GT_SHIM_STDERR], POLLIN, 0}};
        if (poll(pfd, 3, (int)wait_ms) < 0 && errno != EINTR) {
            gt_log_error("poll failed", "err=\"%s\"", strerror(errno));
            break;
        }
        if (pfd[0].revents) {
            on_signal(s);
        }
        for (int i = 0; i < 2; i++) {
            if (s->log_rd_fd[i] >= 0 && pfd[1 + i].revents) {
                copy_output(s, (enum gt_shim_stream)i);
            }
        }
    }
}

/* The preparer's report, if it wrote one: "REASON\nMESSAGE". */
static void read_prep_report(struct shim *s)
{
    char buf[sizeof(s->ex.error) + sizeof(s->ex.reason)];
    ssize_t n = read(s->prep_rd_fd, buf, sizeof(buf) - 1);
    close_fd(&s->prep_rd_fd);
    if (n <= 0) {
        return;
    }
    buf[n] = '\0';
    char *nl = strchr(buf, '\n');
    if (nl) {
        *nl = '\0';
        snprintf(s->ex.reason, sizeof(s->ex.reason), "%.63s", buf);
        snprintf(s->ex.error, sizeof(s->ex.error), "%.1023s", nl + 1);
    }
}

/* The termination log, made afresh as root and given to the task's ids; the
 * shim keeps its own descriptor, so whatever the task later puts at that
 * path (a link to a file it could not read) is never what the shim reads. */
static int open_termination_log(struct shim *s, struct gt_err *err)
{
    const char *path = s->spec.termination_log;
    if (unlink(path) < 0 && errno != ENOENT) {
        return gt_err_set(err, -errno, "unlink %s: %s", path, strerror(errno));
    }
    s->term_fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (s->term_fd < 0 || fchown(s->term_fd, s->spec.uid, s->spec.gid) < 0) {
        return gt_err_set(err, -errno, "termination log %s: %s", path, strerror(errno));
    }
    return 0;
}

/* The task's termination message (its first 1 KiB, trailing white space
 * trimmed) as the exit's message, unless its start failed with one. */
static void read_termination_log(struct shim *s)
{
    char buf[sizeof(s->ex.error)];
    ssize_t n = pread(s->term_fd, buf, sizeof(buf) - 1, 0);
    close_fd(&s->term_fd);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\r')) {
        n--;
    }
    if (n > 0 && !s->ex.error[0]) {
        buf[n] = '\0';
        snprintf(s->ex.error, sizeof(s->ex.error), "%s", buf);
    }
}

/* Record the end: exit.json (fsynced), after the cgroup is empty and gone. */
static void finish(struct shim *s)
{
    struct gt_err err = {0};
    if (s->task_pid > 0 && !s->exited) {
        kill_everything(s);
        s->exited = waitpid(s->task_pid, &s->status, 0) == s->task_pid;
    }
    if (s->prep_rd_fd >= 0) {
        read_prep_report(s);
    }
    if (s->term_fd >= 0) {
        read_termination_log(s);
    }
    int main_status;
    if (s->init_rd_fd >= 0 && s->exited &&
        read(s->init_rd_fd, &main_status, sizeof(main_status)) == (ssize_t)sizeof(main_status)) {
        s->status = main_status; /* the main process's own, not its init's */
    }
    close_fd(&s->init_rd_fd);
    if (s->task_pid > 0) {
        int64_t ooms = 0;
        if (gt_cgroup_oom_kills(&s->cg, &ooms, &err) < 0) {
            gt_log_warn("cannot read OOM kills", "err=\"%s\"", err.msg);
        }
        s->ex.oom_killed = ooms > 0;
        if (WIFEXITED(s->status)) {
            s->ex.exit_code = WEXITSTATUS(s->status);
        } else if (WIFSIGNALED(s->status)) {
            s->ex.signal = WTERMSIG(s->status);
            s->ex.exit_code = 128 + s->ex.signal;
        }
    }
    if (s->cg_created) {
        gt_err_clear(&err);
        kill_everything(s);
        if (s->container || s->rootfs_mounted) {
            gt_oci_cleanup(&s->spec, &s->cg.sys, data_dir(s), s->rootfs_mounted);
        }
        if (gt_cgroup_remove(&s->cg, &err) < 0) {
            gt_log_error("cannot remove the task cgroup", "err=\"%s\"", err.msg);
        }
    }
    s->ex.finished_at_ms = gt_now_ms();
    if (gt_fault_hit(&s->faults, GT_FP_EXIT_BEFORE_RECORD) == GT_FAULT_FAIL) {
        _exit(GT_FAULT_CRASH_STATUS); /* nothing to fail but the record itself */
    }
    char *text = gt_shim_exit_to_json(&s->ex);
    gt_err_clear(&err);
    if (gt_agent_file_write_atomic(s->dir, "exit.json", text, strlen(text), true, &err) < 0) {
        gt_log_error("cannot record the exit", "err=\"%s\"", err.msg);
    }
    free(text);
}

static int setup_signals(struct shim *s)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGCHLD);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
        return -errno;
    }
    s->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    return s->sig_fd < 0 ? -errno : 0;
}

/* Check every volume beneath its root (reason VolumeDenied on failure)
 * and note which are directories. */
static int check_volumes(struct shim *s, struct gt_err *err)
{
    s->vol_is_dir = gt_xcalloc(s->spec.n_volumes + 1, sizeof(bool));
    for (size_t i = 0; i < s->spec.n_volumes; i++) {
        const struct gt_shim_volume *v = &s->spec.volumes[i];
        struct stat st;
        int fd;
        int rc = gt_volume_open(v->root, v->path, &fd, err);
        if (rc == 0 && fstat(fd, &st) < 0) {
            rc = gt_err_set(err, -errno, "fstat: %s", strerror(errno));
        }
        if (fd >= 0) {
            close(fd);
        }
        if (rc < 0) {
            snprintf(s->ex.reason, sizeof(s->ex.reason), "VolumeDenied");
            gt_err_prefix(err, "volume at %s", v->mount_path);
            return rc;
        }
        s->vol_is_dir[i] = S_ISDIR(st.st_mode);
    }
    return 0;
}

/* DIR/hosts: localhost, then one "ip hostname" line per spec entry. */
static int write_hosts(struct shim *s, struct gt_err *err)
{
    struct gt_buf b;
    gt_buf_init(&b);
    gt_buf_printf(&b, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    for (size_t i = 0; i < s->spec.n_hosts; i++) {
        gt_buf_printf(&b, "%s\t%s\n", s->spec.hosts[i].ip, s->spec.hosts[i].hostname);
    }
    int rc = gt_agent_file_write_atomic(s->dir, "hosts", b.data, b.len, false, err);
    gt_buf_fini(&b);
    return rc;
}

/* The machine's cgroup layout: the agent's, from the spec (no
 * /proc/self/mountinfo to parse per task), else detected. */
static int cgroup_layout(const struct gt_shim_spec *spec, struct gt_cgroup_sys *sys,
                         struct gt_err *err)
{
    if (spec->cg_unified) {
        return gt_cgroup_sys_init_v2(sys, spec->cg_unified, err);
    }
    for (int c = 0; c < GT_CG_NCTRL; c++) {
        if (spec->cg_mounts[c]) {
            return gt_cgroup_sys_init_v1(sys, (const char *const *)spec->cg_mounts, err);
        }
    }
    return gt_cgroup_sys_detect(sys, err);
}

/* Everything up to a running task; on failure err says why. */
static int prepare_and_start(struct shim *s, struct gt_err *err)
{
    struct gt_cgroup_sys sys;
    int rc = setup_signals(s);
    if (rc < 0) {
        return gt_err_set(err, rc, "signals: %s", strerror(-rc));
    }
    if (s->spec.image) {
        /* before the cgroup: a failed pull leaves nothing to clean up */
        rc = gt_image_pull(s->spec.image, s->dir, &s->faults, &s->img, err);
        if (rc < 0) {
            snprintf(s->ex.reason, sizeof(s->ex.reason), "ImagePullFailed");
            gt_err_prefix(err, "image %s", s->spec.image->ref);
            gt_image_event_add(s->dir, "Failed", "Failed to pull image: %s", err->msg);
            return rc;
        }
    }
    rc = cgroup_layout(&s->spec, &sys, err);
    rc = rc < 0 ? rc : gt_cgroup_init(&s->cg, &sys, s->spec.cgroup_path, err);
    rc = rc < 0 ? rc : gt_cgroup_create(&s->cg, &s->spec.limits, err);
    if (rc < 0) {
        return rc;
    }
    s->cg_created = true;
    if (mkdir(s->spec.log_dir, 0755) < 0 && errno != EEXIST) {
        return gt_err_set(err, -errno, "mkdir %s: %s", s->spec.log_dir, strerror(errno));
    }
    rc = gt_shim_log_open(&s->log, s->spec.log_dir, s->spec.log_max_bytes, s->spec.log_keep_files,
                          err);
    rc = rc < 0 ? rc : check_volumes(s, err);
    rc = rc < 0 || !s->spec.n_hosts ? rc : write_hosts(s, err);
    rc = rc < 0 || !s->spec.termination_log ? rc : open_termination_log(s, err);
    if (rc == 0 && s->spec.image) {
        return start_container(s, err);
    }
    return rc < 0 ? rc : start_task(s, err);
}

/* The shim proper, detached. Reports on STATUS_FD once the task runs. */
static _Noreturn void run_detached(struct shim *s)
{
    s->sig_fd = -1;
    s->log_rd_fd[0] = s->log_rd_fd[1] = -1;
    s->log.fd = -1;
    s->log.dir_fd = -1;
    s->kill_at_ms = -1;
    s->cg.oom_fd = -1;
    s->cg.oom_ctl_fd = -1;
    s->prep_rd_fd = -1;
    s->term_fd = -1;
    s->init_rd_fd = -1;
    s->img.use_fd = -1;
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    write_number(s, "shim.pid", getpid());
    struct gt_err err = {0};
    s->ex.started_at_ms = gt_now_ms();
    if (prepare_and_start(s, &err) < 0) {
        gt_log_error("task did not start", "err=\"%s\"", err.msg);
        if (s->log.fd >= 0) {
            /* where the user looks first: the task's own log */
            char line[sizeof(err.msg) + 64];
            int n = snprintf(line, sizeof(line), "gantry: the task did not start: %s\n", err.msg);
            gt_shim_log_write(&s->log, GT_SHIM_STDERR, line,
                              (size_t)n < sizeof(line) ? (size_t)n : 0, NULL);
        }
        s->ex.exit_code = 127;
        snprintf(s->ex.error, sizeof(s->ex.error), "%s", err.msg);
        finish(s);
        gt_image_pulled_fini(&s->img);
        _exit(write(STATUS_FD, "S", 1) == 1 ? 0 : 1);
    }
    gt_fault_hit(&s->faults, GT_FP_START_BEFORE_PIDFILE); /* fail: nothing to fail */
    write_number(s, "task.pid", s->task_pid);
    write_number(s, "started", s->ex.started_at_ms);
    gt_log_info("task started", "pid=%d", (int)s->task_pid);
    if (write(STATUS_FD, "S", 1) != 1) {
        gt_log_warn("nobody took the start report", NULL);
    }
    close(STATUS_FD);
    supervise(s);
    finish(s);
    gt_log_info("task ended", "exit_code=%d signal=%d oom=%d", s->ex.exit_code, s->ex.signal,
                (int)s->ex.oom_killed);
    gt_shim_log_close(&s->log);
    gt_cgroup_fini(&s->cg);
    gt_image_pulled_fini(&s->img);
    free(s->vol_is_dir);
    gt_shim_spec_fini(&s->spec);
    close_fd(&s->sig_fd);
    free(s);
    _exit(0);
}

/* Point the detached shim's stdio at /dev/null and DIR/shim.log, keep only
 * the status pipe (moved to STATUS_FD) and drop every inherited fd. */
static int detach_fds(const char *dir, int status_fd)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/shim.log", dir);
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    int log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (null_fd < 0 || log_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 ||
        dup2(null_fd, STDOUT_FILENO) < 0 || dup2(log_fd, STDERR_FILENO) < 0 ||
        (status_fd == STATUS_FD ? fcntl(status_fd, F_SETFD, FD_CLOEXEC)
                                : dup3(status_fd, STATUS_FD, O_CLOEXEC)) < 0) {
        return -1;
    }
    return syscall(SYS_close_range, STATUS_FD + 1, ~0U, 0) < 0 ? -1 : 0;
}

int gt_shim_main(const char *state_dir, int status_fd)
{
    struct shim *s = gt_xcalloc(1, sizeof(*s));
    char spec_path[PATH_MAX + 16], *text;
    size_t len;
    struct gt_err err = {0};
    /* the spec is the agent's: a seed against hash flooding (jansson reads
     * /dev/urandom for one by default) buys nothing here */
    json_object_seed((size_t)getpid() | 1);
    if (!realpath(state_dir, s->dir)) {
        fprintf(stderr, "gantry-shim: state dir %s: %s\n", state_dir, strerror(errno));
        free(s);
        return 1;
    }
    snprintf(spec_path, sizeof(spec_path), "%s/spec.json", s->dir);
    if (gt_file_read(spec_path, 1 << 20, &text, &len, &err) < 0 ||
        gt_shim_spec_parse(text, len, &s->spec, &err) < 0) {
        fprintf(stderr, "gantry-shim: %s\n", err.msg);
        free(text);
        free(s);
        return 1;
    }
    free(text);
    static const char *const fault_points[] = {GT_FP_IMAGE_UNPACK, GT_FP_START_BEFORE_PIDFILE,
                                               GT_FP_EXIT_BEFORE_RECORD, NULL};
    if (gt_faults_parse(&s->faults, getenv(GT_SHIM_FAULT_ENV), fault_points,
                        (uint64_t)gt_now_ns() ^ (uint64_t)getpid(), &err) < 0) {
        fprintf(stderr, "gantry-shim: %s: %s\n", GT_SHIM_FAULT_ENV, err.msg);
        gt_shim_spec_fini(&s->spec);
        free(s);
        return 1;
    }
    /* started by the agent as a session leader: supervise from this process */
    if (getsid(0) != getpid() || detach_fds(s->dir, status_fd) < 0 || chdir("/") < 0) {
        fprintf(stderr, "gantry-shim: not started in its own session, or cannot detach\n");
        gt_shim_spec_fini(&s->spec);
        free(s);
        return 1;
    }
    run_detached(s);
}
