/*
 * Container images, the pure parts: image references, the process merged
 * from the image config and the template (Entrypoint/Cmd vs command/args,
 * Env, WorkingDir, GPU renumbering), the GC threshold flag and the order
 * in which unused images are collected, the image part of a shim spec
 * (and its round trip through spec.json), the OCI config built for a
 * task, and tool messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/agent_int.h"
#include "agent/gantlet.h"

/* ---- references ---- */

static void ref_ok(const char *s, const char *host, const char *name, const char *tag,
                   const char *digest)
{
    struct gt_image_ref r;
    struct gt_err err = {0};
    assert_int_equal(gt_image_ref_parse(s, &r, &err), 0);
    assert_string_equal(r.host, host);
    assert_string_equal(r.name, name);
    assert_string_equal(r.tag, tag);
    assert_string_equal(r.digest, digest);
}

static void ref_bad(const char *s, const char *why)
{
    struct gt_image_ref r;
    struct gt_err err = {0};
    assert_int_equal(gt_image_ref_parse(s, &r, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "invalid image reference"));
    assert_non_null(strstr(err.msg, why));
}

static void test_ref_parse(void **state)
{
    (void)state;
    static const char d[] =
        "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    ref_ok("127.0.0.1:5000/tools/busybox:1.0", "127.0.0.1:5000", "tools/busybox", "1.0", "");
    ref_ok("registry.example.com/a/b/c", "registry.example.com", "a/b/c", "latest", "");
    ref_ok("localhost/x_y__z.w-v:T_1.x", "localhost", "x_y__z.w-v", "T_1.x", "");
    ref_ok("busybox", "docker.io", "library/busybox", "latest", "");
    ref_ok("team/app:v2", "docker.io", "team/app", "v2", "");
    ref_ok("[::1]:5000/app:1", "[::1]:5000", "app", "1", "");
    char with_digest[200];
    snprintf(with_digest, sizeof(with_digest), "r.io:443/app@%s", d);
    ref_ok(with_digest, "r.io:443", "app", "", d);
    snprintf(with_digest, sizeof(with_digest), "r.io/app:1@%s", d);
    ref_ok(with_digest, "r.io", "app", "1", d);

    ref_bad("", "empty");
    ref_bad("127.0.0.1:5000/Tools/busybox:1", "lower-case");
    ref_bad("r.io/app:", "bad tag");
    ref_bad("r.io/app:-x", "bad tag");
    ref_bad("r.io/a//b", "lower-case");
    ref_bad("r.io/a_-b", "lower-case");
    ref_bad("r.io/app@sha256:abc", "digest");
    ref_bad("r.io/app@md5:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "digest");
    ref_bad("r.io:99999/app", "registry host");
    ref_bad("r.io:/app", "registry host");
    ref_bad("-r.io/app", "registry host");
    ref_bad("r.io/app/", "lower-case");
}

static void test_ref_transport(void **state)
{
    (void)state;
    struct gt_image_ref r;
    char buf[600];
    assert_int_equal(gt_image_ref_parse("127.0.0.1:5000/tools/bb:1.0", &r, NULL), 0);
    gt_image_ref_transport(&r, NULL, buf, sizeof(buf));
    assert_string_equal(buf, "docker://127.0.0.1:5000/tools/bb:1.0");
    gt_image_ref_transport(&r, "sha256:ab", buf, sizeof(buf));
    assert_string_equal(buf, "docker://127.0.0.1:5000/tools/bb@sha256:ab");
}

/* ---- the process ---- */

static json_t *image_config(void)
{
    json_t *c = json_loads("{\"config\":{\"Entrypoint\":[\"/entry\",\"-e\"],"
                           "\"Cmd\":[\"serve\",\"--port\",\"80\"],"
                           "\"Env\":[\"PATH=/opt/bin:/bin\",\"LANG=C\",\"A=image\"],"
                           "\"WorkingDir\":\"/srv\",\"User\":\"0\"}}",
                           0, NULL);
    assert_non_null(c);
    return c;
}

static void assert_strv(char **v, size_t n, const char *const *want, size_t n_want)
{
    assert_int_equal(n, n_want);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(v[i], want[i]);
    }
    assert_null(v[n]);
}

static const char *proc_env(const struct gt_image_proc *p, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < p->n_env; i++) {
        if (!strncmp(p->env[i], name, n) && p->env[i][n] == '=') {
            return p->env[i] + n + 1;
        }
    }
    return NULL;
}

static void test_merge_entrypoint_cmd(void **state)
{
    (void)state;
    json_t *c = image_config();
    char *cmd[] = {"python", "-u"}, *args[] = {"train.py"};
    struct gt_image_proc p;
    /* neither: Entrypoint + Cmd */
    struct gt_image_task t = {0};
    assert_int_equal(gt_image_process_merge(c, &t, &p, NULL), 0);
    static const char *const both[] = {"/entry", "-e", "serve", "--port", "80"};
    assert_strv(p.argv, p.n_argv, both, 5);
    gt_image_proc_fini(&p);
    /* args only: Entrypoint + args */
    t.args = args;
    t.n_args = 1;
    assert_int_equal(gt_image_process_merge(c, &t, &p, NULL), 0);
    static const char *const ep_args[] = {"/entry", "-e", "train.py"};
    assert_strv(p.argv, p.n_argv, ep_args, 3);
    gt_image_proc_fini(&p);
    /* command and args: both from the template, the image's Cmd dropped */
    t.command = cmd;
    t.n_command = 2;
    assert_int_equal(gt_image_process_merge(c, &t, &p, NULL), 0);
    static const char *const cmd_args[] = {"python", "-u", "train.py"};
    assert_strv(p.argv, p.n_argv, cmd_args, 3);
    gt_image_proc_fini(&p);
    /* command only: Cmd dropped too */
    t.n_args = 0;
    assert_int_equal(gt_image_process_merge(c, &t, &p, NULL), 0);
    static const char *const cmd_only[] = {"python", "-u"};
    assert_strv(p.argv, p.n_argv, cmd_only, 2);
    gt_image_proc_fini(&p);
    json_decref(c);
    /* nothing anywhere */
    json_t *empty = json_loads("{\"config\":{}}", 0, NULL);
    struct gt_err err = {0};
    struct gt_image_task none = {0};
    assert_int_equal(gt_image_process_merge(empty, &none, &p, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "no command"));
    json_decref(empty);
}

static void test_merge_env_cwd(void **state)
{
    (void)state;
    json_t *c = image_config();
    char *env[] = {"A=task", "CUDA_VISIBLE_DEVICES=3,5", "NVIDIA_VISIBLE_DEVICES=GPU-a,GPU-b",
                   "B=2"};
    struct gt_image_task t = {.env = env, .n_env = 4};
    struct gt_image_proc p;
    assert_int_equal(gt_image_process_merge(c, &t, &p, NULL), 0);
    assert_string_equal(proc_env(&p, "PATH"), "/opt/bin:/bin"); /* the image's */
    assert_string_equal(proc_env(&p, "LANG"), "C");
    assert_string_equal(proc_env(&p, "A"), "task"); /* the task's wins */
    assert_string_equal(proc_env(&p, "B"), "2");
    assert_string_equal(proc_env(&p, "CUDA_VISIBLE_DEVICES"), "0,1");
    assert_string_equal(proc_env(&p, "NVIDIA_VISIBLE_DEVICES"), "GPU-a,GPU-b");
    assert_int_equal(p.n_env, 6);
    assert_string_equal(p.cwd, "/srv"); /* the image's WorkingDir */
    assert_false(p.mount_work);
    gt_image_proc_fini(&p);
    t.working_dir = "/data";
    assert_int_equal(gt_image_process_merge(c, &t, &p, NULL), 0);
    assert_string_equal(p.cwd, "/data");
    gt_image_proc_fini(&p);
    json_decref(c);

    /* no WorkingDir, no PATH, no GPUs: the task's working directory, a default PATH */
    json_t *bare = json_loads("{\"config\":{\"Cmd\":[\"sh\"]}}", 0, NULL);
    char *env2[] = {"CUDA_VISIBLE_DEVICES="};
    struct gt_image_task t2 = {.env = env2, .n_env = 1};
    assert_int_equal(gt_image_process_merge(bare, &t2, &p, NULL), 0);
    assert_string_equal(p.cwd, GT_IMAGE_WORK_DIR);
    assert_true(p.mount_work);
    assert_string_equal(proc_env(&p, "CUDA_VISIBLE_DEVICES"), "");
    assert_string_equal(proc_env(&p, "PATH"), GT_GANTLET_DEFAULT_PATH);
    gt_image_proc_fini(&p);
    json_decref(bare);
}

/* ---- GC ---- */

static void test_gc_threshold_parse(void **state)
{
    (void)state;
    int64_t bytes;
    int pct;
    assert_int_equal(gt_image_gc_threshold_parse("80%", &bytes, &pct, NULL), 0);
    assert_int_equal(bytes, 0);
    assert_int_equal(pct, 80);
    assert_int_equal(gt_image_gc_threshold_parse("10Gi", &bytes, &pct, NULL), 0);
    assert_int_equal(bytes, 10LL << 30);
    assert_int_equal(pct, 0);
    assert_int_equal(gt_image_gc_threshold_parse("1000", &bytes, &pct, NULL), 0);
    assert_int_equal(bytes, 1000);
    struct gt_err err = {0};
    assert_int_equal(gt_image_gc_threshold_parse("101%", &bytes, &pct, &err), GT_EINVAL);
    assert_int_equal(gt_image_gc_threshold_parse("0%", &bytes, &pct, NULL), GT_EINVAL);
    assert_int_equal(gt_image_gc_threshold_parse("x%", &bytes, &pct, NULL), GT_EINVAL);
    assert_int_equal(gt_image_gc_threshold_parse("lots", &bytes, &pct, NULL), GT_EINVAL);
    assert_int_equal(gt_image_gc_threshold_parse("0", &bytes, &pct, NULL), GT_EINVAL);
}

static void test_gc_plan(void **state)
{
    (void)state;
    struct gt_image_entry e[] = {
        {"aa", 100, 5000, false}, /* newest */
        {"bb", 300, 1000, true},  /* oldest, but in use */
        {"cc", 200, 2000, false},
        {"dd", 50, 3000, false},
    };
    size_t v[4];
    /* under the limit: nothing */
    assert_int_equal(gt_image_gc_plan(e, 4, 650, 650, v), 0);
    /* 100 over: the least recently used unused one (cc, 200) is enough */
    assert_int_equal(gt_image_gc_plan(e, 4, 750, 650, v), 1);
    assert_int_equal(v[0], 2);
    /* 300 over: cc, then dd, then aa; bb never */
    assert_int_equal(gt_image_gc_plan(e, 4, 950, 650, v), 3);
    assert_int_equal(v[0], 2);
    assert_int_equal(v[1], 3);
    assert_int_equal(v[2], 0);
    /* everything unused goes, still over: bb stays */
    assert_int_equal(gt_image_gc_plan(e, 4, 10000, 0, v), 3);
    /* equal last use: by digest, for a stable order */
    struct gt_image_entry tie[] = {{"bb", 10, 7, false}, {"aa", 10, 7, false}};
    assert_int_equal(gt_image_gc_plan(tie, 2, 20, 10, v), 1);
    assert_int_equal(v[0], 1);
}

/* ---- the spec ---- */

static struct gt_api_task *image_task(const char *tmpl_extra)
{
    char *text = gt_xasprintf(
        "{\"metadata\":{\"name\":\"t-worker-0\",\"project\":\"p\",\"uid\":\"u-9\","
        "\"creator\":{\"user\":\"alice\",\"uid\":1001}},"
        "\"spec\":{\"job\":\"t\",\"replicaType\":\"Worker\",\"replicaIndex\":0,"
        "\"gpus\":[{\"index\":3,\"uuid\":\"GPU-c\"}],"
        "\"template\":{\"image\":\"127.0.0.1:5000/tools/bb:1.0\"%s,"
        "\"resources\":{\"limits\":{\"memory\":\"64Mi\"}}}},\"status\":{\"phase\":\"Bound\"}}",
        tmpl_extra);
    json_t *t = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(t);
    struct gt_api_task *task = gt_api_task_new(t);
    json_decref(t);
    return task;
}

static void test_spec_image(void **state)
{
    (void)state;
    char *insecure[] = {"127.0.0.1:5000"};
    struct gt_task_image_params ip = {.dir = "/var/lib/gantlet/images",
                                      .runtime = "runc",
                                      .runtime_root = "/var/lib/gantlet/oci",
                                      .insecure = insecure,
                                      .n_insecure = 1,
                                      .gc_threshold_percent = 80};
    struct gt_task_spec_params p = {.state_dir = "/var/lib/gantlet/tasks/u-9", .image = &ip};
    struct gt_api_task *task = image_task(",\"args\":[\"-c\",\"echo\"],\"workingDir\":\"/w\"");
    struct gt_shim_spec spec;
    struct gt_err err = {0};
    assert_int_equal(gt_task_spec_build(task, &p, &spec, &err), 0);
    assert_non_null(spec.image);
    assert_int_equal(spec.image->n_command, 0);
    assert_int_equal(spec.image->n_args, 2);
    assert_string_equal(spec.image->working_dir, "/w");
    assert_string_equal(spec.image->runtime, "runc");
    assert_int_equal(spec.image->gc_threshold_percent, 80);
    for (size_t i = 0; i < spec.n_env; i++) {
        assert_true(strncmp(spec.env[i], "PATH=", 5) != 0); /* the image's PATH applies */
    }
    /* spec.json round trip */
    char *text = gt_shim_spec_to_json(&spec);
    struct gt_shim_spec back;
    assert_int_equal(gt_shim_spec_parse(text, strlen(text), &back, &err), 0);
    char *again = gt_shim_spec_to_json(&back);
    assert_string_equal(text, again);
    assert_int_equal(back.n_argv, 2);
    assert_string_equal(back.image->insecure[0], "127.0.0.1:5000");
    free(again);
    free(text);
    gt_shim_spec_fini(&back);
    gt_shim_spec_fini(&spec);
    gt_api_task_free(task);

    /* a node without image parameters refuses */
    p.image = NULL;
    task = image_task("");
    assert_int_equal(gt_task_spec_build(task, &p, &spec, &err), GT_EINVAL);
    gt_api_task_free(task);
}

static void test_spec_image_parse_rejects(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "\"image\":{\"ref\":\"r/a\",\"dir\":\"/i\",\"runtime\":\"docker\",\"runtimeRoot\":\"/o\"}",
        "\"image\":{\"ref\":\"r/a\",\"dir\":\"i\",\"runtime\":\"runc\",\"runtimeRoot\":\"/o\"}",
        "\"image\":{\"ref\":\"r/a\",\"dir\":\"/i\",\"runtime\":\"runc\",\"runtimeRoot\":\"/o\","
        "\"x\":1}",
        "\"image\":{\"dir\":\"/i\",\"runtime\":\"runc\",\"runtimeRoot\":\"/o\"}",
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(bad); i++) {
        char *text =
            gt_xasprintf("{\"cwd\":\"/\",\"uid\":1,\"gid\":1,\"namespaces\":[\"pid\",\"mount\"],"
                         "\"cgroup\":{\"path\":\"gantry/x\"},\"log\":{\"dir\":\"/l\"},%s}",
                         bad[i]);
        struct gt_shim_spec spec;
        struct gt_err err = {0};
        assert_int_equal(gt_shim_spec_parse(text, strlen(text), &spec, &err), GT_EINVAL);
        assert_non_null(strstr(err.msg, "image"));
        free(text);
    }
}

/* ---- the OCI config ---- */

static void test_oci_config(void **state)
{
    (void)state;
    struct gt_shim_spec spec = {0};
    struct gt_shim_volume vol = {
        .root = "/st", .path = "ds", .mount_path = "/data", .read_only = true};
    spec.uid = 1001;
    spec.gid = 1001;
    spec.cwd = "/state/work";
    spec.hostname = "t-worker-0";
    spec.namespaces = GT_NS_PID | GT_NS_MOUNT | GT_NS_UTS;
    spec.cgroup_path = "gantry/u-9";
    spec.limits.memory_bytes = 64 << 20;
    spec.limits.cpu_milli = 1500;
    spec.limits.pids_max = 100;
    spec.volumes = &vol;
    spec.n_volumes = 1;
    char *argv[] = {"sh", NULL}, *env[] = {"A=1", NULL};
    struct gt_image_proc proc = {.argv = argv,
                                 .n_argv = 1,
                                 .env = env,
                                 .n_env = 1,
                                 .cwd = GT_IMAGE_WORK_DIR,
                                 .mount_work = true};
    const char *sources[] = {"/st/ds"};
    struct gt_oci_paths paths = {.rootfs = "/state/rootfs",
                                 .hosts = "/state/hosts",
                                 .volume_sources = sources,
                                 .dev_dir = "/nonexistent"};
    json_t *base = json_loads("{\"process\":{\"terminal\":true,\"rlimits\":[],\"capabilities\":"
                              "{\"bounding\":[\"CAP_KILL\"],\"effective\":[\"CAP_KILL\"]}},"
                              "\"mounts\":[{\"destination\":\"/proc\",\"type\":\"proc\"}],"
                              "\"linux\":{\"namespaces\":[{\"type\":\"network\"}],"
                              "\"maskedPaths\":[\"/proc/kcore\"]}}",
                              0, NULL);
    json_t *c = gt_oci_config_build(base, &spec, &proc, &paths);
    json_t *p = json_object_get(c, "process");
    assert_true(json_is_false(json_object_get(p, "terminal")));
    assert_int_equal(json_integer_value(gt_json_path(p, "user.uid")), 1001);
    assert_true(json_is_true(json_object_get(p, "noNewPrivileges")));
    assert_null(json_object_get(p, "rlimits"));
    assert_null(gt_json_path(p, "capabilities.effective"));
    assert_string_equal(json_string_value(json_object_get(p, "cwd")), GT_IMAGE_WORK_DIR);
    assert_string_equal(json_string_value(gt_json_path(c, "root.path")), "/state/rootfs");
    assert_string_equal(json_string_value(json_object_get(c, "hostname")), "t-worker-0");
    json_t *lnx = json_object_get(c, "linux");
    assert_string_equal(json_string_value(json_object_get(lnx, "cgroupsPath")), "/gantry/u-9");
    assert_int_equal(json_array_size(json_object_get(lnx, "namespaces")), 3); /* no network */
    assert_int_equal(json_integer_value(gt_json_path(lnx, "resources.memory.limit")), 64 << 20);
    assert_int_equal(json_integer_value(gt_json_path(lnx, "resources.cpu.quota")), 150000);
    assert_int_equal(json_integer_value(gt_json_path(lnx, "resources.pids.limit")), 100);
    assert_int_equal(json_array_size(gt_json_path(lnx, "resources.devices")), 1); /* deny all */
    assert_non_null(json_object_get(lnx, "maskedPaths"));
    json_t *mounts = json_object_get(c, "mounts");
    assert_int_equal(json_array_size(mounts), 4); /* proc, volume, hosts, work */
    json_t *v = json_array_get(mounts, 1);
    assert_string_equal(json_string_value(json_object_get(v, "source")), "/st/ds");
    assert_string_equal(json_string_value(json_object_get(v, "destination")), "/data");
    assert_string_equal(json_string_value(json_array_get(json_object_get(v, "options"), 3)), "ro");
    assert_string_equal(json_string_value(gt_json_path(json_array_get(mounts, 2), "destination")),
                        "/etc/hosts");
    assert_string_equal(json_string_value(gt_json_path(json_array_get(mounts, 3), "source")),
                        "/state/work");
    assert_int_equal(json_array_size(json_object_get(p, "args")), 1); /* no init: as given */
    json_decref(c);
    /* with an init: the process runs under it, its binary bind-mounted read-only */
    paths.init = "/usr/lib/gantry/gantry-shim";
    c = gt_oci_config_build(base, &spec, &proc, &paths);
    json_t *args = gt_json_path(c, "process.args");
    assert_int_equal(json_array_size(args), 4);
    const char *want[] = {GT_OCI_INIT_PATH, "--init-exec", "3", "sh"};
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(json_string_value(json_array_get(args, i)), want[i]);
    }
    mounts = json_object_get(c, "mounts");
    json_t *m = json_array_get(mounts, json_array_size(mounts) - 1);
    assert_string_equal(json_string_value(json_object_get(m, "source")), paths.init);
    assert_string_equal(json_string_value(json_object_get(m, "destination")), GT_OCI_INIT_PATH);
    assert_string_equal(json_string_value(json_array_get(json_object_get(m, "options"), 3)), "ro");
    json_decref(c);
    json_decref(base);
}

static void test_tool_message(void **state)
{
    (void)state;
    char buf[200];
    gt_image_tool_message("time=\"x\" level=fatal msg=\"Error reading manifest nope: manifest "
                          "unknown: \\\"quoted\\\"\"\n",
                          buf, sizeof(buf));
    assert_string_equal(buf, "Error reading manifest nope: manifest unknown: \"quoted\"");
    /* an unreachable registry is said so, not as a name that did not parse */
    gt_image_tool_message(
        "time=\"x\" level=fatal msg=\"Error parsing image name \\\"docker://docker.io/a/b:1\\\": "
        "pinging container registry registry-1.docker.io: Get \\\"https://registry-1.docker.io/"
        "v2/\\\": dial tcp: lookup registry-1.docker.io: no such host\"\n",
        buf, sizeof(buf));
    assert_string_equal(buf, "cannot reach registry registry-1.docker.io: Get "
                             "\"https://registry-1.docker.io/v2/\": dial tcp: lookup "
                             "registry-1.docker.io: no such host");
    gt_image_tool_message("first\nsecond line\n\n", buf, sizeof(buf));
    assert_string_equal(buf, "second line");
    gt_image_tool_message("", buf, sizeof(buf));
    assert_string_equal(buf, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_parse),
        cmocka_unit_test(test_ref_transport),
        cmocka_unit_test(test_merge_entrypoint_cmd),
        cmocka_unit_test(test_merge_env_cwd),
        cmocka_unit_test(test_gc_threshold_parse),
        cmocka_unit_test(test_gc_plan),
        cmocka_unit_test(test_spec_image),
        cmocka_unit_test(test_spec_image_parse_rejects),
        cmocka_unit_test(test_oci_config),
        cmocka_unit_test(test_tool_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
