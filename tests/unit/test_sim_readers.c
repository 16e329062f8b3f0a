/*
 * Unit tests for the gantry-sim readers: Philly (jobs and VC sizes), the
 * generic CSV, openb pods and nodes, the configuration, and trace
 * selection. Good input gives exact values; each bad line fails with
 * GT_EINVAL and an error naming that line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/sim.h"

#define PHILLY_HEADER "timestamp,duration,num_gpus,gpu_time,cluster\n"

static int philly(const char *text, struct gt_sim_trace *t, struct gt_err *err)
{
    gt_sim_trace_init(t);
    return gt_sim_philly_parse(text, strlen(text), t, err);
}

/* text must fail with GT_EINVAL and an error containing want. */
static void philly_bad(const char *text, const char *want)
{
    struct gt_sim_trace t;
    struct gt_err err = {0};
    assert_int_equal(philly(text, &t, &err), GT_EINVAL);
    if (!strstr(err.msg, want)) {
        fail_msg("error \"%s\" lacks \"%s\"", err.msg, want);
    }
    gt_sim_trace_fini(&t);
}

static void test_philly_good(void **state)
{
    (void)state;
    struct gt_sim_trace t;
    struct gt_err err = {0};
    const char *text = PHILLY_HEADER "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
                                     "2017-10-01 00:00:10,100.0,8,800.0,6214e9\n"
                                     "2017-10-09 07:01:55,66.0,2,132.0,11cb48\n\n";
    assert_int_equal(philly(text, &t, &err), 0);
    assert_int_equal(t.n_jobs, 3);
    assert_int_equal(t.n_vcs, 2);
    assert_string_equal(t.vcs[t.jobs[1].vc].name, "6214e9");
    assert_int_equal(t.jobs[0].vc, t.jobs[2].vc);
    assert_int_equal(t.jobs[1].duration_s, 100);
    assert_int_equal(t.jobs[1].num_gpu, 8);
    assert_int_equal(t.jobs[1].line, 3);
    /* 2017-10-01 00:00:10 as seconds since 1970 of the same wall clock. */
    assert_int_equal(t.jobs[1].submit_s, 1506816010);
    assert_int_equal(t.jobs[0].submit_s - t.jobs[1].submit_s, 8 * 86400 + 7 * 3600 + 105);
    gt_sim_trace_fini(&t);
}

static void test_philly_bad(void **state)
{
    (void)state;
    philly_bad("", "line 1: no header");
    philly_bad("timestamp,duration\n", "line 1");
    philly_bad(PHILLY_HEADER "2017-10-09 07:01:55,66.0,1,66.0,a\n2017-13-01 00:00:00,1.0,1,1.0,a\n",
               "line 3: timestamp");
    philly_bad(PHILLY_HEADER "2017-02-29 00:00:00,1.0,1,1.0,a\n", "line 2: timestamp");
    philly_bad(PHILLY_HEADER "2017-10-09 07:01:55,66.5,1,66.5,a\n", "line 2: duration");
    philly_bad(PHILLY_HEADER "2017-10-09 07:01:55,66.0,-1,66.0,a\n", "line 2: num_gpus");
    philly_bad(PHILLY_HEADER "2017-10-09 07:01:55,66.0,2,66.0,a\n", "line 2: gpu_time");
    philly_bad(PHILLY_HEADER "2017-10-09 07:01:55,66.0,1,66.0,\n", "line 2: cluster");
    philly_bad(PHILLY_HEADER "2017-10-09 07:01:55,66.0,1,66.0\n", "line 2: 4 fields");
    philly_bad(PHILLY_HEADER "\n2017-10-09 07:01:55,66.0,1,66.0,a\n", "line 2: empty line");
    philly_bad(PHILLY_HEADER "2017-10-09 07:01:55,66.0,1,66.0,a\r\n", "line 2: invalid byte");
    philly_bad(PHILLY_HEADER "2017-10-09 07:01:55,99999999999999999999.0,1,1.0,a\n",
               "line 2: duration");
}

static void test_vc_sizes(void **state)
{
    (void)state;
    struct gt_sim_trace t;
    struct gt_err err = {0};
    const char *jobs = PHILLY_HEADER "2017-10-09 07:01:55,66.0,1,66.0,aa\n";
    assert_int_equal(philly(jobs, &t, &err), 0);
    const char *sizes = "vc,node num\nbb,4\naa,2\n";
    assert_int_equal(gt_sim_vc_sizes_parse(sizes, strlen(sizes), &t, &err), 0);
    assert_int_equal(t.n_vcs, 2);
    assert_int_equal(t.vcs[0].nodes, 2);
    assert_int_equal(t.vcs[1].nodes, 4);
    assert_int_equal(t.vcs[1].gpus_per_node, 8);
    const char *dup = "vc,node num\ncc,1\ncc,2\n";
    assert_int_equal(gt_sim_vc_sizes_parse(dup, strlen(dup), &t, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "line 3: vc cc listed twice"));
    gt_err_clear(&err);
    const char *zero = "vc,node num\ndd,0\n";
    assert_int_equal(gt_sim_vc_sizes_parse(zero, strlen(zero), &t, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "line 2: node num"));
    gt_sim_trace_fini(&t);
}

static void test_csv(void **state)
{
    (void)state;
    struct gt_sim_trace t;
    struct gt_err err = {0};
    gt_sim_trace_init(&t);
    const char *three = "submission_time,duration,num_gpu\n0,10,1\n5,20,4\n";
    assert_int_equal(gt_sim_csv_parse(three, strlen(three), &t, &err), 0);
    assert_int_equal(t.n_jobs, 2);
    assert_string_equal(t.vcs[t.jobs[1].vc].name, "default");
    assert_int_equal(t.jobs[1].submit_s, 5);
    assert_int_equal(t.jobs[1].duration_s, 20);
    assert_int_equal(t.jobs[1].num_gpu, 4);
    const char *four = "submission_time,duration,num_gpu,vc\n1,2,3,x\n";
    assert_int_equal(gt_sim_csv_parse(four, strlen(four), &t, &err), 0);
    assert_string_equal(t.vcs[t.jobs[2].vc].name, "x");
    /* Columns by name, in any order, extra ones (a leading job_id) ignored. */
    const char *extra = "job_id,vc,num_gpu,user,submission_time,duration\n"
                        "j1,y,2,alice,7,30\n"
                        "j2,x,8,bob,9,40\n";
    assert_int_equal(gt_sim_csv_parse(extra, strlen(extra), &t, &err), 0);
    assert_int_equal(t.n_jobs, 5);
    assert_string_equal(t.vcs[t.jobs[3].vc].name, "y");
    assert_int_equal(t.jobs[3].submit_s, 7);
    assert_int_equal(t.jobs[3].duration_s, 30);
    assert_int_equal(t.jobs[3].num_gpu, 2);
    assert_string_equal(t.vcs[t.jobs[4].vc].name, "x");
    assert_int_equal(t.jobs[4].num_gpu, 8);
    assert_int_equal(t.jobs[4].line, 3);
    const char *bad[][2] = {
        {"submission_time,duration\n", "line 1: header has no column num_gpu"},
        {"job_id,duration,num_gpu\n", "line 1: header has no column submission_time"},
        {"submission_time,duration,num_gpu,duration\n",
         "line 1: header names column duration twice"},
        {"submission_time,,duration,num_gpu\n", "line 1: header field 2 is empty"},
        {"job_id,submission_time,duration,num_gpu\nj,0,10\n", "line 2: 3 fields, want 4"},
        {"job_id,submission_time,duration,num_gpu\nj,0,10,x\n", "line 2: num_gpu"},
        {"submission_time,duration,num_gpu\n0,10,1\n0,1.0,1\n", "line 3: duration"},
        {"submission_time,duration,num_gpu\n-1,10,1\n", "line 2: submission_time"},
        {"submission_time,duration,num_gpu\n0,10\n", "line 2: 2 fields"},
        {"submission_time,duration,num_gpu,vc\n0,10,1,\n", "line 2: vc"},
        {"submission_time,duration,num_gpu\n0,10,1x\n", "line 2: num_gpu"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gt_err_clear(&err);
        assert_int_equal(gt_sim_csv_parse(bad[i][0], strlen(bad[i][0]), &t, &err), GT_EINVAL);
        if (!strstr(err.msg, bad[i][1])) {
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, bad[i][1]);
        }
    }
    gt_sim_trace_fini(&t);
}

#define POD_HEADER                                                                                 \
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"            \
    "deletion_time,scheduled_time\n"

static void test_openb(void **state)
{
    (void)state;
    struct gt_sim_openb o;
    struct gt_err err = {0};
    gt_sim_openb_init(&o);
    const char *pods = POD_HEADER "p0,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
                                  "p1,6000,12288,1,460,V100|T4,LS,Pending,5,,\n"
                                  "p2,4000,100,0,0,,BE,Failed,9,10,9\n"
                                  "p3,4000,100,8,1000,,BE,Running,9,10,9\n";
    assert_int_equal(gt_sim_openb_pods_parse(pods, strlen(pods), &o, &err), 0);
    assert_int_equal(o.n_pods, 4);
    assert_int_equal(o.pods[1].cpu_milli, 6000);
    assert_int_equal(o.pods[1].memory_mib, 12288);
    assert_int_equal(o.pods[1].gpu_milli, 460);
    assert_int_equal(o.pods[3].num_gpu, 8);
    const char *nodes = "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\n"
                        "n1,96000,786432,8,G2\n";
    assert_int_equal(gt_sim_openb_nodes_parse(nodes, strlen(nodes), &o, &err), 0);
    assert_int_equal(o.n_nodes, 2);
    assert_string_equal(o.nodes[1].name, "n1");
    assert_string_equal(o.nodes[1].model, "G2");
    assert_int_equal(o.nodes[1].gpus, 8);
    const char *bad_pods[][2] = {
        {POD_HEADER "p,1,1,2,500,,LS,Running,0,1,0\n", "line 2: gpu_milli 500"},
        {POD_HEADER "p,1,1,1,0,,LS,Running,0,1,0\n", "line 2: num_gpu 1 with gpu_milli 0"},
        {POD_HEADER "p,1,1,1,1001,,LS,Running,0,1,0\n", "line 2: gpu_milli"},
        {POD_HEADER "p,1,1,1,100,,LS,Running,x,1,0\n", "line 2: creation_time"},
        {POD_HEADER ",1,1,1,100,,LS,Running,0,1,0\n", "line 2: name"},
        {"name,cpu\n", "line 1"},
    };
    for (size_t i = 0; i < sizeof(bad_pods) / sizeof(bad_pods[0]); i++) {
        gt_err_clear(&err);
        const char *s = bad_pods[i][0];
        assert_int_equal(gt_sim_openb_pods_parse(s, strlen(s), &o, &err), GT_EINVAL);
        if (!strstr(err.msg, bad_pods[i][1])) {
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, bad_pods[i][1]);
        }
    }
    gt_err_clear(&err);
    const char *dup = "sn,cpu_milli,memory_mib,gpu,model\nn0,1,1,1,T4\n";
    assert_int_equal(gt_sim_openb_nodes_parse(dup, strlen(dup), &o, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "line 2: sn n0 listed twice"));
    gt_sim_openb_fini(&o);
}

static void test_config(void **state)
{
    (void)state;
    struct gt_sim_config c;
    struct gt_err err = {0};
    gt_sim_config_default(&c);
    assert_int_equal(c.cycle_interval_s, 60);
    assert_true(c.from_s > c.to_s);
    const char *text = "# comment\n cycle_interval_s = 5 # trailing\n\nfrom = 2017-10-01\n"
                       "to = 2017-10-01\ncheck = on\nborrowing = off\n";
    assert_int_equal(gt_sim_config_parse(text, strlen(text), &c, &err), 0);
    assert_int_equal(c.cycle_interval_s, 5);
    assert_true(c.check);
    assert_int_equal(c.to_s - c.from_s, 86399);
    assert_int_equal(c.node_divisor, 1);
    assert_false(c.jct_by_size);
    const char *quarter = "node_divisor = 4\njct_by_size = on\n";
    assert_int_equal(gt_sim_config_parse(quarter, strlen(quarter), &c, &err), 0);
    assert_int_equal(c.node_divisor, 4);
    assert_true(c.jct_by_size);
    const char *bad[][2] = {
        {"node_divisor = 0\n", "line 1: node_divisor"},
        {"cycle_interval_s = 0\n", "line 1: cycle_interval_s"},
        {"\nnope = 1\n", "line 2: unknown key"},
        {"check = yes\n", "line 1: check"},
        {"from = 2017-10-32\n", "line 1: from"},
        {"cycle_interval_s\n", "line 1: want key = value"},
        {"borrowing = on\n", "borrowing: must be off"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gt_sim_config_default(&c);
        gt_err_clear(&err);
        assert_int_equal(gt_sim_config_parse(bad[i][0], strlen(bad[i][0]), &c, &err), GT_EINVAL);
        if (!strstr(err.msg, bad[i][1])) {
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.msg, bad[i][1]);
        }
    }
}

static void test_select(void **state)
{
    (void)state;
    struct gt_sim_trace t;
    struct gt_err err = {0};
    const char *text = PHILLY_HEADER "2017-10-02 00:00:00,5.0,1,5.0,a\n"      /* kept */
                                     "2017-10-01 00:00:00,5.0,1,5.0,a\n"      /* kept, first */
                                     "2017-09-30 23:59:59,5.0,1,5.0,a\n"      /* window */
                                     "2017-11-30 23:59:59,5.0,0,0.0,a\n"      /* no GPU */
                                     "2017-11-30 23:59:59,5.0,1,5.0,nosize\n" /* no VC size */
                                     "2017-11-30 23:59:59,5.0,16,80.0,a\n"    /* too big */
                                     "2017-12-01 00:00:00,5.0,1,5.0,a\n";     /* window */
    assert_int_equal(philly(text, &t, &err), 0);
    const char *sizes = "vc,node num\na,1\n";
    assert_int_equal(gt_sim_vc_sizes_parse(sizes, strlen(sizes), &t, &err), 0);
    int64_t from, to;
    assert_int_equal(gt_sim_time_parse("2017-10-01", 10, &from), 0);
    assert_int_equal(gt_sim_time_parse("2017-11-30 23:59:59", 19, &to), 0);
    gt_sim_trace_select(&t, from, to);
    assert_int_equal(t.n_jobs, 2);
    assert_int_equal(t.jobs[0].line, 3);
    assert_int_equal(t.jobs[1].line, 2);
    assert_int_equal(t.n_skipped_window, 2);
    assert_int_equal(t.n_skipped_no_gpu, 1);
    assert_int_equal(t.n_skipped_vc, 1);
    assert_int_equal(t.n_skipped_too_big, 1);
    gt_sim_trace_fini(&t);
}

/* A quarter-size replay: each VC's nodes / 4, at least one; unknown sizes
 * stay unknown. */
static void test_divide_nodes(void **state)
{
    (void)state;
    struct gt_sim_trace t;
    struct gt_err err = {0};
    gt_sim_trace_init(&t);
    const char *sizes = "vc,node num\na,64\nb,8\nc,3\n";
    assert_int_equal(gt_sim_vc_sizes_parse(sizes, strlen(sizes), &t, &err), 0);
    int32_t unknown = gt_sim_trace_vc(&t, "nosize");
    gt_sim_trace_divide_nodes(&t, 4);
    assert_int_equal(t.vcs[0].nodes, 16);
    assert_int_equal(t.vcs[1].nodes, 2);
    assert_int_equal(t.vcs[2].nodes, 1);
    assert_int_equal(t.vcs[unknown].nodes, -1);
    gt_sim_trace_divide_nodes(&t, 1);
    assert_int_equal(t.vcs[0].nodes, 16);
    gt_sim_trace_fini(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philly_good), cmocka_unit_test(test_philly_bad),
        cmocka_unit_test(test_vc_sizes),    cmocka_unit_test(test_csv),
        cmocka_unit_test(test_openb),       cmocka_unit_test(test_config),
        cmocka_unit_test(test_select),      cmocka_unit_test(test_divide_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
