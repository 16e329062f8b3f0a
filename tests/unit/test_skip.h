/*
 * Skips that show. A unit test that cannot run on this machine (no root, no
 * cgroup controller, no v1 devices hierarchy) says so in its exit status
 * instead of passing: CTest treats GT_TEST_SKIP (77, Automake's and CTest's
 * SKIP_RETURN_CODE) as "not run", and scripts/run-tests counts it.
 *
 * A binary whose cases all skipped exits 77. Where only some cases skipped,
 * the binary passes (the cases that ran are real results) and prints the
 * line "gantry-test: K of N cases skipped", which scripts/run-tests adds up
 * from CTest's log. Header-only, so each test binary stays one source file;
 * include it after <cmocka.h>.
 */
#ifndef GT_TEST_SKIP_H
#define GT_TEST_SKIP_H

#include <stddef.h>
#include <stdio.h>

/* The exit status of a test binary that ran nothing (CTest SKIP_RETURN_CODE). */
#define GT_TEST_SKIP 77

/* Cases of this binary that called gt_test_skip. */
static size_t gt_test_n_skipped;

/* Skip the running case, saying why (a string literal); counted, then
 * cmocka's skip(), which does not return. */
#define gt_test_skip(why)                                                                          \
    do {                                                                                           \
        gt_test_n_skipped++;                                                                       \
        print_message("skipped: %s\n", why);                                                       \
        skip();                                                                                    \
    } while (0)

/* Exit the whole binary as skipped before running anything (main only). */
static inline int gt_test_skip_all(const char *why)
{
    printf("gantry-test: skipped: %s\n", why);
    return GT_TEST_SKIP;
}

/* Count n cases as skipped without running them (a group that needs what
 * this machine lacks), saying why. */
static inline void gt_test_skip_cases(size_t n, const char *why)
{
    gt_test_n_skipped += n;
    printf("skipped %zu cases: %s\n", n, why);
}

/* The exit status for cmocka's result failed (its count of failed cases)
 * over n_cases cases: 1 if any failed, else 77 when every case skipped, else
 * 0, printing the partial-skip line when some did. */
static inline int gt_test_status(int failed, size_t n_cases)
{
    if (failed != 0) {
        return 1;
    }
    if (gt_test_n_skipped > 0) {
        printf("gantry-test: %zu of %zu cases skipped\n", gt_test_n_skipped, n_cases);
        fflush(stdout);
    }
    return n_cases > 0 && gt_test_n_skipped == n_cases ? GT_TEST_SKIP : 0;
}

/* cmocka_run_group_tests_name, with the exit status of gt_test_status. */
#define gt_test_run(name, tests, setup, teardown)                                                  \
    gt_test_status(cmocka_run_group_tests_name(name, tests, setup, teardown),                      \
                   sizeof(tests) / sizeof((tests)[0]))

#endif
