/*
 * The schema engine: declarative tables of field rows walked over jansson
 * documents (nginx's command tables, applied to JSON). api's kinds are
 * described by such tables (schemas.c); other strict formats (gantry-shim's
 * spec.json) use the same engine instead of checks written by hand.
 *
 * A schema is a NULL-name-terminated array of field rows plus an optional
 * cross-field check. The engine (schema.c) checks types, bounds, enums,
 * required fields and unknown fields, fills defaults, canonicalizes resource
 * maps, and names the failing path in every error: "spec.quota.cpu: ...".
 * Value checkers (check.c) report a reason without a path; the engine puts
 * the path in front. Cross-field checks get the object's path and report
 * the full path themselves. A second walk (gt_schema_decode, decode.c)
 * fills a C struct from the rows that name their member.
 */
#ifndef GT_API_SCHEMA_H
#define GT_API_SCHEMA_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

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
gt_check_fn gt_check_git_url;
gt_check_fn gt_check_image;
gt_check_fn gt_check_env_name;
gt_check_fn gt_check_camel_word;
gt_check_fn gt_check_requirements;

#endif
