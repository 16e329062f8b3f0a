/*
 * Fuzz target: CRI log lines (a task's log file, whose text the task
 * writes). Each line of the input is parsed and rendered with and without
 * timestamps: never a read past the line; a parsed entry's text lies inside
 * the line; rendering a line adds at most its own bytes and a time.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/crilog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A copy of exactly size bytes, so ASan sees any read past the end. */
    char *buf = gt_xmalloc(size ? size : 1);
    memcpy(buf, data, size);
    struct gt_crilog_view plain = {0};
    struct gt_crilog_view stamped = {.timestamps = true, .since_ms = 1700000000000};
    bool mid_plain = false, mid_stamped = false;
    struct gt_buf a, b;
    gt_buf_init(&a);
    gt_buf_init(&b);
    for (size_t off = 0; off < size;) {
        const char *nl = memchr(buf + off, '\n', size - off);
        size_t len = nl ? (size_t)(nl - (buf + off)) : size - off;
        const char *line = buf + off;
        struct gt_crilog_entry e;
        if (gt_crilog_parse(line, len, &e)) {
            GT_ASSERT(e.text >= line && e.text + e.text_len <= line + len);
            GT_ASSERT(memchr(e.time, '\0', sizeof(e.time)) != NULL);
        }
        size_t before_a = a.len, before_b = b.len;
        gt_crilog_render(line, len, &plain, &mid_plain, &a);
        gt_crilog_render(line, len, &stamped, &mid_stamped, &b);
        GT_ASSERT(a.len - before_a <= len + 1);
        GT_ASSERT(b.len - before_b <= len + 1 + 32);
        off += len + (nl ? 1 : 0);
    }
    gt_buf_fini(&a);
    gt_buf_fini(&b);
    free(buf);
    return 0;
}
