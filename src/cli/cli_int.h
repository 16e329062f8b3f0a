/*
 * Private to src/cli: the HTTP client, the command table and the commands.
 *
 * Every command is a `struct gt_cli_command` in commands.c's table, which
 * drives dispatch, `gantry help` and each command's --help; adding a
 * command is one handler and one table entry. Handlers return 0 or a
 * negative code (GT_E*, -errno) once they have reported it: one
 * "error: ..." line (gt_cli_fail), or for GT_EUSAGE the usage line too
 * (gt_cli_usage_error). gt_cli_exit_status turns that into the process's
 * exit status, in gt_cli_main only.
 */
#ifndef GT_CLI_INT_H
#define GT_CLI_INT_H

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli/cli.h"

/* ---- HTTP client (client.c) ---- */

/* A connection to one gantryd, reused across requests (keep-alive). */
struct gt_cli_client;

/* Create a client for server (base URL, "http://host:port") with an optional
 * bearer token; both borrowed and copied. Free with gt_cli_client_free. */
struct gt_cli_client *gt_cli_client_new(const char *server, const char *token);
void gt_cli_client_free(struct gt_cli_client *c);

/* Send method ("GET", "POST", "PUT", "DELETE") to path (API path plus any
 * query, borrowed) with an optional JSON body (borrowed). On a 2xx answer
 * returns 0 and, when resp is non-NULL, the parsed answer in *resp (caller
 * json_decref()s). On an error answer returns the GT_E* code of its HTTP
 * status with err holding the server's message (gt_cli_status_error); when
 * the server cannot be reached, -EIO with "cannot reach gantryd at URL:
 * <reason>". */
int gt_cli_client_request(struct gt_cli_client *c, const char *method, const char *path,
                          const json_t *body, json_t **resp, struct gt_err *err);

/* Called with each watch event ({"type": ..., "object": ...}, borrowed).
 * Return 0 to go on, non-zero to end the watch (returned by
 * gt_cli_client_watch). */
typedef int (*gt_cli_watch_fn)(const json_t *event, void *arg);

/* GET path (a watch URL) and call fn for each newline-delimited JSON event
 * as it arrives, until the server ends the stream (returns 0) or fn returns
 * non-zero (returns that). An error answer before the stream, an "ERROR"
 * event, an unparsable line or a line over 64 MiB fail as
 * gt_cli_client_request does. */
int gt_cli_client_watch(struct gt_cli_client *c, const char *path, gt_cli_watch_fn fn, void *arg,
                        struct gt_err *err);

/* Called with each chunk of a streamed answer (data, len bytes, borrowed,
 * not NUL-terminated). Return 0 to go on, non-zero to end the stream. */
typedef int (*gt_cli_stream_fn)(const char *data, size_t len, void *arg);

/* GET path and hand the answer's body to fn as it arrives (task logs),
 * until the server ends it (returns 0) or fn returns non-zero (returns
 * that). Errors as gt_cli_client_request. */
int gt_cli_client_stream(struct gt_cli_client *c, const char *path, gt_cli_stream_fn fn, void *arg,
                         struct gt_err *err);

/* Abort c's transfers, from now on, once fd (borrowed; -1: none) is
 * readable: the call in progress returns -ECANCELED ("interrupted") within
 * about a second. */
void gt_cli_client_set_cancel_fd(struct gt_cli_client *c, int fd);

/* How long gt_cli_client_request may take, in seconds (default 120; 0: no
 * limit, for an exec that lasts as long as its command). */
void gt_cli_client_set_timeout(struct gt_cli_client *c, long seconds);

/* POST path with the JSON body (borrowed) and "Upgrade: protocol": 0 once
 * gantryd answered 101, the connection then c's stream for
 * gt_cli_client_send/recv (c makes no other request after); an error
 * answer fails as gt_cli_client_request does, no answer with -EIO. */
int gt_cli_client_upgrade(struct gt_cli_client *c, const char *path, const json_t *body,
                          const char *protocol, struct gt_err *err);
/* The upgraded stream's socket (to poll for input), or -1. */
int gt_cli_client_fd(struct gt_cli_client *c);
/* Send all of data on the upgraded stream, waiting as needed: 0 or -EIO. */
int gt_cli_client_send(struct gt_cli_client *c, const void *data, size_t len);
/* Read at most len bytes of the upgraded stream without waiting: the
 * count, 0 at its end, -EAGAIN when none is there yet, -EIO. */
ssize_t gt_cli_client_recv(struct gt_cli_client *c, void *buf, size_t len);

/* ---- following a task (taskwatch.c) ---- */

enum gt_cli_task_goal {
    GT_CLI_TASK_STARTED, /* Running, or already past it (Terminating, Succeeded, Failed) */
    GT_CLI_TASK_DONE,    /* Succeeded or Failed */
};

/* Has task (borrowed) reached goal? */
bool gt_cli_task_reached(const struct gt_api_task *task, enum gt_cli_task_goal goal);

/* Wait by watch until task name in project (borrowed) reaches goal; with
 * exists false also a task that does not exist yet, with exists true one
 * that must exist now (else GT_ENOTFOUND, "task X was deleted"). *task
 * gets the Task then, decoded (caller frees with gt_api_task_free).
 * Returns 0; GT_ENOTFOUND when the task is deleted first; or the watch's
 * error (-ECANCELED when interrupted). */
int gt_cli_task_wait(struct gt_cli_client *c, const char *project, const char *name,
                     enum gt_cli_task_goal goal, bool exists, struct gt_api_task **task,
                     struct gt_err *err);

/* Copy task name's log (gantryd's log endpoint; which one o says,
 * borrowed) to out as it arrives, flushing each chunk; with o->follow, until
 * the task has ended and its log is drained. Returns 0 or the client's
 * error. */
int gt_cli_task_log_copy(struct gt_cli_client *c, const char *project, const char *name,
                         const struct gt_cli_log_opts *o, FILE *out, struct gt_err *err);

/* ---- manifests of apply -f and delete -f (manifests.c) ---- */

/* One document read and where it came from. */
struct gt_cli_manifest {
    json_t *obj;          /* owned; a Kubeflow document is replaced by its Job */
    const char *file;     /* borrowed from the set's names */
    size_t index, n_docs; /* its place in its file */
    int rank;             /* dependency order: lower first */
    size_t seq;           /* reading order */
};

/* Every document read, in dependency order once read. */
struct gt_cli_manifests {
    struct gt_cli_manifest *docs;
    size_t n, cap;
    char **names; /* the files read (owned) */
    size_t n_names, cap_names;
};

/* Where one document goes. */
struct gt_cli_target {
    const struct gt_kind_info *kind; /* static */
    const char *name;                /* borrowed from the document */
    const char *project;             /* NULL for cluster-scoped kinds; borrowed */
};

enum { GT_CLI_MAX_FILES = 64 };

/* The -f (repeatable, in order, as kubectl) and -R flags of apply and
 * delete; the paths are borrowed from argv. */
struct gt_cli_file_flags {
    const char *files[GT_CLI_MAX_FILES];
    size_t n_files;
    bool too_many; /* more than GT_CLI_MAX_FILES -f */
    bool recursive;
};

/* Take option opt ('f' with value, or 'R') into f; false for any other. */
bool gt_cli_file_flag(struct gt_cli_file_flags *f, int opt, const char *value);

/* Read the documents of paths (n_paths, borrowed: files, directories, "-"
 * for standard input; directories' subdirectories too with recursive) into
 * m (zeroed first), in dependency order. 0, or an error naming the file
 * (GT_EBADREQ also when there is no document at all); m is empty then. */
int gt_cli_manifests_read(struct gt_cli_manifests *m, const char *const *paths, size_t n_paths,
                          bool recursive, struct gt_err *err);
/* Free m's documents and names. */
void gt_cli_manifests_fini(struct gt_cli_manifests *m);
/* Work out where d goes: a kubeflow.org document converted in place (in
 * project_flag, else default_project, when it names no namespace;
 * from_kind, len bytes, gets e.g. "tfjob.kubeflow.org", else ""), then
 * its kind, name and project (the document's, else project_flag, else
 * default_project). 0, or GT_EBADREQ/GT_EINVAL with err. */
int gt_cli_manifest_target(struct gt_cli_manifest *d, const char *project_flag,
                           const char *default_project, struct gt_cli_target *t, char *from_kind,
                           size_t len, struct gt_err *err);
/* Prefix err with which document failed: 'KIND "NAME" (document I of N in
 * FILE)' (t: what is known of its target, may be all NULL). */
void gt_cli_manifest_describe_failure(struct gt_err *err, const char *file, size_t index,
                                      size_t n_docs, const struct gt_cli_target *t);

/* ---- kubectl's JSONPath (jsonpath.c) ---- */

/* The values expr (".a.b[0]", "{.items[*].metadata.name}", borrowed) finds
 * from root: *out a new JSON array of them (caller json_decref()s; empty
 * when nothing is there). 0, or GT_EBADREQ with err for a form that is not
 * supported (filters, slices, ..). */
int gt_cli_jsonpath_eval(const char *expr, const json_t *root, json_t **out, struct gt_err *err);
/* v as a template prints it: a string bare, anything else compact JSON. */
void gt_cli_jsonpath_text(const json_t *v, struct gt_buf *out);
/* Render a `-o jsonpath=` template (borrowed; text, {EXPR}, {range
 * EXPR}...{end}, {"literal"}) against root onto out. 0, or GT_EBADREQ
 * with err naming what does not parse. */
int gt_cli_jsonpath_render(const char *tmpl, const json_t *root, struct gt_buf *out,
                           struct gt_err *err);

/* ---- commands (the table in commands.c, helpers in cmdctx.c, handlers in
 * cmd_*.c) ---- */

/* What every command gets: the global flags and the lazily made client. */
struct gt_cli_ctx {
    const char *server_flag; /* --server, borrowed from argv; NULL if absent */
    const char *token_flag;  /* --token */
    struct gt_cli_client *client;
    char *default_project; /* the configuration file's "project", loaded once; owned */
    bool default_project_loaded;
    FILE *out;       /* results */
    FILE *err;       /* errors and notes */
    int task_status; /* run: the exit status of the task it followed to its end */
};

struct gt_cli_command;
typedef int (*gt_cli_run_fn)(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                             char **argv);

struct gt_cli_command {
    const char *name;
    const char *usage;   /* after "gantry ": "get KIND [NAME] [flags]" */
    const char *summary; /* one line for `gantry help` */
    const char *options; /* option lines for `gantry CMD --help`, or NULL */
    gt_cli_run_fn run;   /* argv[0] is the command name */
};

/* The client for ctx's server, made on first use from the flags,
 * environment and configuration file; *out is borrowed from ctx. 0, or the
 * configuration's error in err (GT_EBADREQ when no server is named). */
int gt_cli_ctx_client(struct gt_cli_ctx *ctx, struct gt_cli_client **out, struct gt_err *err);

/* The project a command works in: flag (-p, borrowed, may be NULL) when
 * given, else the configuration file's default project, as kubectl falls
 * back to its context's namespace. *project is NULL when neither names one;
 * it is borrowed from flag or ctx. 0, or the error of an unreadable
 * configuration file in err. */
int gt_cli_ctx_project(struct gt_cli_ctx *ctx, const char *flag, const char **project,
                       struct gt_err *err);

/* Print "error: <err's message>" to ctx->err; returns err's code
 * (GT_EINTERNAL if it has none). */
int gt_cli_fail(struct gt_cli_ctx *ctx, const struct gt_err *err);

/* Print "error: <fmt...>" and the command's usage line to ctx->err;
 * returns GT_EUSAGE. */
int gt_cli_usage_error(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, const char *fmt,
                       ...) __attribute__((format(printf, 3, 4)));

/* Parse argv's options with getopt_long (GNU argument order, so flags may
 * follow positionals); calls fn(opt, its argument or NULL, arg) for each,
 * which returns 0 or a code that stops the parse. On success
 * *first_positional is the index of the first non-option in the permuted
 * argv. Returns 0, fn's code, or GT_EUSAGE (after the usage message) for
 * an unknown option or a missing argument. */
typedef int (*gt_cli_opt_fn)(int opt, const char *optarg_value, void *arg);
int gt_cli_parse_opts(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                      char **argv, const char *shortopts, const struct option *longopts,
                      gt_cli_opt_fn fn, void *arg, int *first_positional);

/* Parse the options of a command whose only flag is -p/--project; *project
 * gets its value (borrowed from argv) or NULL. As gt_cli_parse_opts. */
int gt_cli_parse_project_opt(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                             char **argv, const char **project, int *first_positional);

/* Resolve a KIND argument and the project it needs: *kind from word
 * (gt_cli_kind_lookup), *project the flag's value for a project-scoped kind
 * and NULL for a cluster-scoped one. Returns 0, GT_EUSAGE after the
 * message for an unknown kind or a project-scoped kind without -p, or the
 * configuration's error after printing it. */
int gt_cli_resolve_kind(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, const char *word,
                        const char *project_flag, const struct gt_kind_info **kind,
                        const char **project);

int gt_cli_cmd_apply(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                     char **argv);
int gt_cli_cmd_get(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc, char **argv);
int gt_cli_cmd_describe(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                        char **argv);
int gt_cli_cmd_delete(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                      char **argv);
int gt_cli_cmd_run(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc, char **argv);
/* explain KIND[.FIELD...] (cmd_explain.c): the schema's description of it. */
int gt_cli_cmd_explain(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                       char **argv);
int gt_cli_cmd_version(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                       char **argv);
/* `gantry mpi-rsh HOST CMD...` (cmd_exec.c): an MPI launcher's rsh agent. */
int gt_cli_cmd_mpi_rsh(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                       char **argv);
int gt_cli_cmd_exec(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                    char **argv);
int gt_cli_cmd_volume(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                      char **argv);
/* `gantry model register|stage` (cmd_model.c). */
int gt_cli_cmd_model(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                     char **argv);
/* The Volume `gantry volume create` sends (new reference): name in
 * project (borrowed), spec.capacity.storage size as given, and the
 * optional storageClass, accessMode (NULL: absent) and readOnly. */
json_t *gt_cli_volume_manifest(const char *project, const char *name, const char *size,
                               const char *class_name, const char *access_mode, bool read_only);
int gt_cli_cmd_logs(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                    char **argv);
/* label and taint (by cmd->name): KIND node only */
int gt_cli_cmd_label(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                     char **argv);
/* cordon, uncordon and drain (by cmd->name) */
int gt_cli_cmd_node(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                    char **argv);
int gt_cli_cmd_notebook(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                        char **argv);
int gt_cli_cmd_top(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc, char **argv);
/* `top jobs` (cmd_usage.c), from gt_cli_cmd_top. */
int gt_cli_top_jobs(struct gt_cli_ctx *ctx);
int gt_cli_cmd_scalars(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                       char **argv);
int gt_cli_cmd_report(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                      char **argv);
int gt_cli_cmd_up(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc, char **argv);
int gt_cli_cmd_down(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                    char **argv);

/* `gantry get images` (cmd_images.c): official images and the Succeeded
 * ImageBuilds of project (NULL: every readable project) as a table on
 * ctx->out. 0 or the request's error. */
int gt_cli_get_images(struct gt_cli_ctx *ctx, struct gt_cli_client *client, const char *project,
                      struct gt_err *err);

/* ---- gantry up's processes (cmd_up.c, upregistry.c) ---- */

/* Write text to path, mode 0600. 0 or -errno with err. */
int gt_cli_up_write_private(const char *path, const char *text, struct gt_err *err);
/* Start argv[0] (searched in PATH when it has no '/') as a daemon in its
 * own session, stdin /dev/null, stdout and stderr appended to log_path;
 * its pid into *pid and pid_path. */
int gt_cli_up_spawn(char *const *argv, const char *log_path, const char *pid_path, pid_t *pid,
                    struct gt_err *err);

/* gantry up --ha (upha.c): the replicas (and etcd members) it runs. */
#define GT_CLI_UP_HA_REPLICAS 3
/* A port free on host (IPv4 text) just now, or -1. */
int gt_cli_up_free_port(const char *host);
/* Start the 3-member etcd under dir (logs in logs) on free ports of host
 * and wait until it answers; *store gets gantryd's --store value (heap).
 * 0 or an error naming the log. */
int gt_cli_up_ha_etcd(const char *dir, const char *logs, const char *host, char **store,
                      struct gt_err *err);
/* Start gantryd replica n (2, 3, ...) with the first replica's argv[0..argc)
 * (borrowed) plus its own --data-dir, --listen on host:port (a port the
 * caller found free, and named in every replica's --replica-url) and
 * --replica-id, and the first one's --secret-key file (every replica
 * derives the same notebook tokens), pid file gantrydN.pid, and wait until
 * it is healthy; *url gets its http://HOST:PORT (heap). */
int gt_cli_up_ha_replica(char **argv, size_t argc, int n, const char *dir, const char *logs,
                         const char *host, int port, const char *secret_key, char **url,
                         struct gt_err *err);

/* Where gantry up's cluster registry lives (all borrowed). */
struct gt_cli_up_registry {
    const char *dir;    /* DATA_DIR */
    const char *logs;   /* DATA_DIR/logs */
    const char *addr;   /* HOST:PORT it listens on */
    const char *server; /* gantryd's URL, the token realm's base */
    char **key_out;     /* gets gantryd's --registry-key path (caller frees) */
};
/* Start the registry (upregistry.c). GT_ENOTFOUND, err untouched, when
 * docker-registry or openssl is not on PATH; else 0 or the error. */
int gt_cli_up_registry_start(const struct gt_cli_up_registry *r, struct gt_err *err);

#endif
