/*
 * storeio.c: every store write, counted.
 */
#ifndef GT_SERVER_STOREIO_H
#define GT_SERVER_STOREIO_H

#include "server/server_int.h"

/* Queue a store write on behalf of the server, counting it in flight;
 * returns gt_store_write's result. done must call gt_server_write_done. */
int gt_server_write(struct gt_server *s, enum gt_store_op op, const char *key, const char *value,
                    size_t len, int64_t expected_rev, gt_store_done_fn done, void *arg);
/* Account for a finished write (metrics, in-flight count, fsync failure). */
void gt_server_write_done(struct gt_server *s, int rc, int64_t submit_ns);

#endif
