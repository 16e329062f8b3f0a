/*
 * logfmt logging to stderr: one line per call, written with a single write(2)
 * so lines from several processes sharing a terminal do not interleave.
 * The level threshold is process-wide configuration set once at start.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"

static enum gt_log_level threshold = GT_LOG_INFO;

void gt_log_set_level(enum gt_log_level level)
{
    threshold = level;
}

void gt_log(enum gt_log_level level, const char *msg, const char *kv, ...)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    if (level < threshold) {
        return;
    }
    char line[2048];
    char ts[40];
    int64_t now = gt_now_ms();
    gt_time_format(now, ts, sizeof(ts));
    /* splice milliseconds in before the 'Z' */
    size_t tl = strlen(ts);
    if (tl > 1) {
        snprintf(ts + tl - 1, sizeof(ts) - tl + 1, ".%03dZ", (int)(now % 1000));
    }
    int n = snprintf(line, sizeof(line), "ts=%s level=%s msg=\"%s\"", ts, names[level], msg);
    if (kv && n > 0 && (size_t)n < sizeof(line) - 2) {
        line[n++] = ' ';
        va_list ap;
        va_start(ap, kv);
        int m = vsnprintf(line + n, sizeof(line) - (size_t)n, kv, ap);
        va_end(ap);
        if (m > 0) {
            n += m;
        }
    }
    if (n < 0) {
        return;
    }
    if ((size_t)n > sizeof(line) - 2) {
        n = (int)sizeof(line) - 2;
    }
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}
