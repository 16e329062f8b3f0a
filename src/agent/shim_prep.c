/*
 * The task's preparer, `gantry-shim --prepare`: exec'd by the task's own
 * process, so it runs as the task's user in the task's cgroup and
 * namespaces, with the task's cwd and log as stdout/stderr. It fetches the
 * spec's source into cwd (shallow: one revision), makes or reuses the
 * virtual environment of the spec's requirements, then execs the task's
 * command. Tools (git, python3 -m venv, pip) run with execve, no shell;
 * their output is copied to the task log and its last lines become the
 * failure message.
 *
 * Virtual environments live in venvDir/<sha256 of the requirements text>,
 * made with --system-site-packages so the node's frameworks stay
 * importable. A venv is not relocatable (its scripts name their absolute
 * path), so it is built in place under an exclusive flock on
 * venvDir/<hash>.lock and marked complete (.gantry-complete) only after pip
 * succeeded; an unmarked directory is a failed or interrupted build and is
 * removed and rebuilt under the lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/shim.h"

#define PYTHON "/usr/bin/python3"
#define TAIL_BYTES 700          /* tool output kept for the failure message */
#define REQ_MAX_BYTES (1 << 20) /* a requirements file */
#define COMPLETE_MARK ".gantry-complete"

struct prep {
    struct gt_shim_spec spec;
    int status_fd;
    char cwd[PATH_MAX];
    const char *path; /* the task's PATH (borrowed from the spec) */
    char venv[PATH_MAX];
};

/* Report a failure to the shim and the task log; returns 127. */
static int __attribute__((format(printf, 3, 4)))
fail(struct prep *p, const char *reason, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    dprintf(STDERR_FILENO, "gantry: %s\n", msg);
    dprintf(p->status_fd, "%s\n%s", reason, msg);
    return 127;
}

/* Keep the last TAIL_BYTES - 1 bytes seen in tail (NUL-terminated). */
static void tail_add(char *tail, size_t *len, const char *data, size_t n)
{
    size_t cap = TAIL_BYTES - 1;
    if (n >= cap) {
        memcpy(tail, data + n - cap, cap);
        *len = cap;
    } else {
        size_t keep = *len + n > cap ? cap - n : *len;
        memmove(tail, tail + *len - keep, keep);
        memcpy(tail + keep, data, n);
        *len = keep + n;
    }
    tail[*len] = '\0';
}

/* The whole lines at the end of tail, trailing white space dropped. */
static const char *tail_lines(char *tail, size_t len)
{
    while (len > 0 && (tail[len - 1] == '\n' || tail[len - 1] == ' ')) {
        tail[--len] = '\0';
    }
    const char *nl = len >= TAIL_BYTES - 1 ? strchr(tail, '\n') : NULL;
    return nl ? nl + 1 : tail;
}

/* Run argv (argv[0] searched in env's PATH) with its stdout and stderr
 * copied to ours; the last of it in tail. Returns the wait status, or -1. */
static int run_tool(char *const *argv, char *const *env, char tail[TAIL_BYTES])
{
    int pfd[2];
    size_t tail_len = 0;
    tail[0] = '\0';
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        gt_shim_exec_tool(argv, env, pfd[1], pfd[1]);
    }
    close(pfd[1]);
    char buf[4096];
    ssize_t n;
    while (pid > 0 && ((n = read(pfd[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))) {
        if (n > 0) {
            ssize_t w = write(STDOUT_FILENO, buf, (size_t)n);
            (void)w; /* a lost log line does not stop the task */
            tail_add(tail, &tail_len, buf, (size_t)n);
        }
    }
    close(pfd[0]);
    int st = -1;
    while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return pid > 0 ? st : -1;
}

static int exit_code(int st)
{
    return st < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int fetch_source(struct prep *p)
{
    char home[PATH_MAX + 8], path[PATH_MAX + 8], tail[TAIL_BYTES];
    snprintf(home, sizeof(home), "HOME=%s", p->cwd);
    snprintf(path, sizeof(path), "PATH=%s", p->path);
    char *env[] = {home, path, (char *)"GIT_TERMINAL_PROMPT=0", (char *)"LC_ALL=C", NULL};
    char *rev = p->spec.git_revision ? p->spec.git_revision : (char *)"HEAD";
    char *init[] = {(char *)"git", (char *)"init", (char *)"-q", (char *)".", NULL};
    char *fetch[] = {(char *)"git", (char *)"fetch", (char *)"-q", (char *)"--depth",
                     (char *)"1",   p->spec.git_url, rev,          NULL,
                     NULL};
    if (!strncmp(p->spec.git_url, "file://", 7)) {
        /* a local repository usually belongs to someone else: git's
         * ownership check would refuse it, and the environment does not
         * reach a local upload-pack, only this option does */
        memmove(fetch + 3, fetch + 2, 6 * sizeof(char *));
        fetch[2] = (char *)"--upload-pack=git -c safe.directory=* upload-pack";
    }
    char *checkout[] = {(char *)"git",        (char *)"-c", (char *)"advice.detachedHead=false",
                        (char *)"checkout",   (char *)"-q", (char *)"--detach",
                        (char *)"FETCH_HEAD", NULL};
    char *const *steps[] = {init, fetch, checkout};
    dprintf(STDOUT_FILENO, "gantry: fetching %s at %s\n", p->spec.git_url, rev);
    for (size_t i = 0; i < GT_ARRAY_LEN(steps); i++) {
        int st = run_tool(steps[i], env, tail);
        if (st != 0) {
            return fail(p, "SourceFetchFailed", "git %s of %s at %s failed (exit %d): %s",
                        steps[i][1][0] == '-' ? steps[i][3] : steps[i][1], p->spec.git_url, rev,
                        exit_code(st), tail_lines(tail, strlen(tail)));
        }
    }
    return 0;
}

/* The requirements text: the file (relative to cwd) or the lines. */
static int requirements_text(struct prep *p, struct gt_buf *b)
{
    if (p->spec.req_list) {
        for (size_t i = 0; i < p->spec.n_req; i++) {
            gt_buf_printf(b, "%s\n", p->spec.req_list[i]);
        }
        return 0;
    }
    char *text;
    size_t len;
    struct gt_err err = {0};
    if (gt_file_read(p->spec.req_file, REQ_MAX_BYTES, &text, &len, &err) < 0) {
        return fail(p, "RequirementsFailed", "requirements file: %s", err.msg);
    }
    gt_buf_append(b, text, len);
    free(text);
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* Build p->venv in place (the caller holds the lock). */
static int build_venv(struct prep *p, const struct gt_buf *req)
{
    char tail[TAIL_BYTES], home[PATH_MAX + 8], path[2 * PATH_MAX], python[PATH_MAX + 16];
    char req_file[PATH_MAX + 32];
    nftw(p->venv, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    dprintf(STDOUT_FILENO, "gantry: building the environment %s\n", p->venv);
    char *mk[] = {(char *)PYTHON, (char *)"-m", (char *)"venv", (char *)"--system-site-packages",
                  p->venv,        NULL};
    snprintf(home, sizeof(home), "HOME=%s", p->cwd);
    snprintf(path, sizeof(path), "PATH=%s/bin:%s", p->venv, p->path);
    char *env[] = {home,
                   path,
                   (char *)"PIP_DISABLE_PIP_VERSION_CHECK=1",
                   (char *)"PIP_NO_INPUT=1",
                   (char *)"PIP_NO_CACHE_DIR=1",
                   NULL};
    int st = run_tool(mk, env, tail);
    if (st != 0) {
        return fail(p, "RequirementsFailed", "python3 -m venv failed (exit %d): %s", exit_code(st),
                    tail_lines(tail, strlen(tail)));
    }
    snprintf(req_file, sizeof(req_file), "%s/requirements.txt", p->venv);
    struct gt_err err = {0};
    if (gt_agent_file_write_atomic(p->venv, "requirements.txt", req->data, req->len, false, &err) <
        0) {
        return fail(p, "RequirementsFailed", "%s", err.msg);
    }
    snprintf(python, sizeof(python), "%s/bin/python", p->venv);
    char *pip[12] = {python, (char *)"-m", (char *)"pip", (char *)"install", (char *)"-q"};
    size_t n = 5;
    if (p->spec.pip_find_links) {
        pip[n++] = (char *)"--find-links";
        pip[n++] = p->spec.pip_find_links;
    }
    if (p->spec.pip_index_url) {
        pip[n++] = (char *)"--index-url";
        pip[n++] = p->spec.pip_index_url;
    } else if (p->spec.pip_find_links) {
        pip[n++] = (char *)"--no-index";
    }
    pip[n++] = (char *)"-r";
    pip[n++] = req_file;
    st = run_tool(pip, env, tail);
    if (st != 0) {
        nftw(p->venv, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        return fail(p, "RequirementsFailed", "pip install failed (exit %d): %s", exit_code(st),
                    tail_lines(tail, strlen(tail)));
    }
    if (gt_agent_file_write_atomic(p->venv, COMPLETE_MARK, "", 0, true, &err) < 0) {
        return fail(p, "RequirementsFailed", "%s", err.msg);
    }
    return 0;
}

static int make_venv(struct prep *p)
{
    struct gt_buf req;
    char hash[65], lock[PATH_MAX + 80], mark[PATH_MAX + 32];
    gt_buf_init(&req);
    int rc = requirements_text(p, &req);
    if (rc != 0) {
        gt_buf_fini(&req);
        return rc;
    }
    gt_sha256_hex(req.data ? req.data : "", req.len, hash);
    snprintf(p->venv, sizeof(p->venv), "%s/%s", p->spec.venv_dir, hash);
    snprintf(lock, sizeof(lock), "%s/%s.lock", p->spec.venv_dir, hash);
    snprintf(mark, sizeof(mark), "%s/" COMPLETE_MARK, p->venv);
    int lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd < 0) {
        rc = fail(p, "RequirementsFailed", "lock %s: %s", lock, strerror(errno));
    }
    while (rc == 0 && flock(lock_fd, LOCK_EX) < 0) {
        if (errno != EINTR) {
            rc = fail(p, "RequirementsFailed", "flock %s: %s", lock, strerror(errno));
        }
    }
    if (rc == 0 && access(mark, F_OK) == 0) {
        dprintf(STDOUT_FILENO, "gantry: using the cached environment %s\n", p->venv);
    } else if (rc == 0) {
        rc = build_venv(p, &req);
    }
    if (lock_fd >= 0) {
        close(lock_fd); /* releases the lock */
    }
    gt_buf_fini(&req);
    return rc;
}

/* The task's environment with PATH and VIRTUAL_ENV of the venv. */
static char **venv_env(struct prep *p)
{
    char **env = gt_xcalloc(p->spec.n_env + 3, sizeof(char *));
    size_t n = 0;
    for (size_t i = 0; i < p->spec.n_env; i++) {
        if (strncmp(p->spec.env[i], "PATH=", 5) && strncmp(p->spec.env[i], "VIRTUAL_ENV=", 12)) {
            env[n++] = p->spec.env[i];
        }
    }
    env[n++] = gt_xasprintf("PATH=%s/bin:%s", p->venv, p->path);
    env[n++] = gt_xasprintf("VIRTUAL_ENV=%s", p->venv);
    return env;
}

static int read_spec(struct prep *p, int spec_fd)
{
    struct gt_buf b;
    char buf[8192];
    ssize_t n;
    off_t off = 0;
    gt_buf_init(&b);
    while ((n = pread(spec_fd, buf, sizeof(buf), off)) > 0 || (n < 0 && errno == EINTR)) {
        if (n > 0) {
            gt_buf_append(&b, buf, (size_t)n);
            off += n;
        }
    }
    close(spec_fd);
    struct gt_err err = {0};
    int rc = gt_shim_spec_parse(b.data ? b.data : "", b.len, &p->spec, &err);
    gt_buf_fini(&b);
    if (rc < 0) {
        return fail(p, "", "%s", err.msg);
    }
    p->path = GT_GANTLET_DEFAULT_PATH;
    for (size_t i = 0; i < p->spec.n_env; i++) {
        if (!strncmp(p->spec.env[i], "PATH=", 5)) {
            p->path = p->spec.env[i] + 5;
        }
    }
    if (!getcwd(p->cwd, sizeof(p->cwd))) {
        return fail(p, "", "getcwd: %s", strerror(errno));
    }
    return 0;
}

int gt_shim_prepare_main(int spec_fd, int status_fd)
{
    struct prep p;
    memset(&p, 0, sizeof(p));
    p.status_fd = status_fd;
    /* only this process reports; git and pip must not inherit the pipe */
    if (fcntl(status_fd, F_SETFD, FD_CLOEXEC) < 0 || fcntl(spec_fd, F_SETFD, FD_CLOEXEC) < 0) {
        return 127;
    }
    int rc = read_spec(&p, spec_fd);
    rc = rc != 0 || !p.spec.git_url ? rc : fetch_source(&p);
    rc = rc != 0 || (!p.spec.req_file && !p.spec.req_list) ? rc : make_venv(&p);
    if (rc == 0) {
        char **env = p.venv[0] ? venv_env(&p) : p.spec.env;
        int e;
        gt_shim_exec_search(p.spec.argv, env, &e);
        rc = fail(&p, "", "exec %s: %s", p.spec.argv[0], strerror(e));
        if (env != p.spec.env) {
            size_t n = 0;
            while (env[n]) {
                n++;
            }
            free(env[n - 1]); /* the two venv_env made; the rest are the spec's */
            free(env[n - 2]);
            free(env);
        }
    }
    gt_shim_spec_fini(&p.spec);
    close(status_fd);
    return rc;
}
