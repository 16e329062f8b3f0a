/*
 * `gantry exec TASK [-p PROJECT] -- CMD [ARGS...]`: run a command inside a
 * running task, as `kubectl exec POD -- CMD` does: POST .../tasks/TASK/exec
 * (gantryd proxies it to the task's node agent, which joins the task's
 * namespaces, cgroup, user, environment and working directory). The
 * command's stdout and stderr are printed once it has ended, and gantry
 * exits with its exit code. Standard input and terminals (-i, -t) are not
 * offered.
 */
#include <string.h>

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
    json_t *body = json_pack("{s:o}", "command", command);
    char *obj = gt_cli_kind_path(gt_kind_get(GT_KIND_TASK), project, argv[first]);
    char *path = gt_xasprintf("%s/exec", obj);
    json_t *ans = NULL;
    rc = gt_cli_client_request(client, "POST", path, body, &ans, &err);
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
