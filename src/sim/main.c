/*
 * gantry-sim: replay a GPU-cluster trace through gantry's scheduler.
 *
 *   gantry-sim --trace philly|openb|csv --jobs FILE [--nodes FILE]
 *              [--cluster NxG] [--policy A,B,...] [--from DATE --to DATE]
 *              [--seed N|N-M] [--config FILE] [--out DIR] [--name PREFIX]
 *              [--check] [--per-job]
 *
 * philly/csv: every policy (row) in --policy replays the same jobs; a table
 * goes to stdout and, with --out, PREFIX_summary.csv, PREFIX_vc.csv (per
 * VC), PREFIX_jct_cdf.svg, PREFIX_queue.svg and, with --per-job,
 * PREFIX_jobs_<row>.csv. openb: the FGD allocation experiment for each
 * placement in --policy, averaged over the seeds, into PREFIX_alloc.csv.
 * Timing goes to stderr so that stdout and the files are reproducible.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/sim.h"

struct opts {
    const char *trace, *jobs, *nodes, *cluster, *policy, *from, *to, *seed, *config, *out, *name;
    bool check, per_job;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: gantry-sim --trace philly|openb|csv --jobs FILE [--nodes FILE]\n"
               "                  [--cluster NxG] [--policy A,B,...] [--from DATE --to DATE]\n"
               "                  [--seed N|N-M] [--config FILE] [--out DIR] [--name PREFIX]\n"
               "                  [--check] [--per-job]\n");
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {{"trace", required_argument, NULL, 't'},
                                             {"jobs", required_argument, NULL, 'j'},
                                             {"nodes", required_argument, NULL, 'n'},
                                             {"cluster", required_argument, NULL, 'c'},
                                             {"policy", required_argument, NULL, 'p'},
                                             {"from", required_argument, NULL, 'f'},
                                             {"to", required_argument, NULL, 'T'},
                                             {"seed", required_argument, NULL, 's'},
                                             {"config", required_argument, NULL, 'C'},
                                             {"out", required_argument, NULL, 'o'},
                                             {"name", required_argument, NULL, 'N'},
                                             {"check", no_argument, NULL, 'k'},
                                             {"per-job", no_argument, NULL, 'J'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 't':
            o->trace = optarg;
            break;
        case 'j':
            o->jobs = optarg;
            break;
        case 'n':
            o->nodes = optarg;
            break;
        case 'c':
            o->cluster = optarg;
            break;
        case 'p':
            o->policy = optarg;
            break;
        case 'f':
            o->from = optarg;
            break;
        case 'T':
            o->to = optarg;
            break;
        case 's':
            o->seed = optarg;
            break;
        case 'C':
            o->config = optarg;
            break;
        case 'o':
            o->out = optarg;
            break;
        case 'N':
            o->name = optarg;
            break;
        case 'k':
            o->check = true;
            break;
        case 'J':
            o->per_job = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            return -1;
        }
    }
    if (optind != argc || !o->trace || !o->jobs) {
        return -1;
    }
    if (strcmp(o->trace, "philly") && strcmp(o->trace, "openb") && strcmp(o->trace, "csv")) {
        return -1;
    }
    if (!o->name) {
        o->name = o->trace;
    }
    return 0;
}

/* Split a comma-separated list into a new array of new strings. */
static char **split(const char *s, size_t *n)
{
    char **v = NULL;
    size_t cap = 0;
    *n = 0;
    while (*s) {
        size_t len = strcspn(s, ",");
        GT_VEC_RESERVE(v, cap, *n + 1, 4);
        v[(*n)++] = gt_xstrndup(s, len);
        s += len + (s[len] == ',');
    }
    return v;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i]);
    }
    free(v);
}

static int read_into(const char *path, int (*parse)(const char *, size_t, void *, struct gt_err *),
                     void *dst, struct gt_err *err)
{
    char *data;
    size_t len;
    int rc = gt_file_read(path, GT_SIM_FILE_MAX_BYTES, &data, &len, err);
    if (rc < 0) {
        return rc;
    }
    rc = parse(data, len, dst, err);
    free(data);
    if (rc < 0) {
        gt_err_prefix(err, "%s", path);
    }
    return rc;
}

/* Adapters from the typed parsers to read_into's void pointer. */
static int philly_p(const char *d, size_t l, void *t, struct gt_err *e)
{
    return gt_sim_philly_parse(d, l, t, e);
}
static int sizes_p(const char *d, size_t l, void *t, struct gt_err *e)
{
    return gt_sim_vc_sizes_parse(d, l, t, e);
}
static int csv_p(const char *d, size_t l, void *t, struct gt_err *e)
{
    return gt_sim_csv_parse(d, l, t, e);
}
static int pods_p(const char *d, size_t l, void *o, struct gt_err *e)
{
    return gt_sim_openb_pods_parse(d, l, o, e);
}
static int nodes_p(const char *d, size_t l, void *o, struct gt_err *e)
{
    return gt_sim_openb_nodes_parse(d, l, o, e);
}
static int config_p(const char *d, size_t l, void *c, struct gt_err *e)
{
    return gt_sim_config_parse(d, l, c, e);
}

static int write_out(const struct opts *o, const char *suffix, const struct gt_buf *b,
                     struct gt_err *err)
{
    char *path = gt_xasprintf("%s/%s_%s", o->out, o->name, suffix);
    int rc = gt_sim_file_write(path, b, err);
    free(path);
    return rc;
}

static int load_trace(const struct opts *o, const struct gt_sim_config *c, struct gt_sim_trace *t,
                      struct gt_err *err)
{
    int rc;
    if (strcmp(o->trace, "philly") == 0) {
        if (!o->nodes) {
            return gt_err_set(err, GT_EINVAL, "--trace philly needs --nodes philly_vc_helios.csv");
        }
        rc = read_into(o->jobs, philly_p, t, err);
        if (rc == 0) {
            rc = read_into(o->nodes, sizes_p, t, err);
        }
    } else {
        int nodes = 0, gpus = 0;
        char tail;
        if (!o->cluster || sscanf(o->cluster, "%dx%d%c", &nodes, &gpus, &tail) != 2 || nodes < 1 ||
            gpus < 1 || nodes > 100000 || gpus > 1024) {
            return gt_err_set(err, GT_EINVAL, "--trace csv needs --cluster NODESxGPUS");
        }
        rc = read_into(o->jobs, csv_p, t, err);
        for (size_t i = 0; rc == 0 && i < t->n_vcs; i++) {
            t->vcs[i].nodes = nodes;
            t->vcs[i].gpus_per_node = gpus;
        }
    }
    if (rc == 0) {
        gt_sim_trace_divide_nodes(t, c->node_divisor);
        gt_sim_trace_select(t, c->from_s, c->to_s);
        fprintf(stderr,
                "gantry-sim: %zu jobs; skipped %zu without GPUs, %zu outside the window, %zu in "
                "VCs without a size, %zu larger than their VC\n",
                t->n_jobs, t->n_skipped_no_gpu, t->n_skipped_window, t->n_skipped_vc,
                t->n_skipped_too_big);
    }
    return rc;
}

static void print_row(const char *name, const struct gt_sim_summary *s)
{
    printf("%-16s %7zu %10.0f %10.0f %8.0f %9.0f %9.0f %6.3f %8lld\n", name, s->jobs, s->avg_jct_s,
           s->avg_queue_s, s->p50_queue_s, s->p95_queue_s, s->p99_queue_s, s->util,
           (long long)s->preemptions);
}

static int write_reports(const struct opts *o, const struct gt_sim_config *c,
                         const struct gt_sim_trace *t, const struct gt_sim_run *runs, size_t n,
                         struct gt_err *err)
{
    struct gt_buf sum, vc, svg;
    gt_buf_init(&sum);
    gt_buf_init(&vc);
    gt_buf_init(&svg);
    bool by_size = c->jct_by_size;
    gt_buf_printf(&sum, "%s\n", gt_sim_summary_header(by_size));
    gt_buf_printf(&vc, "vc,%s\n", gt_sim_summary_header(by_size));
    for (size_t i = 0; i < n; i++) {
        struct gt_sim_summary s;
        gt_sim_summarize(t, &runs[i], -1, &s);
        gt_sim_summary_row(&sum, runs[i].label, &s, by_size);
        for (size_t v = 0; v < t->n_vcs; v++) {
            gt_sim_summarize(t, &runs[i], (int32_t)v, &s);
            if (s.jobs > 0) {
                gt_buf_printf(&vc, "%s,", t->vcs[v].name);
                gt_sim_summary_row(&vc, runs[i].label, &s, by_size);
            }
        }
    }
    int rc = write_out(o, "summary.csv", &sum, err);
    if (rc == 0) {
        rc = write_out(o, "vc.csv", &vc, err);
    }
    if (rc == 0) {
        gt_sim_svg_jct_cdf(&svg, runs, n);
        rc = write_out(o, "jct_cdf.svg", &svg, err);
    }
    if (rc == 0) {
        gt_buf_reset(&svg);
        gt_sim_svg_queue(&svg, runs, n);
        rc = write_out(o, "queue.svg", &svg, err);
    }
    for (size_t i = 0; rc == 0 && o->per_job && i < n; i++) {
        gt_buf_reset(&svg);
        gt_sim_report_jobs(&svg, t, &runs[i]);
        char *suffix = gt_xasprintf("jobs_%s.csv", runs[i].label);
        for (char *p = suffix; *p; p++) {
            *p = *p == '/' ? '_' : *p;
        }
        rc = write_out(o, suffix, &svg, err);
        free(suffix);
    }
    gt_buf_fini(&sum);
    gt_buf_fini(&vc);
    gt_buf_fini(&svg);
    return rc;
}

/* GPU-seconds r's jobs held beyond their work: the runs preemption threw
 * away (from scratch) and the restart overhead. */
static double lost_gpu_s(const struct gt_sim_trace *t, const struct gt_sim_run *r)
{
    double held = 0.0;
    for (size_t v = 0; v < r->n_vcs; v++) {
        held += r->busy_gpu_s[v];
    }
    for (size_t j = 0; j < t->n_jobs; j++) {
        held -= (double)t->jobs[j].duration_s * t->jobs[j].num_gpu;
    }
    return held;
}

static int run_jobs(const struct opts *o, const struct gt_sim_config *c, struct gt_err *err)
{
    struct gt_sim_trace t;
    gt_sim_trace_init(&t);
    int rc = load_trace(o, c, &t, err);
    size_t n = 0;
    char **rows = split(o->policy ? o->policy : "gantry", &n);
    struct gt_sim_run *runs = gt_xcalloc(n ? n : 1, sizeof(*runs));
    if (rc == 0) {
        printf("%-16s %7s %10s %10s %8s %9s %9s %6s %8s\n", "policy", "jobs", "avg_jct_s",
               "avg_queue", "p50_q", "p95_q", "p99_q", "util", "preempt");
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        gt_sim_run_init(&runs[i]);
        int64_t t0 = gt_mono_ms();
        rc = gt_sim_replay(&t, rows[i], c, &runs[i], err);
        int64_t ms = gt_mono_ms() - t0;
        if (rc < 0) {
            gt_err_prefix(err, "%s", rows[i]);
            break;
        }
        struct gt_sim_summary s;
        gt_sim_summarize(&t, &runs[i], -1, &s);
        print_row(rows[i], &s);
        fprintf(stderr,
                "gantry-sim: %s: %zu jobs in %.2f s (%.0f jobs/s), %lld cycles, %lld "
                "preemptions (%.0f GPU-s lost), %lld runtime estimates given, %lld invariant "
                "violations%s\n",
                rows[i], t.n_jobs, (double)ms / 1000.0,
                ms > 0 ? (double)t.n_jobs * 1000.0 / (double)ms : 0.0, (long long)runs[i].n_cycles,
                (long long)runs[i].n_preemptions, lost_gpu_s(&t, &runs[i]),
                (long long)runs[i].n_estimates, (long long)runs[i].n_violations,
                c->check ? "" : " (unchecked)");
        if (runs[i].n_violations > 0) {
            rc = gt_err_set(err, GT_EINTERNAL, "%s: %lld invariant violations", rows[i],
                            (long long)runs[i].n_violations);
        }
    }
    if (rc == 0 && o->out) {
        rc = write_reports(o, c, &t, runs, n, err);
    }
    for (size_t i = 0; i < n; i++) {
        gt_sim_run_fini(&runs[i]);
    }
    free(runs);
    free_list(rows, n);
    gt_sim_trace_fini(&t);
    return rc;
}

static int parse_seeds(const char *s, uint64_t def, uint64_t *lo, uint64_t *hi)
{
    if (!s) {
        *lo = *hi = def;
        return 0;
    }
    unsigned long long a, b;
    char tail;
    int n = sscanf(s, "%llu-%llu%c", &a, &b, &tail);
    if (n == 1 && sscanf(s, "%llu%c", &a, &tail) == 1) {
        b = a;
    } else if (n != 2 || b < a || b - a > 1000) {
        return -1;
    }
    *lo = a;
    *hi = b;
    return 0;
}

static int run_openb(const struct opts *o, const struct gt_sim_config *c, struct gt_err *err)
{
    uint64_t lo, hi;
    if (!o->nodes) {
        return gt_err_set(err, GT_EINVAL, "--trace openb needs --nodes NODE_LIST");
    }
    if (parse_seeds(o->seed, c->seed, &lo, &hi) < 0) {
        return gt_err_set(err, GT_EINVAL, "--seed: want N or N-M");
    }
    struct gt_sim_openb ob;
    gt_sim_openb_init(&ob);
    int rc = read_into(o->jobs, pods_p, &ob, err);
    if (rc == 0) {
        rc = read_into(o->nodes, nodes_p, &ob, err);
    }
    size_t n = 0;
    char **rows = split(o->policy ? o->policy : "gantry,bestfit,random", &n);
    struct gt_buf csv;
    gt_buf_init(&csv);
    gt_buf_puts(&csv, "policy");
    for (int k = 0; k < GT_SIM_ALLOC_POINTS; k++) {
        gt_buf_printf(&csv, ",alloc_at_%d", 50 + 10 * k);
    }
    gt_buf_puts(&csv, "\n");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        /* A bare placement name runs under the fifo order. */
        char *policy =
            strchr(rows[i], '/') ? gt_xstrdup(rows[i]) : gt_xasprintf("fifo/%s", rows[i]);
        double mean[GT_SIM_ALLOC_POINTS] = {0};
        int64_t violations = 0;
        size_t dropped = 0, pods = 0;
        for (uint64_t seed = lo; rc == 0 && seed <= hi; seed++) {
            struct gt_sim_alloc a;
            rc = gt_sim_openb_alloc(&ob, policy, seed, c->check, &a, err);
            for (int k = 0; rc == 0 && k < GT_SIM_ALLOC_POINTS; k++) {
                mean[k] += a.alloc_pct[k] / (double)(hi - lo + 1);
            }
            violations += a.n_violations;
            dropped += a.n_dropped;
            pods += a.n_pods;
        }
        free(policy);
        if (rc < 0) {
            break;
        }
        gt_buf_puts(&csv, rows[i]);
        printf("%-10s", rows[i]);
        for (int k = 0; k < GT_SIM_ALLOC_POINTS; k++) {
            gt_buf_printf(&csv, ",%.2f", mean[k]);
            printf(" %6.2f", mean[k]);
        }
        gt_buf_puts(&csv, "\n");
        printf("\n");
        fprintf(stderr,
                "gantry-sim: openb %s: seeds %llu-%llu, %zu pods, %zu dropped, %lld invariant "
                "violations%s\n",
                rows[i], (unsigned long long)lo, (unsigned long long)hi, pods, dropped,
                (long long)violations, c->check ? "" : " (unchecked)");
        if (violations > 0) {
            rc = gt_err_set(err, GT_EINTERNAL, "%s: %lld invariant violations", rows[i],
                            (long long)violations);
        }
    }
    if (rc == 0 && o->out) {
        rc = write_out(o, "alloc.csv", &csv, err);
    }
    gt_buf_fini(&csv);
    free_list(rows, n);
    gt_sim_openb_fini(&ob);
    return rc;
}

int main(int argc, char **argv)
{
    struct opts o = {0};
    if (parse_args(argc, argv, &o) < 0) {
        usage(stderr);
        return 2;
    }
    struct gt_sim_config c;
    struct gt_err err = {0};
    gt_sim_config_default(&c);
    int rc = o.config ? read_into(o.config, config_p, &c, &err) : 0;
    if (rc == 0 && (o.from || o.to)) {
        struct gt_buf conf;
        gt_buf_init(&conf);
        if (o.from) {
            gt_buf_printf(&conf, "from = %s\n", o.from);
        }
        if (o.to) {
            gt_buf_printf(&conf, "to = %s\n", o.to);
        }
        rc = gt_sim_config_parse(conf.data, conf.len, &c, &err);
        gt_buf_fini(&conf);
        if (rc < 0) {
            gt_err_prefix(&err, "--from/--to");
        }
    }
    c.check = c.check || o.check;
    if (rc == 0 && o.out && mkdir(o.out, 0755) < 0 && errno != EEXIST) {
        rc = gt_err_set(&err, -errno, "%s: %s", o.out, gt_errcode_str(-errno));
    }
    if (rc == 0) {
        rc = strcmp(o.trace, "openb") == 0 ? run_openb(&o, &c, &err) : run_jobs(&o, &c, &err);
    }
    if (rc < 0) {
        fprintf(stderr, "gantry-sim: %s\n", err.msg);
        return 1;
    }
    return 0;
}
