/*
 * Ages and cell values as kubectl prints them.
 *
 * gt_cli_format_duration follows k8s.io/apimachinery/pkg/util/duration
 * HumanDuration exactly, so `gantry get` ages read like kubectl's: precise
 * when young (seconds below two minutes, minutes and seconds below ten
 * minutes) and coarser as objects age.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

char *gt_cli_format_duration(int64_t ms, char *buf, size_t len)
{
    /* Go's int(d.Seconds()) truncates toward zero, as C division does. */
    int64_t s = ms / 1000;
    if (s < -1) {
        snprintf(buf, len, "<invalid>");
        return buf;
    }
    if (s < 0) {
        s = 0;
    }
    int64_t m = s / 60, h = s / 3600, d = h / 24;
    if (s < 120) {
        snprintf(buf, len, "%" PRId64 "s", s);
    } else if (m < 10) {
        if (s % 60 == 0) {
            snprintf(buf, len, "%" PRId64 "m", m);
        } else {
            snprintf(buf, len, "%" PRId64 "m%" PRId64 "s", m, s % 60);
        }
    } else if (m < 3 * 60) {
        snprintf(buf, len, "%" PRId64 "m", m);
    } else if (h < 8) {
        if (m % 60 == 0) {
            snprintf(buf, len, "%" PRId64 "h", h);
        } else {
            snprintf(buf, len, "%" PRId64 "h%" PRId64 "m", h, m % 60);
        }
    } else if (h < 48) {
        snprintf(buf, len, "%" PRId64 "h", h);
    } else if (h < 24 * 8) {
        if (h % 24 == 0) {
            snprintf(buf, len, "%" PRId64 "d", d);
        } else {
            snprintf(buf, len, "%" PRId64 "d%" PRId64 "h", d, h % 24);
        }
    } else if (h < 24 * 365 * 2) {
        snprintf(buf, len, "%" PRId64 "d", d);
    } else if (h < 24 * 365 * 8) {
        if (d % 365 == 0) {
            snprintf(buf, len, "%" PRId64 "y", d / 365);
        } else {
            snprintf(buf, len, "%" PRId64 "y%" PRId64 "d", d / 365, d % 365);
        }
    } else {
        snprintf(buf, len, "%" PRId64 "y", d / 365);
    }
    return buf;
}

char *gt_cli_format_age(const char *ts, int64_t now_ms, char *buf, size_t len)
{
    int64_t t_ms;
    if (!ts || gt_time_parse(ts, &t_ms) != 0) {
        snprintf(buf, len, "<unknown>");
        return buf;
    }
    return gt_cli_format_duration(now_ms - t_ms, buf, len);
}

char *gt_cli_scalar_text(const json_t *v)
{
    if (json_is_string(v)) {
        return gt_xstrdup(json_string_value(v));
    }
    if (json_is_integer(v)) {
        return gt_xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
    }
    if (json_is_real(v)) {
        return gt_xasprintf("%g", json_real_value(v));
    }
    if (json_is_boolean(v)) {
        return gt_xstrdup(json_is_true(v) ? "true" : "false");
    }
    return NULL;
}
