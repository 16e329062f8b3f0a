/*
 * Unit tests for gantryd's authentication (static token file) and
 * authorization (roles from the Project/Department index).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/server.h"

static void test_tokens_parse_quoted_groups(void **state)
{
    (void)state;
    const char *text = "# comment\n"
                       "admin-token,root,0,\"gantry:admins,ops\"\n"
                       "\n"
                       "node-token,node-n1,0,\"gantry:nodes\"\r\n"
                       "bob-token,bob,1002\n"
                       "q-token,\"we,ird\",7,\"a, b ,,c\"\n";
    struct gt_server_tokens *t = NULL;
    struct gt_err err = {0};
    assert_int_equal(gt_server_tokens_parse(text, strlen(text), &t, &err), 0);
    assert_int_equal(gt_server_tokens_count(t), 4);
    const struct gt_server_user *u = gt_server_tokens_find(t, "admin-token");
    assert_non_null(u);
    assert_string_equal(u->name, "root");
    assert_int_equal(u->uid, 0);
    assert_true(u->admin);
    assert_false(u->node);
    assert_int_equal(u->n_groups, 2);
    assert_string_equal(u->groups[1], "ops");
    u = gt_server_tokens_find(t, "node-token");
    assert_true(u->node);
    assert_false(u->admin);
    u = gt_server_tokens_find(t, "bob-token");
    assert_int_equal(u->uid, 1002);
    assert_int_equal(u->n_groups, 0);
    u = gt_server_tokens_find(t, "q-token");
    assert_string_equal(u->name, "we,ird");
    assert_int_equal(u->n_groups, 3);
    assert_string_equal(u->groups[0], "a");
    assert_string_equal(u->groups[1], "b");
    assert_string_equal(u->groups[2], "c");
    assert_null(gt_server_tokens_find(t, "nope"));
    assert_null(gt_server_tokens_find(t, ""));
    gt_server_tokens_free(t);
}

/* Near misses of a token (a prefix, one more byte, the last byte changed)
 * are unknown; a replaced set's users stay readable until the new set is
 * freed, and the new set alone answers. */
static void test_tokens_near_misses_and_replace(void **state)
{
    (void)state;
    const char *old_text = "s3cret-token-0001,bob,1002\n";
    const char *new_text = "fresh-token,dave,1004\n";
    struct gt_server_tokens *cur = NULL, *next = NULL;
    struct gt_err err = {0};
    assert_int_equal(gt_server_tokens_parse(old_text, strlen(old_text), &cur, &err), 0);
    const struct gt_server_user *bob = gt_server_tokens_find(cur, "s3cret-token-0001");
    assert_non_null(bob);
    const char *misses[] = {"s3cret-token-000", "s3cret-token-00011", "s3cret-token-0002",
                            "S3cret-token-0001"};
    for (size_t i = 0; i < sizeof(misses) / sizeof(misses[0]); i++) {
        assert_null(gt_server_tokens_find(cur, misses[i]));
    }
    assert_int_equal(gt_server_tokens_parse(new_text, strlen(new_text), &next, &err), 0);
    gt_server_tokens_replace(&cur, next);
    assert_ptr_equal(cur, next);
    assert_null(gt_server_tokens_find(cur, "s3cret-token-0001"));
    assert_string_equal(gt_server_tokens_find(cur, "fresh-token")->name, "dave");
    assert_string_equal(bob->name, "bob"); /* still allocated for its borrowers */
    assert_int_equal(gt_server_tokens_count(cur), 1);
    gt_server_tokens_free(cur);
}

static void test_tokens_reject_malformed_lines(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *want;
    } cases[] = {
        {"a,b\n", "line 1: want token,user,uid"},
        {"ok,u,1\nx,y,-1\n", "line 2: uid"},
        {"ok,u,1\nx,y,abc\n", "line 2: uid"},
        {"a,b,1,\"g1,g2\n", "line 1: unterminated quote"},
        {"a,b,1,\"g\"x\n", "line 1: text after a closing quote"},
        {"a,b,1,g,extra\n", "line 1: too many fields"},
        {"a,b,1\na,c,2\n", "line 2: duplicate token"},
        {",b,1\n", "line 1: empty token"},
        {"a,b\"c,1\n", "line 1: quote inside"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct gt_server_tokens *t = NULL;
        struct gt_err err = {0};
        int rc = gt_server_tokens_parse(cases[i].text, strlen(cases[i].text), &t, &err);
        assert_int_equal(rc, GT_EINVAL);
        assert_null(t);
        if (!strstr(err.msg, cases[i].want)) {
            fail_msg("case %zu: %s lacks %s", i, err.msg, cases[i].want);
        }
    }
}

static json_t *load(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    return v;
}

/* Index obj, a Project or Department as JSON, as gantryd does: typed. */
static void put(struct gt_server_access *a, enum gt_kind kind, json_t *obj)
{
    struct gt_api_object *t = gt_api_object_new(kind, obj);
    gt_server_access_put(a, t);
    gt_api_object_free(t);
}

/* dept-a (admin erin) holds proj-a (alice admin, bob member, carol viewer);
 * dept-b holds proj-b (dave member). */
static struct gt_server_access *seed(void)
{
    struct gt_server_access *a = gt_server_access_new();
    const char *objs[] = {
        "{\"metadata\":{\"name\":\"dept-a\"},\"spec\":{\"admins\":[\"erin\"]}}",
        "{\"metadata\":{\"name\":\"dept-b\"},\"spec\":{}}",
        "{\"metadata\":{\"name\":\"proj-a\"},\"spec\":{\"department\":\"dept-a\",\"members\":["
        "{\"user\":\"alice\",\"role\":\"admin\"},{\"user\":\"bob\",\"role\":\"member\"},"
        "{\"user\":\"carol\",\"role\":\"viewer\"}]}}",
        "{\"metadata\":{\"name\":\"proj-b\"},\"spec\":{\"department\":\"dept-b\",\"members\":["
        "{\"user\":\"dave\",\"role\":\"member\"}]}}",
    };
    for (size_t i = 0; i < 4; i++) {
        json_t *o = load(objs[i]);
        put(a, i < 2 ? GT_KIND_DEPARTMENT : GT_KIND_PROJECT, o);
        json_decref(o);
    }
    return a;
}

static struct gt_server_user user(const char *name)
{
    struct gt_server_user u = {.name = (char *)name, .uid = 1000};
    return u;
}

static int az(struct gt_server_access *a, const char *who, enum gt_server_verb verb,
              enum gt_kind kind, const char *project, const char *name, const char *sub)
{
    struct gt_server_user u = user(who);
    struct gt_server_authz r = {
        .verb = verb, .kind = kind, .project = project, .name = name, .sub = sub};
    return gt_server_authorize(a, &u, &r);
}

static void test_project_roles(void **state)
{
    (void)state;
    struct gt_server_access *a = seed();
    const enum gt_server_verb writes[] = {GT_VERB_CREATE, GT_VERB_UPDATE, GT_VERB_DELETE};
    /* readers and writers of jobs in proj-a */
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(az(a, "alice", writes[i], GT_KIND_JOB, "proj-a", "j", NULL), 0);
        assert_int_equal(az(a, "bob", writes[i], GT_KIND_JOB, "proj-a", "j", NULL), 0);
        assert_int_equal(az(a, "erin", writes[i], GT_KIND_TASK, "proj-a", "t", NULL), 0);
        assert_int_equal(az(a, "carol", writes[i], GT_KIND_JOB, "proj-a", "j", NULL),
                         GT_EFORBIDDEN);
    }
    assert_int_equal(az(a, "carol", GT_VERB_READ, GT_KIND_JOB, "proj-a", NULL, NULL), 0);
    /* a member of A gets nothing in B, whatever the verb */
    for (int v = GT_VERB_READ; v <= GT_VERB_DELETE; v++) {
        for (size_t i = 0; i < 4; i++) {
            const char *who[] = {"alice", "bob", "carol", "erin"};
            assert_int_equal(az(a, who[i], v, GT_KIND_JOB, "proj-b", "j", NULL), GT_EFORBIDDEN);
            assert_int_equal(az(a, who[i], v, GT_KIND_PROJECT, "proj-b", "proj-b", NULL),
                             GT_EFORBIDDEN);
        }
    }
    /* unknown project: nobody but admins */
    assert_int_equal(az(a, "bob", GT_VERB_READ, GT_KIND_JOB, "nope", NULL, NULL), GT_EFORBIDDEN);
    /* status and binding are for controllers */
    assert_int_equal(az(a, "alice", GT_VERB_UPDATE, GT_KIND_JOB, "proj-a", "j", "status"),
                     GT_EFORBIDDEN);
    assert_true(gt_server_can_read_project(a, &(struct gt_server_user){.name = "carol"}, "proj-a"));
    assert_false(
        gt_server_can_read_project(a, &(struct gt_server_user){.name = "carol"}, "proj-b"));
    gt_server_access_free(a);
}

static void test_project_and_department_objects(void **state)
{
    (void)state;
    struct gt_server_access *a = seed();
    struct gt_server_user alice = user("alice"), bob = user("bob"), erin = user("erin");
    struct gt_server_authz r = {
        .verb = GT_VERB_UPDATE, .kind = GT_KIND_PROJECT, .project = "proj-a", .name = "proj-a"};
    assert_int_equal(gt_server_authorize(a, &alice, &r), 0); /* project admin may PUT */
    assert_int_equal(gt_server_authorize(a, &bob, &r), GT_EFORBIDDEN);
    r.department = "dept-b"; /* moving it needs dept-b's admin */
    assert_int_equal(gt_server_authorize(a, &alice, &r), GT_EFORBIDDEN);
    assert_int_equal(gt_server_authorize(a, &erin, &r), GT_EFORBIDDEN);
    r.department = "dept-a";
    assert_int_equal(gt_server_authorize(a, &erin, &r), 0);
    r.verb = GT_VERB_DELETE;
    assert_int_equal(gt_server_authorize(a, &alice, &r), GT_EFORBIDDEN);
    assert_int_equal(gt_server_authorize(a, &erin, &r), 0);
    /* creating a project: department admins, in their department */
    r = (struct gt_server_authz){.verb = GT_VERB_CREATE,
                                 .kind = GT_KIND_PROJECT,
                                 .project = "new",
                                 .name = "new",
                                 .department = "dept-a"};
    assert_int_equal(gt_server_authorize(a, &erin, &r), 0);
    r.department = "dept-b";
    assert_int_equal(gt_server_authorize(a, &erin, &r), GT_EFORBIDDEN);
    /* departments: read by their admins and their projects' members; written by admins only */
    assert_int_equal(az(a, "erin", GT_VERB_READ, GT_KIND_DEPARTMENT, NULL, "dept-a", NULL), 0);
    assert_int_equal(az(a, "carol", GT_VERB_READ, GT_KIND_DEPARTMENT, NULL, "dept-a", NULL), 0);
    assert_int_equal(az(a, "dave", GT_VERB_READ, GT_KIND_DEPARTMENT, NULL, "dept-a", NULL),
                     GT_EFORBIDDEN);
    assert_int_equal(az(a, "erin", GT_VERB_UPDATE, GT_KIND_DEPARTMENT, NULL, "dept-a", NULL),
                     GT_EFORBIDDEN);
    /* nodes and priority classes: everyone reads, nobody writes */
    assert_int_equal(az(a, "nobody", GT_VERB_READ, GT_KIND_NODE, NULL, "n1", NULL), 0);
    assert_int_equal(az(a, "nobody", GT_VERB_READ, GT_KIND_PRIORITYCLASS, NULL, "p", NULL), 0);
    assert_int_equal(az(a, "erin", GT_VERB_CREATE, GT_KIND_NODE, NULL, "n1", NULL), GT_EFORBIDDEN);
    /* events follow their involved object's project; cluster events are for admins */
    assert_int_equal(az(a, "carol", GT_VERB_READ, GT_KIND_EVENT, "proj-a", "e", NULL), 0);
    assert_int_equal(az(a, "carol", GT_VERB_READ, GT_KIND_EVENT, "proj-b", "e", NULL),
                     GT_EFORBIDDEN);
    assert_int_equal(az(a, "erin", GT_VERB_READ, GT_KIND_EVENT, NULL, "e", NULL), GT_EFORBIDDEN);
    /* the index follows deletes and replacements */
    gt_server_access_delete(a, GT_KIND_PROJECT, "proj-a");
    assert_int_equal(az(a, "bob", GT_VERB_READ, GT_KIND_JOB, "proj-a", NULL, NULL), GT_EFORBIDDEN);
    json_t *o = load("{\"metadata\":{\"name\":\"proj-b\"},\"spec\":{\"department\":\"dept-b\","
                     "\"members\":[{\"user\":\"bob\",\"role\":\"viewer\"}]}}");
    put(a, GT_KIND_PROJECT, o);
    json_decref(o);
    assert_int_equal(az(a, "bob", GT_VERB_READ, GT_KIND_JOB, "proj-b", NULL, NULL), 0);
    assert_int_equal(az(a, "dave", GT_VERB_READ, GT_KIND_JOB, "proj-b", NULL, NULL), GT_EFORBIDDEN);
    assert_string_equal(gt_server_access_project_department(a, "proj-b"), "dept-b");
    gt_server_access_free(a);
}

static void test_admins_and_nodes(void **state)
{
    (void)state;
    struct gt_server_access *a = seed();
    struct gt_server_user admin = {.name = "root", .admin = true};
    struct gt_server_user node = {.name = "node-n1", .node = true};
    struct gt_server_authz r = {
        .verb = GT_VERB_DELETE, .kind = GT_KIND_DEPARTMENT, .name = "dept-a"};
    assert_int_equal(gt_server_authorize(a, &admin, &r), 0);
    assert_int_equal(gt_server_authorize(a, &node, &r), GT_EFORBIDDEN);
    r = (struct gt_server_authz){.verb = GT_VERB_READ, .kind = GT_KIND_JOB, .project = "proj-b"};
    assert_int_equal(gt_server_authorize(a, &node, &r), 0);
    r = (struct gt_server_authz){
        .verb = GT_VERB_UPDATE, .kind = GT_KIND_NODE, .name = "n1", .sub = "status"};
    assert_int_equal(gt_server_authorize(a, &node, &r), 0);
    r = (struct gt_server_authz){.verb = GT_VERB_UPDATE,
                                 .kind = GT_KIND_TASK,
                                 .project = "proj-a",
                                 .name = "t",
                                 .sub = "status"};
    assert_int_equal(gt_server_authorize(a, &node, &r), 0);
    r.sub = NULL; /* a task's spec is not the agent's */
    assert_int_equal(gt_server_authorize(a, &node, &r), GT_EFORBIDDEN);
    r.sub = "binding";
    assert_int_equal(gt_server_authorize(a, &node, &r), GT_EFORBIDDEN);
    r = (struct gt_server_authz){.verb = GT_VERB_CREATE, .kind = GT_KIND_EVENT, .name = "e"};
    assert_int_equal(gt_server_authorize(a, &node, &r), 0);
    gt_server_access_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens_parse_quoted_groups),
        cmocka_unit_test(test_tokens_near_misses_and_replace),
        cmocka_unit_test(test_tokens_reject_malformed_lines),
        cmocka_unit_test(test_project_roles),
        cmocka_unit_test(test_project_and_department_objects),
        cmocka_unit_test(test_admins_and_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
