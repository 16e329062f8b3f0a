/*
 * sched history (history.c): the service finished jobs received, learned
 * online per department and gang size, and what it predicts for a job that
 * has received some service so far. Included only from src/sched.
 */
#ifndef GT_SCHED_HISTORY_H
#define GT_SCHED_HISTORY_H

#include "sched/sched_int.h"

/* Record that job received attained_gpu_ms of service in all (it is being
 * removed: finished or deleted). Jobs that never ran teach nothing. */
void gt_sched_history_record(struct gt_sched_model *m, const struct gt_sched_job *job);

/* The job's expected remaining service in GPU-ms given what it attained:
 * E[S - a | S > a] over the finished jobs of its department and gang size
 * (all departments' jobs of that size while its own have too few samples);
 * a job past every sample is expected to need as much again as it has had
 * (a Pareto tail with index 2, as heavy-tailed job sizes are modelled).
 * With no history at all: 0 (the order falls back to arrival). */
int64_t gt_sched_history_expected_remaining_ms(const struct gt_sched_job *job);

/* The same for a job of job's department and gang size that has attained
 * attained_ms GPU-ms (>= 0) rather than job's own attained service: e.g.
 * only its current run, for a job that restarts from scratch. */
int64_t gt_sched_history_expected_remaining_at_ms(const struct gt_sched_job *job,
                                                  int64_t attained_ms);

/* The same over the job's whole GPUs (at least one): wall-clock ms. */
double gt_sched_history_expected_wall_ms(const struct gt_sched_job *job);
/* gt_sched_history_expected_remaining_at_ms over the job's whole GPUs:
 * wall-clock ms; -1 when no finished job of its gang size is known. */
double gt_sched_history_expected_wall_at_ms(const struct gt_sched_job *job, int64_t attained_ms);

/* Has any job of the model finished after attaining service? */
bool gt_sched_history_known(const struct gt_sched_model *m);

#endif
