/*
 * jobctl.c: the job and task controllers.
 */
#ifndef GT_SERVER_JOBCTL_H
#define GT_SERVER_JOBCTL_H

#include "server/server_int.h"

/* Reconcile the cached job at key: its tasks, restarts, deletion and
 * status. A status-only write that a reconcile of its result would not
 * change leaves key in c->settled (see there). */
void gt_jobctl_reconcile_job(struct gt_ctl *c, const char *key);
void gt_jobctl_reconcile_task(struct gt_ctl *c, const char *key);
/* Admission of a Job create by user (job validated and decoded,
 * borrowed): 0, or GT_EINVAL with err. */
int gt_jobctl_admit(struct gt_ctl *c, const struct gt_api_job *job,
                    const struct gt_server_user *user, struct gt_err *err);
/* DELETE of a Job or Task: if it must not go at once, turn stored (the
 * stored object, modified in place) into its soft-deleted form and return
 * true; false: delete now. */
bool gt_jobctl_soft_delete(struct gt_ctl *c, enum gt_kind kind, json_t *stored);
/* A replace of job (borrowed) against the cached Job it replaces: once that
 * has started (or finished) only spec.runPolicy's activeDeadlineSeconds,
 * ttlSecondsAfterFinished and backoffLimit (and metadata) may change, as
 * Kubernetes keeps a Job's template. 0, or GT_EINVAL with err naming the
 * first field that differs (in name order). */
int gt_jobctl_check_update(struct gt_ctl *c, const struct gt_api_job *job, struct gt_err *err);
/* Mark the jobs whose next step is due by time (deadline, back-off, ttl,
 * a held-back Queued status); every second. Visits only c->timed and
 * c->held_queued, not every job; every 2 s while more Tasks are cached
 * than --terminated-task-gc-threshold and its last choice is deleted,
 * visits every Task and chooses the oldest ended ones of finished jobs
 * beyond it, to delete a few at a time. */
void gt_jobctl_tick(struct gt_ctl *c);
/* Free what the terminated-task collector holds (gt_ctl_free). */
void gt_jobctl_gc_free(struct gt_ctl *c);

#endif
