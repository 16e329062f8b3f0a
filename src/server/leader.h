/*
 * leader.c: which gantryd replica runs the scheduler and the controllers.
 */
#ifndef GT_SERVER_LEADER_H
#define GT_SERVER_LEADER_H

#include "server/server_int.h"

/* Campaign for leadership through the store (gt_store_elect): on SQLite
 * the controllers start at once; on etcd they start once this replica is
 * elected and its cache has caught up with the revision of its election.
 * A replica that loses leadership drains and exits 1, to be restarted as
 * a follower (as kube-controller-manager does). 0 or a negative code. */
int gt_server_leader_start(struct gt_server *s, struct gt_err *err);
/* Free what gt_server_leader_start made; NULL-safe state. */
void gt_server_leader_stop(struct gt_server *s);
/* GET /readyz: {"status":"leader"|"follower"|"not ready", "replica":...,
 * "revision":N}; 200 for leader and follower, 503 otherwise. */
void gt_server_readyz(struct gt_req *r);
/* Append gantry_is_leader and gantry_leader_changes_total to out. */
void gt_server_leader_metrics(const struct gt_server *s, struct gt_buf *out);

#endif
