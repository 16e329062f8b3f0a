/*
 * The allocator wrapper: the only place raw malloc/realloc/calloc are called.
 * Out of memory is not an error gantry handles: it aborts with a message.
 * gt_vec_grow, the growth rule of every growable array, lives here too: an
 * array size past SIZE_MAX is the same failure as an allocation refused.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

static _Noreturn void oom(size_t n)
{
    fprintf(stderr, "gantry: out of memory allocating %zu bytes\n", n);
    abort();
}

void *gt_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        oom(n);
    }
    return p;
}

void *gt_xcalloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (!p) {
        oom(nmemb * size);
    }
    return p;
}

void *gt_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        oom(n);
    }
    return q;
}

void *gt_vec_grow(void *arr, size_t *cap, size_t need, size_t first_cap, size_t elem_size)
{
    GT_ASSERT(first_cap > 0 && elem_size > 0);
    if (need <= *cap) {
        return arr;
    }
    size_t c = *cap ? *cap : first_cap;
    while (c < need) {
        if (c > SIZE_MAX / 2) {
            oom(SIZE_MAX);
        }
        c *= 2;
    }
    if (c > SIZE_MAX / elem_size) {
        oom(SIZE_MAX);
    }
    arr = gt_xrealloc(arr, c * elem_size);
    *cap = c;
    return arr;
}

char *gt_xstrdup(const char *s)
{
    if (!s) {
        return NULL;
    }
    return gt_xstrndup(s, strlen(s));
}

char *gt_xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = gt_xmalloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *gt_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = NULL;
    int n = vasprintf(&p, fmt, ap);
    va_end(ap);
    if (n < 0) {
        oom(0);
    }
    return p;
}

void gt_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "gantry: assertion failed: %s at %s:%d\n", expr, file, line);
    abort();
}
