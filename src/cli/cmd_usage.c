/*
 * What the cluster reports about use: `gantry scalars JOB` (the latest
 * value of each training scalar), `gantry top jobs` (each running job's
 * current utilisation) and `gantry report usage` (GPU-seconds from the
 * ledger, as Slurm's sreport). Each reads one gantryd route (docs/api.md
 * "Telemetry" and "Ledger") and renders it with a pure function of cli.h.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"

#define API "/apis/gantry.dev/v1"

/* Print b to ctx->out and free it. */
static void put_buf(struct gt_cli_ctx *ctx, struct gt_buf *b)
{
    fputs(b->data ? b->data : "", ctx->out);
    gt_buf_fini(b);
}

/* GET path into *out (new reference): 0, or the error printed. */
static int get_json(struct gt_cli_ctx *ctx, const char *path, json_t **out)
{
    struct gt_cli_client *client;
    struct gt_err err = {0};
    if (gt_cli_ctx_client(ctx, &client, &err) != 0 ||
        gt_cli_client_request(client, "GET", path, NULL, out, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    return 0;
}

/* Add one row of n cells (each taken) to t. */
static void add_row(struct gt_cli_table *t, char **cells, size_t n)
{
    gt_cli_table_add(t, (const char *const *)cells);
    for (size_t k = 0; k < n; k++) {
        free(cells[k]);
    }
}

static const char *const scalar_headers[] = {"TAG", "STEP", "VALUE", "POINTS", "WALL TIME"};

void gt_cli_scalars_render(const json_t *scalars, struct gt_buf *out)
{
    struct gt_cli_table t;
    gt_cli_table_init(&t, GT_ARRAY_LEN(scalar_headers), scalar_headers);
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(scalars, "tags"), i, s)
    {
        const json_t *latest = json_object_get(s, "latest");
        const char *tag = json_string_value(json_object_get(s, "tag"));
        char ts[32];
        double wt = json_number_value(json_object_get(latest, "wallTime"));
        char *cells[GT_ARRAY_LEN(scalar_headers)] = {
            gt_xstrdup(tag ? tag : ""),
            gt_xasprintf("%" JSON_INTEGER_FORMAT,
                         json_integer_value(json_object_get(latest, "step"))),
            gt_xasprintf("%.6g", json_number_value(json_object_get(latest, "value"))),
            gt_xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(s, "count"))),
            gt_xstrdup(gt_time_format((int64_t)(wt * 1000), ts, sizeof(ts))),
        };
        add_row(&t, cells, GT_ARRAY_LEN(cells));
    }
    gt_cli_table_render(&t, true, out);
    gt_cli_table_fini(&t);
}

int gt_cli_cmd_scalars(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                       char **argv)
{
    const char *pflag = NULL, *project = NULL;
    int first;
    int rc = gt_cli_parse_project_opt(ctx, cmd, argc, argv, &pflag, &first);
    if (rc != 0) {
        return rc;
    }
    if (argc - first != 1) {
        return gt_cli_usage_error(ctx, cmd, "want one JOB");
    }
    struct gt_err err = {0};
    if (gt_cli_ctx_project(ctx, pflag, &project, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    if (!project) {
        return gt_cli_usage_error(ctx, cmd, "no project: give -p PROJECT");
    }
    char *pe = gt_cli_url_escape(project), *je = gt_cli_url_escape(argv[first]);
    char *path = gt_xasprintf(API "/projects/%s/jobs/%s/scalars", pe, je);
    free(pe);
    free(je);
    json_t *o = NULL;
    rc = get_json(ctx, path, &o);
    free(path);
    if (rc == 0) {
        struct gt_buf b;
        gt_buf_init(&b);
        if (!json_array_size(json_object_get(o, "tags"))) {
            fprintf(ctx->err, "no scalars reported for job %s yet\n", argv[first]);
        } else {
            gt_cli_scalars_render(o, &b);
        }
        put_buf(ctx, &b);
    }
    json_decref(o);
    return rc;
}

static const char *const top_job_headers[] = {"PROJECT", "JOB",     "TASKS", "GPUS",
                                              "GPU%",    "GPU MEM", "CPU",   "MEMORY"};

void gt_cli_top_jobs_render(const json_t *stats, struct gt_buf *out)
{
    struct gt_cli_table t;
    gt_cli_table_init(&t, GT_ARRAY_LEN(top_job_headers), top_job_headers);
    size_t i;
    const json_t *s;
    json_array_foreach(json_object_get(stats, "items"), i, s)
    {
        char b1[32], b2[32], b3[32], b4[32];
        const char *project = json_string_value(json_object_get(s, "project"));
        const char *job = json_string_value(json_object_get(s, "job"));
        char *cells[GT_ARRAY_LEN(top_job_headers)] = {
            gt_xstrdup(project ? project : ""),
            gt_xstrdup(job ? job : ""),
            gt_xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(s, "tasks"))),
            gt_xstrdup(gt_quantity_format(json_integer_value(json_object_get(s, "gpuMilli")),
                                          GT_QTY_MILLI, 0, b1, sizeof(b1))),
            gt_xasprintf("%.0f%%", json_number_value(json_object_get(s, "gpuUtil"))),
            gt_xstrdup(gt_quantity_format(json_integer_value(json_object_get(s, "gpuMemoryBytes")),
                                          GT_QTY_UNIT, 1, b2, sizeof(b2))),
            gt_xstrdup(gt_quantity_format(json_integer_value(json_object_get(s, "cpuMilli")),
                                          GT_QTY_MILLI, 0, b3, sizeof(b3))),
            gt_xstrdup(gt_quantity_format(json_integer_value(json_object_get(s, "memoryBytes")),
                                          GT_QTY_UNIT, 1, b4, sizeof(b4))),
        };
        add_row(&t, cells, GT_ARRAY_LEN(cells));
    }
    gt_cli_table_render(&t, true, out);
    gt_cli_table_fini(&t);
}

int gt_cli_top_jobs(struct gt_cli_ctx *ctx)
{
    json_t *o = NULL;
    int rc = get_json(ctx, API "/jobstats", &o);
    if (rc == 0) {
        struct gt_buf b;
        gt_buf_init(&b);
        gt_cli_top_jobs_render(o, &b);
        put_buf(ctx, &b);
    }
    json_decref(o);
    return rc;
}

/* ---- report usage ---- */

static const char *const usage_headers[] = {"NAME",           "GPU-SECONDS", "GPU-HOURS",
                                            "UTILIZED GPU-S", "UTIL%",       "RUNS"};

/* milli-GPU-seconds as GPU-seconds with three decimals, exactly. */
static char *gpu_seconds(int64_t milli_s)
{
    return gt_xasprintf("%" PRId64 ".%03" PRId64, milli_s / 1000, milli_s % 1000);
}

static void usage_row(struct gt_cli_table *t, const char *name, const json_t *r)
{
    int64_t g = json_integer_value(json_object_get(r, "gpuMilliSeconds"));
    int64_t u = json_integer_value(json_object_get(r, "utilizedGpuMilliSeconds"));
    char *cells[GT_ARRAY_LEN(usage_headers)] = {
        gt_xstrdup(name),
        gpu_seconds(g),
        gt_xasprintf("%.2f", (double)g / 3.6e6),
        gpu_seconds(u),
        g > 0 ? gt_xasprintf("%.0f%%", 100.0 * (double)u / (double)g) : gt_xstrdup("-"),
        gt_xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(json_object_get(r, "taskRuns"))),
    };
    add_row(t, cells, GT_ARRAY_LEN(cells));
}

void gt_cli_usage_render(const json_t *report, enum gt_cli_usage_format fmt, struct gt_buf *out)
{
    if (fmt == GT_CLI_USAGE_JSON) {
        gt_api_encode_json(out, report);
        gt_buf_puts(out, "\n");
        return;
    }
    const json_t *rows = json_object_get(report, "rows");
    const char *by = json_string_value(json_object_get(report, "by"));
    if (fmt == GT_CLI_USAGE_CSV) {
        gt_buf_printf(out, "%s,gpu_seconds,utilized_gpu_seconds,task_runs\n", by ? by : "name");
    } else {
        gt_buf_printf(out, "Usage by %s from %s to %s\n", by ? by : "?",
                      json_string_value(json_object_get(report, "from")),
                      json_string_value(json_object_get(report, "to")));
    }
    struct gt_cli_table t;
    gt_cli_table_init(&t, GT_ARRAY_LEN(usage_headers), usage_headers);
    size_t i;
    const json_t *r;
    json_array_foreach(rows, i, r)
    {
        const char *name = json_string_value(json_object_get(r, "name"));
        if (fmt == GT_CLI_USAGE_CSV) {
            char *g = gpu_seconds(json_integer_value(json_object_get(r, "gpuMilliSeconds")));
            char *u =
                gpu_seconds(json_integer_value(json_object_get(r, "utilizedGpuMilliSeconds")));
            /* names are object names or GPU models: no commas or quotes to escape */
            gt_buf_printf(out, "%s,%s,%s,%" JSON_INTEGER_FORMAT "\n", name ? name : "", g, u,
                          json_integer_value(json_object_get(r, "taskRuns")));
            free(g);
            free(u);
        } else {
            usage_row(&t, name ? name : "", r);
        }
    }
    if (fmt == GT_CLI_USAGE_TABLE) {
        usage_row(&t, "TOTAL", json_object_get(report, "total"));
        gt_cli_table_render(&t, true, out);
    }
    gt_cli_table_fini(&t);
}

struct report_opts {
    const char *from, *to, *by, *output;
};

static int report_opt(int opt, const char *val, void *arg)
{
    struct report_opts *o = arg;
    switch (opt) {
    case 'f':
        o->from = val;
        break;
    case 't':
        o->to = val;
        break;
    case 'b':
        o->by = val;
        break;
    case 'o':
        o->output = val;
        break;
    default:
        return GT_EUSAGE;
    }
    return 0;
}

int gt_cli_cmd_report(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                      char **argv)
{
    static const struct option longopts[] = {{"from", required_argument, NULL, 'f'},
                                             {"to", required_argument, NULL, 't'},
                                             {"by", required_argument, NULL, 'b'},
                                             {"output", required_argument, NULL, 'o'},
                                             {NULL, 0, NULL, 0}};
    struct report_opts o = {.by = "department"};
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "o:", longopts, report_opt, &o, &first);
    if (rc != 0) {
        return rc;
    }
    if (argc - first != 1 || strcmp(argv[first], "usage") != 0) {
        return gt_cli_usage_error(ctx, cmd, "only 'report usage' is supported");
    }
    enum gt_cli_usage_format fmt = GT_CLI_USAGE_TABLE;
    if (o.output && !strcmp(o.output, "csv")) {
        fmt = GT_CLI_USAGE_CSV;
    } else if (o.output && !strcmp(o.output, "json")) {
        fmt = GT_CLI_USAGE_JSON;
    } else if (o.output) {
        return gt_cli_usage_error(ctx, cmd, "-o %s: want csv or json", o.output);
    }
    struct gt_buf q;
    gt_buf_init(&q);
    char *by = gt_cli_url_escape(o.by);
    gt_buf_printf(&q, API "/usage?by=%s", by);
    free(by);
    const char *names[] = {"from", "to"}, *vals[] = {o.from, o.to};
    for (int i = 0; i < 2; i++) {
        if (vals[i]) {
            char *v = gt_cli_url_escape(vals[i]);
            gt_buf_printf(&q, "&%s=%s", names[i], v);
            free(v);
        }
    }
    json_t *report = NULL;
    rc = get_json(ctx, q.data, &report);
    gt_buf_fini(&q);
    if (rc == 0) {
        struct gt_buf b;
        gt_buf_init(&b);
        gt_cli_usage_render(report, fmt, &b);
        put_buf(ctx, &b);
    }
    json_decref(report);
    return rc;
}
