/*
 * gantlet's HTTP client to gantryd, on libevent's evhttp: JSON requests
 * over a small pool of keep-alive connections (evhttp runs one request at
 * a time per connection, so a pool lets status writes overlap), and watch
 * streams, each on its own connection, read incrementally as
 * newline-delimited JSON. Everything runs on the caller's event base; no
 * threads.
 *
 * Several servers (gantryd replicas, "URL1,URL2,..."): requests go to the
 * one in use; no answer (refused, timed out, dropped) or a 503 moves to
 * the next (the pool's idle connections to the old one are replaced as
 * they are picked), and the request is sent again there, once per server.
 * A watch that ends that way moves on too, and the agent lists and
 * watches again, now on the next server.
 * Every request gantlet makes is safe to repeat: status writes are
 * conditional or whole-object replacements of its own Node and Tasks.
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

struct server {
    char *host;
    int port;
    char *hostport; /* Host header */
};

struct gt_apic {
    struct event_base *base;
    struct server *servers;
    size_t n_servers, cur;
    char *auth; /* "Bearer TOKEN" */
    struct evhttp_connection *conns[GT_APIC_POOL_MAX];
    size_t conn_server[GT_APIC_POOL_MAX]; /* the server conns[i] goes to */
    int in_flight[GT_APIC_POOL_MAX];
    int n_conns;        /* pool size, at most GT_APIC_POOL_MAX */
    struct call *calls; /* every call not yet done (gt_apic_free frees them) */
};

struct call {
    struct gt_apic *c;
    struct call *prev, *next; /* in c->calls */
    int slot;
    size_t server; /* the server it was sent to */
    size_t tries;
    enum evhttp_cmd_type method;
    char *path;
    json_t *body; /* a reference, for another try; NULL: none */
    gt_apic_done_fn *cb;
    void *arg;
};

struct gt_apic_stream {
    struct gt_apic *c;
    size_t server;
    struct evhttp_connection *conn;
    struct evhttp_request *req;
    struct evbuffer *lines; /* bytes after the last complete line */
    gt_apic_line_fn *line_cb;
    gt_apic_end_fn *end_cb;
    void *arg;
};

/* Parse one "http://HOST:PORT" into sv. */
static int parse_server(const char *url, struct server *sv, struct gt_err *err)
{
    struct evhttp_uri *u = evhttp_uri_parse(url);
    if (!u || !evhttp_uri_get_host(u) || !evhttp_uri_get_scheme(u) ||
        strcmp(evhttp_uri_get_scheme(u), "http") != 0) {
        if (u) {
            evhttp_uri_free(u);
        }
        return gt_err_set(err, GT_EINVAL, "--server %s: not an http://HOST:PORT URL", url);
    }
    sv->host = gt_xstrdup(evhttp_uri_get_host(u));
    sv->port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : 80;
    sv->hostport = gt_xasprintf("%s:%d", sv->host, sv->port);
    evhttp_uri_free(u);
    return 0;
}

int gt_apic_new(struct event_base *base, const char *url, const char *token, struct gt_apic **out,
                struct gt_err *err)
{
    *out = NULL;
    struct gt_apic *c = gt_xcalloc(1, sizeof(*c));
    c->base = base;
    c->auth = gt_xasprintf("Bearer %s", token);
    char *list = gt_xstrdup(url);
    size_t cap = 0;
    int rc = 0;
    char *save = NULL;
    for (char *u = strtok_r(list, ",", &save); u && rc == 0; u = strtok_r(NULL, ",", &save)) {
        GT_VEC_RESERVE(c->servers, cap, c->n_servers + 1, 4);
        rc = parse_server(u, &c->servers[c->n_servers], err);
        c->n_servers += rc == 0;
    }
    free(list);
    if (rc == 0 && c->n_servers == 0) {
        rc = gt_err_set(err, GT_EINVAL, "--server \"%s\": no URL", url);
    }
    if (rc != 0) {
        gt_apic_free(c);
        return rc;
    }
    c->n_conns = POOL_DEFAULT;
    *out = c;
    return 0;
}

static struct evhttp_connection *conn_new(struct gt_apic *c, int timeout_s)
{
    const struct server *sv = &c->servers[c->cur];
    struct evhttp_connection *conn =
        evhttp_connection_base_new(c->base, NULL, sv->host, (ev_uint16_t)sv->port);
    GT_ASSERT(conn);
    evhttp_connection_set_timeout(conn, timeout_s);
    return conn;
}

void gt_apic_free(struct gt_apic *c)
{
    if (!c) {
        return;
    }
    /* freeing a connection frees its requests without their callbacks */
    for (int i = 0; i < GT_APIC_POOL_MAX; i++) {
        if (c->conns[i]) {
            evhttp_connection_free(c->conns[i]);
        }
    }
    while (c->calls) {
        struct call *k = c->calls;
        c->calls = k->next;
        json_decref(k->body);
        free(k->path);
        free(k);
    }
    for (size_t i = 0; i < c->n_servers; i++) {
        free(c->servers[i].host);
        free(c->servers[i].hostport);
    }
    free(c->servers);
    free(c->auth);
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
    evhttp_add_header(h, "Host", c->servers[c->cur].hostport);
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

/* The server in use (index from) gave no answer or a 503: use the next
 * one. The pool's connections go (a request still on one of them fails
 * and moves on too). */
static void next_server(struct gt_apic *c, size_t from)
{
    if (c->cur != from || c->n_servers < 2) {
        return; /* another failure moved on already */
    }
    c->cur = (c->cur + 1) % c->n_servers;
    gt_log_warn("gantryd did not answer; trying the next server", "server=%s",
                c->servers[c->cur].hostport);
}

static void send_call(struct call *k);

static void call_done(struct evhttp_request *req, void *arg)
{
    struct call *k = arg;
    k->c->in_flight[k->slot]--;
    int status = req ? evhttp_request_get_response_code(req) : 0;
    if ((status == 0 || status == 503) && k->c->n_servers > 1) {
        next_server(k->c, k->server);
        if (++k->tries < k->c->n_servers) {
            send_call(k);
            return;
        }
    }
    json_t *body = NULL;
    if (req && status > 0) {
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t len = evbuffer_get_length(in);
        if (len) {
            body = json_loadb((const char *)evbuffer_pullup(in, -1), len, 0, NULL);
        }
    }
    if (k->prev) {
        k->prev->next = k->next;
    } else {
        k->c->calls = k->next;
    }
    if (k->next) {
        k->next->prev = k->prev;
    }
    if (k->cb) {
        k->cb(status, body, k->arg);
    }
    json_decref(body);
    json_decref(k->body);
    free(k->path);
    free(k);
}

/* Send k on the least busy connection to the server in use. */
static void send_call(struct call *k)
{
    struct gt_apic *c = k->c;
    int slot = -1;
    for (int i = 0; i < c->n_conns; i++) {
        bool here = !c->conns[i] || c->conn_server[i] == c->cur || c->in_flight[i] == 0;
        if (here && (slot < 0 || c->in_flight[i] < c->in_flight[slot])) {
            slot = i;
        }
    }
    slot = slot < 0 ? 0 : slot; /* every connection busy on the old server: rare, it moves on */
    if (c->conns[slot] && c->conn_server[slot] != c->cur && c->in_flight[slot] == 0) {
        evhttp_connection_free(c->conns[slot]);
        c->conns[slot] = NULL;
    }
    if (!c->conns[slot]) {
        c->conns[slot] = conn_new(c, REQUEST_TIMEOUT_S);
        c->conn_server[slot] = c->cur;
    }
    k->slot = slot;
    k->server = c->cur;
    c->in_flight[slot]++;
    struct evhttp_request *req = req_prepare(c, evhttp_request_new(call_done, k), k->body);
    if (evhttp_make_request(c->conns[slot], req, k->method, k->path) < 0) {
        call_done(NULL, k);
    }
}

void gt_apic_request(struct gt_apic *c, enum evhttp_cmd_type method, const char *path,
                     const json_t *body, gt_apic_done_fn *cb, void *arg)
{
    struct call *k = gt_xcalloc(1, sizeof(*k));
    *k = (struct call){.c = c, .method = method, .path = gt_xstrdup(path), .cb = cb, .arg = arg};
    k->body = body ? json_incref((json_t *)body) : NULL;
    k->next = c->calls;
    if (c->calls) {
        c->calls->prev = k;
    }
    c->calls = k;
    send_call(k);
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
    if (status == 0 || status == 503) {
        next_server(s->c, s->server); /* the owner reopens it there */
    }
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
    s->server = c->cur;
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
