/*
 * gantryd: parse the configuration (flags, GANTRYD_* environment, defaults;
 * see config.c's table) and run the server.
 */
#include <stdio.h>
#include <unistd.h>

#include "server/server.h"

extern char **environ;

int main(int argc, char **argv)
{
    struct gt_server_config cfg;
    struct gt_err err = {0};
    bool help = false;
    int rc = gt_server_config_parse(&cfg, argc, argv, environ, &help, &err);
    if (help) {
        gt_server_config_usage(stdout);
        gt_server_config_fini(&cfg);
        return 0;
    }
    if (rc) {
        fprintf(stderr, "gantryd: %s\n", err.msg);
        gt_server_config_fini(&cfg);
        return 2;
    }
    gt_log_set_level((enum gt_log_level)cfg.log_level);
    rc = gt_server_run(&cfg);
    gt_server_config_fini(&cfg);
    return rc;
}
