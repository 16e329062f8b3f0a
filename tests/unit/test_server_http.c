/*
 * gantryd's transport in one process: a daemon over the memory store with
 * its real HTTP listener on a loopback port, driven by a plain socket
 * client between turns of the event loop. Routes (status codes, 401/403/404),
 * writes (create, conditional replace, delete, the resourceVersion they
 * answer) and watch streams (each event's type and the resourceVersion
 * spliced into its object) are checked on the wire.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/server_int.h"

#define TOKEN "t-admin"
#define BASE GT_API_GROUP_PREFIX

struct env {
    struct gt_server_config cfg;
    struct gt_server s;
    uint16_t port;
};

static void env_open(struct env *e)
{
    memset(e, 0, sizeof(*e));
    char *argv[] = {"gantryd",   "--data-dir", "/nonexistent", "--token-file",
                    "/dev/null", "--listen",   "127.0.0.1:0",  NULL};
    bool help = false;
    assert_int_equal(gt_server_config_parse(&e->cfg, 7, argv, NULL, &help, NULL), 0);
    gt_log_set_level(GT_LOG_WARN);
    e->s.cfg = &e->cfg;
    e->s.base = event_base_new();
    struct gt_store_options o = {
        .backend = &gt_store_memory_backend, .base = e->s.base, .watch_history = 100};
    assert_int_equal(gt_store_open(&o, &e->s.store, NULL), 0);
    const char tokens[] = TOKEN ",admin,0,\"gantry:admins\"\nt-bob,bob,1002\n"
                                "t-n1,system:node:n1,65534,\"gantry:nodes\"\n"
                                "t-n2,system:node:n2,65534,\"gantry:nodes\"\n"
                                "t-nodes,node-agents,65534,\"gantry:nodes\"\n";
    assert_int_equal(gt_server_tokens_parse(tokens, strlen(tokens), &e->s.tokens, NULL), 0);
    struct gt_err err = {0};
    if (gt_server_start(&e->s, &err) != 0) {
        fail_msg("%s", err.msg);
    }
    struct sockaddr_in in;
    socklen_t len = sizeof(in);
    assert_int_equal(
        getsockname(evhttp_bound_socket_get_fd(e->s.bound), (struct sockaddr *)&in, &len), 0);
    e->port = ntohs(in.sin_port);
}

static void env_close(struct env *e)
{
    gt_server_stop(&e->s);
    gt_server_config_fini(&e->cfg);
}

static int client_connect(struct env *e)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons(e->port)};
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&in, sizeof(in)), 0);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static void client_send(int fd, const char *method, const char *path, const char *token,
                        const char *body)
{
    char head[1024];
    size_t blen = body ? strlen(body) : 0;
    int n = snprintf(head, sizeof(head),
                     "%s %s HTTP/1.1\r\nHost: x\r\n%s%s%sContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     method, path, token ? "Authorization: Bearer " : "", token ? token : "",
                     token ? "\r\n" : "", blen);
    assert_true(n > 0 && (size_t)n < sizeof(head));
    assert_int_equal(write(fd, head, (size_t)n), n);
    if (blen) {
        assert_int_equal(write(fd, body, blen), (ssize_t)blen);
    }
}

/* Turn the loop and read what fd has until until(out) holds (NULL: never),
 * EOF, or turns turns of about a millisecond. */
static void pump_for(struct env *e, int fd, struct gt_buf *out,
                     bool (*until)(const struct gt_buf *), int turns)
{
    for (int i = 0; i < turns; i++) {
        event_base_loop(e->s.base, EVLOOP_NONBLOCK);
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0) {
            gt_buf_append(out, buf, (size_t)n);
        } else if (n == 0) {
            return;
        } else if (errno != EAGAIN) {
            return;
        }
        if (until && until(out)) {
            return;
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static void pump(struct env *e, int fd, struct gt_buf *out, bool (*until)(const struct gt_buf *))
{
    pump_for(e, fd, out, until, 5000);
}

struct reply {
    int code;
    json_t *body; /* parsed, or NULL */
};

/* One request on its own connection; the reply's code and JSON body. */
static struct reply request(struct env *e, const char *method, const char *path, const char *token,
                            const char *body)
{
    int fd = client_connect(e);
    client_send(fd, method, path, token, body);
    struct gt_buf b;
    gt_buf_init(&b);
    pump(e, fd, &b, NULL);
    close(fd);
    struct reply r = {0};
    assert_true(b.len > 12);
    r.code = (int)strtol(b.data + 9, NULL, 10); /* "HTTP/1.1 200" */
    const char *start = strstr(b.data, "\r\n\r\n");
    r.body = start ? json_loads(start + 4, 0, NULL) : NULL;
    gt_buf_fini(&b);
    return r;
}

static const char *rv_of(const json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
}

static char *dept(const char *name, int gpus)
{
    return gt_xasprintf("{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Department\","
                        "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"quota\":"
                        "{\"nvidia.com/gpu\":%d}}}",
                        name, gpus);
}

/* A PriorityClass: served by splicing the version into the stored text
 * (Departments and Nodes are parsed for their computed status). rv: its
 * metadata.resourceVersion, or NULL. */
static char *pc(const char *name, int value, const char *rv)
{
    return gt_xasprintf("{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"PriorityClass\","
                        "\"metadata\":{\"name\":\"%s\"%s%s%s},\"value\":%d}",
                        name, rv ? ",\"resourceVersion\":\"" : "", rv ? rv : "", rv ? "\"" : "",
                        value);
}

static void test_routes(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    struct reply r = request(&e, "GET", "/healthz", NULL, NULL);
    assert_int_equal(r.code, 200);
    json_decref(r.body);
    r = request(&e, "GET", BASE "/departments", NULL, NULL);
    assert_int_equal(r.code, 401);
    json_decref(r.body);
    r = request(&e, "GET", BASE "/bogus", TOKEN, NULL);
    assert_int_equal(r.code, 404);
    assert_string_equal(json_string_value(json_object_get(r.body, "kind")), "Status");
    json_decref(r.body);
    r = request(&e, "GET", BASE "/departments/none", TOKEN, NULL);
    assert_int_equal(r.code, 404);
    assert_string_equal(json_string_value(json_object_get(r.body, "reason")), "NotFound");
    json_decref(r.body);
    r = request(&e, "GET", BASE "/departments", TOKEN, NULL);
    assert_int_equal(r.code, 200);
    assert_int_equal(json_array_size(json_object_get(r.body, "items")), 0);
    json_decref(r.body);
    /* a member of no project may not create departments */
    char *d = dept("d1", 1);
    r = request(&e, "POST", BASE "/departments", "t-bob", d);
    assert_int_equal(r.code, 403);
    json_decref(r.body);
    /* a Department is parsed on reads (its status is computed): its
     * version is set, not spliced */
    r = request(&e, "POST", BASE "/departments", TOKEN, d);
    assert_int_equal(r.code, 201);
    json_decref(r.body);
    free(d);
    r = request(&e, "GET", BASE "/departments/d1", TOKEN, NULL);
    assert_int_equal(r.code, 200);
    char want[24];
    snprintf(want, sizeof(want), "%lld", (long long)gt_store_revision(e.s.store));
    assert_string_equal(rv_of(r.body), want);
    assert_non_null(json_object_get(json_object_get(r.body, "status"), "used"));
    json_decref(r.body);
    env_close(&e);
}

/* GET of path with token, asked again (each request turns the loop, so
 * the controllers' cache catches up with the writes before) until it
 * answers want or 200 tries passed: the last code. */
static int code_when_cached(struct env *e, const char *path, const char *token, int want)
{
    int code = 0;
    for (int i = 0; i < 200 && code != want; i++) {
        struct reply r = request(e, "GET", path, token, NULL);
        json_decref(r.body);
        code = r.code;
    }
    return code;
}

/* The message of an answer (borrowed from r), or "". */
static const char *message_of(const struct reply *r)
{
    const char *m = json_string_value(json_object_get(r->body, "message"));
    return m ? m : "";
}

static void expect_code(struct env *e, const char *method, const char *path, const char *token,
                        const char *body, int code, const char *in_message)
{
    struct reply r = request(e, method, path, token, body);
    if (r.code != code || (in_message && !strstr(message_of(&r), in_message))) {
        fail_msg("%s %s as %s: %d \"%s\", want %d with \"%s\"", method, path, token, r.code,
                 message_of(&r), code, in_message ? in_message : "");
    }
    json_decref(r.body);
}

/* Department d1 (1 GPU) and its project p, as the admin. */
static void seed_project(struct env *e)
{
    char *d = dept("d1", 1);
    expect_code(e, "POST", BASE "/departments", TOKEN, d, 201, NULL);
    free(d);
    expect_code(e, "POST", BASE "/projects", TOKEN,
                "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Project\",\"metadata\":{\"name\":"
                "\"p\"},\"spec\":{\"department\":\"d1\"}}",
                201, NULL);
}

/* A task's secrets are for the agent of its node only; references to them
 * are gantryd's to write. */
static void test_task_secrets(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
#define TASK_FMT                                                                                   \
    "{\"apiVersion\":\"gantry.dev/"                                                                \
    "v1\",\"kind\":\"Task\",\"metadata\":{\"name\":\"t\",\"project\":"                             \
    "\"p\"},\"spec\":{\"job\":\"j\",\"nodeName\":\"n1\",\"template\":{\"command\":[\"true\"]%s}}}"
    char *ref = gt_xasprintf(TASK_FMT, ",\"env\":[{\"name\":\"T\",\"valueFrom\":"
                                       "{\"gantrySecret\":\"notebook-token\"}}]");
    seed_project(&e);
    struct reply r = request(&e, "POST", BASE "/projects/p/tasks", TOKEN, ref);
    assert_int_equal(r.code, 422);
    assert_non_null(strstr(json_string_value(json_object_get(r.body, "message")),
                           "spec.template.env[0].valueFrom.gantrySecret: set only by gantryd"));
    json_decref(r.body);
    free(ref);
    char *plain = gt_xasprintf(TASK_FMT, "");
#undef TASK_FMT
    r = request(&e, "POST", BASE "/projects/p/tasks", TOKEN, plain);
    assert_int_equal(r.code, 201);
    json_decref(r.body);
    free(plain);
    const char *path = BASE "/projects/p/tasks/t/secrets";
    assert_int_equal(code_when_cached(&e, path, "t-n1", 200), 200);
    r = request(&e, "GET", path, "t-n1", NULL);
    assert_string_equal(json_string_value(json_object_get(r.body, "kind")), "TaskSecrets");
    assert_int_equal(json_array_size(json_object_get(r.body, "env")), 0);
    json_decref(r.body);
    static const struct {
        const char *token;
        int code;
    } asks[] = {{TOKEN, 403}, {"t-bob", 403}, {"t-n2", 403}, {NULL, 401}};
    for (size_t i = 0; i < GT_ARRAY_LEN(asks); i++) {
        r = request(&e, "GET", path, asks[i].token, NULL);
        assert_int_equal(r.code, asks[i].code);
        json_decref(r.body);
    }
    r = request(&e, "GET", BASE "/projects/p/tasks/t/secrets?uid=another-run", "t-n1", NULL);
    assert_int_equal(r.code, 404);
    json_decref(r.body);
    r = request(&e, "POST", path, "t-n1", "{}");
    assert_int_equal(r.code, 405);
    json_decref(r.body);
    env_close(&e);
}

/* NodeRestriction: system:node:NAME writes only Node NAME and the status of
 * tasks bound to NAME (decided on the stored task, not the body). */
static void test_node_restriction(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
#define NODE_FMT                                                                                   \
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"}}"
#define TASK_FMT                                                                                   \
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Task\",\"metadata\":{\"name\":\"%s\","           \
    "\"project\":\"p\"},\"spec\":{\"job\":\"j\"%s,\"template\":{\"command\":[\"true\"]}}}"
    const char *rule = "NodeRestriction";
    char *n1 = gt_xasprintf(NODE_FMT, "n1");
    char *n3 = gt_xasprintf(NODE_FMT, "n3");
    expect_code(&e, "POST", BASE "/nodes", "t-n1", n1, 201, NULL);
    expect_code(&e, "POST", BASE "/nodes", "t-n1", n3, 403, rule);
    expect_code(&e, "PUT", BASE "/nodes/n1", "t-n2", n1, 403, rule);
    expect_code(&e, "PUT", BASE "/nodes/n1/status", "t-n2", "{\"status\":{}}", 403, rule);
    expect_code(&e, "DELETE", BASE "/nodes/n1", "t-n2", NULL, 403, rule);
    expect_code(&e, "PUT", BASE "/nodes/n1", "t-n1", n1, 200, NULL);
    free(n1);
    free(n3);
    seed_project(&e);
    char *bound = gt_xasprintf(TASK_FMT, "bound", ",\"nodeName\":\"n1\"");
    char *unbound = gt_xasprintf(TASK_FMT, "unbound", "");
    expect_code(&e, "POST", BASE "/projects/p/tasks", TOKEN, bound, 201, NULL);
    expect_code(&e, "POST", BASE "/projects/p/tasks", TOKEN, unbound, 201, NULL);
    free(bound);
    free(unbound);
#undef NODE_FMT
#undef TASK_FMT
    const char *running = "{\"status\":{\"phase\":\"Running\"}}";
    expect_code(&e, "PUT", BASE "/projects/p/tasks/bound/status", "t-n2", running, 403, rule);
    expect_code(&e, "PUT", BASE "/projects/p/tasks/unbound/status", "t-n1", running, 403, rule);
    expect_code(&e, "PUT", BASE "/projects/p/tasks/bound/status", "t-n1", running, 200, NULL);
    expect_code(&e, "PUT", BASE "/projects/p/tasks/bound/status", TOKEN, running, 403, NULL);
    env_close(&e);
}

/* The details.field of an answer (borrowed from r), or "". */
static const char *field_of(const struct reply *r)
{
    const char *f = json_string_value(gt_json_path(r->body, "details.field"));
    return f ? f : "";
}

/* A task's status is written only for its current run: a body naming
 * another uid (the old run of a task replaced in place by a restart or
 * requeue) is refused 409 naming metadata.uid, whichever node credential
 * sends it; a task bound to no node takes no status (409 naming
 * spec.nodeName); neither write changes the task. */
static void test_task_status_run(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    seed_project(&e);
    expect_code(&e, "POST", BASE "/projects/p/tasks", TOKEN,
                "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Task\",\"metadata\":{\"name\":"
                "\"t\",\"project\":\"p\"},\"spec\":{\"job\":\"j\",\"nodeName\":\"n1\","
                "\"template\":{\"command\":[\"true\"]}}}",
                201, NULL);
    expect_code(&e, "POST", BASE "/projects/p/tasks", TOKEN,
                "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Task\",\"metadata\":{\"name\":"
                "\"u\",\"project\":\"p\"},\"spec\":{\"job\":\"j\",\"template\":"
                "{\"command\":[\"true\"]}}}",
                201, NULL);
    struct reply r = request(&e, "GET", BASE "/projects/p/tasks/t", TOKEN, NULL);
    assert_int_equal(r.code, 200);
    char *uid = gt_xstrdup(json_string_value(gt_json_path(r.body, "metadata.uid")));
    json_decref(r.body);
    const char *path = BASE "/projects/p/tasks/t/status";
    const char *old_run = "{\"metadata\":{\"uid\":\"an-old-run\"},\"status\":{\"phase\":"
                          "\"Running\"}}";
    const char *tokens[] = {"t-n1", "t-nodes"};
    for (size_t i = 0; i < GT_ARRAY_LEN(tokens); i++) {
        r = request(&e, "PUT", path, tokens[i], old_run);
        assert_int_equal(r.code, 409);
        assert_string_equal(field_of(&r), "metadata.uid");
        assert_non_null(strstr(message_of(&r), "another run"));
        json_decref(r.body);
    }
    expect_code(&e, "PUT", path, "t-n1", "{\"metadata\":{\"uid\":7},\"status\":{}}", 422,
                "metadata.uid: must be a string");
    r = request(&e, "GET", BASE "/projects/p/tasks/t", TOKEN, NULL);
    assert_null(gt_json_path(r.body, "status.phase")); /* unchanged */
    json_decref(r.body);
    char *current =
        gt_xasprintf("{\"metadata\":{\"uid\":\"%s\"},\"status\":{\"phase\":\"Running\"}}", uid);
    expect_code(&e, "PUT", path, "t-n1", current, 200, NULL);
    expect_code(&e, "PUT", path, "t-nodes", current, 200, NULL);
    free(current);
    free(uid);
    r = request(&e, "PUT", BASE "/projects/p/tasks/u/status", "t-nodes",
                "{\"status\":{\"phase\":\"Running\"}}");
    assert_int_equal(r.code, 409);
    assert_string_equal(field_of(&r), "spec.nodeName");
    json_decref(r.body);
    r = request(&e, "GET", BASE "/projects/p/tasks/u", TOKEN, NULL);
    assert_null(gt_json_path(r.body, "status.phase"));
    json_decref(r.body);
    env_close(&e);
}

/* Create, replace and delete answer the object at the store's revision. */
static void test_writes(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    char *d = pc("d1", 2, NULL);
    struct reply r = request(&e, "POST", BASE "/priorityclasses", TOKEN, d);
    assert_int_equal(r.code, 201);
    char want[24];
    snprintf(want, sizeof(want), "%lld", (long long)gt_store_revision(e.s.store));
    assert_string_equal(rv_of(r.body), want);
    assert_non_null(json_string_value(json_object_get(json_object_get(r.body, "metadata"), "uid")));
    json_decref(r.body);

    r = request(&e, "POST", BASE "/priorityclasses", TOKEN, d);
    assert_int_equal(r.code, 409); /* exists */
    json_decref(r.body);
    free(d);

    r = request(&e, "GET", BASE "/priorityclasses/d1", TOKEN, NULL);
    assert_int_equal(r.code, 200);
    assert_string_equal(rv_of(r.body), want);
    json_decref(r.body);

    /* a replace at the current version lands; at a stale one it conflicts */
    char *upd = pc("d1", 3, want);
    r = request(&e, "PUT", BASE "/priorityclasses/d1", TOKEN, upd);
    assert_int_equal(r.code, 200);
    snprintf(want, sizeof(want), "%lld", (long long)gt_store_revision(e.s.store));
    assert_string_equal(rv_of(r.body), want);
    json_decref(r.body);
    r = request(&e, "PUT", BASE "/priorityclasses/d1", TOKEN, upd);
    assert_int_equal(r.code, 409);
    json_decref(r.body);
    free(upd);

    r = request(&e, "DELETE", BASE "/priorityclasses/d1", TOKEN, NULL);
    assert_int_equal(r.code, 200);
    json_decref(r.body);
    r = request(&e, "GET", BASE "/priorityclasses/d1", TOKEN, NULL);
    assert_int_equal(r.code, 404);
    json_decref(r.body);
    env_close(&e);
}

/* The watch events in a raw chunked stream: each
 * {"type":...,"object":...} line, parsed, in order. */
static size_t events_of(const struct gt_buf *b, json_t **out, size_t max)
{
    size_t n = 0;
    const char *p = b->data;
    while (n < max && (p = strstr(p, "{\"type\":\"")) != NULL) {
        const char *end = strstr(p, "}\n");
        if (!end) {
            break;
        }
        out[n] = json_loadb(p, (size_t)(end + 1 - p), 0, NULL);
        assert_non_null(out[n]);
        n++;
        p = end + 2;
    }
    return n;
}

static size_t want_events;
static bool have_events(const struct gt_buf *b)
{
    json_t *ev[8];
    size_t n = events_of(b, ev, 8);
    for (size_t i = 0; i < n; i++) {
        json_decref(ev[i]);
    }
    return n >= want_events;
}

/* A request as admin that must answer code; the store's revision after it. */
static int64_t expect(struct env *e, const char *method, const char *path, const char *body,
                      int code)
{
    struct reply r = request(e, method, path, TOKEN, body);
    assert_int_equal(r.code, code);
    json_decref(r.body);
    return gt_store_revision(e->s.store);
}

static void check_event(json_t *ev, const char *type, const char *name, int64_t rev)
{
    assert_string_equal(json_string_value(json_object_get(ev, "type")), type);
    json_t *obj = json_object_get(ev, "object");
    assert_string_equal(gt_obj_name(obj), name);
    char want[24];
    snprintf(want, sizeof(want), "%lld", (long long)rev);
    assert_string_equal(rv_of(obj), want);
}

/* A watch from resourceVersion=0 lists the current objects as ADDED, then
 * streams each change with its type and revision. */
static void test_watch(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    char *d1 = pc("d1", 1, NULL), *d2 = pc("d2", 1, NULL), *upd = pc("d1", 5, NULL);
    int64_t rev_d1 = expect(&e, "POST", BASE "/priorityclasses", d1, 201);

    int wfd = client_connect(&e);
    client_send(wfd, "GET", BASE "/priorityclasses?watch=true&resourceVersion=0", TOKEN, NULL);
    struct gt_buf ws;
    gt_buf_init(&ws);
    want_events = 1;
    pump(&e, wfd, &ws, have_events);

    int64_t rev_d2 = expect(&e, "POST", BASE "/priorityclasses", d2, 201);
    int64_t rev_upd = expect(&e, "PUT", BASE "/priorityclasses/d1", upd, 200);
    int64_t rev_del = expect(&e, "DELETE", BASE "/priorityclasses/d2", NULL, 200);

    want_events = 4;
    pump(&e, wfd, &ws, have_events);
    json_t *ev[8];
    size_t n = events_of(&ws, ev, 8);
    assert_int_equal(n, 4);
    check_event(ev[0], "ADDED", "d1", rev_d1);
    check_event(ev[1], "ADDED", "d2", rev_d2);
    check_event(ev[2], "MODIFIED", "d1", rev_upd);
    check_event(ev[3], "DELETED", "d2", rev_del);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(ev[2], "object"), "value")),
                     5);
    for (size_t i = 0; i < n; i++) {
        json_decref(ev[i]);
    }
    close(wfd);
    gt_buf_fini(&ws);
    free(d1);
    free(d2);
    free(upd);
    env_close(&e);
}

/* A watch from a given version starts after it: no ADDED for what exists. */
static void test_watch_from_version(void **state)
{
    (void)state;
    struct env e;
    env_open(&e);
    char *d1 = pc("d1", 1, NULL);
    int64_t rev = expect(&e, "POST", BASE "/priorityclasses", d1, 201);
    free(d1);
    char path[128];
    snprintf(path, sizeof(path), BASE "/priorityclasses?watch=true&resourceVersion=%lld",
             (long long)rev);
    int fd = client_connect(&e);
    client_send(fd, "GET", path, TOKEN, NULL);
    struct gt_buf ws;
    gt_buf_init(&ws);
    want_events = 1;
    pump_for(&e, fd, &ws, have_events, 50);
    assert_false(have_events(&ws));
    rev = expect(&e, "DELETE", BASE "/priorityclasses/d1", NULL, 200);
    pump(&e, fd, &ws, have_events);
    json_t *ev[4];
    size_t n = events_of(&ws, ev, 4);
    assert_int_equal(n, 1);
    check_event(ev[0], "DELETED", "d1", rev);
    json_decref(ev[0]);
    close(fd);
    gt_buf_fini(&ws);
    env_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_task_secrets),
        cmocka_unit_test(test_node_restriction),
        cmocka_unit_test(test_task_status_run),
        cmocka_unit_test(test_writes),
        cmocka_unit_test(test_watch),
        cmocka_unit_test(test_watch_from_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
