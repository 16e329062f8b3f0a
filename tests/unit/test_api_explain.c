/*
 * explain.c: kubectl explain's layout of a kind and of a field from the
 * schema tables, map entries stepped over, unknown fields named, and every
 * row of the description table naming a real field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/api.h"

static char *explain(enum gt_kind kind, const char *path, int *rc, struct gt_err *err)
{
    struct gt_buf b;
    gt_buf_init(&b);
    *rc = gt_api_explain(kind, path, &b, err);
    char *text = gt_buf_take(&b);
    return text ? text : gt_xstrdup("");
}

static void test_kind(void **state)
{
    (void)state;
    struct gt_err err = {0};
    int rc;
    char *t = explain(GT_KIND_JOB, NULL, &rc, &err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(t, "KIND:     Job\nVERSION:  gantry.dev/v1\n\nDESCRIPTION:\n     A "
                              "training job"));
    assert_non_null(strstr(t, "\nFIELDS:\n   apiVersion\t<string> -required-\n"));
    assert_non_null(strstr(t, "\n   spec\t<Object> -required-\n     What the job runs"));
    assert_null(strstr(t, "FIELD:    "));
    free(t);
}

static void test_field(void **state)
{
    (void)state;
    struct gt_err err = {0};
    int rc;
    /* a map of objects: its entries' fields are the children */
    char *t = explain(GT_KIND_JOB, "spec.replicaSpecs", &rc, &err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(t, "FIELD:    replicaSpecs <map[string]Object> -required-\n"));
    assert_non_null(strstr(t, "   restartPolicy\t<string>\n"));
    assert_non_null(strstr(t, "     One of: Never, OnFailure, Always, ExitCode.\n"
                              "     Default: Never.\n"));
    assert_non_null(strstr(t, "   replicas\t<integer>\n     How many tasks of this replica "
                              "type.\n     From 1 to 1000.\n     Default: 1.\n"));
    free(t);
    /* through the entry into the template, shared by every kind that has one */
    t = explain(GT_KIND_JOB, "spec.replicaSpecs.template.command", &rc, &err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(t, "FIELD:    command <[]string>\n\nDESCRIPTION:\n     The program"));
    assert_null(strstr(t, "FIELDS:"));
    free(t);
    t = explain(GT_KIND_NOTEBOOK, "spec.template.image", &rc, &err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(t, "KIND:     Notebook\n"));
    assert_non_null(strstr(t, "An OCI image"));
    free(t);
    /* labels are a map of strings; long descriptions wrap at 80 columns */
    t = explain(GT_KIND_VOLUME, "metadata", &rc, &err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(t, "   labels\t<map[string]string>\n"));
    for (char *line = t; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        size_t n = strcspn(line, "\n");
        assert_true(n <= 80 || memchr(line, '\t', n));
    }
    free(t);
    /* a field no row describes */
    t = explain(GT_KIND_TASK, "status.hostPid", &rc, &err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(t, "DESCRIPTION:\n     <empty>\n"));
    free(t);
}

static void test_unknown_field(void **state)
{
    (void)state;
    struct gt_err err = {0};
    int rc;
    char *t = explain(GT_KIND_JOB, "spec.replicaSpecs.template.comand", &rc, &err);
    assert_int_equal(rc, GT_ENOTFOUND);
    assert_string_equal(err.msg,
                        "field \"comand\" does not exist in Job.spec.replicaSpecs.template");
    free(t);
    struct gt_err err2 = {0};
    t = explain(GT_KIND_TASK, "nope", &rc, &err2);
    assert_int_equal(rc, GT_ENOTFOUND);
    assert_string_equal(err2.msg, "field \"nope\" does not exist in Task");
    free(t);
    /* never-sent fields are not offered */
    struct gt_err err3 = {0};
    t = explain(GT_KIND_VOLUME, "status.usage", &rc, &err3);
    assert_int_equal(rc, GT_ENOTFOUND);
    free(t);
}

static void test_rows_name_fields(void **state)
{
    (void)state;
    struct gt_err err = {0};
    int rc = gt_api_explain_check(&err);
    if (rc != 0) {
        fail_msg("%s", err.msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kind),
        cmocka_unit_test(test_field),
        cmocka_unit_test(test_unknown_field),
        cmocka_unit_test(test_rows_name_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
