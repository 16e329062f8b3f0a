/*
 * sched internals: the model's structs, its string-keyed hash map, the
 * resource helpers the update functions and the cycle share, and the policy
 * ops table. Included only from src/sched.
 *
 * Ownership: the model owns every node, department, priority class and job;
 * a job owns its groups and tasks (one array); a task owns its GPU shares.
 * Maps and vectors hold borrowed pointers to those objects, keyed by the
 * objects' own id strings.
 */
#ifndef GT_SCHED_INT_H
#define GT_SCHED_INT_H

#include "sched/sched.h"

/* ---- string-keyed open-addressing hash map (linear probing, backward-shift
 * deletion, so no tombstones). Keys are borrowed from the values. ---- */

struct gt_sched_map_slot {
    const char *key; /* NULL: empty */
    uint64_t hash;
    void *val;
};

struct gt_sched_map {
    struct gt_sched_map_slot *slots;
    size_t cap; /* power of two, or 0 */
    size_t n;
};

void gt_sched_map_init(struct gt_sched_map *map);
void gt_sched_map_fini(struct gt_sched_map *map);
/* The value for key, or NULL. */
void *gt_sched_map_get(const struct gt_sched_map *map, const char *key);
/* Insert key (borrowed; must outlive its entry) -> val; key must be absent. */
void gt_sched_map_put(struct gt_sched_map *map, const char *key, void *val);
/* Remove key if present. */
void gt_sched_map_del(struct gt_sched_map *map, const char *key);

/* ---- the model ---- */

/* The resources of a struct gt_sched_res as an array, for loops over all
 * four: cpu_milli, memory_bytes, storage_bytes, gpu_milli. */
enum { GT_SCHED_N_RES = 4 };
void gt_sched_res_unpack(const struct gt_sched_res *r, int64_t v[GT_SCHED_N_RES]);

/* Resource r (an index of gt_sched_res_unpack) as users name it in
 * resources.limits: "cpu", "memory", "storage", "nvidia.com/gpu". */
const char *gt_sched_res_name(int r);

/* Value v of resource r as a Kubernetes quantity into buf (len >= 32):
 * milli-CPU 1500 -> "1500m", bytes -> "16Gi", milli-GPU 1250 -> "1.25".
 * Returns buf, for use in messages. */
const char *gt_sched_res_text(int r, int64_t v, char *buf, size_t len);

struct gt_sched_job;

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
    struct gt_sched_gpu *gpus; /* sorted by index */
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
    struct gt_sched_res pool_part;             /* what it adds to model->pool */
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
    struct gt_sched_res held;
};

struct gt_sched_dept {
    char *name;
    struct gt_sched_res guarantee, limit, used;
    __int128 pending[GT_SCHED_N_RES]; /* sum of its PENDING tasks' use (wide: no overflow) */
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
    struct gt_sched_res hard; /* GT_SCHED_NO_CAP where it sets none */
    bool capped;              /* set by gt_sched_project_set */
    struct gt_sched_res used; /* its holding tasks' group use */
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
    struct gt_sched_res use; /* what one bound task of the group counts against quota */
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
    size_t n_pending; /* tasks PENDING */
    size_t n_holding; /* tasks BOUND, RUNNING or TERMINATING */
    size_t vec_index; /* position in model->jobs */
    bool light;       /* some group asks for no whole GPU (cpu-only or fractional) */
    struct gt_sched_job *queue_prev, *queue_next; /* in its department's band */
    struct gt_sched_job **skip;                   /* [skip_levels - 1]: the band's upper levels */
    int32_t skip_levels;                          /* 0 until first queued, then 1.. (from the id) */
    bool queued;                                  /* n_pending > 0 */
    bool fresh;                                   /* in model->fresh */
    struct gt_sched_resv *resv;                   /* NULL: no reservation */
    uint64_t seen_cycle;                          /* last cycle that considered it */
    enum gt_sched_wait_reason wait_reason;        /* the last wait reported, if wait_message */
    char *wait_message;                           /* owned; NULL: no wait reported yet */
};

/* GPUs a job holds until the tasks occupying them exit (preemption victims
 * or, for the head job, the tasks it waits for). due_ms: when those tasks'
 * activeDeadlineSeconds end at the latest, INT64_MAX if any has none. */
struct gt_sched_resv {
    struct gt_sched_node **node; /* [n], one entry per GPU */
    int32_t *gpu_index;          /* [n] */
    size_t n;
    int64_t due_ms;
    bool preempted; /* made by preemption (kept), else by backfill (per cycle) */
};

/* ---- the workload seen (frag.c) ---- */

#define GT_SCHED_MAX_SHAPES 64

/* A kind of GPU task: gpus GPUs with at least milli room each (1000 for
 * whole GPUs) and cpu_milli on their node; weight: decayed count. */
struct gt_sched_shape {
    int64_t cpu_milli;
    int32_t gpus, milli;
    double weight;
};

/* The decayed histogram of the GPU task shapes of arriving jobs. */
struct gt_sched_workload {
    struct gt_sched_shape shape[GT_SCHED_MAX_SHAPES]; /* by milli, ascending */
    size_t n;
    double total; /* sum of the weights */
};

/* Count replicas more tasks asking req (cpu-only ones are not counted),
 * after aging the histogram by one arrival. */
void gt_sched_workload_note(struct gt_sched_workload *w, const struct gt_sched_task_req *req,
                            int32_t replicas);
/* The expected milli-GPU of a node with GPU rooms rooms[0..n) (milli a new
 * task could use of each GPU, ascending) and cpu_free milli-CPU free that a
 * task drawn from w could not use; 0 while w is empty. */
double gt_sched_frag(const struct gt_sched_workload *w, const int32_t *rooms, size_t n,
                     int64_t cpu_free);

struct gt_sched_model {
    struct gt_sched_map node_map, dept_map, project_map, pclass_map, job_map, task_map;
    struct gt_sched_node **nodes; /* sorted by name: placement scans in this order */
    size_t n_nodes, cap_nodes;
    struct gt_sched_job **jobs; /* unordered; the cycle sorts */
    size_t n_jobs, cap_jobs;
    struct gt_sched_dept **depts; /* sorted by name */
    size_t n_depts, cap_depts;
    struct gt_sched_buckets idx[GT_SCHED_N_IDX];
    struct gt_sched_res pool;   /* allocatable of schedulable nodes; GPUs healthy * 1000 */
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
};

/* ---- shared helpers (model.c) ---- */

/* Can node take a task asking cpu/memory? (ignores readiness and GPUs) */
bool gt_sched_node_fits(const struct gt_sched_node *node, const struct gt_sched_task_req *req);
/* The node's GPU with this index, or NULL. */
struct gt_sched_gpu *gt_sched_node_gpu(const struct gt_sched_node *node, int32_t index);
/* Would adding use keep dept within its limit in every resource? If not and
 * why is non-NULL, describe the first resource that does not fit. */
bool gt_sched_dept_admits(const struct gt_sched_dept *dept, const struct gt_sched_res *use,
                          struct gt_buf *why);
/* Would adding use keep project within its hard cap in every resource?
 * If not and why is non-NULL, describe the first resource that does not
 * fit. */
bool gt_sched_project_admits(const struct gt_sched_project *project, const struct gt_sched_res *use,
                             struct gt_buf *why);
/* The project name (NULL or "" for none), created uncapped if new, with
 * one more job counted; gt_sched_project_unref undoes it. */
struct gt_sched_project *gt_sched_project_ref(struct gt_sched_model *m, const char *name);
void gt_sched_project_unref(struct gt_sched_model *m, struct gt_sched_project *project);
/* Sum b into a with checked arithmetic; -ERANGE leaves a unchanged. */
int gt_sched_res_add(struct gt_sched_res *a, const struct gt_sched_res *b);
/* Move resources only (node, GPUs, department and project use, holding count), no state
 * change: hold copies gpus; unhold frees the task's shares. Preemption's
 * what-if simulation uses the pair and restores exactly. */
void gt_sched_task_hold(struct gt_sched_task *task, struct gt_sched_node *node,
                        const struct gt_sched_gpu_share *gpus, size_t n_gpus);
void gt_sched_task_unhold(struct gt_sched_task *task);
/* Bind a PENDING task; the caller has checked everything gt_sched_task_bind
 * checks. Never fails. */
void gt_sched_task_take(struct gt_sched_task *task, struct gt_sched_node *node,
                        const struct gt_sched_gpu_share *gpus, size_t n_gpus, int64_t bound_ms);
/* Release a holding task's resources; it becomes PENDING or DONE. */
void gt_sched_task_release(struct gt_sched_task *task, bool requeue);

/* ---- indexes (index.c) ---- */

/* Set each GPU's group_slot and allocate group_avail; once per GPU list. */
void gt_sched_node_groups_init(struct gt_sched_node *node);
/* Recount node's avail/block and move it to its buckets and pool share;
 * unlinks it if it is not schedulable (or is being removed: gone). */
void gt_sched_node_reindex(struct gt_sched_node *node, bool gone);
/* Is GPU g free for a new whole-GPU task of job (healthy, FREE, and not
 * reserved by another job)? */
bool gt_sched_gpu_avail(const struct gt_sched_gpu *g, const struct gt_sched_job *job);
/* The smallest non-empty bucket key >= k in b, or -1. */
int32_t gt_sched_idx_first(const struct gt_sched_buckets *b, size_t k);
/* The largest non-empty bucket key <= k in b, or -1. */
int32_t gt_sched_idx_last(const struct gt_sched_buckets *b, size_t k);

/* ---- pending queues (queue.c) ---- */

/* A task of job became PENDING (delta +1) or stopped being so (-1): keep
 * n_pending, the department's pending use and the queues current. */
void gt_sched_job_pending_delta(struct gt_sched_job *job, const struct gt_sched_task *task,
                                int delta);
/* The band of dept with this value, or NULL. */
struct gt_sched_band *gt_sched_dept_band(struct gt_sched_dept *dept, int32_t value);
/* A task started (+1) or stopped (-1) holding resources: keep its band's
 * holding count and use and the model's counts that bound preemption's
 * search. */
void gt_sched_task_holding_delta(const struct gt_sched_task *task, int delta);
/* Free the department's band array. */
void gt_sched_dept_bands_free(struct gt_sched_dept *dept);

/* ---- reservations (preempt.c) ---- */

/* Drop job's reservation, if any, freeing its GPUs for others. */
void gt_sched_resv_drop(struct gt_sched_job *job, struct gt_sched_model *m);

/* ---- decisions (decisions.c) ---- */

/* Append a bind for task (strings and shares are copied). */
void gt_sched_decisions_add_bind(struct gt_sched_decisions *d, const struct gt_sched_task *task);
/* Append a preemption of task; reason is taken. */
void gt_sched_decisions_add_preempt(struct gt_sched_decisions *d, const struct gt_sched_task *task,
                                    char *reason);
/* Append job's reservation, one entry per node (copied). */
void gt_sched_decisions_add_reserve(struct gt_sched_decisions *d, const struct gt_sched_job *job);
/* Append a wait reason; message is taken (freed by reset/fini). */
void gt_sched_decisions_add_wait(struct gt_sched_decisions *d, const struct gt_sched_job *job,
                                 enum gt_sched_wait_reason reason, char *message);

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
    bool by_remaining; /* preemption also takes equal-priority jobs of the department whose
                          remaining time is longer, longest first (srtf) */
    bool reserve;      /* the head job that cannot start reserves GPUs (backfill) */
};

gt_sched_place_fn gt_sched_place_gantry, gt_sched_place_bestfit, gt_sched_place_random,
    gt_sched_place_firstfit;

/* Does reservation r lend its GPUs to job at now_ms (DESIGN.md backfill:
 * job's activeDeadlineSeconds ends by r's due time)? */
bool gt_sched_resv_lends(const struct gt_sched_resv *r, const struct gt_sched_job *job,
                         int64_t now_ms);

/* The admission rule (cycle.c's file comment): may dept take add more, as
 * if its tasks holding freed (NULL: nothing) had exited? If not and why is
 * non-NULL, describe the first resource that does not fit. */
bool gt_sched_admit(const struct gt_sched_model *m, const struct gt_sched_dept *dept,
                    const struct gt_sched_res *add, const struct gt_sched_res *freed,
                    struct gt_buf *why);

/* What gt_sched_reserve_for looks for. */
enum gt_sched_resv_mode {
    GT_SCHED_RESV_WAIT,    /* tasks to wait for (the head job's backfill reservation) */
    GT_SCHED_RESV_PREEMPT, /* victims that free the nodes the gang needs */
    GT_SCHED_RESV_QUOTA,   /* first lower-priority jobs of its own department whose exit
                              lets the gang be admitted, then as PREEMPT */
};

/* Find victims or tasks to wait for (mode) whose removal lets
 * tasks[0..need) of job fit, and if there are any, reserve the GPUs job
 * would take and, when preempting, emit the victims' preemptions. true if
 * a reservation was made; *n_victims (may be NULL) gets how many jobs it
 * preempts. Leaves the model's holdings as they were. */
bool gt_sched_reserve_for(struct gt_sched_model *m, struct gt_sched_job *job,
                          struct gt_sched_task **tasks, size_t need, enum gt_sched_resv_mode mode,
                          const struct gt_sched_policy *policy, int64_t now_ms,
                          struct gt_sched_decisions *out, size_t *n_victims);

/* Could job's department admit gang (job's first tasks) if every job of it
 * that job may preempt had exited? A cheap bound from the bands, checked
 * before a GT_SCHED_RESV_QUOTA search. */
bool gt_sched_quota_may_free(const struct gt_sched_model *m, const struct gt_sched_job *job,
                             const struct gt_sched_res *gang, bool by_remaining);

/* Is a reserved GPU of job's reservation still held by a task? */
bool gt_sched_resv_waiting(const struct gt_sched_job *job);

/* A job's oracle remaining time in ms: its runtime estimate less the wall
 * time served (attained GPU-ms over its GPUs); INT64_MAX without an
 * estimate. */
int64_t gt_sched_job_remaining_ms(const struct gt_sched_job *j);

/* Each policy is a const table; gt_sched_policy_by_name (policy.c) lists
 * them. */
const struct gt_sched_policy *gt_sched_policy_firstfit(void);

#endif
