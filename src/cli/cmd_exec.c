/*
 * `gantry exec TASK [-p PROJECT] -- CMD [ARGS...]`: run a command inside a
 * running task, as `kubectl exec POD -- CMD` does: POST .../tasks/TASK/exec
 * (gantryd proxies it to the task's node agent, which joins the task's
 * namespaces, cgroup, user, environment and working directory). The
 * command's stdout and stderr are printed once it has ended, and gantry
 * exits with its exit code. Standard input and terminals (-i, -t) are not
 * offered.
 *
 * `gantry mpi-rsh HOST CMD...` (or gantry called by its link
 * GT_MPI_RSH_AGENT) is the same request as an MPI launcher's rsh agent, in
 * place of ssh: mpirun (Open MPI's plm_rsh, Intel MPI's and
 * MPICH's hydra with bootstrap rsh) calls it as `AGENT [ssh options] HOST
 * CMD...`, and, as ssh does, it joins CMD's words with spaces and runs them
 * with /bin/sh -c inside the worker task HOST names (its first label: the
 * hostfile's "<job>-worker-<i>.<job>.<project>.svc" is task
 * "<job>-worker-<i>"), in the launcher's project ($GANTRY_PROJECT),
 * authenticated by the job's credential in $GANTRY_TOKEN (the launcher's
 * agent sets both, and $GANTRY_SERVER). It lasts as long as the remote
 * daemon (no request time limit), relays its output when it ends and
 * exits with its status; mpirun forwards -x variables and the ranks' I/O
 * over its own connections. A worker that is not running yet (gantry
 * starts the job's tasks together) is waited for, up to
 * MPI_RSH_WAIT_S.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli_int.h"

enum { OPT_STDIN = 'i', OPT_TTY = 't' };

static int on_exec_opt(int opt, const char *value, void *arg)
{
    const char **project = arg;
    if (opt == 'p') {
        *project = value;
        return 0;
    }
    GT_ASSERT(opt == OPT_STDIN || opt == OPT_TTY);
    return GT_EUSAGE;
}

/* Print the answer's streams; ctx->task_status gets its exit code. */
static int print_answer(struct gt_cli_ctx *ctx, const json_t *ans, struct gt_err *err)
{
    const json_t *out = json_object_get(ans, "stdout");
    const json_t *errs = json_object_get(ans, "stderr");
    const json_t *code = json_object_get(ans, "exitCode");
    if (!json_is_string(out) || !json_is_string(errs) || !json_is_integer(code) ||
        json_integer_value(code) < 0 || json_integer_value(code) > 255) {
        return gt_err_set(err, GT_EINTERNAL, "the exec answer lacks stdout, stderr or exitCode");
    }
    fwrite(json_string_value(out), 1, json_string_length(out), ctx->out);
    fwrite(json_string_value(errs), 1, json_string_length(errs), ctx->err);
    ctx->task_status = (int)json_integer_value(code);
    return 0;
}

/* POST {"command": words} to TASK's exec in project and print the answer;
 * wait_s > 0: retry while the task is not running yet (409) for up to that
 * many seconds. */
static int exec_in(struct gt_cli_ctx *ctx, struct gt_cli_client *client, const char *project,
                   const char *task, json_t *command, int wait_s)
{
    struct gt_err err = {0};
    json_t *body = json_pack("{s:O}", "command", command);
    char *obj = gt_cli_kind_path(gt_kind_get(GT_KIND_TASK), project, task);
    char *path = gt_xasprintf("%s/exec", obj);
    json_t *ans = NULL;
    time_t until = time(NULL) + wait_s;
    int rc;
    for (;;) {
        rc = gt_cli_client_request(client, "POST", path, body, &ans, &err);
        if (rc != GT_ECONFLICT || time(NULL) >= until) {
            break;
        }
        struct timespec ts = {.tv_sec = 1};
        nanosleep(&ts, NULL);
        err = (struct gt_err){0};
    }
    if (rc == 0) {
        rc = print_answer(ctx, ans, &err);
    }
    rc = rc == 0 ? 0 : gt_cli_fail(ctx, &err);
    json_decref(ans);
    json_decref(body);
    free(path);
    free(obj);
    return rc;
}

enum { MPI_RSH_WAIT_S = 300 };

/* ssh's options that take a value, which mpirun may pass before HOST
 * (OMPI_MCA_plm_rsh_args, I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS). */
static bool ssh_opt_with_value(const char *a)
{
    return strlen(a) == 2 && strchr("bcDEeFIiJLlmOopQRSWw", a[1]);
}

int gt_cli_cmd_mpi_rsh(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                       char **argv)
{
    int i = 1;
    while (i < argc && argv[i][0] == '-') {
        i += ssh_opt_with_value(argv[i]) ? 2 : 1;
    }
    if (i + 1 >= argc) {
        return gt_cli_usage_error(ctx, cmd, "give HOST and the command");
    }
    const char *project = getenv("GANTRY_PROJECT");
    if (!project || !*project) {
        return gt_cli_usage_error(ctx, cmd,
                                  "GANTRY_PROJECT is not set (mpi-rsh runs in an MPI launcher)");
    }
    struct gt_err err = {0};
    struct gt_cli_client *client;
    if (gt_cli_ctx_client(ctx, &client, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    gt_cli_client_set_timeout(client, 0);
    char *task = gt_xstrndup(argv[i], strcspn(argv[i], "."));
    struct gt_buf line;
    gt_buf_init(&line);
    for (int k = i + 1; k < argc; k++) {
        gt_buf_printf(&line, "%s%s", k > i + 1 ? " " : "", argv[k]);
    }
    json_t *command = json_pack("[s,s,s]", "/bin/sh", "-c", line.data);
    int rc = exec_in(ctx, client, project, task, command, MPI_RSH_WAIT_S);
    json_decref(command);
    gt_buf_fini(&line);
    free(task);
    return rc;
}

int gt_cli_cmd_exec(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc, char **argv)
{
    static const struct option long_opts[] = {
        {"project", required_argument, NULL, 'p'},
        {"stdin", no_argument, NULL, OPT_STDIN},
        {"tty", no_argument, NULL, OPT_TTY},
        {NULL, 0, NULL, 0},
    };
    int dashes = 1;
    while (dashes < argc && strcmp(argv[dashes], "--") != 0) {
        dashes++;
    }
    const char *flag_project = NULL;
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, dashes, argv, "p:it", long_opts, on_exec_opt,
                               &flag_project, &first);
    if (rc == GT_EUSAGE) {
        return gt_cli_usage_error(ctx, cmd,
                                  "-i/-t: exec with standard input or a terminal is "
                                  "not supported; give the command after --");
    }
    if (rc != 0) {
        return rc;
    }
    if (dashes - first != 1) {
        return gt_cli_usage_error(ctx, cmd,
                                  dashes - first < 1 ? "name a task" : "too many arguments");
    }
    if (dashes + 1 >= argc) {
        return gt_cli_usage_error(ctx, cmd, "give the command after --");
    }
    struct gt_err err = {0};
    const char *project;
    if (gt_cli_ctx_project(ctx, flag_project, &project, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    if (!project) {
        return gt_cli_usage_error(ctx, cmd, "no project: pass -p PROJECT");
    }
    struct gt_cli_client *client;
    if (gt_cli_ctx_client(ctx, &client, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    json_t *command = json_array();
    for (int i = dashes + 1; i < argc; i++) {
        json_array_append_new(command, json_string(argv[i]));
    }
    rc = exec_in(ctx, client, project, argv[first], command, 0);
    json_decref(command);
    return rc;
}
