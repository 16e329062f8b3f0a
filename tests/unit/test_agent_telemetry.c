/*
 * Where gantlet reads a task's TensorBoard event files
 * (gt_tel_log_dir_host): spec.tensorboard.logDir relative to the working
 * directory or the agent's DATA/work, absolute beneath a volume mount (then
 * in the volume's hostPath), and refused anywhere else; an image task's
 * relative logDir without a workingDir is refused too.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/gantlet.h"

/* A validated, decoded Task with spec.tensorboard.logDir dir and the
 * template fields tmpl (JSON members, may be ""). */
static struct gt_api_task *task_with(const char *dir, const char *tmpl)
{
    char *text = gt_xasprintf(
        "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Task\",\"metadata\":{\"name\":\"t-worker-0\","
        "\"project\":\"p\",\"uid\":\"u-1\"},\"spec\":{\"job\":\"t\",\"template\":{\"command\":"
        "[\"true\"]%s%s},\"volumes\":[{\"name\":\"out\",\"hostPath\":\"/srv/data/run-7\"}],"
        "\"tensorboard\":{\"logDir\":\"%s\"}}}",
        *tmpl ? "," : "", tmpl, dir);
    json_t *obj = json_loads(text, 0, NULL);
    free(text);
    assert_non_null(obj);
    struct gt_err err = {0};
    if (gt_api_validate(GT_KIND_TASK, obj, &err) < 0) {
        fail_msg("task fixture: %s", err.msg);
    }
    struct gt_api_task *t = gt_api_task_new(obj);
    json_decref(obj);
    return t;
}

/* The host path of dir for a task with tmpl, or the error code. */
static int resolve(const char *dir, const char *tmpl, char *buf, struct gt_err *err)
{
    struct gt_api_task *t = task_with(dir, tmpl);
    int rc = gt_tel_log_dir_host(t, "/var/lib/gantlet/tasks/u-1", buf, PATH_MAX, err);
    gt_api_task_free(t);
    return rc;
}

static const char mount_out[] = "\"volumeMounts\":[{\"name\":\"out\",\"mountPath\":\"/output\"}]";

static void relative_to_working_dir(void **state)
{
    (void)state;
    char buf[PATH_MAX];
    struct gt_err err = {0};
    assert_int_equal(resolve("tb", "", buf, &err), 0);
    assert_string_equal(buf, "/var/lib/gantlet/tasks/u-1/work/tb");
    assert_int_equal(resolve("runs/a", "\"workingDir\":\"/home/alice/exp\"", buf, &err), 0);
    assert_string_equal(buf, "/home/alice/exp/runs/a");
    /* absolute, inside the working directory of a task on the node's filesystem */
    assert_int_equal(resolve("/home/alice/exp/tb", "\"workingDir\":\"/home/alice/exp\"", buf, &err),
                     0);
    assert_string_equal(buf, "/home/alice/exp/tb");
}

static void beneath_a_volume_mount(void **state)
{
    (void)state;
    char buf[PATH_MAX];
    struct gt_err err = {0};
    assert_int_equal(resolve("/output/tensorboard", mount_out, buf, &err), 0);
    assert_string_equal(buf, "/srv/data/run-7/tensorboard");
    assert_int_equal(resolve("/output", mount_out, buf, &err), 0);
    assert_string_equal(buf, "/srv/data/run-7");
    /* a working directory inside the mount carries a relative logDir there */
    char tmpl[256];
    snprintf(tmpl, sizeof(tmpl), "\"workingDir\":\"/output/w\",%s", mount_out);
    assert_int_equal(resolve("tb", tmpl, buf, &err), 0);
    assert_string_equal(buf, "/srv/data/run-7/w/tb");
    /* an image task's logDir in a volume is read on the node */
    snprintf(tmpl, sizeof(tmpl), "\"image\":\"busybox:1\",%s", mount_out);
    assert_int_equal(resolve("/output/tb", tmpl, buf, &err), 0);
    assert_string_equal(buf, "/srv/data/run-7/tb");
}

static void elsewhere_is_refused(void **state)
{
    (void)state;
    char buf[PATH_MAX];
    struct gt_err err = {0};
    /* /outputs is not beneath /output: whole components only */
    assert_int_equal(resolve("/outputs/tb", mount_out, buf, &err), GT_EFORBIDDEN);
    assert_non_null(strstr(err.msg, "neither in a volume nor in the task's working directory"));
    gt_err_clear(&err);
    assert_int_equal(resolve("/etc", "", buf, &err), GT_EFORBIDDEN);
    gt_err_clear(&err);
    assert_int_equal(resolve("tb", "\"image\":\"busybox:1\"", buf, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "spec.tensorboard.logDir"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(relative_to_working_dir),
        cmocka_unit_test(beneath_a_volume_mount),
        cmocka_unit_test(elsewhere_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
