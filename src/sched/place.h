/*
 * sched place (place.c): the gantry, bestfit and random placements.
 * Included only from src/sched.
 */
#ifndef GT_SCHED_PLACE_H
#define GT_SCHED_PLACE_H

#include "sched/sched_int.h"

/* Placements (gt_sched_place_fn): see place.c's file comment. */
gt_sched_place_fn gt_sched_place_gantry, gt_sched_place_bestfit, gt_sched_place_random;

/* Milli-GPU of g a share of job could take (0 on an unhealthy GPU, one held
 * whole, or one reserved by a job that does not lend it); 1000 exactly when
 * a whole-GPU task of job may take it. */
int32_t gt_sched_gpu_room(const struct gt_sched_gpu *g, const struct gt_sched_job *job,
                          int64_t now_ms);
/* The gantry placement's choice of k whole GPUs of node for job (one
 * NVLink/PCIe group's smallest block that holds them, else groups fullest
 * first) into shares[k]; false if the node has fewer than k. */
bool gt_sched_pick_whole(const struct gt_sched_node *node, const struct gt_sched_job *job, size_t k,
                         int64_t now_ms, struct gt_sched_gpu_share *shares);

#endif
