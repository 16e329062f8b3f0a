/*
 * Random (version 4) UUIDs, as RFC 4122 lays them out, from a pool of
 * getrandom bytes refilled when it runs low.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "common/common.h"

void gt_uuid4(struct gt_uuid_pool *p, char *buf, size_t len)
{
    /* one getrandom per 32 uuids: the three of each Job create each cost a
     * system call */
    if (p->left < 16) {
        size_t got = 0;
        while (got < sizeof(p->bytes)) {
            ssize_t n = getrandom(p->bytes + got, sizeof(p->bytes) - got, 0);
            GT_ASSERT(n > 0 || errno == EINTR);
            if (n > 0) {
                got += (size_t)n;
            }
        }
        p->left = sizeof(p->bytes);
    }
    unsigned char b[16];
    memcpy(b, p->bytes + sizeof(p->bytes) - p->left, sizeof(b));
    p->left -= sizeof(b);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    /* by hand: a 16-argument snprintf was a visible part of every create */
    static const char hex[] = "0123456789abcdef";
    char out[37];
    size_t o = 0;
    for (size_t i = 0; i < sizeof(b); i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            out[o++] = '-';
        }
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 0xf];
    }
    out[o] = '\0';
    snprintf(buf, len, "%s", out);
}
