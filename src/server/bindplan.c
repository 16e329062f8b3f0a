/*
 * What the tasks of a scheduling cycle's binds are given in their binding
 * write: ports from each node's --port-range (lowest free among the tasks
 * holding the node and the cycle's other binds), the job's distributed
 * environment and its replicas' host names (jobenv.c), from the replicas
 * as bound now or in this plan: a gang binds in one cycle, so the master's
 * port is known to every worker.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/bindplan.h"
#include "server/cache.h"
#include "server/server_int.h"

struct port_use {
    const char *node; /* borrowed from the cache or the binds */
    int32_t port;
};

struct plan_ctx GT_VEC(struct port_use);

static void use_port(struct plan_ctx *p, const char *node, int32_t port)
{
    *GT_VEC_PUSH(p, 64) = (struct port_use){node, port};
}

static int used_cb(const char *key, void *val, void *arg)
{
    (void)key;
    const struct gt_api_task *t = gt_cobj_task(val);
    if (!gt_task_holds(t)) {
        return 0;
    }
    for (size_t i = 0; i < t->spec.ports.n; i++) {
        use_port(arg, t->spec.node_name, (int32_t)t->spec.ports.v[i].port);
    }
    return 0;
}

/* The ports of a task of template tmpl on node into e: one per
 * template.ports entry, then the "gantry" port; none if the range is
 * full. */
static void alloc_ports(struct plan_ctx *p, int32_t lo, int32_t hi, const char *node,
                        const struct gt_api_template *tmpl, struct gt_bind_plan_entry *e)
{
    size_t n = tmpl->ports.n + 1;
    int32_t *used = gt_xcalloc(p->n ? p->n : 1, sizeof(*used));
    size_t n_used = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (p->v[i].node && !strcmp(p->v[i].node, node)) {
            used[n_used++] = p->v[i].port;
        }
    }
    int32_t *got = gt_xcalloc(n, sizeof(*got));
    if (gt_jobenv_ports_alloc(lo, hi, used, n_used, n, got) == 0) {
        e->ports = json_array();
        for (size_t i = 0; i < n; i++) {
            const char *name = i + 1 < n ? tmpl->ports.v[i].name : "gantry";
            char dflt[32];
            snprintf(dflt, sizeof(dflt), "port-%zu", i);
            json_array_append_new(
                e->ports, json_pack("{s:s, s:i}", "name", name ? name : dflt, "port", got[i]));
            use_port(p, node, got[i]);
        }
        e->gantry_port = got[n - 1];
    }
    free(got);
    free(used);
}

static int32_t gantry_port(const struct gt_api_task *t)
{
    for (size_t i = 0; i < t->spec.ports.n; i++) {
        const char *name = t->spec.ports.v[i].name;
        if (name && !strcmp(name, "gantry")) {
            return (int32_t)t->spec.ports.v[i].port;
        }
    }
    return 0;
}

static const char *node_ip(const struct gt_ctl *c, const char *node)
{
    if (!node) {
        return NULL;
    }
    char *key = gt_xasprintf("/nodes/%s", node);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_NODE, key);
    free(key);
    return o ? gt_api_node_address(gt_cobj_node(o), "InternalIP") : NULL;
}

/* GANTRY_PORT_<NAME> (upper case, '-' as '_') for each port of the
 * template's ports as allocated in entry: how a server in the task (a
 * notebook's Jupyter) learns the port it was given. */
static void port_env(const struct gt_api_template *tmpl, struct gt_bind_plan_entry *entry)
{
    size_t i;
    json_t *p;
    json_array_foreach(entry->ports, i, p)
    {
        if (i >= tmpl->ports.n) {
            break; /* the rest is the "gantry" port */
        }
        const char *name = json_string_value(json_object_get(p, "name"));
        char var[96] = "GANTRY_PORT_", value[16];
        size_t k = strlen(var);
        for (; name && *name && k + 1 < sizeof(var); name++) {
            var[k++] = *name == '-' ? '_' : (char)toupper((unsigned char)*name);
        }
        var[k] = '\0';
        snprintf(value, sizeof(value), "%lld",
                 (long long)json_integer_value(json_object_get(p, "port")));
        if (!entry->env) {
            entry->env = json_array();
        }
        json_array_append_new(entry->env, json_pack("{s:s, s:s}", "name", var, "value", value));
    }
}

/* Fill entry (the plan of one bound task) with its env and hosts, from
 * its job's replicas as bound now or in this plan. */
static void plan_env(const struct gt_ctl *c, const struct gt_bind_plan *plan,
                     const struct gt_api_task *task, struct gt_bind_plan_entry *entry)
{
    const char *project = task->o.meta.project;
    const char *jname = task->spec.job;
    char *jkey = gt_xasprintf("/jobs/%s/%s", project, jname ? jname : "");
    const struct gt_cobj *jo = gt_ctl_get(c, GT_KIND_JOB, jkey);
    free(jkey);
    if (!jo) {
        return;
    }
    const struct gt_api_job *job = gt_cobj_job(jo);
    size_t n = 0, self = 0, cap = 0;
    for (size_t r = 0; r < job->spec.replica_specs.n; r++) {
        cap += (size_t)job->spec.replica_specs.v[r].replicas;
    }
    struct gt_jobenv_member *m = gt_xcalloc(cap ? cap : 1, sizeof(*m));
    for (size_t r = 0; r < job->spec.replica_specs.n; r++) {
        const char *type = job->spec.replica_specs.v[r].type;
        int64_t reps = job->spec.replica_specs.v[r].replicas;
        for (int64_t i = 0; i < reps && n < cap; i++, n++) {
            char *name = gt_job_task_name(jname, type, i);
            char *tkey = gt_xasprintf("/tasks/%s/%s", project, name);
            char *tid = gt_xasprintf("%s/%s", project, name);
            const struct gt_cobj *t = gt_ctl_get(c, GT_KIND_TASK, tkey);
            const struct gt_bind_plan_entry *mine = gt_strmap_get(&plan->by_task, tid);
            m[n].type = type;
            m[n].index = i;
            if (mine) {
                m[n].port = mine->gantry_port;
                m[n].ip = node_ip(c, mine->node);
            } else if (t && gt_task_holds(gt_cobj_task(t))) {
                m[n].port = gantry_port(gt_cobj_task(t));
                m[n].ip = node_ip(c, gt_cobj_task(t)->spec.node_name);
            }
            if (!strcmp(name, task->o.meta.name)) {
                self = n;
            }
            free(tid);
            free(tkey);
            free(name);
        }
    }
    const char *fw =
        json_string_value(json_object_get(job->o.meta.annotations, GT_ANNOTATION_FRAMEWORK));
    entry->env = fw && !strcmp(fw, GT_API_FRAMEWORK_MPI)
                     ? gt_jobenv_mpi_env(jname, project, job->o.meta.annotations, m, n, self)
                     : gt_jobenv_env(jname, project, fw, m, n, self);
    entry->hosts = gt_jobenv_hosts(jname, project, m, n);
    free(m);
    port_env(&task->spec.template, entry);
}

void gt_bind_plan_build(struct gt_ctl *c, const struct gt_sched_bind *binds, size_t n,
                        struct gt_bind_plan *plan)
{
    plan->v = gt_xcalloc(n ? n : 1, sizeof(*plan->v));
    plan->n = n;
    gt_strmap_init(&plan->by_task);
    int32_t lo = 30000, hi = 32767;
    const char *range = c->s->cfg->port_range;
    if (!n || (range && gt_jobenv_port_range_parse(range, &lo, &hi, NULL))) {
        return;
    }
    struct plan_ctx p = {0};
    gt_strmap_each(&c->holding, used_cb, &p);
    const struct gt_api_task **tasks = gt_xcalloc(n, sizeof(*tasks));
    for (size_t i = 0; i < n; i++) {
        struct gt_bind_plan_entry *e = &plan->v[i];
        e->task_id = binds[i].task_id;
        e->node = binds[i].node;
        char *key = gt_xasprintf("/tasks/%s", binds[i].task_id);
        const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_TASK, key);
        free(key);
        if (o) {
            alloc_ports(&p, lo, hi, binds[i].node, &gt_cobj_task(o)->spec.template, e);
        }
        if (e->ports) {
            tasks[i] = gt_cobj_task(o);
            gt_strmap_put(&plan->by_task, e->task_id, e);
        } else if (o) {
            gt_log_warn("no free port", "task=%s node=%s", binds[i].task_id, binds[i].node);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (tasks[i]) {
            plan_env(c, plan, tasks[i], &plan->v[i]);
            plan->v[i].fields = json_pack(
                "{s:s, s:s, s:s?}", "metadata.name", tasks[i]->o.meta.name, "metadata.namespace",
                tasks[i]->o.meta.project, "status.hostIP", node_ip(c, plan->v[i].node));
        }
    }
    free(tasks);
    GT_VEC_FREE(&p);
}

void gt_bind_plan_fini(struct gt_bind_plan *plan)
{
    for (size_t i = 0; i < plan->n; i++) {
        json_decref(plan->v[i].ports);
        json_decref(plan->v[i].env);
        json_decref(plan->v[i].hosts);
        json_decref(plan->v[i].fields);
    }
    free(plan->v);
    gt_strmap_fini(&plan->by_task, NULL);
}

void gt_bind_plan_apply(const struct gt_bind_plan_entry *e, json_t *task)
{
    if (!e->ports) {
        return;
    }
    json_t *spec = json_object_get(task, "spec");
    json_object_set(spec, "ports", e->ports);
    if (json_array_size(e->hosts)) {
        json_object_set(spec, "hosts", e->hosts);
    }
    gt_jobenv_field_refs(json_object_get(spec, "template"), e->fields);
    if (json_array_size(e->env)) {
        gt_jobenv_merge(json_object_get(spec, "template"), e->env);
    }
}
