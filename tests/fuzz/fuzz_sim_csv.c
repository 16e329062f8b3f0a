/*
 * Fuzz target: the generic trace CSV (columns submission_time, duration, num_gpu and
 * optionally vc, selected by header name among any others).
 * Accepted jobs must be in range; every rejection must name its line.
 */
#include <stdint.h>
#include <string.h>

#include "sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gt_sim_trace t;
    struct gt_err err = {0};
    gt_sim_trace_init(&t);
    if (gt_sim_csv_parse((const char *)data, size, &t, &err) < 0) {
        GT_ASSERT(err.code == GT_EINVAL && strncmp(err.msg, "line ", 5) == 0);
    }
    for (size_t i = 0; i < t.n_jobs; i++) {
        GT_ASSERT(t.jobs[i].submit_s >= 0 && t.jobs[i].duration_s >= 0);
        GT_ASSERT(t.jobs[i].num_gpu >= 0);
        GT_ASSERT(t.jobs[i].vc >= 0 && (size_t)t.jobs[i].vc < t.n_vcs);
    }
    gt_sim_trace_fini(&t);
    return 0;
}
