/*
 * Fuzz target: label and field selectors. The input's first line is the
 * selector; the rest, if it parses as JSON, is the object matched against
 * (its "labels" member for label selectors).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *nl = memchr(data, '\n', size);
    size_t sel_len = nl ? (size_t)(nl - (const char *)data) : size;
    char *text = gt_xstrndup((const char *)data, sel_len);
    json_t *obj = nl ? json_loadb(nl + 1, size - sel_len - 1, 0, NULL) : NULL;
    struct gt_selector *sel = NULL;
    struct gt_err err = {0};
    if (gt_selector_parse(text, &sel, &err) == 0) {
        gt_selector_match(sel, json_object_get(obj, "labels"));
        gt_selector_match(sel, NULL);
        gt_selector_free(sel);
    } else {
        GT_ASSERT(err.code == GT_EBADREQ && sel == NULL);
    }
    struct gt_fieldsel *fsel = NULL;
    if (gt_fieldsel_parse(text, &fsel, NULL) == 0) {
        gt_fieldsel_match(fsel, obj);
        gt_fieldsel_free(fsel);
    }
    json_decref(obj);
    free(text);
    return 0;
}
