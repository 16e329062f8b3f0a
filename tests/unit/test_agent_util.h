/*
 * Helpers shared by the agent's unit tests (test_agent_*.c): temporary
 * directories removed recursively, running a program and waiting for it,
 * finding build outputs next to the test binary, and polling with a
 * deadline. Header-only so each test binary stays one source file.
 */
#ifndef GT_TEST_AGENT_UTIL_H
#define GT_TEST_AGENT_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/shim_log.h"
#include "common/common.h"

extern char **environ;

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

/* rm -rf path (missing is fine). */
static inline void test_rm_rf(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A new directory under /tmp, mode 0755 so unprivileged tasks can enter
 * it. Caller frees the returned path and removes the directory. */
static inline char *test_tmpdir(const char *tag)
{
    char *path = gt_xasprintf("/tmp/gt-%s-XXXXXX", tag);
    if (!mkdtemp(path) || chmod(path, 0755) < 0) {
        fprintf(stderr, "mkdtemp %s: %s\n", path, strerror(errno));
        abort();
    }
    return path;
}

/* Run argv (searched in PATH) and return its wait status, or -1. */
static inline int test_run(char *const argv[])
{
    pid_t pid;
    fflush(NULL);
    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0) {
        return -1;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return st;
}

/* Start gantry-shim (next to this test binary) on state_dir as gantlet
 * does: a session leader with a status pipe on fd 3. Returns 0 once it
 * reported (the task started or its failure is recorded; the shim, this
 * process's child, goes on supervising), else the wait status of the shim,
 * which ended without reporting. */
static inline int test_shim_start(const char *state_dir);

/* Path of a file next to this test binary (the build directory). Caller frees. */
static inline char *test_build_path(const char *name)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        abort();
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    *slash = '\0';
    return gt_xasprintf("%s/%s", self, name);
}

static inline int test_shim_start(const char *state_dir)
{
    char *shim = test_build_path("gantry-shim");
    char *argv[] = {
        shim, (char *)"--status-fd", (char *)"3", (char *)"--state-dir", (char *)state_dir, NULL};
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        abort();
    }
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 3);
    pid_t pid;
    fflush(NULL);
    int rc = posix_spawn(&pid, shim, &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    free(shim);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        return -1;
    }
    char c;
    ssize_t n;
    while ((n = read(p[0], &c, 1)) < 0 && errno == EINTR) {
    }
    close(p[0]);
    if (n == 1) {
        return 0;
    }
    int st = -1;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return st;
}

static inline void test_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Poll until path exists, up to timeout_ms. */
static inline bool test_wait_file(const char *path, long timeout_ms)
{
    int64_t end = gt_mono_ms() + timeout_ms;
    struct stat st;
    while (stat(path, &st) < 0) {
        if (gt_mono_ms() > end) {
            return false;
        }
        test_sleep_ms(10);
    }
    return true;
}

/* Contents of dir/name as a new string (caller frees), or NULL. */
static inline char *test_read_file(const char *dir, const char *name)
{
    char *path = gt_xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "re");
    free(path);
    if (!f) {
        return NULL;
    }
    struct gt_buf b;
    gt_buf_init(&b);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        gt_buf_append(&b, chunk, n);
    }
    fclose(f);
    gt_buf_append(&b, "", 0);
    char *text = gt_buf_take(&b);
    gt_buf_fini(&b);
    return text ? text : gt_xstrdup("");
}

/* A task log's raw text (CRI entries, or plain) as the task wrote it (a
 * new string, caller frees; raw is borrowed, NULL gives NULL). */
static inline char *test_log_text(const char *raw)
{
    if (!raw) {
        return NULL;
    }
    struct gt_buf b;
    gt_buf_init(&b);
    struct gt_crilog_view v = {0};
    bool mid = false;
    for (const char *p = raw; *p;) {
        size_t n = strcspn(p, "\n");
        gt_crilog_render(p, n, &v, &mid, &b);
        p += n + (p[n] == '\n');
    }
    gt_buf_append(&b, "", 0);
    char *text = gt_buf_take(&b);
    return text ? text : gt_xstrdup("");
}

/* Write text to dir/name (replacing it). */
static inline void test_write_file(const char *dir, const char *name, const char *text)
{
    char *path = gt_xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "we");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "write %s failed\n", path);
        abort();
    }
    free(path);
}

/* Whether a process exists (and is not a zombie). */
static inline bool test_pid_alive(pid_t pid)
{
    char path[64], state = 0;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f) {
        return false;
    }
    int r = fscanf(f, "%*d (%*[^)]) %c", &state);
    fclose(f);
    return r == 1 && state != 'Z';
}

#endif
