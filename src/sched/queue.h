/*
 * sched queue (queue.c): the departments' pending queues (priority bands)
 * and the counts that bound preemption's search. Included only from
 * src/sched.
 */
#ifndef GT_SCHED_QUEUE_H
#define GT_SCHED_QUEUE_H

#include "sched/sched_int.h"

/* A task of job became PENDING (delta +1) or stopped being so (-1): keep
 * n_pending, the department's pending use and the queues current. */
void gt_sched_job_pending_delta(struct gt_sched_job *job, const struct gt_sched_task *task,
                                int delta);
/* The band of dept with this value, or NULL. */
struct gt_sched_band *gt_sched_dept_band(struct gt_sched_dept *dept, int32_t value);
/* A task started (+1) or stopped (-1) holding resources: keep its band's
 * holding count and use and the model's counts that bound preemption's
 * search. */
void gt_sched_task_holding_delta(const struct gt_sched_task *task, int delta);
/* Free the department's band array. */
void gt_sched_dept_bands_free(struct gt_sched_dept *dept);

#endif
