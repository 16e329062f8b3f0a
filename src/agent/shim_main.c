/*
 * gantry-shim: the per-task supervisor the agent starts as
 * `gantry-shim --state-dir DIR`. Everything it does is in shim.c; see
 * shim.h for the state directory it works from.
 */
#include <stdio.h>
#include <string.h>

#include "agent/shim.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: gantry-shim --state-dir DIR\n"
               "Runs the task described by DIR/spec.json and records its exit in "
               "DIR/exit.json.\n");
}

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc != 3 || strcmp(argv[1], "--state-dir") != 0 || argv[2][0] == '\0') {
        usage(stderr);
        return 2;
    }
    return gt_shim_main(argv[2]);
}
