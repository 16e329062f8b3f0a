/*
 * The gantry client's pure parts: kubectl-style ages, table layout, the
 * per-kind columns of `get`, kind names and API paths, configuration
 * precedence (flag > environment > file) and the atomic config writer,
 * Status-message extraction, the describe layout, and command-line usage
 * errors (no server needed).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/cli.h"
#include "cli/cli_int.h"

/* 2026-11-29T20:50:44Z in ms since the epoch. */
#define T0_MS INT64_C(1795985444000)
#define T0 "2026-11-29T20:50:44Z"

static json_t *json_of(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    if (!v) {
        fail_msg("bad test JSON: %s: %s", jerr.text, text);
    }
    return v;
}

/* ---- ages ---- */

static void test_duration_matches_kubectl(void **state)
{
    (void)state;
    static const struct {
        int64_t s;
        const char *want;
    } cases[] = {
        {-2, "<invalid>"},
        {0, "0s"},
        {5, "5s"},
        {119, "119s"},
        {120, "2m"},
        {190, "3m10s"},
        {599, "9m59s"},
        {600, "10m"},
        {3 * 3600 - 1, "179m"},
        {3 * 3600, "3h"},
        {5 * 3600 + 30 * 60, "5h30m"},
        {8 * 3600, "8h"},
        {47 * 3600 + 59 * 60, "47h"},
        {48 * 3600, "2d"},
        {52 * 3600, "2d4h"},
        {8 * 86400, "8d"},
        {729 * 86400, "729d"},
        {730 * 86400, "2y"},
        {740 * 86400, "2y10d"},
        {INT64_C(8) * 365 * 86400, "8y"},
    };
    char buf[32];
    for (size_t i = 0; i < GT_ARRAY_LEN(cases); i++) {
        assert_string_equal(gt_cli_format_duration(cases[i].s * 1000, buf, sizeof(buf)),
                            cases[i].want);
    }
    /* Clock skew under two seconds reads as now, as in kubectl. */
    assert_string_equal(gt_cli_format_duration(-1500, buf, sizeof(buf)), "0s");
    assert_string_equal(gt_cli_format_duration(1999, buf, sizeof(buf)), "1s");
}

static void test_age_of_timestamp(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(gt_cli_format_age(T0, T0_MS + 65000, buf, sizeof(buf)), "65s");
    assert_string_equal(
        gt_cli_format_age("2026-11-29T20:50:44.500Z", T0_MS + 190500, buf, sizeof(buf)), "3m10s");
    assert_string_equal(gt_cli_format_age(NULL, T0_MS, buf, sizeof(buf)), "<unknown>");
    assert_string_equal(gt_cli_format_age("yesterday", T0_MS, buf, sizeof(buf)), "<unknown>");
}

/* ---- tables ---- */

static void test_table_layout(void **state)
{
    (void)state;
    static const char *const headers[] = {"NAME", "STATUS", "AGE"};
    static const char *const r1[] = {"train", "Running", "5s"};
    static const char *const r2[] = {"a", NULL, "3m10s"};
    struct gt_cli_table t;
    gt_cli_table_init(&t, 3, headers);
    gt_cli_table_add(&t, r1);
    gt_cli_table_add(&t, r2);
    struct gt_buf b;
    gt_buf_init(&b);
    gt_cli_table_render(&t, true, &b);
    assert_string_equal(b.data, "NAME    STATUS    AGE\n"
                                "train   Running   5s\n"
                                "a       <none>    3m10s\n");
    /* Rows printed later line up with those before, though fewer are kept. */
    static const char *const r3[] = {"b", "Ok", "1s"};
    gt_cli_table_clear(&t);
    gt_cli_table_add(&t, r3);
    gt_buf_reset(&b);
    gt_cli_table_render(&t, false, &b);
    assert_string_equal(b.data, "b       Ok        1s\n");
    gt_buf_fini(&b);
    gt_cli_table_fini(&t);
}

static void test_table_min_width(void **state)
{
    (void)state;
    static const char *const headers[] = {"A", "B"};
    static const char *const row[] = {"x", "y"};
    struct gt_cli_table t;
    gt_cli_table_init(&t, 2, headers);
    gt_cli_table_add(&t, row);
    struct gt_buf b;
    gt_buf_init(&b);
    gt_cli_table_render(&t, true, &b);
    assert_string_equal(b.data, "A     B\nx     y\n");
    gt_buf_fini(&b);
    gt_cli_table_fini(&t);
}

/* ---- columns of get ---- */

static char *render_kind(enum gt_kind kind, bool wide, bool with_project, const char *items_json)
{
    const struct gt_kind_info *k = gt_kind_get(kind);
    struct gt_cli_columns_opts opts = {.wide = wide, .with_project = with_project};
    struct gt_cli_table t;
    gt_cli_columns_init(&t, k, &opts);
    json_t *items = json_of(items_json);
    size_t i;
    json_t *obj;
    json_array_foreach(items, i, obj)
    {
        gt_cli_columns_add(&t, k, &opts, obj, T0_MS + 190000);
    }
    struct gt_buf b;
    gt_buf_init(&b);
    gt_cli_table_render(&t, true, &b);
    gt_cli_table_fini(&t);
    json_decref(items);
    return gt_buf_take(&b);
}

static const char jobs_json[] =
    "[{\"kind\":\"Job\",\"metadata\":{\"name\":\"resnet-train\",\"project\":\"detection\","
    "\"creationTimestamp\":\"" T0 "\"},"
    "\"spec\":{\"replicaSpecs\":{"
    "\"Master\":{\"replicas\":1,\"template\":{\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}"
    "}}},"
    "\"Worker\":{\"replicas\":2,\"template\":{\"resources\":{\"requests\":"
    "{\"gantry.dev/gpu-milli\":\"250\"}}}}},"
    "\"runPolicy\":{\"schedulingPolicy\":{\"queue\":\"vision\",\"priorityClass\":\"high\"}}},"
    "\"status\":{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\"},"
    "{\"type\":\"Queued\",\"status\":\"True\",\"reason\":\"Queued\","
    "\"message\":\"Quota: department vision needs 2 GPUs\"}]}},"
    "{\"kind\":\"Job\",\"metadata\":{\"name\":\"x\",\"project\":\"nlp\"},"
    "\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":1}}}}]";

static void test_columns_jobs(void **state)
{
    (void)state;
    char *s = render_kind(GT_KIND_JOB, false, false, jobs_json);
    /* REASON: the short reason of the scheduler's message, as squeue's */
    assert_string_equal(s, "NAME           STATUS   REASON   REPLICAS   AGE\n"
                           "resnet-train   Queued   Quota    3          3m10s\n"
                           "x              <none>   <none>   1          <unknown>\n");
    free(s);
    s = render_kind(GT_KIND_JOB, true, true, jobs_json);
    assert_string_equal(
        s,
        "PROJECT     NAME           STATUS   REASON   REPLICAS   GPUS   PRIORITY   QUEUE    AGE\n"
        "detection   resnet-train   Queued   Quota    3          1.5    high       vision   "
        "3m10s\n"
        "nlp         x              <none>   <none>   1          0      <none>     <none>   "
        "<unknown>\n");
    free(s);
}

/* STATUS follows the condition that is True now: a job that restarted and
 * runs again is Running, though Restarting (False) is listed after it. */
static void test_columns_job_restarted(void **state)
{
    (void)state;
    char *s =
        render_kind(GT_KIND_JOB, false, false,
                    "[{\"metadata\":{\"name\":\"r\",\"creationTimestamp\":\"" T0 "\"},"
                    "\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":1}}},"
                    "\"status\":{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\"},"
                    "{\"type\":\"Running\",\"status\":\"True\",\"reason\":\"Running\"},"
                    "{\"type\":\"Restarting\",\"status\":\"False\",\"reason\":\"TaskFailed\"}]}}]");
    assert_string_equal(s, "NAME   STATUS    REASON   REPLICAS   AGE\n"
                           "r      Running   <none>   1          3m10s\n");
    free(s);
}

/* An Inadmissible job (the condition before Queued, as gantryd writes
 * it): STATUS stays Queued, REASON names the verdict. */
static void test_columns_inadmissible(void **state)
{
    (void)state;
    char *s = render_kind(
        GT_KIND_JOB, false, false,
        "[{\"metadata\":{\"name\":\"big\",\"creationTimestamp\":\"" T0 "\"},"
        "\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":2}}},"
        "\"status\":{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\"},"
        "{\"type\":\"Inadmissible\",\"status\":\"True\",\"reason\":\"ExceedsDepartmentLimit\"},"
        "{\"type\":\"Queued\",\"status\":\"True\",\"reason\":\"Queued\",\"message\":"
        "\"Inadmissible: ExceedsDepartmentLimit: the gang of 2 tasks needs 8\"}]}}]");
    assert_string_equal(s, "NAME   STATUS   REASON         REPLICAS   AGE\n"
                           "big    Queued   Inadmissible   2          3m10s\n");
    free(s);
}

/* GPUS counts what a container gets by api's one defaulting rule
 * (gt_api_resources_effective): GPUs asked for only as requests are also
 * its limit, whatever else the limits name. */
static void test_columns_gpus_defaulted(void **state)
{
    (void)state;
    char *s = render_kind(
        GT_KIND_JOB, true, false,
        "[{\"metadata\":{\"name\":\"j\",\"creationTimestamp\":\"" T0 "\"},"
        "\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":3,\"template\":{\"resources\":"
        "{\"requests\":{\"nvidia.com/gpu\":2},\"limits\":{\"cpu\":\"1\"}}}}}}}]");
    assert_string_equal(s,
                        "NAME   STATUS   REASON   REPLICAS   GPUS   PRIORITY   QUEUE    AGE\n"
                        "j      <none>   <none>   3          6      <none>     <none>   3m10s\n");
    free(s);
    s = render_kind(GT_KIND_TASK, false, false,
                    "[{\"metadata\":{\"name\":\"j-worker-0\",\"creationTimestamp\":\"" T0
                    "\"},\"spec\":{\"template\":{\"resources\":{\"requests\":"
                    "{\"gantry.dev/gpu-milli\":250},\"limits\":{\"memory\":\"1Gi\"}}}}}]");
    assert_string_equal(s, "NAME         PHASE     NODE     GPUS   AGE\n"
                           "j-worker-0   Pending   <none>   0.25   3m10s\n");
    free(s);
}

static void test_columns_cluster_kinds(void **state)
{
    (void)state;
    char *s = render_kind(
        GT_KIND_DEPARTMENT, false, true,
        "[{\"metadata\":{\"name\":\"vision\",\"creationTimestamp\":\"" T0 "\"},"
        "\"spec\":{\"quota\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"64\",\"memory\":\"512Gi\"},"
        "\"limit\":{\"nvidia.com/gpu\":\"16\"}},"
        "\"status\":{\"used\":{\"nvidia.com/gpu\":\"10\"},\"borrowed\":{\"nvidia.com/"
        "gpu\":\"2\"}}},"
        "{\"metadata\":{\"name\":\"nlp\",\"creationTimestamp\":\"" T0 "\"},"
        "\"spec\":{\"quota\":{\"nvidia.com/gpu\":4}}}]");
    /* -A adds nothing to a cluster-scoped kind; an unnamed limit is the quota. */
    assert_string_equal(s,
                        "NAME     GPU QUOTA   GPU LIMIT   GPU USED   GPU BORROWED   CPU   MEMORY   "
                        "AGE\n"
                        "vision   8           16          10         2              64    512Gi    "
                        "3m10s\n"
                        "nlp      4           4           0          0              0     0        "
                        "3m10s\n");
    free(s);

    s = render_kind(GT_KIND_PROJECT, false, false,
                    "[{\"metadata\":{\"name\":\"detection\",\"creationTimestamp\":\"" T0 "\"},"
                    "\"spec\":{\"department\":\"vision\",\"members\":[{\"user\":\"a\"},"
                    "{\"user\":\"b\"}]}}]");
    assert_string_equal(s, "NAME        DEPARTMENT   MEMBERS   AGE\n"
                           "detection   vision       2         3m10s\n");
    free(s);

    s = render_kind(GT_KIND_PRIORITYCLASS, false, false,
                    "[{\"metadata\":{\"name\":\"batch-low\",\"creationTimestamp\":\"" T0 "\"},"
                    "\"value\":10,\"preemptionPolicy\":\"Never\",\"globalDefault\":true},"
                    "{\"metadata\":{\"name\":\"high\",\"creationTimestamp\":\"" T0 "\"},"
                    "\"value\":1000}]");
    assert_string_equal(s, "NAME        VALUE   GLOBAL-DEFAULT   PREEMPTION             AGE\n"
                           "batch-low   10      true             Never                  3m10s\n"
                           "high        1000    false            PreemptLowerPriority   3m10s\n");
    free(s);
}

static void test_columns_nodes_tasks_events(void **state)
{
    (void)state;
    char *s = render_kind(
        GT_KIND_NODE, false, false,
        "[{\"metadata\":{\"name\":\"gpu-1\",\"creationTimestamp\":\"" T0 "\"},"
        "\"spec\":{\"unschedulable\":true},"
        "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"96\",\"memory\":\"1Ti\"},"
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},"
        "{\"metadata\":{\"name\":\"gpu-2\",\"creationTimestamp\":\"" T0 "\"},"
        "\"status\":{\"gpus\":[{\"index\":0},{\"index\":1}],"
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}]");
    assert_string_equal(s, "NAME    STATUS                     GPUS   CPU      MEMORY   AGE\n"
                           "gpu-1   Ready,SchedulingDisabled   8      96       1Ti      3m10s\n"
                           "gpu-2   NotReady                   2      <none>   <none>   3m10s\n");
    free(s);

    s = render_kind(
        GT_KIND_TASK, false, false,
        "[{\"metadata\":{\"name\":\"train-worker-0\",\"creationTimestamp\":\"" T0
        "\"},\"spec\":{\"nodeName\":\"gpu-1\",\"gpus\":[{\"index\":0},"
        "{\"index\":1,\"milli\":500}]},\"status\":{\"phase\":\"Running\"}},"
        "{\"metadata\":{\"name\":\"train-worker-1\",\"creationTimestamp\":\"" T0
        "\"},\"spec\":{\"template\":{\"resources\":{\"limits\":{\"nvidia.com/gpu\":2}}}}},"
        "{\"metadata\":{\"name\":\"cpu-worker-0\",\"creationTimestamp\":\"" T0 "\"},\"spec\":{}}]");
    assert_string_equal(s, "NAME             PHASE     NODE     GPUS   AGE\n"
                           "train-worker-0   Running   gpu-1    1.5    3m10s\n"
                           "train-worker-1   Pending   <none>   2      3m10s\n"
                           "cpu-worker-0     Pending   <none>   0      3m10s\n");
    free(s);

    s = render_kind(GT_KIND_EVENT, false, false,
                    "[{\"metadata\":{\"name\":\"e1\"},\"type\":\"Warning\",\"reason\":"
                    "\"FailedScheduling\",\"message\":\"0/3 nodes have 8 free GPUs\","
                    "\"involvedObject\":{\"kind\":\"Job\",\"name\":\"train\"},"
                    "\"lastTimestamp\":\"" T0 "\"}]");
    assert_string_equal(s, "LAST SEEN   TYPE      REASON             OBJECT      MESSAGE\n"
                           "3m10s       Warning   FailedScheduling   job/train   0/3 nodes have 8 "
                           "free GPUs\n");
    free(s);
}

/* ---- kinds and paths ---- */

static void test_kind_lookup(void **state)
{
    (void)state;
    static const struct {
        const char *word;
        enum gt_kind kind;
    } cases[] = {
        {"jobs", GT_KIND_JOB},
        {"job", GT_KIND_JOB},
        {"Job", GT_KIND_JOB},
        {"JOBS", GT_KIND_JOB},
        {"pc", GT_KIND_PRIORITYCLASS},
        {"priorityclasses", GT_KIND_PRIORITYCLASS},
        {"no", GT_KIND_NODE},
        {"dept", GT_KIND_DEPARTMENT},
        {"proj", GT_KIND_PROJECT},
        {"ev", GT_KIND_EVENT},
        {"task", GT_KIND_TASK},
        {"pods", GT_KIND_TASK},
        {"tfjobs", GT_KIND_JOB},
        {"pytorchjobs", GT_KIND_JOB},
        {"mpijobs", GT_KIND_JOB},
        {"job.gantry.dev", GT_KIND_JOB},
        {"tfjobs.kubeflow.org", GT_KIND_JOB},
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(cases); i++) {
        const struct gt_kind_info *k = gt_cli_kind_lookup(cases[i].word);
        assert_non_null(k);
        assert_int_equal(k->kind, cases[i].kind);
    }
    assert_null(gt_cli_kind_lookup("pets"));
    assert_null(gt_cli_kind_lookup(".gantry.dev"));
    assert_null(gt_cli_kind_lookup(""));
    /* KIND/NAME as -o name prints it */
    char *kw = NULL;
    const char *name = NULL;
    assert_int_equal(gt_cli_kind_ref_split("job.gantry.dev/x", &kw, &name), 1);
    assert_string_equal(kw, "job.gantry.dev");
    assert_string_equal(name, "x");
    free(kw);
    assert_int_equal(gt_cli_kind_ref_split("jobs", &kw, &name), 0);
    assert_int_equal(gt_cli_kind_ref_split("/x", &kw, &name), -1);
    assert_int_equal(gt_cli_kind_ref_split("a/b/c", &kw, &name), -1);
}

/* kubectl's JSONPath as -o jsonpath, custom-columns and --sort-by use it. */
static void expect_jsonpath(const char *tmpl, const char *json, const char *want)
{
    json_t *root = json_of(json);
    struct gt_buf b;
    gt_buf_init(&b);
    struct gt_err err = {0};
    assert_int_equal(gt_cli_jsonpath_render(tmpl, root, &b, &err), 0);
    assert_string_equal(b.data ? b.data : "", want);
    gt_buf_fini(&b);
    json_decref(root);
}

static void test_jsonpath(void **state)
{
    (void)state;
    static const char list[] =
        "{\"items\":[{\"metadata\":{\"name\":\"a\",\"labels\":{\"t\":\"x\"}},\"n\":2},"
        "{\"metadata\":{\"name\":\"b\"},\"n\":1.5,\"v\":[1,{\"k\":true}]}]}";
    expect_jsonpath("{.items[*].metadata.name}", list, "a b");
    expect_jsonpath("{range .items[*]}{.metadata.name}={.n}{\"\\n\"}{end}", list, "a=2\nb=1.5\n");
    expect_jsonpath("first: {.items[0].metadata.name}, last: {$.items[-1].metadata.name}", list,
                    "first: a, last: b");
    expect_jsonpath("{.items[1].v}", list, "[1,{\"k\":true}]");
    expect_jsonpath("{.items[0].metadata.labels['t']}", list, "x");
    expect_jsonpath("{.items[5].metadata.name}{.nothing}", list, "");
    expect_jsonpath("{.items[0].metadata}", list, "{\"name\":\"a\",\"labels\":{\"t\":\"x\"}}");
    json_t *root = json_of(list);
    struct gt_buf b;
    gt_buf_init(&b);
    struct gt_err err = {0};
    assert_int_equal(gt_cli_jsonpath_render("{.items[?(@.n>1)]}", root, &b, &err), GT_EBADREQ);
    assert_non_null(strstr(err.msg, "is not supported"));
    gt_err_clear(&err);
    assert_int_equal(gt_cli_jsonpath_render("{range .items[*]}x", root, &b, &err), GT_EBADREQ);
    gt_err_clear(&err);
    assert_int_equal(gt_cli_jsonpath_render("{..name}", root, &b, &err), GT_EBADREQ);
    json_t *vals = NULL;
    assert_int_equal(gt_cli_jsonpath_eval(".items[*].n", root, &vals, NULL), 0);
    assert_int_equal(json_array_size(vals), 2);
    json_decref(vals);
    gt_buf_fini(&b);
    json_decref(root);
}

static void expect_path(enum gt_kind kind, const char *project, const char *name, const char *want)
{
    char *p = gt_cli_kind_path(gt_kind_get(kind), project, name);
    assert_string_equal(p, want);
    free(p);
}

static void test_kind_paths(void **state)
{
    (void)state;
    expect_path(GT_KIND_JOB, "detection", "train",
                "/apis/gantry.dev/v1/projects/detection/jobs/train");
    expect_path(GT_KIND_JOB, "detection", NULL, "/apis/gantry.dev/v1/projects/detection/jobs");
    expect_path(GT_KIND_TASK, NULL, NULL, "/apis/gantry.dev/v1/tasks");
    expect_path(GT_KIND_NODE, NULL, "gpu-1", "/apis/gantry.dev/v1/nodes/gpu-1");
    /* A project means nothing to a cluster-scoped kind. */
    expect_path(GT_KIND_DEPARTMENT, "detection", "vision",
                "/apis/gantry.dev/v1/departments/vision");
    /* Whatever the user typed stays one path segment. */
    expect_path(GT_KIND_JOB, "a/b", "x y?z", "/apis/gantry.dev/v1/projects/a%2Fb/jobs/x%20y%3Fz");

    char *q = gt_cli_url_escape("involvedObject.name=train,a in (b)");
    assert_string_equal(q, "involvedObject.name%3Dtrain%2Ca%20in%20%28b%29");
    free(q);

    char res[64];
    assert_string_equal(gt_cli_kind_resource(gt_kind_get(GT_KIND_PRIORITYCLASS), res, sizeof(res)),
                        "priorityclass.gantry.dev");
    assert_string_equal(gt_cli_kind_resource(gt_kind_get(GT_KIND_JOB), res, sizeof(res)),
                        "job.gantry.dev");
}

/* ---- configuration ---- */

struct cfg_env {
    char dir[64];
    char *path;
};

static int cfg_setup(void **state)
{
    struct cfg_env *e = gt_xcalloc(1, sizeof(*e));
    snprintf(e->dir, sizeof(e->dir), "/tmp/gantry-test-cli-XXXXXX");
    assert_non_null(mkdtemp(e->dir));
    e->path = gt_xasprintf("%s/sub/dir/config", e->dir);
    setenv("GANTRY_CONFIG", e->path, 1);
    unsetenv("GANTRY_SERVER");
    unsetenv("GANTRY_TOKEN");
    *state = e;
    return 0;
}

static int cfg_teardown(void **state)
{
    struct cfg_env *e = *state;
    char *parent = gt_xasprintf("%s/sub/dir", e->dir);
    char *sub = gt_xasprintf("%s/sub", e->dir);
    unlink(e->path);
    rmdir(parent);
    rmdir(sub);
    rmdir(e->dir);
    free(parent);
    free(sub);
    free(e->path);
    free(e);
    unsetenv("GANTRY_CONFIG");
    unsetenv("GANTRY_SERVER");
    unsetenv("GANTRY_TOKEN");
    return 0;
}

static void resolve(const char *flag_server, const char *flag_token, const char *want_server,
                    const char *want_token)
{
    struct gt_cli_config cfg;
    struct gt_err err = {0};
    assert_int_equal(gt_cli_config_resolve(flag_server, flag_token, &cfg, &err), 0);
    if (want_server) {
        assert_non_null(cfg.server);
        assert_string_equal(cfg.server, want_server);
    } else {
        assert_null(cfg.server);
    }
    if (want_token) {
        assert_non_null(cfg.token);
        assert_string_equal(cfg.token, want_token);
    } else {
        assert_null(cfg.token);
    }
    gt_cli_config_fini(&cfg);
}

static void test_config_precedence(void **state)
{
    struct cfg_env *e = *state;
    /* No file yet: nothing, and no error. */
    resolve(NULL, NULL, NULL, NULL);

    struct gt_err err = {0};
    assert_int_equal(gt_cli_config_write(e->path, "http://file:1/", "file-token", NULL, NULL, &err),
                     0);
    struct stat st;
    assert_int_equal(stat(e->path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    resolve(NULL, NULL, "http://file:1", "file-token");
    setenv("GANTRY_SERVER", "http://env:2", 1);
    resolve(NULL, NULL, "http://env:2", "file-token");
    setenv("GANTRY_TOKEN", "env-token", 1);
    resolve(NULL, NULL, "http://env:2", "env-token");
    resolve("http://flag:3", NULL, "http://flag:3", "env-token");
    resolve(NULL, "flag-token", "http://env:2", "flag-token");
    /* An empty variable counts as unset. */
    setenv("GANTRY_SERVER", "", 1);
    resolve(NULL, NULL, "http://file:1", "env-token");

    /* Rewriting replaces the file whole. */
    assert_int_equal(gt_cli_config_write(e->path, "http://new:4", NULL, "research", "/d/x", &err),
                     0);
    unsetenv("GANTRY_TOKEN");
    resolve(NULL, NULL, "http://new:4", NULL);

    /* The project: -p first, else the file's. */
    char *project = NULL;
    assert_int_equal(gt_cli_config_project(NULL, &project, &err), 0);
    assert_string_equal(project, "research");
    free(project);
    assert_int_equal(gt_cli_config_project("vision", &project, &err), 0);
    assert_string_equal(project, "vision");
    free(project);
    /* the file alone, with the local cluster it is for */
    struct gt_cli_config cfg;
    assert_int_equal(gt_cli_config_read(e->path, &cfg, &err), 0);
    assert_string_equal(cfg.server, "http://new:4");
    assert_null(cfg.token);
    assert_string_equal(cfg.data_dir, "/d/x");
    gt_cli_config_fini(&cfg);
}

static void test_config_bad_file(void **state)
{
    struct cfg_env *e = *state;
    struct gt_err err = {0};
    assert_int_equal(gt_cli_config_write(e->path, "http://x:1", "t", NULL, NULL, &err), 0);
    FILE *f = fopen(e->path, "w");
    assert_non_null(f);
    fputs("{\"server\": 7}", f);
    fclose(f);
    struct gt_cli_config cfg;
    assert_int_equal(gt_cli_config_resolve(NULL, NULL, &cfg, &err), GT_EBADREQ);
    assert_non_null(strstr(err.msg, "server: must be a string"));
    assert_null(cfg.server);

    f = fopen(e->path, "w");
    fputs("not json", f);
    fclose(f);
    gt_err_clear(&err);
    assert_int_equal(gt_cli_config_resolve(NULL, NULL, &cfg, &err), GT_EBADREQ);
    assert_non_null(strstr(err.msg, e->path));
    /* Flags and environment that supply everything never read the file. */
    resolve("http://flag:1", "tok", "http://flag:1", "tok");
}

static void test_config_path(void **state)
{
    (void)state;
    char *saved_home = gt_xstrdup(getenv("HOME"));
    unsetenv("GANTRY_CONFIG");
    setenv("XDG_CONFIG_HOME", "/xdg", 1);
    char *p = gt_cli_config_path();
    assert_string_equal(p, "/xdg/gantry/config");
    free(p);
    unsetenv("XDG_CONFIG_HOME");
    setenv("HOME", "/home/u", 1);
    p = gt_cli_config_path();
    assert_string_equal(p, "/home/u/.config/gantry/config");
    free(p);
    setenv("GANTRY_CONFIG", "/etc/g.json", 1);
    p = gt_cli_config_path();
    assert_string_equal(p, "/etc/g.json");
    free(p);
    unsetenv("GANTRY_CONFIG");
    if (saved_home) {
        setenv("HOME", saved_home, 1);
    }
    free(saved_home);
}

/* ---- Status errors ---- */

static void expect_status(long http, const char *body, int want_code, const char *want_msg)
{
    struct gt_err err = {0};
    assert_int_equal(gt_cli_status_error(http, body, body ? strlen(body) : 0, &err), want_code);
    assert_int_equal(err.code, want_code);
    assert_string_equal(err.msg, want_msg);
}

static void test_status_message(void **state)
{
    (void)state;
    expect_status(422,
                  "{\"apiVersion\":\"v1\",\"kind\":\"Status\",\"status\":\"Failure\",\"code\":422,"
                  "\"reason\":\"Invalid\",\"message\":\"spec.replicaSpecs.Worker.replicas: must "
                  "be >= 1\",\"details\":{\"field\":\"spec.replicaSpecs.Worker.replicas\"}}",
                  GT_EINVAL, "spec.replicaSpecs.Worker.replicas: must be >= 1");
    expect_status(409, "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\",\"message\":\"m\"}",
                  GT_EEXISTS, "m");
    expect_status(409, "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"message\":\"stale\"}",
                  GT_ECONFLICT, "stale");
    expect_status(404, "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"message\":\"no job x\"}",
                  GT_ENOTFOUND, "no job x");
    expect_status(403, "{\"kind\":\"Status\",\"reason\":\"Forbidden\"}", GT_EFORBIDDEN,
                  "server answered HTTP 403 (Forbidden)");
    expect_status(502, "<html>\nbad gateway\n</html>\n", GT_EINTERNAL,
                  "server answered HTTP 502: <html> bad gateway </html>");
    expect_status(500, NULL, GT_EINTERNAL, "server answered HTTP 500");
    expect_status(401, "", GT_EUNAUTH, "server answered HTTP 401");
}

/* ---- describe ---- */

static void test_describe_layout(void **state)
{
    (void)state;
    json_t *obj = json_of(
        "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\","
        "\"metadata\":{\"name\":\"train\",\"project\":\"detection\","
        "\"labels\":{\"team\":\"vision\",\"model\":\"resnet50\"},\"resourceVersion\":\"12\","
        "\"uid\":\"u-1\",\"creationTimestamp\":\"" T0 "\","
        "\"creator\":{\"user\":\"alice\",\"uid\":1000}},"
        "\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":2,\"template\":{"
        "\"command\":[\"python3\",\"train.py\"],\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
        "{\"name\":\"LONGER\",\"value\":\"2\"}],"
        "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"cpu\":\"4\"}}}}},"
        "\"volumes\":[]},"
        "\"status\":{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\"}]}}");
    json_t *events = json_of(
        "[{\"type\":\"Normal\",\"reason\":\"Queued\",\"message\":\"waiting for quota\","
        "\"count\":3,\"firstTimestamp\":\"" T0 "\",\"lastTimestamp\":\"2026-11-29T20:52:44Z\","
        "\"source\":{\"component\":\"scheduler\"}},"
        "{\"type\":\"Normal\",\"reason\":\"Created\",\"lastTimestamp\":\"" T0 "\","
        "\"firstTimestamp\":\"" T0 "\",\"count\":1}]");
    struct gt_buf b;
    gt_buf_init(&b);
    gt_cli_describe_render(obj, events, T0_MS + 190000, &b);
    assert_string_equal(b.data, "Name:              train\n"
                                "Project:           detection\n"
                                "Labels:            team=vision\n"
                                "                   model=resnet50\n"
                                "Annotations:       <none>\n"
                                "Kind:              Job\n"
                                "Created:           " T0 " (3m10s ago)\n"
                                "Creator:           alice (uid 1000)\n"
                                "Resource Version:  12\n"
                                "UID:               u-1\n"
                                "Spec:\n"
                                "  Replica Specs:\n"
                                "    Worker:\n"
                                "      Replicas:  2\n"
                                "      Template:\n"
                                "        Command:\n"
                                "          python3\n"
                                "          train.py\n"
                                "        Env:\n"
                                "          - Name:   A\n"
                                "            Value:  1\n"
                                "          - Name:   LONGER\n"
                                "            Value:  2\n"
                                "        Resources:\n"
                                "          Limits:\n"
                                "            nvidia.com/gpu:  1\n"
                                "            cpu:             4\n"
                                "  Volumes:  <none>\n"
                                "Status:\n"
                                "  Conditions:\n"
                                "    - Type:    Created\n"
                                "      Status:  True\n"
                                "Events:\n"
                                "  Type     Reason    Age                   From        Message\n"
                                "  ----     ------    ----                  ----        -------\n"
                                "  Normal   Created   3m10s                 <none>      <none>\n"
                                "  Normal   Queued    70s (x3 over 3m10s)   scheduler   waiting "
                                "for quota\n");
    gt_buf_fini(&b);
    json_decref(obj);
    json_decref(events);
}

/* An InferenceService's per-variant traffic numbers read as words, digits
 * kept in theirs ("latencyP99Ms" -> "Latency P99 Ms"); keys with other
 * characters, or starting with a digit, stay as they are. */
static void test_describe_labels_with_digits(void **state)
{
    (void)state;
    json_t *obj = json_of("{\"kind\":\"InferenceService\",\"metadata\":{\"name\":\"m\"},"
                          "\"status\":{\"variants\":[{\"role\":\"stable\","
                          "\"requestsPerSecond\":299.5,\"errorRate\":0,\"latencyP50Ms\":1,"
                          "\"latencyP99Ms\":16,\"2xx\":3,\"a_b\":4}]}}");
    struct gt_buf b;
    gt_buf_init(&b);
    gt_cli_describe_render(obj, NULL, T0_MS, &b);
    const char *status = strstr(b.data, "Status:\n");
    assert_non_null(status);
    assert_string_equal(status, "Status:\n"
                                "  Variants:\n"
                                "    - Role:                 stable\n"
                                "      Requests Per Second:  299.5\n"
                                "      Error Rate:           0\n"
                                "      Latency P50 Ms:       1\n"
                                "      Latency P99 Ms:       16\n"
                                "      2xx:                  3\n"
                                "      a_b:                  4\n"
                                "Events:  <none>\n");
    gt_buf_fini(&b);
    json_decref(obj);
}

static void test_describe_top_level_fields_and_no_events(void **state)
{
    (void)state;
    json_t *obj = json_of("{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"PriorityClass\","
                          "\"metadata\":{\"name\":\"high\"},\"value\":1000,"
                          "\"preemptionPolicy\":\"Never\",\"globalDefault\":false}");
    struct gt_buf b;
    gt_buf_init(&b);
    gt_cli_describe_render(obj, NULL, T0_MS, &b);
    assert_string_equal(b.data, "Name:               high\n"
                                "Labels:             <none>\n"
                                "Annotations:        <none>\n"
                                "Kind:               PriorityClass\n"
                                "Created:            <none>\n"
                                "Creator:            <none>\n"
                                "Resource Version:   <none>\n"
                                "UID:                <none>\n"
                                "Value:              1000\n"
                                "Preemption Policy:  Never\n"
                                "Global Default:     false\n"
                                "Events:  <none>\n");
    gt_buf_fini(&b);
    json_decref(obj);
}

static void test_event_matching(void **state)
{
    (void)state;
    const struct gt_kind_info *job = gt_kind_get(GT_KIND_JOB);
    const struct gt_kind_info *node = gt_kind_get(GT_KIND_NODE);
    json_t *ev = json_of("{\"involvedObject\":{\"kind\":\"Job\",\"name\":\"train\","
                         "\"project\":\"a\"}}");
    assert_true(gt_cli_event_matches(ev, job, "a", "train"));
    assert_false(gt_cli_event_matches(ev, job, "b", "train"));
    assert_false(gt_cli_event_matches(ev, job, "a", "other"));
    assert_false(gt_cli_event_matches(ev, node, NULL, "train"));
    json_decref(ev);
    ev = json_of("{\"involvedObject\":{\"kind\":\"Node\",\"name\":\"gpu-1\"}}");
    assert_true(gt_cli_event_matches(ev, node, NULL, "gpu-1"));
    json_decref(ev);
}

/* ---- the command line, up to the point of needing a server ---- */

struct run_result {
    int rc;
    char *out;
    char *err;
};

static struct run_result run_cli(const char *const *args)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = (char *)"gantry";
    for (; args[argc - 1]; argc++) {
        argv[argc] = (char *)args[argc - 1];
    }
    argv[argc] = NULL;
    struct run_result r = {0};
    size_t out_len, err_len;
    FILE *out = open_memstream(&r.out, &out_len);
    FILE *err = open_memstream(&r.err, &err_len);
    r.rc = gt_cli_main(argc, argv, out, err);
    fclose(out);
    fclose(err);
    return r;
}

static void run_result_free(struct run_result *r)
{
    free(r->out);
    free(r->err);
}

static void expect_usage_error(const char *const *args, const char *want_err_start)
{
    struct run_result r = run_cli(args);
    assert_int_equal(r.rc, 2);
    if (strncmp(r.err, want_err_start, strlen(want_err_start)) != 0) {
        fail_msg("stderr %s, wanted it to start with %s", r.err, want_err_start);
    }
    assert_non_null(strstr(r.err, "\nusage: gantry "));
    assert_string_equal(r.out, "");
    run_result_free(&r);
}

static void test_cli_usage_errors(void **state)
{
    (void)state;
    expect_usage_error((const char *[]){"frobnicate", NULL},
                       "error: unknown command \"frobnicate\"");
    expect_usage_error((const char *[]){"get", NULL}, "error: name a kind");
    expect_usage_error((const char *[]){"get", "pets", NULL}, "error: unknown kind \"pets\"");
    expect_usage_error((const char *[]){"get", "jobs,pets", NULL}, "error: unknown kind \"pets\"");
    expect_usage_error((const char *[]){"delete", "jobs", "--all", "x", NULL},
                       "error: --all takes a KIND and no names");
    expect_usage_error((const char *[]){"delete", "job/x", NULL},
                       "error: jobs live in projects: pass -p PROJECT");
    expect_usage_error((const char *[]){"get", "jobs", NULL},
                       "error: jobs live in projects: pass -p PROJECT or -A");
    expect_usage_error((const char *[]){"get", "jobs", "-A", "x", NULL},
                       "error: -A lists every project; it takes no NAME");
    expect_usage_error((const char *[]){"get", "nodes", "-o", "xml", NULL},
                       "error: unknown output format \"xml\"");
    expect_usage_error((const char *[]){"get", "nodes", "--bogus", NULL},
                       "error: unknown flag --bogus");
    expect_usage_error((const char *[]){"get", "nodes", "-l", NULL},
                       "error: flag -l needs a value");
    expect_usage_error((const char *[]){"apply", NULL}, "error: -f FILE is required");
    expect_usage_error((const char *[]){"describe", "job", "x", NULL},
                       "error: jobs live in projects: pass -p PROJECT");
    expect_usage_error((const char *[]){"delete", "node", NULL}, "error: name an object");
    expect_usage_error((const char *[]){"get", "nodes", "--server", NULL},
                       "error: flag --server needs a value");
}

static void test_cli_help_and_no_server(void **state)
{
    struct cfg_env *e = *state;
    (void)e;
    struct run_result r = run_cli((const char *[]){"help", NULL});
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "  apply "));
    assert_non_null(strstr(r.out, "  describe "));
    run_result_free(&r);

    r = run_cli((const char *[]){"get", "--help", NULL});
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "Usage: gantry get KIND"));
    assert_non_null(strstr(r.out, "--watch"));
    run_result_free(&r);

    /* No --server, no GANTRY_SERVER, no config file. */
    r = run_cli((const char *[]){"get", "nodes", NULL});
    assert_int_equal(r.rc, 1);
    assert_string_equal(
        r.err, "error: no server: pass --server URL, set GANTRY_SERVER or run 'gantry up'\n");
    run_result_free(&r);

    /* Port 1 on loopback: nothing listens there. */
    r = run_cli((const char *[]){"--server=http://127.0.0.1:1", "get", "nodes", NULL});
    assert_int_equal(r.rc, 1);
    assert_true(strncmp(r.err, "error: cannot reach gantryd at http://127.0.0.1:1: ", 51) == 0);
    assert_non_null(strchr(r.err, '\n'));
    assert_ptr_equal(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
    run_result_free(&r);
}

/* ---- node marks (cordon, uncordon, drain), scalar cells, top nodes ---- */

static void test_node_mark(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        enum gt_cli_node_op op;
        bool changed;
        const char *want;
    } cases[] = {
        {"{}", GT_CLI_NODE_CORDON, true, "{\"spec\":{\"unschedulable\":true}}"},
        {"{\"spec\":{\"unschedulable\":true}}", GT_CLI_NODE_CORDON, false,
         "{\"spec\":{\"unschedulable\":true}}"},
        /* drain keeps other taints and adds its own after them */
        {"{\"spec\":{\"taints\":[{\"key\":\"gpu\",\"effect\":\"NoSchedule\"}]}}", GT_CLI_NODE_DRAIN,
         true,
         "{\"spec\":{\"taints\":[{\"key\":\"gpu\",\"effect\":\"NoSchedule\"},"
         "{\"key\":\"gantry.dev/drain\",\"effect\":\"NoExecute\"}],\"unschedulable\":true}}"},
        /* a cordoned node is drained by the taint alone */
        {"{\"spec\":{\"unschedulable\":true}}", GT_CLI_NODE_DRAIN, true,
         "{\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"gantry.dev/drain\","
         "\"effect\":\"NoExecute\"}]}}"},
        {"{\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"gantry.dev/drain\","
         "\"effect\":\"NoExecute\"}]}}",
         GT_CLI_NODE_DRAIN, false,
         "{\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"gantry.dev/drain\","
         "\"effect\":\"NoExecute\"}]}}"},
        /* uncordon clears both, keeps other taints, drops an emptied list */
        {"{\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"gantry.dev/drain\"},"
         "{\"key\":\"gpu\"}]}}",
         GT_CLI_NODE_UNCORDON, true, "{\"spec\":{\"taints\":[{\"key\":\"gpu\"}]}}"},
        {"{\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"gantry.dev/drain\"}]}}",
         GT_CLI_NODE_UNCORDON, true, "{\"spec\":{}}"},
        {"{\"spec\":{\"taints\":[{\"key\":\"gantry.dev/drain\"}]}}", GT_CLI_NODE_UNCORDON, true,
         "{\"spec\":{}}"},
        {"{\"metadata\":{\"name\":\"n\"},\"spec\":{}}", GT_CLI_NODE_UNCORDON, false,
         "{\"metadata\":{\"name\":\"n\"},\"spec\":{}}"},
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(cases); i++) {
        json_t *node = json_of(cases[i].in);
        json_t *want = json_of(cases[i].want);
        bool changed = gt_cli_node_mark(node, cases[i].op);
        if (changed != cases[i].changed || !json_equal(node, want)) {
            char *got = json_dumps(node, JSON_COMPACT);
            fail_msg("case %zu: changed %d, node %s; want %d, %s", i, changed, got,
                     cases[i].changed, cases[i].want);
        }
        json_decref(want);
        json_decref(node);
    }
}

static void test_scalar_text(void **state)
{
    (void)state;
    static const struct {
        const char *json;
        const char *want; /* NULL: no text */
    } cases[] = {
        {"\"vision\"", "vision"}, {"\"\"", ""},      {"42", "42"},     {"-7", "-7"},
        {"2.5", "2.5"},           {"1e21", "1e+21"}, {"true", "true"}, {"false", "false"},
        {"null", NULL},           {"{}", NULL},      {"[1]", NULL},
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(cases); i++) {
        json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
        assert_non_null(v);
        char *got = gt_cli_scalar_text(v);
        if (cases[i].want) {
            assert_non_null(got);
            assert_string_equal(got, cases[i].want);
        } else {
            assert_null(got);
        }
        free(got);
        json_decref(v);
    }
    assert_null(gt_cli_scalar_text(NULL));
}

static void test_top_nodes_table(void **state)
{
    (void)state;
    json_t *nodes =
        json_of("[{\"metadata\":{\"name\":\"gpu-1\"},\"status\":{"
                "\"allocatable\":{\"nvidia.com/gpu\":8,\"cpu\":\"64\",\"memory\":\"512Gi\"},"
                "\"allocated\":{\"resources\":{\"nvidia.com/gpu\":\"2500m\",\"cpu\":\"16\","
                "\"memory\":\"128Gi\"}}}},"
                /* GPUs counted from status.gpus when allocatable names none; nothing used */
                "{\"metadata\":{\"name\":\"gpu-2\"},\"status\":{\"gpus\":[{},{}],"
                "\"allocatable\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"}}},"
                /* no allocatable at all: shares are \"-\" */
                "{\"metadata\":{\"name\":\"cpu-1\"},\"status\":{}}]");
    /* what gpu-1's tasks use now; gpu-2's sampled none; cpu-1 has no entry */
    json_t *stats = json_of("[{\"node\":\"gpu-1\",\"tasks\":2,\"cpuMilli\":1250,"
                            "\"memoryBytes\":100663296,\"gpuMilli\":2500,\"gpuUtil\":61.6},"
                            "{\"node\":\"gpu-2\",\"tasks\":1,\"cpuMilli\":0,"
                            "\"memoryBytes\":0,\"gpuMilli\":0,\"gpuUtil\":0}]");
    struct gt_buf b;
    gt_buf_init(&b);
    gt_cli_top_nodes_render(nodes, stats, &b);
    /* GPUs in use against whole GPUs x 1000, shares rounded down; use now beside */
    assert_string_equal(b.data, "NAME    GPUS USED   GPUS   GPU%   CPU USED   CPU%   MEMORY USED   "
                                "MEMORY%   CPU(cores)   MEMORY(bytes)   GPU UTIL\n"
                                "gpu-1   2500m       8      31%    16         25%    128Gi         "
                                "25%       1250m        96Mi            62%\n"
                                "gpu-2   0           2      0%     0          0%     0             "
                                "0%        0            0               -\n"
                                "cpu-1   0           0      -      0          -      0             "
                                "-         0            0               -\n");
    /* without the server's figures the use is unknown */
    gt_buf_reset(&b);
    gt_cli_top_nodes_render(nodes, NULL, &b);
    assert_non_null(strstr(b.data, "\ngpu-1   2500m       8      31%    16         25%    128Gi"
                                   "         25%       -            -               -\n"));
    gt_buf_fini(&b);
    json_decref(stats);
    json_decref(nodes);
}

/* ---- exit statuses: the one map from a command's code ---- */

static void test_exit_status_map(void **state)
{
    (void)state;
    static const struct {
        int rc;
        int task_status;
        int want;
    } cases[] = {
        {0, 0, 0},
        {0, 1, 1},     /* run: the task's own status */
        {0, 137, 137}, /* killed by SIGKILL, as a shell shows it */
        {0, 255, 255},
        {GT_EUSAGE, 0, 2},
        {GT_EUSAGE, 3, 2}, /* a code wins over a task status */
        {-ECANCELED, 0, 130},
        {-ECANCELED, 1, 130},
        {-ENOENT, 0, 1},
        {-EIO, 0, 1},
        {-ECONNREFUSED, 0, 1},
        {GT_EINTERNAL, 7, 1},
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(cases); i++) {
        int got = gt_cli_exit_status(cases[i].rc, cases[i].task_status);
        if (got != cases[i].want) {
            fail_msg("rc %d task %d: exit %d, want %d", cases[i].rc, cases[i].task_status, got,
                     cases[i].want);
        }
    }
    /* every other GT_E* code is a plain failure */
    for (int code = GT_EBADREQ; code < GT_ECODE_END; code++) {
        assert_int_equal(gt_cli_exit_status(code, 0), code == GT_EUSAGE ? 2 : 1);
    }
}

/* A failure reported by a command exits 1 with its one error line: an
 * unreadable manifest or requirements file, before any server is needed. */
static void test_unreadable_files_exit_1(void **state)
{
    (void)state;
    struct run_result r =
        run_cli((const char *[]){"apply", "-f", "/nonexistent/gantry-test.yaml", NULL});
    assert_int_equal(r.rc, 1);
    assert_string_equal(
        r.err, "error: cannot open /nonexistent/gantry-test.yaml: No such file or directory\n");
    assert_string_equal(r.out, "");
    run_result_free(&r);

    /* a directory without manifests */
    char dir[] = "/tmp/gt-apply-XXXXXX";
    assert_non_null(mkdtemp(dir));
    r = run_cli((const char *[]){"apply", "-f", dir, NULL});
    assert_int_equal(r.rc, 1);
    char *none = gt_xasprintf("error: no manifests (.yaml, .yml, .json) in %s\n", dir);
    assert_string_equal(r.err, none);
    free(none);
    run_result_free(&r);
    rmdir(dir);

    /* run's requirements file: missing, then one byte over its 1 MiB */
    r = run_cli((const char *[]){"run", "-p", "x", "--requirements", "/nonexistent/req.txt", "--",
                                 "true", NULL});
    assert_int_equal(r.rc, 1);
    assert_string_equal(
        r.err,
        "error: --requirements: cannot open /nonexistent/req.txt: No such file or directory\n");
    run_result_free(&r);
    char path[] = "/tmp/gantry-test-req-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (1 << 20) + 1), 0);
    close(fd);
    r = run_cli((const char *[]){"run", "-p", "x", "--requirements", path, "--", "true", NULL});
    assert_int_equal(r.rc, 1);
    char *want = gt_xasprintf("error: --requirements: %s is over 1 MiB\n", path);
    assert_string_equal(r.err, want);
    free(want);
    run_result_free(&r);
    unlink(path);
}

/* report usage: CSV and the table show milli-GPU-seconds as exact
 * GPU-seconds (three decimals), the table ends with the total; scalars
 * show each tag's latest point. */
static void test_usage_and_scalars_render(void **state)
{
    (void)state;
    json_t *rep = json_loads(
        "{\"by\":\"department\",\"from\":\"2026-01-01T00:00:00Z\",\"to\":\"2026-01-02T00:00:00Z\","
        "\"rows\":[{\"name\":\"dept-a\",\"gpuMilliSeconds\":7200500,\"utilizedGpuMilliSeconds\":"
        "3600250,"
        "\"taskRuns\":3},{\"name\":\"dept-b\",\"gpuMilliSeconds\":999,\"utilizedGpuMilliSeconds\":"
        "0,"
        "\"taskRuns\":1}],\"total\":{\"gpuMilliSeconds\":7201499,\"utilizedGpuMilliSeconds\":"
        "3600250,"
        "\"taskRuns\":4}}",
        0, NULL);
    assert_non_null(rep);
    struct gt_buf b;
    gt_buf_init(&b);
    gt_cli_usage_render(rep, GT_CLI_USAGE_CSV, &b);
    assert_string_equal(b.data, "department,gpu_seconds,utilized_gpu_seconds,task_runs\n"
                                "dept-a,7200.500,3600.250,3\n"
                                "dept-b,0.999,0.000,1\n");
    gt_buf_fini(&b);
    gt_buf_init(&b);
    gt_cli_usage_render(rep, GT_CLI_USAGE_TABLE, &b);
    assert_non_null(strstr(b.data, "Usage by department from 2026-01-01T00:00:00Z"));
    assert_non_null(
        strstr(b.data, "dept-a   7200.500      2.00        3600.250         50%     3\n"));
    assert_non_null(
        strstr(b.data, "TOTAL    7201.499      2.00        3600.250         50%     4\n"));
    gt_buf_fini(&b);
    json_decref(rep);
    json_t *sc = json_loads("{\"tags\":[{\"tag\":\"loss\",\"count\":30,\"latest\":{\"step\":30,"
                            "\"wallTime\":1767225600.5,\"value\":0.0448371}}]}",
                            0, NULL);
    gt_buf_init(&b);
    gt_cli_scalars_render(sc, &b);
    assert_string_equal(b.data, "TAG    STEP   VALUE       POINTS   WALL TIME\n"
                                "loss   30     0.0448371   30       2026-01-01T00:00:00Z\n");
    gt_buf_fini(&b);
    json_decref(sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration_matches_kubectl),
        cmocka_unit_test(test_age_of_timestamp),
        cmocka_unit_test(test_table_layout),
        cmocka_unit_test(test_table_min_width),
        cmocka_unit_test(test_columns_jobs),
        cmocka_unit_test(test_columns_job_restarted),
        cmocka_unit_test(test_jsonpath),
        cmocka_unit_test(test_columns_inadmissible),
        cmocka_unit_test(test_columns_gpus_defaulted),
        cmocka_unit_test(test_columns_cluster_kinds),
        cmocka_unit_test(test_columns_nodes_tasks_events),
        cmocka_unit_test(test_kind_lookup),
        cmocka_unit_test(test_kind_paths),
        cmocka_unit_test_setup_teardown(test_config_precedence, cfg_setup, cfg_teardown),
        cmocka_unit_test_setup_teardown(test_config_bad_file, cfg_setup, cfg_teardown),
        cmocka_unit_test(test_config_path),
        cmocka_unit_test(test_status_message),
        cmocka_unit_test(test_describe_layout),
        cmocka_unit_test(test_describe_top_level_fields_and_no_events),
        cmocka_unit_test(test_describe_labels_with_digits),
        cmocka_unit_test(test_event_matching),
        cmocka_unit_test(test_cli_usage_errors),
        cmocka_unit_test(test_node_mark),
        cmocka_unit_test(test_scalar_text),
        cmocka_unit_test(test_top_nodes_table),
        cmocka_unit_test(test_usage_and_scalars_render),
        cmocka_unit_test(test_exit_status_map),
        cmocka_unit_test(test_unreadable_files_exit_1),
        cmocka_unit_test_setup_teardown(test_cli_help_and_no_server, cfg_setup, cfg_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
