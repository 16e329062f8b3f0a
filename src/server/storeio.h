/*
 * storeio.c: every store write, counted.
 */
#ifndef GT_SERVER_STOREIO_H
#define GT_SERVER_STOREIO_H

#include "server/server_int.h"

/* Queue a store write on behalf of the server, counting it in flight;
 * guarded: a write of the scheduler's or the controllers', which carries
 * the leader key's guard (refused with -GT_ENOTLEADER once another replica
 * leads). Returns gt_store_write's result. done must call
 * gt_server_write_done. */
int gt_server_write(struct gt_server *s, bool guarded, enum gt_store_op op, const char *key,
                    const char *value, size_t len, int64_t expected_rev, gt_store_done_fn done,
                    void *arg);
/* gt_store_get and gt_store_list for the API, timed. */
int gt_server_get(struct gt_server *s, const char *key, struct gt_store_kv *kv, struct gt_err *err);
int gt_server_list(struct gt_server *s, const char *prefix, gt_store_list_fn fn, void *arg,
                   int64_t *rev, struct gt_err *err);
/* Account for a finished write (metrics, in-flight count, fsync failure). */
void gt_server_write_done(struct gt_server *s, int rc, int64_t submit_ns);

#endif
