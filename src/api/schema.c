/*
 * The schema engine: walks a schema table over a jansson object, checking
 * every field, filling defaults and canonicalizing resource maps in place.
 *
 * Explicit nulls are treated as absent and removed (YAML's "key:" with no
 * value), so a validated object never holds null. Errors carry the full
 * field path; array items appear as "name[3]", map entries as "name.key".
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api/api_int.h"

static size_t bound(size_t max_len, size_t def)
{
    return max_len ? max_len : def;
}

static int check_string(const struct gt_field *f, const json_t *v, const char *path,
                        struct gt_err *err)
{
    if (!json_is_string(v)) {
        return gt_err_set(err, GT_EINVAL, "%s: must be a string", path);
    }
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (strlen(s) != n) {
        return gt_err_set(err, GT_EINVAL, "%s: must not contain NUL", path);
    }
    size_t max = bound(f->max_len, GT_API_STRING_MAX);
    if (n > max) {
        return gt_err_set(err, GT_EINVAL, "%s: must be at most %zu bytes", path, max);
    }
    if (!f->enums) {
        return 0;
    }
    for (const char *const *e = f->enums; *e; e++) {
        if (strcmp(s, *e) == 0) {
            return 0;
        }
    }
    char list[256] = "";
    size_t used = 0;
    for (const char *const *e = f->enums; *e && used < sizeof(list); e++) {
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
                                 e == f->enums ? "" : ", ", *e);
    }
    return gt_err_set(err, GT_EINVAL, "%s: must be one of %s", path, list);
}

static int check_int(const struct gt_field *f, const json_t *v, const char *path,
                     struct gt_err *err)
{
    if (!json_is_integer(v)) {
        return gt_err_set(err, GT_EINVAL, "%s: must be an integer", path);
    }
    json_int_t n = json_integer_value(v);
    if (n < f->min) {
        return gt_err_set(err, GT_EINVAL, "%s: must be >= %" PRId64, path, f->min);
    }
    if (n > f->max) {
        return gt_err_set(err, GT_EINVAL, "%s: must be <= %" PRId64, path, f->max);
    }
    return 0;
}

static int check_array(const struct gt_field *f, json_t *v, const char *path, struct gt_err *err)
{
    if (!json_is_array(v)) {
        return gt_err_set(err, GT_EINVAL, "%s: must be a list", path);
    }
    size_t max = bound(f->max_len, GT_API_ITEMS_MAX);
    if (json_array_size(v) > max) {
        return gt_err_set(err, GT_EINVAL, "%s: must have at most %zu items", path, max);
    }
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item)
    {
        char sub[GT_API_PATH_MAX];
        snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
        if (json_is_null(item)) {
            return gt_err_set(err, GT_EINVAL, "%s: must not be null", sub);
        }
        int rc = gt_field_validate(f->elem, item, sub, err);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

static int check_map(const struct gt_field *f, json_t *v, const char *path, struct gt_err *err)
{
    if (!json_is_object(v)) {
        return gt_err_set(err, GT_EINVAL, "%s: must be an object", path);
    }
    size_t max = bound(f->max_len, GT_API_ITEMS_MAX);
    if (json_object_size(v) > max) {
        return gt_err_set(err, GT_EINVAL, "%s: must have at most %zu entries", path, max);
    }
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val)
    {
        char sub[GT_API_PATH_MAX];
        gt_path_join(sub, sizeof(sub), path, key);
        if (f->key_check) {
            json_t *k = json_string(key);
            int rc = f->key_check(k, err);
            json_decref(k);
            if (rc < 0) {
                gt_err_prefix(err, "%s", sub);
                return rc;
            }
        }
        if (json_is_null(val)) {
            return gt_err_set(err, GT_EINVAL, "%s: must not be null", sub);
        }
        int rc = gt_field_validate(f->elem, val, sub, err);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

int gt_field_validate(const struct gt_field *f, json_t *v, const char *path, struct gt_err *err)
{
    int rc = 0;
    switch (f->type) {
    case GT_F_STRING:
        rc = check_string(f, v, path, err);
        break;
    case GT_F_INT:
        rc = check_int(f, v, path, err);
        break;
    case GT_F_BOOL:
        if (!json_is_boolean(v)) {
            rc = gt_err_set(err, GT_EINVAL, "%s: must be a boolean", path);
        }
        break;
    case GT_F_OBJECT:
        rc = gt_schema_validate(f->schema, v, path, err);
        break;
    case GT_F_ARRAY:
        rc = check_array(f, v, path, err);
        break;
    case GT_F_MAP:
        rc = check_map(f, v, path, err);
        break;
    case GT_F_RESOURCES:
        rc = gt_resources_canonicalize(v, f->resources, path, err);
        break;
    case GT_F_ANY:
        break;
    case GT_F_FORBIDDEN:
        rc = gt_err_set(err, GT_EINVAL, "%s: %s", path, f->why);
        break;
    }
    if (rc == 0 && f->check) {
        rc = f->check(v, err);
        if (rc < 0) {
            gt_err_prefix(err, "%s", path);
        }
    }
    return rc;
}

static void set_default(const struct gt_field *f, json_t *obj)
{
    json_t *v;
    switch (f->type) {
    case GT_F_BOOL:
        v = json_boolean(f->def_int);
        break;
    case GT_F_INT:
        v = json_integer(f->def_int);
        break;
    default:
        v = json_string(f->def_str);
        break;
    }
    json_object_set_new(obj, f->name, v);
}

static bool known(const struct gt_field *fields, const char *key)
{
    for (const struct gt_field *f = fields; f->name; f++) {
        if (strcmp(f->name, key) == 0) {
            return true;
        }
    }
    return false;
}

int gt_schema_validate(const struct gt_schema *s, json_t *obj, const char *path, struct gt_err *err)
{
    if (!json_is_object(obj)) {
        return gt_err_set(err, GT_EINVAL, "%s: must be an object", path[0] ? path : "(root)");
    }
    const char *key;
    json_t *val;
    void *tmp;
    json_object_foreach_safe(obj, tmp, key, val)
    {
        char sub[GT_API_PATH_MAX];
        if (!known(s->fields, key)) {
            return gt_err_set(err, GT_EINVAL, "%s: unknown field",
                              gt_path_join(sub, sizeof(sub), path, key));
        }
        if (json_is_null(val)) {
            json_object_del(obj, key);
        }
    }
    for (const struct gt_field *f = s->fields; f->name; f++) {
        char sub[GT_API_PATH_MAX];
        json_t *v = json_object_get(obj, f->name);
        if (!v) {
            if (f->flags & GT_F_REQUIRED) {
                return gt_err_set(err, GT_EINVAL, "%s: required",
                                  gt_path_join(sub, sizeof(sub), path, f->name));
            }
            if (f->flags & GT_F_DEFAULT) {
                set_default(f, obj);
                continue;
            }
            if (!(f->flags & GT_F_CREATE)) {
                continue;
            }
            v = json_object();
            json_object_set_new(obj, f->name, v);
        }
        gt_path_join(sub, sizeof(sub), path, f->name);
        int rc = gt_field_validate(f, v, sub, err);
        if (rc < 0) {
            return rc;
        }
    }
    return s->post ? s->post(obj, path, err) : 0;
}
