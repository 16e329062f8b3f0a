/*
 * Node administration: `gantry cordon|uncordon|drain NODE` and `gantry top
 * nodes`.
 *
 * cordon sets the Node's spec.unschedulable (the scheduler binds nothing
 * more there); drain also adds the NoExecute taint gantry.dev/drain, on
 * which gantryd stops every task on the node with reason Drained and puts
 * its job back in the queue, and then waits until no task holds resources
 * there; uncordon clears both. Each is a read-modify-write of the Node
 * conditional on its resourceVersion, retried on conflict (the agent
 * writes the Node's status every few seconds). Writing a Node needs an
 * admin.
 *
 * top nodes shows each node's GPU, CPU and memory allocation from the
 * computed status.allocated against status.allocatable, beside what its
 * tasks use now (GET nodestats: their cgroups' cpu and memory, their GPUs'
 * utilisation), as kubectl top nodes shows CPU(cores) and MEMORY(bytes).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli_int.h"
#include "common/resource.h"

#define NODES_PATH "/apis/gantry.dev/v1/nodes"
#define DRAIN_POLL_MS 250

static const char drain_taint_key[] = GT_API_DRAIN_TAINT;

/* Index of the drain taint in taints, or -1. */
static long drain_taint_at(const json_t *taints)
{
    size_t i;
    json_t *t;
    json_array_foreach(taints, i, t)
    {
        const char *k = json_string_value(json_object_get(t, "key"));
        if (k && !strcmp(k, drain_taint_key)) {
            return (long)i;
        }
    }
    return -1;
}

bool gt_cli_node_mark(json_t *node, enum gt_cli_node_op op)
{
    json_t *spec = json_object_get(node, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(node, "spec", spec);
    }
    bool cordoned = json_is_true(json_object_get(spec, "unschedulable"));
    json_t *taints = json_object_get(spec, "taints");
    long at = drain_taint_at(taints);
    bool changed = false;
    if (op == GT_CLI_NODE_UNCORDON) {
        changed = cordoned || at >= 0;
        json_object_del(spec, "unschedulable");
        if (at >= 0) {
            json_array_remove(taints, (size_t)at);
        }
        if (taints && json_array_size(taints) == 0) {
            json_object_del(spec, "taints");
        }
        return changed;
    }
    if (!cordoned) {
        json_object_set_new(spec, "unschedulable", json_true());
        changed = true;
    }
    if (op == GT_CLI_NODE_DRAIN && at < 0) {
        if (!json_is_array(taints)) {
            taints = json_array();
            json_object_set_new(spec, "taints", taints);
        }
        json_array_append_new(
            taints, json_pack("{s:s, s:s}", "key", drain_taint_key, "effect", "NoExecute"));
        changed = true;
    }
    return changed;
}

static const char *const op_done[] = {
    [GT_CLI_NODE_CORDON] = "cordoned",
    [GT_CLI_NODE_UNCORDON] = "uncordoned",
    [GT_CLI_NODE_DRAIN] = "cordoned",
};

static int mark_edit(json_t *node, void *arg, bool *changed, struct gt_err *err)
{
    (void)err;
    *changed = gt_cli_node_mark(node, *(const enum gt_cli_node_op *)arg);
    return 0;
}

/* Read-modify-write the node; prints what happened. 0 or the error. */
static int mark_node(struct gt_cli_ctx *ctx, struct gt_cli_client *client, const char *name,
                     enum gt_cli_node_op op, struct gt_err *err)
{
    bool changed = false;
    int rc = gt_cli_node_update(client, name, mark_edit, &op, &changed, err);
    if (rc == 0) {
        fprintf(ctx->out, "node/%s %s%s\n", name, changed ? "" : "already ", op_done[op]);
    }
    return rc;
}

static bool holds(json_t *task)
{
    struct gt_api_task *t = gt_api_task_new(task);
    int p = t->status.phase;
    gt_api_task_free(t);
    return p == GT_TASK_BOUND || p == GT_TASK_RUNNING || p == GT_TASK_TERMINATING;
}

/* Wait until no task holds resources on the node (or timeout_s passes). */
static int wait_drained(struct gt_cli_ctx *ctx, struct gt_cli_client *client, const char *name,
                        long timeout_s, struct gt_err *err)
{
    char *esc = gt_cli_url_escape(name);
    char *path = gt_xasprintf("/apis/gantry.dev/v1/tasks?fieldSelector=spec.nodeName%%3D%s", esc);
    free(esc);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc;
    for (;;) {
        json_t *list = NULL;
        rc = gt_cli_client_request(client, "GET", path, NULL, &list, err);
        if (rc) {
            break;
        }
        size_t left = 0, i;
        json_t *t;
        json_array_foreach(json_object_get(list, "items"), i, t)
        {
            left += holds(t);
        }
        json_decref(list);
        if (left == 0) {
            fprintf(ctx->out, "node/%s drained\n", name);
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= timeout_s) {
            rc = gt_err_set(err, -ETIMEDOUT, "node %s: %zu task%s still running after %lds", name,
                            left, left == 1 ? "" : "s", timeout_s);
            break;
        }
        struct timespec nap = {.tv_sec = 0, .tv_nsec = DRAIN_POLL_MS * 1000000L};
        nanosleep(&nap, NULL);
    }
    free(path);
    return rc;
}

struct node_flags {
    long timeout_s;
    bool bad_timeout;
};

static int on_node_opt(int opt, const char *value, void *arg)
{
    struct node_flags *f = arg;
    if (opt == 't') {
        char *end = NULL;
        f->timeout_s = strtol(value, &end, 10);
        f->bad_timeout = !*value || *end || f->timeout_s < 0;
    }
    return 0;
}

int gt_cli_cmd_node(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc, char **argv)
{
    static const struct option long_opts[] = {
        {"timeout", required_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    enum gt_cli_node_op op = !strcmp(cmd->name, "drain")      ? GT_CLI_NODE_DRAIN
                             : !strcmp(cmd->name, "uncordon") ? GT_CLI_NODE_UNCORDON
                                                              : GT_CLI_NODE_CORDON;
    struct node_flags f = {.timeout_s = 120};
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "", op == GT_CLI_NODE_DRAIN ? long_opts : NULL,
                               on_node_opt, &f, &first);
    if (rc != 0) {
        return rc;
    }
    if (f.bad_timeout) {
        return gt_cli_usage_error(ctx, cmd, "--timeout: want seconds >= 0");
    }
    if (argc - first != 1) {
        return gt_cli_usage_error(ctx, cmd,
                                  argc - first < 1 ? "name a node" : "too many arguments");
    }
    struct gt_cli_client *client;
    struct gt_err err = {0};
    if (gt_cli_ctx_client(ctx, &client, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    if (mark_node(ctx, client, argv[first], op, &err) ||
        (op == GT_CLI_NODE_DRAIN && f.timeout_s > 0 &&
         wait_drained(ctx, client, argv[first], f.timeout_s, &err))) {
        return gt_cli_fail(ctx, &err);
    }
    return 0;
}

/* ---- top nodes ---- */

/* A quantity string or integer in canonical units; 0 if absent or bad. */
static int64_t qty(const json_t *v, enum gt_qty_unit unit)
{
    int64_t n = 0;
    if (json_is_integer(v)) {
        n = json_integer_value(v) * (unit == GT_QTY_MILLI ? 1000 : 1);
    } else if (!json_is_string(v) || gt_quantity_parse(json_string_value(v), unit, &n, NULL)) {
        n = 0;
    }
    return n;
}

static char *pct(int64_t used, int64_t total)
{
    return total > 0 ? gt_xasprintf("%" PRId64 "%%", used * 100 / total) : gt_xstrdup("-");
}

static const char *const top_headers[] = {"NAME",       "GPUS USED",     "GPUS",        "GPU%",
                                          "CPU USED",   "CPU%",          "MEMORY USED", "MEMORY%",
                                          "CPU(cores)", "MEMORY(bytes)", "GPU UTIL"};

/* The cells of a node's use now: its entry of stats, or "-" without one
 * (stats NULL: unknown) or, with stats, 0 for a node none of whose tasks
 * was sampled. */
static void use_cells(const json_t *stats, const char *name, char **cells)
{
    const json_t *e = NULL, *x;
    size_t i;
    json_array_foreach(stats, i, x)
    {
        const char *n = json_string_value(json_object_get(x, "node"));
        e = n && name && !strcmp(n, name) ? x : e;
    }
    if (!stats) {
        cells[0] = gt_xstrdup("-");
        cells[1] = gt_xstrdup("-");
        cells[2] = gt_xstrdup("-");
        return;
    }
    char b1[32], b2[32];
    cells[0] = gt_xstrdup(gt_quantity_format(json_integer_value(json_object_get(e, "cpuMilli")),
                                             GT_QTY_MILLI, 0, b1, sizeof(b1)));
    cells[1] = gt_xstrdup(gt_quantity_format(json_integer_value(json_object_get(e, "memoryBytes")),
                                             GT_QTY_UNIT, 1, b2, sizeof(b2)));
    cells[2] = json_integer_value(json_object_get(e, "gpuMilli")) > 0
                   ? gt_xasprintf("%.0f%%", json_number_value(json_object_get(e, "gpuUtil")))
                   : gt_xstrdup("-");
}

void gt_cli_top_nodes_render(const json_t *nodes, const json_t *stats, struct gt_buf *out)
{
    struct gt_cli_table t;
    gt_cli_table_init(&t, GT_ARRAY_LEN(top_headers), top_headers);
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n)
    {
        const json_t *used = gt_json_path(n, "status.allocated.resources");
        const json_t *alloc = gt_json_path(n, "status.allocatable");
        int64_t gpu_used = qty(json_object_get(used, GT_RES_NAME_GPU), GT_QTY_MILLI);
        int64_t gpus = (int64_t)json_array_size(gt_json_path(n, "status.gpus"));
        const json_t *ag = json_object_get(alloc, GT_RES_NAME_GPU);
        if (ag) {
            gpus = qty(ag, GT_QTY_UNIT);
        }
        int64_t cpu_used = qty(json_object_get(used, "cpu"), GT_QTY_MILLI);
        int64_t cpu = qty(json_object_get(alloc, "cpu"), GT_QTY_MILLI);
        int64_t mem_used = qty(json_object_get(used, "memory"), GT_QTY_UNIT);
        int64_t mem = qty(json_object_get(alloc, "memory"), GT_QTY_UNIT);
        char b1[32], b2[32], b3[32];
        const char *name = json_string_value(gt_json_path(n, "metadata.name"));
        char *cells[GT_ARRAY_LEN(top_headers)] = {
            gt_xstrdup(name ? name : ""),
            gt_xstrdup(gt_quantity_format(gpu_used, GT_QTY_MILLI, 0, b1, sizeof(b1))),
            gt_xasprintf("%" PRId64, gpus),
            pct(gpu_used, gpus * 1000),
            gt_xstrdup(gt_quantity_format(cpu_used, GT_QTY_MILLI, 0, b2, sizeof(b2))),
            pct(cpu_used, cpu),
            gt_xstrdup(gt_quantity_format(mem_used, GT_QTY_UNIT, 1, b3, sizeof(b3))),
            pct(mem_used, mem),
            NULL,
            NULL,
            NULL,
        };
        use_cells(stats, name, cells + 8);
        gt_cli_table_add(&t, (const char *const *)cells);
        for (size_t k = 0; k < GT_ARRAY_LEN(cells); k++) {
            free(cells[k]);
        }
    }
    gt_cli_table_render(&t, true, out);
    gt_cli_table_fini(&t);
}

int gt_cli_cmd_top(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc, char **argv)
{
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "", NULL, NULL, NULL, &first);
    if (rc != 0) {
        return rc;
    }
    const struct gt_kind_info *k = argc - first == 1 ? gt_cli_kind_lookup(argv[first]) : NULL;
    if (k && k->kind == GT_KIND_JOB) {
        return gt_cli_top_jobs(ctx);
    }
    if (!k || k->kind != GT_KIND_NODE) {
        return gt_cli_usage_error(ctx, cmd, "only 'top nodes' and 'top jobs' are supported");
    }
    struct gt_cli_client *client;
    struct gt_err err = {0};
    if (gt_cli_ctx_client(ctx, &client, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    json_t *list = NULL, *stats = NULL;
    if (gt_cli_client_request(client, "GET", NODES_PATH, NULL, &list, &err)) {
        return gt_cli_fail(ctx, &err);
    }
    /* use now is shown where the server has it; allocation either way */
    struct gt_err stats_err = {0};
    if (gt_cli_client_request(client, "GET", "/apis/gantry.dev/v1/nodestats", NULL, &stats,
                              &stats_err)) {
        stats = NULL;
    }
    struct gt_buf b;
    gt_buf_init(&b);
    gt_cli_top_nodes_render(json_object_get(list, "items"), json_object_get(stats, "items"), &b);
    fputs(b.data ? b.data : "", ctx->out);
    gt_buf_fini(&b);
    json_decref(list);
    json_decref(stats);
    return 0;
}
