/*
 * Unit tests for gantryd's pure parts: the configuration table, path
 * routing, Status error bodies, event folding arithmetic and metrics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/server.h"

static void test_config_defaults_env_flags(void **state)
{
    (void)state;
    struct gt_server_config cfg;
    struct gt_err err = {0};
    bool help = false;
    char *argv[] = {"gantryd",
                    "--data-dir",
                    "/d",
                    "--token-file=/t",
                    "--watch-history",
                    "50",
                    "--enable-fault-injection",
                    NULL};
    char *env[] = {"GANTRYD_LISTEN=0.0.0.0:1", "GANTRYD_WATCH_HISTORY=7", "GANTRYD_LOG_LEVEL=debug",
                   "OTHER=x", NULL};
    assert_int_equal(gt_server_config_parse(&cfg, 7, argv, env, &help, &err), 0);
    assert_false(help);
    assert_string_equal(cfg.data_dir, "/d");
    assert_string_equal(cfg.token_file, "/t");
    assert_string_equal(cfg.listen, "0.0.0.0:1"); /* environment over default */
    assert_int_equal(cfg.watch_history, 50);      /* flag over environment */
    assert_int_equal(cfg.max_body_bytes, 3 * 1024 * 1024);
    assert_int_equal(cfg.log_level, GT_LOG_DEBUG);
    assert_true(cfg.enable_fault_injection);
    gt_server_config_fini(&cfg);

    char *argv2[] = {"gantryd", "--data-dir", "/d", "--token-file", "/t", NULL};
    assert_int_equal(gt_server_config_parse(&cfg, 5, argv2, NULL, &help, &err), 0);
    assert_string_equal(cfg.listen, "127.0.0.1:8443");
    assert_int_equal(cfg.watch_history, 10000);
    assert_false(cfg.enable_fault_injection);
    gt_server_config_fini(&cfg);
}

static void test_config_errors(void **state)
{
    (void)state;
    static const struct {
        int argc;
        char *argv[6];
        const char *want;
    } cases[] = {
        {3, {"gantryd", "--token-file", "/t"}, "--data-dir: required"},
        {5, {"gantryd", "--data-dir", "/d", "--token-file", "/t"}, NULL},
        {2, {"gantryd", "--bogus"}, "--bogus: unknown flag"},
        {2, {"gantryd", "--data-dir"}, "--data-dir: needs a value"},
        {3, {"gantryd", "--watch-history", "0"}, "--watch-history: 0 is not an integer"},
        {3, {"gantryd", "--max-body-bytes", "12x"}, "--max-body-bytes: 12x"},
        {2, {"gantryd", "--log-level=loud"}, "--log-level: loud"},
        {2, {"gantryd", "--enable-fault-injection=maybe"}, "--enable-fault-injection: maybe"},
        {2, {"gantryd", "stray"}, "stray: unexpected argument"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gt_server_config cfg;
        struct gt_err err = {0};
        bool help = false;
        int rc = gt_server_config_parse(&cfg, cases[i].argc, cases[i].argv, NULL, &help, &err);
        gt_server_config_fini(&cfg);
        if (!cases[i].want) {
            assert_int_equal(rc, 0);
            continue;
        }
        assert_int_equal(rc, GT_EINVAL);
        if (!strstr(err.msg, cases[i].want)) {
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, cases[i].want);
        }
    }
    struct gt_server_config cfg;
    struct gt_err err = {0};
    bool help = false;
    char *env[] = {"GANTRYD_WATCH_HISTORY=-5", NULL};
    char *argv[] = {"gantryd", NULL};
    assert_int_equal(gt_server_config_parse(&cfg, 1, argv, env, &help, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "GANTRYD_WATCH_HISTORY"));
    gt_server_config_fini(&cfg);
    char *argv2[] = {"gantryd", "--help", NULL};
    assert_int_equal(gt_server_config_parse(&cfg, 2, argv2, NULL, &help, NULL), 0);
    assert_true(help);
    gt_server_config_fini(&cfg);
}

/* --replica-url: origins only (a trailing '/' dropped), repeatable; a bad
 * one is refused naming the flag and the reason. */
static void test_config_replica_urls(void **state)
{
    (void)state;
    struct gt_server_config cfg;
    struct gt_err err = {0};
    bool help = false;
    char *argv[] = {"gantryd",
                    "--data-dir",
                    "/d",
                    "--token-file",
                    "/t",
                    "--replica-url",
                    "http://a:8443/",
                    "--replica-url",
                    "https://[::1]:9",
                    NULL};
    assert_int_equal(gt_server_config_parse(&cfg, 9, argv, NULL, &help, &err), 0);
    assert_int_equal(cfg.replica_urls.n, 2);
    assert_string_equal(cfg.replica_urls.items[0], "http://a:8443");
    assert_string_equal(cfg.replica_urls.items[1], "https://[::1]:9");
    gt_server_config_fini(&cfg);
    static const struct {
        char *url;
        const char *want;
    } bad[] = {
        {"a:8443", "want http:// or https://"},
        {"ftp://a", "want http:// or https://"},
        {"http://", "no host"},
        {"http://a:0", "port must be 1-65535"},
        {"http://a:", "port must be 1-65535"},
        {"http://a:70000", "port must be 1-65535"},
        {"http://a/ui", "only scheme, host and port"},
        {"http://u@a", "only scheme, host and port"},
        {"http://[zz]", "malformed IPv6 address"},
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(bad); i++) {
        char url[64];
        snprintf(url, sizeof(url), "%s", bad[i].url);
        char *av[] = {"gantryd", "--data-dir",    "/d", "--token-file",
                      "/t",      "--replica-url", url,  NULL};
        err = (struct gt_err){0};
        int rc = gt_server_config_parse(&cfg, 7, av, NULL, &help, &err);
        gt_server_config_fini(&cfg);
        assert_int_equal(rc, GT_EINVAL);
        if (!strstr(err.msg, "--replica-url") || !strstr(err.msg, bad[i].want)) {
            fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].url, err.msg, bad[i].want);
        }
    }
}

static void test_routes(void **state)
{
    (void)state;
    struct gt_route r;
    struct gt_err err = {0};
    assert_int_equal(gt_route_parse("/healthz", &r, &err), 0);
    assert_int_equal(r.type, GT_ROUTE_HEALTHZ);
    assert_int_equal(gt_route_parse("/debug/fault", &r, &err), 0);
    assert_int_equal(r.type, GT_ROUTE_FAULT);

    assert_int_equal(gt_route_parse("/apis/gantry.dev/v1/departments", &r, &err), 0);
    assert_int_equal(r.type, GT_ROUTE_COLLECTION);
    assert_int_equal(r.kind->kind, GT_KIND_DEPARTMENT);
    assert_false(r.all_projects);

    assert_int_equal(gt_route_parse("/apis/gantry.dev/v1/jobs", &r, &err), 0);
    assert_int_equal(r.type, GT_ROUTE_COLLECTION);
    assert_true(r.all_projects);

    assert_int_equal(gt_route_parse("/apis/gantry.dev/v1/projects/p1/jobs/", &r, &err), 0);
    assert_int_equal(r.type, GT_ROUTE_COLLECTION);
    assert_string_equal(r.project, "p1");

    assert_int_equal(gt_route_parse("/apis/gantry.dev/v1/projects/p1/tasks/t-0/binding", &r, &err),
                     0);
    assert_int_equal(r.type, GT_ROUTE_OBJECT);
    assert_int_equal(r.kind->kind, GT_KIND_TASK);
    assert_string_equal(r.name, "t-0");
    assert_string_equal(r.sub, "binding");

    assert_int_equal(gt_route_parse("/apis/gantry.dev/v1/projects/p1/status", &r, &err), 0);
    assert_int_equal(r.kind->kind, GT_KIND_PROJECT);
    assert_string_equal(r.name, "p1");
    assert_string_equal(r.sub, "status");

    assert_int_equal(gt_route_parse("/apis/gantry.dev/v1/projects/p1", &r, &err), 0);
    assert_int_equal(r.type, GT_ROUTE_OBJECT);
    assert_int_equal(r.kind->kind, GT_KIND_PROJECT);

    assert_int_equal(gt_route_parse("/apis/gantry.dev/v1/events/train.0123456789abcdef", &r, &err),
                     0);
    assert_string_equal(r.name, "train.0123456789abcdef");

    static const char *const bad[] = {
        "/",
        "/apis/gantry.dev/v1",
        "/apis/gantry.dev/v1/widgets",
        "/apis/gantry.dev/v1/job",
        "/apis/gantry.dev/v1/jobs/x",                    /* project-scoped kind needs a project */
        "/apis/gantry.dev/v1/projects/p/nodes",          /* cluster kind inside a project */
        "/apis/gantry.dev/v1/projects/p/jobs/j/binding", /* only tasks bind */
        "/apis/gantry.dev/v1/projects/p/jobs/j/log/x",
        "/apis/gantry.dev/v1/nodes/UPPER",
        "/apis/gantry.dev/v1/nodes//x",
        "/apis/gantry.dev/v1/projects/p/jobs/j/status/x/y/z",
        "/apis/gantry.dev/v2/nodes",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct gt_err e = {0};
        if (gt_route_parse(bad[i], &r, &e) != GT_ENOTFOUND) {
            fail_msg("%s: routed", bad[i]);
        }
        assert_int_equal(e.code, GT_ENOTFOUND);
    }
}

static void test_route_keys(void **state)
{
    (void)state;
    const struct gt_kind_info *jobs = gt_kind_by_plural("jobs");
    const struct gt_kind_info *nodes = gt_kind_by_plural("nodes");
    char *k = gt_route_key(jobs, "p", "j");
    assert_string_equal(k, "/jobs/p/j");
    free(k);
    k = gt_route_key(jobs, "p", NULL);
    assert_string_equal(k, "/jobs/p/");
    free(k);
    k = gt_route_key(jobs, NULL, NULL);
    assert_string_equal(k, "/jobs/");
    free(k);
    k = gt_route_key(nodes, NULL, "n1");
    assert_string_equal(k, "/nodes/n1");
    free(k);
}

static void test_status_body(void **state)
{
    (void)state;
    char field[64];
    gt_status_field("spec.replicaSpecs.Worker.replicas: must be >= 1", field, sizeof(field));
    assert_string_equal(field, "spec.replicaSpecs.Worker.replicas");
    gt_status_field("spec.volumes[0].hostPath: bad", field, sizeof(field));
    assert_string_equal(field, "spec.volumes[0].hostPath");
    gt_status_field("jobs \"x\" not found", field, sizeof(field));
    assert_string_equal(field, "");
    gt_status_field("invalid JSON at line 1 column 2: x", field, sizeof(field));
    assert_string_equal(field, "");

    struct gt_buf b;
    gt_buf_init(&b);
    gt_status_format(&b, GT_EINVAL, "spec.x: must be >= 1", "Job", "train");
    json_t *st = json_loads(b.data, 0, NULL);
    assert_non_null(st);
    assert_string_equal(json_string_value(json_object_get(st, "kind")), "Status");
    assert_string_equal(json_string_value(json_object_get(st, "status")), "Failure");
    assert_int_equal(json_integer_value(json_object_get(st, "code")), 422);
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "Invalid");
    assert_string_equal(json_string_value(json_object_get(st, "message")), "spec.x: must be >= 1");
    assert_string_equal(json_string_value(gt_json_path(st, "details.field")), "spec.x");
    assert_string_equal(json_string_value(gt_json_path(st, "details.kind")), "Job");
    assert_string_equal(json_string_value(gt_json_path(st, "details.name")), "train");
    json_decref(st);

    static const struct {
        int code, http;
        const char *reason;
    } codes[] = {{GT_EBADREQ, 400, "BadRequest"},
                 {GT_EUNAUTH, 401, "Unauthorized"},
                 {GT_EFORBIDDEN, 403, "Forbidden"},
                 {GT_ENOTFOUND, 404, "NotFound"},
                 {GT_EMETHOD, 405, "MethodNotAllowed"},
                 {GT_EEXISTS, 409, "AlreadyExists"},
                 {GT_ECONFLICT, 409, "Conflict"},
                 {GT_EGONE, 410, "Expired"},
                 {GT_ETOOLARGE, 413, "RequestEntityTooLarge"},
                 {GT_ESTORE, 503, "ServiceUnavailable"}};
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        gt_buf_reset(&b);
        gt_status_format(&b, codes[i].code, "m", NULL, NULL);
        st = json_loads(b.data, 0, NULL);
        assert_int_equal(json_integer_value(json_object_get(st, "code")), codes[i].http);
        assert_string_equal(json_string_value(json_object_get(st, "reason")), codes[i].reason);
        json_decref(st);
    }
    /* a message that is not UTF-8 still gives a Status */
    gt_buf_reset(&b);
    gt_status_format(&b, GT_EBADREQ, "bad \xff byte", NULL, NULL);
    st = json_loads(b.data, 0, NULL);
    assert_int_equal(json_integer_value(json_object_get(st, "code")), 400);
    json_decref(st);
    gt_buf_fini(&b);
}

static void test_event_folding(void **state)
{
    (void)state;
    struct gt_event_fold f = {0};
    const int64_t t0 = 1000000;
    const int64_t ttl_ms = 3600000;                    /* --event-ttl's default, in ms */
    assert_int_equal(gt_event_fold_record(&f, t0), 0); /* first: write now */
    gt_event_fold_written(&f, t0);
    assert_false(gt_event_fold_due(&f, t0 + 1));
    /* repeats inside the interval are counted, not written */
    assert_int_equal(gt_event_fold_record(&f, t0 + 1000), GT_EVENT_WRITE_INTERVAL_MS - 1000);
    assert_int_equal(gt_event_fold_record(&f, t0 + 5000), GT_EVENT_WRITE_INTERVAL_MS - 5000);
    assert_int_equal(f.count, 3);
    assert_int_equal(f.written_count, 1);
    assert_int_equal(f.first_ms, t0);
    assert_int_equal(f.last_ms, t0 + 5000);
    assert_false(gt_event_fold_due(&f, t0 + GT_EVENT_WRITE_INTERVAL_MS - 1));
    assert_true(gt_event_fold_due(&f, t0 + GT_EVENT_WRITE_INTERVAL_MS));
    gt_event_fold_written(&f, t0 + GT_EVENT_WRITE_INTERVAL_MS);
    assert_int_equal(f.written_count, 3);
    assert_false(gt_event_fold_due(&f, t0 + 10 * GT_EVENT_WRITE_INTERVAL_MS)); /* nothing new */
    /* after a quiet interval, the next occurrence is written at once */
    assert_int_equal(gt_event_fold_record(&f, t0 + 3 * GT_EVENT_WRITE_INTERVAL_MS), 0);
    assert_int_equal(f.first_ms, t0);

    assert_false(gt_event_expired(t0, t0 + ttl_ms - 1, ttl_ms));
    assert_true(gt_event_expired(t0, t0 + ttl_ms, ttl_ms));

    /* forgotten once written, and its object deleted or the Event expired */
    struct gt_event_fold w = f;
    gt_event_fold_written(&w, w.last_ms);
    assert_false(gt_event_forgettable(&w, false, w.last_ms + 1, ttl_ms));
    assert_true(gt_event_forgettable(&w, true, w.last_ms + 1, ttl_ms));
    assert_true(gt_event_forgettable(&w, false, w.last_ms + ttl_ms, ttl_ms));
    gt_event_fold_record(&w, w.last_ms + 1); /* an occurrence not yet written */
    assert_false(gt_event_forgettable(&w, true, w.last_ms + 1, ttl_ms));
    assert_false(gt_event_forgettable(&w, true, w.last_ms + ttl_ms, ttl_ms));

    char *a = gt_event_name("train", "uid-1", "Created");
    char *b = gt_event_name("train", "uid-1", "Created");
    char *c = gt_event_name("train", "uid-1", "Failed");
    char *d = gt_event_name("train", "uid-2", "Created");
    assert_string_equal(a, b);
    assert_int_equal(strlen(a), strlen("train.") + 16);
    assert_memory_equal(a, "train.", 6);
    assert_string_not_equal(a, c);
    assert_string_not_equal(a, d);
    free(a);
    free(b);
    free(c);
    free(d);
}

static void test_metrics_text(void **state)
{
    (void)state;
    struct gt_metrics m;
    memset(&m, 0, sizeof(m));
    gt_metrics_request(&m, GT_MV_GET, 200, 0.0001);
    gt_metrics_request(&m, GT_MV_GET, 200, 0.002);
    gt_metrics_request(&m, GT_MV_CREATE, 422, 0.02);
    gt_histogram_observe(&m.commit_seconds, 0.004);
    m.objects[GT_KIND_JOB] = 3;
    struct gt_buf b;
    gt_buf_init(&b);
    gt_metrics_render(&m, &b);
    assert_non_null(strstr(b.data, "gantry_http_requests_total{verb=\"GET\",code=\"200\"} 2\n"));
    assert_non_null(strstr(b.data, "gantry_http_requests_total{verb=\"CREATE\",code=\"422\"} 1\n"));
    assert_non_null(
        strstr(b.data, "gantry_http_request_duration_seconds_bucket{le=\"0.0005\"} 1\n"));
    assert_non_null(
        strstr(b.data, "gantry_http_request_duration_seconds_bucket{le=\"0.0025\"} 2\n"));
    assert_non_null(strstr(b.data, "gantry_http_request_duration_seconds_bucket{le=\"+Inf\"} 3\n"));
    assert_non_null(strstr(b.data, "gantry_http_request_duration_seconds_count 3\n"));
    assert_non_null(strstr(b.data, "gantry_store_commit_duration_seconds_count 1\n"));
    assert_non_null(strstr(b.data, "gantry_objects{kind=\"Job\"} 3\n"));
    assert_non_null(strstr(b.data, "# TYPE gantry_objects gauge\n"));
    gt_buf_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults_env_flags),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_config_replica_urls),
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_route_keys),
        cmocka_unit_test(test_status_body),
        cmocka_unit_test(test_event_folding),
        cmocka_unit_test(test_metrics_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
