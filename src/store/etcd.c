/*
 * etcd.c: the store backend on etcd v3, spoken through etcd's JSON gateway
 * (POST /v3/kv/range and /v3/kv/txn, as etcd 3.4 serves them) with libcurl.
 * Request and response shapes: PLATFORM-NOTES.md "etcd 3.4": keys and
 * values are base64, int64 fields are strings, fields at their default
 * (false, 0, "") are omitted, `succeeded` is absent on a failed txn.
 *
 * path is "etcd://H1:2379,H2:2379,...", the scheme optional, with an
 * optional "?cafile=FILE": then every endpoint is https, verified against
 * FILE. Requests go to the endpoint in use; a refused connection or a
 * timeout moves to the next (round robin), for reads always, for writes only
 * when the request was not sent (a write sent and unanswered may have
 * committed: the batch answers GT_EFSYNC, outcome unknown until reopen).
 *
 * Revisions: etcd's, less one. An empty etcd is at revision 1 and its first
 * write gets 2; the store counts an empty store as 0 and the first write as
 * 1 (as SQLite does), so gantry revision = etcd revision - 1, the same on
 * every gantryd and across restarts.
 *
 * Writes: each op of a batch is one txn: a compare (CREATE: create_revision
 * == 0; UPDATE/DELETE: create_revision > 0, or mod_revision == expected),
 * then a put or delete with prev_kv; on failure a range on the key tells
 * GT_ENOTFOUND from GT_ECONFLICT. A guarded op (store.h) adds two compares
 * on the guard key, its create_revision and its value, and a range on it
 * in the failure branch, which tells GT_ENOTLEADER from the op's own
 * failure. A failed txn writes nothing and takes no revision. Other
 * writers' changes (other gantryd replicas) reach the generic layer's
 * watch history through the feed (etcd_feed.c), so its history stays
 * contiguous. The batch is one commit for the generic layer (group
 * commit); etcd fsyncs each txn.
 *
 * Lists page through etcd: LIST_PAGE keys per range request, every page at
 * the revision of the first, so a listing is one snapshot. A range at a
 * compacted revision answers GT_EGONE (410).
 *
 * Leader election: etcd_elect.c; the gateway itself: etcd_http.c.
 *
 * Threads: reads (owner's thread) and apply (writer thread) use separate
 * curl handles. A read handle is free again before any list callback runs,
 * so callbacks may read the store. Fault points (for the contract suite):
 * WRITE counts each op, FSYNC each batch; both are checked before anything
 * is sent, so a failed batch is never partly in etcd.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "store/etcd_elect.h"
#include "store/etcd_feed.h"
#include "store/etcd_http.h"

/* ---- reads ---- */

/* A range request for key (key_len bytes) up to range_end (NULL: the key
 * alone), limit keys (0: all), at revision at_rev (0: latest). */
static json_t *range_req(const char *key, size_t key_len, const char *range_end, size_t end_len,
                         int64_t limit, int64_t at_rev)
{
    json_t *r = json_object();
    json_object_set_new(r, "key", gt_etcd_jbytes(key, key_len));
    if (range_end) {
        json_object_set_new(r, "range_end", gt_etcd_jbytes(range_end, end_len));
    }
    if (limit > 0) {
        json_object_set_new(r, "limit", gt_etcd_jint_str(limit));
    }
    if (at_rev > 0) {
        json_object_set_new(r, "revision", gt_etcd_jint_str(at_rev));
    }
    return r;
}

static int etcd_get(void *be, const char *key, struct gt_store_kv *kv, struct gt_err *err)
{
    struct etcd *e = be;
    json_t *resp;
    int rc = gt_etcd_call(e, e->rd, "kv/range", range_req(key, strlen(key), NULL, 0, 0, 0), true,
                          &resp, err);
    if (rc != 0) {
        return rc;
    }
    const json_t *first = json_array_get(json_object_get(resp, "kvs"), 0);
    rc = first ? gt_etcd_kv_from_json(first, kv, err) : GT_ENOTFOUND;
    json_decref(resp);
    return rc;
}

/* The end of the range of keys starting with prefix (etcd's "prefix + 1":
 * drop trailing 0xff bytes, increment the last); "\0" (every key) when
 * there is none. Heap, *len its length. */
static char *prefix_end(const char *prefix, size_t *len)
{
    size_t n = strlen(prefix);
    while (n > 0 && (unsigned char)prefix[n - 1] == 0xff) {
        n--;
    }
    char *end = gt_xmalloc(n + 1);
    if (n == 0) {
        end[0] = '\0';
        *len = 1;
        return end;
    }
    memcpy(end, prefix, n);
    end[n - 1] = (char)((unsigned char)end[n - 1] + 1);
    end[n] = '\0';
    *len = n;
    return end;
}

static int etcd_list(void *be, const char *prefix, gt_store_list_fn fn, void *arg, int64_t *rev,
                     struct gt_err *err)
{
    struct etcd *e = be;
    size_t end_len;
    char *end = prefix_end(prefix, &end_len);
    /* The empty prefix starts at "\0" (a key is never empty). */
    char *from = prefix[0] ? gt_xstrdup(prefix) : gt_xcalloc(1, 1);
    size_t from_len = prefix[0] ? strlen(prefix) : 1;
    int64_t at_rev = 0; /* pinned by the first page: one snapshot */
    int rc = 0;
    bool more = true, stop = false;
    while (more && !stop) {
        json_t *resp;
        rc = gt_etcd_call(e, e->rd, "kv/range",
                          range_req(from, from_len, end, end_len, LIST_PAGE, at_rev), true, &resp,
                          err);
        if (rc != 0) {
            break;
        }
        if (at_rev == 0) {
            at_rev = gt_etcd_jint(json_object_get(resp, "header"), "revision");
            if (rev) {
                *rev = at_rev - REV_OFFSET;
            }
        }
        more = json_is_true(json_object_get(resp, "more"));
        const json_t *kvs = json_object_get(resp, "kvs");
        size_t n = json_array_size(kvs);
        struct gt_store_kv *page = gt_xcalloc(n ? n : 1, sizeof(*page));
        for (size_t i = 0; i < n && rc == 0; i++) {
            rc = gt_etcd_kv_from_json(json_array_get(kvs, i), &page[i], err);
        }
        json_decref(resp);
        for (size_t i = 0; i < n && rc == 0 && !stop; i++) {
            stop = fn(&page[i], arg) != 0;
        }
        if (n > 0 && rc == 0) { /* next page: just after the last key */
            free(from);
            from_len = strlen(page[n - 1].key) + 1;
            from = gt_xcalloc(from_len, 1);
            memcpy(from, page[n - 1].key, from_len - 1);
        }
        for (size_t i = 0; i < n; i++) {
            gt_store_kv_fini(&page[i]);
        }
        free(page);
        if (rc != 0 || n == 0) {
            break;
        }
    }
    free(from);
    free(end);
    return rc;
}

/* ---- writes ---- */

static json_t *compare(const char *key, const char *target, const char *result, const char *field,
                       int64_t v)
{
    json_t *c = json_object();
    json_object_set_new(c, "key", gt_etcd_jbytes(key, strlen(key)));
    json_object_set_new(c, "target", json_string(target));
    json_object_set_new(c, "result", json_string(result));
    json_object_set_new(c, field, gt_etcd_jint_str(v));
    return c;
}

/* The txn for one op (see the file comment). */
static json_t *txn_req(const struct gt_store_wop *w)
{
    json_t *key = gt_etcd_jbytes(w->key, strlen(w->key));
    json_t *cmp;
    if (w->op == GT_STORE_CREATE) {
        cmp = compare(w->key, "CREATE", "EQUAL", "create_revision", 0);
    } else if (w->expected_rev == 0) {
        cmp = compare(w->key, "CREATE", "GREATER", "create_revision", 0);
    } else {
        cmp = compare(w->key, "MOD", "EQUAL", "mod_revision", w->expected_rev + REV_OFFSET);
    }
    json_t *op = json_object();
    json_object_set(op, "key", key);
    json_object_set_new(op, "prev_kv", json_true());
    json_t *success = json_object();
    if (w->op == GT_STORE_DELETE) {
        json_object_set_new(success, "request_delete_range", op);
    } else {
        json_object_set_new(op, "value", gt_etcd_jbytes(w->value, w->value_len));
        json_object_set_new(success, "request_put", op);
    }
    json_t *txn = json_object();
    json_t *cmps = json_pack("[o]", cmp);
    json_t *failure = json_array();
    if (w->op != GT_STORE_CREATE) {
        json_array_append_new(
            failure, json_pack("{s:{s:O,s:b}}", "request_range", "key", key, "keys_only", 1));
    }
    if (w->guard_key) {
        /* the leader key as elected, in the same txn (etcd_elect.c) */
        json_array_append_new(cmps, compare(w->guard_key, "CREATE", "EQUAL", "create_revision",
                                            w->guard_create_rev + REV_OFFSET));
        json_t *v = compare(w->guard_key, "VALUE", "EQUAL", "value", 0);
        json_object_set_new(v, "value", gt_etcd_jbytes(w->guard_value, strlen(w->guard_value)));
        json_array_append_new(cmps, v);
        json_array_append_new(failure,
                              json_pack("{s:{s:o}}", "request_range", "key",
                                        gt_etcd_jbytes(w->guard_key, strlen(w->guard_key))));
    }
    json_object_set_new(txn, "compare", cmps);
    json_object_set_new(txn, "success", json_pack("[o]", success));
    json_object_set_new(txn, "failure", failure);
    json_decref(key);
    return txn;
}

/* Does the leader key, as a failed txn read it (r: its response_range),
 * still match w's guard? */
static bool guard_holds(const struct gt_store_wop *w, const json_t *r)
{
    const json_t *kv =
        json_array_get(json_object_get(json_object_get(r, "response_range"), "kvs"), 0);
    struct gt_store_kv g;
    if (!kv || gt_etcd_kv_from_json(kv, &g, NULL) != 0) {
        return false;
    }
    bool holds = g.create_rev == w->guard_create_rev && strcmp(g.value, w->guard_value) == 0;
    gt_store_kv_fini(&g);
    return holds;
}

/* Fill w's results from its txn's answer. */
static int txn_result(struct gt_store_wop *w, const json_t *resp, struct gt_err *err)
{
    const json_t *rs = json_object_get(resp, "responses");
    const json_t *r0 = json_array_get(rs, 0);
    if (!json_is_true(json_object_get(resp, "succeeded"))) {
        w->seen_rev = gt_etcd_jint(json_object_get(resp, "header"), "revision") - REV_OFFSET;
        if (w->guard_key && !guard_holds(w, json_array_get(rs, json_array_size(rs) - 1))) {
            w->rc = GT_ENOTLEADER;
        } else if (w->op == GT_STORE_CREATE) {
            w->rc = GT_EEXISTS;
        } else {
            const json_t *kvs = json_object_get(json_object_get(r0, "response_range"), "kvs");
            w->rc = json_array_size(kvs) == 0 ? GT_ENOTFOUND : GT_ECONFLICT;
        }
        return 0;
    }
    w->rc = 0;
    w->rev = gt_etcd_jint(json_object_get(resp, "header"), "revision") - REV_OFFSET;
    if (w->op == GT_STORE_CREATE) {
        w->created = true;
        w->create_rev = w->rev;
        return 0;
    }
    const json_t *prev;
    if (w->op == GT_STORE_UPDATE) {
        prev = json_object_get(json_object_get(r0, "response_put"), "prev_kv");
    } else {
        prev = json_array_get(
            json_object_get(json_object_get(r0, "response_delete_range"), "prev_kvs"), 0);
    }
    struct gt_store_kv kv;
    if (!prev || gt_etcd_kv_from_json(prev, &kv, err) != 0) {
        return gt_err_set(err, GT_EFSYNC, "etcd txn on %s: committed without prev_kv", w->key);
    }
    w->create_rev = kv.create_rev;
    if (w->op == GT_STORE_DELETE) {
        w->old_value = kv.value;
        w->old_value_len = kv.value_len;
        kv.value = NULL;
    }
    gt_store_kv_fini(&kv);
    return 0;
}

static int etcd_apply(void *be, struct gt_store_wop *ops, size_t n, struct gt_err *err)
{
    struct etcd *e = be;
    for (size_t i = 0; i < n; i++) {
        if (gt_store_faults_hit(&e->faults, GT_STORE_FAULT_WRITE)) {
            return gt_err_set(err, GT_ESTORE, "etcd store: injected write fault at %s", ops[i].key);
        }
    }
    if (n > 0 && gt_store_faults_hit(&e->faults, GT_STORE_FAULT_FSYNC)) {
        return gt_err_set(err, GT_EFSYNC, "etcd store: injected fsync fault");
    }
    bool wrote = false;
    for (size_t i = 0; i < n; i++) {
        json_t *resp;
        int rc = gt_etcd_call(e, e->wr, "kv/txn", txn_req(&ops[i]), false, &resp, err);
        if (rc == 0) {
            rc = txn_result(&ops[i], resp, err);
            json_decref(resp);
        }
        if (rc != 0) {
            /* Earlier ops of the batch are in etcd: "nothing written" would
             * be false, so the store fails and the owner rereads it. */
            if (wrote && rc == GT_ESTORE) {
                gt_err_prefix(err, "after %zu committed ops", i);
                err->code = GT_EFSYNC;
                rc = GT_EFSYNC;
            }
            return rc;
        }
        if (ops[i].rc == 0) {
            wrote = true;
            atomic_store(&e->rev, ops[i].rev);
        }
    }
    return 0;
}

/* ---- open/close ---- */

static void etcd_close(void *be)
{
    struct etcd *e = be;
    if (!e) {
        return;
    }
    gt_etcd_elect_stop(e);
    gt_etcd_feed_stop(e);
    for (size_t i = 0; i < e->n_urls; i++) {
        free(e->urls[i]);
    }
    free(e->urls);
    free(e->cafile);
    if (e->rd) {
        curl_easy_cleanup(e->rd);
    }
    if (e->wr) {
        curl_easy_cleanup(e->wr);
    }
    free(e);
}

/* Parse "etcd://H:P,H:P?cafile=F" into e's endpoints. */
static int parse_path(struct etcd *e, const char *path, struct gt_err *err)
{
    if (!path || !path[0]) {
        return gt_err_set(err, GT_ESTORE, "etcd: no endpoints (want etcd://HOST:PORT,...)");
    }
    if (strncmp(path, "etcd://", 7) == 0) {
        path += 7;
    }
    char *list = gt_xstrdup(path);
    char *q = strchr(list, '?');
    if (q) {
        *q++ = '\0';
        if (strncmp(q, "cafile=", 7) != 0 || !q[7]) {
            int rc =
                gt_err_set(err, GT_ESTORE, "etcd: unknown option \"%s\" (want cafile=FILE)", q);
            free(list);
            return rc;
        }
        e->cafile = gt_xstrdup(q + 7);
    }
    size_t cap = 0;
    int rc = 0;
    char *save = NULL;
    for (char *h = strtok_r(list, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
        if (strchr(h, '/') || !strchr(h, ':')) {
            rc = gt_err_set(err, GT_ESTORE, "etcd: endpoint \"%s\" is not HOST:PORT", h);
            break;
        }
        GT_VEC_RESERVE(e->urls, cap, e->n_urls + 1, 4);
        size_t len = strlen(h) + 16;
        e->urls[e->n_urls] = gt_xmalloc(len);
        snprintf(e->urls[e->n_urls++], len, "%s://%s", e->cafile ? "https" : "http", h);
    }
    if (rc == 0 && e->n_urls == 0) {
        rc = gt_err_set(err, GT_ESTORE, "etcd: no endpoints in \"%s\"", path);
    }
    free(list);
    return rc;
}

static int etcd_open(const char *path, void **be, struct gt_err *err)
{
    *be = NULL;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct etcd *e = gt_xcalloc(1, sizeof(*e));
    int rc = parse_path(e, path, err);
    if (rc == 0) {
        e->rd = curl_easy_init();
        e->wr = curl_easy_init();
        GT_ASSERT(e->rd && e->wr);
        /* The cluster's revision: any range answers it in its header. */
        json_t *resp;
        rc = gt_etcd_call(e, e->rd, "kv/range", range_req("", 1, NULL, 0, 1, 0), true, &resp, err);
        if (rc == 0) {
            atomic_store(&e->rev,
                         gt_etcd_jint(json_object_get(resp, "header"), "revision") - REV_OFFSET);
            json_decref(resp);
        }
    }
    if (rc != 0) {
        etcd_close(e);
        return GT_ESTORE;
    }
    *be = e;
    return 0;
}

static int64_t etcd_revision(void *be)
{
    struct etcd *e = be;
    return atomic_load(&e->rev);
}

static void etcd_fault_arm(void *be, enum gt_store_fault point, int nth)
{
    struct etcd *e = be;
    gt_store_faults_arm(&e->faults, point, nth);
}

const struct gt_store_backend_ops gt_store_etcd_backend = {
    .name = "etcd",
    .open = etcd_open,
    .close = etcd_close,
    .get = etcd_get,
    .list = etcd_list,
    .apply = etcd_apply,
    .revision = etcd_revision,
    .fault_arm = etcd_fault_arm,
    .feed_start = gt_etcd_feed_start,
    .elect = gt_etcd_elect,
};
