/*
 * Files of a task's state directory: atomic replacement (temporary file +
 * rename, optionally fsynced), so a reader (the agent after a restart, with
 * common's bounded gt_file_read) sees either nothing or a complete file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_int.h"

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w < 0) {
            return -errno;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static int write_atomic(const char *dir, const char *name, const void *data, size_t len, bool sync,
                        mode_t mode, struct gt_err *err)
{
    char tmp[256];
    snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) {
        int rc = -errno;
        return gt_err_set(err, rc, "open %s: %s", dir, strerror(errno));
    }
    int rc = 0;
    unlinkat(dir_fd, tmp, 0); /* a leftover keeps its mode through O_CREAT */
    int fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) {
        rc = -errno;
        gt_err_set(err, rc, "create %s/%s: %s", dir, tmp, strerror(errno));
        goto out;
    }
    rc = write_all(fd, data, len);
    if (rc == 0 && sync && fsync(fd) < 0) {
        rc = -errno;
    }
    if (close(fd) < 0 && rc == 0) {
        rc = -errno;
    }
    if (rc < 0) {
        gt_err_set(err, rc, "write %s/%s: %s", dir, tmp, strerror(-rc));
        unlinkat(dir_fd, tmp, 0);
        goto out;
    }
    if (renameat(dir_fd, tmp, dir_fd, name) < 0) {
        rc = -errno;
        gt_err_set(err, rc, "rename %s/%s: %s", dir, name, strerror(errno));
        unlinkat(dir_fd, tmp, 0);
        goto out;
    }
    if (sync && fsync(dir_fd) < 0) {
        rc = -errno;
        gt_err_set(err, rc, "fsync %s: %s", dir, strerror(errno));
    }
out:
    close(dir_fd);
    return rc;
}

int gt_agent_file_write_atomic(const char *dir, const char *name, const void *data, size_t len,
                               bool sync, struct gt_err *err)
{
    return write_atomic(dir, name, data, len, sync, 0644, err);
}

int gt_agent_file_write_private(const char *dir, const char *name, const void *data, size_t len,
                                struct gt_err *err)
{
    return write_atomic(dir, name, data, len, false, 0600, err);
}
