/*
 * The cluster model: lifecycle, nodes, departments, priority classes, the
 * read-only views and the invariant checker. Jobs and tasks are in job.c,
 * projects and the admission rule in quota.c.
 *
 * Invariants the update functions keep (gt_sched_model_check verifies them):
 * - model->nodes is sorted by name and holds exactly the nodes of node_map;
 * - a node's cpu/memory used and its GPUs' state/used_milli are the sums of
 *   the tasks linked on it; n_gpus_free counts its healthy FREE GPUs;
 * - a department's used is the sum of its holding tasks' group use, and so
 *   are its bands' held summed and a project's used; a department's
 *   n_evicting counts its holding tasks marked evicting; a project lives
 *   while it has a cap or jobs.
 * Every update validates all of its input before it changes anything, so a
 * failed call leaves the model as it was.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/index.h"
#include "sched/job.h"
#include "sched/queue.h"
#include "sched/quota.h"
#include "sched/resv.h"
#include "sched/sched_int.h"

struct gt_sched_model *gt_sched_model_new(void)
{
    struct gt_sched_model *m = gt_xcalloc(1, sizeof(*m));
    gt_sched_map_init(&m->node_map);
    gt_sched_map_init(&m->dept_map);
    gt_sched_map_init(&m->project_map);
    gt_sched_map_init(&m->pclass_map);
    gt_sched_map_init(&m->job_map);
    gt_sched_map_init(&m->task_map);
    gt_sched_model_set_aging(m, GT_SCHED_AGING_TIER_MS_DEFAULT);
    gt_sched_model_set_seed(m, 0);
    return m;
}

static void node_free(struct gt_sched_node *node)
{
    gt_sched_node_marks_fini(&node->marks);
    free(node->group_avail);
    free(node->name);
    free(node->gpus);
    free(node);
}

void gt_sched_model_free(struct gt_sched_model *m)
{
    if (!m) {
        return;
    }
    /* Jobs first: their tasks point at nodes and departments. */
    while (m->n_jobs > 0) {
        struct gt_sched_job *job = m->jobs[m->n_jobs - 1];
        for (size_t i = 0; i < job->n_tasks; i++) {
            if (job->tasks[i].node) {
                gt_sched_task_release(&job->tasks[i], false);
            }
        }
        GT_ASSERT(gt_sched_job_remove(m, job->id, NULL) == 0);
    }
    free(m->jobs);
    free(m->pick);
    free(m->pending);
    free(m->fresh);
    for (size_t i = 0; i < m->n_nodes; i++) {
        node_free(m->nodes[i]);
    }
    free(m->nodes);
    gt_sched_map_fini(&m->node_map);
    gt_sched_map_fini(&m->job_map);
    gt_sched_map_fini(&m->task_map);
    for (size_t i = 0; i < m->dept_map.cap; i++) {
        struct gt_sched_dept *dept = m->dept_map.slots[i].val;
        if (m->dept_map.slots[i].key) {
            gt_sched_dept_bands_free(dept);
            free(dept->name);
            free(dept);
        }
    }
    gt_sched_map_fini(&m->dept_map);
    for (size_t i = 0; i < m->project_map.cap; i++) {
        struct gt_sched_project *p = m->project_map.slots[i].val;
        if (m->project_map.slots[i].key) {
            free(p->name);
            free(p);
        }
    }
    gt_sched_map_fini(&m->project_map);
    free(m->depts);
    free(m->resv);
    for (size_t i = 0; i < m->pclass_map.cap; i++) {
        struct gt_sched_pclass *pc = m->pclass_map.slots[i].val;
        if (m->pclass_map.slots[i].key) {
            free(pc->name);
            free(pc);
        }
    }
    gt_sched_map_fini(&m->pclass_map);
    free(m);
}

void gt_sched_model_set_aging(struct gt_sched_model *m, int64_t tier_ms)
{
    m->aging_tier_ms = tier_ms > 0 ? tier_ms : 0;
}

void gt_sched_model_set_seed(struct gt_sched_model *m, uint64_t seed)
{
    m->rng = seed ? seed : 0x9e3779b97f4a7c15ULL;
}

/* ---- nodes ---- */

static int cmp_gpu_index(const void *a, const void *b)
{
    int32_t x = ((const struct gt_sched_gpu *)a)->index;
    int32_t y = ((const struct gt_sched_gpu *)b)->index;
    return (x > y) - (x < y);
}

/* Validate spec and build its GPU array (free, sorted by index) into *out. */
static int node_spec_load(const struct gt_sched_node_spec *spec, struct gt_sched_gpu **out,
                          struct gt_err *err)
{
    if (!spec || !spec->name || !spec->name[0]) {
        return gt_err_set(err, GT_EINVAL, "node: name is required");
    }
    if (spec->cpu_milli < 0 || spec->memory_bytes < 0) {
        return gt_err_set(err, GT_EINVAL, "node %s: negative capacity", spec->name);
    }
    if (spec->n_gpus > GT_SCHED_MAX_NODE_GPUS || (spec->n_gpus && !spec->gpus)) {
        return gt_err_set(err, GT_EINVAL, "node %s: bad GPU list (%zu GPUs)", spec->name,
                          spec->n_gpus);
    }
    struct gt_sched_gpu *gpus = gt_xcalloc(spec->n_gpus, sizeof(*gpus));
    for (size_t i = 0; i < spec->n_gpus; i++) {
        const struct gt_sched_gpu_spec *g = &spec->gpus[i];
        gpus[i] = (struct gt_sched_gpu){.index = g->index,
                                        .group = g->group,
                                        .numa = g->numa,
                                        .healthy = g->healthy,
                                        .state = GT_SCHED_GPU_FREE};
    }
    qsort(gpus, spec->n_gpus, sizeof(*gpus), cmp_gpu_index);
    for (size_t i = 0; i < spec->n_gpus; i++) {
        if (gpus[i].index < 0 || (i > 0 && gpus[i].index == gpus[i - 1].index)) {
            int32_t bad = gpus[i].index;
            free(gpus);
            return gt_err_set(err, GT_EINVAL, "node %s: GPU index %d negative or repeated",
                              spec->name, (int)bad);
        }
    }
    *out = gpus;
    return 0;
}

static void node_recount(struct gt_sched_node *node)
{
    node->n_gpus_free = 0;
    for (size_t i = 0; i < node->n_gpus; i++) {
        const struct gt_sched_gpu *g = &node->gpus[i];
        node->n_gpus_free += g->healthy && g->state == GT_SCHED_GPU_FREE;
    }
}

/* Position of name in the sorted node vector, or where it would go. */
static size_t node_pos(const struct gt_sched_model *m, const char *name)
{
    size_t lo = 0, hi = m->n_nodes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(m->nodes[mid]->name, name) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

int gt_sched_node_add(struct gt_sched_model *m, const struct gt_sched_node_spec *spec,
                      struct gt_err *err)
{
    struct gt_sched_gpu *gpus;
    int rc = node_spec_load(spec, &gpus, err);
    if (rc < 0) {
        return rc;
    }
    if (gt_sched_map_get(&m->node_map, spec->name)) {
        free(gpus);
        return gt_err_set(err, GT_EEXISTS, "node %s already exists", spec->name);
    }
    struct gt_sched_node *node = gt_xcalloc(1, sizeof(*node));
    node->name = gt_xstrdup(spec->name);
    node->cpu_milli_alloc = spec->cpu_milli;
    node->memory_bytes_alloc = spec->memory_bytes;
    node->ready = spec->ready;
    node->unschedulable = spec->unschedulable;
    gt_sched_node_marks_init(&node->marks, spec);
    node->gpus = gpus;
    node->n_gpus = spec->n_gpus;
    node->model = m;
    for (int i = 0; i < GT_SCHED_N_IDX; i++) {
        node->link[i].key = -1;
    }
    node_recount(node);
    gt_sched_node_groups_init(node);
    gt_sched_node_reindex(node, false);

    GT_VEC_RESERVE(m->nodes, m->cap_nodes, m->n_nodes + 1, 16);
    size_t pos = node_pos(m, node->name);
    memmove(&m->nodes[pos + 1], &m->nodes[pos], (m->n_nodes - pos) * sizeof(*m->nodes));
    m->nodes[pos] = node;
    m->n_nodes++;
    gt_sched_map_put(&m->node_map, node->name, node);
    gt_sched_capacity_changed(m);
    return 0;
}

int gt_sched_node_update(struct gt_sched_model *m, const struct gt_sched_node_spec *spec,
                         struct gt_err *err)
{
    struct gt_sched_gpu *gpus;
    int rc = node_spec_load(spec, &gpus, err);
    if (rc < 0) {
        return rc;
    }
    struct gt_sched_node *node = gt_sched_map_get(&m->node_map, spec->name);
    if (!node) {
        free(gpus);
        return gt_err_set(err, GT_ENOTFOUND, "node %s not found", spec->name);
    }
    if (spec->cpu_milli < node->cpu_milli_used || spec->memory_bytes < node->memory_bytes_used) {
        free(gpus);
        return gt_err_set(err, GT_EINVAL, "node %s: capacity below what its tasks hold",
                          spec->name);
    }
    /* Carry each held GPU's use over to the same index in the new list. */
    struct gt_sched_node tmp = {.gpus = gpus, .n_gpus = spec->n_gpus};
    for (size_t i = 0; i < node->n_gpus; i++) {
        const struct gt_sched_gpu *old = &node->gpus[i];
        if (old->state == GT_SCHED_GPU_FREE) {
            continue;
        }
        struct gt_sched_gpu *g = gt_sched_node_gpu(&tmp, old->index);
        if (!g) {
            free(gpus);
            return gt_err_set(err, GT_EINVAL, "node %s: GPU %d is held by a task", spec->name,
                              (int)old->index);
        }
        g->state = old->state;
        g->used_milli = old->used_milli;
    }
    /* A reservation survives only if all of its GPUs do. */
    for (size_t i = 0; i < node->n_gpus; i++) {
        struct gt_sched_job *holder = node->gpus[i].reserved_by;
        if (holder && !gt_sched_node_gpu(&tmp, node->gpus[i].index)) {
            gt_sched_resv_drop(holder, m);
        }
    }
    for (size_t i = 0; i < node->n_gpus; i++) {
        if (node->gpus[i].reserved_by) {
            gt_sched_node_gpu(&tmp, node->gpus[i].index)->reserved_by = node->gpus[i].reserved_by;
        }
    }
    /* verdicts (verdict.c) depend on capacity, not on a heartbeat */
    bool same = spec->n_gpus == node->n_gpus && spec->cpu_milli == node->cpu_milli_alloc &&
                spec->memory_bytes == node->memory_bytes_alloc && spec->ready == node->ready &&
                spec->unschedulable == node->unschedulable &&
                gt_sched_node_marks_same(&node->marks, spec);
    for (size_t i = 0; same && i < node->n_gpus; i++) {
        const struct gt_sched_gpu *a = &node->gpus[i], *b = &gpus[i];
        same = a->index == b->index && a->group == b->group && a->numa == b->numa &&
               a->healthy == b->healthy;
    }
    free(node->gpus);
    node->gpus = gpus;
    node->n_gpus = spec->n_gpus;
    node->cpu_milli_alloc = spec->cpu_milli;
    node->memory_bytes_alloc = spec->memory_bytes;
    node->ready = spec->ready;
    node->unschedulable = spec->unschedulable;
    if (!gt_sched_node_marks_same(&node->marks, spec)) {
        gt_sched_node_marks_fini(&node->marks);
        gt_sched_node_marks_init(&node->marks, spec);
    }
    node_recount(node);
    gt_sched_node_groups_init(node);
    gt_sched_node_reindex(node, false);
    if (!same) {
        gt_sched_capacity_changed(m);
    }
    return 0;
}

int gt_sched_node_remove(struct gt_sched_model *m, const char *name, struct gt_err *err)
{
    struct gt_sched_node *node = name ? gt_sched_map_get(&m->node_map, name) : NULL;
    if (!node) {
        return gt_err_set(err, GT_ENOTFOUND, "node %s not found", name ? name : "(null)");
    }
    while (node->task_head) {
        gt_sched_task_release(node->task_head, false);
    }
    for (size_t i = 0; i < node->n_gpus; i++) {
        if (node->gpus[i].reserved_by) {
            gt_sched_resv_drop(node->gpus[i].reserved_by, m);
        }
    }
    gt_sched_node_reindex(node, true);
    size_t pos = node_pos(m, name);
    GT_ASSERT(pos < m->n_nodes && m->nodes[pos] == node);
    memmove(&m->nodes[pos], &m->nodes[pos + 1], (m->n_nodes - pos - 1) * sizeof(*m->nodes));
    m->n_nodes--;
    gt_sched_map_del(&m->node_map, node->name);
    node_free(node);
    gt_sched_capacity_changed(m);
    return 0;
}

/* ---- departments ---- */

int gt_sched_department_set(struct gt_sched_model *m, const char *name,
                            const struct gt_sched_res *guarantee, const struct gt_sched_res *limit,
                            struct gt_err *err)
{
    if (!name || !name[0] || !guarantee || !limit) {
        return gt_err_set(err, GT_EINVAL, "department: name, guarantee and limit are required");
    }
    struct gt_resvec g = gt_sched_res_vec(guarantee), l = gt_sched_res_vec(limit);
    for (enum gt_res r = 0; r < GT_RES_COUNT; r++) {
        if (g.v[r] < 0 || l.v[r] < g.v[r]) {
            return gt_err_set(err, GT_EINVAL,
                              "department %s: %s guarantee %lld and limit %lld: need "
                              "0 <= guarantee <= limit",
                              name, gt_sched_res_name(r), (long long)g.v[r], (long long)l.v[r]);
        }
    }
    struct gt_sched_dept *dept = gt_sched_map_get(&m->dept_map, name);
    if (!dept) {
        dept = gt_xcalloc(1, sizeof(*dept));
        dept->name = gt_xstrdup(name);
        dept->model = m;
        gt_sched_map_put(&m->dept_map, dept->name, dept);
        GT_VEC_RESERVE(m->depts, m->cap_depts, m->n_depts + 1, 8);
        size_t pos = 0;
        while (pos < m->n_depts && strcmp(m->depts[pos]->name, name) < 0) {
            pos++;
        }
        memmove(&m->depts[pos + 1], &m->depts[pos], (m->n_depts - pos) * sizeof(*m->depts));
        m->depts[pos] = dept;
        m->n_depts++;
        for (size_t i = pos; i < m->n_depts; i++) {
            m->depts[i]->vec_index = i;
        }
    }
    dept->guarantee = g;
    dept->limit = l;
    gt_sched_capacity_changed(m);
    return 0;
}

int gt_sched_department_remove(struct gt_sched_model *m, const char *name, struct gt_err *err)
{
    struct gt_sched_dept *dept = name ? gt_sched_map_get(&m->dept_map, name) : NULL;
    if (!dept) {
        return gt_err_set(err, GT_ENOTFOUND, "department %s not found", name ? name : "(null)");
    }
    if (dept->n_jobs > 0) {
        return gt_err_set(err, GT_ECONFLICT, "department %s still has %zu jobs", name,
                          dept->n_jobs);
    }
    gt_sched_map_del(&m->dept_map, dept->name);
    size_t pos = dept->vec_index;
    memmove(&m->depts[pos], &m->depts[pos + 1], (m->n_depts - pos - 1) * sizeof(*m->depts));
    m->n_depts--;
    for (size_t i = pos; i < m->n_depts; i++) {
        m->depts[i]->vec_index = i;
    }
    gt_sched_dept_bands_free(dept);
    free(dept->name);
    free(dept);
    return 0;
}

/* ---- priority classes ---- */

int gt_sched_priority_class_set(struct gt_sched_model *m, const char *name, int32_t value,
                                enum gt_sched_preemption policy, bool global_default,
                                struct gt_err *err)
{
    if (!name || !name[0]) {
        return gt_err_set(err, GT_EINVAL, "priority class: name is required");
    }
    if (policy != GT_SCHED_PREEMPT_LOWER && policy != GT_SCHED_PREEMPT_NEVER) {
        return gt_err_set(err, GT_EINVAL, "priority class %s: unknown preemption policy", name);
    }
    if (global_default) {
        for (size_t i = 0; i < m->pclass_map.cap; i++) {
            if (m->pclass_map.slots[i].key) {
                ((struct gt_sched_pclass *)m->pclass_map.slots[i].val)->global_default = false;
            }
        }
    }
    struct gt_sched_pclass *pc = gt_sched_map_get(&m->pclass_map, name);
    if (!pc) {
        pc = gt_xcalloc(1, sizeof(*pc));
        pc->name = gt_xstrdup(name);
        gt_sched_map_put(&m->pclass_map, pc->name, pc);
    }
    pc->value = value;
    pc->policy = policy;
    pc->global_default = global_default;
    return 0;
}

/* ---- read-only views ---- */

int gt_sched_node_get(const struct gt_sched_model *m, const char *name,
                      struct gt_sched_node_info *out)
{
    const struct gt_sched_node *node = gt_sched_map_get(&m->node_map, name);
    if (!node) {
        return GT_ENOTFOUND;
    }
    *out = (struct gt_sched_node_info){
        .cpu_milli_free = node->cpu_milli_alloc - node->cpu_milli_used,
        .memory_bytes_free = node->memory_bytes_alloc - node->memory_bytes_used,
        .n_gpus = node->n_gpus,
        .n_gpus_free = node->n_gpus_free,
        .n_tasks = node->n_tasks,
    };
    return 0;
}

int gt_sched_gpu_get(const struct gt_sched_model *m, const char *node, int32_t index,
                     struct gt_sched_gpu_info *out)
{
    const struct gt_sched_node *n = gt_sched_map_get(&m->node_map, node);
    const struct gt_sched_gpu *g = n ? gt_sched_node_gpu(n, index) : NULL;
    if (!g) {
        return GT_ENOTFOUND;
    }
    *out = (struct gt_sched_gpu_info){.state = g->state,
                                      .used_milli = g->used_milli,
                                      .group = g->group,
                                      .numa = g->numa,
                                      .healthy = g->healthy};
    return 0;
}

int gt_sched_department_get(const struct gt_sched_model *m, const char *name,
                            struct gt_sched_res *guarantee, struct gt_sched_res *limit,
                            struct gt_sched_res *used)
{
    const struct gt_sched_dept *dept = gt_sched_map_get(&m->dept_map, name);
    if (!dept) {
        return GT_ENOTFOUND;
    }
    if (guarantee) {
        *guarantee = gt_sched_res_of(&dept->guarantee);
    }
    if (limit) {
        *limit = gt_sched_res_of(&dept->limit);
    }
    if (used) {
        *used = gt_sched_res_of(&dept->used);
    }
    return 0;
}

int gt_sched_task_get(const struct gt_sched_model *m, const char *task_id,
                      struct gt_sched_task_info *out)
{
    const struct gt_sched_task *task = gt_sched_map_get(&m->task_map, task_id);
    if (!task) {
        return GT_ENOTFOUND;
    }
    *out = (struct gt_sched_task_info){.state = task->state,
                                       .job = task->job->id,
                                       .node = task->node ? task->node->name : NULL,
                                       .gpus = task->gpus,
                                       .n_gpus = task->n_gpus,
                                       .bound_ms = task->bound_ms};
    return 0;
}

/* ---- invariant checker ---- */

/* Recompute one node's use from its task list and compare with its indexes. */
static int check_node(const struct gt_sched_node *node, struct gt_err *err)
{
    int64_t cpu = 0, mem = 0;
    int64_t *milli = gt_xcalloc(node->n_gpus, sizeof(*milli));
    size_t *whole = gt_xcalloc(node->n_gpus, sizeof(*whole));
    size_t n_tasks = 0;
    int rc = 0;
    for (const struct gt_sched_task *t = node->task_head; t; t = t->node_next, n_tasks++) {
        cpu += t->group->req.cpu_milli;
        mem += t->group->req.memory_bytes;
        for (size_t i = 0; i < t->n_gpus; i++) {
            const struct gt_sched_gpu *g = gt_sched_node_gpu(node, t->gpus[i].index);
            if (!g) {
                rc = gt_err_set(err, GT_EINTERNAL, "task %s holds missing GPU %s/%d", t->id,
                                node->name, (int)t->gpus[i].index);
                goto out;
            }
            size_t gi = (size_t)(g - node->gpus);
            milli[gi] += t->gpus[i].milli;
            whole[gi] += t->group->req.gpus > 0;
        }
    }
    if (cpu != node->cpu_milli_used || mem != node->memory_bytes_used ||
        cpu > node->cpu_milli_alloc || mem > node->memory_bytes_alloc || n_tasks != node->n_tasks) {
        rc =
            gt_err_set(err, GT_EINTERNAL, "node %s: cpu/memory/task count out of step", node->name);
        goto out;
    }
    size_t n_free = 0;
    for (size_t i = 0; i < node->n_gpus; i++) {
        const struct gt_sched_gpu *g = &node->gpus[i];
        enum gt_sched_gpu_state want = whole[i]       ? GT_SCHED_GPU_WHOLE
                                       : milli[i] > 0 ? GT_SCHED_GPU_SHARED
                                                      : GT_SCHED_GPU_FREE;
        if (whole[i] > 1 || (whole[i] && milli[i] != 1000) || milli[i] > 1000 || g->state != want ||
            g->used_milli != milli[i]) {
            rc = gt_err_set(err, GT_EINTERNAL,
                            "node %s GPU %d: state %d used %d, tasks give %zu whole and "
                            "%lld milli",
                            node->name, (int)g->index, (int)g->state, (int)g->used_milli, whole[i],
                            (long long)milli[i]);
            goto out;
        }
        n_free += g->healthy && g->state == GT_SCHED_GPU_FREE;
    }
    if (n_free != node->n_gpus_free) {
        rc = gt_err_set(err, GT_EINTERNAL, "node %s: free GPU count out of step", node->name);
    }
out:
    free(milli);
    free(whole);
    return rc;
}

/* Every project's use and job count, recomputed from the jobs. */
static int check_projects(const struct gt_sched_model *m, struct gt_err *err)
{
    for (size_t s = 0; s < m->project_map.cap; s++) {
        const struct gt_sched_project *p = m->project_map.slots[s].val;
        if (!m->project_map.slots[s].key) {
            continue;
        }
        struct gt_resvec sum = {0};
        size_t n_jobs = 0;
        for (size_t j = 0; j < m->n_jobs; j++) {
            const struct gt_sched_job *job = m->jobs[j];
            n_jobs += job->project == p;
            for (size_t i = 0; job->project == p && i < job->n_tasks; i++) {
                if (job->tasks[i].node) {
                    GT_ASSERT(gt_sched_res_add(&sum, &job->tasks[i].group->use) == 0);
                }
            }
        }
        if (memcmp(&sum, &p->used, sizeof(sum)) != 0 || n_jobs != p->n_jobs ||
            (!p->capped && n_jobs == 0)) {
            return gt_err_set(err, GT_EINTERNAL, "project %s: usage or job count out of step",
                              p->name);
        }
    }
    return 0;
}

int gt_sched_model_check(const struct gt_sched_model *m, struct gt_err *err)
{
    for (size_t i = 0; i < m->n_nodes; i++) {
        if (i > 0 && strcmp(m->nodes[i - 1]->name, m->nodes[i]->name) >= 0) {
            return gt_err_set(err, GT_EINTERNAL, "node vector out of order");
        }
        int rc = check_node(m->nodes[i], err);
        if (rc < 0) {
            return rc;
        }
    }
    if (m->node_map.n != m->n_nodes || m->job_map.n != m->n_jobs) {
        return gt_err_set(err, GT_EINTERNAL, "maps and vectors disagree");
    }
    for (size_t j = 0; j < m->n_jobs; j++) {
        const struct gt_sched_job *job = m->jobs[j];
        size_t pending = 0, holding = 0;
        for (size_t i = 0; i < job->n_tasks; i++) {
            pending += job->tasks[i].state == GT_SCHED_TASK_PENDING;
            holding += job->tasks[i].node != NULL;
        }
        if (pending != job->n_pending || holding != job->n_holding || job->vec_index != j) {
            return gt_err_set(err, GT_EINTERNAL, "job %s: task counts out of step", job->id);
        }
    }
    /* Department usage, recomputed one department at a time (few of them). */
    for (size_t s = 0; s < m->dept_map.cap; s++) {
        const struct gt_sched_dept *d = m->dept_map.slots[s].val;
        if (!m->dept_map.slots[s].key) {
            continue;
        }
        struct gt_resvec sum = {0}, band_sum = {0};
        size_t evicting = 0;
        for (size_t j = 0; j < m->n_jobs; j++) {
            const struct gt_sched_job *job = m->jobs[j];
            for (size_t i = 0; job->dept == d && i < job->n_tasks; i++) {
                if (job->tasks[i].node) {
                    GT_ASSERT(gt_sched_res_add(&sum, &job->tasks[i].group->use) == 0);
                    evicting += job->tasks[i].evicting;
                }
            }
        }
        for (size_t b = 0; b < d->n_bands; b++) {
            GT_ASSERT(gt_sched_res_add(&band_sum, &d->bands[b].held) == 0);
        }
        if (memcmp(&sum, &d->used, sizeof(sum)) != 0 || memcmp(&sum, &band_sum, sizeof(sum)) != 0 ||
            evicting != d->n_evicting) {
            return gt_err_set(err, GT_EINTERNAL, "department %s: usage out of step", d->name);
        }
    }
    return check_projects(m, err);
}
