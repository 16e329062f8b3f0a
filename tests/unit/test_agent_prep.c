/*
 * What a task gets before its command, through the real gantry-shim as
 * uid 65534 in its own cgroup and namespaces: a local git repository
 * (file://) fetched at a revision (a bad URL or revision fails with git's
 * message, reason SourceFetchFailed); requirements naming a wheel built
 * here installed into a cached virtual environment that a second task
 * reuses (a missing package fails with pip's message, RequirementsFailed),
 * with the pip configuration the agent takes from the Task's spec.pip (the
 * cluster's, set by gantryd; gantlet has no pip flags of its own);
 * volumes beneath a storage root bind-mounted (read-only honoured), a
 * symlink escaping the root refused (VolumeDenied); /etc/hosts inside the
 * task mapping the spec's host names. Everything made here is removed.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>

#include <cmocka.h>

#include "agent/agent_int.h"
#include "agent/gantlet.h"
#include "agent/shim.h"
#include "test_agent_util.h"
#include "test_skip.h"

#define NOBODY 65534
#define ALL_NS "[\"pid\",\"mount\",\"uts\",\"ipc\"]"

struct fixture {
    char *top;  /* everything of this test, under /tmp */
    char *dir;  /* state directory */
    char *work; /* the task's cwd, owned by the task user */
    char *cg_parent;
    struct gt_cgroup_sys sys;
    int seq;
};

static struct fixture *g_fx; /* for group setup/teardown only */

static void sh(const char *cmd)
{
    char *argv[] = {(char *)"sh", (char *)"-ec", (char *)cmd, NULL};
    int st = test_run(argv);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fail_msg("command failed: %s", cmd);
    }
}

static char *sh_out(const char *cmd)
{
    char *path = gt_xasprintf("%s/out", g_fx->top);
    char *full = gt_xasprintf("(%s) > %s", cmd, path);
    sh(full);
    free(full);
    char *text = test_read_file(g_fx->top, "out");
    free(path);
    return text;
}

static int group_setup(void **state)
{
    struct fixture *fx = gt_xcalloc(1, sizeof(*fx));
    if (gt_cgroup_sys_detect(&fx->sys, NULL) < 0) {
        free(fx);
        return -1;
    }
    g_fx = fx;
    fx->top = test_tmpdir("prep");
    fx->cg_parent = gt_xasprintf("gantry-test-prep-%d", (int)getpid());
    *state = fx;
    return 0;
}

static int group_teardown(void **state)
{
    struct fixture *fx = *state;
    gt_cgroup_sys_remove_dir(&fx->sys, fx->cg_parent, NULL);
    test_rm_rf(fx->top);
    free(fx->top);
    free(fx->dir);
    free(fx->work);
    free(fx->cg_parent);
    free(fx);
    return 0;
}

/* A fresh state directory and work dir for the next task. */
static void new_task(struct fixture *fx)
{
    free(fx->dir);
    free(fx->work);
    fx->seq++;
    fx->dir = gt_xasprintf("%s/task-%d", fx->top, fx->seq);
    fx->work = gt_xasprintf("%s/work", fx->dir);
    assert_int_equal(mkdir(fx->dir, 0755), 0);
    assert_int_equal(mkdir(fx->work, 0700), 0);
    assert_int_equal(chown(fx->work, NOBODY, NOBODY), 0);
}

/* Run the shim on a spec with the given argv and extra top-level fields,
 * wait for its exit record. */
static void run_task(struct fixture *fx, const char *argv_json, const char *extra,
                     struct gt_shim_exit *ex)
{
    new_task(fx);
    char *spec = gt_xasprintf(
        "{\"argv\":%s,\"env\":[\"PATH=/usr/bin:/bin\"],\"cwd\":\"%s\",\"uid\":%d,\"gid\":%d,"
        "\"namespaces\":" ALL_NS ",\"cgroup\":{\"path\":\"%s/t%d\"},\"log\":{\"dir\":\"%s/logs\"}"
        "%s}",
        argv_json, fx->work, NOBODY, NOBODY, fx->cg_parent, fx->seq, fx->dir, extra);
    test_write_file(fx->dir, "spec.json", spec);
    free(spec);
    int st = test_shim_start(fx->dir);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char *path = gt_xasprintf("%s/exit.json", fx->dir);
    bool there = test_wait_file(path, 60000);
    free(path);
    assert_true(there);
    struct gt_err err = {0};
    if (gt_shim_exit_read(fx->dir, ex, &err) < 0) {
        fail_msg("exit.json: %s", err.msg);
    }
    pid_t shim_pid;
    assert_int_equal(gt_shim_read_pid(fx->dir, "shim.pid", &shim_pid, &err), 0);
    for (int i = 0; i < 300 && test_pid_alive(shim_pid); i++) {
        test_sleep_ms(10);
    }
    while (waitpid(-1, NULL, WNOHANG) > 0) {
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

static void assert_log_has(const struct fixture *fx, const char *want)
{
    char *log = task_log(fx);
    if (!strstr(log, want)) {
        fail_msg("task log lacks \"%s\":\n%s", want, log);
    }
    free(log);
}

/* ---- source ---- */

/* A repository with two commits; returns the first commit's sha. */
static char *make_repo(const struct fixture *fx)
{
    char *cmd =
        gt_xasprintf("cd %s && mkdir repo && cd repo && git init -q -b main && "
                     "git config user.email t@example.com && git config user.name t && "
                     "echo first > hello.txt && printf 'gtdemo==1.0\\n' > requirements.txt && "
                     "git add . && git commit -q -m one && echo second > hello.txt && "
                     "git commit -q -am two && git tag v2 && chmod -R a+rX .",
                     fx->top);
    sh(cmd);
    free(cmd);
    cmd = gt_xasprintf("git -C %s/repo rev-parse HEAD~1", fx->top);
    char *sha = sh_out(cmd);
    free(cmd);
    sha[strcspn(sha, "\n")] = '\0';
    assert_int_equal(strlen(sha), 40);
    return sha;
}

static void test_source(void **state)
{
    struct fixture *fx = *state;
    char *sha = make_repo(fx);
    struct gt_shim_exit ex;
    char *extra =
        gt_xasprintf(",\"source\":{\"git\":\"file://%s/repo\",\"revision\":\"%s\"}", fx->top, sha);
    run_task(fx, "[\"sh\",\"-c\",\"cat hello.txt; id -u\"]", extra, &ex);
    free(extra);
    assert_string_equal(ex.error, "");
    assert_int_equal(ex.exit_code, 0);
    assert_log_has(fx, "first\n65534\n");
    /* a tag works too */
    extra = gt_xasprintf(",\"source\":{\"git\":\"file://%s/repo\",\"revision\":\"v2\"}", fx->top);
    run_task(fx, "[\"cat\",\"hello.txt\"]", extra, &ex);
    free(extra);
    assert_int_equal(ex.exit_code, 0);
    assert_log_has(fx, "second\n");
    /* a short sha fails with git's message */
    extra = gt_xasprintf(",\"source\":{\"git\":\"file://%s/repo\",\"revision\":\"%.7s\"}", fx->top,
                         sha);
    run_task(fx, "[\"true\"]", extra, &ex);
    free(extra);
    assert_int_equal(ex.exit_code, 127);
    assert_string_equal(ex.reason, "SourceFetchFailed");
    assert_non_null(strstr(ex.error, "couldn't find remote ref"));
    /* so does a bad URL */
    extra = gt_xasprintf(",\"source\":{\"git\":\"file://%s/no-repo\"}", fx->top);
    run_task(fx, "[\"true\"]", extra, &ex);
    free(extra);
    assert_int_equal(ex.exit_code, 127);
    assert_string_equal(ex.reason, "SourceFetchFailed");
    if (!strstr(ex.error, "does not appear to be a git repository")) {
        fail_msg("message: %s", ex.error);
    }
    free(sha);
}

/* ---- requirements ---- */

static void make_wheel(const struct fixture *fx)
{
    char *cmd = gt_xasprintf(
        "cd %s && mkdir -p pkg wheels venvs/%d && "
        "printf 'VALUE = 42\\n' > pkg/gtdemo.py && "
        "printf 'from setuptools import setup\\nsetup(name=\"gtdemo\", version=\"1.0\", "
        "py_modules=[\"gtdemo\"])\\n' > pkg/setup.py && "
        "/usr/bin/python3 -m pip wheel -q --no-index --no-build-isolation --no-deps -w wheels "
        "./pkg "
        "&& rm -rf pkg && chmod -R a+rX wheels && chown %d venvs/%d && chmod 700 venvs/%d",
        fx->top, NOBODY, NOBODY, NOBODY, NOBODY);
    sh(cmd);
    free(cmd);
}

/* The shim spec's pip part as the agent builds it from a Task whose
 * spec.pip names find_links: ",\"pip\":{...}" (caller frees). */
static char *pip_from_task(const char *find_links)
{
    char *text = gt_xasprintf(
        "{\"metadata\":{\"name\":\"t\",\"project\":\"p\",\"uid\":\"u\","
        "\"creator\":{\"user\":\"nobody\",\"uid\":%d}},\"spec\":{\"template\":{\"command\":"
        "[\"true\"]},\"requirements\":[\"x\"],\"pip\":{\"findLinks\":\"%s\"}}}",
        NOBODY, find_links);
    json_t *obj = json_loads(text, 0, NULL);
    assert_non_null(obj);
    struct gt_api_task *task = gt_api_task_new(obj);
    json_decref(obj);
    const struct gt_task_spec_params p = {.state_dir = "/nonexistent/state",
                                          .venv_root = "/nonexistent/venvs",
                                          .log_max_bytes = 4096,
                                          .log_keep_files = 1};
    struct gt_shim_spec s;
    struct gt_err err = {0};
    if (gt_task_spec_build(task, &p, &s, &err) < 0) {
        fail_msg("spec: %s", err.msg);
    }
    assert_string_equal(s.pip_find_links, find_links);
    assert_null(s.pip_index_url);
    char *spec_text = gt_shim_spec_to_json(&s);
    json_t *spec = json_loads(spec_text, 0, NULL);
    char *pip = gt_json_dumps(json_object_get(spec, "pip"));
    char *out = gt_xasprintf(",\"pip\":%s", pip);
    free(pip);
    json_decref(spec);
    free(spec_text);
    gt_shim_spec_fini(&s);
    gt_api_task_free(task);
    free(text);
    return out;
}

static void test_requirements(void **state)
{
    struct fixture *fx = *state;
    if (access("/usr/bin/python3", X_OK) < 0) {
        gt_test_skip("needs /usr/bin/python3");
    }
    make_wheel(fx);
    struct gt_shim_exit ex;
    char *wheels = gt_xasprintf("%s/wheels", fx->top);
    char *task_pip = pip_from_task(wheels);
    char *pip = gt_xasprintf("%s,\"venvDir\":\"%s/venvs/%d\"", task_pip, fx->top, NOBODY);
    free(task_pip);
    free(wheels);
    /* a requirements file in the fetched source */
    char *extra = gt_xasprintf(
        ",\"source\":{\"git\":\"file://%s/repo\"},\"requirements\":\"requirements.txt\"%s", fx->top,
        pip);
    static const char probe[] = "[\"python\",\"-c\",\"import gtdemo, os, sys; "
                                "print(gtdemo.VALUE, sys.prefix == os.environ['VIRTUAL_ENV'])\"]";
    run_task(fx, probe, extra, &ex);
    free(extra);
    assert_string_equal(ex.error, "");
    assert_int_equal(ex.exit_code, 0);
    assert_log_has(fx, "gantry: building the environment");
    assert_log_has(fx, "42 True\n");
    struct stat st1, st2;
    char *mark = gt_xasprintf("%s/venvs/%d", fx->top, NOBODY);
    /* the same requirements as a list: the cached environment, not rebuilt */
    extra = gt_xasprintf(",\"requirements\":[\"gtdemo==1.0\"]%s", pip);
    char *ls = gt_xasprintf("ls %s", mark);
    char *before = sh_out(ls);
    assert_int_equal(stat(mark, &st1), 0);
    run_task(fx, probe, extra, &ex);
    free(extra);
    assert_int_equal(ex.exit_code, 0);
    assert_log_has(fx, "gantry: using the cached environment");
    assert_log_has(fx, "42 True\n");
    char *after = sh_out(ls);
    assert_string_equal(before, after); /* one venv and its lock */
    assert_int_equal(stat(mark, &st2), 0);
    free(before);
    free(after);
    free(ls);
    free(mark);
    /* a package the index does not have: pip's message */
    extra = gt_xasprintf(",\"requirements\":[\"gt-no-such-package\"]%s", pip);
    run_task(fx, "[\"true\"]", extra, &ex);
    free(extra);
    assert_int_equal(ex.exit_code, 127);
    assert_string_equal(ex.reason, "RequirementsFailed");
    if (!strstr(ex.error, "No matching distribution found for gt-no-such-package")) {
        fail_msg("message: %s", ex.error);
    }
    free(pip);
}

/* The pip configuration is the cluster's: gantlet refuses the old flags. */
static void test_no_node_pip_flags(void **state)
{
    (void)state;
    static const char *const flags[] = {"--pip-find-links", "--pip-index-url"};
    for (size_t i = 0; i < GT_ARRAY_LEN(flags); i++) {
        char *argv[] = {(char *)"gantlet",    (char *)"--server",
                        (char *)"http://h:1", (char *)"--token-file",
                        (char *)"/t",         (char *)"--name",
                        (char *)"n1",         (char *)flags[i],
                        (char *)"/wheels",    NULL};
        struct gt_gantlet_config cfg;
        bool help;
        struct gt_err err = {0};
        assert_int_equal(gt_gantlet_config_parse(&cfg, 9, argv, NULL, &help, &err), GT_EINVAL);
        assert_non_null(strstr(err.msg, "unknown flag"));
        gt_gantlet_config_fini(&cfg);
    }
}

/* ---- volumes and /etc/hosts ---- */

static void test_volumes_and_hosts(void **state)
{
    struct fixture *fx = *state;
    char *cmd = gt_xasprintf("cd %s && mkdir -p storage/data outside && echo vol-data > "
                             "storage/data/f.txt && echo secret > outside/s.txt && "
                             "ln -s ../outside storage/escape && chmod -R a+rX storage outside",
                             fx->top);
    sh(cmd);
    free(cmd);
    char *hosts_before = test_read_file("/etc", "hosts");
    struct gt_shim_exit ex;
    char *extra = gt_xasprintf(
        ",\"volumes\":[{\"root\":\"%s/storage\",\"path\":\"data\",\"mountPath\":\"%s/mnt/d\","
        "\"readOnly\":true}],\"hosts\":[{\"ip\":\"10.1.2.3\",\"hostname\":\"job-worker-0\"},"
        "{\"ip\":\"10.1.2.4\",\"hostname\":\"job-master-0.p.svc\"}]",
        fx->top, fx->top);
    char *argv = gt_xasprintf("[\"sh\",\"-c\",\"cat %s/mnt/d/f.txt; touch %s/mnt/d/x 2>/dev/null "
                              "|| echo read-only; getent hosts job-worker-0 job-master-0.p.svc\"]",
                              fx->top, fx->top);
    run_task(fx, argv, extra, &ex);
    free(argv);
    free(extra);
    assert_string_equal(ex.error, "");
    assert_int_equal(ex.exit_code, 0);
    assert_log_has(fx, "vol-data\nread-only\n");
    assert_log_has(fx, "10.1.2.3        job-worker-0\n");
    assert_log_has(fx, "10.1.2.4        job-master-0.p.svc\n");
    /* nothing of it outside the task */
    char *hosts_after = test_read_file("/etc", "hosts");
    assert_string_equal(hosts_before, hosts_after);
    free(hosts_before);
    free(hosts_after);
    char *mnt = gt_xasprintf("%s/mnt/d/f.txt", fx->top);
    assert_int_equal(access(mnt, F_OK), -1);
    free(mnt);
    /* a symlink placed in the root that leads out of it */
    extra = gt_xasprintf(",\"volumes\":[{\"root\":\"%s/storage\",\"path\":\"escape\","
                         "\"mountPath\":\"%s/mnt/e\"}]",
                         fx->top, fx->top);
    run_task(fx, "[\"true\"]", extra, &ex);
    free(extra);
    assert_int_equal(ex.exit_code, 127);
    assert_string_equal(ex.reason, "VolumeDenied");
    if (!strstr(ex.error, "resolves outside the storage root")) {
        fail_msg("message: %s", ex.error);
    }
}

/* The agent's side: placement beneath the roots, and the early check. */
static void test_volume_checks(void **state)
{
    struct fixture *fx = *state;
    char *roots[] = {(char *)"/srv/data/", (char *)"/srv/data/team", (char *)"/mnt"};
    size_t idx;
    const char *rel;
    struct gt_err err = {0};
    assert_int_equal(gt_volume_locate(roots, 3, "/srv/data/team/x/y", &idx, &rel, &err), 0);
    assert_int_equal(idx, 1);
    assert_string_equal(rel, "x/y");
    assert_int_equal(gt_volume_locate(roots, 3, "/srv/data", &idx, &rel, &err), 0);
    assert_int_equal(idx, 0);
    assert_string_equal(rel, ".");
    assert_int_equal(gt_volume_locate(roots, 3, "/srv/database", &idx, &rel, &err), GT_EFORBIDDEN);
    assert_non_null(strstr(err.msg, "not beneath a storage root"));
    gt_err_clear(&err);
    assert_int_equal(gt_volume_locate(roots, 0, "/mnt", &idx, &rel, &err), GT_EFORBIDDEN);
    /* openat2 beneath the root */
    char *root = gt_xasprintf("%s/storage", fx->top);
    int fd;
    gt_err_clear(&err);
    assert_int_equal(gt_volume_open(root, "data", &fd, &err), 0);
    close(fd);
    assert_int_equal(gt_volume_open(root, "escape", &fd, &err), GT_EFORBIDDEN);
    assert_int_equal(fd, -1);
    gt_err_clear(&err);
    assert_int_equal(gt_volume_open(root, "../outside", &fd, &err), GT_EFORBIDDEN);
    gt_err_clear(&err);
    assert_int_equal(gt_volume_open(root, "missing", &fd, &err), GT_EFORBIDDEN);
    assert_non_null(strstr(err.msg, "No such file"));
    free(root);
}

/* HMAC-SHA256 as RFC 4231 gives it (test cases 2 and 6: a short key, and
 * one longer than the block, which is hashed first). */
static void test_hmac_sha256(void **state)
{
    (void)state;
    char out[65];
    const char *msg = "what do ya want for nothing?";
    gt_hmac_sha256_hex("Jefe", 4, msg, strlen(msg), out);
    assert_string_equal(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    char key[131];
    memset(key, 0xaa, sizeof(key));
    msg = "Test Using Larger Than Block-Size Key - Hash Key First";
    gt_hmac_sha256_hex(key, sizeof(key), msg, strlen(msg), out);
    assert_string_equal(out, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_source),
        cmocka_unit_test(test_requirements),
        cmocka_unit_test(test_no_node_pip_flags),
        cmocka_unit_test(test_volumes_and_hosts),
        cmocka_unit_test(test_volume_checks),
        cmocka_unit_test(test_hmac_sha256),
    };
    if (geteuid() != 0) {
        return gt_test_skip_all("the preparation tests need root");
    }
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    return gt_test_run("task_prep", tests, group_setup, group_teardown);
}
