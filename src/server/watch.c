/*
 * Watch streams: GET <collection>?watch=true[&resourceVersion=N] answers 200
 * with a chunked stream of newline-delimited
 * {"type":"ADDED|MODIFIED|DELETED","object":{...}} for every change after
 * revision N, filtered by the selectors and by what the caller may read.
 * resourceVersion=0 first sends the current objects as ADDED (as Kubernetes
 * does); none starts at the current revision. A start point older than the
 * kept history answers 410 before the stream starts: the store replays
 * history synchronously inside gt_store_watch, so replayed events are held
 * in `pending` until the stream is known to be good.
 *
 * A stream ends when the client goes away (connection close callback), when
 * it falls more than MAX_BACKLOG_BYTES behind (the client re-watches), or at
 * shutdown. The server's list of streams owns each struct gt_watch_stream.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "server/cache.h"
#include "server/readcache.h"
#include "server/reply.h"
#include "server/server_int.h"
#include "server/watch.h"

#define MAX_BACKLOG_BYTES (64u << 20)
#define WRITE_TIMEOUT_S 60

struct gt_watch_stream {
    struct gt_watch_stream *prev, *next;
    struct gt_server *s;
    struct evhttp_request *req;
    struct evhttp_connection *evcon;
    const struct gt_kind_info *kind;
    const struct gt_server_user *user;
    struct gt_selector *lsel;
    struct gt_fieldsel *fsel;
    struct gt_store_watch *w;
    struct gt_buf pending; /* events before the reply started */
    bool started;
    bool ended;
};

static void stream_free(struct gt_watch_stream *ws)
{
    gt_store_unwatch(ws->w);
    if (ws->prev) {
        ws->prev->next = ws->next;
    } else if (ws->s->streams == ws) {
        ws->s->streams = ws->next;
    }
    if (ws->next) {
        ws->next->prev = ws->prev;
    }
    gt_selector_free(ws->lsel);
    gt_fieldsel_free(ws->fsel);
    gt_buf_fini(&ws->pending);
    free(ws);
}

/* End the stream from our side: the reply is closed cleanly. */
static void stream_end(struct gt_watch_stream *ws)
{
    if (ws->started) {
        evhttp_connection_set_closecb(ws->evcon, NULL, NULL);
        evhttp_send_reply_end(ws->req);
    }
    stream_free(ws);
}

static void on_close(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    struct gt_watch_stream *ws = arg;
    /* On EOF or timeout libevent detaches an unfinished request from its
     * connection and leaves it to us; ending it frees it. A request still
     * attached is freed with the connection. */
    if (!evhttp_request_get_connection(ws->req)) {
        evhttp_send_reply_end(ws->req);
    }
    stream_free(ws);
}

static bool stream_visible(const struct gt_watch_stream *ws, const json_t *obj)
{
    if (!ws->user->admin && !ws->user->node) {
        struct gt_server_authz az = {.verb = GT_VERB_READ,
                                     .kind = ws->kind->kind,
                                     .name = gt_obj_name(obj),
                                     .project = gt_access_project_of(ws->kind, obj)};
        if (gt_server_authorize(ws->s->access, ws->user, &az)) {
            return false;
        }
    }
    if (ws->lsel && !gt_selector_match(ws->lsel, gt_json_path(obj, "metadata.labels"))) {
        return false;
    }
    return !ws->fsel || gt_fieldsel_match(ws->fsel, obj);
}

/* Send one event. The object is looked at only when the stream must
 * decide whether to send it (a user who is neither admin nor a node agent,
 * or a selector): the controllers' cached copy when it is at this
 * revision (the server's own watch, registered first, has just updated
 * it), else the text parsed. The line itself splices the revision into
 * the stored text (gt_render_object). */
static void stream_send(struct gt_watch_stream *ws, const char *type, const char *key,
                        const char *value, size_t len, int64_t rev)
{
    if (ws->lsel || ws->fsel || (!ws->user->admin && !ws->user->node)) {
        const struct gt_cobj *co = gt_ctl_get(ws->s->ctl, ws->kind->kind, key);
        bool cached = co && co->rev == rev;
        json_t *parsed = cached ? NULL : json_loadb(value, len, 0, NULL);
        const json_t *obj = cached ? co->obj : parsed;
        bool visible = json_is_object(obj) && stream_visible(ws, obj);
        json_decref(parsed);
        if (!visible) {
            return;
        }
    }
    struct gt_buf line;
    gt_buf_init(&line);
    gt_buf_printf(&line, "{\"type\":\"%s\",\"object\":", type);
    gt_render_object(ws->s, &line, ws->kind, value, len, rev);
    gt_buf_append(&line, "}\n", 2);
    if (!ws->started) {
        gt_buf_append(&ws->pending, line.data, line.len);
        gt_buf_fini(&line);
        return;
    }
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, line.data, line.len);
    gt_buf_fini(&line);
    evhttp_send_reply_chunk(ws->req, b);
    evbuffer_free(b);
    struct bufferevent *bev = evhttp_connection_get_bufferevent(ws->evcon);
    if (bev && evbuffer_get_length(bufferevent_get_output(bev)) > MAX_BACKLOG_BYTES) {
        gt_log_warn("watch client too slow; ending its stream", "user=%s kind=%s", ws->user->name,
                    ws->kind->plural);
        ws->ended = true;
    }
}

static void on_event(const struct gt_store_event *ev, void *arg)
{
    struct gt_watch_stream *ws = arg;
    if (ws->ended) {
        return;
    }
    const char *type = ev->type == GT_STORE_EV_DELETE ? "DELETED"
                       : ev->created                  ? "ADDED"
                                                      : "MODIFIED";
    stream_send(ws, type, ev->key, ev->value, ev->value_len, ev->mod_rev);
    if (ws->ended && ws->started) {
        stream_end(ws);
    }
}

static int initial_cb(const struct gt_store_kv *kv, void *arg)
{
    stream_send(arg, "ADDED", kv->key, kv->value, kv->value_len, kv->mod_rev);
    return 0;
}

void gt_watch_start(struct gt_req *r, int64_t rev, struct gt_selector *lsel,
                    struct gt_fieldsel *fsel)
{
    struct gt_server *s = r->s;
    struct gt_watch_stream *ws = gt_xcalloc(1, sizeof(*ws));
    ws->s = s;
    ws->req = r->req;
    ws->kind = r->route.kind;
    ws->user = r->user;
    ws->lsel = lsel;
    ws->fsel = fsel;
    gt_buf_init(&ws->pending);
    char *prefix =
        gt_route_key(r->route.kind, r->route.all_projects ? NULL : r->route.project, NULL);
    struct gt_err err = {0};
    int rc = 0;
    if (rev == 0) {
        rc = gt_server_read_list(s, prefix, initial_cb, ws, &rev, &err);
    } else if (rev < 0) {
        rev = gt_store_revision(s->store);
    }
    if (rc == 0) {
        rc = gt_store_watch(s->store, prefix, rev, on_event, ws, &ws->w, &err);
    }
    free(prefix);
    if (rc) {
        ws->w = NULL;
        stream_free(ws);
        if (rc == GT_EGONE) {
            gt_req_error(r, GT_EGONE,
                         "too old resource version: %lld (oldest kept: see "
                         "--watch-history)",
                         (long long)rev);
        } else {
            gt_req_error_err(r, &err);
        }
        return;
    }
    ws->evcon = evhttp_request_get_connection(r->req);
    if (!ws->evcon) {
        stream_free(ws);
        gt_req_error(r, GT_EINTERNAL, "the client went away"); /* frees the request */
        return;
    }
    ws->next = s->streams;
    if (s->streams) {
        s->streams->prev = ws;
    }
    s->streams = ws;
    evhttp_add_header(evhttp_request_get_output_headers(r->req), "Content-Type",
                      "application/json");
    evhttp_send_reply_start(r->req, 200, NULL);
    ws->started = true;
    evhttp_connection_set_closecb(ws->evcon, on_close, ws);
    /* a watch may be idle for hours: no read timeout; a client that stops
     * reading still times out on writes */
    struct timeval write_tv = {.tv_sec = WRITE_TIMEOUT_S, .tv_usec = 0};
    bufferevent_set_timeouts(evhttp_connection_get_bufferevent(ws->evcon), NULL, &write_tv);
    if (ws->pending.len) {
        struct evbuffer *b = evbuffer_new();
        evbuffer_add(b, ws->pending.data, ws->pending.len);
        evhttp_send_reply_chunk(r->req, b);
        evbuffer_free(b);
        gt_buf_fini(&ws->pending);
    }
    gt_metrics_request(&s->metrics, GT_MV_WATCH, 200, (double)(gt_now_ns() - r->start_ns) / 1e9);
    gt_req_free(r);
}

void gt_watch_end_all(struct gt_server *s)
{
    while (s->streams) {
        stream_end(s->streams);
    }
}
