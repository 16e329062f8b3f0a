/*
 * Topology constraints: where the tasks of a job that asks for a topology
 * level go (sched.h, enum gt_sched_topology). The cycle (cycle.c) calls
 * this instead of the policy's placement for such jobs only, so jobs
 * without a constraint, the simulator's traces and the benchmark place
 * exactly as before.
 *
 * - NODE: the whole gang on one node. gt_sched_topo_gang_node tries the
 *   gang on each schedulable node, fewest avail GPUs first (best fit), by
 *   holding its tasks there and releasing them; the first node where all
 *   fit is the gang's. A job with tasks already holding resources keeps
 *   to their node. Each task then goes on that node, its GPUs chosen as
 *   the gantry placement chooses them (one NVLink/PCIe group if one holds
 *   them).
 * - GPU_GROUP, NUMA: per task, its whole GPUs inside one NVLink/PCIe group
 *   or one NUMA node (the domain with the fewest usable GPUs that holds
 *   them, lowest indices first), on the first schedulable node, fewest
 *   avail GPUs first, that has such a domain. A fractional or cpu-only task
 *   uses at most one GPU, so any placement keeps these levels.
 * Required: nothing else is tried; preferred: the policy's placement if the
 * level does not hold. Nothing here changes the model for good.
 */
#include <stdlib.h>

#include "sched/index.h"
#include "sched/job.h"
#include "sched/place.h"
#include "sched/sched_int.h"
#include "sched/topology.h"

const char *gt_sched_topology_name(enum gt_sched_topology level)
{
    switch (level) {
    case GT_SCHED_TOPO_NODE:
        return "node";
    case GT_SCHED_TOPO_GPU_GROUP:
        return "gpu-group";
    case GT_SCHED_TOPO_NUMA:
        return "numa";
    case GT_SCHED_TOPO_NONE:
        break;
    }
    return "none";
}

/* GPU g's domain at level (GPU_GROUP or NUMA). */
static int32_t domain_of(const struct gt_sched_gpu *g, enum gt_sched_topology level)
{
    return level == GT_SCHED_TOPO_NUMA ? g->numa : g->group_slot;
}

/* k whole GPUs of node for job inside one domain of level: the domain with
 * the fewest usable GPUs that holds k (ties to the lowest GPU index), its
 * lowest-indexed ones. false if no domain holds k. */
static bool pick_domain(const struct gt_sched_node *node, const struct gt_sched_job *job, size_t k,
                        enum gt_sched_topology level, int64_t now_ms,
                        struct gt_sched_gpu_share *shares)
{
    size_t best = SIZE_MAX, best_n = 0;
    for (size_t i = 0; i < node->n_gpus; i++) {
        const struct gt_sched_gpu *g = &node->gpus[i];
        if (gt_sched_gpu_room(g, job, now_ms) != 1000) {
            continue;
        }
        /* count each domain once, at its first usable GPU */
        size_t cnt = 0;
        bool first = true;
        for (size_t j = 0; j < node->n_gpus; j++) {
            const struct gt_sched_gpu *o = &node->gpus[j];
            if (domain_of(o, level) == domain_of(g, level) &&
                gt_sched_gpu_room(o, job, now_ms) == 1000) {
                first = first && j >= i;
                cnt++;
            }
        }
        if (first && cnt >= k && (best == SIZE_MAX || cnt < best_n)) {
            best = i;
            best_n = cnt;
        }
    }
    if (best == SIZE_MAX) {
        return false;
    }
    int32_t dom = domain_of(&node->gpus[best], level);
    size_t n = 0;
    for (size_t i = best; i < node->n_gpus && n < k; i++) {
        const struct gt_sched_gpu *g = &node->gpus[i];
        if (domain_of(g, level) == dom && gt_sched_gpu_room(g, job, now_ms) == 1000) {
            shares[n++] = (struct gt_sched_gpu_share){.index = g->index, .milli = 1000};
        }
    }
    GT_ASSERT(n == k);
    return true;
}

/* Can task go on node with its GPUs inside one domain of level (NONE or
 * NODE: anywhere on the node)? If so, fill out. */
static bool pick_on(const struct gt_sched_node *node, const struct gt_sched_task *task,
                    enum gt_sched_topology level, int64_t now_ms, struct gt_sched_pick *out)
{
    const struct gt_sched_task_req *req = &task->group->req;
    if (!node->ready || node->unschedulable || !gt_sched_node_takes(node, task->group) ||
        req->gpus > (int64_t)node->n_gpus) {
        return false;
    }
    out->node = (struct gt_sched_node *)node;
    out->n = 0;
    if (req->gpus > 0) {
        size_t k = (size_t)req->gpus;
        bool ok = level == GT_SCHED_TOPO_GPU_GROUP || level == GT_SCHED_TOPO_NUMA
                      ? pick_domain(node, task->job, k, level, now_ms, out->shares)
                      : gt_sched_pick_whole(node, task->job, k, now_ms, out->shares);
        out->n = ok ? k : 0;
        return ok;
    }
    if (req->gpu_milli == 0) {
        return true;
    }
    /* a share: the fullest GPU with room for it */
    size_t pick = SIZE_MAX;
    int32_t least = 0;
    for (size_t i = 0; i < node->n_gpus; i++) {
        int32_t room = gt_sched_gpu_room(&node->gpus[i], task->job, now_ms);
        if (room >= req->gpu_milli && (pick == SIZE_MAX || room < least)) {
            pick = i;
            least = room;
        }
    }
    if (pick == SIZE_MAX) {
        return false;
    }
    out->n = 1;
    out->shares[0] = (struct gt_sched_gpu_share){.index = node->gpus[pick].index,
                                                 .milli = (int32_t)req->gpu_milli};
    return true;
}

/* The schedulable nodes with at least k avail GPUs, fewest first, into a
 * new array (*n of them; the caller frees it). A copy, because holding a
 * task moves its node between buckets. */
static struct gt_sched_node **candidates(const struct gt_sched_model *m, size_t k, size_t *n)
{
    const struct gt_sched_buckets *b = &m->idx[GT_SCHED_IDX_AVAIL];
    struct gt_sched_node **v = NULL;
    size_t cap = 0;
    *n = 0;
    for (int32_t key = gt_sched_idx_first(b, k); key >= 0;
         key = gt_sched_idx_first(b, (size_t)key + 1)) {
        for (struct gt_sched_node *node = b->head[key]; node;
             node = node->link[GT_SCHED_IDX_AVAIL].next) {
            GT_VEC_RESERVE(v, cap, *n + 1, 16);
            v[(*n)++] = node;
        }
    }
    return v;
}

struct gt_sched_node *gt_sched_topo_gang_node(struct gt_sched_model *m,
                                              struct gt_sched_task **tasks, size_t n,
                                              int64_t now_ms, struct gt_sched_pick *pick)
{
    GT_ASSERT(n > 0);
    const struct gt_sched_job *job = tasks[0]->job;
    for (size_t i = 0; i < job->n_tasks && job->n_holding > 0; i++) {
        if (job->tasks[i].node) {
            return job->tasks[i].node;
        }
    }
    int64_t k = 0;
    for (size_t i = 0; i < n; i++) {
        k += tasks[i]->group->req.gpus;
        if (k > GT_SCHED_MAX_NODE_GPUS) {
            return NULL;
        }
    }
    size_t n_cand;
    struct gt_sched_node **cand = candidates(m, (size_t)k, &n_cand);
    struct gt_sched_node *found = NULL;
    for (size_t c = 0; c < n_cand && !found; c++) {
        size_t held = 0;
        while (held < n && pick_on(cand[c], tasks[held], GT_SCHED_TOPO_NONE, now_ms, pick)) {
            gt_sched_task_hold(tasks[held], cand[c], pick->shares, pick->n);
            held++;
        }
        found = held == n ? cand[c] : NULL;
        while (held > 0) {
            gt_sched_task_unhold(tasks[--held]);
        }
    }
    free(cand);
    return found;
}

bool gt_sched_topo_place(struct gt_sched_model *m, const struct gt_sched_policy *policy,
                         const struct gt_sched_task *task, struct gt_sched_node *pin,
                         int64_t now_ms, struct gt_sched_pick *out)
{
    const struct gt_sched_job *job = task->job;
    enum gt_sched_topology level = job->topology;
    const struct gt_sched_task_req *req = &task->group->req;
    bool ok = false;
    if (level == GT_SCHED_TOPO_NODE) {
        ok = pin && pick_on(pin, task, GT_SCHED_TOPO_NONE, now_ms, out);
    } else if (req->gpus == 0) {
        /* at most one GPU: every placement keeps the level */
        return policy->place(m, task, now_ms, out);
    } else if (req->gpus <= GT_SCHED_MAX_NODE_GPUS) {
        size_t n_cand;
        struct gt_sched_node **cand = candidates(m, (size_t)req->gpus, &n_cand);
        for (size_t c = 0; c < n_cand && !ok; c++) {
            ok = pick_on(cand[c], task, level, now_ms, out);
        }
        free(cand);
    }
    return ok || (!job->topology_required && policy->place(m, task, now_ms, out));
}
