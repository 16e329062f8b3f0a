/*
 * POST /debug/fault (with --enable-fault-injection): arm the store to fail
 * its nth write or fsync from now on, for tests of what survives a failed
 * write (DESIGN.md "Storage of state"); and gantryd's named fault points
 * (--fault-points, docs/faults.md).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/fault.h"
#include "server/reply.h"
#include "server/server_int.h"

void gt_server_fault(struct gt_req *r)
{
    const char *point = json_string_value(json_object_get(r->body, "point"));
    const char *nths = json_string_value(json_object_get(r->body, "nth"));
    enum gt_store_fault fp;
    if (point && !strcmp(point, "write")) {
        fp = GT_STORE_FAULT_WRITE;
    } else if (point && !strcmp(point, "fsync")) {
        fp = GT_STORE_FAULT_FSYNC;
    } else {
        gt_req_error(r, GT_EBADREQ, "point: must be write or fsync");
        return;
    }
    int64_t nth = 1;
    if (nths && (gt_parse_rev(nths, &nth) || nth < 1 || nth > 1000000)) {
        gt_req_error(r, GT_EBADREQ, "nth: must be an integer in [1, 1000000]");
        return;
    }
    if (r->s->fault_req) {
        gt_req_error(r, GT_ECONFLICT, "another fault is being armed");
        return;
    }
    r->s->fault_req = r;
    r->s->fault_point = fp;
    r->s->fault_nth = (int)nth;
    struct timeval tv = {.tv_sec = 0, .tv_usec = 1000};
    event_add(r->s->fault_timer, &tv);
}

int gt_server_fault_points_arm(struct gt_server *s, struct gt_err *err)
{
    static const char *const known[] = {GT_FP_STORE_COMMIT, GT_FP_COMMIT_BEFORE_REPLY,
                                        GT_FP_AFTER_BIND, NULL};
    uint64_t seed = (uint64_t)gt_now_ns() ^ ((uint64_t)getpid() << 32);
    int rc = gt_faults_parse(&s->faults, s->cfg->fault_points, known, seed, err);
    if (rc < 0) {
        gt_err_prefix(err, "--fault-points");
    } else if (s->faults.n) {
        gt_log_warn("fault points armed", "spec=\"%s\"", s->cfg->fault_points);
    }
    return rc;
}

/* Arm the fault once no write is in flight, so that "the nth write" counts
 * from the answer to /debug/fault and not from writes queued before it. */
void gt_server_fault_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gt_server *s = arg;
    if (s->n_inflight > 0 || !s->fault_req) {
        return;
    }
    event_del(s->fault_timer);
    struct gt_req *r = s->fault_req;
    s->fault_req = NULL;
    const char *point = s->fault_point == GT_STORE_FAULT_WRITE ? "write" : "fsync";
    gt_store_fault_arm(s->store, s->fault_point, s->fault_nth);
    gt_log_warn("fault armed", "point=%s nth=%d", point, s->fault_nth);
    char body[96];
    int n = snprintf(body, sizeof(body), "{\"point\":\"%s\",\"nth\":%d}\n", point, s->fault_nth);
    gt_req_reply(r, 200, body, (size_t)n);
}
