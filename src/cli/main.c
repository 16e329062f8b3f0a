/* gantry: the command-line client. Everything lives in the gt_cli library
 * (commands.c dispatches) so the unit tests can drive it. */
#include <stdio.h>

#include "cli/cli_int.h"

int main(int argc, char **argv)
{
    return gt_cli_main(argc, argv, stdout, stderr);
}
