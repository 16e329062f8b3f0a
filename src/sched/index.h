/*
 * sched index (index.c): the node indexes placement searches, and node
 * lookups. Included only from src/sched.
 */
#ifndef GT_SCHED_INDEX_H
#define GT_SCHED_INDEX_H

#include "sched/sched_int.h"

/* Set each GPU's group_slot and allocate group_avail; once per GPU list. */
void gt_sched_node_groups_init(struct gt_sched_node *node);
/* Recount node's avail/block and move it to its buckets and pool share;
 * unlinks it if it is not schedulable (or is being removed: gone). */
void gt_sched_node_reindex(struct gt_sched_node *node, bool gone);
/* Is GPU g free for a new whole-GPU task of job (healthy, FREE, and not
 * reserved by another job)? */
bool gt_sched_gpu_avail(const struct gt_sched_gpu *g, const struct gt_sched_job *job);
/* The smallest non-empty bucket key >= k in b, or -1. */
int32_t gt_sched_idx_first(const struct gt_sched_buckets *b, size_t k);
/* The largest non-empty bucket key <= k in b, or -1. */
int32_t gt_sched_idx_last(const struct gt_sched_buckets *b, size_t k);
/* Can node take a task asking cpu/memory? (ignores readiness and GPUs) */
bool gt_sched_node_fits(const struct gt_sched_node *node, const struct gt_sched_task_req *req);
/* May a task of group go on node: its cpu and memory fit
 * (gt_sched_node_fits) and the node's labels and taints admit it
 * (gt_sched_marks_admit)? */
bool gt_sched_node_takes(const struct gt_sched_node *node, const struct gt_sched_group *group);
/* The node's GPU with this index, or NULL. */
struct gt_sched_gpu *gt_sched_node_gpu(const struct gt_sched_node *node, int32_t index);

#endif
