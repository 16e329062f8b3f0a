/*
 * The task log's line format, CRI's (crilog.c): writing an entry's
 * prefix, parsing a line, showing lines as the task wrote them.
 */
#ifndef GT_CRILOG_H
#define GT_CRILOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* Which of the task's outputs a chunk came from. */
enum gt_shim_stream { GT_SHIM_STDOUT, GT_SHIM_STDERR };

/* One entry of a CRI log line (gt_crilog_parse). */
struct gt_crilog_entry {
    char time[31]; /* RFC 3339 with nanoseconds, "...Z" */
    enum gt_shim_stream stream;
    bool partial;     /* "P": the line goes on in a later entry */
    const char *text; /* borrowed from the line, without its newline */
    size_t text_len;
};

/* Write the entry prefix "TIMESTAMP STREAM TAG " for ns (since the epoch)
 * into buf (at least 48 bytes); returns its length (0 if buf is short). */
size_t gt_crilog_prefix(int64_t ns, enum gt_shim_stream stream, bool partial, char *buf,
                        size_t len);
/* Parse line (len bytes, without its newline) as a CRI entry into e; false
 * for a line that is not one (a plain log's, written before the format). */
bool gt_crilog_parse(const char *line, size_t len, struct gt_crilog_entry *e);

/* How a log is shown: kubectl logs' --timestamps and --since-time. */
struct gt_crilog_view {
    bool timestamps;  /* each line starts with its entry's time and a space */
    int64_t since_ms; /* entries before this (ms since the epoch) left out; 0: none */
};
/* Append one line of a log file (len bytes, without its newline) to out as
 * the task wrote it, seen through v: a CRI entry's text (and its newline
 * unless "P"), a plain log's line as it is (never left out: it has no
 * time). *mid_line (caller's, false at the start) says whether the last
 * text shown ended inside a line, so a line's time is shown once. */
void gt_crilog_render(const char *line, size_t len, const struct gt_crilog_view *v, bool *mid_line,
                      struct gt_buf *out);

#endif
