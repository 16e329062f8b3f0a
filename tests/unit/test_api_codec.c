/*
 * The stored form: encoding puts metadata first; rendering splices the
 * exact resourceVersion in as metadata's first member (or, parsed, sets
 * it), and refuses text that is not in the stored form.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/api.h"

static void test_encode_metadata_first(void **state)
{
    (void)state;
    json_t *obj =
        json_pack("{s:s,s:{s:s},s:{s:i}}", "kind", "Job", "metadata", "name", "j", "spec", "x", 1);
    size_t len = 0;
    char *text = gt_api_encode(obj, &len);
    assert_string_equal(text,
                        "{\"metadata\":{\"name\":\"j\"},\"kind\":\"Job\",\"spec\":{\"x\":1}}");
    assert_int_equal(len, strlen(text));
    free(text);
    json_decref(obj);

    struct gt_buf b;
    gt_buf_init(&b);
    json_t *list = json_pack("[i,s]", 1, "a");
    gt_api_encode_json(&b, list);
    assert_string_equal(b.data, "[1,\"a\"]");
    json_decref(list);
    gt_buf_fini(&b);
}

static void test_splice(void **state)
{
    (void)state;
    struct gt_buf b;
    gt_buf_init(&b);
    const char *text = "{\"metadata\":{\"name\":\"j\"},\"spec\":{}}";
    assert_true(gt_api_render_splice(&b, text, strlen(text), 1234567));
    assert_string_equal(
        b.data, "{\"metadata\":{\"resourceVersion\":\"1234567\",\"name\":\"j\"},\"spec\":{}}");
    gt_buf_reset(&b);
    const char *empty = "{\"metadata\":{},\"spec\":{}}";
    assert_true(gt_api_render_splice(&b, empty, strlen(empty), 9));
    assert_string_equal(b.data, "{\"metadata\":{\"resourceVersion\":\"9\"},\"spec\":{}}");
    gt_buf_reset(&b);
    const char *other = "{\"kind\":\"Job\",\"metadata\":{}}";
    assert_false(gt_api_render_splice(&b, other, strlen(other), 9));
    assert_int_equal(b.len, 0);
    gt_buf_fini(&b);
}

static void test_render_json(void **state)
{
    (void)state;
    const char *other = "{\"kind\":\"Job\"}";
    json_t *obj = gt_api_render_json(other, strlen(other), 42);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion")),
        "42");
    json_decref(obj);
    assert_null(gt_api_render_json("[1]", 3, 1));
    assert_null(gt_api_render_json("{", 1, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_metadata_first),
        cmocka_unit_test(test_splice),
        cmocka_unit_test(test_render_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
