/*
 * logproxy.c: task logs and exec, proxied to the node's agent.
 */
#ifndef GT_SERVER_LOGPROXY_H
#define GT_SERVER_LOGPROXY_H

#include "server/server_int.h"

/* GET .../tasks/T/log: proxy to the node's agent. Replies itself. */
void gt_logproxy_serve(struct gt_req *r, const struct evkeyvalq *q);
/* POST .../tasks/T/exec: run the body's command in the task through its
 * node's agent (authorised as a task write). Replies itself. */
void gt_logproxy_exec(struct gt_req *r);
/* POST .../tasks/T/exec authenticated by an MPI launcher's credential
 * (the bearer token after GT_MPI_TOKEN_PREFIX: mac, borrowed): forwarded as
 * gt_logproxy_exec does when mac is the node HMAC of "<project>/<T's
 * job>", else 403. T's project is the route's. */
void gt_logproxy_exec_mpi(struct gt_req *r, const char *mac);

#endif
