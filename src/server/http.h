/*
 * http.c: the HTTP front: routing, authentication and reads.
 */
#ifndef GT_SERVER_HTTP_H
#define GT_SERVER_HTTP_H

#include "server/server_int.h"

/* The libevent request callback. */
void gt_http_handle(struct evhttp_request *req, void *arg);

#endif
