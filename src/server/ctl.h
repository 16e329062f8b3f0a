/*
 * ctl.c: the controllers' shell.
 */
#ifndef GT_SERVER_CTL_H
#define GT_SERVER_CTL_H

#include "server/server_int.h"

struct gt_ctl *gt_ctl_new(struct gt_server *s);
/* Free after the store is closed (its callbacks may still reach the cache). */
void gt_ctl_free(struct gt_ctl *c);
/* Build the scheduler model from the cache and start the timers. */
int gt_ctl_start(struct gt_ctl *c, struct gt_err *err);
/* A store change (from the server's watch on all keys). */
void gt_ctl_event(struct gt_ctl *c, const struct gt_kind_info *kind,
                  const struct gt_store_event *ev);

#endif
