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
#include "common/resource.h"

#define GT_API_VERSION "gantry.dev/v1"
/* gantry's release, the same in gantryd and the CLI (`gantry version`). */
#define GT_VERSION "0.1.0"
#define GT_API_GROUP_PREFIX "/apis/gantry.dev/v1"

enum gt_kind {
    GT_KIND_DEPARTMENT,
    GT_KIND_PROJECT,
    GT_KIND_PRIORITYCLASS,
    GT_KIND_NODE,
    GT_KIND_JOB,
    GT_KIND_TASK,
    GT_KIND_EVENT,
    GT_KIND_NOTEBOOK,
    GT_KIND_VOLUME,
    GT_KIND_IMAGEBUILD,
    GT_KIND_MODEL,
    GT_KIND_MODELVERSION,
    GT_KIND_INFERENCESERVICE,
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

/* Resource names a resource map may hold, as bits (struct gt_api_res.set). */
#define GT_RESF_CPU 0x1u
#define GT_RESF_MEMORY 0x2u
#define GT_RESF_STORAGE 0x4u
#define GT_RESF_GPU 0x8u
#define GT_RESF_GPU_MILLI 0x10u
/* ephemeral-storage: a task's scratch on its node's disk (a template's
 * requests and limits only). Not pooled: no quota counts it and the
 * scheduler does not place it against node disk; it bounds the task's disk
 * emptyDirs (docs/api.md "emptyDir"). */
#define GT_RESF_EPHEMERAL 0x20u

/* Resource amounts in canonical units. */
struct gt_resources {
    int64_t cpu_milli;
    int64_t memory_bytes;
    int64_t storage_bytes;
    int64_t gpu;             /* whole GPUs (nvidia.com/gpu) */
    int64_t gpu_milli;       /* share of one GPU (gantry.dev/gpu-milli), 0..1000 */
    int64_t ephemeral_bytes; /* ephemeral-storage */
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

/* ---- the stored form (codec.c) ---- */

/* Append v (any JSON value, borrowed) as compact JSON (keys in insertion
 * order) to out. */
void gt_api_encode_json(struct gt_buf *out, const json_t *v);
/* Encode obj (borrowed) as stored text: compact JSON with "metadata" first,
 * so reads can splice resourceVersion in without parsing; *len its length.
 * Caller frees. */
char *gt_api_encode(const json_t *obj, size_t *len);
/* Append stored text (len bytes, as gt_api_encode writes it) to out with
 * "resourceVersion":"<rev>" as the first member of its metadata. false,
 * and nothing appended, for text not in that form. */
bool gt_api_render_splice(struct gt_buf *out, const char *text, size_t len, int64_t rev);
/* Parse stored text into an object with metadata.resourceVersion "<rev>"
 * (new reference; caller json_decref()s), or NULL if text is not a JSON
 * object. */
json_t *gt_api_render_json(const char *text, size_t len, int64_t rev);

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

/* ---- the schema engine (schema.c, check.c, path.c; decode.c decodes) ----
 *
 * Declarative tables of field rows walked over jansson documents (nginx's
 * command tables, applied to JSON). api's kinds are described by such
 * tables (schemas.c); other strict formats (gantry-shim's spec.json) use
 * the same engine instead of checks written by hand.
 *
 * A schema is a NULL-name-terminated array of field rows plus an optional
 * cross-field check. The engine checks types, bounds, enums, required
 * fields and unknown fields, fills defaults, canonicalizes resource maps,
 * and names the failing path in every error: "spec.quota.cpu: ...". Value
 * checkers report a reason without a path; the engine puts the path in
 * front. Cross-field checks get the object's path and report the full
 * path themselves. A second walk (gt_schema_decode) fills a C struct from
 * the rows that name their member.
 */

struct gt_api_mem; /* a decoded object's list memory (decode.c) */

/* Longest field path kept in messages (longer ones are truncated). */
#define GT_API_PATH_MAX 256
/* Default bound on a string's bytes, an array's items and a map's entries. */
#define GT_API_STRING_MAX 4096
#define GT_API_ITEMS_MAX 1024

enum gt_ftype {
    GT_F_STRING,
    GT_F_INT,
    GT_F_BOOL,
    GT_F_OBJECT,    /* .schema */
    GT_F_ARRAY,     /* items described by .elem */
    GT_F_MAP,       /* string keys checked by .key_check, values by .elem */
    GT_F_RESOURCES, /* resource quantities, names from .resources, canonicalized */
    GT_F_ANY,       /* only .check applies */
    GT_F_FORBIDDEN, /* a known field that must never be sent; .why says why */
};

/* Row flags. */
#define GT_F_REQUIRED 0x1u
#define GT_F_DEFAULT 0x2u /* absent: set to .def_int (INT, BOOL) or .def_str */
#define GT_F_CREATE 0x4u  /* absent object: created empty so its defaults apply */

/* Check one value (type already checked); on failure set err to the reason
 * alone and return GT_EINVAL. */
typedef int gt_check_fn(const json_t *v, struct gt_err *err);
/* Check an object's fields against each other after its fields passed;
 * path is the object's own path ("" at the root); sets "path.field: why". */
typedef int gt_post_fn(json_t *obj, const char *path, struct gt_err *err);

struct gt_schema;

struct gt_field {
    const char *name;
    enum gt_ftype type;
    unsigned flags;
    int64_t min, max;               /* INT: bounds (both always given) */
    size_t max_len;                 /* STRING bytes, ARRAY items, MAP entries; 0: default */
    const char *const *enums;       /* STRING: allowed values, NULL-terminated */
    gt_check_fn *check;             /* extra check of the whole value */
    const struct gt_schema *schema; /* OBJECT */
    const struct gt_field *elem;    /* ARRAY items, MAP values */
    gt_check_fn *key_check;         /* MAP keys, given as a JSON string */
    unsigned resources;             /* RESOURCES: GT_RES_* allowed */
    int64_t def_int;
    const char *def_str;
    const char *why; /* FORBIDDEN */
    /* Decoding into the typed struct (decode.c): a row with .out is stored
     * at .off in the struct its schema decodes into, as api.h says per type
     * (STRING: const char *, or with .index the int index in .enums; INT:
     * int64_t; BOOL: bool; OBJECT: the nested struct, with .has_out a bool
     * at .has set when present; ARRAY and MAP of objects: a GT_API_LIST of
     * the item struct, whose first member is the entry's key for a MAP;
     * ARRAY of scalars: a GT_API_LIST of them; other MAPs and ANY: a
     * borrowed const json_t *; RESOURCES: struct gt_api_res). */
    bool out;
    bool index;
    bool has_out;
    size_t off;
    size_t has;
};

struct gt_schema {
    const struct gt_field *fields; /* ends with a row whose name is NULL */
    gt_post_fn *post;
    size_t size; /* the struct its rows decode into (0: not decoded) */
};

/* Validate obj against schema s in place; path is obj's own path ("" at the
 * root). Returns 0 or GT_EINVAL with err "path: reason". */
int gt_schema_validate(const struct gt_schema *s, json_t *obj, const char *path,
                       struct gt_err *err);
/* Validate one value v against row f (v present, not null). */
int gt_field_validate(const struct gt_field *f, json_t *v, const char *path, struct gt_err *err);
/* Join parent path and a child name into buf ("a" + "b" -> "a.b", "" + "b" -> "b"); path.c. */
const char *gt_path_join(char *buf, size_t len, const char *parent, const char *name);

/* Decode obj (validated, borrowed; NULL: absent) into out, a zeroed
 * struct of s->size bytes, by the .out rows of s; lists are allocated from
 * mem. Never fails: values of the wrong type read as absent. */
void gt_schema_decode(const struct gt_schema *s, const json_t *obj, void *out,
                      struct gt_api_mem *mem);

/* Value checkers (check.c); each as gt_check_fn. */
gt_check_fn gt_check_dns_label;
gt_check_fn gt_check_label_key;
gt_check_fn gt_check_label_value;
gt_check_fn gt_check_annotations;
gt_check_fn gt_check_digits;
gt_check_fn gt_check_time;
gt_check_fn gt_check_abs_path;
gt_check_fn gt_check_host_path;
gt_check_fn gt_check_rel_path;
gt_check_fn gt_check_image_name;
/* spec.tensorboard.logDir: a path, relative (to the task's working
 * directory) or absolute (beneath a volume mount), without ".." */
gt_check_fn gt_check_log_dir;
gt_check_fn gt_check_git_url;
gt_check_fn gt_check_git_revision;
gt_check_fn gt_check_image;
gt_check_fn gt_check_env_name;
gt_check_fn gt_check_camel_word;
gt_check_fn gt_check_requirements;

/* ---- explain (explain.c) ---- */

/* kubectl explain of kind's field at path (dotted, as "spec.replicaSpecs";
 * a map's or list's entries are stepped over, so "spec.replicaSpecs.
 * template"; NULL or "": the kind itself) appended to out: KIND and
 * VERSION, FIELD with its type (<string>, <integer>, <boolean>, <Object>,
 * <[]Object>, <map[string]string>, ...) and -required-, DESCRIPTION (with
 * allowed values, bounds and default) and FIELDS, each child's name, type
 * and description, in the schema's order. 0, or GT_ENOTFOUND with err
 * naming the first field that does not exist and where it was looked for. */
int gt_api_explain(enum gt_kind kind, const char *path, struct gt_buf *out, struct gt_err *err);
/* Whether every row of explain's description table names a field of its
 * kind's schema: 0, or GT_ENOTFOUND with err naming the row (for tests). */
int gt_api_explain_check(struct gt_err *err);

/* ---- Kubeflow manifests (kubeflow.c) ---- */

/* runPolicy.backoffLimit meaning "no limit on restarts": a Kubeflow job
 * without backoffLimit converts to it (gantry's own default is 6). */
#define GT_API_BACKOFF_UNLIMITED INT32_MAX

/* Is doc in the kubeflow.org API group (any version or kind)? Such documents
 * go through gt_api_kubeflow_convert, which names what it cannot take. */
bool gt_api_kubeflow_is(const json_t *doc);

/* MPIJobs (kubeflow_mpi.c): the framework annotation's value, the
 * annotations that carry the manifest's slotsPerWorker ("1", "2", ...) and
 * mpiImplementation (OpenMPI | Intel | MPICH) to the job controller, the
 * directory the launcher finds its hostfile (and discover_hosts.sh) in, as
 * the MPI operator mounts it, and the environment entry that carries the
 * hostfile's text from gantryd to the launcher's agent, which writes it
 * there. GT_MPI_RSH_AGENT is the value of the launcher's rsh-agent
 * variables (OMPI_MCA_plm_rsh_agent, I_MPI_HYDRA_BOOTSTRAP_EXEC,
 * HYDRA_LAUNCHER_EXEC) as gantryd writes it, the name of a link to the
 * gantry CLI that runs `gantry mpi-rsh` (one path without arguments, as
 * hydra's bootstrap exec must be); the agent replaces it with that link's
 * path next to gantlet. */
#define GT_API_FRAMEWORK_MPI "mpi"
#define GT_API_ANNOTATION_MPI_SLOTS "gantry.dev/mpi-slots-per-worker"
#define GT_API_ANNOTATION_MPI_IMPL "gantry.dev/mpi-implementation"
#define GT_MPI_DIR "/etc/mpi"
#define GT_MPI_HOSTFILE_ENV "GANTRY_MPI_HOSTFILE"
#define GT_MPI_RSH_AGENT "gantry-mpi-rsh"
/* An MPI launcher's exec credential: this prefix and the hex HMAC-SHA256,
 * under its node's token, of "<project>/<job>"; it lets the bearer exec
 * into that job's tasks only. */
#define GT_MPI_TOKEN_PREFIX "gtmpi:"

/* Convert a kubeflow.org/v1 TFJob, PyTorchJob, XGBoostJob, PaddleJob,
 * JAXJob or MPIJob (or a kubeflow.org/v2beta1 MPIJob) (in, borrowed, unchanged)
 * into a validated, canonical gantry Job (*job_out, new; caller
 * json_decref()s). metadata.namespace (required) becomes metadata.project; the
 * framework container ("tensorflow", "pytorch", "xgboost", "paddle",
 * "jax", else the only one) becomes
 * each replica's template; pod hostPath volumes become spec.volumes; the
 * job is annotated gantry.dev/framework: pytorch | tensorflow; an unset
 * runPolicy.backoffLimit becomes GT_API_BACKOFF_UNLIMITED. Any field
 * gantry cannot honour is refused, never dropped. Returns 0, or GT_EINVAL
 * (*job_out NULL) with err "field.path: reason" naming the manifest's field,
 * or, for a value refused when the result is validated, "converted Job: "
 * and the gantry Job's field. */
int gt_api_kubeflow_convert(const json_t *in, json_t **job_out, struct gt_err *err);

/* ---- typed objects (decode.c; fields in schemas.c) ----
 *
 * Each kind decodes once, at the edge, into a typed struct whose layout the
 * kind's schema rows name (offsetof in the same tables that validate), so
 * controllers read fields instead of path strings. Ownership: a decoded
 * object holds a reference to the JSON it came from (o.json) and every
 * string in it is borrowed from that JSON, so the JSON must not be changed
 * while the typed object lives; lists live in the object's own memory.
 * gt_api_object_free (or the typed _free) drops both.
 *
 * Absent fields read as: strings NULL; integers their schema default, else
 * GT_API_UNSET; booleans their default, else false; enum indexes (fields
 * stored as an enum, e.g. a task's phase) their default, else 0 (the first
 * value, which every such table makes its "nothing yet"); lists empty;
 * nested objects zero, with their `has_*` flag false where one exists.
 * Decoding never fails: a value of the wrong type (an object that was not
 * validated) reads as absent.
 */

/* An integer field that is absent and has no default. */
#define GT_API_UNSET INT64_MIN

/* A resource map ({"cpu":"500m","nvidia.com/gpu":2}) as a vector: GPUs in
 * milli-GPU (nvidia.com/gpu x 1000, saturating, plus gantry.dev/gpu-milli);
 * set: the GT_RESF_* bits of the names present. A GPU amount is a share of
 * one device (fractional) exactly when set has GT_RESF_GPU_MILLI.
 * ephemeral_bytes: ephemeral-storage in bytes, beside v as no pool holds
 * it (GT_RESF_EPHEMERAL). */
struct gt_api_res {
    struct gt_resvec v;
    unsigned set;
    int64_t ephemeral_bytes;
};

/* Read a validated, canonical resource map (borrowed; NULL or not an
 * object: all zero) into *out. Unknown names are skipped. */
void gt_api_res_decode(const json_t *map, struct gt_api_res *out);

/* A list decoded from a JSON array (or a map's entries): n items at v. */
#define GT_API_LIST_OF(T)                                                                          \
    {                                                                                              \
        T *v;                                                                                      \
        size_t n;                                                                                  \
    }
#define GT_API_LIST(T) struct GT_API_LIST_OF(T)

struct gt_api_creator {
    const char *user;
    int64_t uid;
};

struct gt_api_meta {
    const char *name;
    const char *project;
    const json_t *labels;      /* borrowed map, or NULL */
    const json_t *annotations; /* borrowed map, or NULL */
    const char *resource_version;
    const char *uid;
    const char *creation_timestamp;
    const char *deletion_timestamp;
    struct gt_api_creator creator;
};

/* The header of every decoded object: first member of each kind's struct,
 * so a struct gt_api_object * converts to and from it. */
struct gt_api_object {
    enum gt_kind kind;
    json_t *json;           /* the decoded JSON: a reference is held */
    struct gt_api_mem *mem; /* the lists' memory (decode.c) */
    struct gt_api_meta meta;
};

/* One entry of status.conditions (every kind has the same shape). */
struct gt_api_condition {
    const char *type;
    const char *status; /* "True", "False", "Unknown" */
    const char *reason;
    const char *message;
    const char *last_transition_time;
    const char *last_heartbeat_time;
};
struct gt_api_conditions GT_API_LIST_OF(struct gt_api_condition);

/* The condition of type in conds (borrowed), or NULL. */
const struct gt_api_condition *gt_api_condition_find(const struct gt_api_conditions *conds,
                                                     const char *type);
/* Has conds a condition of type with status "True"? */
bool gt_api_condition_true(const struct gt_api_conditions *conds, const char *type);
/* The status.conditions array of a JSON object (borrowed; NULL when none):
 * the one place that spells the path. */
json_t *gt_api_conditions_json(const json_t *obj);

/* ---- the container template (Job replicas and Tasks) ---- */

/* valueFrom of an env entry: gantrySecret names a value gantryd derives
 * on demand and never stores (GT_API_SECRET_*); the node's agent fetches
 * it when the task starts (GET .../tasks/T/secrets). NULL: none (fieldRef,
 * resolved by gantryd at binding, is not decoded). */
struct gt_api_env_source {
    const char *gantry_secret;
};
struct gt_api_env {
    const char *name;
    const char *value;
    struct gt_api_env_source value_from;
};
/* The gantrySecret names: a notebook's Jupyter token, an ImageBuild's
 * registry push credential ("user:credential", buildah --creds). */
#define GT_API_SECRET_NOTEBOOK_TOKEN "notebook-token"
#define GT_API_SECRET_REGISTRY_CREDENTIAL "registry-credential"
/* Refuse what only gantryd's controllers may write: any env valueFrom
 * with gantrySecret anywhere in obj (a user's object of any kind,
 * borrowed). 0, or GT_EINVAL with err naming the field (secretref.c). */
int gt_api_check_no_secret_refs(const json_t *obj, struct gt_err *err);
struct gt_api_container_port {
    const char *name;
    int64_t container_port;
};
struct gt_api_mount {
    const char *name;
    const char *mount_path;
    bool read_only;
};
struct gt_api_template_resources {
    struct gt_api_res requests;
    struct gt_api_res limits;
};
/* template.tolerations[] (Kubernetes' Toleration): key NULL or "" with
 * op "Exists" tolerates every taint; effect NULL: every effect; seconds:
 * tolerationSeconds of a NoExecute one (GT_API_UNSET: for ever). */
struct gt_api_toleration {
    const char *key;
    const char *op; /* "Equal" (default) or "Exists" */
    const char *value;
    const char *effect;
    int64_t seconds;
};
/* terminationMessagePolicy, by index */
enum { GT_API_TERMINATION_NONE, GT_API_TERMINATION_FILE };

struct gt_api_template {
    const char *image;
    GT_API_LIST(const char *) command;
    GT_API_LIST(const char *) args;
    GT_API_LIST(struct gt_api_env) env;
    const char *working_dir;
    struct gt_api_template_resources resources;
    GT_API_LIST(struct gt_api_container_port) ports;
    GT_API_LIST(struct gt_api_mount) volume_mounts;
    /* nodeSelector: labels a node must carry (borrowed map of strings, or
     * NULL); tolerations: the node taints the task tolerates */
    const json_t *node_selector;
    GT_API_LIST(struct gt_api_toleration) tolerations;
    int64_t run_as_user;    /* GT_API_UNSET: the creator's uid */
    int64_t grace_period_s; /* terminationGracePeriodSeconds; GT_API_UNSET: 30 */
    /* hostUsers (as in a Kubernetes pod spec): false runs the task as uid 0
     * of a user namespace that maps only its own uid and gid (rootless
     * tools such as buildah); absent or true: the host's ids */
    bool host_users;
    bool has_host_users;
    /* terminationMessagePolicy "File": the task may write a message of at
     * most 1 KiB to the file $GANTRY_TERMINATION_LOG names, which becomes
     * its status.message when it ends */
    int termination_policy; /* GT_API_TERMINATION_* */
};

/* What a container gets of each resource, after defaulting: the request
 * (what the scheduler and quotas count) and the limit (what the agent's
 * cgroup enforces). A resource asked for on one side only (0 or absent on
 * the other) is that amount on both: a request defaults to its limit, as
 * in Kubernetes, and a limit to its request, so a task never runs without
 * a cgroup bound on what it asked for. gpu_share: the GPU amount is a
 * share of one device (gantry.dev/gpu-milli), not whole devices.
 * ephemeral_bytes: the ephemeral-storage limit in bytes (else its request;
 * 0: none), which bounds the task's disk emptyDirs. The one place that
 * defaults requests and limits. */
struct gt_api_effective {
    struct gt_resvec request;
    struct gt_resvec limit;
    bool gpu_share;
    int64_t ephemeral_bytes;
};
void gt_api_resources_effective(const struct gt_api_template_resources *r,
                                struct gt_api_effective *out);

/* A spec.volumes entry's emptyDir (Kubernetes' EmptyDirVolumeSource): a
 * scratch directory of the task's own on its node, made empty when the task
 * starts and removed with it. medium: GT_API_MEDIUM_DISK (in the task's
 * data directory) or GT_API_MEDIUM_MEMORY (a tmpfs whose pages count in
 * the task's memory cgroup). size_limit: the sizeLimit quantity as given
 * (borrowed; NULL: none); gt_api_empty_dir_bytes reads it. */
enum { GT_API_MEDIUM_DISK, GT_API_MEDIUM_MEMORY };
struct gt_api_empty_dir {
    int medium; /* GT_API_MEDIUM_* */
    const json_t *size_limit;
};
/* sizeLimit of a validated emptyDir in bytes; 0 when it has none. */
int64_t gt_api_empty_dir_bytes(const struct gt_api_empty_dir *d);

/* One entry of a Job's or Task's spec.volumes: exactly one of host_path
 * (a directory beneath a storage root), volume (a Volume of the project,
 * by name) and empty_dir (scratch space, has_empty_dir). image: on a bound
 * Task's volume entry only, the Volume's disk image (its status.path),
 * written at bind by gantryd. */
struct gt_api_volume {
    const char *name;
    const char *host_path;
    const char *volume;
    const char *image;
    bool read_only;
    struct gt_api_empty_dir empty_dir;
    bool has_empty_dir;
};
struct gt_api_volumes GT_API_LIST_OF(struct gt_api_volume);

struct gt_api_source {
    const char *git;
    const char *revision;
};

/* spec.tensorboard of a Job (copied into its Tasks): where the task writes
 * TensorBoard event files, which the agent reads and reports as scalars;
 * server asks for a TensorBoard process beside the job (only where one is
 * installed on the node). */
struct gt_api_tensorboard {
    const char *log_dir;
    bool server;
};

/* ---- Job ---- */

struct gt_api_replica_spec {
    const char *type; /* the replicaSpecs key: Master, Chief, PS, Worker, Evaluator */
    int64_t replicas;
    const char *restart_policy; /* Never, OnFailure, Always, ExitCode */
    struct gt_api_template template;
};

/* spec.runPolicy.schedulingPolicy.topology: at most one of the two is set,
 * to "node", "gpu-group" or "numa" (sched.h enum gt_sched_topology). */
struct gt_api_topology {
    const char *required;
    const char *preferred;
};

struct gt_api_sched_policy {
    int64_t min_available; /* GT_API_UNSET: every replica */
    const char *queue;
    const char *priority_class;
    struct gt_api_topology topology;
};

struct gt_api_run_policy {
    int64_t backoff_limit;
    int64_t active_deadline_s;    /* activeDeadlineSeconds */
    int64_t ttl_after_finished_s; /* ttlSecondsAfterFinished */
    const char *clean_pod_policy; /* All, Running, None */
    struct gt_api_sched_policy scheduling_policy;
};

/* spec.outputs.model of a Job: the ModelVersion gantryd registers when
 * the job Succeeds (docs/api.md "Models"); paths as in struct
 * gt_api_model_source. */
struct gt_api_output_model {
    const char *name;         /* the Model, of the job's project */
    const char *path;         /* the artifact, as the task saw it */
    const char *task;         /* NULL: the job's Master/Chief, else its first replica */
    const char *format;       /* NULL: the Model's framework */
    const char *metrics_file; /* a JSON object the task wrote; its numbers become metrics */
};
struct gt_api_job_outputs {
    bool has_model;
    struct gt_api_output_model model;
};

struct gt_api_job_spec {
    GT_API_LIST(struct gt_api_replica_spec) replica_specs; /* in the document's order */
    struct gt_api_run_policy run_policy;
    bool has_source;
    struct gt_api_source source;
    const json_t *requirements; /* borrowed, or NULL */
    struct gt_api_volumes volumes;
    bool has_tensorboard;
    struct gt_api_tensorboard tensorboard;
    bool has_outputs;
    struct gt_api_job_outputs outputs;
};

struct gt_api_replica_status {
    const char *type;
    int64_t active, succeeded, failed;
};

struct gt_api_job_status {
    struct gt_api_conditions conditions;
    GT_API_LIST(struct gt_api_replica_status) replica_statuses;
    const char *start_time;
    const char *completion_time;
    int64_t restart_count;
    int64_t requeue_count;
    /* image pulls that failed and were backed off from (ImagePullBackOff);
     * they count among the requeues, not toward backoffLimit */
    int64_t image_pull_backoffs;
};

struct gt_api_job {
    struct gt_api_object o;
    struct gt_api_job_spec spec;
    struct gt_api_job_status status;
};

/* ---- Task ---- */

/* Task phases, in the order of the schema's enum (schemas.c). */
enum gt_task_phase {
    GT_TASK_PENDING, /* also: no phase yet */
    GT_TASK_BOUND,
    GT_TASK_RUNNING,
    GT_TASK_TERMINATING,
    GT_TASK_SUCCEEDED,
    GT_TASK_FAILED,
};
/* The phase's name as the schema spells it ("Pending", ...; static). */
const char *gt_api_task_phase_name(enum gt_task_phase p);
/* Has a task in phase p ended (Succeeded or Failed)? */
bool gt_api_task_phase_terminal(enum gt_task_phase p);

struct gt_api_task_gpu {
    int64_t index;
    const char *uuid;
    int64_t milli; /* GT_API_UNSET: the whole device */
};
struct gt_api_task_port {
    const char *name;
    int64_t port;
};
struct gt_api_task_host {
    const char *hostname;
    const char *ip;
};

struct gt_api_task_stop {
    const char *reason;
    int64_t grace_period_s;
};
struct gt_api_pip {
    const char *index_url;
    const char *find_links;
};

struct gt_api_task_spec {
    const char *job;
    const char *replica_type;
    int64_t replica_index;
    struct gt_api_template template;
    const char *node_name;
    GT_API_LIST(struct gt_api_task_gpu) gpus;
    GT_API_LIST(struct gt_api_task_port) ports;
    GT_API_LIST(struct gt_api_task_host) hosts;
    bool has_stop;
    struct gt_api_task_stop stop;
    int64_t priority;
    const char *department;
    bool privileged;
    bool stop_idle_gpu; /* the project's stopIdleGPUJobs: the agent stops it when idle */
    bool has_source;
    struct gt_api_source source;
    const json_t *requirements; /* borrowed, or NULL */
    struct gt_api_pip pip;
    struct gt_api_volumes volumes;
    bool has_tensorboard;
    struct gt_api_tensorboard tensorboard;
};

struct gt_api_task_previous {
    const char *uid;
    const char *node_name;
};

struct gt_api_task_status {
    int phase; /* enum gt_task_phase */
    int64_t exit_code;
    int64_t signal;
    const char *reason;
    const char *message;
    const char *bound_time;
    const char *start_time;
    const char *finish_time;
    int64_t host_pid;
    struct gt_api_task_previous previous;
};

struct gt_api_task {
    struct gt_api_object o;
    struct gt_api_task_spec spec;
    struct gt_api_task_status status;
};

/* ---- Node ---- */

/* The NoExecute taint `gantry drain` puts on a node: every task there is
 * stopped (reason Drained), tolerated or not. */
#define GT_API_DRAIN_TAINT "gantry.dev/drain"

/* A node taint (Kubernetes' Taint); time_added: when a NoExecute one was
 * put on (RFC 3339, `gantry taint` writes it; NULL: unknown), from which a
 * toleration's tolerationSeconds count. */
struct gt_api_taint {
    const char *key;
    const char *value;
    const char *effect;
    const char *time_added;
};
struct gt_api_node_gpu {
    int64_t index;
    const char *uuid;
    const char *model;
    int64_t memory_bytes;
    int64_t numa_node;
    const char *group;
    const char *health;
};
struct gt_api_address {
    const char *type; /* InternalIP, Hostname, AgentURL */
    const char *address;
};

struct gt_api_node_spec {
    bool unschedulable;
    GT_API_LIST(struct gt_api_taint) taints;
};
struct gt_api_node_status {
    struct gt_api_res capacity;
    struct gt_api_res allocatable;
    GT_API_LIST(struct gt_api_node_gpu) gpus;
    struct gt_api_conditions conditions;
    GT_API_LIST(struct gt_api_address) addresses;
    const char *last_heartbeat_time;
};

struct gt_api_node {
    struct gt_api_object o;
    struct gt_api_node_spec spec;
    struct gt_api_node_status status;
};

/* The node's first status.addresses entry of type (InternalIP, Hostname,
 * AgentURL): its address (borrowed), or NULL. */
const char *gt_api_node_address(const struct gt_api_node *node, const char *type);

/* ---- Department, Project, PriorityClass ---- */

struct gt_api_department_spec {
    struct gt_api_res quota;
    struct gt_api_res limit;
    GT_API_LIST(const char *) admins;
};
struct gt_api_department_status {
    struct gt_api_res used;
    struct gt_api_res borrowed;
};

struct gt_api_department {
    struct gt_api_object o;
    struct gt_api_department_spec spec;
    struct gt_api_department_status status;
};

struct gt_api_member {
    const char *user;
    const char *role; /* admin, member, viewer */
};

struct gt_api_project_spec {
    const char *department;
    GT_API_LIST(struct gt_api_member) members;
    bool has_hard;
    struct gt_api_res hard;
    bool allow_privileged;
    bool stop_idle_gpu_jobs; /* stop a job whose GPUs idle (the agent's IdleGPU) */
};

struct gt_api_project {
    struct gt_api_object o;
    struct gt_api_project_spec spec;
};

struct gt_api_priority_class {
    struct gt_api_object o;
    int64_t value;
    const char *preemption_policy; /* PreemptLowerPriority, Never */
    bool global_default;
    const char *description;
};

/* ---- Notebook (schema_notebook.c) ----
 *
 * An interactive task with a home volume: the notebook controller runs it
 * as a one-replica Job named GT_NOTEBOOK_JOB_PREFIX + name (so quota,
 * priority, the scheduler and the agent treat it as any other), gantryd
 * proxies /projects/P/notebooks/N/ to it, and the culler stops it when
 * idle. Names are at most GT_NOTEBOOK_NAME_MAX characters, so that the
 * task's name ("nb-N-worker-0") is a DNS label. */

#define GT_NOTEBOOK_NAME_MAX 51
#define GT_NOTEBOOK_JOB_PREFIX "nb-"

/* Notebook phases, in the order of the schema's enum. */
enum gt_notebook_phase {
    GT_NB_PENDING, /* also: no phase yet */
    GT_NB_STARTING,
    GT_NB_RUNNING,
    GT_NB_STOPPING,
    GT_NB_STOPPED,
    GT_NB_CULLED,
    GT_NB_FAILED,
};
/* The phase's name as the schema spells it ("Pending", ...; static). */
const char *gt_api_notebook_phase_name(enum gt_notebook_phase p);

/* spec.home: the volume kept across stops, in a Job volume's form
 * (hostPath beneath a storage root), mounted at mountPath (default: the
 * hostPath itself), which is also the notebook's HOME and directory. */
/* spec.home: a Volume of the notebook's project (volume) or a hostPath
 * beneath a storage root, one of them; mounted at mount_path. */
struct gt_api_notebook_home {
    const char *volume;
    const char *host_path;
    const char *mount_path;
};
/* The default spec.home.mountPath of a Volume home (Jupyter's images' home). */
#define GT_NOTEBOOK_VOLUME_HOME "/home/jovyan"
/* spec.idle: culling. enabled defaults to whether the notebook asks for
 * GPUs; timeout_s GT_API_UNSET: the project's annotation
 * gantry.dev/notebook-idle-timeout-seconds, else gantryd's
 * --notebook-idle-timeout. */
struct gt_api_notebook_idle {
    bool enabled;
    int64_t timeout_s;
};
struct gt_api_notebook_spec {
    struct gt_api_template template; /* command optional: Jupyter by default */
    bool has_home;
    struct gt_api_notebook_home home;
    struct gt_api_notebook_idle idle;
    const char *priority_class;
    bool stopped; /* Stop (true) and Start (false); the culler sets it */
};
struct gt_api_notebook_status {
    int phase; /* enum gt_notebook_phase */
    const char *url;
    const char *task;
    const char *last_activity_time;
    const char *last_activity; /* what it was: "http POST /api/contents", "kernel busy", ... */
    const char *idle_warning_time;
    struct gt_api_conditions conditions;
};
struct gt_api_notebook {
    struct gt_api_object o;
    struct gt_api_notebook_spec spec;
    struct gt_api_notebook_status status;
};
/* ---- Model and ModelVersion (schema_model.c) ----
 *
 * The model registry (docs/api.md "Models"): a Model names a line of
 * versions; a ModelVersion is one artifact copied into the
 * content-addressed, read-only model store by gantryd at create, its
 * name (<model>-v<N>) and number given by the server. Only spec.stage,
 * spec.metrics and labels change after that. */

/* Longest Model name: its versions are "<model>-v<N>", a DNS label. */
#define GT_MODEL_NAME_MAX 51

/* Model frameworks and ModelVersion formats, in the schema's enum order. */
enum gt_model_format {
    GT_MODEL_SKLEARN,
    GT_MODEL_PYTORCH,
};
/* ModelVersion stages (spec.stage), in the schema's enum order. */
enum gt_model_stage {
    GT_STAGE_NONE,
    GT_STAGE_STAGING,
    GT_STAGE_PRODUCTION,
    GT_STAGE_ARCHIVED,
};
/* ModelVersion phases (status.phase), in the schema's enum order. */
enum gt_model_phase {
    GT_MV_PENDING, /* also: no phase yet */
    GT_MV_READY,
    GT_MV_FAILED,
};

struct gt_api_model_spec {
    int framework; /* enum gt_model_format */
    const char *description;
};
struct gt_api_model {
    struct gt_api_object o;
    struct gt_api_model_spec spec;
};

/* spec.source: where the artifact is copied from; exactly one of job and
 * host_path. job: a Succeeded Job of the project, path the artifact as
 * its task saw it (absolute, or relative to the template's workingDir) on
 * a hostPath volume; host_path: a file or directory beneath a storage
 * root. */
struct gt_api_model_source {
    const char *job;
    const char *task; /* NULL: the job's first replica (Master/Chief, else Worker 0) */
    const char *path;
    const char *host_path;
};
struct gt_api_modelversion_spec {
    const char *model;
    const char *format; /* "sklearn" | "pytorch"; NULL: the Model's framework (filled at create) */
    struct gt_api_model_source source;
    const json_t *metrics; /* borrowed {name: number}, or NULL */
    int stage;             /* enum gt_model_stage */
};
struct gt_api_modelversion_status {
    int phase; /* enum gt_model_phase */
    int64_t version;
    const char *digest; /* "sha256:<64 hex>" */
    const char *path;   /* the artifact in the model store */
    int64_t size_bytes;
    const char *source_job, *source_task;
    const char *created_time;
    const char *message;
};
struct gt_api_modelversion {
    struct gt_api_object o;
    struct gt_api_modelversion_spec spec;
    struct gt_api_modelversion_status status;
};
/* The schema's names of a format, stage or phase (static; the first value
 * for an unknown one). */
const char *gt_api_model_format_name(enum gt_model_format f);
const char *gt_api_model_stage_name(enum gt_model_stage s);
const char *gt_api_model_phase_name(enum gt_model_phase p);
/* ---- InferenceService (schema_isvc.c, kserve.c) ----
 *
 * A model served behind the gateway: named variants (A/B/n), each a model
 * version run by gantry-model-server or a container template that serves
 * HTTP on its port "http" and answers the readiness path, with a traffic
 * weight and a replica count. The serving controller (isvcctl.c) runs each
 * replica as a one-replica Job named GT_ISVC_JOB_PREFIX + service + "-" +
 * variant + "-" + revision + "-" + index, so quota, priority, the
 * scheduler and the agent treat it as any other. Service names are at
 * most GT_ISVC_NAME_MAX characters and variant names GT_ISVC_VARIANT_MAX,
 * so that the task names stay DNS labels. */

#define GT_ISVC_NAME_MAX 24
#define GT_ISVC_VARIANT_MAX 12
#define GT_ISVC_JOB_PREFIX "is-"
#define GT_ISVC_VARIANTS_MAX 8
#define GT_ISVC_REPLICAS_MAX 32
/* spec.autoscaling's defaults: Knative's stable window (60 s) and the
 * time the load must stay low before a scale-down (seconds) */
#define GT_ISVC_SCALE_WINDOW_S 60
#define GT_ISVC_SCALE_DOWN_DELAY_S 60

/* variants[].model: a model version in a KServe modelFormat. */
struct gt_api_isvc_model {
    const char *format;      /* sklearn, pytorch, tensorflow, ... (modelFormat.name) */
    const char *storage_uri; /* models://P/NAME/VERSION, gantry://..., or a path */
};
/* One variant. weight: its share of the service's traffic, relative to the
 * others' (0: none); replicas: how many run, or the fewest when
 * max_replicas is above it: then the variant is autoscaled between the
 * two on scale_metric ("concurrency": requests in flight per replica, the
 * default; "rps": requests per second per replica) against scale_target
 * per replica (default 1), KServe's scaleMetric and scaleTarget. Exactly
 * one of model and template. */
struct gt_api_isvc_variant {
    const char *name;
    int64_t weight;
    int64_t replicas;
    int64_t max_replicas;     /* GT_API_UNSET: replicas (not autoscaled) */
    int64_t scale_target;     /* GT_API_UNSET: 1 */
    const char *scale_metric; /* NULL: concurrency */
    bool has_model;
    struct gt_api_isvc_model model;
    bool has_template;
    struct gt_api_template template;
    struct gt_api_template_resources resources; /* with model: the server's resources */
};
/* spec.rollout: how a variant's replicas are replaced when it changes. */
struct gt_api_isvc_rollout {
    int64_t max_surge;       /* replicas above spec.replicas while rolling; default 1 */
    int64_t max_unavailable; /* ready replicas below it; default 0 */
    /* a canary whose error rate goes over it is rolled back; default 5 */
    int64_t max_error_percent;
    /* a canary whose p99 latency (ms, over the gateway's window) goes over
     * it is rolled back; default 0: never */
    int64_t max_latency_p99_ms;
};
/* spec.autoscaling: how autoscaled variants follow their metric. The
 * metric is averaged over window_s (scale-up follows a tenth of it, as
 * Knative's panic window does); a scale-down happens only once the lower
 * count has been called for during scale_down_delay_s. */
struct gt_api_isvc_autoscaling {
    int64_t window_s;           /* default GT_ISVC_SCALE_WINDOW_S */
    int64_t scale_down_delay_s; /* default GT_ISVC_SCALE_DOWN_DELAY_S */
};
struct gt_api_isvc_spec {
    GT_API_LIST(struct gt_api_isvc_variant) variants;
    bool public_;               /* reachable through the gateway without a token */
    const char *readiness_path; /* default /v2/health/ready */
    int64_t canary_percent;     /* canaryTrafficPercent; GT_API_UNSET: none */
    struct gt_api_isvc_rollout rollout;
    struct gt_api_isvc_autoscaling autoscaling;
    const char *priority_class;
};
struct gt_api_isvc {
    struct gt_api_object o;
    struct gt_api_isvc_spec spec;
};

/* Is doc an InferenceService of KServe's serving.kserve.io group? */
bool gt_api_kserve_is(const json_t *doc);
/* Convert a serving.kserve.io/v1beta1 InferenceService (borrowed) into
 * gantry's form (*out new, caller json_decref()s): spec.predictor becomes
 * the one variant "predictor" (modelFormat or the framework key such as
 * "sklearn:" its format, storageUri, resources, minReplicas as replicas)
 * and canaryTrafficPercent spec.canaryTrafficPercent, whose canary the
 * controller splits against the last promoted revision as KServe does;
 * metadata.namespace becomes the project. A field gantry has no
 * counterpart for is refused with its path. 0 or GT_EINVAL with err. */
int gt_api_kserve_convert(const json_t *in, json_t **out, struct gt_err *err);

/* ---- Volume (volume.c in api: the access modes) ---- */

/* spec.accessMode values, in the schema's enum order. */
enum gt_volume_access {
    GT_VOLUME_RWO, /* ReadWriteOnce: one task at a time */
    GT_VOLUME_ROX, /* ReadOnlyMany: many tasks, every mount read-only */
    GT_VOLUME_RWX, /* ReadWriteMany: many tasks, read-write */
};
/* Volume phases, in the schema's enum order. */
enum gt_volume_phase {
    GT_VOLUME_PENDING, /* also: no phase yet */
    GT_VOLUME_AVAILABLE,
    GT_VOLUME_FAILED,
};

struct gt_api_volume_spec {
    struct gt_api_res capacity; /* capacity.storage: v.v[GT_RES_STORAGE] bytes */
    int access_mode;            /* enum gt_volume_access */
    const char *storage_class;  /* NULL: the cluster's default class */
    bool read_only;             /* a dataset: every mount read-only from now on */
};
struct gt_api_volume_status {
    int phase; /* enum gt_volume_phase */
    const char *message;
    const char *storage_class; /* the class it was made in */
    const char *path;          /* its disk image beneath the class's storage root */
};
struct gt_api_volume_obj {
    struct gt_api_object o;
    struct gt_api_volume_spec spec;
    struct gt_api_volume_status status;
};
/* The access mode's name as the schema spells it ("ReadWriteOnce", ...; static). */
const char *gt_api_volume_access_name(enum gt_volume_access a);
/* May several tasks use a volume of mode a (read_only: spec.readOnly) at
 * once? Only a ReadWriteOnce volume that is still writable is exclusive. */
bool gt_api_volume_shared(enum gt_volume_access a, bool read_only);
/* Is every mount of a volume of mode a (read_only: spec.readOnly) read-only? */
bool gt_api_volume_mounts_ro(enum gt_volume_access a, bool read_only);

/* ---- ImageBuild: a Dockerfile built by buildah in a Task, pushed to the
 * cluster registry as REGISTRY/PROJECT/spec.image ---- */

struct gt_api_imagebuild_spec {
    const char *dockerfile;      /* inline Dockerfile text, or NULL */
    const char *dockerfile_path; /* path in the source (relative); default "Dockerfile" */
    struct gt_api_source source; /* the build context's git source */
    bool has_source;
    const char *context; /* directory in the source (relative); default "." */
    GT_API_LIST(struct gt_api_env) build_args;
    const char *image; /* "NAME:TAG" inside the project's repositories */
    struct gt_api_template_resources resources;
};

enum gt_build_phase {
    GT_BUILD_PENDING,
    GT_BUILD_RUNNING,
    GT_BUILD_SUCCEEDED,
    GT_BUILD_FAILED,
};

struct gt_api_imagebuild_status {
    int phase; /* enum gt_build_phase */
    const char *reason;
    const char *message;
    const char *image;  /* the full reference pushed */
    const char *digest; /* "sha256:..." of the pushed manifest */
    const char *node_name;
    const char *start_time;
    const char *completion_time;
    int64_t build_duration_ms; /* buildah bud + push in the task */
};

struct gt_api_imagebuild {
    struct gt_api_object o;
    struct gt_api_imagebuild_spec spec;
    struct gt_api_imagebuild_status status;
};
/* The name of an ImageBuild phase ("Pending", ...). */
const char *gt_api_build_phase_name(enum gt_build_phase p);

/* Decode obj, a validated object of kind (a reference is taken; obj must
 * not change while the result lives), into a new typed object of that
 * kind's struct (struct gt_api_job for GT_KIND_JOB, ...). Returns NULL only
 * for a kind that has no typed form (Event). Caller frees with
 * gt_api_object_free. Out of memory aborts. */
struct gt_api_object *gt_api_object_new(enum gt_kind kind, json_t *obj);
void gt_api_object_free(struct gt_api_object *o);

/* Typed forms of the above (obj as there; _free(NULL) is fine). */
struct gt_api_job *gt_api_job_new(json_t *obj);
void gt_api_job_free(struct gt_api_job *job);
struct gt_api_task *gt_api_task_new(json_t *obj);
void gt_api_task_free(struct gt_api_task *task);
struct gt_api_node *gt_api_node_new(json_t *obj);
void gt_api_node_free(struct gt_api_node *node);
struct gt_api_department *gt_api_department_new(json_t *obj);
void gt_api_department_free(struct gt_api_department *dept);
struct gt_api_project *gt_api_project_new(json_t *obj);
void gt_api_project_free(struct gt_api_project *project);
struct gt_api_priority_class *gt_api_priority_class_new(json_t *obj);
void gt_api_priority_class_free(struct gt_api_priority_class *pc);
struct gt_api_notebook *gt_api_notebook_new(json_t *obj);
void gt_api_notebook_free(struct gt_api_notebook *nb);
struct gt_api_volume_obj *gt_api_volume_obj_new(json_t *obj);
void gt_api_volume_obj_free(struct gt_api_volume_obj *vol);
struct gt_api_model *gt_api_model_new(json_t *obj);
void gt_api_model_free(struct gt_api_model *m);
struct gt_api_modelversion *gt_api_modelversion_new(json_t *obj);
void gt_api_modelversion_free(struct gt_api_modelversion *mv);
struct gt_api_isvc *gt_api_isvc_new(json_t *obj);
void gt_api_isvc_free(struct gt_api_isvc *isvc);

/* Validate and decode in one step at the API edge: gt_api_validate, then
 * gt_api_object_new. obj as there; on error (GT_EINVAL with err as
 * gt_api_validate sets it) *out is NULL and no reference is taken. */
int gt_api_decode(enum gt_kind kind, json_t *obj, struct gt_api_object **out, struct gt_err *err);

#endif
