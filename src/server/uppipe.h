/*
 * uppipe: the byte pipe of an upgraded connection (nbproxy.c), shared by
 * the notebook proxy and the streaming exec (logproxy.c).
 */
#ifndef GT_SERVER_UPPIPE_H
#define GT_SERVER_UPPIPE_H

#include <netinet/in.h>

#include "server/server_int.h"

struct evbuffer;

/* Take over r's connection (r is freed) and carry it to `to`: request (an
 * HTTP request's head and body, drained) goes first, then every byte of
 * each side to the other as it comes, with back-pressure, until either
 * side ends. The answer's head is passed on without Set-Cookie and, but
 * for a 101, with "Connection: close"; when `to` cannot be reached the
 * client gets a 502 with the message unreachable (a static string). */
void gt_upgrade_pipe(struct gt_req *r, const struct sockaddr_in *to, struct evbuffer *request,
                     const char *unreachable);

#endif
