/*
 * The shim's rotating task log (shim_log.c).
 */
#ifndef GT_SHIM_LOG_H
#define GT_SHIM_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* The rotating task log: task.log in dir, rotated to task.log.1..keep when
 * it would pass max_bytes (0: never). */
struct gt_shim_log {
    int dir_fd;
    int fd;
    int64_t size_bytes;
    int64_t max_bytes;
    int keep_files;
};

/* Open (append to) dir/task.log. 0 or -errno. */
int gt_shim_log_open(struct gt_shim_log *log, const char *dir, int64_t max_bytes, int keep_files,
                     struct gt_err *err);
/* Append data, rotating as needed (a chunk is split at the cap). */
int gt_shim_log_write(struct gt_shim_log *log, const char *data, size_t len, struct gt_err *err);
void gt_shim_log_close(struct gt_shim_log *log);

#endif
