/*
 * The task log's line format, CRI's (the Kubernetes container runtime
 * interface's, as kubelet, CRI-O's conmon and containerd write it): every
 * line of the file is one entry "TIMESTAMP STREAM TAG TEXT\n", TIMESTAMP
 * RFC 3339 with nanoseconds in UTC ("2026-12-02T03:04:05.123456789Z", 30
 * characters), STREAM "stdout" or "stderr", TAG "F" when TEXT ends a line
 * of the task's output (its newline is the entry's) or "P" for a part of a
 * line that had no newline yet when it was read (the next entries of that
 * stream continue it). Logs written before this format are plain text;
 * gt_crilog_parse tells them apart line by line, so they read as before.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent/crilog.h"

static const char *const stream_names[] = {"stdout", "stderr"};

size_t gt_crilog_prefix(int64_t ns, enum gt_shim_stream stream, bool partial, char *buf, size_t len)
{
    time_t sec = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    int n = snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%09dZ %s %c ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     (int)(ns % 1000000000), stream_names[stream == GT_SHIM_STDERR],
                     partial ? 'P' : 'F');
    return n > 0 && (size_t)n < len ? (size_t)n : 0;
}

static bool digits(const char *s, const char *pattern)
{
    for (; *pattern; s++, pattern++) {
        if (*pattern == 'd' ? (*s < '0' || *s > '9') : *s != *pattern) {
            return false;
        }
    }
    return true;
}

bool gt_crilog_parse(const char *line, size_t len, struct gt_crilog_entry *e)
{
    /* "YYYY-MM-DDTHH:MM:SS.NNNNNNNNNZ stdout F " before the text */
    static const char ts_pattern[] = "dddd-dd-ddTdd:dd:dd.dddddddddZ ";
    size_t ts_len = sizeof(ts_pattern) - 1;
    if (len < ts_len + 9 || !digits(line, ts_pattern)) {
        return false;
    }
    const char *p = line + ts_len;
    int stream;
    if (!strncmp(p, "stdout ", 7)) {
        stream = GT_SHIM_STDOUT;
    } else if (!strncmp(p, "stderr ", 7)) {
        stream = GT_SHIM_STDERR;
    } else {
        return false;
    }
    p += 7;
    if ((*p != 'F' && *p != 'P') || p[1] != ' ') {
        return false;
    }
    memcpy(e->time, line, ts_len - 1);
    e->time[ts_len - 1] = '\0';
    e->stream = (enum gt_shim_stream)stream;
    e->partial = *p == 'P';
    e->text = p + 2;
    e->text_len = len - (size_t)(e->text - line);
    return true;
}

void gt_crilog_render(const char *line, size_t len, const struct gt_crilog_view *v, bool *mid_line,
                      struct gt_buf *out)
{
    struct gt_crilog_entry e;
    if (!gt_crilog_parse(line, len, &e)) {
        /* a plain log's line: no time to show or filter by */
        gt_buf_append(out, line, len);
        gt_buf_puts(out, "\n");
        *mid_line = false;
        return;
    }
    int64_t at_ms = 0;
    if (v->since_ms > 0 && gt_time_parse(e.time, &at_ms) == 0 && at_ms < v->since_ms) {
        return;
    }
    if (v->timestamps && !*mid_line) {
        gt_buf_printf(out, "%s ", e.time);
    }
    gt_buf_append(out, e.text, e.text_len);
    if (!e.partial) {
        gt_buf_puts(out, "\n");
    }
    *mid_line = e.partial;
}
