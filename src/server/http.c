/*
 * HTTP front of gantryd: every request enters gt_http_handle, which routes
 * it, authenticates the bearer token, and serves reads itself (get, list,
 * health, metrics) or hands writes to write.c and watches to watch.c.
 *
 * Stored values are in api's stored form (codec.c there): reads splice the
 * resourceVersion in (reply.c), so the GET path parses no JSON (Nodes and
 * Departments, which carry a computed status, and selector matching do
 * parse).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

#include "server/fault.h"
#include "server/http.h"
#include "server/leader.h"
#include "server/logproxy.h"
#include "server/readcache.h"
#include "server/registry.h"
#include "server/reply.h"
#include "server/server_int.h"
#include "server/ui.h"
#include "server/watch.h"
#include "server/write.h"

/* ---- authentication ---- */

/* The request's bearer token (borrowed), or NULL. */
static const char *bearer(struct evhttp_request *req)
{
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0) {
        return NULL;
    }
    h += 7;
    while (*h == ' ') {
        h++;
    }
    return *h ? h : NULL;
}

static const struct gt_server_user *authenticate(struct gt_server *s, struct evhttp_request *req)
{
    const char *h = bearer(req);
    return h ? gt_server_tokens_find(s->tokens, h) : NULL;
}

/* An MPI launcher's exec into a task of its job (logproxy.c), whose
 * credential is no user's token: true once answered. */
static bool mpi_exec(struct gt_req *r, enum evhttp_cmd_type cmd)
{
    const char *h = bearer(r->req);
    size_t plen = strlen(GT_MPI_TOKEN_PREFIX);
    if (!h || strncmp(h, GT_MPI_TOKEN_PREFIX, plen) != 0 || !r->route.kind ||
        r->route.kind->kind != GT_KIND_TASK || strcmp(r->route.sub, "exec") != 0 ||
        cmd != EVHTTP_REQ_POST) {
        return false;
    }
    gt_logproxy_exec_mpi(r, h + plen);
    return true;
}

/* ---- reads ---- */

static void get_object(struct gt_req *r)
{
    const struct gt_route *rt = &r->route;
    struct gt_server_authz az = {.verb = GT_VERB_READ,
                                 .kind = rt->kind->kind,
                                 .name = rt->name,
                                 .project = rt->kind->namespaced ? rt->project : NULL};
    if (rt->kind->kind == GT_KIND_PROJECT) {
        az.project = rt->name;
    }
    /* an Event's project is in the object: decide after reading it */
    bool decide_later = rt->kind->kind == GT_KIND_EVENT;
    if (!decide_later && gt_server_authorize(r->s->access, r->user, &az)) {
        gt_req_error(r, GT_EFORBIDDEN, "user \"%s\" cannot get %s in %s", r->user->name,
                     rt->kind->plural, az.project ? az.project : "the cluster");
        return;
    }
    char *key = gt_route_key(rt->kind, rt->project, rt->name);
    struct gt_store_kv kv = {0};
    struct gt_err err = {0};
    int rc = gt_server_read_get(r->s, key, &kv, &err);
    free(key);
    if (rc == GT_ENOTFOUND) {
        gt_req_error(r, GT_ENOTFOUND, "%s \"%s\" not found", rt->kind->plural, rt->name);
        return;
    }
    if (rc) {
        gt_req_error_err(r, &err);
        return;
    }
    if (decide_later) {
        json_t *obj = json_loadb(kv.value, kv.value_len, 0, NULL);
        az.project = obj ? gt_access_project_of(rt->kind, obj) : NULL;
        rc = gt_server_authorize(r->s->access, r->user, &az);
        json_decref(obj);
        if (rc) {
            gt_store_kv_fini(&kv);
            gt_req_error(r, GT_EFORBIDDEN, "user \"%s\" cannot get events \"%s\"", r->user->name,
                         rt->name);
            return;
        }
    }
    struct gt_buf b;
    gt_buf_init(&b);
    b.cap = kv.value_len + 48; /* the hot path: one allocation */
    b.data = gt_xmalloc(b.cap);
    gt_render_object(r->s, &b, rt->kind, kv.value, kv.value_len, kv.mod_rev);
    gt_store_kv_fini(&kv);
    gt_req_reply(r, 200, b.data, b.len);
    gt_buf_fini(&b);
}

struct list_item {
    char *project; /* NULL unless listed across projects */
    char *name;
    char *text; /* stored text, rendered only if the item is on the page */
    size_t len;
    int64_t rev;
};

struct list_ctx {
    struct gt_req *r;
    const struct gt_selector *lsel;
    const struct gt_fieldsel *fsel;
    size_t prefix_len;
    const char *after; /* continue token: only items past it; NULL: from the start */
    struct list_item *items;
    size_t n, cap;
};

/* Does the caller see this stored object, and does it match the selectors? */
static bool list_visible(struct list_ctx *c, const struct gt_store_kv *kv, const char *rest)
{
    const struct gt_kind_info *kind = c->r->route.kind;
    const struct gt_server_user *u = c->r->user;
    bool need_json = c->lsel || c->fsel;
    bool privileged = u->admin || u->node;
    if (!privileged && kind->namespaced && !c->r->route.all_projects) {
        /* one project's list: read_collection authorized it; rest is a name */
    } else if (!privileged && kind->namespaced) {
        const char *slash = strchr(rest, '/');
        char project[64];
        size_t pl = slash ? (size_t)(slash - rest) : 0;
        if (!slash || pl >= sizeof(project)) {
            return false;
        }
        memcpy(project, rest, pl);
        project[pl] = '\0';
        if (!gt_server_can_read_project(c->r->s->access, u, project)) {
            return false;
        }
    } else if (!privileged && kind->kind != GT_KIND_EVENT) {
        struct gt_server_authz az = {.verb = GT_VERB_READ, .kind = kind->kind, .name = rest};
        az.project = kind->kind == GT_KIND_PROJECT ? rest : NULL;
        if (gt_server_authorize(c->r->s->access, u, &az)) {
            return false;
        }
    } else if (!privileged) {
        need_json = true;
    }
    if (!need_json) {
        return true;
    }
    json_t *obj = json_loadb(kv->value, kv->value_len, 0, NULL);
    bool ok = obj != NULL;
    if (ok && !privileged && kind->kind == GT_KIND_EVENT) {
        struct gt_server_authz az = {.verb = GT_VERB_READ,
                                     .kind = kind->kind,
                                     .name = rest,
                                     .project = gt_access_project_of(kind, obj)};
        ok = gt_server_authorize(c->r->s->access, u, &az) == 0;
    }
    if (ok && c->lsel) {
        ok = gt_selector_match(c->lsel, gt_json_path(obj, "metadata.labels"));
    }
    if (ok && c->fsel) {
        ok = gt_fieldsel_match(c->fsel, obj);
    }
    json_decref(obj);
    return ok;
}

/* The list order: by project (lists across projects), then name. */
static int order_cmp(const char *pa, const char *na, const char *pb, const char *nb)
{
    int c = strcmp(pa ? pa : "", pb ? pb : "");
    return c ? c : strcmp(na, nb);
}

/* Is the item (project may be NULL) at or before the continue token, which
 * is "<project>/<name>" across projects and "<name>" otherwise? */
static bool before_token(const char *token, bool all_projects, const char *project,
                         const char *name)
{
    if (!all_projects) {
        return strcmp(name, token) <= 0;
    }
    const char *slash = strchr(token, '/');
    size_t pl = slash ? (size_t)(slash - token) : strlen(token);
    char tp[64];
    if (pl >= sizeof(tp)) {
        pl = sizeof(tp) - 1;
    }
    memcpy(tp, token, pl);
    tp[pl] = '\0';
    return order_cmp(project, name, tp, slash ? slash + 1 : "") <= 0;
}

static int list_cb(const struct gt_store_kv *kv, void *arg)
{
    struct list_ctx *c = arg;
    const char *rest = kv->key + c->prefix_len;
    bool all = c->r->route.all_projects;
    const char *slash = all ? strchr(rest, '/') : NULL;
    if (c->after) {
        char project[64] = "";
        size_t pl = slash ? (size_t)(slash - rest) : 0;
        if (pl < sizeof(project)) {
            memcpy(project, rest, pl);
            project[pl] = '\0';
        }
        if (before_token(c->after, all, slash ? project : NULL, slash ? slash + 1 : rest)) {
            return 0;
        }
    }
    if (!list_visible(c, kv, rest)) {
        return 0;
    }
    GT_VEC_RESERVE(c->items, c->cap, c->n + 1, 64);
    struct list_item *it = &c->items[c->n++];
    it->project = slash ? gt_xstrndup(rest, (size_t)(slash - rest)) : NULL;
    it->name = gt_xstrdup(slash ? slash + 1 : rest);
    it->text = gt_xmalloc(kv->value_len);
    memcpy(it->text, kv->value, kv->value_len);
    it->len = kv->value_len;
    it->rev = kv->mod_rev;
    return 0;
}

static int item_cmp(const void *a, const void *b)
{
    const struct list_item *x = a, *y = b;
    return order_cmp(x->project, x->name, y->project, y->name);
}

/* A list, one page of it when limit > 0: items past the continue token
 * after (may be NULL), in list order. A page that leaves items out says
 * where the next starts in metadata.continue ("<project>/<name>" across
 * projects, else "<name>"; clients pass it back unchanged) and how many
 * are left in metadata.remainingItemCount, as Kubernetes lists do. Each
 * page is read afresh: an object changed between pages shows as it is. */
static void list_objects(struct gt_req *r, const struct gt_selector *lsel,
                         const struct gt_fieldsel *fsel, int64_t limit, const char *after)
{
    const struct gt_route *rt = &r->route;
    char *prefix = gt_route_key(rt->kind, rt->all_projects ? NULL : rt->project, NULL);
    struct list_ctx c = {
        .r = r, .lsel = lsel, .fsel = fsel, .prefix_len = strlen(prefix), .after = after};
    int64_t rev = 0;
    struct gt_err err = {0};
    int rc = gt_server_read_list(r->s, prefix, list_cb, &c, &rev, &err);
    free(prefix);
    if (rc == 0) {
        if (c.n) {
            qsort(c.items, c.n, sizeof(*c.items), item_cmp);
        }
        size_t n_page = limit > 0 && (uint64_t)limit < c.n ? (size_t)limit : c.n;
        struct gt_buf b;
        gt_buf_init(&b);
        gt_buf_printf(&b,
                      "{\"apiVersion\":\"" GT_API_VERSION
                      "\",\"kind\":\"%sList\",\"metadata\":{\"resourceVersion\":\"%lld\"",
                      rt->kind->name, (long long)rev);
        if (n_page < c.n) {
            const struct list_item *last = &c.items[n_page - 1];
            json_t *token = last->project ? json_sprintf("%s/%s", last->project, last->name)
                                          : json_string(last->name);
            gt_buf_puts(&b, ",\"continue\":");
            gt_api_encode_json(&b, token);
            json_decref(token);
            gt_buf_printf(&b, ",\"remainingItemCount\":%zu", c.n - n_page);
        }
        gt_buf_puts(&b, "},\"items\":[");
        for (size_t i = 0; i < n_page; i++) {
            if (i) {
                gt_buf_append(&b, ",", 1);
            }
            gt_render_object(r->s, &b, rt->kind, c.items[i].text, c.items[i].len, c.items[i].rev);
        }
        gt_buf_puts(&b, "]}\n");
        gt_req_reply(r, 200, b.data, b.len);
        gt_buf_fini(&b);
    } else {
        gt_req_error_err(r, &err);
    }
    for (size_t i = 0; i < c.n; i++) {
        free(c.items[i].project);
        free(c.items[i].name);
        free(c.items[i].text);
    }
    free(c.items);
}

/* The limit and continue of a list: 0 with *limit (0: no limit) and *after
 * (borrowed from q, NULL: none), or -GT_EBADREQ with err naming the
 * parameter. */
static int list_page_params(const struct evkeyvalq *q, int64_t *limit, const char **after,
                            struct gt_err *err)
{
    const char *ls = evhttp_find_header(q, "limit");
    const char *cs = evhttp_find_header(q, "continue");
    *limit = 0;
    *after = cs && *cs ? cs : NULL;
    if (ls && *ls && (gt_parse_rev(ls, limit) || *limit > 1000000)) {
        return gt_err_set(err, GT_EBADREQ,
                          "limit: must be a whole number 0..1000000, not \"%.64s\"", ls);
    }
    if (*after && strlen(*after) > 64 + GT_ROUTE_NAME_MAX) {
        return gt_err_set(err, GT_EBADREQ, "continue: not a token this server gave");
    }
    return 0;
}

/* GET on a collection: a list or a watch. */
static void read_collection(struct gt_req *r, const struct evkeyvalq *q)
{
    const struct gt_route *rt = &r->route;
    if (rt->kind->namespaced && !rt->all_projects) {
        struct gt_server_authz az = {
            .verb = GT_VERB_READ, .kind = rt->kind->kind, .project = rt->project};
        if (gt_server_authorize(r->s->access, r->user, &az)) {
            gt_req_error(r, GT_EFORBIDDEN, "user \"%s\" cannot list %s in project \"%s\"",
                         r->user->name, rt->kind->plural, rt->project);
            return;
        }
    }
    struct gt_selector *lsel = NULL;
    struct gt_fieldsel *fsel = NULL;
    struct gt_err err = {0};
    const char *ls = evhttp_find_header(q, "labelSelector");
    const char *fs = evhttp_find_header(q, "fieldSelector");
    const char *watch = evhttp_find_header(q, "watch");
    const char *rvs = evhttp_find_header(q, "resourceVersion");
    bool is_watch = watch && (!strcmp(watch, "true") || !strcmp(watch, "1"));
    int64_t rev = -1;
    if (ls && *ls && (gt_selector_parse(ls, &lsel, &err))) {
        gt_err_prefix(&err, "labelSelector");
        gt_req_error(r, GT_EBADREQ, "%s", err.msg);
        return;
    }
    if (fs && *fs && (gt_fieldsel_parse(fs, &fsel, &err))) {
        gt_selector_free(lsel);
        gt_err_prefix(&err, "fieldSelector");
        gt_req_error(r, GT_EBADREQ, "%s", err.msg);
        return;
    }
    if (is_watch && rvs && *rvs && gt_parse_rev(rvs, &rev)) {
        gt_selector_free(lsel);
        gt_fieldsel_free(fsel);
        gt_req_error(r, GT_EBADREQ, "resourceVersion: must be a decimal revision, not \"%.64s\"",
                     rvs);
        return;
    }
    if (is_watch) {
        r->mverb = GT_MV_WATCH;
        gt_watch_start(r, rev, lsel, fsel); /* takes the selectors */
        return;
    }
    r->mverb = GT_MV_LIST;
    int64_t limit = 0;
    const char *after = NULL;
    if (list_page_params(q, &limit, &after, &err)) {
        gt_req_error_err(r, &err);
    } else {
        list_objects(r, lsel, fsel, limit, after);
    }
    gt_selector_free(lsel);
    gt_fieldsel_free(fsel);
}

/* ---- dispatch ---- */

static enum gt_metrics_verb verb_of(enum evhttp_cmd_type cmd)
{
    switch (cmd) {
    case EVHTTP_REQ_GET:
        return GT_MV_GET;
    case EVHTTP_REQ_POST:
        return GT_MV_CREATE;
    case EVHTTP_REQ_PUT:
        return GT_MV_UPDATE;
    case EVHTTP_REQ_DELETE:
        return GT_MV_DELETE;
    default:
        return GT_MV_OTHER;
    }
}

static void method_not_allowed(struct gt_req *r, const char *path)
{
    gt_req_error(r, GT_EMETHOD, "method not allowed on %.200s", path);
}

/* The query of uri into q (the caller clears it); -1, answered 400, when
 * malformed. */
static int parse_query(struct gt_req *r, const struct evhttp_uri *uri, struct evkeyvalq *q)
{
    TAILQ_INIT(q);
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    if (query && evhttp_parse_query_str(query, q) != 0) {
        gt_req_error(r, GT_EBADREQ, "malformed query string");
        return -1;
    }
    return 0;
}

/* A route the controllers answer (their serve hook). */
static void serve_ctl(struct gt_req *r, enum evhttp_cmd_type cmd, const struct evkeyvalq *q)
{
    if (!r->s->ctl_hooks || !r->s->ctl_hooks->serve) {
        gt_req_error(r, GT_ENOTFOUND, "this server keeps no telemetry or ledger");
        return;
    }
    r->s->ctl_hooks->serve(r->s->ctl, r, (int)cmd, q);
}

static void serve_api(struct gt_req *r, enum evhttp_cmd_type cmd, const char *path,
                      const struct evkeyvalq *q);

/* A read that waited for the cache goes on: served as it came. */
static void resume_read(struct gt_req *r)
{
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(r->req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    struct evkeyvalq q;
    if (parse_query(r, uri, &q) != 0) {
        return;
    }
    serve_api(r, EVHTTP_REQ_GET, path ? path : "/", &q);
    evhttp_clear_headers(&q);
}

/* A get or a list (not a watch, which starts from the store's history)
 * waits until the cache holds the revision it must see (readcache.c):
 * true when r was answered or parked. */
static bool read_waits(struct gt_req *r, enum evhttp_cmd_type cmd, const struct evkeyvalq *q)
{
    const struct gt_route *rt = &r->route;
    const char *watch = evhttp_find_header(q, "watch");
    bool is_read =
        cmd == EVHTTP_REQ_GET && (rt->type == GT_ROUTE_COLLECTION
                                      ? !(watch && (!strcmp(watch, "true") || !strcmp(watch, "1")))
                                      : !rt->sub[0] || !strcmp(rt->sub, "status"));
    if (!is_read || !r->s->rcache || r->read_ready) {
        return false;
    }
    int64_t need = 0;
    bool from_client = false;
    struct gt_err err = {0};
    if (gt_read_need(r->s, evhttp_find_header(q, "resourceVersion"), &need, &from_client, &err)) {
        gt_req_error_err(r, &err);
        return true;
    }
    return gt_read_wait(r->s, r, need, from_client, resume_read);
}

static void serve_api(struct gt_req *r, enum evhttp_cmd_type cmd, const char *path,
                      const struct evkeyvalq *q)
{
    const struct gt_route *rt = &r->route;
    if (read_waits(r, cmd, q)) {
        return;
    }
    if (rt->type == GT_ROUTE_COLLECTION) {
        if (cmd == EVHTTP_REQ_GET) {
            read_collection(r, q);
        } else if (cmd == EVHTTP_REQ_POST && !rt->all_projects) {
            gt_write_create(r);
        } else {
            method_not_allowed(r, path);
        }
        return;
    }
    if (!strcmp(rt->sub, "binding")) {
        if (cmd == EVHTTP_REQ_POST) {
            gt_write_binding(r);
        } else {
            method_not_allowed(r, path);
        }
        return;
    }
    if (!strcmp(rt->sub, "scalars") || !strcmp(rt->sub, "history") ||
        !strcmp(rt->sub, "telemetry") || !strcmp(rt->sub, "secrets")) {
        serve_ctl(r, cmd, q);
        return;
    }
    if (!strcmp(rt->sub, "exec")) {
        if (cmd == EVHTTP_REQ_POST) {
            gt_logproxy_exec(r);
        } else {
            method_not_allowed(r, path);
        }
        return;
    }
    if (!strcmp(rt->sub, "log")) {
        if (cmd == EVHTTP_REQ_GET) {
            gt_logproxy_serve(r, q);
        } else {
            method_not_allowed(r, path);
        }
        return;
    }
    if (cmd == EVHTTP_REQ_GET) {
        get_object(r);
    } else if (cmd == EVHTTP_REQ_PUT) {
        gt_write_update(r);
    } else if (cmd == EVHTTP_REQ_DELETE && !rt->sub[0]) {
        const char *rvs = evhttp_find_header(q, "resourceVersion");
        int64_t rev = 0;
        if (rvs && gt_parse_rev(rvs, &rev)) {
            gt_req_error(r, GT_EBADREQ,
                         "resourceVersion: must be a decimal revision, not "
                         "\"%.64s\"",
                         rvs);
            return;
        }
        gt_write_delete(r, rev);
    } else {
        method_not_allowed(r, path);
    }
}

static void serve_plain(struct gt_req *r, enum evhttp_cmd_type cmd, const char *path)
{
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        method_not_allowed(r, path);
        return;
    }
    if (r->route.type == GT_ROUTE_METRICS) {
        /* built in the reply's buffer, a block at a time: the state series
         * are a few KiB per job and task */
        struct evbuffer *body = evhttp_request_get_output_buffer(r->req);
        struct gt_buf b;
        gt_buf_init(&b);
        gt_metrics_render(&r->s->metrics, &b);
        gt_server_leader_metrics(r->s, &b);
        gt_rcache_metrics(r->s->rcache, &b);
        if (r->s->ctl_hooks && r->s->ctl_hooks->metrics) {
            r->s->ctl_hooks->metrics(r->s->ctl, &b, body);
        }
        gt_req_reply_as(r, 200, "text/plain; version=0.0.4", b.data, b.len);
        gt_buf_fini(&b);
        return;
    }
    if (r->route.type == GT_ROUTE_READYZ) {
        gt_server_readyz(r);
        return;
    }
    gt_req_reply_as(r, 200, "text/plain", "ok\n", 3);
}

/* GET whoami: the authenticated user, as kubectl auth whoami shows it
 * (Kubernetes' SelfSubjectReview status.userInfo, flattened). */
static void whoami(struct gt_req *r, enum evhttp_cmd_type cmd, const char *path)
{
    if (cmd != EVHTTP_REQ_GET) {
        method_not_allowed(r, path);
        return;
    }
    json_t *groups = json_array();
    for (size_t i = 0; i < r->user->n_groups; i++) {
        json_array_append_new(groups, json_string(r->user->groups[i]));
    }
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:I, s:o}", "apiVersion", GT_API_VERSION, "kind", "UserInfo",
                  "username", r->user->name, "uid", (json_int_t)r->user->uid, "groups", groups);
    gt_req_reply_json(r, o);
}

/* GET /version: gantryd's release and API version, as kubectl's /version
 * answers the server's (any authenticated user). */
static void version(struct gt_req *r, enum evhttp_cmd_type cmd, const char *path)
{
    if (cmd != EVHTTP_REQ_GET) {
        method_not_allowed(r, path);
        return;
    }
    gt_req_reply_json(r,
                      json_pack("{s:s, s:s}", "version", GT_VERSION, "apiVersion", GT_API_VERSION));
}

/* GET clusterinfo: what the cluster offers every client, from gantryd's
 * flags: storageRoots (--storage-root), images [{name, image}] (--image
 * NAME=REF, in flag order), replicas (--replica-url, in flag order: where
 * the dashboard fails over to) and registry (--registry HOST:PORT, when
 * given: agents pull from it with their node token). */
static void clusterinfo(struct gt_req *r, enum evhttp_cmd_type cmd, const char *path)
{
    if (cmd != EVHTTP_REQ_GET) {
        method_not_allowed(r, path);
        return;
    }
    const struct gt_server_config *cfg = r->s->cfg;
    json_t *roots = json_array();
    for (size_t i = 0; i < cfg->storage_roots.n; i++) {
        json_array_append_new(roots, json_string(cfg->storage_roots.items[i]));
    }
    json_t *images = json_array();
    for (size_t i = 0; i < cfg->images.n; i++) {
        const char *v = cfg->images.items[i];
        const char *eq = strchr(v, '='); /* checked at start */
        json_array_append_new(
            images, json_pack("{s:s%, s:s}", "name", v, (size_t)(eq - v), "image", eq + 1));
    }
    json_t *replicas = json_array();
    for (size_t i = 0; i < cfg->replica_urls.n; i++) {
        json_array_append_new(replicas, json_string(cfg->replica_urls.items[i]));
    }
    json_t *o =
        json_pack("{s:s, s:s, s:o, s:o, s:o}", "apiVersion", GT_API_VERSION, "kind", "ClusterInfo",
                  "storageRoots", roots, "images", images, "replicas", replicas);
    if (cfg->registry) {
        json_object_set_new(o, "registry", json_string(cfg->registry));
    }
    gt_req_reply_json(r, o);
}

/* GET registry/token: Basic authentication, not a bearer token (registry.c). */
static void registry_token(struct gt_req *r, enum evhttp_cmd_type cmd, const char *path,
                           const struct evhttp_uri *uri)
{
    if (cmd != EVHTTP_REQ_GET) {
        method_not_allowed(r, path);
        return;
    }
    struct evkeyvalq q;
    if (parse_query(r, uri, &q) != 0) {
        return;
    }
    json_t *o = gt_registry_token(r, &q);
    if (o) {
        gt_req_reply_json(r, o);
    }
    evhttp_clear_headers(&q);
}

/* Paths a page from another replica may call: the API and the health
 * endpoints (not the dashboard's files, nor the notebook proxy). */
static bool cors_path(const char *path)
{
    return !strncmp(path, GT_API_GROUP_PREFIX "/", strlen(GT_API_GROUP_PREFIX) + 1) ||
           !strcmp(path, "/readyz") || !strcmp(path, "/healthz") || !strcmp(path, "/version");
}

/* Cross-origin requests from the dashboard as another replica served it
 * (--replica-url; docs/api.md "Cross-origin requests"). With replicas
 * configured every answer says Vary: Origin; an Origin that is one of them
 * gets it echoed in Access-Control-Allow-Origin (never "*": only gantry's
 * own pages may read what a bearer token fetched), and its preflight
 * (OPTIONS with Access-Control-Request-Method) is answered 204 with the
 * methods and the headers the dashboard sends. Another origin gets no CORS
 * header, so the browser keeps every answer from its page, and its
 * preflight is answered 403. True when r was answered. */
static bool cors(struct gt_req *r, enum evhttp_cmd_type cmd)
{
    const struct gt_config_list *urls = &r->s->cfg->replica_urls;
    if (!urls->n) {
        return false;
    }
    struct evkeyvalq *in = evhttp_request_get_input_headers(r->req);
    struct evkeyvalq *out = evhttp_request_get_output_headers(r->req);
    evhttp_add_header(out, "Vary", "Origin");
    const char *origin = evhttp_find_header(in, "Origin");
    bool allowed = false;
    for (size_t i = 0; origin && !allowed && i < urls->n; i++) {
        allowed = !strcasecmp(origin, urls->items[i]);
    }
    if (allowed) {
        evhttp_add_header(out, "Access-Control-Allow-Origin", origin);
    }
    if (cmd != EVHTTP_REQ_OPTIONS || !origin ||
        !evhttp_find_header(in, "Access-Control-Request-Method")) {
        return false;
    }
    if (!allowed) {
        gt_req_error(r, GT_EFORBIDDEN, "origin %.200s is not a gantry replica (--replica-url)",
                     origin);
        return true;
    }
    evhttp_add_header(out, "Access-Control-Allow-Methods", "GET, POST, PUT, DELETE");
    evhttp_add_header(out, "Access-Control-Allow-Headers", "Authorization, Content-Type");
    evhttp_add_header(out, "Access-Control-Max-Age", "600");
    gt_req_reply_as(r, 204, "text/plain; charset=utf-8", "", 0);
    return true;
}

void gt_http_handle(struct evhttp_request *req, void *arg)
{
    struct gt_server *s = arg;
    struct gt_req *r = gt_xcalloc(1, sizeof(*r));
    r->s = s;
    r->req = req;
    r->start_ns = gt_now_ns();
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    r->mverb = verb_of(cmd);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path || !*path) {
        path = "/";
    }
    if (cors_path(path) && cors(r, cmd)) {
        return;
    }
    if (s->draining) {
        gt_req_error(r, GT_ESTORE, "gantryd is shutting down");
        return;
    }
    if (s->ctl_hooks && s->ctl_hooks->proxy && s->ctl_hooks->proxy(s->ctl, r, path)) {
        return;
    }
    if (gt_ui_path(path)) {
        gt_ui_serve(r, cmd, path);
        return;
    }
    struct gt_err err = {0};
    if (gt_route_parse(path, &r->route, &err)) {
        gt_req_error_err(r, &err);
        return;
    }
    if (r->route.type == GT_ROUTE_HEALTHZ || r->route.type == GT_ROUTE_READYZ ||
        r->route.type == GT_ROUTE_METRICS) {
        serve_plain(r, cmd, path);
        return;
    }
    if (r->route.type == GT_ROUTE_REGISTRY_TOKEN) {
        registry_token(r, cmd, path, uri);
        return;
    }
    if (mpi_exec(r, cmd)) {
        return;
    }
    r->user = authenticate(s, req);
    if (!r->user) {
        gt_req_error(r, GT_EUNAUTH, "a valid bearer token is required");
        return;
    }
    struct evkeyvalq q;
    if (parse_query(r, uri, &q) != 0) {
        return;
    }
    if (r->route.type == GT_ROUTE_WHOAMI) {
        whoami(r, cmd, path);
    } else if (r->route.type == GT_ROUTE_VERSION) {
        version(r, cmd, path);
    } else if (r->route.type == GT_ROUTE_CLUSTERINFO) {
        clusterinfo(r, cmd, path);
    } else if (r->route.type == GT_ROUTE_USAGE || r->route.type == GT_ROUTE_USAGE_RECORDS ||
               r->route.type == GT_ROUTE_JOB_STATS || r->route.type == GT_ROUTE_NODE_STATS) {
        serve_ctl(r, cmd, &q);
    } else if (r->route.type == GT_ROUTE_FAULT) {
        if (!s->cfg->enable_fault_injection) {
            gt_req_error(r, GT_ENOTFOUND, "fault injection is disabled");
        } else if (cmd != EVHTTP_REQ_POST) {
            method_not_allowed(r, path);
        } else if (!r->user->admin) {
            gt_req_error(r, GT_EFORBIDDEN, "fault injection is for admins");
        } else {
            r->body = json_pack("{s:s?, s:s?}", "point", evhttp_find_header(&q, "point"), "nth",
                                evhttp_find_header(&q, "nth"));
            gt_server_fault(r);
        }
    } else {
        serve_api(r, cmd, path, &q);
    }
    evhttp_clear_headers(&q);
}
