/* Clocks and RFC 3339 timestamps (UTC, "Z" suffix, as Kubernetes writes them). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/common.h"

int64_t gt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t gt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t gt_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *gt_time_format(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

int gt_time_parse(const char *s, int64_t *ms)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end) {
        return GT_EINVAL;
    }
    int frac_ms = 0;
    if (*end == '.') {
        int digits = 0;
        end++;
        while (*end >= '0' && *end <= '9') {
            if (digits < 3) {
                frac_ms = frac_ms * 10 + (*end - '0');
            }
            digits++;
            end++;
        }
        if (digits == 0) {
            return GT_EINVAL;
        }
        for (; digits < 3; digits++) {
            frac_ms *= 10;
        }
    }
    if (strcmp(end, "Z") != 0) {
        return GT_EINVAL;
    }
    *ms = (int64_t)timegm(&tm) * 1000 + frac_ms;
    return 0;
}
