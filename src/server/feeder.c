/*
 * The scheduler feeder: gantryd's struct gt_sched_model (src/sched), built
 * from the controllers' cache at start-up and kept current from store
 * changes, and the cycle that runs on it.
 *
 * Model ids: a job is "<project>/<job>", its tasks "<project>/<task>"
 * (the job controller names tasks "<job>-<lower(type)>-<index>", which is
 * what gt_sched_job_add calls them when groups are named lower(type)). A
 * job enters the model once all its tasks exist; a finished or deleted job
 * leaves it once none of its tasks holds resources. A task's model state
 * follows its stored phase: Pending -> PENDING, Bound -> BOUND (restored
 * with gt_sched_task_bind), Running -> RUNNING, Terminating or stopped ->
 * TERMINATING, Succeeded/Failed -> DONE (resources freed).
 *
 * Bind decisions are written as the Task binding (spec.nodeName, spec.gpus,
 * status.phase Bound, boundTime), conditional on the cached revision; a
 * failed write reverts the bind with gt_sched_task_exit(requeue). Preempt
 * decisions become spec.stop{reason: Preempted} and a Preempted Event on
 * the victim's job; once the victim's exit is recorded its resources are
 * free in the model (and a cycle runs at once, for the preemptor), and the
 * job controller requeues the job (a restart that counts toward no
 * backoffLimit), whose recreated Pending tasks re-enter the model. Wait
 * reasons become a folded Warning Event (reason Quota, Unschedulable or
 * Inadmissible, as Kubernetes' FailedScheduling) on the job and its Queued
 * condition's message, "Reason: text" (c->waits, by model id; an
 * Inadmissible text "Code: message" also makes the job's Inadmissible
 * condition, jobs.c), each written only when
 * it changed: the cycle reports only waits that changed
 * (changed_waits_only) and counts all (jobs_pending metrics).
 * Department status (used, borrowed) is computed from the model on reads.
 * A Project's spec.hard is its hard cap in the model (gt_project_cap_sync);
 * jobs name their project, so its use is counted from their tasks.
 * A job mounting a writable ReadWriteOnce Volume enters the model only
 * once it has claimed it (gt_volctl_claim), and its tasks' bindings carry
 * their Volumes' disk images (gt_volctl_bind).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "server/bindplan.h"
#include "server/cache.h"
#include "server/events.h"
#include "server/fault.h"
#include "server/feeder.h"
#include "server/ledger.h"
#include "server/server_int.h"
#include "server/volctl.h"

static const char marker[] = "";

/* "/tasks/p/n" or "/jobs/p/n" -> "p/n" (borrowed, points into key) */
static const char *model_id(const char *key)
{
    const char *s = strchr(key + 1, '/');
    return s ? s + 1 : key;
}

/* A resource map as the model counts it; a resource the map does not name
 * is dflt's (NULL: 0). */
static void res_of(const struct gt_api_res *x, struct gt_sched_res *r,
                   const struct gt_sched_res *dflt)
{
    r->cpu_milli = (x->set & GT_RESF_CPU) || !dflt ? x->v.v[GT_RES_CPU] : dflt->cpu_milli;
    r->memory_bytes =
        (x->set & GT_RESF_MEMORY) || !dflt ? x->v.v[GT_RES_MEMORY] : dflt->memory_bytes;
    r->storage_bytes =
        (x->set & GT_RESF_STORAGE) || !dflt ? x->v.v[GT_RES_STORAGE] : dflt->storage_bytes;
    r->gpu_milli = (x->set & GT_RESF_GPU) || !dflt ? x->v.v[GT_RES_GPU] : dflt->gpu_milli;
}

static void sync_department(struct gt_ctl *c, const struct gt_api_department *d)
{
    struct gt_sched_res g = {0}, l = {0};
    res_of(&d->spec.quota, &g, NULL);
    res_of(&d->spec.limit, &l, &g);
    struct gt_err err = {0};
    if (gt_sched_department_set(c->model, d->o.meta.name, &g, &l, &err)) {
        gt_log_warn("department not scheduled", "name=%s err=\"%s\"", d->o.meta.name, err.msg);
    }
}

int gt_project_cap_sync(struct gt_sched_model *m, const char *name,
                        const struct gt_api_project *project, struct gt_err *err)
{
    if (!project || !project->spec.has_hard) {
        int rc = gt_sched_project_remove(m, name, err);
        return rc == GT_ENOTFOUND ? 0 : rc;
    }
    static const struct gt_sched_res uncapped = {GT_SCHED_NO_CAP, GT_SCHED_NO_CAP, GT_SCHED_NO_CAP,
                                                 GT_SCHED_NO_CAP};
    struct gt_sched_res h;
    res_of(&project->spec.hard, &h, &uncapped);
    return gt_sched_project_set(m, name, &h, err);
}

static void sync_project(struct gt_ctl *c, const char *name, const struct gt_api_project *project)
{
    struct gt_err err = {0};
    if (gt_project_cap_sync(c->model, name, project, &err)) {
        gt_log_warn("project cap not scheduled", "name=%s err=\"%s\"", name, err.msg);
    }
}

static void sync_pc(struct gt_ctl *c, const struct gt_api_priority_class *pc)
{
    const char *pol = pc->preemption_policy;
    struct gt_err err = {0};
    gt_sched_priority_class_set(c->model, pc->o.meta.name, (int32_t)pc->value,
                                pol && !strcmp(pol, "Never") ? GT_SCHED_PREEMPT_NEVER
                                                             : GT_SCHED_PREEMPT_LOWER,
                                pc->global_default, &err);
}

/* ---- nodes ---- */

/* A map of strings (labels, nodeSelector; borrowed, may be NULL) as
 * "key=value" strings into *out (caller frees each and the array). */
static size_t label_strings(const json_t *map, char ***out)
{
    size_t n = 0;
    *out = gt_xcalloc(json_object_size(map) + 1, sizeof(**out));
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)map, key, v)
    {
        (*out)[n++] = gt_xasprintf("%s=%s", key, json_string_value(v) ? json_string_value(v) : "");
    }
    return n;
}

static void strings_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i]);
    }
    free(v);
}

static void sync_node(struct gt_ctl *c, const struct gt_api_node *node, bool force_not_ready)
{
    size_t n = node->status.gpus.n;
    if (n > GT_SCHED_MAX_NODE_GPUS) {
        n = GT_SCHED_MAX_NODE_GPUS;
    }
    struct gt_sched_gpu_spec *g = gt_xcalloc(n ? n : 1, sizeof(*g));
    for (size_t i = 0; i < n; i++) {
        const struct gt_api_node_gpu *x = &node->status.gpus.v[i];
        const char *grp = x->group;
        g[i].index = x->index != GT_API_UNSET ? (int32_t)x->index : 0;
        g[i].group =
            grp ? (int32_t)(gt_fnv1a(grp, strlen(grp), 0xcbf29ce484222325ULL) & 0x7fffffff) : 0;
        g[i].numa = x->numa_node != GT_API_UNSET ? (int32_t)x->numa_node : 0;
        g[i].healthy = !x->health || !strcmp(x->health, "Healthy");
    }
    const struct gt_resvec *alloc = &node->status.allocatable.v;
    char **labels;
    size_t n_labels = label_strings(node->o.meta.labels, &labels);
    size_t n_taints = node->spec.taints.n;
    struct gt_sched_taint *taints = gt_xcalloc(n_taints + 1, sizeof(*taints));
    for (size_t i = 0; i < n_taints; i++) {
        const struct gt_api_taint *t = &node->spec.taints.v[i];
        taints[i] = (struct gt_sched_taint){
            .key = t->key, .value = t->value, .effect = gt_sched_effect_of(t->effect)};
    }
    struct gt_sched_node_spec spec = {
        .name = node->o.meta.name,
        .cpu_milli = alloc->v[GT_RES_CPU],
        .memory_bytes = alloc->v[GT_RES_MEMORY],
        .ready = !force_not_ready && gt_api_condition_true(&node->status.conditions, "Ready"),
        .unschedulable = node->spec.unschedulable || gt_node_draining(node),
        .gpus = g,
        .n_gpus = n,
        .labels = (const char *const *)labels,
        .n_labels = n_labels,
        .taints = taints,
        .n_taints = n_taints,
    };
    struct gt_err err = {0};
    int rc = gt_sched_node_update(c->model, &spec, &err);
    if (rc == GT_ENOTFOUND) {
        rc = gt_sched_node_add(c->model, &spec, &err);
    }
    if (rc) {
        gt_log_warn("node not scheduled", "node=%s err=\"%s\"", spec.name, err.msg);
    }
    strings_free(labels, n_labels);
    free(taints);
    free(g);
}

void gt_feed_node_lost(struct gt_ctl *c, const struct gt_api_node *node)
{
    struct gt_err err = {0};
    if (gt_sched_node_remove(c->model, node->o.meta.name, &err) == 0) {
        sync_node(c, node, true);
    }
    c->want_cycle = true;
}

/* ---- tasks ---- */

static enum gt_sched_task_state desired_state(const struct gt_api_task *task)
{
    bool stop = task->spec.has_stop;
    switch ((enum gt_task_phase)task->status.phase) {
    case GT_TASK_BOUND:
        return stop ? GT_SCHED_TASK_TERMINATING : GT_SCHED_TASK_BOUND;
    case GT_TASK_RUNNING:
        return stop ? GT_SCHED_TASK_TERMINATING : GT_SCHED_TASK_RUNNING;
    case GT_TASK_TERMINATING:
        return GT_SCHED_TASK_TERMINATING;
    case GT_TASK_SUCCEEDED:
    case GT_TASK_FAILED:
        return GT_SCHED_TASK_DONE;
    default:
        return GT_SCHED_TASK_PENDING;
    }
}

static int restore_bind(struct gt_ctl *c, const char *id, const struct gt_api_task *task)
{
    size_t n = task->spec.gpus.n;
    struct gt_sched_gpu_share *sh = gt_xcalloc(n ? n : 1, sizeof(*sh));
    for (size_t i = 0; i < n; i++) {
        const struct gt_api_task_gpu *x = &task->spec.gpus.v[i];
        sh[i].index = x->index != GT_API_UNSET ? (int32_t)x->index : 0;
        sh[i].milli = x->milli != GT_API_UNSET ? (int32_t)x->milli : 1000;
    }
    int64_t bound_ms = 0;
    const char *bt = task->status.bound_time;
    if (!bt || gt_time_parse(bt, &bound_ms)) {
        bound_ms = gt_now_ms();
    }
    struct gt_err err = {0};
    int rc = gt_sched_task_bind(c->model, id, task->spec.node_name, sh, n, bound_ms, &err);
    if (rc) {
        gt_log_warn("task binding not restored", "task=%s err=\"%s\"", id, err.msg);
    }
    free(sh);
    return rc;
}

/* Bring the model's task id to the state its stored object says. Not
 * while a write of ours to the task is in flight: the model is ahead of
 * the cache then (a bind), and the write's completion marks the task's job
 * again (cache.c); with other writers on the store, an event of theirs for
 * the job can come in between and would undo the bind in the model. */
static void sync_task(struct gt_ctl *c, const char *id, const struct gt_api_task *task)
{
    struct gt_sched_task_info ti;
    if (gt_sched_task_get(c->model, id, &ti)) {
        return;
    }
    char *key = gt_xasprintf("/tasks/%s", id);
    bool busy = gt_ctl_busy(c, key);
    free(key);
    if (busy) {
        return;
    }
    enum gt_sched_task_state want = task ? desired_state(task) : GT_SCHED_TASK_DONE;
    enum gt_sched_task_state cur = ti.state;
    if (cur == want) {
        return;
    }
    struct gt_err err = {0};
    if (want == GT_SCHED_TASK_DONE || want == GT_SCHED_TASK_PENDING) {
        if (cur != GT_SCHED_TASK_PENDING && cur != GT_SCHED_TASK_DONE) {
            gt_sched_task_exit(c->model, id, want == GT_SCHED_TASK_PENDING, &err);
            c->want_cycle = true;
        } else if (cur == GT_SCHED_TASK_DONE) {
            gt_sched_task_set_state(c->model, id, GT_SCHED_TASK_PENDING, &err);
        }
        return;
    }
    if (cur == GT_SCHED_TASK_DONE) {
        gt_sched_task_set_state(c->model, id, GT_SCHED_TASK_PENDING, &err);
        cur = GT_SCHED_TASK_PENDING;
    }
    if (cur == GT_SCHED_TASK_PENDING) {
        if (restore_bind(c, id, task)) {
            return;
        }
        cur = GT_SCHED_TASK_BOUND;
    }
    if (want != cur && !(cur == GT_SCHED_TASK_TERMINATING)) {
        gt_sched_task_set_state(c->model, id, want, &err);
    }
}

/* ---- jobs ---- */

/* The job's tasks in the cache, in replica order, into *tasks (grown as
 * needed; *cap its size). True if every task exists. */
static bool job_tasks(struct gt_ctl *c, const struct gt_api_job *job,
                      const struct gt_api_task ***tasks, size_t *cap, size_t *n, bool *any_holds)
{
    bool all = true;
    *n = 0;
    *any_holds = false;
    for (size_t r = 0; r < job->spec.replica_specs.n; r++) {
        const struct gt_api_replica_spec *rs = &job->spec.replica_specs.v[r];
        for (int64_t i = 0; i < rs->replicas; i++) {
            char buf[256], *heap;
            const char *key = gt_job_task_key(buf, sizeof(buf), &heap, job->o.meta.project,
                                              job->o.meta.name, rs->type, i);
            const struct gt_cobj *t = gt_ctl_get(c, GT_KIND_TASK, key);
            if (!t) {
                all = false;
            } else {
                *any_holds |= gt_task_holds(gt_cobj_task(t));
                GT_VEC_RESERVE(*tasks, *cap, *n + 1, 16);
                (*tasks)[(*n)++] = gt_cobj_task(t);
            }
            free(heap);
        }
    }
    return all;
}

/* schedulingPolicy.topology as the model's level (NONE when absent);
 * *required: it is the required form. */
static enum gt_sched_topology topology_of(const struct gt_api_topology *t, bool *required)
{
    const char *v = t->required ? t->required : t->preferred;
    *required = t->required != NULL;
    for (enum gt_sched_topology l = GT_SCHED_TOPO_NODE; v && l <= GT_SCHED_TOPO_NUMA; l++) {
        if (!strcmp(v, gt_sched_topology_name(l))) {
            return l;
        }
    }
    return GT_SCHED_TOPO_NONE;
}

/* A template's tolerations as the model's (strings borrowed from tmpl);
 * *n their count. Caller frees the array. */
static struct gt_sched_toleration *tolerations_of(const struct gt_api_template *tmpl, size_t *n)
{
    *n = tmpl->tolerations.n;
    struct gt_sched_toleration *out = gt_xcalloc(*n + 1, sizeof(*out));
    for (size_t i = 0; i < *n; i++) {
        const struct gt_api_toleration *t = &tmpl->tolerations.v[i];
        out[i] = (struct gt_sched_toleration){.key = t->key,
                                              .value = t->value,
                                              .exists = t->op && !strcmp(t->op, "Exists"),
                                              .effect = gt_sched_effect_of(t->effect)};
    }
    return out;
}

/* Does the job say a preempted run resumes from its checkpoint
 * (GT_ANNOTATION_CHECKPOINTED "true")? Else it restarts from scratch. */
static bool job_checkpoints(const struct gt_api_job *job)
{
    const char *v =
        json_string_value(json_object_get(job->o.meta.annotations, GT_ANNOTATION_CHECKPOINTED));
    return v && !strcmp(v, "true");
}

static int add_job(struct gt_ctl *c, const char *id, const struct gt_api_job *job)
{
    size_t ng = job->spec.replica_specs.n;
    struct gt_sched_group_spec *g = gt_xcalloc(ng ? ng : 1, sizeof(*g));
    char(*names)[16] = gt_xcalloc(ng ? ng : 1, sizeof(*names));
    char ***selectors = gt_xcalloc(ng ? ng : 1, sizeof(*selectors));
    struct gt_sched_toleration **tols = gt_xcalloc(ng ? ng : 1, sizeof(*tols));
    for (size_t k = 0; k < ng; k++) {
        const struct gt_api_replica_spec *rs = &job->spec.replica_specs.v[k];
        for (size_t i = 0; rs->type[i] && i + 1 < sizeof(names[k]); i++) {
            names[k][i] = (char)tolower((unsigned char)rs->type[i]);
        }
        struct gt_api_effective e;
        gt_api_resources_effective(&rs->template.resources, &e);
        int64_t gpu = e.request.v[GT_RES_GPU];
        g[k] = (struct gt_sched_group_spec){.name = names[k],
                                            .replicas = (int32_t)rs->replicas,
                                            .req = {.cpu_milli = e.request.v[GT_RES_CPU],
                                                    .memory_bytes = e.request.v[GT_RES_MEMORY],
                                                    .gpus = e.gpu_share ? 0 : gpu / 1000,
                                                    .gpu_milli = e.gpu_share ? gpu : 0}};
        g[k].n_node_selector = label_strings(rs->template.node_selector, &selectors[k]);
        g[k].node_selector = (const char *const *)selectors[k];
        tols[k] = tolerations_of(&rs->template, &g[k].n_tolerations);
        g[k].tolerations = tols[k];
    }
    int64_t arrival = 0;
    const char *ct = job->o.meta.creation_timestamp;
    if (!ct || gt_time_parse(ct, &arrival)) {
        arrival = gt_now_ms();
    }
    const struct gt_api_run_policy *rp = &job->spec.run_policy;
    int64_t min = rp->scheduling_policy.min_available;
    struct gt_sched_job_spec spec = {
        .id = id,
        .department = gt_ctl_project_department(c, job->o.meta.project),
        .project = job->o.meta.project,
        .priority_class = rp->scheduling_policy.priority_class,
        .arrival_ms = arrival,
        .min_available = min != GT_API_UNSET ? (int32_t)min : 0,
        .groups = g,
        .n_groups = ng,
        .active_deadline_ms =
            rp->active_deadline_s != GT_API_UNSET ? rp->active_deadline_s * 1000 : 0,
    };
    spec.topology = topology_of(&rp->scheduling_policy.topology, &spec.topology_required);
    spec.attained_gpu_ms = gt_ledger_job_gpu_ms(c->ledger, id);
    spec.restarts_from_scratch = !job_checkpoints(job);
    struct gt_err err = {0};
    int rc = spec.department ? gt_sched_job_add(c->model, &spec, &err) : GT_ENOTFOUND;
    if (rc && rc != GT_ENOTFOUND) {
        gt_log_warn("job not scheduled", "job=%s err=\"%s\"", id, err.msg);
    }
    for (size_t k = 0; k < ng; k++) {
        strings_free(selectors[k], g[k].n_node_selector);
        free(tols[k]);
    }
    free(selectors);
    free(tols);
    free(names);
    free(g);
    return rc;
}

/* Has the job at key (model id id) claimed the ReadWriteOnce Volumes it
 * mounts? Else it stays out of the model, waiting with reason
 * VolumeInUse (its Queued condition's message). */
static bool volumes_claimed(struct gt_ctl *c, const char *key, const char *id,
                            const struct gt_api_job *job)
{
    char *why = NULL;
    if (gt_volctl_claim(c, key, job, &why)) {
        free(gt_strmap_del(&c->waits, id));
        return true;
    }
    free(gt_strmap_put(&c->waits, id, gt_xasprintf("VolumeInUse: %s", why)));
    free(why);
    return false;
}

void gt_feed_sync_job(struct gt_ctl *c, const char *key)
{
    const char *id = model_id(key);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_JOB, key);
    const struct gt_api_job *job = o ? gt_cobj_job(o) : NULL;
    bool in = gt_strmap_get(&c->in_model, key) != NULL;
    const struct gt_api_task **tasks = NULL;
    size_t n = 0, cap = 0;
    bool holds = false;
    bool all = job && job_tasks(c, job, &tasks, &cap, &n, &holds);
    bool active = job && !gt_job_finished(job) && !job->o.meta.deletion_timestamp;
    if (!in && all && (active || holds) && volumes_claimed(c, key, id, job)) {
        if (add_job(c, id, job) == 0) {
            gt_strmap_put(&c->in_model, key, (void *)marker);
            gt_strmap_put(&c->unseen, key, (void *)marker);
            in = true;
            c->want_cycle = true;
        } else {
            gt_volctl_release(c, key);
        }
    }
    if (in) {
        char tid[600];
        for (size_t i = 0; i < n; i++) {
            snprintf(tid, sizeof(tid), "%s/%s", tasks[i]->o.meta.project, tasks[i]->o.meta.name);
            sync_task(c, tid, tasks[i]);
        }
        if (!active && !holds) {
            struct gt_err err = {0};
            if (gt_sched_job_remove(c->model, id, &err) == 0) {
                gt_volctl_release(c, key);
                gt_strmap_del(&c->in_model, key);
                gt_strmap_del(&c->unseen, key);
                free(gt_strmap_del(&c->waits, id));
            }
        }
    }
    free(tasks);
}

void gt_feed_change(struct gt_ctl *c, enum gt_kind kind, const char *key,
                    const struct gt_api_object *old, const struct gt_api_object *now)
{
    struct gt_err err = {0};
    switch (kind) {
    case GT_KIND_DEPARTMENT:
        if (now) {
            sync_department(c, (const struct gt_api_department *)now);
        } else if (old) {
            gt_sched_department_remove(c->model, old->meta.name, &err);
        }
        break;
    case GT_KIND_PROJECT:
        if (now || old) {
            sync_project(c, (now ? now : old)->meta.name, (const struct gt_api_project *)now);
        }
        break;
    case GT_KIND_PRIORITYCLASS:
        if (now) {
            sync_pc(c, (const struct gt_api_priority_class *)now);
        }
        break;
    case GT_KIND_NODE:
        if (now) {
            sync_node(c, (const struct gt_api_node *)now, false);
        } else if (old) {
            gt_sched_node_remove(c->model, old->meta.name, &err);
        }
        break;
    case GT_KIND_TASK:
        /* a task that vanished releases what it held; others sync with their job */
        sync_task(c, model_id(key), (const struct gt_api_task *)now);
        break;
    default:
        return;
    }
    c->want_cycle = true;
}

static int dept_cb(const char *key, void *val, void *arg)
{
    (void)key;
    const struct gt_cobj *o = val;
    sync_department(arg, (const struct gt_api_department *)o->t);
    return 0;
}

static int project_cb(const char *key, void *val, void *arg)
{
    (void)key;
    const struct gt_cobj *o = val;
    sync_project(arg, o->t->meta.name, (const struct gt_api_project *)o->t);
    return 0;
}

static int pc_cb(const char *key, void *val, void *arg)
{
    (void)key;
    sync_pc(arg, (const struct gt_api_priority_class *)((const struct gt_cobj *)val)->t);
    return 0;
}

static int node_cb(const char *key, void *val, void *arg)
{
    (void)key;
    sync_node(arg, gt_cobj_node(val), false);
    return 0;
}

static int job_cb(const char *key, void *val, void *arg)
{
    (void)val;
    gt_feed_sync_job(arg, key);
    return 0;
}

int gt_feed_build(struct gt_ctl *c, struct gt_err *err)
{
    (void)err;
    gt_strmap_each(&c->objs[GT_KIND_DEPARTMENT], dept_cb, c);
    gt_strmap_each(&c->objs[GT_KIND_PROJECT], project_cb, c);
    gt_strmap_each(&c->objs[GT_KIND_PRIORITYCLASS], pc_cb, c);
    gt_strmap_each(&c->objs[GT_KIND_NODE], node_cb, c);
    gt_strmap_each(&c->objs[GT_KIND_JOB], job_cb, c);
    return 0;
}

/* ---- the cycle ---- */

struct bind_ctx {
    char *task_id;
    char *node;
};

static void bind_done(struct gt_ctl *c, int rc, void *arg)
{
    struct bind_ctx *b = arg;
    if (rc == 0 && gt_fault_hit(&c->s->faults, GT_FP_AFTER_BIND) == GT_FAULT_FAIL) {
        rc = GT_ESTORE;
    }
    if (rc) {
        struct gt_sched_task_info ti;
        struct gt_err err = {0};
        if (gt_sched_task_get(c->model, b->task_id, &ti) == 0 && ti.state == GT_SCHED_TASK_BOUND &&
            ti.node && !strcmp(ti.node, b->node)) {
            gt_sched_task_exit(c->model, b->task_id, true, &err);
            c->want_cycle = true;
        }
    }
    free(b->task_id);
    free(b->node);
    free(b);
}

static const char *gpu_uuid(const struct gt_api_node *node, int32_t index)
{
    for (size_t i = 0; i < node->status.gpus.n; i++) {
        if (node->status.gpus.v[i].index == index) {
            return node->status.gpus.v[i].uuid;
        }
    }
    return NULL;
}

static void apply_bind(struct gt_ctl *c, const struct gt_sched_bind *b,
                       const struct gt_bind_plan_entry *plan)
{
    char *key = gt_xasprintf("/tasks/%s", b->task_id);
    char *nkey = gt_xasprintf("/nodes/%s", b->node);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_TASK, key);
    const struct gt_cobj *n = gt_ctl_get(c, GT_KIND_NODE, nkey);
    struct gt_err err = {0};
    const struct gt_api_task *task = o ? gt_cobj_task(o) : NULL;
    if (!o || !n || gt_ctl_busy(c, key) || task->status.phase != GT_TASK_PENDING ||
        task->spec.has_stop || task->o.meta.deletion_timestamp) {
        gt_sched_task_exit(c->model, b->task_id, true, &err);
        free(key);
        free(nkey);
        return;
    }
    json_t *t = json_deep_copy(o->obj);
    json_t *spec = json_object_get(t, "spec");
    json_object_set_new(spec, "nodeName", json_string(b->node));
    json_t *gpus = json_array();
    for (size_t i = 0; i < b->n_gpus; i++) {
        json_t *g = json_pack("{s:i, s:i}", "index", b->gpus[i].index, "milli", b->gpus[i].milli);
        const char *uuid = gpu_uuid(gt_cobj_node(n), b->gpus[i].index);
        if (uuid) {
            json_object_set_new(g, "uuid", json_string(uuid));
        }
        json_array_append_new(gpus, g);
    }
    json_object_set_new(spec, "gpus", gpus);
    gt_bind_plan_apply(plan, t);
    if (gt_volctl_bind(c, t, &err)) {
        gt_log_warn("task not bound", "task=%s err=\"%s\"", b->task_id, err.msg);
        json_decref(t);
        gt_sched_task_exit(c->model, b->task_id, true, &err);
        free(key);
        free(nkey);
        return;
    }
    json_t *st = json_object_get(t, "status");
    if (!json_is_object(st)) {
        st = json_object();
        json_object_set_new(t, "status", st);
    }
    char ts[32];
    gt_time_format(gt_now_ms(), ts, sizeof(ts));
    json_object_set_new(st, "phase", json_string("Bound"));
    json_object_set_new(st, "boundTime", json_string(ts));
    struct bind_ctx *bc = gt_xcalloc(1, sizeof(*bc));
    bc->task_id = gt_xstrdup(b->task_id);
    bc->node = gt_xstrdup(b->node);
    int64_t created_ms;
    if (gt_ctl_write(c, GT_STORE_UPDATE, key, t, o->rev, bind_done, bc)) {
        bind_done(c, GT_ESTORE, bc);
    } else {
        c->s->metrics.binds++;
        if (task->o.meta.creation_timestamp &&
            gt_time_parse(task->o.meta.creation_timestamp, &created_ms) == 0) {
            /* creationTimestamp has whole seconds: up to 1 s more than the wait */
            int64_t waited_ms = gt_now_ms() - created_ms;
            gt_histogram_observe(&c->s->metrics.schedule_seconds,
                                 waited_ms > 0 ? (double)waited_ms / 1000 : 0);
        }
    }
    json_decref(t);
    free(key);
    free(nkey);
}

int gt_feed_stop_task(struct gt_ctl *c, const struct gt_cobj *o, const char *reason,
                      const char *message)
{
    const struct gt_api_task *task = gt_cobj_task(o);
    if (gt_ctl_busy(c, o->key) || task->spec.has_stop ||
        gt_api_task_phase_terminal((enum gt_task_phase)task->status.phase)) {
        return GT_ECONFLICT;
    }
    json_t *t = gt_task_with_stop(task, reason, false);
    int rc = gt_ctl_write(c, GT_STORE_UPDATE, o->key, t, o->rev, NULL, NULL);
    json_decref(t);
    if (rc) {
        return rc;
    }
    const struct gt_cobj *j = gt_ctl_task_job(c, task);
    if (j) {
        char *msg = gt_xasprintf("task %s: %s", task->o.meta.name, message);
        gt_events_record(c->s->events, j->t, "Warning", reason, msg);
        free(msg);
    }
    gt_log_info("task stopped", "task=%s reason=%s why=\"%s\"", o->key, reason, message);
    return 0;
}

static void apply_preempt(struct gt_ctl *c, const struct gt_sched_preempt *p)
{
    char *key = gt_xasprintf("/tasks/%s", p->task_id);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_TASK, key);
    if (o && gt_feed_stop_task(c, o, "Preempted", p->reason ? p->reason : "preempted") == 0) {
        c->s->metrics.preemptions[p->kind]++;
    }
    free(key);
}

/* Is was ("Reason: message", may be NULL) the wait of code and message? */
static bool same_wait(const char *was, const char *code, const char *message)
{
    size_t n = strlen(code);
    return was && !strncmp(was, code, n) && !strncmp(was + n, ": ", 2) &&
           !strcmp(was + n + 2, message);
}

static void apply_wait(struct gt_ctl *c, const struct gt_sched_wait *w)
{
    /* the cycle reports only changed waits; this compare also covers a
     * job that left the model and came back with the same wait */
    const char *code = gt_sched_wait_reason_str(w->reason);
    const char *message = w->message ? w->message : "";
    if (same_wait(gt_strmap_get(&c->waits, w->job_id), code, message)) {
        return;
    }
    char *key = gt_xasprintf("/jobs/%s", w->job_id);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_JOB, key);
    if (o) {
        gt_events_record(c->s->events, o->t, "Warning", code, message);
        free(gt_strmap_put(&c->waits, w->job_id, gt_xasprintf("%s: %s", code, message)));
        gt_strmap_put(&c->dirty_jobs, key, (void *)marker);
    }
    free(key);
}

const char *gt_feed_wait(const struct gt_ctl *c, const char *job_key)
{
    return gt_strmap_get(&c->waits, model_id(job_key));
}

bool gt_feed_task_placed(const struct gt_ctl *c, const char *task_key)
{
    struct gt_sched_task_info ti;
    return gt_sched_task_get(c->model, model_id(task_key), &ti) == 0 && ti.node != NULL;
}

static int seen_cb(const char *key, void *val, void *arg)
{
    (void)val;
    struct gt_ctl *c = arg;
    gt_strmap_put(&c->dirty_jobs, key, (void *)marker);
    return 0;
}

struct running_ctx {
    struct gt_ctl *c;
    int64_t now_ms;
};

static int attained_cb(const char *id, void *val, void *arg)
{
    struct running_ctx *x = arg;
    const struct gt_run_sum *sum = val;
    /* milli-GPU x ms / 1000 = GPU-ms, as the ledger's milli-GPU x s; a run
     * bound later than now (another replica's clock) counts nothing */
    __int128 ms = ((__int128)sum->milli * x->now_ms - sum->milli_bound) / 1000;
    ms = ms < 0 ? 0 : ms;
    __int128 total = ms + gt_ledger_job_gpu_ms(x->c->ledger, id);
    gt_sched_job_set_attained(x->c->model, id, total > INT64_MAX ? INT64_MAX : (int64_t)total,
                              NULL);
    return 0;
}

/* Every job holding GPUs: its attained service, the ledger's recorded runs
 * and those still going (a job that holds none keeps what the ledger set
 * when it recorded its last run). Costs the jobs holding GPUs, not their
 * tasks nor the queue (c->holding_jobs sums their runs). */
static void feed_running_service(struct gt_ctl *c, int64_t now_ms)
{
    struct running_ctx x = {.c = c, .now_ms = now_ms};
    gt_strmap_each(&c->holding_jobs, attained_cb, &x);
}

void gt_feed_cycle(struct gt_ctl *c)
{
    int64_t t0 = gt_now_ns(), now_ms = gt_now_ms();
    const struct gt_sched_cycle_opts opts = {.max_waits = SIZE_MAX, .changed_waits_only = true};
    feed_running_service(c, now_ms);
    gt_sched_cycle_ex(c->model, now_ms, c->policy, &opts, &c->dec);
    /* the jobs held back for this cycle get their status now */
    gt_strmap_each(&c->unseen, seen_cb, c);
    gt_strmap_fini(&c->unseen, NULL);
    gt_strmap_init(&c->unseen);
    struct gt_bind_plan plan;
    gt_bind_plan_build(c, c->dec.binds, c->dec.n_binds, &plan);
    for (size_t i = 0; i < c->dec.n_binds; i++) {
        apply_bind(c, &c->dec.binds[i], &plan.v[i]);
    }
    gt_bind_plan_fini(&plan);
    for (size_t i = 0; i < c->dec.n_preempts; i++) {
        apply_preempt(c, &c->dec.preempts[i]);
    }
    _Static_assert(GT_ARRAY_LEN(c->s->metrics.jobs_pending) == GT_SCHED_N_WAIT_REASONS,
                   "jobs_pending holds every wait reason");
    for (size_t i = 0; i < GT_SCHED_N_WAIT_REASONS; i++) {
        c->s->metrics.jobs_pending[i] = (int64_t)c->dec.n_waiting[i];
    }
    for (size_t i = 0; i < c->dec.n_waits; i++) {
        apply_wait(c, &c->dec.waits[i]);
    }
    gt_histogram_observe(&c->s->metrics.cycle_seconds, (double)(gt_now_ns() - t0) / 1e9);
    if (c->dirty_jobs.n) {
        gt_ctl_kick(c);
    }
}

struct attempts_ctx {
    const struct gt_ctl *c;
    struct gt_buf *out;
};

static int attempts_cb(const char *key, void *val, void *arg)
{
    (void)val;
    const struct attempts_ctx *a = arg;
    struct gt_sched_job_info ji;
    if (gt_sched_job_get(a->c->model, model_id(key), &ji) == 0) {
        /* ids are project/name, DNS labels: nothing to escape */
        gt_buf_printf(a->out, "gantry_scheduler_placement_attempts_total{job=\"%s\"} %llu\n",
                      model_id(key), (unsigned long long)ji.placement_attempts);
    }
    return 0;
}

void gt_feed_metrics(const struct gt_ctl *c, struct gt_buf *out)
{
    gt_buf_puts(out, "# HELP gantry_scheduler_placement_attempts_total Gang placements the "
                     "scheduler searched for a job (none while it is Inadmissible).\n"
                     "# TYPE gantry_scheduler_placement_attempts_total counter\n");
    struct attempts_ctx a = {.c = c, .out = out};
    gt_strmap_each(&c->in_model, attempts_cb, &a);
}

json_t *gt_department_status(const struct gt_sched_model *m, const char *name)
{
    struct gt_sched_res g, used;
    if (gt_sched_department_get(m, name, &g, NULL, &used)) {
        return NULL;
    }
    struct gt_sched_res b = {
        .cpu_milli = used.cpu_milli > g.cpu_milli ? used.cpu_milli - g.cpu_milli : 0,
        .memory_bytes = used.memory_bytes > g.memory_bytes ? used.memory_bytes - g.memory_bytes : 0,
        .gpu_milli = used.gpu_milli > g.gpu_milli ? used.gpu_milli - g.gpu_milli : 0,
    };
    return json_pack("{s:o, s:o}", "used",
                     gt_resources_json(used.cpu_milli, used.memory_bytes, used.gpu_milli),
                     "borrowed", gt_resources_json(b.cpu_milli, b.memory_bytes, b.gpu_milli));
}
