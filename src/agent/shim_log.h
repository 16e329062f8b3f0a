/*
 * The shim's rotating task log (shim_log.c), in CRI's line format
 * (crilog.h).
 */
#ifndef GT_SHIM_LOG_H
#define GT_SHIM_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/crilog.h"
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
/* Append data (a chunk of stream, as read) as CRI entries stamped now:
 * one "F" entry per line it ends, a "P" entry for what follows its last
 * newline. An entry goes whole into one file: the log rotates before an
 * entry that would pass the cap (a longer one is split into "P" entries
 * of the cap's size). 0 or -errno. */
int gt_shim_log_write(struct gt_shim_log *log, enum gt_shim_stream stream, const char *data,
                      size_t len, struct gt_err *err);
void gt_shim_log_close(struct gt_shim_log *log);

#endif
