/*
 * GPU discovery front end: picks a backend (NVML or fake), keeps the set's
 * invariant (on failure, zero GPUs and nothing allocated) and provides the
 * topology grouping both backends share. Groups are connected components
 * of "shares an NVLink endpoint or a PCIe switch", found with union-find.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"

static int discover(const struct gt_gpu_ops *ops, struct gt_gpu_set *set, const char *arg,
                    const char *node_name, struct gt_err *err)
{
    memset(set, 0, sizeof(*set));
    set->ops = ops;
    int rc = ops->discover(set, arg, node_name, err);
    if (rc < 0) {
        gt_gpu_set_fini(set);
        set->ops = ops;
    }
    return rc;
}

int gt_gpu_discover_nvml(struct gt_gpu_set *set, const char *lib_path, struct gt_err *err)
{
    return discover(&gt_gpu_nvml_ops, set, lib_path ? lib_path : GT_NVML_LIBRARY, NULL, err);
}

int gt_gpu_discover_fake(struct gt_gpu_set *set, const char *spec, const char *node_name,
                         struct gt_err *err)
{
    return discover(&gt_gpu_fake_ops, set, spec, node_name ? node_name : "", err);
}

int gt_gpu_poll_health(struct gt_gpu_set *set, int timeout_ms, struct gt_err *err)
{
    if (!set->ops || !set->ops->poll_health || set->n_gpus == 0) {
        return 0;
    }
    return set->ops->poll_health(set, timeout_ms, err);
}

void gt_gpu_set_fini(struct gt_gpu_set *set)
{
    if (set->ops && set->ops->fini) {
        set->ops->fini(set);
    }
    free(set->gpus);
    memset(set, 0, sizeof(*set));
}

int gt_gpu_uf_find(int *parent, int i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

void gt_gpu_uf_union(int *parent, int a, int b)
{
    int ra = gt_gpu_uf_find(parent, a);
    int rb = gt_gpu_uf_find(parent, b);
    /* the smaller root wins, so a group's root is its lowest member */
    if (ra < rb) {
        parent[rb] = ra;
    } else if (rb < ra) {
        parent[ra] = rb;
    }
}

void gt_gpu_groups_assign(struct gt_gpu *gpus, size_t n, int *parent)
{
    int next = 0;
    for (size_t i = 0; i < n; i++) {
        int root = gt_gpu_uf_find(parent, (int)i);
        if (root == (int)i) {
            snprintf(gpus[i].group, sizeof(gpus[i].group), "g%d", next++);
        } else {
            /* root < i: its group was named when the root was visited */
            memcpy(gpus[i].group, gpus[root].group, sizeof(gpus[i].group));
        }
    }
}
