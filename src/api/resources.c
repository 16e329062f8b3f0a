/*
 * Resource maps: {"cpu": "500m", "memory": "16Gi", "nvidia.com/gpu": 2}.
 *
 * Values arrive as quantity strings or JSON numbers (YAML's `cpu: 0.5` is a
 * real); each is parsed exactly and written back in one canonical form, so
 * stored objects compare byte for byte: cpu as milli-CPU text ("1500m",
 * "2"), memory, storage and ephemeral-storage as bytes with the largest
 * exact binary suffix ("16Gi"), GPU counts and gpu-milli as JSON integers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"

enum res_form { FORM_MILLI_TEXT, FORM_BINARY_TEXT, FORM_INTEGER };

struct res_desc {
    const char *name;
    unsigned bit;
    enum gt_qty_unit unit;
    enum res_form form;
    size_t offset;    /* of the int64_t in struct gt_resources */
    enum gt_res slot; /* in struct gt_resvec; GT_RES_COUNT: none (ephemeral_bytes) */
    int64_t scale;    /* units of the slot per unit of the name */
};

static const struct res_desc res_table[] = {
    {GT_RES_NAME_CPU, GT_RESF_CPU, GT_QTY_MILLI, FORM_MILLI_TEXT,
     offsetof(struct gt_resources, cpu_milli), GT_RES_CPU, 1},
    {GT_RES_NAME_MEMORY, GT_RESF_MEMORY, GT_QTY_UNIT, FORM_BINARY_TEXT,
     offsetof(struct gt_resources, memory_bytes), GT_RES_MEMORY, 1},
    {GT_RES_NAME_STORAGE, GT_RESF_STORAGE, GT_QTY_UNIT, FORM_BINARY_TEXT,
     offsetof(struct gt_resources, storage_bytes), GT_RES_STORAGE, 1},
    {GT_RES_NAME_GPU, GT_RESF_GPU, GT_QTY_UNIT, FORM_INTEGER, offsetof(struct gt_resources, gpu),
     GT_RES_GPU, 1000},
    {GT_RES_NAME_GPU_MILLI, GT_RESF_GPU_MILLI, GT_QTY_UNIT, FORM_INTEGER,
     offsetof(struct gt_resources, gpu_milli), GT_RES_GPU, 1},
    {GT_RES_NAME_EPHEMERAL, GT_RESF_EPHEMERAL, GT_QTY_UNIT, FORM_BINARY_TEXT,
     offsetof(struct gt_resources, ephemeral_bytes), GT_RES_COUNT, 1},
};

static const struct res_desc *res_find(const char *name)
{
    for (size_t i = 0; i < GT_ARRAY_LEN(res_table); i++) {
        if (strcmp(res_table[i].name, name) == 0) {
            return &res_table[i];
        }
    }
    return NULL;
}

/* The shortest decimal text that reads back as d exactly. */
static void real_text(double d, char *buf, size_t len)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) {
            return;
        }
    }
}

/* Parse one value (string, integer or real) of resource r into *out. */
static int parse_value(const struct res_desc *r, const json_t *v, int64_t *out, struct gt_err *err)
{
    char text[64];
    const char *s;
    if (json_is_string(v)) {
        s = json_string_value(v);
        if (strlen(s) != json_string_length(v)) {
            return gt_err_set(err, GT_EINVAL, "must not contain NUL");
        }
    } else if (json_is_integer(v)) {
        snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        s = text;
    } else if (json_is_real(v)) {
        real_text(json_real_value(v), text, sizeof(text));
        s = text;
    } else {
        return gt_err_set(err, GT_EINVAL, "must be a quantity (string or number)");
    }
    struct gt_err qerr = {0};
    if (gt_quantity_parse(s, r->unit, out, &qerr) < 0) {
        return gt_err_set(err, GT_EINVAL, "quantity \"%.64s\": %s", s, qerr.msg);
    }
    return 0;
}

static json_t *canonical(const struct res_desc *r, int64_t v)
{
    char buf[32];
    switch (r->form) {
    case FORM_MILLI_TEXT:
        return json_string(gt_quantity_format(v, GT_QTY_MILLI, 0, buf, sizeof(buf)));
    case FORM_BINARY_TEXT:
        return json_string(gt_quantity_format(v, GT_QTY_UNIT, 1, buf, sizeof(buf)));
    case FORM_INTEGER:
        break;
    }
    return json_integer(v);
}

int gt_resources_canonicalize(json_t *map, unsigned allowed, const char *path, struct gt_err *err)
{
    if (!json_is_object(map)) {
        return gt_err_set(err, GT_EINVAL, "%s: must be an object", path);
    }
    const char *key;
    json_t *val;
    json_object_foreach(map, key, val)
    {
        char sub[GT_API_PATH_MAX];
        gt_path_join(sub, sizeof(sub), path, key);
        const struct res_desc *r = res_find(key);
        if (!r) {
            return gt_err_set(err, GT_EINVAL, "%s: unknown resource", sub);
        }
        if (!(r->bit & allowed)) {
            return gt_err_set(err, GT_EINVAL, "%s: resource not allowed here", sub);
        }
        int64_t v;
        if (parse_value(r, val, &v, err) < 0) {
            gt_err_prefix(err, "%s", sub);
            return GT_EINVAL;
        }
        /* Replacing the value of an existing key keeps the iteration valid. */
        json_object_set_new(map, key, canonical(r, v));
    }
    return 0;
}

int gt_resource_amount(const char *name, const json_t *v, int64_t *out)
{
    const struct res_desc *d = res_find(name);
    return d ? parse_value(d, v, out, NULL) : GT_EINVAL;
}

int gt_api_resources(const json_t *map, struct gt_resources *r, struct gt_err *err)
{
    memset(r, 0, sizeof(*r));
    if (!map) {
        return 0;
    }
    if (!json_is_object(map)) {
        return gt_err_set(err, GT_EINVAL, "resources: must be an object");
    }
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)map, key, val)
    {
        const struct res_desc *d = res_find(key);
        if (!d) {
            return gt_err_set(err, GT_EINVAL, "%s: unknown resource", key);
        }
        int64_t v;
        if (parse_value(d, val, &v, err) < 0) {
            gt_err_prefix(err, "%s", key);
            return GT_EINVAL;
        }
        memcpy((char *)r + d->offset, &v, sizeof(v));
    }
    return 0;
}

void gt_api_res_decode(const json_t *map, struct gt_api_res *out)
{
    memset(out, 0, sizeof(*out));
    if (!json_is_object(map)) {
        return;
    }
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)map, key, val)
    {
        const struct res_desc *d = res_find(key);
        int64_t v;
        if (!d || parse_value(d, val, &v, NULL) < 0) {
            continue;
        }
        out->set |= d->bit;
        if (d->slot == GT_RES_COUNT) {
            out->ephemeral_bytes = v;
            continue;
        }
        int64_t *slot = &out->v.v[d->slot];
        /* saturate: more than any cluster holds means no bound */
        if (gt_mul_i64(v, d->scale, &v) < 0 || gt_add_i64(*slot, v, slot) < 0) {
            *slot = INT64_MAX;
        }
    }
}
