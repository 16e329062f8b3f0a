/*
 * sched place (place.c): the gantry, bestfit and random placements.
 * Included only from src/sched.
 */
#ifndef GT_SCHED_PLACE_H
#define GT_SCHED_PLACE_H

#include "sched/sched_int.h"

/* Placements (gt_sched_place_fn): see place.c's file comment. */
gt_sched_place_fn gt_sched_place_gantry, gt_sched_place_bestfit, gt_sched_place_random;

#endif
