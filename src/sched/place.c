/*
 * Placements: where one task goes. Each picks a node and concrete GPU shares
 * for a task without changing the model (the cycle then binds, preemption's
 * simulation holds), so the cycle and the what-if use exactly one rule.
 *
 * - gantry: a multi-GPU task inside one NVLink/PCIe group when one fits,
 *   choosing the node whose largest group block is the smallest that fits
 *   (best fit, keeps large blocks whole); else the node with the fewest
 *   avail GPUs that fit, GPUs taken from the fullest groups first. A
 *   fractional share goes on the fullest shared GPU with room in the
 *   cluster, else on a free GPU of the node with the fewest avail; a
 *   cpu-only task on the node with the fewest avail GPUs. Indexed.
 * - bestfit and random: the baselines of the FGD paper (Weng et al.,
 *   ATC'23) as its simulator runs them, for every kind of task. Among the
 *   nodes where the task fits (cpu, memory, GPUs), bestfit takes the one
 *   with the highest BestFit score, trunc(100 * (1 - cpu_left / 256000 -
 *   gpu_milli_left / 16000)) over what the node would have left after the
 *   task (FGD normalises every node by a 128-core, 8-GPU one), ties drawn
 *   at random; random draws a node uniformly. A fractional share then goes
 *   on the node's fullest GPU with room (bestfit) or on one drawn among
 *   those with room (random); whole GPUs are the node's lowest-indexed free
 *   ones. Both scan every node (O(nodes * GPUs) per task) and draw from the
 *   model's seeded generator, so a run is deterministic.
 *
 * Reserved GPUs are used only by their holder, or lent by the backfill rule
 * (gt_sched_resv_lends); a whole-GPU task of a job holding or borrowing a
 * reservation tries those nodes first under every placement. Not Ready,
 * cordoned and unhealthy capacity is never picked.
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
 * fits. */
static bool place_indexed(const struct gt_sched_model *m, const struct gt_sched_task *task, int idx,
                          bool topo, int64_t now_ms, struct gt_sched_pick *out)
{
    const struct gt_sched_task_req *req = &task->group->req;
    size_t k = (size_t)req->gpus;
    for (int32_t key = gt_sched_idx_first(&m->idx[idx], k); key >= 0;
         key = gt_sched_idx_first(&m->idx[idx], (size_t)key + 1)) {
        for (struct gt_sched_node *node = m->idx[idx].head[key]; node;
             node = node->link[idx].next) {
            if (gt_sched_node_fits(node, req) &&
                pick_whole(node, task->job, k, topo, now_ms, out->shares)) {
                out->node = node;
                out->n = k;
                return true;
            }
        }
    }
    return false;
}

/* A fractional or cpu-only task (gantry). */
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
            !place_indexed(m, &probe, GT_SCHED_IDX_AVAIL, true, now_ms, out)) {
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

bool gt_sched_place_gantry(struct gt_sched_model *m, const struct gt_sched_task *task,
                           int64_t now_ms, struct gt_sched_pick *out)
{
    const struct gt_sched_task_req *req = &task->group->req;
    if (req->gpus == 0) {
        return place_light(m, task, now_ms, out);
    }
    if (req->gpus > GT_SCHED_MAX_NODE_GPUS) {
        return false;
    }
    /* Else no single group holds it: the node with the fewest avail that
     * does. */
    return place_reserved(m, task, true, now_ms, out) ||
           place_indexed(m, task, GT_SCHED_IDX_BLOCK, true, now_ms, out) ||
           place_indexed(m, task, GT_SCHED_IDX_AVAIL, true, now_ms, out);
}

/* ---- the FGD baselines ---- */

/* A draw in [0, n), n > 0, from the model's generator (xorshift64*). */
static size_t draw(struct gt_sched_model *m, size_t n)
{
    m->rng ^= m->rng >> 12;
    m->rng ^= m->rng << 25;
    m->rng ^= m->rng >> 27;
    return (size_t)((m->rng * 2685821657736338717ULL) % n);
}

/* Milli-GPU of g that a share of job could take: none on an unhealthy GPU,
 * one held whole, or one reserved by a job that does not lend it. */
static int32_t room_milli(const struct gt_sched_gpu *g, const struct gt_sched_job *job,
                          int64_t now_ms)
{
    if (!g->healthy || g->state == GT_SCHED_GPU_WHOLE ||
        (g->reserved_by && g->reserved_by != job &&
         !gt_sched_resv_lends(g->reserved_by->resv, job, now_ms))) {
        return 0;
    }
    return 1000 - g->used_milli;
}

/* Does task fit on node? If so, *score is its FGD BestFit score there. */
static bool fgd_fits(const struct gt_sched_node *node, const struct gt_sched_task *task,
                     int64_t now_ms, int64_t *score)
{
    const struct gt_sched_task_req *req = &task->group->req;
    if (!schedulable(node, req)) {
        return false;
    }
    int64_t left_milli = 0, max_room = 0;
    size_t n_free = 0;
    for (size_t i = 0; i < node->n_gpus; i++) {
        const struct gt_sched_gpu *g = &node->gpus[i];
        int32_t room = room_milli(g, task->job, now_ms);
        left_milli += room;
        max_room = room > max_room ? room : max_room;
        n_free += usable(g, task->job, now_ms);
    }
    if ((size_t)req->gpus > n_free || req->gpu_milli > max_room) {
        return false;
    }
    /* The request is what fits, so nothing here can go negative or
     * overflow (cpu_milli_used + cpu_milli did not). */
    int64_t cpu_left = node->cpu_milli_alloc - node->cpu_milli_used - req->cpu_milli;
    int64_t gpu_left = left_milli - req->gpus * 1000 - req->gpu_milli;
    __int128 num = (__int128)25600000 - (__int128)100 * cpu_left - (__int128)1600 * gpu_left;
    *score = (int64_t)(num / 256000); /* truncates toward zero, as FGD's int64() */
    return true;
}

/* The GPU of node for task's share: bestfit's fullest with room (lowest
 * index on ties), or random's drawn one among those with room. node has
 * one (fgd_fits). */
static size_t pick_share(struct gt_sched_model *m, const struct gt_sched_node *node,
                         const struct gt_sched_task *task, bool bestfit, int64_t now_ms)
{
    int64_t want = task->group->req.gpu_milli;
    size_t pick = SIZE_MAX, n_room = 0;
    int32_t least = INT32_MAX;
    for (size_t i = 0; i < node->n_gpus; i++) {
        int32_t room = room_milli(&node->gpus[i], task->job, now_ms);
        if (room >= want) {
            n_room++;
            if (room < least) {
                least = room;
                pick = i;
            }
        }
    }
    GT_ASSERT(n_room > 0);
    if (bestfit) {
        return pick;
    }
    size_t skip = draw(m, n_room);
    for (size_t i = 0;; i++) {
        if (room_milli(&node->gpus[i], task->job, now_ms) >= want && skip-- == 0) {
            return i;
        }
    }
}

/* The baselines: bestfit or random (see the top of the file). */
static bool place_fgd(struct gt_sched_model *m, const struct gt_sched_task *task, bool bestfit,
                      int64_t now_ms, struct gt_sched_pick *out)
{
    const struct gt_sched_task_req *req = &task->group->req;
    if (req->gpus > GT_SCHED_MAX_NODE_GPUS) {
        return false;
    }
    if (req->gpus > 0 && place_reserved(m, task, false, now_ms, out)) {
        return true;
    }
    /* Two passes: the best score and how many nodes have it, then the
     * drawn one of those. Random scores every node alike. */
    int64_t best = INT64_MIN, score;
    size_t n_best = 0;
    for (size_t i = 0; i < m->n_nodes; i++) {
        if (fgd_fits(m->nodes[i], task, now_ms, &score)) {
            score = bestfit ? score : 0;
            if (score > best) {
                best = score;
                n_best = 0;
            }
            n_best += score == best;
        }
    }
    if (n_best == 0) {
        return false;
    }
    size_t skip = draw(m, n_best);
    struct gt_sched_node *node = NULL;
    for (size_t i = 0; !node; i++) {
        GT_ASSERT(i < m->n_nodes);
        if (fgd_fits(m->nodes[i], task, now_ms, &score) && (!bestfit || score == best) &&
            skip-- == 0) {
            node = m->nodes[i];
        }
    }
    out->node = node;
    out->n = (size_t)req->gpus;
    if (req->gpus > 0) {
        bool ok = pick_whole(node, task->job, (size_t)req->gpus, false, now_ms, out->shares);
        GT_ASSERT(ok);
        return true;
    }
    if (req->gpu_milli == 0) {
        return true;
    }
    size_t k = pick_share(m, node, task, bestfit, now_ms);
    out->n = 1;
    out->shares[0] =
        (struct gt_sched_gpu_share){.index = node->gpus[k].index, .milli = (int32_t)req->gpu_milli};
    return true;
}

bool gt_sched_place_bestfit(struct gt_sched_model *m, const struct gt_sched_task *task,
                            int64_t now_ms, struct gt_sched_pick *out)
{
    return place_fgd(m, task, true, now_ms, out);
}

bool gt_sched_place_random(struct gt_sched_model *m, const struct gt_sched_task *task,
                           int64_t now_ms, struct gt_sched_pick *out)
{
    return place_fgd(m, task, false, now_ms, out);
}
