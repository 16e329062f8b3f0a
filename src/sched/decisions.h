/*
 * sched decisions (decisions.c): appending to a cycle's decisions.
 * Included only from src/sched.
 */
#ifndef GT_SCHED_DECISIONS_H
#define GT_SCHED_DECISIONS_H

#include "sched/sched_int.h"

/* Append a bind for task (strings and shares are copied). */
void gt_sched_decisions_add_bind(struct gt_sched_decisions *d, const struct gt_sched_task *task);
/* Append a preemption of task of kind; reason is taken. */
void gt_sched_decisions_add_preempt(struct gt_sched_decisions *d, const struct gt_sched_task *task,
                                    enum gt_sched_preempt_kind kind, char *reason);
/* Append job's reservation, one entry per node (copied). */
void gt_sched_decisions_add_reserve(struct gt_sched_decisions *d, const struct gt_sched_job *job);
/* Append a wait reason; message is taken (freed by reset/fini). */
void gt_sched_decisions_add_wait(struct gt_sched_decisions *d, const struct gt_sched_job *job,
                                 enum gt_sched_wait_reason reason, char *message);

#endif
