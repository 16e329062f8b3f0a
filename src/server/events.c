/*
 * Events: what happened to an object and why. Repeats are folded into one
 * Event per (involved object uid, reason) with a count and lastTimestamp;
 * each is written to the store at most once per GT_EVENT_WRITE_INTERVAL_MS,
 * pending increments being flushed by a per-Event timer. A sweep every
 * minute (every half TTL when that is shorter, at least a second apart) deletes stored Events whose
 * lastTimestamp is older than --event-ttl (default an hour) and forgets
 * their in-memory state, and forgets that of
 * Events whose object was deleted since the last sweep once they are
 * written (gt_events_forget): otherwise a TTL of Events' folds, a few per
 * job, would stay in memory at any job rate. On an etcd store the stored
 * Events of the TTL are held in memory too (the read cache, readcache.c):
 * about a KiB each, the job rate times the TTL.
 *
 * Events are stored cluster-scoped under /events/<name>, name
 * "<object-name>.<16 hex>" (gt_event_name), and carry involvedObject
 * {kind, name, project, uid} so access follows the object's project.
 * The recorder owns its entries; at most one write per entry is in flight.
 */
#include <stdlib.h>
#include <string.h>

#include "server/events.h"
#include "server/server_int.h"
#include "server/storeio.h"

#define SWEEP_INTERVAL_MS 60000

int64_t gt_event_fold_record(struct gt_event_fold *f, int64_t now_ms)
{
    if (f->count == 0) {
        f->first_ms = now_ms;
    }
    f->count++;
    f->last_ms = now_ms;
    if (!f->ever_written || now_ms - f->last_write_ms >= GT_EVENT_WRITE_INTERVAL_MS) {
        return 0;
    }
    return f->last_write_ms + GT_EVENT_WRITE_INTERVAL_MS - now_ms;
}

void gt_event_fold_written(struct gt_event_fold *f, int64_t now_ms)
{
    f->written_count = f->count;
    f->last_write_ms = now_ms;
    f->ever_written = true;
}

bool gt_event_fold_due(const struct gt_event_fold *f, int64_t now_ms)
{
    return f->count > f->written_count &&
           (!f->ever_written || now_ms - f->last_write_ms >= GT_EVENT_WRITE_INTERVAL_MS);
}

bool gt_event_expired(int64_t last_ms, int64_t now_ms, int64_t ttl_ms)
{
    return now_ms - last_ms >= ttl_ms;
}

bool gt_event_forgettable(const struct gt_event_fold *f, bool object_gone, int64_t now_ms,
                          int64_t ttl_ms)
{
    return f->count == f->written_count &&
           (object_gone || gt_event_expired(f->last_ms, now_ms, ttl_ms));
}

char *gt_event_name(const char *obj_name, const char *uid, const char *reason)
{
    uint64_t h = gt_fnv1a(uid, strlen(uid) + 1, 0xcbf29ce484222325ULL);
    h = gt_fnv1a(reason, strlen(reason), h);
    return gt_xasprintf("%s.%016llx", obj_name, (unsigned long long)h);
}

struct entry {
    struct gt_events *ev;
    char *map_key; /* uid '/' reason */
    char *name;
    char uid[40]; /* the Event's own uid */
    /* involvedObject: kind (static), name, uid, project (NULL: none); as
     * strings, built into JSON only when written (an entry lives as long
     * as its Event, a few per job) */
    const char *obj_kind;
    char *obj_name, *obj_uid, *obj_project;
    char *reason, *message, *type;
    struct gt_event_fold fold;
    bool stored;    /* known to exist in the store: write with UPDATE */
    bool in_flight; /* a write is queued */
    int64_t submit_ns;
    struct event *timer;
};

struct gt_events {
    struct gt_server *s;
    int64_t ttl_ms; /* --event-ttl */
    struct gt_strmap entries;
    struct gt_strmap gone; /* uids of objects deleted since the last sweep -> "" */
    struct event *sweep;
};

static void entry_free(void *p)
{
    struct entry *e = p;
    if (!e) {
        return;
    }
    if (e->timer) {
        event_free(e->timer);
    }
    free(e->map_key);
    free(e->name);
    free(e->obj_name);
    free(e->obj_uid);
    free(e->obj_project);
    free(e->reason);
    free(e->message);
    free(e->type);
    free(e);
}

/* Built member by member: json_pack cost more than the rest of the write. */
static json_t *event_json(const struct entry *e)
{
    char first[32], last[32];
    gt_time_format(e->fold.first_ms, first, sizeof(first));
    gt_time_format(e->fold.last_ms, last, sizeof(last));
    json_t *md = json_object();
    gt_obj_set_str(md, "name", e->name);
    gt_obj_set_str(md, "uid", e->uid);
    gt_obj_set_str(md, "creationTimestamp", first);
    json_t *obj = json_object();
    json_object_set_new_nocheck(obj, "metadata", md);
    gt_obj_set_str(obj, "apiVersion", GT_API_VERSION);
    gt_obj_set_str(obj, "kind", "Event");
    json_t *involved = json_object();
    gt_obj_set_str(involved, "kind", e->obj_kind);
    gt_obj_set_str(involved, "name", e->obj_name);
    gt_obj_set_str(involved, "uid", e->obj_uid);
    if (e->obj_project) {
        gt_obj_set_str(involved, "project", e->obj_project);
    }
    json_object_set_new_nocheck(obj, "involvedObject", involved);
    gt_obj_set_str(obj, "reason", e->reason);
    gt_obj_set_str(obj, "message", e->message);
    gt_obj_set_str(obj, "type", e->type);
    json_object_set_new_nocheck(obj, "count", json_integer(e->fold.count));
    gt_obj_set_str(obj, "firstTimestamp", first);
    gt_obj_set_str(obj, "lastTimestamp", last);
    json_t *source = json_object();
    gt_obj_set_str(source, "component", "gantryd");
    json_object_set_new_nocheck(obj, "source", source);
    return obj;
}

static void schedule(struct entry *e);

static void write_done(int rc, int64_t rev, const struct gt_err *err, void *arg)
{
    (void)rev;
    struct entry *e = arg;
    gt_server_write_done(e->ev->s, rc, e->submit_ns);
    e->in_flight = false;
    if (rc == 0) {
        e->stored = true;
    } else if (rc == GT_EEXISTS || rc == GT_ENOTFOUND) {
        /* written before a restart, or swept meanwhile: write it again the other way */
        e->stored = rc == GT_EEXISTS;
        e->fold.ever_written = false;
        e->fold.written_count = 0;
    } else {
        gt_log_warn("event write failed", "event=%s err=\"%s\"", e->name,
                    err && err->msg[0] ? err->msg : gt_errcode_str(rc));
        return;
    }
    if (!e->ev->s->draining) {
        schedule(e);
    }
}

static void write_entry(struct entry *e)
{
    json_t *obj = event_json(e);
    size_t len = 0;
    char *text = gt_api_encode(obj, &len);
    json_decref(obj);
    char *key = gt_xasprintf("/events/%s", e->name);
    gt_event_fold_written(&e->fold, gt_now_ms());
    e->submit_ns = gt_now_ns();
    e->in_flight = true;
    int rc = gt_server_write(e->ev->s, false, e->stored ? GT_STORE_UPDATE : GT_STORE_CREATE, key,
                             text, len, 0, write_done, e);
    if (rc) {
        e->in_flight = false;
    }
    free(key);
    free(text);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct entry *e = arg;
    /* made again when needed: most entries stay quiet once written */
    event_free(e->timer);
    e->timer = NULL;
    schedule(e);
}

/* Write now if due, else arm the timer for when it will be. */
static void schedule(struct entry *e)
{
    int64_t now = gt_now_ms();
    if (e->in_flight || e->fold.count <= e->fold.written_count) {
        return;
    }
    if (gt_event_fold_due(&e->fold, now)) {
        write_entry(e);
        return;
    }
    int64_t delay = e->fold.last_write_ms + GT_EVENT_WRITE_INTERVAL_MS - now;
    struct timeval tv = {.tv_sec = delay / 1000, .tv_usec = (delay % 1000) * 1000};
    if (!e->timer) {
        e->timer = evtimer_new(e->ev->s->base, on_timer, e);
    }
    if (!evtimer_pending(e->timer, NULL)) {
        evtimer_add(e->timer, &tv);
    }
}

void gt_events_record(struct gt_events *ev, const struct gt_api_object *obj, const char *type,
                      const char *reason, const char *message)
{
    const struct gt_kind_info *kind = gt_kind_get(obj->kind);
    const char *uid = obj->meta.uid;
    const char *name = obj->meta.name;
    if (!uid || !name || ev->s->failed) {
        return;
    }
    char *map_key = gt_xasprintf("%s/%s", uid, reason);
    struct entry *e = gt_strmap_get(&ev->entries, map_key);
    if (!e) {
        e = gt_xcalloc(1, sizeof(*e));
        e->ev = ev;
        e->map_key = map_key;
        map_key = NULL;
        e->name = gt_event_name(name, uid, reason);
        gt_uuid4(&ev->s->uuids, e->uid, sizeof(e->uid));
        e->obj_kind = kind->name;
        e->obj_name = gt_xstrdup(name);
        e->obj_uid = gt_xstrdup(uid);
        const char *project = kind->namespaced ? obj->meta.project : NULL;
        e->obj_project = project ? gt_xstrdup(project) : NULL;
        e->reason = gt_xstrdup(reason);
        gt_strmap_put(&ev->entries, e->map_key, e);
    }
    free(map_key);
    free(e->message);
    e->message = gt_xstrdup(message);
    free(e->type);
    e->type = gt_xstrdup(type);
    gt_event_fold_record(&e->fold, gt_now_ms());
    schedule(e);
}

struct sweep_ctx {
    struct gt_events *ev;
    int64_t now_ms, ttl_ms;
    char **keys;
    size_t n, cap;
};

static void push_key(struct sweep_ctx *c, const char *key)
{
    GT_VEC_RESERVE(c->keys, c->cap, c->n + 1, 16);
    c->keys[c->n++] = gt_xstrdup(key);
}

static int sweep_memory_cb(const char *key, void *val, void *arg)
{
    struct entry *e = val;
    struct sweep_ctx *c = arg;
    bool gone = gt_strmap_get(&c->ev->gone, e->obj_uid) != NULL;
    if (!e->in_flight && gt_event_forgettable(&e->fold, gone, c->now_ms, c->ttl_ms)) {
        push_key(c, key);
    }
    return 0;
}

static int sweep_store_cb(const struct gt_store_kv *kv, void *arg)
{
    struct sweep_ctx *c = arg;
    json_t *obj = json_loadb(kv->value, kv->value_len, 0, NULL);
    const char *last = json_string_value(json_object_get(obj, "lastTimestamp"));
    if (!last) {
        last = json_string_value(gt_json_path(obj, "metadata.creationTimestamp"));
    }
    int64_t last_ms = 0;
    if (last && gt_time_parse(last, &last_ms) == 0 &&
        gt_event_expired(last_ms, c->now_ms, c->ttl_ms)) {
        push_key(c, kv->key);
    }
    json_decref(obj);
    return 0;
}

static void sweep_done(int rc, int64_t rev, const struct gt_err *err, void *arg)
{
    (void)rev;
    (void)err;
    struct gt_server *s = arg;
    gt_server_write_done(s, rc, 0);
}

static void free_keys(struct sweep_ctx *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->keys[i]);
    }
    free(c->keys);
    c->keys = NULL;
    c->n = c->cap = 0;
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gt_events *ev = arg;
    if (ev->s->draining) {
        return;
    }
    struct sweep_ctx c = {.ev = ev, .now_ms = gt_now_ms(), .ttl_ms = ev->ttl_ms};
    gt_strmap_each(&ev->entries, sweep_memory_cb, &c);
    for (size_t i = 0; i < c.n; i++) {
        entry_free(gt_strmap_del(&ev->entries, c.keys[i]));
    }
    free_keys(&c);
    /* an Event of a deleted object not yet written then stays until it expires */
    gt_strmap_fini(&ev->gone, free);
    gt_strmap_init(&ev->gone);
    struct gt_err err = {0};
    if (gt_store_list(ev->s->store, "/events/", sweep_store_cb, &c, NULL, &err) == 0) {
        for (size_t i = 0; i < c.n; i++) {
            gt_server_write(ev->s, false, GT_STORE_DELETE, c.keys[i], NULL, 0, 0, sweep_done,
                            ev->s);
        }
        if (c.n) {
            gt_log_debug("expired events deleted", "count=%zu", c.n);
        }
    }
    free_keys(&c);
}

struct gt_events *gt_events_new(struct gt_server *s)
{
    struct gt_events *ev = gt_xcalloc(1, sizeof(*ev));
    ev->s = s;
    gt_strmap_init(&ev->entries);
    gt_strmap_init(&ev->gone);
    ev->sweep = event_new(s->base, -1, EV_PERSIST, on_sweep, ev);
    /* a sweep every minute, or every half TTL when that is shorter */
    ev->ttl_ms = s->cfg->event_ttl_s > 0 ? s->cfg->event_ttl_s * 1000 : 3600000;
    int64_t every_ms = ev->ttl_ms / 2;
    every_ms =
        every_ms < SWEEP_INTERVAL_MS ? (every_ms < 1000 ? 1000 : every_ms) : SWEEP_INTERVAL_MS;
    struct timeval tv = {.tv_sec = every_ms / 1000, .tv_usec = (every_ms % 1000) * 1000};
    evtimer_add(ev->sweep, &tv);
    return ev;
}

static int flush_cb(const char *key, void *val, void *arg)
{
    (void)key;
    (void)arg;
    struct entry *e = val;
    if (!e->in_flight && e->fold.count > e->fold.written_count) {
        write_entry(e);
    }
    return 0;
}

void gt_events_forget(struct gt_events *ev, const char *uid)
{
    if (ev && uid && !gt_strmap_get(&ev->gone, uid)) {
        gt_strmap_put(&ev->gone, uid, gt_xstrdup(""));
    }
}

void gt_events_flush(struct gt_events *ev)
{
    gt_strmap_each(&ev->entries, flush_cb, NULL);
}

void gt_events_free(struct gt_events *ev)
{
    if (!ev) {
        return;
    }
    event_free(ev->sweep);
    gt_strmap_fini(&ev->entries, entry_free);
    gt_strmap_fini(&ev->gone, free);
    free(ev);
}
