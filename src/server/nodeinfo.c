/*
 * The node rules, pure: when a node counts as lost, whether it drains,
 * what its tasks hold on it (status.allocated) and how amounts are shown
 * in a status. No I/O and no clock (times are passed in); nodes.c applies
 * them to the cache.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"
#include "server/server.h"

static const struct gt_api_condition *ready_cond(const struct gt_api_node *node)
{
    return gt_api_condition_find(&node->status.conditions, "Ready");
}

static int64_t time_of(const char *s)
{
    int64_t ms = 0;
    return s && gt_time_parse(s, &ms) == 0 ? ms : 0;
}

bool gt_node_lost(const struct gt_api_node *node, int64_t now_ms, int64_t grace_ms,
                  int64_t since_ms)
{
    if (!gt_api_condition_true(&node->status.conditions, "Ready")) {
        return false;
    }
    int64_t hb = time_of(ready_cond(node)->last_heartbeat_time);
    int64_t hb2 = time_of(node->status.last_heartbeat_time);
    int64_t last = hb > hb2 ? hb : hb2;
    if (last < since_ms) {
        last = since_ms;
    }
    return now_ms - last > grace_ms;
}

json_t *gt_node_allocated(const char *node, const struct gt_api_task *const *tasks, size_t n_tasks)
{
    struct gt_resvec sum = {0};
    json_t *gpus = json_array();
    for (size_t i = 0; i < n_tasks; i++) {
        const struct gt_api_task *t = tasks[i];
        const char *tn = t->spec.node_name;
        if (!tn || strcmp(tn, node) || !gt_task_holds(t)) {
            continue;
        }
        struct gt_api_effective e;
        gt_api_resources_effective(&t->spec.template.resources, &e);
        sum.v[GT_RES_CPU] += e.request.v[GT_RES_CPU];
        sum.v[GT_RES_MEMORY] += e.request.v[GT_RES_MEMORY];
        char *who = gt_xasprintf("%s/%s", t->o.meta.project, t->o.meta.name);
        for (size_t k = 0; k < t->spec.gpus.n; k++) {
            const struct gt_api_task_gpu *g = &t->spec.gpus.v[k];
            int64_t milli = g->milli != GT_API_UNSET ? g->milli : 1000;
            sum.v[GT_RES_GPU] += milli;
            json_t *x = json_pack("{s:I, s:I, s:s}", "index", (json_int_t)g->index, "milli",
                                  (json_int_t)milli, "task", who);
            if (g->uuid) {
                json_object_set_new(x, "uuid", json_string(g->uuid));
            }
            json_array_append_new(gpus, x);
        }
        free(who);
    }
    return json_pack("{s:o, s:o}", "resources",
                     gt_resources_json(sum.v[GT_RES_CPU], sum.v[GT_RES_MEMORY], sum.v[GT_RES_GPU]),
                     "gpus", gpus);
}

json_t *gt_resources_json(int64_t cpu_milli, int64_t memory_bytes, int64_t gpu_milli)
{
    char cpu[32], mem[32], gpu[32];
    snprintf(cpu, sizeof(cpu), "%lldm", (long long)cpu_milli);
    snprintf(mem, sizeof(mem), "%lld", (long long)memory_bytes);
    if (gpu_milli % 1000 == 0) {
        snprintf(gpu, sizeof(gpu), "%lld", (long long)(gpu_milli / 1000));
    } else {
        snprintf(gpu, sizeof(gpu), "%lldm", (long long)gpu_milli);
    }
    return json_pack("{s:s, s:s, s:s}", GT_RES_NAME_CPU, cpu, GT_RES_NAME_MEMORY, mem,
                     GT_RES_NAME_GPU, gpu);
}

bool gt_node_draining(const struct gt_api_node *node)
{
    for (size_t i = 0; i < node->spec.taints.n; i++) {
        const struct gt_api_taint *t = &node->spec.taints.v[i];
        if (t->effect && !strcmp(t->effect, "NoExecute") && t->key &&
            !strcmp(t->key, GT_API_DRAIN_TAINT)) {
            return true;
        }
    }
    return false;
}

const struct gt_api_taint *gt_node_evicting_taint(const struct gt_api_node *node,
                                                  const struct gt_api_task *task, int64_t now_ms)
{
    const struct gt_api_template *tmpl = &task->spec.template;
    for (size_t i = 0; i < node->spec.taints.n; i++) {
        const struct gt_api_taint *t = &node->spec.taints.v[i];
        if (!t->effect || strcmp(t->effect, "NoExecute")) {
            continue;
        }
        struct gt_sched_taint st = {
            .key = t->key, .value = t->value, .effect = GT_SCHED_NO_EXECUTE};
        /* the tolerations that tolerate it, the longest tolerationSeconds
         * of them winning (none: for ever), as Kubernetes takes the least
         * restrictive */
        bool tolerated = false;
        int64_t seconds = -1;
        for (size_t k = 0; k < tmpl->tolerations.n; k++) {
            const struct gt_api_toleration *a = &tmpl->tolerations.v[k];
            struct gt_sched_toleration one = {.key = a->key,
                                              .value = a->value,
                                              .exists = a->op && !strcmp(a->op, "Exists"),
                                              .effect = gt_sched_effect_of(a->effect)};
            if (!gt_sched_tolerates(&one, 1, &st)) {
                continue;
            }
            if (!tolerated ||
                (seconds >= 0 && (a->seconds == GT_API_UNSET || a->seconds > seconds))) {
                seconds = a->seconds == GT_API_UNSET ? -1 : a->seconds;
            }
            tolerated = true;
        }
        int64_t since = 0;
        const char *from = t->time_added ? t->time_added : task->status.bound_time;
        if (!tolerated || (seconds >= 0 && from && gt_time_parse(from, &since) == 0 &&
                           now_ms >= since + seconds * 1000)) {
            return t;
        }
    }
    return NULL;
}
