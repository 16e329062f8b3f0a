/*
 * api internals: the kinds' schema tables (schemas.c) and the resource
 * maps they hold; the engine that walks the tables is public (api.h).
 */
#ifndef GT_API_INT_H
#define GT_API_INT_H

#include "api/api.h"

/* Resource names a resource map may hold: GT_RESF_* (api.h). */
#define GT_RESF_POOL (GT_RESF_CPU | GT_RESF_MEMORY | GT_RESF_STORAGE | GT_RESF_GPU)
#define GT_RESF_ALL (GT_RESF_POOL | GT_RESF_GPU_MILLI)

/* Resource maps (resources.c): check names against allowed, parse every
 * quantity and write it back canonical. */
int gt_resources_canonicalize(json_t *map, unsigned allowed, const char *path, struct gt_err *err);

/* Parse one validated value of the named resource into canonical units.
 * Returns 0 or GT_EINVAL (unknown resource or malformed value). */
int gt_resource_amount(const char *name, const json_t *v, int64_t *out);

/* The schema tables (schemas.c): the root schema of each kind. */
const struct gt_schema *gt_kind_schema(enum gt_kind kind);

#endif
