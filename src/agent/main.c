/*
 * gantlet: gantry's node agent. Parses the configuration table and runs
 * the daemon (daemon.c); see docs/agent.md for what it does with gantryd.
 */
#include <stdio.h>

#include "agent/gantlet.h"

extern char **environ;

int main(int argc, char **argv)
{
    struct gt_gantlet_config cfg;
    struct gt_err err = {0};
    bool help = false;
    if (gt_gantlet_config_parse(&cfg, argc, argv, environ, &help, &err) < 0) {
        fprintf(stderr, "gantlet: %s\n", err.msg);
        gt_gantlet_config_fini(&cfg);
        return 2;
    }
    if (help) {
        gt_gantlet_config_usage(stdout);
        gt_gantlet_config_fini(&cfg);
        return 0;
    }
    int rc = cfg.hollow > 0 ? gt_hollow_run(&cfg) : gt_gantlet_run(&cfg);
    gt_gantlet_config_fini(&cfg);
    return rc;
}
