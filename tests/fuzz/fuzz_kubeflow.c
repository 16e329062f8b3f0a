/*
 * Fuzz target: Kubeflow TFJob/PyTorchJob conversion. Every YAML document of
 * the input is converted; the input is never changed; a failure is
 * GT_EINVAL with a message and no output; a success is a gantry Job that
 * validation accepts again unchanged (the conversion's output is canonical).
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
        json_t *job = NULL;
        struct gt_err err = {0};
        int rc = gt_api_kubeflow_convert(doc, &job, &err);
        GT_ASSERT(json_equal(doc, before));
        if (rc != 0) {
            GT_ASSERT(rc == GT_EINVAL && err.msg[0] != '\0' && job == NULL);
        } else {
            GT_ASSERT(gt_api_kubeflow_is(doc));
            char *once = gt_json_dumps(job);
            GT_ASSERT(gt_api_validate(GT_KIND_JOB, job, NULL) == 0);
            char *twice = gt_json_dumps(job);
            GT_ASSERT(strcmp(once, twice) == 0);
            free(once);
            free(twice);
            json_decref(job);
        }
        json_decref(before);
    }
    json_decref(docs);
    return 0;
}
