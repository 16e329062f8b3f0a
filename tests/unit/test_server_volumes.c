/*
 * Unit tests for the storage quota arithmetic of Volumes (volquota.c):
 * the project's hard cap, the department's limit defaulting to its quota,
 * exact fits, overflow, and the messages naming the quota.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/server.h"

#define MI (INT64_C(1) << 20)

static struct gt_storage_quota quota(int64_t dept_used, int64_t dept_quota, int64_t dept_limit,
                                     int64_t proj_used, int64_t proj_hard)
{
    return (struct gt_storage_quota){.department = "research",
                                     .dept_allocated_bytes = dept_used,
                                     .dept_quota_bytes = dept_quota,
                                     .dept_limit_bytes = dept_limit,
                                     .project = "vision",
                                     .project_allocated_bytes = proj_used,
                                     .project_hard_bytes = proj_hard};
}

static void test_fits_up_to_the_limit(void **state)
{
    (void)state;
    struct gt_err err = {0};
    struct gt_storage_quota q = quota(64 * MI, 100 * MI, 128 * MI, 0, -1);
    assert_int_equal(gt_storage_quota_check(&q, 64 * MI, &err), 0); /* exactly the limit */
    assert_int_equal(gt_storage_quota_check(&q, 64 * MI + 1, &err), GT_EFORBIDDEN);
    assert_string_equal(err.msg, "spec.capacity.storage: 67108865 exceeds the storage quota of "
                                 "department \"research\" (quota 100Mi, limit 128Mi, 64Mi "
                                 "allocated to its volumes and models)");
}

static void test_project_hard_first(void **state)
{
    (void)state;
    struct gt_err err = {0};
    struct gt_storage_quota q = quota(0, 1024 * MI, 1024 * MI, 90 * MI, 100 * MI);
    assert_int_equal(gt_storage_quota_check(&q, 10 * MI, &err), 0);
    assert_int_equal(gt_storage_quota_check(&q, 11 * MI, &err), GT_EFORBIDDEN);
    assert_string_equal(err.msg, "spec.capacity.storage: 11Mi exceeds the storage quota of project "
                                 "\"vision\" (spec.hard.storage 100Mi, 90Mi allocated to its "
                                 "volumes and models)");
    /* both over: the project's cap is named */
    q.dept_limit_bytes = 0;
    gt_err_clear(&err);
    assert_int_equal(gt_storage_quota_check(&q, 11 * MI, &err), GT_EFORBIDDEN);
    assert_non_null(strstr(err.msg, "project \"vision\""));
}

static void test_no_storage_quota_refuses(void **state)
{
    (void)state;
    struct gt_err err = {0};
    struct gt_storage_quota q = quota(0, 0, 0, 0, -1);
    assert_int_equal(gt_storage_quota_check(&q, 1, &err), GT_EFORBIDDEN);
    assert_non_null(strstr(err.msg, "(quota 0, limit 0, 0 allocated"));
}

static void test_overflow_never_fits(void **state)
{
    (void)state;
    struct gt_err err = {0};
    struct gt_storage_quota q = quota(INT64_MAX - 1, INT64_MAX, INT64_MAX, 0, -1);
    assert_int_equal(gt_storage_quota_check(&q, 1, &err), 0);
    assert_int_equal(gt_storage_quota_check(&q, 2, &err), GT_EFORBIDDEN);
    q = quota(0, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX);
    assert_int_equal(gt_storage_quota_check(&q, INT64_MAX, &err), GT_EFORBIDDEN);
}

static void test_limits_default_to_quota(void **state)
{
    (void)state;
    struct gt_api_res quota_res = {.set = GT_RESF_STORAGE | GT_RESF_CPU};
    quota_res.v.v[GT_RES_STORAGE] = 100 * MI;
    struct gt_api_res limit_res = {.set = GT_RESF_CPU};
    int64_t q, l;
    gt_storage_limits(&quota_res, &limit_res, &q, &l);
    assert_int_equal(q, 100 * MI);
    assert_int_equal(l, 100 * MI); /* storage not named in the limit */
    limit_res.set |= GT_RESF_STORAGE;
    limit_res.v.v[GT_RES_STORAGE] = 200 * MI;
    gt_storage_limits(&quota_res, &limit_res, &q, &l);
    assert_int_equal(l, 200 * MI);
    gt_storage_limits(NULL, NULL, &q, &l);
    assert_int_equal(q, 0);
    assert_int_equal(l, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fits_up_to_the_limit),     cmocka_unit_test(test_project_hard_first),
        cmocka_unit_test(test_no_storage_quota_refuses), cmocka_unit_test(test_overflow_never_fits),
        cmocka_unit_test(test_limits_default_to_quota),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
