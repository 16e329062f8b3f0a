/*
 * Writing the Prometheus text exposition format, version 0.0.4
 * (prometheus.io/docs/instrumenting/exposition_formats): family headers and
 * escaped label values. Series lines themselves are the callers'.
 */
#include <string.h>

#include "common/common.h"

void gt_prom_family(struct gt_buf *b, const char *name, const char *type, const char *help)
{
    gt_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void gt_prom_label(struct gt_buf *b, const char *name, const char *value, bool first)
{
    if (!first) {
        gt_buf_append(b, ",", 1);
    }
    gt_buf_puts(b, name);
    gt_buf_append(b, "=\"", 2);
    for (const char *p = value ? value : ""; *p;) {
        size_t n = strcspn(p, "\\\"\n");
        gt_buf_append(b, p, n);
        p += n;
        if (*p) {
            gt_buf_append(b, "\\", 1);
            gt_buf_append(b, *p == '\n' ? "n" : p, 1);
            p++;
        }
    }
    gt_buf_append(b, "\"", 1);
}

void gt_prom_sample(struct gt_buf *b, const char *name, const char *labels, double value)
{
    gt_buf_puts(b, name);
    gt_buf_append(b, "{", 1);
    gt_buf_puts(b, labels);
    gt_buf_append(b, "} ", 2);
    if (value > -1e15 && value < 1e15 && value == (double)(int64_t)value) {
        /* the common case, without printf's floating-point path */
        char digits[24];
        size_t n = sizeof(digits);
        int64_t x = (int64_t)value;
        uint64_t u = x < 0 ? (uint64_t)-x : (uint64_t)x;
        do {
            digits[--n] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        if (x < 0) {
            digits[--n] = '-';
        }
        gt_buf_append(b, digits + n, sizeof(digits) - n);
        gt_buf_append(b, "\n", 1);
    } else {
        gt_buf_printf(b, "%.15g\n", value);
    }
}
