/*
 * A string-keyed open-addressing hash map for the model's id lookups.
 *
 * Linear probing over a power-of-two table kept at most 3/4 full; deletion
 * shifts the following cluster back (Knuth's algorithm R), so there are no
 * tombstones and lookups stay short however many ids come and go. Keys are
 * borrowed from the values they name (a node's name, a task's id), and the
 * full 64-bit hash is stored to skip most string compares.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/map.h"
#include "sched/sched_int.h"

/* FNV-1a, 64 bit: simple, and good enough for ids we choose the shape of. */
static uint64_t hash_str(const char *s)
{
    uint64_t h = 14695981039346656037ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

void gt_sched_map_init(struct gt_sched_map *map)
{
    map->slots = NULL;
    map->cap = 0;
    map->n = 0;
}

void gt_sched_map_fini(struct gt_sched_map *map)
{
    free(map->slots);
    gt_sched_map_init(map);
}

/* The slot holding key, or the empty slot where it would go. cap > 0. */
static size_t find_slot(const struct gt_sched_map *map, const char *key, uint64_t h)
{
    size_t mask = map->cap - 1;
    size_t i = (size_t)h & mask;
    while (map->slots[i].key && (map->slots[i].hash != h || strcmp(map->slots[i].key, key) != 0)) {
        i = (i + 1) & mask;
    }
    return i;
}

void *gt_sched_map_get(const struct gt_sched_map *map, const char *key)
{
    if (map->cap == 0) {
        return NULL;
    }
    size_t i = find_slot(map, key, hash_str(key));
    return map->slots[i].key ? map->slots[i].val : NULL;
}

static void grow(struct gt_sched_map *map)
{
    struct gt_sched_map_slot *old = map->slots;
    size_t old_cap = map->cap;
    map->cap = old_cap ? old_cap * 2 : 16;
    map->slots = gt_xcalloc(map->cap, sizeof(*map->slots));
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].key) {
            map->slots[find_slot(map, old[i].key, old[i].hash)] = old[i];
        }
    }
    free(old);
}

void gt_sched_map_put(struct gt_sched_map *map, const char *key, void *val)
{
    if ((map->n + 1) * 4 > map->cap * 3) {
        grow(map);
    }
    uint64_t h = hash_str(key);
    size_t i = find_slot(map, key, h);
    GT_ASSERT(map->slots[i].key == NULL);
    map->slots[i] = (struct gt_sched_map_slot){.key = key, .hash = h, .val = val};
    map->n++;
}

void gt_sched_map_del(struct gt_sched_map *map, const char *key)
{
    if (map->cap == 0) {
        return;
    }
    size_t mask = map->cap - 1;
    size_t i = find_slot(map, key, hash_str(key));
    if (!map->slots[i].key) {
        return;
    }
    /* Backward shift: move each later entry of the cluster into the hole
     * unless its home slot lies cyclically in (hole, entry]. */
    size_t hole = i;
    for (size_t j = (i + 1) & mask; map->slots[j].key; j = (j + 1) & mask) {
        size_t home = (size_t)map->slots[j].hash & mask;
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!stays) {
            map->slots[hole] = map->slots[j];
            hole = j;
        }
    }
    map->slots[hole] = (struct gt_sched_map_slot){0};
    map->n--;
}
