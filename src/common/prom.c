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
