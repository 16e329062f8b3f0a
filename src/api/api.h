/*
 * api: gantry's object model. Objects are Kubernetes-shaped JSON documents
 * (apiVersion, kind, metadata, spec, status) held as jansson values; this
 * module knows every kind's schema and validates strictly: unknown fields,
 * wrong types, bad names, labels, enums and quantities are rejected with
 * the field path and the reason ("spec.replicaSpecs.Worker.replicas: must
 * be >= 1"). Validation also canonicalizes: resource quantities are parsed
 * into canonical integers (milli-CPU, bytes, whole GPUs, gpu-milli) and
 * written back in canonical form, and defaults are filled in.
 *
 * Kinds and fields follow DESIGN.md "Resource model". apiVersion is
 * "gantry.dev/v1".
 */
#ifndef GT_API_H
#define GT_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/common.h"

#define GT_API_VERSION "gantry.dev/v1"
#define GT_API_GROUP_PREFIX "/apis/gantry.dev/v1"

enum gt_kind {
    GT_KIND_DEPARTMENT,
    GT_KIND_PROJECT,
    GT_KIND_PRIORITYCLASS,
    GT_KIND_NODE,
    GT_KIND_JOB,
    GT_KIND_TASK,
    GT_KIND_EVENT,
    GT_KIND_COUNT
};

/* Static facts about a kind. */
struct gt_kind_info {
    enum gt_kind kind;
    const char *name;   /* "Job" */
    const char *plural; /* "jobs": the URL path segment and store key prefix */
    bool namespaced;    /* lives in a project (true) or cluster-scoped */
};

/* Lookups; each returns a pointer to static data, or NULL if unknown.
 * by_name also accepts the lower-case singular and plural ("job", "jobs")
 * so the CLI can take what kubectl users type. */
const struct gt_kind_info *gt_kind_get(enum gt_kind kind);
const struct gt_kind_info *gt_kind_by_plural(const char *plural);
const struct gt_kind_info *gt_kind_by_name(const char *name);

/* Parse untrusted JSON text (at most len bytes, need not be NUL-terminated)
 * into *out (caller json_decref()s). Only a JSON object is accepted;
 * duplicate keys are rejected. Returns 0, or GT_EBADREQ with err saying
 * where the text is malformed. Does not validate the schema. */
int gt_api_parse(const char *text, size_t len, json_t **out, struct gt_err *err);

/* Validate obj, an object of the given kind, in place: apiVersion and kind
 * must match, every field must be known and well-typed, names DNS-1123
 * labels (<= 63 chars), labels valid, enums known, quantities valid; fills
 * defaults and canonicalizes quantities. Server-managed metadata fields
 * (uid, creationTimestamp, creator, resourceVersion, deletionTimestamp)
 * are type-checked only. Returns 0 or GT_EINVAL with err "path: reason".
 * On error obj may be partly canonicalized; callers discard it. */
int gt_api_validate(enum gt_kind kind, json_t *obj, struct gt_err *err);

/* Validate just a status object for kind (for the /status subresource). */
int gt_api_validate_status(enum gt_kind kind, json_t *status, struct gt_err *err);

/* Check a name is a DNS-1123 label (lower-case alphanumerics and '-', starts
 * and ends alphanumeric, 1..63 chars). 0 or GT_EINVAL with the reason. */
int gt_api_check_name(const char *name, struct gt_err *err);

/* Resource amounts in canonical units. */
struct gt_resources {
    int64_t cpu_milli;
    int64_t memory_bytes;
    int64_t storage_bytes;
    int64_t gpu;       /* whole GPUs (nvidia.com/gpu) */
    int64_t gpu_milli; /* share of one GPU (gantry.dev/gpu-milli), 0..1000 */
};

/* Read a validated, canonical resource map ({"cpu":"500m",...}) into r
 * (absent resources are 0). Returns 0 or GT_EINVAL for a value that is not
 * canonical (callers pass validated objects). */
int gt_api_resources(const json_t *map, struct gt_resources *r, struct gt_err *err);

/* Object accessors over validated objects; all return borrowed strings
 * (valid while obj lives) or NULL when absent. */
const char *gt_obj_name(const json_t *obj);
const char *gt_obj_project(const json_t *obj);
const char *gt_obj_kind(const json_t *obj);

/* ---- selectors ---- */

/* A parsed label selector: "a=b,c!=d,e in (x,y),f notin (z),g,!h" as
 * Kubernetes' labels.Parse accepts (also "=="). */
struct gt_selector;
/* Parse s into *out (caller frees with gt_selector_free). An empty string
 * matches everything. 0 or GT_EBADREQ with err naming the position. */
int gt_selector_parse(const char *s, struct gt_selector **out, struct gt_err *err);
/* Does labels (a JSON object of string values, or NULL) match? */
bool gt_selector_match(const struct gt_selector *sel, const json_t *labels);
void gt_selector_free(struct gt_selector *sel);

/* A parsed field selector: "spec.nodeName=n1,status.phase!=Failed", each
 * term a dotted path compared as a string against the object's value
 * (absent fields compare as ""). */
struct gt_fieldsel;
int gt_fieldsel_parse(const char *s, struct gt_fieldsel **out, struct gt_err *err);
bool gt_fieldsel_match(const struct gt_fieldsel *sel, const json_t *obj);
void gt_fieldsel_free(struct gt_fieldsel *sel);

/* ---- Kubeflow manifests (kubeflow.c) ---- */

/* runPolicy.backoffLimit meaning "no limit on restarts": a Kubeflow job
 * without backoffLimit converts to it (gantry's own default is 6). */
#define GT_API_BACKOFF_UNLIMITED INT32_MAX

/* Is doc in the kubeflow.org API group (any version or kind)? Such documents
 * go through gt_api_kubeflow_convert, which names what it cannot take. */
bool gt_api_kubeflow_is(const json_t *doc);

/* Convert a kubeflow.org/v1 TFJob or PyTorchJob (in, borrowed, unchanged)
 * into a validated, canonical gantry Job (*job_out, new; caller
 * json_decref()s). metadata.namespace (required) becomes metadata.project; the
 * framework container ("tensorflow"/"pytorch", else the only one) becomes
 * each replica's template; pod hostPath volumes become spec.volumes; the
 * job is annotated gantry.dev/framework: pytorch | tensorflow; an unset
 * runPolicy.backoffLimit becomes GT_API_BACKOFF_UNLIMITED. Any field
 * gantry cannot honour is refused, never dropped. Returns 0, or GT_EINVAL
 * (*job_out NULL) with err "field.path: reason" naming the manifest's field,
 * or, for a value refused when the result is validated, "converted Job: "
 * and the gantry Job's field. */
int gt_api_kubeflow_convert(const json_t *in, json_t **job_out, struct gt_err *err);

#endif
