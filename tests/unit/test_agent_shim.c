/*
 * The per-task shim: spec.json parsing (round trip and rejected specs), the
 * rotating task log, and the real gantry-shim binary from the build
 * directory running real tasks as uid 65534 in their own cgroup and
 * namespaces: output, exit code, PID 1 in its namespace, the stop protocol
 * (a task ignoring SIGTERM with a child outside its process group is gone
 * after the grace period), OOM (exit 137, oomKilled) and start failures.
 * Every state directory and cgroup made here is removed, also on failure.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>

#include <cmocka.h>

#include "agent/shim.h"
#include "test_agent_util.h"
#include "test_skip.h"

#define NOBODY 65534
#define ALL_NS "[\"pid\",\"mount\",\"uts\",\"ipc\"]"

/* ---- spec.json ---- */

static const char full_spec[] =
    "{\"argv\":[\"sh\",\"-c\",\"echo hi\"],\"env\":[\"A=1\",\"PATH=/bin\"],\"cwd\":\"/tmp\","
    "\"uid\":1000,\"gid\":1001,\"groups\":[1002,1003],\"hostname\":\"job-worker-0\","
    "\"namespaces\":[\"pid\",\"mount\",\"uts\",\"ipc\"],"
    "\"cgroup\":{\"path\":\"gantry/uid-1\",\"cpuMilli\":1500,\"memoryBytes\":1073741824,"
    "\"pidsMax\":100,\"gpuMinors\":[0,3]},"
    "\"log\":{\"dir\":\"/var/log/"
    "t\",\"maxBytes\":1000,\"keepFiles\":2},\"stopGracePeriodMs\":5000}";

static void check_full(const struct gt_shim_spec *s)
{
    assert_int_equal(s->n_argv, 3);
    assert_string_equal(s->argv[2], "echo hi");
    assert_null(s->argv[3]);
    assert_int_equal(s->n_env, 2);
    assert_string_equal(s->env[1], "PATH=/bin");
    assert_null(s->env[2]);
    assert_string_equal(s->cwd, "/tmp");
    assert_int_equal(s->uid, 1000);
    assert_int_equal(s->gid, 1001);
    assert_int_equal(s->n_groups, 2);
    assert_int_equal(s->groups[1], 1003);
    assert_false(s->privileged);
    assert_string_equal(s->hostname, "job-worker-0");
    assert_int_equal(s->namespaces, GT_NS_PID | GT_NS_MOUNT | GT_NS_UTS | GT_NS_IPC);
    assert_string_equal(s->cgroup_path, "gantry/uid-1");
    assert_int_equal(s->limits.cpu_milli, 1500);
    assert_int_equal(s->limits.memory_bytes, 1 << 30);
    assert_int_equal(s->limits.pids_max, 100);
    assert_int_equal(s->limits.n_gpu_minors, 2);
    assert_int_equal(s->limits.gpu_minors[1], 3);
    assert_string_equal(s->log_dir, "/var/log/t");
    assert_int_equal(s->log_max_bytes, 1000);
    assert_int_equal(s->log_keep_files, 2);
    assert_int_equal(s->stop_grace_ms, 5000);
}

static void test_spec_round_trip(void **state)
{
    (void)state;
    struct gt_shim_spec a, b;
    struct gt_err err = {0};
    assert_int_equal(gt_shim_spec_parse(full_spec, strlen(full_spec), &a, &err), 0);
    check_full(&a);
    char *text = gt_shim_spec_to_json(&a);
    assert_int_equal(gt_shim_spec_parse(text, strlen(text), &b, &err), 0);
    check_full(&b);
    free(text);
    gt_shim_spec_fini(&a);
    gt_shim_spec_fini(&b);
    /* defaults */
    static const char min[] = "{\"argv\":[\"true\"],\"cwd\":\"/\",\"uid\":1,\"gid\":1,"
                              "\"cgroup\":{\"path\":\"g/t\"},\"log\":{\"dir\":\"/l\"}}";
    assert_int_equal(gt_shim_spec_parse(min, strlen(min), &a, &err), 0);
    assert_int_equal(a.n_env, 0);
    assert_null(a.env[0]);
    assert_int_equal(a.namespaces, 0);
    assert_null(a.hostname);
    assert_int_equal(a.stop_grace_ms, 30000);
    assert_int_equal(a.log_keep_files, 3);
    assert_int_equal(a.log_max_bytes, 0);
    assert_null(a.cg_unified);
    assert_null(a.cg_mounts[GT_CG_CPU]);
    gt_shim_spec_fini(&a);
    /* the agent's cgroup layout, v1 (the controllers mounted) and v2 */
    static const char v1[] = "{\"argv\":[\"true\"],\"cwd\":\"/\",\"uid\":1,\"gid\":1,"
                             "\"cgroup\":{\"path\":\"g/t\",\"hierarchies\":{\"cpu\":\"/c/cpu\","
                             "\"memory\":\"/c/memory\",\"cpuacct\":\"/c/cpuacct\"}},"
                             "\"log\":{\"dir\":\"/l\"}}";
    assert_int_equal(gt_shim_spec_parse(v1, strlen(v1), &a, &err), 0);
    text = gt_shim_spec_to_json(&a);
    assert_int_equal(gt_shim_spec_parse(text, strlen(text), &b, &err), 0);
    free(text);
    assert_null(b.cg_unified);
    assert_string_equal(b.cg_mounts[GT_CG_CPU], "/c/cpu");
    assert_string_equal(b.cg_mounts[GT_CG_MEMORY], "/c/memory");
    assert_string_equal(b.cg_mounts[GT_CG_CPUACCT], "/c/cpuacct");
    assert_null(b.cg_mounts[GT_CG_PIDS]);
    assert_null(b.cg_mounts[GT_CG_DEVICES]);
    struct gt_cgroup_sys sys;
    assert_int_equal(gt_cgroup_sys_init_v1(&sys, (const char *const *)b.cg_mounts, &err), 0);
    assert_int_equal(sys.version, 1);
    assert_string_equal(sys.v1_mount[GT_CG_MEMORY], "/c/memory");
    assert_string_equal(sys.v1_mount[GT_CG_PIDS], "");
    assert_string_equal(sys.dev_dir, "/dev");
    gt_shim_spec_fini(&a);
    gt_shim_spec_fini(&b);
    static const char v2[] = "{\"argv\":[\"true\"],\"cwd\":\"/\",\"uid\":1,\"gid\":1,"
                             "\"cgroup\":{\"path\":\"g/t\",\"unified\":\"/c\"},"
                             "\"log\":{\"dir\":\"/l\"}}";
    assert_int_equal(gt_shim_spec_parse(v2, strlen(v2), &a, &err), 0);
    text = gt_shim_spec_to_json(&a);
    assert_int_equal(gt_shim_spec_parse(text, strlen(text), &b, &err), 0);
    free(text);
    assert_string_equal(b.cg_unified, "/c");
    assert_null(b.cg_mounts[GT_CG_CPU]);
    gt_shim_spec_fini(&a);
    gt_shim_spec_fini(&b);
    const char *none[GT_CG_NCTRL] = {0};
    assert_int_equal(gt_cgroup_sys_init_v1(&sys, none, &err), GT_EINVAL);
}

static void test_spec_rejects(void **state)
{
    (void)state;
#define BASE                                                                                       \
    "\"cwd\":\"/\",\"uid\":1,\"gid\":1,\"cgroup\":{\"path\":\"g/t\"},\"log\":{\"dir\":\"/l\"}"
    static const struct {
        const char *text;
        const char *says;
    } bad[] = {
        {"[]", "not a JSON object"},
        {"{\"argv\":[\"a\"],\"argv\":[\"b\"]," BASE "}", "not a JSON object"},
        {"{\"argv\":[\"a\"],\"bogus\":1," BASE "}", "bogus: unknown field"},
        {"{\"argv\":[]," BASE "}", "argv: want a non-empty list"},
        {"{\"argv\":[1]," BASE "}", "argv[0]: must be a string"},
        {"{\"argv\":[\"a\"],\"env\":[\"NOEQUALS\"]," BASE "}", "env[0]: want NAME=value"},
        {"{\"argv\":[\"a\"],\"cwd\":\"rel\",\"uid\":1,\"gid\":1,\"cgroup\":{\"path\":\"g/t\"},"
         "\"log\":{\"dir\":\"/l\"}}",
         "cwd: must be an absolute path"},
        {"{\"argv\":[\"a\"],\"cwd\":\"/\",\"uid\":0,\"gid\":1,\"cgroup\":{\"path\":\"g/t\"},"
         "\"log\":{\"dir\":\"/l\"}}",
         "needs privileged"},
        {"{\"argv\":[\"a\"],\"cwd\":\"/\",\"gid\":1,\"cgroup\":{\"path\":\"g/t\"},"
         "\"log\":{\"dir\":\"/l\"}}",
         "uid: required"},
        {"{\"argv\":[\"a\"],\"uid\":-5," BASE "}", "not a JSON object"},
        {"{\"argv\":[\"a\"],\"namespaces\":[\"pid\"]," BASE "}", "pid needs mount"},
        {"{\"argv\":[\"a\"],\"namespaces\":[\"net\"]," BASE "}",
         "namespaces[0]: must be one of pid, mount, uts, ipc"},
        {"{\"argv\":[\"a\"],\"hostname\":\"h\"," BASE "}", "needs the uts namespace"},
        {"{\"argv\":[\"a\"],\"cwd\":\"/\",\"uid\":1,\"gid\":1,\"log\":{\"dir\":\"/l\"}}",
         "cgroup: required"},
        {"{\"argv\":[\"a\"],\"cwd\":\"/\",\"uid\":1,\"gid\":1,\"cgroup\":{\"memoryBytes\":-1,"
         "\"path\":\"g\"},\"log\":{\"dir\":\"/l\"}}",
         "cgroup.memoryBytes: must be >= 0"},
        {"{\"argv\":[\"a\"],\"cwd\":\"/\",\"uid\":1,\"gid\":1,\"cgroup\":{\"path\":\"g\"},"
         "\"log\":{\"dir\":\"l\"}}",
         "log.dir: must be an absolute path"},
        {"{\"argv\":[\"a\"],\"cwd\":\"/\",\"uid\":1,\"gid\":1,\"cgroup\":{\"path\":\"g\"},"
         "\"log\":{\"dir\":\"/l\",\"keepFiles\":101}}",
         "log.keepFiles: must be <= 100"},
        {"{\"argv\":[\"a\"],\"stopGracePeriodMs\":\"5\"," BASE "}",
         "stopGracePeriodMs: must be an integer"},
        {"{\"argv\":[\"a\"],\"groups\":[0]," BASE "}", "groups[0]: gid 0 needs privileged"},
        {"{\"argv\":[\"a\"],\"namespaces\":[\"mount\"],\"hosts\":[{\"ip\":\"1.2.3.4\",\"hostname\":"
         "\"-x\"}]," BASE "}",
         "hosts[0]: want a valid hostname and IP address"},
        {"{\"argv\":[\"a\"],\"requirements\":[\"a\\nb\"],\"venvDir\":\"/v\"," BASE "}",
         "requirements: item 0: one line each"},
        {"{\"argv\":[\"a\"],\"requirements\":\"r.txt\"," BASE "}",
         "venvDir: required with requirements"},
        {"{\"argv\":[\"a\"],\"source\":{\"git\":\"-u\"}," BASE "}",
         "source.git: must not be empty or start with '-'"},
        {"{\"argv\":[\"a\"],\"namespaces\":[\"mount\"],"
         "\"volumes\":[{\"root\":\"/r\",\"path\":\"/p\",\"mountPath\":\"/m\"}]," BASE "}",
         "volumes[0].path: must be a relative path"},
        {"{\"argv\":[\"a\"],\"volumes\":[{\"root\":\"/r\",\"path\":\"p\",\"mountPath\":\"/"
         "m\"}]," BASE "}",
         "need the mount namespace"},
        {"{\"argv\":[\"a\"],\"hostname\":\"\",\"namespaces\":[\"uts\"]," BASE "}",
         "hostname: must not be empty"},
        {"{\"argv\":[\"a\"],\"cwd\":\"/\",\"uid\":1,\"gid\":1,\"cgroup\":{\"path\":\"g\","
         "\"hierarchies\":{\"cpu\":\"c\"}},\"log\":{\"dir\":\"/l\"}}",
         "cgroup.hierarchies.cpu: must be an absolute path"},
        {"{\"argv\":[\"a\"],\"cwd\":\"/\",\"uid\":1,\"gid\":1,\"cgroup\":{\"path\":\"g\","
         "\"hierarchies\":{\"net_cls\":\"/c\"}},\"log\":{\"dir\":\"/l\"}}",
         "cgroup.hierarchies.net_cls: unknown field"},
        {"{\"argv\":[\"a\"],\"cwd\":\"/\",\"uid\":1,\"gid\":1,\"cgroup\":{\"path\":\"g\","
         "\"unified\":\"/c\",\"hierarchies\":{\"cpu\":\"/c/cpu\"}},\"log\":{\"dir\":\"/l\"}}",
         "unified or hierarchies, not both"},
    };
#undef BASE
    for (size_t i = 0; i < GT_ARRAY_LEN(bad); i++) {
        struct gt_shim_spec s;
        struct gt_err err = {0};
        int rc = gt_shim_spec_parse(bad[i].text, strlen(bad[i].text), &s, &err);
        if (rc >= 0 || !strstr(err.msg, bad[i].says)) {
            fail_msg("spec %zu: rc %d \"%s\" (want \"%s\")", i, rc, err.msg, bad[i].says);
        }
        assert_null(s.argv);
    }
}

/* ---- the rotating log ---- */

/* The CRI entries of dir/name, parsed; *n their number (at most max). */
static size_t log_entries(const char *dir, const char *name, char **raw, struct gt_crilog_entry *e,
                          size_t max)
{
    *raw = test_read_file(dir, name);
    size_t n = 0;
    for (char *p = *raw; p && *p && n < max;) {
        size_t len = strcspn(p, "\n");
        assert_true(gt_crilog_parse(p, len, &e[n]));
        n++;
        p += len + (p[len] == '\n');
    }
    return n;
}

static void test_log_entries(void **state)
{
    (void)state;
    char *dir = test_tmpdir("log");
    struct gt_shim_log log;
    struct gt_err err = {0};
    assert_int_equal(gt_shim_log_open(&log, dir, 0, 2, &err), 0);
    int64_t before = gt_now_ms();
    assert_int_equal(gt_shim_log_write(&log, GT_SHIM_STDOUT, "a\nbb", 4, &err), 0);
    assert_int_equal(gt_shim_log_write(&log, GT_SHIM_STDOUT, "b\n", 2, &err), 0);
    assert_int_equal(gt_shim_log_write(&log, GT_SHIM_STDERR, "oops\n", 5, &err), 0);
    gt_shim_log_close(&log);
    char *raw;
    struct gt_crilog_entry e[8];
    assert_int_equal(log_entries(dir, "task.log", &raw, e, 8), 4);
    const char *texts[] = {"a", "bb", "b", "oops"};
    const bool partial[] = {false, true, false, false};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(e[i].text_len, strlen(texts[i]));
        assert_memory_equal(e[i].text, texts[i], e[i].text_len);
        assert_int_equal(e[i].partial, partial[i]);
        assert_int_equal(e[i].stream, i == 3 ? GT_SHIM_STDERR : GT_SHIM_STDOUT);
        int64_t at;
        assert_int_equal(gt_time_parse(e[i].time, &at), 0);
        assert_true(at >= before - 1 && at <= gt_now_ms());
        assert_int_equal(strlen(e[i].time), 30);
    }
    /* as the task wrote it, and with times, each line's once */
    char *text = test_log_text(raw);
    assert_string_equal(text, "a\nbbb\noops\n");
    free(text);
    struct gt_buf b;
    gt_buf_init(&b);
    struct gt_crilog_view v = {.timestamps = true};
    bool mid = false;
    for (char *p = raw; *p;) {
        size_t len = strcspn(p, "\n");
        gt_crilog_render(p, len, &v, &mid, &b);
        p += len + 1;
    }
    char want[256];
    snprintf(want, sizeof(want), "%s a\n%s bbb\n%s oops\n", e[0].time, e[1].time, e[3].time);
    assert_string_equal(b.data, want);
    /* --since-time after them all leaves nothing; a plain line is kept */
    gt_buf_reset(&b);
    v = (struct gt_crilog_view){.since_ms = gt_now_ms() + 1000};
    gt_crilog_render(raw, strcspn(raw, "\n"), &v, &mid, &b);
    assert_int_equal(b.len, 0);
    gt_crilog_render("plain old line", 14, &v, &mid, &b);
    assert_string_equal(b.data, "plain old line\n");
    gt_buf_fini(&b);
    free(raw);
    test_rm_rf(dir);
    free(dir);
}

static void test_log_rotation(void **state)
{
    (void)state;
    char *dir = test_tmpdir("log");
    struct gt_shim_log log;
    struct gt_err err = {0};
    char line[200];
    memset(line, 'x', sizeof(line));
    /* an entry is 41 bytes of prefix and separators and its text: two of
     * 20 characters (61 bytes each) do not fit in 100, so each is a file */
    assert_int_equal(gt_shim_log_open(&log, dir, 100, 2, &err), 0);
    for (char c = 'a'; c <= 'c'; c++) {
        char text[21];
        memset(text, c, 20);
        text[20] = '\n';
        assert_int_equal(gt_shim_log_write(&log, GT_SHIM_STDOUT, text, 21, &err), 0);
    }
    const char *files[] = {"task.log.2", "task.log.1", "task.log"};
    for (int i = 0; i < 3; i++) {
        char *raw;
        struct gt_crilog_entry e[4];
        assert_int_equal(log_entries(dir, files[i], &raw, e, 4), 1);
        assert_int_equal(e[0].text_len, 20);
        assert_int_equal(e[0].text[0], 'a' + i);
        assert_int_equal(strlen(raw), 61);
        free(raw);
    }
    /* a line longer than an entry may be: parts of the cap's size, then its end */
    line[150] = '\n';
    assert_int_equal(gt_shim_log_write(&log, GT_SHIM_STDOUT, line, 151, &err), 0);
    char *joined = gt_xstrdup("");
    for (int i = 0; i < 3; i++) {
        char *raw = test_read_file(dir, files[i]);
        assert_true(strlen(raw) <= 100);
        char *t = test_log_text(raw);
        char *j = gt_xasprintf("%s%s", joined, t);
        free(joined);
        free(t);
        free(raw);
        joined = j;
    }
    char want[152];
    memset(want, 'x', 150);
    memcpy(want + 150, "\n", 2);
    assert_string_equal(joined, want);
    free(joined);
    gt_shim_log_close(&log);
    /* keep 0: a full log starts over; reopening appends */
    assert_int_equal(gt_shim_log_open(&log, dir, 100, 0, &err), 0);
    assert_int_equal(gt_shim_log_write(&log, GT_SHIM_STDOUT, "first line of twenty\n", 21, &err),
                     0);
    assert_int_equal(gt_shim_log_write(&log, GT_SHIM_STDOUT, "XY\n", 3, &err), 0);
    char *raw = test_read_file(dir, "task.log");
    char *text = test_log_text(raw);
    assert_string_equal(text, "XY\n");
    free(text);
    free(raw);
    gt_shim_log_close(&log);
    test_rm_rf(dir);
    free(dir);
}

/* ---- the gantry-shim binary ---- */

struct fixture {
    char *dir;       /* state directory */
    char *work;      /* the task's cwd */
    char *cg_path;   /* relative cgroup path */
    char *cg_parent; /* unique to this test process */
    struct gt_cgroup_sys sys;
};

static int setup(void **state)
{
    static int seq;
    struct fixture *fx = gt_xcalloc(1, sizeof(*fx));
    struct gt_err err = {0};
    if (gt_cgroup_sys_detect(&fx->sys, &err) < 0) {
        fprintf(stderr, "cgroups: %s\n", err.msg);
        free(fx);
        return -1;
    }
    fx->dir = test_tmpdir("shim");
    fx->work = gt_xasprintf("%s/work", fx->dir);
    assert_int_equal(mkdir(fx->work, 0777), 0);
    assert_int_equal(chmod(fx->work, 0777), 0);
    fx->cg_parent = gt_xasprintf("gantry-test-%d", (int)getpid());
    fx->cg_path = gt_xasprintf("%s/task-%d", fx->cg_parent, seq++);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    pid_t shim;
    /* a shim left running by a failed test is stopped first */
    if (gt_shim_read_pid(fx->dir, "shim.pid", &shim, NULL) == 0 && test_pid_alive(shim)) {
        kill(shim, SIGKILL);
    }
    struct gt_cgroup cg;
    if (gt_cgroup_init(&cg, &fx->sys, fx->cg_path, NULL) == 0) {
        gt_cgroup_kill_all(&cg, NULL);
        gt_cgroup_remove(&cg, NULL);
        gt_cgroup_fini(&cg);
    }
    gt_cgroup_sys_remove_dir(&fx->sys, fx->cg_parent, NULL);
    test_rm_rf(fx->dir);
    free(fx->dir);
    free(fx->work);
    free(fx->cg_path);
    free(fx->cg_parent);
    free(fx);
    return 0;
}

/* Write spec.json for argv_json (a JSON array) plus extra top-level and
 * cgroup fields, then start gantry-shim (test_shim_start: 0 once it reported). */
static int run_shim(const struct fixture *fx, const char *argv_json, const char *extra,
                    const char *cgroup_extra)
{
    char *spec = gt_xasprintf(
        "{\"argv\":%s,\"env\":[\"FOO=bar\",\"PATH=/usr/bin:/bin\"],\"cwd\":\"%s\",\"uid\":%d,"
        "\"gid\":%d,\"cgroup\":{\"path\":\"%s\"%s},\"log\":{\"dir\":\"%s/logs\"}%s}",
        argv_json, fx->work, NOBODY, NOBODY, fx->cg_path, cgroup_extra, fx->dir, extra);
    test_write_file(fx->dir, "spec.json", spec);
    free(spec);
    return test_shim_start(fx->dir);
}

static void wait_exit(const struct fixture *fx, struct gt_shim_exit *ex, long timeout_ms)
{
    char *path = gt_xasprintf("%s/exit.json", fx->dir);
    bool there = test_wait_file(path, timeout_ms);
    free(path);
    assert_true(there);
    struct gt_err err = {0};
    if (gt_shim_exit_read(fx->dir, ex, &err) < 0) {
        fail_msg("exit.json: %s", err.msg);
    }
    /* the shim exits right after recording the exit */
    pid_t shim;
    assert_int_equal(gt_shim_read_pid(fx->dir, "shim.pid", &shim, &err), 0);
    for (int i = 0; i < 200 && test_pid_alive(shim); i++) {
        test_sleep_ms(10);
    }
    assert_false(test_pid_alive(shim));
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

static void assert_cgroup_gone(const struct fixture *fx)
{
    for (int c = 0; c < GT_CG_NCTRL; c++) {
        const char *root = fx->sys.version == 2 ? fx->sys.v2_root : fx->sys.v1_mount[c];
        if (root[0]) {
            char *p = gt_xasprintf("%s/%s", root, fx->cg_path);
            struct stat st;
            if (stat(p, &st) == 0) {
                fail_msg("%s still exists", p);
            }
            free(p);
        }
    }
}

static char *task_log(const struct fixture *fx)
{
    char *logs = gt_xasprintf("%s/logs", fx->dir);
    char *raw = test_read_file(logs, "task.log");
    char *text = test_log_text(raw);
    free(raw);
    free(logs);
    return text ? text : gt_xstrdup("");
}

/* The task's log once it holds what (or after 5 s); caller frees. */
static char *wait_log(const struct fixture *fx, const char *what)
{
    char *log = task_log(fx);
    for (int i = 0; i < 500 && !strstr(log, what); i++) {
        test_sleep_ms(10);
        free(log);
        log = task_log(fx);
    }
    return log;
}

/* Stop the task with a 60 s grace: the init forwards SIGTERM, so a task
 * without a handler ends of it at once, not when the grace is over. */
static void stop_ends_of_sigterm(const struct fixture *fx)
{
    struct gt_err err = {0};
    int64_t t0 = gt_mono_ms();
    assert_int_equal(gt_shim_stop(fx->dir, "Deleted", 60000, &err), 0);
    struct gt_shim_exit ex;
    wait_exit(fx, &ex, 10000);
    assert_true(gt_mono_ms() - t0 < 5000);
    assert_int_equal(ex.signal, SIGTERM);
    assert_int_equal(ex.exit_code, 128 + SIGTERM);
    assert_true(ex.stop_requested);
    assert_cgroup_gone(fx);
}

static void test_shim_runs_task(void **state)
{
    struct fixture *fx = *state;
    int st = run_shim(fx,
                      "[\"sh\",\"-c\",\"echo hi; echo $FOO; id -u; echo $$; hostname; "
                      "test -z \\\"$HOME\\\" && pwd; tr '\\\\000' ' ' </proc/1/cmdline | "
                      "cut -d' ' -f1-2; exit 3\"]",
                      ",\"hostname\":\"task-0\",\"namespaces\":" ALL_NS,
                      ",\"memoryBytes\":268435456,\"pidsMax\":64,\"cpuMilli\":1000");
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    struct gt_shim_exit ex;
    wait_exit(fx, &ex, 10000);
    assert_int_equal(ex.exit_code, 3);
    assert_int_equal(ex.signal, 0);
    assert_false(ex.oom_killed);
    assert_false(ex.stop_requested);
    assert_string_equal(ex.error, "");
    assert_true(ex.started_at_ms > 0 && ex.finished_at_ms >= ex.started_at_ms);
    char *log = task_log(fx);
    /* the task is PID 2 under the init (PID 1) */
    char *want = gt_xasprintf("hi\nbar\n%d\n2\ntask-0\n%s\ngantry-shim --init\n", NOBODY, fx->work);
    assert_string_equal(log, want);
    free(want);
    free(log);
    pid_t task;
    struct gt_err err = {0};
    assert_int_equal(gt_shim_read_pid(fx->dir, "task.pid", &task, &err), 0);
    assert_true(task > 1);
    assert_cgroup_gone(fx);
}

static void test_shim_stop_kills_everything(void **state)
{
    struct fixture *fx = *state;
    /* no PID namespace here: the task's death alone would not take the
     * setsid'd child with it, only the cgroup finds it */
    int st = run_shim(fx,
                      "[\"sh\",\"-c\",\"trap '' TERM; setsid sleep 1000 & echo ready; "
                      "sleep 1000\"]",
                      ",\"stopGracePeriodMs\":60000", "");
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char *log = wait_log(fx, "ready");
    assert_string_equal(log, "ready\n");
    free(log);
    struct gt_cgroup cg;
    struct gt_err err = {0};
    pid_t *pids;
    size_t n = 0;
    assert_int_equal(gt_cgroup_init(&cg, &fx->sys, fx->cg_path, &err), 0);
    for (int i = 0; i < 100 && n < 3; i++) {
        assert_int_equal(gt_cgroup_pids(&cg, &pids, &n, &err), 0);
        if (n < 3) {
            free(pids);
            test_sleep_ms(10);
        }
    }
    assert_int_equal(n, 3); /* sh and both sleeps */
    int64_t asked = gt_now_ms();
    /* the stop request's grace period overrides the spec's 60 s */
    if (gt_shim_stop(fx->dir, "Deleted", 300, &err) < 0) {
        fail_msg("stop: %s", err.msg);
    }
    struct gt_shim_exit ex;
    wait_exit(fx, &ex, 10000);
    assert_true(ex.finished_at_ms - asked >= 300);
    assert_int_equal(ex.exit_code, 137);
    assert_int_equal(ex.signal, SIGKILL);
    assert_true(ex.stop_requested);
    assert_string_equal(ex.stop_reason, "Deleted");
    assert_false(ex.oom_killed);
    for (size_t i = 0; i < n; i++) {
        assert_false(test_pid_alive(pids[i]));
    }
    free(pids);
    assert_cgroup_gone(fx);
    assert_int_equal(gt_shim_stop(fx->dir, "Deleted", 0, &err), -ESRCH);
    gt_cgroup_fini(&cg);
}

/* The init forwards the stop's SIGTERM: an ordinary script (no handler,
 * so it would ignore SIGTERM as PID 1) ends at once, not after the grace
 * period, and reports the signal; orphans are reaped meanwhile. */
static void test_shim_init_forwards_and_reaps(void **state)
{
    struct fixture *fx = *state;
    int st = run_shim(fx,
                      "[\"sh\",\"-c\",\"sh -c 'sleep 0.1 &'; sleep 0.5; "
                      "echo zombies $(cut -d' ' -f3 /proc/[0-9]*/stat | grep -c Z); "
                      "exec sleep 1000\"]",
                      ",\"namespaces\":" ALL_NS ",\"stopGracePeriodMs\":60000", "");
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char *log = wait_log(fx, "zombies");
    assert_string_equal(log, "zombies 0\n");
    free(log);
    stop_ends_of_sigterm(fx);
}

/* A stop sent the moment the task has started is not lost while its init
 * starts: the signal waits, blocked, for the init to forward it. */
static void test_shim_init_stop_at_start(void **state)
{
    struct fixture *fx = *state;
    int st = run_shim(fx, "[\"sleep\",\"1000\"]",
                      ",\"namespaces\":" ALL_NS ",\"stopGracePeriodMs\":60000", "");
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    stop_ends_of_sigterm(fx);
}

static void test_shim_graceful_stop(void **state)
{
    struct fixture *fx = *state;
    /* the script's own handler runs on the stop's SIGTERM */
    int st = run_shim(fx,
                      "[\"sh\",\"-c\",\"trap 'echo bye; exit 0' TERM; echo up; "
                      "while :; do sleep 0.05; done\"]",
                      ",\"namespaces\":" ALL_NS, "");
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char *log = wait_log(fx, "up");
    free(log);
    pid_t shim;
    struct gt_err err = {0};
    assert_int_equal(gt_shim_read_pid(fx->dir, "shim.pid", &shim, &err), 0);
    assert_int_equal(kill(shim, SIGTERM), 0); /* no stop file: the spec's grace */
    struct gt_shim_exit ex;
    wait_exit(fx, &ex, 10000);
    assert_int_equal(ex.exit_code, 0);
    assert_int_equal(ex.signal, 0);
    assert_true(ex.stop_requested);
    assert_string_equal(ex.stop_reason, "");
    log = task_log(fx);
    assert_memory_equal(log, "up\n", 3);
    assert_non_null(strstr(log, "\nbye\n")); /* the shell may also report its killed sleep */
    free(log);
    assert_cgroup_gone(fx);
}

static void test_shim_oom(void **state)
{
    struct fixture *fx = *state;
    if (access("/usr/bin/python3", X_OK) < 0) {
        gt_test_skip("needs /usr/bin/python3");
    }
    int st = run_shim(fx, "[\"/usr/bin/python3\",\"-c\",\"b = b'x' * (512 << 20)\"]",
                      ",\"namespaces\":" ALL_NS, ",\"memoryBytes\":67108864");
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    struct gt_shim_exit ex;
    wait_exit(fx, &ex, 15000);
    assert_int_equal(ex.exit_code, 137);
    assert_int_equal(ex.signal, SIGKILL);
    assert_true(ex.oom_killed);
    assert_false(ex.stop_requested);
    assert_cgroup_gone(fx);
}

static void test_shim_start_failures(void **state)
{
    struct fixture *fx = *state;
    int st = run_shim(fx, "[\"no-such-program-gt\"]", "", "");
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    struct gt_shim_exit ex;
    wait_exit(fx, &ex, 10000);
    assert_int_equal(ex.exit_code, 127);
    assert_non_null(strstr(ex.error, "exec no-such-program-gt: No such file or directory"));
    /* and the task's log says so too */
    char *log = task_log(fx);
    assert_non_null(strstr(log, "gantry: the task did not start: exec no-such-program-gt: No "
                                "such file or directory\n"));
    free(log);
    assert_cgroup_gone(fx);
    /* a cwd the task's user cannot enter */
    char *exit_path = gt_xasprintf("%s/exit.json", fx->dir);
    unlink(exit_path);
    assert_int_equal(chmod(fx->work, 0700), 0);
    st = run_shim(fx, "[\"true\"]", "", "");
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    wait_exit(fx, &ex, 10000);
    assert_int_equal(ex.exit_code, 127);
    char *want = gt_xasprintf("chdir %s: Permission denied (uid %d cannot reach the working "
                              "directory",
                              fx->work, NOBODY);
    assert_non_null(strstr(ex.error, want));
    log = task_log(fx);
    assert_non_null(strstr(log, want));
    free(log);
    free(want);
    /* an unusable spec: the shim exits 1 without reporting and nothing starts */
    unlink(exit_path);
    char *pid_path = gt_xasprintf("%s/shim.pid", fx->dir);
    unlink(pid_path);
    static const char bad[] = "{\"argv\":[\"true\"]}";
    test_write_file(fx->dir, "spec.json", bad);
    st = test_shim_start(fx->dir);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    struct stat sb;
    assert_int_equal(stat(pid_path, &sb), -1);
    assert_int_equal(stat(exit_path, &sb), -1);
    free(pid_path);
    free(exit_path);
}

int main(void)
{
    const struct CMUnitTest pure[] = {
        cmocka_unit_test(test_spec_round_trip),
        cmocka_unit_test(test_spec_rejects),
        cmocka_unit_test(test_log_entries),
        cmocka_unit_test(test_log_rotation),
    };
    const struct CMUnitTest shim[] = {
        cmocka_unit_test_setup_teardown(test_shim_runs_task, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shim_stop_kills_everything, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shim_init_forwards_and_reaps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shim_init_stop_at_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shim_graceful_stop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shim_oom, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shim_start_failures, setup, teardown),
    };
    int failed = cmocka_run_group_tests_name("shim_formats", pure, NULL, NULL);
    if (geteuid() != 0) {
        gt_test_skip_cases(GT_ARRAY_LEN(shim), "the gantry-shim tests need root");
        return gt_test_status(failed, GT_ARRAY_LEN(pure) + GT_ARRAY_LEN(shim));
    }
    /* detached shims are re-parented to us (not to an init that may not
     * reap), so none is left a zombie */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    failed += cmocka_run_group_tests_name("gantry_shim", shim, NULL, NULL);
    return gt_test_status(failed, GT_ARRAY_LEN(pure) + GT_ARRAY_LEN(shim));
}
