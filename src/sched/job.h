/*
 * sched job (job.c): moving a task's resources in and out of the model;
 * the public job and task updates are in sched.h. Included only from
 * src/sched.
 */
#ifndef GT_SCHED_JOB_H
#define GT_SCHED_JOB_H

#include "sched/sched_int.h"

/* Move resources only (node, GPUs, department and project use, holding count), no state
 * change: hold copies gpus; unhold frees the task's shares. Preemption's
 * what-if simulation uses the pair and restores exactly. */
void gt_sched_task_hold(struct gt_sched_task *task, struct gt_sched_node *node,
                        const struct gt_sched_gpu_share *gpus, size_t n_gpus);
void gt_sched_task_unhold(struct gt_sched_task *task);
/* Bind a PENDING task; the caller has checked everything gt_sched_task_bind
 * checks. Never fails. */
void gt_sched_task_take(struct gt_sched_task *task, struct gt_sched_node *node,
                        const struct gt_sched_gpu_share *gpus, size_t n_gpus, int64_t bound_ms);
/* Release a holding task's resources; it becomes PENDING or DONE. */
void gt_sched_task_release(struct gt_sched_task *task, bool requeue);

#endif
