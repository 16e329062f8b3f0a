/*
 * The frame heads of a streaming exec (execframe.h).
 */
#include "common/execframe.h"

void gt_exec_frame_head(uint8_t h[GT_EXEC_HEAD], int ch, size_t len)
{
    h[0] = (uint8_t)ch;
    for (int i = 0; i < 4; i++) {
        h[1 + i] = (uint8_t)(len >> (8 * (3 - i)));
    }
}

size_t gt_exec_frame_len(const uint8_t h[GT_EXEC_HEAD])
{
    size_t n = 0;
    for (int i = 0; i < 4; i++) {
        n = n << 8 | h[1 + i];
    }
    return n;
}
