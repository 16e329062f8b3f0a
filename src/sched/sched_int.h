/*
 * sched internals: the model's structs and the policy ops table, shared by
 * every file of src/sched (the functions are declared in the header of the
 * file that defines them: quota.h, index.h, job.h, ...). Included only from
 * src/sched.
 *
 * Ownership: the model owns every node, department, priority class and job;
 * a job owns its groups and tasks (one array); a task owns its GPU shares.
 * Maps and vectors hold borrowed pointers to those objects, keyed by the
 * objects' own id strings.
 */
#ifndef GT_SCHED_INT_H
#define GT_SCHED_INT_H

#include "sched/frag.h"
#include "sched/map.h"
#include "sched/match.h"
#include "sched/sched.h"

/* ---- the model ---- */

/* Amounts of resources are struct gt_resvec (common/resource.h), indexed by
 * enum gt_res: quota.c's helpers add them, compare them and name them. */

struct gt_sched_job;

/* The most one schedulable (Ready, uncordoned) node offers, over the
 * cluster (verdict.c): what no task or required-topology gang may exceed. */
struct gt_sched_caps {
    size_t n_nodes;    /* schedulable nodes */
    int64_t cpu_milli; /* largest allocatable cpu */
    int64_t memory_bytes;
    int64_t node_gpus;  /* most healthy GPUs on one node */
    int64_t group_gpus; /* most healthy GPUs in one NVLink/PCIe group */
    int64_t numa_gpus;  /* most healthy GPUs on one NUMA node */
};

struct gt_sched_gpu {
    int32_t index, group, numa;
    int32_t group_slot; /* dense 0..node->n_groups-1 for group */
    bool healthy;
    enum gt_sched_gpu_state state;
    int32_t used_milli;               /* 1000 when WHOLE, sum of shares when SHARED */
    struct gt_sched_job *reserved_by; /* NULL, or the job holding a reservation on it */
};

struct gt_sched_task;
struct gt_sched_node;

/* ---- node indexes (index.c): schedulable nodes (Ready, not cordoned) in
 * buckets keyed by a count, with a bitmap of non-empty buckets, so placement
 * finds "the smallest key >= k" without scanning the cluster. A node's key
 * is recomputed by gt_sched_node_reindex whenever its GPUs, health,
 * readiness or reservations change. ---- */

enum { GT_SCHED_IDX_AVAIL, GT_SCHED_IDX_BLOCK, GT_SCHED_N_IDX };
#define GT_SCHED_N_BUCKETS (GT_SCHED_MAX_NODE_GPUS + 1)

struct gt_sched_link {
    struct gt_sched_node *prev, *next;
    int32_t key; /* -1: not linked */
};

struct gt_sched_buckets {
    struct gt_sched_node *head[GT_SCHED_N_BUCKETS], *tail[GT_SCHED_N_BUCKETS];
    size_t count[GT_SCHED_N_BUCKETS];
    uint64_t nonempty[(GT_SCHED_N_BUCKETS + 63) / 64];
};

struct gt_sched_node {
    char *name;
    int64_t cpu_milli_alloc, memory_bytes_alloc;
    int64_t cpu_milli_used, memory_bytes_used;
    bool ready, unschedulable;
    struct gt_sched_node_marks marks; /* labels and taints (match.c) */
    struct gt_sched_gpu *gpus;        /* sorted by index */
    size_t n_gpus;
    size_t n_gpus_free;              /* healthy and FREE: kept by node_recount */
    struct gt_sched_task *task_head; /* tasks holding resources here */
    size_t n_tasks;
    /* Indexes (index.c): avail = healthy, FREE and unreserved GPUs; per
     * topology group the same count; block = the largest of those. */
    size_t n_avail, block;
    int32_t n_groups;
    int32_t *group_avail;                      /* [n_groups] */
    struct gt_sched_link link[GT_SCHED_N_IDX]; /* in model->idx[i] */
    struct gt_resvec pool_part;                /* what it adds to model->pool */
    struct gt_sched_model *model;
};

/* Levels of a band's skip list (queue.c): enough for 4^12 queued jobs per
 * band at the expected cost of O(log n) compares per insert. */
#define GT_SCHED_SKIP_LEVELS 12

/* One priority value's pending jobs of a department, in arrival order
 * (ties by id): aging never reorders inside it, since older is never
 * younger. The list is also a skip list (skip_head: levels 1..), so a job
 * arriving out of order, or among many with the same arrival, is placed in
 * O(log n). n_holding: tasks of its jobs holding resources, and held:
 * their group use; both bound preemption's search (preempt.c). */
struct gt_sched_band {
    int32_t value;
    struct gt_sched_job *head, *tail;
    struct gt_sched_job *skip_head[GT_SCHED_SKIP_LEVELS - 1];
    size_t n_holding;
    struct gt_resvec held;
};

/* Finished jobs' service by gang size (history.c): per size class (whole
 * GPUs 1, 2, 3-4, ..., 65+), a histogram of total service in GPU-seconds
 * with power-of-two buckets. */
#define GT_SCHED_HIST_CLASSES 8
#define GT_SCHED_HIST_BUCKETS 40
struct gt_sched_history {
    struct {
        double count, sum_ms;
    } bucket[GT_SCHED_HIST_CLASSES][GT_SCHED_HIST_BUCKETS];
    double total[GT_SCHED_HIST_CLASSES];
};

struct gt_sched_dept {
    char *name;
    struct gt_sched_history history;
    struct gt_resvec guarantee, limit, used;
    __int128 pending[GT_RES_COUNT]; /* sum of its PENDING tasks' use (wide: no overflow) */
    size_t n_jobs;
    size_t n_evicting;           /* its holding tasks chosen as preemption victims */
    struct gt_sched_band *bands; /* by value, descending; empty bands are kept */
    size_t n_bands, cap_bands;
    size_t vec_index; /* position in model->depts */
    struct gt_sched_model *model;
};

/* A project: its hard cap and what its jobs hold. It lives while it has a
 * cap or jobs (n_jobs). */
struct gt_sched_project {
    char *name;
    struct gt_resvec hard; /* GT_SCHED_NO_CAP where it sets none */
    bool capped;           /* set by gt_sched_project_set */
    struct gt_resvec used; /* its holding tasks' group use */
    size_t n_jobs;
};

struct gt_sched_pclass {
    char *name;
    int32_t value;
    enum gt_sched_preemption policy;
    bool global_default;
};

struct gt_sched_group {
    char *name;
    int32_t replicas;
    struct gt_sched_task_req req;
    struct gt_resvec use;        /* what one bound task of the group counts against quota */
    struct gt_sched_where where; /* nodeSelector and tolerations (match.c) */
};

struct gt_sched_task {
    char *id;
    struct gt_sched_job *job;
    const struct gt_sched_group *group;
    enum gt_sched_task_state state;
    struct gt_sched_node *node; /* non-NULL exactly while holding resources */
    struct gt_sched_task *node_prev, *node_next;
    struct gt_sched_gpu_share *gpus;
    size_t n_gpus;
    int64_t bound_ms;
    bool evicting; /* chosen as a preemption victim; holds until it exits */
};

struct gt_sched_job {
    char *id;
    struct gt_sched_dept *dept;
    struct gt_sched_project *project; /* NULL: none */
    int32_t priority;
    enum gt_sched_preemption preemption;
    int64_t arrival_ms, attained_gpu_ms, runtime_estimate_ms, active_deadline_ms;
    size_t min_available; /* resolved: 1..n_tasks */
    struct gt_sched_group *groups;
    size_t n_groups;
    struct gt_sched_task *tasks; /* in group order */
    size_t n_tasks;
    size_t n_pending;           /* tasks PENDING */
    size_t n_holding;           /* tasks BOUND, RUNNING or TERMINATING */
    size_t vec_index;           /* position in model->jobs */
    bool light;                 /* some group asks for no whole GPU (cpu-only or fractional) */
    bool topology_required;     /* topology.c: its level is required (else preferred) */
    bool restarts_from_scratch; /* a preempted run is lost (no checkpoint) */
    int64_t run_base_gpu_ms;    /* attained_gpu_ms when its current run began (a task taken) */
    int64_t backfill_due_ms;    /* its first backfill reservation's due time since it last
                                   started; 0: none (resv.c) */
    struct gt_sched_job *queue_prev, *queue_next; /* in its department's band */
    struct gt_sched_job **skip;                   /* [skip_levels - 1]: the band's upper levels */
    int32_t skip_levels;                          /* 0 until first queued, then 1.. (from the id) */
    bool queued;                                  /* n_pending > 0 */
    bool fresh;                                   /* in model->fresh */
    struct gt_sched_resv *resv;                   /* NULL: no reservation */
    uint64_t seen_cycle;                          /* last cycle that considered it */
    enum gt_sched_wait_reason wait_reason;        /* the last wait reported, if wait_message */
    enum gt_sched_topology topology;              /* topology.c; NONE: unconstrained */
    char *wait_message;                           /* owned; NULL: no wait reported yet */
    /* verdict.c (fields placed to add 16 bytes per job) */
    char *verdict;               /* owned; NULL: admissible, else "Code: message" */
    uint32_t verdict_epoch;      /* model->capacity_epoch the verdict is for; 0: none yet */
    uint32_t placement_attempts; /* gang placements searched for it */
};

/* GPUs a job holds until the tasks occupying them exit (preemption victims
 * or, for the head job, the tasks it waits for). due_ms: when those tasks
 * are expected to end at the latest (resv.c: activeDeadlineSeconds, or
 * with learned the history's estimate), INT64_MAX if any is unknown. */
struct gt_sched_resv {
    struct gt_sched_node **node; /* [n], one entry per GPU */
    int32_t *gpu_index;          /* [n] */
    size_t n;
    int64_t due_ms;
    bool preempted; /* made by preemption (kept), else by backfill (per cycle) */
    bool learned;   /* due_ms and lending use learned estimates (backfill) */
};

struct gt_sched_model {
    struct gt_sched_map node_map, dept_map, project_map, pclass_map, job_map, task_map;
    struct gt_sched_node **nodes; /* sorted by name: placement scans in this order */
    size_t n_nodes, cap_nodes;
    struct gt_sched_job **jobs; /* unordered; the cycle sorts */
    size_t n_jobs, cap_jobs;
    struct gt_sched_dept **depts; /* sorted by name */
    size_t n_depts, cap_depts;
    struct gt_sched_buckets idx[GT_SCHED_N_IDX];
    struct gt_resvec pool;      /* allocatable of schedulable nodes; GPUs healthy * 1000 */
    size_t n_queued;            /* jobs in the queue */
    size_t n_light_queued;      /* queued jobs with light set */
    size_t n_preemptor_queued;  /* queued jobs whose policy lets them preempt */
    size_t n_deadline_holding;  /* holding tasks whose job has activeDeadlineSeconds */
    struct gt_sched_job **resv; /* jobs holding a reservation, in creation order */
    size_t n_resv, cap_resv;
    int64_t aging_tier_ms; /* 0: no aging */
    uint64_t n_cycles;
    uint64_t rng; /* the random placement's state */
    struct gt_sched_workload workload;
    struct gt_sched_history history; /* every department's, for cold starts */
    size_t n_served;                 /* jobs with attained service > 0 */
    /* the cycle's scratch, kept between cycles (cycle.c) */
    struct gt_sched_pick *pick;
    struct gt_sched_task **pending;
    size_t cap_pending;
    /* jobs queued since the last cycle; dead_told: that cycle found no
     * schedulable node and told every queued job so, so while none comes
     * the next cycle only tells these (cycle.c) */
    struct gt_sched_job **fresh;
    size_t n_fresh, cap_fresh;
    bool dead_told;
    /* the last cycle tracked waits (cycle.c tell_rest): fresh also holds
     * every queued job whose last wait was not "no free GPUs", as of
     * capacity_epoch told_epoch (a verdict may change with capacity) */
    bool told_valid;
    uint32_t told_epoch;
    /* verdict.c: bumped by every change of nodes, departments or project
     * caps, so a job's cached verdict is recomputed only after one; caps:
     * the largest schedulable node's capacity, per level, as of caps_epoch */
    uint32_t capacity_epoch; /* never 0 once anything is in the model */
    uint32_t caps_epoch;
    struct gt_sched_caps caps;
};

/* Capacity changed (a node, a department's quota, a project's cap): every
 * cached verdict is stale (verdict.c). */
static inline void gt_sched_capacity_changed(struct gt_sched_model *m)
{
    m->capacity_epoch = m->capacity_epoch == UINT32_MAX ? 1 : m->capacity_epoch + 1;
}

/* ---- policies ---- */

/* Where one task would go: a node and its GPU shares. */
struct gt_sched_pick {
    struct gt_sched_node *node;
    struct gt_sched_gpu_share shares[GT_SCHED_MAX_NODE_GPUS];
    size_t n;
};

/* A placement: pick a node and GPUs for task without changing the model
 * (the random one advances the model's generator). false: nowhere fits. */
typedef bool gt_sched_place_fn(struct gt_sched_model *m, const struct gt_sched_task *task,
                               int64_t now_ms, struct gt_sched_pick *out);

/*
 * A policy = an order x a placement. The cycle (cycle.c) does what every
 * policy shares: admission, gang all-or-nothing, preemption, reservations.
 * order: <0 if a goes before b, >0 after, 0 if it does not care (ties go by
 * arrival, then id); NULL selects the gantry order, which merges the
 * departments' pending queues (priority, aging, dominant share, arrival).
 */
struct gt_sched_policy {
    const char *name;
    int (*order)(const struct gt_sched_job *a, const struct gt_sched_job *b, int64_t now_ms);
    gt_sched_place_fn *place;
    bool head_of_line; /* stop at the first job that does not start (no backfill) */
    bool preempt;      /* make room by preemption */
    /* A job's rank for preemption inside a priority (NULL: none): a job
     * that does not fit also preempts equal-priority jobs of its department
     * of a strictly greater rank, greatest first (srtf: the remaining time
     * in ms; tiresias: the attained-service queue). rank_what names it in
     * preemption reasons. */
    int64_t (*rank)(const struct gt_sched_job *j);
    const char *rank_what;
    /* By rank, a job that restarts from scratch is a victim only while its
     * current run's service (GPU-ms) is below scratch_loss_pct % of the
     * service that run is still expected to need (history.c: E[S - r |
     * S > r] for a run r), which bounds what preemption throws away of it
     * by what it would still hold the GPUs for; with no history it is no
     * victim. 0: no bound. Lower priority and reclaimed borrowed capacity
     * are preempted regardless. */
    int64_t scratch_loss_pct;
    bool reserve; /* the head job that cannot start reserves GPUs (backfill) */
};

#endif
