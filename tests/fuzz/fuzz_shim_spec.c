/*
 * Fuzz target: gantry-shim's spec.json, checked by api's schema engine over
 * the shim's tables. The file is the agent's, but the shim runs as root
 * and trusts nothing it reads. A rejected spec leaves nothing allocated
 * and says why; an accepted one writes back (gt_shim_spec_to_json) into a
 * spec that parses again and writes back the same text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/shim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gt_shim_spec spec, back;
    struct gt_err err = {0};
    if (gt_shim_spec_parse((const char *)data, size, &spec, &err) != 0) {
        GT_ASSERT(err.code == GT_EINVAL && strncmp(err.msg, "spec", 4) == 0);
        GT_ASSERT(spec.argv == NULL && spec.cwd == NULL);
        return 0;
    }
    GT_ASSERT(spec.argv && spec.env && spec.cwd && spec.cgroup_path && spec.log_dir);
    GT_ASSERT(spec.n_argv > 0 || spec.image);
    char *text = gt_shim_spec_to_json(&spec);
    GT_ASSERT(gt_shim_spec_parse(text, strlen(text), &back, &err) == 0);
    char *again = gt_shim_spec_to_json(&back);
    GT_ASSERT(strcmp(text, again) == 0);
    free(again);
    free(text);
    gt_shim_spec_fini(&back);
    gt_shim_spec_fini(&spec);
    return 0;
}
