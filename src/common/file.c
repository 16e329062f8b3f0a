/*
 * Whole-file reads with a size bound: the one reader behind every file
 * gantry takes in at once (token files, traces, manifests, a task's state
 * files). The bound is the caller's: past it the read stops with
 * GT_ETOOLARGE after reading at most one byte more, so a huge or endless
 * input (a pipe, /dev/zero) never costs more than the bound's memory.
 *
 * The buffer is read into directly (no bounce buffer): it starts at 4 KiB,
 * or the bound plus one byte when that is smaller, and doubles; open, the
 * reads and close are the only system calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"

enum { FIRST_BYTES = 4096 };

/* "NAME is over N MiB" for a bound of whole MiB, else "... N bytes". */
static int too_large(struct gt_err *err, const char *name, size_t max_bytes)
{
    const size_t mib = (size_t)1 << 20;
    if (max_bytes >= mib && max_bytes % mib == 0) {
        return gt_err_set(err, GT_ETOOLARGE, "%s is over %zu MiB", name, max_bytes / mib);
    }
    return gt_err_set(err, GT_ETOOLARGE, "%s is over %zu bytes", name, max_bytes);
}

int gt_file_read_fd(int fd, const char *name, size_t max_bytes, char **out, size_t *len,
                    struct gt_err *err)
{
    GT_ASSERT(max_bytes < SIZE_MAX / 2);
    *out = NULL;
    *len = 0;
    /* Room for max_bytes + 1 bytes (one past the bound tells it is over)
     * and the NUL. */
    size_t first = max_bytes + 2 < FIRST_BYTES ? max_bytes + 2 : FIRST_BYTES;
    char *data = NULL;
    size_t cap = 0, n = 0;
    int rc = 0;
    for (;;) {
        GT_VEC_RESERVE(data, cap, n + 2, first);
        size_t want = cap - n - 1;
        if (want > max_bytes + 1 - n) {
            want = max_bytes + 1 - n;
        }
        ssize_t r = read(fd, data + n, want);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            rc = -errno;
            gt_err_set(err, rc, "cannot read %s: %s", name, strerror(-rc));
            break;
        }
        if (r == 0) {
            break;
        }
        n += (size_t)r;
        if (n > max_bytes) {
            rc = too_large(err, name, max_bytes);
            break;
        }
    }
    if (rc < 0) {
        free(data);
        return rc;
    }
    data[n] = '\0';
    *out = data;
    *len = n;
    return 0;
}

int gt_file_read(const char *path, size_t max_bytes, char **out, size_t *len, struct gt_err *err)
{
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int rc = -errno;
        return gt_err_set(err, rc, "cannot open %s: %s", path, strerror(-rc));
    }
    int rc = gt_file_read_fd(fd, path, max_bytes, out, len, err);
    close(fd);
    return rc;
}
