/*
 * Unit tests for the gantry-sim replay engine and metrics, on tiny traces
 * whose outcomes are computed by hand: exact JCTs and queueing delays under
 * fifo (head-of-line) and sjf (oracle), event order at equal times, and the
 * isolation of the oracle (only sjf/srtf are given durations). Every replay
 * runs checked: the scheduler model's invariants after every step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/sim.h"

/* A cluster of nodes 8-GPU nodes, jobs from a generic CSV. */
static void trace_load_nodes(struct gt_sim_trace *t, const char *rows, int32_t nodes)
{
    struct gt_err err = {0};
    char *text = gt_xasprintf("submission_time,duration,num_gpu\n%s", rows);
    gt_sim_trace_init(t);
    assert_int_equal(gt_sim_csv_parse(text, strlen(text), t, &err), 0);
    free(text);
    t->vcs[0].nodes = nodes;
    t->vcs[0].gpus_per_node = 8;
    gt_sim_trace_select(t, 1, 0);
}

static void trace_load(struct gt_sim_trace *t, const char *rows)
{
    trace_load_nodes(t, rows, 1);
}

static void config(struct gt_sim_config *c)
{
    gt_sim_config_default(c);
    c->cycle_interval_s = 1;
    c->check = true;
}

static void replay(const struct gt_sim_trace *t, const char *policy, struct gt_sim_run *r)
{
    struct gt_sim_config c;
    struct gt_err err = {0};
    config(&c);
    gt_sim_run_init(r);
    int rc = gt_sim_replay(t, policy, &c, r, &err);
    if (rc != 0) {
        fail_msg("replay %s: %s", policy, err.msg);
    }
    assert_int_equal(r->n_violations, 0);
}

/* Three jobs on one 8-GPU node (lines 2, 3, 4 of the CSV):
 *   A: t=0, 100 s, 8 GPUs;  B: t=0, 50 s, 8 GPUs;  C: t=10, 10 s, 4 GPUs.
 * fifo: A 0-100, B 100-150, C (blocked behind B, head-of-line) 150-160. */
#define THREE "0,100,8\n0,50,8\n10,10,4\n"

static void test_fifo_exact(void **state)
{
    (void)state;
    struct gt_sim_trace t;
    struct gt_sim_run r;
    trace_load(&t, THREE);
    replay(&t, "fifo", &r);
    assert_int_equal(r.jobs[0].start_s, 0);
    assert_int_equal(r.jobs[0].finish_s, 100);
    assert_int_equal(r.jobs[1].start_s, 100);
    assert_int_equal(r.jobs[1].finish_s, 150);
    assert_int_equal(r.jobs[2].start_s, 150);
    assert_int_equal(r.jobs[2].finish_s, 160);
    struct gt_sim_summary s;
    gt_sim_summarize(&t, &r, -1, &s);
    assert_int_equal(s.jobs, 3);
    /* JCTs 100, 150, 150; queueing 0, 100, 140. */
    assert_float_equal(s.avg_jct_s, 400.0 / 3, 1e-9);
    assert_float_equal(s.avg_queue_s, 80.0, 1e-9);
    /* every job is under GT_SIM_LARGE_GPUS: all small, no large class */
    assert_float_equal(s.avg_jct_small_s, 400.0 / 3, 1e-9);
    assert_float_equal(s.avg_jct_large_s, 0, 1e-9);
    assert_float_equal(s.p50_queue_s, 100.0, 1e-9);
    assert_float_equal(s.p95_queue_s, 140.0, 1e-9);
    assert_float_equal(s.p99_queue_s, 140.0, 1e-9);
    assert_int_equal(s.makespan_s, 160);
    /* GPU-seconds 800 + 400 + 40 over 8 GPUs x 160 s. */
    assert_float_equal(s.util, 1240.0 / 1280.0, 1e-9);
    assert_int_equal(s.preemptions, 0);
    assert_int_equal(r.end_s, 160);
    gt_sim_run_fini(&r);
    gt_sim_trace_fini(&t);
}

/* sjf sees durations: B 0-50, then C (10 s) before A (100 s): C 50-60,
 * A (needs all 8 GPUs) 60-160. */
static void test_sjf_exact(void **state)
{
    (void)state;
    struct gt_sim_trace t;
    struct gt_sim_run r;
    trace_load(&t, THREE);
    replay(&t, "sjf", &r);
    assert_int_equal(r.jobs[1].start_s, 0);
    assert_int_equal(r.jobs[1].finish_s, 50);
    assert_int_equal(r.jobs[2].start_s, 50);
    assert_int_equal(r.jobs[2].finish_s, 60);
    assert_int_equal(r.jobs[0].start_s, 60);
    assert_int_equal(r.jobs[0].finish_s, 160);
    struct gt_sim_summary s;
    gt_sim_summarize(&t, &r, -1, &s);
    assert_float_equal(s.avg_jct_s, (160.0 + 50 + 50) / 3, 1e-9);
    assert_int_equal(r.n_estimates, 3);
    gt_sim_run_fini(&r);
    gt_sim_trace_fini(&t);
}

/* Only the oracle orders receive durations: for the others no job is ever
 * given a runtime estimate, and what they decide does not depend on the
 * durations (the same trace with the long and short job swapped starts the
 * jobs in the same order). */
static void test_oracle_isolation(void **state)
{
    (void)state;
    static const char *const blind[] = {"fifo", "tiresias", "gantry", "gantry/bestfit",
                                        "gantry-restart"};
    static const char *const oracle[] = {"sjf", "srtf", "sjf/bestfit"};
    struct gt_sim_trace t, swapped;
    trace_load(&t, THREE);
    trace_load(&swapped, "0,50,8\n0,100,8\n10,10,4\n");
    for (size_t i = 0; i < sizeof(blind) / sizeof(blind[0]); i++) {
        struct gt_sim_run r, rs;
        replay(&t, blind[i], &r);
        replay(&swapped, blind[i], &rs);
        assert_int_equal(r.n_estimates, 0);
        assert_false(gt_sim_policy_is_oracle(blind[i]));
        /* The job at line 2 goes first whatever its duration. */
        assert_int_equal(r.jobs[0].start_s, 0);
        assert_int_equal(rs.jobs[0].start_s, 0);
        gt_sim_run_fini(&r);
        gt_sim_run_fini(&rs);
    }
    for (size_t i = 0; i < sizeof(oracle) / sizeof(oracle[0]); i++) {
        struct gt_sim_run r;
        replay(&t, oracle[i], &r);
        assert_true(gt_sim_policy_is_oracle(oracle[i]));
        assert_int_equal(r.n_estimates, 3);
        gt_sim_run_fini(&r);
    }
    gt_sim_trace_fini(&t);
    gt_sim_trace_fini(&swapped);
}

/* srtf preempts by remaining time: A (1,000 s, all 8 GPUs) runs when B
 * (50 s, 8 GPUs) arrives at t=100; B's 50 s are less than A's 900 left, so
 * A is preempted at 100 and B starts at the next cycle (101). A restarts
 * when B ends (151), losing the 60 s restart overhead: it resumes its 900 s
 * left, or, for "srtf-restart", runs its 1,000 s again. B never preempts
 * back (A's remaining time is longer). */
static void test_srtf_preempts(void **state)
{
    (void)state;
    struct gt_sim_trace t;
    struct gt_sim_run r, rs, rg;
    trace_load(&t, "0,1000,8\n100,50,8\n");
    replay(&t, "srtf", &r);
    assert_int_equal(r.n_preemptions, 1);
    assert_int_equal(r.jobs[0].preemptions, 1);
    assert_int_equal(r.jobs[1].start_s, 101);
    assert_int_equal(r.jobs[1].finish_s, 151);
    assert_int_equal(r.jobs[0].start_s, 0);
    assert_int_equal(r.jobs[0].finish_s, 151 + 60 + 900);
    replay(&t, "srtf-restart", &rs);
    assert_int_equal(rs.n_preemptions, 1);
    assert_int_equal(rs.jobs[1].finish_s, 151);
    assert_int_equal(rs.jobs[0].finish_s, 151 + 60 + 1000);
    /* gantry-restart: A has attained 800 GPU-s (least-attained-service
     * queue 1), B none (queue 0), but no job has finished yet, so nothing
     * is expected of A's run and throwing it away is not bounded: A keeps
     * its GPUs and B starts when A ends (test_sched_policy has the rule
     * with a history). */
    replay(&t, "gantry-restart", &rg);
    assert_int_equal(rg.n_preemptions, 0);
    assert_int_equal(rg.jobs[0].finish_s, 1000);
    assert_int_equal(rg.jobs[1].start_s, 1000);
    assert_int_equal(rg.jobs[1].finish_s, 1050);
    gt_sim_run_fini(&r);
    gt_sim_run_fini(&rs);
    gt_sim_run_fini(&rg);
    gt_sim_trace_fini(&t);
}

/* A finish frees GPUs before an arrival at the same second, and both come
 * before that second's cycle, so B starts the moment A ends. Cycles run on
 * multiples of the interval: with 60 s, C arriving at 61 starts at 120. */
static void test_event_order(void **state)
{
    (void)state;
    struct gt_sim_trace t;
    struct gt_sim_run r;
    trace_load(&t, "0,10,8\n10,5,8\n61,1,1\n");
    replay(&t, "fifo", &r);
    assert_int_equal(r.jobs[0].finish_s, 10);
    assert_int_equal(r.jobs[1].start_s, 10);
    assert_int_equal(r.jobs[1].finish_s, 15);
    gt_sim_run_fini(&r);

    struct gt_sim_config c;
    struct gt_err err = {0};
    config(&c);
    c.cycle_interval_s = 60;
    gt_sim_run_init(&r);
    assert_int_equal(gt_sim_replay(&t, "fifo", &c, &r, &err), 0);
    assert_int_equal(r.jobs[0].start_s, 0);
    assert_int_equal(r.jobs[1].start_s, 60);
    assert_int_equal(r.jobs[2].start_s, 120);
    assert_int_equal(r.jobs[2].finish_s, 121);
    /* Idle stretches are skipped: a handful of cycles, not one per second. */
    assert_true(r.n_cycles <= 4);
    gt_sim_run_fini(&r);
    gt_sim_trace_fini(&t);
}

/* Multi-node gangs: 16 GPUs on two 8-GPU nodes run as two 8-GPU tasks; a
 * job larger than its VC is dropped by selection, never replayed. */
static void test_gang_and_errors(void **state)
{
    (void)state;
    struct gt_sim_trace t;
    struct gt_sim_run r;
    struct gt_err err = {0};
    trace_load_nodes(&t, "0,10,16\n0,10,8\n", 2);
    assert_int_equal(t.n_jobs, 2);
    replay(&t, "fifo", &r);
    assert_int_equal(r.jobs[0].finish_s, 10);
    assert_int_equal(r.jobs[1].start_s, 10);
    gt_sim_run_fini(&r);
    struct gt_sim_config c;
    config(&c);
    gt_sim_run_init(&r);
    assert_int_equal(gt_sim_replay(&t, "no-such-policy", &c, &r, &err), GT_ENOTFOUND);
    gt_sim_run_fini(&r);
    t.vcs[0].nodes = 1; /* now the 16-GPU job cannot fit */
    gt_err_clear(&err);
    gt_sim_run_init(&r);
    assert_int_equal(gt_sim_replay(&t, "fifo", &c, &r, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "line 2"));
    gt_sim_run_fini(&r);
    gt_sim_trace_fini(&t);
}

/* openb: 2 nodes of 2 GPUs (4 GPUs); pods of one whole GPU fill it exactly
 * and, past 100 % arrived, every further pod is dropped. */
static void test_openb_alloc(void **state)
{
    (void)state;
    struct gt_sim_openb o;
    struct gt_err err = {0};
    gt_sim_openb_init(&o);
    const char *pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                       "creation_time,deletion_time,scheduled_time\n"
                       "a,1000,1024,1,1000,,LS,Running,0,,\n";
    const char *nodes = "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,65536,2,T4\n"
                        "n1,8000,65536,2,T4\n";
    assert_int_equal(gt_sim_openb_pods_parse(pods, strlen(pods), &o, &err), 0);
    assert_int_equal(gt_sim_openb_nodes_parse(nodes, strlen(nodes), &o, &err), 0);
    struct gt_sim_alloc a;
    assert_int_equal(gt_sim_openb_alloc(&o, "fifo/bestfit", 42, true, &a, &err), 0);
    /* 4 GPUs: points 50..130 % arrive after pods 2, 3 (75 %), 4, 5 (125 %),
     * 6 (150 %); allocation stops at 100 %. */
    assert_float_equal(a.alloc_pct[0], 50.0, 1e-9);
    assert_float_equal(a.alloc_pct[2], 75.0, 1e-9);
    assert_float_equal(a.alloc_pct[5], 100.0, 1e-9);
    assert_float_equal(a.alloc_pct[8], 100.0, 1e-9);
    assert_int_equal(a.n_pods, 6);
    assert_int_equal(a.n_dropped, 2);
    assert_int_equal(a.n_violations, 0);
    assert_int_equal(gt_sim_openb_alloc(&o, "nope", 42, true, &a, &err), GT_ENOTFOUND);
    gt_sim_openb_fini(&o);
}

/* openb, read as the FGD analysis reads it: 100 nodes of 2 GPUs, pods of one
 * whole GPU (0.5 % of capacity each). The 50 % point is the mean over the
 * arrivals at 49.5 % and 50 % (49.75, not the 50 of the crossing); the
 * 100 % point averages 99.5 % and 100 % allocated (pods past 100 % are
 * dropped), and the run ends at the arrival reaching 130 %. */
static void test_openb_alloc_window(void **state)
{
    (void)state;
    struct gt_sim_openb o;
    struct gt_err err = {0};
    gt_sim_openb_init(&o);
    const char *pods = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                       "creation_time,deletion_time,scheduled_time\n"
                       "a,1000,1024,1,1000,,LS,Running,0,,\n";
    struct gt_buf nodes;
    gt_buf_init(&nodes);
    gt_buf_puts(&nodes, "sn,cpu_milli,memory_mib,gpu,model\n");
    for (int i = 0; i < 100; i++) {
        gt_buf_printf(&nodes, "n%d,8000,65536,2,T4\n", i);
    }
    assert_int_equal(gt_sim_openb_pods_parse(pods, strlen(pods), &o, &err), 0);
    assert_int_equal(gt_sim_openb_nodes_parse(nodes.data, nodes.len, &o, &err), 0);
    gt_buf_fini(&nodes);
    struct gt_sim_alloc a;
    assert_int_equal(gt_sim_openb_alloc(&o, "fifo/bestfit", 42, true, &a, &err), 0);
    assert_float_equal(a.alloc_pct[0], 49.75, 1e-9);
    assert_float_equal(a.alloc_pct[3], 79.75, 1e-9);
    assert_float_equal(a.alloc_pct[5], 99.75, 1e-9);
    assert_float_equal(a.alloc_pct[8], 100.0, 1e-9);
    assert_int_equal(a.n_pods, 260);
    assert_int_equal(a.n_dropped, 60);
    gt_sim_openb_fini(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_exact),       cmocka_unit_test(test_sjf_exact),
        cmocka_unit_test(test_oracle_isolation), cmocka_unit_test(test_srtf_preempts),
        cmocka_unit_test(test_event_order),      cmocka_unit_test(test_gang_and_errors),
        cmocka_unit_test(test_openb_alloc),      cmocka_unit_test(test_openb_alloc_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
