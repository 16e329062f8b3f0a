/*
 * The task log and exec proxy: GET /apis/gantry.dev/v1/projects/P/tasks/T/log
 * ?follow=&tailLines=&previous=&timestamps=&sinceTime= (kubectl's names)
 * for anyone who may read project P, forwarded
 * with an evhttp client to the agent of the task's node (its
 * status.addresses AgentURL) at /v1/tasks/<task uid>/log; with
 * previous=true to status.previous.nodeName's agent for status.previous.uid,
 * the run a restart replaced (the agent keeps its state while the Task names
 * it). Authenticated with the first gantry:nodes token of gantryd's token
 * file, and streamed back chunk by chunk as it arrives (docs/agent.md
 * "Logs"). A 200 answer's headers are
 * passed on as soon as they come, so a client following a quiet log knows
 * at once that it is connected; any other answer is relayed whole.
 *
 * POST .../tasks/T/exec with {"command": [ARGV...]}, for those who may
 * write tasks in P (a viewer gets 403), goes the same way to the agent's
 * /v1/tasks/<uid>/exec (src/agent/exec.c) and its JSON answer
 * ({"stdout", "stderr", "exitCode"}) is relayed whole. An MPI launcher's
 * rsh agent authenticates with its job's credential instead of a user's
 * token (GT_MPI_TOKEN_PREFIX, gt_logproxy_exec_mpi): it may exec into the
 * tasks of that job only. With "Upgrade: v4.channel.gantry.dev"
 * (GT_EXEC_PROTOCOL) and the body's "stdin" and "tty", the exec is a
 * stream (src/agent/exec_stream.c): the request goes on to the agent and
 * the upgraded connection is a byte pipe between the client and the agent
 * (gt_upgrade_pipe, the notebook proxy's).
 *
 * A proxy lives until the agent's answer ends or the client goes away,
 * whichever comes first; the other side is then closed. The upstream
 * connection is freed from a fresh loop turn, never from its own callback.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "server/cache.h"
#include "server/logproxy.h"
#include "server/reply.h"
#include "server/server_int.h"
#include "server/uppipe.h"

#define UPSTREAM_TIMEOUT_S (24 * 3600) /* a followed log may be quiet for long */

struct proxy {
    struct gt_req *r;
    struct evhttp_connection *up_conn;
    struct evhttp_request *up_req;
    struct evhttp_connection *client_conn;
    bool started;
};

static void free_conn_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    evhttp_connection_free(arg);
}

/* Free p and its upstream connection: at once when no callback of that
 * connection is running (now), else from the loop's next turn (evhttp still
 * uses it when its callback returns). The client side's close comes with
 * now: it may come from evhttp_free at shutdown, after which the loop
 * turns no more and a deferred free would never run. */
static void proxy_free(struct proxy *p, bool now)
{
    if (now) {
        evhttp_connection_free(p->up_conn);
    } else {
        event_base_once(p->r->s->base, -1, EV_TIMEOUT, free_conn_cb, p->up_conn, NULL);
    }
    gt_metrics_request(&p->r->s->metrics, GT_MV_GET, 200,
                       (double)(gt_now_ns() - p->r->start_ns) / 1e9);
    gt_req_free(p->r);
    free(p);
}

static void on_client_close(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    struct proxy *p = arg;
    if (!evhttp_request_get_connection(p->r->req)) {
        evhttp_send_reply_end(p->r->req);
    }
    if (p->up_req) {
        evhttp_cancel_request(p->up_req); /* no done callback after this */
        p->up_req = NULL;
    }
    proxy_free(p, true);
}

static void start(struct proxy *p, int code)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(p->r->req);
    evhttp_add_header(h, "Content-Type", "text/plain; charset=utf-8");
    evhttp_send_reply_start(p->r->req, code, NULL);
    p->client_conn = evhttp_request_get_connection(p->r->req);
    evhttp_connection_set_closecb(p->client_conn, on_client_close, p);
    p->started = true;
}

static int on_headers(struct evhttp_request *up, void *arg)
{
    struct proxy *p = arg;
    if (!p->started && evhttp_request_get_response_code(up) == 200) {
        start(p, 200);
    }
    return 0;
}

static void on_chunk(struct evhttp_request *up, void *arg)
{
    struct proxy *p = arg;
    if (!p->started) {
        start(p, evhttp_request_get_response_code(up));
    }
    evhttp_send_reply_chunk(p->r->req, evhttp_request_get_input_buffer(up));
}

static void on_done(struct evhttp_request *up, void *arg)
{
    struct proxy *p = arg;
    p->up_req = NULL;
    if (p->started) {
        if (up && evbuffer_get_length(evhttp_request_get_input_buffer(up))) {
            evhttp_send_reply_chunk(p->r->req, evhttp_request_get_input_buffer(up));
        }
        evhttp_connection_set_closecb(p->client_conn, NULL, NULL);
        evhttp_send_reply_end(p->r->req);
        proxy_free(p, false);
        return;
    }
    int code = up ? evhttp_request_get_response_code(up) : 0;
    struct gt_req *r = p->r;
    event_base_once(r->s->base, -1, EV_TIMEOUT, free_conn_cb, p->up_conn, NULL);
    free(p);
    if (code <= 0) {
        gt_req_error(r, GT_EINTERNAL, "node agent did not answer the log request");
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(up);
    size_t len = evbuffer_get_length(in);
    gt_req_reply(r, code, (const char *)evbuffer_pullup(in, -1), len);
}

static bool bool_param(const char *v)
{
    return !v || !strcmp(v, "true") || !strcmp(v, "false") || !strcmp(v, "");
}

/* The agent path with the checked query, or NULL after replying 400. */
static char *agent_path(struct gt_req *r, const char *uid, const struct evkeyvalq *q)
{
    const char *follow = evhttp_find_header(q, "follow");
    const char *tail = evhttp_find_header(q, "tailLines");
    const char *stamps = evhttp_find_header(q, "timestamps");
    const char *since = evhttp_find_header(q, "sinceTime");
    int64_t n = 0, since_ms = 0;
    if (!bool_param(follow) || !bool_param(stamps)) {
        gt_req_error(r, GT_EBADREQ, "%s: must be true or false",
                     bool_param(follow) ? "timestamps" : "follow");
        return NULL;
    }
    if (tail && gt_parse_rev(tail, &n)) {
        gt_req_error(r, GT_EBADREQ, "tailLines: must be a non-negative integer");
        return NULL;
    }
    if (since && gt_time_parse(since, &since_ms)) {
        gt_req_error(r, GT_EBADREQ, "sinceTime: must be an RFC 3339 time in UTC (...Z)");
        return NULL;
    }
    struct gt_buf b;
    gt_buf_init(&b);
    gt_buf_printf(&b, "/v1/tasks/%s/log?follow=%s", uid,
                  follow && !strcmp(follow, "true") ? "true" : "false");
    if (tail) {
        gt_buf_printf(&b, "&tailLines=%lld", (long long)n);
    }
    if (stamps && !strcmp(stamps, "true")) {
        gt_buf_puts(&b, "&timestamps=true");
    }
    if (since) {
        gt_buf_printf(&b, "&sinceMs=%lld", (long long)since_ms);
    }
    return gt_buf_take(&b);
}

/* Send method path (with body, may be NULL) to the agent at url; a stream
 * relays a 200 answer chunk by chunk (logs), else the answer comes whole. */
static void connect_agent(struct gt_req *r, const char *url, enum evhttp_cmd_type method,
                          const char *path, const char *body, const char *token, bool stream)
{
    struct evhttp_uri *u = evhttp_uri_parse(url);
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    int port = u ? evhttp_uri_get_port(u) : -1;
    if (!host) {
        evhttp_uri_free(u);
        gt_req_error(r, GT_EINTERNAL, "node agent URL \"%.200s\" is not usable", url);
        return;
    }
    struct proxy *p = gt_xcalloc(1, sizeof(*p));
    p->r = r;
    p->up_conn = evhttp_connection_base_new(r->s->base, NULL, host, port > 0 ? port : 80);
    evhttp_connection_set_timeout(p->up_conn, UPSTREAM_TIMEOUT_S);
    p->up_req = evhttp_request_new(on_done, p);
    if (stream) {
        evhttp_request_set_header_cb(p->up_req, on_headers);
        evhttp_request_set_chunked_cb(p->up_req, on_chunk);
    }
    struct evkeyvalq *h = evhttp_request_get_output_headers(p->up_req);
    char *auth = gt_xasprintf("Bearer %s", token);
    evhttp_add_header(h, "Authorization", auth);
    evhttp_add_header(h, "Host", host);
    free(auth);
    evhttp_uri_free(u);
    if (body) {
        evhttp_add_header(h, "Content-Type", "application/json");
        evbuffer_add(evhttp_request_get_output_buffer(p->up_req), body, strlen(body));
    }
    if (evhttp_make_request(p->up_conn, p->up_req, method, path) != 0) {
        /* the request was freed by libevent */
        evhttp_connection_free(p->up_conn);
        free(p);
        gt_req_error(r, GT_EINTERNAL, "cannot reach the node agent");
    }
}

/* The Task r's route names, or NULL after replying 404. */
static const struct gt_api_task *route_task(struct gt_req *r)
{
    const struct gt_route *rt = &r->route;
    char *key = gt_route_key(rt->kind, rt->project, rt->name);
    const struct gt_cobj *t = gt_ctl_get(r->s->ctl, GT_KIND_TASK, key);
    free(key);
    if (!t) {
        gt_req_error(r, GT_ENOTFOUND, "tasks \"%s\" not found", rt->name);
        return NULL;
    }
    return gt_cobj_task(t);
}

/* The AgentURL of node (borrowed) and gantryd's node token, or NULL after
 * replying. */
static const char *agent_url(struct gt_req *r, const char *node, const char **token)
{
    char *key = gt_xasprintf("/nodes/%s", node);
    const struct gt_cobj *n = gt_ctl_get(r->s->ctl, GT_KIND_NODE, key);
    free(key);
    const char *url = n ? gt_api_node_address(gt_cobj_node(n), "AgentURL") : NULL;
    const struct gt_server_user *nu = gt_server_tokens_first_node(r->s->tokens);
    if (!url || !nu) {
        gt_req_error(r, GT_ESTORE, "no way to reach node %s's agent (%s)", node,
                     url ? "gantryd has no gantry:nodes token" : "no AgentURL address");
        return NULL;
    }
    *token = nu->token;
    return url;
}

void gt_logproxy_serve(struct gt_req *r, const struct evkeyvalq *q)
{
    const struct gt_route *rt = &r->route;
    if (!gt_server_can_read_project(r->s->access, r->user, rt->project)) {
        gt_req_error(r, GT_EFORBIDDEN, "user \"%s\" cannot read tasks in project %s", r->user->name,
                     rt->project);
        return;
    }
    const struct gt_api_task *task = route_task(r);
    if (!task) {
        return;
    }
    const char *previous = evhttp_find_header(q, "previous");
    if (previous && strcmp(previous, "true") && strcmp(previous, "false") && strcmp(previous, "")) {
        gt_req_error(r, GT_EBADREQ, "previous: must be true or false");
        return;
    }
    const char *node, *uid;
    if (previous && !strcmp(previous, "true")) {
        node = task->status.previous.node_name;
        uid = task->status.previous.uid;
        if (!node || !*node || !uid || !*uid) {
            gt_req_error(r, GT_ENOTFOUND, "tasks \"%s\" has no previous run that reached a node",
                         rt->name);
            return;
        }
    } else {
        node = task->spec.node_name;
        uid = task->o.meta.uid;
        if (!node || !*node || !uid) {
            gt_req_error(r, GT_ECONFLICT, "tasks \"%s\" has not been scheduled to a node yet",
                         rt->name);
            return;
        }
    }
    const char *token;
    const char *url = agent_url(r, node, &token);
    char *path = url ? agent_path(r, uid, q) : NULL;
    if (path) {
        connect_agent(r, url, EVHTTP_REQ_GET, path, NULL, token, true);
        free(path);
    }
}

/* Carry a streaming exec (Upgrade: GT_EXEC_PROTOCOL) to the agent at url:
 * POST path with body, then a byte pipe both ways (gt_upgrade_pipe). */
static void pipe_exec(struct gt_req *r, const char *url, const char *path, const char *body,
                      const char *token)
{
    struct evhttp_uri *u = evhttp_uri_parse(url);
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    int port = u ? evhttp_uri_get_port(u) : -1;
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_port = htons((uint16_t)(port > 0 ? port : 80))};
    if (!host || inet_pton(AF_INET, host, &sin.sin_addr) != 1) {
        gt_req_error(r, GT_EINTERNAL, "node agent URL \"%.200s\" has no IPv4 address", url);
        evhttp_uri_free(u);
        return;
    }
    struct evbuffer *req = evbuffer_new();
    evbuffer_add_printf(req,
                        "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
                        "Content-Type: application/json\r\nConnection: Upgrade\r\n"
                        "Upgrade: %s\r\nContent-Length: %zu\r\n\r\n%s",
                        path, host, token, GT_EXEC_PROTOCOL, strlen(body), body);
    evhttp_uri_free(u);
    gt_upgrade_pipe(r, &sin, req, "the node agent is not reachable");
    evbuffer_free(req);
}

/* Forward the exec request's command to the agent of the task's node;
 * with Upgrade: GT_EXEC_PROTOCOL (and the body's "stdin" and "tty") as a
 * stream. */
static void forward_exec(struct gt_req *r, const struct gt_api_task *task)
{
    const struct gt_route *rt = &r->route;
    struct evbuffer *in = evhttp_request_get_input_buffer(r->req);
    json_t *body =
        json_loadb((const char *)evbuffer_pullup(in, -1), evbuffer_get_length(in), 0, NULL);
    /* read before any reply: replying frees r */
    const char *upg = evhttp_find_header(evhttp_request_get_input_headers(r->req), "Upgrade");
    bool stream = upg && !strcasecmp(upg, GT_EXEC_PROTOCOL);
    const json_t *cmd = json_object_get(body, "command");
    bool ok = json_is_array(cmd) && json_array_size(cmd) > 0;
    for (size_t i = 0; ok && i < json_array_size(cmd); i++) {
        ok = json_is_string(json_array_get(cmd, i));
    }
    if (!ok) {
        json_decref(body);
        gt_req_error(r, GT_EBADREQ, "command: want a non-empty array of strings");
        return;
    }
    const char *node = task ? task->spec.node_name : NULL;
    if (task && (!node || !*node || !task->o.meta.uid)) {
        gt_req_error(r, GT_ECONFLICT, "tasks \"%s\" has not been scheduled to a node yet",
                     rt->name);
        node = NULL;
    }
    const char *token;
    const char *url = node ? agent_url(r, node, &token) : NULL;
    if (url) {
        char *path = gt_xasprintf("/v1/tasks/%s/exec", task->o.meta.uid);
        json_t *fwd = json_pack("{s:O}", "command", cmd);
        if (stream) {
            json_object_set_new(fwd, "stdin",
                                json_boolean(json_is_true(json_object_get(body, "stdin"))));
            json_object_set_new(fwd, "tty",
                                json_boolean(json_is_true(json_object_get(body, "tty"))));
        }
        char *text = gt_json_dumps(fwd);
        if (stream) {
            pipe_exec(r, url, path, text, token);
        } else {
            connect_agent(r, url, EVHTTP_REQ_POST, path, text, token, false);
        }
        free(text);
        json_decref(fwd);
        free(path);
    }
    json_decref(body);
}

void gt_logproxy_exec(struct gt_req *r)
{
    const struct gt_route *rt = &r->route;
    struct gt_server_authz az = {
        .verb = GT_VERB_CREATE, .kind = GT_KIND_TASK, .name = rt->name, .project = rt->project};
    if (gt_server_authorize(r->s->access, r->user, &az) != 0) {
        gt_req_error(r, GT_EFORBIDDEN, "user \"%s\" cannot exec in tasks of project %s",
                     r->user->name, rt->project);
        return;
    }
    const struct gt_api_task *task = route_task(r);
    if (task) {
        forward_exec(r, task);
    }
}

void gt_logproxy_exec_mpi(struct gt_req *r, const char *mac)
{
    const struct gt_api_task *task = route_task(r);
    if (!task) {
        return;
    }
    char *msg = gt_xasprintf("%s/%s", r->route.project, task->spec.job ? task->spec.job : "");
    bool ok = task->spec.job && gt_server_tokens_node_mac_ok(r->s->tokens, msg, mac);
    free(msg);
    if (!ok) {
        gt_req_error(r, GT_EFORBIDDEN, "the MPI credential is not for the job of task \"%s\"",
                     r->route.name);
        return;
    }
    forward_exec(r, task);
}
