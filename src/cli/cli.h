/*
 * cli: the `gantry` command-line client.
 *
 * This header is the program's entry point plus the parts of the client
 * that do no network I/O, so that unit tests and later commands (`gantry up`
 * writes the configuration) can use them: configuration lookup, kind names
 * and API paths, kubectl-style ages and tables, the per-kind columns of
 * `get`, the layout of `describe`, and turning a server's Status answer into
 * one line. The HTTP client and the commands are private, in cli_int.h.
 *
 * Strings returned as `char *` are heap-allocated and owned by the caller
 * (free()); `const char *` results are borrowed.
 */
#ifndef GT_CLI_H
#define GT_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "api/api.h"
#include "common/common.h"

/* ---- the program (commands.c) ---- */

/* Run the gantry command line argv (argc entries, argv[0] the program; the
 * array is reordered in place): global flags (--server, --token, anywhere
 * before "--"), then a command and its arguments. Results go to out, errors
 * and notes to err. Returns the exit status: 0 success, 1 failure (one
 * "error: ..." line on err), 2 usage error. */
int gt_cli_main(int argc, char **argv, FILE *out, FILE *err);

/* The one map from what a command returned to gantry's exit status. rc is
 * 0 or a negative code (GT_E*, -errno), already reported; task_status is
 * the exit status (0-255) of a task the command followed to its end
 * (`gantry run`), else 0. Returns task_status for 0; 2 for GT_EUSAGE (a bad
 * command line); 130 for -ECANCELED (stopped by Ctrl-C: what a shell shows
 * for SIGINT); 1 for any other code. */
int gt_cli_exit_status(int rc, int task_status);

/* ---- configuration (config.c) ---- */

/* Where the client connects, with which bearer token, and the default
 * project (from the file only). Heap strings owned by the struct; any may be
 * NULL when nothing supplied it. */
struct gt_cli_config {
    char *server;
    char *token;
    char *project;
    char *data_dir; /* the local cluster `gantry up` made it for, or NULL */
};

/* Path of the configuration file: $GANTRY_CONFIG, else
 * $XDG_CONFIG_HOME/gantry/config, else $HOME/.config/gantry/config.
 * Caller frees. NULL only when none of these variables is set. */
char *gt_cli_config_path(void);

/* Resolve server and token, each on its own, by precedence: the flag value
 * (NULL when not given), then $GANTRY_SERVER / $GANTRY_TOKEN (ignored when
 * empty), then the configuration file at gt_cli_config_path() (a missing file
 * is not an error). Trailing '/' is stripped from the server URL. Fills cfg
 * (release with gt_cli_config_fini). Returns 0, or GT_EBADREQ with err when the
 * file exists but cannot be read or is not a JSON object with string values. */
int gt_cli_config_resolve(const char *flag_server, const char *flag_token,
                          struct gt_cli_config *cfg, struct gt_err *err);

/* Free cfg's strings; cfg may be reused. */
void gt_cli_config_fini(struct gt_cli_config *cfg);

/* The project of a command: flag_project (-p, borrowed) when given, else
 * the configuration file's "project". *project is a new string or NULL when
 * neither names one (caller frees). Returns 0, or GT_EBADREQ with err for
 * an unreadable file as gt_cli_config_resolve. */
int gt_cli_config_project(const char *flag_project, char **project, struct gt_err *err);

/* Write the configuration file at path (borrowed) atomically: the parent
 * directory is created (mode 0700) if missing, the JSON
 * {"server": ..., "token": ..., "project": ..., "dataDir": ...} is written
 * to a temporary file of mode 0600 in the same directory, fsync'd, and
 * renamed over path. token, project and data_dir (the data directory of
 * the local cluster the file is for) may be NULL (then omitted). Returns 0
 * or -errno with err naming the file. */
int gt_cli_config_write(const char *path, const char *server, const char *token,
                        const char *project, const char *data_dir, struct gt_err *err);

/* Read the configuration file at path (borrowed) alone into cfg (zeroed
 * first; release with gt_cli_config_fini): no flags, no environment. A
 * missing file leaves cfg empty. Returns 0, or GT_EBADREQ as
 * gt_cli_config_resolve. */
int gt_cli_config_read(const char *path, struct gt_cli_config *cfg, struct gt_err *err);

/* ---- kinds and paths (kinds.c) ---- */

/* Look up a kind as a user types it: the kind name ("Job"), its lower-case
 * singular or plural ("job", "jobs"), a short name ("dept", "proj", "pc",
 * "no", "ev"), a Kubernetes or Kubeflow name for it ("pods", "tfjobs",
 * "pytorchjobs", "mpijobs"), each also with its group (".gantry.dev", as
 * `-o name` prints, or ".kubeflow.org"); case-insensitive. Returns static
 * data or NULL. */
const struct gt_kind_info *gt_cli_kind_lookup(const char *word);

/* A KIND/NAME argument as `-o name` prints it ("job.gantry.dev/x", or
 * "job/x"): 1 with *kind_word (new, caller frees) and *name (borrowed from
 * arg) set; 0 when arg has no '/'; -1 when it is malformed. */
int gt_cli_kind_ref_split(const char *arg, char **kind_word, const char **name);

/* API path of a kind's collection or object: "/apis/gantry.dev/v1/" then
 * "projects/{project}/" for a project-scoped kind when project is non-NULL,
 * then "{plural}", then "/{name}" when name is non-NULL. A project-scoped
 * kind without a project gives the all-projects collection. Segments are
 * percent-encoded. Caller frees. */
char *gt_cli_kind_path(const struct gt_kind_info *k, const char *project, const char *name);

/* Percent-encode s for a URL path segment or query value (RFC 3986
 * unreserved characters stay). Caller frees. */
char *gt_cli_url_escape(const char *s);

/* "job.gantry.dev": the lower-case kind name with the API group, as kubectl
 * names resources in its messages. Writes into buf (len bytes), returns buf. */
char *gt_cli_kind_resource(const struct gt_kind_info *k, char *buf, size_t len);

/* ---- ages and values (format.c) ---- */

/* Format a duration the way kubectl's duration.HumanDuration does: "45s",
 * "3m10s", "15m", "5h30m", "20h", "2d4h", "30d", "2y10d", "9y"; under -1 s
 * gives "<invalid>", -1..0 s "0s". Writes into buf (>= 16 bytes), returns buf. */
char *gt_cli_format_duration(int64_t ms, char *buf, size_t len);

/* Age of an RFC 3339 timestamp at now_ms, formatted as above; "<unknown>"
 * when ts is NULL or unparseable. Writes into buf, returns buf. */
char *gt_cli_format_age(const char *ts, int64_t now_ms, char *buf, size_t len);

/* Text of a JSON scalar for a table cell: strings as is, integers and reals
 * in decimal, true/false; NULL, null, objects and arrays give NULL.
 * Returns a new string or NULL; caller frees. */
char *gt_cli_scalar_text(const json_t *v);

/* ---- tables (table.c) ---- */

/* A kubectl-style table: upper-case headers, each column but the last padded
 * to its widest cell plus 3 spaces (at least 6 wide), as kubectl's
 * tabwriter(minwidth 6, padding 3) lays them out. Cells are copied. */
struct gt_cli_table {
    size_t n_cols;
    char **headers; /* n_cols */
    char **cells;   /* n_rows * n_cols, row-major */
    size_t n_rows;
    size_t cap_rows;
    size_t *widths; /* widest cell (or header) per column so far */
};

/* Start a table with n_cols headers (borrowed, copied). */
void gt_cli_table_init(struct gt_cli_table *t, size_t n_cols, const char *const *headers);
void gt_cli_table_fini(struct gt_cli_table *t);
/* Append a row of n_cols cells (borrowed, copied; NULL prints as "<none>"). */
void gt_cli_table_add(struct gt_cli_table *t, const char *const *cells);
/* Append the header line (when with_headers) and every row to out, each line
 * ending in '\n'. */
void gt_cli_table_render(const struct gt_cli_table *t, bool with_headers, struct gt_buf *out);
/* Drop the rows but keep the column widths seen so far (--watch prints rows
 * one at a time, lined up with those already printed). */
void gt_cli_table_clear(struct gt_cli_table *t);

/* ---- get's columns (columns.c) ---- */

/* Which columns `get` shows. */
struct gt_cli_columns_opts {
    bool wide;         /* -o wide: extra columns per kind */
    bool with_project; /* -A on a project-scoped kind: a leading PROJECT column */
    bool show_labels;  /* --show-labels: a last LABELS column (k=v,... in key order) */
};

/* Start a table with the headers of kind k (see the per-kind comments in
 * columns.c). Release with gt_cli_table_fini. */
void gt_cli_columns_init(struct gt_cli_table *t, const struct gt_kind_info *k,
                         const struct gt_cli_columns_opts *opts);
/* Append obj (borrowed) as one row of kind k's table, with ages at now_ms. */
void gt_cli_columns_add(struct gt_cli_table *t, const struct gt_kind_info *k,
                        const struct gt_cli_columns_opts *opts, const json_t *obj, int64_t now_ms);

/* ---- node administration (cmd_node.c) ---- */

enum gt_cli_node_op {
    GT_CLI_NODE_CORDON,   /* spec.unschedulable: true */
    GT_CLI_NODE_UNCORDON, /* clear unschedulable and the drain taint */
    GT_CLI_NODE_DRAIN,    /* cordon plus the NoExecute taint gantry.dev/drain */
};
/* Apply op to a Node object (borrowed, changed in place); other taints are
 * kept. Returns whether anything changed. */
bool gt_cli_node_mark(json_t *node, enum gt_cli_node_op op);
/* One change to a Node object (borrowed, changed in place) with arg;
 * *changed set when it changed anything. 0 or GT_EINVAL with err. */
typedef int gt_cli_node_edit_fn(json_t *node, void *arg, bool *changed, struct gt_err *err);
struct gt_cli_client;
/* Read-modify-write the Node name through client: GET, edit, PUT (only
 * when *changed) conditional on its resourceVersion, again from the GET on
 * a conflict (at most 8 times). 0 or the error (GT_ECONFLICT after the
 * last try). */
int gt_cli_node_update(struct gt_cli_client *client, const char *name, gt_cli_node_edit_fn *edit,
                       void *arg, bool *changed, struct gt_err *err);
/* `gantry label node`'s argument arg on node: KEY=VALUE sets a label
 * (changing another value only with overwrite), KEY- removes it. 0, or
 * GT_EINVAL for a malformed argument or a value that would change. */
int gt_cli_node_label_edit(json_t *node, const char *arg, bool overwrite, bool *changed,
                           struct gt_err *err);
/* `gantry taint node`'s argument arg on node: KEY[=VALUE]:EFFECT adds (or
 * replaces that key and effect's) taint, with timeAdded now (RFC 3339) for
 * NoExecute; KEY:EFFECT- removes that taint, KEY- every taint of KEY.
 * 0, or GT_EINVAL naming the argument. */
int gt_cli_node_taint_edit(json_t *node, const char *arg, const char *now, bool *changed,
                           struct gt_err *err);
/* Append `gantry top nodes`' table for nodes (a JSON array of Nodes with
 * the computed status.allocated, borrowed) to out: per node the GPUs
 * allocated (whole or fractional) of its GPUs, CPU and memory allocated,
 * and each as a share of the allocatable amount; then what its tasks use
 * now, from stats (GET nodestats' items, borrowed; NULL: unknown, shown
 * "-"): CPU(cores) and MEMORY(bytes) from their cgroups and GPU UTIL, the
 * mean utilisation of the GPUs they hold ("-" where none is sampled). */
void gt_cli_top_nodes_render(const json_t *nodes, const json_t *stats, struct gt_buf *out);

/* ---- scalars, top jobs, report usage (cmd_usage.c) ---- */

/* Append `gantry scalars`' table for a JobScalars answer (borrowed): per
 * tag its latest step, value and wall time and how many points it had. */
void gt_cli_scalars_render(const json_t *scalars, struct gt_buf *out);
/* Append `gantry top jobs`' table for a JobStatsList answer (borrowed). */
void gt_cli_top_jobs_render(const json_t *stats, struct gt_buf *out);
enum gt_cli_usage_format { GT_CLI_USAGE_TABLE, GT_CLI_USAGE_CSV, GT_CLI_USAGE_JSON };
/* Append `gantry report usage` for a UsageReport answer (borrowed): a
 * table with a TOTAL row, CSV (name,gpu_seconds,utilized_gpu_seconds,
 * task_runs; GPU-seconds with three decimals, exact) or the JSON itself. */
void gt_cli_usage_render(const json_t *report, enum gt_cli_usage_format fmt, struct gt_buf *out);

/* ---- describe (describe.c) ---- */

/* Append `gantry describe` output for obj (borrowed) to out: the metadata
 * block (Name, Project, Labels, Annotations, Kind, Created, Creator,
 * Resource Version, UID), every other top-level field as a section with
 * nested, aligned "Key:  value" lines (camelCase keys shown as "Title
 * Case", as kubectl's generic describer does), then "Events:" with a table
 * of events (an array, borrowed; NULL or empty prints "<none>"). */
void gt_cli_describe_render(const json_t *obj, const json_t *events, int64_t now_ms,
                            struct gt_buf *out);

/* Does event (borrowed) concern the object of kind k named name in project
 * (NULL for cluster-scoped kinds)? Compares involvedObject.kind, .name and,
 * when project is given, involvedObject.project (else the event's
 * metadata.project). */
bool gt_cli_event_matches(const json_t *event, const struct gt_kind_info *k, const char *project,
                          const char *name);

/* ---- server answers (status.c) ---- */

/* Turn a non-2xx HTTP answer into an error: sets err's message to the Status
 * object's "message" (or, when the body is not a Status, to "server answered
 * HTTP <code>" and the start of the body) and returns the code matching the
 * HTTP status and reason (GT_ENOTFOUND for 404, GT_EEXISTS or GT_ECONFLICT
 * for 409, ...; GT_EINTERNAL for anything unmapped). body (len bytes, need
 * not be NUL-terminated) may be NULL. */
int gt_cli_status_error(long http_status, const char *body, size_t len, struct gt_err *err);

/* ---- the local cluster of `gantry up`, without processes (localcluster.c) ---- */

/* Characters of a token made by gt_cli_up_token_new (hex of 32 bytes). */
#define GT_CLI_TOKEN_LEN 64

/* Default data directory: $XDG_DATA_HOME/gantry, else
 * $HOME/.local/share/gantry; NULL when neither is set. Caller frees. */
char *gt_cli_up_data_dir(void);

/* Data directory of a local cluster run by root whose tasks' uid cannot
 * reach the default one (a home directory is often 0700). */
#define GT_CLI_UP_SYSTEM_DATA_DIR "/var/lib/gantry"

/* Can a process of uid (primary group gid) search every existing
 * directory on the way to dir (absolute, borrowed), as a task needs to
 * reach its working directory under the data directory? 0 (always for uid
 * 0), or GT_EFORBIDDEN with err naming the first directory that bars it
 * and its mode. Parts not there yet count as reachable. */
int gt_cli_up_reachable(const char *dir, long uid, long gid, struct gt_err *err);

/* The uid the local user's token maps to (tasks run as it): flag_uid
 * (--uid) when >= 0, else 65534 (nobody) for root, else euid itself. */
long gt_cli_up_task_uid(long euid, long flag_uid);

/* A fresh random token: GT_CLI_TOKEN_LEN hex characters from getrandom,
 * NUL-terminated in out. */
void gt_cli_up_token_new(char out[GT_CLI_TOKEN_LEN + 1]);

/* gantryd's token file (kube static-token lines): the admin token for user
 * with uid in group gantry:admins, and the node token as user
 * "system:node:<node>" (uid 65534) in group gantry:nodes. Caller frees. */
/* docker-registry's configuration for gantry up: filesystem storage at
 * data_root, listening on addr (HOST:PORT), token authentication with
 * realm (gantryd's registry/token URL), service "gantry-registry", issuer
 * "gantryd", trusting the certificate file cert (new string). */
char *gt_cli_up_registry_config(const char *data_root, const char *addr, const char *realm,
                                const char *cert);
char *gt_cli_up_token_file(const char *admin_token, const char *user, long uid,
                           const char *node_token, const char *node);

/* The Node name for a hostname: its first label in lower case with other
 * characters turned into '-' (a DNS label), "localhost" if nothing is left.
 * Caller frees. */
char *gt_cli_up_node_name(const char *hostname);

/* Prometheus's configuration scraping gantryd at gantryd and gantlet at
 * gantlet (ADDR:PORT each, borrowed): the one docs/metrics.md documents,
 * honor_labels so gantry's job label stays, model_name renamed to
 * dcgm-exporter's modelName. Caller frees. */
char *gt_cli_up_prometheus_config(const char *gantryd, const char *gantlet);

/* ---- run and logs, without the network (runjob.c) ---- */

/* What `gantry run` submits. All strings borrowed; gpus, cpu and memory are
 * quantities as typed per replica (NULL: no limit). */
#define GT_CLI_RUN_VOLUMES_MAX 16
struct gt_cli_run_opts {
    const char *name;
    const char *project;
    const char *image;   /* NULL: none */
    const char *workdir; /* template.workingDir (absolute), NULL: the task's own */
    const char *gpus;
    const char *cpu;
    const char *memory;
    int workers;                /* 0: one Worker task; N > 0: 1 Master + N Workers */
    const char *git;            /* spec.source.git, NULL: none */
    const char *revision;       /* spec.source.revision, NULL: the default branch */
    const json_t *requirements; /* spec.requirements (borrowed), NULL: none */
    const char *volumes[GT_CLI_RUN_VOLUMES_MAX]; /* "NAME:/PATH[:ro]": Volumes to mount */
    size_t n_volumes;
    int argc; /* the command and its arguments, argc >= 1 */
    char *const *argv;
};

/* A fresh job name "run-<8 hex>" from getrandom. Caller frees. */
char *gt_cli_run_name_new(void);

/* Build the Job of o: replicaSpecs.Worker with replicas 1, or with
 * o->workers > 0 a PyTorch-style Master (1) and Worker (workers) pair; each
 * restartPolicy Never, template.command = argv, resources.limits from the
 * quantities; spec.source and spec.requirements when given; each volume
 * "NAME:/PATH[:ro]" as spec.volumes[{name: NAME, volume: NAME}] mounted
 * at PATH (read-only with ":ro") by every replica. Validated and
 * made canonical by gt_api_validate. *job gets a new reference (caller
 * json_decref()s). Returns 0, or gt_api_validate's error (a bad quantity,
 * name, git URL or requirement) with err naming the field. */
int gt_cli_run_job_build(const struct gt_cli_run_opts *o, json_t **job, struct gt_err *err);

/* The requirement lines of a pip requirements file's text (len bytes, need
 * not end in NUL): each line trimmed, comments ('#' at the start or after
 * blanks) and blank lines dropped. *out gets a new JSON array of strings
 * (caller json_decref()s). GT_EINVAL with err naming the line for a NUL
 * byte or a -r/-c include (the file alone travels with the job). */
int gt_cli_requirements_parse(const char *text, size_t len, json_t **out, struct gt_err *err);

/* The exit status `gantry run` ends with for a terminal task (borrowed):
 * 0 for Succeeded; 128+signal when killed by a signal; the exit code's low
 * byte when non-zero; otherwise 1. msg (len bytes) says why ("task t ended
 * Failed: NodeLost (...)") unless the command failed on its own (reason
 * Error, no message), when it is "". */
int gt_cli_task_exit_status(const struct gt_api_task *task, char *msg, size_t len);

/* Name of the task whose log `gantry logs JOB` shows: JOB-<replica> when
 * replica ("worker-1", any case) is given, else JOB-<type>-0 for the job's
 * (job_obj, borrowed) Master, else Chief, else Worker, else first replica
 * type; the suffix lower-cased. NULL with err (GT_EBADREQ) for a malformed
 * replica or a job without replicas. Caller frees. */
char *gt_cli_logs_task_name(const char *job, const struct gt_api_job *job_obj, const char *replica,
                            struct gt_err *err);

/* Which log of a task to read. */
struct gt_cli_log_opts {
    bool follow;      /* until the task has ended */
    bool previous;    /* the run a restart replaced (status.previous) */
    long tail_lines;  /* the last N lines only; -1: all */
    bool timestamps;  /* each line after its time (RFC 3339, nanoseconds) */
    int64_t since_ms; /* only lines written from then on (ms since the epoch); 0: all */
};

/* API path of a task's log: .../projects/P/tasks/T/log with follow=true,
 * previous=true, tailLines=N, timestamps=true and sinceTime=RFC3339 (with
 * milliseconds) as o says. Caller frees. */
char *gt_cli_log_path(const char *project, const char *task, const struct gt_cli_log_opts *o);

#endif
