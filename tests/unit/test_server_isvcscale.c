/*
 * Unit tests of the serving autoscaler's decision (isvcscale.c): the
 * policy read from a service's spec with its defaults, prompt scale-up
 * bounded by maxReplicas (a tenth of the target tolerated), scale-down only after the stabilisation
 * delay (and not at all when the load comes back within it), the floor of replicas, the requests/s
 * metric, a restarted controller keeping the replicas it finds, and the reasons given to scheduler
 * waits. Time is passed in, so nothing here sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "api/api.h"
#include "server/isvcscale.h"

/* min 1, max 3, target 1 in flight, window 2 s, down delay 3 s */
static struct gt_isvc_scale_policy small_policy(void)
{
    return (struct gt_isvc_scale_policy){
        .min = 1, .max = 3, .target = 1, .window_ms = 2000, .down_delay_ms = 3000};
}

/* Feed metric every 250 ms (the gateway's poll) from *now for ms; the
 * last decision. */
static int64_t feed(const struct gt_isvc_scale_policy *p, struct gt_isvc_scale *s, double metric,
                    int64_t *now, int64_t ms)
{
    int64_t d = s->desired;
    for (int64_t end = *now + ms; *now < end;) {
        *now += 250;
        d = gt_isvc_scale_decide(p, s, metric, *now);
    }
    return d;
}

static void test_policy_of_spec(void **state)
{
    (void)state;
    json_t *spec = json_loads("{\"autoscaling\":{\"windowSeconds\":5,\"scaleDownDelaySeconds\":7},"
                              "\"variants\":[{\"name\":\"a\",\"replicas\":2,\"maxReplicas\":4,"
                              "\"scaleTarget\":3,\"scaleMetric\":\"rps\"},"
                              "{\"name\":\"b\",\"replicas\":2}]}",
                              0, NULL);
    assert_non_null(spec);
    const json_t *vs = json_object_get(spec, "variants");
    struct gt_isvc_scale_policy p;
    assert_true(gt_isvc_scale_policy_of(spec, json_array_get(vs, 0), &p));
    assert_int_equal(p.min, 2);
    assert_int_equal(p.max, 4);
    assert_true(p.target == 3.0);
    assert_true(p.rps);
    assert_int_equal(p.window_ms, 5000);
    assert_int_equal(p.down_delay_ms, 7000);
    /* a fixed count is not autoscaled */
    assert_false(gt_isvc_scale_policy_of(spec, json_array_get(vs, 1), &p));
    assert_int_equal(p.max, 2);
    json_decref(spec);
    /* the defaults: target 1 request in flight, Knative's 60 s window */
    spec = json_loads("{\"variants\":[{\"name\":\"a\",\"maxReplicas\":3}]}", 0, NULL);
    assert_true(
        gt_isvc_scale_policy_of(spec, json_array_get(json_object_get(spec, "variants"), 0), &p));
    assert_int_equal(p.min, 1);
    assert_true(p.target == 1.0);
    assert_false(p.rps);
    assert_int_equal(p.window_ms, GT_ISVC_SCALE_WINDOW_S * 1000);
    assert_int_equal(p.down_delay_ms, GT_ISVC_SCALE_DOWN_DELAY_S * 1000);
    json_decref(spec);
}

static void test_scale_up_promptly_within_max(void **state)
{
    (void)state;
    struct gt_isvc_scale_policy p = small_policy();
    struct gt_isvc_scale s;
    gt_isvc_scale_init(&s, 1);
    int64_t now = 1000000;
    assert_int_equal(gt_isvc_scale_decide(&p, &s, 0, now), 1);
    /* 2 in flight: 2 replicas within the panic window (a tenth of 2 s) */
    assert_int_equal(feed(&p, &s, 2, &now, 500), 2);
    /* 10 in flight: at most maxReplicas */
    assert_int_equal(feed(&p, &s, 10, &now, 500), 3);
    assert_int_equal(feed(&p, &s, 10, &now, 10000), 3);
    /* exactly the target per replica is enough: 3 in flight, 3 replicas */
    gt_isvc_scale_init(&s, 1);
    assert_int_equal(gt_isvc_scale_decide(&p, &s, 3, now), 3);
    assert_int_equal(feed(&p, &s, 3, &now, 20000), 3);
    /* a tenth of a replica's target is tolerated: 1.05 in flight is one
     * replica's load, 1.2 calls for a second */
    gt_isvc_scale_init(&s, 1);
    assert_int_equal(feed(&p, &s, 1.05, &now, 5000), 1);
    assert_int_equal(feed(&p, &s, 1.2, &now, 500), 2);
}

static void test_scale_down_after_delay_only(void **state)
{
    (void)state;
    struct gt_isvc_scale_policy p = small_policy();
    struct gt_isvc_scale s;
    gt_isvc_scale_init(&s, 1);
    int64_t now = 1000000;
    assert_int_equal(feed(&p, &s, 3, &now, 5000), 3);
    /* the load stops: the average falls over the window, then the delay */
    int64_t stopped = now;
    while (gt_isvc_scale_decide(&p, &s, 0, now) == 3) {
        now += 250;
        assert_true(now - stopped < 60000);
    }
    /* never before the delay has passed */
    assert_true(now - stopped >= p.down_delay_ms);
    assert_int_equal(feed(&p, &s, 0, &now, 20000), 1);
    assert_int_equal(s.desired, 1);
}

static void test_dip_within_delay_keeps_replicas(void **state)
{
    (void)state;
    struct gt_isvc_scale_policy p = small_policy();
    p.window_ms = 500; /* the average follows at once: the delay alone holds */
    struct gt_isvc_scale s;
    gt_isvc_scale_init(&s, 1);
    int64_t now = 1000000;
    assert_int_equal(feed(&p, &s, 3, &now, 3000), 3);
    /* a dip shorter than the delay, then the load again: still 3 */
    assert_int_equal(feed(&p, &s, 0, &now, 2000), 3);
    assert_int_equal(feed(&p, &s, 3, &now, 1000), 3);
    assert_int_equal(feed(&p, &s, 0, &now, 2000), 3);
    /* down to the most called for during the delay: 1 in flight, 1 replica */
    assert_int_equal(feed(&p, &s, 1, &now, 5000), 1);
}

static void test_bounds_and_rps(void **state)
{
    (void)state;
    struct gt_isvc_scale_policy p = {
        .min = 2, .max = 5, .target = 50, .rps = true, .window_ms = 1000, .down_delay_ms = 0};
    struct gt_isvc_scale s;
    /* a controller restarted with 4 replicas running keeps them at first */
    gt_isvc_scale_init(&s, 4);
    int64_t now = 1000000;
    assert_int_equal(gt_isvc_scale_decide(&p, &s, 180, now), 4);
    /* 120 requests/s over a target of 50: 3 (no delay: at once) */
    assert_int_equal(feed(&p, &s, 120, &now, 5000), 3);
    /* never below the floor, even idle */
    assert_int_equal(feed(&p, &s, 0, &now, 5000), 2);
    /* a state from more than the bounds allow is brought within them */
    gt_isvc_scale_init(&s, 9);
    assert_int_equal(gt_isvc_scale_decide(&p, &s, 1000, now), 5);
    /* a negative sample is no load */
    assert_int_equal(feed(&p, &s, -5, &now, 5000), 2);
}

static void test_wait_reasons(void **state)
{
    (void)state;
    const char *text;
    assert_string_equal(gt_isvc_scale_wait_reason("Quota: project p needs cpu 100m, hard cap "
                                                  "250m reached (200m in use)",
                                                  &text),
                        "QuotaExceeded");
    assert_string_equal(text, "project p needs cpu 100m, hard cap 250m reached (200m in use)");
    assert_string_equal(
        gt_isvc_scale_wait_reason("Inadmissible: ExceedsProjectCap: project p", &text),
        "QuotaExceeded");
    assert_string_equal(gt_isvc_scale_wait_reason("Inadmissible: NoNodeLargeEnough: a task asks "
                                                  "for nvidia.com/gpu 9",
                                                  &text),
                        "Unschedulable");
    assert_string_equal(text, "NoNodeLargeEnough: a task asks for nvidia.com/gpu 9");
    assert_string_equal(gt_isvc_scale_wait_reason("Unschedulable: no node has 1 free GPU", &text),
                        "Unschedulable");
    assert_string_equal(text, "no node has 1 free GPU");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_of_spec),
        cmocka_unit_test(test_scale_up_promptly_within_max),
        cmocka_unit_test(test_scale_down_after_delay_only),
        cmocka_unit_test(test_dip_within_delay_keeps_replicas),
        cmocka_unit_test(test_bounds_and_rps),
        cmocka_unit_test(test_wait_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
