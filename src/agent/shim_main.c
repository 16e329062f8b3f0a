/*
 * gantry-shim: the per-task supervisor the agent starts as
 * `gantry-shim --status-fd N --state-dir DIR`. Everything it does is in shim.c; see
 * shim.h for the state directory it works from.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/shim.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: gantry-shim --status-fd N --state-dir DIR\n"
               "Runs the task described by DIR/spec.json and records its exit in "
               "DIR/exit.json.\n"
               "The caller starts it as a session leader; it writes one byte on fd N once\n"
               "the task started (or its failure to start is recorded).\n"
               "(gantry-shim --prepare --spec-fd N --status-fd M is the task's own first step;\n"
               "gantry-shim --init PID FD its PID 1;\n"
               "gantry-shim --init-exec FD ARGV... an image task's PID 1.)\n");
}

/* "--prepare --spec-fd N --status-fd M": the task's preparer (shim.h). */
static int prepare(int argc, char **argv)
{
    if (argc != 6 || strcmp(argv[2], "--spec-fd") != 0 || strcmp(argv[4], "--status-fd") != 0) {
        usage(stderr);
        return 2;
    }
    char *end1, *end2;
    long spec_fd = strtol(argv[3], &end1, 10), status_fd = strtol(argv[5], &end2, 10);
    if (*end1 || *end2 || spec_fd < 3 || status_fd < 3 || spec_fd > INT_MAX ||
        status_fd > INT_MAX) {
        usage(stderr);
        return 2;
    }
    return gt_shim_prepare_main((int)spec_fd, (int)status_fd);
}

/* "--init PID FD": the task's PID 1 (shim.h). */
static int init(int argc, char **argv)
{
    char *end1 = NULL, *end2 = NULL;
    long pid = argc == 4 ? strtol(argv[2], &end1, 10) : 0;
    long fd = argc == 4 ? strtol(argv[3], &end2, 10) : 0;
    if (argc != 4 || *end1 || *end2 || pid < 2 || pid > INT_MAX || fd < 3 || fd > INT_MAX) {
        usage(stderr);
        return 2;
    }
    return gt_shim_init_main((pid_t)pid, (int)fd);
}

/* "--init-exec FD ARGV...": an image task's PID 1 (shim.h). */
static int init_exec(int argc, char **argv, char **env)
{
    char *end = NULL;
    long fd = argc >= 4 ? strtol(argv[2], &end, 10) : 0;
    if (argc < 4 || *end || end == argv[2] || fd < -1 || fd > INT_MAX) {
        usage(stderr);
        return 2;
    }
    return gt_shim_init_exec_main((int)fd, argv + 3, env);
}

int main(int argc, char **argv, char **env)
{
    if (argc >= 2 && strcmp(argv[1], "--prepare") == 0) {
        return prepare(argc, argv);
    }
    if (argc >= 2 && strcmp(argv[1], "--init") == 0) {
        return init(argc, argv);
    }
    if (argc >= 2 && strcmp(argv[1], "--init-exec") == 0) {
        return init_exec(argc, argv, env);
    }
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc != 5 || strcmp(argv[1], "--status-fd") != 0 || strcmp(argv[3], "--state-dir") != 0 ||
        argv[4][0] == '\0') {
        usage(stderr);
        return 2;
    }
    char *end;
    long status_fd = strtol(argv[2], &end, 10);
    if (*end || end == argv[2] || status_fd < 3 || status_fd > INT_MAX) {
        usage(stderr);
        return 2;
    }
    return gt_shim_main(argv[4], (int)status_fd);
}
