/*
 * Fuzz target: the KServe InferenceService conversion (manifests users
 * apply), checked as convert_check.h says; a success that validation
 * accepts (filling defaults) is accepted again unchanged, and one it refuses
 * is refused with a message.
 */
#include "convert_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void converted(const json_t *in, json_t *isvc)
{
    (void)in;
    struct gt_err verr = {0};
    if (gt_api_validate(GT_KIND_INFERENCESERVICE, isvc, &verr) == 0) {
        fuzz_check_canonical(GT_KIND_INFERENCESERVICE, isvc);
    } else {
        GT_ASSERT(verr.msg[0] != '\0');
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_convert_documents(data, size, gt_api_kserve_convert, converted);
    return 0;
}
