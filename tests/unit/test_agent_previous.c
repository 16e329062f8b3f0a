/*
 * Which gone runs' state directories the agent keeps: the one a Task names
 * as its status.previous.uid (the run a restart replaced), and no other.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "agent/gantlet.h"

static json_t *json_of(const char *text)
{
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    if (!v) {
        fail_msg("bad test JSON: %s: %s", jerr.text, text);
    }
    return v;
}

static void test_previous_kept(void **state)
{
    (void)state;
    /* t-worker-0 ran as A then B and now runs as C; u-master-0 was restarted once. */
    json_t *tasks = json_of("[{\"metadata\":{\"name\":\"t-worker-0\",\"uid\":\"C\"},"
                            "\"status\":{\"phase\":\"Running\","
                            "\"previous\":{\"uid\":\"B\",\"nodeName\":\"n1\"}}},"
                            "{\"metadata\":{\"name\":\"u-master-0\",\"uid\":\"E\"},"
                            "\"status\":{\"phase\":\"Pending\","
                            "\"previous\":{\"uid\":\"D\",\"nodeName\":\"n1\"}}},"
                            "{\"metadata\":{\"name\":\"v-worker-0\",\"uid\":\"F\"},"
                            "\"status\":{\"previous\":{\"uid\":\"\"}}},"
                            "{\"metadata\":{\"name\":\"w-worker-0\",\"uid\":\"G\"}}]");
    assert_true(gt_task_previous_kept("B", tasks));
    assert_true(gt_task_previous_kept("D", tasks));
    /* only the latest previous run: A is no longer named */
    assert_false(gt_task_previous_kept("A", tasks));
    /* a live uid is not a previous run, and "" names nothing */
    assert_false(gt_task_previous_kept("C", tasks));
    assert_false(gt_task_previous_kept("", tasks));
    json_t *empty = json_array();
    assert_false(gt_task_previous_kept("B", empty));
    assert_false(gt_task_previous_kept("B", NULL));
    json_decref(empty);
    json_decref(tasks);
}

/* A gone task (no Task object) that has exited is removed; whether the
 * removal waits for the previous-runs list is the daemon's business, but
 * the decision itself must still say remove. */
static void test_gone_exited_decides_remove(void **state)
{
    (void)state;
    struct gt_task_local l = {.known = true, .started = true, .exited = true, .reported = true};
    assert_int_equal(gt_task_decide(&l, NULL), GT_TA_REMOVE);
    l.exited = false;
    assert_int_equal(gt_task_decide(&l, NULL), GT_TA_KILL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_previous_kept),
        cmocka_unit_test(test_gone_exited_decides_remove),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
