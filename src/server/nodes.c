/*
 * Node lifecycle and the computed status.allocated.
 *
 * Every second gantryd looks for Ready nodes whose last heartbeat is older
 * than --node-grace: it frees everything on them in the scheduler model at
 * once, writes Ready=False reason NodeLost, and fails each of their
 * Bound/Running/Terminating tasks (phase Failed, reason NodeLost). The task
 * writes are level-triggered: any such task on a NodeLost node is failed on
 * every tick until the write lands. A returning agent kills those tasks
 * and reports Ready itself (docs/agent.md).
 *
 * A node with a NoExecute taint (`gantry drain` sets gantry.dev/drain) is
 * drained: on every tick each task holding resources on it is stopped with
 * reason Drained, and goes back to the queue once its exit is recorded
 * (jobs.c, gt_job_restart_verdict); `gantry drain` also cordons it
 * (spec.unschedulable), so the scheduler binds nothing more there.
 *
 * status.allocated is never stored: Node reads compute it from the cached
 * tasks holding resources on the node.
 */
#include <stdlib.h>
#include <string.h>

#include "server/server_int.h"

static json_t *ready_cond(const json_t *node)
{
    return gt_json_find(gt_json_path(node, "status.conditions"), "type", "Ready");
}

static int64_t time_of(const json_t *v)
{
    int64_t ms = 0;
    const char *s = json_string_value(v);
    return s && gt_time_parse(s, &ms) == 0 ? ms : 0;
}

bool gt_node_lost(const json_t *node, int64_t now_ms, int64_t grace_ms, int64_t since_ms)
{
    json_t *c = ready_cond(node);
    const char *st = json_string_value(json_object_get(c, "status"));
    if (!st || strcmp(st, "True")) {
        return false;
    }
    int64_t hb = time_of(json_object_get(c, "lastHeartbeatTime"));
    int64_t hb2 = time_of(gt_json_path(node, "status.lastHeartbeatTime"));
    int64_t last = hb > hb2 ? hb : hb2;
    if (last < since_ms) {
        last = since_ms;
    }
    return now_ms - last > grace_ms;
}

json_t *gt_node_allocated(const char *node, json_t *const *tasks, size_t n_tasks)
{
    struct gt_resources sum = {0};
    json_t *gpus = json_array();
    for (size_t i = 0; i < n_tasks; i++) {
        const json_t *t = tasks[i];
        const char *tn = json_string_value(gt_json_path(t, "spec.nodeName"));
        if (!tn || strcmp(tn, node) || !gt_task_holds(t)) {
            continue;
        }
        struct gt_resources r;
        gt_task_request(gt_json_path(t, "spec.template"), &r);
        sum.cpu_milli += r.cpu_milli;
        sum.memory_bytes += r.memory_bytes;
        char *who = gt_xasprintf("%s/%s", gt_obj_project(t), gt_obj_name(t));
        size_t k;
        json_t *g;
        json_array_foreach(gt_json_path(t, "spec.gpus"), k, g)
        {
            json_t *m = json_object_get(g, "milli");
            json_int_t milli = m ? json_integer_value(m) : 1000;
            sum.gpu_milli += milli;
            json_t *e = json_pack("{s:O, s:I, s:s}", "index", json_object_get(g, "index"), "milli",
                                  milli, "task", who);
            json_t *uuid = json_object_get(g, "uuid");
            if (uuid) {
                json_object_set(e, "uuid", uuid);
            }
            json_array_append_new(gpus, e);
        }
        free(who);
    }
    return json_pack("{s:o, s:o}", "resources",
                     gt_resources_json(sum.cpu_milli, sum.memory_bytes, sum.gpu_milli), "gpus",
                     gpus);
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
    return json_pack("{s:s, s:s, s:s}", "cpu", cpu, "memory", mem, "nvidia.com/gpu", gpu);
}

bool gt_node_draining(const json_t *node)
{
    return gt_json_find(gt_json_path(node, "spec.taints"), "effect", "NoExecute") != NULL;
}

struct collect {
    const char *node;
    json_t **v;
    size_t n, cap;
};

static int collect_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct collect *c = arg;
    const struct gt_cobj *o = val;
    const char *tn = json_string_value(gt_json_path(o->obj, "spec.nodeName"));
    if (!tn || strcmp(tn, c->node)) {
        return 0;
    }
    *GT_VEC_PUSH(c, 16) = o->obj;
    return 0;
}

json_t *gt_nodectl_allocated(const struct gt_ctl *c, const char *node)
{
    struct collect col = {.node = node};
    gt_strmap_each(&c->objs[GT_KIND_TASK], collect_cb, &col);
    json_t *a = gt_node_allocated(node, col.v, col.n);
    free(col.v);
    return a;
}

/* ---- the tick ---- */

static void fail_lost_tasks(struct gt_ctl *c, const char *node)
{
    struct collect col = {.node = node};
    gt_strmap_each(&c->objs[GT_KIND_TASK], collect_cb, &col);
    char ts[32];
    gt_time_format(gt_now_ms(), ts, sizeof(ts));
    for (size_t i = 0; i < col.n; i++) {
        const json_t *t = col.v[i];
        char *key = gt_xasprintf("/tasks/%s/%s", gt_obj_project(t), gt_obj_name(t));
        const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_TASK, key);
        if (gt_task_holds(t) && !gt_ctl_busy(c, key)) {
            json_t *copy = json_deep_copy(t);
            json_t *st = json_object_get(copy, "status");
            json_object_set_new(st, "phase", json_string("Failed"));
            json_object_set_new(st, "reason", json_string("NodeLost"));
            json_object_set_new(st, "message", json_string("node stopped sending heartbeats"));
            json_object_set_new(st, "finishTime", json_string(ts));
            gt_ctl_write(c, GT_STORE_UPDATE, key, copy, o->rev, NULL, NULL);
            json_decref(copy);
        }
        free(key);
    }
    free(col.v);
}

/* Stop every task holding resources on a draining node (reason Drained;
 * jobs.c's gt_job_restart_verdict requeues each once its exit is recorded). */
static void drain_tasks(struct gt_ctl *c, const char *node)
{
    struct collect col = {.node = node};
    gt_strmap_each(&c->objs[GT_KIND_TASK], collect_cb, &col);
    for (size_t i = 0; i < col.n; i++) {
        char *key = gt_xasprintf("/tasks/%s/%s", gt_obj_project(col.v[i]), gt_obj_name(col.v[i]));
        const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_TASK, key);
        if (o && gt_task_holds(o->obj)) {
            char *why = gt_xasprintf("node %s is being drained", node);
            gt_feed_stop_task(c, o, "Drained", why);
            free(why);
        }
        free(key);
    }
    free(col.v);
}

static bool node_lost_marked(const json_t *node)
{
    json_t *c = ready_cond(node);
    const char *st = json_string_value(json_object_get(c, "status"));
    const char *reason = json_string_value(json_object_get(c, "reason"));
    return st && strcmp(st, "True") && reason && !strcmp(reason, "NodeLost");
}

static void mark_lost(struct gt_ctl *c, const struct gt_cobj *o)
{
    json_t *n = json_deep_copy(o->obj);
    json_t *cond = ready_cond(n);
    char ts[32];
    gt_time_format(gt_now_ms(), ts, sizeof(ts));
    json_object_set_new(cond, "status", json_string("False"));
    json_object_set_new(cond, "reason", json_string("NodeLost"));
    json_object_set_new(cond, "message", json_string("no heartbeat within the node grace period"));
    json_object_set_new(cond, "lastTransitionTime", json_string(ts));
    gt_ctl_write(c, GT_STORE_UPDATE, o->key, n, o->rev, NULL, NULL);
    json_decref(n);
    gt_feed_node_lost(c, o->obj);
    gt_log_warn("node lost", "node=%s grace_s=%lld", gt_obj_name(o->obj),
                (long long)c->s->cfg->node_grace_s);
}

static int tick_cb(const char *key, void *val, void *arg)
{
    struct gt_ctl *c = arg;
    const struct gt_cobj *o = val;
    if (gt_ctl_busy(c, key)) {
        return 0;
    }
    if (gt_node_lost(o->obj, gt_now_ms(), c->s->cfg->node_grace_s * 1000, c->start_ms)) {
        mark_lost(c, o);
        fail_lost_tasks(c, gt_obj_name(o->obj));
    } else if (node_lost_marked(o->obj)) {
        fail_lost_tasks(c, gt_obj_name(o->obj));
    } else if (gt_node_draining(o->obj)) {
        drain_tasks(c, gt_obj_name(o->obj));
    }
    return 0;
}

void gt_nodectl_tick(struct gt_ctl *c)
{
    gt_strmap_each(&c->objs[GT_KIND_NODE], tick_cb, c);
}
