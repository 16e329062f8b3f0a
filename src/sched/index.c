/*
 * The model's node indexes: every schedulable node (Ready, not cordoned) sits
 * in two bucket lists, one keyed by its avail GPUs (healthy, FREE and not
 * reserved) and one by its largest block of avail GPUs inside one topology
 * group. A bitmap of non-empty buckets answers "smallest key >= k" in a few
 * word operations, so placement never scans the cluster for a task. The
 * model's pool (the capacity that borrowing may lend) is kept here too.
 *
 * Invariant: a node is linked iff it is schedulable, with keys equal to its
 * current counts; gt_sched_node_reindex restores that after any change to
 * its GPUs, readiness or reservations and is O(GPUs on the node).
 */
#include <stdlib.h>
#include <string.h>

#include "sched/index.h"
#include "sched/quota.h"
#include "sched/sched_int.h"

void gt_sched_node_groups_init(struct gt_sched_node *node)
{
    /* Dense group slots: first-seen order over GPUs sorted by index. */
    int32_t n = 0;
    for (size_t i = 0; i < node->n_gpus; i++) {
        int32_t slot = -1;
        for (size_t j = 0; j < i && slot < 0; j++) {
            if (node->gpus[j].group == node->gpus[i].group) {
                slot = node->gpus[j].group_slot;
            }
        }
        node->gpus[i].group_slot = slot >= 0 ? slot : n++;
    }
    free(node->group_avail);
    node->group_avail = gt_xcalloc((size_t)n + 1, sizeof(*node->group_avail));
    node->n_groups = n;
}

bool gt_sched_gpu_avail(const struct gt_sched_gpu *g, const struct gt_sched_job *job)
{
    return g->healthy && g->state == GT_SCHED_GPU_FREE &&
           (!g->reserved_by || g->reserved_by == job);
}

static void bucket_unlink(struct gt_sched_buckets *b, struct gt_sched_node *node, int i)
{
    struct gt_sched_link *l = &node->link[i];
    if (l->key < 0) {
        return;
    }
    size_t k = (size_t)l->key;
    if (l->prev) {
        l->prev->link[i].next = l->next;
    } else {
        b->head[k] = l->next;
    }
    if (l->next) {
        l->next->link[i].prev = l->prev;
    } else {
        b->tail[k] = l->prev;
    }
    if (--b->count[k] == 0) {
        b->nonempty[k / 64] &= ~(1ULL << (k % 64));
    }
    l->prev = l->next = NULL;
    l->key = -1;
}

static void bucket_link(struct gt_sched_buckets *b, struct gt_sched_node *node, int i, size_t k)
{
    struct gt_sched_link *l = &node->link[i];
    l->key = (int32_t)k;
    l->next = NULL;
    l->prev = b->tail[k];
    if (b->tail[k]) {
        b->tail[k]->link[i].next = node;
    } else {
        b->head[k] = node;
    }
    b->tail[k] = node;
    b->count[k]++;
    b->nonempty[k / 64] |= 1ULL << (k % 64);
}

static int64_t cap(int64_t v, int64_t max)
{
    return v < max ? v : max;
}

void gt_sched_node_reindex(struct gt_sched_node *node, bool gone)
{
    struct gt_sched_model *m = node->model;
    memset(node->group_avail, 0, ((size_t)node->n_groups + 1) * sizeof(*node->group_avail));
    size_t avail = 0, block = 0, healthy = 0;
    for (size_t i = 0; i < node->n_gpus; i++) {
        const struct gt_sched_gpu *g = &node->gpus[i];
        healthy += g->healthy;
        if (gt_sched_gpu_avail(g, NULL)) {
            avail++;
            int32_t c = ++node->group_avail[g->group_slot];
            block = (size_t)c > block ? (size_t)c : block;
        }
    }
    node->n_avail = avail;
    node->block = block;
    gt_sched_res_move(&m->pool, &node->pool_part, -1);
    memset(&node->pool_part, 0, sizeof(node->pool_part));
    bool sched = !gone && node->ready && !node->unschedulable;
    for (int i = 0; i < GT_SCHED_N_IDX; i++) {
        size_t key = i == GT_SCHED_IDX_AVAIL ? avail : block;
        if (sched && node->link[i].key == (int32_t)key) {
            continue;
        }
        bucket_unlink(&m->idx[i], node, i);
        if (sched) {
            bucket_link(&m->idx[i], node, i, key);
        }
    }
    if (sched) {
        /* Each node's share is capped so the sums cannot overflow for any
         * plausible cluster (2^20 nodes); the pool only bounds borrowing. */
        node->pool_part =
            (struct gt_resvec){.v = {
                                   [GT_RES_CPU] = cap(node->cpu_milli_alloc, 1LL << 40),
                                   [GT_RES_MEMORY] = cap(node->memory_bytes_alloc, 1LL << 42),
                                   [GT_RES_GPU] = (int64_t)healthy * 1000,
                               }};
        gt_sched_res_move(&m->pool, &node->pool_part, 1);
    }
}

int32_t gt_sched_idx_first(const struct gt_sched_buckets *b, size_t k)
{
    for (size_t w = k / 64; w < GT_ARRAY_LEN(b->nonempty); w++) {
        uint64_t bits = b->nonempty[w];
        if (w == k / 64) {
            bits &= ~0ULL << (k % 64);
        }
        if (bits) {
            return (int32_t)(w * 64 + (size_t)__builtin_ctzll(bits));
        }
    }
    return -1;
}

int32_t gt_sched_idx_last(const struct gt_sched_buckets *b, size_t k)
{
    if (k >= GT_SCHED_N_BUCKETS) {
        k = GT_SCHED_N_BUCKETS - 1;
    }
    for (size_t w = k / 64 + 1; w-- > 0;) {
        uint64_t bits = b->nonempty[w];
        if (w == k / 64 && k % 64 != 63) {
            bits &= (1ULL << (k % 64 + 1)) - 1;
        }
        if (bits) {
            return (int32_t)(w * 64 + 63 - (size_t)__builtin_clzll(bits));
        }
    }
    return -1;
}

/* ---- node lookups ---- */

struct gt_sched_gpu *gt_sched_node_gpu(const struct gt_sched_node *node, int32_t index)
{
    size_t lo = 0, hi = node->n_gpus;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (node->gpus[mid].index < index) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < node->n_gpus && node->gpus[lo].index == index ? &node->gpus[lo] : NULL;
}

bool gt_sched_node_takes(const struct gt_sched_node *node, const struct gt_sched_group *group)
{
    return gt_sched_node_fits(node, &group->req) &&
           gt_sched_marks_admit(&node->marks, &group->where);
}

bool gt_sched_node_fits(const struct gt_sched_node *node, const struct gt_sched_task_req *req)
{
    int64_t cpu, mem;
    return gt_add_i64(node->cpu_milli_used, req->cpu_milli, &cpu) == 0 &&
           gt_add_i64(node->memory_bytes_used, req->memory_bytes, &mem) == 0 &&
           cpu <= node->cpu_milli_alloc && mem <= node->memory_bytes_alloc;
}
