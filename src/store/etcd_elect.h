/*
 * etcd_elect.h (etcd_elect.c): leader election on etcd with a lease.
 */
#ifndef GT_STORE_ETCD_ELECT_H
#define GT_STORE_ETCD_ELECT_H

#include "store/etcd_http.h"

/* The ops' elect (store_int.h): campaign on a thread. 0, GT_EINVAL (bad
 * ttl or renew interval) or GT_ESTORE, with err set. */
int gt_etcd_elect(void *be, const char *key, const char *value, int ttl_s, int renew_ms,
                  struct gt_store_sink *sink, struct gt_err *err);
/* Stop campaigning, revoking the lease (from close; nothing if never
 * started). */
void gt_etcd_elect_stop(struct etcd *e);

#endif
