/*
 * The simulator's reports (src/sim/report.c): the summary and per-job CSVs
 * byte for byte, and the two SVG charts by the numbers that carry meaning:
 * axis ticks, each run's polyline points (the CDF's nearest-rank steps on
 * its log axis, the queue samples on their time axis), colours in run order
 * and the legend. docs/results is regenerated from these, so a change in
 * any of them shows here before it shows there.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/sim.h"

/* Does hay contain needle? Fails naming both when not. */
static void assert_has(const char *hay, const char *needle)
{
    if (!strstr(hay, needle)) {
        fail_msg("missing %s in:\n%s", needle, hay);
    }
}

/* How many times needle occurs in hay. */
static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) {
        n++;
    }
    return n;
}

/* The points="..." attribute of the i-th polyline (0-based), a new string. */
static char *polyline_points(const char *svg, size_t i)
{
    const char *p = svg;
    for (size_t k = 0; k <= i; k++) {
        p = strstr(p, "<polyline ");
        assert_non_null(p);
        p += 10;
    }
    const char *start = strstr(p, "points=\"");
    assert_non_null(start);
    start += 8;
    const char *end = strchr(start, '"');
    assert_non_null(end);
    return gt_xstrndup(start, (size_t)(end - start));
}

static void test_summary_csv(void **state)
{
    (void)state;
    assert_string_equal(gt_sim_summary_header(false),
                        "policy,jobs,avg_jct_s,avg_queue_s,p50_queue_s,"
                        "p95_queue_s,p99_queue_s,util,preemptions");
    assert_string_equal(gt_sim_summary_header(true),
                        "policy,jobs,avg_jct_s,avg_queue_s,p50_queue_s,"
                        "p95_queue_s,p99_queue_s,util,preemptions,avg_jct_small_s,avg_jct_large_s");
    struct gt_sim_summary s = {
        .jobs = 3,
        .avg_jct_s = 1234.6,
        .avg_queue_s = 10.4,
        .p50_queue_s = 0,
        .p95_queue_s = 99.7,
        .p99_queue_s = 150.2,
        .makespan_s = 99999, /* not a column */
        .util = 0.5,
        .preemptions = 7,
        .avg_jct_small_s = 1000.4,
        .avg_jct_large_s = 5000.5,
    };
    struct gt_buf b;
    gt_buf_init(&b);
    gt_sim_summary_row(&b, "gantry", &s, false);
    s.util = 0.98766;
    s.jobs = 0;
    gt_sim_summary_row(&b, "fifo-restart", &s, false);
    gt_sim_summary_row(&b, "sized", &s, true);
    assert_string_equal(b.data, "gantry,3,1235,10,0,100,150,0.5000,7\n"
                                "fifo-restart,0,1235,10,0,100,150,0.9877,7\n"
                                "sized,0,1235,10,0,100,150,0.9877,7,1000,5000\n");
    gt_buf_fini(&b);
}

static void test_jobs_csv(void **state)
{
    (void)state;
    struct gt_sim_vc vcs[] = {{.name = "vc-a"}, {.name = "vc-b"}};
    struct gt_sim_job jobs[] = {{.line = 2}, {.line = 5}, {.line = 9}};
    struct gt_sim_trace t = {.jobs = jobs, .n_jobs = 3, .vcs = vcs, .n_vcs = 2};
    struct gt_sim_outcome out[] = {
        {.submit_s = 100, .start_s = 160, .finish_s = 1160, .num_gpu = 8, .vc = 1},
        {.submit_s = 200, .start_s = 200, .finish_s = 300, .num_gpu = 1, .vc = 0, .preemptions = 2},
        {.submit_s = 400, .start_s = -1, .finish_s = -1, .num_gpu = 4, .vc = 0},
    };
    struct gt_sim_run r = {.jobs = out, .n_jobs = 3};
    struct gt_buf b;
    gt_buf_init(&b);
    gt_sim_report_jobs(&b, &t, &r);
    /* jct = finish - submit, queue = start - submit, in trace order */
    assert_string_equal(b.data,
                        "line,vc,num_gpu,submit_s,start_s,finish_s,jct_s,queue_s,preemptions\n"
                        "2,vc-b,8,100,160,1160,1060,60,0\n"
                        "5,vc-a,1,200,200,300,100,0,2\n"
                        "9,vc-a,4,400,-1,-1,-401,-401,0\n");
    gt_buf_fini(&b);
}

static void test_jct_cdf_svg(void **state)
{
    (void)state;
    /* run a: three jobs of 100 s; run b: 10 s and 10^6 s, one unfinished */
    struct gt_sim_outcome a_jobs[] = {
        {.submit_s = 0, .finish_s = 100},
        {.submit_s = 50, .finish_s = 150},
        {.submit_s = 7, .finish_s = 107},
    };
    struct gt_sim_outcome b_jobs[] = {
        {.submit_s = 1000000, .finish_s = 2000000},
        {.submit_s = 5, .finish_s = -1},
        {.submit_s = 0, .finish_s = 10},
    };
    struct gt_sim_run runs[] = {
        {.label = "run-a", .jobs = a_jobs, .n_jobs = 3},
        {.label = "run-b", .jobs = b_jobs, .n_jobs = 3},
    };
    struct gt_buf b;
    gt_buf_init(&b);
    gt_sim_svg_jct_cdf(&b, runs, 2);
    const char *svg = b.data;
    const char *head = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"420\"";
    assert_true(strncmp(svg, head, strlen(head)) == 0);
    assert_has(svg, ">JCT CDF</text>");
    assert_has(svg, ">job completion time (s, log scale)</text>");
    /* decades 1e0 .. 1e7 across the 500-pixel plot from x = 70 */
    assert_has(svg, "<line x1=\"70\" y1=\"30\" x2=\"70\" y2=\"370\" stroke=\"#ddd\"/>\n"
                    "<text x=\"70\" y=\"385\" text-anchor=\"middle\">1e0</text>");
    assert_has(svg, "<text x=\"570\" y=\"385\" text-anchor=\"middle\">1e7</text>");
    assert_int_equal(count(svg, "stroke=\"#ddd\""), 8);
    /* fractions 0 .. 1 on the y axis */
    assert_has(svg, "<text x=\"65\" y=\"374\" text-anchor=\"end\">0.00</text>");
    assert_has(svg, "<text x=\"65\" y=\"34\" text-anchor=\"end\">1.00</text>");
    /* one polyline per run, colours in run order */
    assert_int_equal(count(svg, "<polyline "), 2);
    assert_has(svg, "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"#1f77b4\" points=\"");
    assert_has(svg, "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"#d62728\" points=\"");

    /* run a: 200 points, all at log10(100) = 2, i.e. x = 70 + 2/7 * 500 */
    char *pa = polyline_points(svg, 0);
    assert_int_equal(count(pa, " "), 200);
    assert_true(strncmp(pa, "212.9,368.3 212.9,366.6 ", 24) == 0);
    assert_string_equal(pa + strlen(pa) - 12, " 212.9,30.0 ");
    free(pa);

    /* run b: the unfinished job is left out; nearest rank over 2 jobs puts
     * every point but the last at 10 s, the last at 10^6 s */
    char *pb = polyline_points(svg, 1);
    assert_int_equal(count(pb, " "), 200);
    assert_true(strncmp(pb, "141.4,368.3 ", 12) == 0);
    assert_int_equal(count(pb, "141.4,"), 199);
    assert_string_equal(pb + strlen(pb) - 22, "141.4,31.7 498.6,30.0 ");
    free(pb);

    /* the legend: a line and the label per run, 18 pixels apart */
    assert_has(svg, "<line x1=\"580\" y1=\"45\" x2=\"600\" y2=\"45\" stroke=\"#1f77b4\" "
                    "stroke-width=\"2\"/>\n<text x=\"605\" y=\"49\">run-a</text>");
    assert_has(svg, "<line x1=\"580\" y1=\"63\" x2=\"600\" y2=\"63\" stroke=\"#d62728\" "
                    "stroke-width=\"2\"/>\n<text x=\"605\" y=\"67\">run-b</text>");
    assert_string_equal(svg + strlen(svg) - 7, "</svg>\n");
    gt_buf_fini(&b);
}

static void test_jct_cdf_short_jobs_and_no_jobs(void **state)
{
    (void)state;
    /* a job of 0 s sits on the 1 s line (log of at least 1) */
    struct gt_sim_outcome jobs[] = {{.submit_s = 3, .finish_s = 3}};
    struct gt_sim_run runs[] = {
        {.label = "zero", .jobs = jobs, .n_jobs = 1},
        {.label = "empty", .jobs = NULL, .n_jobs = 0},
    };
    struct gt_buf b;
    gt_buf_init(&b);
    gt_sim_svg_jct_cdf(&b, runs, 2);
    char *p0 = polyline_points(b.data, 0);
    assert_true(strncmp(p0, "70.0,368.3 ", 11) == 0);
    assert_int_equal(count(p0, "70.0,"), 200);
    free(p0);
    char *p1 = polyline_points(b.data, 1);
    assert_string_equal(p1, "");
    free(p1);
    gt_buf_fini(&b);
}

static void test_queue_svg(void **state)
{
    (void)state;
    /* two days from t0 = 1000: ticks every day; waiting peaks at 10 */
    struct gt_sim_sample sa[] = {{.t_s = 1000, .waiting = 0},
                                 {.t_s = 1000 + 86400, .waiting = 5},
                                 {.t_s = 1000 + 2 * 86400, .waiting = 10}};
    struct gt_sim_sample sb[] = {{.t_s = 1000 + 43200, .waiting = 2}};
    struct gt_sim_run runs[] = {
        {.label = "a", .samples = sa, .n_samples = 3},
        {.label = "b", .samples = sb, .n_samples = 1},
    };
    struct gt_buf b;
    gt_buf_init(&b);
    gt_sim_svg_queue(&b, runs, 2);
    const char *svg = b.data;
    assert_has(svg, ">Jobs waiting over time</text>");
    assert_has(svg, ">days since the first submission</text>");
    assert_has(svg, "<text x=\"70\" y=\"385\" text-anchor=\"middle\">0</text>\n"
                    "<text x=\"320\" y=\"385\" text-anchor=\"middle\">1</text>\n"
                    "<text x=\"570\" y=\"385\" text-anchor=\"middle\">2</text>\n");
    /* the y axis in quarters of the peak, rounded down */
    assert_has(svg, "<text x=\"65\" y=\"374\" text-anchor=\"end\">0</text>\n"
                    "<text x=\"65\" y=\"289\" text-anchor=\"end\">2</text>\n"
                    "<text x=\"65\" y=\"204\" text-anchor=\"end\">5</text>\n"
                    "<text x=\"65\" y=\"119\" text-anchor=\"end\">7</text>\n"
                    "<text x=\"65\" y=\"34\" text-anchor=\"end\">10</text>\n");
    char *pa = polyline_points(svg, 0);
    assert_string_equal(pa, "70.0,370.0 320.0,200.0 570.0,30.0 ");
    free(pa);
    char *pb = polyline_points(svg, 1);
    assert_string_equal(pb, "195.0,302.0 ");
    free(pb);
    assert_has(svg, "<polyline fill=\"none\" stroke-width=\"1\" stroke=\"#d62728\" points=\"");
    assert_has(svg, "<text x=\"605\" y=\"67\">b</text>");
    gt_buf_fini(&b);
}

static void test_queue_svg_tick_steps(void **state)
{
    (void)state;
    /* 30 days: a tick every 5 days; 90 days: every 10 */
    struct gt_sim_sample s30[] = {{.t_s = 0, .waiting = 1}, {.t_s = 30 * 86400, .waiting = 1}};
    struct gt_sim_sample s90[] = {{.t_s = 0, .waiting = 1}, {.t_s = 90 * 86400, .waiting = 1}};
    struct gt_sim_run r30 = {.label = "m", .samples = s30, .n_samples = 2};
    struct gt_sim_run r90 = {.label = "q", .samples = s90, .n_samples = 2};
    struct gt_buf b;
    gt_buf_init(&b);
    gt_sim_svg_queue(&b, &r30, 1);
    assert_int_equal(count(b.data, "text-anchor=\"middle\">"), 2 + 7); /* 2 labels, 0..30 by 5 */
    assert_has(b.data, "<text x=\"320\" y=\"385\" text-anchor=\"middle\">15</text>");
    gt_buf_reset(&b);
    gt_sim_svg_queue(&b, &r90, 1);
    assert_int_equal(count(b.data, "text-anchor=\"middle\">"), 2 + 10); /* 0..90 by 10 */
    assert_has(b.data, "<text x=\"514\" y=\"385\" text-anchor=\"middle\">80</text>");
    gt_buf_reset(&b);
    /* no samples at all: an empty chart, not a division by zero */
    struct gt_sim_run none = {.label = "none"};
    gt_sim_svg_queue(&b, &none, 1);
    assert_has(b.data, "points=\"\"/>");
    assert_has(b.data, "<text x=\"65\" y=\"34\" text-anchor=\"end\">1</text>");
    gt_buf_fini(&b);
}

static void test_file_write(void **state)
{
    (void)state;
    char dir[] = "/tmp/gt-sim-report-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = gt_xasprintf("%s/summary.csv", dir);
    struct gt_buf b;
    gt_buf_init(&b);
    gt_buf_puts(&b, "a,b\n1,2\n");
    struct gt_err err = {0};
    assert_int_equal(gt_sim_file_write(path, &b, &err), 0);
    /* written again: truncated, not appended */
    gt_buf_reset(&b);
    gt_buf_puts(&b, "x\n");
    assert_int_equal(gt_sim_file_write(path, &b, &err), 0);
    char *text;
    size_t len;
    assert_int_equal(gt_file_read(path, 1024, &text, &len, &err), 0);
    assert_string_equal(text, "x\n");
    free(text);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0);
    /* the directory is gone: the error names the path */
    assert_int_equal(gt_sim_file_write(path, &b, &err), -ENOENT);
    char *want = gt_xasprintf("%s: No such file or directory", path);
    assert_string_equal(err.msg, want);
    free(want);
    free(path);
    gt_buf_fini(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary_csv), cmocka_unit_test(test_jobs_csv),
        cmocka_unit_test(test_jct_cdf_svg), cmocka_unit_test(test_jct_cdf_short_jobs_and_no_jobs),
        cmocka_unit_test(test_queue_svg),   cmocka_unit_test(test_queue_svg_tick_steps),
        cmocka_unit_test(test_file_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
