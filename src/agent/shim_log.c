/*
 * The task's combined stdout/stderr log: dir/task.log, capped at max_bytes
 * and rotated to task.log.1 (newest) ... task.log.<keep> (oldest); with
 * keep 0 a full log is simply started over. Writes go straight to the file
 * (no buffering in the shim), so `logs -f` sees output as soon as the task
 * writes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/shim_log.h"

#define LOG_NAME "task.log"

static int open_current(struct gt_shim_log *log, struct gt_err *err)
{
    /* 0600: the directory may be one others can pass through */
    log->fd = openat(log->dir_fd, LOG_NAME, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log->fd < 0) {
        int rc = -errno;
        return gt_err_set(err, rc, "open " LOG_NAME ": %s", strerror(errno));
    }
    struct stat st;
    log->size_bytes = fstat(log->fd, &st) == 0 ? st.st_size : 0;
    return 0;
}

int gt_shim_log_open(struct gt_shim_log *log, const char *dir, int64_t max_bytes, int keep_files,
                     struct gt_err *err)
{
    log->fd = -1;
    log->max_bytes = max_bytes;
    log->keep_files = keep_files;
    log->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (log->dir_fd < 0) {
        int rc = -errno;
        return gt_err_set(err, rc, "open log dir %s: %s", dir, strerror(errno));
    }
    int rc = open_current(log, err);
    if (rc < 0) {
        close(log->dir_fd);
        log->dir_fd = -1;
    }
    return rc;
}

static int rotate(struct gt_shim_log *log, struct gt_err *err)
{
    close(log->fd);
    log->fd = -1;
    char from[64], to[64];
    if (log->keep_files == 0) {
        unlinkat(log->dir_fd, LOG_NAME, 0);
    }
    for (int i = log->keep_files; i >= 1; i--) {
        snprintf(to, sizeof(to), LOG_NAME ".%d", i);
        if (i == 1) {
            snprintf(from, sizeof(from), LOG_NAME);
        } else {
            snprintf(from, sizeof(from), LOG_NAME ".%d", i - 1);
        }
        if (renameat(log->dir_fd, from, log->dir_fd, to) < 0 && errno != ENOENT) {
            int rc = -errno;
            return gt_err_set(err, rc, "rotate %s: %s", from, strerror(errno));
        }
    }
    return open_current(log, err);
}

int gt_shim_log_write(struct gt_shim_log *log, const char *data, size_t len, struct gt_err *err)
{
    while (len > 0) {
        if (log->fd < 0) {
            return gt_err_set(err, -EBADF, "log closed after a failed rotation");
        }
        size_t n = len;
        if (log->max_bytes > 0) {
            if (log->size_bytes >= log->max_bytes) {
                int rc = rotate(log, err);
                if (rc < 0) {
                    return rc;
                }
                continue;
            }
            int64_t room = log->max_bytes - log->size_bytes;
            n = (int64_t)len > room ? (size_t)room : len;
        }
        ssize_t w = write(log->fd, data, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            int rc = w < 0 ? -errno : -EIO;
            return gt_err_set(err, rc, "write " LOG_NAME ": %s", strerror(-rc));
        }
        log->size_bytes += w;
        data += w;
        len -= (size_t)w;
    }
    return 0;
}

void gt_shim_log_close(struct gt_shim_log *log)
{
    if (log->fd >= 0) {
        close(log->fd);
    }
    if (log->dir_fd >= 0) {
        close(log->dir_fd);
    }
    log->fd = -1;
    log->dir_fd = -1;
}
