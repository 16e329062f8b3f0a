/*
 * sched verdict (verdict.c): whether a job could ever start at the
 * cluster's and its department's current maximum capacity, cached until
 * that capacity changes. Included only from src/sched.
 */
#ifndef GT_SCHED_VERDICT_H
#define GT_SCHED_VERDICT_H

#include "sched/sched_int.h"

/* job's verdict at m's current capacity: NULL if it may start some day,
 * else why not, "Code: message" (borrowed; job owns it until the next
 * call). Computed again only when m->capacity_epoch moved since the last
 * call for job (a node, department or project cap changed), so asking
 * every cycle costs a compare. */
const char *gt_sched_verdict(struct gt_sched_model *m, struct gt_sched_job *job);

#endif
