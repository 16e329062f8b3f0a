/*
 * etcd_http.h (etcd_http.c): the etcd backend's shared state and helpers, for its files:
 * etcd.c (get, list, txn writes, open/close), etcd_http.c (the gateway's
 * encodings and one request with failover), etcd_feed.c (the watch that
 * feeds the store's history with every writer's changes) and etcd_elect.c
 * (leader election with a lease; etcd_feed.h and etcd_elect.h declare
 * what etcd.c starts of them). Included only from those.
 *
 * Threads: rd is the owner's thread's handle, wr the writer thread's; the
 * feed and the election each run on a thread of their own with their own
 * handles. cur, rev and the stop flags are atomics; nothing else is shared.
 */
#ifndef GT_STORE_ETCD_HTTP_H
#define GT_STORE_ETCD_HTTP_H

#include <pthread.h>
#include <stdatomic.h>

#include <curl/curl.h>
#include <jansson.h>

#include "store/store_int.h"

enum {
    REV_OFFSET = 1,  /* gantry revision = etcd revision - REV_OFFSET */
    LIST_PAGE = 500, /* keys per range request when listing */
    CONNECT_TIMEOUT_MS = 1000,
    REQUEST_TIMEOUT_MS = 5000,
    MAX_RESPONSE = 64 << 20, /* a bigger answer is an error, not a crash */
};

/* The feed's thread (etcd_feed.c). */
struct etcd_feed {
    pthread_t thread;
    bool started;
    atomic_bool stop;
    CURLM *multi;     /* curl_multi_wakeup ends its wait at close */
    int64_t next_rev; /* gantry revision of the next change to report */
    struct gt_store_sink *sink;
};

/* The election's thread (etcd_elect.c). */
struct etcd_elect {
    pthread_t thread;
    bool started;
    pthread_mutex_t mu; /* with cond: the thread's sleeps, cut short by stop */
    pthread_cond_t cond;
    bool stop; /* under mu */
    char *key, *value;
    int ttl_s, renew_ms;
    struct gt_store_sink *sink;
};

struct etcd {
    char **urls; /* "http://H:P" or "https://H:P" */
    size_t n_urls;
    atomic_size_t cur; /* index of the endpoint in use */
    char *cafile;
    CURL *rd; /* owner's thread: get, list, open */
    CURL *wr; /* writer thread: apply */
    atomic_llong rev;
    struct gt_store_faults faults;
    struct etcd_feed feed;
    struct etcd_elect elect;
};

/* base64 (RFC 4648, with padding) of src[0..len), heap. */
char *gt_etcd_b64_encode(const char *src, size_t len);
/* Decode src (NULL: empty) into a NUL-terminated heap copy; *len gets its
 * length. -1 if src is not base64. */
int gt_etcd_b64_decode(const char *src, char **out, size_t *len);
/* An int64 field, sent as a string or a number; absent is 0. */
int64_t gt_etcd_jint(const json_t *o, const char *name);
/* v as the gateway's int64 string (new reference). */
json_t *gt_etcd_jint_str(int64_t v);
/* p[0..len) as a gateway bytes field (new reference). */
json_t *gt_etcd_jbytes(const char *p, size_t len);
/* Fill kv from one of the gateway's mvccpb.KeyValue objects (revisions
 * made gantry's); 0 or GT_ESTORE with err set. */
int gt_etcd_kv_from_json(const json_t *j, struct gt_store_kv *kv, struct gt_err *err);
/* The common options of a request to endpoint i's /v3/<path> on h: URL,
 * timeouts (request_timeout_ms 0: none), TLS with the cafile. */
void gt_etcd_setup(struct etcd *e, CURL *h, size_t i, const char *path, long request_timeout_ms);
/* POST req (taken) to /v3/<path> ("kv/range", "lease/grant") through
 * handle h and parse the answer into *resp (caller decrefs). retry_sent:
 * the request may be sent again to the next endpoint after a timeout
 * (reads, and writes that are safe to repeat). 0, GT_ESTORE (no endpoint
 * answered, or an error answer), GT_EGONE (revision compacted), GT_EFSYNC
 * (a write was sent and not answered: outcome unknown). */
int gt_etcd_call(struct etcd *e, CURL *h, const char *path, json_t *req, bool retry_sent,
                 json_t **resp, struct gt_err *err);

#endif
