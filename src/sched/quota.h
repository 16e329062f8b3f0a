/*
 * sched quota (quota.c): the admission rule and the resource arithmetic it
 * counts in; projects. Included only from src/sched.
 */
#ifndef GT_SCHED_QUOTA_H
#define GT_SCHED_QUOTA_H

#include "sched/sched_int.h"

/* Resource r as users name it in resources.limits (common/resource.h):
 * "cpu", "memory", "storage", "nvidia.com/gpu". */
const char *gt_sched_res_name(enum gt_res r);

/* Value v of resource r as a Kubernetes quantity into buf (len >= 32):
 * milli-CPU 1500 -> "1500m", bytes -> "16Gi", milli-GPU 1250 -> "1.25".
 * Returns buf, for use in messages. */
const char *gt_sched_res_text(enum gt_res r, int64_t v, char *buf, size_t len);

/* sched.h's struct gt_sched_res (the public calls' amounts) as the vector
 * the model counts in, and back. */
struct gt_resvec gt_sched_res_vec(const struct gt_sched_res *r);
struct gt_sched_res gt_sched_res_of(const struct gt_resvec *v);

/* Sum b into a with checked arithmetic; -ERANGE leaves a unchanged. */
int gt_sched_res_add(struct gt_resvec *a, const struct gt_resvec *b);
/* a += sign * b (sign 1 or -1), unchecked: for sums the model keeps in
 * range by construction (taking back what was added, a node's pool share). */
void gt_sched_res_move(struct gt_resvec *a, const struct gt_resvec *b, int sign);
/* Would adding use keep dept within its limit in every resource? If not and
 * why is non-NULL, describe the first resource that does not fit. */
bool gt_sched_dept_admits(const struct gt_sched_dept *dept, const struct gt_resvec *use,
                          struct gt_buf *why);
/* Would adding use keep project within its hard cap in every resource?
 * If not and why is non-NULL, describe the first resource that does not
 * fit. */
bool gt_sched_project_admits(const struct gt_sched_project *project, const struct gt_resvec *use,
                             struct gt_buf *why);
/* The admission rule (quota.c's file comment): may dept take add more, as
 * if its tasks holding freed (NULL: nothing) had exited? If not and why is
 * non-NULL, describe the first resource that does not fit. */
bool gt_sched_admit(const struct gt_sched_model *m, const struct gt_sched_dept *dept,
                    const struct gt_resvec *add, const struct gt_resvec *freed, struct gt_buf *why);
/* The project name (NULL or "" for none), created uncapped if new, with
 * one more job counted; gt_sched_project_unref undoes it. */
struct gt_sched_project *gt_sched_project_ref(struct gt_sched_model *m, const char *name);
void gt_sched_project_unref(struct gt_sched_model *m, struct gt_sched_project *project);

#endif
