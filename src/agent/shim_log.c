/*
 * The task's combined stdout/stderr log: dir/task.log, capped at max_bytes
 * and rotated to task.log.1 (newest) ... task.log.<keep> (oldest); with
 * keep 0 a full log is simply started over. Writes go straight to the file
 * (no buffering in the shim), so `logs -f` sees output as soon as the task
 * writes it: each chunk read from the task becomes CRI entries (crilog.c)
 * stamped with the time it was read, each written with one writev.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
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

/* One entry: prefix, text and its newline, rotating first if it would
 * pass the cap. */
static int write_entry(struct gt_shim_log *log, const char *prefix, size_t prefix_len,
                       const char *text, size_t len, struct gt_err *err)
{
    size_t entry = prefix_len + len + 1;
    if (log->fd >= 0 && log->max_bytes > 0 && log->size_bytes > 0 &&
        log->size_bytes + (int64_t)entry > log->max_bytes) {
        int rc = rotate(log, err);
        if (rc < 0) {
            return rc;
        }
    }
    if (log->fd < 0) {
        return gt_err_set(err, -EBADF, "log closed after a failed rotation");
    }
    struct iovec iov[3] = {{(void *)prefix, prefix_len}, {(void *)text, len}, {(void *)"\n", 1}};
    size_t done = 0;
    while (done < entry) {
        /* the iovecs past what was written (a short write is rare: a full disk) */
        struct iovec left[3];
        int n = 0;
        size_t skip = done;
        for (int i = 0; i < 3; i++) {
            if (skip >= iov[i].iov_len) {
                skip -= iov[i].iov_len;
                continue;
            }
            left[n].iov_base = (char *)iov[i].iov_base + skip;
            left[n++].iov_len = iov[i].iov_len - skip;
            skip = 0;
        }
        ssize_t w = writev(log->fd, left, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            int rc = w < 0 ? -errno : -EIO;
            return gt_err_set(err, rc, "write " LOG_NAME ": %s", strerror(-rc));
        }
        done += (size_t)w;
        log->size_bytes += w;
    }
    return 0;
}

int gt_shim_log_write(struct gt_shim_log *log, enum gt_shim_stream stream, const char *data,
                      size_t len, struct gt_err *err)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    char full[64], part[64];
    size_t full_len = gt_crilog_prefix(ns, stream, false, full, sizeof(full));
    size_t part_len = gt_crilog_prefix(ns, stream, true, part, sizeof(part));
    /* the most text one entry may hold under the cap */
    size_t room = SIZE_MAX;
    if (log->max_bytes > 0) {
        int64_t r = log->max_bytes - (int64_t)part_len - 1;
        room = r > 0 ? (size_t)r : 1;
    }
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t line = nl ? (size_t)(nl - data) : len;
        bool partial = !nl || line > room;
        size_t n = line > room ? room : line;
        int rc =
            write_entry(log, partial ? part : full, partial ? part_len : full_len, data, n, err);
        if (rc < 0) {
            return rc;
        }
        n += !partial; /* the newline, which the entry's is */
        data += n;
        len -= n;
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
