/*
 * The processes and files of `gantry up` shared by its parts (cmd_up.c,
 * upregistry.c): private files and daemons in their own sessions.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_int.h"

/* Write text to path, mode 0600, replacing it. */
int gt_cli_up_write_private(const char *path, const char *text, struct gt_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    size_t len = strlen(text);
    if (fd < 0 || fchmod(fd, 0600) != 0 || write(fd, text, len) != (ssize_t)len) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
        }
        return gt_err_set(err, -e, "write %s: %s", path, strerror(e));
    }
    close(fd);
    return 0;
}

/* Start argv[0] as a daemon in its own session, stdin /dev/null, stdout and
 * stderr appended to log_path; its pid goes to pid_path. */
int gt_cli_up_spawn(char *const *argv, const char *log_path, const char *pid_path, pid_t *pid,
                    struct gt_err *err)
{
    int log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (log_fd < 0 || null_fd < 0) {
        int e = errno;
        if (log_fd >= 0) {
            close(log_fd);
        }
        return gt_err_set(err, -e, "open %s: %s", log_path, strerror(e));
    }
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        if (setsid() < 0 || dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) {
            _exit(127);
        }
        execv(argv[0], argv);
        static const char msg[] = "gantry up: exec failed\n";
        (void)!write(2, msg, sizeof(msg) - 1);
        _exit(127);
    }
    int e = errno;
    close(log_fd);
    close(null_fd);
    if (p < 0) {
        return gt_err_set(err, -e, "fork: %s", strerror(e));
    }
    *pid = p;
    char text[32];
    snprintf(text, sizeof(text), "%ld\n", (long)p);
    return gt_cli_up_write_private(pid_path, text, err);
}
