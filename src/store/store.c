/*
 * store.c: the generic store layer over a backend (store_int.h): write
 * queue and group commit, the writer thread, done callbacks, watch history
 * and delivery.
 *
 * With an event base, gt_store_write appends to st->queue; the first write
 * of a loop turn activates flush_ev (lowest priority, so it runs after the
 * other callbacks of the turn), which hands the whole queue to the writer
 * thread as one batch. One batch is in flight at a time: writes arriving
 * meanwhile wait in the queue and form the next batch, which is what makes
 * group commit batch under load. The writer reports through an eventfd
 * watched by the loop; the loop then starts the next batch and finishes the
 * completed one: done callbacks in revision order, then, per event, record
 * in the history ring and deliver to watchers.
 *
 * Batches: queue (loop thread only), inflight (the writer's between
 * handing over and work_done), done (loop thread, being finished). Only
 * work_ready/work_done/stop are shared, under mu.
 *
 * History: ring of the last ring_cap events, contiguous in revision, the
 * newest at hist_rev. Entries are refcounted so a callback that writes (and
 * so evicts) cannot free the event being delivered. A watcher remembers the
 * last revision it saw (last_rev), so replay and live delivery never
 * duplicate. Watchers are removed only when no delivery is running
 * (delivering == 0), which makes gt_store_unwatch safe inside a callback.
 *
 * Feed (a backend with feed_start, etcd): the backend's thread queues every
 * change of every writer in the sink; the loop drains it (sink_ev) into the
 * history. Then the history is recorded from the feed: an own write's event
 * is recorded at once only if it is the next revision (nothing from other
 * writers is pending before it), else the feed brings it; a feed event at
 * or below hist_rev is already recorded. Both keep the ring contiguous.
 * Leadership reports from the backend's election thread come the same way.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "store/store.h"
#include "store/store_int.h"

enum { DEFAULT_WATCH_HISTORY = 10000 };

struct batch {
    struct gt_store_wop *ops;
    size_t n, cap;
    int rc;
    struct gt_err err;
};

struct hist_ev {
    int refs;
    struct gt_store_event ev; /* key/value point at the owned strings below */
    char *key;
    char *value;
};

struct gt_store_watch {
    struct gt_store *st;
    char *prefix;
    size_t prefix_len;
    gt_store_watch_fn fn;
    void *arg;
    int64_t last_rev; /* events up to here were delivered (or predate the watch) */
    bool dead;
    struct gt_store_watch *next;
};

struct gt_store_sink {
    struct gt_store *st;
    pthread_mutex_t mu;
    int fd; /* eventfd the loop watches */
    struct event *ev;
    /* under mu: */
    struct GT_VEC(struct hist_ev *) evs;
    char *fail_msg; /* feed ended */
    bool leader_changed, leader;
    int64_t leader_create_rev, leader_rev;
};

struct gt_store {
    const struct gt_store_backend_ops *ops;
    void *be;
    struct event_base *base;
    int64_t rev; /* last committed revision, as the loop has seen it */
    bool failed;
    bool closing;
    uint64_t n_commits;
    uint64_t n_writes;

    struct batch queue;
    struct batch inflight;
    struct batch done;
    bool in_flight;
    bool flush_pending;
    struct event *flush_ev;
    struct event *done_ev;
    int done_fd;

    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool work_ready; /* under mu */
    bool work_done;  /* under mu */
    bool stop;       /* under mu */

    struct hist_ev **ring;
    size_t ring_cap, ring_start, ring_n;
    int64_t hist_rev; /* revision of the newest recorded event (open rev if none) */

    struct gt_store_watch *watch_head;
    int delivering;

    struct gt_store_sink *sink; /* NULL until a feed or an election starts */
    bool feeding;
    gt_store_elect_fn elect_fn;
    void *elect_arg;
    char *elect_key, *elect_value;
};

/* ---- helpers shared with the backends ---- */

void gt_store_faults_arm(struct gt_store_faults *f, enum gt_store_fault point, int nth)
{
    atomic_int *c = point == GT_STORE_FAULT_WRITE ? &f->write_nth : &f->fsync_nth;
    atomic_store(c, nth > 0 ? nth : 0);
}

bool gt_store_faults_hit(struct gt_store_faults *f, enum gt_store_fault point)
{
    atomic_int *c = point == GT_STORE_FAULT_WRITE ? &f->write_nth : &f->fsync_nth;
    int n = atomic_load(c);
    while (n > 0) {
        if (atomic_compare_exchange_weak(c, &n, n - 1)) {
            return n == 1;
        }
    }
    return false;
}

int gt_store_wop_check(const struct gt_store_wop *w, bool exists, int64_t mod_rev)
{
    if (w->op == GT_STORE_CREATE) {
        return exists ? GT_EEXISTS : 0;
    }
    if (!exists) {
        return GT_ENOTFOUND;
    }
    if (w->expected_rev != 0 && w->expected_rev != mod_rev) {
        return GT_ECONFLICT;
    }
    return 0;
}

void gt_store_kv_fini(struct gt_store_kv *kv)
{
    if (kv) {
        free(kv->key);
        free(kv->value);
        memset(kv, 0, sizeof(*kv));
    }
}

/* ---- history and watch delivery ---- */

static void hist_unref(struct hist_ev *h)
{
    if (--h->refs == 0) {
        free(h->key);
        free(h->value);
        free(h);
    }
}

static struct hist_ev *ring_push(struct gt_store *st, struct hist_ev *h);

/* Move w's strings into a new newest ring entry; returns it (ring's ref). */
static struct hist_ev *hist_record(struct gt_store *st, struct gt_store_wop *w)
{
    struct hist_ev *h = gt_xcalloc(1, sizeof(*h));
    h->refs = 1;
    h->key = w->key;
    w->key = NULL;
    if (w->op == GT_STORE_DELETE) {
        h->value = w->old_value;
        h->ev.value_len = w->old_value_len;
        w->old_value = NULL;
        h->ev.type = GT_STORE_EV_DELETE;
    } else {
        h->value = w->value;
        h->ev.value_len = w->value_len;
        w->value = NULL;
        h->ev.type = GT_STORE_EV_PUT;
        h->ev.created = w->created;
    }
    if (!h->value) {
        h->value = gt_xstrdup("");
    }
    h->ev.key = h->key;
    h->ev.value = h->value;
    h->ev.create_rev = w->create_rev;
    h->ev.mod_rev = w->rev;
    return ring_push(st, h);
}

/* Make h (the ring's reference) the newest entry; returns it. */
static struct hist_ev *ring_push(struct gt_store *st, struct hist_ev *h)
{
    if (st->ring_n == st->ring_cap) {
        hist_unref(st->ring[st->ring_start]);
        st->ring_start = (st->ring_start + 1) % st->ring_cap;
        st->ring_n--;
    }
    st->ring[(st->ring_start + st->ring_n) % st->ring_cap] = h;
    st->ring_n++;
    st->hist_rev = h->ev.mod_rev;
    return h;
}

static bool watch_matches(const struct gt_store_watch *w, const struct gt_store_event *ev)
{
    return !w->dead && ev->mod_rev > w->last_rev && strncmp(ev->key, w->prefix, w->prefix_len) == 0;
}

static void watch_reap(struct gt_store *st)
{
    if (st->delivering > 0) {
        return;
    }
    struct gt_store_watch **pp = &st->watch_head;
    while (*pp) {
        struct gt_store_watch *w = *pp;
        if (w->dead) {
            *pp = w->next;
            free(w->prefix);
            free(w);
        } else {
            pp = &w->next;
        }
    }
}

static void deliver(struct gt_store *st, struct hist_ev *h)
{
    h->refs++;
    for (struct gt_store_watch *w = st->watch_head; w; w = w->next) {
        if (watch_matches(w, &h->ev)) {
            w->last_rev = h->ev.mod_rev;
            w->fn(&h->ev, w->arg);
        }
    }
    hist_unref(h);
}

/* ---- finishing batches ---- */

static void wop_free(struct gt_store_wop *w)
{
    free(w->guard_key);
    free(w->guard_value);
    free(w->key);
    free(w->value);
    free(w->old_value);
    memset(w, 0, sizeof(*w));
}

/* After an fsync failure nothing more is written (store.h). */
static void mark_failed(struct gt_store *st, const struct gt_err *err)
{
    if (!st->failed) {
        st->failed = true;
        gt_log_error("store failed", "err=\"%s\"", err->msg);
    }
}

/* Run done callbacks (revision order = queue order), then record and
 * deliver the events; frees the ops' contents and empties b. */
static void batch_finish(struct gt_store *st, struct batch *b)
{
    if (b->rc == GT_EFSYNC) {
        mark_failed(st, &b->err);
    }
    for (size_t i = 0; i < b->n; i++) {
        struct gt_store_wop *w = &b->ops[i];
        if (b->rc != 0) {
            w->rc = b->rc;
        } else if (w->rc == 0) {
            st->rev = w->rev;
        } else if (w->seen_rev > st->rev) {
            st->rev = w->seen_rev; /* the refusal answered from that revision */
        }
    }
    for (size_t i = 0; i < b->n; i++) {
        struct gt_store_wop *w = &b->ops[i];
        if (!w->done) {
            continue;
        }
        struct gt_err e = {0};
        if (b->rc != 0) {
            e = b->err;
        } else if (w->rc != 0) {
            gt_err_set(&e, w->rc, "%s: %s", w->key, gt_errcode_str(w->rc));
        }
        w->done(w->rc, w->rc == 0 ? w->rev : 0, &e, w->done_arg);
    }
    st->delivering++;
    for (size_t i = 0; i < b->n; i++) {
        /* with a feed, what is not the next revision comes through it */
        if (b->ops[i].rc == 0 && (!st->feeding || b->ops[i].rev == st->hist_rev + 1)) {
            deliver(st, hist_record(st, &b->ops[i]));
        }
        wop_free(&b->ops[i]);
    }
    st->delivering--;
    watch_reap(st);
    b->n = 0;
    b->rc = 0;
    gt_err_clear(&b->err);
}

static void batch_swap(struct batch *a, struct batch *b)
{
    struct batch t = *a;
    *a = *b;
    *b = t;
}

/* Fail everything queued with GT_EFSYNC (the store has failed). */
static void queue_fail(struct gt_store *st)
{
    if (st->queue.n == 0) {
        return;
    }
    st->queue.rc = GT_EFSYNC;
    gt_err_set(&st->queue.err, GT_EFSYNC, "store failed after an fsync error");
    batch_finish(st, &st->queue);
}

/* Hand the queue to the writer if it is idle. */
static void kick(struct gt_store *st)
{
    if (st->in_flight || st->queue.n == 0 || st->failed) {
        return;
    }
    batch_swap(&st->queue, &st->inflight);
    st->in_flight = true;
    pthread_mutex_lock(&st->mu);
    st->work_ready = true;
    pthread_cond_broadcast(&st->cond);
    pthread_mutex_unlock(&st->mu);
}

/* Take the writer's finished batch if there is one: start the next batch,
 * then finish this one. Returns false if the writer is still busy. */
static bool complete(struct gt_store *st)
{
    pthread_mutex_lock(&st->mu);
    bool done = st->work_done;
    st->work_done = false;
    pthread_mutex_unlock(&st->mu);
    if (!done) {
        return false;
    }
    batch_swap(&st->inflight, &st->done);
    st->in_flight = false;
    st->n_commits++;
    st->n_writes += st->done.n;
    if (st->done.rc == GT_EFSYNC) {
        mark_failed(st, &st->done.err);
    }
    kick(st);
    batch_finish(st, &st->done);
    if (st->failed) {
        queue_fail(st);
    }
    return true;
}

static void *writer_main(void *arg)
{
    struct gt_store *st = arg;
    pthread_mutex_lock(&st->mu);
    for (;;) {
        while (!st->work_ready && !st->stop) {
            pthread_cond_wait(&st->cond, &st->mu);
        }
        if (!st->work_ready) {
            break;
        }
        st->work_ready = false;
        pthread_mutex_unlock(&st->mu);

        struct batch *b = &st->inflight;
        b->rc = st->ops->apply(st->be, b->ops, b->n, &b->err);

        pthread_mutex_lock(&st->mu);
        st->work_done = true;
        pthread_cond_broadcast(&st->cond);
        uint64_t one = 1;
        ssize_t r = write(st->done_fd, &one, sizeof(one));
        (void)r; /* EAGAIN only if the counter is full: the loop is woken anyway */
    }
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gt_store *st = arg;
    st->flush_pending = false;
    kick(st);
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct gt_store *st = arg;
    uint64_t cnt;
    ssize_t r = read(fd, &cnt, sizeof(cnt));
    (void)r; /* EAGAIN: already drained; work_done decides */
    complete(st);
}

/* ---- the sink: what a backend's threads report ---- */

void gt_store_sink_event(struct gt_store_sink *k, const struct gt_store_event *ev)
{
    struct hist_ev *h = gt_xcalloc(1, sizeof(*h));
    h->refs = 1;
    h->ev = *ev;
    h->key = gt_xstrdup(ev->key);
    h->value = gt_xmalloc(ev->value_len + 1);
    if (ev->value_len > 0) {
        memcpy(h->value, ev->value, ev->value_len);
    }
    h->value[ev->value_len] = '\0';
    h->ev.key = h->key;
    h->ev.value = h->value;
    pthread_mutex_lock(&k->mu);
    *GT_VEC_PUSH(&k->evs, 64) = h;
    pthread_mutex_unlock(&k->mu);
    uint64_t one = 1;
    ssize_t r = write(k->fd, &one, sizeof(one));
    (void)r; /* EAGAIN only if the counter is full: the loop is woken anyway */
}

void gt_store_sink_fail(struct gt_store_sink *k, const char *msg)
{
    pthread_mutex_lock(&k->mu);
    if (!k->fail_msg) {
        k->fail_msg = gt_xstrdup(msg);
    }
    pthread_mutex_unlock(&k->mu);
    uint64_t one = 1;
    ssize_t r = write(k->fd, &one, sizeof(one));
    (void)r;
}

void gt_store_sink_leader(struct gt_store_sink *k, bool leader, int64_t create_rev, int64_t rev)
{
    pthread_mutex_lock(&k->mu);
    k->leader_changed = true;
    k->leader = leader;
    k->leader_create_rev = create_rev;
    k->leader_rev = rev;
    pthread_mutex_unlock(&k->mu);
    uint64_t one = 1;
    ssize_t r = write(k->fd, &one, sizeof(one));
    (void)r;
}

/* The loop's side: record and deliver the feed's changes, then report a
 * failure or a change of leadership. */
static void on_sink(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct gt_store *st = arg;
    struct gt_store_sink *k = st->sink;
    uint64_t cnt;
    ssize_t r = read(fd, &cnt, sizeof(cnt));
    (void)r; /* EAGAIN: already drained */
    pthread_mutex_lock(&k->mu);
    struct GT_VEC(struct hist_ev *) evs = {0};
    evs.v = k->evs.v;
    evs.n = k->evs.n;
    k->evs.v = NULL;
    k->evs.n = k->evs.cap = 0;
    char *fail = k->fail_msg;
    k->fail_msg = NULL;
    bool changed = k->leader_changed, leader = k->leader;
    int64_t create_rev = k->leader_create_rev, rev = k->leader_rev;
    k->leader_changed = false;
    pthread_mutex_unlock(&k->mu);

    st->delivering++;
    for (size_t i = 0; i < evs.n; i++) {
        struct hist_ev *h = evs.v[i];
        if (h->ev.mod_rev <= st->hist_rev) {
            hist_unref(h); /* this process's own write, recorded at commit */
            continue;
        }
        if (h->ev.mod_rev != st->hist_rev + 1) {
            gt_log_warn("store feed skipped revisions", "from=%lld to=%lld",
                        (long long)st->hist_rev + 1, (long long)h->ev.mod_rev);
        }
        if (h->ev.mod_rev > st->rev) {
            st->rev = h->ev.mod_rev;
        }
        deliver(st, ring_push(st, h));
    }
    st->delivering--;
    watch_reap(st);
    free(evs.v);
    if (fail) {
        struct gt_err e = {0};
        gt_err_set(&e, GT_EFSYNC, "store feed: %s", fail);
        mark_failed(st, &e);
        free(fail);
    }
    if (changed && st->elect_fn) {
        struct gt_store_guard g = {
            .key = st->elect_key, .create_rev = create_rev, .value = st->elect_value};
        st->elect_fn(leader, leader ? &g : NULL, rev, st->elect_arg);
    }
}

/* The sink, made on first use (needs the event base). */
static struct gt_store_sink *sink_get(struct gt_store *st, struct gt_err *err)
{
    if (st->sink) {
        return st->sink;
    }
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) {
        gt_err_set(err, -errno, "eventfd: %s", strerror(errno));
        return NULL;
    }
    struct gt_store_sink *k = gt_xcalloc(1, sizeof(*k));
    k->st = st;
    k->fd = fd;
    pthread_mutex_init(&k->mu, NULL);
    k->ev = event_new(st->base, fd, EV_READ | EV_PERSIST, on_sink, st);
    GT_ASSERT(k->ev);
    event_add(k->ev, NULL);
    st->sink = k;
    return k;
}

/* After the backend's threads stopped (its close). */
static void sink_free(struct gt_store_sink *k)
{
    if (!k) {
        return;
    }
    event_free(k->ev);
    close(k->fd);
    for (size_t i = 0; i < k->evs.n; i++) {
        hist_unref(k->evs.v[i]);
    }
    GT_VEC_FREE(&k->evs);
    free(k->fail_msg);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

/* ---- open/close ---- */

static int start_writer(struct gt_store *st, struct gt_err *err)
{
    st->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (st->done_fd < 0) {
        return gt_err_set(err, -errno, "eventfd: %s", strerror(errno));
    }
    st->flush_ev = event_new(st->base, -1, 0, on_flush, st);
    st->done_ev = event_new(st->base, st->done_fd, EV_READ | EV_PERSIST, on_done, st);
    GT_ASSERT(st->flush_ev && st->done_ev);
    int npri = event_base_get_npriorities(st->base);
    if (npri > 1) {
        event_priority_set(st->flush_ev, npri - 1);
    }
    event_add(st->done_ev, NULL);
    int rc = pthread_create(&st->thread, NULL, writer_main, st);
    if (rc != 0) {
        return gt_err_set(err, -rc, "store writer thread: %s", strerror(rc));
    }
    st->thread_started = true;
    return 0;
}

int gt_store_open(const struct gt_store_options *opt, struct gt_store **out, struct gt_err *err)
{
    *out = NULL;
    if (!opt->backend) {
        return gt_err_set(err, GT_EINVAL, "store: no backend");
    }
    struct gt_store *st = gt_xcalloc(1, sizeof(*st));
    st->ops = opt->backend;
    st->base = opt->base;
    st->done_fd = -1;
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cond, NULL);
    int rc = st->ops->open(opt->path, &st->be, err);
    if (rc != 0) {
        gt_err_prefix(err, "store %s", st->ops->name);
        pthread_mutex_destroy(&st->mu);
        pthread_cond_destroy(&st->cond);
        free(st);
        return rc;
    }
    st->rev = st->ops->revision(st->be);
    st->hist_rev = st->rev;
    st->ring_cap = opt->watch_history > 0 ? (size_t)opt->watch_history : DEFAULT_WATCH_HISTORY;
    st->ring = gt_xcalloc(st->ring_cap, sizeof(*st->ring));
    if (st->base) {
        rc = start_writer(st, err);
        if (rc == 0 && st->ops->feed_start) {
            struct gt_store_sink *k = sink_get(st, err);
            rc = k ? st->ops->feed_start(st->be, st->rev, k, err) : GT_ESTORE;
            st->feeding = rc == 0;
        }
        if (rc != 0) {
            gt_store_close(st);
            return rc;
        }
    }
    *out = st;
    return 0;
}

/* Wait for the writer to finish the batch in flight and complete it. */
static void drain(struct gt_store *st)
{
    for (;;) {
        if (!st->in_flight) {
            if (st->failed) {
                queue_fail(st);
            }
            kick(st);
            if (!st->in_flight) {
                return;
            }
        }
        pthread_mutex_lock(&st->mu);
        while (!st->work_done) {
            pthread_cond_wait(&st->cond, &st->mu);
        }
        pthread_mutex_unlock(&st->mu);
        complete(st);
    }
}

void gt_store_close(struct gt_store *st)
{
    if (!st) {
        return;
    }
    st->closing = true;
    if (st->thread_started) {
        drain(st);
        pthread_mutex_lock(&st->mu);
        st->stop = true;
        pthread_cond_broadcast(&st->cond);
        pthread_mutex_unlock(&st->mu);
        pthread_join(st->thread, NULL);
    }
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cond);
    if (st->flush_ev) {
        event_free(st->flush_ev);
    }
    if (st->done_ev) {
        event_free(st->done_ev);
    }
    if (st->done_fd >= 0) {
        close(st->done_fd);
    }
    while (st->watch_head) {
        struct gt_store_watch *w = st->watch_head;
        st->watch_head = w->next;
        free(w->prefix);
        free(w);
    }
    for (size_t i = 0; i < st->ring_n; i++) {
        hist_unref(st->ring[(st->ring_start + i) % st->ring_cap]);
    }
    free(st->ring);
    free(st->queue.ops);
    free(st->inflight.ops);
    free(st->done.ops);
    if (st->be) {
        st->ops->close(st->be);
    }
    sink_free(st->sink);
    free(st->elect_key);
    free(st->elect_value);
    free(st);
}

/* ---- the API ---- */

int64_t gt_store_revision(const struct gt_store *st)
{
    return st->rev;
}

bool gt_store_failed(const struct gt_store *st)
{
    return st->failed;
}

void gt_store_stats(const struct gt_store *st, uint64_t *commits, uint64_t *writes)
{
    if (commits) {
        *commits = st->n_commits;
    }
    if (writes) {
        *writes = st->n_writes;
    }
}

int gt_store_get(struct gt_store *st, const char *key, struct gt_store_kv *kv, struct gt_err *err)
{
    memset(kv, 0, sizeof(*kv));
    return st->ops->get(st->be, key, kv, err);
}

int gt_store_list(struct gt_store *st, const char *prefix, gt_store_list_fn fn, void *arg,
                  int64_t *rev, struct gt_err *err)
{
    return st->ops->list(st->be, prefix, fn, arg, rev, err);
}

bool gt_store_feeding(const struct gt_store *st)
{
    return st->feeding;
}

int64_t gt_store_seen_revision(const struct gt_store *st)
{
    return st->hist_rev;
}

int gt_store_elect(struct gt_store *st, const char *key, const char *value, int ttl_s, int renew_ms,
                   gt_store_elect_fn fn, void *arg, struct gt_err *err)
{
    if (st->elect_fn) {
        return gt_err_set(err, GT_EINVAL, "store: already campaigning");
    }
    st->elect_fn = fn;
    st->elect_arg = arg;
    st->elect_key = gt_xstrdup(key);
    st->elect_value = gt_xstrdup(value);
    if (!st->ops->elect) {
        struct gt_store_guard g = {.key = key, .create_rev = 0, .value = value};
        fn(true, &g, st->rev, arg);
        return 0;
    }
    if (!st->base) {
        return gt_err_set(err, GT_EINVAL, "store %s: an election needs an event base",
                          st->ops->name);
    }
    struct gt_store_sink *k = sink_get(st, err);
    return k ? st->ops->elect(st->be, key, value, ttl_s, renew_ms, k, err) : GT_ESTORE;
}

int gt_store_write(struct gt_store *st, enum gt_store_op op, const char *key, const char *value,
                   size_t len, int64_t expected_rev, gt_store_done_fn done, void *arg)
{
    return gt_store_write_guarded(st, NULL, op, key, value, len, expected_rev, done, arg);
}

int gt_store_write_guarded(struct gt_store *st, const struct gt_store_guard *guard,
                           enum gt_store_op op, const char *key, const char *value, size_t len,
                           int64_t expected_rev, gt_store_done_fn done, void *arg)
{
    if (st->failed) {
        return GT_EFSYNC;
    }
    if (st->closing) {
        return GT_ESTORE;
    }
    GT_ASSERT(key && (op == GT_STORE_CREATE || op == GT_STORE_UPDATE || op == GT_STORE_DELETE));
    struct gt_store_wop w = {
        .op = op,
        .key = gt_xstrdup(key),
        .expected_rev = op == GT_STORE_CREATE ? 0 : expected_rev,
        .done = done,
        .done_arg = arg,
    };
    if (guard) {
        w.guard_key = gt_xstrdup(guard->key);
        w.guard_value = gt_xstrdup(guard->value);
        w.guard_create_rev = guard->create_rev;
    }
    if (op != GT_STORE_DELETE) {
        w.value = gt_xmalloc(len + 1);
        if (len > 0) {
            memcpy(w.value, value, len);
        }
        w.value[len] = '\0';
        w.value_len = len;
    }
    if (!st->base) {
        struct batch b = {.ops = &w, .n = 1, .cap = 1};
        b.rc = st->ops->apply(st->be, b.ops, b.n, &b.err);
        st->n_commits++;
        st->n_writes++;
        batch_finish(st, &b);
        return 0;
    }
    struct batch *q = &st->queue;
    GT_VEC_RESERVE(q->ops, q->cap, q->n + 1, 64);
    q->ops[q->n++] = w;
    if (!st->flush_pending && !st->in_flight) {
        st->flush_pending = true;
        event_active(st->flush_ev, EV_TIMEOUT, 1);
    }
    return 0;
}

static bool history_covers(const struct gt_store *st, int64_t from_rev)
{
    if (st->ring_n == 0) {
        return from_rev >= st->hist_rev;
    }
    int64_t oldest = st->hist_rev - (int64_t)st->ring_n + 1;
    return from_rev >= oldest - 1;
}

/* Replay recorded events after w->last_rev to w. */
static void replay(struct gt_store *st, struct gt_store_watch *w)
{
    st->delivering++;
    while (!w->dead && w->last_rev < st->hist_rev && st->ring_n > 0) {
        int64_t oldest = st->hist_rev - (int64_t)st->ring_n + 1;
        int64_t r = w->last_rev + 1 < oldest ? oldest : w->last_rev + 1;
        struct hist_ev *h = st->ring[(st->ring_start + (size_t)(r - oldest)) % st->ring_cap];
        if (watch_matches(w, &h->ev)) {
            h->refs++;
            w->last_rev = r;
            w->fn(&h->ev, w->arg);
            hist_unref(h);
        } else {
            w->last_rev = r;
        }
    }
    st->delivering--;
}

int gt_store_watch(struct gt_store *st, const char *prefix, int64_t from_rev, gt_store_watch_fn fn,
                   void *arg, struct gt_store_watch **out, struct gt_err *err)
{
    *out = NULL;
    if (!history_covers(st, from_rev)) {
        int64_t oldest = st->ring_n ? st->hist_rev - (int64_t)st->ring_n + 1 : st->hist_rev + 1;
        return gt_err_set(err, GT_EGONE, "watch from revision %lld: history starts at %lld",
                          (long long)from_rev, (long long)oldest);
    }
    struct gt_store_watch *w = gt_xcalloc(1, sizeof(*w));
    w->st = st;
    w->prefix = gt_xstrdup(prefix ? prefix : "");
    w->prefix_len = strlen(w->prefix);
    w->fn = fn;
    w->arg = arg;
    w->last_rev = from_rev;
    struct gt_store_watch **pp = &st->watch_head;
    while (*pp) {
        pp = &(*pp)->next;
    }
    *pp = w;
    *out = w;
    replay(st, w);
    if (w->dead) {
        *out = NULL;
        watch_reap(st);
    }
    return 0;
}

void gt_store_unwatch(struct gt_store_watch *w)
{
    if (!w) {
        return;
    }
    w->dead = true;
    watch_reap(w->st);
}

void gt_store_fault_arm(struct gt_store *st, enum gt_store_fault point, int nth)
{
    st->ops->fault_arm(st->be, point, nth);
}
