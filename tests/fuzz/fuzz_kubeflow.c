/*
 * Fuzz target: Kubeflow training job conversion, checked as convert_check.h
 * says; a success is a gantry Job that validation accepts again unchanged
 * (the conversion's output is canonical).
 */
#include "convert_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void converted(const json_t *in, json_t *job)
{
    GT_ASSERT(gt_api_kubeflow_is(in));
    fuzz_check_canonical(GT_KIND_JOB, job);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_convert_documents(data, size, gt_api_kubeflow_convert, converted);
    return 0;
}
