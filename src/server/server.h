/*
 * server: gantryd, the control plane's API server.
 *
 * gt_server_run() owns everything a running daemon holds (one struct
 * gt_server, passed explicitly; no mutable globals). The pure parts it is
 * built from are declared here too so unit tests can reach them without a
 * network: the configuration table, the static token file, authorization
 * decisions over the project/department index, path routing, Status error
 * bodies, event folding arithmetic and the metrics registry.
 */
#ifndef GT_SERVER_H
#define GT_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "api/api.h"
#include "common/common.h"
#include "common/config.h"

/* ---- configuration (config.c): one declarative table drives flags,
 * GANTRYD_<NAME> environment variables, --help and validation ---- */

struct gt_server_config {
    char *data_dir;              /* --data-dir DIR (required) */
    char *store;                 /* --store sqlite | etcd://HOST:PORT,... */
    char *etcd_cafile;           /* --etcd-cafile FILE: https to etcd; NULL: http */
    int64_t leader_lease_ttl_s;  /* --leader-lease-ttl SECONDS (etcd) */
    int64_t leader_renew_ms;     /* --leader-renew-interval MS (etcd) */
    char *replica_id;            /* --replica-id NAME (etcd); NULL: generated */
    char *listen;                /* --listen ADDR:PORT (plain HTTP) */
    char *token_file;            /* --token-file FILE (required) */
    int64_t watch_history;       /* --watch-history N: events kept for watch */
    int64_t max_body_bytes;      /* --max-body-bytes N: larger bodies get 413 */
    int64_t log_level;           /* --log-level debug|info|warn|error (enum gt_log_level) */
    bool enable_fault_injection; /* --enable-fault-injection: POST /debug/fault */
    char *fault_points;          /* --fault-points SPEC (common/faultpoint.h); NULL: none armed */
    char *scheduler_policy;     /* --scheduler-policy NAME (sched.h); NULL: gantry, else firstfit */
    int64_t event_ttl_s;        /* --event-ttl SECONDS: Events kept after lastTimestamp */
    int64_t node_grace_s;       /* --node-grace SECONDS without heartbeat: node lost */
    char *port_range;           /* --port-range LOW-HIGH: ports handed to tasks per node */
    int64_t restart_backoff_ms; /* --restart-backoff-ms: first restart back-off (doubles) */
    int64_t terminated_task_gc; /* --terminated-task-gc-threshold N (0: none; jobctl.c) */
    int64_t notebook_idle_timeout_s;     /* --notebook-idle-timeout SECONDS: cluster default */
    int64_t notebook_check_ms;           /* --notebook-check-interval-ms: culler period */
    int64_t notebook_cpu_idle_milli;     /* --notebook-cpu-idle-milli: CPU use that is activity */
    struct gt_config_list storage_roots; /* --storage-root DIR...: where hostPath volumes may be */
    struct gt_config_list images;        /* --image NAME=REF...: images offered to clients */
    struct gt_config_list replica_urls;  /* --replica-url URL...: replicas' origins (CORS, UI) */
    struct gt_config_list storage_classes; /* --storage-class NAME=DIR...: where Volumes live */
    char *pip_index_url;  /* --pip-index-url URL: tasks' requirements index; NULL: pip's */
    char *pip_find_links; /* --pip-find-links DIR: a directory of wheels; NULL: none */
    char *ui_dir;         /* --ui-dir DIR: the built dashboard; NULL: web/ beside gantryd */
    char *registry;       /* --registry HOST:PORT: the cluster registry; NULL: none */
    char *registry_key;   /* --registry-key FILE: signs registry tokens; NULL: none */
    char *gateway_listen; /* --gateway-listen ADDR:PORT: the serving gateway; NULL: none */
    char *gateway_domain; /* --gateway-domain DNS: suffix of the gateway's Host routes */
    char *haproxy;        /* --haproxy PATH: the HAProxy binary the gateway runs */
    char *secret_key;     /* --secret-key FILE: keys derived secrets; NULL: DATA_DIR/secret.key */

    char *model_store; /* --model-store DIR: the ModelVersions' store; NULL: none */
};

/* Fill cfg from defaults, then envp ("NAME=value" strings, NULL-terminated,
 * may be NULL), then argv (flags win). *help is set when --help was given
 * (cfg is then only partly filled). Returns 0, or -GT_EINVAL with err naming
 * the flag and the reason (also for a --storage-root that is not an
 * absolute path, an --image that is not NAME=REF with REF an OCI image
 * reference, or a --store that is neither sqlite nor etcd://...). Free
 * with gt_server_config_fini. */
int gt_server_config_parse(struct gt_server_config *cfg, int argc, char *const *argv,
                           char *const *envp, bool *help, struct gt_err *err);
/* Free the strings cfg owns. */
void gt_server_config_fini(struct gt_server_config *cfg);
/* Print the usage text (flags, environment names, defaults, bounds) to f. */
void gt_server_config_usage(FILE *f);

/* ---- authentication (tokens.c): kube-apiserver's static token file ---- */

#define GT_GROUP_ADMINS "gantry:admins"
#define GT_GROUP_NODES "gantry:nodes"

/* An authenticated user. Owned by the token table. */
struct gt_server_user {
    char *token;
    char *name;
    int64_t uid; /* numeric: tasks run as this uid */
    char **groups;
    size_t n_groups, cap_groups;
    bool admin;               /* member of gantry:admins */
    bool node;                /* member of gantry:nodes */
    unsigned char digest[32]; /* SHA-256 of token: what a lookup compares */
};

struct gt_server_tokens;
/* Parse token file text: lines `token,user,uid[,"group1,group2"]`; blank
 * lines and lines starting with '#' are skipped. A malformed line fails the
 * whole file: -GT_EINVAL with err "line N: reason". *out is freed with
 * gt_server_tokens_free. */
int gt_server_tokens_parse(const char *text, size_t len, struct gt_server_tokens **out,
                           struct gt_err *err);
/* Read and parse the file at path, at most 64 MiB (errors as above, or
 * -errno, or GT_ETOOLARGE past 64 MiB). */
int gt_server_tokens_load(const char *path, struct gt_server_tokens **out, struct gt_err *err);
/* The user of a token (borrowed), or NULL if unknown. Looked up by the
 * token's SHA-256 and confirmed with a constant-time compare, so the time
 * taken tells nothing about how much of a guess was right. */
const struct gt_server_user *gt_server_tokens_find(const struct gt_server_tokens *t,
                                                   const char *token);
/* The user of the first gantry:nodes line (borrowed), or NULL: gantryd's
 * credentials towards node agents. */
const struct gt_server_user *gt_server_tokens_first_node(const struct gt_server_tokens *t);
size_t gt_server_tokens_count(const struct gt_server_tokens *t);
/* Make next the current set (*cur) and give it the old one, which stays
 * allocated until next is freed: requests, watches and sessions still
 * borrow its users (a re-read token file, SIGHUP). */
void gt_server_tokens_replace(struct gt_server_tokens **cur, struct gt_server_tokens *next);
/* Call fn(user, arg) for every user of the table (borrowed), in no order. */
void gt_server_tokens_each(const struct gt_server_tokens *t,
                           void (*fn)(const struct gt_server_user *u, void *arg), void *arg);
/* Is hex (64 lower-case hex digits) the HMAC-SHA256 of msg under the token
 * of some gantry:nodes user? An MPI launcher's exec credential
 * (GT_MPI_TOKEN_PREFIX), which its node's agent derives (taskspec.c). */
bool gt_server_tokens_node_mac_ok(const struct gt_server_tokens *t, const char *msg,
                                  const char *hex);
void gt_server_tokens_free(struct gt_server_tokens *t);

/* ---- authorization (access.c) ----
 * An in-memory index of projects (department, members) and departments
 * (admins), kept current by the server from a store watch, and the
 * decisions docs/api.md "Authentication and access" describes. */

enum gt_server_verb { GT_VERB_READ, GT_VERB_CREATE, GT_VERB_UPDATE, GT_VERB_DELETE };

struct gt_server_access;
struct gt_server_access *gt_server_access_new(void);
void gt_server_access_free(struct gt_server_access *a);
/* Index a Project or Department (typed, borrowed; other kinds are
 * ignored), replacing any earlier version of it. */
void gt_server_access_put(struct gt_server_access *a, const struct gt_api_object *obj);
/* Forget a Project or Department by name. */
void gt_server_access_delete(struct gt_server_access *a, enum gt_kind kind, const char *name);
/* Department of an indexed project (borrowed), or NULL. */
const char *gt_server_access_project_department(const struct gt_server_access *a,
                                                const char *project);

/* What a request wants to do. */
struct gt_server_authz {
    enum gt_server_verb verb;
    enum gt_kind kind;
    const char *sub;        /* "status", "binding", "log" or NULL */
    const char *name;       /* object name (cluster-scoped kinds), may be NULL for lists */
    const char *project;    /* project-scoped kinds: the project; Project: its name;
                               Event: involvedObject.project (NULL: a cluster object) */
    const char *department; /* Project create/update: spec.department of the body */
    const char *bound_node; /* Task /status: spec.nodeName of the stored task ("": unbound);
                               NULL: not read yet (decided again once it is) */
};

/* 0 if user may do what req says, else -GT_EFORBIDDEN. A node user bound
 * to one node (gt_server_user_node) writes only its own Node (and its
 * subresources) and the /status of tasks bound to it, as Kubernetes'
 * NodeRestriction admission plugin allows a kubelet. */
int gt_server_authorize(const struct gt_server_access *a, const struct gt_server_user *user,
                        const struct gt_server_authz *req);
/* The node user is bound to: NAME for a gantry:nodes user named
 * system:node:NAME (borrowed from user), else NULL (another gantry:nodes
 * user is an agent credential shared by several nodes, such as hollow
 * nodes', and is not bound to one). */
const char *gt_server_user_node(const struct gt_server_user *user);
/* The rule a 403 to a bound node user names. */
#define GT_NODE_RESTRICTION_RULE                                                                   \
    "NodeRestriction: a node writes only its own Node and the status of tasks bound to it"
/* May user read objects in project? (lists across projects filter with it) */
bool gt_server_can_read_project(const struct gt_server_access *a, const struct gt_server_user *user,
                                const char *project);

/* ---- routing (route.c) ---- */

enum gt_route_type {
    GT_ROUTE_HEALTHZ,
    GT_ROUTE_READYZ,
    GT_ROUTE_METRICS,
    GT_ROUTE_FAULT,          /* /debug/fault */
    GT_ROUTE_WHOAMI,         /* the caller's own identity */
    GT_ROUTE_CLUSTERINFO,    /* storage roots and offered images */
    GT_ROUTE_REGISTRY_TOKEN, /* the cluster registry's token service (registry.c) */
    GT_ROUTE_USAGE,          /* the ledger's usage report (ledger.c) */
    GT_ROUTE_USAGE_RECORDS,  /* the ledger's records (ledger.c) */
    GT_ROUTE_JOB_STATS,      /* every job's current utilisation (telemetry.c) */
    GT_ROUTE_NODE_STATS,     /* every node's current use by its tasks (telemetry.c) */
    GT_ROUTE_VERSION,        /* /version: gantryd's release */
    GT_ROUTE_COLLECTION,     /* list / create / watch */
    GT_ROUTE_OBJECT,         /* get / put / delete, or a subresource */
};

#define GT_ROUTE_NAME_MAX 253

struct gt_route {
    enum gt_route_type type;
    const struct gt_kind_info *kind;
    bool all_projects; /* project-scoped kind listed without a project */
    char project[64];  /* "" when none */
    char name[GT_ROUTE_NAME_MAX + 1];
    char sub[16]; /* "", "status", "binding", "log", "exec", "secrets" (tasks), "scalars",
                   * "history" (jobs), "telemetry" (nodes) */
};

/* Parse a request path (no query) into r. -GT_ENOTFOUND with err saying
 * why for anything not served. */
int gt_route_parse(const char *path, struct gt_route *r, struct gt_err *err);
/* Store key of an object ("/jobs/p/n", "/nodes/n") or of a collection's
 * prefix when name is NULL ("/jobs/p/", "/jobs/"). Caller frees. */
char *gt_route_key(const struct gt_kind_info *kind, const char *project, const char *name);

/* ---- Status error bodies (status.c) ---- */

/* Field path at the start of a validation message ("spec.x: must be ...")
 * copied into field (empty if none). */
void gt_status_field(const char *msg, char *field, size_t len);
/* A Kubernetes Status object for code (a GT_E* code) as JSON text into out
 * (appended). kind and name (may be NULL) go into details, with the field
 * taken from message. */
void gt_status_format(struct gt_buf *out, int code, const char *message, const char *kind,
                      const char *name);

/* ---- event folding (events.c) ---- */

#define GT_EVENT_WRITE_INTERVAL_MS 30000 /* at most one store write per (object, reason) */

/* The arithmetic of one folded Event: occurrences are counted at once and
 * written at most every GT_EVENT_WRITE_INTERVAL_MS. */
struct gt_event_fold {
    int64_t count;         /* occurrences recorded so far */
    int64_t written_count; /* count as last written to the store */
    int64_t first_ms;
    int64_t last_ms;
    int64_t last_write_ms; /* when the last write was issued */
    bool ever_written;
};
/* Record one occurrence at now_ms. Returns 0 if the Event should be written
 * now (then call gt_event_fold_written), else the delay in ms until a
 * flush is due. */
int64_t gt_event_fold_record(struct gt_event_fold *f, int64_t now_ms);
/* Note that the current count was written at now_ms. */
void gt_event_fold_written(struct gt_event_fold *f, int64_t now_ms);
/* Is a flush due at now_ms (unwritten occurrences and the interval passed)? */
bool gt_event_fold_due(const struct gt_event_fold *f, int64_t now_ms);
/* Has an Event whose lastTimestamp is last_ms expired at now_ms, ttl_ms
 * (--event-ttl) after it? */
bool gt_event_expired(int64_t last_ms, int64_t now_ms, int64_t ttl_ms);
/* May the recorder forget an Event's in-memory fold at now_ms: every
 * occurrence written, and its object deleted (no occurrence can follow)
 * or the Event expired? The stored Event stays until it expires. */
bool gt_event_forgettable(const struct gt_event_fold *f, bool object_gone, int64_t now_ms,
                          int64_t ttl_ms);
/* Event name for an object: "<name>.<16 hex of FNV-1a(uid '\0' reason)>".
 * Caller frees. */
char *gt_event_name(const char *obj_name, const char *uid, const char *reason);

/* ---- metrics (metrics.c): a tiny Prometheus registry ---- */

#define GT_HIST_BUCKETS 12
struct gt_histogram {
    uint64_t counts[GT_HIST_BUCKETS + 1]; /* last: +Inf */
    double sum;
    uint64_t n;
    const double *bounds; /* GT_HIST_BUCKETS upper bounds; NULL: gt_histogram_bounds */
};
/* Seconds upper bounds of the buckets (Prometheus client defaults, plus small ones). */
extern const double gt_histogram_bounds[GT_HIST_BUCKETS];
/* Bounds for waits of seconds to minutes (scheduling latency). */
extern const double gt_histogram_wait_bounds[GT_HIST_BUCKETS];
void gt_histogram_observe(struct gt_histogram *h, double seconds);

#define GT_METRICS_CODES 16
enum gt_metrics_verb {
    GT_MV_GET,
    GT_MV_LIST,
    GT_MV_WATCH,
    GT_MV_CREATE,
    GT_MV_UPDATE,
    GT_MV_DELETE,
    GT_MV_OTHER,
    GT_MV_COUNT
};
/* Store requests timed for gantry_store_request_seconds: the writes by
 * enum gt_store_op (same order), then reads. */
enum { GT_STORE_REQ_GET = 3, GT_STORE_REQ_LIST = 4, GT_STORE_REQ_COUNT = 5 };
extern const char *const gt_store_req_names[GT_STORE_REQ_COUNT];

struct gt_metrics {
    uint64_t requests[GT_MV_COUNT][GT_METRICS_CODES]; /* by verb and code slot */
    int codes[GT_METRICS_CODES];                      /* HTTP code of each slot, 0 free */
    struct gt_histogram request_seconds;
    struct gt_histogram commit_seconds;
    struct gt_histogram store_seconds[GT_STORE_REQ_COUNT];
    int64_t objects[GT_KIND_COUNT];
    struct gt_histogram cycle_seconds;    /* scheduler cycles */
    struct gt_histogram schedule_seconds; /* a task's creation to its bind (wait bounds) */
    uint64_t binds;                       /* scheduler decisions applied */
    uint64_t preemptions[3];              /* by enum gt_sched_preempt_kind */
    int64_t jobs_pending[3];              /* waiting jobs by gt_sched_wait_reason, last cycle */
};
/* Count a finished request. */
void gt_metrics_request(struct gt_metrics *m, enum gt_metrics_verb verb, int http_code,
                        double seconds);
/* Append the Prometheus text exposition of m to out. */
void gt_metrics_render(const struct gt_metrics *m, struct gt_buf *out);
/* Append one histogram family (name, help: static text) to out. */
void gt_metrics_render_histogram(struct gt_buf *out, const char *name, const char *help,
                                 const struct gt_histogram *h);
/* Append one series of a histogram family (no HELP/TYPE lines), labels
 * ("op=\"get\"") on every sample, NULL: none. */
void gt_metrics_render_histogram_series(struct gt_buf *out, const char *name, const char *labels,
                                        const struct gt_histogram *h);

/* ---- controllers' pure parts (jobs.c, nodeinfo.c) ----
 * Inputs are validated objects (borrowed); returned JSON is the caller's. */

/* enum gt_task_phase and its names: api.h */
/* Does the task hold its node's resources (Bound/Running/Terminating on a node)? */
bool gt_task_holds(const struct gt_api_task *task);
/* template.terminationGracePeriodSeconds, default 30. */
int64_t gt_task_grace_s(const struct gt_api_template *tmpl);
/* "<job>-<lower(type)>-<index>". Caller frees. */
char *gt_job_task_name(const char *job, const char *type, int64_t index);
/* The store key of that task, "/tasks/<project>/<name>": in buf (len
 * bytes) when it fits, else in a new string that *heap also points to
 * (caller frees *heap; NULL when buf was enough). What lookups by the
 * cache use: no allocation for each task of each reconcile. */
const char *gt_job_task_key(char *buf, size_t len, char **heap, const char *project,
                            const char *job, const char *type, int64_t index);

/* Admission: every template.runAsUser must equal creator_uid unless the
 * project allows privileged tasks. 0 or GT_EINVAL naming the field. */
int gt_job_check_run_as(const struct gt_api_job *job, int64_t creator_uid, bool allow_privileged,
                        struct gt_err *err);

/* Is path (absolute, no ".." component) lexically beneath root: equal to
 * it or below it at a whole component ("/srv/data" is not beneath "/srv/d")? */
bool gt_path_beneath(const char *path, const char *root);

/* Admission: every hostPath of vols, a Job's or Task's spec.volumes
 * (borrowed), must be lexically beneath one of roots (whole components, as
 * gantlet places it); with no roots every hostPath volume is refused. 0 or
 * GT_EINVAL with the message starting at the field
 * ("spec.volumes[0].hostPath: ..."). */
int gt_job_check_volumes(const struct gt_api_volumes *vols, char *const *roots, size_t n_roots,
                         struct gt_err *err);

/* runPolicy.backoffLimit when absent (GT_API_BACKOFF_UNLIMITED: no limit). */
#define GT_JOB_BACKOFF_DEFAULT 6

struct gt_job_task_opts {
    const char *department;     /* the project's department, may be NULL */
    int32_t priority;           /* the job's priority class value */
    bool privileged;            /* the project's allowPrivileged */
    bool stop_idle_gpu;         /* the project's stopIdleGPUJobs */
    int64_t generation;         /* the job's restart generation (GT_LABEL_GENERATION) */
    const char *pip_index_url;  /* cluster pip configuration (may be NULL): spec.pip of */
    const char *pip_find_links; /* the tasks of a job with requirements */
};
/* The Pending Tasks of a stored job (array of Task objects, without uid and
 * creationTimestamp), named by gt_job_task_name, in replica-type order;
 * spec.volumes/source/requirements copied from the job, and spec.pip
 * {indexUrl, findLinks} from opts when the job has requirements. */
json_t *gt_job_build_tasks(const struct gt_api_job *job, const struct gt_job_task_opts *opts);
/* Has the job a True Succeeded or Failed condition? */
bool gt_job_finished(const struct gt_api_job *job);
/* Restart policies. What a failed task means for its job: NONE (nothing
 * the job acts on: a success, or a stop the job controller asked for),
 * PERMANENT (the job fails; also for reason IdleGPU, whatever the policy), RETRY (restart the gang,
 * counted toward backoffLimit), REQUEUE (restart without counting: Preempted, NodeLost, Drained,
 * GPULost). policy is the replica type's restartPolicy (NULL: Never); ExitCode retries exit codes
 * 128-255 and fails on any other. */
enum gt_restart_verdict {
    GT_RESTART_NONE,
    GT_RESTART_PERMANENT,
    GT_RESTART_RETRY,
    GT_RESTART_REQUEUE,
};
enum gt_restart_verdict gt_job_restart_verdict(const char *policy, const struct gt_api_task *task);
/* Back-off before the n-th counted restart (n >= 1): base_ms doubling,
 * capped at 30 * base_ms (10 s .. 5 min with the default base). */
int64_t gt_job_backoff_ms(int64_t n, int64_t base_ms);
/* Task label: the job's restart generation the task was created in. */
#define GT_LABEL_GENERATION "gantry.dev/generation"
/* Stop reason of tasks stopped for a gang restart. */
#define GT_STOP_RESTARTING "Restarting"
/* spec.stop.reason of a task its job's end stopped (also the reason the
 * agent reports it with): never a failure of the job or its replica type */
#define GT_STOP_JOB_FINISHED "JobFinished"
/* The generation of a task (its GT_LABEL_GENERATION label; 0 if none). */
int64_t gt_task_generation(const struct gt_api_task *task);

enum gt_job_action {
    GT_JOB_KEEP,     /* nothing beyond status upkeep */
    GT_JOB_FAIL,     /* the job fails now (reason, message): stop every task */
    GT_JOB_RESTART,  /* restarting: stop every task of an older generation */
    GT_JOB_RECREATE, /* back-off over: replace the older generation's tasks */
    GT_JOB_EXPIRE,   /* finished and ttlSecondsAfterFinished passed: delete the job */
};
struct gt_job_decision {
    enum gt_job_action action;
    bool begins;        /* RESTART: this reconcile starts the restart */
    bool counted;       /* begins: the restart counts toward backoffLimit */
    bool pull_backoff;  /* begins: an image pull failed; the restart waits its back-off */
    int64_t generation; /* the job's generation (restarts so far) after this decision */
    char reason[64];    /* FAIL / RESTART: condition reason (FAIL: also the stop reason) */
    char message[320];  /* FAIL / RESTART: condition message */
    int64_t wake_ms;    /* when time alone may change the decision; 0: never */
};
/* What the job (stored, borrowed) needs given its tasks (those found,
 * borrowed) at now_ms, with restart back-off base backoff_base_ms. Tasks of
 * an older generation than the job's are the previous run's: they are
 * stopped, then (after the back-off) replaced; the current ones are judged
 * by their replica type's restartPolicy; activeDeadlineSeconds counts from
 * status.startTime. */
void gt_job_decide(const struct gt_api_job *job, const struct gt_api_task *const *tasks,
                   size_t n_tasks, int64_t now_ms, int64_t backoff_base_ms,
                   struct gt_job_decision *d);
/* The job's status from its tasks (borrowed) and the decision d (from
 * gt_job_decide) at now_ms: conditions Created -> Queued (all tasks exist,
 * none running; message wait_message if given) -> Running (some task of
 * the current generation running) -> Restarting -> Succeeded (every
 * Master/Chief, else every Worker, else every task succeeded) / Failed (d
 * says so, or a task is gone); finished is sticky. Conditions once reached
 * stay, False when not current; transition times, startTime and
 * completionTime are kept when unchanged, so deriving twice gives equal
 * JSON. restartCount counts restarts toward backoffLimit, requeueCount the
 * uncounted ones. */
json_t *gt_job_derive_status(const struct gt_api_job *job, const struct gt_api_task *const *tasks,
                             size_t n_tasks, const struct gt_job_decision *d,
                             const char *wait_message, int64_t now_ms);
/* A copy of the stored task (new; caller json_decref()s) with
 * spec.stop{reason, gracePeriodSeconds of its template} unless it has one,
 * and metadata.deletionTimestamp deletion_ts when that is given and the
 * task has none. */
json_t *gt_task_with_stop(const struct gt_api_task *task, const char *reason,
                          const char *deletion_ts);

/* ---- what a bound task is given (jobenv.c) ---- */

/* Parse "LOW-HIGH" (1..65535). 0 or GT_EINVAL with err. */
int gt_jobenv_port_range_parse(const char *s, int32_t *lo, int32_t *hi, struct gt_err *err);
/* The n_want lowest ports of [lo, hi] not in used (n_used entries) into
 * out. 0, or GT_EINVAL when the range has too few free. */
int gt_jobenv_ports_alloc(int32_t lo, int32_t hi, const int32_t *used, size_t n_used, size_t n_want,
                          int32_t *out);
/* One replica of a job as the environment sees it (strings borrowed). */
struct gt_jobenv_member {
    const char *type; /* replica type as in the spec: "Master", "PS", ... */
    int64_t index;
    int32_t port;   /* its "gantry" port; 0: not known yet */
    const char *ip; /* its node's InternalIP; NULL: not known yet */
};
/* "true": a preempted run of the job resumes from its checkpoint, so the
 * scheduler may preempt it by attained service at any point; else it
 * restarts from scratch and is preempted so only early (docs/api.md). */
#define GT_ANNOTATION_CHECKPOINTED "gantry.dev/checkpointed"
/* The job annotation naming the framework its tasks expect, and its values. */
#define GT_ANNOTATION_FRAMEWORK "gantry.dev/framework"
#define GT_FRAMEWORK_PYTORCH "pytorch"
#define GT_FRAMEWORK_TENSORFLOW "tensorflow"
#define GT_FRAMEWORK_XGBOOST "xgboost"
#define GT_FRAMEWORK_PADDLE "paddle"
#define GT_FRAMEWORK_JAX "jax"
/* The env entries ([{name, value}]) gantry gives member self of a job
 * whose replicas are m[0..n). framework (the job's GT_ANNOTATION_FRAMEWORK,
 * may be NULL) picks the kind: "pytorch": PyTorch's MASTER_/PET_ variables
 * when a Master exists; "tensorflow": TF_CONFIG when n > 1; "xgboost",
 * "paddle", "jax": the training operator v1.9's variables of that kind of
 * job (jobenv.c); none or another value: pytorch when a Master exists,
 * else tensorflow. */
json_t *gt_jobenv_env(const char *job, const char *project, const char *framework,
                      const struct gt_jobenv_member *m, size_t n, size_t self);
/* The env entries of member self of an MPIJob (framework
 * GT_API_FRAMEWORK_MPI; annotations: the job's, borrowed, with
 * GT_API_ANNOTATION_MPI_SLOTS and _IMPL) as the MPI operator sets them
 * (jobenv_mpi.c): K_MPI_JOB_ROLE for every member; for the launcher the
 * hostfile's variables for its MPI implementation, the rsh agent
 * (GT_MPI_RSH_AGENT) and GT_MPI_HOSTFILE_ENV, the hostfile's text. New
 * array, the caller's. */
json_t *gt_jobenv_mpi_env(const char *job, const char *project, const json_t *annotations,
                          const struct gt_jobenv_member *m, size_t n, size_t self);
/* The MPI hostfile of a job whose members are m[0..n): one line per Worker,
 * by index, "HOST slots=N" (OpenMPI) or "HOST:N" (Intel, MPICH), HOST the
 * MPI operator v2beta1's "<job>-worker-<i>.<job>.<project>.svc". Caller
 * frees. */
char *gt_jobenv_mpi_hostfile(const char *job, const char *project, const char *impl,
                             long long slots, const struct gt_jobenv_member *m, size_t n);
/* Kubeflow's TF_CONFIG for member self (compact JSON; caller frees). */
char *gt_jobenv_tf_config(const char *job, const char *project, const struct gt_jobenv_member *m,
                          size_t n, size_t self);
/* spec.hosts: [{hostname, ip}] for "<job>-<type>-<i>" and that plus
 * ".<project>.svc", for every member whose ip is known. */
json_t *gt_jobenv_hosts(const char *job, const char *project, const struct gt_jobenv_member *m,
                        size_t n);
/* Give each tmpl.env entry with valueFrom.fieldRef the value fields (borrowed,
 * {fieldPath: string or null}) has for its fieldPath ("" where null or
 * absent) in place of its valueFrom. */
void gt_jobenv_field_refs(json_t *tmpl, const json_t *fields);
/* Append env entries (borrowed) to tmpl.env, skipping names tmpl.env has. */
void gt_jobenv_merge(json_t *tmpl, const json_t *env);

/* A node's computed status.allocated from the tasks (borrowed) holding
 * resources on it: {"resources": {cpu, memory, nvidia.com/gpu}, "gpus":
 * [{index, uuid, milli, task: "<project>/<task>"}]}. Tasks that do not
 * hold resources on node are skipped. */
json_t *gt_node_allocated(const char *node, const struct gt_api_task *const *tasks, size_t n_tasks);
/* Is a node lost at now_ms: Ready is True but its last heartbeat (the Ready
 * condition's lastHeartbeatTime or status.lastHeartbeatTime, and never
 * before since_ms, when gantryd started watching) is more than grace_ms old? */
bool gt_node_lost(const struct gt_api_node *node, int64_t now_ms, int64_t grace_ms,
                  int64_t since_ms);
/* Is the node draining: has it the NoExecute taint gantry.dev/drain
 * (`gantry drain` sets it)? Its tasks are stopped with reason Drained. */
bool gt_node_draining(const struct gt_api_node *node);
/* The node's NoExecute taint (borrowed) that evicts task at now_ms: one
 * its tolerations do not tolerate, or tolerate for tolerationSeconds that
 * have passed since the taint's timeAdded (else since the task was
 * bound); NULL when none does (Kubernetes' taint-based eviction). */
const struct gt_api_taint *gt_node_evicting_taint(const struct gt_api_node *node,
                                                  const struct gt_api_task *task, int64_t now_ms);
/* {"cpu": "<milli>m", "memory": "<bytes>", "nvidia.com/gpu": "<n>" or
 * "<milli>m"} (new reference): resource amounts as status fields show them. */
json_t *gt_resources_json(int64_t cpu_milli, int64_t memory_bytes, int64_t gpu_milli);

/* ---- department status (feeder.c) ---- */

struct gt_sched_model;
/* A department's status as the scheduler model counts it (new reference):
 * {"used": resources, "borrowed": resources} with borrowed = used above the
 * guarantee, per resource (gt_resources_json). NULL if m lacks name. */
json_t *gt_department_status(const struct gt_sched_model *m, const char *name);
/* Make the Project object project (borrowed; NULL when deleted) named name
 * the project's hard cap in m: spec.hard's resources capped, the others
 * not; no spec.hard (or no object) removes the cap. 0, or the error of
 * gt_sched_project_set (GT_EINVAL). */
int gt_project_cap_sync(struct gt_sched_model *m, const char *name,
                        const struct gt_api_project *project, struct gt_err *err);

/* ---- storage quota (volquota.c) ---- */

/* What a new Volume's capacity is counted against, in bytes: the
 * department's storage quota and limit and what its projects' Volumes
 * already hold (created, or being created), and the same for the project
 * with its spec.hard.storage (project_hard_bytes < 0: no cap). Names are
 * borrowed. */
struct gt_storage_quota {
    const char *department;
    int64_t dept_allocated_bytes;
    int64_t dept_quota_bytes;
    int64_t dept_limit_bytes;
    const char *project;
    int64_t project_allocated_bytes;
    int64_t project_hard_bytes;
    const char *what; /* what asks, named in the message; NULL: "spec.capacity.storage" */
};
/* May a Volume of capacity_bytes be made under q? 0, or GT_EFORBIDDEN
 * with err naming spec.capacity.storage and the quota it would exceed
 * (the project's hard cap first, then the department's limit). */
int gt_storage_quota_check(const struct gt_storage_quota *q, int64_t capacity_bytes,
                           struct gt_err *err);
/* The storage guarantee and limit, in bytes, of a department's spec.quota
 * and spec.limit (either may be NULL): absent from the quota is 0, absent
 * from the limit is the quota. */
void gt_storage_limits(const struct gt_api_res *quota, const struct gt_api_res *limit,
                       int64_t *quota_bytes, int64_t *limit_bytes);

/* ---- the daemon (server.c) ---- */

/* Run gantryd with cfg until SIGTERM/SIGINT (returns 0) or a fatal store
 * failure (returns 1). Startup errors are logged and return 1. The line
 * `msg="listening" addr=HOST:PORT` is logged once the socket is bound and
 * the store is open. */
int gt_server_run(const struct gt_server_config *cfg);

/* obj[key] = the string v (NULL: key left unset); key must be valid UTF-8
 * (a literal). What hot paths build objects with instead of json_pack,
 * whose format parsing and string buffers cost several times as much. */
static inline void gt_obj_set_str(json_t *obj, const char *key, const char *v)
{
    json_object_set_new_nocheck(obj, key, json_string(v));
}

#endif
