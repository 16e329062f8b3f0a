/*
 * gantlet's --listen server (evhttp): GET /v1/tasks/{uid}/log
 * [?follow=true&tailLines=N&timestamps=true&sinceMs=MS], GET
 * /v1/tasks/{uid}/usage (usage.c) and POST
 * /v1/tasks/{uid}/exec (exec.c) for the agent's own bearer token only, plus
 * /healthz and /metrics. A log is the shim's rotated files read oldest
 * first (task.log.K .. task.log.1, task.log); tailLines counts over their
 * concatenation. Their CRI entries (crilog.c) are sent as the task wrote
 * its output, with each line's time in front with timestamps, and without
 * the entries before sinceMs (ms since the epoch); lines of a log written
 * before the CRI format pass as they are. Following polls every 5 ms after new output, backing off
 * to every 100 ms while the log is quiet, opens task.log once the
 * shim has created it (a follow may start before the task), moves to the
 * new task.log when the shim rotates, and ends once the file is drained
 * after exit.json exists or the agent has dropped the task (its state
 * directory goes with it, so exit.json would never show). Each stream owns
 * its open files and is freed when it ends or its connection closes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/keyvalq_struct.h>

#include "agent/agent_int.h"
#include "agent/crilog.h"

#define KEEP_FILES 3
#define MAX_FILES (KEEP_FILES + 2)
#define FOLLOW_MIN_MS 5
#define FOLLOW_MAX_MS 100
#define OUT_HIGH_BYTES (1 << 20)
#define BLOCK_BYTES 65536

struct logstream {
    const struct gt_gantlet *g;
    char uid[128];
    struct evhttp_request *req;
    struct evhttp_connection *conn;
    char dir[PATH_MAX + 160];  /* the task's state directory */
    char data[PATH_MAX + 160]; /* its directory on disk, with the log files */
    int fds[MAX_FILES];        /* oldest first; the last is task.log */
    int n_fds, cur;
    bool follow;
    int idle_ms; /* the next follow poll's delay: doubles while nothing comes */
    struct event *tick;
    struct gt_crilog_view view;
    bool mid_line;        /* the text sent so far ends inside a line */
    struct evbuffer *raw; /* read from the files, not yet a whole line */
};

static void open_files(struct logstream *ls)
{
    for (int k = KEEP_FILES; k >= 0; k--) {
        char p[PATH_MAX + 200];
        if (k) {
            snprintf(p, sizeof(p), "%s/task.log.%d", ls->data, k);
        } else {
            snprintf(p, sizeof(p), "%s/task.log", ls->data);
        }
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            ls->fds[ls->n_fds++] = fd;
        }
    }
}

static void stream_free(struct logstream *ls)
{
    for (int i = 0; i < ls->n_fds; i++) {
        if (ls->fds[i] >= 0) {
            close(ls->fds[i]);
        }
    }
    event_free(ls->tick);
    evbuffer_free(ls->raw);
    free(ls);
}

static void on_close(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    stream_free(arg);
}

static void stream_end(struct logstream *ls)
{
    evhttp_connection_set_closecb(ls->conn, NULL, NULL);
    evhttp_send_reply_end(ls->req);
    stream_free(ls);
}

/* Position the stream at the start of the last n lines (n < 0: everything). */
static void tail_seek(struct logstream *ls, int64_t n)
{
    if (n < 0) {
        return;
    }
    int64_t seen = 0;
    char *buf = gt_xmalloc(BLOCK_BYTES);
    for (int i = ls->n_fds - 1; i >= 0; i--) {
        off_t end = lseek(ls->fds[i], 0, SEEK_END);
        for (off_t pos = end; pos > 0;) {
            size_t len = pos > BLOCK_BYTES ? BLOCK_BYTES : (size_t)pos;
            pos -= (off_t)len;
            if (pread(ls->fds[i], buf, len, pos) != (ssize_t)len) {
                break;
            }
            bool last = i == ls->n_fds - 1 && pos + (off_t)len == end;
            size_t off = gt_log_tail_offset(buf, len, n, last, &seen);
            if (seen >= n) {
                lseek(ls->fds[i], pos + (off_t)off, SEEK_SET);
                ls->cur = i;
                free(buf);
                return;
            }
        }
        lseek(ls->fds[i], 0, SEEK_SET);
    }
    ls->cur = 0;
    free(buf);
}

static bool same_file(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino &&
           a.st_dev == b.st_dev;
}

static void schedule(struct logstream *ls, int ms)
{
    struct timeval tv = {0, ms * 1000};
    evtimer_add(ls->tick, &tv);
}

/* Send the whole lines read so far, as the view shows them; at the end
 * also what is left (a plain log's last line without its newline). */
static void send_lines(struct logstream *ls, bool ending)
{
    struct gt_buf b;
    gt_buf_init(&b);
    size_t n;
    char *line;
    while ((line = evbuffer_readln(ls->raw, &n, EVBUFFER_EOL_LF)) != NULL) {
        gt_crilog_render(line, n, &ls->view, &ls->mid_line, &b);
        free(line);
    }
    size_t left = evbuffer_get_length(ls->raw);
    if (ending && left) {
        const char *rest = (const char *)evbuffer_pullup(ls->raw, -1);
        struct gt_crilog_entry e;
        if (gt_crilog_parse(rest, left, &e)) {
            gt_crilog_render(rest, left, &ls->view, &ls->mid_line, &b);
        } else {
            gt_buf_append(&b, rest, left);
        }
        evbuffer_drain(ls->raw, left);
    }
    if (b.len) {
        struct evbuffer *out = evbuffer_new();
        evbuffer_add(out, b.data, b.len);
        evhttp_send_reply_chunk(ls->req, out);
        evbuffer_free(out);
    }
    gt_buf_fini(&b);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct logstream *ls = arg;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(ls->conn);
    if (evbuffer_get_length(bufferevent_get_output(bev)) > OUT_HIGH_BYTES) {
        schedule(ls, 10);
        return;
    }
    char exit_path[PATH_MAX + 200], log_path[PATH_MAX + 200];
    snprintf(exit_path, sizeof(exit_path), "%s/exit.json", ls->dir);
    snprintf(log_path, sizeof(log_path), "%s/task.log", ls->data);
    /* checked before the last read */
    bool exited = access(exit_path, F_OK) == 0 || !gt_gantlet_task_find(ls->g, ls->uid);
    if (ls->n_fds == 0) {
        open_files(ls); /* the shim has not created task.log yet */
    }
    size_t sent = 0;
    while (sent < OUT_HIGH_BYTES && ls->cur < ls->n_fds) {
        char buf[BLOCK_BYTES];
        ssize_t r = read(ls->fds[ls->cur], buf, sizeof(buf));
        if (r > 0) {
            evbuffer_add(ls->raw, buf, (size_t)r);
            sent += (size_t)r;
            continue;
        }
        if (ls->cur < ls->n_fds - 1) {
            ls->cur++;
            continue;
        }
        /* drained the newest file: rotated meanwhile? then read on in the new one */
        int cur = ls->fds[ls->cur];
        if (ls->follow && !same_file(cur, log_path)) {
            int nfd = open(log_path, O_RDONLY | O_CLOEXEC);
            if (nfd >= 0) {
                close(cur);
                ls->fds[ls->cur] = nfd;
                continue;
            }
        }
        break;
    }
    bool ending = sent < OUT_HIGH_BYTES && (!ls->follow || exited);
    send_lines(ls, ending);
    if (sent >= OUT_HIGH_BYTES) {
        schedule(ls, 1);
    } else if (!ls->follow || exited) {
        stream_end(ls);
    } else {
        ls->idle_ms = sent ? FOLLOW_MIN_MS : ls->idle_ms * 2;
        ls->idle_ms = ls->idle_ms > FOLLOW_MAX_MS ? FOLLOW_MAX_MS : ls->idle_ms;
        schedule(ls, ls->idle_ms);
    }
}

/* A query parameter that is a count: absent or empty leaves *out as it
 * is; false for anything but a non-negative decimal integer. */
static bool count_param(const char *v, int64_t *out)
{
    if (!v || !*v) {
        return true;
    }
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || *end || n < 0) {
        return false;
    }
    *out = n;
    return true;
}

static void serve_log(struct gt_gantlet *g, struct evhttp_request *req, const char *uid,
                      const char *query)
{
    struct gt_ltask *t = gt_gantlet_task_find(g, uid);
    if (!t) {
        evhttp_send_error(req, 404, "no such task on this node");
        return;
    }
    struct evkeyvalq q;
    evhttp_parse_query_str(query ? query : "", &q);
    const char *follow = evhttp_find_header(&q, "follow");
    const char *tail = evhttp_find_header(&q, "tailLines");
    const char *stamps = evhttp_find_header(&q, "timestamps");
    const char *since = evhttp_find_header(&q, "sinceMs");
    int64_t tail_n = -1, since_ms = 0;
    const char *bad = !count_param(tail, &tail_n)      ? "tailLines: not a non-negative integer"
                      : !count_param(since, &since_ms) ? "sinceMs: not a non-negative integer"
                                                       : NULL;
    if (bad) {
        evhttp_clear_headers(&q);
        evhttp_send_error(req, 400, bad);
        return;
    }
    struct logstream *ls = gt_xcalloc(1, sizeof(*ls));
    ls->req = req;
    ls->conn = evhttp_request_get_connection(req);
    ls->g = g;
    snprintf(ls->uid, sizeof(ls->uid), "%s", uid);
    ls->follow = follow && (!strcmp(follow, "true") || !strcmp(follow, "1"));
    ls->idle_ms = FOLLOW_MIN_MS;
    ls->view.timestamps = stamps && !strcmp(stamps, "true");
    ls->view.since_ms = since_ms;
    ls->raw = evbuffer_new();
    evhttp_clear_headers(&q);
    snprintf(ls->dir, sizeof(ls->dir), "%s", t->dir);
    snprintf(ls->data, sizeof(ls->data), "%s", t->data);
    open_files(ls);
    tail_seek(ls, tail_n);
    ls->tick = evtimer_new(g->base, on_tick, ls);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; charset=utf-8");
    evhttp_send_reply_start(req, 200, "OK");
    evhttp_connection_set_closecb(ls->conn, on_close, ls);
    if (ls->n_fds == 0 && !ls->follow) {
        stream_end(ls);
        return;
    }
    schedule(ls, 0);
}

static void serve_metrics(struct gt_gantlet *g, struct evhttp_request *req)
{
    struct gt_buf text;
    gt_buf_init(&text);
    gt_gantlet_metrics_render(g, &text);
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, text.data, text.len);
    gt_buf_fini(&text);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct gt_gantlet *g = arg;
    const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
    const char *path = evhttp_uri_get_path(u);
    if (!path) {
        evhttp_send_error(req, 400, "bad path");
        return;
    }
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (!strcmp(path, "/healthz") && cmd == EVHTTP_REQ_GET) {
        struct evbuffer *b = evbuffer_new();
        evbuffer_add_printf(b, "ok\n");
        evhttp_send_reply(req, 200, "OK", b);
        evbuffer_free(b);
        return;
    }
    if (!strcmp(path, "/metrics") && cmd == EVHTTP_REQ_GET) {
        serve_metrics(g, req);
        return;
    }
    char uid[128], what[8] = "";
    int n = 0;
    if (sscanf(path, "/v1/tasks/%127[^/]/%7[a-z]%n", uid, what, &n) != 2 || path[n] != '\0' ||
        (strcmp(what, "log") != 0 && strcmp(what, "usage") != 0 && strcmp(what, "exec") != 0)) {
        evhttp_send_error(req, 404, "not found");
        return;
    }
    bool exec = !strcmp(what, "exec");
    if (cmd != (exec ? EVHTTP_REQ_POST : EVHTTP_REQ_GET)) {
        evhttp_send_error(req, 405, exec ? "only POST" : "only GET");
        return;
    }
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (!auth || strncmp(auth, "Bearer ", 7) != 0) {
        evhttp_send_error(req, 401, "a bearer token is required");
        return;
    }
    if (!gt_secret_equal(auth + 7, g->token)) {
        evhttp_send_error(req, 403, "only the node's token may read logs or exec here");
        return;
    }
    const char *upgrade = evhttp_find_header(evhttp_request_get_input_headers(req), "Upgrade");
    if (exec && upgrade && !strcasecmp(upgrade, GT_EXEC_PROTOCOL)) {
        gt_gantlet_exec_stream(g, req, uid);
    } else if (exec) {
        gt_gantlet_exec_serve(g, req, uid);
    } else if (!strcmp(what, "usage")) {
        gt_gantlet_serve_usage(g, req, uid);
    } else {
        serve_log(g, req, uid, evhttp_uri_get_query(u));
    }
}

int gt_gantlet_http_start(struct gt_gantlet *g, struct gt_err *err)
{
    const char *listen = g->cfg->listen;
    const char *colon = strrchr(listen, ':');
    char *end;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || *end || port < 0 || port > 65535) {
        return gt_err_set(err, GT_EINVAL, "--listen %s: not ADDR:PORT", listen);
    }
    char *addr = gt_xstrndup(listen, (size_t)(colon - listen));
    g->http = evhttp_new(g->base);
    evhttp_set_gencb(g->http, on_request, g);
    struct evhttp_bound_socket *s =
        evhttp_bind_socket_with_handle(g->http, addr, (ev_uint16_t)port);
    if (!s) {
        int rc = gt_err_set(err, -EADDRINUSE, "--listen %s: cannot bind", listen);
        free(addr);
        return rc;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int bound = (int)port;
    if (getsockname(evhttp_bound_socket_get_fd(s), (struct sockaddr *)&ss, &sl) == 0) {
        bound = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
    snprintf(g->agent_url, sizeof(g->agent_url), "http://%s:%d", addr, bound);
    free(addr);
    return 0;
}
