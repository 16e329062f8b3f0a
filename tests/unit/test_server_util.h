/*
 * The controllers' pure parts take typed objects; these decode the JSON a
 * test builds (and changes between calls) for each call.
 */
#ifndef GT_TEST_SERVER_UTIL_H
#define GT_TEST_SERVER_UTIL_H

#include <stdlib.h>

#include "server/server.h"

/* Typed forms of n JSON tasks (each holding a reference); free with
 * typed_tasks_free. */
static inline struct gt_api_task **typed_tasks(json_t *const *t, size_t n)
{
    struct gt_api_task **v = gt_xcalloc(n ? n : 1, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        v[i] = gt_api_task_new(t[i]);
    }
    return v;
}

static inline void typed_tasks_free(struct gt_api_task **v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        gt_api_task_free(v[i]);
    }
    free(v);
}

static inline void decide_json(const json_t *job, json_t *const *t, size_t n, int64_t now_ms,
                               int64_t base_ms, struct gt_job_decision *d)
{
    struct gt_api_job *j = gt_api_job_new((json_t *)job);
    struct gt_api_task **v = typed_tasks(t, n);
    gt_job_decide(j, (const struct gt_api_task *const *)v, n, now_ms, base_ms, d);
    typed_tasks_free(v, n);
    gt_api_job_free(j);
}

static inline json_t *derive_json(const json_t *job, json_t *const *t, size_t n,
                                  const struct gt_job_decision *d, const char *wait, int64_t now_ms)
{
    struct gt_api_job *j = gt_api_job_new((json_t *)job);
    struct gt_api_task **v = typed_tasks(t, n);
    json_t *st = gt_job_derive_status(j, (const struct gt_api_task *const *)v, n, d, wait, now_ms);
    typed_tasks_free(v, n);
    gt_api_job_free(j);
    return st;
}

static inline enum gt_restart_verdict verdict_json(const char *policy, json_t *task)
{
    struct gt_api_task *t = gt_api_task_new(task);
    enum gt_restart_verdict v = gt_job_restart_verdict(policy, t);
    gt_api_task_free(t);
    return v;
}

static inline bool finished_json(json_t *job)
{
    struct gt_api_job *j = gt_api_job_new(job);
    bool f = gt_job_finished(j);
    gt_api_job_free(j);
    return f;
}

static inline bool draining_json(json_t *node)
{
    struct gt_api_node *n = gt_api_node_new(node);
    bool d = gt_node_draining(n);
    gt_api_node_free(n);
    return d;
}

static inline bool lost_json(json_t *node, int64_t now_ms, int64_t grace_ms, int64_t since_ms)
{
    struct gt_api_node *n = gt_api_node_new(node);
    bool lost = gt_node_lost(n, now_ms, grace_ms, since_ms);
    gt_api_node_free(n);
    return lost;
}

static inline json_t *allocated_json(const char *node, json_t *const *t, size_t n)
{
    struct gt_api_task **v = typed_tasks(t, n);
    json_t *a = gt_node_allocated(node, (const struct gt_api_task *const *)v, n);
    typed_tasks_free(v, n);
    return a;
}

/* project NULL: deleted */
static inline int cap_sync_json(struct gt_sched_model *m, const char *name, json_t *project)
{
    struct gt_api_project *p = project ? gt_api_project_new(project) : NULL;
    int rc = gt_project_cap_sync(m, name, p, NULL);
    gt_api_project_free(p);
    return rc;
}

#endif
