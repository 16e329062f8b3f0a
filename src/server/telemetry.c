/*
 * Telemetry: the scalars and utilisation samples agents report for their
 * running tasks (POST nodes/N/telemetry, about once a second per node),
 * kept per job in memory and served through the API.
 *
 * Everything is bounded: a job keeps at most GT_TEL_TAGS_MAX tags of at
 * most GT_TEL_POINTS_MAX points each (when a tag fills up, every other
 * point goes and from then on only every stride-th new point is kept, the
 * stride doubling each time; the latest point is always kept apart), and
 * two rings of history buckets: GT_TEL_FINE_N of GT_TEL_FINE_S seconds (a
 * day) and GT_TEL_COARSE_N of GT_TEL_COARSE_S seconds (a week), which
 * grow as they fill. A job's entry goes with the job; a task's with its
 * ledger record (gt_telemetry_task_take) or after ten minutes of silence.
 *
 * A job's current figures are the sums over its tasks whose last sample is
 * fresh (GT_TEL_FRESH_MS); its GPU utilisation is their mean weighted by
 * the tasks' GPU milli. The once-a-second tick folds the current figures
 * into the open buckets, and a bucket is the mean of the ticks it saw.
 * Nothing here is durable: a restart of gantryd starts empty (the ledger,
 * ledger.c, is what must survive).
 *
 * A node's current use (nodestats, for `gantry top nodes`) is the same
 * sums over the fresh samples of the tasks its agent reported, computed
 * when asked.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "server/cache.h"
#include "server/reply.h"
#include "server/telemetry.h"

#define TASK_FORGET_MS (10 * 60 * 1000)

struct sample {
    int64_t at_ms;   /* 0: none yet */
    double gpu_util; /* percent */
    int64_t gpu_mem_bytes;
    int64_t cpu_milli;
    int64_t mem_bytes;
};

/* One task run, by uid. */
struct ttask {
    char *job_key;
    char *node;        /* the node whose agent sent the last sample */
    int64_t gpu_milli; /* what it holds, all GPUs together */
    struct sample last;
    double util_milli_ms; /* utilised milli-GPU x ms so far */
};

struct point {
    int64_t step;
    double wall_time;
    double value;
};

struct series {
    struct point *v;
    size_t n;
    int64_t stride; /* keep every stride-th point offered */
    int64_t offered;
    struct point latest;
};

struct bucket {
    int64_t t_s; /* start, seconds since the epoch */
    double gpu_util;
    double cpu_milli;
    double gpu_mem_bytes;
    double mem_bytes;
};

/* A ring of at most max buckets, grown as it fills; oldest at head once full. */
struct ring {
    struct bucket *v;
    size_t n, cap, max, head;
    int64_t width_s;
    struct bucket acc; /* the open bucket: sums */
    int64_t acc_n;     /* ticks in it; 0: none open */
};

struct tjob {
    struct gt_strmap tags; /* tag -> struct series */
    int64_t n_dropped;     /* values of tags past GT_TEL_TAGS_MAX */
    struct ring fine, coarse;
    /* current figures, recomputed by each tick */
    struct sample cur;
    int64_t cur_gpu_milli;
    int n_cur_tasks;
    double util_weight; /* sum of gpu_util x gpu_milli over fresh tasks (this tick) */
};

struct gt_telemetry {
    struct gt_strmap jobs;  /* job key -> struct tjob */
    struct gt_strmap tasks; /* task uid -> struct ttask */
};

static void series_free(void *p)
{
    struct series *s = p;
    if (s) {
        free(s->v);
        free(s);
    }
}

static void ring_init(struct ring *r, size_t max, int64_t width_s)
{
    memset(r, 0, sizeof(*r));
    r->max = max;
    r->width_s = width_s;
}

static void tjob_free(void *p)
{
    struct tjob *j = p;
    if (j) {
        gt_strmap_fini(&j->tags, series_free);
        free(j->fine.v);
        free(j->coarse.v);
        free(j);
    }
}

static void ttask_free(void *p)
{
    struct ttask *t = p;
    if (t) {
        free(t->job_key);
        free(t->node);
        free(t);
    }
}

struct gt_telemetry *gt_telemetry_new(void)
{
    struct gt_telemetry *t = gt_xcalloc(1, sizeof(*t));
    gt_strmap_init(&t->jobs);
    gt_strmap_init(&t->tasks);
    return t;
}

void gt_telemetry_free(struct gt_telemetry *t)
{
    if (t) {
        gt_strmap_fini(&t->jobs, tjob_free);
        gt_strmap_fini(&t->tasks, ttask_free);
        free(t);
    }
}

static struct tjob *job_get(struct gt_telemetry *t, const char *key)
{
    struct tjob *j = gt_strmap_get(&t->jobs, key);
    if (!j) {
        j = gt_xcalloc(1, sizeof(*j));
        gt_strmap_init(&j->tags);
        ring_init(&j->fine, GT_TEL_FINE_N, GT_TEL_FINE_S);
        ring_init(&j->coarse, GT_TEL_COARSE_N, GT_TEL_COARSE_S);
        gt_strmap_put(&t->jobs, key, j);
    }
    return j;
}

void gt_telemetry_job_gone(struct gt_telemetry *t, const char *job_key)
{
    tjob_free(gt_strmap_del(&t->jobs, job_key));
}

int64_t gt_telemetry_task_take(struct gt_telemetry *t, const char *uid)
{
    struct ttask *tt = gt_strmap_del(&t->tasks, uid);
    int64_t v = tt ? (int64_t)llround(tt->util_milli_ms) : 0;
    ttask_free(tt);
    return v;
}

/* ---- scalars ---- */

static void series_add(struct series *s, const struct point *p)
{
    s->latest = *p;
    if (s->offered++ % s->stride != 0) {
        return;
    }
    if (s->n == GT_TEL_POINTS_MAX) {
        for (size_t i = 0; i < s->n / 2; i++) {
            s->v[i] = s->v[2 * i];
        }
        s->n /= 2;
        s->stride *= 2;
    }
    s->v[s->n++] = *p;
}

static void scalar_add(struct tjob *j, const char *tag, const struct point *p)
{
    struct series *s = gt_strmap_get(&j->tags, tag);
    if (!s) {
        if (j->tags.n >= GT_TEL_TAGS_MAX) {
            j->n_dropped++;
            return;
        }
        s = gt_xcalloc(1, sizeof(*s));
        s->v = gt_xcalloc(GT_TEL_POINTS_MAX, sizeof(*s->v));
        s->stride = 1;
        gt_strmap_put(&j->tags, tag, s);
    }
    series_add(s, p);
}

/* ---- history ---- */

static void ring_push(struct ring *r, const struct bucket *b)
{
    if (r->n < r->max) {
        GT_VEC_RESERVE(r->v, r->cap, r->n + 1, 64);
        r->v[r->n++] = *b;
        return;
    }
    r->v[r->head] = *b;
    r->head = (r->head + 1) % r->max;
}

/* The i-th oldest bucket. */
static const struct bucket *ring_at(const struct ring *r, size_t i)
{
    return &r->v[(r->head + i) % r->n];
}

/* The open bucket of r (acc_n > 0) as the mean of its ticks. */
static void ring_mean(const struct ring *r, struct bucket *b)
{
    double n = (double)r->acc_n;
    *b = (struct bucket){r->acc.t_s, r->acc.gpu_util / n, r->acc.cpu_milli / n,
                         r->acc.gpu_mem_bytes / n, r->acc.mem_bytes / n};
}

/* Add one tick's figures at now_s, closing the open bucket first if now_s
 * is past it. */
static void ring_add(struct ring *r, int64_t now_s, const struct bucket *x)
{
    int64_t start = now_s - now_s % r->width_s;
    if (r->acc_n && r->acc.t_s != start) {
        struct bucket b;
        ring_mean(r, &b);
        ring_push(r, &b);
        r->acc_n = 0;
    }
    if (!r->acc_n) {
        r->acc = (struct bucket){.t_s = start};
    }
    r->acc.gpu_util += x->gpu_util;
    r->acc.cpu_milli += x->cpu_milli;
    r->acc.gpu_mem_bytes += x->gpu_mem_bytes;
    r->acc.mem_bytes += x->mem_bytes;
    r->acc_n++;
}

struct tick_ctx {
    struct gt_telemetry *t;
    int64_t now_ms;
    struct GT_VEC(char *) stale;
};

static int zero_cb(const char *key, void *val, void *arg)
{
    (void)key;
    (void)arg;
    struct tjob *j = val;
    j->cur = (struct sample){0};
    j->cur_gpu_milli = 0;
    j->n_cur_tasks = 0;
    j->util_weight = 0;
    return 0;
}

static int task_cb(const char *key, void *val, void *arg)
{
    struct tick_ctx *x = arg;
    struct ttask *tt = val;
    int64_t age = x->now_ms - tt->last.at_ms;
    if (age > TASK_FORGET_MS) {
        *GT_VEC_PUSH(&x->stale, 16) = gt_xstrdup(key);
        return 0;
    }
    struct tjob *j = age <= GT_TEL_FRESH_MS ? gt_strmap_get(&x->t->jobs, tt->job_key) : NULL;
    if (j) {
        j->n_cur_tasks++;
        j->cur.at_ms = tt->last.at_ms > j->cur.at_ms ? tt->last.at_ms : j->cur.at_ms;
        j->cur.cpu_milli += tt->last.cpu_milli;
        j->cur.mem_bytes += tt->last.mem_bytes;
        j->cur.gpu_mem_bytes += tt->last.gpu_mem_bytes;
        j->cur_gpu_milli += tt->gpu_milli;
        j->util_weight += tt->last.gpu_util * (double)tt->gpu_milli;
    }
    return 0;
}

static int fold_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct tick_ctx *x = arg;
    struct tjob *j = val;
    if (!j->n_cur_tasks) {
        return 0;
    }
    j->cur.gpu_util = j->cur_gpu_milli ? j->util_weight / (double)j->cur_gpu_milli : 0;
    struct bucket b = {0, j->cur.gpu_util, (double)j->cur.cpu_milli, (double)j->cur.gpu_mem_bytes,
                       (double)j->cur.mem_bytes};
    ring_add(&j->fine, x->now_ms / 1000, &b);
    ring_add(&j->coarse, x->now_ms / 1000, &b);
    return 0;
}

void gt_telemetry_tick(struct gt_telemetry *t, int64_t now_ms)
{
    struct tick_ctx x = {.t = t, .now_ms = now_ms};
    gt_strmap_each(&t->jobs, zero_cb, NULL);
    gt_strmap_each(&t->tasks, task_cb, &x);
    gt_strmap_each(&t->jobs, fold_cb, &x);
    for (size_t i = 0; i < x.stale.n; i++) {
        ttask_free(gt_strmap_del(&t->tasks, x.stale.v[i]));
        free(x.stale.v[i]);
    }
    GT_VEC_FREE(&x.stale);
}

/* ---- POST nodes/N/telemetry ---- */

/* An optional number field of entry e in lo..hi into *out: 0, or GT_EINVAL
 * naming tasks[i].name. */
static int num_field(const json_t *e, size_t i, const char *name, double lo, double hi, double *out,
                     struct gt_err *err)
{
    const json_t *v = json_object_get(e, name);
    if (!v) {
        return 0;
    }
    double d = json_number_value(v);
    if (!json_is_number(v) || !(d >= lo && d <= hi)) {
        return gt_err_set(err, GT_EINVAL, "tasks[%zu].%s: must be a number %g..%g", i, name, lo,
                          hi);
    }
    *out = d;
    return 0;
}

/* Task entry i's scalars for job j: {tag, step, wallTime, value}. */
static int take_scalars(struct tjob *j, const json_t *arr, size_t i, struct gt_err *err)
{
    if (!arr) {
        return 0;
    }
    if (!json_is_array(arr) || json_array_size(arr) > GT_TEL_SCALARS_PER_TASK) {
        return gt_err_set(err, GT_EINVAL, "tasks[%zu].scalars: must be an array of at most %d", i,
                          GT_TEL_SCALARS_PER_TASK);
    }
    size_t k;
    const json_t *s;
    json_array_foreach(arr, k, s)
    {
        const char *tag = json_string_value(json_object_get(s, "tag"));
        const json_t *step = json_object_get(s, "step");
        const json_t *wt = json_object_get(s, "wallTime");
        const json_t *val = json_object_get(s, "value");
        if (!tag || !*tag || strlen(tag) > GT_TEL_TAG_MAX_LEN) {
            return gt_err_set(err, GT_EINVAL, "tasks[%zu].scalars[%zu].tag: want 1..%d characters",
                              i, k, GT_TEL_TAG_MAX_LEN);
        }
        if (!json_is_integer(step) || !json_is_number(wt) || !json_is_number(val)) {
            return gt_err_set(err, GT_EINVAL,
                              "tasks[%zu].scalars[%zu]: want an integer step and numbers "
                              "wallTime and value",
                              i, k);
        }
        struct point p = {json_integer_value(step), json_number_value(wt), json_number_value(val)};
        scalar_add(j, tag, &p);
    }
    return 0;
}

/* The cached Task named by entry e of node's report, if it is that run
 * (uid) on that node; else NULL (it ended or moved: the entry is stale). */
static const struct gt_api_task *entry_task(const struct gt_ctl *c, const json_t *e,
                                            const char *node, char **job_key)
{
    const char *project = json_string_value(json_object_get(e, "project"));
    const char *name = json_string_value(json_object_get(e, "name"));
    const char *uid = json_string_value(json_object_get(e, "uid"));
    if (!project || !name || !uid || strlen(project) > 63 || strlen(name) > GT_ROUTE_NAME_MAX) {
        return NULL;
    }
    char *key = gt_xasprintf("/tasks/%s/%s", project, name);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_TASK, key);
    free(key);
    const struct gt_api_task *t = o ? gt_cobj_task(o) : NULL;
    if (!t || !t->o.meta.uid || strcmp(t->o.meta.uid, uid) != 0 || !t->spec.node_name ||
        strcmp(t->spec.node_name, node) != 0 || !t->spec.job) {
        return NULL;
    }
    *job_key = gt_xasprintf("/jobs/%s/%s", project, t->spec.job);
    return t;
}

static int64_t task_gpu_milli(const struct gt_api_task *t)
{
    int64_t m = 0;
    for (size_t i = 0; i < t->spec.gpus.n; i++) {
        int64_t x = t->spec.gpus.v[i].milli;
        m += x == GT_API_UNSET ? 1000 : x;
    }
    return m;
}

/* One entry of a report, at now_ms. */
static int take_entry(struct gt_ctl *c, const json_t *e, size_t i, const char *node, int64_t now_ms,
                      int *n_stale, struct gt_err *err)
{
    struct sample smp = {.at_ms = now_ms};
    double cpu = 0, mem = 0, gmem = 0;
    int rc = num_field(e, i, "gpuUtil", 0, 100, &smp.gpu_util, err);
    rc = rc ? rc : num_field(e, i, "cpuMilli", 0, 1e9, &cpu, err);
    rc = rc ? rc : num_field(e, i, "memoryBytes", 0, 9e18, &mem, err);
    rc = rc ? rc : num_field(e, i, "gpuMemoryBytes", 0, 9e18, &gmem, err);
    if (rc) {
        return rc;
    }
    smp.cpu_milli = (int64_t)cpu;
    smp.mem_bytes = (int64_t)mem;
    smp.gpu_mem_bytes = (int64_t)gmem;
    char *job_key = NULL;
    const struct gt_api_task *t = entry_task(c, e, node, &job_key);
    if (!t) {
        (*n_stale)++;
        return 0;
    }
    struct tjob *j = job_get(c->tel, job_key);
    rc = take_scalars(j, json_object_get(e, "scalars"), i, err);
    if (gt_api_task_phase_terminal((enum gt_task_phase)t->status.phase)) {
        free(job_key); /* its last scalars; its run is over (and in the ledger) */
        return rc;
    }
    struct ttask *tt = gt_strmap_get(&c->tel->tasks, t->o.meta.uid);
    if (!tt) {
        tt = gt_xcalloc(1, sizeof(*tt));
        tt->job_key = gt_xstrdup(job_key);
        gt_strmap_put(&c->tel->tasks, t->o.meta.uid, tt);
    }
    tt->gpu_milli = task_gpu_milli(t);
    if (!tt->node || strcmp(tt->node, node) != 0) {
        free(tt->node);
        tt->node = gt_xstrdup(node);
    }
    if (tt->last.at_ms) {
        int64_t dt = now_ms - tt->last.at_ms;
        dt = dt < 0 ? 0 : dt > GT_TEL_GAP_MAX_MS ? GT_TEL_GAP_MAX_MS : dt;
        tt->util_milli_ms += smp.gpu_util / 100.0 * (double)tt->gpu_milli * (double)dt;
    }
    tt->last = smp;
    free(job_key);
    return rc;
}

static void post_telemetry(struct gt_ctl *c, struct gt_req *r)
{
    if (!r->user->node && !r->user->admin) {
        gt_req_error(r, GT_EFORBIDDEN, "user \"%s\" cannot report telemetry: agents only",
                     r->user->name);
        return;
    }
    const char *self = gt_server_user_node(r->user);
    if (self && strcmp(self, r->route.name) != 0) {
        gt_req_error(
            r, GT_EFORBIDDEN,
            "user \"%s\" cannot report telemetry of nodes \"%s\" (" GT_NODE_RESTRICTION_RULE ")",
            r->user->name, r->route.name);
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(r->req);
    size_t len = evbuffer_get_length(in);
    json_t *body = NULL;
    struct gt_err err = {0};
    if (gt_api_parse((const char *)evbuffer_pullup(in, (ev_ssize_t)len), len, &body, &err)) {
        gt_req_error_err(r, &err);
        return;
    }
    const json_t *tasks = json_object_get(body, "tasks");
    int rc = 0;
    if (!json_is_array(tasks) || json_array_size(tasks) > GT_TEL_TASKS_PER_POST) {
        rc = gt_err_set(&err, GT_EINVAL, "tasks: must be an array of at most %d entries",
                        GT_TEL_TASKS_PER_POST);
    }
    int n_stale = 0;
    int64_t now_ms = gt_now_ms();
    size_t i;
    const json_t *e;
    json_array_foreach(tasks, i, e)
    {
        if (rc) {
            break;
        }
        rc = json_is_object(e) ? take_entry(c, e, i, r->route.name, now_ms, &n_stale, &err)
                               : gt_err_set(&err, GT_EINVAL, "tasks[%zu]: must be an object", i);
    }
    json_decref(body);
    if (rc) {
        gt_req_error_err(r, &err);
        return;
    }
    struct gt_buf b;
    gt_buf_init(&b);
    gt_buf_printf(&b, "{\"kind\":\"TelemetryAccepted\",\"tasks\":%zu,\"stale\":%d}\n",
                  json_array_size(tasks), n_stale);
    gt_req_reply(r, 200, b.data, b.len);
    gt_buf_fini(&b);
}

/* ---- reads ---- */

static json_t *point_json(const struct point *p)
{
    return json_pack("{s:I, s:f, s:f}", "step", (json_int_t)p->step, "wallTime", p->wall_time,
                     "value", p->value);
}

struct tags_ctx {
    json_t *arr;
    const char *only; /* NULL: every tag */
};

static int tag_cb(const char *tag, void *val, void *arg)
{
    struct tags_ctx *x = arg;
    const struct series *s = val;
    if (x->only && strcmp(x->only, tag) != 0) {
        return 0;
    }
    json_t *steps = json_array(), *values = json_array(), *times = json_array();
    for (size_t i = 0; i < s->n; i++) {
        json_array_append_new(steps, json_integer(s->v[i].step));
        json_array_append_new(values, json_real(s->v[i].value));
        json_array_append_new(times, json_real(s->v[i].wall_time));
    }
    json_array_append_new(x->arr, json_pack("{s:s, s:o, s:I, s:o, s:o, s:o}", "tag", tag, "latest",
                                            point_json(&s->latest), "count", (json_int_t)s->offered,
                                            "steps", steps, "values", values, "wallTimes", times));
    return 0;
}

static int tag_order(const void *a, const void *b)
{
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "tag")),
                  json_string_value(json_object_get(*(json_t *const *)b, "tag")));
}

/* Sort a JSON array in place with cmp over (json_t *const *). */
static void sort_array(json_t *arr, int (*cmp)(const void *, const void *))
{
    size_t n = json_array_size(arr);
    json_t **v = gt_xcalloc(n ? n : 1, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        v[i] = json_incref(json_array_get(arr, i));
    }
    qsort(v, n, sizeof(*v), cmp);
    json_array_clear(arr);
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(arr, v[i]);
    }
    free(v);
}

static json_t *job_header(const char *kind, const struct gt_route *rt)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", GT_API_VERSION, "kind", kind, "project",
                     rt->project, "job", rt->name);
}

static void get_scalars(struct gt_ctl *c, struct gt_req *r, const struct tjob *j,
                        const struct evkeyvalq *q)
{
    json_t *o = job_header("JobScalars", &r->route);
    struct tags_ctx x = {json_array(), evhttp_find_header(q, "tag")};
    if (j) {
        gt_strmap_each(&j->tags, tag_cb, &x);
    }
    sort_array(x.arr, tag_order);
    json_object_set_new(o, "tags", x.arr);
    json_object_set_new(o, "droppedValues", json_integer(j ? j->n_dropped : 0));
    (void)c;
    gt_req_reply_json(r, o);
}

static json_t *current_json(const struct tjob *j)
{
    char ts[32];
    return json_pack("{s:s, s:i, s:f, s:I, s:I, s:I, s:I}", "time",
                     gt_time_format(j->cur.at_ms, ts, sizeof(ts)), "tasks", j->n_cur_tasks,
                     "gpuUtil", j->cur.gpu_util, "gpuMemoryBytes", (json_int_t)j->cur.gpu_mem_bytes,
                     "cpuMilli", (json_int_t)j->cur.cpu_milli, "memoryBytes",
                     (json_int_t)j->cur.mem_bytes, "gpuMilli", (json_int_t)j->cur_gpu_milli);
}

static void get_history(struct gt_req *r, const struct tjob *j, const struct evkeyvalq *q)
{
    const char *res = evhttp_find_header(q, "resolution");
    int64_t width = GT_TEL_FINE_S;
    if (res && !strcmp(res, "60")) {
        width = GT_TEL_COARSE_S;
    } else if (res && strcmp(res, "10") != 0) {
        gt_req_error(r, GT_EBADREQ, "resolution: must be 10 or 60 (seconds), not \"%.32s\"", res);
        return;
    }
    json_t *o = job_header("JobHistory", &r->route);
    json_object_set_new(o, "resolutionSeconds", json_integer(width));
    json_t *times = json_array(), *util = json_array(), *gmem = json_array(), *cpu = json_array(),
           *mem = json_array();
    const struct ring *ring = j ? (width == GT_TEL_FINE_S ? &j->fine : &j->coarse) : NULL;
    struct bucket open = {0};
    if (ring && ring->acc_n) {
        ring_mean(ring, &open);
    }
    size_t n = ring ? ring->n + (ring->acc_n > 0) : 0;
    for (size_t i = 0; i < n; i++) {
        /* the open bucket last, as the mean of the ticks it has seen */
        const struct bucket *b = i < ring->n ? ring_at(ring, i) : &open;
        json_array_append_new(times, json_integer(b->t_s));
        json_array_append_new(util, json_real(b->gpu_util));
        json_array_append_new(gmem, json_integer((json_int_t)b->gpu_mem_bytes));
        json_array_append_new(cpu, json_integer((json_int_t)b->cpu_milli));
        json_array_append_new(mem, json_integer((json_int_t)b->mem_bytes));
    }
    json_object_set_new(o, "times", times);
    json_object_set_new(o, "gpuUtil", util);
    json_object_set_new(o, "gpuMemoryBytes", gmem);
    json_object_set_new(o, "cpuMilli", cpu);
    json_object_set_new(o, "memoryBytes", mem);
    if (j && j->n_cur_tasks) {
        json_object_set_new(o, "current", current_json(j));
    }
    gt_req_reply_json(r, o);
}

struct stats_ctx {
    const struct gt_ctl *c;
    const struct gt_server_user *user;
    json_t *items;
};

static int stats_cb(const char *key, void *val, void *arg)
{
    struct stats_ctx *x = arg;
    const struct tjob *j = val;
    /* key: /jobs/<project>/<name> */
    const char *p = key + strlen("/jobs/");
    const char *slash = strchr(p, '/');
    if (!j->n_cur_tasks || !slash) {
        return 0;
    }
    char project[64];
    snprintf(project, sizeof(project), "%.*s", (int)(slash - p), p);
    if (!gt_server_can_read_project(x->c->s->access, x->user, project)) {
        return 0;
    }
    json_t *cur = current_json(j);
    json_object_set_new(cur, "project", json_string(project));
    json_object_set_new(cur, "job", json_string(slash + 1));
    json_array_append_new(x->items, cur);
    return 0;
}

static int stats_order(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int d = strcmp(json_string_value(json_object_get(x, "project")),
                   json_string_value(json_object_get(y, "project")));
    return d ? d
             : strcmp(json_string_value(json_object_get(x, "job")),
                      json_string_value(json_object_get(y, "job")));
}

static void get_job_stats(struct gt_ctl *c, struct gt_req *r)
{
    struct stats_ctx x = {c, r->user, json_array()};
    gt_strmap_each(&c->tel->jobs, stats_cb, &x);
    sort_array(x.items, stats_order);
    gt_req_reply_json(r, json_pack("{s:s, s:s, s:o}", "apiVersion", GT_API_VERSION, "kind",
                                   "JobStatsList", "items", x.items));
}

/* A node's current figures, summed over its tasks' fresh samples. */
struct nstat {
    char *node;
    int n_tasks;
    int64_t cpu_milli, mem_bytes, gpu_mem_bytes, gpu_milli;
    double util_weight; /* sum of gpu_util x gpu_milli */
};

struct nstats_ctx {
    int64_t now_ms;
    struct GT_VEC(struct nstat) v;
};

static int nstat_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct nstats_ctx *x = arg;
    const struct ttask *tt = val;
    if (!tt->node || x->now_ms - tt->last.at_ms > GT_TEL_FRESH_MS) {
        return 0;
    }
    struct nstat *n = NULL;
    for (size_t i = 0; i < x->v.n && !n; i++) {
        n = strcmp(x->v.v[i].node, tt->node) == 0 ? &x->v.v[i] : NULL;
    }
    if (!n) {
        n = GT_VEC_PUSH(&x->v, 8);
        *n = (struct nstat){.node = tt->node};
    }
    n->n_tasks++;
    n->cpu_milli += tt->last.cpu_milli;
    n->mem_bytes += tt->last.mem_bytes;
    n->gpu_mem_bytes += tt->last.gpu_mem_bytes;
    n->gpu_milli += tt->gpu_milli;
    n->util_weight += tt->last.gpu_util * (double)tt->gpu_milli;
    return 0;
}

static int nstat_order(const void *a, const void *b)
{
    return strcmp(((const struct nstat *)a)->node, ((const struct nstat *)b)->node);
}

/* GET nodestats: any user may read it (nodes are readable by all, and the
 * sums name no task). */
static void get_node_stats(struct gt_ctl *c, struct gt_req *r)
{
    struct nstats_ctx x = {.now_ms = gt_now_ms()};
    gt_strmap_each(&c->tel->tasks, nstat_cb, &x);
    if (x.v.n) {
        qsort(x.v.v, x.v.n, sizeof(x.v.v[0]), nstat_order);
    }
    json_t *items = json_array();
    for (size_t i = 0; i < x.v.n; i++) {
        const struct nstat *n = &x.v.v[i];
        double util = n->gpu_milli ? n->util_weight / (double)n->gpu_milli : 0;
        json_array_append_new(items,
                              json_pack("{s:s, s:i, s:I, s:I, s:I, s:I, s:f}", "node", n->node,
                                        "tasks", n->n_tasks, "cpuMilli", (json_int_t)n->cpu_milli,
                                        "memoryBytes", (json_int_t)n->mem_bytes, "gpuMemoryBytes",
                                        (json_int_t)n->gpu_mem_bytes, "gpuMilli",
                                        (json_int_t)n->gpu_milli, "gpuUtil", util));
    }
    GT_VEC_FREE(&x.v);
    gt_req_reply_json(r, json_pack("{s:s, s:s, s:o}", "apiVersion", GT_API_VERSION, "kind",
                                   "NodeStatsList", "items", items));
}

void gt_telemetry_serve(struct gt_ctl *c, struct gt_req *r, int method, const struct evkeyvalq *q)
{
    const struct gt_route *rt = &r->route;
    bool post = !strcmp(rt->sub, "telemetry");
    if (method != (post ? EVHTTP_REQ_POST : EVHTTP_REQ_GET)) {
        gt_req_error(r, GT_EMETHOD, "method not allowed here");
        return;
    }
    if (post) {
        post_telemetry(c, r);
        return;
    }
    if (rt->type == GT_ROUTE_JOB_STATS) {
        get_job_stats(c, r);
        return;
    }
    if (rt->type == GT_ROUTE_NODE_STATS) {
        get_node_stats(c, r);
        return;
    }
    struct gt_server_authz az = {
        .verb = GT_VERB_READ, .kind = GT_KIND_JOB, .name = rt->name, .project = rt->project};
    if (gt_server_authorize(c->s->access, r->user, &az)) {
        gt_req_error(r, GT_EFORBIDDEN, "user \"%s\" cannot get jobs in %s", r->user->name,
                     rt->project);
        return;
    }
    char *key = gt_route_key(rt->kind, rt->project, rt->name);
    bool exists = gt_ctl_get(c, GT_KIND_JOB, key) != NULL;
    const struct tjob *j = gt_strmap_get(&c->tel->jobs, key);
    free(key);
    if (!exists) {
        gt_req_error(r, GT_ENOTFOUND, "jobs \"%s\" not found", rt->name);
    } else if (!strcmp(rt->sub, "scalars")) {
        get_scalars(c, r, j, q);
    } else {
        get_history(r, j, q);
    }
}
