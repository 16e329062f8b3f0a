/*
 * The serving gateway's request log. HAProxy logs every request it
 * forwards (GT_GWLOG_FORMAT, `log unix@PATH format raw`) as one datagram
 * to a Unix socket this module owns; the loop thread reads it without
 * blocking (at most READ_BATCH datagrams per wakeup, so a flood cannot
 * starve the loop) and counts each request in its replica's window:
 * GT_GWLOG_WINDOW_S slots of one second, each a histogram of the total
 * active time (HAProxy's Ta, ms) over GT_GWLOG_BUCKETS log-spaced
 * buckets. A slot is cleared when its second comes round again, so a
 * replica costs a fixed ~12 KiB however many requests it gets, and a
 * replica with no request over a whole window is dropped. HAProxy sends
 * without waiting: when the socket's queue is full (Linux queues at most
 * net.unix.max_dgram_qlen datagrams, 10 by default; the receive buffer
 * does not raise it) it drops lines and counts them (`show info` DroppedLogs), so
 * while the loop is busy the histograms are a sample, never a stall.
 *
 * Keys are "backend/server" as HAProxy names them (gateway.c: "P.N" and
 * the replica's job name). The module owns its table and socket; lines
 * are parsed in place and nothing of them is kept.
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/strmap.h"
#include "server/gwlog.h"

#define LINE_MAX_BYTES 4096
#define READ_BATCH 1024
#define EXACT_MS 32    /* buckets 0..31: one per ms */
#define SUB_BUCKETS 16 /* per power of two above */
#define MAX_MS ((INT64_C(1) << 21) - 1)

struct slot {
    int64_t sec; /* the second it counts (ms / 1000); 0: never used */
    uint32_t n, n_error;
    uint32_t count[GT_GWLOG_BUCKETS];
};

struct window {
    int64_t last_sec; /* the newest second with a request */
    struct slot slots[GT_GWLOG_WINDOW_S];
};

struct gt_gwlog {
    struct gt_strmap windows; /* "backend/server" -> struct window */
    int fd;
    struct event *ev;
    int64_t pruned_sec;
};

/* ---- histograms ---- */

static int bucket_of(int64_t ms)
{
    if (ms < EXACT_MS) {
        return ms < 0 ? 0 : (int)ms;
    }
    if (ms > MAX_MS) {
        ms = MAX_MS;
    }
    int e = 63 - __builtin_clzll((unsigned long long)ms); /* 5..20 */
    int sub = (int)((ms >> (e - 4)) & (SUB_BUCKETS - 1));
    return EXACT_MS + (e - 5) * SUB_BUCKETS + sub;
}

/* the largest ms that falls in bucket b */
static int64_t bucket_max_ms(int b)
{
    if (b < EXACT_MS) {
        return b;
    }
    int e = (b - EXACT_MS) / SUB_BUCKETS + 5, sub = (b - EXACT_MS) % SUB_BUCKETS;
    return ((int64_t)(SUB_BUCKETS + sub + 1) << (e - 4)) - 1;
}

int64_t gt_gwlog_quantile_ms(const struct gt_gwlog_hist *h, double q)
{
    if (h->n <= 0) {
        return -1;
    }
    double want = q * (double)h->n;
    int64_t rank = (int64_t)want < want ? (int64_t)want + 1 : (int64_t)want;
    rank = rank < 1 ? 1 : rank;
    int64_t seen = 0;
    for (int b = 0; b < GT_GWLOG_BUCKETS; b++) {
        seen += h->count[b];
        if (seen >= rank) {
            return bucket_max_ms(b);
        }
    }
    return bucket_max_ms(GT_GWLOG_BUCKETS - 1);
}

/* ---- lines ---- */

/* The space-separated token after *p (at most len - 1 bytes kept) into out;
 * *p moves past it. false at the end of the line. */
static bool token(const char **p, const char *end, char *out, size_t len)
{
    const char *s = *p;
    while (s < end && *s == ' ') {
        s++;
    }
    const char *t = s;
    while (t < end && *t != ' ' && *t != '\n') {
        t++;
    }
    if (t == s) {
        return false;
    }
    size_t n = (size_t)(t - s);
    if (n >= len) {
        return false;
    }
    memcpy(out, s, n);
    out[n] = '\0';
    *p = t;
    return true;
}

static struct window *window_for(struct gt_gwlog *log, const char *key)
{
    struct window *w = gt_strmap_get(&log->windows, key);
    if (!w && log->windows.n < GT_GWLOG_MAX_SERVERS) {
        w = gt_xcalloc(1, sizeof(*w));
        gt_strmap_put(&log->windows, key, w);
    }
    return w;
}

int gt_gwlog_record(struct gt_gwlog *log, const char *line, size_t len, int64_t now_ms)
{
    const char *end = line + len;
    const char *p = memchr(line, ']', len);
    char ft[256], bs[512], timers[128], st[16];
    if (p) {
        p++;
    }
    if (!p || !token(&p, end, ft, sizeof(ft)) || !token(&p, end, bs, sizeof(bs)) ||
        !token(&p, end, timers, sizeof(timers)) || !token(&p, end, st, sizeof(st))) {
        return GT_EINVAL;
    }
    char *slash = strchr(bs, '/');
    const char *ta = strrchr(timers, '/');
    char *stop = NULL;
    long status = strtol(st, &stop, 10);
    if (!slash || slash == bs || !slash[1] || !strcmp(slash + 1, "<NOSRV>") || !ta || *stop) {
        return GT_EINVAL;
    }
    long long ms = strtoll(ta + 1, &stop, 10);
    if (*stop) {
        return GT_EINVAL;
    }
    struct window *w = window_for(log, bs);
    if (!w) {
        return 0; /* over GT_GWLOG_MAX_SERVERS: not counted */
    }
    int64_t sec = now_ms / 1000;
    struct slot *s = &w->slots[sec % GT_GWLOG_WINDOW_S];
    if (s->sec != sec) {
        memset(s, 0, sizeof(*s));
        s->sec = sec;
    }
    s->n++;
    s->n_error += status >= 500 || status < 0;
    s->count[bucket_of(ms)]++;
    w->last_sec = sec > w->last_sec ? sec : w->last_sec;
    return 0;
}

void gt_gwlog_window(const struct gt_gwlog *log, const char *backend, const char *server,
                     int64_t now_ms, struct gt_gwlog_hist *sum)
{
    char *key = gt_xasprintf("%s/%s", backend, server);
    const struct window *w = gt_strmap_get(&log->windows, key);
    free(key);
    int64_t sec = now_ms / 1000;
    for (int i = 0; w && i < GT_GWLOG_WINDOW_S; i++) {
        const struct slot *s = &w->slots[i];
        if (s->sec <= sec - GT_GWLOG_WINDOW_S || s->sec > sec) {
            continue;
        }
        sum->n += s->n;
        sum->n_error += s->n_error;
        for (int b = 0; b < GT_GWLOG_BUCKETS; b++) {
            sum->count[b] += s->count[b];
        }
    }
}

/* ---- the socket ---- */

struct prune_ctx {
    struct gt_gwlog *log;
    int64_t sec;
};

static int prune_cb(const char *key, void *val, void *arg)
{
    struct prune_ctx *x = arg;
    const struct window *w = val;
    if (w->last_sec <= x->sec - GT_GWLOG_WINDOW_S) {
        free(gt_strmap_del(&x->log->windows, key));
        return 1; /* the map changed: walk again */
    }
    return 0;
}

/* Drop the windows of replicas with no request over a whole window. */
static void prune(struct gt_gwlog *log, int64_t now_ms)
{
    struct prune_ctx x = {log, now_ms / 1000};
    if (x.sec == log->pruned_sec) {
        return;
    }
    log->pruned_sec = x.sec;
    for (size_t before = log->windows.n + 1; log->windows.n < before;) {
        before = log->windows.n;
        gt_strmap_each(&log->windows, prune_cb, &x);
    }
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct gt_gwlog *log = arg;
    char buf[LINE_MAX_BYTES];
    int64_t now = gt_now_ms();
    for (int i = 0; i < READ_BATCH; i++) {
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                gt_log_warn("gateway: cannot read the request log", "error=\"%s\"",
                            strerror(errno));
            }
            break;
        }
        gt_gwlog_record(log, buf, (size_t)n, now);
    }
    prune(log, now);
}

int gt_gwlog_listen(struct gt_gwlog *log, struct event_base *base, const char *path,
                    struct gt_err *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        return gt_err_set(err, GT_EINVAL, "%s: too long for a Unix socket (at most %zu bytes)",
                          path, sizeof(sa.sun_path) - 1);
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return gt_err_set(err, -errno, "socket: %s", strerror(errno));
    }
    if ((unlink(path) != 0 && errno != ENOENT) ||
        bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        int rc = gt_err_set(err, -errno, "%s: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    log->fd = fd;
    log->ev = event_new(base, fd, EV_READ | EV_PERSIST, on_read, log);
    event_add(log->ev, NULL);
    return 0;
}

struct gt_gwlog *gt_gwlog_new(void)
{
    struct gt_gwlog *log = gt_xcalloc(1, sizeof(*log));
    gt_strmap_init(&log->windows);
    log->fd = -1;
    return log;
}

void gt_gwlog_free(struct gt_gwlog *log)
{
    if (!log) {
        return;
    }
    if (log->ev) {
        event_free(log->ev);
    }
    if (log->fd >= 0) {
        close(log->fd);
    }
    gt_strmap_fini(&log->windows, free);
    free(log);
}
