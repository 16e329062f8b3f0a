/*
 * Running a program from a freshly forked or cloned child: the PATH search
 * of spec-style argv and the helper tools' exec (git, pip, skopeo, umoci,
 * runc), shared by the shim, its preparer and the image code it runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_int.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

void gt_shim_exec_search(char *const *argv, char *const *env, int *err)
{
    const char *file = argv[0];
    if (strchr(file, '/')) {
        execve(file, argv, env);
        *err = errno;
        return;
    }
    const char *path = DEFAULT_PATH;
    for (size_t i = 0; env[i]; i++) {
        if (strncmp(env[i], "PATH=", 5) == 0) {
            path = env[i] + 5;
        }
    }
    size_t flen = strlen(file);
    bool eacces = false;
    *err = ENOENT;
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t dlen = end ? (size_t)(end - p) : strlen(p);
        char buf[PATH_MAX];
        if (dlen + flen + 2 <= sizeof(buf)) {
            memcpy(buf, dlen ? p : ".", dlen ? dlen : 1);
            size_t at = dlen ? dlen : 1;
            buf[at] = '/';
            memcpy(buf + at + 1, file, flen + 1);
            execve(buf, argv, env);
            if (errno == EACCES) {
                eacces = true;
            } else if (errno != ENOENT && errno != ENOTDIR) {
                *err = errno;
                return;
            }
        }
        if (!end) {
            break;
        }
        p = end;
    }
    *err = eacces ? EACCES : ENOENT;
}

_Noreturn void gt_shim_exec_tool(char *const *argv, char *const *env, int out_fd, int err_fd)
{
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int e = 0;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    if (null_fd >= 0 && dup2(null_fd, STDIN_FILENO) >= 0 && dup2(out_fd, STDOUT_FILENO) >= 0 &&
        dup2(err_fd, STDERR_FILENO) >= 0) {
        gt_shim_exec_search(argv, env, &e);
    }
    dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0], strerror(e ? e : errno));
    _exit(127);
}
