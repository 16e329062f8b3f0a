/*
 * Label and field selectors: each operator matched against a small label
 * set (including Kubernetes' "absent matches != and notin" rule), syntax
 * errors with their positions, and field selectors over nested objects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/api.h"

static const char labels_json[] =
    "{\"app\":\"mnist\",\"tier\":\"train\",\"gantry.dev/team\":\"cv\",\"empty\":\"\"}";

struct sel_case {
    const char *sel;
    bool match;
};

static const struct sel_case label_cases[] = {
    {"", true},
    {"   ", true},
    {"app=mnist", true},
    {"app==mnist", true},
    {"app = mnist", true},
    {"app=other", false},
    {"app!=other", true},
    {"app!=mnist", false},
    {"missing!=x", true},
    {"missing=x", false},
    {"app", true},
    {"missing", false},
    {"!missing", true},
    {"!app", false},
    {"! app", false},
    {"app in (mnist,cifar)", true},
    {"app in (cifar)", false},
    {"app in ( cifar , mnist )", true},
    {"app notin (cifar)", true},
    {"app notin (mnist,cifar)", false},
    {"missing notin (x)", true},
    {"missing in (x)", false},
    {"app=mnist,tier=train", true},
    {"app=mnist, tier=eval", false},
    {"gantry.dev/team=cv", true},
    {"gantry.dev/team in (cv)", true},
    {"empty=", true},
    {"empty", true},
    {"app=mnist,!missing,tier notin (eval),gantry.dev/team", true},
};

struct bad_case {
    const char *sel;
    const char *why;
};

static const struct bad_case label_bad[] = {
    {",", "position 1: expected a label key"},
    {"app,", "expected a term after ','"},
    {"app=mnist tier", "expected ','"},
    {"app in mnist", "expected '('"},
    {"app in (mnist", "expected ',' or ')'"},
    {"app in (a b)", "expected ',' or ')'"},
    {"app like x", "expected =, ==, !=, in or notin"},
    {"=x", "expected a label key"},
    {"!", "expected a label key"},
    {"-app=x", "label key name"},
    {"Bad_/x=y", "label key prefix"},
    {"app=-bad", "label value"},
    {"app in (ok,-bad)", "label value"},
    {"app=(x)", "expected ','"},
};

static void test_label_match(void **state)
{
    (void)state;
    json_t *labels = json_loads(labels_json, 0, NULL);
    for (size_t i = 0; i < GT_ARRAY_LEN(label_cases); i++) {
        struct gt_selector *sel = NULL;
        struct gt_err err = {0};
        if (gt_selector_parse(label_cases[i].sel, &sel, &err) != 0) {
            fail_msg("\"%s\": %s", label_cases[i].sel, err.msg);
        }
        if (gt_selector_match(sel, labels) != label_cases[i].match) {
            fail_msg("\"%s\" should %smatch", label_cases[i].sel,
                     label_cases[i].match ? "" : "not ");
        }
        gt_selector_free(sel);
    }
    json_decref(labels);
}

static void test_label_match_without_labels(void **state)
{
    (void)state;
    struct gt_selector *sel = NULL;
    assert_int_equal(gt_selector_parse("app!=x,!tier", &sel, NULL), 0);
    assert_true(gt_selector_match(sel, NULL));
    gt_selector_free(sel);
    assert_int_equal(gt_selector_parse("app", &sel, NULL), 0);
    assert_false(gt_selector_match(sel, NULL));
    json_t *odd = json_loads("{\"app\": 5}", 0, NULL); /* non-string values count as absent */
    assert_false(gt_selector_match(sel, odd));
    json_decref(odd);
    gt_selector_free(sel);
    gt_selector_free(NULL);
}

static void test_label_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < GT_ARRAY_LEN(label_bad); i++) {
        struct gt_selector *sel = NULL;
        struct gt_err err = {0};
        int rc = gt_selector_parse(label_bad[i].sel, &sel, &err);
        if (rc != GT_EBADREQ || !strstr(err.msg, label_bad[i].why) ||
            !strstr(err.msg, "label selector: position")) {
            fail_msg("\"%s\": rc=%d \"%s\", want \"%s\"", label_bad[i].sel, rc, err.msg,
                     label_bad[i].why);
        }
        assert_null(sel);
    }
    char big[9000];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    struct gt_selector *sel = NULL;
    assert_int_equal(gt_selector_parse(big, &sel, NULL), GT_EBADREQ);
}

static void test_field_selectors(void **state)
{
    (void)state;
    json_t *task = json_loads("{\"metadata\":{\"name\":\"t1\",\"project\":\"p\"},"
                              "\"spec\":{\"nodeName\":\"n1\",\"replicaIndex\":3,\"x\":{}},"
                              "\"status\":{\"phase\":\"Running\",\"ok\":true}}",
                              0, NULL);
    const struct sel_case cases[] = {
        {"", true},
        {"spec.nodeName=n1", true},
        {"spec.nodeName==n1", true},
        {"spec.nodeName=n2", false},
        {"spec.nodeName!=n2", true},
        {"spec.nodeName=n1,status.phase!=Failed", true},
        {"spec.nodeName=n1,status.phase=Failed", false},
        {"spec.missing=", true},
        {"spec.missing!=", false},
        {"spec.replicaIndex=3", true},
        {"status.ok=true", true},
        {"spec.x=", false},
        {"spec.x!=", true},
        {"metadata.name=t\\,1", false},
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(cases); i++) {
        struct gt_fieldsel *sel = NULL;
        struct gt_err err = {0};
        if (gt_fieldsel_parse(cases[i].sel, &sel, &err) != 0) {
            fail_msg("\"%s\": %s", cases[i].sel, err.msg);
        }
        if (gt_fieldsel_match(sel, task) != cases[i].match) {
            fail_msg("\"%s\" should %smatch", cases[i].sel, cases[i].match ? "" : "not ");
        }
        gt_fieldsel_free(sel);
    }
    /* escaped separators are part of the value */
    json_object_set_new(json_object_get(task, "metadata"), "name", json_string("a,b=c"));
    struct gt_fieldsel *sel = NULL;
    assert_int_equal(gt_fieldsel_parse("metadata.name=a\\,b\\=c", &sel, NULL), 0);
    assert_true(gt_fieldsel_match(sel, task));
    gt_fieldsel_free(sel);
    gt_fieldsel_free(NULL);
    json_decref(task);
}

static void test_field_errors(void **state)
{
    (void)state;
    const struct bad_case bad[] = {
        {"spec.nodeName", "expected =, == or !="},
        {"=x", "expected a field path"},
        {"spec.nodeName=n1,", "expected a term after ','"},
        {",a=b", "expected a field path"},
        {"spec node=x", "expected =, == or !="},
        {"a<b", "expected =, == or !="},
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(bad); i++) {
        struct gt_fieldsel *sel = NULL;
        struct gt_err err = {0};
        int rc = gt_fieldsel_parse(bad[i].sel, &sel, &err);
        if (rc != GT_EBADREQ || !strstr(err.msg, bad[i].why)) {
            fail_msg("\"%s\": rc=%d \"%s\", want \"%s\"", bad[i].sel, rc, err.msg, bad[i].why);
        }
        assert_null(sel);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label_match),  cmocka_unit_test(test_label_match_without_labels),
        cmocka_unit_test(test_label_errors), cmocka_unit_test(test_field_selectors),
        cmocka_unit_test(test_field_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
