/*
 * nodes.c: node lifecycle over the cache, and the computed status.allocated.
 */
#ifndef GT_SERVER_NODES_H
#define GT_SERVER_NODES_H

#include "server/server_int.h"

/* Mark lost nodes and fail their tasks, and stop the tasks of draining
 * nodes (every second). */
void gt_nodectl_tick(struct gt_ctl *c);
/* status.allocated of a node from the cache (new reference). */
json_t *gt_nodectl_allocated(const struct gt_ctl *c, const char *node);

#endif
