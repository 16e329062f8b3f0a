/*
 * resource: the resources quotas, limits and requests are counted in, as one
 * vector indexed by enum gt_res, so code loops over resources instead of
 * naming struct fields or magic array indices.
 *
 * Units are canonical integers: cpu in milli-CPU ("500m" = 500), memory and
 * storage in bytes, GPUs in milli-GPU (nvidia.com/gpu: 2 = 2000, plus any
 * gantry.dev/gpu-milli share), as DESIGN.md "Resource model" pools them.
 * Whether a task's GPUs are whole devices or a share of one is a property
 * of the request, not of this vector.
 */
#ifndef GT_COMMON_RESOURCE_H
#define GT_COMMON_RESOURCE_H

#include <stdint.h>

enum gt_res {
    GT_RES_CPU,     /* milli-CPU: "cpu" */
    GT_RES_MEMORY,  /* bytes: "memory" */
    GT_RES_STORAGE, /* bytes: "storage" */
    GT_RES_GPU,     /* milli-GPU: "nvidia.com/gpu" x 1000 + "gantry.dev/gpu-milli" */
    GT_RES_COUNT
};

/* The names the API gives these resources (and the GPU share). */
#define GT_RES_NAME_CPU "cpu"
#define GT_RES_NAME_MEMORY "memory"
#define GT_RES_NAME_STORAGE "storage"
#define GT_RES_NAME_GPU "nvidia.com/gpu"
#define GT_RES_NAME_GPU_MILLI "gantry.dev/gpu-milli"
/* bytes of a task's scratch on its node's disk; in no enum gt_res slot, as
 * no quota or node capacity counts it */
#define GT_RES_NAME_EPHEMERAL "ephemeral-storage"

/* An amount of every resource, in the units above. */
struct gt_resvec {
    int64_t v[GT_RES_COUNT];
};

#endif
