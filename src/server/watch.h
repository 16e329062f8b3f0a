/*
 * watch.c: watch streams.
 */
#ifndef GT_SERVER_WATCH_H
#define GT_SERVER_WATCH_H

#include "server/server_int.h"

/* Start a watch stream for r's collection (r->route), from rev (-1: now),
 * filtered by the selectors (taken) and the caller's access. Replies itself. */
void gt_watch_start(struct gt_req *r, int64_t rev, struct gt_selector *lsel,
                    struct gt_fieldsel *fsel);
/* End every open stream cleanly (shutdown). */
void gt_watch_end_all(struct gt_server *s);

#endif
