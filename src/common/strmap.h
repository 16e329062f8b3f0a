/*
 * A string-keyed hash table (strmap.c): keys copied and owned by the table,
 * values borrowed pointers the caller manages.
 */
#ifndef GT_COMMON_STRMAP_H
#define GT_COMMON_STRMAP_H

#include <stddef.h>
#include <stdint.h>

struct gt_strmap_ent;
struct gt_strmap {
    struct gt_strmap_ent **buckets;
    size_t n_buckets; /* power of two */
    size_t n;
};
typedef int (*gt_strmap_fn)(const char *key, void *val, void *arg);
/* FNV-1a of len bytes of data, continuing from h (0xcbf29ce484222325 to start). */
uint64_t gt_fnv1a(const void *data, size_t len, uint64_t h);
void gt_strmap_init(struct gt_strmap *m);
/* Free the table; free_val (may be NULL) is called on each value. */
void gt_strmap_fini(struct gt_strmap *m, void (*free_val)(void *));
void *gt_strmap_get(const struct gt_strmap *m, const char *key);
/* Insert or replace; returns the replaced value (caller frees) or NULL. */
void *gt_strmap_put(struct gt_strmap *m, const char *key, void *val);
/* Remove; returns the value (caller frees) or NULL. */
void *gt_strmap_del(struct gt_strmap *m, const char *key);
/* Call fn for every entry until it returns non-zero. No changes meanwhile. */
void gt_strmap_each(const struct gt_strmap *m, gt_strmap_fn fn, void *arg);

#endif
