/*
 * Jobs and tasks in the model: arrival and removal, and the task state
 * machine of sched.h (bind, set_state, exit). gt_sched_task_take and
 * gt_sched_task_release are the only code that moves resources between a
 * task and its node, department and project; both the public calls and the cycle go
 * through them, so the indexes cannot drift apart.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/history.h"
#include "sched/index.h"
#include "sched/job.h"
#include "sched/queue.h"
#include "sched/quota.h"
#include "sched/resv.h"
#include "sched/sched_int.h"

/* Validate one replica group and compute what each of its tasks uses. */
static int group_load(const char *job_id, const struct gt_sched_group_spec *g,
                      struct gt_resvec *use, struct gt_err *err)
{
    const struct gt_sched_task_req *r = &g->req;
    if (!g->name || !g->name[0]) {
        return gt_err_set(err, GT_EINVAL, "job %s: replica group name is required", job_id);
    }
    if (g->replicas < 1 || g->replicas > GT_SCHED_MAX_JOB_TASKS) {
        return gt_err_set(err, GT_EINVAL, "job %s: %s: replicas %d out of range", job_id, g->name,
                          (int)g->replicas);
    }
    if (r->cpu_milli < 0 || r->memory_bytes < 0 || r->gpus < 0 || r->gpu_milli < 0 ||
        r->gpu_milli > 1000 || (r->gpus > 0 && r->gpu_milli > 0)) {
        return gt_err_set(err, GT_EINVAL,
                          "job %s: %s: bad request (negative, gpu_milli > 1000, or whole and "
                          "fractional GPUs together)",
                          job_id, g->name);
    }
    int64_t gpu_milli;
    if (gt_mul_i64(r->gpus, 1000, &gpu_milli) < 0) {
        return gt_err_set(err, GT_EINVAL, "job %s: %s: GPU request overflows", job_id, g->name);
    }
    *use = (struct gt_resvec){.v = {
                                  [GT_RES_CPU] = r->cpu_milli,
                                  [GT_RES_MEMORY] = r->memory_bytes,
                                  [GT_RES_GPU] = gpu_milli + r->gpu_milli,
                              }};
    return 0;
}

/* The priority class a job names, else the global default, else NULL. */
static const struct gt_sched_pclass *find_pclass(const struct gt_sched_model *m, const char *name)
{
    if (name) {
        return gt_sched_map_get(&m->pclass_map, name);
    }
    for (size_t i = 0; i < m->pclass_map.cap; i++) {
        const struct gt_sched_pclass *pc = m->pclass_map.slots[i].val;
        if (m->pclass_map.slots[i].key && pc->global_default) {
            return pc;
        }
    }
    return NULL;
}

/* Free job; also a partly built one (tasks not yet allocated). */
static void job_free(struct gt_sched_job *job)
{
    if (job->fresh) {
        struct gt_sched_model *m = job->dept->model;
        for (size_t i = 0; i < m->n_fresh; i++) {
            if (m->fresh[i] == job) {
                m->fresh[i] = m->fresh[--m->n_fresh];
                break;
            }
        }
    }
    for (size_t i = 0; job->tasks && i < job->n_tasks; i++) {
        free(job->tasks[i].id);
    }
    for (size_t i = 0; i < job->n_groups; i++) {
        free(job->groups[i].name);
        gt_sched_where_fini(&job->groups[i].where);
    }
    free(job->tasks);
    free(job->groups);
    free(job->skip);
    free(job->wait_message);
    free(job->verdict);
    free(job->id);
    free(job);
}

/* Check the spec's scalars and find its department and priority class. */
static int job_spec_check(const struct gt_sched_model *m, const struct gt_sched_job_spec *spec,
                          struct gt_sched_dept **dept, const struct gt_sched_pclass **pc,
                          struct gt_err *err)
{
    if (!spec || !spec->id || !spec->id[0] || !spec->department) {
        return gt_err_set(err, GT_EINVAL, "job: id and department are required");
    }
    if (gt_sched_map_get(&m->job_map, spec->id)) {
        return gt_err_set(err, GT_EEXISTS, "job %s already exists", spec->id);
    }
    if (spec->n_groups < 1 || !spec->groups || spec->min_available < 0 ||
        spec->attained_gpu_ms < 0 || spec->runtime_estimate_ms < 0 ||
        spec->active_deadline_ms < 0 || spec->topology < GT_SCHED_TOPO_NONE ||
        spec->topology > GT_SCHED_TOPO_NUMA) {
        return gt_err_set(err, GT_EINVAL,
                          "job %s: bad spec (no groups, a negative value or an unknown topology)",
                          spec->id);
    }
    *dept = gt_sched_map_get(&m->dept_map, spec->department);
    if (!*dept) {
        return gt_err_set(err, GT_ENOTFOUND, "job %s: department %s not found", spec->id,
                          spec->department);
    }
    *pc = find_pclass(m, spec->priority_class);
    if (spec->priority_class && !*pc) {
        return gt_err_set(err, GT_ENOTFOUND, "job %s: priority class %s not found", spec->id,
                          spec->priority_class);
    }
    return 0;
}

int gt_sched_job_add(struct gt_sched_model *m, const struct gt_sched_job_spec *spec,
                     struct gt_err *err)
{
    struct gt_sched_dept *dept = NULL;
    const struct gt_sched_pclass *pc = NULL;
    int rc = job_spec_check(m, spec, &dept, &pc, err);
    if (rc < 0) {
        return rc;
    }
    struct gt_sched_job *job = gt_xcalloc(1, sizeof(*job));
    job->id = gt_xstrdup(spec->id);
    job->dept = dept;
    job->priority = pc ? pc->value : 0;
    job->preemption = pc ? pc->policy : GT_SCHED_PREEMPT_LOWER;
    job->arrival_ms = spec->arrival_ms;
    job->attained_gpu_ms = spec->attained_gpu_ms;
    job->runtime_estimate_ms = spec->runtime_estimate_ms;
    job->active_deadline_ms = spec->active_deadline_ms;
    job->restarts_from_scratch = spec->restarts_from_scratch;
    job->groups = gt_xcalloc(spec->n_groups, sizeof(*job->groups));
    for (size_t g = 0; g < spec->n_groups; g++) {
        const struct gt_sched_group_spec *gs = &spec->groups[g];
        rc = group_load(spec->id, gs, &job->groups[g].use, err);
        if (rc < 0) {
            goto fail;
        }
        job->groups[g].name = gt_xstrdup(gs->name);
        job->groups[g].replicas = gs->replicas;
        job->groups[g].req = gs->req;
        gt_sched_where_init(&job->groups[g].where, gs);
        job->n_groups++;
        job->n_tasks += (size_t)gs->replicas;
        if (job->n_tasks > GT_SCHED_MAX_JOB_TASKS) {
            rc = gt_err_set(err, GT_EINVAL, "job %s: more than %d tasks", spec->id,
                            GT_SCHED_MAX_JOB_TASKS);
            goto fail;
        }
    }
    if ((size_t)spec->min_available > job->n_tasks) {
        rc = gt_err_set(err, GT_EINVAL, "job %s: minAvailable %d exceeds its %zu tasks", spec->id,
                        (int)spec->min_available, job->n_tasks);
        goto fail;
    }
    job->min_available = spec->min_available ? (size_t)spec->min_available : job->n_tasks;
    job->topology = spec->topology;
    job->topology_required = spec->topology != GT_SCHED_TOPO_NONE && spec->topology_required;

    job->tasks = gt_xcalloc(job->n_tasks, sizeof(*job->tasks));
    size_t t = 0;
    for (size_t g = 0; g < job->n_groups; g++) {
        for (int32_t i = 0; i < job->groups[g].replicas; i++, t++) {
            job->tasks[t] = (struct gt_sched_task){
                .id = gt_xasprintf("%s-%s-%d", job->id, job->groups[g].name, (int)i),
                .job = job,
                .group = &job->groups[g],
                .state = GT_SCHED_TASK_PENDING,
            };
        }
    }
    for (t = 0; t < job->n_tasks; t++) {
        if (gt_sched_map_get(&m->task_map, job->tasks[t].id)) {
            rc = gt_err_set(err, GT_EEXISTS, "job %s: task %s already exists", job->id,
                            job->tasks[t].id);
            while (t-- > 0) {
                gt_sched_map_del(&m->task_map, job->tasks[t].id);
            }
            goto fail;
        }
        gt_sched_map_put(&m->task_map, job->tasks[t].id, &job->tasks[t]);
    }
    for (size_t g = 0; g < job->n_groups; g++) {
        job->light = job->light || job->groups[g].req.gpus == 0;
    }

    GT_VEC_RESERVE(m->jobs, m->cap_jobs, m->n_jobs + 1, 16);
    job->vec_index = m->n_jobs;
    m->jobs[m->n_jobs++] = job;
    gt_sched_map_put(&m->job_map, job->id, job);
    dept->n_jobs++;
    m->n_served += job->attained_gpu_ms > 0; /* job_remove counts it out */
    job->project = gt_sched_project_ref(m, spec->project);
    for (t = 0; t < job->n_tasks; t++) {
        gt_sched_job_pending_delta(job, &job->tasks[t], +1);
    }
    for (size_t g = 0; g < job->n_groups; g++) {
        gt_sched_workload_note(&m->workload, &job->groups[g].req, job->groups[g].replicas);
    }
    return 0;
fail:
    job_free(job);
    return rc;
}

int gt_sched_job_remove(struct gt_sched_model *m, const char *id, struct gt_err *err)
{
    struct gt_sched_job *job = id ? gt_sched_map_get(&m->job_map, id) : NULL;
    if (!job) {
        return gt_err_set(err, GT_ENOTFOUND, "job %s not found", id ? id : "(null)");
    }
    if (job->n_holding > 0) {
        return gt_err_set(err, GT_ECONFLICT, "job %s: %zu tasks still hold resources", id,
                          job->n_holding);
    }
    gt_sched_resv_drop(job, m);
    gt_sched_history_record(m, job);
    m->n_served -= job->attained_gpu_ms > 0;
    for (size_t i = 0; i < job->n_tasks; i++) {
        if (job->tasks[i].state == GT_SCHED_TASK_PENDING) {
            gt_sched_job_pending_delta(job, &job->tasks[i], -1);
        }
        gt_sched_map_del(&m->task_map, job->tasks[i].id);
    }
    gt_sched_map_del(&m->job_map, job->id);
    struct gt_sched_job *last = m->jobs[--m->n_jobs];
    m->jobs[job->vec_index] = last;
    last->vec_index = job->vec_index;
    job->dept->n_jobs--;
    gt_sched_project_unref(m, job->project);
    job_free(job);
    return 0;
}

int gt_sched_job_set_attained(struct gt_sched_model *m, const char *id, int64_t attained_gpu_ms,
                              struct gt_err *err)
{
    struct gt_sched_job *job = id ? gt_sched_map_get(&m->job_map, id) : NULL;
    if (!job) {
        return gt_err_set(err, GT_ENOTFOUND, "job %s not found", id ? id : "(null)");
    }
    if (attained_gpu_ms < 0) {
        return gt_err_set(err, GT_EINVAL, "job %s: negative attained service", id);
    }
    m->n_served += (attained_gpu_ms > 0) - (job->attained_gpu_ms > 0);
    job->attained_gpu_ms = attained_gpu_ms;
    return 0;
}

/* ---- moving resources ---- */

void gt_sched_task_hold(struct gt_sched_task *task, struct gt_sched_node *node,
                        const struct gt_sched_gpu_share *gpus, size_t n_gpus)
{
    GT_ASSERT(!task->node);
    const struct gt_sched_group *grp = task->group;
    GT_ASSERT(gt_sched_res_add(&task->job->dept->used, &grp->use) == 0);
    if (task->job->project) {
        GT_ASSERT(gt_sched_res_add(&task->job->project->used, &grp->use) == 0);
    }
    node->cpu_milli_used += grp->req.cpu_milli;
    node->memory_bytes_used += grp->req.memory_bytes;
    task->gpus = gt_xcalloc(n_gpus, sizeof(*task->gpus));
    for (size_t i = 0; i < n_gpus; i++) {
        struct gt_sched_gpu *g = gt_sched_node_gpu(node, gpus[i].index);
        if (g->state == GT_SCHED_GPU_FREE && g->healthy) {
            node->n_gpus_free--;
        }
        g->state = grp->req.gpus > 0 ? GT_SCHED_GPU_WHOLE : GT_SCHED_GPU_SHARED;
        g->used_milli += gpus[i].milli;
        task->gpus[i] = gpus[i];
    }
    task->n_gpus = n_gpus;
    task->node = node;
    task->node_prev = NULL;
    task->node_next = node->task_head;
    if (node->task_head) {
        node->task_head->node_prev = task;
    }
    node->task_head = task;
    node->n_tasks++;
    task->job->n_holding++;
    gt_sched_task_holding_delta(task, +1);
    if (n_gpus > 0) {
        gt_sched_node_reindex(node, false);
    }
}

void gt_sched_task_unhold(struct gt_sched_task *task)
{
    struct gt_sched_node *node = task->node;
    GT_ASSERT(node);
    const struct gt_sched_group *grp = task->group;
    gt_sched_res_move(&task->job->dept->used, &grp->use, -1);
    if (task->job->project) {
        gt_sched_res_move(&task->job->project->used, &grp->use, -1);
    }
    node->cpu_milli_used -= grp->req.cpu_milli;
    node->memory_bytes_used -= grp->req.memory_bytes;
    for (size_t i = 0; i < task->n_gpus; i++) {
        struct gt_sched_gpu *g = gt_sched_node_gpu(node, task->gpus[i].index);
        g->used_milli -= task->gpus[i].milli;
        GT_ASSERT(g->used_milli >= 0);
        if (g->used_milli == 0) {
            g->state = GT_SCHED_GPU_FREE;
            node->n_gpus_free += g->healthy;
        }
    }
    bool had_gpus = task->n_gpus > 0;
    free(task->gpus);
    task->gpus = NULL;
    task->n_gpus = 0;
    if (task->node_prev) {
        task->node_prev->node_next = task->node_next;
    } else {
        node->task_head = task->node_next;
    }
    if (task->node_next) {
        task->node_next->node_prev = task->node_prev;
    }
    task->node_prev = task->node_next = NULL;
    task->node = NULL;
    node->n_tasks--;
    task->job->n_holding--;
    gt_sched_task_holding_delta(task, -1);
    if (had_gpus) {
        gt_sched_node_reindex(node, false);
    }
}

void gt_sched_task_take(struct gt_sched_task *task, struct gt_sched_node *node,
                        const struct gt_sched_gpu_share *gpus, size_t n_gpus, int64_t bound_ms)
{
    GT_ASSERT(task->state == GT_SCHED_TASK_PENDING && !task->node);
    if (task->job->n_holding == 0) {
        task->job->run_base_gpu_ms = task->job->attained_gpu_ms; /* a run begins */
        task->job->backfill_due_ms = 0;
    }
    gt_sched_task_hold(task, node, gpus, n_gpus);
    task->state = GT_SCHED_TASK_BOUND;
    task->bound_ms = bound_ms;
    gt_sched_job_pending_delta(task->job, task, -1);
}

void gt_sched_task_release(struct gt_sched_task *task, bool requeue)
{
    gt_sched_task_unhold(task);
    if (task->evicting) {
        GT_ASSERT(task->job->dept->n_evicting > 0);
        task->job->dept->n_evicting--;
        task->evicting = false;
    }
    task->state = requeue ? GT_SCHED_TASK_PENDING : GT_SCHED_TASK_DONE;
    if (requeue) {
        gt_sched_job_pending_delta(task->job, task, +1);
    }
}

/* ---- the task state machine ---- */

static struct gt_sched_task *task_find(struct gt_sched_model *m, const char *id, struct gt_err *err)
{
    struct gt_sched_task *task = id ? gt_sched_map_get(&m->task_map, id) : NULL;
    if (!task) {
        gt_err_set(err, GT_ENOTFOUND, "task %s not found", id ? id : "(null)");
    }
    return task;
}

/* Does gpus[0..n) fit task on node, as gt_sched_task_bind describes? */
static int check_gpus(const struct gt_sched_task *task, const struct gt_sched_node *node,
                      const struct gt_sched_gpu_share *gpus, size_t n, struct gt_err *err)
{
    const struct gt_sched_task_req *req = &task->group->req;
    size_t want = req->gpus > 0 ? (size_t)req->gpus : req->gpu_milli > 0;
    if (n != want || (n > 0 && !gpus)) {
        return gt_err_set(err, GT_EINVAL, "task %s: %zu GPUs given, %zu requested", task->id, n,
                          want);
    }
    for (size_t i = 0; i < n; i++) {
        const struct gt_sched_gpu *g = gt_sched_node_gpu(node, gpus[i].index);
        if (!g) {
            return gt_err_set(err, GT_EINVAL, "task %s: node %s has no GPU %d", task->id,
                              node->name, (int)gpus[i].index);
        }
        for (size_t j = 0; j < i; j++) {
            if (gpus[j].index == gpus[i].index) {
                return gt_err_set(err, GT_EINVAL, "task %s: GPU %d given twice", task->id,
                                  (int)gpus[i].index);
            }
        }
        bool ok = req->gpus > 0
                      ? gpus[i].milli == 1000 && g->state == GT_SCHED_GPU_FREE
                      : gpus[i].milli == req->gpu_milli && g->state != GT_SCHED_GPU_WHOLE &&
                            g->used_milli + gpus[i].milli <= 1000;
        if (!ok) {
            return gt_err_set(err, GT_EINVAL,
                              "task %s: GPU %s/%d: %d milli does not fit (state %d, %d used)",
                              task->id, node->name, (int)g->index, (int)gpus[i].milli,
                              (int)g->state, (int)g->used_milli);
        }
    }
    return 0;
}

int gt_sched_task_bind(struct gt_sched_model *m, const char *task_id, const char *node,
                       const struct gt_sched_gpu_share *gpus, size_t n_gpus, int64_t bound_ms,
                       struct gt_err *err)
{
    struct gt_sched_task *task = task_find(m, task_id, err);
    if (!task) {
        return GT_ENOTFOUND;
    }
    if (task->state != GT_SCHED_TASK_PENDING) {
        return gt_err_set(err, GT_ECONFLICT, "task %s is not pending", task_id);
    }
    struct gt_sched_node *n = node ? gt_sched_map_get(&m->node_map, node) : NULL;
    if (!n) {
        return gt_err_set(err, GT_ENOTFOUND, "node %s not found", node ? node : "(null)");
    }
    if (!gt_sched_node_fits(n, &task->group->req)) {
        return gt_err_set(err, GT_EINVAL, "task %s: node %s lacks the cpu or memory", task_id,
                          node);
    }
    struct gt_resvec sum = task->job->dept->used;
    struct gt_resvec psum = task->job->project ? task->job->project->used : sum;
    if (gt_sched_res_add(&sum, &task->group->use) < 0 ||
        gt_sched_res_add(&psum, &task->group->use) < 0) {
        return gt_err_set(err, GT_EINVAL, "task %s: department or project usage overflows",
                          task_id);
    }
    int rc = check_gpus(task, n, gpus, n_gpus, err);
    if (rc < 0) {
        return rc;
    }
    gt_sched_task_take(task, n, gpus, n_gpus, bound_ms);
    return 0;
}

int gt_sched_task_set_state(struct gt_sched_model *m, const char *task_id,
                            enum gt_sched_task_state state, struct gt_err *err)
{
    struct gt_sched_task *task = task_find(m, task_id, err);
    if (!task) {
        return GT_ENOTFOUND;
    }
    enum gt_sched_task_state from = task->state;
    bool ok = from == state || (state == GT_SCHED_TASK_RUNNING && from == GT_SCHED_TASK_BOUND) ||
              (state == GT_SCHED_TASK_TERMINATING &&
               (from == GT_SCHED_TASK_BOUND || from == GT_SCHED_TASK_RUNNING)) ||
              (state == GT_SCHED_TASK_PENDING && from == GT_SCHED_TASK_DONE);
    if (!ok) {
        return gt_err_set(err, GT_ECONFLICT, "task %s: no transition from state %d to %d", task_id,
                          (int)from, (int)state);
    }
    task->state = state;
    if (from != state && state == GT_SCHED_TASK_PENDING) {
        gt_sched_job_pending_delta(task->job, task, +1);
    }
    return 0;
}

int gt_sched_task_exit(struct gt_sched_model *m, const char *task_id, bool requeue,
                       struct gt_err *err)
{
    struct gt_sched_task *task = task_find(m, task_id, err);
    if (!task) {
        return GT_ENOTFOUND;
    }
    if (!task->node) {
        return gt_err_set(err, GT_ECONFLICT, "task %s holds no resources", task_id);
    }
    gt_sched_task_release(task, requeue);
    return 0;
}
