/*
 * firstfit: the simplest policy, and the baseline the others are measured
 * against. Jobs go in arrival order; each task goes to the first node by
 * name that is Ready, not cordoned, has the cpu and memory free and has the
 * GPUs: the lowest-indexed healthy free GPUs for a whole-GPU task, the
 * lowest-indexed healthy GPU not held whole with room for its share for a
 * fractional task. A job that does not fit does not block later ones (no
 * head-of-line reservation), and firstfit never preempts.
 */
#include "sched/firstfit.h"
#include "sched/index.h"
#include "sched/sched_int.h"

static int ff_order(const struct gt_sched_job *a, const struct gt_sched_job *b, int64_t now_ms)
{
    (void)now_ms;
    return (a->arrival_ms > b->arrival_ms) - (a->arrival_ms < b->arrival_ms);
}

/* Choose the GPUs for req on node into shares; how many, or -1 if it lacks
 * them. Reserved GPUs are left to their holders. */
static int pick_gpus(const struct gt_sched_node *node, const struct gt_sched_task_req *req,
                     struct gt_sched_gpu_share *shares)
{
    int n = 0;
    if (req->gpus > 0) {
        if (node->n_avail < (size_t)req->gpus) {
            return -1;
        }
        for (size_t i = 0; n < req->gpus; i++) {
            const struct gt_sched_gpu *g = &node->gpus[i];
            if (gt_sched_gpu_avail(g, NULL)) {
                shares[n++] = (struct gt_sched_gpu_share){.index = g->index, .milli = 1000};
            }
        }
        return n;
    }
    if (req->gpu_milli == 0) {
        return 0;
    }
    for (size_t i = 0; i < node->n_gpus; i++) {
        const struct gt_sched_gpu *g = &node->gpus[i];
        if (g->healthy && g->state != GT_SCHED_GPU_WHOLE && !g->reserved_by &&
            g->used_milli + req->gpu_milli <= 1000) {
            shares[0] =
                (struct gt_sched_gpu_share){.index = g->index, .milli = (int32_t)req->gpu_milli};
            return 1;
        }
    }
    return -1;
}

bool gt_sched_place_firstfit(struct gt_sched_model *m, const struct gt_sched_task *task,
                             int64_t now_ms, struct gt_sched_pick *out)
{
    (void)now_ms;
    const struct gt_sched_task_req *req = &task->group->req;
    if (req->gpus > GT_SCHED_MAX_NODE_GPUS) {
        return false;
    }
    for (size_t i = 0; i < m->n_nodes; i++) {
        struct gt_sched_node *node = m->nodes[i];
        if (!node->ready || node->unschedulable || !gt_sched_node_takes(node, task->group)) {
            continue;
        }
        int n = pick_gpus(node, req, out->shares);
        if (n >= 0) {
            out->node = node;
            out->n = (size_t)n;
            return true;
        }
    }
    return false;
}

static const struct gt_sched_policy firstfit = {
    .name = "firstfit",
    .order = ff_order,
    .place = gt_sched_place_firstfit,
};

const struct gt_sched_policy *gt_sched_policy_firstfit(void)
{
    return &firstfit;
}
