/*
 * Fuzz target: the API codec and validator. The input is parsed once and
 * validated as every kind; whatever validation accepts must be canonical
 * (validating it again changes nothing).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *obj = NULL;
    if (gt_api_parse((const char *)data, size, &obj, NULL) != 0) {
        return 0;
    }
    for (int k = 0; k < GT_KIND_COUNT; k++) {
        json_t *copy = json_deep_copy(obj);
        struct gt_err err = {0};
        if (gt_api_validate((enum gt_kind)k, copy, &err) == 0) {
            char *once = gt_json_dumps(copy);
            GT_ASSERT(gt_api_validate((enum gt_kind)k, copy, NULL) == 0);
            char *twice = gt_json_dumps(copy);
            GT_ASSERT(strcmp(once, twice) == 0);
            free(once);
            free(twice);
        } else {
            GT_ASSERT(err.code == GT_EINVAL);
        }
        json_t *status = json_object_get(obj, "status");
        if (status) {
            json_t *scopy = json_deep_copy(status);
            gt_api_validate_status((enum gt_kind)k, scopy, NULL);
            json_decref(scopy);
        }
        json_decref(copy);
    }
    struct gt_resources r;
    gt_api_resources(json_object_get(obj, "resources"), &r, NULL);
    json_decref(obj);
    return 0;
}
