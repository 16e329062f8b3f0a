/*
 * sched resv (resv.c): reservations shared by the update functions, the
 * placements and the cycle. Included only from src/sched.
 */
#ifndef GT_SCHED_RESV_H
#define GT_SCHED_RESV_H

#include "sched/sched_int.h"

/* Drop job's reservation, if any, freeing its GPUs for others. */
void gt_sched_resv_drop(struct gt_sched_job *job, struct gt_sched_model *m);
/* Is a reserved GPU of job's reservation still held by a task? */
bool gt_sched_resv_waiting(const struct gt_sched_job *job);
/* Does reservation r lend its GPUs to job at now_ms (DESIGN.md backfill:
 * job's activeDeadlineSeconds ends by r's due time)? */
bool gt_sched_resv_lends(const struct gt_sched_resv *r, const struct gt_sched_job *job,
                         int64_t now_ms);

#endif
