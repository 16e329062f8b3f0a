/*
 * etcd_elect.c: leader election on etcd with a lease, through the JSON
 * gateway (POST /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke,
 * /v3/kv/txn; PLATFORM-NOTES.md "etcd 3.4").
 *
 * One thread, every renew_ms:
 *   no lease       -> grant one of ttl_s seconds
 *   lease          -> keep it alive; an answer without TTL means it expired
 *                     (a leader then steps down: its key is gone with it)
 *   not leader     -> txn: if the key's create_revision is 0 (absent), put
 *                     value there with the lease attached; success = elected,
 *                     the key's create_revision is the guard's
 *   leader         -> a keepalive failing for longer than ttl_s - renew_ms
 *                     steps down before etcd expires the lease, so two
 *                     replicas never both believe they lead for long; their
 *                     writes are guarded anyway (etcd.c compares the key).
 *
 * Failover arithmetic (docs/ha.md): the key outlives a SIGKILLed leader by
 * at most ttl_s (from its last keepalive; etcd checks expiry every 500 ms),
 * and a follower retries every renew_ms, so a new leader is elected at most
 * ttl_s + 0.5 s + renew_ms after the kill. Stopping (close) revokes the
 * lease, which hands over at once.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/etcd_elect.h"

/* Sleep ms on the thread, or less if stop is set; true if stopping. */
static bool nap(struct etcd_elect *l, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&l->mu);
    while (!l->stop && pthread_cond_timedwait(&l->cond, &l->mu, &ts) == 0) {
    }
    bool stop = l->stop;
    pthread_mutex_unlock(&l->mu);
    return stop;
}

/* Grant a lease: its ID, or 0 (logged). */
static int64_t grant(struct etcd *e, CURL *h, int ttl_s)
{
    json_t *resp;
    struct gt_err err = {0};
    if (gt_etcd_call(e, h, "lease/grant", json_pack("{s:i}", "TTL", ttl_s), true, &resp, &err)) {
        gt_log_warn("etcd lease grant failed", "err=\"%s\"", err.msg);
        return 0;
    }
    int64_t id = gt_etcd_jint(resp, "ID");
    json_decref(resp);
    return id;
}

/* Keep lease id alive: 1 alive, 0 expired, -1 no answer. */
static int keepalive(struct etcd *e, CURL *h, int64_t id)
{
    json_t *resp;
    struct gt_err err = {0};
    if (gt_etcd_call(e, h, "lease/keepalive", json_pack("{s:o}", "ID", gt_etcd_jint_str(id)), true,
                     &resp, &err)) {
        gt_log_warn("etcd lease keepalive failed", "err=\"%s\"", err.msg);
        return -1;
    }
    int alive = gt_etcd_jint(json_object_get(resp, "result"), "TTL") > 0;
    json_decref(resp);
    return alive;
}

/* Create the key with the lease if it is absent: the key's gantry
 * create revision if elected, 0 if another holds it, -1 no answer. */
static int64_t campaign(struct etcd *e, CURL *h, const struct etcd_elect *l, int64_t id)
{
    json_t *key = gt_etcd_jbytes(l->key, strlen(l->key));
    json_t *txn = json_pack(
        "{s:[{s:O,s:s,s:s,s:s}],s:[{s:{s:O,s:o,s:o}}]}", "compare", "key", key, "target", "CREATE",
        "result", "EQUAL", "create_revision", "0", "success", "request_put", "key", key, "value",
        gt_etcd_jbytes(l->value, strlen(l->value)), "lease", gt_etcd_jint_str(id));
    json_decref(key);
    json_t *resp;
    struct gt_err err = {0};
    /* safe to send again: a second try of a txn that committed fails its
     * compare, and the lease's key is found as ours on the next round */
    if (gt_etcd_call(e, h, "kv/txn", txn, true, &resp, &err)) {
        gt_log_warn("etcd campaign failed", "err=\"%s\"", err.msg);
        return -1;
    }
    int64_t rev = json_is_true(json_object_get(resp, "succeeded"))
                      ? gt_etcd_jint(json_object_get(resp, "header"), "revision") - REV_OFFSET
                      : 0;
    json_decref(resp);
    return rev;
}

static void revoke(struct etcd *e, CURL *h, int64_t id)
{
    json_t *resp;
    struct gt_err err = {0};
    if (gt_etcd_call(e, h, "lease/revoke", json_pack("{s:o}", "ID", gt_etcd_jint_str(id)), true,
                     &resp, &err) == 0) {
        json_decref(resp);
    }
}

static void *elect_main(void *arg)
{
    struct etcd *e = arg;
    struct etcd_elect *l = &e->elect;
    CURL *h = curl_easy_init();
    GT_ASSERT(h);
    int64_t id = 0, alive_ms = 0;
    bool leader = false;
    for (bool stop = false; !stop; stop = nap(l, l->renew_ms)) {
        int64_t now = gt_now_ms();
        int alive = id ? keepalive(e, h, id) : 0;
        if (alive > 0) {
            alive_ms = now;
        }
        bool lost = alive == 0 || now - alive_ms > (int64_t)l->ttl_s * 1000 - l->renew_ms;
        if (leader && lost) {
            gt_log_warn("leadership lost", "key=%s lease=%s", l->key,
                        alive == 0 ? "expired" : "not renewed in time");
            leader = false;
            gt_store_sink_leader(l->sink, false, 0, 0);
            if (alive < 0) { /* a key kept alive by a follower would block everyone */
                revoke(e, h, id);
            }
            id = 0;
        }
        if (id == 0 || alive == 0) {
            id = grant(e, h, l->ttl_s);
            alive_ms = gt_now_ms();
        }
        if (!leader && id) {
            int64_t rev = campaign(e, h, l, id);
            if (rev > 0) {
                leader = true;
                gt_log_info("elected leader", "key=%s value=%s rev=%lld", l->key, l->value,
                            (long long)rev);
                gt_store_sink_leader(l->sink, true, rev, rev);
            }
        }
    }
    if (id) {
        revoke(e, h, id);
    }
    curl_easy_cleanup(h);
    return NULL;
}

int gt_etcd_elect(void *be, const char *key, const char *value, int ttl_s, int renew_ms,
                  struct gt_store_sink *sink, struct gt_err *err)
{
    struct etcd *e = be;
    struct etcd_elect *l = &e->elect;
    if (ttl_s < 1 || renew_ms < 10 || renew_ms >= ttl_s * 1000) {
        return gt_err_set(err, GT_EINVAL,
                          "leader lease: ttl %d s, renew every %d ms: want ttl >= 1 s and "
                          "10 ms <= renew < ttl",
                          ttl_s, renew_ms);
    }
    l->key = gt_xstrdup(key);
    l->value = gt_xstrdup(value);
    l->ttl_s = ttl_s;
    l->renew_ms = renew_ms;
    l->sink = sink;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cond, NULL);
    int rc = pthread_create(&l->thread, NULL, elect_main, e);
    if (rc != 0) {
        return gt_err_set(err, GT_ESTORE, "etcd election thread: %s", strerror(rc));
    }
    l->started = true;
    return 0;
}

void gt_etcd_elect_stop(struct etcd *e)
{
    struct etcd_elect *l = &e->elect;
    if (l->started) {
        pthread_mutex_lock(&l->mu);
        l->stop = true;
        pthread_cond_broadcast(&l->cond);
        pthread_mutex_unlock(&l->mu);
        pthread_join(l->thread, NULL);
        l->started = false;
        pthread_mutex_destroy(&l->mu);
        pthread_cond_destroy(&l->cond);
    }
    free(l->key);
    free(l->value);
    l->key = l->value = NULL;
}
