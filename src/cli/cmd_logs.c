/*
 * `gantry logs JOB|TASK [--replica worker-1] [-f] [--tail N] [--previous]
 * [--timestamps] [--since DURATION | --since-time RFC3339] [-p PROJECT]`:
 * print the log of one of a job's tasks (see gt_cli_logs_task_name for
 * which), or of the task of that name when no job has it, through
 * gantryd's log endpoint; -f waits for the task to start and follows its
 * log until it has ended; --previous prints the log of the task's run
 * before its last restart; --timestamps puts each line's time in front,
 * --since and --since-time leave out what was written before (kubectl's
 * flags; DURATION as Go's: 30s, 5m, 1h30m).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"

enum { OPT_REPLICA = 1000, OPT_TAIL, OPT_PREVIOUS, OPT_TIMESTAMPS, OPT_SINCE, OPT_SINCE_TIME };

struct logs_flags {
    const char *project;
    const char *replica;
    struct gt_cli_log_opts lo;
    bool bad_tail;
    const char *since, *since_time;
};

/* A Go duration ("90s", "5m", "1h30m", "250ms") in ms; false if malformed. */
static bool parse_duration(const char *s, int64_t *ms)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    int64_t total = 0;
    if (!*s) {
        return false;
    }
    while (*s) {
        char *end;
        errno = 0;
        long long n = strtoll(s, &end, 10);
        if (errno || end == s || n < 0 || n > 1000000000LL) {
            return false;
        }
        size_t i = 0;
        while (i < GT_ARRAY_LEN(units) && strncmp(end, units[i].unit, strlen(units[i].unit)) != 0) {
            i++;
        }
        if (i == GT_ARRAY_LEN(units)) {
            return false;
        }
        total += n * units[i].ms;
        s = end + strlen(units[i].unit);
    }
    *ms = total;
    return true;
}

static int on_logs_opt(int opt, const char *value, void *arg)
{
    struct logs_flags *f = arg;
    char *end;
    switch (opt) {
    case 'p':
        f->project = value;
        break;
    case 'f':
        f->lo.follow = true;
        break;
    case OPT_REPLICA:
        f->replica = value;
        break;
    case OPT_PREVIOUS:
        f->lo.previous = true;
        break;
    case OPT_TIMESTAMPS:
        f->lo.timestamps = true;
        break;
    case OPT_SINCE:
        f->since = value;
        break;
    case OPT_SINCE_TIME:
        f->since_time = value;
        break;
    default:
        GT_ASSERT(opt == OPT_TAIL);
        errno = 0;
        f->lo.tail_lines = strtol(value, &end, 10);
        f->bad_tail = errno != 0 || end == value || *end || f->lo.tail_lines < 0;
        break;
    }
    return 0;
}

/* Does project have a Task called name? */
static bool is_task(struct gt_cli_client *client, const char *project, const char *name)
{
    struct gt_err err = {0};
    char *path = gt_cli_kind_path(gt_kind_get(GT_KIND_TASK), project, name);
    bool found = gt_cli_client_request(client, "GET", path, NULL, NULL, &err) == 0;
    free(path);
    return found;
}

int gt_cli_cmd_logs(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc, char **argv)
{
    static const struct option long_opts[] = {
        {"project", required_argument, NULL, 'p'},
        {"follow", no_argument, NULL, 'f'},
        {"replica", required_argument, NULL, OPT_REPLICA},
        {"tail", required_argument, NULL, OPT_TAIL},
        {"previous", no_argument, NULL, OPT_PREVIOUS},
        {"timestamps", no_argument, NULL, OPT_TIMESTAMPS},
        {"since", required_argument, NULL, OPT_SINCE},
        {"since-time", required_argument, NULL, OPT_SINCE_TIME},
        {NULL, 0, NULL, 0},
    };
    struct logs_flags f = {.lo.tail_lines = -1};
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "p:f", long_opts, on_logs_opt, &f, &first);
    if (rc != 0) {
        return rc;
    }
    if (f.bad_tail) {
        return gt_cli_usage_error(ctx, cmd, "--tail: want a number of lines >= 0");
    }
    int64_t since_ms = 0;
    if (f.since && f.since_time) {
        return gt_cli_usage_error(ctx, cmd, "--since and --since-time: give only one");
    }
    if (f.since && !parse_duration(f.since, &since_ms)) {
        return gt_cli_usage_error(ctx, cmd, "--since: want a duration such as 30s, 5m or 1h30m");
    }
    if (f.since) {
        f.lo.since_ms = gt_now_ms() - since_ms;
    }
    if (f.since_time && gt_time_parse(f.since_time, &f.lo.since_ms) != 0) {
        return gt_cli_usage_error(ctx, cmd,
                                  "--since-time: want an RFC 3339 time in UTC "
                                  "(2026-12-02T03:04:05Z)");
    }
    if (argc - first != 1) {
        return gt_cli_usage_error(ctx, cmd, argc - first < 1 ? "name a job" : "too many arguments");
    }
    const char *job = argv[first];
    struct gt_err err = {0};
    const char *project;
    if (gt_cli_ctx_project(ctx, f.project, &project, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    if (!project) {
        return gt_cli_usage_error(ctx, cmd, "no project: pass -p PROJECT");
    }
    struct gt_cli_client *client;
    json_t *job_obj = NULL;
    struct gt_api_job *job_typed = NULL;
    char *task = NULL;
    if (gt_cli_ctx_client(ctx, &client, &err) != 0) {
        rc = gt_cli_fail(ctx, &err);
        goto out;
    }
    if (!f.replica) {
        char *path = gt_cli_kind_path(gt_kind_get(GT_KIND_JOB), project, job);
        rc = gt_cli_client_request(client, "GET", path, NULL, &job_obj, &err);
        free(path);
        if (rc == GT_ENOTFOUND && is_task(client, project, job)) {
            task = gt_xstrdup(job); /* not a job but a task of that name */
        } else if (rc != 0) {
            rc = gt_cli_fail(ctx, &err);
            goto out;
        }
        job_typed = job_obj ? gt_api_job_new(job_obj) : NULL;
    }
    task = task ? task : gt_cli_logs_task_name(job, job_typed, f.replica, &err);
    if (!task) {
        rc = gt_cli_fail(ctx, &err);
        goto out;
    }
    /* a task not started yet has no log to follow: wait for it (a previous
     * run has ended already) */
    if (f.lo.follow && !f.lo.previous) {
        struct gt_api_task *started = NULL;
        rc = gt_cli_task_wait(client, project, task, GT_CLI_TASK_STARTED, false, &started, &err);
        gt_api_task_free(started);
        if (rc != 0) {
            rc = gt_cli_fail(ctx, &err);
            goto out;
        }
    }
    rc = gt_cli_task_log_copy(client, project, task, &f.lo, ctx->out, &err);
    rc = rc == 0 ? 0 : gt_cli_fail(ctx, &err);
out:
    free(task);
    gt_api_job_free(job_typed);
    json_decref(job_obj);
    return rc;
}
