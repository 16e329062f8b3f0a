/*
 * `gantry exec TASK [-p PROJECT] -- CMD [ARGS...]`: run a command inside a
 * running task, as `kubectl exec POD -- CMD` does: POST .../tasks/TASK/exec
 * (gantryd proxies it to the task's node agent, which joins the task's
 * namespaces, cgroup, user, environment and working directory). The
 * command's stdout and stderr are printed once it has ended, and gantry
 * exits with its exit code. With -i (copy standard input to the command)
 * or -t (a terminal in the task: the local one in raw mode meanwhile, its
 * size sent at the start and on SIGWINCH) the exec is a stream instead:
 * the same POST with "Upgrade: v4.channel.gantry.dev", then frames both
 * ways (common/execframe.h) while the command runs, output printed as it
 * comes, and gantry exits with the status frame's exit code.
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
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_int.h"

enum { OPT_STDIN = 'i', OPT_TTY = 't' };

struct exec_opts {
    const char *project;
    bool in, tty;
};

static int on_exec_opt(int opt, const char *value, void *arg)
{
    struct exec_opts *o = arg;
    if (opt == 'p') {
        o->project = value;
    } else if (opt == OPT_STDIN) {
        o->in = true;
    } else {
        GT_ASSERT(opt == OPT_TTY);
        o->tty = true;
    }
    return 0;
}

/* ---- the stream (-i, -t) ---- */

static struct termios saved_tio; /* the terminal's mode before raw */
static volatile sig_atomic_t raw_on, resized;

static void restore_tty(void)
{
    if (raw_on) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
        raw_on = 0;
    }
}

static void on_fatal_signal(int sig)
{
    restore_tty();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void on_winch(int sig)
{
    (void)sig;
    resized = 1;
}

/* The local terminal in raw mode (restored at exit and on a fatal signal);
 * SIGWINCH noted for a resize frame. */
static void make_raw(void)
{
    struct termios tio;
    if (tcgetattr(STDIN_FILENO, &saved_tio) != 0) {
        return;
    }
    tio = saved_tio;
    cfmakeraw(&tio);
    if (tcsetattr(STDIN_FILENO, TCSANOW, &tio) != 0) {
        return;
    }
    raw_on = 1;
    atexit(restore_tty);
    static const int sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE};
    for (size_t i = 0; i < GT_ARRAY_LEN(sigs); i++) {
        signal(sigs[i], on_fatal_signal);
    }
}

static int send_frame(struct gt_cli_client *client, int ch, const void *data, size_t len)
{
    uint8_t h[GT_EXEC_HEAD];
    gt_exec_frame_head(h, ch, len);
    int rc = gt_cli_client_send(client, h, sizeof(h));
    return rc == 0 && len ? gt_cli_client_send(client, data, len) : rc;
}

/* A resize frame with the local terminal's size, if it has one. */
static int send_size(struct gt_cli_client *client)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) != 0) {
        return 0;
    }
    char js[64];
    int n = snprintf(js, sizeof(js), "{\"Width\":%u,\"Height\":%u}", ws.ws_col, ws.ws_row);
    return send_frame(client, GT_EXEC_RESIZE, js, (size_t)n);
}

static void write_all(FILE *f, const char *data, size_t len)
{
    fwrite(data, 1, len, f);
    fflush(f);
}

/* Handle the whole frames at the start of b (consumed); *code gets the
 * status frame's exit code. -1: a frame too large or a bad status. */
static int take_frames(struct gt_cli_ctx *ctx, struct gt_buf *b, int *code)
{
    size_t off = 0;
    while (b->len - off >= GT_EXEC_HEAD) {
        const uint8_t *h = (const uint8_t *)b->data + off;
        size_t len = gt_exec_frame_len(h);
        if (len > GT_EXEC_FRAME_MAX) {
            return -1;
        }
        if (b->len - off < GT_EXEC_HEAD + len) {
            break;
        }
        const char *d = b->data + off + GT_EXEC_HEAD;
        if (h[0] == GT_EXEC_STDOUT || h[0] == GT_EXEC_STDERR) {
            write_all(h[0] == GT_EXEC_STDOUT ? ctx->out : ctx->err, d, len);
        } else if (h[0] == GT_EXEC_STATUS) {
            json_t *st = json_loadb(d, len, 0, NULL);
            const json_t *c = json_object_get(st, "exitCode");
            *code = json_is_integer(c) && json_integer_value(c) >= 0 && json_integer_value(c) <= 255
                        ? (int)json_integer_value(c)
                        : -1;
            json_decref(st);
            if (*code < 0) {
                return -1;
            }
        }
        off += GT_EXEC_HEAD + len;
    }
    memmove(b->data, b->data + off, b->len - off);
    b->len -= off;
    return 0;
}

/* Run command in task over an upgraded stream: stdin copied with in, a
 * terminal with tty; ctx->task_status gets the remote exit code. */
static int exec_stream(struct gt_cli_ctx *ctx, struct gt_cli_client *client, const char *project,
                       const char *task, json_t *command, bool in, bool tty)
{
    struct gt_err err = {0};
    json_t *body = json_pack("{s:O,s:b,s:b}", "command", command, "stdin", in, "tty", tty);
    char *obj = gt_cli_kind_path(gt_kind_get(GT_KIND_TASK), project, task);
    char *path = gt_xasprintf("%s/exec", obj);
    int rc = gt_cli_client_upgrade(client, path, body, GT_EXEC_PROTOCOL, &err);
    json_decref(body);
    free(path);
    free(obj);
    if (rc != 0) {
        return gt_cli_fail(ctx, &err);
    }
    if (tty && isatty(STDIN_FILENO)) {
        make_raw();
        signal(SIGWINCH, on_winch);
        rc = send_size(client);
    }
    struct gt_buf b;
    gt_buf_init(&b);
    bool in_open = in;
    int code = -1;
    char chunk[65536];
    while (rc == 0) {
        if (resized) {
            resized = 0;
            rc = send_size(client);
        }
        ssize_t n = -EAGAIN;
        while (rc == 0 && (n = gt_cli_client_recv(client, chunk, sizeof(chunk))) > 0) {
            gt_buf_append(&b, chunk, (size_t)n);
            rc = take_frames(ctx, &b, &code);
        }
        if (rc != 0 || n == 0 || n == -EIO) {
            break;
        }
        struct pollfd pfd[2] = {{.fd = gt_cli_client_fd(client), .events = POLLIN},
                                {.fd = STDIN_FILENO, .events = POLLIN}};
        if (poll(pfd, in_open ? 2 : 1, -1) < 0) {
            continue; /* EINTR: a resize, perhaps */
        }
        if (in_open && pfd[1].revents) {
            ssize_t k = read(STDIN_FILENO, chunk, sizeof(chunk));
            if (k < 0 && errno == EINTR) {
                continue;
            }
            in_open = k > 0;
            rc = send_frame(client, GT_EXEC_STDIN, chunk, k > 0 ? (size_t)k : 0);
        }
    }
    restore_tty();
    gt_buf_fini(&b);
    if (code < 0) {
        gt_err_set(&err, -EIO, "the exec stream from gantryd ended without the command's status");
        return gt_cli_fail(ctx, &err);
    }
    ctx->task_status = code;
    return 0;
}

/* ---- the plain request ---- */

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
    struct exec_opts o = {0};
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, dashes, argv, "p:it", long_opts, on_exec_opt, &o, &first);
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
    if (gt_cli_ctx_project(ctx, o.project, &project, &err) != 0) {
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
    rc = o.in || o.tty ? exec_stream(ctx, client, project, argv[first], command, o.in, o.tty)
                       : exec_in(ctx, client, project, argv[first], command, 0);
    json_decref(command);
    return rc;
}
