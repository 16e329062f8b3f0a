/*
 * Following one TensorBoard event file as it is written (see tfevents.h):
 * each poll opens the file, reads from the kept offset to the end (bounded)
 * and hands the bytes to the pure parser, which says how many it consumed.
 * A record cut off at the end is not consumed, so the next poll reads it
 * again whole. The file is not kept open: a writer that replaces it (a new
 * file at the same path, shorter than the last poll saw) is read from the start.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/tfevents.h"

void gt_tfev_file_init(struct gt_tfev_file *f, const char *path)
{
    memset(f, 0, sizeof(*f));
    f->path = gt_xstrdup(path);
    gt_tfev_reader_init(&f->reader);
}

void gt_tfev_file_fini(struct gt_tfev_file *f)
{
    free(f->path);
    f->path = NULL;
    gt_tfev_reader_fini(&f->reader);
}

int gt_tfev_file_poll(struct gt_tfev_file *f, size_t max_bytes, struct gt_tfev_points *out,
                      struct gt_err *err)
{
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return gt_err_set(err, -e, "cannot open %s: %s", f->path, strerror(e));
    }
    int rc = 0;
    uint8_t *buf = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        gt_err_set(err, rc, "cannot read %s: %s", f->path, strerror(-rc));
        goto out;
    }
    if (st.st_size < f->size_seen) {
        gt_log_info("tfevents file replaced, reading it again", "file=\"%s\"", f->path);
        gt_tfev_reader_fini(&f->reader);
        gt_tfev_reader_init(&f->reader);
        f->offset = 0;
    }
    f->size_seen = st.st_size;
    if (max_bytes < GT_TFEV_RECORD_MAX + GT_TFEV_FRAMING) {
        max_bytes = GT_TFEV_RECORD_MAX + GT_TFEV_FRAMING;
    }
    /* The offset passes the end while an over-long record is being skipped. */
    size_t want = st.st_size > f->offset ? (size_t)(st.st_size - f->offset) : 0;
    if (want > max_bytes) {
        want = max_bytes;
    }
    if (want == 0) {
        goto out;
    }
    buf = gt_xmalloc(want);
    size_t got = 0;
    while (got < want) {
        ssize_t n = pread(fd, buf + got, want - got, (off_t)(f->offset + (int64_t)got));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            rc = -errno;
            gt_err_set(err, rc, "cannot read %s: %s", f->path, strerror(-rc));
            goto out;
        }
        if (n == 0) {
            break; /* truncated since the fstat: parse what there is */
        }
        got += (size_t)n;
    }
    f->offset += (int64_t)gt_tfev_parse(&f->reader, f->path, f->offset, buf, got, out);
out:
    free(buf);
    close(fd);
    return rc;
}
