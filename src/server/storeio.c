/*
 * The store writes of gantryd, the API's and the controllers' alike, go
 * through here: refused once an fsync failed, counted in flight (shutdown
 * waits for them), timed by operation, and, for the controllers, guarded
 * by the leader key (leader.c). A failed fsync makes the daemon refuse
 * every later write and drain with exit status 1, through the drain hook
 * its life cycle (server.c) set, which sits above every caller of these; a
 * guarded write refused because this replica is no longer the leader does
 * the same, so that a deposed leader stops at once.
 */
#include <stdlib.h>

#include "server/fault.h"
#include "server/server_int.h"
#include "server/storeio.h"

/* One write on its way, for its latency by operation. */
struct timed {
    struct gt_server *s;
    enum gt_store_op op;
    int64_t start_ns;
    gt_store_done_fn done;
    void *arg;
};

static void timed_done(int rc, int64_t rev, const struct gt_err *err, void *arg)
{
    struct timed t = *(struct timed *)arg;
    free(arg);
    gt_histogram_observe(&t.s->metrics.store_seconds[t.op],
                         (double)(gt_now_ns() - t.start_ns) / 1e9);
    if (t.done) {
        t.done(rc, rev, err, t.arg);
    }
}

int gt_server_write(struct gt_server *s, bool guarded, enum gt_store_op op, const char *key,
                    const char *value, size_t len, int64_t expected_rev, gt_store_done_fn done,
                    void *arg)
{
    if (s->failed || gt_store_failed(s->store)) {
        return GT_EFSYNC;
    }
    if (gt_fault_hit(&s->faults, GT_FP_STORE_COMMIT) == GT_FAULT_FAIL) {
        return GT_ESTORE;
    }
    struct timed *t = gt_xmalloc(sizeof(*t));
    *t = (struct timed){.s = s, .op = op, .start_ns = gt_now_ns(), .done = done, .arg = arg};
    s->n_inflight++;
    int rc = gt_store_write_guarded(s->store, guarded && s->have_guard ? &s->guard : NULL, op, key,
                                    value, len, expected_rev, timed_done, t);
    if (rc) {
        free(t);
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
    if (rc == GT_ENOTLEADER && !s->draining) {
        gt_log_error("a guarded write was refused: another replica leads; exiting", "exit=%d", 1);
        if (s->drain) {
            s->drain(s, 1);
        }
    }
}

int gt_server_get(struct gt_server *s, const char *key, struct gt_store_kv *kv, struct gt_err *err)
{
    int64_t t0 = gt_now_ns();
    int rc = gt_store_get(s->store, key, kv, err);
    gt_histogram_observe(&s->metrics.store_seconds[GT_STORE_REQ_GET],
                         (double)(gt_now_ns() - t0) / 1e9);
    return rc;
}

int gt_server_list(struct gt_server *s, const char *prefix, gt_store_list_fn fn, void *arg,
                   int64_t *rev, struct gt_err *err)
{
    int64_t t0 = gt_now_ns();
    int rc = gt_store_list(s->store, prefix, fn, arg, rev, err);
    gt_histogram_observe(&s->metrics.store_seconds[GT_STORE_REQ_LIST],
                         (double)(gt_now_ns() - t0) / 1e9);
    return rc;
}
