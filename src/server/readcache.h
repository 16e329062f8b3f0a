/*
 * readcache.c: the API's reads, from the replica's watch-fed cache on a
 * store other replicas write too, from the store itself otherwise.
 */
#ifndef GT_SERVER_READCACHE_H
#define GT_SERVER_READCACHE_H

#include "server/server_int.h"

/* How long a read waits for the cache to reach the revision it must see
 * before it is answered 503 (its own replica's writes) or 504 (a
 * resourceVersion from the client). The watch brings a change in
 * milliseconds; a feed that moves to another etcd member after a member
 * died takes about a second. */
#define GT_READ_WAIT_MS 5000

/* The cache of s's store, or NULL when the store has no feed (SQLite,
 * memory: this process is its only writer, and reads go to it). Free with
 * gt_rcache_free. */
struct gt_rcache *gt_rcache_new(struct gt_server *s);
/* Answer every waiting read 503 (shutting down): at the start of a drain,
 * so that the answers reach the sockets. NULL is fine. */
void gt_rcache_end_waits(struct gt_rcache *c);
/* Answer what still waits (gt_rcache_end_waits) and free c. NULL is fine. */
void gt_rcache_free(struct gt_rcache *c);
/* Cache one stored object of the start-up listing (kv borrowed). */
void gt_rcache_load(struct gt_rcache *c, const struct gt_store_kv *kv);
/* The start-up listing reflected revision rev. */
void gt_rcache_loaded(struct gt_rcache *c, int64_t rev);
/* Apply one change from the server's watch on all keys (borrowed), and
 * wake the reads it lets through (at the end of the loop turn). */
void gt_rcache_event(struct gt_rcache *c, const struct gt_store_event *ev);

/* The revision a read must see: from the request's resourceVersion query
 * value rvs (borrowed, NULL: none), as Kubernetes reads it: none (or "")
 * = the most recent this replica knows of (every write it acknowledged or
 * refused, gt_store_revision), "0" = any (0), N = not older than N. 0 and
 * *need, or -GT_EBADREQ with err naming the parameter. *from_client says
 * whether the revision came from the client. */
int gt_read_need(const struct gt_server *s, const char *rvs, int64_t *need, bool *from_client,
                 struct gt_err *err);

typedef void (*gt_read_resume_fn)(struct gt_req *r);
/* Make r wait until the cache holds revision need: false when it does
 * already (or there is no cache: the store is current) and the caller
 * answers now; true when r was parked, to be served by resume(r) once the
 * cache gets there, or answered (and freed) here after GT_READ_WAIT_MS:
 * 504 Timeout when from_client (a resourceVersion the store has not
 * reached), else 503 (this replica's watch is behind: another replica may
 * answer). */
bool gt_read_wait(struct gt_server *s, struct gt_req *r, int64_t need, bool from_client,
                  gt_read_resume_fn resume);

/* Append the cache's series (gantry_read_cache_objects, _revision,
 * gantry_read_waits_total, gantry_read_wait_timeouts_total) to out; nothing
 * when c is NULL. */
void gt_rcache_metrics(const struct gt_rcache *c, struct gt_buf *out);

/* gt_store_get and gt_store_list for the API's reads: from the cache when
 * there is one (list: in key order, *rev the cache's revision), else from
 * the store (storeio.c). Same contracts and results. */
int gt_server_read_get(struct gt_server *s, const char *key, struct gt_store_kv *kv,
                       struct gt_err *err);
int gt_server_read_list(struct gt_server *s, const char *prefix, gt_store_list_fn fn, void *arg,
                        int64_t *rev, struct gt_err *err);

#endif
