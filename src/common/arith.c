/* Checked int64 arithmetic: every sum of quantities goes through these. */
#include <errno.h>

#include "common/common.h"

int gt_add_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        return -ERANGE;
    }
    *out = r;
    return 0;
}

int gt_sub_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) {
        return -ERANGE;
    }
    *out = r;
    return 0;
}

int gt_mul_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        return -ERANGE;
    }
    *out = r;
    return 0;
}
