/*
 * bindplan.c: what a cycle's binds give their tasks (ports, environment, hosts).
 */
#ifndef GT_SERVER_BINDPLAN_H
#define GT_SERVER_BINDPLAN_H

#include "server/server_int.h"

/* What one task of a cycle's binds gets in its binding write. The JSON
 * values are the plan's own (gt_bind_plan_fini drops them). */
struct gt_bind_plan_entry {
    const char *task_id; /* borrowed from the bind */
    const char *node;    /* borrowed from the bind */
    json_t *ports;       /* spec.ports [{name, port}]; NULL: none (no free port, no task) */
    int32_t gantry_port; /* the port named "gantry" among them */
    json_t *env;         /* entries for spec.template.env, or NULL */
    json_t *hosts;       /* spec.hosts, or NULL */
    json_t *fields;      /* what env valueFrom.fieldRef may name: {fieldPath: value} */
};
struct gt_bind_plan {
    struct gt_bind_plan_entry *v; /* v[i] is the plan of binds[i] */
    size_t n;
    struct gt_strmap by_task; /* task id -> its entry, for those with ports */
};
/* The plan of this cycle's binds into *plan (caller gt_bind_plan_fini()s).
 * Ports come from each node's --port-range, lowest free among the tasks
 * holding it and the other binds; env and hosts from the job's replicas as
 * bound now (a gang binds in one cycle, so the master's port is known). */
void gt_bind_plan_build(struct gt_ctl *c, const struct gt_sched_bind *binds, size_t n,
                        struct gt_bind_plan *plan);
void gt_bind_plan_fini(struct gt_bind_plan *plan);
/* Put entry e (borrowed) into task (the binding's copy): spec.ports,
 * spec.hosts, and the env appended to spec.template.env. */
void gt_bind_plan_apply(const struct gt_bind_plan_entry *e, json_t *task);

#endif
