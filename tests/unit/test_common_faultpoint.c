/*
 * Named fault points (common/faultpoint.c): the spec syntax and its errors
 * (unknown names, actions and triggers refused, naming the entry, nothing
 * armed), nth firing exactly once on that hit, p= firing at about its rate,
 * and a crash point ending a child process with GT_FAULT_CRASH_STATUS.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/faultpoint.h"

static const char *const known[] = {"store-commit", "image-unpack", NULL};

static void test_nothing_armed(void **state)
{
    (void)state;
    struct gt_faults f;
    assert_int_equal(gt_faults_parse(&f, NULL, known, 7, NULL), 0);
    assert_int_equal(f.n, 0);
    assert_int_equal(gt_faults_parse(&f, "", known, 7, NULL), 0);
    assert_int_equal(gt_fault_hit(&f, "store-commit"), GT_FAULT_NONE);
    assert_int_equal(gt_fault_hit(NULL, "store-commit"), GT_FAULT_NONE);
}

static void test_nth_fires_once(void **state)
{
    (void)state;
    struct gt_faults f;
    assert_int_equal(
        gt_faults_parse(&f, "image-unpack=fail:nth=3,store-commit=fail", known, 7, NULL), 0);
    assert_int_equal(f.n, 2);
    for (int i = 1; i <= 6; i++) {
        assert_int_equal(gt_fault_hit(&f, "image-unpack"), i == 3 ? GT_FAULT_FAIL : GT_FAULT_NONE);
    }
    /* the default trigger is the first hit */
    assert_int_equal(gt_fault_hit(&f, "store-commit"), GT_FAULT_FAIL);
    assert_int_equal(gt_fault_hit(&f, "store-commit"), GT_FAULT_NONE);
    assert_int_equal(f.v[0].hits, 6);
    assert_int_equal(f.v[0].fired, 1);
}

static void test_probability(void **state)
{
    (void)state;
    struct gt_faults f;
    assert_int_equal(gt_faults_parse(&f, "store-commit=fail:p=0.25", known, 12345, NULL), 0);
    int fired = 0;
    for (int i = 0; i < 10000; i++) {
        fired += gt_fault_hit(&f, "store-commit") == GT_FAULT_FAIL;
    }
    assert_in_range(fired, 2200, 2800);
    assert_int_equal(gt_faults_parse(&f, "store-commit=fail:p=1", known, 1, NULL), 0);
    assert_int_equal(gt_fault_hit(&f, "store-commit"), GT_FAULT_FAIL);
    assert_int_equal(gt_fault_hit(&f, "store-commit"), GT_FAULT_FAIL);
}

static void test_bad_specs(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *want;
    } cases[] = {
        {"bogus=crash", "bogus: no such fault point"},
        {"store-commit", "want NAME=ACTION"},
        {"store-commit=explode", "store-commit: action must be crash or fail"},
        {"store-commit=fail:nth=0", "store-commit: nth must be an integer >= 1"},
        {"store-commit=fail:nth=2x", "nth must be"},
        {"store-commit=fail:p=0", "store-commit: p must be a number in (0, 1]"},
        {"store-commit=fail:p=1.5", "p must be"},
        {"store-commit=fail:every=2", "the trigger must be"},
        {"store-commit=fail,,image-unpack=fail", "an empty or overlong entry"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gt_faults f = {.n = 0};
        struct gt_err err = {0};
        assert_int_equal(gt_faults_parse(&f, cases[i].spec, known, 1, &err), GT_EINVAL);
        if (!strstr(err.msg, cases[i].want)) {
            fail_msg("%s: message \"%s\" lacks \"%s\"", cases[i].spec, err.msg, cases[i].want);
        }
        assert_int_equal(f.n, 0);
    }
}

static void test_crash_ends_the_process(void **state)
{
    (void)state;
    struct gt_faults f;
    assert_int_equal(gt_faults_parse(&f, "store-commit=crash:nth=2", known, 1, NULL), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        gt_fault_hit(&f, "store-commit");
        gt_fault_hit(&f, "store-commit");
        _exit(0); /* not reached */
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), GT_FAULT_CRASH_STATUS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_armed),
        cmocka_unit_test(test_nth_fires_once),
        cmocka_unit_test(test_probability),
        cmocka_unit_test(test_bad_specs),
        cmocka_unit_test(test_crash_ends_the_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
