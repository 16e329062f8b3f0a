/*
 * feeder.c: the scheduler model, kept from the store, and the cycle.
 */
#ifndef GT_SERVER_FEEDER_H
#define GT_SERVER_FEEDER_H

#include "server/server_int.h"

int gt_feed_build(struct gt_ctl *c, struct gt_err *err);
/* A cached object changed: old and now are the previous and current typed
 * objects (either NULL; borrowed). */
void gt_feed_change(struct gt_ctl *c, enum gt_kind kind, const char *key,
                    const struct gt_api_object *old, const struct gt_api_object *now);
/* Add, re-sync or remove the job at key in the model as the cache says. A
 * job added waits in c->unseen for the next cycle. */
void gt_feed_sync_job(struct gt_ctl *c, const char *key);
/* Node lost: free everything on it in the model at once. */
void gt_feed_node_lost(struct gt_ctl *c, const struct gt_api_node *node);
/* Run one scheduling cycle and apply its decisions; the jobs of c->unseen
 * become dirty. First every job holding GPUs gets its attained service
 * (GPU-ms: its runs in the ledger plus those still going), which the
 * gantry order and its preemption by attained service read. */
void gt_feed_cycle(struct gt_ctl *c);
/* The wait message last recorded for a job key (borrowed), or NULL:
 * "Reason: text" with Reason the wait reason (Quota, Unschedulable,
 * Inadmissible; an Inadmissible text begins with its code, "Code: "). */
const char *gt_feed_wait(const struct gt_ctl *c, const char *job_key);
/* Whether the scheduler's model holds the task at task_key ("/tasks/p/n")
 * on a node: bound, also while its binding write is still in flight. */
bool gt_feed_task_placed(const struct gt_ctl *c, const char *task_key);
/* The scheduler's per-job series for /metrics (struct gt_ctl_hooks):
 * gantry_scheduler_placement_attempts_total{job="project/name"}, the gang
 * placements the cycle searched for each job in the model. */
void gt_feed_metrics(const struct gt_ctl *c, struct gt_buf *out);
/* Write spec.stop{reason, gracePeriodSeconds from the template} on the
 * cached task o unless it is stopped, ended or being written; record an
 * Event with reason and message (borrowed) on its job. 0 if written. */
int gt_feed_stop_task(struct gt_ctl *c, const struct gt_cobj *o, const char *reason,
                      const char *message);

#endif
