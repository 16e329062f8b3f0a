/*
 * `gantry run [--gpus N] [--cpu Q] [--memory Q] [--workers N] [-p PROJECT]
 * [--name NAME] [--image IMG] [--workdir DIR] [--git URL [--revision R]]
 * [--requirements FILE] -- CMD ARGS...`: submit a Job (one task, or with --workers a
 * PyTorch-style Master and N Workers running the same command), follow the
 * log of its first task (the master) to standard output and exit with that
 * task's exit status (see gt_cli_task_exit_status). --requirements reads
 * the local file and sends its lines as spec.requirements. --workdir is the
 * tasks' working directory on the node, made absolute here against the
 * current directory (on a local cluster the node's files are the user's:
 * `--workdir .` runs the command beside the user's files).
 *
 * Ctrl-C after the submit stops following only: the job keeps running and
 * nothing is deleted. SIGINT is blocked and read from a signalfd that the
 * HTTP client polls, so no handler or global flag is needed; the previous
 * signal mask is restored before returning.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli/cli_int.h"

#define REQUIREMENTS_MAX_BYTES (1 << 20)

enum {
    OPT_GPUS = 1000,
    OPT_CPU,
    OPT_MEMORY,
    OPT_NAME,
    OPT_IMAGE,
    OPT_WORKERS,
    OPT_GIT,
    OPT_REVISION,
    OPT_REQUIREMENTS,
    OPT_VOLUME,
    OPT_WORKDIR,
};

struct run_flags {
    const char *project;
    const char *requirements_file;
    const char *workdir;
    bool bad_workers;
    bool too_many_volumes;
    struct gt_cli_run_opts o;
};

static int on_run_opt(int opt, const char *value, void *arg)
{
    struct run_flags *f = arg;
    char *end;
    long n;
    switch (opt) {
    case 'p':
        f->project = value;
        break;
    case OPT_GPUS:
        f->o.gpus = value;
        break;
    case OPT_CPU:
        f->o.cpu = value;
        break;
    case OPT_MEMORY:
        f->o.memory = value;
        break;
    case OPT_NAME:
        f->o.name = value;
        break;
    case OPT_IMAGE:
        f->o.image = value;
        break;
    case OPT_WORKERS:
        errno = 0;
        n = strtol(value, &end, 10);
        f->bad_workers = errno != 0 || end == value || *end || n < 1 || n > 4096;
        f->o.workers = f->bad_workers ? 0 : (int)n;
        break;
    case OPT_GIT:
        f->o.git = value;
        break;
    case OPT_REVISION:
        f->o.revision = value;
        break;
    case OPT_VOLUME:
        if (f->o.n_volumes == GT_CLI_RUN_VOLUMES_MAX) {
            f->too_many_volumes = true;
        } else {
            f->o.volumes[f->o.n_volumes++] = value;
        }
        break;
    case OPT_WORKDIR:
        f->workdir = value;
        break;
    default:
        GT_ASSERT(opt == OPT_REQUIREMENTS);
        f->requirements_file = value;
        break;
    }
    return 0;
}

/* The requirement lines of the local file path (at most 1 MiB): *out a
 * new JSON array. Errors name the flag. */
static int read_requirements(const char *path, json_t **out, struct gt_err *err)
{
    *out = NULL;
    char *text;
    size_t len;
    int rc = gt_file_read(path, REQUIREMENTS_MAX_BYTES, &text, &len, err);
    if (rc < 0) {
        gt_err_prefix(err, "--requirements"); /* the message names the path */
        return rc;
    }
    rc = gt_cli_requirements_parse(text, len, out, err);
    free(text);
    if (rc < 0) {
        gt_err_prefix(err, "--requirements %s", path);
    }
    return rc;
}

/* While a job waits: the last wait message printed (owned). */
struct queue_watch {
    FILE *err;
    char *said;
};

/* Whether job's condition type is True; *message gets its message. */
static bool cond_true(const struct gt_api_job *job, const char *type, const char **message)
{
    const struct gt_api_condition *c = gt_api_condition_find(&job->status.conditions, type);
    if (!c || !c->status || strcmp(c->status, "True")) {
        return false;
    }
    *message = c->message;
    return true;
}

/* A job watch event: print each new reason the job waits for (its Queued
 * condition's message, as srun's "queued and waiting for resources");
 * 1 once the job has moved on, -ENOENT once it is gone. */
static int on_job_event(const json_t *event, void *arg)
{
    struct queue_watch *q = arg;
    static const char *const moved_on[] = {"Running", "Restarting", "Succeeded", "Failed"};
    const char *type = json_string_value(json_object_get(event, "type"));
    const char *msg = NULL;
    if (!type) {
        return 1;
    }
    if (!strcmp(type, "DELETED")) {
        return -ENOENT;
    }
    struct gt_api_job *job = gt_api_job_new(json_object_get(event, "object"));
    int rc = 0;
    for (size_t i = 0; i < GT_ARRAY_LEN(moved_on) && !rc; i++) {
        rc = cond_true(job, moved_on[i], &msg);
    }
    if (!rc && cond_true(job, "Queued", &msg) && msg && *msg &&
        (!q->said || strcmp(q->said, msg))) {
        fprintf(q->err, "waiting: %s\n", msg);
        free(q->said);
        q->said = gt_xstrdup(msg);
    }
    gt_api_job_free(job);
    return rc;
}

/* Until job runs (or ends), say why it waits whenever that changes. */
static int wait_queued(struct gt_cli_ctx *ctx, struct gt_cli_client *client, const char *project,
                       const char *job, struct gt_err *err)
{
    char *coll = gt_cli_kind_path(gt_kind_get(GT_KIND_JOB), project, NULL);
    char *sel = gt_xasprintf("metadata.name=%s", job);
    char *sel_q = gt_cli_url_escape(sel);
    char *path = gt_xasprintf("%s?watch=true&resourceVersion=0&fieldSelector=%s", coll, sel_q);
    struct queue_watch q = {.err = ctx->err};
    int rc;
    while ((rc = gt_cli_client_watch(client, path, on_job_event, &q, err)) == 0) {
    }
    if (rc == -ENOENT) {
        rc = gt_err_set(err, GT_ENOTFOUND, "job %s was deleted before it ran", job);
    }
    free(q.said);
    free(path);
    free(sel_q);
    free(sel);
    free(coll);
    return rc == 1 ? 0 : rc;
}

/* Follow the submitted job's task to its end, its exit status in
 * ctx->task_status. 0, -ECANCELED when stopped by Ctrl-C, or the error of
 * following it; reported. */
static int follow_task(struct gt_cli_ctx *ctx, struct gt_cli_client *client, const char *project,
                       const char *job, const char *type)
{
    char *name = gt_xasprintf("%s-%s-0", job, type);
    struct gt_err err = {0};
    struct gt_api_task *task = NULL;
    int rc = wait_queued(ctx, client, project, job, &err);
    if (rc == 0) {
        rc = gt_cli_task_wait(client, project, name, GT_CLI_TASK_STARTED, true, &task, &err);
    }
    bool ran = rc == 0 && (task->status.start_time || !gt_cli_task_reached(task, GT_CLI_TASK_DONE));
    if (ran) {
        struct gt_err log_err = {0};
        const struct gt_cli_log_opts lo = {.follow = true, .tail_lines = -1};
        int log_rc = gt_cli_task_log_copy(client, project, name, &lo, ctx->out, &log_err);
        if (log_rc == -ECANCELED) {
            rc = log_rc;
        } else if (log_rc < 0) {
            fprintf(ctx->err, "warning: cannot follow the log of task %s: %s\n", name, log_err.msg);
        }
    }
    if (rc == 0 && !gt_cli_task_reached(task, GT_CLI_TASK_DONE)) {
        gt_api_task_free(task);
        rc = gt_cli_task_wait(client, project, name, GT_CLI_TASK_DONE, true, &task, &err);
    }
    if (rc == -ECANCELED) {
        fprintf(ctx->err,
                "stopped following; job %s keeps running (gantry logs -f %s -p %s, "
                "gantry delete job %s -p %s)\n",
                job, job, project, job, project);
    } else if (rc < 0) {
        rc = gt_cli_fail(ctx, &err);
    } else {
        char msg[512];
        ctx->task_status = gt_cli_task_exit_status(task, msg, sizeof(msg));
        if (msg[0]) {
            fprintf(ctx->err, "error: %s\n", msg);
        }
    }
    gt_api_task_free(task);
    free(name);
    return rc;
}

/* Submit job, then follow its task of replica type (lower case) with
 * SIGINT routed to a signalfd. */
static int submit_and_follow(struct gt_cli_ctx *ctx, struct gt_cli_client *client, json_t *job,
                             const char *type)
{
    const char *name = gt_obj_name(job);
    const char *project = gt_obj_project(job);
    sigset_t mask, old_mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    /* Blocked before the submit, so a Ctrl-C right after it is not lost. */
    GT_ASSERT(sigprocmask(SIG_BLOCK, &mask, &old_mask) == 0);
    int sig_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    GT_ASSERT(sig_fd >= 0);
    struct gt_err err = {0};
    char *path = gt_cli_kind_path(gt_kind_get(GT_KIND_JOB), project, NULL);
    int rc;
    if (gt_cli_client_request(client, "POST", path, job, NULL, &err) != 0) {
        rc = gt_cli_fail(ctx, &err);
    } else {
        fprintf(ctx->err, "job.gantry.dev/%s created\n", name);
        gt_cli_client_set_cancel_fd(client, sig_fd);
        rc = follow_task(ctx, client, project, name, type);
        gt_cli_client_set_cancel_fd(client, -1);
    }
    free(path);
    /* Drop a pending SIGINT already answered by stopping, then unblock. */
    struct signalfd_siginfo si;
    while (read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
    }
    close(sig_fd);
    GT_ASSERT(sigprocmask(SIG_SETMASK, &old_mask, NULL) == 0);
    return rc;
}

int gt_cli_cmd_run(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc, char **argv)
{
    static const struct option long_opts[] = {
        {"project", required_argument, NULL, 'p'},
        {"gpus", required_argument, NULL, OPT_GPUS},
        {"cpu", required_argument, NULL, OPT_CPU},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"name", required_argument, NULL, OPT_NAME},
        {"image", required_argument, NULL, OPT_IMAGE},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"git", required_argument, NULL, OPT_GIT},
        {"revision", required_argument, NULL, OPT_REVISION},
        {"requirements", required_argument, NULL, OPT_REQUIREMENTS},
        {"volume", required_argument, NULL, OPT_VOLUME},
        {"workdir", required_argument, NULL, OPT_WORKDIR},
        {NULL, 0, NULL, 0},
    };
    struct run_flags f = {0};
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "p:", long_opts, on_run_opt, &f, &first);
    if (rc != 0) {
        return rc;
    }
    if (first >= argc) {
        return gt_cli_usage_error(ctx, cmd, "name the command to run after --");
    }
    if (f.bad_workers) {
        return gt_cli_usage_error(ctx, cmd, "--workers: want a number of workers from 1 to 4096");
    }
    if (f.too_many_volumes) {
        return gt_cli_usage_error(ctx, cmd, "--volume: at most %d", GT_CLI_RUN_VOLUMES_MAX);
    }
    if (f.o.revision && !f.o.git) {
        return gt_cli_usage_error(ctx, cmd, "--revision needs --git URL");
    }
    struct gt_err err = {0};
    json_t *reqs = NULL;
    if (f.requirements_file && read_requirements(f.requirements_file, &reqs, &err) < 0) {
        return gt_cli_fail(ctx, &err);
    }
    f.o.requirements = reqs;
    char *workdir = NULL;
    if (f.workdir && f.workdir[0] != '/' && !(workdir = realpath(f.workdir, NULL))) {
        json_decref(reqs);
        gt_err_set(&err, -errno, "--workdir %s: %s", f.workdir, strerror(errno));
        return gt_cli_fail(ctx, &err);
    }
    f.o.workdir = workdir ? workdir : f.workdir;
    const char *project;
    if (gt_cli_ctx_project(ctx, f.project, &project, &err) != 0) {
        json_decref(reqs);
        free(workdir);
        return gt_cli_fail(ctx, &err);
    }
    if (!project) {
        json_decref(reqs);
        free(workdir);
        return gt_cli_usage_error(ctx, cmd, "no project: pass -p PROJECT (or run 'gantry up')");
    }
    char *name = f.o.name ? NULL : gt_cli_run_name_new();
    f.o.name = f.o.name ? f.o.name : name;
    f.o.project = project;
    f.o.argc = argc - first;
    f.o.argv = argv + first;
    json_t *job = NULL;
    struct gt_cli_client *client;
    if (gt_cli_run_job_build(&f.o, &job, &err) != 0) {
        rc = gt_cli_fail(ctx, &err);
    } else if (gt_cli_ctx_client(ctx, &client, &err) != 0) {
        rc = gt_cli_fail(ctx, &err);
    } else {
        rc = submit_and_follow(ctx, client, job, f.o.workers > 0 ? "master" : "worker");
    }
    json_decref(reqs);
    json_decref(job);
    free(workdir);
    free(name);
    return rc;
}
