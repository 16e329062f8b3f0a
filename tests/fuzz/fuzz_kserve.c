/*
 * Fuzz target: the KServe InferenceService conversion (manifests users
 * apply). Every YAML document of the input is converted; the input is never
 * changed; a failure is GT_EINVAL with a message and no output; a success
 * that validation accepts (filling defaults) is accepted again unchanged,
 * and one it refuses is refused with a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *docs = NULL;
    if (gt_yaml_load_documents((const char *)data, size, &docs, NULL) != 0) {
        return 0;
    }
    size_t i;
    json_t *doc;
    json_array_foreach(docs, i, doc)
    {
        json_t *before = json_deep_copy(doc);
        json_t *isvc = NULL;
        struct gt_err err = {0};
        int rc = gt_api_kserve_convert(doc, &isvc, &err);
        GT_ASSERT(json_equal(doc, before));
        if (rc != 0) {
            GT_ASSERT(rc == GT_EINVAL && err.msg[0] != '\0' && isvc == NULL);
        } else {
            struct gt_err verr = {0};
            if (gt_api_validate(GT_KIND_INFERENCESERVICE, isvc, &verr) == 0) {
                /* defaults filled once stay as they are */
                char *once = gt_json_dumps(isvc);
                GT_ASSERT(gt_api_validate(GT_KIND_INFERENCESERVICE, isvc, NULL) == 0);
                char *twice = gt_json_dumps(isvc);
                GT_ASSERT(strcmp(once, twice) == 0);
                free(once);
                free(twice);
            } else {
                GT_ASSERT(verr.msg[0] != '\0');
            }
            json_decref(isvc);
        }
        json_decref(before);
    }
    json_decref(docs);
    return 0;
}
