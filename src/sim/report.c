/*
 * Reports: the summary CSV, the per-job CSV and two SVG charts written as
 * plain text (no plotting library): the JCT CDF of each run on a log-scale
 * x axis, and the number of waiting jobs over time. Numbers are printed
 * with fixed precision so regenerated files compare byte for byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sim_int.h"

#define W 720
#define H 420
#define ML 70 /* margins */
#define MR 150
#define MT 30
#define MB 50

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"};

const char *gt_sim_summary_header(bool by_size)
{
    return by_size ? "policy,jobs,avg_jct_s,avg_queue_s,p50_queue_s,p95_queue_s,p99_queue_s,util,"
                     "preemptions,avg_jct_small_s,avg_jct_large_s"
                   : "policy,jobs,avg_jct_s,avg_queue_s,p50_queue_s,p95_queue_s,p99_queue_s,util,"
                     "preemptions";
}

void gt_sim_summary_row(struct gt_buf *b, const char *name, const struct gt_sim_summary *s,
                        bool by_size)
{
    gt_buf_printf(b, "%s,%zu,%.0f,%.0f,%.0f,%.0f,%.0f,%.4f,%lld", name, s->jobs, s->avg_jct_s,
                  s->avg_queue_s, s->p50_queue_s, s->p95_queue_s, s->p99_queue_s, s->util,
                  (long long)s->preemptions);
    if (by_size) {
        gt_buf_printf(b, ",%.0f,%.0f", s->avg_jct_small_s, s->avg_jct_large_s);
    }
    gt_buf_puts(b, "\n");
}

void gt_sim_report_jobs(struct gt_buf *b, const struct gt_sim_trace *t, const struct gt_sim_run *r)
{
    gt_buf_puts(b, "line,vc,num_gpu,submit_s,start_s,finish_s,jct_s,queue_s,preemptions\n");
    for (size_t i = 0; i < r->n_jobs; i++) {
        const struct gt_sim_outcome *o = &r->jobs[i];
        gt_buf_printf(b, "%u,%s,%d,%lld,%lld,%lld,%lld,%lld,%d\n", t->jobs[i].line,
                      t->vcs[o->vc].name, o->num_gpu, (long long)o->submit_s, (long long)o->start_s,
                      (long long)o->finish_s, (long long)(o->finish_s - o->submit_s),
                      (long long)(o->start_s - o->submit_s), o->preemptions);
    }
}

static void svg_open(struct gt_buf *b, const char *title, const char *xlabel, const char *ylabel)
{
    gt_buf_printf(b,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "font-family=\"sans-serif\" font-size=\"12\">\n"
                  "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                  "<text x=\"%d\" y=\"20\" font-size=\"14\">%s</text>\n"
                  "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                  "stroke=\"black\"/>\n"
                  "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n"
                  "<text x=\"15\" y=\"%d\" transform=\"rotate(-90 15 %d)\" "
                  "text-anchor=\"middle\">%s</text>\n",
                  W, H, ML, title, ML, MT, W - ML - MR, H - MT - MB, ML + (W - ML - MR) / 2, H - 10,
                  xlabel, MT + (H - MT - MB) / 2, MT + (H - MT - MB) / 2, ylabel);
}

static void svg_legend(struct gt_buf *b, const struct gt_sim_run *runs, size_t n_runs)
{
    for (size_t i = 0; i < n_runs; i++) {
        int y = MT + 15 + (int)i * 18;
        gt_buf_printf(b,
                      "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                      "stroke-width=\"2\"/>\n<text x=\"%d\" y=\"%d\">%s</text>\n",
                      W - MR + 10, y, W - MR + 30, y, colours[i % GT_ARRAY_LEN(colours)],
                      W - MR + 35, y + 4, runs[i].label);
    }
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void gt_sim_svg_jct_cdf(struct gt_buf *b, const struct gt_sim_run *runs, size_t n_runs)
{
    const double lo = 0, hi = 7; /* log10 seconds: 1 s .. 10^7 s */
    const int pw = W - ML - MR, ph = H - MT - MB;
    svg_open(b, "JCT CDF", "job completion time (s, log scale)", "fraction of jobs");
    for (int d = 0; d <= 7; d++) {
        int x = ML + (int)((d - lo) / (hi - lo) * pw);
        gt_buf_printf(b,
                      "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>\n"
                      "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">1e%d</text>\n",
                      x, MT, x, MT + ph, x, MT + ph + 15, d);
    }
    for (int q = 0; q <= 4; q++) {
        int y = MT + ph - q * ph / 4;
        gt_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.2f</text>\n", ML - 5, y + 4,
                      q / 4.0);
    }
    for (size_t i = 0; i < n_runs; i++) {
        const struct gt_sim_run *r = &runs[i];
        int64_t *jct = gt_xcalloc(r->n_jobs ? r->n_jobs : 1, sizeof(*jct));
        size_t n = 0;
        for (size_t j = 0; j < r->n_jobs; j++) {
            if (r->jobs[j].finish_s >= 0) {
                jct[n++] = r->jobs[j].finish_s - r->jobs[j].submit_s;
            }
        }
        qsort(jct, n, sizeof(*jct), i64_cmp);
        gt_buf_printf(b, "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"%s\" points=\"",
                      colours[i % GT_ARRAY_LEN(colours)]);
        /* 200 points along the y axis are plenty for the eye. */
        for (int k = 1; n > 0 && k <= 200; k++) {
            size_t idx = (size_t)((double)k / 200.0 * (double)n);
            idx = idx == 0 ? 0 : idx - 1;
            double lx = log10(jct[idx] > 1 ? (double)jct[idx] : 1.0);
            double x = ML + (lx - lo) / (hi - lo) * pw;
            double y = MT + ph - (double)k / 200.0 * ph;
            gt_buf_printf(b, "%.1f,%.1f ", x, y);
        }
        gt_buf_puts(b, "\"/>\n");
        free(jct);
    }
    svg_legend(b, runs, n_runs);
    gt_buf_puts(b, "</svg>\n");
}

void gt_sim_svg_queue(struct gt_buf *b, const struct gt_sim_run *runs, size_t n_runs)
{
    const int pw = W - ML - MR, ph = H - MT - MB;
    int64_t t0 = INT64_MAX, t1 = INT64_MIN, ymax = 1;
    for (size_t i = 0; i < n_runs; i++) {
        for (size_t k = 0; k < runs[i].n_samples; k++) {
            const struct gt_sim_sample *s = &runs[i].samples[k];
            t0 = s->t_s < t0 ? s->t_s : t0;
            t1 = s->t_s > t1 ? s->t_s : t1;
            ymax = s->waiting > ymax ? s->waiting : ymax;
        }
    }
    if (t1 <= t0) {
        t0 = 0;
        t1 = 1;
    }
    svg_open(b, "Jobs waiting over time", "days since the first submission", "jobs waiting");
    double days = (double)(t1 - t0) / 86400.0;
    int step = days > 60 ? 10 : days > 10 ? 5 : 1;
    for (int d = 0; d <= (int)days; d += step) {
        int x = ML + (int)((double)d / days * pw);
        gt_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%d</text>\n", x,
                      MT + ph + 15, d);
    }
    for (int q = 0; q <= 4; q++) {
        int y = MT + ph - q * ph / 4;
        gt_buf_printf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%lld</text>\n", ML - 5, y + 4,
                      (long long)(ymax * q / 4));
    }
    for (size_t i = 0; i < n_runs; i++) {
        gt_buf_printf(b, "<polyline fill=\"none\" stroke-width=\"1\" stroke=\"%s\" points=\"",
                      colours[i % GT_ARRAY_LEN(colours)]);
        for (size_t k = 0; k < runs[i].n_samples; k++) {
            const struct gt_sim_sample *s = &runs[i].samples[k];
            double x = ML + (double)(s->t_s - t0) / (double)(t1 - t0) * pw;
            double y = MT + ph - (double)s->waiting / (double)ymax * ph;
            gt_buf_printf(b, "%.1f,%.1f ", x, y);
        }
        gt_buf_puts(b, "\"/>\n");
    }
    svg_legend(b, runs, n_runs);
    gt_buf_puts(b, "</svg>\n");
}

int gt_sim_file_write(const char *path, const struct gt_buf *b, struct gt_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return gt_err_set(err, -errno, "%s: %s", path, gt_errcode_str(-errno));
    }
    size_t off = 0;
    while (off < b->len) {
        ssize_t n = write(fd, b->data + off, b->len - off);
        if (n < 0) {
            int rc = -errno;
            close(fd);
            return gt_err_set(err, rc, "%s: %s", path, gt_errcode_str(rc));
        }
        off += (size_t)n;
    }
    if (close(fd) < 0) {
        return gt_err_set(err, -errno, "%s: %s", path, gt_errcode_str(-errno));
    }
    return 0;
}
