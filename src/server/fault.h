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

#endif
