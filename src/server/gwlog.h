/*
 * gwlog.c: the serving gateway's request log, read from HAProxy, kept as
 * per-replica sliding-window latency histograms.
 */
#ifndef GT_SERVER_GWLOG_H
#define GT_SERVER_GWLOG_H

#include <stdint.h>

#include "common/common.h"

struct event_base;
struct gt_gwlog;

/* The line HAProxy writes per request (log-format; HAProxy's own `option
 * httplog` layout without captures and cookies), to the log socket and,
 * for abnormal requests, to its log file. Only "%b/%s", "%ST" and "%Ta"
 * (the fifth timer: total active time, ms) are read back. */
#define GT_GWLOG_FORMAT                                                                            \
    "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq "         \
    "%{+Q}r"

#define GT_GWLOG_WINDOW_S 10 /* the window the histograms cover, in 1 s slots */
/* Log-spaced buckets of milliseconds: 0..31 exact, then 16 per power of
 * two up to 2^21 - 1 ms (about 35 min; longer requests count there), so a
 * quantile is within 1/16 (6 %) of the true value. */
#define GT_GWLOG_BUCKETS 288
#define GT_GWLOG_MAX_SERVERS 4096 /* replicas tracked at once; more are not counted */

/* A latency histogram: requests, those answered 5xx (or not at all), and
 * their total active time (HAProxy's Ta) per bucket. */
struct gt_gwlog_hist {
    int64_t n;
    int64_t n_error;
    int64_t count[GT_GWLOG_BUCKETS];
};

/* An empty log (new; gt_gwlog_free), not yet reading a socket. */
struct gt_gwlog *gt_gwlog_new(void);
/* Free log and close its socket; NULL is fine. */
void gt_gwlog_free(struct gt_gwlog *log);
/* Bind a Unix datagram socket at path (an old file there is replaced; the
 * path is borrowed) and read it on base's loop, non-blocking, each
 * datagram one request line (HAProxy's `log unix@PATH format raw`).
 * 0, or -errno with err. */
int gt_gwlog_listen(struct gt_gwlog *log, struct event_base *base, const char *path,
                    struct gt_err *err);
/* Count one request line (GT_GWLOG_FORMAT; len bytes, no NUL needed) at
 * now_ms. 0; GT_EINVAL for a line not in the format or without a server
 * (a request answered by the gateway itself), counted nowhere. */
int gt_gwlog_record(struct gt_gwlog *log, const char *line, size_t len, int64_t now_ms);
/* Add the requests of server of backend (borrowed) over the window ending
 * at now_ms to sum. */
void gt_gwlog_window(const struct gt_gwlog *log, const char *backend, const char *server,
                     int64_t now_ms, struct gt_gwlog_hist *sum);
/* The q-quantile (0 < q <= 1) of h in ms: the largest value of the bucket
 * it falls in (the true value is at most that); -1 when h is empty. */
int64_t gt_gwlog_quantile_ms(const struct gt_gwlog_hist *h, double q);

#endif
