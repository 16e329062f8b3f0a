/*
 * gantlet's HTTP client to gantryd, on libevent's evhttp: JSON requests
 * over a small pool of keep-alive connections (evhttp runs one request at
 * a time per connection, so a pool lets status writes overlap), and watch
 * streams, each on its own connection, read incrementally as
 * newline-delimited JSON. Everything runs on the caller's event base; no
 * threads.
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"

#define POOL_DEFAULT 4
#define REQUEST_TIMEOUT_S 30
/* A watch is re-listed after this much silence, whatever the server does. */
#define STREAM_TIMEOUT_S 600

struct gt_apic {
    struct event_base *base;
    char *host;
    int port;
    char *auth;     /* "Bearer TOKEN" */
    char *hostport; /* Host header */
    struct evhttp_connection *conns[GT_APIC_POOL_MAX];
    int in_flight[GT_APIC_POOL_MAX];
    int n_conns; /* pool size, at most GT_APIC_POOL_MAX */
};

struct call {
    struct gt_apic *c;
    int slot;
    gt_apic_done_fn *cb;
    void *arg;
};

struct gt_apic_stream {
    struct gt_apic *c;
    struct evhttp_connection *conn;
    struct evhttp_request *req;
    struct evbuffer *lines; /* bytes after the last complete line */
    gt_apic_line_fn *line_cb;
    gt_apic_end_fn *end_cb;
    void *arg;
};

int gt_apic_new(struct event_base *base, const char *url, const char *token, struct gt_apic **out,
                struct gt_err *err)
{
    struct evhttp_uri *u = evhttp_uri_parse(url);
    if (!u || !evhttp_uri_get_host(u) || !evhttp_uri_get_scheme(u) ||
        strcmp(evhttp_uri_get_scheme(u), "http") != 0) {
        if (u) {
            evhttp_uri_free(u);
        }
        return gt_err_set(err, GT_EINVAL, "--server %s: not an http://HOST:PORT URL", url);
    }
    struct gt_apic *c = gt_xcalloc(1, sizeof(*c));
    c->base = base;
    c->host = gt_xstrdup(evhttp_uri_get_host(u));
    c->port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : 80;
    c->auth = gt_xasprintf("Bearer %s", token);
    c->hostport = gt_xasprintf("%s:%d", c->host, c->port);
    c->n_conns = POOL_DEFAULT;
    evhttp_uri_free(u);
    *out = c;
    return 0;
}

static struct evhttp_connection *conn_new(struct gt_apic *c, int timeout_s)
{
    struct evhttp_connection *conn =
        evhttp_connection_base_new(c->base, NULL, c->host, (ev_uint16_t)c->port);
    GT_ASSERT(conn);
    evhttp_connection_set_timeout(conn, timeout_s);
    return conn;
}

void gt_apic_free(struct gt_apic *c)
{
    if (!c) {
        return;
    }
    for (int i = 0; i < GT_APIC_POOL_MAX; i++) {
        if (c->conns[i]) {
            evhttp_connection_free(c->conns[i]);
        }
    }
    free(c->host);
    free(c->auth);
    free(c->hostport);
    free(c);
}

void gt_apic_pool_set(struct gt_apic *c, int n_conns)
{
    GT_ASSERT(n_conns >= 1 && n_conns <= GT_APIC_POOL_MAX);
    c->n_conns = n_conns;
}

static struct evhttp_request *req_prepare(struct gt_apic *c, struct evhttp_request *req,
                                          const json_t *body)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Host", c->hostport);
    evhttp_add_header(h, "Authorization", c->auth);
    evhttp_add_header(h, "Accept", "application/json");
    if (body) {
        char *text = gt_json_dumps(body);
        evhttp_add_header(h, "Content-Type", "application/json");
        evbuffer_add(evhttp_request_get_output_buffer(req), text, strlen(text));
        free(text);
    }
    return req;
}

static void call_done(struct evhttp_request *req, void *arg)
{
    struct call *k = arg;
    k->c->in_flight[k->slot]--;
    int status = req ? evhttp_request_get_response_code(req) : 0;
    json_t *body = NULL;
    if (req && status > 0) {
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t len = evbuffer_get_length(in);
        if (len) {
            body = json_loadb((const char *)evbuffer_pullup(in, -1), len, 0, NULL);
        }
    }
    if (k->cb) {
        k->cb(status, body, k->arg);
    }
    json_decref(body);
    free(k);
}

void gt_apic_request(struct gt_apic *c, enum evhttp_cmd_type method, const char *path,
                     const json_t *body, gt_apic_done_fn *cb, void *arg)
{
    int slot = 0;
    for (int i = 1; i < c->n_conns; i++) {
        if (c->in_flight[i] < c->in_flight[slot]) {
            slot = i;
        }
    }
    if (!c->conns[slot]) {
        c->conns[slot] = conn_new(c, REQUEST_TIMEOUT_S);
    }
    struct call *k = gt_xcalloc(1, sizeof(*k));
    *k = (struct call){c, slot, cb, arg};
    c->in_flight[slot]++;
    struct evhttp_request *req = req_prepare(c, evhttp_request_new(call_done, k), body);
    if (evhttp_make_request(c->conns[slot], req, method, path) < 0) {
        call_done(NULL, k);
    }
}

static void stream_free_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gt_apic_stream *s = arg;
    evhttp_connection_free(s->conn);
    evbuffer_free(s->lines);
    free(s);
}

static void stream_chunk(struct evhttp_request *req, void *arg)
{
    struct gt_apic_stream *s = arg;
    if (evhttp_request_get_response_code(req) != 200) {
        return;
    }
    evbuffer_add_buffer(s->lines, evhttp_request_get_input_buffer(req));
    size_t n;
    char *line;
    while ((line = evbuffer_readln(s->lines, &n, EVBUFFER_EOL_LF)) != NULL) {
        json_t *ev = n ? json_loadb(line, n, 0, NULL) : NULL;
        free(line);
        if (ev) {
            s->line_cb(ev, s->arg);
            json_decref(ev);
        }
    }
}

static void stream_done(struct evhttp_request *req, void *arg)
{
    struct gt_apic_stream *s = arg;
    int status = req ? evhttp_request_get_response_code(req) : 0;
    s->req = NULL;
    s->end_cb(status, s->arg);
    /* evhttp still uses the connection when this returns: free it later */
    struct timeval now = {0, 0};
    event_base_once(s->c->base, -1, EV_TIMEOUT, stream_free_cb, s, &now);
}

static void stream_fail_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    stream_done(NULL, arg);
}

struct gt_apic_stream *gt_apic_stream_open(struct gt_apic *c, const char *path,
                                           gt_apic_line_fn *line_cb, gt_apic_end_fn *end_cb,
                                           void *arg)
{
    struct gt_apic_stream *s = gt_xcalloc(1, sizeof(*s));
    s->c = c;
    s->conn = conn_new(c, STREAM_TIMEOUT_S);
    s->lines = evbuffer_new();
    s->line_cb = line_cb;
    s->end_cb = end_cb;
    s->arg = arg;
    s->req = req_prepare(c, evhttp_request_new(stream_done, s), NULL);
    evhttp_request_set_chunked_cb(s->req, stream_chunk);
    if (evhttp_make_request(s->conn, s->req, EVHTTP_REQ_GET, path) < 0) {
        /* end it from the loop, after the caller holds the stream */
        s->req = NULL;
        struct timeval now = {0, 0};
        event_base_once(c->base, -1, EV_TIMEOUT, stream_fail_cb, s, &now);
    }
    return s;
}

void gt_apic_stream_close(struct gt_apic_stream *s)
{
    if (!s) {
        return;
    }
    if (s->req) {
        evhttp_cancel_request(s->req);
    }
    evhttp_connection_free(s->conn);
    evbuffer_free(s->lines);
    free(s);
}

const char *gt_apic_message(const json_t *body)
{
    const char *msg = json_string_value(json_object_get(body, "message"));
    return msg ? msg : "";
}
