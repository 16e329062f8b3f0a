/*
 * Placements: where one task goes. Each picks a node and concrete GPU shares
 * for a task without changing the model (the cycle then binds, preemption's
 * simulation holds), so the cycle and the what-if use exactly one rule.
 *
 * - gantry: fragmentation-aware (frag.c: the FGD measure over the
 *   workload the model has seen). A whole-GPU task goes inside one
 *   NVLink/PCIe group when one fits, else on the nodes with enough avail
 *   GPUs (GPUs taken from the fullest groups first); among the first
 *   FRAG_CANDIDATES fitting nodes in index order (smallest block, or
 *   fewest avail, first) it takes the one whose fragmentation grows least,
 *   ties to the first, so on an empty workload it is plain best fit. A
 *   fractional share goes on the GPU of the whole cluster whose taking
 *   grows its node's fragmentation least (ties to the fullest GPU); a
 *   cpu-only task on the first node, fewest avail GPUs first, where it
 *   grows least.
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
#include <stdlib.h>
#include <string.h>

#include "sched/index.h"
#include "sched/place.h"
#include "sched/resv.h"
#include "sched/sched_int.h"

static bool usable(const struct gt_sched_gpu *g, const struct gt_sched_job *job, int64_t now_ms)
{
    if (!g->healthy || g->state != GT_SCHED_GPU_FREE) {
        return false;
    }
    return !g->reserved_by || g->reserved_by == job ||
           gt_sched_resv_lends(g->reserved_by->resv, job, now_ms);
}

static bool schedulable(const struct gt_sched_node *node, const struct gt_sched_group *group)
{
    return node->ready && !node->unschedulable && gt_sched_node_takes(node, group);
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
            if ((i > 0 && node == rv->node[i - 1]) || !schedulable(node, task->group)) {
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

int32_t gt_sched_gpu_room(const struct gt_sched_gpu *g, const struct gt_sched_job *job,
                          int64_t now_ms)
{
    return room_milli(g, job, now_ms);
}

bool gt_sched_pick_whole(const struct gt_sched_node *node, const struct gt_sched_job *job, size_t k,
                         int64_t now_ms, struct gt_sched_gpu_share *shares)
{
    return pick_whole(node, job, k, true, now_ms, shares);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The rooms of node's GPUs for job, ascending, into rooms[node->n_gpus]. */
static void node_rooms(const struct gt_sched_node *node, const struct gt_sched_job *job,
                       int64_t now_ms, int32_t *rooms)
{
    for (size_t i = 0; i < node->n_gpus; i++) {
        int32_t r = room_milli(&node->gpus[i], job, now_ms);
        size_t j = i;
        /* insertion sort: nodes have a handful of GPUs */
        while (node->n_gpus <= 64 && j > 0 && rooms[j - 1] > r) {
            rooms[j] = rooms[j - 1];
            j--;
        }
        rooms[j] = r;
    }
    if (node->n_gpus > 64) {
        qsort(rooms, node->n_gpus, sizeof(*rooms), cmp_i32);
    }
}

static int64_t cpu_free(const struct gt_sched_node *node)
{
    return node->cpu_milli_alloc - node->cpu_milli_used;
}

/* Fragmentation changes closer than this are ties (sums of doubles). */
#define FRAG_EPS 1e-6
/* Nodes a whole-GPU task compares, in index order: bounds a placement on
 * a large cluster; smaller ones are compared whole. */
#define FRAG_CANDIDATES 128

/* Each node of the avail index b, bucket by bucket in key order (fewest avail
 * GPUs first); `continue` goes on to the next node. */
#define EACH_AVAIL_NODE(b, node)                                                                   \
    for (int32_t key_ = gt_sched_idx_first(b, 0); key_ >= 0;                                       \
         key_ = gt_sched_idx_first(b, (size_t)key_ + 1))                                           \
        for (struct gt_sched_node *node = (b)->head[key_]; node;                                   \
             node = node->link[GT_SCHED_IDX_AVAIL].next)

/* Whole GPUs from index idx: of the first FRAG_CANDIDATES nodes in key
 * order (from key k) that fit, the one whose fragmentation grows least,
 * ties to the first. */
static bool place_indexed(struct gt_sched_model *m, const struct gt_sched_task *task, int idx,
                          bool topo, int64_t now_ms, struct gt_sched_pick *out)
{
    const struct gt_sched_task_req *req = &task->group->req;
    size_t k = (size_t)req->gpus, seen = 0;
    int32_t rooms[GT_SCHED_MAX_NODE_GPUS];
    struct gt_sched_node *best = NULL;
    double best_d = 0;
    for (int32_t key = gt_sched_idx_first(&m->idx[idx], k); key >= 0 && seen < FRAG_CANDIDATES;
         key = gt_sched_idx_first(&m->idx[idx], (size_t)key + 1)) {
        for (struct gt_sched_node *node = m->idx[idx].head[key]; node && seen < FRAG_CANDIDATES;
             node = node->link[idx].next) {
            if (!gt_sched_node_takes(node, task->group)) {
                continue;
            }
            node_rooms(node, task->job, now_ms, rooms);
            size_t n = node->n_gpus;
            /* free GPUs (room 1000) sort last; a whole task takes k of them */
            if (n < k || (k > 0 && rooms[n - k] < 1000)) {
                continue;
            }
            seen++;
            int64_t cpu = cpu_free(node);
            double d = gt_sched_frag(&m->workload, rooms, n - k, cpu - req->cpu_milli) -
                       gt_sched_frag(&m->workload, rooms, n, cpu);
            if (!best || d < best_d - FRAG_EPS) {
                best = node;
                best_d = d;
            }
        }
    }
    if (!best || !pick_whole(best, task->job, k, topo, now_ms, out->shares)) {
        return false;
    }
    out->node = best;
    out->n = k;
    return true;
}

/* A cpu-only task: the node whose fragmentation grows least (taking cpu
 * never lowers it, so the first node where it does not grow ends the
 * search), in index order (fewest avail GPUs first). */
static bool place_cpu(struct gt_sched_model *m, const struct gt_sched_task *task, int64_t now_ms,
                      struct gt_sched_pick *out)
{
    const struct gt_sched_task_req *req = &task->group->req;
    const struct gt_sched_buckets *b = &m->idx[GT_SCHED_IDX_AVAIL];
    int32_t rooms[GT_SCHED_MAX_NODE_GPUS];
    struct gt_sched_node *best = NULL;
    double best_d = 0;
    EACH_AVAIL_NODE(b, node)
    {
        if (!gt_sched_node_takes(node, task->group)) {
            continue;
        }
        node_rooms(node, task->job, now_ms, rooms);
        int64_t cpu = cpu_free(node);
        double d = gt_sched_frag(&m->workload, rooms, node->n_gpus, cpu - req->cpu_milli) -
                   gt_sched_frag(&m->workload, rooms, node->n_gpus, cpu);
        if (!best || d < best_d - FRAG_EPS) {
            best = node;
            best_d = d;
        }
        if (best_d <= FRAG_EPS) {
            goto done;
        }
    }
done:
    out->node = best;
    out->n = 0;
    return best != NULL;
}

/* A fractional task (gantry): over the schedulable nodes and each distinct
 * room of their GPUs that holds the share, the GPU whose taking grows the
 * node's fragmentation least; ties to the fullest GPU, then index order
 * (fewest avail GPUs first), then the lowest GPU index. A job holding a
 * reservation uses it first. */
static bool place_share(struct gt_sched_model *m, const struct gt_sched_task *task, int64_t now_ms,
                        struct gt_sched_pick *out)
{
    const struct gt_sched_task_req *req = &task->group->req;
    if (task->job->resv) {
        struct gt_sched_task probe = *task;
        struct gt_sched_group grp = *task->group;
        grp.req.gpus = 1;
        probe.group = &grp;
        if (place_reserved(m, &probe, true, now_ms, out)) {
            out->shares[0].milli = (int32_t)req->gpu_milli;
            return true;
        }
    }
    const struct gt_sched_buckets *b = &m->idx[GT_SCHED_IDX_AVAIL];
    int32_t rooms[GT_SCHED_MAX_NODE_GPUS], after[GT_SCHED_MAX_NODE_GPUS];
    int32_t want = (int32_t)req->gpu_milli, best_room = 0;
    struct gt_sched_node *best = NULL;
    double best_d = 0;
    EACH_AVAIL_NODE(b, node)
    {
        size_t n = node->n_gpus;
        if (!gt_sched_node_takes(node, task->group) || n == 0) {
            continue;
        }
        node_rooms(node, task->job, now_ms, rooms);
        if (rooms[n - 1] < want) {
            continue;
        }
        int64_t cpu = cpu_free(node);
        double before = gt_sched_frag(&m->workload, rooms, n, cpu);
        for (size_t i = 0; i < n; i++) {
            if (rooms[i] < want || (i > 0 && rooms[i] == rooms[i - 1])) {
                continue;
            }
            /* rooms with GPU i's room less the share, still ascending */
            memcpy(after, rooms, n * sizeof(*after));
            size_t j = i;
            int32_t left = rooms[i] - want;
            while (j > 0 && after[j - 1] > left) {
                after[j] = after[j - 1];
                j--;
            }
            after[j] = left;
            double d = gt_sched_frag(&m->workload, after, n, cpu - req->cpu_milli) - before;
            if (!best || d < best_d - FRAG_EPS ||
                (d <= best_d + FRAG_EPS && rooms[i] < best_room)) {
                best = node;
                best_d = d;
                best_room = rooms[i];
            }
        }
    }
    if (!best) {
        return false;
    }
    size_t g = 0;
    while (room_milli(&best->gpus[g], task->job, now_ms) != best_room) {
        g++;
    }
    out->node = best;
    out->n = 1;
    out->shares[0] = (struct gt_sched_gpu_share){.index = best->gpus[g].index, .milli = want};
    return true;
}

bool gt_sched_place_gantry(struct gt_sched_model *m, const struct gt_sched_task *task,
                           int64_t now_ms, struct gt_sched_pick *out)
{
    const struct gt_sched_task_req *req = &task->group->req;
    if (req->gpus == 0) {
        return req->gpu_milli > 0 ? place_share(m, task, now_ms, out)
                                  : place_cpu(m, task, now_ms, out);
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

/* Does task fit on node? If so, *score is its FGD BestFit score there. */
static bool fgd_fits(const struct gt_sched_node *node, const struct gt_sched_task *task,
                     int64_t now_ms, int64_t *score)
{
    const struct gt_sched_task_req *req = &task->group->req;
    if (!schedulable(node, task->group)) {
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
