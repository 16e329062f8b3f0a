/*
 * etcd_feed.c: the etcd backend's watch feed. One thread keeps one
 * streaming watch (POST /v3/watch, etcd's JSON gateway: NDJSON, one
 * {"result":{...}} per line, PLATFORM-NOTES.md "etcd 3.4") on every key from
 * the revision after the last change it reported, with prev_kv so that a
 * delete carries the deleted value, and reports each change to the store's
 * sink in revision order. A broken stream (endpoint down, timeout) is
 * reopened on the next endpoint from the next revision after 100 ms: no
 * change is lost or reported twice. A start revision etcd has compacted
 * away ("compact_revision" in the answer) cannot be resumed: the feed
 * reports a failure (the store fails; its owner must start over from a
 * fresh listing) and ends.
 *
 * The thread waits in curl_multi_poll; close wakes it (curl_multi_wakeup).
 */
#include <stdlib.h>
#include <string.h>

#include "store/etcd_feed.h"

enum {
    RETRY_MS = 100,
    MAX_LINE = 64 << 20, /* one watch answer; a bigger one is an error */
};

struct stream {
    struct etcd *e;
    char *line; /* the incomplete line so far */
    size_t n, cap;
    bool ended;  /* compacted: do not reopen */
    bool broken; /* canceled by etcd: reopen */
};

/* Report one of the gateway's mvccpb.Event objects. */
static void report(struct etcd *e, const json_t *jev)
{
    struct etcd_feed *f = &e->feed;
    bool del = strcmp(json_string_value(json_object_get(jev, "type")) ?: "PUT", "DELETE") == 0;
    struct gt_store_kv kv, prev = {0};
    if (gt_etcd_kv_from_json(json_object_get(jev, "kv"), &kv, NULL) != 0) {
        gt_log_warn("etcd watch: event without a readable kv", "rev=%lld", (long long)f->next_rev);
        return;
    }
    const json_t *pj = json_object_get(jev, "prev_kv");
    bool has_prev = pj && gt_etcd_kv_from_json(pj, &prev, NULL) == 0;
    struct gt_store_event ev = {
        .type = del ? GT_STORE_EV_DELETE : GT_STORE_EV_PUT,
        .created = !del && kv.create_rev == kv.mod_rev,
        .key = kv.key,
        .value = del ? (has_prev ? prev.value : "") : kv.value,
        .value_len = del ? (has_prev ? prev.value_len : 0) : kv.value_len,
        .create_rev = del ? (has_prev ? prev.create_rev : 0) : kv.create_rev,
        .mod_rev = kv.mod_rev,
    };
    if (ev.mod_rev >= f->next_rev) {
        gt_store_sink_event(f->sink, &ev);
        f->next_rev = ev.mod_rev + 1;
        long long cur = atomic_load(&e->rev);
        while (ev.mod_rev > cur && !atomic_compare_exchange_weak(&e->rev, &cur, ev.mod_rev)) {
        }
    }
    gt_store_kv_fini(&kv);
    gt_store_kv_fini(&prev);
}

/* One line of the stream. */
static void on_line(struct stream *s, const char *p, size_t n)
{
    json_t *j = json_loadb(p, n, 0, NULL);
    const json_t *r = json_object_get(j, "result");
    if (!r) {
        gt_log_warn("etcd watch: unexpected line", "line=\"%.200s\"", p);
        json_decref(j);
        return;
    }
    int64_t compacted = gt_etcd_jint(r, "compact_revision");
    if (compacted > 0) {
        char msg[160];
        snprintf(msg, sizeof(msg), "watch from revision %lld: etcd compacted up to %lld",
                 (long long)s->e->feed.next_rev, (long long)compacted - REV_OFFSET);
        gt_store_sink_fail(s->e->feed.sink, msg);
        s->ended = true;
    } else if (json_is_true(json_object_get(r, "canceled"))) {
        s->broken = true;
    }
    size_t i;
    const json_t *ev;
    json_array_foreach(json_object_get(r, "events"), i, ev)
    {
        report(s->e, ev);
    }
    json_decref(j);
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
    struct stream *s = arg;
    size_t len = size * nmemb;
    for (size_t i = 0; i < len; i++) {
        if (data[i] == '\n') {
            on_line(s, s->line ? s->line : "", s->n);
            s->n = 0;
            continue;
        }
        if (s->n + 2 > MAX_LINE) {
            return 0; /* curl fails the transfer; the stream is reopened */
        }
        GT_VEC_RESERVE(s->line, s->cap, s->n + 2, 4096);
        s->line[s->n++] = data[i];
        s->line[s->n] = '\0';
    }
    return len;
}

/* Run one watch stream on endpoint i until it breaks or stop is set. */
static void stream_once(struct etcd *e, CURL *h, size_t i, struct stream *s)
{
    struct etcd_feed *f = &e->feed;
    json_t *cr = json_pack("{s:o,s:o,s:o,s:b}", "key", gt_etcd_jbytes("", 1), "range_end",
                           gt_etcd_jbytes("", 1), "start_revision",
                           gt_etcd_jint_str(f->next_rev + REV_OFFSET), "prev_kv", 1);
    json_t *req = json_pack("{s:o}", "create_request", cr);
    char *payload = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    gt_etcd_setup(e, h, i, "watch", 0);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
    /* a member's machine that died without closing the connection */
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 2L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 1L);
    s->n = 0;
    s->broken = false;
    curl_multi_add_handle(f->multi, h);
    int running = 1;
    while (running && !atomic_load(&f->stop) && !s->ended && !s->broken) {
        curl_multi_perform(f->multi, &running);
        if (running) {
            curl_multi_poll(f->multi, NULL, 0, 1000, NULL);
        }
    }
    curl_multi_remove_handle(f->multi, h);
    curl_slist_free_all(hdrs);
    free(payload);
}

static void *feed_main(void *arg)
{
    struct etcd *e = arg;
    struct etcd_feed *f = &e->feed;
    CURL *h = curl_easy_init();
    GT_ASSERT(h);
    struct stream s = {.e = e};
    size_t i = atomic_load(&e->cur);
    while (!atomic_load(&f->stop) && !s.ended) {
        stream_once(e, h, i, &s);
        if (atomic_load(&f->stop) || s.ended) {
            break;
        }
        gt_log_warn("etcd watch broke; reopening", "url=%s from=%lld", e->urls[i],
                    (long long)f->next_rev);
        i = (i + 1) % e->n_urls;
        curl_multi_poll(f->multi, NULL, 0, RETRY_MS, NULL);
    }
    free(s.line);
    curl_easy_cleanup(h);
    return NULL;
}

int gt_etcd_feed_start(void *be, int64_t from_rev, struct gt_store_sink *sink, struct gt_err *err)
{
    struct etcd *e = be;
    struct etcd_feed *f = &e->feed;
    f->next_rev = from_rev + 1;
    f->sink = sink;
    f->multi = curl_multi_init();
    GT_ASSERT(f->multi);
    int rc = pthread_create(&f->thread, NULL, feed_main, e);
    if (rc != 0) {
        return gt_err_set(err, GT_ESTORE, "etcd watch thread: %s", strerror(rc));
    }
    f->started = true;
    return 0;
}

void gt_etcd_feed_stop(struct etcd *e)
{
    struct etcd_feed *f = &e->feed;
    if (f->started) {
        atomic_store(&f->stop, true);
        curl_multi_wakeup(f->multi);
        pthread_join(f->thread, NULL);
        f->started = false;
    }
    if (f->multi) {
        curl_multi_cleanup(f->multi);
        f->multi = NULL;
    }
}
