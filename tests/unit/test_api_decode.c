/*
 * Typed objects: each kind validated and decoded by its schema rows reads
 * back field for field (defaults, absent values, enum indexes, lists,
 * map entries, resource vectors); request/limit defaulting goes both ways;
 * objects too big for the inline memory and objects never validated decode
 * safely.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/api.h"

static json_t *valid(enum gt_kind kind, const char *text)
{
    json_t *obj = NULL;
    struct gt_err err = {0};
    assert_int_equal(gt_api_parse(text, strlen(text), &obj, &err), 0);
    if (gt_api_validate(kind, obj, &err) != 0) {
        fail_msg("%s", err.msg);
    }
    return obj;
}

static const char job_json[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\","
    "\"metadata\":{\"name\":\"mnist\",\"project\":\"vision\",\"labels\":{\"team\":\"cv\"},"
    "\"creator\":{\"user\":\"alice\",\"uid\":1000}},"
    "\"spec\":{\"replicaSpecs\":{"
    "\"Master\":{\"template\":{\"image\":\"pytorch/pytorch:2.1\","
    "\"command\":[\"python3\",\"train.py\"],\"env\":[{\"name\":\"A\",\"value\":\"1\"}],"
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":2,\"cpu\":\"4\",\"memory\":\"16Gi\"}},"
    "\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\",\"readOnly\":true}]}},"
    "\"Worker\":{\"replicas\":3,\"restartPolicy\":\"OnFailure\","
    "\"template\":{\"command\":[\"python3\",\"train.py\"],\"runAsUser\":1000,"
    "\"terminationGracePeriodSeconds\":5,"
    "\"resources\":{\"requests\":{\"cpu\":0.5,\"memory\":\"1G\"},"
    "\"limits\":{\"gantry.dev/gpu-milli\":500}}}}},"
    "\"runPolicy\":{\"schedulingPolicy\":{\"minAvailable\":4,\"queue\":\"research\","
    "\"topology\":{\"required\":\"gpu-group\"}}},"
    "\"source\":{\"git\":\"https://example.com/r.git\"},"
    "\"volumes\":[{\"name\":\"data\",\"hostPath\":\"/srv/data\"}]},"
    "\"status\":{\"conditions\":[{\"type\":\"Created\",\"status\":\"True\"},"
    "{\"type\":\"Running\",\"status\":\"False\",\"reason\":\"Waiting\"}],"
    "\"replicaStatuses\":{\"Worker\":{\"active\":2}},\"restartCount\":1}}";

static void test_job(void **state)
{
    (void)state;
    json_t *obj = valid(GT_KIND_JOB, job_json);
    struct gt_api_job *job = gt_api_job_new(obj);
    json_decref(obj); /* the typed object holds its own reference */
    assert_non_null(job);
    assert_int_equal(job->o.kind, GT_KIND_JOB);
    assert_string_equal(job->o.meta.name, "mnist");
    assert_string_equal(job->o.meta.project, "vision");
    assert_string_equal(json_string_value(json_object_get(job->o.meta.labels, "team")), "cv");
    assert_string_equal(job->o.meta.creator.user, "alice");
    assert_int_equal(job->o.meta.creator.uid, 1000);
    assert_null(job->o.meta.uid);
    assert_null(job->o.meta.annotations);

    const struct gt_api_job_spec *sp = &job->spec;
    assert_int_equal(sp->replica_specs.n, 2);
    const struct gt_api_replica_spec *m = &sp->replica_specs.v[0], *w = &sp->replica_specs.v[1];
    assert_string_equal(m->type, "Master");
    assert_int_equal(m->replicas, 1);                /* default */
    assert_string_equal(m->restart_policy, "Never"); /* default */
    assert_string_equal(m->template.image, "pytorch/pytorch:2.1");
    assert_int_equal(m->template.command.n, 2);
    assert_string_equal(m->template.command.v[1], "train.py");
    assert_int_equal(m->template.args.n, 0);
    assert_int_equal(m->template.env.n, 1);
    assert_string_equal(m->template.env.v[0].name, "A");
    assert_string_equal(m->template.env.v[0].value, "1");
    assert_int_equal(m->template.volume_mounts.n, 1);
    assert_string_equal(m->template.volume_mounts.v[0].mount_path, "/data");
    assert_true(m->template.volume_mounts.v[0].read_only);
    assert_int_equal(m->template.run_as_user, GT_API_UNSET);
    assert_int_equal(m->template.grace_period_s, GT_API_UNSET);
    const struct gt_api_res *ml = &m->template.resources.limits;
    assert_int_equal(ml->v.v[GT_RES_GPU], 2000);
    assert_int_equal(ml->v.v[GT_RES_CPU], 4000);
    assert_int_equal(ml->v.v[GT_RES_MEMORY], 16LL << 30);
    assert_int_equal(ml->set, GT_RESF_GPU | GT_RESF_CPU | GT_RESF_MEMORY);
    assert_int_equal(m->template.resources.requests.set, 0);

    assert_string_equal(w->type, "Worker");
    assert_int_equal(w->replicas, 3);
    assert_string_equal(w->restart_policy, "OnFailure");
    assert_null(w->template.image);
    assert_int_equal(w->template.run_as_user, 1000);
    assert_int_equal(w->template.grace_period_s, 5);
    assert_int_equal(w->template.resources.requests.v.v[GT_RES_CPU], 500);
    assert_int_equal(w->template.resources.limits.v.v[GT_RES_GPU], 500);
    assert_int_equal(w->template.resources.limits.set, GT_RESF_GPU_MILLI);

    assert_int_equal(sp->run_policy.backoff_limit, 6); /* default */
    assert_string_equal(sp->run_policy.clean_pod_policy, "None");
    assert_int_equal(sp->run_policy.active_deadline_s, GT_API_UNSET);
    assert_int_equal(sp->run_policy.scheduling_policy.min_available, 4);
    assert_string_equal(sp->run_policy.scheduling_policy.queue, "research");
    assert_null(sp->run_policy.scheduling_policy.priority_class);
    assert_string_equal(sp->run_policy.scheduling_policy.topology.required, "gpu-group");
    assert_null(sp->run_policy.scheduling_policy.topology.preferred);
    assert_true(sp->has_source);
    assert_string_equal(sp->source.git, "https://example.com/r.git");
    assert_null(sp->source.revision);
    assert_null(sp->requirements);
    assert_int_equal(sp->volumes.n, 1);
    assert_string_equal(sp->volumes.v[0].host_path, "/srv/data");

    const struct gt_api_job_status *st = &job->status;
    assert_int_equal(st->conditions.n, 2);
    assert_true(gt_api_condition_true(&st->conditions, "Created"));
    assert_false(gt_api_condition_true(&st->conditions, "Running"));
    assert_false(gt_api_condition_true(&st->conditions, "Failed"));
    assert_string_equal(gt_api_condition_find(&st->conditions, "Running")->reason, "Waiting");
    assert_null(gt_api_condition_find(&st->conditions, "Failed"));
    assert_int_equal(st->replica_statuses.n, 1);
    assert_string_equal(st->replica_statuses.v[0].type, "Worker");
    assert_int_equal(st->replica_statuses.v[0].active, 2);
    assert_int_equal(st->replica_statuses.v[0].failed, GT_API_UNSET);
    assert_int_equal(st->restart_count, 1);
    assert_int_equal(st->requeue_count, GT_API_UNSET);
    assert_null(st->start_time);
    gt_api_job_free(job);
}

/* The one defaulting rule, both ways, per resource. */
static void test_effective(void **state)
{
    (void)state;
    json_t *obj = valid(GT_KIND_JOB, job_json);
    struct gt_api_job *job = gt_api_job_new(obj);
    struct gt_api_effective e;

    /* Master: limits only, so every request defaults to its limit */
    gt_api_resources_effective(&job->spec.replica_specs.v[0].template.resources, &e);
    assert_int_equal(e.request.v[GT_RES_CPU], 4000);
    assert_int_equal(e.request.v[GT_RES_MEMORY], 16LL << 30);
    assert_int_equal(e.request.v[GT_RES_GPU], 2000);
    assert_int_equal(e.request.v[GT_RES_STORAGE], 0);
    assert_int_equal(e.limit.v[GT_RES_CPU], 4000);
    assert_int_equal(e.limit.v[GT_RES_GPU], 2000);
    assert_false(e.gpu_share);

    /* Worker: cpu and memory requested only (limits default to them), a
     * GPU share limited only (the request defaults to it) */
    gt_api_resources_effective(&job->spec.replica_specs.v[1].template.resources, &e);
    assert_int_equal(e.request.v[GT_RES_CPU], 500);
    assert_int_equal(e.limit.v[GT_RES_CPU], 500);
    assert_int_equal(e.request.v[GT_RES_MEMORY], 1000000000);
    assert_int_equal(e.limit.v[GT_RES_MEMORY], 1000000000);
    assert_int_equal(e.request.v[GT_RES_GPU], 500);
    assert_int_equal(e.limit.v[GT_RES_GPU], 500);
    assert_true(e.gpu_share);

    /* both sides given: each keeps its own */
    struct gt_api_template_resources r = {0};
    r.requests.v.v[GT_RES_CPU] = 250;
    r.limits.v.v[GT_RES_CPU] = 1000;
    gt_api_resources_effective(&r, &e);
    assert_int_equal(e.request.v[GT_RES_CPU], 250);
    assert_int_equal(e.limit.v[GT_RES_CPU], 1000);
    gt_api_job_free(job);
    json_decref(obj);
}

static const char task_json[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Task\","
    "\"metadata\":{\"name\":\"mnist-worker-0\",\"project\":\"vision\",\"uid\":\"u-1\"},"
    "\"spec\":{\"job\":\"mnist\",\"replicaType\":\"Worker\",\"replicaIndex\":0,"
    "\"template\":{\"command\":[\"true\"]},\"nodeName\":\"gpu-01\","
    "\"gpus\":[{\"index\":3,\"uuid\":\"GPU-3\"},{\"index\":5,\"uuid\":\"GPU-5\",\"milli\":250}],"
    "\"ports\":[{\"name\":\"master\",\"port\":29500}],"
    "\"hosts\":[{\"hostname\":\"mnist-master-0\",\"ip\":\"10.0.0.1\"}],"
    "\"stop\":{\"reason\":\"Preempted\",\"gracePeriodSeconds\":30},\"priority\":-5,"
    "\"pip\":{\"indexUrl\":\"http://pip\"}},"
    "\"status\":{\"phase\":\"Terminating\",\"hostPid\":42,"
    "\"previous\":{\"uid\":\"u-0\",\"nodeName\":\"gpu-02\"}}}";

static void test_task(void **state)
{
    (void)state;
    json_t *obj = valid(GT_KIND_TASK, task_json);
    struct gt_api_task *t = gt_api_task_new(obj);
    assert_string_equal(t->o.meta.uid, "u-1");
    assert_string_equal(t->spec.job, "mnist");
    assert_string_equal(t->spec.replica_type, "Worker");
    assert_int_equal(t->spec.replica_index, 0);
    assert_string_equal(t->spec.node_name, "gpu-01");
    assert_int_equal(t->spec.gpus.n, 2);
    assert_int_equal(t->spec.gpus.v[0].index, 3);
    assert_int_equal(t->spec.gpus.v[0].milli, GT_API_UNSET);
    assert_string_equal(t->spec.gpus.v[1].uuid, "GPU-5");
    assert_int_equal(t->spec.gpus.v[1].milli, 250);
    assert_int_equal(t->spec.ports.v[0].port, 29500);
    assert_string_equal(t->spec.hosts.v[0].ip, "10.0.0.1");
    assert_true(t->spec.has_stop);
    assert_string_equal(t->spec.stop.reason, "Preempted");
    assert_int_equal(t->spec.stop.grace_period_s, 30);
    assert_int_equal(t->spec.priority, -5);
    assert_false(t->spec.privileged);
    assert_false(t->spec.has_source);
    assert_string_equal(t->spec.pip.index_url, "http://pip");
    assert_null(t->spec.pip.find_links);
    assert_int_equal(t->status.phase, GT_TASK_TERMINATING);
    assert_int_equal(t->status.exit_code, GT_API_UNSET);
    assert_int_equal(t->status.host_pid, 42);
    assert_string_equal(t->status.previous.node_name, "gpu-02");
    gt_api_task_free(t);

    /* no status at all: Pending, nothing set */
    json_object_del(obj, "status");
    json_object_del(json_object_get(obj, "spec"), "stop");
    t = gt_api_task_new(obj);
    assert_int_equal(t->status.phase, GT_TASK_PENDING);
    assert_false(t->spec.has_stop);
    assert_null(t->status.previous.uid);
    gt_api_task_free(t);
    json_decref(obj);
}

static const char node_json[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-01\"},"
    "\"spec\":{\"taints\":[{\"key\":\"dedicated\",\"value\":\"ml\",\"effect\":\"NoSchedule\"}]},"
    "\"status\":{\"capacity\":{\"cpu\":\"128\",\"memory\":\"1Ti\",\"nvidia.com/gpu\":8},"
    "\"allocatable\":{\"cpu\":\"126\",\"nvidia.com/gpu\":8},"
    "\"gpus\":[{\"index\":0,\"uuid\":\"GPU-x\",\"model\":\"A100-80GB\","
    "\"memoryBytes\":85899345920,\"numaNode\":0,\"group\":\"0\",\"health\":\"Healthy\"}],"
    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
    "\"lastHeartbeatTime\":\"2026-11-29T20:50:44Z\"}],"
    "\"addresses\":[{\"type\":\"AgentURL\",\"address\":\"http://10.0.0.1:10250\"}]}}";

static void test_node(void **state)
{
    (void)state;
    json_t *obj = valid(GT_KIND_NODE, node_json);
    struct gt_api_node *n = gt_api_node_new(obj);
    assert_false(n->spec.unschedulable);
    assert_int_equal(n->spec.taints.n, 1);
    assert_string_equal(n->spec.taints.v[0].effect, "NoSchedule");
    assert_int_equal(n->status.capacity.v.v[GT_RES_GPU], 8000);
    assert_int_equal(n->status.capacity.v.v[GT_RES_MEMORY], 1LL << 40);
    assert_int_equal(n->status.allocatable.v.v[GT_RES_CPU], 126000);
    assert_int_equal(n->status.allocatable.set, GT_RESF_CPU | GT_RESF_GPU);
    assert_int_equal(n->status.gpus.v[0].memory_bytes, 85899345920LL);
    assert_string_equal(n->status.gpus.v[0].group, "0");
    assert_true(gt_api_condition_true(&n->status.conditions, "Ready"));
    assert_string_equal(gt_api_condition_find(&n->status.conditions, "Ready")->last_heartbeat_time,
                        "2026-11-29T20:50:44Z");
    assert_ptr_equal(gt_api_conditions_json(obj),
                     json_object_get(json_object_get(obj, "status"), "conditions"));
    assert_string_equal(n->status.addresses.v[0].type, "AgentURL");
    gt_api_node_free(n);
    json_decref(obj);
}

static void test_quota_kinds(void **state)
{
    (void)state;
    json_t *obj = valid(GT_KIND_DEPARTMENT,
                        "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Department\","
                        "\"metadata\":{\"name\":\"research\"},\"spec\":{\"quota\":"
                        "{\"nvidia.com/gpu\":8,\"cpu\":\"64\"},\"limit\":{\"nvidia.com/gpu\":16},"
                        "\"admins\":[\"alice\",\"bob\"]}}");
    struct gt_api_department *d = gt_api_department_new(obj);
    json_decref(obj);
    assert_int_equal(d->spec.quota.v.v[GT_RES_GPU], 8000);
    assert_int_equal(d->spec.quota.v.v[GT_RES_CPU], 64000);
    assert_int_equal(d->spec.limit.set, GT_RESF_GPU);
    assert_int_equal(d->spec.admins.n, 2);
    assert_string_equal(d->spec.admins.v[1], "bob");
    assert_int_equal(d->status.used.set, 0);
    gt_api_department_free(d);

    obj = valid(GT_KIND_PROJECT, "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Project\","
                                 "\"metadata\":{\"name\":\"vision\"},\"spec\":{\"department\":"
                                 "\"research\",\"members\":[{\"user\":\"alice\",\"role\":"
                                 "\"viewer\"}],\"hard\":{\"storage\":\"1Ti\"}}}");
    struct gt_api_object *o = NULL;
    struct gt_err err = {0};
    assert_int_equal(gt_api_decode(GT_KIND_PROJECT, obj, &o, &err), 0);
    json_decref(obj);
    struct gt_api_project *p = (struct gt_api_project *)o;
    assert_string_equal(p->spec.department, "research");
    assert_string_equal(p->spec.members.v[0].role, "viewer");
    assert_int_equal(p->spec.hard.v.v[GT_RES_STORAGE], 1LL << 40);
    assert_false(p->spec.allow_privileged);
    gt_api_project_free(p);

    obj = valid(GT_KIND_PRIORITYCLASS, "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":"
                                       "\"PriorityClass\",\"metadata\":{\"name\":\"high\"},"
                                       "\"value\":1000}");
    struct gt_api_priority_class *pc = gt_api_priority_class_new(obj);
    assert_int_equal(pc->value, 1000);
    assert_string_equal(pc->preemption_policy, "PreemptLowerPriority");
    assert_false(pc->global_default);
    gt_api_priority_class_free(pc);
    json_decref(obj);

    /* Events have no typed form; gt_api_decode refuses what is invalid */
    assert_null(gt_api_object_new(GT_KIND_EVENT, obj));
    obj = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "gantry.dev/v1", "kind", "Project",
                    "metadata", "name", "x");
    o = (struct gt_api_object *)1;
    assert_int_equal(gt_api_decode(GT_KIND_PROJECT, obj, &o, &err), GT_EINVAL);
    assert_null(o);
    assert_string_equal(err.msg, "spec: required");
    json_decref(obj);
    gt_api_object_free(NULL);
}

/* A big object: its lists, however many, fit its one allocation. */
static void test_big(void **state)
{
    (void)state;
    json_t *obj = valid(GT_KIND_JOB, job_json);
    json_t *env = json_object_get(
        json_object_get(
            json_object_get(json_object_get(json_object_get(obj, "spec"), "replicaSpecs"),
                            "Worker"),
            "template"),
        "env");
    assert_null(env);
    env = json_array();
    for (int i = 0; i < 500; i++) {
        char name[16];
        snprintf(name, sizeof(name), "V%d", i);
        json_array_append_new(env, json_pack("{s:s,s:s}", "name", name, "value", "x"));
    }
    json_t *tmpl = json_object_get(
        json_object_get(json_object_get(json_object_get(obj, "spec"), "replicaSpecs"), "Worker"),
        "template");
    json_object_set_new(tmpl, "env", env);
    struct gt_api_job *job = gt_api_job_new(obj);
    const struct gt_api_template *t = &job->spec.replica_specs.v[1].template;
    assert_int_equal(t->env.n, 500);
    assert_string_equal(t->env.v[499].name, "V499");
    assert_int_equal(t->command.n, 2);
    assert_string_equal(job->spec.replica_specs.v[0].template.env.v[0].name, "A");
    gt_api_job_free(job);
    json_decref(obj);
}

/* A document never validated: wrong types read as absent, nothing breaks. */
static void test_unvalidated(void **state)
{
    (void)state;
    json_t *obj = json_pack("{s:s,s:{s:i},s:{s:[i,s],s:s,s:{s:{s:{s:[i]}}}},s:{s:s,s:[i]}}", "kind",
                            "Job", "metadata", "name", 3, "spec", "volumes", 1, "x", "runPolicy",
                            "bad", "replicaSpecs", "Worker", "template", "command", 7, "status",
                            "conditions", "x", "replicaStatuses", 1);
    struct gt_api_job *job = gt_api_job_new(obj);
    assert_null(job->o.meta.name);
    assert_int_equal(job->spec.volumes.n, 2);
    assert_null(job->spec.volumes.v[0].name);
    assert_int_equal(job->spec.run_policy.backoff_limit, 6);
    assert_int_equal(job->spec.replica_specs.n, 1);
    assert_int_equal(job->spec.replica_specs.v[0].replicas, 1);
    assert_int_equal(job->spec.replica_specs.v[0].template.command.n, 1);
    assert_null(job->spec.replica_specs.v[0].template.command.v[0]);
    assert_int_equal(job->status.conditions.n, 0);
    assert_int_equal(job->status.replica_statuses.n, 0);
    gt_api_job_free(job);
    json_decref(obj);

    struct gt_api_res r;
    json_t *map = json_pack("{s:s,s:s,s:i}", "cpu", "bad", "bogus", "1", "nvidia.com/gpu", (int)1);
    gt_api_res_decode(map, &r);
    assert_int_equal(r.set, GT_RESF_GPU);
    assert_int_equal(r.v.v[GT_RES_GPU], 1000);
    json_decref(map);
    gt_api_res_decode(NULL, &r);
    assert_int_equal(r.set, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job),         cmocka_unit_test(test_effective),
        cmocka_unit_test(test_task),        cmocka_unit_test(test_node),
        cmocka_unit_test(test_quota_kinds), cmocka_unit_test(test_big),
        cmocka_unit_test(test_unvalidated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
