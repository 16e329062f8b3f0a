/*
 * gantlet's POST /v1/tasks/{uid}/exec: run a command inside a running task,
 * as `kubectl exec` does in a pod. The body is {"command": [ARGV...]}; the
 * answer, once the command has ended and closed its output, is
 * {"stdout": S, "stderr": S, "exitCode": N} (N is 128 + the signal's number
 * when a signal ended it; bytes that are not UTF-8 become '?').
 *
 * The command joins the task's main process (hostPid, or the only child of
 * hostPid when hostPid is the init of a PID namespace, gantry-shim --init):
 * its cgroups (each line of /proc/PID/cgroup, v1 and v2), its user, cgroup,
 * ipc, uts, net, pid and mount namespaces (setns, those that differ from the
 * agent's), its root and working directory, its environment, its groups,
 * gid and uid. The agent forks a joiner that does this and forks the
 * command (a new PID namespace takes only children); the joiner writes the
 * command's wait status to a pipe, since the agent reaps its own children
 * (gt_gantlet_tasks_poll). Each run owns its pipes, events and buffers and
 * is freed when it answers or its connection closes (the command is then
 * killed).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <grp.h>

#include "agent/agent_int.h"

#define BODY_MAX_BYTES (1 << 20)
#define OUT_MAX_BYTES (16 << 20) /* per stream; more is dropped */

struct execrun {
    struct evhttp_request *req;
    struct evhttp_connection *conn;
    pid_t joiner;
    int fds[3]; /* stdout, stderr, status; -1 once at EOF */
    struct event *evs[3];
    struct evbuffer *out[2];
    int status; /* the command's wait status; -1 unknown */
    size_t status_got;
};

static const char *const ns_names[] = {"user", "cgroup", "ipc", "uts", "net", "pid", "mnt"};

/* ---- the joiner (a forked child: it only exits) ---- */

static pid_t main_pid(pid_t host_pid)
{
    struct stat a, b;
    char p[64];
    snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)host_pid);
    if (stat(p, &a) != 0 || stat("/proc/self/ns/pid", &b) != 0 || a.st_ino == b.st_ino) {
        return host_pid;
    }
    snprintf(p, sizeof(p), "/proc/%d/task/%d/children", (int)host_pid, (int)host_pid);
    FILE *f = fopen(p, "re");
    int child = 0;
    if (f && fscanf(f, "%d", &child) != 1) {
        child = 0;
    }
    if (f) {
        fclose(f);
    }
    return child > 0 ? (pid_t)child : host_pid;
}

/* Where the hierarchy of ctrls (a /proc/PID/cgroup field: "" for cgroup
 * v2, else its controllers or name=X) is mounted, from mountinfo. */
static bool cgroup_mount(const char *ctrls, char *mnt, size_t size)
{
    char first[64];
    snprintf(first, sizeof(first), "%.*s", (int)strcspn(ctrls, ","), ctrls);
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[PATH_MAX + 512];
    bool found = false;
    while (!found && f && fgets(line, sizeof(line), f)) {
        char root[PATH_MAX], point[PATH_MAX], type[32], opts[512];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2 ||
            sscanf(dash + 3, "%31s %*s %511s", type, opts) != 2 || strcmp(root, "/") != 0) {
            continue;
        }
        found = !*first && !strcmp(type, "cgroup2");
        for (char *save = NULL, *o = strtok_r(opts, ",", &save); *first && o && !found;
             o = strtok_r(NULL, ",", &save)) {
            found = !strcmp(type, "cgroup") && !strcmp(o, first);
        }
        if (found) {
            snprintf(mnt, size, "%s", point);
        }
    }
    if (f) {
        fclose(f);
    }
    return found;
}

/* Move the calling process into every cgroup of pid. */
static void join_cgroups(pid_t pid)
{
    char p[64], line[PATH_MAX];
    snprintf(p, sizeof(p), "/proc/%d/cgroup", (int)pid);
    FILE *f = fopen(p, "re");
    while (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *ctrls = strchr(line, ':');
        char *path = ctrls ? strchr(ctrls + 1, ':') : NULL;
        char mnt[PATH_MAX];
        if (!path) {
            continue;
        }
        *path++ = '\0';
        if (cgroup_mount(ctrls + 1, mnt, sizeof(mnt))) {
            char procs[2 * PATH_MAX + 32];
            snprintf(procs, sizeof(procs), "%s%s/cgroup.procs", mnt, path);
            FILE *w = fopen(procs, "we");
            if (w) {
                fprintf(w, "0\n");
                fclose(w);
            }
        }
    }
    if (f) {
        fclose(f);
    }
}

/* The NUL-separated /proc/PID/environ as an envp (leaked: the joiner execs). */
static char **read_environ(pid_t pid)
{
    char p[64];
    snprintf(p, sizeof(p), "/proc/%d/environ", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    size_t len = 0, cap = 65536;
    char *buf = gt_xmalloc(cap);
    for (ssize_t r = 1; fd >= 0 && r > 0; len += (size_t)r) {
        if (len + 1 == cap) {
            cap *= 2;
            buf = gt_xrealloc(buf, cap);
        }
        r = read(fd, buf + len, cap - len - 1);
        r = r < 0 ? 0 : r;
    }
    if (fd >= 0) {
        close(fd);
    }
    buf[len] = '\0';
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        n += buf[i] == '\0';
    }
    char **env = gt_xcalloc(n + 2, sizeof(*env));
    size_t k = 0;
    for (size_t i = 0; i < len && k < n + 1; i += strlen(buf + i) + 1) {
        env[k++] = buf + i;
    }
    return env;
}

/* uid, gid and supplementary groups from /proc/PID/status (real ids). */
static void read_ids(pid_t pid, uid_t *uid, gid_t *gid, gid_t *groups, int *n_groups)
{
    char p[64], line[4096];
    snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
    FILE *f = fopen(p, "re");
    int max = *n_groups;
    *n_groups = 0;
    while (f && fgets(line, sizeof(line), f)) {
        unsigned v;
        if (sscanf(line, "Uid: %u", &v) == 1) {
            *uid = v;
        } else if (sscanf(line, "Gid: %u", &v) == 1) {
            *gid = v;
        } else if (strncmp(line, "Groups:", 7) == 0) {
            char *s = line + 7, *end;
            for (long g = strtol(s, &end, 10); end != s && *n_groups < max;
                 g = strtol(s, &end, 10)) {
                groups[(*n_groups)++] = (gid_t)g;
                s = end;
            }
        }
    }
    if (f) {
        fclose(f);
    }
}

static void die(const char *what)
{
    fprintf(stderr, "gantlet exec: %s: %s\n", what, strerror(errno));
    _exit(126);
}

static void joiner(pid_t host_pid, char **argv, int status_fd, bool tty)
{
    pid_t pid = main_pid(host_pid);
    char p[64];
    int ns_fds[GT_ARRAY_LEN(ns_names)];
    for (size_t i = 0; i < GT_ARRAY_LEN(ns_names); i++) {
        struct stat a, b;
        char self[64];
        snprintf(p, sizeof(p), "/proc/%d/ns/%s", (int)pid, ns_names[i]);
        snprintf(self, sizeof(self), "/proc/self/ns/%s", ns_names[i]);
        bool same = stat(p, &a) == 0 && stat(self, &b) == 0 && a.st_ino == b.st_ino;
        ns_fds[i] = same ? -1 : open(p, O_RDONLY | O_CLOEXEC);
    }
    snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
    int root_fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    snprintf(p, sizeof(p), "/proc/%d/cwd", (int)pid);
    int cwd_fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0 || cwd_fd < 0) {
        die("the task's process is gone");
    }
    char **env = read_environ(pid);
    uid_t uid = 0;
    gid_t gid = 0, groups[64];
    int n_groups = (int)GT_ARRAY_LEN(groups);
    read_ids(pid, &uid, &gid, groups, &n_groups);
    join_cgroups(pid);
    for (size_t i = 0; i < GT_ARRAY_LEN(ns_names); i++) {
        if (ns_fds[i] >= 0 && setns(ns_fds[i], 0) != 0) {
            die(ns_names[i]);
        }
    }
    if (fchdir(root_fd) != 0 || chroot(".") != 0 || fchdir(cwd_fd) != 0) {
        die("the task's root and working directory");
    }
    pid_t cmd = fork();
    if (cmd < 0) {
        die("fork");
    }
    if (cmd == 0) {
        close(status_fd);
        if (tty && (setsid() < 0 || ioctl(0, TIOCSCTTY, 0) != 0)) {
            die("the terminal");
        }
        if (setgroups((size_t)n_groups, groups) != 0 || setgid(gid) != 0 || setuid(uid) != 0) {
            die("the task's user");
        }
        environ = env;
        execvp(argv[0], argv);
        fprintf(stderr, "gantlet exec: %s: %s\n", argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    int st = 0;
    while (waitpid(cmd, &st, 0) < 0 && errno == EINTR) {
    }
    ssize_t w = write(status_fd, &st, sizeof(st));
    _exit(w == (ssize_t)sizeof(st) ? 0 : 1);
}

pid_t gt_gantlet_exec_spawn(pid_t host_pid, char **argv, const int std[3], bool tty, int status_fd)
{
    pid_t pid = fork();
    if (pid == 0) {
        /* only the standard streams and the status stay open: another
         * stream's ends held here would keep it from its EOF */
        for (int i = 0; i < 3; i++) {
            if (std[i] != i && dup2(std[i], i) < 0) {
                _exit(126);
            }
        }
        if (dup2(status_fd, 3) < 0) {
            _exit(126);
        }
#ifdef SYS_close_range
        if (syscall(SYS_close_range, 4U, ~0U, 0U) != 0)
#endif
        {
            for (int fd = 4; fd < 4096; fd++) {
                close(fd);
            }
        }
        joiner(host_pid, argv, 3, tty);
    }
    return pid;
}

/* ---- the agent's side ---- */

static void run_free(struct execrun *x)
{
    for (int i = 0; i < 3; i++) {
        if (x->evs[i]) {
            event_free(x->evs[i]);
        }
        if (x->fds[i] >= 0) {
            close(x->fds[i]);
        }
    }
    if (x->joiner > 0 && x->status < 0) {
        kill(x->joiner, SIGKILL); /* the command itself goes with its connection's pipes */
    }
    evbuffer_free(x->out[0]);
    evbuffer_free(x->out[1]);
    free(x);
}

static void on_close(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    run_free(arg);
}

/* A JSON string of the bytes, each byte outside valid UTF-8 as '?'. */
static json_t *text_json(struct evbuffer *b)
{
    size_t len = evbuffer_get_length(b);
    unsigned char *s = evbuffer_pullup(b, -1);
    for (size_t i = 0; i < len;) {
        size_t n = s[i] < 0x80         ? 1
                   : (s[i] >> 5) == 6  ? 2
                   : (s[i] >> 4) == 14 ? 3
                   : (s[i] >> 3) == 30 ? 4
                                       : 0;
        bool ok = n > 0 && i + n <= len;
        for (size_t k = 1; ok && k < n; k++) {
            ok = (s[i + k] & 0xc0) == 0x80;
        }
        if (!ok) {
            s[i++] = '?';
            continue;
        }
        i += n;
    }
    json_t *v = json_stringn((const char *)s, len);
    return v ? v : json_string("");
}

static void answer(struct execrun *x)
{
    int code = WIFEXITED(x->status) ? WEXITSTATUS(x->status) : 128 + WTERMSIG(x->status);
    json_t *o = json_pack("{s:o,s:o,s:i}", "stdout", text_json(x->out[0]), "stderr",
                          text_json(x->out[1]), "exitCode", code);
    char *s = gt_json_dumps(o);
    json_decref(o);
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, s, strlen(s));
    free(s);
    evhttp_add_header(evhttp_request_get_output_headers(x->req), "Content-Type",
                      "application/json");
    evhttp_connection_set_closecb(x->conn, NULL, NULL);
    evhttp_send_reply(x->req, 200, "OK", b);
    evbuffer_free(b);
    run_free(x);
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct execrun *x = arg;
    int i = fd == x->fds[0] ? 0 : fd == x->fds[1] ? 1 : 2;
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return;
    }
    if (n > 0 && i < 2 && evbuffer_get_length(x->out[i]) < OUT_MAX_BYTES) {
        evbuffer_add(x->out[i], buf, (size_t)n);
    } else if (n > 0 && i == 2) {
        size_t k = (size_t)n < sizeof(x->status) - x->status_got
                       ? (size_t)n
                       : sizeof(x->status) - x->status_got;
        memcpy((char *)&x->status + x->status_got, buf, k);
        x->status_got += k;
    }
    if (n > 0) {
        return;
    }
    event_free(x->evs[i]);
    x->evs[i] = NULL;
    close(fd);
    x->fds[i] = -1;
    if (i == 2 && x->status_got != sizeof(x->status)) {
        x->status = 126 << 8; /* the joiner failed before the command ran */
    }
    if (x->fds[0] < 0 && x->fds[1] < 0 && x->fds[2] < 0) {
        answer(x);
    }
}

/* The command of the request body (argv NULL-terminated, strings borrowed
 * from body), or an error message. */
static const char *parse_command(const json_t *body, char **argv)
{
    const json_t *cmd = json_object_get(body, "command");
    if (!json_is_array(cmd) || json_array_size(cmd) == 0 ||
        json_array_size(cmd) >= GT_EXEC_MAX_ARGS) {
        return "command: want a non-empty array of strings";
    }
    for (size_t i = 0; i < json_array_size(cmd); i++) {
        const char *s = json_string_value(json_array_get(cmd, i));
        if (!s) {
            return "command: every item must be a string";
        }
        argv[i] = (char *)s;
    }
    argv[json_array_size(cmd)] = NULL;
    return NULL;
}

struct gt_ltask *gt_gantlet_exec_request(struct gt_gantlet *g, struct evhttp_request *req,
                                         const char *uid, json_t **body, char **argv)
{
    struct gt_ltask *t = gt_gantlet_task_find(g, uid);
    if (!t) {
        evhttp_send_error(req, 404, "no such task on this node");
        return NULL;
    }
    if (!t->st.started || t->st.exited || t->host_pid <= 0) {
        evhttp_send_error(req, 409, "the task is not running");
        return NULL;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    if (len > BODY_MAX_BYTES) {
        evhttp_send_error(req, 413, "body too large");
        return NULL;
    }
    *body = json_loadb((const char *)evbuffer_pullup(in, -1), len, 0, NULL);
    const char *bad = *body ? parse_command(*body, argv) : "body: not JSON";
    if (bad) {
        json_decref(*body);
        *body = NULL;
        evhttp_send_error(req, 400, bad);
        return NULL;
    }
    return t;
}

void gt_gantlet_exec_serve(struct gt_gantlet *g, struct evhttp_request *req, const char *uid)
{
    json_t *body;
    char *argv[GT_EXEC_MAX_ARGS];
    struct gt_ltask *t = gt_gantlet_exec_request(g, req, uid, &body, argv);
    if (!t) {
        return;
    }
    int pipes[3][2];
    for (int i = 0; i < 3; i++) {
        if (pipe2(pipes[i], O_CLOEXEC) != 0) {
            for (int k = 0; k < i; k++) {
                close(pipes[k][0]);
                close(pipes[k][1]);
            }
            json_decref(body);
            evhttp_send_error(req, 500, "pipe");
            return;
        }
    }
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    const int std[3] = {devnull, pipes[0][1], pipes[1][1]};
    pid_t pid = gt_gantlet_exec_spawn(t->host_pid, argv, std, false, pipes[2][1]);
    if (devnull >= 0) {
        close(devnull);
    }
    json_decref(body);
    struct execrun *x = gt_xcalloc(1, sizeof(*x));
    x->req = req;
    x->conn = evhttp_request_get_connection(req);
    x->joiner = pid;
    x->status = -1;
    x->out[0] = evbuffer_new();
    x->out[1] = evbuffer_new();
    for (int i = 0; i < 3; i++) {
        close(pipes[i][1]);
        x->fds[i] = pipes[i][0];
        if (pid < 0) {
            close(x->fds[i]);
            x->fds[i] = -1;
        }
    }
    if (pid < 0) {
        run_free(x);
        evhttp_send_error(req, 500, "fork");
        return;
    }
    for (int i = 0; i < 3; i++) {
        x->evs[i] = event_new(g->base, x->fds[i], EV_READ | EV_PERSIST, on_readable, x);
        event_add(x->evs[i], NULL);
    }
    evhttp_connection_set_closecb(x->conn, on_close, x);
}
