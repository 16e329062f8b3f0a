/*
 * gantlet's /metrics in the Prometheus text format (0.0.4): the node's
 * GPUs under the names, units and labels of NVIDIA's dcgm-exporter
 * (default-counters.csv: DCGM_FI_DEV_GPU_UTIL in %, DCGM_FI_DEV_FB_USED in
 * MiB, ...; labels gpu, UUID, Hostname and the model), the processes using
 * them, and each task's cgroup under cAdvisor's names. The model's label is
 * model_name here, as promtool's lint wants snake_case; the scrape
 * configuration in docs/metrics.md renames it to dcgm-exporter's modelName.
 *
 * Every series of a held GPU carries its holder's project, job, task and
 * department. A GPU shared by fractional tasks gets one series per holder,
 * as dcgm-exporter does for shared GPUs when it maps them to pods
 * (--kubernetes-virtual-gpus), plus its gpu_milli share; sum the device's
 * readings over holders with max(), not sum(). A free GPU has one series
 * with empty holder labels. GPU readings come from the last sample
 * (gt_gpu_sample_all on the agent's timer), so a scrape never waits for
 * NVML; cgroup figures are read at scrape time. A lost GPU has only its
 * health and Xid series.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"

/* The tasks holding one GPU (borrowed), with their milli-shares, and the
 * label list of each holder's series (labels[0] alone for a free GPU),
 * written once per scrape. */
struct holders {
    const struct gt_ltask **tasks;
    int64_t *milli;
    size_t n, cap;
    char **labels; /* n entries, or 1 when n is 0; owned */
};

/* project, job, task, department of t (NULL: empty values). */
static void put_holder(struct gt_buf *out, const struct gt_ltask *t)
{
    const struct gt_api_task *o = t ? t->obj : NULL;
    gt_prom_label(out, "project", t ? t->project : "", false);
    gt_prom_label(out, "job", o ? o->spec.job : "", false);
    gt_prom_label(out, "task", t ? t->name : "", false);
    gt_prom_label(out, "department", o ? o->spec.department : "", false);
}

static void put_gpu(struct gt_buf *out, const struct gt_gantlet *g, const struct gt_gpu *gpu)
{
    gt_buf_printf(out, "gpu=\"%d\"", gpu->index);
    gt_prom_label(out, "UUID", gpu->uuid, false);
    gt_prom_label(out, "model_name", gpu->model, false);
    gt_prom_label(out, "Hostname", g->cfg->name, false);
}

static bool task_live(const struct gt_ltask *t)
{
    return t->obj && !t->st.exited;
}

static void holders_of(const struct gt_gantlet *g, const struct gt_gpu *gpu, struct holders *h)
{
    h->n = 0;
    for (const struct gt_ltask *t = g->tasks; t; t = t->next) {
        int64_t milli = gt_gantlet_task_gpu_milli(t, gpu);
        if (milli == 0) {
            continue;
        }
        if (h->n == h->cap) {
            h->cap = h->cap ? h->cap * 2 : 8;
            h->tasks = gt_xrealloc(h->tasks, h->cap * sizeof(*h->tasks));
            h->milli = gt_xrealloc(h->milli, h->cap * sizeof(*h->milli));
        }
        h->tasks[h->n] = t;
        h->milli[h->n++] = milli;
    }
    size_t n = h->n ? h->n : 1;
    h->labels = gt_xcalloc(n, sizeof(*h->labels));
    for (size_t k = 0; k < n; k++) {
        struct gt_buf b;
        gt_buf_init(&b);
        put_gpu(&b, g, gpu);
        put_holder(&b, h->n ? h->tasks[k] : NULL);
        if (h->n) {
            gt_buf_printf(&b, ",gpu_milli=\"%lld\"", (long long)h->milli[k]);
        }
        h->labels[k] = gt_buf_take(&b);
    }
}

static void holders_fini(struct holders *h)
{
    for (size_t k = 0; k < (h->n ? h->n : 1); k++) {
        free(h->labels[k]);
    }
    free(h->labels);
    free(h->tasks);
    free(h->milli);
}

/* One DCGM field: an int64_t of the sample at off, the power, or the last Xid. */
enum field_src { FIELD_INT, FIELD_POWER, FIELD_XID };
struct field {
    const char *name;
    const char *help;
    enum field_src src;
    size_t off;
};

#define INT_FIELD(n, h, f)                                                                         \
    {                                                                                              \
        n, h, FIELD_INT, offsetof(struct gt_gpu_sample, f)                                         \
    }

/* dcgm-exporter's default counters, with its help texts. */
static const struct field fields[] = {
    INT_FIELD("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", sm_clock_mhz),
    INT_FIELD("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", temp_c),
    {"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", FIELD_POWER, 0},
    INT_FIELD("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", util_pct),
    INT_FIELD("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", mem_copy_util_pct),
    INT_FIELD("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", fb_free_mib),
    INT_FIELD("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", fb_used_mib),
    {"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", FIELD_XID, 0},
};

static double field_value(const struct field *f, const struct gt_gpu *gpu,
                          const struct gt_gpu_sample *s)
{
    int64_t v;
    switch (f->src) {
    case FIELD_POWER:
        return s->power_w;
    case FIELD_XID:
        return (double)gpu->last_xid;
    case FIELD_INT:
        break;
    }
    memcpy(&v, (const char *)s + f->off, sizeof(v));
    return (double)v;
}

static void put_gpu_series(struct gt_buf *out, const struct holders *h, const char *name, double v)
{
    for (size_t k = 0; k < (h->n ? h->n : 1); k++) {
        gt_prom_sample(out, name, h->labels[k], v);
    }
}

static void render_gpus(struct gt_buf *out, const struct gt_gantlet *g, struct holders *hs)
{
    const struct gt_gpu_set *set = &g->gpus;
    for (size_t f = 0; f < GT_ARRAY_LEN(fields); f++) {
        gt_prom_family(out, fields[f].name, "gauge", fields[f].help);
        for (size_t i = 0; i < set->n_gpus; i++) {
            const struct gt_gpu_sample *s = &set->samples[i];
            bool xid = fields[f].src == FIELD_XID;
            double v = field_value(&fields[f], &set->gpus[i], s);
            /* a lost GPU has no readings, an unsupported one reads -1 */
            if (xid || (s->taken_ms && v >= 0)) {
                put_gpu_series(out, &hs[i], fields[f].name, v);
            }
        }
    }
    gt_prom_family(out, "gantry_gpu_healthy", "gauge",
                   "1 while the GPU is offered to the scheduler, 0 after a critical Xid or while "
                   "it does not answer.");
    for (size_t i = 0; i < set->n_gpus; i++) {
        put_gpu_series(out, &hs[i], "gantry_gpu_healthy", set->gpus[i].healthy);
    }
    gt_prom_family(out, "gantry_gpu_xid_errors_total", "counter",
                   "Critical Xid errors (not those applications cause) since the agent started.");
    for (size_t i = 0; i < set->n_gpus; i++) {
        put_gpu_series(out, &hs[i], "gantry_gpu_xid_errors_total", (double)set->gpus[i].n_xid);
    }
}

static void render_processes(struct gt_buf *out, const struct gt_gantlet *g)
{
    const struct gt_gpu_set *set = &g->gpus;
    gt_prom_family(out, "gantry_gpu_process_memory_bytes", "gauge",
                   "Device memory used by one process (NVML's running processes), with the task "
                   "whose cgroup holds it (empty labels: no task of this node).");
    for (size_t i = 0; i < set->n_gpus; i++) {
        const struct gt_gpu_sample *s = &set->samples[i];
        for (size_t k = 0; k < s->n_procs; k++) {
            gt_buf_puts(out, "gantry_gpu_process_memory_bytes{");
            put_gpu(out, g, &set->gpus[i]);
            gt_buf_printf(out, ",pid=\"%d\"", (int)s->procs[k].pid);
            put_holder(out, gt_gantlet_task_of_pid(g, s->procs[k].pid));
            gt_buf_printf(out, "} %lld\n", (long long)s->procs[k].used_bytes);
        }
    }
}

/* One task's cgroup figures, read now, and its series' labels (owned). */
struct task_usage {
    struct gt_cgroup_stats st;
    int64_t oom_kills; /* -1 unknown */
    char *labels;
};

static void render_tasks(struct gt_buf *out, const struct gt_gantlet *g)
{
    size_t n = 0;
    for (const struct gt_ltask *t = g->tasks; t; t = t->next) {
        n += task_live(t);
    }
    struct task_usage *u = gt_xcalloc(n ? n : 1, sizeof(*u));
    size_t k = 0;
    for (const struct gt_ltask *t = g->tasks; t; t = t->next) {
        if (!task_live(t)) {
            continue;
        }
        struct gt_buf b;
        char id[160];
        gt_buf_init(&b);
        snprintf(id, sizeof(id), "/gantry/%s", t->uid);
        gt_prom_label(&b, "id", id, true);
        put_holder(&b, t);
        u[k].labels = gt_buf_take(&b);
        u[k].st = (struct gt_cgroup_stats){-1, -1};
        u[k].oom_kills = -1;
        struct gt_cgroup cg;
        char rel[200];
        snprintf(rel, sizeof(rel), "gantry/%s", t->uid);
        if (g->have_cgroups && gt_cgroup_init(&cg, &g->cgsys, rel, NULL) == 0) {
            gt_cgroup_stats(&cg, &u[k].st);
            if (u[k].st.memory_working_set_bytes >= 0 &&
                gt_cgroup_oom_kills(&cg, &u[k].oom_kills, NULL) < 0) {
                u[k].oom_kills = -1;
            }
            gt_cgroup_fini(&cg);
        }
        k++;
    }
    static const struct {
        const char *name, *type, *help;
    } fams[] = {
        {"container_cpu_usage_seconds_total", "counter",
         "Cumulative cpu time consumed in seconds (the task's cgroup)."},
        {"container_memory_working_set_bytes", "gauge",
         "Current working set in bytes (the task's cgroup)."},
        {"container_oom_events_total", "counter",
         "Count of out of memory events observed for the container (the task's cgroup)."},
    };
    for (size_t f = 0; f < GT_ARRAY_LEN(fams); f++) {
        gt_prom_family(out, fams[f].name, fams[f].type, fams[f].help);
        for (size_t i = 0; i < n; i++) {
            double v = f == 0   ? (u[i].st.cpu_usage_ns < 0 ? -1 : u[i].st.cpu_usage_ns / 1e9)
                       : f == 1 ? (double)u[i].st.memory_working_set_bytes
                                : (double)u[i].oom_kills;
            if (v < 0) {
                continue;
            }
            gt_prom_sample(out, fams[f].name, u[i].labels, v);
        }
    }
    for (size_t i = 0; i < n; i++) {
        free(u[i].labels);
    }
    free(u);
}

static void render_agent(struct gt_buf *out, const struct gt_gantlet *g)
{
    int running, used;
    gt_gantlet_tasks_count(g, &running, &used);
    int unhealthy = 0;
    for (size_t i = 0; i < g->gpus.n_gpus; i++) {
        unhealthy += !g->gpus.gpus[i].healthy;
    }
    int free_gpus = (int)g->gpus.n_gpus - used - unhealthy;
    gt_buf_printf(out,
                  "# HELP gantlet_tasks_running Tasks of this node not yet exited.\n"
                  "# TYPE gantlet_tasks_running gauge\ngantlet_tasks_running %d\n"
                  "# HELP gantlet_task_starts_total Tasks this agent process started.\n"
                  "# TYPE gantlet_task_starts_total counter\ngantlet_task_starts_total %lld\n"
                  "# HELP gantlet_gpus GPUs of this node by state.\n"
                  "# TYPE gantlet_gpus gauge\ngantlet_gpus{state=\"free\"} %d\n"
                  "gantlet_gpus{state=\"allocated\"} %d\n"
                  "gantlet_gpus{state=\"unhealthy\"} %d\n",
                  running, (long long)g->starts_total, free_gpus > 0 ? free_gpus : 0, used,
                  unhealthy);
}

void gt_gantlet_metrics_render(const struct gt_gantlet *g, struct gt_buf *out)
{
    struct holders *hs = gt_xcalloc(g->gpus.n_gpus ? g->gpus.n_gpus : 1, sizeof(*hs));
    for (size_t i = 0; i < g->gpus.n_gpus; i++) {
        holders_of(g, &g->gpus.gpus[i], &hs[i]);
    }
    render_agent(out, g);
    render_gpus(out, g, hs);
    render_processes(out, g);
    render_tasks(out, g);
    for (size_t i = 0; i < g->gpus.n_gpus; i++) {
        holders_fini(&hs[i]);
    }
    free(hs);
}
