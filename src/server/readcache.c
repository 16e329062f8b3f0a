/*
 * The replica's read cache, as kube-apiserver's watch cache: on a store
 * other replicas write too (etcd), every stored key's text and revisions,
 * loaded from the listing the server starts with and kept current by its
 * watch on all keys (server.c), so that get and list are answered from
 * memory instead of a round trip to etcd. Watches were already served from
 * the store's in-memory history; their initial listing comes from here.
 *
 * Consistency: the cache holds exactly the changes up to its revision,
 * max(the start-up listing's, the store's seen revision), since the
 * server's watch is delivered every change as soon as the store records it.
 * A read says which revision it must see (gt_read_need): by default every
 * write this replica acknowledged or refused (gt_store_revision), so a
 * client reads its own writes through the replica that answered them; a
 * read whose revision the cache has not reached waits, parked, until the
 * watch brings it (milliseconds), or is answered 503/504 after
 * GT_READ_WAIT_MS. Reads the cache can answer go on at once, in arrival
 * order or not: nothing promises an order between concurrent requests.
 *
 * Keys are kept in one hash map per kind (the first path segment), so a
 * list touches only its kind's keys; a list sorts what matches, for the
 * store's key order. Entries are replaced, never changed, on the loop
 * thread only.
 */
#include <stdlib.h>
#include <string.h>

#include "server/readcache.h"
#include "server/reply.h"
#include "server/storeio.h"

enum { OTHER = GT_KIND_COUNT }; /* keys of no kind (the ledger's, ...) */

/* A read waiting for the cache to reach need. */
struct rwait {
    struct gt_rcache *c;
    struct gt_req *r;
    int64_t need;
    bool from_client;
    gt_read_resume_fn resume;
    struct event *timer;
    struct rwait *prev, *next;
};

struct gt_rcache {
    struct gt_server *s;
    struct gt_strmap keys[GT_KIND_COUNT + 1]; /* key -> struct gt_store_kv (heap) */
    int64_t loaded_rev;
    struct rwait *waits; /* doubly linked, newest first */
    struct event *wake;  /* runs the waits the cache let through */
    size_t n_objects;
    uint64_t n_waits, n_timeouts;
};

static int64_t cache_rev(const struct gt_rcache *c)
{
    int64_t seen = gt_store_seen_revision(c->s->store);
    return seen > c->loaded_rev ? seen : c->loaded_rev;
}

/* The map for key, or for every key under prefix when prefix is one
 * kind's ("/jobs/", "/jobs/p/"); NULL: the prefix spans kinds. */
static struct gt_strmap *map_of(struct gt_rcache *c, const char *key)
{
    char plural[32];
    const char *slash = key[0] == '/' ? strchr(key + 1, '/') : NULL;
    size_t n = slash ? (size_t)(slash - key - 1) : 0;
    if (!slash) {
        return NULL;
    }
    const struct gt_kind_info *k = NULL;
    if (n > 0 && n < sizeof(plural)) {
        memcpy(plural, key + 1, n);
        plural[n] = '\0';
        k = gt_kind_by_plural(plural);
    }
    return &c->keys[k ? k->kind : OTHER];
}

static void kv_free(void *p)
{
    gt_store_kv_fini(p);
    free(p);
}

static void put(struct gt_rcache *c, const char *key, const char *value, size_t len,
                int64_t create_rev, int64_t mod_rev)
{
    struct gt_strmap *m = map_of(c, key);
    if (!m) {
        m = &c->keys[OTHER];
    }
    struct gt_store_kv *kv = gt_xmalloc(sizeof(*kv));
    kv->key = gt_xstrdup(key);
    kv->value = gt_xstrndup(value, len);
    kv->value_len = len;
    kv->create_rev = create_rev;
    kv->mod_rev = mod_rev;
    struct gt_store_kv *old = gt_strmap_put(m, key, kv);
    c->n_objects += old == NULL;
    kv_free(old);
}

struct gt_rcache *gt_rcache_new(struct gt_server *s)
{
    if (!gt_store_feeding(s->store)) {
        return NULL;
    }
    struct gt_rcache *c = gt_xcalloc(1, sizeof(*c));
    c->s = s;
    for (size_t i = 0; i < GT_ARRAY_LEN(c->keys); i++) {
        gt_strmap_init(&c->keys[i]);
    }
    return c;
}

static void wait_unlink(struct rwait *w)
{
    if (w->prev) {
        w->prev->next = w->next;
    } else {
        w->c->waits = w->next;
    }
    if (w->next) {
        w->next->prev = w->prev;
    }
    event_free(w->timer);
}

void gt_rcache_end_waits(struct gt_rcache *c)
{
    while (c && c->waits) {
        struct rwait *w = c->waits;
        wait_unlink(w);
        gt_req_error(w->r, GT_ESTORE, "gantryd is shutting down");
        free(w);
    }
}

void gt_rcache_free(struct gt_rcache *c)
{
    if (!c) {
        return;
    }
    gt_rcache_end_waits(c);
    if (c->wake) {
        event_free(c->wake);
    }
    for (size_t i = 0; i < GT_ARRAY_LEN(c->keys); i++) {
        gt_strmap_fini(&c->keys[i], kv_free);
    }
    free(c);
}

void gt_rcache_load(struct gt_rcache *c, const struct gt_store_kv *kv)
{
    if (c) {
        put(c, kv->key, kv->value, kv->value_len, kv->create_rev, kv->mod_rev);
    }
}

void gt_rcache_loaded(struct gt_rcache *c, int64_t rev)
{
    if (c) {
        c->loaded_rev = rev;
    }
}

void gt_rcache_event(struct gt_rcache *c, const struct gt_store_event *ev)
{
    if (!c) {
        return;
    }
    if (ev->type == GT_STORE_EV_DELETE) {
        struct gt_strmap *m = map_of(c, ev->key);
        struct gt_store_kv *old = gt_strmap_del(m ? m : &c->keys[OTHER], ev->key);
        c->n_objects -= old != NULL;
        kv_free(old);
    } else {
        put(c, ev->key, ev->value, ev->value_len, ev->create_rev, ev->mod_rev);
    }
    if (c->waits) {
        event_active(c->wake, EV_TIMEOUT, 0); /* no-op while already active */
    }
}

/* ---- waiting reads ---- */

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gt_rcache *c = arg;
    int64_t rev = cache_rev(c);
    /* take the ready ones out first: a resumed read may park new ones */
    struct rwait *ready = NULL;
    for (struct rwait *w = c->waits, *next; w; w = next) {
        next = w->next;
        if (w->need <= rev) {
            wait_unlink(w);
            w->next = ready;
            ready = w;
        }
    }
    while (ready) {
        struct rwait *w = ready;
        ready = w->next;
        w->r->read_ready = true;
        w->resume(w->r);
        free(w);
    }
}

static void on_wait_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct rwait *w = arg;
    int64_t rev = cache_rev(w->c);
    wait_unlink(w);
    w->c->n_timeouts++;
    if (w->from_client) {
        gt_req_error(w->r, GT_ETIMEOUT,
                     "Too large resource version: %lld, current: %lld (waited %d ms)",
                     (long long)w->need, (long long)rev, GT_READ_WAIT_MS);
    } else {
        gt_req_error(w->r, GT_ESTORE,
                     "this replica's cache is at revision %lld, behind its own writes at %lld "
                     "after %d ms: its watch on the store is behind; try another replica",
                     (long long)rev, (long long)w->need, GT_READ_WAIT_MS);
    }
    free(w);
}

int gt_read_need(const struct gt_server *s, const char *rvs, int64_t *need, bool *from_client,
                 struct gt_err *err)
{
    *from_client = rvs && *rvs;
    if (!*from_client) {
        *need = gt_store_revision(s->store);
        return 0;
    }
    if (gt_parse_rev(rvs, need)) {
        return gt_err_set(err, GT_EBADREQ,
                          "resourceVersion: must be a decimal revision, not \"%.64s\"", rvs);
    }
    return 0;
}

bool gt_read_wait(struct gt_server *s, struct gt_req *r, int64_t need, bool from_client,
                  gt_read_resume_fn resume)
{
    struct gt_rcache *c = s->rcache;
    if (!c || r->read_ready || need <= cache_rev(c)) {
        return false;
    }
    if (!c->wake) {
        c->wake = event_new(s->base, -1, 0, on_wake, c);
        GT_ASSERT(c->wake);
    }
    struct rwait *w = gt_xcalloc(1, sizeof(*w));
    *w = (struct rwait){.c = c, .r = r, .need = need, .from_client = from_client, .resume = resume};
    c->n_waits++;
    w->timer = evtimer_new(s->base, on_wait_timeout, w);
    GT_ASSERT(w->timer);
    struct timeval tv = {.tv_sec = GT_READ_WAIT_MS / 1000,
                         .tv_usec = (GT_READ_WAIT_MS % 1000) * 1000};
    evtimer_add(w->timer, &tv);
    w->next = c->waits;
    if (c->waits) {
        c->waits->prev = w;
    }
    c->waits = w;
    return true;
}

/* ---- reads ---- */

int gt_server_read_get(struct gt_server *s, const char *key, struct gt_store_kv *kv,
                       struct gt_err *err)
{
    struct gt_rcache *c = s->rcache;
    if (!c) {
        return gt_server_get(s, key, kv, err);
    }
    struct gt_strmap *m = map_of(c, key);
    const struct gt_store_kv *e = gt_strmap_get(m ? m : &c->keys[OTHER], key);
    memset(kv, 0, sizeof(*kv));
    if (!e) {
        return GT_ENOTFOUND;
    }
    *kv = *e;
    kv->key = gt_xstrdup(e->key);
    kv->value = gt_xstrndup(e->value, e->value_len);
    return 0;
}

struct matches {
    const char *prefix;
    size_t prefix_len;
    const struct gt_store_kv **v;
    size_t n, cap;
};

static int match_cb(const char *key, void *val, void *arg)
{
    struct matches *m = arg;
    if (strncmp(key, m->prefix, m->prefix_len) == 0) {
        GT_VEC_RESERVE(m->v, m->cap, m->n + 1, 64);
        m->v[m->n++] = val;
    }
    return 0;
}

static int key_cmp(const void *a, const void *b)
{
    const struct gt_store_kv *const *x = a, *const *y = b;
    return strcmp((*x)->key, (*y)->key);
}

int gt_server_read_list(struct gt_server *s, const char *prefix, gt_store_list_fn fn, void *arg,
                        int64_t *rev, struct gt_err *err)
{
    struct gt_rcache *c = s->rcache;
    if (!c) {
        return gt_server_list(s, prefix, fn, arg, rev, err);
    }
    struct matches m = {.prefix = prefix, .prefix_len = strlen(prefix)};
    struct gt_strmap *one = map_of(c, prefix);
    for (size_t i = 0; i < GT_ARRAY_LEN(c->keys); i++) {
        if (!one || one == &c->keys[i]) {
            gt_strmap_each(&c->keys[i], match_cb, &m);
        }
    }
    if (m.n > 1) {
        qsort(m.v, m.n, sizeof(*m.v), key_cmp);
    }
    if (rev) {
        *rev = cache_rev(c);
    }
    /* entries change only on the server's watch, never inside fn */
    for (size_t i = 0; i < m.n && fn(m.v[i], arg) == 0; i++) {
    }
    free(m.v);
    return 0;
}

void gt_rcache_metrics(const struct gt_rcache *c, struct gt_buf *out)
{
    if (!c) {
        return;
    }
    gt_buf_printf(out,
                  "# HELP gantry_read_cache_objects Stored objects in this replica's read cache.\n"
                  "# TYPE gantry_read_cache_objects gauge\n"
                  "gantry_read_cache_objects %zu\n"
                  "# HELP gantry_read_cache_revision The revision the read cache reflects.\n"
                  "# TYPE gantry_read_cache_revision gauge\n"
                  "gantry_read_cache_revision %lld\n"
                  "# HELP gantry_read_waits_total Reads that waited for the cache to reach "
                  "their revision.\n"
                  "# TYPE gantry_read_waits_total counter\n"
                  "gantry_read_waits_total %llu\n"
                  "# HELP gantry_read_wait_timeouts_total Reads answered 503 or 504 after "
                  "waiting.\n"
                  "# TYPE gantry_read_wait_timeouts_total counter\n"
                  "gantry_read_wait_timeouts_total %llu\n",
                  c->n_objects, (long long)cache_rev(c), (unsigned long long)c->n_waits,
                  (unsigned long long)c->n_timeouts);
}
