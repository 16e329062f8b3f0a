/*
 * A streaming exec: POST /v1/tasks/{uid}/exec with "Upgrade:
 * v4.channel.gantry.dev" (GT_EXEC_PROTOCOL) and the body {"command":
 * [ARGV...], "stdin": B, "tty": B}. The agent answers 101 and the
 * connection carries frames (execframe.h) both ways while the command runs:
 * channel 0 is its standard input (with "stdin"; an empty frame closes it,
 * or, on a terminal, types ^D), 1 and 2 its output (one channel, 1, on a
 * terminal), 4 a window size for the terminal (TIOCSWINSZ, which sends the
 * foreground process SIGWINCH), and, once its output has ended and it has
 * exited, channel 3 carries {"status": "Success"|"Failure", "exitCode": N}
 * (128 + the signal's number when a signal ended it) and the agent closes
 * the connection. With "tty" the command gets a new pseudo-terminal as
 * its standard streams and controlling terminal (gt_gantlet_exec_spawn).
 *
 * The connection is the one evhttp accepted, taken over as a bufferevent
 * (as gantryd's notebook proxy does); evhttp's request is freed with it.
 * Output towards a slow client pauses reading the command's output at
 * PIPE_HIGH queued bytes; input waits in a buffer until the command reads
 * it, and the client is not read while that holds PIPE_HIGH bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "agent/agent_int.h"

#define PIPE_HIGH (1024 * 1024)

struct gt_exec_stream {
    struct gt_exec_stream *next, **pprev; /* on g->xstreams */
    struct evhttp_connection *conn;
    struct bufferevent *bev; /* the client's, taken from evhttp */
    pid_t joiner;
    bool tty;
    int in_fd;     /* the command's input (the pty's master with tty); -1 closed */
    bool in_eof;   /* the client ended the input: close once pending is written */
    int out_fd[2]; /* stdout (the master with tty), stderr; -1 at EOF */
    int status_fd; /* the joiner's report of the wait status; -1 at EOF */
    struct event *ev_out[2], *ev_status, *ev_in;
    struct evbuffer *pending; /* input the command has not read yet */
    int status;               /* wait status; -1 unknown */
    size_t status_got;
    bool done; /* the status frame is queued: free once it is sent */
};

static void stream_free(struct gt_exec_stream *x)
{
    *x->pprev = x->next;
    if (x->next) {
        x->next->pprev = x->pprev;
    }
    struct event *evs[] = {x->ev_out[0], x->ev_out[1], x->ev_status, x->ev_in};
    for (size_t i = 0; i < GT_ARRAY_LEN(evs); i++) {
        if (evs[i]) {
            event_free(evs[i]);
        }
    }
    int fds[] = {x->out_fd[0], x->out_fd[1], x->status_fd};
    for (size_t i = 0; i < GT_ARRAY_LEN(fds); i++) {
        if (fds[i] >= 0 && fds[i] != x->in_fd) {
            close(fds[i]);
        }
    }
    if (x->in_fd >= 0) {
        close(x->in_fd);
    }
    if (x->joiner > 0 && x->status < 0) {
        kill(x->joiner, SIGKILL); /* the command goes with its input and terminal */
    }
    evbuffer_free(x->pending);
    evhttp_connection_free(x->conn); /* with the bufferevent and the request */
    free(x);
}

static void send_frame(struct gt_exec_stream *x, int ch, const void *data, size_t len)
{
    uint8_t h[GT_EXEC_HEAD];
    gt_exec_frame_head(h, ch, len);
    struct evbuffer *out = bufferevent_get_output(x->bev);
    evbuffer_add(out, h, sizeof(h));
    evbuffer_add(out, data, len);
}

/* Output and status are in: the status frame, then close once sent. */
static void maybe_finish(struct gt_exec_stream *x)
{
    if (x->done || x->out_fd[0] >= 0 || x->out_fd[1] >= 0 || x->status_fd >= 0) {
        return;
    }
    int code = x->status < 0          ? 126
               : WIFEXITED(x->status) ? WEXITSTATUS(x->status)
                                      : 128 + WTERMSIG(x->status);
    json_t *o =
        json_pack("{s:s,s:i}", "status", code == 0 ? "Success" : "Failure", "exitCode", code);
    char *s = gt_json_dumps(o);
    json_decref(o);
    send_frame(x, GT_EXEC_STATUS, s, strlen(s));
    free(s);
    x->done = true;
    bufferevent_disable(x->bev, EV_READ);
}

static void close_fd(struct gt_exec_stream *x, int *fd, struct event **ev)
{
    event_free(*ev);
    *ev = NULL;
    if (*fd != x->in_fd) {
        close(*fd);
    }
    *fd = -1;
}

static void on_output(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct gt_exec_stream *x = arg;
    int i = fd == x->out_fd[0] ? 0 : 1;
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return;
    }
    if (n > 0) {
        send_frame(x, i == 0 ? GT_EXEC_STDOUT : GT_EXEC_STDERR, buf, (size_t)n);
        if (evbuffer_get_length(bufferevent_get_output(x->bev)) >= PIPE_HIGH) {
            for (int k = 0; k < 2; k++) {
                if (x->ev_out[k]) {
                    event_del(x->ev_out[k]);
                }
            }
            bufferevent_setwatermark(x->bev, EV_WRITE, PIPE_HIGH / 2, 0);
        }
        return;
    }
    /* EOF, or EIO from a master whose terminal every process has closed */
    close_fd(x, &x->out_fd[i], &x->ev_out[i]);
    maybe_finish(x);
}

static void on_status(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct gt_exec_stream *x = arg;
    int st;
    ssize_t n = read(fd, (char *)&st, sizeof(st));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return;
    }
    if (n == (ssize_t)sizeof(st)) {
        x->status = st;
        x->status_got = sizeof(st);
        return;
    }
    close_fd(x, &x->status_fd, &x->ev_status);
    if (x->status_got != sizeof(x->status)) {
        x->status = 126 << 8; /* the joiner failed before the command ran */
    }
    maybe_finish(x);
}

/* Write what the command will take of the pending input; at its end,
 * close the input (or type ^D on a terminal). */
static void flush_input(struct gt_exec_stream *x)
{
    while (x->in_fd >= 0 && evbuffer_get_length(x->pending) > 0) {
        ssize_t n = evbuffer_write(x->pending, x->in_fd);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && errno == EAGAIN) {
            event_add(x->ev_in, NULL);
            return;
        }
        if (n <= 0) { /* the command closed its input: drop what it will not read */
            evbuffer_drain(x->pending, evbuffer_get_length(x->pending));
        }
    }
    if (x->in_eof && x->in_fd >= 0) {
        if (x->tty) {
            char eof = 4;
            (void)!write(x->in_fd, &eof, 1);
            x->in_eof = false;
        } else {
            close(x->in_fd);
            x->in_fd = -1;
        }
    }
    if (!x->done) {
        bufferevent_enable(x->bev, EV_READ);
    }
}

static void on_input_writable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    flush_input(arg);
}

static void resize(struct gt_exec_stream *x, const char *data, size_t len)
{
    json_t *o = json_loadb(data, len, 0, NULL);
    json_int_t w = json_integer_value(json_object_get(o, "Width"));
    json_int_t h = json_integer_value(json_object_get(o, "Height"));
    json_decref(o);
    if (x->tty && x->in_fd >= 0 && w > 0 && h > 0 && w <= 65535 && h <= 65535) {
        struct winsize ws = {.ws_row = (unsigned short)h, .ws_col = (unsigned short)w};
        ioctl(x->in_fd, TIOCSWINSZ, &ws);
    }
}

static void client_read(struct bufferevent *bev, void *arg)
{
    struct gt_exec_stream *x = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    uint8_t h[GT_EXEC_HEAD];
    while (evbuffer_copyout(in, h, sizeof(h)) == (ssize_t)sizeof(h)) {
        size_t len = gt_exec_frame_len(h);
        if (len > GT_EXEC_FRAME_MAX) {
            stream_free(x);
            return;
        }
        if (evbuffer_get_length(in) < sizeof(h) + len) {
            break;
        }
        evbuffer_drain(in, sizeof(h));
        if (h[0] == GT_EXEC_STDIN && len == 0) {
            x->in_eof = true;
        } else if (h[0] == GT_EXEC_STDIN) {
            if (x->in_fd >= 0 && !x->in_eof) {
                evbuffer_remove_buffer(in, x->pending, len);
            } else {
                evbuffer_drain(in, len);
            }
        } else if (h[0] == GT_EXEC_RESIZE) {
            resize(x, (const char *)evbuffer_pullup(in, (ssize_t)len), len);
            evbuffer_drain(in, len);
        } else {
            evbuffer_drain(in, len);
        }
    }
    if (evbuffer_get_length(x->pending) >= PIPE_HIGH) {
        bufferevent_disable(bev, EV_READ);
    }
    flush_input(x);
}

static void client_write(struct bufferevent *bev, void *arg)
{
    struct gt_exec_stream *x = arg;
    if (x->done && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
        stream_free(x);
        return;
    }
    bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
    for (int k = 0; k < 2; k++) {
        if (x->ev_out[k]) {
            event_add(x->ev_out[k], NULL);
        }
    }
}

static void client_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    (void)what;
    stream_free(arg); /* the client went away: the command is killed */
}

/* The command's standard streams: std (theirs, closed by the caller once
 * spawned) and the agent's ends in x; -1 on failure. */
static int open_streams(struct gt_exec_stream *x, bool want_stdin, int std[3], int *status_w)
{
    int st[2], out[2] = {-1, -1}, err[2] = {-1, -1}, in[2] = {-1, -1};
    if (pipe2(st, O_CLOEXEC) != 0) {
        return -1;
    }
    x->status_fd = st[0];
    *status_w = st[1];
    if (x->tty) {
        int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        char name[64];
        int s =
            m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0 && ptsname_r(m, name, sizeof(name)) == 0
                ? open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)
                : -1;
        if (s < 0) {
            if (m >= 0) {
                close(m);
            }
            return -1;
        }
        x->in_fd = x->out_fd[0] = m;
        std[0] = std[1] = std[2] = s;
        return 0;
    }
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
        (want_stdin ? pipe2(in, O_CLOEXEC) : (in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC))) <
            0) {
        int fds[] = {out[0], out[1], err[0], err[1], in[0], in[1]};
        for (size_t i = 0; i < GT_ARRAY_LEN(fds); i++) {
            if (fds[i] >= 0) {
                close(fds[i]);
            }
        }
        return -1;
    }
    x->out_fd[0] = out[0];
    x->out_fd[1] = err[0];
    x->in_fd = in[1];
    std[0] = in[0];
    std[1] = out[1];
    std[2] = err[1];
    return 0;
}

void gt_gantlet_exec_stream(struct gt_gantlet *g, struct evhttp_request *req, const char *uid)
{
    json_t *body;
    char *argv[GT_EXEC_MAX_ARGS];
    struct gt_ltask *t = gt_gantlet_exec_request(g, req, uid, &body, argv);
    if (!t) {
        return;
    }
    struct gt_exec_stream *x = gt_xcalloc(1, sizeof(*x));
    x->tty = json_is_true(json_object_get(body, "tty"));
    x->in_fd = x->out_fd[0] = x->out_fd[1] = x->status_fd = -1;
    x->status = -1;
    x->pending = evbuffer_new();
    int std[3] = {-1, -1, -1}, status_w = -1;
    if (open_streams(x, json_is_true(json_object_get(body, "stdin")), std, &status_w) != 0) {
        evbuffer_free(x->pending);
        if (x->status_fd >= 0) {
            close(x->status_fd);
            close(status_w);
        }
        free(x);
        json_decref(body);
        evhttp_send_error(req, 500, "cannot open the command's streams");
        return;
    }
    x->joiner = gt_gantlet_exec_spawn(t->host_pid, argv, std, x->tty, status_w);
    json_decref(body);
    close(status_w);
    for (int i = 0; i < 3; i++) {
        if (std[i] >= 0 && (i == 0 || std[i] != std[i - 1])) {
            close(std[i]);
        }
    }
    x->conn = evhttp_request_get_connection(req);
    x->bev = evhttp_connection_get_bufferevent(x->conn);
    x->next = g->xstreams;
    if (x->next) {
        x->next->pprev = &x->next;
    }
    x->pprev = &g->xstreams;
    g->xstreams = x;
    if (x->joiner < 0) {
        x->status = 126 << 8;
        close(x->status_fd);
        x->status_fd = -1;
    }
    int fds[] = {x->out_fd[0], x->out_fd[1], x->status_fd, x->in_fd};
    for (size_t i = 0; i < GT_ARRAY_LEN(fds); i++) {
        if (fds[i] >= 0) {
            fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
        }
    }
    for (int i = 0; i < 2; i++) {
        if (x->out_fd[i] >= 0) {
            x->ev_out[i] = event_new(g->base, x->out_fd[i], EV_READ | EV_PERSIST, on_output, x);
            event_add(x->ev_out[i], NULL);
        }
    }
    if (x->status_fd >= 0) {
        x->ev_status = event_new(g->base, x->status_fd, EV_READ | EV_PERSIST, on_status, x);
        event_add(x->ev_status, NULL);
    }
    if (x->in_fd >= 0) {
        x->ev_in = event_new(g->base, x->in_fd, EV_WRITE, on_input_writable, x);
    }
    const char *head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: " GT_EXEC_PROTOCOL
                       "\r\nConnection: Upgrade\r\n\r\n";
    evbuffer_add(bufferevent_get_output(x->bev), head, strlen(head));
    bufferevent_set_timeouts(x->bev, NULL, NULL);
    bufferevent_setcb(x->bev, client_read, client_write, client_event, x);
    bufferevent_enable(x->bev, EV_READ | EV_WRITE);
    maybe_finish(x);
    if (evbuffer_get_length(bufferevent_get_input(x->bev))) {
        client_read(x->bev, x);
    }
}

void gt_gantlet_exec_streams_free(struct gt_gantlet *g)
{
    while (g->xstreams) {
        stream_free(g->xstreams);
    }
}
