/*
 * Manifests in the api tests: one YAML document as the JSON the API takes.
 * Include after <cmocka.h> (it fails the running test on bad YAML).
 */
#ifndef GT_TEST_API_UTIL_H
#define GT_TEST_API_UTIL_H

#include <string.h>

#include "api/api.h"
#include "common/common.h"

/* The only document of YAML text (a new reference); fails the test if the
 * text does not parse or holds another number of documents. */
static inline json_t *load_yaml(const char *text)
{
    json_t *docs = NULL;
    struct gt_err err = {0};
    if (gt_yaml_load_documents(text, strlen(text), &docs, &err) != 0) {
        fail_msg("yaml: %s", err.msg);
    }
    assert_int_equal(json_array_size(docs), 1);
    json_t *doc = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    return doc;
}

#endif
