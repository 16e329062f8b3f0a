/*
 * Fuzz target: TensorBoard event streams (untrusted: any task writes its
 * own event files). Parsing never reads out of bounds or crashes, always
 * makes progress, yields only points with a tag; and a stream with nothing
 * corrupt in it gives the same points when it arrives in two pieces (as a
 * file read while it is written does).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/tfevents.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gt_log_set_level(GT_LOG_ERROR);
    /* A copy of exactly size bytes, so ASan sees any read past the end. */
    uint8_t *buf = gt_xmalloc(size ? size : 1);
    memcpy(buf, data, size);
    struct gt_tfev_reader whole;
    gt_tfev_reader_init(&whole);
    struct gt_tfev_points a = {0};
    size_t used = gt_tfev_parse(&whole, "fuzz", 0, buf, size, &a);
    GT_ASSERT(used <= size || whole.n_corrupt > 0);
    GT_ASSERT(size - (used < size ? used : size) < 12 + GT_TFEV_RECORD_MAX + 4);
    for (size_t i = 0; i < a.n; i++) {
        GT_ASSERT(a.v[i].tag != NULL);
    }
    if (whole.n_corrupt == 0) {
        struct gt_tfev_reader split;
        gt_tfev_reader_init(&split);
        struct gt_tfev_points b = {0};
        size_t half = size / 2;
        size_t off = gt_tfev_parse(&split, "fuzz", 0, buf, half, &b);
        GT_ASSERT(off <= half);
        off += gt_tfev_parse(&split, "fuzz", (int64_t)off, buf + off, size - off, &b);
        GT_ASSERT(off == used && split.n_corrupt == 0 && b.n == a.n);
        for (size_t i = 0; i < a.n; i++) {
            GT_ASSERT(!strcmp(a.v[i].tag, b.v[i].tag) && a.v[i].step == b.v[i].step &&
                      !memcmp(&a.v[i].value, &b.v[i].value, sizeof(double)));
        }
        GT_VEC_FREE(&b);
        gt_tfev_reader_fini(&split);
    }
    GT_VEC_FREE(&a);
    gt_tfev_reader_fini(&whole);
    free(buf);
    return 0;
}
