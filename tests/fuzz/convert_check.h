/*
 * The check shared by the fuzz targets of manifest conversions (Kubeflow,
 * KServe): every YAML document of the input is converted; the input is
 * never changed; a failure is GT_EINVAL with a message and no output; a
 * success is handed to the target's own check, which owns nothing (the
 * output is freed here).
 */
#ifndef GT_FUZZ_CONVERT_CHECK_H
#define GT_FUZZ_CONVERT_CHECK_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

typedef int (*fuzz_convert_fn)(const json_t *in, json_t **out, struct gt_err *err);
typedef void (*fuzz_converted_fn)(const json_t *in, json_t *out);

/* The output validates to the same bytes twice: defaults filled once stay. */
static inline void fuzz_check_canonical(enum gt_kind kind, json_t *out)
{
    char *once = gt_json_dumps(out);
    GT_ASSERT(gt_api_validate(kind, out, NULL) == 0);
    char *twice = gt_json_dumps(out);
    GT_ASSERT(strcmp(once, twice) == 0);
    free(once);
    free(twice);
}

static inline void fuzz_convert_documents(const uint8_t *data, size_t size, fuzz_convert_fn convert,
                                          fuzz_converted_fn converted)
{
    json_t *docs = NULL;
    if (gt_yaml_load_documents((const char *)data, size, &docs, NULL) != 0) {
        return;
    }
    size_t i;
    json_t *doc;
    json_array_foreach(docs, i, doc)
    {
        json_t *before = json_deep_copy(doc);
        json_t *out = NULL;
        struct gt_err err = {0};
        int rc = convert(doc, &out, &err);
        GT_ASSERT(json_equal(doc, before));
        if (rc != 0) {
            GT_ASSERT(rc == GT_EINVAL && err.msg[0] != '\0' && out == NULL);
        } else {
            converted(doc, out);
            json_decref(out);
        }
        json_decref(before);
    }
    json_decref(docs);
}

#endif
