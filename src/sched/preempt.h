/*
 * sched preempt (preempt.c): victim and reservation search. Included only
 * from src/sched.
 */
#ifndef GT_SCHED_PREEMPT_H
#define GT_SCHED_PREEMPT_H

#include "sched/sched_int.h"

/* What gt_sched_reserve_for looks for. */
enum gt_sched_resv_mode {
    GT_SCHED_RESV_WAIT,    /* tasks to wait for (the head job's backfill reservation) */
    GT_SCHED_RESV_PREEMPT, /* victims that free the nodes the gang needs */
    GT_SCHED_RESV_QUOTA,   /* first lower-priority jobs of its own department whose exit
                              lets the gang be admitted, then as PREEMPT */
};

/* Find victims or tasks to wait for (mode) whose removal lets
 * tasks[0..need) of job fit, and if there are any, reserve the GPUs job
 * would take and, when preempting, emit the victims' preemptions. true if
 * a reservation was made; *n_victims (may be NULL) gets how many jobs it
 * preempts. Leaves the model's holdings as they were. */
bool gt_sched_reserve_for(struct gt_sched_model *m, struct gt_sched_job *job,
                          struct gt_sched_task **tasks, size_t need, enum gt_sched_resv_mode mode,
                          const struct gt_sched_policy *policy, int64_t now_ms,
                          struct gt_sched_decisions *out, size_t *n_victims);

/* Could job's department admit gang (job's first tasks) if every job of it
 * that job may preempt had exited? A cheap bound from the bands, checked
 * before a GT_SCHED_RESV_QUOTA search. */
bool gt_sched_quota_may_free(const struct gt_sched_model *m, const struct gt_sched_job *job,
                             const struct gt_resvec *gang, bool by_rank);

#endif
