/*
 * etcd_feed.h (etcd_feed.c): the etcd backend's watch feed.
 */
#ifndef GT_STORE_ETCD_FEED_H
#define GT_STORE_ETCD_FEED_H

#include "store/etcd_http.h"

/* Start the feed from gantry revision from_rev (the ops' feed_start): a
 * thread reporting every later change to sink. 0 or GT_ESTORE. */
int gt_etcd_feed_start(void *be, int64_t from_rev, struct gt_store_sink *sink, struct gt_err *err);
/* Stop it (from close; nothing if it never started). */
void gt_etcd_feed_stop(struct etcd *e);

#endif
