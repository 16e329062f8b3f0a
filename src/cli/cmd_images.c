/*
 * `gantry get images`: the cluster's image catalogue. The official images
 * an admin registered (gantryd --image NAME=REF, from GET clusterinfo),
 * then each visible project's built images (its Succeeded ImageBuilds:
 * PROJECT/NAME:TAG, pushed as REGISTRY/PROJECT/NAME:TAG, by digest). With
 * -p only that project's builds; the default lists every project the user
 * may read, as -A does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"

static const char *const headers[] = {"NAME", "SOURCE", "IMAGE"};

static void add_builds(struct gt_cli_table *t, const json_t *list)
{
    size_t i;
    const json_t *b;
    json_array_foreach(json_object_get(list, "items"), i, b)
    {
        const json_t *st = json_object_get(b, "status");
        const char *phase = json_string_value(json_object_get(st, "phase"));
        const char *image = json_string_value(json_object_get(st, "image"));
        const char *digest = json_string_value(json_object_get(st, "digest"));
        const char *project = json_string_value(gt_json_path(b, "metadata.project"));
        const char *tag = json_string_value(gt_json_path(b, "spec.image"));
        if (!phase || strcmp(phase, "Succeeded") != 0 || !image || !project || !tag) {
            continue;
        }
        char *name = gt_xasprintf("%s/%s", project, tag);
        char *source =
            gt_xasprintf("build %s", json_string_value(gt_json_path(b, "metadata.name")));
        char *ref = digest ? gt_xasprintf("%s@%s", image, digest) : gt_xstrdup(image);
        const char *cells[] = {name, source, ref};
        gt_cli_table_add(t, cells);
        free(name);
        free(source);
        free(ref);
    }
}

int gt_cli_get_images(struct gt_cli_ctx *ctx, struct gt_cli_client *client, const char *project,
                      struct gt_err *err)
{
    json_t *info = NULL, *builds = NULL;
    int rc =
        gt_cli_client_request(client, "GET", GT_API_GROUP_PREFIX "/clusterinfo", NULL, &info, err);
    char *path = project ? gt_cli_kind_path(gt_kind_get(GT_KIND_IMAGEBUILD), project, NULL)
                         : gt_xstrdup(GT_API_GROUP_PREFIX "/imagebuilds");
    rc = rc ? rc : gt_cli_client_request(client, "GET", path, NULL, &builds, err);
    free(path);
    if (rc == 0) {
        struct gt_cli_table t;
        gt_cli_table_init(&t, GT_ARRAY_LEN(headers), headers);
        size_t i;
        const json_t *im;
        json_array_foreach(json_object_get(info, "images"), i, im)
        {
            const char *cells[] = {json_string_value(json_object_get(im, "name")), "official",
                                   json_string_value(json_object_get(im, "image"))};
            gt_cli_table_add(&t, cells);
        }
        add_builds(&t, builds);
        struct gt_buf out;
        gt_buf_init(&out);
        gt_cli_table_render(&t, true, &out);
        fwrite(out.data ? out.data : "", 1, out.len, ctx->out);
        gt_buf_fini(&out);
        gt_cli_table_fini(&t);
    }
    json_decref(info);
    json_decref(builds);
    return rc;
}
