/*
 * YAML/JSON helpers: multi-document loading, core-schema typing of plain
 * scalars, rejected constructs with their line:column, dump round-trips,
 * dotted paths and compact dumps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/common.h"

static json_t *load_ok(const char *text)
{
    json_t *docs = NULL;
    struct gt_err err = {0};
    int rc = gt_yaml_load_documents(text, strlen(text), &docs, &err);
    if (rc != 0) {
        fail_msg("load failed: %s\n%s", err.msg, text);
    }
    return docs;
}

/* The one document of text. */
static json_t *load_one(const char *text)
{
    json_t *docs = load_ok(text);
    assert_int_equal(json_array_size(docs), 1);
    json_t *doc = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    return doc;
}

static void expect_error(const char *text, const char *why)
{
    json_t *docs = NULL;
    struct gt_err err = {0};
    int rc = gt_yaml_load_documents(text, strlen(text), &docs, &err);
    if (rc != GT_EBADREQ || !strstr(err.msg, why)) {
        fail_msg("want error \"%s\", got rc=%d \"%s\" for:\n%s", why, rc, err.msg, text);
    }
    assert_null(docs);
}

static void test_multi_document(void **state)
{
    (void)state;
    json_t *docs = load_ok("---\n"
                           "kind: Job\n"
                           "---\n"
                           "---\n"
                           "# only a comment\n"
                           "---\n"
                           "kind: Project\n"
                           "...\n");
    assert_int_equal(json_array_size(docs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(docs, 0), "kind")), "Job");
    assert_string_equal(json_string_value(json_object_get(json_array_get(docs, 1), "kind")),
                        "Project");
    json_decref(docs);

    docs = load_ok("");
    assert_int_equal(json_array_size(docs), 0);
    json_decref(docs);
}

static void test_core_schema_types(void **state)
{
    (void)state;
    json_t *d = load_one("n1: ~\n"
                         "n2: null\n"
                         "n3:\n"
                         "b1: true\n"
                         "b2: False\n"
                         "i1: 42\n"
                         "i2: -7\n"
                         "i3: 0x1f\n"
                         "i4: 0o17\n"
                         "f1: 1.5\n"
                         "f2: 2e3\n"
                         "f3: -.5\n"
                         "s1: yes\n"
                         "s2: on\n"
                         "s3: \"42\"\n"
                         "s4: 'true'\n"
                         "s5: 0x\n"
                         "s6: 1.2.3\n"
                         "s7: 500m\n"
                         "s8: !!str 12\n"
                         "s9: 012abc\n");
    assert_true(json_is_null(json_object_get(d, "n1")));
    assert_true(json_is_null(json_object_get(d, "n2")));
    assert_true(json_is_null(json_object_get(d, "n3")));
    assert_true(json_is_true(json_object_get(d, "b1")));
    assert_true(json_is_false(json_object_get(d, "b2")));
    assert_int_equal(json_integer_value(json_object_get(d, "i1")), 42);
    assert_int_equal(json_integer_value(json_object_get(d, "i2")), -7);
    assert_int_equal(json_integer_value(json_object_get(d, "i3")), 31);
    assert_int_equal(json_integer_value(json_object_get(d, "i4")), 15);
    assert_true(json_is_real(json_object_get(d, "f1")));
    assert_true(json_real_value(json_object_get(d, "f1")) == 1.5);
    assert_true(json_real_value(json_object_get(d, "f2")) == 2000.0);
    assert_true(json_real_value(json_object_get(d, "f3")) == -0.5);
    const char *strings[][2] = {{"s1", "yes"},  {"s2", "on"}, {"s3", "42"},
                                {"s4", "true"}, {"s5", "0x"}, {"s6", "1.2.3"},
                                {"s7", "500m"}, {"s8", "12"}, {"s9", "012abc"}};
    for (size_t i = 0; i < GT_ARRAY_LEN(strings); i++) {
        json_t *v = json_object_get(d, strings[i][0]);
        assert_true(json_is_string(v));
        assert_string_equal(json_string_value(v), strings[i][1]);
    }
    json_decref(d);
}

static void test_nested_and_flow(void **state)
{
    (void)state;
    json_t *d = load_one("spec:\n"
                         "  replicaSpecs:\n"
                         "    Worker:\n"
                         "      replicas: 2\n"
                         "      template:\n"
                         "        command: [python3, train.py, \"--lr\", 0.1]\n"
                         "        env:\n"
                         "        - name: A\n"
                         "          value: \"1\"\n"
                         "  empty: {}\n");
    json_t *cmd = gt_json_path(d, "spec.replicaSpecs.Worker.template.command");
    assert_int_equal(json_array_size(cmd), 4);
    assert_string_equal(json_string_value(json_array_get(cmd, 2)), "--lr");
    assert_true(json_is_real(json_array_get(cmd, 3)));
    json_t *env = gt_json_path(d, "spec.replicaSpecs.Worker.template.env");
    assert_string_equal(json_string_value(json_object_get(json_array_get(env, 0), "value")), "1");
    assert_int_equal(json_object_size(gt_json_path(d, "spec.empty")), 0);
    assert_null(gt_json_path(d, "spec.missing.x"));
    assert_null(gt_json_path(d, "spec.replicaSpecs.Worker.replicas.x"));
    json_decref(d);
}

static void test_json_input(void **state)
{
    (void)state;
    json_t *d =
        load_one("  {\"a\": {\"b\": [1, 2.5, \"x\", null, true]}, \"big\": 9007199254740993}");
    assert_int_equal(json_integer_value(json_object_get(d, "big")), 9007199254740993LL);
    assert_int_equal(json_array_size(gt_json_path(d, "a.b")), 5);
    json_decref(d);
    /* flow YAML that is not JSON still loads */
    d = load_one("{a: 1, b: [x, y]}");
    assert_int_equal(json_integer_value(json_object_get(d, "a")), 1);
    json_decref(d);
    expect_error("{\"a\": 1, \"a\": 2}", "duplicate");
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("a: &x 1\nb: *x\n", "anchors");
    expect_error("a: [1, *x]\n", "line 1");
    expect_error("- &a [1]\n", "anchors");
    expect_error("a: 1\na: 2\n", "line 2 column 1: duplicate mapping key");
    expect_error("1: x\n", "mapping keys must be strings");
    expect_error("true: x\n", "mapping keys must be strings");
    expect_error("? [a]\n: x\n", "mapping keys must be strings");
    expect_error("a: .inf\n", "infinity");
    expect_error("a: -.Inf\n", "infinity");
    expect_error("a: .nan\n", "NaN");
    expect_error("a: 1e999\n", "out of range");
    expect_error("a: 99999999999999999999\n", "integer out of range");
    expect_error("a: !!binary aGk=\n", "unsupported tag");
    expect_error("a: !custom {}\n", "unsupported tag");
    expect_error("a: b: c\n", "line 1 column 5");
    expect_error("a:\n  - x\n  y: 1\n", "line 3");
    expect_error("a: \"unterminated\n", "yaml: line");
    expect_error("\"k\\0ey\": 1\n", "NUL");
    char deep[101];
    memset(deep, '[', 100);
    deep[100] = '\0';
    expect_error(deep, "nesting too deep");
}

static void assert_round_trip(json_t *v)
{
    char *text = gt_yaml_dump(v);
    json_t *docs = NULL;
    struct gt_err err = {0};
    if (gt_yaml_load_documents(text, strlen(text), &docs, &err) != 0) {
        fail_msg("reload failed: %s\n%s", err.msg, text);
    }
    json_t *back = json_array_get(docs, 0);
    if (!json_equal(v, back)) {
        char *want = gt_json_dumps(v);
        char *got = gt_json_dumps(back);
        fail_msg("round trip differs:\nwant %s\ngot  %s\nyaml:\n%s", want, got, text);
    }
    json_decref(docs);
    free(text);
}

static void test_dump_round_trip(void **state)
{
    (void)state;
    const char *cases[] = {
        "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"a\","
        "\"labels\":{\"app.kubernetes.io/name\":\"x\"}},\"spec\":{\"replicaSpecs\":{\"Worker\":"
        "{\"replicas\":2,\"template\":{\"command\":[\"python3\",\"-c\",\"print('hi: there')\"],"
        "\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"\"}]}}}}}",
        "{\"s\":[\"true\",\"null\",\"~\",\"\",\"1\",\"0x1F\",\"1e3\",\".inf\",\"-\",\"- x\","
        "\"a: b\",\"# c\",\"x #y\",\" lead\",\"trail \",\"line\\nbreak\",\"tab\\there\","
        "\"q\\\"uote\",\"back\\\\slash\",\"caf\\u00e9\",\"\\u0085\\u2028\\u007f\\u0001\","
        "\"emoji \\ud83d\\ude00\",\"---\",\"...\",\"[x]\",\"{y}\",\"@z\",\"`t`\",\"key:\","
        "\"%p\",\"!t\",\"&a\",\"*b\",\"|\",\">\",\"'s'\",\"on\",\"no\",\"yes\"]}",
        "{\"n\":[1,-2,0,9223372036854775807,1.5,-0.25,1e300,2.0,true,false,null],"
        "\"e\":{},\"a\":[],\"nest\":[[1,[2,[]]],[{}],[{\"a\":{\"b\":[{\"c\":1,\"d\":[]}]}}]]}",
        "[{\"a\":1,\"b\":{\"c\":[1,2]}},[],\"x\"]",
        "\"just a string\"",
        "12",
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(cases); i++) {
        json_t *v = json_loads(cases[i], JSON_DECODE_ANY, NULL);
        assert_non_null(v);
        assert_round_trip(v);
        json_decref(v);
    }
    /* keys past YAML's implicit-key limit take the explicit "? key" form */
    char key[2000];
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    json_t *v = json_object();
    json_object_set_new(v, key, json_pack("[i,{s:i}]", 1, key, 2));
    json_object_set_new(v, "x", json_pack("{s:s}", key, key));
    assert_round_trip(v);
    json_decref(v);
}

static void test_dump_shape(void **state)
{
    (void)state;
    json_t *v = json_loads("{\"kind\":\"Job\",\"spec\":{\"n\":1,\"l\":[\"a\",{\"b\":2,\"c\":3}]}}",
                           0, NULL);
    char *text = gt_yaml_dump(v);
    assert_string_equal(text, "kind: Job\n"
                              "spec:\n"
                              "  n: 1\n"
                              "  l:\n"
                              "  - a\n"
                              "  - b: 2\n"
                              "    c: 3\n");
    free(text);
    json_decref(v);
}

static void test_json_dumps(void **state)
{
    (void)state;
    json_t *v = json_loads("{\"b\": 1, \"a\": {\"d\": [1, 2], \"c\": \"x\"}}", 0, NULL);
    char *s = gt_json_dumps(v);
    assert_string_equal(s, "{\"a\":{\"c\":\"x\",\"d\":[1,2]},\"b\":1}");
    free(s);
    json_decref(v);
}

static void test_json_find(void **state)
{
    (void)state;
    json_t *conds = json_pack("[{s:i}, {s:s, s:s}, {s:s, s:s}, {s:s, s:s}]", "type", 1, "type",
                              "Ready", "status", "False", "type", "Failed", "status", "True",
                              "type", "Ready", "status", "True");
    /* the first match; a non-string member is no match */
    json_t *r = gt_json_find(conds, "type", "Ready");
    assert_non_null(r);
    assert_string_equal(json_string_value(json_object_get(r, "status")), "False");
    assert_ptr_equal(gt_json_find(conds, "type", "Failed"), json_array_get(conds, 2));
    assert_null(gt_json_find(conds, "type", "Running"));
    assert_null(gt_json_find(conds, "type", NULL));
    assert_null(gt_json_find(conds, "name", "Ready"));
    assert_null(gt_json_find(NULL, "type", "Ready"));
    assert_null(gt_json_find(json_object_get(json_array_get(conds, 1), "type"), "type", "Ready"));
    json_decref(conds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multi_document),  cmocka_unit_test(test_core_schema_types),
        cmocka_unit_test(test_nested_and_flow), cmocka_unit_test(test_json_input),
        cmocka_unit_test(test_errors),          cmocka_unit_test(test_dump_round_trip),
        cmocka_unit_test(test_dump_shape),      cmocka_unit_test(test_json_dumps),
        cmocka_unit_test(test_json_find),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
