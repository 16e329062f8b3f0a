/*
 * sched quota (quota.c): the admission rule and the resource arithmetic it
 * counts in; projects. Included only from src/sched.
 */
#ifndef GT_SCHED_QUOTA_H
#define GT_SCHED_QUOTA_H

#include "sched/sched_int.h"

/* The resources of a struct gt_sched_res as an array (GT_SCHED_N_RES of
 * them, sched_int.h): cpu_milli, memory_bytes, storage_bytes, gpu_milli. */
void gt_sched_res_unpack(const struct gt_sched_res *r, int64_t v[GT_SCHED_N_RES]);

/* Resource r (an index of gt_sched_res_unpack) as users name it in
 * resources.limits: "cpu", "memory", "storage", "nvidia.com/gpu". */
const char *gt_sched_res_name(int r);

/* Value v of resource r as a Kubernetes quantity into buf (len >= 32):
 * milli-CPU 1500 -> "1500m", bytes -> "16Gi", milli-GPU 1250 -> "1.25".
 * Returns buf, for use in messages. */
const char *gt_sched_res_text(int r, int64_t v, char *buf, size_t len);

/* Sum b into a with checked arithmetic; -ERANGE leaves a unchanged. */
int gt_sched_res_add(struct gt_sched_res *a, const struct gt_sched_res *b);
/* Would adding use keep dept within its limit in every resource? If not and
 * why is non-NULL, describe the first resource that does not fit. */
bool gt_sched_dept_admits(const struct gt_sched_dept *dept, const struct gt_sched_res *use,
                          struct gt_buf *why);
/* Would adding use keep project within its hard cap in every resource?
 * If not and why is non-NULL, describe the first resource that does not
 * fit. */
bool gt_sched_project_admits(const struct gt_sched_project *project, const struct gt_sched_res *use,
                             struct gt_buf *why);
/* The admission rule (quota.c's file comment): may dept take add more, as
 * if its tasks holding freed (NULL: nothing) had exited? If not and why is
 * non-NULL, describe the first resource that does not fit. */
bool gt_sched_admit(const struct gt_sched_model *m, const struct gt_sched_dept *dept,
                    const struct gt_sched_res *add, const struct gt_sched_res *freed,
                    struct gt_buf *why);
/* The project name (NULL or "" for none), created uncapped if new, with
 * one more job counted; gt_sched_project_unref undoes it. */
struct gt_sched_project *gt_sched_project_ref(struct gt_sched_model *m, const char *name);
void gt_sched_project_unref(struct gt_sched_model *m, struct gt_sched_project *project);

#endif
