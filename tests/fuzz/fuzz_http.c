/*
 * Fuzz target: gantryd's HTTP front. Each input is the raw byte stream of
 * one client connection (any number of pipelined requests) fed to a fresh
 * gantryd over the memory store: libevent's request parser, the router,
 * authentication, the access rules and every handler behind them (reads,
 * writes, watches, subresources, the controllers' routes). The daemon is
 * the real one with its real listener on a loopback port (libevent builds a
 * server-side request only from an accepted connection, so the bytes go
 * through a socket; nothing leaves the host). A fresh daemon per input
 * keeps each input reproducible on its own.
 *
 * Tokens: t-admin (admin), t-bob (bob, uid 1002), t-n1 and t-n2 (nodes n1
 * and n2); the seed corpus uses them. Whatever the bytes, gantryd must not
 * crash, leak, or read out of bounds, and its shutdown (as on SIGTERM) must
 * finish every store write the input started within DRAIN_NS.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/server_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An input is done once gantryd has been quiet this long with no store
 * write in flight (watches and long polls stay open: they are cut here),
 * and at the latest after INPUT_NS. */
#define QUIET_NS (200 * 1000LL)
#define INPUT_NS (300 * 1000000LL)
/* gantryd's shutdown must finish its writes within this. */
#define DRAIN_NS (10 * 1000000000LL)

static const char tokens[] = "t-admin,admin,0,\"gantry:admins\"\n"
                             "t-bob,bob,1002\n"
                             "t-n1,system:node:n1,65534,\"gantry:nodes\"\n"
                             "t-n2,system:node:n2,65534,\"gantry:nodes\"\n";

static int server_open(struct gt_server_config *cfg, struct gt_server *s)
{
    char *argv[] = {"gantryd",   "--data-dir", "/nonexistent", "--token-file",
                    "/dev/null", "--listen",   "127.0.0.1:0",  NULL};
    bool help = false;
    GT_ASSERT(gt_server_config_parse(cfg, 7, argv, NULL, &help, NULL) == 0);
    memset(s, 0, sizeof(*s));
    s->cfg = cfg;
    s->base = event_base_new();
    struct gt_store_options o = {
        .backend = &gt_store_memory_backend, .base = s->base, .watch_history = 100};
    GT_ASSERT(gt_store_open(&o, &s->store, NULL) == 0);
    GT_ASSERT(gt_server_tokens_parse(tokens, strlen(tokens), &s->tokens, NULL) == 0);
    struct gt_err err = {0};
    if (gt_server_start(s, &err) != 0) {
        gt_assert_fail(err.msg, __FILE__, __LINE__);
    }
    struct sockaddr_in in;
    socklen_t len = sizeof(in);
    GT_ASSERT(getsockname(evhttp_bound_socket_get_fd(s->bound), (struct sockaddr *)&in, &len) == 0);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    GT_ASSERT(fd >= 0);
    /* close with a reset: no TIME_WAIT piles up over millions of inputs */
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    int rc = connect(fd, (struct sockaddr *)&in, sizeof(in));
    GT_ASSERT(rc == 0 || errno == EINPROGRESS);
    return fd;
}

/* Send data on fd between turns of the loop, then half-close; read and drop
 * the replies until gantryd closes, or is quiet (QUIET_NS), or INPUT_NS
 * pass. */
static void converse(struct gt_server *s, int fd, const uint8_t *data, size_t size)
{
    size_t off = 0;
    bool shut = false;
    int64_t start = gt_now_ns(), heard = start;
    for (;;) {
        event_base_loop(s->base, EVLOOP_NONBLOCK);
        if (off < size) {
            ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL);
            if (n > 0) {
                off += (size_t)n;
            } else if (n < 0 && errno != EAGAIN && errno != ENOTCONN) {
                return; /* gantryd closed mid-request (413, 400) */
            }
        } else if (!shut) {
            shutdown(fd, SHUT_WR);
            shut = true;
        }
        char buf[16384];
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        int64_t now = gt_now_ns();
        if (n > 0) {
            heard = now;
        } else if (n == 0 || (errno != EAGAIN && errno != ENOTCONN)) {
            return;
        }
        if ((shut && s->n_inflight == 0 && now - heard > QUIET_NS) || now - start > INPUT_NS) {
            return;
        }
    }
}

/* gantryd's own shutdown (SIGTERM's drain: no more connections, watches
 * ended, events flushed), its store writes finished, then stop. */
static void server_close(struct gt_server_config *cfg, struct gt_server *s)
{
    s->drain(s, 0);
    int64_t start = gt_now_ns();
    while (s->n_inflight > 0) {
        event_base_loop(s->base, EVLOOP_NONBLOCK);
        GT_ASSERT(gt_now_ns() - start < DRAIN_NS);
    }
    gt_server_stop(s);
    gt_server_config_fini(cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gt_log_set_level(GT_LOG_ERROR);
    signal(SIGPIPE, SIG_IGN); /* as gantryd: a reply to a client gone is no death */
    struct gt_server_config cfg;
    struct gt_server s;
    int fd = server_open(&cfg, &s);
    converse(&s, fd, data, size);
    close(fd);
    server_close(&cfg, &s);
    return 0;
}
