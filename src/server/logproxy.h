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

#endif
