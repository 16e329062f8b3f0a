/*
 * What identifies a task's run (taskident.c): the boot id file's first
 * word, and a process's start time from /proc/PID/stat field 22 — the
 * same as proc(5) says for this process, stable while it lives, different
 * for a later process, and "gone" for a zombie and for a pid nobody has.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/agent_int.h"

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "we");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_boot_id_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/gt-bootid-XXXXXX", path[64], id[40];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/boot_id", dir);
    struct gt_err err = {0};

    write_file(path, "0f3c5b8e-1111-4a2b-9c3d-000000000001\n");
    assert_int_equal(gt_boot_id_read(path, id, sizeof(id), &err), 0);
    assert_string_equal(id, "0f3c5b8e-1111-4a2b-9c3d-000000000001");

    write_file(path, "\n");
    assert_int_equal(gt_boot_id_read(path, id, sizeof(id), &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "boot id"));

    /* longer than the buffer: refused, not cut */
    write_file(path, "0123456789012345678901234567890123456789-too-long\n");
    assert_int_equal(gt_boot_id_read(path, id, sizeof(id), &err), GT_EINVAL);

    unlink(path);
    assert_true(gt_boot_id_read(path, id, sizeof(id), &err) < 0);
    rmdir(dir);

    /* the kernel's own */
    assert_int_equal(gt_boot_id_read("/proc/sys/kernel/random/boot_id", id, sizeof(id), &err), 0);
    assert_int_equal(strlen(id), 36);
}

static uint64_t ticks_of(pid_t pid)
{
    uint64_t t = 0;
    assert_int_equal(gt_proc_start_ticks(pid, &t), 0);
    return t;
}

static void test_start_ticks(void **state)
{
    (void)state;
    /* this process: field 22 of its stat, read the plain way */
    FILE *f = fopen("/proc/self/stat", "re");
    char buf[4096];
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    const char *p = strrchr(buf, ')') + 2;
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ') + 1;
    }
    assert_int_equal(ticks_of(getpid()), strtoull(p, NULL, 10));
    assert_int_equal(ticks_of(getpid()), ticks_of(getpid()));

    /* a child: alive, then a zombie (gone), then reaped (no such pid) */
    pid_t c = fork();
    if (c == 0) {
        pause();
        _exit(0);
    }
    uint64_t t = ticks_of(c);
    assert_true(t >= ticks_of(getpid()));
    kill(c, SIGKILL);
    siginfo_t si;
    assert_int_equal(waitid(P_PID, (id_t)c, &si, WEXITED | WNOWAIT), 0);
    uint64_t z = 0;
    assert_int_equal(gt_proc_start_ticks(c, &z), -ESRCH);
    assert_int_equal(waitpid(c, NULL, 0), c);
    assert_int_equal(gt_proc_start_ticks(c, &z), -ESRCH);
    assert_int_equal(gt_proc_start_ticks(0, &z), -ESRCH);
    assert_int_equal(gt_proc_start_ticks(-1, &z), -ESRCH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_boot_id_file),
        cmocka_unit_test(test_start_ticks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
