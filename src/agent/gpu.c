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

/* Xids caused by applications, not the GPU (the NVIDIA k8s device plugin's list). */
static const uint64_t app_xids[] = {13, 31, 43, 45, 68, 109};

bool gt_gpu_xid_critical(uint64_t xid)
{
    for (size_t i = 0; i < GT_ARRAY_LEN(app_xids); i++) {
        if (app_xids[i] == xid) {
            return false;
        }
    }
    return xid != 0;
}

static int discover(const struct gt_gpu_ops *ops, struct gt_gpu_set *set, const char *arg,
                    const char *node_name, struct gt_err *err)
{
    memset(set, 0, sizeof(*set));
    set->ops = ops;
    int rc = ops->discover(set, arg, node_name, err);
    if (rc < 0) {
        gt_gpu_set_fini(set);
        set->ops = ops;
    } else {
        set->samples = gt_xcalloc(set->n_gpus ? set->n_gpus : 1, sizeof(*set->samples));
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

/* healthy from lost and xid_failed; returns how many GPUs changed */
static size_t health_update(struct gt_gpu_set *set)
{
    size_t changed = 0;
    for (size_t i = 0; i < set->n_gpus; i++) {
        struct gt_gpu *g = &set->gpus[i];
        bool healthy = !g->lost && !g->xid_failed;
        changed += healthy != g->healthy;
        g->healthy = healthy;
    }
    return changed;
}

int gt_gpu_poll_health(struct gt_gpu_set *set, int timeout_ms, struct gt_err *err)
{
    if (!set->ops || !set->ops->poll_health || set->n_gpus == 0) {
        return 0;
    }
    int rc = set->ops->poll_health(set, timeout_ms, err);
    health_update(set);
    return rc;
}

size_t gt_gpu_sample_all(struct gt_gpu_set *set)
{
    if (!set->ops || !set->ops->sample || set->n_gpus == 0) {
        return 0;
    }
    struct gt_err err = {0};
    if (set->ops->poll_health && set->ops->poll_health(set, 0, &err) < 0) {
        gt_log_warn("cannot read GPU events", "err=\"%s\"", err.msg);
    }
    for (size_t i = 0; i < set->n_gpus; i++) {
        struct gt_gpu *g = &set->gpus[i];
        struct gt_gpu_sample *s = &set->samples[i];
        memset(s, 0, sizeof(*s));
        bool lost = set->ops->sample(set, i, s) < 0;
        if (lost) {
            memset(s, 0, sizeof(*s)); /* a lost device has no readings */
        } else {
            s->taken_ms = gt_now_ms();
        }
        if (lost != g->lost) {
            gt_log_warn(lost ? "GPU stopped answering" : "GPU answers again", "gpu=%d uuid=%s",
                        g->index, g->uuid);
        }
        g->lost = lost;
    }
    return health_update(set);
}

void gt_gpu_set_fini(struct gt_gpu_set *set)
{
    if (set->ops && set->ops->fini) {
        set->ops->fini(set);
    }
    free(set->samples);
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
