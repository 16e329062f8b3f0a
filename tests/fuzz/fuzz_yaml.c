/*
 * Fuzz target: the YAML loader and dumper. Every document the loader
 * accepts must dump to YAML that loads back to an equal value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *docs = NULL;
    struct gt_err err = {0};
    if (gt_yaml_load_documents((const char *)data, size, &docs, &err) != 0) {
        GT_ASSERT(err.code == GT_EBADREQ);
        return 0;
    }
    size_t i;
    json_t *doc;
    json_array_foreach(docs, i, doc)
    {
        char *text = gt_yaml_dump(doc);
        json_t *back = NULL;
        struct gt_err err2 = {0};
        if (gt_yaml_load_documents(text, strlen(text), &back, &err2) != 0) {
            gt_assert_fail(err2.msg, __FILE__, __LINE__);
        }
        GT_ASSERT(json_array_size(back) == 1 || json_is_null(doc));
        GT_ASSERT(json_equal(json_array_get(back, 0), doc));
        json_decref(back);
        free(text);
        char *compact = gt_json_dumps(doc);
        free(compact);
    }
    json_decref(docs);
    return 0;
}
