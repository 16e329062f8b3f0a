/*
 * Fuzz target: the gantry-sim configuration parser. Accepted settings stay
 * within their bounds; every rejection says why.
 */
#include <stdint.h>

#include "sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gt_sim_config c;
    struct gt_err err = {0};
    gt_sim_config_default(&c);
    if (gt_sim_config_parse((const char *)data, size, &c, &err) < 0) {
        GT_ASSERT(err.code == GT_EINVAL && err.msg[0] != '\0');
        return 0;
    }
    GT_ASSERT(c.cycle_interval_s >= 1 && c.recheck_interval_s >= 1);
    GT_ASSERT(c.restart_overhead_s >= 0 && !c.borrowing);
    return 0;
}
