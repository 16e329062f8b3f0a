/*
 * A string-keyed hash table with separate chaining (FNV-1a hashes). Keys are
 * copied and owned by the table; values are borrowed pointers the caller
 * manages (gt_strmap_fini can free them). Grows at load factor 1.
 */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "common/strmap.h"

struct gt_strmap_ent {
    struct gt_strmap_ent *next;
    uint64_t hash;
    char *key;
    void *val;
};

uint64_t gt_fnv1a(const void *data, size_t len, uint64_t h)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

#define FNV_INIT 0xcbf29ce484222325ULL

void gt_strmap_init(struct gt_strmap *m)
{
    m->n_buckets = 16;
    m->n = 0;
    m->buckets = gt_xcalloc(m->n_buckets, sizeof(*m->buckets));
}

void gt_strmap_fini(struct gt_strmap *m, void (*free_val)(void *))
{
    for (size_t i = 0; i < m->n_buckets; i++) {
        struct gt_strmap_ent *e = m->buckets[i];
        while (e) {
            struct gt_strmap_ent *next = e->next;
            if (free_val) {
                free_val(e->val);
            }
            free(e->key);
            free(e);
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = NULL;
    m->n = m->n_buckets = 0;
}

static struct gt_strmap_ent **slot(const struct gt_strmap *m, const char *key, uint64_t h)
{
    struct gt_strmap_ent **p = &m->buckets[h & (m->n_buckets - 1)];
    while (*p && ((*p)->hash != h || strcmp((*p)->key, key) != 0)) {
        p = &(*p)->next;
    }
    return p;
}

void *gt_strmap_get(const struct gt_strmap *m, const char *key)
{
    uint64_t h = gt_fnv1a(key, strlen(key), FNV_INIT);
    struct gt_strmap_ent **p = slot(m, key, h);
    return *p ? (*p)->val : NULL;
}

static void grow(struct gt_strmap *m)
{
    size_t nb = m->n_buckets * 2;
    struct gt_strmap_ent **b = gt_xcalloc(nb, sizeof(*b));
    for (size_t i = 0; i < m->n_buckets; i++) {
        struct gt_strmap_ent *e = m->buckets[i];
        while (e) {
            struct gt_strmap_ent *next = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->n_buckets = nb;
}

void *gt_strmap_put(struct gt_strmap *m, const char *key, void *val)
{
    uint64_t h = gt_fnv1a(key, strlen(key), FNV_INIT);
    struct gt_strmap_ent **p = slot(m, key, h);
    if (*p) {
        void *old = (*p)->val;
        (*p)->val = val;
        return old;
    }
    struct gt_strmap_ent *e = gt_xmalloc(sizeof(*e));
    e->next = NULL;
    e->hash = h;
    e->key = gt_xstrdup(key);
    e->val = val;
    *p = e;
    if (++m->n > m->n_buckets) {
        grow(m);
    }
    return NULL;
}

void *gt_strmap_del(struct gt_strmap *m, const char *key)
{
    uint64_t h = gt_fnv1a(key, strlen(key), FNV_INIT);
    struct gt_strmap_ent **p = slot(m, key, h);
    if (!*p) {
        return NULL;
    }
    struct gt_strmap_ent *e = *p;
    void *val = e->val;
    *p = e->next;
    free(e->key);
    free(e);
    m->n--;
    return val;
}

void gt_strmap_each(const struct gt_strmap *m, gt_strmap_fn fn, void *arg)
{
    for (size_t i = 0; i < m->n_buckets; i++) {
        for (struct gt_strmap_ent *e = m->buckets[i]; e; e = e->next) {
            if (fn(e->key, e->val, arg)) {
                return;
            }
        }
    }
}
