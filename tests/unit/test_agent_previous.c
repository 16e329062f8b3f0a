/*
 * Which gone runs' state directories the agent keeps: the one a Task names
 * as its status.previous.uid (the run a restart replaced), and no other.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

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

/* Each Task of a JSON list, decoded as the agent decodes a list's items. */
static struct gt_api_task **tasks_of(const char *text, size_t *n)
{
    json_t *list = json_of(text);
    *n = json_array_size(list);
    struct gt_api_task **tasks = gt_xcalloc(*n + 1, sizeof(*tasks));
    for (size_t i = 0; i < *n; i++) {
        tasks[i] = gt_api_task_new(json_array_get(list, i));
    }
    json_decref(list);
    return tasks;
}

static void tasks_free(struct gt_api_task **tasks, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        gt_api_task_free(tasks[i]);
    }
    free(tasks);
}

static void test_previous_kept(void **state)
{
    (void)state;
    size_t n;
    /* t-worker-0 ran as A then B and now runs as C; u-master-0 was restarted once. */
    struct gt_api_task **tasks = tasks_of("[{\"metadata\":{\"name\":\"t-worker-0\",\"uid\":\"C\"},"
                                          "\"status\":{\"phase\":\"Running\","
                                          "\"previous\":{\"uid\":\"B\",\"nodeName\":\"n1\"}}},"
                                          "{\"metadata\":{\"name\":\"u-master-0\",\"uid\":\"E\"},"
                                          "\"status\":{\"phase\":\"Pending\","
                                          "\"previous\":{\"uid\":\"D\",\"nodeName\":\"n1\"}}},"
                                          "{\"metadata\":{\"name\":\"v-worker-0\",\"uid\":\"F\"},"
                                          "\"status\":{\"previous\":{\"uid\":\"\"}}},"
                                          "{\"metadata\":{\"name\":\"w-worker-0\",\"uid\":\"G\"}}]",
                                          &n);
    assert_true(gt_task_previous_kept("B", tasks, n));
    assert_true(gt_task_previous_kept("D", tasks, n));
    /* only the latest previous run: A is no longer named */
    assert_false(gt_task_previous_kept("A", tasks, n));
    /* a live uid is not a previous run, and "" names nothing */
    assert_false(gt_task_previous_kept("C", tasks, n));
    assert_false(gt_task_previous_kept("", tasks, n));
    assert_false(gt_task_previous_kept("B", tasks, 0));
    assert_false(gt_task_previous_kept("B", NULL, 0));
    tasks_free(tasks, n);
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
