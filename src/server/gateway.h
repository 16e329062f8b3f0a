/*
 * gateway.c: the serving gateway, an HAProxy that gantryd runs,
 * configures and supervises (--gateway-listen).
 */
#ifndef GT_SERVER_GATEWAY_H
#define GT_SERVER_GATEWAY_H

#include "server/gwlog.h"
#include "server/server_int.h"

struct gt_gateway;

/* What HAProxy's `show stat` says of one replica (server), refreshed by
 * each stats poll (GT_GATEWAY_POLL_MS). Counters are HAProxy's cumulative ones; rate_rps is
 * requests forwarded per second over the last poll interval; rtime_ms and
 * ttime_ms HAProxy's averages over its last 1024 requests. */
struct gt_gw_stat {
    bool ready;   /* the readiness check passed last (L7OK) and the server is not DOWN */
    int64_t scur; /* requests in flight at the server */
    int64_t qcur; /* requests queued for it */
    int64_t stot; /* requests forwarded, ever */
    int64_t hrsp_5xx;
    int64_t errors; /* connection and response errors (econ + eresp) */
    int64_t rtime_ms;
    int64_t ttime_ms;
    double rate_rps;
    double error_rate; /* (5xx + errors) / requests over the last poll interval */
};

/* One replica's stats and what its rates are taken against. */
struct gt_gw_track {
    struct gt_gw_stat pub;
    int64_t prev_total, prev_bad, prev_ms; /* at the previous poll */
};
/* Parse HAProxy's `show stat` CSV (text, NUL-terminated; its "# " header
 * line names the columns) into stats, "proxy/server" -> struct
 * gt_gw_track (heap, owned by the map: free with free()), each replica's
 * rates against its previous poll, now_ms this one's time. FRONTEND and
 * BACKEND rows are skipped; text without every column used changes
 * nothing; a counter that is not a non-negative number reads as 0. The
 * stats are HAProxy's (its runtime socket), whose names come from the
 * users' services: fuzzed (tests/fuzz/fuzz_haproxy_stat.c). */
void gt_gateway_stats_parse(struct gt_strmap *stats, const char *text, int64_t now_ms);

/* Called after each poll of HAProxy's stats (every GT_GATEWAY_POLL_MS). */
typedef void gt_gateway_polled_fn(void *arg);
#define GT_GATEWAY_POLL_MS 250

/* The gateway of s when --gateway-listen is set (new; gt_gateway_free),
 * else NULL; polled(arg) after each stats poll. Its files (haproxy.cfg,
 * the runtime socket, the auth map, the request log's socket reqlog.sock,
 * haproxy.log with HAProxy's own messages and the abnormal requests) live
 * in <data-dir>/gateway. */
struct gt_gateway *gt_gateway_new(struct gt_server *s, gt_gateway_polled_fn *polled, void *arg);
/* Start HAProxy with no services. 0, or GT_EINVAL / -errno with err. */
int gt_gateway_start(struct gt_gateway *gw, struct gt_err *err);
/* Stop HAProxy (SIGTERM, reaped) and free gw; NULL is fine. */
void gt_gateway_free(struct gt_gateway *gw);

/* The desired state, given whole each time: gt_gateway_begin, then per
 * service gt_gateway_service and per replica gt_gateway_server (strings
 * borrowed for the call), then gt_gateway_commit, which converges HAProxy
 * on it: weights, drains and replicas through the runtime API (no
 * reload); a reload (new process, listeners passed with -x, the old one
 * finishing its requests) only when services come or go or change
 * their readiness path or access. weight 0..256 (HAProxy's); drain: no
 * new requests, the in-flight ones finish. */
void gt_gateway_begin(struct gt_gateway *gw);
void gt_gateway_service(struct gt_gateway *gw, const char *project, const char *name, bool public_,
                        const char *readiness_path);
void gt_gateway_server(struct gt_gateway *gw, const char *project, const char *name,
                       const char *server, const char *host, int port, int weight, bool drain);
void gt_gateway_commit(struct gt_gateway *gw);

/* The last stats of replica server of service project/name (borrowed until
 * the next poll), or NULL when HAProxy has not reported it. */
const struct gt_gw_stat *gt_gateway_stat(const struct gt_gateway *gw, const char *project,
                                         const char *name, const char *server);
/* Add the requests HAProxy logged for replica server of service
 * project/name over the last GT_GWLOG_WINDOW_S seconds to sum (their
 * count, errors and total time, gwlog.h). */
void gt_gateway_latency(const struct gt_gateway *gw, const char *project, const char *name,
                        const char *server, struct gt_gwlog_hist *sum);
/* The gateway's base URL ("http://ADDR:PORT"; static storage of gw). */
const char *gt_gateway_url(const struct gt_gateway *gw);

#endif
