/*
 * Fuzz target: quantity parsing in both units. Every accepted value must be
 * non-negative and must survive format-then-parse unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = gt_xstrndup((const char *)data, size);
    for (int u = GT_QTY_MILLI; u <= GT_QTY_UNIT; u++) {
        int64_t v;
        struct gt_err err = {0};
        if (gt_quantity_parse(s, (enum gt_qty_unit)u, &v, &err) != 0) {
            GT_ASSERT(err.code == GT_EINVAL && err.msg[0] != '\0');
            continue;
        }
        GT_ASSERT(v >= 0);
        for (int binary = 0; binary <= 1; binary++) {
            char buf[32];
            int64_t back = -1;
            gt_quantity_format(v, (enum gt_qty_unit)u, binary, buf, sizeof(buf));
            GT_ASSERT(gt_quantity_parse(buf, (enum gt_qty_unit)u, &back, NULL) == 0);
            GT_ASSERT(back == v);
        }
    }
    free(s);
    return 0;
}
