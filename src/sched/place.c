/*
 * Placements: where one task goes. Each picks a node and concrete GPU shares
 * for a task without changing the model (the cycle then binds, preemption's
 * simulation holds), so the cycle and the what-if use exactly one rule.
 *
 * - gantry: a multi-GPU task inside one NVLink/PCIe group when one fits,
 *   choosing the node whose largest group block is the smallest that fits
 *   (best fit, keeps large blocks whole); else the node with the fewest
 *   avail GPUs that fit, GPUs taken from the fullest groups first.
 * - bestfit: the node with the fewest avail GPUs that fit, lowest indices.
 * - random: a node drawn uniformly (model's seeded state) among those with
 *   enough avail GPUs, lowest indices.
 * Fractional and cpu-only tasks are placed alike by all three: a fractional
 * share goes on the fullest shared GPU with room, else on a free GPU of the
 * node with the fewest avail; a cpu-only task on the node with the fewest
 * avail GPUs. Reserved GPUs are used only by their holder, or lent by the
 * backfill rule (gt_sched_resv_lends). Not Ready, cordoned and unhealthy
 * capacity is never picked.
 */
#include "sched/sched_int.h"

bool gt_sched_resv_lends(const struct gt_sched_resv *r, const struct gt_sched_job *job,
                         int64_t now_ms)
{
    int64_t end;
    return job->active_deadline_ms > 0 && r->due_ms != INT64_MAX &&
           gt_add_i64(now_ms, job->active_deadline_ms, &end) == 0 && end <= r->due_ms;
}

static bool usable(const struct gt_sched_gpu *g, const struct gt_sched_job *job, int64_t now_ms)
{
    if (!g->healthy || g->state != GT_SCHED_GPU_FREE) {
        return false;
    }
    return !g->reserved_by || g->reserved_by == job ||
           gt_sched_resv_lends(g->reserved_by->resv, job, now_ms);
}

static bool schedulable(const struct gt_sched_node *node, const struct gt_sched_task_req *req)
{
    return node->ready && !node->unschedulable && gt_sched_node_fits(node, req);
}

/* Pick k whole GPUs of node for job into shares; false if it lacks them. */
static bool pick_whole(const struct gt_sched_node *node, const struct gt_sched_job *job, size_t k,
                       bool topo, int64_t now_ms, struct gt_sched_gpu_share *shares)
{
    int32_t cnt[GT_SCHED_MAX_NODE_GPUS + 1] = {0};
    size_t total = 0;
    for (size_t i = 0; i < node->n_gpus; i++) {
        if (usable(&node->gpus[i], job, now_ms)) {
            cnt[node->gpus[i].group_slot]++;
            total++;
        }
    }
    if (total < k) {
        return false;
    }
    /* One group: the smallest block that fits. */
    int32_t best = -1;
    for (int32_t s = 0; topo && s < node->n_groups; s++) {
        if ((size_t)cnt[s] >= k && (best < 0 || cnt[s] < cnt[best])) {
            best = s;
        }
    }
    size_t n = 0;
    while (n < k) {
        /* Else groups fullest first; without topology, any group (-1). */
        int32_t slot = best;
        if (topo && best < 0) {
            for (int32_t s = 0; s < node->n_groups; s++) {
                if (cnt[s] > 0 && (slot < 0 || cnt[s] > cnt[slot])) {
                    slot = s;
                }
            }
        }
        for (size_t i = 0; i < node->n_gpus && n < k; i++) {
            const struct gt_sched_gpu *g = &node->gpus[i];
            if ((slot < 0 || g->group_slot == slot) && usable(g, job, now_ms)) {
                shares[n++] = (struct gt_sched_gpu_share){.index = g->index, .milli = 1000};
            }
        }
        GT_ASSERT(slot >= 0 || n == k);
        if (slot >= 0) {
            cnt[slot] = 0;
        }
    }
    return true;
}

/* Try the nodes of reservations job may use: its own, then those lent to
 * it. */
static bool place_reserved(const struct gt_sched_model *m, const struct gt_sched_task *task,
                           bool topo, int64_t now_ms, struct gt_sched_pick *out)
{
    const struct gt_sched_job *job = task->job;
    const struct gt_sched_task_req *req = &task->group->req;
    for (size_t r = 0; r <= m->n_resv; r++) {
        const struct gt_sched_resv *rv = r == 0 ? job->resv : m->resv[r - 1]->resv;
        if (!rv || (r > 0 && (m->resv[r - 1] == job || !gt_sched_resv_lends(rv, job, now_ms)))) {
            continue;
        }
        for (size_t i = 0; i < rv->n; i++) {
            struct gt_sched_node *node = rv->node[i];
            if ((i > 0 && node == rv->node[i - 1]) || !schedulable(node, req)) {
                continue;
            }
            if (pick_whole(node, job, (size_t)req->gpus, topo, now_ms, out->shares)) {
                out->node = node;
                out->n = (size_t)req->gpus;
                return true;
            }
        }
    }
    return false;
}

/* Whole GPUs from index idx: the first node in key order (from key k) that
 * fits; with skip > 0, start after that many candidates (random). */
static bool place_indexed(const struct gt_sched_model *m, const struct gt_sched_task *task, int idx,
                          bool topo, size_t skip, int64_t now_ms, struct gt_sched_pick *out)
{
    const struct gt_sched_task_req *req = &task->group->req;
    size_t k = (size_t)req->gpus;
    /* Two passes for random: from the drawn candidate on, then from the
     * start. */
    for (int pass = 0; pass < 2; pass++) {
        size_t seen = 0;
        for (int32_t key = gt_sched_idx_first(&m->idx[idx], k); key >= 0;
             key = gt_sched_idx_first(&m->idx[idx], (size_t)key + 1)) {
            if (pass == 0 && seen + m->idx[idx].count[key] <= skip) {
                seen += m->idx[idx].count[key];
                continue;
            }
            for (struct gt_sched_node *node = m->idx[idx].head[key]; node;
                 node = node->link[idx].next) {
                if (pass == 0 && seen++ < skip) {
                    continue;
                }
                if (gt_sched_node_fits(node, req) &&
                    pick_whole(node, task->job, k, topo, now_ms, out->shares)) {
                    out->node = node;
                    out->n = k;
                    return true;
                }
            }
        }
        if (skip == 0) {
            break;
        }
    }
    return false;
}

/* A fractional or cpu-only task. */
static bool place_light(const struct gt_sched_model *m, const struct gt_sched_task *task,
                        int64_t now_ms, struct gt_sched_pick *out)
{
    const struct gt_sched_task_req *req = &task->group->req;
    const struct gt_sched_buckets *b = &m->idx[GT_SCHED_IDX_AVAIL];
    if (req->gpu_milli == 0) {
        for (int32_t key = gt_sched_idx_first(b, 0); key >= 0;
             key = gt_sched_idx_first(b, (size_t)key + 1)) {
            for (struct gt_sched_node *node = b->head[key]; node;
                 node = node->link[GT_SCHED_IDX_AVAIL].next) {
                if (gt_sched_node_fits(node, req)) {
                    out->node = node;
                    out->n = 0;
                    return true;
                }
            }
        }
        return false;
    }
    /* The fullest shared GPU with room (this scans the schedulable nodes:
     * fractional tasks are few), else a whole free GPU. */
    const struct gt_sched_gpu *best = NULL;
    struct gt_sched_node *best_node = NULL;
    for (int32_t key = gt_sched_idx_first(b, 0); key >= 0;
         key = gt_sched_idx_first(b, (size_t)key + 1)) {
        for (struct gt_sched_node *node = b->head[key]; node;
             node = node->link[GT_SCHED_IDX_AVAIL].next) {
            for (size_t i = 0; gt_sched_node_fits(node, req) && i < node->n_gpus; i++) {
                const struct gt_sched_gpu *g = &node->gpus[i];
                if (g->healthy && g->state == GT_SCHED_GPU_SHARED &&
                    g->used_milli + req->gpu_milli <= 1000 &&
                    (!best || g->used_milli > best->used_milli)) {
                    best = g;
                    best_node = node;
                }
            }
        }
    }
    if (!best) {
        struct gt_sched_task_req one = *req;
        one.gpus = 1;
        struct gt_sched_task probe = *task;
        struct gt_sched_group grp = *task->group;
        grp.req = one;
        probe.group = &grp;
        if (!place_reserved(m, &probe, true, now_ms, out) &&
            !place_indexed(m, &probe, GT_SCHED_IDX_AVAIL, true, 0, now_ms, out)) {
            return false;
        }
        out->shares[0].milli = (int32_t)req->gpu_milli;
        return true;
    }
    out->node = best_node;
    out->n = 1;
    out->shares[0] =
        (struct gt_sched_gpu_share){.index = best->index, .milli = (int32_t)req->gpu_milli};
    return true;
}

static bool place_common(struct gt_sched_model *m, const struct gt_sched_task *task, int idx,
                         bool topo, bool random, int64_t now_ms, struct gt_sched_pick *out)
{
    const struct gt_sched_task_req *req = &task->group->req;
    if (req->gpus == 0) {
        return place_light(m, task, now_ms, out);
    }
    if (req->gpus > GT_SCHED_MAX_NODE_GPUS) {
        return false;
    }
    if (place_reserved(m, task, topo, now_ms, out)) {
        return true;
    }
    size_t skip = 0;
    if (random) {
        size_t total = 0;
        const struct gt_sched_buckets *b = &m->idx[GT_SCHED_IDX_AVAIL];
        for (int32_t key = gt_sched_idx_first(b, (size_t)req->gpus); key >= 0;
             key = gt_sched_idx_first(b, (size_t)key + 1)) {
            total += b->count[key];
        }
        if (total == 0) {
            return false;
        }
        /* xorshift64*, state in the model: deterministic per model. */
        m->rng ^= m->rng >> 12;
        m->rng ^= m->rng << 25;
        m->rng ^= m->rng >> 27;
        skip = (size_t)((m->rng * 2685821657736338717ULL) % total);
    }
    if (place_indexed(m, task, idx, topo, skip, now_ms, out)) {
        return true;
    }
    /* No single group holds it: the node with the fewest avail that does. */
    return idx == GT_SCHED_IDX_BLOCK &&
           place_indexed(m, task, GT_SCHED_IDX_AVAIL, topo, 0, now_ms, out);
}

bool gt_sched_place_gantry(struct gt_sched_model *m, const struct gt_sched_task *task,
                           int64_t now_ms, struct gt_sched_pick *out)
{
    return place_common(m, task, GT_SCHED_IDX_BLOCK, true, false, now_ms, out);
}

bool gt_sched_place_bestfit(struct gt_sched_model *m, const struct gt_sched_task *task,
                            int64_t now_ms, struct gt_sched_pick *out)
{
    return place_common(m, task, GT_SCHED_IDX_AVAIL, false, false, now_ms, out);
}

bool gt_sched_place_random(struct gt_sched_model *m, const struct gt_sched_task *task,
                           int64_t now_ms, struct gt_sched_pick *out)
{
    return place_common(m, task, GT_SCHED_IDX_AVAIL, false, true, now_ms, out);
}
