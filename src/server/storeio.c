/*
 * The store writes of gantryd, the API's and the controllers' alike, go
 * through here: refused once an fsync failed, counted in flight (shutdown
 * waits for them) and timed. A failed fsync makes the daemon refuse every
 * later write and drain with exit status 1, through the drain hook its
 * life cycle (server.c) set, which sits above every caller of these.
 */
#include "server/storeio.h"
#include "server/server_int.h"

int gt_server_write(struct gt_server *s, enum gt_store_op op, const char *key, const char *value,
                    size_t len, int64_t expected_rev, gt_store_done_fn done, void *arg)
{
    if (s->failed || gt_store_failed(s->store)) {
        return GT_EFSYNC;
    }
    s->n_inflight++;
    int rc = gt_store_write(s->store, op, key, value, len, expected_rev, done, arg);
    if (rc) {
        s->n_inflight--;
    }
    return rc;
}

void gt_server_write_done(struct gt_server *s, int rc, int64_t submit_ns)
{
    s->n_inflight--;
    if (submit_ns) {
        gt_histogram_observe(&s->metrics.commit_seconds, (double)(gt_now_ns() - submit_ns) / 1e9);
    }
    if (rc == GT_EFSYNC && !s->failed) {
        s->failed = true;
        gt_log_error("store fsync failed; refusing writes and exiting", "exit=%d", 1);
        if (s->drain) {
            s->drain(s, 1);
        }
    }
}
