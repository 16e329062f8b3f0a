/*
 * ledger.c: the GPU-seconds ledger, one durable record per task run that
 * held GPUs, and the usage report over it.
 */
#ifndef GT_SERVER_LEDGER_H
#define GT_SERVER_LEDGER_H

#include "server/server_int.h"

/* Store keys of the records: GT_LEDGER_PREFIX + the run's Task uid. */
#define GT_LEDGER_PREFIX "/ledger/"

struct gt_ledger;

/* The ledger of c: the runs already recorded, read from c's store (0, or
 * the store's error with err): per job their service, and which runs of
 * the Tasks in c's cache are recorded; so c's cache must hold the stored
 * Tasks first, or their runs would be recorded (and counted) again. Free
 * with gt_ledger_free (NULL is fine). */
int gt_ledger_open(struct gt_ctl *c, struct gt_ledger **out, struct gt_err *err);
void gt_ledger_free(struct gt_ledger *l);

/* The cached Task at key (borrowed) may have ended: if it is a terminal run
 * that held GPUs and has no record yet, write one (from its boundTime to
 * its finishTime, each GPU by model and milli, with the utilised GPU time
 * of its samples, gt_telemetry_task_take). A failed write is retried by
 * gt_ledger_tick with the same record, whatever became of the Task. */
void gt_ledger_note_task(struct gt_ctl *c, const char *key);
/* The run of uid is gone (its Task deleted, or replaced by a restart's new
 * run): forget that its run is recorded, as it cannot be noted again. l
 * may be NULL. */
void gt_ledger_task_gone(struct gt_ledger *l, const char *uid);
/* Once a second: retry the records whose write failed. */
void gt_ledger_tick(struct gt_ctl *c);

/* The GPU service a job (model id "project/job") received in its runs
 * recorded so far: the sum of their gpuMilliSeconds (milli-GPU x seconds,
 * which is GPU-milliseconds), 0 for none or l NULL. Runs are matched by
 * project and job name, so a job created again under the same name counts
 * its predecessor's runs. */
int64_t gt_ledger_job_gpu_ms(const struct gt_ledger *l, const char *job_id);

/* Serve GET usage (the report) and GET usagerecords (the records), with
 * from/to (RFC 3339) and, for the report, by=department|project|user|model;
 * formats in docs/api.md's "Ledger". */
void gt_ledger_serve(struct gt_ctl *c, struct gt_req *r, int method, const struct evkeyvalq *q);

#endif
