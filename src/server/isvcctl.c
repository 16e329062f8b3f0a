/*
 * The serving controller: InferenceServices (api.h) run as replica Jobs,
 * routed by the gateway (gateway.c), over the controllers' cache (ctl.c).
 *
 * Revisions. A variant's revision is a hash of what it runs (model or
 * template, and resources), so changing it rolls its replicas over to
 * new ones. A service with one variant also has a stable revision
 * (status.stable, the variant as last promoted): while spec's revision
 * differs from it and spec.canaryTrafficPercent is below 100, the new
 * revision is a canary with that share and the stable one keeps the
 * rest; without canaryTrafficPercent (or at 100) the new revision is
 * promoted: it becomes status.stable and the old one is listed in
 * status.retired and replaced by a rolling upgrade. The canary is always
 * split against status.stable, so a canary made after a promotion routes
 * only between the promoted revision and the new one: a retired revision
 * never comes back (KServe's own controller routed such a canary to the
 * revision before the promoted one).
 *
 * Pools. Each (variant, revision) that gets traffic is a pool of
 * `replicas` replica Jobs "is-<svc>-<variant>-<rev>-<i>" (labels
 * gantry.dev/inferenceservice, gantry.dev/isvc-variant,
 * gantry.dev/isvc-revision), restartPolicy OnFailure without a backoff
 * limit, so a crashed server comes back as a new run of the same task.
 * A replica job that belongs to no pool (an older revision, a removed
 * variant, an index above replicas) is surplus: it is drained (the
 * gateway sends it no new requests; the in-flight ones finish) and its
 * job deleted once HAProxy reports no request at it, or after
 * DRAIN_MAX_MS. Per variant, replicas are created while the variant has
 * fewer than replicas + rollout.maxSurge jobs, and a ready surplus
 * replica is drained only while the variant keeps at least replicas -
 * rollout.maxUnavailable ready ones: with maxUnavailable 0 new replicas
 * are ready before old ones leave.
 *
 * Weights. A pool's share is its weight (the variant's, or the canary
 * split); HAProxy's per-server weights spread it over the pool's ready
 * replicas, scaled so the largest is 256: weights 80/20 on one replica
 * each are 256/64, which roundrobin serves exactly 4:1. A replica not
 * ready (HAProxy's check on the readiness path) or draining has weight
 * 0: it gets no request. Surplus replicas still ready count in their
 * variant's first (stable) pool.
 *
 * Autoscaling. A variant whose maxReplicas is above replicas has its
 * pools' replica counts decided by the autoscaler (isvcscale.c) from the
 * requests in flight (or per second) HAProxy reports at the variant's
 * replicas, before the replicas are sorted into pools: a count raised
 * makes new replica jobs (quota, scheduler, readiness as any), a count
 * lowered makes the highest indexes surplus, drained and stopped as
 * above; a draining replica back within the count serves again. The
 * Scaled condition says why a pool is short of ready replicas (the
 * scheduler's wait of one that is not running).
 *
 * Rollback. While a canary gets traffic, its error rate (5xx answers and
 * connection errors over requests, from HAProxy's counters) over a
 * window of at least ROLLBACK_MIN_REQUESTS requests is compared with
 * spec.rollout.maxErrorPercent, and, when spec.rollout.maxLatencyP99Ms
 * is set, its p99 latency over the gateway's request log window
 * (gwlog.h, at least ROLLBACK_MIN_REQUESTS requests) with that; over
 * either, the canary is rolled back:
 * status.rolledBack names its revision, the stable pool takes all
 * traffic, and the canary's replicas are drained, until spec names
 * another revision. An Event records every rollout step (replicas
 * started, drained and stopped, canary weights, promotion, retirement,
 * rollback).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/cache.h"
#include "server/events.h"
#include "server/feeder.h"
#include "server/gateway.h"
#include "server/isvcctl.h"
#include "server/isvcscale.h"
#include "server/server_int.h"

#define LABEL_SVC "gantry.dev/inferenceservice"
#define LABEL_VARIANT "gantry.dev/isvc-variant"
#define LABEL_REV "gantry.dev/isvc-revision"
#define DRAIN_MIN_MS 500      /* at least two stats polls after the drain */
#define DRAIN_MAX_MS 30000    /* then stopped even with requests left */
#define TRAFFIC_WRITE_MS 2000 /* status traffic numbers are rewritten at most this often */
#define ROLLBACK_MIN_REQUESTS 20.0
#define ROLLBACK_WINDOW_S 10.0
#define MODEL_SERVER "gantry-model-server" /* installed beside gantryd */

/* the autoscaler's state of one autoscaled variant */
struct variant_scale {
    char variant[GT_ISVC_VARIANT_MAX + 1]; /* "": a free slot */
    struct gt_isvc_scale s;
};

/* what is known of one service between reconciles (not stored) */
struct svc_state {
    int64_t traffic_written_ms;
    double canary_req, canary_bad; /* decayed sums over ~ROLLBACK_WINDOW_S */
    int64_t canary_at_ms;
    char canary_rev[16];
    struct variant_scale scale[GT_ISVC_VARIANTS_MAX];
};

struct gt_isvcctl {
    struct gt_ctl *c;
    struct gt_gateway *gw;
    bool dirty;
    struct gt_strmap draining; /* replica job key -> int64_t * (when the drain began) */
    struct gt_strmap state;    /* service key -> struct svc_state */
};

static void on_polled(void *arg)
{
    struct gt_isvcctl *ic = arg;
    ic->dirty = true;
    gt_ctl_kick(ic->c);
}

struct gt_isvcctl *gt_isvcctl_new(struct gt_ctl *c)
{
    struct gt_isvcctl *ic = gt_xcalloc(1, sizeof(*ic));
    ic->c = c;
    ic->gw = gt_gateway_new(c->s, on_polled, ic);
    gt_strmap_init(&ic->draining);
    gt_strmap_init(&ic->state);
    ic->dirty = true;
    return ic;
}

void gt_isvcctl_free(struct gt_isvcctl *ic)
{
    if (!ic) {
        return;
    }
    gt_gateway_free(ic->gw);
    gt_strmap_fini(&ic->draining, free);
    gt_strmap_fini(&ic->state, free);
    free(ic);
}

int gt_isvcctl_start(struct gt_isvcctl *ic, struct gt_err *err)
{
    return ic->gw ? gt_gateway_start(ic->gw, err) : 0;
}

void gt_isvcctl_event(struct gt_isvcctl *ic, enum gt_kind kind, const struct gt_api_object *obj)
{
    if (kind == GT_KIND_INFERENCESERVICE || kind == GT_KIND_PROJECT ||
        (kind == GT_KIND_JOB && obj && json_object_get(obj->meta.labels, LABEL_SVC))) {
        ic->dirty = true;
    } else if (kind == GT_KIND_TASK && obj) {
        const char *job = ((const struct gt_api_task *)obj)->spec.job;
        ic->dirty |= job && !strncmp(job, GT_ISVC_JOB_PREFIX, strlen(GT_ISVC_JOB_PREFIX));
    }
}

/* ---- shared lookups ---- */

int gt_task_endpoint(const struct gt_ctl *c, const struct gt_api_task *task, char *host,
                     size_t host_len, int *port)
{
    const struct gt_api_template *tmpl = &task->spec.template;
    const char *port_name =
        tmpl->ports.n && tmpl->ports.v[0].name ? tmpl->ports.v[0].name : "port-0";
    *port = 0;
    for (size_t i = 0; i < task->spec.ports.n; i++) {
        const char *pn = task->spec.ports.v[i].name;
        if (pn && !strcmp(pn, port_name)) {
            *port = (int)task->spec.ports.v[i].port;
        }
    }
    char *nk = gt_xasprintf("/nodes/%s", task->spec.node_name ? task->spec.node_name : "");
    const struct gt_cobj *no = gt_ctl_get(c, GT_KIND_NODE, nk);
    free(nk);
    const char *ip = no ? gt_api_node_address(gt_cobj_node(no), "InternalIP") : NULL;
    if (!*port || !ip) {
        return GT_ESTORE;
    }
    snprintf(host, host_len, "%s", ip);
    return 0;
}

struct mv_find {
    const char *prefix, *model, *version;
    const json_t *found;
};

static bool same_version(const json_t *v, const char *want)
{
    char buf[32];
    if (json_is_integer(v)) {
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
        return !strcmp(buf, want);
    }
    return json_is_string(v) && !strcmp(json_string_value(v), want);
}

static int mv_find_cb(const char *key, void *val, void *arg)
{
    struct mv_find *f = arg;
    const json_t *o = ((const struct gt_cobj *)val)->obj;
    if (strncmp(key, f->prefix, strlen(f->prefix)) != 0) {
        return 0;
    }
    const json_t *model = gt_json_path(o, "spec.model");
    const json_t *ver = gt_json_path(o, "status.version");
    if (json_is_string(model) && !strcmp(json_string_value(model), f->model) &&
        same_version(ver ? ver : gt_json_path(o, "spec.version"), f->version)) {
        f->found = o;
        return 1;
    }
    return 0;
}

int gt_isvc_find_model_version(const struct gt_ctl *c, const char *storage_uri, const json_t **out,
                               struct gt_err *err)
{
    *out = NULL;
    char project[64], model[128], version[32];
    if (sscanf(storage_uri, "models://%63[^/]/%127[^/]/%31s", project, model, version) != 3 &&
        sscanf(storage_uri, "gantry://%63[^/]/%127[^/]/%31s", project, model, version) != 3) {
        return gt_err_set(err, GT_EINVAL,
                          "storageUri %s: a model version is models://PROJECT/NAME/VERSION",
                          storage_uri);
    }
    const struct gt_kind_info *kind = gt_kind_by_name("ModelVersion");
    if (kind) {
        char *prefix = gt_xasprintf("/%s/%s/", kind->plural, project);
        struct mv_find f = {prefix, model, version, NULL};
        gt_strmap_each(&c->objs[kind->kind], mv_find_cb, &f);
        free(prefix);
        *out = f.found;
    }
    return *out ? 0 : gt_err_set(err, GT_ENOTFOUND, "model version not found: %s", storage_uri);
}

/* ---- pools ---- */

struct pool {
    const char *variant;
    char rev[16];
    const json_t *vspec;  /* the variant's JSON (borrowed) */
    int64_t weight;       /* its share, relative to the other pools' */
    int64_t replicas;     /* desired: the spec's, or the autoscaler's share */
    int64_t min_replicas; /* autoscaled: its bounds; else both 0 */
    int64_t max_replicas;
    bool canary;
    int n_ready; /* ready replicas serving it, not draining */
    int n_total;
    double ratio; /* weight per ready replica */
    const char *blocked_reason;
    char blocked[640];
};

struct pools GT_VEC(struct pool);

/* what a variant runs, hashed (FNV-1a over the canonical JSON): 8 hex digits */
static void revision_of(const json_t *variant, char out[16])
{
    json_t *what = json_object();
    static const char *const keys[] = {"model", "template", "resources"};
    for (size_t i = 0; i < GT_ARRAY_LEN(keys); i++) {
        json_t *v = json_object_get(variant, keys[i]);
        if (v) {
            json_object_set(what, keys[i], v);
        }
    }
    char *text = json_dumps(what, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(what);
    uint32_t h = 2166136261u;
    for (const char *p = text; p && *p; p++) {
        h = (h ^ (unsigned char)*p) * 16777619u;
    }
    free(text);
    snprintf(out, 16, "%08x", h);
}

static void pool_add(struct pools *ps, const char *variant, const json_t *vspec, int64_t weight,
                     bool canary)
{
    struct pool *p = GT_VEC_PUSH(ps, 4);
    memset(p, 0, sizeof(*p));
    p->variant = variant;
    p->vspec = vspec;
    p->weight = weight;
    p->canary = canary;
    json_t *r = json_object_get(vspec, "replicas");
    p->replicas = r ? json_integer_value(r) : 1;
    revision_of(vspec, p->rev);
}

/* ---- one service ---- */

struct replica {
    const struct gt_cobj *jo;
    const char *name, *variant, *rev;
    long index;
    int pool; /* index in pools, -1: surplus */
    bool deleting, running, ready, draining;
    char host[64];
    int port;
    const struct gt_gw_stat *stat;
};

struct replicas GT_VEC(struct replica);

struct svc {
    struct gt_isvcctl *ic;
    const struct gt_cobj *o;
    const char *project, *name;
    const json_t *spec, *old_status;
    struct pools pools;
    struct replicas reps;
    const json_t *stable;    /* status.stable as it is or will be written (borrowed or owned) */
    json_t *new_stable;      /* owned when written now */
    json_t *retired;         /* status.retired, new list */
    const char *rolled_back; /* the rolled-back revision, or NULL */
    json_t *rolled_back_obj;
    int64_t max_surge, max_unavailable;
};

static void event(struct svc *v, const char *type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void event(struct svc *v, const char *type, const char *reason, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    gt_events_record(v->ic->c->s->events, v->o->t, type, reason, msg);
}

static bool retired_has(const json_t *retired, const char *rev)
{
    size_t i;
    const json_t *r;
    json_array_foreach(retired, i, r)
    {
        if (json_is_string(r) && !strcmp(json_string_value(r), rev)) {
            return true;
        }
    }
    return false;
}

/* The pools of the service, and its stable, retired and rolled-back
 * revisions as they are to be written. */
static void plan_pools(struct svc *v)
{
    const json_t *vs = json_object_get(v->spec, "variants");
    const json_t *old_retired = json_object_get(v->old_status, "retired");
    v->retired = json_is_array(old_retired) ? json_deep_copy(old_retired) : json_array();
    const json_t *rb = json_object_get(v->old_status, "rolledBack");
    if (json_array_size(vs) != 1) {
        size_t i;
        const json_t *var;
        json_array_foreach(vs, i, var)
        {
            pool_add(&v->pools, json_string_value(json_object_get(var, "name")), var,
                     json_integer_value(json_object_get(var, "weight")), false);
        }
        return;
    }
    const json_t *var = json_array_get(vs, 0);
    const char *vname = json_string_value(json_object_get(var, "name"));
    char rev[16];
    revision_of(var, rev);
    const json_t *stable = json_object_get(v->old_status, "stable");
    const char *stable_rev = json_string_value(json_object_get(stable, "revision"));
    const json_t *pct = json_object_get(v->spec, "canaryTrafficPercent");
    bool canary = pct && json_integer_value(pct) < 100;
    if (!stable_rev || !strcmp(stable_rev, rev) || !canary) {
        if (stable_rev && strcmp(stable_rev, rev) != 0) {
            if (!retired_has(v->retired, stable_rev)) {
                json_array_append_new(v->retired, json_string(stable_rev));
            }
            event(v, "Normal", "Promoted",
                  "revision %s of variant %s promoted; revision %s retired", rev, vname,
                  stable_rev);
        }
        v->new_stable = json_pack("{s:s, s:O}", "revision", rev, "variant", var);
        v->stable = v->new_stable;
        pool_add(&v->pools, vname, var, 100, false);
        return;
    }
    /* a canary against the stable revision */
    v->stable = stable;
    const json_t *svar = json_object_get(stable, "variant");
    const char *rb_rev = json_string_value(json_object_get(rb, "revision"));
    if (rb_rev && !strcmp(rb_rev, rev)) {
        v->rolled_back = rb_rev;
        v->rolled_back_obj = json_deep_copy(rb);
        pool_add(&v->pools, vname, svar, 100, false);
        return;
    }
    int64_t c = json_integer_value(pct);
    pool_add(&v->pools, vname, svar, 100 - c, false);
    pool_add(&v->pools, vname, var, c, true);
}

static const char *label(const struct gt_api_job *job, const char *k)
{
    return json_string_value(json_object_get(job->o.meta.labels, k));
}

/* The pool replica r belongs to by its labels and index, or -1 (surplus). */
static int pool_of(const struct svc *v, const struct replica *r)
{
    int pool = -1;
    for (size_t i = 0; r->variant && r->rev && i < v->pools.n; i++) {
        const struct pool *p = &v->pools.v[i];
        if (!strcmp(p->variant, r->variant) && !strcmp(p->rev, r->rev) && r->index >= 0 &&
            r->index < p->replicas && !r->deleting) {
            pool = (int)i;
        }
    }
    return pool;
}

struct collect {
    struct svc *v;
    const char *prefix;
};

static int collect_cb(const char *key, void *val, void *arg)
{
    struct collect *x = arg;
    const struct gt_cobj *jo = val;
    if (strncmp(key, x->prefix, strlen(x->prefix)) != 0) {
        return 0;
    }
    const struct gt_api_job *job = gt_cobj_job(jo);
    const char *svc = label(job, LABEL_SVC);
    if (!svc || strcmp(svc, x->v->name) != 0) {
        return 0;
    }
    struct replica *r = GT_VEC_PUSH(&x->v->reps, 8);
    memset(r, 0, sizeof(*r));
    r->jo = jo;
    r->name = job->o.meta.name;
    r->variant = label(job, LABEL_VARIANT);
    r->rev = label(job, LABEL_REV);
    const char *dash = strrchr(r->name, '-');
    r->index = dash ? strtol(dash + 1, NULL, 10) : -1;
    r->pool = -1;
    r->deleting = job->o.meta.deletion_timestamp != NULL;
    r->draining = gt_strmap_get(&x->v->ic->draining, key) != NULL;
    char *tk = gt_xasprintf("/tasks/%s/%s-worker-0", x->v->project, r->name);
    const struct gt_cobj *to = gt_ctl_get(x->v->ic->c, GT_KIND_TASK, tk);
    free(tk);
    const struct gt_api_task *task = to ? gt_cobj_task(to) : NULL;
    r->running = task && task->status.phase == GT_TASK_RUNNING && !task->spec.has_stop &&
                 gt_task_endpoint(x->v->ic->c, task, r->host, sizeof(r->host), &r->port) == 0;
    if (r->running && x->v->ic->gw) {
        r->stat = gt_gateway_stat(x->v->ic->gw, x->v->project, x->v->name, r->name);
        r->ready = r->stat && r->stat->ready;
    } else {
        r->ready = r->running && !x->v->ic->gw;
    }
    r->pool = pool_of(x->v, r);
    return 0;
}

/* The model server's command for a model variant, or NULL with why
 * (reason, message) it cannot run. */
static json_t *model_command(struct svc *v, const json_t *model, struct pool *p)
{
    const char *format = json_string_value(json_object_get(model, "format"));
    const char *uri = json_string_value(json_object_get(model, "storageUri"));
    if (strcmp(format, "sklearn") != 0 && strcmp(format, "pytorch") != 0) {
        p->blocked_reason = "RuntimeMissing";
        snprintf(p->blocked, sizeof(p->blocked),
                 "no %s runtime: %s serves the sklearn and pytorch formats", format, MODEL_SERVER);
        return NULL;
    }
    const char *dir = NULL;
    int64_t version = 0;
    if (uri[0] == '/') {
        dir = uri;
    } else if (!strncmp(uri, "models://", 9) || !strncmp(uri, "gantry://", 9)) {
        const json_t *mv = NULL;
        struct gt_err err = {0};
        if (gt_isvc_find_model_version(v->ic->c, uri, &mv, &err) != 0) {
            p->blocked_reason = "ModelVersionNotFound";
            snprintf(p->blocked, sizeof(p->blocked), "%.600s", err.msg);
            return NULL;
        }
        dir = json_string_value(gt_json_path(mv, "status.path"));
        if (!dir) {
            p->blocked_reason = "ModelVersionNotReady";
            snprintf(p->blocked, sizeof(p->blocked), "model version %s has no status.path yet",
                     uri);
            return NULL;
        }
        version = json_integer_value(gt_json_path(mv, "status.version"));
    } else {
        p->blocked_reason = "StorageUriUnsupported";
        snprintf(p->blocked, sizeof(p->blocked),
                 "storageUri %.200s: gantry serves models://PROJECT/NAME/VERSION (a registered "
                 "model version) or an absolute path on a storage root",
                 uri);
        return NULL;
    }
    /* the task's PATH is the node's system one: the server is named by its
     * absolute path, beside this gantryd (the same install on every node) */
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
        slash[1] = '\0';
    }
    char *line = gt_xasprintf("exec '%s" MODEL_SERVER "' --name '%s' --model-dir '%s' --format %s "
                              "--model-version %lld --port \"$GANTRY_PORT_HTTP\"",
                              slash ? exe : "", v->name, dir, format,
                              (long long)(version > 0 ? version : 1));
    json_t *cmd = json_pack("[s, s, s]", "/bin/sh", "-c", line);
    free(line);
    return cmd;
}

/* The replica job of pool p, index i (new, validated), or NULL with p blocked. */
static json_t *build_job(struct svc *v, struct pool *p, long i, char *key, size_t key_len)
{
    const json_t *model = json_object_get(p->vspec, "model");
    json_t *tmpl = json_deep_copy(json_object_get(p->vspec, "template"));
    if (!tmpl) {
        json_t *cmd = model_command(v, model, p);
        if (!cmd) {
            return NULL;
        }
        tmpl = json_pack("{s:o}", "command", cmd);
        const json_t *res = json_object_get(p->vspec, "resources");
        if (res) {
            json_object_set(tmpl, "resources", (json_t *)res);
        }
    }
    if (json_array_size(json_object_get(tmpl, "ports")) == 0) {
        json_object_set_new(tmpl, "ports",
                            json_pack("[{s:s, s:i}]", "name", "http", "containerPort", 8080));
    }
    json_t *env = json_object_get(tmpl, "env");
    if (!json_is_array(env)) {
        env = json_array();
        json_object_set_new(tmpl, "env", env);
    }
    json_array_append_new(
        env, json_pack("{s:s, s:s}", "name", "GANTRY_INFERENCESERVICE", "value", v->name));
    json_array_append_new(
        env, json_pack("{s:s, s:s}", "name", "GANTRY_ISVC_VARIANT", "value", p->variant));
    json_array_append_new(env,
                          json_pack("{s:s, s:s}", "name", "GANTRY_ISVC_REVISION", "value", p->rev));
    char name[96];
    snprintf(name, sizeof(name), GT_ISVC_JOB_PREFIX "%s-%s-%s-%ld", v->name, p->variant, p->rev, i);
    snprintf(key, key_len, "/jobs/%s/%s", v->project, name);
    json_t *md =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "name", name, "project", v->project, "labels",
                  LABEL_SVC, v->name, LABEL_VARIANT, p->variant, LABEL_REV, p->rev);
    char uid[40], ts[32];
    gt_uuid4(&v->ic->c->s->uuids, uid, sizeof(uid));
    json_object_set_new(md, "uid", json_string(uid));
    json_object_set_new(md, "creationTimestamp",
                        json_string(gt_time_format(gt_now_ms(), ts, sizeof(ts))));
    json_t *creator = json_object_get(json_object_get(v->o->obj, "metadata"), "creator");
    if (creator) {
        json_object_set(md, "creator", creator);
    }
    json_t *run_policy = json_pack("{s:i}", "backoffLimit", GT_API_BACKOFF_UNLIMITED);
    const json_t *pc = json_object_get(v->spec, "priorityClass");
    if (pc) {
        json_object_set_new(run_policy, "schedulingPolicy",
                            json_pack("{s:O}", "priorityClass", pc));
    }
    json_t *job =
        json_pack("{s:s, s:s, s:o, s:{s:{s:{s:i, s:s, s:o}}, s:o}}", "apiVersion", GT_API_VERSION,
                  "kind", "Job", "metadata", md, "spec", "replicaSpecs", "Worker", "replicas", 1,
                  "restartPolicy", "OnFailure", "template", tmpl, "runPolicy", run_policy);
    struct gt_err err = {0};
    if (gt_api_validate(GT_KIND_JOB, job, &err)) {
        p->blocked_reason = "InvalidTemplate";
        snprintf(p->blocked, sizeof(p->blocked), "the replica's Job: %.280s", err.msg);
        json_decref(job);
        return NULL;
    }
    return job;
}

void gt_ctl_delete_job(struct gt_ctl *c, const struct gt_cobj *jo)
{
    if (gt_cobj_job(jo)->o.meta.deletion_timestamp || gt_ctl_busy(c, jo->key)) {
        return;
    }
    json_t *obj = json_deep_copy(jo->obj);
    char ts[32];
    json_object_set_new(json_object_get(obj, "metadata"), "deletionTimestamp",
                        json_string(gt_time_format(gt_now_ms(), ts, sizeof(ts))));
    gt_ctl_write(c, GT_STORE_UPDATE, jo->key, obj, jo->rev, NULL, NULL);
    json_decref(obj);
}

static bool has_job(const struct svc *v, const struct pool *p, long i)
{
    for (size_t k = 0; k < v->reps.n; k++) {
        const struct replica *r = &v->reps.v[k];
        if (r->variant && r->rev && !strcmp(r->variant, p->variant) && !strcmp(r->rev, p->rev) &&
            r->index == i) {
            return true;
        }
    }
    return false;
}

/* Create missing replicas and drain or stop surplus ones, variant by
 * variant, within maxSurge and maxUnavailable. */
static void roll(struct svc *v, const char *variant)
{
    struct gt_ctl *c = v->ic->c;
    int64_t want = 0, alive = 0, ready = 0, surplus = 0;
    for (size_t i = 0; i < v->pools.n; i++) {
        want += strcmp(v->pools.v[i].variant, variant) ? 0 : v->pools.v[i].replicas;
    }
    for (size_t k = 0; k < v->reps.n; k++) {
        const struct replica *r = &v->reps.v[k];
        if (!r->variant || strcmp(r->variant, variant) != 0 || r->deleting) {
            continue;
        }
        alive++;
        ready += r->ready && !r->draining;
        surplus += r->pool < 0;
    }
    int64_t cap = surplus ? want + v->max_surge : want;
    for (size_t i = 0; i < v->pools.n; i++) {
        struct pool *p = &v->pools.v[i];
        if (strcmp(p->variant, variant) != 0) {
            continue;
        }
        for (long n = 0; n < p->replicas && alive < cap; n++) {
            if (has_job(v, p, n)) {
                continue;
            }
            char key[192];
            json_t *job = build_job(v, p, n, key, sizeof(key));
            if (!job) {
                break;
            }
            if (!gt_ctl_busy(c, key)) {
                gt_ctl_write(c, GT_STORE_CREATE, key, job, 0, NULL, NULL);
                event(v, "Normal", "ReplicaStarted", "variant %s revision %s replica %ld started",
                      p->variant, p->rev, n);
                alive++;
            }
            json_decref(job);
        }
    }
    int64_t now = gt_now_ms();
    for (size_t k = 0; k < v->reps.n; k++) {
        struct replica *r = &v->reps.v[k];
        if (!r->variant || strcmp(r->variant, variant) != 0 || r->deleting || r->pool >= 0) {
            continue;
        }
        if (!r->draining && r->ready && ready - 1 < want - v->max_unavailable) {
            continue; /* it still holds the variant's capacity */
        }
        if (!r->draining) {
            int64_t *at = gt_xmalloc(sizeof(*at));
            *at = now;
            free(gt_strmap_put(&v->ic->draining, r->jo->key, at));
            r->draining = true;
            ready -= r->ready;
            event(v, "Normal", "ReplicaDraining", "variant %s revision %s replica %ld draining",
                  variant, r->rev ? r->rev : "?", r->index);
        }
        const int64_t *at = gt_strmap_get(&v->ic->draining, r->jo->key);
        bool idle = !v->ic->gw || !r->running || !r->stat || r->stat->scur + r->stat->qcur == 0;
        if ((idle && now - *at >= DRAIN_MIN_MS) || now - *at >= DRAIN_MAX_MS || !r->ready) {
            gt_ctl_delete_job(c, r->jo);
            event(v, "Normal", "ReplicaStopped", "variant %s revision %s replica %ld stopped",
                  variant, r->rev ? r->rev : "?", r->index);
        }
    }
}

/* HAProxy's per-server weights for every replica (0: none). */
static int server_weight(const struct svc *v, const struct replica *r)
{
    if (!r->ready || r->draining || r->deleting) {
        return 0;
    }
    int pi = r->pool;
    if (pi < 0) { /* a surplus replica still ready serves its variant's first pool */
        for (size_t i = 0; i < v->pools.n && pi < 0; i++) {
            if (r->variant && !strcmp(v->pools.v[i].variant, r->variant)) {
                pi = (int)i;
            }
        }
    }
    if (pi < 0 || v->pools.v[pi].weight == 0) {
        return 0;
    }
    double max = 0;
    for (size_t i = 0; i < v->pools.n; i++) {
        max = v->pools.v[i].ratio > max ? v->pools.v[i].ratio : max;
    }
    long w = lround(v->pools.v[pi].ratio * 256.0 / max);
    return w < 1 ? 1 : (int)w;
}

static void count_ready(struct svc *v)
{
    for (size_t k = 0; k < v->reps.n; k++) {
        const struct replica *r = &v->reps.v[k];
        int pi = r->pool;
        if (pi < 0 && r->ready && !r->draining && !r->deleting) {
            for (size_t i = 0; i < v->pools.n && pi < 0; i++) {
                if (r->variant && !strcmp(v->pools.v[i].variant, r->variant)) {
                    pi = (int)i;
                }
            }
        }
        if (pi < 0) {
            continue;
        }
        v->pools.v[pi].n_total += r->pool >= 0;
        v->pools.v[pi].n_ready += r->ready && !r->draining && !r->deleting;
    }
    for (size_t i = 0; i < v->pools.n; i++) {
        struct pool *p = &v->pools.v[i];
        p->ratio = p->n_ready ? (double)p->weight / p->n_ready : 0;
    }
}

/* Sum the traffic of pool pi's replicas. */
static void pool_traffic(const struct svc *v, int pi, double *rps, double *err_rate,
                         int64_t *rtime_ms)
{
    double req = 0, bad = 0, rt = 0;
    for (size_t k = 0; k < v->reps.n; k++) {
        const struct replica *r = &v->reps.v[k];
        if (r->pool == pi && r->stat) {
            req += r->stat->rate_rps;
            bad += r->stat->rate_rps * r->stat->error_rate;
            rt += r->stat->rate_rps * (double)r->stat->rtime_ms;
        }
    }
    *rps = req;
    *err_rate = req > 0 ? bad / req : 0;
    *rtime_ms = req > 0 ? (int64_t)(rt / req + 0.5) : 0;
}

/* ---- autoscaling (the decision: isvcscale.c) ---- */

/* The load on replicas: requests in flight at them (HAProxy's scur +
 * qcur), or with rps their requests per second; those of variant (every
 * revision, draining ones too), or with variant NULL those of pool pi. */
static double load_of(const struct svc *v, const char *variant, int pi, bool rps)
{
    double sum = 0;
    for (size_t k = 0; k < v->reps.n; k++) {
        const struct replica *r = &v->reps.v[k];
        bool mine = variant ? r->variant && !strcmp(r->variant, variant) : r->pool == pi;
        if (mine && r->stat) {
            sum += rps ? r->stat->rate_rps : (double)(r->stat->scur + r->stat->qcur);
        }
    }
    return sum;
}

/* The slot of variant's autoscaler state in ss, started at current
 * replicas when it has none (-1: no free slot). */
static int scale_slot(struct svc_state *ss, const char *variant, int64_t current)
{
    int free_slot = -1;
    for (size_t i = 0; i < GT_ARRAY_LEN(ss->scale); i++) {
        if (!strcmp(ss->scale[i].variant, variant)) {
            return (int)i;
        }
        free_slot = free_slot < 0 && !ss->scale[i].variant[0] ? (int)i : free_slot;
    }
    if (free_slot < 0 || strlen(variant) >= sizeof(ss->scale[0].variant)) {
        return -1;
    }
    struct variant_scale *vs = &ss->scale[free_slot];
    snprintf(vs->variant, sizeof(vs->variant), "%s", variant);
    gt_isvc_scale_init(&vs->s, current);
    return free_slot;
}

/* Replicas of variant the autoscaler starts from: its live jobs of the
 * pool's revision, draining or not (a restarted gantryd keeps them). */
static int64_t live_replicas(const struct svc *v, const struct pool *p)
{
    int64_t n = 0;
    for (size_t k = 0; k < v->reps.n; k++) {
        const struct replica *r = &v->reps.v[k];
        n += !r->deleting && r->variant && r->rev && !strcmp(r->variant, p->variant) &&
             !strcmp(r->rev, p->rev);
    }
    return n;
}

/* Give variant's pools d replicas in all, shared by their weights, each
 * within the policy's bounds. */
static void share_replicas(struct svc *v, const char *variant,
                           const struct gt_isvc_scale_policy *pol, int64_t d)
{
    int64_t total_w = 0;
    for (size_t i = 0; i < v->pools.n; i++) {
        total_w += strcmp(v->pools.v[i].variant, variant) ? 0 : v->pools.v[i].weight;
    }
    for (size_t i = 0; i < v->pools.n; i++) {
        struct pool *p = &v->pools.v[i];
        if (strcmp(p->variant, variant) != 0) {
            continue;
        }
        int64_t n = total_w ? (int64_t)ceil((double)(d * p->weight) / (double)total_w) : d;
        p->replicas = n < pol->min ? pol->min : n > pol->max ? pol->max : n;
        p->min_replicas = pol->min;
        p->max_replicas = pol->max;
    }
}

/* Autoscaled variants: their pools' replicas as the autoscaler decides
 * from the gateway's counters (an Event for each change), then every
 * replica's pool again. A draining replica back within its pool's count
 * serves again (unless its job's deletion is being written). */
static void autoscale(struct svc *v, struct svc_state *ss)
{
    int64_t now = gt_now_ms();
    bool used[GT_ARRAY_LEN(ss->scale)] = {false};
    const json_t *vs = json_object_get(v->spec, "variants");
    for (size_t i = 0; i < v->pools.n; i++) {
        const struct pool *p = &v->pools.v[i];
        bool first = true;
        for (size_t j = 0; j < i; j++) {
            first &= strcmp(v->pools.v[j].variant, p->variant) != 0;
        }
        const json_t *var = first ? gt_json_find(vs, "name", p->variant) : NULL;
        struct gt_isvc_scale_policy pol;
        if (!var || !gt_isvc_scale_policy_of(v->spec, var, &pol)) {
            continue;
        }
        int slot = scale_slot(ss, p->variant, live_replicas(v, p));
        if (slot < 0) {
            continue;
        }
        used[slot] = true;
        struct gt_isvc_scale *s = &ss->scale[slot].s;
        int64_t before = s->desired;
        double load = load_of(v, p->variant, -1, pol.rps);
        int64_t d = gt_isvc_scale_decide(&pol, s, load, now);
        if (d != before) {
            event(v, "Normal", d > before ? "ScaledUp" : "ScaledDown",
                  "variant %s: %lld -> %lld replicas (%.1f %s, target %.0f per replica)",
                  p->variant, (long long)before, (long long)d, load,
                  pol.rps ? "requests/s" : "requests in flight", pol.target);
        }
        share_replicas(v, p->variant, &pol, d);
    }
    for (size_t i = 0; i < GT_ARRAY_LEN(ss->scale); i++) {
        if (!used[i]) {
            ss->scale[i].variant[0] = '\0';
        }
    }
    for (size_t k = 0; k < v->reps.n; k++) {
        struct replica *r = &v->reps.v[k];
        int pool = pool_of(v, r);
        if (pool >= 0 && r->draining) {
            if (gt_ctl_busy(v->ic->c, r->jo->key)) {
                pool = -1; /* its deletion is in flight: it stays surplus */
            } else {
                free(gt_strmap_del(&v->ic->draining, r->jo->key));
                r->draining = false;
            }
        }
        r->pool = pool;
    }
}

/* The gateway's latency window of pool pi's replicas, summed into h. */
static void pool_latency(const struct svc *v, int pi, struct gt_gwlog_hist *h)
{
    memset(h, 0, sizeof(*h));
    for (size_t k = 0; v->ic->gw && k < v->reps.n; k++) {
        const struct replica *r = &v->reps.v[k];
        if (r->pool == pi && r->running) {
            gt_gateway_latency(v->ic->gw, v->project, v->name, r->name, h);
        }
    }
}

/* Is canary pool ci's p99 latency over spec.rollout.maxLatencyP99Ms?
 * Then true, with why in msg. */
static bool canary_too_slow(const struct svc *v, int ci, char *msg, size_t len)
{
    int64_t limit = json_integer_value(gt_json_path(v->spec, "rollout.maxLatencyP99Ms"));
    if (limit <= 0) {
        return false;
    }
    struct gt_gwlog_hist h;
    pool_latency(v, ci, &h);
    int64_t p99 = gt_gwlog_quantile_ms(&h, 0.99);
    if ((double)h.n < ROLLBACK_MIN_REQUESTS || p99 <= limit) {
        return false;
    }
    snprintf(msg, len, "canary p99 latency %lld ms over %lld requests is above %lld ms",
             (long long)p99, (long long)h.n, (long long)limit);
    return true;
}

/* Roll canary pool ci back for msg: all traffic back to the stable pool
 * now; the canary's replicas become surplus. */
static void roll_back(struct svc *v, struct svc_state *ss, int ci, const char *msg)
{
    const struct pool *p = &v->pools.v[ci];
    char ts[32];
    json_decref(v->rolled_back_obj);
    v->rolled_back_obj = json_pack("{s:s, s:s, s:s}", "revision", p->rev, "reason", msg, "time",
                                   gt_time_format(gt_now_ms(), ts, sizeof(ts)));
    v->rolled_back = p->rev;
    event(v, "Warning", "RolledBack", "revision %s rolled back: %s", p->rev, msg);
    for (size_t i = 0; i < v->pools.n; i++) {
        v->pools.v[i].weight = 100;
    }
    v->pools.n = (size_t)ci;
    ss->canary_rev[0] = '\0';
}

/* The canary's error rate and latency over the window: roll it back when
 * over a threshold (its pool dropped: true). */
static bool watch_canary(struct svc *v, struct svc_state *ss)
{
    int ci = -1;
    for (size_t i = 0; i < v->pools.n; i++) {
        ci = v->pools.v[i].canary ? (int)i : ci;
    }
    if (ci < 0) {
        ss->canary_rev[0] = '\0';
        return false;
    }
    const struct pool *p = &v->pools.v[ci];
    int64_t now = gt_now_ms();
    if (strcmp(ss->canary_rev, p->rev) != 0) {
        snprintf(ss->canary_rev, sizeof(ss->canary_rev), "%s", p->rev);
        ss->canary_req = ss->canary_bad = 0;
        ss->canary_at_ms = now;
        return false;
    }
    double dt = (double)(now - ss->canary_at_ms) / 1000.0;
    ss->canary_at_ms = now;
    double rps, er;
    int64_t rt;
    pool_traffic(v, ci, &rps, &er, &rt);
    double decay = exp(-dt / ROLLBACK_WINDOW_S);
    ss->canary_req = ss->canary_req * decay + rps * dt;
    ss->canary_bad = ss->canary_bad * decay + rps * er * dt;
    const json_t *maxp = gt_json_path(v->spec, "rollout.maxErrorPercent");
    double limit = (double)json_integer_value(maxp) / 100.0;
    char msg[256];
    if (ss->canary_req >= ROLLBACK_MIN_REQUESTS && ss->canary_bad / ss->canary_req > limit) {
        snprintf(msg, sizeof(msg), "canary error rate %.1f %% over %.0f requests is above %.0f %%",
                 100.0 * ss->canary_bad / ss->canary_req, ss->canary_req, limit * 100.0);
    } else if (!canary_too_slow(v, ci, msg, sizeof(msg))) {
        return false;
    }
    roll_back(v, ss, ci, msg);
    return true;
}

static void strip_traffic(json_t *st)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(st, "variants"), i, e)
    {
        json_object_del(e, "requestsPerSecond");
        json_object_del(e, "errorRate");
        json_object_del(e, "latencyMs");
        json_object_del(e, "inFlight");
        json_object_del(e, "latencyP50Ms");
        json_object_del(e, "latencyP99Ms");
    }
}

/* A condition of type; its lastTransitionTime is old_status's unless its
 * status changed. msg may be "". */
static json_t *condition(const struct svc *v, const char *type, bool ok, const char *reason,
                         const char *msg)
{
    json_t *cnd = json_pack("{s:s, s:s, s:s}", "type", type, "status", ok ? "True" : "False",
                            "reason", reason);
    if (*msg) {
        json_object_set_new(cnd, "message", json_string(msg));
    }
    const json_t *was = gt_json_find(json_object_get(v->old_status, "conditions"), "type", type);
    const char *ts = json_string_value(json_object_get(was, "lastTransitionTime"));
    const char *was_status = json_string_value(json_object_get(was, "status"));
    char now[32];
    if (!ts || !was_status || strcmp(was_status, ok ? "True" : "False")) {
        ts = gt_time_format(gt_now_ms(), now, sizeof(now));
    }
    json_object_set_new(cnd, "lastTransitionTime", json_string(ts));
    return cnd;
}

/* The Ready condition: every pool with traffic has a ready replica. */
static json_t *ready_condition(const struct svc *v)
{
    const char *reason = "Ready", *msg = "";
    bool ok = true;
    for (size_t i = 0; i < v->pools.n && ok; i++) {
        const struct pool *p = &v->pools.v[i];
        if (p->blocked_reason) {
            ok = false, reason = p->blocked_reason, msg = p->blocked;
        } else if (p->weight > 0 && p->replicas > 0 && p->n_ready == 0) {
            ok = false, reason = "Starting", msg = "waiting for a ready replica";
            for (size_t k = 0; k < v->reps.n; k++) {
                const struct replica *r = &v->reps.v[k];
                if (r->pool == (int)i && !r->running) {
                    const char *wait = gt_feed_wait(v->ic->c, r->jo->key);
                    if (wait) {
                        reason = "Waiting", msg = wait;
                    }
                }
            }
        }
    }
    return condition(v, "Ready", ok, reason, msg);
}

/* The Scaled condition: every pool has its desired replicas ready; else
 * why not, naming the quota or resource a replica waits for (QuotaExceeded,
 * Unschedulable: also an Event when that changes) or ScalingUp while they
 * start. */
static json_t *scaled_condition(struct svc *v)
{
    const char *reason = "Scaled";
    char msg[768] = "";
    for (size_t i = 0; i < v->pools.n && !msg[0]; i++) {
        const struct pool *p = &v->pools.v[i];
        if (p->blocked_reason || p->n_ready >= p->replicas) {
            continue;
        }
        reason = "ScalingUp";
        int n = snprintf(msg, sizeof(msg), "variant %s: %d of %lld replicas ready", p->variant,
                         p->n_ready, (long long)p->replicas);
        for (size_t k = 0; k < v->reps.n; k++) {
            const struct replica *r = &v->reps.v[k];
            const char *wait =
                r->pool == (int)i && !r->running ? gt_feed_wait(v->ic->c, r->jo->key) : NULL;
            if (wait) {
                const char *text;
                reason = gt_isvc_scale_wait_reason(wait, &text);
                snprintf(msg + n, sizeof(msg) - (size_t)n, "; replica %ld waits: %.600s", r->index,
                         text);
                break;
            }
        }
    }
    json_t *cnd = condition(v, "Scaled", !msg[0], reason, msg);
    const json_t *was =
        gt_json_find(json_object_get(v->old_status, "conditions"), "type", "Scaled");
    const char *was_msg = json_string_value(json_object_get(was, "message"));
    if (strcmp(reason, "Scaled") && strcmp(reason, "ScalingUp") &&
        (!was_msg || strcmp(was_msg, msg))) {
        event(v, "Warning", reason, "%s", msg);
    }
    return cnd;
}

/* latencyP50Ms and latencyP99Ms of pool pi in its status entry e, when
 * the gateway logged requests of it over its window */
static void set_percentiles(const struct svc *v, int pi, json_t *e)
{
    struct gt_gwlog_hist h;
    pool_latency(v, pi, &h);
    if (h.n > 0) {
        json_object_set_new(e, "latencyP50Ms", json_integer(gt_gwlog_quantile_ms(&h, 0.50)));
        json_object_set_new(e, "latencyP99Ms", json_integer(gt_gwlog_quantile_ms(&h, 0.99)));
    }
}

static json_t *status_of(struct svc *v)
{
    json_t *st = json_object();
    char *url = gt_xasprintf("/serving/%s/%s/", v->project, v->name);
    gt_obj_set_str(st, "url", url);
    free(url);
    char *host = gt_xasprintf("%s.%s.%s", v->name, v->project, v->ic->c->s->cfg->gateway_domain);
    gt_obj_set_str(st, "host", host);
    free(host);
    if (v->stable) {
        json_object_set(st, "stable", (json_t *)v->stable);
    }
    json_object_set(st, "retired", v->retired);
    if (v->rolled_back_obj) {
        json_object_set(st, "rolledBack", v->rolled_back_obj);
    }
    json_t *vars = json_array();
    int64_t total_w = 0;
    for (size_t i = 0; i < v->pools.n; i++) {
        total_w += v->pools.v[i].weight;
    }
    for (size_t i = 0; i < v->pools.n; i++) {
        const struct pool *p = &v->pools.v[i];
        double rps, er;
        int64_t rt;
        pool_traffic(v, (int)i, &rps, &er, &rt);
        json_t *e = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:f, s:f, s:I}", "name", p->variant,
                              "revision", p->rev, "role", p->canary ? "canary" : "stable", "weight",
                              (json_int_t)(total_w ? p->weight * 100 / total_w : 0), "replicas",
                              (json_int_t)p->replicas, "readyReplicas", (json_int_t)p->n_ready,
                              "requestsPerSecond", round(rps * 10) / 10, "errorRate",
                              round(er * 10000) / 10000, "latencyMs", (json_int_t)rt);
        json_object_set_new(e, "inFlight",
                            json_integer((json_int_t)load_of(v, NULL, (int)i, false)));
        if (p->max_replicas > p->min_replicas) {
            json_object_set_new(e, "minReplicas", json_integer((json_int_t)p->min_replicas));
            json_object_set_new(e, "maxReplicas", json_integer((json_int_t)p->max_replicas));
        }
        set_percentiles(v, (int)i, e);
        json_array_append_new(vars, e);
    }
    json_object_set_new(st, "variants", vars);
    json_object_set_new(st, "conditions",
                        json_pack("[o, o]", ready_condition(v), scaled_condition(v)));
    return st;
}

static void write_status(struct svc *v, struct svc_state *ss, json_t *st)
{
    struct gt_ctl *c = v->ic->c;
    json_t *a = json_deep_copy(st), *b = json_deep_copy(v->old_status);
    strip_traffic(a);
    strip_traffic(b);
    bool same_shape = json_equal(a, b);
    json_decref(a);
    json_decref(b);
    int64_t now = gt_now_ms();
    if ((same_shape &&
         (json_equal(st, v->old_status) || now - ss->traffic_written_ms < TRAFFIC_WRITE_MS)) ||
        gt_ctl_busy(c, v->o->key)) {
        json_decref(st);
        return;
    }
    ss->traffic_written_ms = now;
    json_t *obj = json_deep_copy(v->o->obj);
    json_object_set_new(obj, "status", st);
    gt_ctl_write(c, GT_STORE_UPDATE, v->o->key, obj, v->o->rev, NULL, NULL);
    json_decref(obj);
}

static void reconcile_one(struct gt_isvcctl *ic, const struct gt_cobj *o)
{
    const struct gt_api_object *t = o->t;
    struct svc v = {.ic = ic, .o = o, .project = t->meta.project, .name = t->meta.name};
    v.spec = json_object_get(o->obj, "spec");
    v.old_status = json_object_get(o->obj, "status");
    v.max_surge = json_integer_value(gt_json_path(v.spec, "rollout.maxSurge"));
    v.max_unavailable = json_integer_value(gt_json_path(v.spec, "rollout.maxUnavailable"));
    struct svc_state *ss = gt_strmap_get(&ic->state, o->key);
    if (!ss) {
        ss = gt_xcalloc(1, sizeof(*ss));
        gt_strmap_put(&ic->state, o->key, ss);
    }
    plan_pools(&v);
    char *prefix = gt_xasprintf("/jobs/%s/" GT_ISVC_JOB_PREFIX "%s-", v.project, v.name);
    struct collect x = {&v, prefix};
    gt_strmap_each(&ic->c->objs[GT_KIND_JOB], collect_cb, &x);
    free(prefix);
    autoscale(&v, ss);
    count_ready(&v);
    if (watch_canary(&v, ss)) {
        /* after a rollback the canary's replicas are no pool's: recount */
        for (size_t k = 0; k < v.reps.n; k++) {
            struct replica *r = &v.reps.v[k];
            if (r->pool >= (int)v.pools.n) {
                r->pool = -1;
            }
        }
        for (size_t i = 0; i < v.pools.n; i++) {
            v.pools.v[i].n_ready = v.pools.v[i].n_total = 0;
        }
        count_ready(&v);
    }
    /* every variant with replicas or in the spec */
    for (size_t i = 0; i < v.pools.n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i; j++) {
            seen |= !strcmp(v.pools.v[j].variant, v.pools.v[i].variant);
        }
        if (!seen) {
            roll(&v, v.pools.v[i].variant);
        }
    }
    for (size_t k = 0; k < v.reps.n; k++) {
        const char *var = v.reps.v[k].variant;
        bool known = false;
        for (size_t i = 0; var && i < v.pools.n; i++) {
            known |= !strcmp(v.pools.v[i].variant, var);
        }
        for (size_t j = 0; var && !known && j < k; j++) {
            known |= v.reps.v[j].variant && !strcmp(v.reps.v[j].variant, var);
        }
        if (var && !known) {
            roll(&v, var);
        }
    }
    if (ic->gw) {
        bool public_ = json_is_true(json_object_get(v.spec, "public"));
        const char *rp = json_string_value(json_object_get(v.spec, "readinessPath"));
        gt_gateway_service(ic->gw, v.project, v.name, public_, rp ? rp : "/v2/health/ready");
        for (size_t k = 0; k < v.reps.n; k++) {
            const struct replica *r = &v.reps.v[k];
            if (r->running) {
                gt_gateway_server(ic->gw, v.project, v.name, r->name, r->host, r->port,
                                  server_weight(&v, r), r->draining || r->deleting);
            }
        }
    }
    write_status(&v, ss, status_of(&v));
    json_decref(v.new_stable);
    json_decref(v.retired);
    json_decref(v.rolled_back_obj);
    GT_VEC_FREE(&v.pools);
    GT_VEC_FREE(&v.reps);
}

struct objs GT_VEC(const struct gt_cobj *);

static int push_cb(const char *key, void *val, void *arg)
{
    (void)key;
    *GT_VEC_PUSH((struct objs *)arg, 8) = val;
    return 0;
}

/* Replica jobs whose service is gone are deleted. */
static int orphan_cb(const char *key, void *val, void *arg)
{
    struct gt_isvcctl *ic = arg;
    const struct gt_cobj *jo = val;
    const struct gt_api_job *job = gt_cobj_job(jo);
    const char *svc = label(job, LABEL_SVC);
    if (!svc || strncmp(job->o.meta.name, GT_ISVC_JOB_PREFIX, strlen(GT_ISVC_JOB_PREFIX)) != 0) {
        return 0;
    }
    char *sk = gt_xasprintf("/inferenceservices/%s/%s", job->o.meta.project, svc);
    if (!gt_ctl_get(ic->c, GT_KIND_INFERENCESERVICE, sk)) {
        gt_ctl_delete_job(ic->c, jo);
        free(gt_strmap_del(&ic->draining, key));
    }
    free(sk);
    return 0;
}

/* Drop the entries of m (free()d values) whose object of kind is no
 * longer cached: the drains of stopped jobs, the windows of deleted
 * services. */
struct prune {
    struct gt_isvcctl *ic;
    struct gt_strmap *m;
    enum gt_kind kind;
};

static int prune_cb(const char *key, void *val, void *arg)
{
    (void)val;
    struct prune *p = arg;
    if (!gt_ctl_get(p->ic->c, p->kind, key)) {
        free(gt_strmap_del(p->m, key));
        return 1; /* the map changed: walk again */
    }
    return 0;
}

static void prune(struct gt_isvcctl *ic, struct gt_strmap *m, enum gt_kind kind)
{
    struct prune p = {ic, m, kind};
    for (size_t before = m->n + 1; m->n < before;) {
        before = m->n;
        gt_strmap_each(m, prune_cb, &p);
    }
}

void gt_isvcctl_reconcile(struct gt_isvcctl *ic)
{
    if (!ic->dirty) {
        return;
    }
    ic->dirty = false;
    struct objs svcs = {0};
    gt_strmap_each(&ic->c->objs[GT_KIND_INFERENCESERVICE], push_cb, &svcs);
    if (ic->gw) {
        gt_gateway_begin(ic->gw);
    }
    for (size_t i = 0; i < svcs.n; i++) {
        reconcile_one(ic, svcs.v[i]);
    }
    GT_VEC_FREE(&svcs);
    gt_strmap_each(&ic->c->objs[GT_KIND_JOB], orphan_cb, ic);
    prune(ic, &ic->draining, GT_KIND_JOB);
    prune(ic, &ic->state, GT_KIND_INFERENCESERVICE);
    if (ic->gw) {
        gt_gateway_commit(ic->gw);
    }
}
