/*
 * fault.c: the /debug/fault endpoint.
 */
#ifndef GT_SERVER_FAULT_H
#define GT_SERVER_FAULT_H

#include "server/server_int.h"

/* Answer /debug/fault. */
void gt_server_fault(struct gt_req *r);
/* The fault timer's callback (arg: the server): arms the fault once no
 * write is in flight and answers the request waiting for it. */
void gt_server_fault_timer(evutil_socket_t fd, short what, void *arg);

/* Named fault points of gantryd (docs/faults.md), reached with
 * gt_fault_hit(&s->faults, NAME):
 *   store-commit            a store write is about to be submitted; fail: it
 *                           fails as a refused write (503, nothing written)
 *   commit-before-reply     an API write is committed, not yet answered; fail:
 *                           answered 500 although it is stored
 *   after-bind-before-status a task's binding is committed, before the
 *                           scheduler acts on the answer; fail: taken as a
 *                           failed bind (the model releases the task) */
#define GT_FP_STORE_COMMIT "store-commit"
#define GT_FP_COMMIT_BEFORE_REPLY "commit-before-reply"
#define GT_FP_AFTER_BIND "after-bind-before-status"
/* Arm s->faults from --fault-points; GT_EINVAL naming the flag on a bad spec. */
int gt_server_fault_points_arm(struct gt_server *s, struct gt_err *err);

#endif
