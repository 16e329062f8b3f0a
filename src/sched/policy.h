/*
 * sched policy (policy.c): what the policies' orders know about a job.
 * Included only from src/sched.
 */
#ifndef GT_SCHED_POLICY_H
#define GT_SCHED_POLICY_H

#include "sched/sched_int.h"

/* A job's oracle remaining time in ms: its runtime estimate less the wall
 * time served (attained GPU-ms over its GPUs); INT64_MAX without an
 * estimate. */
int64_t gt_sched_job_remaining_ms(const struct gt_sched_job *j);

/* The service the gantry order counts for a job, GPU-ms: its attained
 * service; for a job that restarts from scratch only its current run's
 * (what a restart would not throw away is nothing more), 0 while it
 * waits. */
int64_t gt_sched_job_service_ms(const struct gt_sched_job *j);

/* The gantry order's least-attained-service queue of a job: 0 below
 * 300 GPU-seconds attained, then one per threshold (3,250, 7,200, 72,000
 * GPU-s): Tiresias' two thresholds with one added below and one above,
 * chosen on the Philly quarter-size replay (docs/results). */
int64_t gt_sched_las_queue(const struct gt_sched_job *j);

/* The gantry order's key inside a least-attained-service queue, smaller
 * first: the job's expected remaining wall time in ms
 * (gt_sched_history_expected_wall_ms). For a job that restarts from
 * scratch, the GPU-ms it is expected to cost in all over its GPUs to the
 * power 0.4 instead: what its lost runs took plus a run from scratch,
 * E[S | S > a] with a all it attained (gt_sched_history_expected_remaining_ms
 * plus a; a fresh job's E[S]), so that a job that lost runs waits behind
 * the jobs that have had less, as in the attained-service queues. Every
 * such job waits in queue 0 (its current run is nothing),
 * so this key alone orders the waiting ones, mostly by the work they need
 * (what the queues of checkpointing jobs discretise) rather than their
 * wall time, which would put a wide gang of twice the work first and hold
 * the GPUs it drains for; the width's share keeps a wide gang of a little
 * more work than narrow ones from waiting behind all of them. Where both kinds
 * meet in one queue the two keys compare as numbers (ms against GPU-ms),
 * which puts a one-GPU job that restarts level with a checkpointing job of
 * the same expected wall time and wider ones behind it. 0 with no
 * history. */
double gt_sched_job_order_key(const struct gt_sched_job *j);

#endif
