/*
 * gt_secret_equal: equal only for the same bytes and length, whatever the
 * lengths (empty ones too).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "common/common.h"

static void test_secret_equal(void **state)
{
    (void)state;
    assert_true(gt_secret_equal("node-token", "node-token"));
    assert_true(gt_secret_equal("", ""));
    assert_false(gt_secret_equal("node-tokem", "node-token"));
    assert_false(gt_secret_equal("node-toke", "node-token"));
    assert_false(gt_secret_equal("node-tokenn", "node-token"));
    assert_false(gt_secret_equal("", "node-token"));
    assert_false(gt_secret_equal("node-token", ""));
    assert_false(gt_secret_equal("nn", "n"));
    assert_false(gt_secret_equal("n", "nn"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secret_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
