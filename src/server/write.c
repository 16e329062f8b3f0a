/*
 * Writes: create (POST), replace (PUT), replace status (PUT .../status),
 * delete and bind (POST tasks/X/binding). Each checks access, validates
 * and decodes the object once, has the controllers admit it through their
 * hooks (struct gt_ctl_hooks: a Job's or Task's hostPath volumes against
 * --storage-root, a Job's runAsUser; a Job's or Task's soft delete; the
 * refusal to delete a Project that still holds objects or a Volume in use;
 * a Volume's disk image made before its create is stored), sets
 * what the server owns (uid, creationTimestamp, creator, status) and
 * queues one store write; the reply is sent only from the store's done
 * callback, i.e. once the write is durable. A client that went away before
 * then gets nothing: libevent frees a request whose connection is gone when
 * it is answered.
 *
 * Replace and delete without a client resourceVersion are still written
 * conditionally on the revision that was read (so a status written in
 * between is never lost) and retried a few times on conflict. A replace
 * that changes nothing writes nothing: it is answered with the stored
 * object at its revision.
 *
 * A create records no Event (nor does Kubernetes): a Job's Created
 * condition says it, and an Event write per create was a fifth of the
 * durable writes each Job costs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "server/cache.h"
#include "server/fault.h"
#include "server/reply.h"
#include "server/server_int.h"
#include "server/storeio.h"
#include "server/write.h"

#define MAX_RETRIES 5

enum wop { W_CREATE, W_UPDATE, W_DELETE, W_BINDING };

static const char *const server_fields[] = {"uid", "creationTimestamp", "creator"};

/* Parse the request body into r->body: 0, or replies 400 and returns -1. */
static int read_body(struct gt_req *r)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(r->req);
    size_t len = evbuffer_get_length(in);
    if (len == 0) {
        gt_req_error(r, GT_EBADREQ, "request body: required (a JSON object)");
        return -1;
    }
    const char *text = (const char *)evbuffer_pullup(in, -1);
    struct gt_err err = {0};
    if (gt_api_parse(text, len, &r->body, &err)) {
        gt_req_error(r, GT_EBADREQ, "%s", err.msg);
        return -1;
    }
    return 0;
}

static const char *route_project(const struct gt_route *rt)
{
    return rt->kind->namespaced ? rt->project : NULL;
}

/* metadata.project and metadata.name of the body against the path: fills
 * in what is missing; 0, or replies 400 and returns -1. */
static int check_path_agreement(struct gt_req *r, json_t *obj, bool name_from_path)
{
    const struct gt_route *rt = &r->route;
    json_t *md = json_object_get(obj, "metadata");
    if (!json_is_object(md)) {
        if (md || !name_from_path) {
            return 0; /* validation names the problem */
        }
        md = json_object();
        json_object_set_new(obj, "metadata", md);
    }
    if (rt->kind->namespaced) {
        json_t *p = json_object_get(md, "project");
        if (!p) {
            json_object_set_new(md, "project", json_string(rt->project));
        } else if (!json_is_string(p) || strcmp(json_string_value(p), rt->project) != 0) {
            gt_req_error(r, GT_EBADREQ,
                         "metadata.project: does not match the project in the path (%s)",
                         rt->project);
            return -1;
        }
    }
    if (name_from_path) {
        json_t *n = json_object_get(md, "name");
        if (!n) {
            json_object_set_new(md, "name", json_string(rt->name));
        } else if (!json_is_string(n) || strcmp(json_string_value(n), rt->name) != 0) {
            gt_req_error(r, GT_EBADREQ, "metadata.name: does not match the name in the path (%s)",
                         rt->name);
            return -1;
        }
    }
    return 0;
}

/* Authorize a write of r's kind; the body supplies a Project's department
 * and an Event's project; stored (NULL: not read yet) a Task's node for a
 * /status write. 0, or replies 403 (naming NodeRestriction where that rule
 * refused) and returns -1. */
static int authorize_write(struct gt_req *r, enum gt_server_verb verb, const json_t *body,
                           const char *name, const json_t *stored)
{
    const struct gt_route *rt = &r->route;
    struct gt_server_authz az = {.verb = verb,
                                 .kind = rt->kind->kind,
                                 .sub = rt->sub[0] ? rt->sub : NULL,
                                 .name = name,
                                 .project = route_project(rt)};
    if (rt->kind->kind == GT_KIND_PROJECT) {
        az.project = name;
        az.department = json_string_value(gt_json_path(body, "spec.department"));
    } else if (rt->kind->kind == GT_KIND_EVENT && body) {
        az.project = gt_access_project_of(rt->kind, body);
    }
    if (stored) {
        const char *bound = json_string_value(gt_json_path(stored, "spec.nodeName"));
        az.bound_node = bound ? bound : "";
    }
    if (gt_server_authorize(r->s->access, r->user, &az) == 0) {
        return 0;
    }
    static const char *const verbs[] = {"read", "create", "update", "delete"};
    bool bound = gt_server_user_node(r->user) != NULL;
    gt_req_error(r, GT_EFORBIDDEN, "user \"%s\" cannot %s %s%s%s%s%s%s%s", r->user->name,
                 verbs[verb], rt->kind->plural, az.sub ? "/" : "", az.sub ? az.sub : "",
                 name ? " \"" : "", name ? name : "", name ? "\"" : "",
                 bound ? " (" GT_NODE_RESTRICTION_RULE ")"
                       : (rt->kind->namespaced ? " in that project" : ""));
    return -1;
}

static void write_done(int rc, int64_t rev, const struct gt_err *err, void *arg);

/* Encode r->obj and queue op; replies itself on immediate failure. */
static void submit(struct gt_req *r, enum gt_store_op op, int64_t expected_rev)
{
    size_t len = 0;
    const char *text = NULL;
    if (op != GT_STORE_DELETE) { /* a delete keeps the stored text to answer with */
        free(r->value);
        r->value = gt_api_encode(r->obj, &len);
        text = r->value;
    }
    r->submit_ns = gt_now_ns();
    int rc = gt_server_write(r->s, false, op, r->key, text, len, expected_rev, write_done, r);
    if (rc && r->prepared) {
        r->s->ctl_hooks->created(r->s->ctl, r->route.kind->kind, r->key, rc);
    }
    if (rc) {
        gt_req_error(r, rc, "%s",
                     rc == GT_EFSYNC ? "the store failed (fsync); gantryd is exiting"
                                     : "the store cannot take writes");
    }
}

static void reply_stored(struct gt_req *r, int http_code, const char *text, size_t len, int64_t rev)
{
    struct gt_buf b;
    gt_buf_init(&b);
    gt_render_object(r->s, &b, r->route.kind, text, len, rev);
    gt_buf_puts(&b, "\n");
    gt_req_reply(r, http_code, b.data, b.len);
    gt_buf_fini(&b);
}

/* ---- create ---- */

static void set_server_metadata(struct gt_req *r, json_t *md)
{
    char uid[40], ts[32];
    gt_uuid4(&r->s->uuids, uid, sizeof(uid));
    gt_time_format(gt_now_ms(), ts, sizeof(ts));
    json_object_set_new(md, "uid", json_string(uid));
    json_object_set_new(md, "creationTimestamp", json_string(ts));
    json_t *creator = json_object();
    gt_obj_set_str(creator, "user", r->user->name);
    json_object_set_new_nocheck(creator, "uid", json_integer((json_int_t)r->user->uid));
    json_object_set_new(md, "creator", creator);
}

static void set_created_condition(json_t *obj)
{
    char ts[32];
    gt_time_format(gt_now_ms(), ts, sizeof(ts));
    json_t *c = json_object();
    gt_obj_set_str(c, "type", "Created");
    gt_obj_set_str(c, "status", "True");
    gt_obj_set_str(c, "reason", "Created");
    gt_obj_set_str(c, "message", "job created");
    gt_obj_set_str(c, "lastTransitionTime", ts);
    json_t *conds = json_array();
    json_array_append_new(conds, c);
    json_t *st = json_object();
    json_object_set_new_nocheck(st, "conditions", conds);
    json_object_set_new(obj, "status", st);
}

/* Admission of obj, the object a create (create: true) or an update
 * writes: validated (canonicalized in place) and decoded once, without
 * the gantry secret references only controllers write, then checked by
 * the controllers. 0, or GT_EINVAL with err naming the field. */
static int admit(struct gt_req *r, json_t *obj, bool create, struct gt_err *err)
{
    struct gt_api_object *t = NULL;
    int rc = gt_api_decode(r->route.kind->kind, obj, &t, err);
    rc = rc ? rc : gt_api_check_no_secret_refs(obj, err);
    const struct gt_ctl_hooks *h = r->s->ctl_hooks;
    if (rc == 0 && h) {
        rc = h->admit(r->s->ctl, t, create, r->user, err);
    }
    gt_api_object_free(t); /* before obj changes: it borrows from it */
    return rc;
}

/* A kubeflow.org training job (TFJob, PyTorchJob, ...) POSTed to a jobs collection becomes
 * the gantry Job it converts to, and a serving.kserve.io InferenceService
 * POSTed to an inferenceservices collection gantry's InferenceService, (as `gantry apply` sends
 * it), its metadata.namespace (default: the project in the path) the project. 0, or replies 422
 * naming the manifest's field and returns -1. */
static int kubeflow_body(struct gt_req *r)
{
    enum gt_kind k = r->route.kind->kind;
    bool kubeflow = k == GT_KIND_JOB && gt_api_kubeflow_is(r->body);
    bool kserve = k == GT_KIND_INFERENCESERVICE && gt_api_kserve_is(r->body);
    if (!kubeflow && !kserve) {
        return 0;
    }
    json_t *md = json_object_get(r->body, "metadata");
    if (json_is_object(md) && !json_object_get(md, "namespace")) {
        json_object_set_new(md, "namespace", json_string(r->route.project));
    }
    json_t *job = NULL;
    struct gt_err err = {0};
    if (kubeflow ? gt_api_kubeflow_convert(r->body, &job, &err)
                 : gt_api_kserve_convert(r->body, &job, &err)) {
        gt_req_error_err(r, &err);
        return -1;
    }
    json_decref(r->body);
    r->body = job;
    return 0;
}

/* A create's preparation (a Volume's disk image) is done: store it. */
static void prepared(void *arg, int rc, const struct gt_err *err)
{
    struct gt_req *r = arg;
    if (rc) {
        gt_req_error_err(r, err);
        return;
    }
    if (r->s->draining || r->s->failed) {
        r->s->ctl_hooks->created(r->s->ctl, r->route.kind->kind, r->key, GT_ESTORE);
        gt_req_error(r, GT_ESTORE, "the store cannot take writes");
        return;
    }
    submit(r, GT_STORE_CREATE, 0);
}

void gt_write_create(struct gt_req *r)
{
    const struct gt_route *rt = &r->route;
    if (read_body(r) || kubeflow_body(r) || check_path_agreement(r, r->body, false)) {
        return;
    }
    json_t *obj = r->body;
    const char *name = gt_obj_name(obj);
    if (authorize_write(r, GT_VERB_CREATE, obj, name, NULL)) {
        return;
    }
    if (rt->kind->namespaced && !gt_server_access_project_department(r->s->access, rt->project)) {
        gt_req_error(r, GT_ENOTFOUND,
                     "projects \"%s\" not found: create it first (kind: Project with "
                     "spec.department, e.g. gantry apply -f examples/project.yaml) or name an "
                     "existing project with -p or metadata.namespace",
                     rt->project);
        return;
    }
    struct gt_err err = {0};
    const struct gt_ctl_hooks *h = r->s->ctl_hooks;
    if (h && h->name && h->name(r->s->ctl, rt->kind->kind, route_project(rt), obj, &err)) {
        gt_req_error_err(r, &err);
        return;
    }
    json_t *md = json_object_get(obj, "metadata");
    if (json_is_object(md)) {
        json_object_del(md, "resourceVersion");
        json_object_del(md, "deletionTimestamp");
        set_server_metadata(r, md);
    }
    json_object_del(obj, "status");
    if (admit(r, obj, true, &err)) {
        gt_req_error_err(r, &err);
        return;
    }
    if (rt->kind->kind == GT_KIND_JOB) {
        set_created_condition(obj);
    }
    r->obj = json_incref(obj);
    snprintf(r->route.name, sizeof(r->route.name), "%s", gt_obj_name(obj));
    r->key = gt_route_key(rt->kind, route_project(rt), r->route.name);
    int rc = h ? h->prepare(r->s->ctl, rt->kind->kind, r->key, r->obj, prepared, r, &err) : 0;
    if (rc < 0) {
        gt_req_error_err(r, &err);
    } else if (rc == 0) {
        submit(r, GT_STORE_CREATE, 0);
    } else {
        r->prepared = true;
    }
}

/* ---- update and status ---- */

/* The status a /status PUT carries: the body's "status" when it is a whole
 * object, else the body itself. Borrowed, or NULL. */
static json_t *status_of_body(json_t *body)
{
    if (json_object_get(body, "status") || json_object_get(body, "kind") ||
        json_object_get(body, "apiVersion") || json_object_get(body, "metadata")) {
        return json_object_get(body, "status");
    }
    return body;
}

/* Server-owned metadata may not change: copy it from the stored object.
 * 0, or replies 422 and returns -1. */
static int keep_server_metadata(struct gt_req *r, json_t *md, const json_t *stored_md)
{
    for (size_t i = 0; i < GT_ARRAY_LEN(server_fields); i++) {
        const char *f = server_fields[i];
        json_t *now = json_object_get(md, f);
        json_t *was = json_object_get(stored_md, f);
        if (now && (!was || !json_equal(now, was))) {
            gt_req_error(r, GT_EINVAL, "metadata.%s: field is immutable", f);
            return -1;
        }
        if (was) {
            json_object_set(md, f, was);
        }
    }
    json_object_del(md, "resourceVersion");
    json_t *del = json_object_get(stored_md, "deletionTimestamp");
    if (del) {
        json_object_set(md, "deletionTimestamp", del);
    } else {
        json_object_del(md, "deletionTimestamp");
    }
    return 0;
}

/* Has the stored task ended (Succeeded or Failed)? Then replies: its status never changes. */
static bool task_ended(struct gt_req *r, json_t *stored)
{
    struct gt_api_task *t = gt_api_task_new(stored);
    enum gt_task_phase p = (enum gt_task_phase)t->status.phase;
    gt_api_task_free(t);
    if (!gt_api_task_phase_terminal(p)) {
        return false;
    }
    gt_req_error(r, GT_ECONFLICT, "tasks \"%s\" has ended (%s); its status never changes",
                 r->route.name, gt_api_task_phase_name(p));
    return true;
}

/* Build r->obj from the stored object and the body. 0, or replies. */
static int merge_update(struct gt_req *r, json_t *stored)
{
    const struct gt_route *rt = &r->route;
    struct gt_err err = {0};
    if (!strcmp(rt->sub, "status")) {
        json_t *st = json_deep_copy(status_of_body(r->body));
        if (!st) {
            gt_req_error(r, GT_EINVAL, "status: required");
            return -1;
        }
        if (rt->kind->kind == GT_KIND_NODE && json_is_object(st)) {
            json_object_del(st, "allocated"); /* computed on reads */
        }
        if (rt->kind->kind == GT_KIND_TASK && task_ended(r, stored)) {
            json_decref(st);
            return -1;
        }
        if (gt_api_validate_status(rt->kind->kind, st, &err)) {
            json_decref(st);
            gt_req_error_err(r, &err);
            return -1;
        }
        r->obj = json_incref(stored);
        json_object_set_new(r->obj, "status", st);
        return 0;
    }
    json_t *obj = json_deep_copy(r->body);
    json_t *md = json_object_get(obj, "metadata");
    if (json_is_object(md) && keep_server_metadata(r, md, json_object_get(stored, "metadata"))) {
        json_decref(obj);
        return -1;
    }
    json_t *st = json_object_get(stored, "status");
    if (st) {
        json_object_set(obj, "status", st);
    } else {
        json_object_del(obj, "status");
    }
    if (admit(r, obj, false, &err)) {
        json_decref(obj);
        gt_req_error_err(r, &err);
        return -1;
    }
    r->obj = obj;
    return 0;
}

/* The object at r->key for an update: a copy of the controllers' cached
 * object (every kind but Events), which spares a store read and a parse;
 * shallow (its members shared with the cached object, which never
 * changes) for a caller that only replaces top-level members, as a
 * /status write does, else deep.
 * The cache holds an object at its latest revision once that write's
 * completion has run on the loop; right after a commit it may be one
 * behind, and the conditional write then fails and its retry (after that
 * completion) finds it current. A resourceVersion from the client that
 * the cache does not have yet is checked against the store. NULL when the
 * cache has no such object. */
static json_t *cached_copy(struct gt_req *r, bool shallow)
{
    const struct gt_cobj *co = gt_ctl_get(r->s->ctl, r->route.kind->kind, r->key);
    if (!co || (r->client_rv && r->client_rv != co->rev)) {
        return NULL;
    }
    r->stored_rev = co->rev;
    return shallow ? json_copy(co->obj) : json_deep_copy(co->obj);
}

/* The stored object at r->key (new reference) and its revision in
 * r->stored_rev; with_text: its stored text in r->value too (a delete
 * answers with it); shallow: see cached_copy. Replies and returns -1
 * when it is missing or the client's resourceVersion is not the stored
 * one. */
static int read_stored(struct gt_req *r, json_t **stored, bool with_text, bool shallow)
{
    if (!with_text && (*stored = cached_copy(r, shallow)) != NULL) {
        return 0;
    }
    struct gt_store_kv kv = {0};
    struct gt_err err = {0};
    int rc = gt_server_get(r->s, r->key, &kv, &err);
    if (rc == GT_ENOTFOUND) {
        gt_req_error(r, GT_ENOTFOUND, "%s \"%s\" not found", r->route.kind->plural, r->route.name);
        return -1;
    }
    if (rc) {
        gt_req_error_err(r, &err);
        return -1;
    }
    r->stored_rev = kv.mod_rev;
    if (r->client_rv && r->client_rv != kv.mod_rev) {
        gt_store_kv_fini(&kv);
        gt_req_error(r, GT_ECONFLICT,
                     "Operation cannot be fulfilled on %s \"%s\": the object has been modified; "
                     "please apply your changes to the latest version and try again",
                     r->route.kind->plural, r->route.name);
        return -1;
    }
    *stored = json_loadb(kv.value, kv.value_len, 0, NULL);
    free(r->value);
    r->value = gt_xstrndup(kv.value, kv.value_len);
    gt_store_kv_fini(&kv);
    if (!*stored) {
        gt_req_error(r, GT_EINTERNAL, "stored object is not JSON");
        return -1;
    }
    return 0;
}

/* A task's /status write is for the run the task is now. A restart or
 * requeue replaces a Task in place (same name, new uid, no node:
 * jobctl.c), so a late write from the old run's node (one cut off past the
 * node grace, or stopped) would otherwise land on the new run: Running or
 * ended with no node, which no agent ever reports again. These refusals
 * answer 409 with a message that starts with the field (details.field,
 * which gantlet reads: it drops the stale run). */

/* The body's metadata.uid, when it names one, is the stored task's. 0, or
 * replies (409; 422 for a uid that is not a string) and returns -1. */
static int check_task_uid(struct gt_req *r, const json_t *stored)
{
    const json_t *uid = gt_json_path(r->body, "metadata.uid");
    const char *now = json_string_value(gt_json_path(stored, "metadata.uid"));
    if (!uid) {
        return 0;
    }
    if (!json_is_string(uid)) {
        gt_req_error(r, GT_EINVAL, "metadata.uid: must be a string");
        return -1;
    }
    if (!now || strcmp(json_string_value(uid), now) != 0) {
        gt_req_error(r, GT_ECONFLICT,
                     "metadata.uid: tasks \"%s\" is now another run (uid %s), not %.64s: the "
                     "status of a replaced run is not taken",
                     r->route.name, now ? now : "none", json_string_value(uid));
        return -1;
    }
    return 0;
}

/* The stored task is bound to a node (whichever: NodeRestriction decides
 * that for a node's own credential). 0, or replies 409 and returns -1. */
static int check_task_bound(struct gt_req *r, const json_t *stored)
{
    const char *node = json_string_value(gt_json_path(stored, "spec.nodeName"));
    if (!node || !*node) {
        gt_req_error(r, GT_ECONFLICT,
                     "spec.nodeName: tasks \"%s\" is bound to no node: only the node it is "
                     "bound to writes its status",
                     r->route.name);
        return -1;
    }
    return 0;
}

static void update_attempt(struct gt_req *r)
{
    json_t *stored = NULL;
    /* a /status write replaces the status member only (merge_update) and
     * reads the rest; a whole-object update is admitted (canonicalized in
     * place) with the stored status in it, so gets its own copy */
    if (read_stored(r, &stored, false, !strcmp(r->route.sub, "status"))) {
        return;
    }
    /* a task's /status write: for its current run, then NodeRestriction
     * now that the task's node is known, and for a bound task */
    if (r->route.kind->kind == GT_KIND_TASK && !strcmp(r->route.sub, "status") &&
        (check_task_uid(r, stored) ||
         authorize_write(r, GT_VERB_UPDATE, r->body, r->route.name, stored) ||
         check_task_bound(r, stored))) {
        json_decref(stored);
        return;
    }
    json_decref(r->obj);
    r->obj = NULL;
    int rc = merge_update(r, stored);
    bool same = rc == 0 && strcmp(r->route.sub, "status") != 0 && json_equal(r->obj, stored);
    json_decref(stored);
    if (same) {
        /* nothing to write: answered as stored, its revision kept (what
         * `gantry apply` reports as "unchanged") */
        size_t len = 0;
        free(r->value);
        r->value = gt_api_encode(r->obj, &len);
        reply_stored(r, 200, r->value, len, r->stored_rev);
    } else if (rc == 0) {
        submit(r, GT_STORE_UPDATE, r->stored_rev);
    }
}

static int body_rev(struct gt_req *r, int64_t *rev)
{
    *rev = 0;
    json_t *v = gt_json_path(r->body, "metadata.resourceVersion");
    if (!v) {
        return 0;
    }
    if (json_is_integer(v) && json_integer_value(v) > 0) {
        *rev = json_integer_value(v);
        return 0;
    }
    if (json_is_string(v) && gt_parse_rev(json_string_value(v), rev) == 0) {
        return 0;
    }
    gt_req_error(r, GT_EBADREQ, "metadata.resourceVersion: must be a decimal revision");
    return -1;
}

void gt_write_update(struct gt_req *r)
{
    const struct gt_route *rt = &r->route;
    if (read_body(r)) {
        return;
    }
    bool whole = strcmp(rt->sub, "status") != 0 || status_of_body(r->body) != r->body;
    if (whole && check_path_agreement(r, r->body, true)) {
        return;
    }
    if (authorize_write(r, GT_VERB_UPDATE, r->body, rt->name, NULL)) {
        return;
    }
    if (rt->kind->kind == GT_KIND_TASK && !strcmp(rt->sub, "status") && !r->user->node) {
        gt_req_error(r, GT_EFORBIDDEN,
                     "user \"%s\" cannot update tasks/status: only node agents may", r->user->name);
        return;
    }
    int64_t rev = 0;
    if (body_rev(r, &rev)) {
        return;
    }
    r->key = gt_route_key(rt->kind, route_project(rt), rt->name);
    r->client_rv = rev;
    update_attempt(r);
}

/* ---- delete ---- */

static void delete_attempt(struct gt_req *r)
{
    json_t *stored = NULL;
    if (read_stored(r, &stored, true, false)) {
        return;
    }
    if (r->route.kind->kind == GT_KIND_EVENT &&
        authorize_write(r, GT_VERB_DELETE, stored, r->route.name, NULL)) {
        json_decref(stored);
        return;
    }
    const struct gt_ctl_hooks *h = r->s->ctl_hooks;
    if (h && h->soft_delete(r->s->ctl, r->route.kind->kind, stored)) {
        r->soft_delete = true;
        json_decref(r->obj);
        r->obj = stored;
        submit(r, GT_STORE_UPDATE, r->stored_rev);
        return;
    }
    r->soft_delete = false;
    json_decref(stored);
    submit(r, GT_STORE_DELETE, r->stored_rev);
}

void gt_write_delete(struct gt_req *r, int64_t expected_rev)
{
    const struct gt_route *rt = &r->route;
    if (rt->kind->kind != GT_KIND_EVENT &&
        authorize_write(r, GT_VERB_DELETE, NULL, rt->name, NULL)) {
        return;
    }
    const struct gt_ctl_hooks *h = r->s->ctl_hooks;
    struct gt_err err = {0};
    if (h && h->refuse_delete(r->s->ctl, rt->kind->kind, route_project(rt), rt->name, &err)) {
        gt_req_error_err(r, &err);
        return;
    }
    r->key = gt_route_key(rt->kind, route_project(rt), rt->name);
    r->client_rv = expected_rev;
    delete_attempt(r);
}

/* ---- binding ---- */

static int check_binding(struct gt_req *r)
{
    const char *k;
    json_t *v;
    json_object_foreach(r->body, k, v)
    {
        if (strcmp(k, "nodeName") && strcmp(k, "gpus") && strcmp(k, "ports") &&
            strcmp(k, "apiVersion") && strcmp(k, "kind") && strcmp(k, "metadata")) {
            gt_req_error(r, GT_EINVAL, "%.128s: unknown field", k);
            return -1;
        }
    }
    if (!json_is_string(json_object_get(r->body, "nodeName"))) {
        gt_req_error(r, GT_EINVAL, "nodeName: required (a string)");
        return -1;
    }
    return 0;
}

static void binding_attempt(struct gt_req *r)
{
    json_t *stored = NULL;
    if (read_stored(r, &stored, false, false)) {
        return;
    }
    const char *node = json_string_value(gt_json_path(stored, "spec.nodeName"));
    if (node && *node) {
        gt_req_error(r, GT_ECONFLICT, "tasks \"%s\" is already bound to node \"%s\"", r->route.name,
                     node);
        json_decref(stored);
        return;
    }
    json_t *spec = json_object_get(stored, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(stored, "spec", spec);
    }
    static const char *const fields[] = {"nodeName", "gpus", "ports"};
    for (size_t i = 0; i < GT_ARRAY_LEN(fields); i++) {
        json_t *v = json_object_get(r->body, fields[i]);
        if (v) {
            json_object_set(spec, fields[i], v);
        }
    }
    json_t *st = json_object_get(stored, "status");
    if (!json_is_object(st)) {
        st = json_object();
        json_object_set_new(stored, "status", st);
    }
    json_object_set_new(st, "phase", json_string("Bound"));
    struct gt_err err = {0};
    if (gt_api_validate(GT_KIND_TASK, stored, &err)) {
        json_decref(stored);
        gt_req_error_err(r, &err);
        return;
    }
    json_decref(r->obj);
    r->obj = stored;
    submit(r, GT_STORE_UPDATE, r->stored_rev);
}

void gt_write_binding(struct gt_req *r)
{
    const struct gt_route *rt = &r->route;
    if (read_body(r) || authorize_write(r, GT_VERB_UPDATE, NULL, rt->name, NULL) ||
        check_binding(r)) {
        return;
    }
    r->key = gt_route_key(rt->kind, rt->project, rt->name);
    binding_attempt(r);
}

/* ---- completion ---- */

static enum wop wop_of(const struct gt_req *r)
{
    if (!strcmp(r->route.sub, "binding")) {
        return W_BINDING;
    }
    switch (r->mverb) {
    case GT_MV_CREATE:
        return W_CREATE;
    case GT_MV_DELETE:
        return W_DELETE;
    default:
        return W_UPDATE;
    }
}

static void retry(struct gt_req *r, enum wop op)
{
    r->retries++;
    if (op == W_DELETE) {
        delete_attempt(r);
    } else if (op == W_BINDING) {
        binding_attempt(r);
    } else {
        update_attempt(r);
    }
}

static void write_done(int rc, int64_t rev, const struct gt_err *err, void *arg)
{
    struct gt_req *r = arg;
    gt_server_write_done(r->s, rc, r->submit_ns);
    enum wop op = wop_of(r);
    if (r->prepared) {
        r->s->ctl_hooks->created(r->s->ctl, r->route.kind->kind, r->key, rc);
    }
    if (rc == 0) {
        if (op != W_DELETE || r->soft_delete) {
            gt_ctl_written(r->s->ctl, r->route.kind->kind, r->key, rev, r->obj);
        }
        if (gt_fault_hit(&r->s->faults, GT_FP_COMMIT_BEFORE_REPLY) == GT_FAULT_FAIL) {
            gt_req_error(r, GT_EINTERNAL, "fault point %s", GT_FP_COMMIT_BEFORE_REPLY);
            return;
        }
        if (op == W_DELETE && !r->soft_delete) {
            reply_stored(r, 200, r->value, strlen(r->value), r->stored_rev);
            return;
        }
        reply_stored(r, op == W_UPDATE || op == W_DELETE ? 200 : 201, r->value, strlen(r->value),
                     rev);
        return;
    }
    if (rc == GT_ECONFLICT && op != W_CREATE && !r->client_rv && r->retries < MAX_RETRIES) {
        retry(r, op);
        return;
    }
    const char *plural = r->route.kind->plural;
    switch (rc) {
    case GT_EEXISTS:
        gt_req_error(r, rc, "%s \"%s\" already exists", plural, r->route.name);
        break;
    case GT_ENOTFOUND:
        gt_req_error(r, rc, "%s \"%s\" not found", plural, r->route.name);
        break;
    case GT_ECONFLICT:
        gt_req_error(r, rc,
                     "Operation cannot be fulfilled on %s \"%s\": the object has been modified; "
                     "please apply your changes to the latest version and try again",
                     plural, r->route.name);
        break;
    case GT_EFSYNC:
        gt_req_error(r, rc, "the store failed to sync to disk; gantryd stops accepting writes");
        break;
    default:
        gt_req_error(r, rc, "store write failed: %s",
                     err && err->msg[0] ? err->msg : gt_errcode_str(rc));
        break;
    }
}
