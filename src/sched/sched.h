/*
 * sched: gantry's scheduler, a pure function over an in-memory cluster model.
 *
 * The caller owns a struct gt_sched_model and changes it only through the
 * update functions below (node added/changed/lost, department quota set,
 * project cap set, priority class set, job arrived/removed, task bound/state/exited), each of
 * which keeps the model's indexes (per-department and per-project usage, per-node free
 * cpu/memory/GPUs) current and either succeeds wholly or changes nothing.
 * gt_sched_cycle() then decides binds (task -> node + GPU indices and
 * milli-shares), preemptions and reservations, plus why each job that could
 * not start waits. Nothing here does I/O, reads a clock or touches globals:
 * the same model, time and policy always give the same decisions, so the
 * daemon, the simulator and the benchmark run exactly the same code.
 *
 * Objects are named by caller-chosen string ids (the store's names); the
 * model copies every string it is given. Quantities are int64 in canonical
 * units: milli-CPU, bytes, whole GPUs, milli-GPUs. GPU quota is one pool of
 * milli-GPUs: a whole-GPU task uses 1000 per GPU, a fractional one its
 * gpu_milli.
 *
 * Task states and the calls that move a task between them:
 *
 *   job_add          task_bind           set_state           set_state
 *   -------> PENDING ---------> BOUND -----------> RUNNING -----------> TERMINATING
 *             ^  ^                |         set_state(TERMINATING)           |
 *             |  |                +----------------------------------------->|
 *             |  +------ task_exit(requeue) from BOUND, RUNNING, TERMINATING |
 *             |                                                              |
 *             +-- set_state(PENDING) -- DONE <-- task_exit(!requeue), node_remove
 *
 *   from \ call   task_bind  set_state          task_exit        node_remove
 *   PENDING       BOUND      -                  -                -
 *   BOUND         -          RUNNING/TERMIN.    PENDING or DONE  DONE
 *   RUNNING       -          TERMINATING        PENDING or DONE  DONE
 *   TERMINATING   -          -                  PENDING or DONE  DONE
 *   DONE          -          PENDING (restart)  -                -
 *
 * BOUND, RUNNING and TERMINATING tasks hold their node's cpu, memory and
 * GPUs and their department's quota and project's cap; PENDING and DONE tasks hold nothing
 * (DESIGN.md: resources are held from bind until the agent reports exit).
 *
 * Cycle decisions ARE recorded in the model: every bind the cycle decides is
 * applied as if by gt_sched_task_bind, so usage reflects it at once and the
 * next cycle does not decide it again. If the caller cannot apply a bind
 * (its binding write fails), it reverts it with
 * gt_sched_task_exit(requeue=true). Preemptions and reservations are only
 * decisions: a victim holds its resources until its exit is reported.
 */
#ifndef GT_SCHED_H
#define GT_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* Upper bounds that keep every sum in int64 and every count in size_t. */
#define GT_SCHED_MAX_NODE_GPUS 1024 /* GPUs on one node */
#define GT_SCHED_MAX_JOB_TASKS 100000

/* An amount of each quota resource, canonical units. */
struct gt_sched_res {
    int64_t cpu_milli;
    int64_t memory_bytes;
    int64_t storage_bytes; /* quota only: tasks request none yet */
    int64_t gpu_milli;     /* whole GPUs count 1000 each */
};

/* ---- the model ---- */

struct gt_sched_model;

/* A new, empty model. Never NULL; free with gt_sched_model_free. */
struct gt_sched_model *gt_sched_model_new(void);
/* Free m and everything in it (NULL is fine). */
void gt_sched_model_free(struct gt_sched_model *m);

/* ---- nodes ---- */

struct gt_sched_gpu_spec {
    int32_t index; /* the node's device index, >= 0, unique on the node */
    int32_t group; /* NVLink/PCIe group id */
    int32_t numa;  /* NUMA node */
    bool healthy;
};

/* Node taints and task tolerations, with Kubernetes' semantics (core/v1
 * Taint and Toleration): a task goes only on a node whose NoSchedule and
 * NoExecute taints it all tolerates; PreferNoSchedule never keeps it off.
 * GT_SCHED_EFFECT_ANY is only a toleration's (no effect: every effect). */
enum gt_sched_effect {
    GT_SCHED_EFFECT_ANY,
    GT_SCHED_NO_SCHEDULE,
    GT_SCHED_PREFER_NO_SCHEDULE,
    GT_SCHED_NO_EXECUTE,
};
struct gt_sched_taint {
    const char *key;
    const char *value; /* NULL: "" */
    enum gt_sched_effect effect;
};
/* key NULL or "" with exists: every key; exists: any value, else value
 * must equal the taint's (NULL: ""). */
struct gt_sched_toleration {
    const char *key;
    const char *value;
    bool exists;
    enum gt_sched_effect effect;
};

/* Does one of tols[0..n) tolerate taint? (Kubernetes'
 * Toleration.ToleratesTaint.) */
bool gt_sched_tolerates(const struct gt_sched_toleration *tols, size_t n,
                        const struct gt_sched_taint *taint);
/* The effect named "NoSchedule", "PreferNoSchedule" or "NoExecute"; NULL or
 * anything else: GT_SCHED_EFFECT_ANY. */
enum gt_sched_effect gt_sched_effect_of(const char *name);

/* A node as its agent reports it; all pointers borrowed for the call.
 * labels: "key=value" strings, as nodeSelector entries match them. */
struct gt_sched_node_spec {
    const char *name;
    int64_t cpu_milli;    /* allocatable */
    int64_t memory_bytes; /* allocatable */
    bool ready;           /* condition Ready */
    bool unschedulable;   /* cordoned */
    const struct gt_sched_gpu_spec *gpus;
    size_t n_gpus; /* <= GT_SCHED_MAX_NODE_GPUS */
    const char *const *labels;
    size_t n_labels;
    const struct gt_sched_taint *taints;
    size_t n_taints;
};

/* Add a node. GT_EEXISTS if its name is taken, GT_EINVAL for a bad spec
 * (empty name, negative capacity, duplicate or negative GPU index). */
int gt_sched_node_add(struct gt_sched_model *m, const struct gt_sched_node_spec *spec,
                      struct gt_err *err);
/* Replace a node's capacity, readiness, cordon and GPUs (matched by index:
 * health, group and NUMA may change). Tasks on it keep their resources.
 * GT_ENOTFOUND for an unknown node; GT_EINVAL for a bad spec, for removing a
 * GPU that a task holds, or for capacity below what its tasks hold. */
int gt_sched_node_update(struct gt_sched_model *m, const struct gt_sched_node_spec *spec,
                         struct gt_err *err);
/* The node is lost: every task on it releases its resources and becomes
 * DONE (the caller records them as NodeLost and may requeue them with
 * gt_sched_task_set_state(PENDING)); then the node is removed.
 * GT_ENOTFOUND for an unknown node. */
int gt_sched_node_remove(struct gt_sched_model *m, const char *name, struct gt_err *err);

/* ---- departments and priority classes ---- */

/* Add a department or change its quota: guarantee (spec.quota) and limit
 * (spec.limit; the caller fills unnamed resources with the guarantee).
 * Usage is kept. GT_EINVAL for a negative amount or limit < guarantee; an
 * existing usage above a lowered limit is allowed (nothing more is admitted). */
int gt_sched_department_set(struct gt_sched_model *m, const char *name,
                            const struct gt_sched_res *guarantee, const struct gt_sched_res *limit,
                            struct gt_err *err);
/* Remove a department. GT_ENOTFOUND; GT_ECONFLICT while jobs belong to it. */
int gt_sched_department_remove(struct gt_sched_model *m, const char *name, struct gt_err *err);

/* ---- projects ---- */

/* A resource a project's hard cap does not name is not capped. */
#define GT_SCHED_NO_CAP INT64_MAX

/* Set or change a project's hard cap (spec.hard): the most its jobs' BOUND,
 * RUNNING and TERMINATING tasks, plus what a cycle admits for them, may use
 * of each resource (GT_SCHED_NO_CAP for one it does not name). Jobs name
 * their project in gt_sched_job_add; the model counts every project's use
 * whether or not it has a cap, so a cap set later counts what already runs.
 * Use above a lowered cap is allowed (nothing more is admitted). A cap only
 * holds jobs back: it never makes anything preemptable. GT_EINVAL for an
 * empty name or a negative amount. */
int gt_sched_project_set(struct gt_sched_model *m, const char *name,
                         const struct gt_sched_res *hard, struct gt_err *err);
/* Drop a project's hard cap: its jobs are admitted by their department
 * alone. GT_ENOTFOUND if it has no cap. */
int gt_sched_project_remove(struct gt_sched_model *m, const char *name, struct gt_err *err);
/* Fill the project's hard cap (GT_SCHED_NO_CAP throughout when it has none)
 * and current use (either may be NULL). GT_ENOTFOUND for a project that has
 * no cap and no jobs. */
int gt_sched_project_get(const struct gt_sched_model *m, const char *name,
                         struct gt_sched_res *hard, struct gt_sched_res *used);

enum gt_sched_preemption { GT_SCHED_PREEMPT_LOWER, GT_SCHED_PREEMPT_NEVER };

/* Add or change a priority class: value (larger wins), preemptionPolicy and
 * globalDefault (at most one class is the default; setting one clears it on
 * the others). Jobs copy value and policy when they arrive, as Kubernetes
 * resolves priority at admission, so a change affects later jobs only. */
int gt_sched_priority_class_set(struct gt_sched_model *m, const char *name, int32_t value,
                                enum gt_sched_preemption policy, bool global_default,
                                struct gt_err *err);

/* ---- jobs and tasks ---- */

/* What one task of a replica group asks for. A task asks for whole GPUs or
 * for a share of one GPU (1..1000 milli), never both. */
struct gt_sched_task_req {
    int64_t cpu_milli;
    int64_t memory_bytes;
    int64_t gpus;      /* whole GPUs */
    int64_t gpu_milli; /* share of one GPU, 0..1000 */
};

/* A topology level a job may ask to be packed at (spec.runPolicy.
 * schedulingPolicy.topology, or Kueue's podset-required-topology /
 * podset-preferred-topology annotations mapped to it):
 * - NODE: every task of the job on one node (the whole gang together);
 * - GPU_GROUP: each task's GPUs inside one NVLink/PCIe group;
 * - NUMA: each task's GPUs on one NUMA node.
 * As in Kueue's topology-aware scheduling, "required" means the job starts
 * only where the level holds it (it waits otherwise, and is Inadmissible
 * when no domain of that level could ever hold it), "preferred" that
 * placement tries the level first and falls back to the ordinary
 * placement. */
enum gt_sched_topology {
    GT_SCHED_TOPO_NONE,
    GT_SCHED_TOPO_NODE,
    GT_SCHED_TOPO_GPU_GROUP,
    GT_SCHED_TOPO_NUMA,
};

/* The level's API name ("node", "gpu-group", "numa"; "none"): static. */
const char *gt_sched_topology_name(enum gt_sched_topology level);

/* node_selector: "key=value" labels a node must all carry (nodeSelector);
 * tolerations: the taints its tasks tolerate. Copied by gt_sched_job_add. */
struct gt_sched_group_spec {
    const char *name; /* replica type, e.g. "worker" */
    int32_t replicas; /* >= 1 */
    struct gt_sched_task_req req;
    const char *const *node_selector;
    size_t n_node_selector;
    const struct gt_sched_toleration *tolerations;
    size_t n_tolerations;
};

/* A job as it arrives; all pointers borrowed for the call. */
struct gt_sched_job_spec {
    const char *id; /* unique, e.g. "project/name" */
    const char *department;
    const char *project;        /* NULL or "": none (no cap applies) */
    const char *priority_class; /* NULL: the global default class, else 0 */
    int64_t arrival_ms;
    int32_t min_available; /* gang size; 0 means every task */
    const struct gt_sched_group_spec *groups;
    size_t n_groups;
    int64_t attained_gpu_ms;         /* GPU-milliseconds of service so far */
    int64_t runtime_estimate_ms;     /* 0: unknown (the simulator's oracle) */
    int64_t active_deadline_ms;      /* activeDeadlineSeconds * 1000 from start; 0 none */
    enum gt_sched_topology topology; /* NONE: no constraint */
    bool topology_required;          /* required (else preferred) */
    /* A preempted run of the job is lost: it restarts from scratch (no
     * checkpoint). false: it resumes where it stopped. Policies with a
     * rank bound what they throw away (gt_sched_policy.scratch_loss_pct). */
    bool restarts_from_scratch;
};

/* A job arrived: its tasks are created PENDING with ids
 * "<job id>-<group name>-<index>" (index from 0 within the group), in group
 * order. GT_EEXISTS for a taken job or task id; GT_ENOTFOUND for an unknown
 * department or priority class; GT_EINVAL for a bad spec (negative request,
 * whole and fractional GPUs together, gpu_milli > 1000, replicas < 1,
 * min_available out of range, overflow). */
int gt_sched_job_add(struct gt_sched_model *m, const struct gt_sched_job_spec *spec,
                     struct gt_err *err);
/* Remove a job and its tasks. GT_ENOTFOUND; GT_ECONFLICT while any of its
 * tasks still holds resources (report their exits first). */
int gt_sched_job_remove(struct gt_sched_model *m, const char *id, struct gt_err *err);
/* Update a job's attained service (GPU-milliseconds), for policies that order
 * by it. GT_ENOTFOUND; GT_EINVAL if negative. */
int gt_sched_job_set_attained(struct gt_sched_model *m, const char *id, int64_t attained_gpu_ms,
                              struct gt_err *err);

enum gt_sched_task_state {
    GT_SCHED_TASK_PENDING,
    GT_SCHED_TASK_BOUND,
    GT_SCHED_TASK_RUNNING,
    GT_SCHED_TASK_TERMINATING,
    GT_SCHED_TASK_DONE,
};

/* One GPU of a binding: the node's device index and the milli-share taken
 * (1000 for a whole-GPU task). */
struct gt_sched_gpu_share {
    int32_t index;
    int32_t milli;
};

/* Bind a PENDING task to a node and GPUs (a restored binding at start-up,
 * or one the cycle made). gpus (borrowed) must match the request: a
 * whole-GPU task gives req.gpus distinct free GPUs at 1000 milli each; a
 * fractional task one GPU, not used whole, at exactly req.gpu_milli with room
 * left for it; a task without GPUs none. The node must have the cpu and
 * memory free. Readiness, cordon, GPU health, department limits and
 * project caps are NOT checked here: a restored binding is a fact; the cycle checks them itself.
 * bound_ms is when it was bound. GT_ENOTFOUND for an unknown task or node,
 * GT_ECONFLICT if the task is not PENDING, GT_EINVAL if it does not fit. */
int gt_sched_task_bind(struct gt_sched_model *m, const char *task_id, const char *node,
                       const struct gt_sched_gpu_share *gpus, size_t n_gpus, int64_t bound_ms,
                       struct gt_err *err);
/* Move a task along the table above without releasing anything: to RUNNING
 * (agent started it), TERMINATING (stop requested; it keeps its resources
 * until exit) or PENDING from DONE (restarted). GT_ENOTFOUND; GT_ECONFLICT
 * for a transition the table does not have. */
int gt_sched_task_set_state(struct gt_sched_model *m, const char *task_id,
                            enum gt_sched_task_state state, struct gt_err *err);
/* A BOUND, RUNNING or TERMINATING task exited (or its binding could not be
 * applied): release its node resources and quota, and make it PENDING again
 * when requeue (preempted, retried, bind reverted), else DONE.
 * GT_ENOTFOUND; GT_ECONFLICT if it holds nothing. */
int gt_sched_task_exit(struct gt_sched_model *m, const char *task_id, bool requeue,
                       struct gt_err *err);

/* ---- read-only views (for the caller's status and for tests) ---- */

struct gt_sched_node_info {
    int64_t cpu_milli_free;
    int64_t memory_bytes_free;
    size_t n_gpus;
    size_t n_gpus_free; /* healthy and wholly free */
    size_t n_tasks;     /* tasks holding resources here */
};
/* Fill *out for node name; GT_ENOTFOUND. */
int gt_sched_node_get(const struct gt_sched_model *m, const char *name,
                      struct gt_sched_node_info *out);

enum gt_sched_gpu_state {
    GT_SCHED_GPU_FREE,
    GT_SCHED_GPU_WHOLE,  /* one whole-GPU task holds it */
    GT_SCHED_GPU_SHARED, /* fractional tasks hold used_milli of it */
};
struct gt_sched_gpu_info {
    enum gt_sched_gpu_state state;
    int32_t used_milli; /* 1000 when WHOLE */
    int32_t group;
    int32_t numa;
    bool healthy;
};
/* Fill *out for GPU index of node; GT_ENOTFOUND for either. */
int gt_sched_gpu_get(const struct gt_sched_model *m, const char *node, int32_t index,
                     struct gt_sched_gpu_info *out);

/* Fill the department's guarantee, limit and current usage (any may be
 * NULL). GT_ENOTFOUND. */
int gt_sched_department_get(const struct gt_sched_model *m, const char *name,
                            struct gt_sched_res *guarantee, struct gt_sched_res *limit,
                            struct gt_sched_res *used);

struct gt_sched_task_info {
    enum gt_sched_task_state state;
    const char *job;                       /* borrowed: valid until the task's job is removed */
    const char *node;                      /* borrowed; NULL when it holds nothing */
    const struct gt_sched_gpu_share *gpus; /* borrowed; until it next changes */
    size_t n_gpus;
    int64_t bound_ms;
};
struct gt_sched_job_info {
    uint64_t placement_attempts; /* gang placements the cycle searched for it, ever */
    bool inadmissible;           /* its last verdict: cannot start at current capacity */
};
/* Fill *out for a job; GT_ENOTFOUND. */
int gt_sched_job_get(const struct gt_sched_model *m, const char *id, struct gt_sched_job_info *out);

/* Fill *out for a task; GT_ENOTFOUND. */
int gt_sched_task_get(const struct gt_sched_model *m, const char *task_id,
                      struct gt_sched_task_info *out);

/* Recompute every index from the tasks and compare: node cpu/memory/GPU use,
 * free-GPU counts, department and project usage; no GPU held whole and shared, none over
 * 1000 milli, no GPU given to two whole tasks. 0, or GT_EINTERNAL with err
 * naming the first broken invariant. O(model); for tests and debugging. */
int gt_sched_model_check(const struct gt_sched_model *m, struct gt_err *err);

/* ---- decisions ---- */

struct gt_sched_bind {
    char *task_id;
    char *node;
    struct gt_sched_gpu_share *gpus;
    size_t n_gpus;
};

/* Why a task is preempted, for counting (its reason says more). */
enum gt_sched_preempt_kind {
    GT_SCHED_PREEMPT_RECLAIM,  /* another department takes back its guarantee */
    GT_SCHED_PREEMPT_PRIORITY, /* a higher-priority job of its own department */
    GT_SCHED_PREEMPT_POLICY,   /* the policy prefers a job with less work left */
};
/* The kind's name in metrics ("Reclaim", "Priority", "Policy"; static). */
const char *gt_sched_preempt_kind_str(enum gt_sched_preempt_kind kind);

struct gt_sched_preempt {
    char *task_id;
    char *reason; /* human text, e.g. which job needs the room */
    enum gt_sched_preempt_kind kind;
};

/* A job holds these GPUs of one node until its victims exit (one entry per
 * node). */
struct gt_sched_reserve {
    char *job_id;
    char *node;
    int32_t *gpu_index;
    size_t n_gpus;
};

/* Why a job did not start this cycle: a short code for lists (squeue's
 * REASON) and a message for describe. */
enum gt_sched_wait_reason {
    GT_SCHED_WAIT_QUOTA,         /* its department's limit or project's cap does not allow it */
    GT_SCHED_WAIT_UNSCHEDULABLE, /* no set of nodes fits the gang now */
    /* it cannot start even with the cluster's and its department's (and
     * project's) current maximum capacity; the message begins with a
     * CamelCase code and ": " (verdict.c) */
    GT_SCHED_WAIT_INADMISSIBLE,
};
#define GT_SCHED_N_WAIT_REASONS 3

struct gt_sched_wait {
    char *job_id;
    enum gt_sched_wait_reason reason;
    char *message;
};

/* The output of a cycle. Caller's storage; every string and array in it is
 * owned by it and freed by reset/fini. */
struct gt_sched_decisions {
    struct gt_sched_bind *binds;
    size_t n_binds, cap_binds;
    struct gt_sched_preempt *preempts;
    size_t n_preempts, cap_preempts;
    struct gt_sched_reserve *reserves;
    size_t n_reserves, cap_reserves;
    struct gt_sched_wait *waits;
    size_t n_waits, cap_waits;
    /* Jobs that waited this cycle, by reason (indexed by enum
     * gt_sched_wait_reason), counting those whose unchanged wait was not
     * reported (gt_sched_cycle_opts.changed_waits_only). */
    size_t n_waiting[GT_SCHED_N_WAIT_REASONS];
};

void gt_sched_decisions_init(struct gt_sched_decisions *d);
/* Empty d, keeping its arrays' capacity. */
void gt_sched_decisions_reset(struct gt_sched_decisions *d);
void gt_sched_decisions_fini(struct gt_sched_decisions *d);

/* "Quota", "Unschedulable" or "Inadmissible": static string. */
const char *gt_sched_wait_reason_str(enum gt_sched_wait_reason reason);

/* ---- policies and the cycle ---- */

/* A scheduling policy: how pending jobs are ordered and how a gang is placed.
 * Opaque; policies are const tables inside src/sched. */
struct gt_sched_policy;

/* Look a policy up by name; NULL if unknown. Static data. Names: "gantry"
 * (the default: priority, aging, dominant-share fairness, backfill,
 * preemption, topology-aware placement), "fifo", "sjf" (head-of-line, no
 * backfill), "srtf" (preemptive), "tiresias" (preemptive discretized 2D least
 * attained service),
 * "firstfit", and "ORDER/PLACEMENT" with ORDER one of gantry, fifo, sjf,
 * srtf, tiresias and PLACEMENT one of gantry, bestfit, random, firstfit
 * (e.g. "fifo/bestfit"). */
const struct gt_sched_policy *gt_sched_policy_by_name(const char *name);
/* The policy's name; static string. */
const char *gt_sched_policy_name(const struct gt_sched_policy *policy);

/* Run one scheduling cycle at now_ms: reset out, then order pending jobs,
 * admit them against their department's limit and project's cap, place each as a gang (all
 * of its min_available tasks or none), and fill out with the binds made
 * (already applied to m, see the file comment), any preemptions and
 * reservations, and a wait reason for every job with pending tasks that did
 * not start. Deterministic. Returns 0 (int so that later policies may fail). */
int gt_sched_cycle(struct gt_sched_model *m, int64_t now_ms, const struct gt_sched_policy *policy,
                   struct gt_sched_decisions *out);

/* Options of gt_sched_cycle_ex. */
struct gt_sched_cycle_opts {
    /* Report a wait reason for at most this many jobs, the first in the
     * policy's order (SIZE_MAX: every waiting job, as gt_sched_cycle). With
     * a bound, once nothing more can start the cycle stops visiting jobs,
     * so a cycle over 100,000 pending jobs costs what it binds, not what
     * waits; the caller keeps the last reason it saw for the others. */
    size_t max_waits;
    /* Report a job's wait only when it differs (reason or message) from the
     * last one the model reported for it, in any cycle with this option
     * set; a job's first wait is always reported. out->n_waiting still
     * counts every waiting job. */
    bool changed_waits_only;
};

/* gt_sched_cycle with options (NULL: the defaults of gt_sched_cycle). */
int gt_sched_cycle_ex(struct gt_sched_model *m, int64_t now_ms,
                      const struct gt_sched_policy *policy, const struct gt_sched_cycle_opts *opts,
                      struct gt_sched_decisions *out);

/* Aging for the gantry order: a waiting job moves up one tier (ahead of
 * every younger-tiered job of its priority band, whatever the fairness) per
 * tier_ms waited; it never crosses a priority band and never changes who
 * may preempt whom. 0 turns aging off; a new model has the default. */
#define GT_SCHED_AGING_TIER_MS_DEFAULT (10 * 60 * 1000)
void gt_sched_model_set_aging(struct gt_sched_model *m, int64_t tier_ms);
/* Seed the random placement (kept in the model, so the same model history
 * and seed give the same placements). */
void gt_sched_model_set_seed(struct gt_sched_model *m, uint64_t seed);

#endif
