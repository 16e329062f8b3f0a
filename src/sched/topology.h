/*
 * sched topology (topology.c): placement for jobs that ask for a topology
 * level (sched.h's enum gt_sched_topology). Included only from src/sched.
 */
#ifndef GT_SCHED_TOPOLOGY_H
#define GT_SCHED_TOPOLOGY_H

#include "sched/sched_int.h"

/* For a job whose level is NODE: the node that can hold tasks[0..n) (all
 * PENDING, borrowed) together now: the node its holding tasks are on if it
 * has any, else the schedulable node with the fewest avail GPUs where every
 * one of them fits. NULL if none. pick is scratch. The model is left as it
 * was (the tasks are held and released while trying). */
struct gt_sched_node *gt_sched_topo_gang_node(struct gt_sched_model *m,
                                              struct gt_sched_task **tasks, size_t n,
                                              int64_t now_ms, struct gt_sched_pick *pick);

/* Place one task of a job with a topology level (a gt_sched_place_fn with
 * the gang's node): level NODE puts it on pin (NULL: no node holds the
 * gang); GPU_GROUP and NUMA give its GPUs one group or NUMA node, on the
 * schedulable node with the fewest avail GPUs where that fits. A required
 * level fails where it does not hold; a preferred one falls back to
 * policy's placement. Does not change the model. */
bool gt_sched_topo_place(struct gt_sched_model *m, const struct gt_sched_policy *policy,
                         const struct gt_sched_task *task, struct gt_sched_node *pin,
                         int64_t now_ms, struct gt_sched_pick *out);

#endif
