/*
 * What the agent does with its GPU samples, as NVIDIA's device plugin and
 * jobstats-style tools do: every --gpu-sample-ms the GPUs are sampled
 * (gt_gpu_sample_all); when one changes health the Node status is written at
 * once (so the scheduler stops, or starts again, offering just that GPU),
 * each task holding it gets an Event, and a task whose GPU stopped
 * answering is stopped at once with reason GPULost (its work is gone with
 * the device). A critical Xid alone leaves the task running: the
 * application sees the error and decides. A task whose GPUs all read 0 %
 * for --idle-gpu-seconds gets one IdleGPU Warning on its Job, and is
 * stopped (reason IdleGPU) when its project says so (spec.stopIdleGPU, from
 * the Project's stopIdleGPUJobs). The daemon
 * writes the Node status when the tick says a GPU changed health.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"

int64_t gt_gantlet_task_gpu_milli(const struct gt_ltask *t, const struct gt_gpu *gpu)
{
    if (!t->obj || t->st.exited) {
        return 0;
    }
    const struct gt_api_task_spec *sp = &t->obj->spec;
    for (size_t k = 0; k < sp->gpus.n; k++) {
        const struct gt_api_task_gpu *tg = &sp->gpus.v[k];
        if (tg->index == gpu->index && (!tg->uuid || !strcmp(tg->uuid, gpu->uuid))) {
            return tg->milli == GT_API_UNSET ? 1000 : tg->milli;
        }
    }
    return 0;
}

const struct gt_ltask *gt_gantlet_task_of_pid(const struct gt_gantlet *g, pid_t pid)
{
    char path[64], *text;
    size_t len;
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    if (gt_file_read(path, 16384, &text, &len, NULL) < 0) {
        return NULL;
    }
    const struct gt_ltask *t = NULL;
    for (const char *p = strstr(text, "/gantry/"); p && !t; p = strstr(p + 1, "/gantry/")) {
        char uid[128];
        if (sscanf(p + 8, "%127[^/\n]", uid) == 1) {
            t = gt_gantlet_task_find(g, uid);
        }
    }
    free(text);
    return t;
}

int64_t gt_gantlet_task_gpu_util(const struct gt_gantlet *g, const struct gt_ltask *t, size_t i)
{
    const struct gt_gpu_sample *s = &g->gpus.samples[i];
    if (gt_gantlet_task_gpu_milli(t, &g->gpus.gpus[i]) == 0 || !s->taken_ms) {
        return -1;
    }
    return s->util_pct;
}

int64_t gt_gantlet_task_gpu_memory(const struct gt_gantlet *g, const struct gt_ltask *t)
{
    const struct gt_gpu_set *set = &g->gpus;
    int64_t sum = -1;
    for (size_t i = 0; i < set->n_gpus; i++) {
        const struct gt_gpu_sample *s = &set->samples[i];
        for (size_t k = 0; k < s->n_procs; k++) {
            if (gt_gantlet_task_of_pid(g, s->procs[k].pid) == t) {
                sum = (sum < 0 ? 0 : sum) + s->procs[k].used_bytes;
            }
        }
    }
    return sum;
}

/* Ask t's shim to stop it, reported with reason. */
static void stop_task(struct gt_ltask *t, const char *reason, int64_t grace_ms)
{
    struct gt_err err = {0};
    t->st.stop_sent = true;
    if (gt_shim_stop(t->dir, reason, grace_ms, &err) < 0) {
        gt_log_warn("cannot stop the task", "task=%s err=\"%s\"", t->name, err.msg);
    }
}

/* GPU gpu changed health: tell the tasks holding it, stop them if it is lost. */
static void health_changed(struct gt_gantlet *g, const struct gt_gpu *gpu)
{
    char msg[256];
    if (gpu->healthy) {
        snprintf(msg, sizeof(msg), "GPU %d (%s) is healthy again", gpu->index, gpu->uuid);
    } else if (gpu->lost) {
        snprintf(msg, sizeof(msg), "GPU %d (%s) stopped answering; the task is stopped", gpu->index,
                 gpu->uuid);
    } else {
        snprintf(msg, sizeof(msg), "GPU %d (%s) raised critical Xid %llu", gpu->index, gpu->uuid,
                 (unsigned long long)gpu->last_xid);
    }
    gt_log_warn("GPU health changed", "gpu=%d uuid=%s health=%s", gpu->index, gpu->uuid,
                gpu->healthy ? "Healthy" : "Unhealthy");
    for (struct gt_ltask *t = g->tasks; t; t = t->next) {
        if (gt_gantlet_task_gpu_milli(t, gpu) == 0) {
            continue;
        }
        gt_gantlet_event_post(g, t, "Task", gpu->healthy ? "Normal" : "Warning",
                              gpu->healthy ? "GPUHealthy" : "GPUUnhealthy", msg);
        if (gpu->lost && !t->st.stop_sent) {
            stop_task(t, "GPULost", 0);
        }
    }
}

/* The IdleGPU Warning of tasks whose GPUs read 0 % for idle_s. */
static void idle_check(struct gt_gantlet *g, int64_t now_ms)
{
    const struct gt_gpu_set *set = &g->gpus;
    for (struct gt_ltask *t = g->tasks; t; t = t->next) {
        bool holds = false, busy = false;
        for (size_t i = 0; i < set->n_gpus; i++) {
            if (gt_gantlet_task_gpu_milli(t, &set->gpus[i]) > 0) {
                holds = true;
                busy |= set->samples[i].util_pct > 0;
            }
        }
        if (!holds || !t->st.started) {
            continue;
        }
        if (busy || t->gpu_active_ms == 0) {
            t->gpu_active_ms = now_ms;
        }
        if (!t->idle_warned && now_ms - t->gpu_active_ms >= g->cfg->idle_gpu_s * 1000) {
            bool stop = t->obj->spec.stop_idle_gpu && !t->st.stop_sent;
            char msg[200];
            snprintf(msg, sizeof(msg), "task %s held its GPUs at 0 %% utilisation for %llds%s",
                     t->name, (long long)g->cfg->idle_gpu_s,
                     stop ? "; its project stops idle jobs" : "");
            t->idle_warned = true;
            gt_gantlet_event_post(g, t, "Job", "Warning", "IdleGPU", msg);
            if (stop) {
                stop_task(t, "IdleGPU", gt_task_stop_grace_ms(t->obj));
            }
        }
    }
}

bool gt_gantlet_gpus_tick(struct gt_gantlet *g)
{
    struct gt_gpu_set *set = &g->gpus;
    if (set->n_gpus == 0) {
        return false;
    }
    bool *was = gt_xcalloc(set->n_gpus, sizeof(*was));
    for (size_t i = 0; i < set->n_gpus; i++) {
        was[i] = set->gpus[i].healthy;
    }
    bool changed = gt_gpu_sample_all(set) > 0;
    for (size_t i = 0; changed && i < set->n_gpus; i++) {
        if (was[i] != set->gpus[i].healthy) {
            health_changed(g, &set->gpus[i]);
        }
    }
    free(was);
    if (g->cfg->idle_gpu_s > 0) {
        idle_check(g, gt_mono_ms());
    }
    return changed;
}
