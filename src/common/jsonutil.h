/*
 * JSON and YAML helpers over jansson. YAML (libyaml) is converted to jansson
 * values so every input format goes through one JSON validator.
 */
#ifndef GT_JSONUTIL_H
#define GT_JSONUTIL_H

#include <jansson.h>
#include <stddef.h>

struct gt_err;

/* Parse a YAML or JSON text holding one or more documents ("---"-separated)
 * into a new JSON array of documents (empty documents skipped). Plain YAML
 * scalars become null/bool/integer/real where YAML 1.2's core schema says
 * so, everything quoted stays a string. Anchors/aliases are rejected.
 * Returns 0 and *docs (caller json_decref()s), or GT_EBADREQ with err
 * giving line and column. */
int gt_yaml_load_documents(const char *text, size_t len, json_t **docs, struct gt_err *err);

/* Write a JSON value as block-style YAML into a new heap string (caller
 * frees). Used by `gantry get -o yaml`. */
char *gt_yaml_dump(const json_t *v);

/* Look up a dotted path ("spec.nodeName", "metadata.labels.app") in obj.
 * Returns a borrowed pointer or NULL. */
json_t *gt_json_path(const json_t *obj, const char *dotted);

/* The first object of array whose string member key equals value, as
 * Kubernetes lists keyed by a field are looked up (conditions by "type",
 * addresses by "type", volumes by "name"). Borrowed pointer; NULL when
 * none, or when array is not an array or value is NULL. */
json_t *gt_json_find(const json_t *array, const char *key, const char *value);

/* Serialize compactly with sorted keys into a new heap string (caller frees). */
char *gt_json_dumps(const json_t *v);

#endif
