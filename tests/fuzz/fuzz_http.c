/*
 * Fuzz target: gantryd's HTTP front. Each input is the raw byte stream of
 * one client connection (any number of pipelined requests) fed to gantryd
 * over the memory store: libevent's request parser, the router,
 * authentication, the access rules and every handler behind them (reads,
 * writes, watches, subresources, the controllers' routes). The daemon is
 * the real one; libevent builds a server-side request only from an
 * accepted connection, so the bytes go through a socket: a Unix socket in
 * the abstract namespace that the harness adds to gantryd's own HTTP server
 * (evhttp_bind_listener), cheaper per input than its TCP listener and
 * served by the same code above the accept.
 *
 * Persistent: one daemon serves input after input, so an input costs a
 * connection and its requests, not a daemon's start and shutdown (about
 * five times the inputs a second). What an input changes is not reset in
 * place; the daemon is replaced instead. It is shut down (as on SIGTERM:
 * watches ended, events flushed, every store write finished within
 * DRAIN_NS) and a fresh one started for the next input whenever the input
 * left anything behind: a store write (the store revision moved: objects,
 * Events), a write still in flight, or a watch stream or a connection
 * still open; and after RESTART_EVERY inputs, so that what no revision
 * shows (metrics counters, the controllers' once-a-second timers) cannot
 * drift far. Most inputs are refused before any write (bad requests,
 * authentication, access, validation) and share a daemon; every input
 * meets a daemon whose store is as a fresh one's, so an input found to
 * crash replays on its own (the corpus replay, tests/fuzz/replay_main.c,
 * and libFuzzer's crash reproduction both run it so); what can still
 * differ is only those counters and timers. The last daemon is shut down
 * at exit, so LeakSanitizer's check at exit sees any allocation an input
 * lost, whether or not a restart followed it.
 *
 * Tokens: t-admin (admin), t-bob (bob, uid 1002), t-n1 and t-n2 (nodes n1
 * and n2); the seed corpus uses them. Whatever the bytes, gantryd must not
 * crash, leak, or read out of bounds.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/listener.h>

#include "server/server_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An input is done once gantryd has closed the connection (it does when
 * every request is answered and the client's half-close read), or has
 * been quiet this long with no store write in flight (a watch or a long
 * poll stays open: it is cut here), and at the latest after INPUT_NS
 * (see converse). */
#define QUIET_NS (200 * 1000LL)
#define INPUT_NS (300 * 1000000LL)
/* gantryd's shutdown must finish its writes within this. */
#define DRAIN_NS (10 * 1000000000LL)
/* A fresh daemon at least this often, whatever the inputs did. */
#define RESTART_EVERY 10000
/* Loop turns after the client's close for gantryd to see it and free the
 * connection (and a watch stream on it). */
#define CLOSE_TURNS 4

static const char tokens[] = "t-admin,admin,0,\"gantry:admins\"\n"
                             "t-bob,bob,1002\n"
                             "t-n1,system:node:n1,65534,\"gantry:nodes\"\n"
                             "t-n2,system:node:n2,65534,\"gantry:nodes\"\n";

/* The daemon kept between inputs (libFuzzer calls the target with no
 * context argument, so it lives here); up: s is started. */
struct daemon {
    struct gt_server_config cfg;
    struct gt_server s;
    struct sockaddr_un addr; /* its listener for the inputs */
    socklen_t addr_len;
    int64_t fresh_rev; /* the store's revision when it was started */
    unsigned n_inputs; /* inputs served since */
    bool up;
};

static struct daemon d;

static void daemon_start(struct daemon *dm)
{
    char *argv[] = {"gantryd",   "--data-dir", "/nonexistent", "--token-file",
                    "/dev/null", "--listen",   "127.0.0.1:0",  NULL};
    bool help = false;
    GT_ASSERT(gt_server_config_parse(&dm->cfg, 7, argv, NULL, &help, NULL) == 0);
    struct gt_server *s = &dm->s;
    memset(s, 0, sizeof(*s));
    s->cfg = &dm->cfg;
    s->base = event_base_new();
    struct gt_store_options o = {
        .backend = &gt_store_memory_backend, .base = s->base, .watch_history = 100};
    GT_ASSERT(gt_store_open(&o, &s->store, NULL) == 0);
    GT_ASSERT(gt_server_tokens_parse(tokens, strlen(tokens), &s->tokens, NULL) == 0);
    struct gt_err err = {0};
    if (gt_server_start(s, &err) != 0) {
        gt_assert_fail(err.msg, __FILE__, __LINE__);
    }
    /* A Unix socket in the abstract namespace (no file to remove), this
     * process's own: the same request parser as the TCP listener's, less
     * of the kernel's work per input. */
    static unsigned n_started;
    memset(&dm->addr, 0, sizeof(dm->addr));
    dm->addr.sun_family = AF_UNIX;
    int n = snprintf(dm->addr.sun_path + 1, sizeof(dm->addr.sun_path) - 1, "gantry-fuzz-http-%d-%u",
                     (int)getpid(), n_started++);
    dm->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    struct evconnlistener *l =
        evconnlistener_new_bind(s->base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
                                -1, (const struct sockaddr *)&dm->addr, (int)dm->addr_len);
    GT_ASSERT(l);
    GT_ASSERT(evhttp_bind_listener(s->http, l));
    event_base_loop(s->base, EVLOOP_NONBLOCK);
    dm->fresh_rev = gt_store_revision(s->store);
    dm->n_inputs = 0;
    dm->up = true;
}

/* gantryd's own shutdown (SIGTERM's drain: no more connections, watches
 * ended, events flushed), its store writes finished, then stop. */
static void daemon_stop(struct daemon *dm)
{
    struct gt_server *s = &dm->s;
    s->drain(s, 0);
    int64_t start = gt_now_ns();
    while (s->n_inflight > 0) {
        event_base_loop(s->base, EVLOOP_NONBLOCK);
        GT_ASSERT(gt_now_ns() - start < DRAIN_NS);
    }
    gt_server_stop(s);
    gt_server_config_fini(&dm->cfg);
    dm->up = false;
}

static void daemon_atexit(void)
{
    if (d.up) {
        daemon_stop(&d);
    }
}

static int client_connect(const struct daemon *dm)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    GT_ASSERT(fd >= 0);
    GT_ASSERT(connect(fd, (const struct sockaddr *)&dm->addr, dm->addr_len) == 0);
    return fd;
}

/* True when gantryd has nothing left to do for the connection: every
 * byte sent has been read from the socket (SIOCOUTQ on a Unix socket
 * counts what the peer has not read), no store write is in flight, and the
 * loop has no callback ready to run (a reply written, a pipelined request
 * buffered for the next turn). */
static bool server_idle(struct gt_server *s, int fd)
{
    int unread = 0;
    return s->n_inflight == 0 && ioctl(fd, SIOCOUTQ, &unread) == 0 && unread == 0 &&
           event_base_get_num_events(s->base, EVENT_BASE_COUNT_ACTIVE) == 0;
}

/* Send data on fd between turns of the loop; once gantryd is idle (twice
 * in a row, see server_idle) or quiet for QUIET_NS with no store write in
 * flight, half-close; read and drop the replies until gantryd closes, or is
 * quiet again (a watch or a long poll stays open: it is cut here), and at
 * the latest after INPUT_NS. The half-close waits for idleness because
 * libevent drops the pipelined requests it has not parsed yet when it
 * reads the end of the stream. True if gantryd closed the connection. */
static bool converse(struct gt_server *s, int fd, const uint8_t *data, size_t size)
{
    size_t off = 0;
    bool shut = false;
    int idle = 0;
    int64_t start = gt_now_ns(), heard = start;
    for (;;) {
        /* waiting only for the store's writer thread: sleep until it
         * reports rather than spin */
        bool wait = off == size && s->n_inflight > 0 &&
                    event_base_get_num_events(s->base, EVENT_BASE_COUNT_ACTIVE) == 0;
        event_base_loop(s->base, wait ? EVLOOP_ONCE : EVLOOP_NONBLOCK);
        if (off < size) {
            ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL);
            if (n > 0) {
                off += (size_t)n;
                heard = gt_now_ns();
            } else if (n < 0 && errno != EAGAIN) {
                return true; /* gantryd closed mid-request (413, 400) */
            }
        }
        char buf[16384];
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        int64_t now = gt_now_ns();
        if (n > 0) {
            heard = now;
            idle = 0;
            continue;
        }
        if (n == 0 || errno != EAGAIN) {
            return true;
        }
        if (now - start > INPUT_NS) {
            return false;
        }
        bool quiet = s->n_inflight == 0 && now - heard > QUIET_NS;
        if (shut) {
            if (quiet) {
                return false;
            }
            continue;
        }
        idle = off == size && server_idle(s, fd) ? idle + 1 : 0;
        if (idle >= 2 || (off == size && quiet)) {
            shutdown(fd, SHUT_WR);
            shut = true;
            heard = now;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!d.up) {
        static bool once;
        if (!once) {
            once = true;
            gt_log_set_level(GT_LOG_ERROR);
            signal(SIGPIPE, SIG_IGN); /* as gantryd: a reply to a client gone is no death */
            atexit(daemon_atexit);
        }
        daemon_start(&d);
    }
    struct gt_server *s = &d.s;
    int fd = client_connect(&d);
    bool closed = converse(s, fd, data, size);
    close(fd);
    for (int i = 0; i < CLOSE_TURNS && s->streams; i++) {
        event_base_loop(s->base, EVLOOP_NONBLOCK);
    }
    d.n_inputs++;
    if (!closed || s->streams || s->n_inflight > 0 || s->draining ||
        gt_store_revision(s->store) != d.fresh_rev || d.n_inputs >= RESTART_EVERY) {
        daemon_stop(&d);
    }
    return 0;
}
