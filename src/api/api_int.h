/*
 * api internals: the kinds' schema tables (schemas.c) and the resource
 * maps they hold; the engine that walks the tables is public (api.h).
 */
#ifndef GT_API_INT_H
#define GT_API_INT_H

#include <stddef.h>

#include "api/api.h"

/* Resource names a resource map may hold: GT_RESF_* (api.h). */
#define GT_RESF_POOL (GT_RESF_CPU | GT_RESF_MEMORY | GT_RESF_STORAGE | GT_RESF_GPU)
#define GT_RESF_ALL (GT_RESF_POOL | GT_RESF_GPU_MILLI)
/* A template's requests and limits: also ephemeral-storage. */
#define GT_RESF_TEMPLATE (GT_RESF_ALL | GT_RESF_EPHEMERAL)

/* Resource maps (resources.c): check names against allowed, parse every
 * quantity and write it back canonical. */
int gt_resources_canonicalize(json_t *map, unsigned allowed, const char *path, struct gt_err *err);

/* Parse one validated value of the named resource into canonical units.
 * Returns 0 or GT_EINVAL (unknown resource or malformed value). */
int gt_resource_amount(const char *name, const json_t *v, int64_t *out);

/* The schema tables (schemas.c): the root schema of each kind. */
const struct gt_schema *gt_kind_schema(enum gt_kind kind);

/* Rows shared with the kinds kept in their own files: metadata, the container
 * template's fields (without its image-or-command rule, which a kind
 * whose controller supplies the command does not apply), a conditions
 * list item, and each such kind's root schema. Constant tables, never
 * written. */
extern const struct gt_schema gt_api_metadata_schema;
extern const struct gt_field gt_api_template_fields[];
extern const struct gt_schema gt_api_template_resources_schema;
extern const struct gt_field gt_api_condition_item;
extern const struct gt_schema gt_api_notebook_schema;     /* schema_notebook.c */
extern const struct gt_schema gt_api_model_schema;        /* schema_model.c */
extern const struct gt_schema gt_api_modelversion_schema; /* schema_model.c */
extern const struct gt_schema gt_api_job_outputs_schema;  /* schema_model.c: spec.outputs */
extern const struct gt_schema gt_api_isvc_schema;         /* schema_isvc.c */

/* ---- how the schema tables are written (schemas.c and the kinds' own
 * files): one macro per row type, AT/HAS/IDX for the decoding columns ---- */

#define STR(n, ...)                                                                                \
    {                                                                                              \
        .name = n, .type = GT_F_STRING, __VA_ARGS__                                                \
    }
#define INT(n, lo, hi, ...)                                                                        \
    {                                                                                              \
        .name = n, .type = GT_F_INT, .min = lo, .max = hi, __VA_ARGS__                             \
    }
#define BOOL(n, ...)                                                                               \
    {                                                                                              \
        .name = n, .type = GT_F_BOOL, __VA_ARGS__                                                  \
    }
#define OBJ(n, s, ...)                                                                             \
    {                                                                                              \
        .name = n, .type = GT_F_OBJECT, .schema = &s, __VA_ARGS__                                  \
    }
#define LIST(n, e, ...)                                                                            \
    {                                                                                              \
        .name = n, .type = GT_F_ARRAY, .elem = &e, __VA_ARGS__                                     \
    }
#define RES(n, set, ...)                                                                           \
    {                                                                                              \
        .name = n, .type = GT_F_RESOURCES, .resources = set, __VA_ARGS__                           \
    }
#define ITEM(s)                                                                                    \
    {                                                                                              \
        .name = "item", .type = GT_F_OBJECT, .schema = &s                                          \
    }
#define END                                                                                        \
    {                                                                                              \
        .name = NULL                                                                               \
    }

#define REQ .flags = GT_F_REQUIRED
#define DNS .check = gt_check_dns_label
#define TIME .max_len = 64, .check = gt_check_time
#define SHORT .max_len = 256
#define MESSAGE .max_len = 32768
#define UID_MAX 4294967294LL /* (uid_t)-1 is "no uid" */

/* Decoding columns: the row is stored at member m of T (struct gt_api_*,
 * api.h); HAS sets a bool member when the object is present; IDX stores an
 * enum string as its index. */
#define AT(T, m) .out = true, .off = offsetof(struct gt_api_##T, m)
#define HAS(T, m) .has_out = true, .has = offsetof(struct gt_api_##T, m)
#define IDX .index = true

/* The first rows of every kind's root schema. */
#define ROOT_FIELDS                                                                                \
    STR("apiVersion", REQ), STR("kind", REQ),                                                      \
        OBJ("metadata", gt_api_metadata_schema, REQ, AT(object, meta))

/* kubeflow_mpi.c: an MPIJob's own spec fields (spec, the manifest's,
 * borrowed) into job, the converted gantry Job being built (borrowed,
 * changed): the MPI annotations, cleanPodPolicy, a worker's default
 * command; the training operator's kubeflow.org/v1 MPIJob and the MPI
 * operator's kubeflow.org/v2beta1 one. GT_EINVAL naming the field. */
int gt_api_kubeflow_mpi_v1(const json_t *spec, json_t *job, struct gt_err *err);
int gt_api_kubeflow_mpi_v2beta1(const json_t *spec, json_t *job, struct gt_err *err);

#endif
