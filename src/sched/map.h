/*
 * sched map (map.c): a string-keyed open-addressing hash map (linear
 * probing, backward-shift deletion, so no tombstones). Keys are borrowed
 * from the values. Included only from src/sched.
 */
#ifndef GT_SCHED_MAP_H
#define GT_SCHED_MAP_H

#include <stddef.h>
#include <stdint.h>

struct gt_sched_map_slot {
    const char *key; /* NULL: empty */
    uint64_t hash;
    void *val;
};

struct gt_sched_map {
    struct gt_sched_map_slot *slots;
    size_t cap; /* power of two, or 0 */
    size_t n;
};

void gt_sched_map_init(struct gt_sched_map *map);
void gt_sched_map_fini(struct gt_sched_map *map);
/* The value for key, or NULL. */
void *gt_sched_map_get(const struct gt_sched_map *map, const char *key);
/* Insert key (borrowed; must outlive its entry) -> val; key must be absent. */
void gt_sched_map_put(struct gt_sched_map *map, const char *key, void *val);
/* Remove key if present. */
void gt_sched_map_del(struct gt_sched_map *map, const char *key);

#endif
