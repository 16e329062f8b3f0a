/*
 * What every command handler of `gantry` uses, below the command table:
 * the command context (the client made on first use, the default project
 * loaded once), error and usage reports, and option parsing.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>

#include "cli/cli_int.h"

int gt_cli_fail(struct gt_cli_ctx *ctx, const struct gt_err *err)
{
    fprintf(ctx->err, "error: %s\n", err->msg[0] ? err->msg : gt_errcode_str(err->code));
    return err->code < 0 ? err->code : GT_EINTERNAL;
}

int gt_cli_usage_error(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, const char *fmt,
                       ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", ctx->err);
    vfprintf(ctx->err, fmt, ap);
    va_end(ap);
    fprintf(ctx->err, "\nusage: gantry %s\n",
            cmd ? cmd->usage : "COMMAND [ARGS] (see gantry help)");
    return GT_EUSAGE;
}

int gt_cli_parse_opts(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                      char **argv, const char *shortopts, const struct option *longopts,
                      gt_cli_opt_fn fn, void *arg, int *first_positional)
{
    /* ':' first: report a missing argument as ':' rather than '?'. */
    char *opts = gt_xasprintf(":%s", shortopts);
    int rc = 0;
    optind = 0; /* GNU: full re-initialisation, as each command parses afresh */
    opterr = 0;
    int c;
    while (rc == 0 && (c = getopt_long(argc, argv, opts, longopts, NULL)) != -1) {
        if (c == '?') {
            rc = optopt ? gt_cli_usage_error(ctx, cmd, "unknown flag -%c", optopt)
                        : gt_cli_usage_error(ctx, cmd, "unknown flag %s", argv[optind - 1]);
        } else if (c == ':') {
            rc = gt_cli_usage_error(ctx, cmd, "flag %s needs a value", argv[optind - 1]);
        } else {
            rc = fn(c, optarg, arg);
        }
    }
    *first_positional = optind;
    free(opts);
    return rc;
}

static int on_project_opt(int opt, const char *value, void *arg)
{
    GT_ASSERT(opt == 'p');
    *(const char **)arg = value;
    return 0;
}

int gt_cli_parse_project_opt(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                             char **argv, const char **project, int *first_positional)
{
    static const struct option long_opts[] = {
        {"project", required_argument, NULL, 'p'},
        {NULL, 0, NULL, 0},
    };
    *project = NULL;
    return gt_cli_parse_opts(ctx, cmd, argc, argv, "p:", long_opts, on_project_opt, project,
                             first_positional);
}

int gt_cli_resolve_kind(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, const char *word,
                        const char *project_flag, const struct gt_kind_info **kind,
                        const char **project)
{
    *kind = gt_cli_kind_lookup(word);
    if (!*kind) {
        return gt_cli_usage_error(ctx, cmd, "unknown kind \"%s\"", word);
    }
    *project = NULL;
    if (!(*kind)->namespaced) {
        return 0;
    }
    struct gt_err err = {0};
    if (gt_cli_ctx_project(ctx, project_flag, project, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    if (!*project) {
        return gt_cli_usage_error(ctx, cmd, "%s live in projects: pass -p PROJECT",
                                  (*kind)->plural);
    }
    return 0;
}

int gt_cli_ctx_project(struct gt_cli_ctx *ctx, const char *flag, const char **project,
                       struct gt_err *err)
{
    *project = flag;
    if (flag) {
        return 0;
    }
    if (!ctx->default_project_loaded) {
        int rc = gt_cli_config_project(NULL, &ctx->default_project, err);
        if (rc != 0) {
            return rc;
        }
        ctx->default_project_loaded = true;
    }
    *project = ctx->default_project;
    return 0;
}

int gt_cli_ctx_client(struct gt_cli_ctx *ctx, struct gt_cli_client **out, struct gt_err *err)
{
    if (!ctx->client) {
        struct gt_cli_config cfg;
        int rc = gt_cli_config_resolve(ctx->server_flag, ctx->token_flag, &cfg, err);
        if (rc != 0) {
            return rc;
        }
        if (!cfg.server) {
            gt_cli_config_fini(&cfg);
            return gt_err_set(err, GT_EBADREQ,
                              "no server: pass --server URL, set GANTRY_SERVER or run 'gantry up'");
        }
        ctx->client = gt_cli_client_new(cfg.server, cfg.token);
        gt_cli_config_fini(&cfg);
    }
    *out = ctx->client;
    return 0;
}
