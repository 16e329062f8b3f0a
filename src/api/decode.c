/*
 * Typed objects: the second walk of the schema tables. gt_schema_validate
 * checks and canonicalizes a document; gt_schema_decode then reads the same
 * rows' .out/.off columns to fill the kind's C struct (api.h), so a kind
 * gets its typed form by writing its struct and naming the members in its
 * rows, never by a decoder of its own.
 *
 * Memory: one allocation per object, sized by a first walk of the same
 * rows (lists_size), holds the kind's struct and every list cut from it.
 * Strings are never copied: they are borrowed from the JSON, of which the
 * object keeps a reference (see the ownership rules in api.h).
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_int.h"

#define ALIGN 16

/* The lists' memory, after the struct in the object's block. */
struct gt_api_mem {
    size_t used, cap;
    alignas(ALIGN) unsigned char data[];
};

static size_t round_up(size_t n)
{
    return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

/* n zeroed bytes of m, which lists_size made big enough. */
static void *mem_alloc(struct gt_api_mem *m, size_t n)
{
    n = round_up(n);
    GT_ASSERT(m->cap - m->used >= n);
    void *p = m->data + m->used;
    m->used += n;
    return p;
}

/* The list form every GT_API_LIST(T) shares. */
struct list {
    void *v;
    size_t n;
};

static void decode_value(const struct gt_field *f, const json_t *v, void *dst,
                         struct gt_api_mem *mem);

static size_t item_size(const struct gt_field *e)
{
    switch (e->type) {
    case GT_F_OBJECT:
        return e->schema->size;
    case GT_F_STRING:
        return e->index ? sizeof(int) : sizeof(const char *);
    case GT_F_INT:
        return sizeof(int64_t);
    case GT_F_BOOL:
        return sizeof(bool);
    case GT_F_RESOURCES:
        return sizeof(struct gt_api_res);
    default:
        return sizeof(const json_t *);
    }
}

static size_t lists_size(const struct gt_schema *s, const json_t *obj);

/* Bytes of list memory decoding v by row f takes: what mem_alloc will be
 * asked for, the same walk as decode_value's. */
static size_t value_lists_size(const struct gt_field *f, const json_t *v)
{
    size_t total = 0;
    if (f->type == GT_F_OBJECT) {
        total = lists_size(f->schema, v);
    } else if (f->type == GT_F_ARRAY && json_is_array(v) && json_array_size(v)) {
        total = round_up(json_array_size(v) * item_size(f->elem));
        for (size_t i = 0; i < json_array_size(v); i++) {
            total += value_lists_size(f->elem, json_array_get(v, i));
        }
    } else if (f->type == GT_F_MAP && f->elem->type == GT_F_OBJECT && json_is_object(v) &&
               json_object_size(v)) {
        total = round_up(json_object_size(v) * f->elem->schema->size);
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)v, key, val)
        {
            total += lists_size(f->elem->schema, val);
        }
    }
    return total;
}

static size_t lists_size(const struct gt_schema *s, const json_t *obj)
{
    size_t total = 0;
    for (const struct gt_field *f = s->fields; obj && f->name; f++) {
        if (f->out) {
            total += value_lists_size(f, json_object_get(obj, f->name));
        }
    }
    return total;
}

static void decode_array(const struct gt_field *f, const json_t *v, struct list *out,
                         struct gt_api_mem *mem)
{
    size_t n = json_is_array(v) ? json_array_size(v) : 0;
    size_t size = item_size(f->elem);
    out->n = n;
    out->v = n ? mem_alloc(mem, n * size) : NULL;
    for (size_t i = 0; i < n; i++) {
        decode_value(f->elem, json_array_get(v, i), (char *)out->v + i * size, mem);
    }
}

/* A map of objects: its entries in order, each item's first member the key. */
static void decode_entries(const struct gt_field *f, const json_t *v, struct list *out,
                           struct gt_api_mem *mem)
{
    size_t n = json_is_object(v) ? json_object_size(v) : 0;
    size_t size = f->elem->schema->size;
    out->n = n;
    out->v = n ? mem_alloc(mem, n * size) : NULL;
    if (n == 0) {
        return;
    }
    size_t i = 0;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)v, key, val)
    {
        char *item = (char *)out->v + i++ * size;
        memcpy(item, &key, sizeof(key));
        gt_schema_decode(f->elem->schema, val, item, mem);
    }
}

static int enum_index(const struct gt_field *f, const char *s)
{
    for (int i = 0; s && f->enums[i]; i++) {
        if (strcmp(s, f->enums[i]) == 0) {
            return i;
        }
    }
    return -1;
}

static void decode_string(const struct gt_field *f, const json_t *v, void *dst)
{
    const char *s = json_string_value(v); /* NULL unless a string */
    if (!s && (f->flags & GT_F_DEFAULT)) {
        s = f->def_str;
    }
    if (!f->index) {
        memcpy(dst, &s, sizeof(s));
        return;
    }
    int i = enum_index(f, s);
    i = i < 0 ? 0 : i;
    memcpy(dst, &i, sizeof(i));
}

static void decode_value(const struct gt_field *f, const json_t *v, void *dst,
                         struct gt_api_mem *mem)
{
    bool dflt = (f->flags & GT_F_DEFAULT) != 0;
    switch (f->type) {
    case GT_F_STRING:
        decode_string(f, v, dst);
        break;
    case GT_F_INT: {
        int64_t n = json_is_integer(v) ? json_integer_value(v) : dflt ? f->def_int : GT_API_UNSET;
        memcpy(dst, &n, sizeof(n));
        break;
    }
    case GT_F_BOOL: {
        bool b = json_is_boolean(v) ? json_is_true(v) : dflt && f->def_int;
        memcpy(dst, &b, sizeof(b));
        break;
    }
    case GT_F_OBJECT:
        gt_schema_decode(f->schema, v, dst, mem);
        break;
    case GT_F_ARRAY:
        decode_array(f, v, dst, mem);
        break;
    case GT_F_MAP:
        if (f->elem->type == GT_F_OBJECT) {
            decode_entries(f, v, dst, mem);
            break;
        }
        v = json_is_object(v) ? v : NULL;
        memcpy(dst, &v, sizeof(v));
        break;
    case GT_F_RESOURCES:
        gt_api_res_decode(v, dst);
        break;
    case GT_F_ANY:
        memcpy(dst, &v, sizeof(v));
        break;
    case GT_F_FORBIDDEN:
        break;
    }
}

void gt_schema_decode(const struct gt_schema *s, const json_t *obj, void *out,
                      struct gt_api_mem *mem)
{
    if (!json_is_object(obj)) {
        obj = NULL;
    }
    for (const struct gt_field *f = s->fields; f->name; f++) {
        if (!f->out) {
            continue;
        }
        const json_t *v = obj ? json_object_get(obj, f->name) : NULL;
        decode_value(f, v, (char *)out + f->off, mem);
        if (f->has_out) {
            *((bool *)((char *)out + f->has)) =
                f->type == GT_F_OBJECT ? json_is_object(v) : v != NULL;
        }
    }
}

struct gt_api_object *gt_api_object_new(enum gt_kind kind, json_t *obj)
{
    const struct gt_schema *s = gt_kind_schema(kind);
    if (!s || s->size == 0) {
        return NULL;
    }
    size_t head = round_up(s->size);
    size_t lists = lists_size(s, json_is_object(obj) ? obj : NULL);
    char *block = gt_xcalloc(1, head + sizeof(struct gt_api_mem) + lists);
    struct gt_api_object *o = (struct gt_api_object *)block;
    o->mem = (struct gt_api_mem *)(block + head);
    o->mem->cap = lists;
    o->kind = kind;
    o->json = json_incref(obj);
    gt_schema_decode(s, obj, o, o->mem);
    return o;
}

void gt_api_object_free(struct gt_api_object *o)
{
    if (!o) {
        return;
    }
    json_decref(o->json);
    free(o);
}

int gt_api_decode(enum gt_kind kind, json_t *obj, struct gt_api_object **out, struct gt_err *err)
{
    *out = NULL;
    int rc = gt_api_validate(kind, obj, err);
    if (rc < 0) {
        return rc;
    }
    *out = gt_api_object_new(kind, obj);
    return 0;
}

/* The typed constructors: the generic ones, named by kind. */
#define TYPED(name, type, kind)                                                                    \
    struct type *gt_api_##name##_new(json_t *obj)                                                  \
    {                                                                                              \
        return (struct type *)gt_api_object_new(kind, obj);                                        \
    }                                                                                              \
    void gt_api_##name##_free(struct type *x)                                                      \
    {                                                                                              \
        gt_api_object_free(x ? &x->o : NULL);                                                      \
    }

TYPED(job, gt_api_job, GT_KIND_JOB)
TYPED(task, gt_api_task, GT_KIND_TASK)
TYPED(node, gt_api_node, GT_KIND_NODE)
TYPED(department, gt_api_department, GT_KIND_DEPARTMENT)
TYPED(project, gt_api_project, GT_KIND_PROJECT)
TYPED(priority_class, gt_api_priority_class, GT_KIND_PRIORITYCLASS)
TYPED(notebook, gt_api_notebook, GT_KIND_NOTEBOOK)
TYPED(volume_obj, gt_api_volume_obj, GT_KIND_VOLUME)
TYPED(model, gt_api_model, GT_KIND_MODEL)
TYPED(modelversion, gt_api_modelversion, GT_KIND_MODELVERSION)
TYPED(isvc, gt_api_isvc, GT_KIND_INFERENCESERVICE)

/* ---- conditions and effective resources ---- */

const struct gt_api_condition *gt_api_condition_find(const struct gt_api_conditions *conds,
                                                     const char *type)
{
    for (size_t i = 0; i < conds->n; i++) {
        if (conds->v[i].type && strcmp(conds->v[i].type, type) == 0) {
            return &conds->v[i];
        }
    }
    return NULL;
}

bool gt_api_condition_true(const struct gt_api_conditions *conds, const char *type)
{
    const struct gt_api_condition *c = gt_api_condition_find(conds, type);
    return c && c->status && strcmp(c->status, "True") == 0;
}

const char *gt_api_node_address(const struct gt_api_node *node, const char *type)
{
    for (size_t i = 0; i < node->status.addresses.n; i++) {
        const struct gt_api_address *a = &node->status.addresses.v[i];
        if (a->type && strcmp(a->type, type) == 0) {
            return a->address;
        }
    }
    return NULL;
}

json_t *gt_api_conditions_json(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "status"), "conditions");
}

void gt_api_resources_effective(const struct gt_api_template_resources *r,
                                struct gt_api_effective *out)
{
    for (int i = 0; i < GT_RES_COUNT; i++) {
        int64_t req = r->requests.v.v[i], lim = r->limits.v.v[i];
        out->request.v[i] = req ? req : lim;
        out->limit.v[i] = lim ? lim : req;
    }
    out->gpu_share = ((r->requests.set | r->limits.set) & GT_RESF_GPU_MILLI) != 0;
    out->ephemeral_bytes =
        r->limits.ephemeral_bytes ? r->limits.ephemeral_bytes : r->requests.ephemeral_bytes;
}
