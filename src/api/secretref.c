/*
 * References to gantry secrets (env valueFrom.gantrySecret) are written
 * only by gantryd's controllers, into the Jobs and Tasks of the kinds
 * they own (a Notebook's token, an ImageBuild's push credential). A user
 * who could write one could have any task of theirs handed a value
 * derived for someone else's object, so every object a user writes is
 * searched for them, whatever its kind and wherever the template sits.
 */
#include <stdio.h>

#include "api/api_int.h"

/* Depth of the search: deeper than any schema nests (validation bounds
 * objects far below it). */
#define DEPTH_MAX 32

static int search(const json_t *v, const char *path, int depth, struct gt_err *err)
{
    if (depth > DEPTH_MAX) {
        return 0;
    }
    char sub[GT_API_PATH_MAX];
    if (json_is_object(v)) {
        const json_t *vf = json_object_get(v, "valueFrom");
        if (json_is_object(vf) && json_object_get(vf, "gantrySecret")) {
            char at[GT_API_PATH_MAX];
            gt_path_join(at, sizeof(at), path, "valueFrom");
            return gt_err_set(err, GT_EINVAL,
                              "%s: set only by gantryd for the tasks of the kinds it runs "
                              "(notebooks, image builds), never by a user",
                              gt_path_join(sub, sizeof(sub), at, "gantrySecret"));
        }
        const char *key;
        const json_t *child;
        json_object_foreach((json_t *)v, key, child)
        {
            int rc = search(child, gt_path_join(sub, sizeof(sub), path, key), depth + 1, err);
            if (rc) {
                return rc;
            }
        }
    } else if (json_is_array(v)) {
        size_t i;
        const json_t *child;
        json_array_foreach(v, i, child)
        {
            snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
            int rc = search(child, sub, depth + 1, err);
            if (rc) {
                return rc;
            }
        }
    }
    return 0;
}

int gt_api_check_no_secret_refs(const json_t *obj, struct gt_err *err)
{
    return search(obj, "", 0, err);
}
