/* Growable byte buffer, always NUL-terminated so data can be used as a string. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

void gt_buf_init(struct gt_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void gt_buf_fini(struct gt_buf *b)
{
    free(b->data);
    gt_buf_init(b);
}

void gt_buf_reset(struct gt_buf *b)
{
    b->len = 0;
    if (b->data) {
        b->data[0] = '\0';
    }
}

static void reserve(struct gt_buf *b, size_t extra)
{
    GT_ASSERT(b->len + extra + 1 > b->len);
    GT_VEC_RESERVE(b->data, b->cap, b->len + extra + 1, 64);
}

void gt_buf_append(struct gt_buf *b, const void *data, size_t len)
{
    reserve(b, len);
    if (len) {
        memcpy(b->data + b->len, data, len);
    }
    b->len += len;
    b->data[b->len] = '\0';
}

void gt_buf_puts(struct gt_buf *b, const char *s)
{
    gt_buf_append(b, s, strlen(s));
}

void gt_buf_printf(struct gt_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

char *gt_buf_take(struct gt_buf *b)
{
    char *p = b->data;
    if (!p) {
        p = gt_xstrdup("");
    }
    gt_buf_init(b);
    return p;
}

void gt_buf_base64(struct gt_buf *b, const void *data, size_t len, bool url)
{
    static const char std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const char *tab = url ? safe : std;
    const unsigned char *d = data;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)d[i] << 16 | (i + 1 < len ? (unsigned)d[i + 1] << 8 : 0) |
                     (i + 2 < len ? d[i + 2] : 0);
        char q[4] = {tab[v >> 18 & 63], tab[v >> 12 & 63], tab[v >> 6 & 63], tab[v & 63]};
        size_t keep = len - i >= 3 ? 4 : len - i + 1;
        gt_buf_append(b, q, keep);
        if (!url && keep < 4) {
            gt_buf_append(b, "==", 4 - keep);
        }
    }
}
