/*
 * Fuzz target: the Philly readers (philly.csv and the Helios VC sizes) over
 * the same bytes. Accepted jobs must be in range with increasing lines;
 * every rejection must name its line.
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
    if (gt_sim_philly_parse((const char *)data, size, &t, &err) < 0) {
        GT_ASSERT(err.code == GT_EINVAL && strncmp(err.msg, "line ", 5) == 0);
    }
    for (size_t i = 0; i < t.n_jobs; i++) {
        GT_ASSERT(t.jobs[i].num_gpu >= 0 && t.jobs[i].duration_s >= 0);
        GT_ASSERT(t.jobs[i].vc >= 0 && (size_t)t.jobs[i].vc < t.n_vcs);
        GT_ASSERT(i == 0 || t.jobs[i].line > t.jobs[i - 1].line);
    }
    gt_err_clear(&err);
    if (gt_sim_vc_sizes_parse((const char *)data, size, &t, &err) < 0) {
        GT_ASSERT(err.code == GT_EINVAL && strncmp(err.msg, "line ", 5) == 0);
    }
    size_t before = t.n_jobs;
    gt_sim_trace_select(&t, 0, INT64_C(1) << 40);
    GT_ASSERT(t.n_jobs + t.n_skipped_no_gpu + t.n_skipped_window + t.n_skipped_vc +
                  t.n_skipped_too_big ==
              before);
    for (size_t i = 1; i < t.n_jobs; i++) {
        GT_ASSERT(t.jobs[i].submit_s >= t.jobs[i - 1].submit_s);
    }
    gt_sim_trace_fini(&t);
    return 0;
}
