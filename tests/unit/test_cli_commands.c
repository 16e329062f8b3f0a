/*
 * The gantry commands over real HTTP: a scripted stand-in for gantryd runs
 * on a loopback port in a thread, answers each expected request in order
 * with a canned answer (a watch answer streams its lines, then closes), and
 * records what it received. The tests drive gt_cli_main as the binary does
 * and check both what the client sent (paths, verbs, bodies, token) and
 * what it printed. The real gantryd is exercised by tests/e2e.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/cli.h"

/* One expected request and its answer. */
struct exchange {
    const char *method;
    const char *path; /* with query */
    int status;
    const char *body;          /* answer body (non-stream) */
    const char *const *stream; /* watch: lines sent one by one, then close */
};

struct fake {
    int listen_fd;
    int port;
    pthread_t thread;
    const struct exchange *script;
    size_t n_script;
    size_t next;
    struct gt_buf log; /* "METHOD PATH auth=... body=...\n" per request */
    char failure[2560];
};

static void send_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n <= 0) {
            return;
        }
        data += n;
        len -= (size_t)n;
    }
}

/* Read one request from fd into method/path/auth/body. 0, or -1 at EOF. */
static int read_request(int fd, struct gt_buf *req, char *method, char *path, char *auth,
                        struct gt_buf *body)
{
    char chunk[4096];
    char *end;
    while (!(end = req->data ? strstr(req->data, "\r\n\r\n") : NULL)) {
        ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) {
            return -1;
        }
        gt_buf_append(req, chunk, (size_t)n);
    }
    size_t head_len = (size_t)(end - req->data) + 4;
    if (sscanf(req->data, "%15s %1023s", method, path) != 2) {
        return -1;
    }
    size_t content_len = 0;
    auth[0] = '\0';
    for (char *line = strstr(req->data, "\r\n") + 2; line < end; line = strstr(line, "\r\n") + 2) {
        if (strncasecmp(line, "Content-Length:", 15) == 0) {
            content_len = strtoul(line + 15, NULL, 10);
        } else if (strncasecmp(line, "Authorization: ", 15) == 0) {
            size_t n = (size_t)(strstr(line, "\r\n") - line) - 15;
            snprintf(auth, 128, "%.*s", (int)n, line + 15);
        }
    }
    while (req->len < head_len + content_len) {
        ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) {
            return -1;
        }
        gt_buf_append(req, chunk, (size_t)n);
    }
    gt_buf_reset(body);
    gt_buf_append(body, req->data + head_len, content_len);
    /* Keep any pipelined bytes for the next request. */
    size_t rest = req->len - head_len - content_len;
    memmove(req->data, req->data + head_len + content_len, rest);
    req->len = rest;
    req->data[rest] = '\0';
    return 0;
}

/* Answer one request; returns false when the connection must close. */
static bool answer(struct fake *f, int fd, const char *method, const char *path)
{
    const struct exchange *x = f->next < f->n_script ? &f->script[f->next] : NULL;
    if (!x || strcmp(x->method, method) != 0 || strcmp(x->path, path) != 0) {
        if (!f->failure[0]) {
            snprintf(f->failure, sizeof(f->failure), "request %zu: got %s %s, expected %s %s",
                     f->next, method, path, x ? x->method : "nothing", x ? x->path : "");
        }
        static const char bad[] = "HTTP/1.1 500 Unexpected\r\nContent-Length: 0\r\n\r\n";
        send_all(fd, bad, sizeof(bad) - 1);
        return true;
    }
    f->next++;
    char head[256];
    if (x->stream) {
        int n = snprintf(head, sizeof(head),
                         "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                         "Connection: close\r\n\r\n",
                         x->status);
        send_all(fd, head, (size_t)n);
        for (const char *const *line = x->stream; *line; line++) {
            send_all(fd, *line, strlen(*line));
            usleep(10000);
        }
        return false;
    }
    const char *body = x->body ? x->body : "";
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     x->status, strlen(body));
    send_all(fd, head, (size_t)n);
    send_all(fd, body, strlen(body));
    return true;
}

static void *serve(void *arg)
{
    struct fake *f = arg;
    for (;;) {
        int fd = accept(f->listen_fd, NULL, NULL);
        if (fd < 0) {
            return NULL;
        }
        struct gt_buf req, body;
        gt_buf_init(&req);
        gt_buf_init(&body);
        char method[16], path[1024], auth[128];
        while (read_request(fd, &req, method, path, auth, &body) == 0) {
            gt_buf_printf(&f->log, "%s %s auth=%s body=%s\n", method, path, auth,
                          body.data ? body.data : "");
            if (!answer(f, fd, method, path)) {
                break;
            }
        }
        gt_buf_fini(&req);
        gt_buf_fini(&body);
        close(fd);
    }
}

static struct fake *fake_start(const struct exchange *script, size_t n)
{
    struct fake *f = gt_xcalloc(1, sizeof(*f));
    f->script = script;
    f->n_script = n;
    gt_buf_init(&f->log);
    f->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(f->listen_fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(f->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(f->listen_fd, 8), 0);
    socklen_t len = sizeof(sa);
    assert_int_equal(getsockname(f->listen_fd, (struct sockaddr *)&sa, &len), 0);
    f->port = ntohs(sa.sin_port);
    assert_int_equal(pthread_create(&f->thread, NULL, serve, f), 0);
    return f;
}

/* Stop the server and check every scripted request came, and nothing else. */
static void fake_finish(struct fake *f)
{
    shutdown(f->listen_fd, SHUT_RDWR);
    pthread_join(f->thread, NULL);
    close(f->listen_fd);
    if (f->failure[0]) {
        fail_msg("%s\nlog:\n%s", f->failure, f->log.data ? f->log.data : "");
    }
    if (f->next != f->n_script) {
        fail_msg("only %zu of %zu requests came; log:\n%s", f->next, f->n_script,
                 f->log.data ? f->log.data : "");
    }
    gt_buf_fini(&f->log);
    free(f);
}

struct run_result {
    int rc;
    char *out;
    char *err;
};

/* gantry --server http://127.0.0.1:PORT --token tok ARGS... */
static struct run_result run_cli(struct fake *f, const char *const *args)
{
    char server[64];
    snprintf(server, sizeof(server), "http://127.0.0.1:%d", f->port);
    char *argv[32] = {(char *)"gantry", (char *)"--server", server, (char *)"--token",
                      (char *)"tok"};
    int argc = 5;
    for (size_t i = 0; args[i]; i++) {
        argv[argc++] = (char *)args[i];
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

static char *write_temp(const char *text)
{
    char *path = gt_xstrdup("/tmp/gantry-test-apply-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

#define JOBS "/apis/gantry.dev/v1/projects/detection/jobs"
#define STATUS_422                                                                                 \
    "{\"apiVersion\":\"v1\",\"kind\":\"Status\",\"status\":\"Failure\",\"code\":422,"              \
    "\"reason\":\"Invalid\",\"message\":\"spec.replicaSpecs.Worker.replicas: must be >= 1\"}"

static const char manifest[] = "apiVersion: gantry.dev/v1\n"
                               "kind: Department\n"
                               "metadata: {name: vision}\n"
                               "spec: {quota: {nvidia.com/gpu: 8}}\n"
                               "---\n"
                               "apiVersion: gantry.dev/v1\n"
                               "kind: Job\n"
                               "metadata: {name: train, project: detection}\n"
                               "spec:\n"
                               "  replicaSpecs:\n"
                               "    Worker: {replicas: 1, template: {command: [\"true\"]}}\n";

static void test_apply_creates_then_updates(void **state)
{
    (void)state;
    static const struct exchange script[] = {
        {"GET", "/apis/gantry.dev/v1/departments/vision", 404,
         "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\",\"message\":\"not found\"}",
         NULL},
        {"POST", "/apis/gantry.dev/v1/departments", 201, "{}", NULL},
        {"GET", JOBS "/train", 200,
         "{\"kind\":\"Job\",\"metadata\":{\"name\":\"train\",\"resourceVersion\":\"7\"}}", NULL},
        {"PUT", JOBS "/train", 200, "{}", NULL},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    char *path = write_temp(manifest);
    struct run_result r = run_cli(f, (const char *[]){"apply", "-f", path, NULL});
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "department.gantry.dev/vision created\n"
                               "job.gantry.dev/train configured\n");
    /* Every request carries the token; PUT carries the resourceVersion read. */
    assert_null(strstr(f->log.data, "auth= "));
    assert_non_null(strstr(f->log.data, "POST /apis/gantry.dev/v1/departments auth=Bearer tok "
                                        "body={\"apiVersion\":\"gantry.dev/v1\""));
    const char *put = strstr(f->log.data, "PUT ");
    assert_non_null(put);
    assert_non_null(strstr(put, "\"resourceVersion\":\"7\""));
    fake_finish(f);
    unlink(path);
    free(path);
    run_result_free(&r);
}

static void test_apply_reports_the_failed_document(void **state)
{
    (void)state;
    static const struct exchange script[] = {
        {"GET", "/apis/gantry.dev/v1/departments/vision", 200,
         "{\"metadata\":{\"resourceVersion\":\"3\"}}", NULL},
        {"PUT", "/apis/gantry.dev/v1/departments/vision", 200, "{}", NULL},
        {"GET", JOBS "/train", 404, "{\"kind\":\"Status\",\"code\":404,\"message\":\"nf\"}", NULL},
        {"POST", JOBS, 422, STATUS_422, NULL},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    char *path = write_temp(manifest);
    struct run_result r = run_cli(f, (const char *[]){"apply", "-f", path, NULL});
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.out, "department.gantry.dev/vision configured\n");
    char *want = gt_xasprintf("error: job.gantry.dev \"train\" (document 2 of 2 in %s): "
                              "spec.replicaSpecs.Worker.replicas: must be >= 1\n",
                              path);
    assert_string_equal(r.err, want);
    free(want);
    fake_finish(f);
    unlink(path);
    free(path);
    run_result_free(&r);
}

static void test_apply_converts_kubeflow(void **state)
{
    (void)state;
    static const struct exchange script[] = {
        {"GET", JOBS "/digits", 404, "{\"kind\":\"Status\",\"code\":404,\"message\":\"nf\"}", NULL},
        {"POST", JOBS, 201, "{}", NULL},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    char *path = write_temp("apiVersion: kubeflow.org/v1\n"
                            "kind: PyTorchJob\n"
                            "metadata: {name: digits}\n"
                            "spec:\n"
                            "  pytorchReplicaSpecs:\n"
                            "    Master:\n"
                            "      template:\n"
                            "        spec:\n"
                            "          containers:\n"
                            "            - {name: pytorch, command: [python3, train.py],\n"
                            "               resources: {limits: {nvidia.com/gpu: 1}}}\n");
    struct run_result r =
        run_cli(f, (const char *[]){"apply", "-p", "detection", "-f", path, NULL});
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out,
                        "pytorchjob.kubeflow.org/digits created (as job.gantry.dev/digits)\n");
    /* What is sent is the gantry Job, with Kubeflow's PyTorch restart default. */
    assert_non_null(strstr(f->log.data, "body={\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\""));
    assert_non_null(strstr(f->log.data, "\"project\":\"detection\""));
    assert_non_null(strstr(f->log.data, "\"restartPolicy\":\"OnFailure\""));
    fake_finish(f);
    run_result_free(&r);

    /* An unsupported field fails before anything is sent. */
    f = fake_start(NULL, 0);
    FILE *fp = fopen(path, "w");
    fputs("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: t, namespace: detection}\n"
          "spec: {tfReplicaSpecs: {Worker: {template: {spec: {affinity: {},\n"
          "  containers: [{name: tensorflow, image: tf}]}}}}}\n",
          fp);
    fclose(fp);
    r = run_cli(f, (const char *[]){"apply", "-f", path, NULL});
    assert_int_equal(r.rc, 1);
    char *want = gt_xasprintf("error: document 1 of 1 in %s: tfjob.kubeflow.org \"t\": "
                              "spec.tfReplicaSpecs.Worker.template.spec.affinity: not "
                              "supported by gantry\n",
                              path);
    assert_string_equal(r.err, want);
    free(want);
    fake_finish(f);
    unlink(path);
    free(path);
    run_result_free(&r);
}

static void test_apply_rejects_before_sending(void **state)
{
    (void)state;
    struct fake *f = fake_start(NULL, 0);
    char *path = write_temp("kind: Job\nmetadata: {name: x}\n");
    struct run_result r = run_cli(f, (const char *[]){"apply", "-f", path, NULL});
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "metadata.project: required (or pass -p PROJECT)"));
    run_result_free(&r);

    /* -p supplies the project; a different metadata.project is refused. */
    FILE *fp = fopen(path, "w");
    fputs("kind: Job\nmetadata: {name: x, project: a}\n", fp);
    fclose(fp);
    r = run_cli(f, (const char *[]){"apply", "-p", "b", "-f", path, NULL});
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "metadata.project \"a\" does not match -p \"b\""));
    run_result_free(&r);

    fp = fopen(path, "w");
    fputs("kind: Job\nmetadata: [\n", fp);
    fclose(fp);
    r = run_cli(f, (const char *[]){"apply", "-f", path, NULL});
    assert_int_equal(r.rc, 1);
    assert_true(strncmp(r.err, "error: ", 7) == 0);
    assert_non_null(strstr(r.err, path));
    run_result_free(&r);
    fake_finish(f);
    unlink(path);
    free(path);
}

#define JOB_LIST                                                                                   \
    "{\"kind\":\"JobList\",\"metadata\":{\"resourceVersion\":\"42\"},\"items\":["                  \
    "{\"kind\":\"Job\",\"metadata\":{\"name\":\"train\",\"project\":\"detection\"},"               \
    "\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":2}}},"                                   \
    "\"status\":{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\"}]}}]}"

static void test_get_table_json_name(void **state)
{
    (void)state;
    static const struct exchange script[] = {
        {"GET", JOBS "?labelSelector=team%3Dvision", 200, JOB_LIST, NULL},
        {"GET", JOBS, 200, JOB_LIST, NULL},
        {"GET", JOBS "/train", 200,
         "{\"kind\":\"Job\",\"metadata\":{\"name\":\"train\",\"project\":\"detection\"}}", NULL},
        {"GET", "/apis/gantry.dev/v1/nodes", 200,
         "{\"kind\":\"NodeList\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[]}", NULL},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    struct run_result r =
        run_cli(f, (const char *[]){"get", "jobs", "-p", "detection", "-l", "team=vision", NULL});
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "NAME    STATUS    REASON   REPLICAS   AGE\n"
                               "train   Created   <none>   2          <unknown>\n");
    run_result_free(&r);

    r = run_cli(f, (const char *[]){"get", "job", "--project=detection", "-o", "name", NULL});
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "job.gantry.dev/train\n");
    run_result_free(&r);

    r = run_cli(f, (const char *[]){"get", "jobs", "train", "-p", "detection", "-o", "json", NULL});
    assert_int_equal(r.rc, 0);
    json_t *obj = json_loads(r.out, 0, NULL);
    assert_non_null(obj);
    assert_string_equal(json_string_value(json_object_get(obj, "kind")), "Job");
    json_decref(obj);
    run_result_free(&r);

    r = run_cli(f, (const char *[]){"get", "no", NULL});
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "No resources found.\n");
    run_result_free(&r);
    fake_finish(f);
}

/* With no -p, project-scoped commands use the configuration file's
 * "project" (as kubectl uses its context's namespace); -p and a document's
 * own metadata.project still win. */
static void test_default_project_from_config(void **state)
{
    (void)state;
    static const struct exchange script[] = {
        {"GET", JOBS, 200, JOB_LIST, NULL},
        {"GET", "/apis/gantry.dev/v1/projects/other/jobs", 200, JOB_LIST, NULL},
        {"GET", JOBS "/train", 404,
         "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\",\"message\":\"no\"}", NULL},
        {"POST", JOBS, 201, "{}", NULL},
        {"DELETE", JOBS "/train", 200, "{}", NULL},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    char *cfg = write_temp("{\"project\": \"detection\"}");
    setenv("GANTRY_CONFIG", cfg, 1);
    struct run_result r = run_cli(f, (const char *[]){"get", "jobs", NULL});
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out, "train"));
    run_result_free(&r);
    r = run_cli(f, (const char *[]){"get", "jobs", "-p", "other", NULL});
    assert_int_equal(r.rc, 0);
    run_result_free(&r);
    char *doc = write_temp("kind: Job\n"
                           "metadata: {name: train}\n"
                           "spec:\n"
                           "  replicaSpecs:\n"
                           "    Worker: {replicas: 1, template: {command: [\"true\"]}}\n");
    r = run_cli(f, (const char *[]){"apply", "-f", doc, NULL});
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    run_result_free(&r);
    r = run_cli(f, (const char *[]){"delete", "job", "train", NULL});
    assert_int_equal(r.rc, 0);
    run_result_free(&r);
    setenv("GANTRY_CONFIG", "/nonexistent/gantry-test-config", 1);
    fake_finish(f);
    unlink(doc);
    free(doc);
    unlink(cfg);
    free(cfg);
}

static void test_get_watch_streams_rows(void **state)
{
    (void)state;
    static const char *const events[] = {
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a-much-longer-name\","
        "\"project\":\"detection\"},\"spec\":{\"replicaSpecs\":{}}}}\n",
        /* a line split across writes */
        "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"train\",",
        "\"project\":\"detection\"},\"spec\":{},\"status\":{\"conditions\":"
        "[{\"type\":\"Running\",\"status\":\"True\"}]}}}\n",
        NULL,
    };
    static const struct exchange script[] = {
        {"GET", JOBS, 200, JOB_LIST, NULL},
        {"GET", JOBS "?watch=true&resourceVersion=42", 200, NULL, events},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    struct run_result r =
        run_cli(f, (const char *[]){"get", "jobs", "-p", "detection", "-w", NULL});
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "NAME    STATUS    REASON   REPLICAS   AGE\n"
                               "train   Created   <none>   2          <unknown>\n"
                               "a-much-longer-name   <none>    <none>   0          <unknown>\n"
                               "train                Running   <none>   0          <unknown>\n");
    run_result_free(&r);
    fake_finish(f);
}

static void test_watch_expired(void **state)
{
    (void)state;
    static const struct exchange script[] = {
        {"GET", JOBS, 200, JOB_LIST, NULL},
        {"GET", JOBS "?watch=true&resourceVersion=42", 410,
         "{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":\"too old "
         "resource version: 42 (100)\"}",
         NULL},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    struct run_result r =
        run_cli(f, (const char *[]){"get", "jobs", "-p", "detection", "-w", NULL});
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.err, "error: too old resource version: 42 (100)\n");
    run_result_free(&r);
    fake_finish(f);
}

static void test_describe_with_events(void **state)
{
    (void)state;
    static const struct exchange script[] = {
        {"GET", JOBS "/train", 200,
         "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"train\","
         "\"project\":\"detection\"},\"spec\":{\"replicaSpecs\":{}}}",
         NULL},
        {"GET", "/apis/gantry.dev/v1/events?fieldSelector=involvedObject.name%3Dtrain", 200,
         "{\"kind\":\"EventList\",\"items\":["
         "{\"type\":\"Normal\",\"reason\":\"Created\",\"message\":\"job created\","
         "\"involvedObject\":{\"kind\":\"Job\",\"name\":\"train\",\"project\":\"detection\"}},"
         "{\"type\":\"Normal\",\"reason\":\"Other\",\"message\":\"another project\","
         "\"involvedObject\":{\"kind\":\"Job\",\"name\":\"train\",\"project\":\"nlp\"}},"
         "{\"type\":\"Normal\",\"reason\":\"Other\",\"message\":\"another kind\","
         "\"involvedObject\":{\"kind\":\"Task\",\"name\":\"train\",\"project\":\"detection\"}}"
         "]}",
         NULL},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    struct run_result r =
        run_cli(f, (const char *[]){"describe", "job", "train", "-p", "detection", NULL});
    assert_int_equal(r.rc, 0);
    assert_true(strncmp(r.out, "Name:              train\nProject:           detection\n", 52) ==
                0);
    assert_non_null(strstr(r.out, "\nSpec:\n  Replica Specs:  <none>\nEvents:\n  Type "));
    assert_non_null(strstr(r.out, "job created"));
    assert_null(strstr(r.out, "another"));
    run_result_free(&r);
    fake_finish(f);
}

static void test_delete_and_errors(void **state)
{
    (void)state;
    static const struct exchange script[] = {
        {"DELETE", JOBS "/train", 200, "{}", NULL},
        {"DELETE", JOBS "/ghost", 404,
         "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\",\"message\":\"jobs "
         "\\\"ghost\\\" not found\"}",
         NULL},
        {"GET", "/apis/gantry.dev/v1/nodes/n1", 401,
         "{\"kind\":\"Status\",\"code\":401,\"reason\":\"Unauthorized\",\"message\":\"unknown "
         "token\"}",
         NULL},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    struct run_result r =
        run_cli(f, (const char *[]){"delete", "jobs", "train", "ghost", "-p", "detection", NULL});
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.out, "job.gantry.dev \"train\" deleted\n");
    assert_string_equal(r.err, "error: jobs \"ghost\" not found\n");
    run_result_free(&r);

    r = run_cli(f, (const char *[]){"get", "node", "n1", NULL});
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.err, "error: unknown token\n");
    run_result_free(&r);
    fake_finish(f);
}

#define TASKS "/apis/gantry.dev/v1/projects/detection/tasks"
#define TASK_EVENT(type, status)                                                                   \
    "{\"type\":\"" type "\",\"object\":{\"metadata\":{\"name\":\"x-worker-0\","                    \
    "\"project\":\"detection\"},\"spec\":{},\"status\":" status "}}\n"

/* `run` reads its task, then watches it from the version read */
#define TASK_X TASKS "/x-worker-0"
#define TASK_OBJ(rv, status)                                                                       \
    "{\"metadata\":{\"name\":\"x-worker-0\",\"project\":\"detection\",\"resourceVersion\":\"" rv   \
    "\"},\"spec\":{},\"status\":" status "}"
#define WATCH_X_FROM(rv)                                                                           \
    TASKS "?watch=true&resourceVersion=" rv "&fieldSelector=metadata.name%3Dx-worker-0"

#define WATCH_JOB_X JOBS "?watch=true&resourceVersion=0&fieldSelector=metadata.name%3Dx"
#define JOB_EVENT(type, conds)                                                                     \
    "{\"type\":\"" type "\",\"object\":{\"metadata\":{\"name\":\"x\",\"project\":\"detection\"},"  \
    "\"status\":{\"conditions\":" conds "}}}\n"
#define QUEUED(msg) "{\"type\":\"Queued\",\"status\":\"True\",\"message\":\"" msg "\"}"

/* The job is past its queue at once. */
static const char *const job_running[] = {
    JOB_EVENT("ADDED", "[" QUEUED("") ",{\"type\":\"Running\",\"status\":\"True\"}]"),
    NULL,
};

static void test_run_follows_and_exits_with_task_status(void **state)
{
    (void)state;
    static const char *const started[] = {
        TASK_EVENT("MODIFIED", "{\"phase\":\"Bound\"}"),
        TASK_EVENT("MODIFIED", "{\"phase\":\"Running\",\"startTime\":\"2026-01-01T00:00:00Z\"}"),
        NULL,
    };
    static const char *const log[] = {"0,1 GPU-a,GPU-b\n", "65534\n", NULL};
    static const char *const done[] = {
        TASK_EVENT("MODIFIED", "{\"phase\":\"Failed\",\"exitCode\":3,\"reason\":\"Error\"}"),
        NULL,
    };
    static const struct exchange script[] = {
        {"POST", JOBS, 201, "{}", NULL},
        {"GET", WATCH_JOB_X, 200, NULL, job_running},
        {"GET", TASK_X, 200, TASK_OBJ("5", "{\"phase\":\"Pending\"}"), NULL},
        {"GET", WATCH_X_FROM("5"), 200, NULL, started},
        {"GET", TASKS "/x-worker-0/log?follow=true", 200, NULL, log},
        {"GET", TASK_X, 200, TASK_OBJ("7", "{\"phase\":\"Running\"}"), NULL},
        {"GET", WATCH_X_FROM("7"), 200, NULL, done},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    struct run_result r =
        run_cli(f, (const char *[]){"run", "-p", "detection", "--name", "x", "--gpus", "2",
                                    "--memory", "1Gi", "--", "sh", "-c", "echo hi", NULL});
    assert_string_equal(r.err, "job.gantry.dev/x created\n");
    assert_string_equal(r.out, "0,1 GPU-a,GPU-b\n65534\n");
    assert_int_equal(r.rc, 3);
    assert_non_null(strstr(f->log.data, "\"command\":[\"sh\",\"-c\",\"echo hi\"]"));
    assert_non_null(strstr(f->log.data, "\"limits\":{\"nvidia.com/gpu\":2,\"memory\":\"1Gi\"}"));
    run_result_free(&r);
    fake_finish(f);
}

/* A job deleted while `run` waits ends the wait with the reason: before it
 * ran (the job's watch says DELETED), or while it ran (its task is gone). */
static void test_run_job_deleted(void **state)
{
    (void)state;
    static const char *const deleted[] = {
        JOB_EVENT("ADDED", "[" QUEUED("") "]"),
        JOB_EVENT("DELETED", "[" QUEUED("") "]"),
        NULL,
    };
    static const struct exchange before[] = {
        {"POST", JOBS, 201, "{}", NULL},
        {"GET", WATCH_JOB_X, 200, NULL, deleted},
    };
    struct fake *f = fake_start(before, GT_ARRAY_LEN(before));
    struct run_result r =
        run_cli(f, (const char *[]){"run", "-p", "detection", "--name", "x", "--", "true", NULL});
    assert_string_equal(r.err, "job.gantry.dev/x created\n"
                               "error: job x was deleted before it ran\n");
    assert_int_equal(r.rc, 1);
    run_result_free(&r);
    fake_finish(f);

    static const char *const log[] = {"hi\n", NULL};
    static const struct exchange during[] = {
        {"POST", JOBS, 201, "{}", NULL},
        {"GET", WATCH_JOB_X, 200, NULL, job_running},
        {"GET", TASK_X, 200, TASK_OBJ("5", "{\"phase\":\"Running\",\"startTime\":\"x\"}"), NULL},
        {"GET", TASKS "/x-worker-0/log?follow=true", 200, NULL, log},
        {"GET", TASK_X, 404, "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"}", NULL},
    };
    f = fake_start(during, GT_ARRAY_LEN(during));
    r = run_cli(f, (const char *[]){"run", "-p", "detection", "--name", "x", "--", "true", NULL});
    assert_string_equal(r.out, "hi\n");
    assert_string_equal(r.err, "job.gantry.dev/x created\n"
                               "error: task x-worker-0 was deleted\n");
    assert_int_equal(r.rc, 1);
    run_result_free(&r);
    fake_finish(f);
}

static void test_run_task_lost_before_start(void **state)
{
    (void)state;
    /* Failed while Bound (no startTime): no log is read, exit 1 with why. */
    /* While it waits, each new reason is said once. */
    static const char *const queued[] = {
        JOB_EVENT("ADDED", "[" QUEUED("") "]"),
        JOB_EVENT("MODIFIED", "[" QUEUED("Unschedulable: no node fits: needs 16 GPUs") "]"),
        JOB_EVENT("MODIFIED", "[" QUEUED("Unschedulable: no node fits: needs 16 GPUs") "]"),
        JOB_EVENT("MODIFIED", "[" QUEUED("Quota: department d: needs nvidia.com/gpu 16") "]"),
        JOB_EVENT("MODIFIED", "[{\"type\":\"Failed\",\"status\":\"True\"}]"),
        NULL,
    };
    static const struct exchange script[] = {
        {"POST", JOBS, 201, "{}", NULL},
        {"GET", WATCH_JOB_X, 200, NULL, queued},
        {"GET", TASK_X, 200, TASK_OBJ("5", "{\"phase\":\"Failed\",\"reason\":\"NodeLost\"}"), NULL},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    struct run_result r =
        run_cli(f, (const char *[]){"run", "-p", "detection", "--name", "x", "--", "true", NULL});
    assert_string_equal(r.err, "job.gantry.dev/x created\n"
                               "waiting: Unschedulable: no node fits: needs 16 GPUs\n"
                               "waiting: Quota: department d: needs nvidia.com/gpu 16\n"
                               "error: task x-worker-0 ended Failed: NodeLost\n");
    assert_int_equal(r.rc, 1);
    run_result_free(&r);

    /* A bad quantity is refused before anything is sent. */
    r = run_cli(f, (const char *[]){"run", "-p", "detection", "--cpu", "x", "--", "true", NULL});
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err, "limits.cpu"));
    run_result_free(&r);
    r = run_cli(f, (const char *[]){"run", "-p", "detection", NULL});
    assert_int_equal(r.rc, 2);
    run_result_free(&r);
    fake_finish(f);
}

static void test_logs_picks_task(void **state)
{
    (void)state;
    static const char *const log[] = {"line 1\n", "line 2\n", NULL};
    /* -f waits for the task to start before following its log. */
    static const char *const started[] = {
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"train-worker-1\","
        "\"project\":\"detection\"},\"spec\":{},\"status\":{\"phase\":\"Running\"}}}\n",
        NULL,
    };
    static const struct exchange script[] = {
        {"GET", JOBS "/train", 200,
         "{\"kind\":\"Job\",\"spec\":{\"replicaSpecs\":{\"Worker\":{},\"Master\":{}}}}", NULL},
        {"GET", TASKS "/train-master-0/log?tailLines=2", 200, NULL, log},
        {"GET", TASKS "?watch=true&resourceVersion=0&fieldSelector=metadata.name%3Dtrain-worker-1",
         200, NULL, started},
        {"GET", TASKS "/train-worker-1/log?follow=true", 200, NULL, log},
        {"GET", TASKS "/train-worker-0/log", 404,
         "{\"kind\":\"Status\",\"code\":404,\"message\":\"tasks \\\"train-worker-0\\\" not "
         "found\"}",
         NULL},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    struct run_result r =
        run_cli(f, (const char *[]){"logs", "train", "-p", "detection", "--tail", "2", NULL});
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "line 1\nline 2\n");
    run_result_free(&r);
    r = run_cli(f, (const char *[]){"logs", "train", "-f", "--replica", "worker-1", "-p",
                                    "detection", NULL});
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "line 1\nline 2\n");
    run_result_free(&r);
    r = run_cli(f,
                (const char *[]){"logs", "train", "--replica=worker-0", "-p", "detection", NULL});
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.err, "error: tasks \"train-worker-0\" not found\n");
    run_result_free(&r);
    r = run_cli(f, (const char *[]){"logs", "train", "--tail", "-3", "-p", "detection", NULL});
    assert_int_equal(r.rc, 2);
    run_result_free(&r);
    fake_finish(f);
}

#define NODE_1 "/apis/gantry.dev/v1/nodes/gpu-1"
#define NODE_1_TASKS "/apis/gantry.dev/v1/tasks?fieldSelector=spec.nodeName%3Dgpu-1"
#define NODE_1_AT(rv, spec)                                                                        \
    "{\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-1\",\"resourceVersion\":\"" rv "\"},"         \
    "\"spec\":" spec ",\"status\":{\"allocated\":{\"resources\":{\"cpu\":\"1\"}}}}"
#define STATUS_409                                                                                 \
    "{\"kind\":\"Status\",\"code\":409,\"reason\":\"Conflict\",\"message\":\"stale\"}"

/* cordon reads the Node, writes it back conditional on its
 * resourceVersion without the computed status.allocated, and on a conflict
 * reads it again; uncordon of a schedulable node writes nothing. */
static void test_cordon_retries_conflict(void **state)
{
    (void)state;
    static const struct exchange script[] = {
        {"GET", NODE_1, 200, NODE_1_AT("5", "{}"), NULL},
        {"PUT", NODE_1, 409, STATUS_409, NULL},
        {"GET", NODE_1, 200, NODE_1_AT("6", "{\"taints\":[{\"key\":\"gpu\"}]}"), NULL},
        {"PUT", NODE_1, 200, "{}", NULL},
        {"GET", NODE_1, 200, NODE_1_AT("7", "{}"), NULL},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    struct run_result r = run_cli(f, (const char *[]){"cordon", "gpu-1", NULL});
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "node/gpu-1 cordoned\n");
    assert_string_equal(r.err, "");
    run_result_free(&r);
    r = run_cli(f, (const char *[]){"uncordon", "gpu-1", NULL});
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "node/gpu-1 already uncordoned\n");
    run_result_free(&r);
    const char *put2 = strstr(strstr(f->log.data, "PUT ") + 4, "PUT ");
    assert_non_null(put2);
    /* the second write carries the re-read object, cordoned, other taints kept */
    assert_non_null(strstr(put2, "\"resourceVersion\":\"6\""));
    assert_non_null(strstr(put2, "\"unschedulable\":true"));
    assert_non_null(strstr(put2, "\"key\":\"gpu\""));
    assert_null(strstr(f->log.data, "\"allocated\""));
    fake_finish(f);
}

/* drain cordons and taints, then polls the node's tasks until none holds
 * resources; a failing read ends it with the server's message. */
static void test_drain_waits_for_tasks(void **state)
{
    (void)state;
    static const struct exchange script[] = {
        {"GET", NODE_1, 200, NODE_1_AT("5", "{}"), NULL},
        {"PUT", NODE_1, 200, "{}", NULL},
        {"GET", NODE_1_TASKS, 200,
         "{\"items\":[{\"status\":{\"phase\":\"Terminating\"}},{\"status\":{\"phase\":"
         "\"Succeeded\"}}]}",
         NULL},
        {"GET", NODE_1_TASKS, 200,
         "{\"items\":[{\"status\":{\"phase\":\"Failed\"}},{\"status\":{\"phase\":\"Succeeded\"}},"
         "{\"status\":{\"phase\":\"Pending\"}}]}",
         NULL},
        {"GET", NODE_1, 401,
         "{\"kind\":\"Status\",\"code\":401,\"reason\":\"Unauthorized\",\"message\":\"unknown "
         "token\"}",
         NULL},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    struct run_result r = run_cli(f, (const char *[]){"drain", "gpu-1", NULL});
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "node/gpu-1 cordoned\nnode/gpu-1 drained\n");
    run_result_free(&r);
    assert_non_null(strstr(f->log.data, "\"key\":\"gantry.dev/drain\",\"effect\":\"NoExecute\""));
    r = run_cli(f, (const char *[]){"drain", "gpu-1", "--timeout", "0", NULL});
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "error: unknown token\n");
    run_result_free(&r);
    fake_finish(f);
}

/* top nodes: one GET of the node list, rendered as the table. */
static void test_top_nodes(void **state)
{
    (void)state;
    static const struct exchange script[] = {
        {"GET", "/apis/gantry.dev/v1/nodes", 200,
         "{\"items\":[{\"metadata\":{\"name\":\"gpu-1\"},\"status\":{\"allocatable\":"
         "{\"nvidia.com/gpu\":4,\"cpu\":\"8\",\"memory\":\"64Gi\"},\"allocated\":{\"resources\":"
         "{\"nvidia.com/gpu\":\"4\",\"cpu\":\"2\",\"memory\":\"48Gi\"}}}}]}",
         NULL},
        {"GET", "/apis/gantry.dev/v1/nodestats", 200,
         "{\"items\":[{\"node\":\"gpu-1\",\"tasks\":2,\"cpuMilli\":1500,"
         "\"memoryBytes\":2147483648,\"gpuMilli\":4000,\"gpuUtil\":80}]}",
         NULL},
        {"GET", "/apis/gantry.dev/v1/jobstats", 200,
         "{\"items\":[{\"project\":\"p\",\"job\":\"train\",\"tasks\":2,\"gpuMilli\":1500,"
         "\"gpuUtil\":42.4,\"gpuMemoryBytes\":1073741824,\"cpuMilli\":2500,"
         "\"memoryBytes\":536870912}]}",
         NULL},
    };
    struct fake *f = fake_start(script, GT_ARRAY_LEN(script));
    struct run_result r = run_cli(f, (const char *[]){"top", "nodes", NULL});
    assert_int_equal(r.rc, 0);
    assert_string_equal(
        r.out, "NAME    GPUS USED   GPUS   GPU%   CPU USED   CPU%   MEMORY USED   MEMORY%   "
               "CPU(cores)   MEMORY(bytes)   GPU UTIL\n"
               "gpu-1   4           4      100%   2          25%    48Gi          75%       "
               "1500m        2Gi             80%\n");
    run_result_free(&r);
    r = run_cli(f, (const char *[]){"top", "jobs", NULL});
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out,
                        "PROJECT   JOB     TASKS   GPUS    GPU%   GPU MEM   CPU     MEMORY\n"
                        "p         train   2       1500m   42%    1Gi       2500m   512Mi\n");
    run_result_free(&r);
    r = run_cli(f, (const char *[]){"top", "tasks", NULL});
    assert_int_equal(r.rc, 2);
    assert_true(strstr(r.err, "only 'top nodes' and 'top jobs' are supported") != NULL);
    run_result_free(&r);
    fake_finish(f);
}

int main(void)
{
    /* No configuration file of the person running the tests. */
    setenv("GANTRY_CONFIG", "/nonexistent/gantry-test-config", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply_creates_then_updates),
        cmocka_unit_test(test_apply_reports_the_failed_document),
        cmocka_unit_test(test_apply_converts_kubeflow),
        cmocka_unit_test(test_apply_rejects_before_sending),
        cmocka_unit_test(test_get_table_json_name),
        cmocka_unit_test(test_default_project_from_config),
        cmocka_unit_test(test_get_watch_streams_rows),
        cmocka_unit_test(test_watch_expired),
        cmocka_unit_test(test_describe_with_events),
        cmocka_unit_test(test_delete_and_errors),
        cmocka_unit_test(test_run_follows_and_exits_with_task_status),
        cmocka_unit_test(test_run_task_lost_before_start),
        cmocka_unit_test(test_run_job_deleted),
        cmocka_unit_test(test_logs_picks_task),
        cmocka_unit_test(test_cordon_retries_conflict),
        cmocka_unit_test(test_drain_waits_for_tasks),
        cmocka_unit_test(test_top_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
