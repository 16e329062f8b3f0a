/*
 * Verdicts: can a job start at all, with the cluster's and its
 * department's current maximum capacity? Kueue marks a workload that
 * cannot Inadmissible; so does the cycle (cycle.c), with a wait of reason
 * GT_SCHED_WAIT_INADMISSIBLE, and then it searches no placement for the
 * job. The job still waits (admission at apply stays allowed): the verdict
 * is recomputed when capacity changes and clears by itself.
 *
 * A verdict names what does not fit and what would make it fit. In order
 * (the first that holds is the verdict; the gang is the job's first
 * min_available tasks):
 *   ExceedsDepartmentLimit  the gang alone is above the department's limit
 *   ExceedsProjectCap       the gang alone is above its project's hard cap
 *   NoNodeMatches           no schedulable node's labels and taints admit a
 *                           gang task (its nodeSelector and tolerations)
 *   NoNodeLargeEnough       a gang task asks for more cpu, memory or GPUs
 *                           than the largest schedulable node has
 *   TopologyUnsatisfiable   a required level no domain could ever hold:
 *                           a task's GPUs above the largest NVLink/PCIe
 *                           group or NUMA node, or the gang above the
 *                           largest node (required node)
 *   ExceedsClusterCapacity  the gang above every schedulable node together
 * "Capacity" is what exists, not what is free: allocatable cpu and memory
 * and healthy GPUs of Ready, uncordoned nodes. With no such node at all
 * only the quota verdicts apply (the cycle says Unschedulable: nothing is
 * Ready yet).
 *
 * Caching: the model's capacity_epoch moves on every change of a node,
 * a department or a project cap (model.c, quota.c); a job's verdict and
 * the model's caps (the largest node, group, NUMA node) are recomputed
 * only when it has moved, so a waiting job costs one compare per cycle.
 */
#include <stdio.h>
#include <stdlib.h>

#include "sched/quota.h"
#include "sched/sched_int.h"
#include "sched/verdict.h"

/* The most healthy GPUs of node sharing one group (numa false) or one NUMA
 * node (numa true). Nodes have a handful of GPUs: quadratic is fine. */
static int64_t max_domain(const struct gt_sched_node *node, bool numa)
{
    int64_t best = 0;
    for (size_t i = 0; i < node->n_gpus; i++) {
        const struct gt_sched_gpu *g = &node->gpus[i];
        int64_t n = 0;
        for (size_t j = 0; g->healthy && j < node->n_gpus; j++) {
            const struct gt_sched_gpu *o = &node->gpus[j];
            n += o->healthy && (numa ? o->numa == g->numa : o->group_slot == g->group_slot);
        }
        best = n > best ? n : best;
    }
    return best;
}

static void caps_refresh(struct gt_sched_model *m)
{
    if (m->caps_epoch == m->capacity_epoch) {
        return;
    }
    struct gt_sched_caps c = {0};
    for (size_t i = 0; i < m->n_nodes; i++) {
        const struct gt_sched_node *node = m->nodes[i];
        if (!node->ready || node->unschedulable) {
            continue;
        }
        int64_t healthy = 0;
        for (size_t g = 0; g < node->n_gpus; g++) {
            healthy += node->gpus[g].healthy;
        }
        int64_t group = max_domain(node, false), numa = max_domain(node, true);
        c.n_nodes++;
        c.cpu_milli = node->cpu_milli_alloc > c.cpu_milli ? node->cpu_milli_alloc : c.cpu_milli;
        c.memory_bytes =
            node->memory_bytes_alloc > c.memory_bytes ? node->memory_bytes_alloc : c.memory_bytes;
        c.node_gpus = healthy > c.node_gpus ? healthy : c.node_gpus;
        c.group_gpus = group > c.group_gpus ? group : c.group_gpus;
        c.numa_gpus = numa > c.numa_gpus ? numa : c.numa_gpus;
    }
    m->caps = c;
    m->caps_epoch = m->capacity_epoch;
}

/* The first resource (cpu, memory, GPU) where want is above have, or
 * GT_RES_COUNT. */
static enum gt_res first_over(const struct gt_resvec *want, const struct gt_resvec *have)
{
    static const enum gt_res order[] = {GT_RES_GPU, GT_RES_CPU, GT_RES_MEMORY};
    for (size_t i = 0; i < GT_ARRAY_LEN(order); i++) {
        if (want->v[order[i]] > 0 && want->v[order[i]] > have->v[order[i]]) {
            return order[i];
        }
    }
    return GT_RES_COUNT;
}

/* The gang (the job's first min_available tasks, in group order) summed:
 * what it uses, and for a required node its whole GPUs alone (shares of one
 * job may stack on one GPU). Saturates at INT64_MAX. */
struct gang {
    struct gt_resvec use;
    int64_t whole_gpu_milli;
    size_t n_groups; /* groups with tasks in the gang: the first ones */
};

static int64_t sat_add(int64_t a, int64_t b, int64_t times)
{
    int64_t p, s;
    return gt_mul_i64(b, times, &p) < 0 || gt_add_i64(a, p, &s) < 0 ? INT64_MAX : s;
}

static void gang_of(const struct gt_sched_job *job, struct gang *out)
{
    *out = (struct gang){0};
    size_t left = job->min_available;
    for (size_t g = 0; g < job->n_groups && left > 0; g++) {
        const struct gt_sched_group *grp = &job->groups[g];
        int64_t k = (size_t)grp->replicas < left ? grp->replicas : (int64_t)left;
        for (enum gt_res r = 0; r < GT_RES_COUNT; r++) {
            out->use.v[r] = sat_add(out->use.v[r], grp->use.v[r], k);
        }
        out->whole_gpu_milli = sat_add(out->whole_gpu_milli, grp->req.gpus * 1000, k);
        out->n_groups++;
        left -= (size_t)k;
    }
}

/* "Code: the gang of N tasks needs R X but <whose> <name>'s <what> is Y
 * (<field>); raise it to at least X or ask for less" into b. */
static void over_quota(struct gt_buf *b, const char *code, const char *whose, const char *name,
                       const char *what, const char *field, const struct gt_sched_job *job,
                       const struct gang *gang, enum gt_res r, int64_t cap)
{
    char need[32], have[32];
    gt_sched_res_text(r, gang->use.v[r], need, sizeof(need));
    gt_sched_res_text(r, cap, have, sizeof(have));
    gt_buf_printf(b,
                  "%s: the gang of %zu task%s needs %s %s but %s %s's %s is %s (%s); raise it to "
                  "at least %s or ask for less",
                  code, job->min_available, job->min_available == 1 ? "" : "s",
                  gt_sched_res_name(r), need, whose, name, what, have, field, need);
}

/* NoNodeMatches when no Ready, uncordoned node's labels and taints admit
 * a task of g (its nodeSelector and tolerations), naming the selector and,
 * for at most three nodes, why each does not. */
static bool match_verdict(const struct gt_sched_model *m, const struct gt_sched_group *g,
                          struct gt_buf *b)
{
    size_t n_ready = 0;
    for (size_t i = 0; i < m->n_nodes; i++) {
        const struct gt_sched_node *node = m->nodes[i];
        if (!node->ready || node->unschedulable) {
            continue;
        }
        if (gt_sched_marks_admit(&node->marks, &g->where)) {
            return false;
        }
        n_ready++;
    }
    gt_buf_printf(b, "NoNodeMatches: no Ready node takes a %s task (nodeSelector", g->name);
    for (size_t i = 0; i < g->where.n_selector; i++) {
        gt_buf_printf(b, " %s", g->where.selector[i]);
    }
    gt_buf_printf(b, "%s, %zu toleration%s):", g->where.n_selector ? "" : " none",
                  g->where.n_tolerations, g->where.n_tolerations == 1 ? "" : "s");
    size_t shown = 0;
    for (size_t i = 0; i < m->n_nodes && shown < 3; i++) {
        const struct gt_sched_node *node = m->nodes[i];
        if (node->ready && !node->unschedulable) {
            gt_buf_printf(b, "%s %s: ", shown ? ";" : "", node->name);
            gt_sched_marks_why(&node->marks, &g->where, b);
            shown++;
        }
    }
    gt_buf_printf(b,
                  "%s; label a node (gantry label node NODE KEY=VALUE), remove a taint "
                  "(gantry taint node NODE KEY-) or change the task's nodeSelector or "
                  "tolerations",
                  n_ready > shown ? "; ..." : "");
    return true;
}

/* Per gang task: on no node its labels and taints admit, larger than any
 * node, or than any domain of a required group/NUMA level. */
static bool task_verdict(const struct gt_sched_model *m, const struct gt_sched_job *job,
                         const struct gang *gang, struct gt_buf *b)
{
    const struct gt_sched_caps *c = &m->caps;
    const struct gt_resvec node = {.v = {[GT_RES_CPU] = c->cpu_milli,
                                         [GT_RES_MEMORY] = c->memory_bytes,
                                         [GT_RES_GPU] = c->node_gpus * 1000}};
    for (size_t i = 0; i < gang->n_groups; i++) {
        const struct gt_sched_group *g = &job->groups[i];
        if (match_verdict(m, g, b)) {
            return true;
        }
        struct gt_resvec want = g->use;
        if (g->req.gpu_milli > 0) {
            want.v[GT_RES_GPU] = 1000; /* a share needs one GPU */
        }
        enum gt_res r = first_over(&want, &node);
        if (r < GT_RES_COUNT) {
            char need[32], have[32];
            gt_buf_printf(b,
                          "NoNodeLargeEnough: a %s task asks for %s %s but the largest Ready "
                          "node has %s; ask for at most %s per task (and more tasks if need "
                          "be) or add a larger node",
                          g->name, gt_sched_res_name(r),
                          gt_sched_res_text(r, g->use.v[r], need, sizeof(need)),
                          gt_sched_res_text(r, node.v[r], have, sizeof(have)), have);
            return true;
        }
        bool numa = job->topology == GT_SCHED_TOPO_NUMA;
        int64_t dom = numa ? c->numa_gpus : c->group_gpus;
        if (job->topology_required && (numa || job->topology == GT_SCHED_TOPO_GPU_GROUP) &&
            g->req.gpus > dom) {
            gt_buf_printf(b,
                          "TopologyUnsatisfiable: required topology %s: a %s task needs %lld "
                          "GPUs in one %s but the largest on a Ready node has %lld; ask for at "
                          "most %lld GPUs per task or make the topology preferred",
                          gt_sched_topology_name(job->topology), g->name, (long long)g->req.gpus,
                          numa ? "NUMA node" : "NVLink/PCIe group", (long long)dom, (long long)dom);
            return true;
        }
    }
    return false;
}

/* The gang against the largest node (required node) and the whole pool. */
static bool gang_verdict(const struct gt_sched_model *m, const struct gt_sched_job *job,
                         const struct gang *gang, struct gt_buf *b)
{
    const struct gt_sched_caps *c = &m->caps;
    char need[32], have[32];
    if (job->topology_required && job->topology == GT_SCHED_TOPO_NODE) {
        struct gt_resvec want = gang->use, node = {.v = {[GT_RES_CPU] = c->cpu_milli,
                                                         [GT_RES_MEMORY] = c->memory_bytes,
                                                         [GT_RES_GPU] = c->node_gpus * 1000}};
        want.v[GT_RES_GPU] = gang->whole_gpu_milli;
        enum gt_res r = first_over(&want, &node);
        if (r < GT_RES_COUNT) {
            gt_buf_printf(b,
                          "TopologyUnsatisfiable: required topology node: the gang of %zu tasks "
                          "needs %s %s on one node but the largest Ready node has %s; make the "
                          "topology preferred or ask for at most %s in all",
                          job->min_available, gt_sched_res_name(r),
                          gt_sched_res_text(r, want.v[r], need, sizeof(need)),
                          gt_sched_res_text(r, node.v[r], have, sizeof(have)), have);
            return true;
        }
    }
    enum gt_res r = first_over(&gang->use, &m->pool);
    if (r < GT_RES_COUNT) {
        gt_buf_printf(b,
                      "ExceedsClusterCapacity: the gang of %zu task%s needs %s %s but the Ready "
                      "nodes have %s in all; ask for at most %s or add nodes",
                      job->min_available, job->min_available == 1 ? "" : "s", gt_sched_res_name(r),
                      gt_sched_res_text(r, gang->use.v[r], need, sizeof(need)),
                      gt_sched_res_text(r, m->pool.v[r], have, sizeof(have)), have);
        return true;
    }
    return false;
}

static char *verdict_of(struct gt_sched_model *m, const struct gt_sched_job *job)
{
    struct gt_buf b;
    gt_buf_init(&b);
    struct gang gang;
    gang_of(job, &gang);
    enum gt_res r = first_over(&gang.use, &job->dept->limit);
    if (r < GT_RES_COUNT) {
        over_quota(&b, "ExceedsDepartmentLimit", "department", job->dept->name, "limit",
                   "spec.limit", job, &gang, r, job->dept->limit.v[r]);
        return gt_buf_take(&b);
    }
    r = job->project && job->project->capped ? first_over(&gang.use, &job->project->hard)
                                             : GT_RES_COUNT;
    if (r < GT_RES_COUNT) {
        over_quota(&b, "ExceedsProjectCap", "project", job->project->name, "hard cap", "spec.hard",
                   job, &gang, r, job->project->hard.v[r]);
        return gt_buf_take(&b);
    }
    caps_refresh(m);
    if (m->caps.n_nodes > 0 &&
        (task_verdict(m, job, &gang, &b) || gang_verdict(m, job, &gang, &b))) {
        return gt_buf_take(&b);
    }
    gt_buf_fini(&b);
    return NULL;
}

const char *gt_sched_verdict(struct gt_sched_model *m, struct gt_sched_job *job)
{
    if (job->verdict_epoch != m->capacity_epoch) {
        free(job->verdict);
        job->verdict = verdict_of(m, job);
        job->verdict_epoch = m->capacity_epoch;
    }
    return job->verdict;
}

int gt_sched_job_get(const struct gt_sched_model *m, const char *id, struct gt_sched_job_info *out)
{
    const struct gt_sched_job *job = id ? gt_sched_map_get(&m->job_map, id) : NULL;
    if (!job) {
        return GT_ENOTFOUND;
    }
    *out = (struct gt_sched_job_info){.placement_attempts = job->placement_attempts,
                                      .inadmissible = job->verdict != NULL};
    return 0;
}
