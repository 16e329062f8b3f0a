/*
 * Resource quantities: a table of accepted inputs with their exact canonical
 * values, a table of rejected inputs with the reason, and formatting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/common.h"

struct ok_case {
    const char *in;
    enum gt_qty_unit unit;
    int64_t want;
};

static const struct ok_case accepted[] = {
    {"0", GT_QTY_UNIT, 0},
    {"1", GT_QTY_UNIT, 1},
    {"+5", GT_QTY_UNIT, 5},
    {"007", GT_QTY_UNIT, 7},
    {"500m", GT_QTY_MILLI, 500},
    {"0.5", GT_QTY_MILLI, 500},
    {".5", GT_QTY_MILLI, 500},
    {"1.", GT_QTY_MILLI, 1000},
    {"1.5", GT_QTY_MILLI, 1500},
    {"2", GT_QTY_MILLI, 2000},
    {"1m", GT_QTY_MILLI, 1},
    {"1000000n", GT_QTY_MILLI, 1},
    {"1000u", GT_QTY_MILLI, 1},
    {"16Gi", GT_QTY_UNIT, 17179869184LL},
    {"1Ki", GT_QTY_UNIT, 1024},
    {"1.5Ki", GT_QTY_UNIT, 1536},
    {"0.5Mi", GT_QTY_UNIT, 524288},
    {"1k", GT_QTY_UNIT, 1000},
    {"1M", GT_QTY_UNIT, 1000000},
    {"1G", GT_QTY_UNIT, 1000000000},
    {"1T", GT_QTY_UNIT, 1000000000000LL},
    {"1P", GT_QTY_UNIT, 1000000000000000LL},
    {"1E", GT_QTY_UNIT, 1000000000000000000LL},
    {"2e3", GT_QTY_UNIT, 2000},
    {"2E3", GT_QTY_UNIT, 2000},
    {"1e+3", GT_QTY_UNIT, 1000},
    {"1E-3", GT_QTY_MILLI, 1},
    {"1e18", GT_QTY_UNIT, 1000000000000000000LL},
    {"1.5e3", GT_QTY_UNIT, 1500},
    {"9223372036854775807", GT_QTY_UNIT, INT64_MAX},
    {"9223372036854775.807", GT_QTY_MILLI, INT64_MAX},
    {"7Ei", GT_QTY_UNIT, 7LL << 60},
    {"0Ei", GT_QTY_UNIT, 0},
    {"0e999", GT_QTY_UNIT, 0},
    {"100Mi", GT_QTY_UNIT, 104857600},
    {"0.1", GT_QTY_MILLI, 100},
    {"12.000", GT_QTY_UNIT, 12},
    /* 5^30 * 10^-24 Ei is integral although it has 21 significant digits */
    {"0.000931322574615478515625Ei", GT_QTY_UNIT, 15625LL << 36},
};

struct bad_case {
    const char *in;
    enum gt_qty_unit unit;
    const char *why; /* substring of the message */
};

static const struct bad_case rejected[] = {
    {"", GT_QTY_UNIT, "empty"},
    {"-1", GT_QTY_UNIT, "negative"},
    {"-0", GT_QTY_UNIT, "negative"},
    {"-500m", GT_QTY_MILLI, "negative"},
    {"abc", GT_QTY_UNIT, "not a number"},
    {"+", GT_QTY_UNIT, "not a number"},
    {".", GT_QTY_UNIT, "not a number"},
    {"1.5", GT_QTY_UNIT, "fractional"},
    {"0.5m", GT_QTY_MILLI, "fractional"},
    {"1n", GT_QTY_UNIT, "fractional"},
    {"1x", GT_QTY_UNIT, "suffix"},
    {"1 ", GT_QTY_UNIT, "suffix"},
    {" 1", GT_QTY_UNIT, "not a number"},
    {"1Gi ", GT_QTY_UNIT, "suffix"},
    {"1.2.3", GT_QTY_UNIT, "suffix"},
    {"1e", GT_QTY_UNIT, "suffix"},
    {"1e3x", GT_QTY_UNIT, "exponent"},
    {"1e+", GT_QTY_UNIT, "exponent"},
    {"1e99999999999", GT_QTY_UNIT, "exponent"},
    {"1e-99999999999", GT_QTY_UNIT, "exponent"},
    {"1e400", GT_QTY_UNIT, "too large"},
    {"9223372036854775808", GT_QTY_UNIT, "too large"},
    {"9223372036854775807", GT_QTY_MILLI, "too large"},
    {"8Ei", GT_QTY_UNIT, "too large"},
    {"1e19", GT_QTY_UNIT, "too large"},
    {"1e18", GT_QTY_MILLI, "too large"},
    {"10E", GT_QTY_UNIT, "too large"},
    {"99999999999999999999999999999999999999", GT_QTY_UNIT, "too large"},
    {"123456789012345678901234567890123456789", GT_QTY_UNIT, "significant"},
    {"1Gii", GT_QTY_UNIT, "suffix"},
    {"1gi", GT_QTY_UNIT, "suffix"},
    {"0x10", GT_QTY_UNIT, "suffix"},
    {"1,5", GT_QTY_UNIT, "suffix"},
    {"1e1.5", GT_QTY_UNIT, "exponent"},
    {"++1", GT_QTY_UNIT, "not a number"},
    {"1E-3", GT_QTY_UNIT, "fractional"},
    {"12.500", GT_QTY_UNIT, "fractional"},
    {"0.000000000000000000000000000000000000000000000000001", GT_QTY_UNIT, "fractional"},
};

static void test_accepted(void **state)
{
    (void)state;
    for (size_t i = 0; i < GT_ARRAY_LEN(accepted); i++) {
        const struct ok_case *c = &accepted[i];
        struct gt_err err = {0};
        int64_t v = -42;
        int rc = gt_quantity_parse(c->in, c->unit, &v, &err);
        if (rc != 0 || v != c->want) {
            fail_msg("\"%s\": rc=%d v=%lld want %lld (%s)", c->in, rc, (long long)v,
                     (long long)c->want, err.msg);
        }
    }
}

static void test_rejected(void **state)
{
    (void)state;
    for (size_t i = 0; i < GT_ARRAY_LEN(rejected); i++) {
        const struct bad_case *c = &rejected[i];
        struct gt_err err = {0};
        int64_t v = 42;
        int rc = gt_quantity_parse(c->in, c->unit, &v, &err);
        if (rc != GT_EINVAL || err.code != GT_EINVAL || !strstr(err.msg, c->why) || v != 42) {
            fail_msg("\"%s\": rc=%d msg=\"%s\" want \"%s\"", c->in, rc, err.msg, c->why);
        }
    }
}

static void test_too_long(void **state)
{
    (void)state;
    char buf[300];
    memset(buf, '0', sizeof(buf) - 1);
    buf[sizeof(buf) - 1] = '\0';
    struct gt_err err = {0};
    int64_t v;
    assert_int_equal(gt_quantity_parse(buf, GT_QTY_UNIT, &v, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "too long"));
}

static void test_format(void **state)
{
    (void)state;
    char buf[32];
    assert_string_equal(gt_quantity_format(1500, GT_QTY_MILLI, 0, buf, sizeof(buf)), "1500m");
    assert_string_equal(gt_quantity_format(2000, GT_QTY_MILLI, 0, buf, sizeof(buf)), "2");
    assert_string_equal(gt_quantity_format(0, GT_QTY_MILLI, 0, buf, sizeof(buf)), "0");
    assert_string_equal(gt_quantity_format(1, GT_QTY_MILLI, 0, buf, sizeof(buf)), "1m");
    assert_string_equal(gt_quantity_format(17179869184LL, GT_QTY_UNIT, 1, buf, sizeof(buf)),
                        "16Gi");
    assert_string_equal(gt_quantity_format(1536, GT_QTY_UNIT, 1, buf, sizeof(buf)), "1536");
    assert_string_equal(gt_quantity_format(1024, GT_QTY_UNIT, 1, buf, sizeof(buf)), "1Ki");
    assert_string_equal(gt_quantity_format(1LL << 60, GT_QTY_UNIT, 1, buf, sizeof(buf)), "1Ei");
    assert_string_equal(gt_quantity_format(7LL << 60, GT_QTY_UNIT, 1, buf, sizeof(buf)), "7Ei");
    assert_string_equal(gt_quantity_format(1000, GT_QTY_UNIT, 1, buf, sizeof(buf)), "1000");
    assert_string_equal(gt_quantity_format(0, GT_QTY_UNIT, 1, buf, sizeof(buf)), "0");
    assert_string_equal(gt_quantity_format(17179869184LL, GT_QTY_UNIT, 0, buf, sizeof(buf)),
                        "17179869184");
    assert_string_equal(gt_quantity_format(INT64_MAX, GT_QTY_MILLI, 0, buf, sizeof(buf)),
                        "9223372036854775807m");
}

/* Every formatted value parses back to itself. */
static void test_format_round_trip(void **state)
{
    (void)state;
    const int64_t values[] = {0,    1,       999,       1000,      1001,          1024,
                              1536, 1048576, 3LL << 40, INT64_MAX, INT64_MAX - 1, 1LL << 62};
    for (size_t i = 0; i < GT_ARRAY_LEN(values); i++) {
        for (int binary = 0; binary <= 1; binary++) {
            for (int u = GT_QTY_MILLI; u <= GT_QTY_UNIT; u++) {
                char buf[32];
                int64_t back = -1;
                gt_quantity_format(values[i], (enum gt_qty_unit)u, binary, buf, sizeof(buf));
                assert_int_equal(gt_quantity_parse(buf, (enum gt_qty_unit)u, &back, NULL), 0);
                assert_int_equal(back, values[i]);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepted),          cmocka_unit_test(test_rejected),
        cmocka_unit_test(test_too_long),          cmocka_unit_test(test_format),
        cmocka_unit_test(test_format_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
