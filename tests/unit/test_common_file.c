/*
 * Bounded whole-file reads (gt_file_read, gt_file_read_fd): contents exact
 * (NUL bytes too) across many reads, the bound inclusive, one byte over it
 * refused with GT_ETOOLARGE, endless input cut off at the bound, and each
 * failure's code and message.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"

struct dir {
    char path[64];
};

static int dir_setup(void **state)
{
    struct dir *d = gt_xcalloc(1, sizeof(*d));
    snprintf(d->path, sizeof(d->path), "/tmp/gt-file-XXXXXX");
    assert_non_null(mkdtemp(d->path));
    *state = d;
    return 0;
}

static int dir_teardown(void **state)
{
    struct dir *d = *state;
    DIR *dh = opendir(d->path);
    assert_non_null(dh);
    struct dirent *de;
    while ((de = readdir(dh))) {
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            assert_int_equal(unlinkat(dirfd(dh), de->d_name, 0), 0);
        }
    }
    closedir(dh);
    assert_int_equal(rmdir(d->path), 0);
    free(d);
    return 0;
}

/* Write len bytes of data to d/name; returns the path (caller frees). */
static char *put(const struct dir *d, const char *name, const void *data, size_t len)
{
    char *p = gt_xasprintf("%s/%s", d->path, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    return p;
}

static void test_reads_whole_file(void **state)
{
    const struct dir *d = *state;
    /* 1 MiB and 3 bytes with NULs in it: many reads and several moves */
    size_t n = (1u << 20) + 3;
    unsigned char *want = gt_xmalloc(n);
    for (size_t i = 0; i < n; i++) {
        want[i] = (unsigned char)(i * 7 % 251);
    }
    char *p = put(d, "big", want, n);
    char *out = NULL;
    size_t len = 0;
    struct gt_err err = {0};
    assert_int_equal(gt_file_read(p, n, &out, &len, &err), 0);
    assert_int_equal(err.code, 0);
    assert_int_equal(len, n);
    assert_memory_equal(out, want, n);
    assert_int_equal(out[n], '\0');
    free(out);
    free(want);
    free(p);
}

static void test_empty_file_is_empty_string(void **state)
{
    const struct dir *d = *state;
    char *p = put(d, "empty", "", 0);
    char *out = NULL;
    size_t len = 99;
    assert_int_equal(gt_file_read(p, 64, &out, &len, NULL), 0);
    assert_non_null(out);
    assert_string_equal(out, "");
    assert_int_equal(len, 0);
    free(out);
    free(p);
}

static void test_bound_inclusive(void **state)
{
    const struct dir *d = *state;
    static const size_t sizes[] = {0, 1, 63, 64, 4093, 4094, 4095, 4096, 4097, 10000};
    for (size_t s = 0; s < GT_ARRAY_LEN(sizes); s++) {
        size_t n = sizes[s];
        char *data = gt_xmalloc(n + 1);
        memset(data, 'a', n + 1);
        char *p = put(d, "sized", data, n);
        char *out = NULL;
        size_t len = 0;
        struct gt_err err = {0};
        /* exactly at the bound: read */
        assert_int_equal(gt_file_read(p, n, &out, &len, &err), 0);
        assert_int_equal(len, n);
        assert_memory_equal(out, data, n);
        free(out);
        if (n > 0) {
            /* one byte over: refused, nothing handed out */
            out = (char *)1;
            len = 7;
            assert_int_equal(gt_file_read(p, n - 1, &out, &len, &err), GT_ETOOLARGE);
            assert_int_equal(err.code, GT_ETOOLARGE);
            assert_null(out);
            assert_int_equal(len, 0);
            char *want = gt_xasprintf("%s is over %zu bytes", p, n - 1);
            assert_string_equal(err.msg, want);
            free(want);
        }
        free(p);
        free(data);
    }
}

static void test_bound_in_mib(void **state)
{
    const struct dir *d = *state;
    size_t n = (2u << 20) + 1;
    char *data = gt_xcalloc(1, n);
    char *p = put(d, "over", data, n);
    char *out = NULL;
    size_t len = 0;
    struct gt_err err = {0};
    assert_int_equal(gt_file_read(p, 2u << 20, &out, &len, &err), GT_ETOOLARGE);
    char *want = gt_xasprintf("%s is over 2 MiB", p);
    assert_string_equal(err.msg, want);
    free(want);
    free(p);
    free(data);
}

static void test_endless_input_stops_at_bound(void **state)
{
    (void)state;
    int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    char *out = NULL;
    size_t len = 0;
    struct gt_err err = {0};
    assert_int_equal(gt_file_read_fd(fd, "standard input", 100000, &out, &len, &err), GT_ETOOLARGE);
    assert_string_equal(err.msg, "standard input is over 100000 bytes");
    assert_null(out);
    close(fd);

    /* it reads one byte past the bound, no more */

    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(write(p[1], "0123456789", 10), 10);
    gt_err_clear(&err);
    assert_int_equal(gt_file_read_fd(p[0], "-", 5, &out, &len, &err), GT_ETOOLARGE);
    char rest[16];
    assert_int_equal(read(p[0], rest, sizeof(rest)), 4); /* 6 of 10 were taken */
    /* the same past the first 4 KiB: 5001 of 10000 bytes taken */
    char *big = gt_xcalloc(1, 10000);
    assert_int_equal(write(p[1], big, 10000), 10000);
    gt_err_clear(&err);
    assert_int_equal(gt_file_read_fd(p[0], "-", 5000, &out, &len, &err), GT_ETOOLARGE);
    assert_int_equal(read(p[0], big, 10000), 10000 - 5001);
    free(big);
    close(p[0]);
    close(p[1]);
}

static void test_fd_from_its_position(void **state)
{
    const struct dir *d = *state;
    char *p = put(d, "pos", "header\nbody\n", 12);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(lseek(fd, 7, SEEK_SET), 7);
    char *out = NULL;
    size_t len = 0;
    assert_int_equal(gt_file_read_fd(fd, p, 64, &out, &len, NULL), 0);
    assert_string_equal(out, "body\n");
    assert_int_equal(len, 5);
    /* left open: still usable */
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    close(fd);
    free(out);
    free(p);
}

static void test_errors_name_the_path(void **state)
{
    const struct dir *d = *state;
    char *missing = gt_xasprintf("%s/missing", d->path);
    char *out = (char *)1;
    size_t len = 3;
    struct gt_err err = {0};
    assert_int_equal(gt_file_read(missing, 64, &out, &len, &err), -ENOENT);
    assert_int_equal(err.code, -ENOENT);
    assert_null(out);
    assert_int_equal(len, 0);
    char *want = gt_xasprintf("cannot open %s: No such file or directory", missing);
    assert_string_equal(err.msg, want);
    free(want);
    free(missing);

    /* a directory opens but cannot be read */
    gt_err_clear(&err);
    assert_int_equal(gt_file_read(d->path, 64, &out, &len, &err), -EISDIR);
    want = gt_xasprintf("cannot read %s: Is a directory", d->path);
    assert_string_equal(err.msg, want);
    free(want);
    assert_null(out);

    /* err is optional */
    assert_int_equal(gt_file_read("/nonexistent/gt-file", 64, &out, &len, NULL), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reads_whole_file, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(test_empty_file_is_empty_string, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(test_bound_inclusive, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(test_bound_in_mib, dir_setup, dir_teardown),
        cmocka_unit_test(test_endless_input_stops_at_bound),
        cmocka_unit_test_setup_teardown(test_fd_from_its_position, dir_setup, dir_teardown),
        cmocka_unit_test_setup_teardown(test_errors_name_the_path, dir_setup, dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
