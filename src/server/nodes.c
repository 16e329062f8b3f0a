/*
 * Node lifecycle and the computed status.allocated, over the controllers'
 * cache (the rules themselves are nodeinfo.c's).
 *
 * Every second gantryd looks for Ready nodes whose last heartbeat is older
 * than --node-grace: it frees everything on them in the scheduler model at
 * once, writes Ready=False reason NodeLost, and fails each of their
 * Bound/Running/Terminating tasks (phase Failed, reason NodeLost). The task
 * writes are level-triggered: any such task on a NodeLost node is failed on
 * every tick until the write lands. A returning agent kills those tasks
 * and reports Ready itself (docs/agent.md).
 *
 * A node with the NoExecute taint gantry.dev/drain (`gantry drain` sets
 * it) is drained: on every tick each task holding resources on it is
 * stopped with reason Drained, and goes back to the queue once its exit is
 * recorded (the job controller requeues its job); `gantry drain` also
 * cordons it (spec.unschedulable), so the scheduler binds nothing more
 * there. Any other NoExecute taint evicts, on every tick, the tasks that do
 * not tolerate it or whose tolerationSeconds have passed (reason Evicted,
 * requeued the same way), as Kubernetes' taint manager does; the
 * scheduler keeps every task off a NoSchedule or NoExecute taint it does
 * not tolerate (src/sched/match.c).
 *
 * status.allocated is never stored: Node reads compute it from the cached
 * tasks holding resources on the node (gt_node_allocated), found through
 * the cache's index of them by node (gt_ctl_holding_on), so a read costs
 * what the node holds, not what the cluster has ever run.
 */
#include <stdlib.h>
#include <string.h>

#include "server/cache.h"
#include "server/feeder.h"
#include "server/nodes.h"
#include "server/server_int.h"

/* The cached tasks holding resources on a node: each entry and its typed task. */
struct collect {
    const char *node;
    struct GT_VEC(const struct gt_cobj *) o;
    struct GT_VEC(const struct gt_api_task *) t;
};

static int collect_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct collect *c = arg;
    const struct gt_cobj *o = val;
    const char *tn = gt_cobj_task(o)->spec.node_name;
    if (!tn || strcmp(tn, c->node)) {
        return 0;
    }
    *GT_VEC_PUSH(&c->o, 16) = o;
    *GT_VEC_PUSH(&c->t, 16) = gt_cobj_task(o);
    return 0;
}

static void collect(const struct gt_ctl *c, const char *node, struct collect *col)
{
    *col = (struct collect){.node = node};
    const struct gt_strmap *held = gt_ctl_holding_on(c, node);
    if (held) {
        gt_strmap_each(held, collect_cb, col);
    }
}

static void collect_fini(struct collect *col)
{
    GT_VEC_FREE(&col->o);
    GT_VEC_FREE(&col->t);
}

json_t *gt_nodectl_allocated(const struct gt_ctl *c, const char *node)
{
    struct collect col;
    collect(c, node, &col);
    json_t *a = gt_node_allocated(node, col.t.v, col.t.n);
    collect_fini(&col);
    return a;
}

/* ---- the tick ---- */

/* Set n string members of o (NULL: nothing), each {name, value}. */
static void set_strings(json_t *o, const char *const (*kv)[2], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_object_set_new(o, kv[i][0], json_string(kv[i][1]));
    }
}

static void fail_lost_tasks(struct gt_ctl *c, const char *node)
{
    struct collect col;
    collect(c, node, &col);
    char ts[32];
    gt_time_format(gt_now_ms(), ts, sizeof(ts));
    for (size_t i = 0; i < col.o.n; i++) {
        const struct gt_cobj *o = col.o.v[i];
        if (gt_task_holds(col.t.v[i]) && !gt_ctl_busy(c, o->key)) {
            json_t *copy = json_deep_copy(o->obj);
            const char *const ended[][2] = {{"phase", "Failed"},
                                            {"reason", "NodeLost"},
                                            {"message", "node stopped sending heartbeats"},
                                            {"finishTime", ts}};
            set_strings(json_object_get(copy, "status"), ended, GT_ARRAY_LEN(ended));
            gt_ctl_write(c, GT_STORE_UPDATE, o->key, copy, o->rev, NULL, NULL);
            json_decref(copy);
        }
    }
    collect_fini(&col);
}

/* Stop every task holding resources on a draining node (reason Drained),
 * and each one a NoExecute taint evicts (reason Evicted); the job
 * controller puts each back in the queue once its exit is recorded. */
static void evict_tasks(struct gt_ctl *c, const struct gt_api_node *node)
{
    const char *name = node->o.meta.name;
    bool draining = gt_node_draining(node);
    struct collect col;
    collect(c, name, &col);
    for (size_t i = 0; i < col.o.n; i++) {
        const struct gt_api_task *t = col.t.v[i];
        const struct gt_api_taint *taint =
            draining || !gt_task_holds(t) ? NULL : gt_node_evicting_taint(node, t, gt_now_ms());
        if (gt_task_holds(t) && (draining || taint)) {
            char *why = draining ? gt_xasprintf("node %s is being drained", name)
                                 : gt_xasprintf("node %s has the taint %s%s%s:NoExecute, which "
                                                "the task does not tolerate%s",
                                                name, taint->key, taint->value ? "=" : "",
                                                taint->value ? taint->value : "",
                                                t->spec.template.tolerations.n
                                                    ? " (or no longer: tolerationSeconds)"
                                                    : "");
            gt_feed_stop_task(c, col.o.v[i], draining ? "Drained" : "Evicted", why);
            free(why);
        }
    }
    collect_fini(&col);
}

static bool node_lost_marked(const struct gt_api_node *node)
{
    const struct gt_api_condition *c = gt_api_condition_find(&node->status.conditions, "Ready");
    return c && c->status && strcmp(c->status, "True") && c->reason &&
           !strcmp(c->reason, "NodeLost");
}

static void mark_lost(struct gt_ctl *c, const struct gt_cobj *o)
{
    json_t *n = json_deep_copy(o->obj);
    char ts[32];
    gt_time_format(gt_now_ms(), ts, sizeof(ts));
    const char *const lost[][2] = {{"status", "False"},
                                   {"reason", "NodeLost"},
                                   {"message", "no heartbeat within the node grace period"},
                                   {"lastTransitionTime", ts}};
    set_strings(gt_json_find(gt_api_conditions_json(n), "type", "Ready"), lost, GT_ARRAY_LEN(lost));
    gt_ctl_write(c, GT_STORE_UPDATE, o->key, n, o->rev, NULL, NULL);
    json_decref(n);
    gt_feed_node_lost(c, gt_cobj_node(o));
    gt_log_warn("node lost", "node=%s grace_s=%lld", gt_cobj_node(o)->o.meta.name,
                (long long)c->s->cfg->node_grace_s);
}

static int tick_cb(const char *key, void *val, void *arg)
{
    struct gt_ctl *c = arg;
    const struct gt_cobj *o = val;
    const struct gt_api_node *node = gt_cobj_node(o);
    if (gt_ctl_busy(c, key)) {
        return 0;
    }
    if (gt_node_lost(node, gt_now_ms(), c->s->cfg->node_grace_s * 1000, c->start_ms)) {
        mark_lost(c, o);
        fail_lost_tasks(c, node->o.meta.name);
    } else if (node_lost_marked(node)) {
        fail_lost_tasks(c, node->o.meta.name);
    } else if (node->spec.taints.n) {
        evict_tasks(c, node);
    }
    return 0;
}

void gt_nodectl_tick(struct gt_ctl *c)
{
    gt_strmap_each(&c->objs[GT_KIND_NODE], tick_cb, c);
}
