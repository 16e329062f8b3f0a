/*
 * Fuzz target: the openb pod and node list readers over the same bytes.
 * Accepted pods ask for whole GPUs or one share, never both; every
 * rejection must name its line.
 */
#include <stdint.h>
#include <string.h>

#include "sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gt_sim_openb o;
    struct gt_err err = {0};
    gt_sim_openb_init(&o);
    if (gt_sim_openb_pods_parse((const char *)data, size, &o, &err) < 0) {
        GT_ASSERT(err.code == GT_EINVAL && strncmp(err.msg, "line ", 5) == 0);
    }
    for (size_t i = 0; i < o.n_pods; i++) {
        const struct gt_sim_pod *p = &o.pods[i];
        GT_ASSERT(p->gpu_milli >= 0 && p->gpu_milli <= 1000);
        GT_ASSERT((p->num_gpu == 0) == (p->gpu_milli == 0));
        GT_ASSERT(p->num_gpu <= 1 || p->gpu_milli == 1000);
    }
    gt_err_clear(&err);
    if (gt_sim_openb_nodes_parse((const char *)data, size, &o, &err) < 0) {
        GT_ASSERT(err.code == GT_EINVAL && strncmp(err.msg, "line ", 5) == 0);
    }
    for (size_t i = 0; i < o.n_nodes; i++) {
        GT_ASSERT(o.nodes[i].name[0] != '\0' && o.nodes[i].gpus >= 0);
    }
    gt_sim_openb_fini(&o);
    return 0;
}
