/*
 * The stored form of objects. Stored values are compact JSON with
 * "metadata" as the first key and no resourceVersion (the store's revision
 * is the version); reads splice `"resourceVersion":"N"` in after
 * `{"metadata":{`, so serving a stored object parses no JSON. Objects that
 * must be changed on the way out (a computed status, selector matching)
 * are parsed with the version set instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

#define META_PREFIX "{\"metadata\":{"
#define META_PREFIX_LEN (sizeof(META_PREFIX) - 1)

void gt_api_encode_json(struct gt_buf *out, const json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    GT_ASSERT(text);
    gt_buf_puts(out, text);
    free(text);
}

char *gt_api_encode(const json_t *obj, size_t *len)
{
    /* a shallow copy with metadata first: its members are shared, not copied */
    json_t *ordered = json_object();
    json_t *md = json_object_get(obj, "metadata");
    if (md) {
        json_object_set_nocheck(ordered, "metadata", md);
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        if (strcmp(k, "metadata") != 0) {
            json_object_set_nocheck(ordered, k, v);
        }
    }
    char *text = json_dumps(ordered, JSON_COMPACT);
    json_decref(ordered);
    GT_ASSERT(text);
    *len = strlen(text);
    return text;
}

bool gt_api_render_splice(struct gt_buf *out, const char *text, size_t len, int64_t rev)
{
    if (len <= META_PREFIX_LEN + 1 || memcmp(text, META_PREFIX, META_PREFIX_LEN) != 0) {
        return false;
    }
    gt_buf_append(out, text, META_PREFIX_LEN);
    gt_buf_printf(out, "\"resourceVersion\":\"%lld\"%s", (long long)rev,
                  text[META_PREFIX_LEN] == '}' ? "" : ",");
    gt_buf_append(out, text + META_PREFIX_LEN, len - META_PREFIX_LEN);
    return true;
}

json_t *gt_api_render_json(const char *text, size_t len, int64_t rev)
{
    json_t *obj = json_loadb(text, len, 0, NULL);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return NULL;
    }
    json_t *md = json_object_get(obj, "metadata");
    if (!json_is_object(md)) {
        md = json_object();
        json_object_set_new(obj, "metadata", md);
    }
    char rv[24];
    snprintf(rv, sizeof(rv), "%lld", (long long)rev);
    json_object_set_new(md, "resourceVersion", json_string(rv));
    return obj;
}
