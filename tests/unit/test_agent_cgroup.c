/*
 * Task cgroups on this machine's real hierarchy (needs root): limits are
 * written and hold (memory -> SIGKILL + OOM seen, pids.max -> fork fails),
 * kill-all leaves nothing, removal, the v1 devices rule against fake
 * nvidia device nodes, and the v2 code on a cgroup2 mount where one exists.
 * Every test works under a parent unique to this process and removes it.
 */
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include <cmocka.h>

#include "agent/agent.h"
#include "test_agent_util.h"
#include "test_skip.h"

#define UNIFIED "/sys/fs/cgroup/unified"

struct fixture {
    struct gt_cgroup_sys sys;
    char parent[64];
    char a[96], b[96];
    char *dev_dir;
};

/* Kill, remove and forget one task cgroup (teardown; ignores errors). */
static void destroy(const struct gt_cgroup_sys *sys, const char *path)
{
    struct gt_cgroup cg;
    if (gt_cgroup_init(&cg, sys, path, NULL) == 0) {
        gt_cgroup_kill_all(&cg, NULL);
        gt_cgroup_remove(&cg, NULL);
        gt_cgroup_fini(&cg);
    }
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

static int setup(void **state)
{
    struct fixture *fx = gt_xcalloc(1, sizeof(*fx));
    struct gt_err err = {0};
    if (gt_cgroup_sys_detect(&fx->sys, &err) < 0) {
        fprintf(stderr, "cgroup detection: %s\n", err.msg);
        free(fx);
        return -1;
    }
    snprintf(fx->parent, sizeof(fx->parent), "gantry-test-%d", (int)getpid());
    snprintf(fx->a, sizeof(fx->a), "%s/a", fx->parent);
    snprintf(fx->b, sizeof(fx->b), "%s/b", fx->parent);
    /* orphans of our children come back to us, so nothing stays a zombie */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    destroy(&fx->sys, fx->a);
    destroy(&fx->sys, fx->b);
    gt_cgroup_sys_remove_dir(&fx->sys, fx->parent, NULL);
    if (fx->dev_dir) {
        test_rm_rf(fx->dev_dir);
        free(fx->dev_dir);
    }
    struct gt_cgroup_sys v2;
    if (gt_cgroup_sys_init_v2(&v2, UNIFIED, NULL) == 0) {
        destroy(&v2, fx->a);
        gt_cgroup_sys_remove_dir(&v2, fx->parent, NULL);
    }
    free(fx);
    return 0;
}

/* Fork a child that joins cg (through gt_cgroup_procs_open's files, as a
 * task does) and then runs fn; returns once it has joined. fn's return is
 * its exit code. */
static pid_t spawn_in(const struct gt_cgroup *cg, int (*fn)(void *), void *arg)
{
    int fds[GT_CG_NCTRL];
    size_t n;
    struct gt_err err = {0};
    if (gt_cgroup_procs_open(cg, fds, &n, &err) < 0) {
        fail_msg("open cgroup.procs: %s", err.msg);
    }
    assert_true(n >= 1);
    int joined[2];
    assert_int_equal(pipe2(joined, O_CLOEXEC), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* as a task does: join the cgroup first, then run */
        for (size_t i = 0; i < n; i++) {
            if (write(fds[i], "0", 1) != 1) {
                _exit(126);
            }
        }
        if (write(joined[1], "j", 1) != 1) {
            _exit(126);
        }
        _exit(fn(arg));
    }
    for (size_t i = 0; i < n; i++) {
        close(fds[i]);
    }
    close(joined[1]);
    char c;
    if (read(joined[0], &c, 1) != 1) {
        waitpid(pid, NULL, 0);
        fail_msg("the child could not join the cgroup");
    }
    close(joined[0]);
    return pid;
}

static int wait_status(pid_t pid)
{
    int st = -1;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return st;
}

static void read_ctl(const struct fixture *fx, enum gt_cgroup_ctrl c, const char *path,
                     const char *file, char *buf, size_t len)
{
    char *p = fx->sys.version == 2 ? gt_xasprintf("%s/%s/%s", fx->sys.v2_root, path, file)
                                   : gt_xasprintf("%s/%s/%s", fx->sys.v1_mount[c], path, file);
    FILE *f = fopen(p, "re");
    if (!f) {
        fail_msg("open %s", p);
    }
    assert_non_null(fgets(buf, (int)len, f));
    fclose(f);
    free(p);
    buf[strcspn(buf, "\n")] = '\0';
}

static void test_limits_written(void **state)
{
    struct fixture *fx = *state;
    struct gt_cgroup cg;
    struct gt_err err = {0};
    struct gt_cgroup_limits lim = {.cpu_milli = 250, .memory_bytes = 64 << 20, .pids_max = 16};
    assert_int_equal(gt_cgroup_init(&cg, &fx->sys, fx->a, &err), 0);
    if (gt_cgroup_create(&cg, &lim, &err) < 0) {
        fail_msg("create: %s", err.msg);
    }
    char buf[128];
    if (fx->sys.version == 1) {
        read_ctl(fx, GT_CG_CPU, fx->a, "cpu.cfs_quota_us", buf, sizeof(buf));
        assert_string_equal(buf, "25000");
        read_ctl(fx, GT_CG_CPU, fx->a, "cpu.cfs_period_us", buf, sizeof(buf));
        assert_string_equal(buf, "100000");
        read_ctl(fx, GT_CG_MEMORY, fx->a, "memory.limit_in_bytes", buf, sizeof(buf));
        assert_string_equal(buf, "67108864");
    } else {
        read_ctl(fx, GT_CG_CPU, fx->a, "cpu.max", buf, sizeof(buf));
        assert_string_equal(buf, "25000 100000");
        read_ctl(fx, GT_CG_MEMORY, fx->a, "memory.max", buf, sizeof(buf));
        assert_string_equal(buf, "67108864");
    }
    read_ctl(fx, GT_CG_PIDS, fx->a, "pids.max", buf, sizeof(buf));
    assert_string_equal(buf, "16");
    /* an existing, empty cgroup is reused with the new limits */
    lim.pids_max = 0;
    assert_int_equal(gt_cgroup_create(&cg, &lim, &err), 0);
    read_ctl(fx, GT_CG_PIDS, fx->a, "pids.max", buf, sizeof(buf));
    assert_string_equal(buf, "max");
    assert_int_equal(gt_cgroup_remove(&cg, &err), 0);
    gt_cgroup_fini(&cg);
}

static int hog_memory(void *arg)
{
    (void)arg;
    size_t len = 256u << 20;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        return 2;
    }
    memset(p, 1, len);
    return 0; /* survived: the limit did not hold */
}

static void test_memory_limit_oom(void **state)
{
    struct fixture *fx = *state;
    struct gt_cgroup cg;
    struct gt_err err = {0};
    struct gt_cgroup_limits lim = {.memory_bytes = 32 << 20};
    assert_int_equal(gt_cgroup_init(&cg, &fx->sys, fx->a, &err), 0);
    assert_int_equal(gt_cgroup_create(&cg, &lim, &err), 0);
    int oom_fd;
    if (gt_cgroup_oom_fd(&cg, &oom_fd, &err) < 0) {
        fail_msg("oom fd: %s", err.msg);
    }
    int64_t kills = -1;
    assert_int_equal(gt_cgroup_oom_kills(&cg, &kills, &err), 0);
    assert_int_equal(kills, 0);
    int st = wait_status(spawn_in(&cg, hog_memory, NULL));
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
    struct pollfd pfd = {oom_fd, POLLIN, 0};
    assert_int_equal(poll(&pfd, 1, 2000), 1);
    assert_int_equal(gt_cgroup_oom_kills(&cg, &kills, &err), 0);
    assert_true(kills >= 1);
    assert_int_equal(gt_cgroup_remove(&cg, &err), 0);
    gt_cgroup_fini(&cg);
}

/* Burn about 200 ms of CPU time and touch 16 MiB, then exit. */
static int busy_and_touch(void *arg)
{
    (void)arg;
    size_t len = 16 << 20;
    volatile char *p = gt_xmalloc(len);
    for (size_t i = 0; i < len; i += 4096) {
        p[i] = 1;
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do {
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 200000000L);
    return 0;
}

/* cAdvisor's cpu and working-set figures of a cgroup that did some work. */
static void test_stats(void **state)
{
    struct fixture *fx = *state;
    struct gt_cgroup cg;
    struct gt_err err = {0};
    struct gt_cgroup_limits lim = {.memory_bytes = 256 << 20};
    assert_int_equal(gt_cgroup_init(&cg, &fx->sys, fx->a, &err), 0);
    struct gt_cgroup_stats st;
    gt_cgroup_stats(&cg, &st); /* not created yet */
    assert_int_equal(st.cpu_usage_ns, -1);
    assert_int_equal(st.memory_working_set_bytes, -1);
    assert_int_equal(gt_cgroup_create(&cg, &lim, &err), 0);
    assert_int_equal(wait_status(spawn_in(&cg, busy_and_touch, NULL)), 0);
    gt_cgroup_stats(&cg, &st);
    if (st.cpu_usage_ns < 150000000LL) {
        fail_msg("cpu usage %lld ns after 200 ms of work", (long long)st.cpu_usage_ns);
    }
    assert_true(st.memory_working_set_bytes >= 0);
    assert_int_equal(gt_cgroup_remove(&cg, &err), 0);
    gt_cgroup_fini(&cg);
}

static int fork_until_refused(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20; i++) {
        pid_t p = fork();
        if (p == 0) {
            pause();
            _exit(0);
        }
        if (p < 0) {
            return errno == EAGAIN ? 100 + i : 1;
        }
    }
    return 2;
}

static void test_pids_limit_and_kill_all(void **state)
{
    struct fixture *fx = *state;
    struct gt_cgroup cg;
    struct gt_err err = {0};
    struct gt_cgroup_limits lim = {.pids_max = 4};
    assert_int_equal(gt_cgroup_init(&cg, &fx->sys, fx->a, &err), 0);
    assert_int_equal(gt_cgroup_create(&cg, &lim, &err), 0);
    /* the forking child is one of the 4: its 4th fork fails with EAGAIN */
    int st = wait_status(spawn_in(&cg, fork_until_refused, NULL));
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 103);
    pid_t *pids;
    size_t n;
    assert_int_equal(gt_cgroup_pids(&cg, &pids, &n, &err), 0);
    assert_int_equal(n, 3); /* its three children, orphaned but still inside */
    /* a cgroup with processes cannot be created again */
    assert_int_equal(gt_cgroup_create(&cg, &lim, &err), -EBUSY);
    assert_int_equal(gt_cgroup_kill_all(&cg, &err), 0);
    for (size_t i = 0; i < n; i++) {
        while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR) {
        }
        assert_false(test_pid_alive(pids[i]));
    }
    free(pids);
    assert_int_equal(gt_cgroup_pids(&cg, &pids, &n, &err), 0);
    assert_int_equal(n, 0);
    assert_null(pids);
    gt_cgroup_fini(&cg);
}

static _Noreturn int ignore_term_and_sleep(void *arg)
{
    (void)arg;
    signal(SIGTERM, SIG_IGN);
    setsid(); /* leaves the process group: only the cgroup still finds it */
    for (;;) {
        pause();
    }
}

static void test_kill_all_then_remove(void **state)
{
    struct fixture *fx = *state;
    struct gt_cgroup cg;
    struct gt_err err = {0};
    assert_int_equal(gt_cgroup_init(&cg, &fx->sys, fx->a, &err), 0);
    assert_int_equal(gt_cgroup_create(&cg, NULL, &err), 0);
    pid_t kids[3];
    for (int i = 0; i < 3; i++) {
        kids[i] = spawn_in(&cg, ignore_term_and_sleep, NULL);
    }
    pid_t *pids;
    size_t n;
    assert_int_equal(gt_cgroup_pids(&cg, &pids, &n, &err), 0);
    assert_int_equal(n, 3);
    free(pids);
    /* removal of a populated cgroup fails */
    assert_true(gt_cgroup_remove(&cg, &err) < 0);
    gt_err_clear(&err);
    assert_int_equal(gt_cgroup_kill_all(&cg, &err), 0);
    for (int i = 0; i < 3; i++) {
        int st = wait_status(kids[i]);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    }
    assert_int_equal(gt_cgroup_remove(&cg, &err), 0);
    for (int c = 0; c < GT_CG_NCTRL; c++) {
        const char *root = fx->sys.version == 2 ? fx->sys.v2_root : fx->sys.v1_mount[c];
        if (root[0]) {
            char *p = gt_xasprintf("%s/%s", root, fx->a);
            struct stat st;
            assert_int_equal(stat(p, &st), -1);
            free(p);
        }
    }
    assert_int_equal(gt_cgroup_remove(&cg, &err), 0); /* missing is fine */
    gt_cgroup_fini(&cg);
}

static void test_bad_paths(void **state)
{
    struct fixture *fx = *state;
    static const char *const bad[] = {"", "/abs", "../x", "a/../b", "a/"};
    for (size_t i = 0; i < GT_ARRAY_LEN(bad); i++) {
        struct gt_cgroup cg;
        struct gt_err err = {0};
        assert_int_equal(gt_cgroup_init(&cg, &fx->sys, bad[i], &err), GT_EINVAL);
    }
}

struct open_probe {
    const char *dir;
};

/* Exit code: bit 0 set when nvidia0 is refused with EPERM, bit 1 for nvidia1. */
static int probe_devices(void *arg)
{
    const struct open_probe *p = arg;
    int code = 0;
    for (int i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/nvidia%d", p->dir, i);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
            close(fd);
        } else if (errno == EPERM) {
            code |= 1 << i;
        }
    }
    return code;
}

static void test_devices_rule(void **state)
{
    struct fixture *fx = *state;
    if (fx->sys.version != 1 || !fx->sys.v1_mount[GT_CG_DEVICES][0]) {
        gt_test_skip("no cgroup v1 devices hierarchy");
    }
    fx->dev_dir = test_tmpdir("dev");
    static const struct {
        const char *name;
        int minor;
    } nodes[] = {{"nvidia0", 0}, {"nvidia1", 1}, {"nvidiactl", 255}};
    for (size_t i = 0; i < GT_ARRAY_LEN(nodes); i++) {
        char *p = gt_xasprintf("%s/%s", fx->dev_dir, nodes[i].name);
        assert_int_equal(mknod(p, S_IFCHR | 0666, makedev(195, nodes[i].minor)), 0);
        free(p);
    }
    struct gt_cgroup_sys sys = fx->sys;
    snprintf(sys.dev_dir, sizeof(sys.dev_dir), "%s", fx->dev_dir);
    static const int mine[] = {0};
    struct gt_cgroup_limits lim = {.gpu_minors = mine, .n_gpu_minors = 1};
    struct gt_cgroup cg;
    struct gt_err err = {0};
    assert_int_equal(gt_cgroup_init(&cg, &sys, fx->a, &err), 0);
    if (gt_cgroup_create(&cg, &lim, &err) < 0) {
        fail_msg("create: %s", err.msg);
    }
    struct open_probe probe = {fx->dev_dir};
    /* no driver behind the nodes: nvidia0 fails with ENXIO, nvidia1 is denied */
    int st = wait_status(spawn_in(&cg, probe_devices, &probe));
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 2);
    assert_int_equal(gt_cgroup_remove(&cg, &err), 0);
    gt_cgroup_fini(&cg);
    /* without nvidiactl the machine has no real GPUs: no rule at all */
    char *ctl = gt_xasprintf("%s/nvidiactl", fx->dev_dir);
    unlink(ctl);
    free(ctl);
    assert_int_equal(gt_cgroup_init(&cg, &sys, fx->b, &err), 0);
    assert_int_equal(gt_cgroup_create(&cg, &lim, &err), 0);
    /* ... and no devices cgroup of its own: it stays in its parent's */
    char *devcg = gt_xasprintf("%s/%s", sys.v1_mount[GT_CG_DEVICES], fx->b);
    struct stat sb;
    assert_int_equal(stat(devcg, &sb), -1);
    free(devcg);
    st = wait_status(spawn_in(&cg, probe_devices, &probe));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(gt_cgroup_remove(&cg, &err), 0);
    gt_cgroup_fini(&cg);
}

static void test_v2_unified(void **state)
{
    struct fixture *fx = *state;
    struct gt_cgroup_sys v2;
    struct gt_err err = {0};
    if (gt_cgroup_sys_init_v2(&v2, fx->sys.version == 2 ? fx->sys.v2_root : UNIFIED, &err) < 0) {
        gt_test_skip("no cgroup v2 unified hierarchy");
    }
    assert_int_equal(v2.version, 2);
    struct gt_cgroup cg;
    assert_int_equal(gt_cgroup_init(&cg, &v2, fx->a, &err), 0);
    if (gt_cgroup_create(&cg, NULL, &err) < 0) {
        fail_msg("create: %s", err.msg);
    }
    pid_t kid = spawn_in(&cg, ignore_term_and_sleep, NULL);
    pid_t *pids;
    size_t n;
    assert_int_equal(gt_cgroup_pids(&cg, &pids, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(pids[0], kid);
    free(pids);
    int64_t kills = -1;
    assert_int_equal(gt_cgroup_oom_kills(&cg, &kills, &err), 0);
    assert_int_equal(kills, 0);
    assert_int_equal(gt_cgroup_kill_all(&cg, &err), 0);
    int st = wait_status(kid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    assert_int_equal(gt_cgroup_remove(&cg, &err), 0);
    /* a limit whose controller this hierarchy lacks is refused, nothing left */
    char avail[256] = "";
    FILE *f = fopen(UNIFIED "/cgroup.controllers", "re");
    if (f && fx->sys.version == 1) {
        assert_non_null(fgets(avail, sizeof(avail), f));
        if (!strstr(avail, "memory")) {
            struct gt_cgroup_limits lim = {.memory_bytes = 1 << 30};
            assert_int_equal(gt_cgroup_create(&cg, &lim, &err), -ENOTSUP);
            assert_non_null(strstr(err.msg, "memory.max"));
            char *p = gt_xasprintf("%s/%s", UNIFIED, fx->a);
            struct stat sb;
            assert_int_equal(stat(p, &sb), -1);
            free(p);
        }
    }
    if (f) {
        fclose(f);
    }
    gt_cgroup_fini(&cg);
}

int main(void)
{
    if (geteuid() != 0) {
        return gt_test_skip_all("test_agent_cgroup needs root");
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_limits_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_limit_oom, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pids_limit_and_kill_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill_all_then_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_devices_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_unified, setup, teardown),
    };
    return gt_test_run("cgroup", tests, NULL, NULL);
}
