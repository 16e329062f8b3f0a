/*
 * `gantry explain KIND[.FIELD[.FIELD...]]`, as kubectl explain: a kind's
 * or a field's type, description and fields, from the schema tables this
 * binary validates with (gt_api_explain), so it asks no server. KIND is
 * any name `get` takes (job, jobs, pods, tfjobs, ...).
 */
#include <string.h>

#include "cli/cli_int.h"

int gt_cli_cmd_explain(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                       char **argv)
{
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "", NULL, NULL, NULL, &first);
    if (rc != 0) {
        return rc;
    }
    if (argc - first != 1) {
        return gt_cli_usage_error(ctx, cmd, "give one KIND or KIND.FIELD");
    }
    const char *arg = argv[first];
    size_t n = strcspn(arg, ".");
    char word[64];
    if (n == 0 || n >= sizeof(word)) {
        return gt_cli_usage_error(ctx, cmd, "no kind in \"%s\"", arg);
    }
    memcpy(word, arg, n);
    word[n] = '\0';
    const struct gt_kind_info *k = gt_cli_kind_lookup(word);
    if (!k) {
        struct gt_err err = {0};
        gt_err_set(&err, GT_ENOTFOUND, "unknown kind \"%s\" (gantry get's kinds: jobs, tasks, ...)",
                   word);
        return gt_cli_fail(ctx, &err);
    }
    struct gt_buf b;
    gt_buf_init(&b);
    struct gt_err err = {0};
    rc = gt_api_explain(k->kind, arg[n] ? arg + n + 1 : "", &b, &err);
    if (rc == 0) {
        fputs(b.data, ctx->out);
    }
    gt_buf_fini(&b);
    return rc == 0 ? 0 : gt_cli_fail(ctx, &err);
}
