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
/* When job, its tasks bound at bound_ms (-1: not running, it would start
 * at now_ms), is expected to end: its activeDeadlineSeconds end if it has
 * one; otherwise, with learned, now_ms plus its expected remaining wall
 * time learned from finished jobs (history.c, given its current run's
 * service); INT64_MAX when neither is known. */
int64_t gt_sched_resv_end_ms(const struct gt_sched_job *job, int64_t bound_ms, int64_t now_ms,
                             bool learned);
/* Does reservation r lend its GPUs to job at now_ms (backfill: job is
 * expected to end, gt_sched_resv_end_ms, by r's due time)? */
bool gt_sched_resv_lends(const struct gt_sched_resv *r, const struct gt_sched_job *job,
                         int64_t now_ms);

#endif
