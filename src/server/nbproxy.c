/*
 * The notebook proxy: /projects/P/notebooks/N/... on gantryd's own port,
 * carried to the notebook's server (Jupyter) on its node.
 *
 * evhttp parses the request (head and body, bounded by --max-body-bytes)
 * and calls gt_nbproxy_serve, which authenticates and authorizes it; from
 * then on the connection is a raw byte pipe between two bufferevents (the
 * client's, taken from evhttp, and one to the notebook), because evhttp
 * cannot hand over an upgraded connection: a WebSocket (kernels,
 * terminals) is just the same pipe after the 101. One request per
 * connection: the request goes on with "Connection: close" (or Upgrade),
 * and the response's head is rewritten on its way back (Set-Cookie
 * dropped, so no cookie of the notebook's server reaches the browser;
 * "Connection: close"), then streamed as it comes, with back-pressure.
 *
 * What the browser sends never carries the notebook's token: the proxy
 * drops Authorization and Cookie and adds "Authorization: token T", T the
 * notebook's own (nbctl.c). Browsers authenticate with the gantry-token
 * cookie (HttpOnly, SameSite=Strict, Path the notebook's base URL), set by
 * a first visit with ?gantry-token=<the user's gantry token>, which is
 * answered with a redirect that drops the parameter.
 *
 * Activity for the culler: every request that is not mere polling
 * (gt_nb_is_polling), and client-to-server bytes on a WebSocket
 * (terminal input, kernel messages).
 *
 * The same pipe, without the notebook's parts (no token to scrub, no
 * activity), carries other upgraded connections: gt_upgrade_pipe
 * (uppipe.h), the streaming exec's.
 */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include "server/nbctl.h"
#include "server/reply.h"
#include "server/server_int.h"
#include "server/uppipe.h"

#define COOKIE "gantry-token"
#define HEAD_MAX (64 * 1024)
#define PIPE_HIGH (1024 * 1024) /* bytes queued towards one side before reading pauses */

bool gt_nbproxy_path(const char *path)
{
    /* /projects/<p>/notebooks/<n>[/...] */
    if (strncmp(path, "/projects/", 10) != 0) {
        return false;
    }
    const char *p = strchr(path + 10, '/');
    return p && p > path + 10 && !strncmp(p, "/notebooks/", 11) && p[11] && p[11] != '/';
}

struct pipe {
    struct gt_server *s;
    struct evhttp_connection *evcon; /* the client's, taken from evhttp */
    struct bufferevent *client, *up;
    char project[64], name[64];
    char token[80];          /* the notebook's: scrubbed from what goes back */
    bool head_done;          /* the response's head was rewritten */
    bool tunnel;             /* a WebSocket: client bytes are activity */
    bool terminal;           /* ... of a terminal */
    bool up_eof;             /* the notebook's side ended: close once flushed */
    const char *unreachable; /* static: the 502's message */
};

static void pipe_free(struct pipe *p)
{
    if (p->up) {
        bufferevent_free(p->up);
    }
    /* frees the client's bufferevent and the request evhttp still holds */
    evhttp_connection_free(p->evcon);
    free(p);
}

/* Move what src read to dst, pausing src while dst has too much queued. */
static void relay(struct bufferevent *src, struct bufferevent *dst)
{
    evbuffer_add_buffer(bufferevent_get_output(dst), bufferevent_get_input(src));
    if (evbuffer_get_length(bufferevent_get_output(dst)) >= PIPE_HIGH) {
        bufferevent_disable(src, EV_READ);
        bufferevent_setwatermark(dst, EV_WRITE, PIPE_HIGH / 2, 0);
    }
}

/* The response head (ends "\r\n\r\n") rewritten: no Set-Cookie, no
 * Connection/Keep-Alive but our own. false: not complete yet. */
static bool rewrite_head(struct pipe *p, struct evbuffer *in, struct evbuffer *out, bool *bad)
{
    struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (end.pos < 0) {
        *bad = evbuffer_get_length(in) > HEAD_MAX;
        return false;
    }
    size_t n = (size_t)end.pos + 4;
    char *head = gt_xmalloc(n + 1);
    evbuffer_remove(in, head, n);
    head[n] = '\0';
    bool upgrade = !strncmp(head, "HTTP/1.1 101", 12) || !strncmp(head, "HTTP/1.0 101", 12);
    char *line = head;
    bool first = true;
    while (*line) {
        char *eol = strstr(line, "\r\n");
        if (!eol || eol == line) {
            break;
        }
        size_t len = (size_t)(eol - line);
        bool drop = !first && (!strncasecmp(line, "Set-Cookie:", 11) ||
                               (!upgrade && (!strncasecmp(line, "Connection:", 11) ||
                                             !strncasecmp(line, "Keep-Alive:", 11))));
        if (!drop) {
            evbuffer_add(out, line, len);
            evbuffer_add(out, "\r\n", 2);
        }
        first = false;
        line = eol + 2;
    }
    if (!upgrade) {
        evbuffer_add_printf(out, "Connection: close\r\n");
    }
    evbuffer_add(out, "\r\n", 2);
    p->tunnel = upgrade;
    free(head);
    return true;
}

/* Overwrite every copy of the notebook's token in buf (Jupyter writes the
 * token of a token-authenticated request into its pages) with as many
 * 'x', so that lengths stay right; the browser's requests carry none the
 * proxy needs. */
static void scrub(const struct pipe *p, struct evbuffer *buf)
{
    size_t len = evbuffer_get_length(buf), tl = strlen(p->token);
    if (!tl || len < tl) {
        return;
    }
    char *d = (char *)evbuffer_pullup(buf, -1);
    for (char *q = d; (q = memmem(q, len - (size_t)(q - d), p->token, tl)) != NULL; q += tl) {
        memset(q, 'x', tl);
    }
}

/* Forward what the notebook sent, scrubbed, keeping back (but on a
 * WebSocket) a tail that may begin a token until more, or the end, comes. */
static void forward_up(struct pipe *p, bool eof)
{
    struct evbuffer *in = bufferevent_get_input(p->up);
    size_t len = evbuffer_get_length(in), tl = strlen(p->token);
    size_t keep = eof || p->tunnel || !tl ? 0 : tl - 1 < len ? tl - 1 : len;
    evbuffer_remove_buffer(in, bufferevent_get_output(p->client), len - keep);
    if (evbuffer_get_length(bufferevent_get_output(p->client)) >= PIPE_HIGH) {
        bufferevent_disable(p->up, EV_READ);
        bufferevent_setwatermark(p->client, EV_WRITE, PIPE_HIGH / 2, 0);
    }
}

static void up_read(struct bufferevent *bev, void *arg)
{
    struct pipe *p = arg;
    if (!p->tunnel) {
        scrub(p, bufferevent_get_input(bev));
    }
    if (!p->head_done) {
        bool bad = false;
        if (!rewrite_head(p, bufferevent_get_input(bev), bufferevent_get_output(p->client), &bad)) {
            if (bad) {
                pipe_free(p);
            }
            return;
        }
        p->head_done = true;
    }
    forward_up(p, false);
}

static void client_read(struct bufferevent *bev, void *arg)
{
    struct pipe *p = arg;
    if (p->tunnel && p->name[0] && evbuffer_get_length(bufferevent_get_input(bev))) {
        gt_nbctl_activity(p->s->ctl->nb, p->project, p->name,
                          p->terminal ? "terminal input" : "kernel message", gt_now_ms());
    }
    relay(bev, p->up);
}

/* dst drained below the mark: resume reading its source; after the
 * notebook's end, close once the client has everything. */
static void client_write(struct bufferevent *bev, void *arg)
{
    struct pipe *p = arg;
    (void)bev;
    if (p->up_eof && evbuffer_get_length(bufferevent_get_output(p->client)) == 0) {
        pipe_free(p);
        return;
    }
    bufferevent_setwatermark(p->client, EV_WRITE, 0, 0);
    if (p->up && !p->up_eof) {
        bufferevent_enable(p->up, EV_READ);
    }
}

static void up_write(struct bufferevent *bev, void *arg)
{
    struct pipe *p = arg;
    (void)bev;
    bufferevent_setwatermark(p->up, EV_WRITE, 0, 0);
    bufferevent_enable(p->client, EV_READ);
}

static void up_event(struct bufferevent *bev, short what, void *arg)
{
    struct pipe *p = arg;
    (void)bev;
    if (what & BEV_EVENT_CONNECTED) {
        return;
    }
    if (p->head_done) {
        forward_up(p, true);
    } else {
        evbuffer_add_printf(bufferevent_get_output(p->client),
                            "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n"
                            "Connection: close\r\nContent-Length: %zu\r\n\r\n%s",
                            strlen(p->unreachable), p->unreachable);
        p->head_done = true;
    }
    p->up_eof = true;
    bufferevent_disable(p->up, EV_READ | EV_WRITE);
    bufferevent_setwatermark(p->client, EV_WRITE, 0, 0);
    if (evbuffer_get_length(bufferevent_get_output(p->client)) == 0) {
        pipe_free(p);
    }
}

static void client_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    (void)what;
    pipe_free(arg); /* the client went away (or failed): nothing to deliver */
}

/* The request's head towards the notebook: method, uri, the client's
 * headers but for what is hop-by-hop or the client's credentials, the
 * notebook's token, and the body's length. */
static void request_head(struct evbuffer *out, struct evhttp_request *req, const char *method,
                         const char *uri, const struct gt_nb_target *t, size_t body_len,
                         bool upgrade)
{
    evbuffer_add_printf(out, "%s %s HTTP/1.1\r\nHost: %s:%d\r\n", method, uri, t->host, t->port);
    static const char *const drop[] = {"Host",
                                       "Authorization",
                                       "Cookie",
                                       "Connection",
                                       "Keep-Alive",
                                       "Content-Length",
                                       "Transfer-Encoding",
                                       "Proxy-Authorization",
                                       "Upgrade",
                                       "TE",
                                       "Accept-Encoding"};
    struct evkeyval *h;
    TAILQ_FOREACH(h, evhttp_request_get_input_headers(req), next)
    {
        bool skip = false;
        for (size_t i = 0; i < GT_ARRAY_LEN(drop) && !skip; i++) {
            skip = !strcasecmp(h->key, drop[i]);
        }
        if (!skip) {
            evbuffer_add_printf(out, "%s: %s\r\n", h->key, h->value);
        }
    }
    evbuffer_add_printf(out, "Authorization: token %s\r\n", t->token);
    if (upgrade) {
        evbuffer_add_printf(out, "Connection: Upgrade\r\nUpgrade: websocket\r\n");
    } else {
        evbuffer_add_printf(out, "Connection: close\r\n");
    }
    if (body_len || (strcmp(method, "GET") && strcmp(method, "HEAD"))) {
        evbuffer_add_printf(out, "Content-Length: %zu\r\n", body_len);
    }
    evbuffer_add(out, "\r\n", 2);
}

/* The value of cookie name in the Cookie header (copied into out), or false. */
static bool cookie_value(const char *cookies, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);
    for (const char *c = cookies; c && *c;) {
        while (*c == ' ' || *c == ';') {
            c++;
        }
        const char *end = strchr(c, ';');
        size_t l = end ? (size_t)(end - c) : strlen(c);
        if (l > n && !strncmp(c, name, n) && c[n] == '=') {
            snprintf(out, len, "%.*s", (int)(l - n - 1), c + n + 1);
            return true;
        }
        c += l;
    }
    return false;
}

/* The name=... parameter of a query (copied into tok) and the query
 * without it (into rest). */
static bool query_param(const char *query, const char *name, char *tok, size_t tok_len, char *rest,
                        size_t rest_len)
{
    bool found = false;
    size_t used = 0;
    rest[0] = '\0';
    for (const char *q = query; q && *q;) {
        const char *amp = strchr(q, '&');
        size_t l = amp ? (size_t)(amp - q) : strlen(q);
        size_t n = strlen(name);
        if (l > n && !strncmp(q, name, n) && q[n] == '=') {
            snprintf(tok, tok_len, "%.*s", (int)(l - n - 1), q + n + 1);
            found = true;
        } else if (used + l + 2 < rest_len) {
            used += (size_t)snprintf(rest + used, rest_len - used, "%s%.*s", used ? "&" : "",
                                     (int)l, q);
        }
        q += l + (amp ? 1 : 0);
    }
    return found;
}

static bool token_ok(const char *t)
{
    for (; *t; t++) {
        if (!((*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') || (*t >= '0' && *t <= '9') ||
              *t == '-' || *t == '_' || *t == '.')) {
            return false;
        }
    }
    return true;
}

/* Take over r's connection and pipe it to sin, p's notebook fields set
 * (or empty): request (drained) goes first, then whatever the client sent
 * past its request, then the bytes of both sides as they come. */
static void pipe_run(struct pipe *p, struct gt_req *r, const struct sockaddr_in *sin,
                     struct evbuffer *request)
{
    p->s = r->s;
    p->evcon = evhttp_request_get_connection(r->req);
    p->client = evhttp_connection_get_bufferevent(p->evcon);
    p->up = bufferevent_socket_new(r->s->base, -1, BEV_OPT_CLOSE_ON_FREE);
    struct evbuffer *upout = bufferevent_get_output(p->up);
    evbuffer_add_buffer(upout, request);
    /* anything the client sent past the request goes on too */
    evbuffer_add_buffer(upout, bufferevent_get_input(p->client));
    gt_req_free(r);
    bufferevent_set_timeouts(p->client, NULL, NULL);
    bufferevent_setcb(p->client, client_read, client_write, client_event, p);
    bufferevent_setcb(p->up, up_read, up_write, up_event, p);
    bufferevent_enable(p->client, EV_READ | EV_WRITE);
    bufferevent_enable(p->up, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(p->up, (const struct sockaddr *)sin, sizeof(*sin)) < 0) {
        up_event(p->up, BEV_EVENT_ERROR, p);
    }
}

void gt_nbproxy_serve(struct gt_req *r, const char *path)
{
    struct gt_server *s = r->s;
    struct evhttp_request *req = r->req;
    char project[64], name[64];
    const char *rest = NULL;
    {
        const char *p = path + 10;
        const char *slash = strchr(p, '/');
        const char *n = slash + 11;
        const char *end = strchr(n, '/');
        size_t pl = (size_t)(slash - p), nl = end ? (size_t)(end - n) : strlen(n);
        if (pl >= sizeof(project) || nl >= sizeof(name)) {
            gt_req_error(r, GT_ENOTFOUND, "no such notebook");
            return;
        }
        memcpy(project, p, pl);
        project[pl] = '\0';
        memcpy(name, n, nl);
        name[nl] = '\0';
        rest = end ? end : "";
    }
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    char tok[256] = "", qrest[2048];
    bool from_query = query && query_param(query, COOKIE, tok, sizeof(tok), qrest, sizeof(qrest));
    const char *auth = evhttp_find_header(in, "Authorization");
    if (!from_query && auth && !strncasecmp(auth, "Bearer ", 7)) {
        snprintf(tok, sizeof(tok), "%s", auth + 7);
    } else if (!from_query) {
        cookie_value(evhttp_find_header(in, "Cookie"), COOKIE, tok, sizeof(tok));
    }
    r->user = tok[0] ? gt_server_tokens_find(s->tokens, tok) : NULL;
    if (!r->user) {
        gt_req_error(r, GT_EUNAUTH, "a valid bearer token (or the %s cookie) is required", COOKIE);
        return;
    }
    struct gt_server_authz az = {
        .verb = GT_VERB_UPDATE, .kind = GT_KIND_NOTEBOOK, .name = name, .project = project};
    if (gt_server_authorize(s->access, r->user, &az)) {
        gt_req_error(r, GT_EFORBIDDEN,
                     "user %s may not use notebooks of project %s (members and admins may)",
                     r->user->name, project);
        return;
    }
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    if (from_query || !*rest) {
        /* the cookie for the browser, then the same place without the token */
        char *base = gt_xasprintf("/projects/%s/notebooks/%s/", project, name);
        if (from_query && token_ok(tok)) {
            char *cookie =
                gt_xasprintf("%s=%s; Path=%s; HttpOnly; SameSite=Strict", COOKIE, tok, base);
            evhttp_add_header(out, "Set-Cookie", cookie);
            free(cookie);
        }
        char *loc = gt_xasprintf("%s%s%s", *rest ? path : base, qrest[0] && from_query ? "?" : "",
                                 from_query ? qrest : "");
        evhttp_add_header(out, "Location", loc);
        free(loc);
        free(base);
        gt_req_reply_as(r, 302, "text/plain", "", 0);
        return;
    }
    struct gt_nb_target t;
    struct gt_err err = {0};
    if (gt_nbctl_target(s->ctl, project, name, &t, &err)) {
        gt_req_error_err(r, &err);
        return;
    }
    const char *method = gt_http_method_name(evhttp_request_get_command(req));
    if (!strcmp(method, "OTHER")) {
        gt_req_error(r, GT_EMETHOD, "method not supported through the notebook proxy");
        return;
    }
    const char *upg = evhttp_find_header(in, "Upgrade");
    bool upgrade = upg && !strcasecmp(upg, "websocket");
    if (!upgrade && !gt_nb_is_polling(method, rest)) {
        char what[96];
        snprintf(what, sizeof(what), "%s %.80s", method, rest);
        gt_nbctl_activity(s->ctl->nb, project, name, what, gt_now_ms());
    } else if (upgrade) {
        gt_nbctl_activity(s->ctl->nb, project, name, "websocket opened", gt_now_ms());
    }
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)t.port)};
    if (inet_pton(AF_INET, t.host, &sin.sin_addr) != 1) {
        gt_req_error(r, GT_EINTERNAL, "the notebook's node address %s is not IPv4", t.host);
        return;
    }
    struct pipe *p = gt_xcalloc(1, sizeof(*p));
    snprintf(p->project, sizeof(p->project), "%s", project);
    snprintf(p->name, sizeof(p->name), "%s", name);
    snprintf(p->token, sizeof(p->token), "%s", t.token);
    p->terminal = upgrade && strstr(rest, "/terminals/") != NULL;
    p->unreachable = "the notebook's server is not reachable";
    /* Jupyter prefers a ?token= (the page's, scrubbed) to our header */
    char fwd_uri[4096], qtok[256];
    const char *upath = evhttp_uri_get_path(uri);
    if (query && query_param(query, "token", qtok, sizeof(qtok), qrest, sizeof(qrest))) {
        snprintf(fwd_uri, sizeof(fwd_uri), "%s%s%s", upath, qrest[0] ? "?" : "", qrest);
    } else {
        snprintf(fwd_uri, sizeof(fwd_uri), "%s%s%s", upath, query ? "?" : "", query ? query : "");
    }
    struct evbuffer *body = evhttp_request_get_input_buffer(req);
    struct evbuffer *head = evbuffer_new();
    request_head(head, req, method, fwd_uri, &t, evbuffer_get_length(body), upgrade);
    evbuffer_add_buffer(head, body);
    pipe_run(p, r, &sin, head);
    evbuffer_free(head);
}

void gt_upgrade_pipe(struct gt_req *r, const struct sockaddr_in *to, struct evbuffer *request,
                     const char *unreachable)
{
    struct pipe *p = gt_xcalloc(1, sizeof(*p));
    p->unreachable = unreachable;
    pipe_run(p, r, to, request);
}
