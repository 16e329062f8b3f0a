/*
 * Growable arrays (gt_vec_grow and the GT_VEC macros): the growth rule
 * (first capacity, then doubling; no reallocation while there is room),
 * element order kept across moves, reserving ahead, freeing, and the
 * overflow checks, which abort as running out of memory does.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"

struct ints GT_VEC(int);

struct pair {
    int64_t a;
    char tag[24];
};

static void test_push_grows_by_the_rule(void **state)
{
    (void)state;
    struct ints v = {0};
    assert_null(v.v);
    /* capacity after each push: 4 for the first four, then 8, then 16 */
    static const size_t want_cap[] = {4, 4, 4, 4, 8, 8, 8, 8, 16};
    for (size_t i = 0; i < GT_ARRAY_LEN(want_cap); i++) {
        *GT_VEC_PUSH(&v, 4) = (int)(i * 10);
        assert_int_equal(v.n, i + 1);
        assert_int_equal(v.cap, want_cap[i]);
    }
    for (size_t i = 0; i < v.n; i++) {
        assert_int_equal(v.v[i], (int)(i * 10));
    }
    GT_VEC_FREE(&v);
    assert_null(v.v);
    assert_int_equal(v.n, 0);
    assert_int_equal(v.cap, 0);
    GT_VEC_FREE(&v); /* freeing an empty vector is fine */
}

static void test_no_move_while_room(void **state)
{
    (void)state;
    struct ints v = {0};
    *GT_VEC_PUSH(&v, 16) = 1;
    const int *first = v.v;
    for (int i = 2; i <= 16; i++) {
        *GT_VEC_PUSH(&v, 16) = i;
        assert_ptr_equal(v.v, first);
    }
    assert_int_equal(v.cap, 16);
    *GT_VEC_PUSH(&v, 16) = 17;
    assert_int_equal(v.cap, 32);
    for (int i = 0; i < 17; i++) {
        assert_int_equal(v.v[i], i + 1);
    }
    GT_VEC_FREE(&v);
}

static void test_reserve_separate_fields(void **state)
{
    (void)state;
    struct pair *arr = NULL;
    size_t n = 0, cap = 0;
    size_t none = n;
    GT_VEC_RESERVE(arr, cap, none, 8);
    assert_null(arr); /* nothing needed, nothing allocated */
    assert_int_equal(cap, 0);
    GT_VEC_RESERVE(arr, cap, 1, 8);
    assert_non_null(arr);
    assert_int_equal(cap, 8);
    /* reserving far ahead doubles from the first capacity until it fits */
    GT_VEC_RESERVE(arr, cap, 33, 8);
    assert_int_equal(cap, 64);
    for (; n < 64; n++) {
        arr[n].a = (int64_t)n << 32;
        snprintf(arr[n].tag, sizeof(arr[n].tag), "pair-%zu", n);
    }
    struct pair *before = arr;
    GT_VEC_RESERVE(arr, cap, 64, 8);
    assert_ptr_equal(arr, before);
    GT_VEC_RESERVE(arr, cap, 65, 8);
    assert_int_equal(cap, 128);
    for (size_t i = 0; i < n; i++) {
        char want[24];
        snprintf(want, sizeof(want), "pair-%zu", i);
        assert_int_equal(arr[i].a, (int64_t)i << 32);
        assert_string_equal(arr[i].tag, want);
    }
    free(arr);
}

static void test_grow_with_row_elements(void **state)
{
    (void)state;
    /* An element may be a whole row: 3 pointers a row, capacity in rows. */
    const char **cells = NULL;
    size_t cap_rows = 0;
    cells = gt_vec_grow(cells, &cap_rows, 1, 2, 3 * sizeof(*cells));
    assert_int_equal(cap_rows, 2);
    for (size_t i = 0; i < 6; i++) {
        cells[i] = "x";
    }
    cells = gt_vec_grow(cells, &cap_rows, 3, 2, 3 * sizeof(*cells));
    assert_int_equal(cap_rows, 4);
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(cells[i], "x");
    }
    free(cells);
}

/* Run fn in a child; true when it died of SIGABRT. */
static bool aborts(void (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* the abort message on stderr is expected: keep it out of the log */
        FILE *null_err = freopen("/dev/null", "w", stderr);
        (void)null_err;
        fn();
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
}

static void grow_count_past_size_max(void)
{
    char *p = NULL;
    size_t cap = 0;
    p = gt_vec_grow(p, &cap, SIZE_MAX, 16, 1);
    free(p);
}

static void grow_bytes_past_size_max(void)
{
    int64_t *p = NULL;
    size_t cap = 0;
    p = gt_vec_grow(p, &cap, SIZE_MAX / 4, 16, sizeof(*p));
    free(p);
}

static void grow_fits(void)
{
    char *p = NULL;
    size_t cap = 0;
    p = gt_vec_grow(p, &cap, 100, 16, 1);
    free(p);
}

static void test_overflow_aborts(void **state)
{
    (void)state;
    assert_true(aborts(grow_count_past_size_max));
    assert_true(aborts(grow_bytes_past_size_max));
    assert_false(aborts(grow_fits));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_grows_by_the_rule),
        cmocka_unit_test(test_no_move_while_room),
        cmocka_unit_test(test_reserve_separate_fields),
        cmocka_unit_test(test_grow_with_row_elements),
        cmocka_unit_test(test_overflow_aborts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
