/*
 * The state half of gantryd's /metrics, in the manner of kube-state-metrics:
 * series computed at scrape time from the controllers' cache and the
 * scheduler model, never stored. A phase is a 0/1 gauge per possible
 * phase (kube_pod_status_phase); a node condition a 0/1 gauge per status
 * (kube_node_status_condition); quotas per department and resource in
 * base units (cores, bytes, GPUs). Transport calls it through the hooks
 * (struct gt_ctl_hooks.metrics, after feeder.c's), after the request and scheduler
 * counters of metrics.c. docs/metrics.md lists every series.
 */
#include <stdlib.h>
#include <string.h>

#include "server/cache.h"
#include "server/feeder.h"
#include "server/statemetrics.h"

/* Job phases as its conditions name them, in order of precedence: the
 * last True one is the phase. */
static const char *const job_phases[] = {"Created",   "Queued",    "Running", "Restarting",
                                         "Suspended", "Succeeded", "Failed"};

struct render {
    const struct gt_ctl *c;
    struct gt_buf *out;
    struct evbuffer *spill; /* or NULL */
    gt_strmap_fn fn;        /* the family's per-object renderer */
    int family;             /* which pass over the objects */
};

static const char *job_phase(const struct gt_api_job *job)
{
    const char *phase = "Created";
    for (size_t i = 0; i < GT_ARRAY_LEN(job_phases); i++) {
        if (gt_api_condition_true(&job->status.conditions, job_phases[i])) {
            phase = job_phases[i];
        }
    }
    return phase;
}

static void job_labels(struct gt_buf *out, const struct gt_ctl *c, const struct gt_api_job *job)
{
    gt_prom_label(out, "project", job->o.meta.project, true);
    gt_prom_label(out, "job", job->o.meta.name, false);
    gt_prom_label(out, "department", gt_ctl_project_department(c, job->o.meta.project), false);
}

static int64_t count_of(int64_t v)
{
    return v == GT_API_UNSET ? 0 : v;
}

/* The wait code ("Quota", ...) of a queued job, from its last wait. */
static void wait_code(const struct gt_ctl *c, const char *key, char *buf, size_t len)
{
    const char *w = gt_feed_wait(c, key);
    const char *colon = w ? strchr(w, ':') : NULL;
    if (colon) {
        snprintf(buf, len, "%.*s", (int)(colon - w), w);
    } else {
        snprintf(buf, len, "Pending");
    }
}

static int job_cb(const char *key, void *val, void *arg)
{
    struct render *r = arg;
    const struct gt_api_job *job = gt_cobj_job(val);
    const char *phase = job_phase(job);
    struct gt_buf *out = r->out;
    switch (r->family) {
    case 0:
        for (size_t i = 0; i < GT_ARRAY_LEN(job_phases); i++) {
            gt_buf_puts(out, "gantry_job_status_phase{");
            job_labels(out, r->c, job);
            gt_prom_label(out, "phase", job_phases[i], false);
            gt_buf_printf(out, "} %d\n", !strcmp(phase, job_phases[i]));
        }
        break;
    case 1:
    case 2:
        gt_buf_puts(out,
                    r->family == 1 ? "gantry_job_restarts_total{" : "gantry_job_requeues_total{");
        job_labels(out, r->c, job);
        gt_buf_printf(out, "} %lld\n",
                      (long long)count_of(r->family == 1 ? job->status.restart_count
                                                         : job->status.requeue_count));
        break;
    default:
        if (!strcmp(phase, "Queued")) {
            char code[64];
            wait_code(r->c, key, code, sizeof(code));
            gt_buf_puts(out, "gantry_job_pending{");
            job_labels(out, r->c, job);
            gt_prom_label(out, "reason", code, false);
            gt_buf_puts(out, "} 1\n");
        }
    }
    return 0;
}

static int task_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct render *r = arg;
    const struct gt_api_task *t = gt_cobj_task(val);
    for (int p = GT_TASK_PENDING; p <= GT_TASK_FAILED; p++) {
        gt_buf_puts(r->out, "gantry_task_status_phase{");
        gt_prom_label(r->out, "project", t->o.meta.project, true);
        gt_prom_label(r->out, "job", t->spec.job, false);
        gt_prom_label(r->out, "task", t->o.meta.name, false);
        gt_prom_label(r->out, "department", t->spec.department, false);
        gt_prom_label(r->out, "node", t->spec.node_name, false);
        gt_prom_label(r->out, "phase", gt_api_task_phase_name((enum gt_task_phase)p), false);
        gt_buf_printf(r->out, "} %d\n", t->status.phase == p);
    }
    return 0;
}

static int node_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct render *r = arg;
    const struct gt_api_node *n = gt_cobj_node(val);
    static const char *const statuses[] = {"True", "False", "Unknown"};
    const char *name = n->o.meta.name;
    switch (r->family) {
    case 0:
        for (size_t i = 0; i < n->status.conditions.n; i++) {
            const struct gt_api_condition *cond = &n->status.conditions.v[i];
            for (size_t k = 0; k < GT_ARRAY_LEN(statuses); k++) {
                gt_buf_puts(r->out, "gantry_node_status_condition{");
                gt_prom_label(r->out, "node", name, true);
                gt_prom_label(r->out, "condition", cond->type, false);
                gt_prom_label(r->out, "status", statuses[k], false);
                gt_buf_printf(r->out, "} %d\n", cond->status && !strcmp(cond->status, statuses[k]));
            }
        }
        break;
    case 1:
        gt_buf_puts(r->out, "gantry_node_spec_unschedulable{");
        gt_prom_label(r->out, "node", name, true);
        gt_buf_printf(r->out, "} %d\n", n->spec.unschedulable);
        break;
    default:
        for (size_t i = 0; i < n->status.gpus.n; i++) {
            const struct gt_api_node_gpu *g = &n->status.gpus.v[i];
            gt_buf_puts(r->out, "gantry_node_gpu_healthy{");
            gt_prom_label(r->out, "node", name, true);
            gt_buf_printf(r->out, ",gpu=\"%lld\"", (long long)g->index);
            gt_prom_label(r->out, "uuid", g->uuid, false);
            gt_prom_label(r->out, "model", g->model, false);
            gt_buf_printf(r->out, "} %d\n", !g->health || !strcmp(g->health, "Healthy"));
        }
    }
    return 0;
}

static void put_res(struct gt_buf *out, const char *family, const char *dept,
                    const struct gt_sched_res *v)
{
    static const char *const names[] = {"cpu", "memory", "nvidia.com/gpu"};
    const double values[] = {(double)v->cpu_milli / 1000, (double)v->memory_bytes,
                             (double)v->gpu_milli / 1000};
    for (size_t i = 0; i < GT_ARRAY_LEN(names); i++) {
        gt_buf_printf(out, "%s{", family);
        gt_prom_label(out, "department", dept, true);
        gt_prom_label(out, "resource", names[i], false);
        gt_buf_printf(out, "} %.15g\n", values[i]);
    }
}

static int department_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct render *r = arg;
    const struct gt_cobj *o = val;
    struct gt_sched_res g, lim, used;
    const char *name = o->t->meta.name;
    if (gt_sched_department_get(r->c->model, name, &g, &lim, &used) != 0) {
        return 0;
    }
    static const char *const fams[] = {"gantry_department_quota_guarantee",
                                       "gantry_department_quota_limit",
                                       "gantry_department_quota_used"};
    const struct gt_sched_res *v[] = {&g, &lim, &used};
    put_res(r->out, fams[r->family], name, v[r->family]);
    return 0;
}

/* The families, each one pass of fn over the cached objects of kind. */
static const struct family {
    enum gt_kind kind;
    gt_strmap_fn fn;
    int family; /* which of fn's families */
    const char *name, *type, *help;
} families[] = {
    {GT_KIND_JOB, job_cb, 0, "gantry_job_status_phase", "gauge",
     "1 for the job's phase (its last true condition), 0 for the others."},
    {GT_KIND_JOB, job_cb, 1, "gantry_job_restarts_total", "counter",
     "Times the job's tasks were recreated after a failure (status.restartCount)."},
    {GT_KIND_JOB, job_cb, 2, "gantry_job_requeues_total", "counter",
     "Times the job went back to the queue after a preemption (status.requeueCount)."},
    {GT_KIND_JOB, job_cb, 3, "gantry_job_pending", "gauge",
     "Queued jobs with the reason of their last wait (Quota, Unschedulable, Inadmissible; Pending "
     "before the scheduler's first verdict); sum by department and reason."},
    {GT_KIND_TASK, task_cb, 0, "gantry_task_status_phase", "gauge",
     "1 for the task's phase, 0 for the others."},
    {GT_KIND_NODE, node_cb, 0, "gantry_node_status_condition", "gauge",
     "1 for the status each condition of the node has, 0 for the others."},
    {GT_KIND_NODE, node_cb, 1, "gantry_node_spec_unschedulable", "gauge",
     "1 while the node is cordoned."},
    {GT_KIND_NODE, node_cb, 2, "gantry_node_gpu_healthy", "gauge",
     "1 while the agent reports the GPU Healthy (offered to the scheduler), else 0."},
    {GT_KIND_DEPARTMENT, department_cb, 0, "gantry_department_quota_guarantee", "gauge",
     "The department's guarantee (spec.quota) per resource: cores, bytes, GPUs."},
    {GT_KIND_DEPARTMENT, department_cb, 1, "gantry_department_quota_limit", "gauge",
     "The most the department may hold by borrowing (spec.limit) per resource."},
    {GT_KIND_DEPARTMENT, department_cb, 2, "gantry_department_quota_used", "gauge",
     "What the department's bound, running and terminating tasks hold per resource."},
};

/* One object of a family, then out's bytes to spill once they pass
 * GT_METRICS_SPILL_BYTES. */
static int spill_cb(const char *key, void *val, void *arg)
{
    struct render *r = arg;
    r->fn(key, val, r);
    if (r->spill && r->out->len >= GT_METRICS_SPILL_BYTES) {
        evbuffer_add(r->spill, r->out->data, r->out->len);
        gt_buf_reset(r->out);
    }
    return 0;
}

void gt_ctl_render_metrics(const struct gt_ctl *c, struct gt_buf *out, struct evbuffer *spill)
{
    struct render r = {.c = c, .out = out, .spill = spill};
    for (size_t i = 0; i < GT_ARRAY_LEN(families); i++) {
        const struct family *f = &families[i];
        gt_prom_family(out, f->name, f->type, f->help);
        r.family = f->family;
        r.fn = f->fn;
        gt_strmap_each(&c->objs[f->kind], spill_cb, &r);
    }
}
