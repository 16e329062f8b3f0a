/*
 * gantryd's life cycle, the top of its layers: start-up (tokens, store,
 * access index, controllers, HTTP listener, signals) and shutdown. Below
 * it, the transport (http.c routes to write.c, watch.c and logproxy.c,
 * all answering through reply.c) sits above the controllers (ctl.c
 * triggers feeder.c, jobctl.c and nodes.c), which read and write through
 * the cache (cache.c); every store write is counted in storeio.c.
 *
 * On etcd the API's reads come from a cache the same watch keeps
 * (readcache.c); on SQLite from the store.
 *
 * Which replica runs the controllers is leader.c's: on SQLite this one,
 * at once; on etcd the elected one, once its cache is current.
 *
 * Shutdown is one path, "drain": stop accepting connections, end watch
 * streams and the reads waiting for the cache, flush pending Event counts,
 * wait until no store write is in flight (their replies are sent from the
 * done callbacks), give the replies a moment to reach the sockets, then
 * leave the loop and close everything. SIGTERM/SIGINT drain with exit
 * status 0; a failed fsync drains with 1 after answering 503, since the
 * page cache can no longer be trusted
 * (storeio.c calls drain through s->drain).
 *
 * SIGHUP re-reads --token-file: the new set answers from the next request
 * on (added tokens valid, removed ones 401); a file that cannot be read or
 * parsed keeps the old set and logs why.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <event2/listener.h>
#include <openssl/crypto.h>

#include "server/cache.h"
#include "server/ctl.h"
#include "server/events.h"
#include "server/fault.h"
#include "server/http.h"
#include "server/leader.h"
#include "server/readcache.h"
#include "server/registry.h"
#include "server/reply.h"
#include "server/secretkey.h"
#include "server/server_int.h"
#include "server/watch.h"

#define DRAIN_POLL_MS 10
#define FLUSH_GRACE_MS 200

static void on_drain_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gt_server *s = arg;
    if (s->n_inflight > 0) {
        return;
    }
    event_del(s->drain_timer);
    struct timeval tv = {.tv_sec = 0, .tv_usec = FLUSH_GRACE_MS * 1000};
    event_base_loopexit(s->base, &tv);
}

static void drain(struct gt_server *s, int exit_code)
{
    if (exit_code > s->exit_code) {
        s->exit_code = exit_code;
    }
    if (s->draining) {
        return;
    }
    s->draining = true;
    if (s->bound) {
        evhttp_del_accept_socket(s->http, s->bound);
        s->bound = NULL;
    }
    gt_watch_end_all(s);
    gt_rcache_end_waits(s->rcache);
    if (!s->failed) {
        gt_events_flush(s->events);
    }
    struct timeval tv = {.tv_sec = 0, .tv_usec = DRAIN_POLL_MS * 1000};
    event_add(s->drain_timer, &tv);
}

/* ---- the access index and object counts, from one watch on all keys ---- */

/* Kind of a store key "/<plural>/...", or NULL. */
static const struct gt_kind_info *kind_of_key(const char *key)
{
    char plural[32];
    const char *slash = key[0] == '/' ? strchr(key + 1, '/') : NULL;
    size_t n = slash ? (size_t)(slash - key - 1) : 0;
    if (!n || n >= sizeof(plural)) {
        return NULL;
    }
    memcpy(plural, key + 1, n);
    plural[n] = '\0';
    return gt_kind_by_plural(plural);
}

static void index_put(struct gt_server *s, const struct gt_kind_info *k, const char *value,
                      size_t len)
{
    if (k->kind != GT_KIND_PROJECT && k->kind != GT_KIND_DEPARTMENT) {
        return;
    }
    json_t *obj = json_loadb(value, len, 0, NULL);
    if (obj) {
        struct gt_api_object *t = gt_api_object_new(k->kind, obj);
        gt_server_access_put(s->access, t);
        gt_api_object_free(t);
        json_decref(obj);
    }
}

static int index_list_cb(const struct gt_store_kv *kv, void *arg)
{
    struct gt_server *s = arg;
    const struct gt_kind_info *k = kind_of_key(kv->key);
    if (k) {
        s->metrics.objects[k->kind]++;
        index_put(s, k, kv->value, kv->value_len);
        gt_ctl_load(s->ctl, k, kv);
    }
    gt_rcache_load(s->rcache, kv);
    return 0;
}

static void index_event_cb(const struct gt_store_event *ev, void *arg)
{
    struct gt_server *s = arg;
    gt_rcache_event(s->rcache, ev);
    const struct gt_kind_info *k = kind_of_key(ev->key);
    if (!k) {
        return;
    }
    if (ev->type == GT_STORE_EV_DELETE) {
        s->metrics.objects[k->kind]--;
        const char *name = strrchr(ev->key, '/') + 1;
        gt_server_access_delete(s->access, k->kind, name);
    } else {
        if (ev->created) {
            s->metrics.objects[k->kind]++;
        }
        index_put(s, k, ev->value, ev->value_len);
    }
    gt_ctl_event(s->ctl, k, ev);
}

static int start_index(struct gt_server *s, struct gt_err *err)
{
    int64_t rev = 0;
    s->rcache = gt_rcache_new(s);
    int rc = gt_store_list(s->store, "/", index_list_cb, s, &rev, err);
    if (rc == 0) {
        gt_rcache_loaded(s->rcache, rev);
        rc = gt_store_watch(s->store, "/", rev, index_event_cb, s, &s->index_watch, err);
    }
    return rc;
}

/* ---- listening ---- */

/* Split "ADDR:PORT" ("[v6]:PORT" too) into host (buf) and port. */
static int parse_listen(const char *listen, char *host, size_t len, uint16_t *port,
                        struct gt_err *err)
{
    const char *colon = strrchr(listen, ':');
    if (!colon || colon == listen) {
        return gt_err_set(err, GT_EINVAL, "--listen %s: want ADDR:PORT", listen);
    }
    const char *h = listen;
    size_t hl = (size_t)(colon - listen);
    if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    int64_t p = 0;
    if (hl == 0 || hl >= len || gt_parse_rev(colon + 1, &p) || p > 65535) {
        return gt_err_set(err, GT_EINVAL, "--listen %s: want ADDR:PORT", listen);
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (uint16_t)p;
    return 0;
}

static int start_http(struct gt_server *s, struct gt_err *err)
{
    char host[256];
    uint16_t port = 0;
    int rc = parse_listen(s->cfg->listen, host, sizeof(host), &port, err);
    if (rc) {
        return rc;
    }
    s->http = evhttp_new(s->base);
    evhttp_set_max_body_size(s->http, (ev_ssize_t)s->cfg->max_body_bytes);
    evhttp_set_max_headers_size(s->http, 64 * 1024);
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
                                            EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
    evhttp_set_gencb(s->http, gt_http_handle, s);
    s->bound = evhttp_bind_socket_with_handle(s->http, host, port);
    if (!s->bound) {
        return gt_err_set(err, -EADDRNOTAVAIL, "--listen %s: cannot bind: %s", s->cfg->listen,
                          strerror(errno));
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    evutil_socket_t fd = evhttp_bound_socket_get_fd(s->bound);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
        char ip[INET6_ADDRSTRLEN] = "?";
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *in = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
            port = ntohs(in->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
            port = ntohs(in6->sin6_port);
        }
        gt_log_info("listening", "addr=%s%s%s:%u data_dir=%s", ss.ss_family == AF_INET6 ? "[" : "",
                    ip, ss.ss_family == AF_INET6 ? "]" : "", (unsigned)port, s->cfg->data_dir);
    }
    return 0;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct gt_server *s = arg;
    gt_log_info("shutting down", "signal=%d inflight=%lld", (int)sig, (long long)s->n_inflight);
    drain(s, 0);
}

static void on_sighup(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    struct gt_server *s = arg;
    struct gt_server_tokens *next = NULL;
    struct gt_err err = {0};
    if (gt_server_tokens_load(s->cfg->token_file, &next, &err)) {
        gt_log_error("token file not reloaded, keeping the old tokens", "err=\"%s\" tokens=%zu",
                     err.msg, gt_server_tokens_count(s->tokens));
        return;
    }
    gt_server_tokens_replace(&s->tokens, next);
    gt_log_info("token file reloaded", "path=%s tokens=%zu", s->cfg->token_file,
                gt_server_tokens_count(s->tokens));
}

static int open_store(struct gt_server *s, struct gt_err *err)
{
    if (mkdir(s->cfg->data_dir, 0700) != 0 && errno != EEXIST) {
        return gt_err_set(err, -errno, "--data-dir %s: %s", s->cfg->data_dir, strerror(errno));
    }
    bool etcd = strcmp(s->cfg->store, "sqlite") != 0; /* etcd://... (config.c checked) */
    char *path = !etcd ? gt_xasprintf("%s/gantry.db", s->cfg->data_dir)
                 : s->cfg->etcd_cafile
                     ? gt_xasprintf("%s?cafile=%s", s->cfg->store, s->cfg->etcd_cafile)
                     : gt_xstrdup(s->cfg->store);
    struct gt_store_options opt = {.backend =
                                       etcd ? &gt_store_etcd_backend : &gt_store_sqlite_backend,
                                   .path = path,
                                   .watch_history = s->cfg->watch_history,
                                   .base = s->base};
    int rc = gt_store_open(&opt, &s->store, err);
    free(path);
    return rc;
}

int gt_server_start(struct gt_server *s, struct gt_err *err)
{
    s->access = gt_server_access_new();
    s->ctl = gt_ctl_new(s);
    int rc = start_index(s, err);
    if (rc) {
        return rc;
    }
    s->events = gt_events_new(s);
    s->drain = drain;
    rc = gt_server_leader_start(s, err);
    if (rc) {
        return rc;
    }
    s->drain_timer = event_new(s->base, -1, EV_PERSIST, on_drain_timer, s);
    s->fault_timer = event_new(s->base, -1, EV_PERSIST, gt_server_fault_timer, s);
    s->sig_term = evsignal_new(s->base, SIGTERM, on_signal, s);
    s->sig_int = evsignal_new(s->base, SIGINT, on_signal, s);
    evsignal_add(s->sig_term, NULL);
    evsignal_add(s->sig_int, NULL);
    s->sig_hup = evsignal_new(s->base, SIGHUP, on_sighup, s);
    evsignal_add(s->sig_hup, NULL);
    return start_http(s, err);
}

static int start(struct gt_server *s, struct gt_err *err)
{
    int rc = gt_server_fault_points_arm(s, err);
    if (rc) {
        return rc;
    }
    rc = gt_server_tokens_load(s->cfg->token_file, &s->tokens, err);
    if (rc) {
        gt_err_prefix(err, "--token-file");
        return rc;
    }
    if (s->cfg->registry_key &&
        (rc = gt_registry_key_load(s->cfg->registry_key, &s->registry_key, err)) < 0) {
        return rc;
    }
    /* coalesce evhttp's per-request enable/disable calls into one epoll_ctl
     * per fd and loop turn */
    struct event_config *ec = event_config_new();
    event_config_set_flag(ec, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    s->base = event_base_new_with_config(ec);
    event_config_free(ec);
    GT_ASSERT(s->base);
    rc = open_store(s, err);
    rc = rc ? rc : gt_secretkey_load(s, err); /* DATA_DIR exists now */
    return rc ? rc : gt_server_start(s, err);
}

void gt_server_stop(struct gt_server *s)
{
    if (s->fault_req) {
        gt_req_error(s->fault_req, GT_ESTORE, "gantryd is shutting down");
        s->fault_req = NULL;
    }
    gt_watch_end_all(s);
    gt_rcache_free(s->rcache); /* answers the reads still waiting */
    s->rcache = NULL;
    if (s->http) {
        evhttp_free(s->http);
    }
    gt_store_unwatch(s->index_watch);
    gt_events_free(s->events);
    gt_store_close(s->store);
    gt_server_leader_stop(s);
    gt_ctl_free(s->ctl);
    gt_server_access_free(s->access);
    gt_server_tokens_free(s->tokens);
    gt_registry_key_free(s->registry_key);
    s->registry_key = NULL;
    OPENSSL_cleanse(s->secret_key, sizeof(s->secret_key));
    struct event *evs[] = {s->sig_term, s->sig_int, s->sig_hup, s->drain_timer, s->fault_timer};
    for (size_t i = 0; i < GT_ARRAY_LEN(evs); i++) {
        if (evs[i]) {
            event_free(evs[i]);
        }
    }
    if (s->base) {
        event_base_free(s->base);
    }
}

int gt_server_run(const struct gt_server_config *cfg)
{
    struct gt_server s;
    memset(&s, 0, sizeof(s));
    s.cfg = cfg;
    signal(SIGPIPE, SIG_IGN);
    struct gt_err err = {0};
    int rc = start(&s, &err);
    if (rc) {
        gt_log_error("cannot start", "err=\"%s\"", err.msg);
        gt_server_stop(&s);
        return 1;
    }
    event_base_dispatch(s.base);
    int code = s.exit_code;
    gt_server_stop(&s);
    gt_log_info("stopped", "exit=%d", code);
    return code;
}
