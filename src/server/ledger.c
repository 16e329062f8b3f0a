/*
 * The ledger: one record per task run that held GPUs, written once the run
 * is terminal, at GT_LEDGER_PREFIX<task uid> in the store (so it is as
 * durable as any object, and a create: a second write of the same run is
 * refused by the store, never counted twice). A record says who (project,
 * job, task, department, user), where (node, each GPU's model and milli)
 * and how long: from the Task's boundTime to its finishTime (whole
 * seconds, as Task times are written), the span in which it held quota and
 * GPUs (DESIGN.md "Resource model"). gpuMilliSeconds = sum over its GPUs of
 * milli x seconds, an exact integer; utilizedGpuMilliSeconds the same
 * weighted by the utilisation samples agents reported (telemetry.c).
 *
 * Stored record (JSON):
 *   {"uid","project","job","task","department","user","node","phase",
 *    "reason","startTime","endTime","seconds","gpus":[{"index","uuid",
 *    "model","milli"}],"gpuMilliSeconds","utilizedGpuMilliSeconds"}
 *
 * Reports read the records from the store each time (a replica that is
 * not the leader serves the same numbers) and clip each run to the window
 * [from, to): a run's share in the window is its GPUs' milli x the seconds
 * of overlap, its utilised share scaled by the same fraction (rounded
 * down); a run of 0 s (bound and ended within one second) is listed, with
 * nothing to count, when it starts in the window. The report's totals are the sums of the same
 * per-record shares the records listing shows, so they agree to the milli-GPU-second.
 *
 * In memory: the uids recorded of the runs still stored as Tasks (loaded at
 * start, so a restart writes no record again; a run's is dropped when its
 * Task is deleted or replaced by a restart's, so this stays as small as
 * the Tasks kept), the writes in flight, the records whose write failed
 * (kept whole, written again at the next tick), and per job the
 * gpuMilliSeconds of its recorded runs (one entry per job name ever
 * recorded), the attained service the scheduler orders by: a record
 * written sets it for its job in the model, and each cycle the feeder adds
 * the runs still going.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "server/cache.h"
#include "server/ledger.h"
#include "server/reply.h"
#include "server/storeio.h"
#include "server/telemetry.h"

static const char marker[] = "";
#define MARK ((void *)marker)

static void write_ctx_free(void *p);

struct gt_ledger {
    struct gt_strmap recorded; /* uid of a stored Task's run -> MARK: its record is stored */
    struct gt_strmap inflight; /* task uid -> MARK: its record is being written */
    struct gt_strmap retry;    /* run uid -> struct write_ctx: write again at the next tick */
    struct gt_strmap job_ms;   /* "project/job" -> int64_t *: its recorded gpuMilliSeconds */
};

/* Count a recorded run of gpu_ms for the job "project/job". */
static void job_add(struct gt_ledger *l, const char *job_id, int64_t gpu_ms)
{
    int64_t *sum = gt_strmap_get(&l->job_ms, job_id);
    if (!sum) {
        sum = gt_xcalloc(1, sizeof(*sum));
        gt_strmap_put(&l->job_ms, job_id, sum);
    }
    if (gpu_ms > 0 && gt_add_i64(*sum, gpu_ms, sum) < 0) {
        *sum = INT64_MAX;
    }
}

/* The model id of the job a record (or Task) belongs to; caller frees. */
static char *record_job_id(const char *project, const char *job)
{
    return gt_xasprintf("%s/%s", project ? project : "", job ? job : "");
}

struct load_ctx {
    struct gt_ledger *l;
    struct gt_strmap tasks; /* uids of the cached Tasks -> MARK */
};

static int task_uid_cb(const char *key, void *val, void *arg)
{
    (void)key;
    const char *uid = gt_cobj_task(val)->o.meta.uid;
    if (uid) {
        gt_strmap_put(arg, uid, MARK);
    }
    return 0;
}

static int load_cb(const struct gt_store_kv *kv, void *arg)
{
    struct load_ctx *x = arg;
    struct gt_ledger *l = x->l;
    const char *uid = kv->key + strlen(GT_LEDGER_PREFIX);
    if (gt_strmap_get(&x->tasks, uid)) {
        gt_strmap_put(&l->recorded, uid, MARK);
    }
    json_t *rec = json_loadb(kv->value, kv->value_len, 0, NULL);
    const char *job = json_string_value(json_object_get(rec, "job"));
    if (job && job[0]) {
        char *id = record_job_id(json_string_value(json_object_get(rec, "project")), job);
        job_add(l, id, json_integer_value(json_object_get(rec, "gpuMilliSeconds")));
        free(id);
    }
    json_decref(rec);
    return 0;
}

int gt_ledger_open(struct gt_ctl *c, struct gt_ledger **out, struct gt_err *err)
{
    struct gt_ledger *l = gt_xcalloc(1, sizeof(*l));
    gt_strmap_init(&l->recorded);
    gt_strmap_init(&l->inflight);
    gt_strmap_init(&l->retry);
    gt_strmap_init(&l->job_ms);
    struct load_ctx x = {.l = l};
    gt_strmap_init(&x.tasks);
    gt_strmap_each(&c->objs[GT_KIND_TASK], task_uid_cb, &x.tasks);
    int rc = gt_store_list(c->s->store, GT_LEDGER_PREFIX, load_cb, &x, NULL, err);
    gt_strmap_fini(&x.tasks, NULL);
    if (rc) {
        gt_ledger_free(l);
        return rc;
    }
    *out = l;
    return 0;
}

void gt_ledger_free(struct gt_ledger *l)
{
    if (l) {
        gt_strmap_fini(&l->recorded, NULL);
        gt_strmap_fini(&l->inflight, NULL);
        gt_strmap_fini(&l->retry, write_ctx_free);
        gt_strmap_fini(&l->job_ms, free);
        free(l);
    }
}

/* ---- writing records ---- */

static const char *gpu_model(const struct gt_ctl *c, const char *node,
                             const struct gt_api_task_gpu *g)
{
    char *key = gt_xasprintf("/nodes/%s", node);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_NODE, key);
    free(key);
    const struct gt_api_node *n = o ? gt_cobj_node(o) : NULL;
    for (size_t i = 0; n && i < n->status.gpus.n; i++) {
        const struct gt_api_node_gpu *x = &n->status.gpus.v[i];
        bool same = g->uuid && x->uuid ? !strcmp(g->uuid, x->uuid) : x->index == g->index;
        if (same && x->model) {
            return x->model;
        }
    }
    return "unknown";
}

/* The record of a terminal run t, or NULL when it held no GPUs or its
 * times are missing (new reference). */
static json_t *record_of(struct gt_ctl *c, const struct gt_api_task *t)
{
    const struct gt_api_task_status *st = &t->status;
    int64_t start_ms = 0, end_ms = 0;
    if (!t->spec.gpus.n || !t->spec.node_name || !st->bound_time || !st->finish_time ||
        gt_time_parse(st->bound_time, &start_ms) || gt_time_parse(st->finish_time, &end_ms)) {
        return NULL;
    }
    int64_t seconds = end_ms > start_ms ? end_ms / 1000 - start_ms / 1000 : 0;
    json_t *gpus = json_array();
    int64_t milli_total = 0;
    for (size_t i = 0; i < t->spec.gpus.n; i++) {
        const struct gt_api_task_gpu *g = &t->spec.gpus.v[i];
        int64_t milli = g->milli == GT_API_UNSET ? 1000 : g->milli;
        milli_total += milli;
        json_t *o = json_pack("{s:I, s:s, s:I}", "index", (json_int_t)g->index, "model",
                              gpu_model(c, t->spec.node_name, g), "milli", (json_int_t)milli);
        if (g->uuid) {
            json_object_set_new(o, "uuid", json_string(g->uuid));
        }
        json_array_append_new(gpus, o);
    }
    int64_t used = gt_telemetry_task_take(c->tel, t->o.meta.uid) / 1000;
    int64_t whole = milli_total * seconds;
    used = used > whole ? whole : used;
    const char *dept = t->spec.department ? t->spec.department : "";
    const char *user = t->o.meta.creator.user ? t->o.meta.creator.user : "";
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s?, s:s, s:s, s:I, s:o, s:I, "
                     "s:I}",
                     "uid", t->o.meta.uid, "project", t->o.meta.project, "job",
                     t->spec.job ? t->spec.job : "", "task", t->o.meta.name, "department", dept,
                     "user", user, "node", t->spec.node_name, "phase",
                     gt_api_task_phase_name((enum gt_task_phase)st->phase), "reason", st->reason,
                     "startTime", st->bound_time, "endTime", st->finish_time, "seconds",
                     (json_int_t)seconds, "gpus", gpus, "gpuMilliSeconds", (json_int_t)whole,
                     "utilizedGpuMilliSeconds", (json_int_t)used);
}

/* A run's record being written, or kept to be written again: its text,
 * made once (the utilisation samples are taken with it), so a retry does
 * not depend on the Task being still cached, or still this run. */
struct write_ctx {
    struct gt_ctl *c;
    char *uid;
    char *task_key;
    char *job_id; /* NULL: the run belongs to no job */
    char *key;    /* GT_LEDGER_PREFIX uid */
    struct gt_buf text;
    int64_t gpu_ms;
    int64_t submit_ns;
};

static void write_ctx_free(void *p)
{
    struct write_ctx *w = p;
    if (w) {
        free(w->uid);
        free(w->task_key);
        free(w->job_id);
        free(w->key);
        gt_buf_fini(&w->text);
        free(w);
    }
}

static void write_end(struct write_ctx *w, int rc, const struct gt_err *err);
static void write_done(int rc, int64_t rev, const struct gt_err *err, void *arg);

/* Submit w's record (w in flight until write_end). */
static void write_submit(struct write_ctx *w)
{
    gt_strmap_put(&w->c->ledger->inflight, w->uid, MARK);
    w->submit_ns = gt_now_ns();
    int rc = gt_server_write(w->c->s, true, GT_STORE_CREATE, w->key, w->text.data, w->text.len, 0,
                             write_done, w);
    if (rc) {
        struct gt_err err = {0};
        gt_err_set(&err, rc, "the store refused the write");
        write_end(w, rc, &err);
    }
}

/* The write w ended with rc (err: why it failed): frees w, or keeps it in
 * l->retry. */
static void write_end(struct write_ctx *w, int rc, const struct gt_err *err)
{
    struct gt_ledger *l = w->c->ledger;
    gt_strmap_del(&l->inflight, w->uid);
    if (rc == 0 || rc == GT_EEXISTS) {
        /* GT_EEXISTS: written since the load, by another replica */
        const struct gt_cobj *o = gt_ctl_get(w->c, GT_KIND_TASK, w->task_key);
        const char *now_uid = o ? gt_cobj_task(o)->o.meta.uid : NULL;
        if (now_uid && !strcmp(now_uid, w->uid)) {
            gt_strmap_put(&l->recorded, w->uid, MARK); /* else deleted meanwhile */
        }
        if (w->job_id) {
            /* the job, if in the model, has this as its attained service
             * until the next cycle adds its runs still going (feeder.c);
             * GT_ENOTFOUND: it is not */
            job_add(l, w->job_id, w->gpu_ms);
            gt_sched_job_set_attained(w->c->model, w->job_id, gt_ledger_job_gpu_ms(l, w->job_id),
                                      NULL);
        }
    } else {
        gt_log_warn("ledger record not written; retrying", "task=%s uid=%s err=\"%s\"", w->task_key,
                    w->uid, err ? err->msg : "");
        gt_strmap_put(&l->retry, w->uid, w);
        return;
    }
    write_ctx_free(w);
}

static void write_done(int rc, int64_t rev, const struct gt_err *err, void *arg)
{
    (void)rev;
    struct write_ctx *w = arg;
    gt_server_write_done(w->c->s, rc, w->submit_ns);
    write_end(w, rc, err);
}

void gt_ledger_note_task(struct gt_ctl *c, const char *key)
{
    struct gt_ledger *l = c->ledger;
    const struct gt_cobj *o = l ? gt_ctl_get(c, GT_KIND_TASK, key) : NULL;
    const struct gt_api_task *t = o ? gt_cobj_task(o) : NULL;
    const char *uid = t ? t->o.meta.uid : NULL;
    if (!uid || !gt_api_task_phase_terminal((enum gt_task_phase)t->status.phase) ||
        gt_strmap_get(&l->recorded, uid) || gt_strmap_get(&l->inflight, uid) ||
        gt_strmap_get(&l->retry, uid)) {
        return;
    }
    json_t *rec = record_of(c, t);
    if (!rec) {
        gt_telemetry_task_take(c->tel, uid);
        return;
    }
    struct write_ctx *w = gt_xcalloc(1, sizeof(*w));
    w->c = c;
    w->uid = gt_xstrdup(uid);
    w->task_key = gt_xstrdup(key);
    w->job_id =
        t->spec.job && t->spec.job[0] ? record_job_id(t->o.meta.project, t->spec.job) : NULL;
    w->key = gt_xasprintf(GT_LEDGER_PREFIX "%s", uid);
    gt_buf_init(&w->text);
    gt_api_encode_json(&w->text, rec);
    w->gpu_ms = json_integer_value(json_object_get(rec, "gpuMilliSeconds"));
    json_decref(rec);
    write_submit(w);
}

static int retry_cb(const char *key, void *val, void *arg)
{
    (void)key;
    (void)arg;
    write_submit(val);
    return 0;
}

int64_t gt_ledger_job_gpu_ms(const struct gt_ledger *l, const char *job_id)
{
    const int64_t *sum = l ? gt_strmap_get(&l->job_ms, job_id) : NULL;
    return sum ? *sum : 0;
}

void gt_ledger_task_gone(struct gt_ledger *l, const char *uid)
{
    if (l && uid) {
        gt_strmap_del(&l->recorded, uid);
    }
}

void gt_ledger_tick(struct gt_ctl *c)
{
    struct gt_ledger *l = c->ledger;
    if (!l || !l->retry.n) {
        return;
    }
    struct gt_strmap again = l->retry;
    gt_strmap_init(&l->retry);
    gt_strmap_each(&again, retry_cb, c);
    gt_strmap_fini(&again, NULL);
}

/* ---- reading: records and the report ---- */

enum by { BY_DEPARTMENT, BY_PROJECT, BY_USER, BY_MODEL };
static const char *const by_names[] = {"department", "project", "user", "model"};

struct window {
    int64_t from_s, to_s;
};

/* A record's share in the window. */
struct share {
    bool in;         /* the run overlaps the window (a run of 0 s: starts in it) */
    int64_t seconds; /* of overlap */
    int64_t gpu_milli_s;
    int64_t used_milli_s;
};

static int64_t rec_int(const json_t *rec, const char *name)
{
    return json_integer_value(json_object_get(rec, name));
}

/* The share of rec (a stored record) in w. */
static struct share share_of(const json_t *rec, const struct window *w)
{
    struct share sh = {0};
    int64_t s_ms = 0, e_ms = 0;
    const char *st = json_string_value(json_object_get(rec, "startTime"));
    const char *et = json_string_value(json_object_get(rec, "endTime"));
    if (!st || !et || gt_time_parse(st, &s_ms) || gt_time_parse(et, &e_ms)) {
        return sh;
    }
    int64_t s = s_ms / 1000, e = e_ms / 1000;
    int64_t a = s > w->from_s ? s : w->from_s, b = e < w->to_s ? e : w->to_s;
    sh.in = s < w->to_s && (e > w->from_s || (e <= s && s >= w->from_s));
    if (!sh.in) {
        return sh;
    }
    int64_t whole = rec_int(rec, "seconds");
    sh.seconds = b > a ? b - a : 0;
    sh.gpu_milli_s = 0;
    size_t i;
    const json_t *g;
    json_array_foreach(json_object_get(rec, "gpus"), i, g)
    {
        sh.gpu_milli_s += rec_int(g, "milli") * sh.seconds;
    }
    int64_t used = rec_int(rec, "utilizedGpuMilliSeconds");
    sh.used_milli_s = whole > 0 && sh.seconds < whole ? used * sh.seconds / whole : used;
    return sh;
}

struct row {
    int64_t gpu_milli_s, used_milli_s, runs;
};

struct read_ctx {
    const struct gt_ctl *c;
    const struct gt_server_user *user;
    struct window w;
    enum by by;
    bool report;
    json_t *items;         /* records listing */
    struct gt_strmap rows; /* report: group name -> struct row */
    struct row total;
};

static void row_add(struct gt_strmap *rows, const char *name, int64_t gms, int64_t ums, int runs)
{
    struct row *r = gt_strmap_get(rows, name);
    if (!r) {
        r = gt_xcalloc(1, sizeof(*r));
        gt_strmap_put(rows, name, r);
    }
    r->gpu_milli_s += gms;
    r->used_milli_s += ums;
    r->runs += runs;
}

static void report_add(struct read_ctx *x, const json_t *rec, const struct share *sh)
{
    x->total.gpu_milli_s += sh->gpu_milli_s;
    x->total.used_milli_s += sh->used_milli_s;
    x->total.runs++;
    if (x->by != BY_MODEL) {
        const char *name = json_string_value(json_object_get(rec, by_names[x->by]));
        row_add(&x->rows, name && *name ? name : "(none)", sh->gpu_milli_s, sh->used_milli_s, 1);
        return;
    }
    /* by model: each GPU's part; the utilised share split as the milli */
    size_t i;
    const json_t *g;
    int64_t left = sh->used_milli_s;
    size_t n = json_array_size(json_object_get(rec, "gpus"));
    json_array_foreach(json_object_get(rec, "gpus"), i, g)
    {
        int64_t gms = rec_int(g, "milli") * sh->seconds;
        int64_t ums = i + 1 == n        ? left
                      : sh->gpu_milli_s ? sh->used_milli_s * gms / sh->gpu_milli_s
                                        : 0;
        left -= ums;
        const char *model = json_string_value(json_object_get(g, "model"));
        row_add(&x->rows, model ? model : "unknown", gms, ums, i == 0);
    }
}

static int read_cb(const struct gt_store_kv *kv, void *arg)
{
    struct read_ctx *x = arg;
    json_t *rec = json_loadb(kv->value, kv->value_len, 0, NULL);
    const char *project = json_string_value(json_object_get(rec, "project"));
    if (!rec || !project || !gt_server_can_read_project(x->c->s->access, x->user, project)) {
        json_decref(rec);
        return 0;
    }
    struct share sh = share_of(rec, &x->w);
    if (sh.in) {
        if (x->report) {
            report_add(x, rec, &sh);
        } else {
            json_object_set_new(rec, "inWindow",
                                json_pack("{s:I, s:I, s:I}", "seconds", (json_int_t)sh.seconds,
                                          "gpuMilliSeconds", (json_int_t)sh.gpu_milli_s,
                                          "utilizedGpuMilliSeconds", (json_int_t)sh.used_milli_s));
            json_array_append(x->items, rec);
        }
    }
    json_decref(rec);
    return 0;
}

static json_t *row_json(const char *name, const struct row *r)
{
    json_t *o = json_pack(
        "{s:I, s:f, s:I, s:f, s:I}", "gpuMilliSeconds", (json_int_t)r->gpu_milli_s, "gpuSeconds",
        (double)r->gpu_milli_s / 1000, "utilizedGpuMilliSeconds", (json_int_t)r->used_milli_s,
        "utilizedGpuSeconds", (double)r->used_milli_s / 1000, "taskRuns", (json_int_t)r->runs);
    if (name) {
        json_object_set_new(o, "name", json_string(name));
    }
    return o;
}

struct rows_ctx {
    const char **names;
    size_t n;
};

static int names_cb(const char *key, void *val, void *arg)
{
    (void)val;
    struct rows_ctx *x = arg;
    x->names[x->n++] = key;
    return 0;
}

static int str_order(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The report's rows, by name. */
static json_t *rows_json(const struct gt_strmap *rows)
{
    struct rows_ctx x = {gt_xcalloc(rows->n + 1, sizeof(char *)), 0};
    gt_strmap_each(rows, names_cb, &x);
    qsort(x.names, x.n, sizeof(*x.names), str_order);
    json_t *arr = json_array();
    for (size_t i = 0; i < x.n; i++) {
        json_array_append_new(arr, row_json(x.names[i], gt_strmap_get(rows, x.names[i])));
    }
    free(x.names);
    return arr;
}

/* from and to of q: 0, or GT_EBADREQ naming the parameter. Default: from
 * the epoch to now. */
static int window_of(const struct evkeyvalq *q, struct window *w, struct gt_err *err)
{
    static const char *const names[] = {"from", "to"};
    int64_t *out[] = {&w->from_s, &w->to_s};
    w->from_s = 0;
    w->to_s = gt_now_ms() / 1000 + 1;
    for (int i = 0; i < 2; i++) {
        const char *v = evhttp_find_header(q, names[i]);
        int64_t ms = 0;
        if (!v) {
            continue;
        }
        if (gt_time_parse(v, &ms)) {
            return gt_err_set(err, GT_EBADREQ,
                              "%s: must be an RFC 3339 time (2026-01-02T15:04:05Z), not \"%.64s\"",
                              names[i], v);
        }
        *out[i] = ms / 1000;
    }
    if (w->to_s <= w->from_s) {
        return gt_err_set(err, GT_EBADREQ, "to: must be after from");
    }
    return 0;
}

void gt_ledger_serve(struct gt_ctl *c, struct gt_req *r, int method, const struct evkeyvalq *q)
{
    if (method != EVHTTP_REQ_GET) {
        gt_req_error(r, GT_EMETHOD, "method not allowed here");
        return;
    }
    struct read_ctx x = {.c = c, .user = r->user, .report = r->route.type == GT_ROUTE_USAGE};
    struct gt_err err = {0};
    if (window_of(q, &x.w, &err)) {
        gt_req_error_err(r, &err);
        return;
    }
    const char *by = evhttp_find_header(q, "by");
    x.by = BY_DEPARTMENT;
    for (int i = 0; by && i < (int)GT_ARRAY_LEN(by_names); i++) {
        if (!strcmp(by, by_names[i])) {
            x.by = (enum by)i;
            by = NULL;
        }
    }
    if (by) {
        gt_req_error(r, GT_EBADREQ, "by: must be department, project, user or model, not \"%.64s\"",
                     by);
        return;
    }
    gt_strmap_init(&x.rows);
    x.items = json_array();
    int rc = gt_store_list(c->s->store, GT_LEDGER_PREFIX, read_cb, &x, NULL, &err);
    char from[32], to[32];
    gt_time_format(x.w.from_s * 1000, from, sizeof(from));
    gt_time_format(x.w.to_s * 1000, to, sizeof(to));
    if (rc) {
        gt_req_error_err(r, &err);
    } else if (x.report) {
        gt_req_reply_json(r, json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "apiVersion",
                                       GT_API_VERSION, "kind", "UsageReport", "from", from, "to",
                                       to, "by", by_names[x.by], "rows", rows_json(&x.rows),
                                       "total", row_json(NULL, &x.total)));
    } else {
        gt_req_reply_json(r, json_pack("{s:s, s:s, s:s, s:s, s:O}", "apiVersion", GT_API_VERSION,
                                       "kind", "UsageRecordList", "from", from, "to", to, "items",
                                       x.items));
    }
    json_decref(x.items);
    gt_strmap_fini(&x.rows, free);
}
