/*
 * telemetry.c: what agents report about running tasks, kept in memory and
 * served through the API: each job's training scalars (from the event files
 * of spec.tensorboard) and its utilisation history (GPU utilisation, GPU
 * memory, cpu, memory). Without Prometheus this is the cluster's history.
 */
#ifndef GT_SERVER_TELEMETRY_H
#define GT_SERVER_TELEMETRY_H

#include "server/server_int.h"

/* Bounds: everything an agent sends is cut to these. */
#define GT_TEL_TAGS_MAX 1000        /* tags kept per job; values of further tags are dropped */
#define GT_TEL_POINTS_MAX 1000      /* points kept per tag, downsampled by halving */
#define GT_TEL_TASKS_PER_POST 10000 /* task entries in one telemetry report */
#define GT_TEL_SCALARS_PER_TASK 10000
#define GT_TEL_TAG_MAX_LEN 256
/* History: 10 s buckets for a day, 1 min buckets for a week. */
#define GT_TEL_FINE_S 10
#define GT_TEL_FINE_N 8640
#define GT_TEL_COARSE_S 60
#define GT_TEL_COARSE_N 10080
/* A task's last sample counts in its job's figures this long (ms). */
#define GT_TEL_FRESH_MS 30000
/* The longest gap between two samples of a task that counts as utilised
 * time (ms): a longer one (agent down) is counted as this much. */
#define GT_TEL_GAP_MAX_MS 5000

struct gt_telemetry;

/* An empty store of telemetry; free with gt_telemetry_free (NULL is fine). */
struct gt_telemetry *gt_telemetry_new(void);
void gt_telemetry_free(struct gt_telemetry *t);

/* Once a second (now_ms: wall clock): fold every job's current figures into
 * its history and forget tasks not heard of for ten minutes. */
void gt_telemetry_tick(struct gt_telemetry *t, int64_t now_ms);

/* The job at key (borrowed) is gone: forget its scalars and history. */
void gt_telemetry_job_gone(struct gt_telemetry *t, const char *job_key);

/* The utilised GPU time of task run uid (borrowed) in milli-GPU x ms:
 * sum over its samples of utilisation x its GPU milli x the time since the
 * sample before (at most GT_TEL_GAP_MAX_MS). The run is forgotten. 0 for a
 * run never sampled. */
int64_t gt_telemetry_task_take(struct gt_telemetry *t, const char *uid);

/* Serve r (borrowed until replied): POST nodes/N/telemetry (agents), GET
 * jobs/J/scalars, jobs/J/history, jobstats and nodestats. method: evhttp_cmd_type. The
 * formats are docs/api.md's "Telemetry". */
void gt_telemetry_serve(struct gt_ctl *c, struct gt_req *r, int method, const struct evkeyvalq *q);

#endif
