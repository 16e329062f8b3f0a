/*
 * sched firstfit (firstfit.c): the first-fit placement and its policy.
 * Included only from src/sched.
 */
#ifndef GT_SCHED_FIRSTFIT_H
#define GT_SCHED_FIRSTFIT_H

#include "sched/sched_int.h"

/* The first-fit placement (gt_sched_place_fn). */
gt_sched_place_fn gt_sched_place_firstfit;

/* Each policy is a const table; gt_sched_policy_by_name (policy.c) lists
 * them. */
const struct gt_sched_policy *gt_sched_policy_firstfit(void);

#endif
