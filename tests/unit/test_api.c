/*
 * The object model: one valid example per kind passes and comes back
 * canonical (defaults filled, quantities rewritten, validation idempotent);
 * a table of single-field mutations of those examples is each rejected with
 * the expected "path: reason"; plus the codec, kind lookups, the status
 * subresource and resource reading.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/api.h"

static const char dept_json[] =
    "{\"apiVersion\":\"gantry.dev/"
    "v1\",\"kind\":\"Department\",\"metadata\":{\"name\":\"research\"},"
    "\"spec\":{\"quota\":{\"nvidia.com/gpu\":8,\"cpu\":\"64\",\"memory\":\"256Gi\"},"
    "\"limit\":{\"nvidia.com/gpu\":16,\"cpu\":64.5,\"memory\":\"274877906944\"},"
    "\"admins\":[\"alice\"]}}";

static const char project_json[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Project\",\"metadata\":{\"name\":\"vision\","
    "\"labels\":{\"team\":\"cv\"}},\"spec\":{\"department\":\"research\","
    "\"members\":[{\"user\":\"alice\",\"role\":\"admin\"}],"
    "\"hard\":{\"nvidia.com/gpu\":\"4\",\"storage\":\"1Ti\"}}}";

static const char pc_json[] = "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"PriorityClass\","
                              "\"metadata\":{\"name\":\"high\"},\"value\":1000}";

static const char node_json[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-01\","
    "\"labels\":{\"gantry.dev/gpu-model\":\"A100\"}},"
    "\"spec\":{\"taints\":[{\"key\":\"dedicated\",\"value\":\"ml\",\"effect\":\"NoSchedule\"}]},"
    "\"status\":{\"capacity\":{\"cpu\":\"128\",\"memory\":\"1Ti\",\"nvidia.com/gpu\":8},"
    "\"allocatable\":{\"cpu\":\"126\",\"memory\":\"1000Gi\",\"nvidia.com/gpu\":8},"
    "\"gpus\":[{\"index\":0,\"uuid\":\"GPU-x\",\"model\":\"A100-80GB\","
    "\"memoryBytes\":85899345920,\"numaNode\":0,\"group\":\"0\",\"health\":\"Healthy\"}],"
    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\","
    "\"lastHeartbeatTime\":\"2026-11-29T20:50:44Z\"}],"
    "\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.0.0.1\"},"
    "{\"type\":\"AgentURL\",\"address\":\"http://10.0.0.1:10250\"}]}}";

static const char job_json[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\","
    "\"metadata\":{\"name\":\"mnist\",\"project\":\"vision\"},"
    "\"spec\":{\"replicaSpecs\":{"
    "\"Master\":{\"template\":{\"image\":\"pytorch/pytorch:2.1\","
    "\"command\":[\"python3\",\"train.py\"],"
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1,\"cpu\":\"4\",\"memory\":\"16Gi\"}},"
    "\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\"}]}},"
    "\"Worker\":{\"replicas\":3,\"restartPolicy\":\"OnFailure\","
    "\"template\":{\"command\":[\"python3\",\"train.py\"],"
    "\"resources\":{\"requests\":{\"cpu\":0.5,\"memory\":\"1G\"},"
    "\"limits\":{\"gantry.dev/gpu-milli\":500}}}}},"
    "\"runPolicy\":{\"schedulingPolicy\":{\"minAvailable\":4,\"queue\":\"research\","
    "\"priorityClass\":\"high\"}},"
    "\"source\":{\"git\":\"https://github.com/x/y.git\",\"revision\":\"main\"},"
    "\"requirements\":[\"torch\"],"
    "\"volumes\":[{\"name\":\"data\",\"hostPath\":\"/srv/data\",\"readOnly\":true}]}}";

static const char task_json[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Task\","
    "\"metadata\":{\"name\":\"mnist-worker-0\",\"project\":\"vision\","
    "\"creator\":{\"user\":\"alice\",\"uid\":1000}},"
    "\"spec\":{\"job\":\"mnist\",\"replicaType\":\"Worker\",\"replicaIndex\":0,"
    "\"template\":{\"command\":[\"python3\"]},\"nodeName\":\"gpu-01\","
    "\"gpus\":[{\"index\":0,\"uuid\":\"GPU-x\",\"milli\":500}],"
    "\"ports\":[{\"name\":\"master\",\"port\":29500}],\"priority\":100},"
    "\"status\":{\"phase\":\"Running\",\"startTime\":\"2026-11-29T20:50:44Z\",\"hostPid\":1234}}";

static const char event_json[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"mnist-q-1\"},"
    "\"involvedObject\":{\"kind\":\"Job\",\"name\":\"mnist\",\"project\":\"vision\"},"
    "\"reason\":\"Queued\",\"message\":\"waiting for quota\"}";

static const char imagebuild_json[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"ImageBuild\","
    "\"metadata\":{\"name\":\"app\",\"project\":\"vision\"},"
    "\"spec\":{\"source\":{\"git\":\"https://example.com/app.git\",\"revision\":\"v1\"},"
    "\"dockerfilePath\":\"docker/Dockerfile\",\"context\":\"src\","
    "\"buildArgs\":[{\"name\":\"PY\",\"value\":\"3.11\"}],\"image\":\"team/app:1.0\"}}";
static const char notebook_json[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Notebook\","
    "\"metadata\":{\"name\":\"explore\",\"project\":\"vision\"},"
    "\"spec\":{\"template\":{\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}},"
    "\"home\":{\"hostPath\":\"/srv/home/alice\"}}}";
static const char volume_json[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Volume\","
    "\"metadata\":{\"name\":\"imagenet\",\"project\":\"vision\"},"
    "\"spec\":{\"capacity\":{\"storage\":\"64Mi\"},\"accessMode\":\"ReadOnlyMany\","
    "\"storageClass\":\"fast\",\"readOnly\":true},"
    "\"status\":{\"phase\":\"Available\",\"storageClass\":\"fast\","
    "\"path\":\"/srv/volumes/vision/imagenet.1.img\"}}";

static const char isvc_json[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"InferenceService\","
    "\"metadata\":{\"name\":\"digits\",\"project\":\"vision\"},"
    "\"spec\":{\"variants\":[{\"name\":\"a\",\"weight\":80,\"replicas\":2,"
    "\"model\":{\"format\":\"pytorch\",\"storageUri\":\"models://vision/digits/3\"}},"
    "{\"name\":\"b\",\"weight\":20,\"template\":{\"command\":[\"/srv/echo\"]}}],"
    "\"public\":false,\"readinessPath\":\"/v2/health/ready\","
    "\"rollout\":{\"maxSurge\":1,\"maxUnavailable\":0}}}";

static const char model_json[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Model\","
    "\"metadata\":{\"name\":\"digits\",\"project\":\"vision\",\"labels\":{\"task\":\"cls\"}},"
    "\"spec\":{\"framework\":\"pytorch\",\"description\":\"8x8 digits\"}}";
static const char modelversion_json[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"ModelVersion\","
    "\"metadata\":{\"name\":\"digits-v1\",\"project\":\"vision\"},"
    "\"spec\":{\"model\":\"digits\",\"format\":\"pytorch\","
    "\"source\":{\"job\":\"train\",\"path\":\"out/model.pt\"},"
    "\"metrics\":{\"accuracy\":0.97,\"epochs\":30},\"stage\":\"Staging\"},"
    "\"status\":{\"phase\":\"Ready\",\"version\":1,\"digest\":\"sha256:ab\","
    "\"path\":\"/srv/models/sha256/ab/model.pt\",\"size\":10,\"sourceJob\":\"train\"}}";

static const char *const examples[GT_KIND_COUNT] = {
    [GT_KIND_DEPARTMENT] = dept_json,
    [GT_KIND_PROJECT] = project_json,
    [GT_KIND_PRIORITYCLASS] = pc_json,
    [GT_KIND_NODE] = node_json,
    [GT_KIND_JOB] = job_json,
    [GT_KIND_TASK] = task_json,
    [GT_KIND_EVENT] = event_json,
    [GT_KIND_NOTEBOOK] = notebook_json,
    [GT_KIND_VOLUME] = volume_json,
    [GT_KIND_IMAGEBUILD] = imagebuild_json,
    [GT_KIND_MODEL] = model_json,
    [GT_KIND_MODELVERSION] = modelversion_json,
    [GT_KIND_INFERENCESERVICE] = isvc_json,
};

static json_t *parse(const char *text)
{
    json_t *v = NULL;
    struct gt_err err = {0};
    if (gt_api_parse(text, strlen(text), &v, &err) != 0) {
        fail_msg("parse: %s", err.msg);
    }
    return v;
}

static json_t *valid(enum gt_kind kind)
{
    json_t *v = parse(examples[kind]);
    struct gt_err err = {0};
    if (gt_api_validate(kind, v, &err) != 0) {
        fail_msg("%s example rejected: %s", gt_kind_get(kind)->name, err.msg);
    }
    return v;
}

static void assert_path_str(const json_t *obj, const char *path, const char *want)
{
    const json_t *v = gt_json_path(obj, path);
    if (!json_is_string(v) || strcmp(json_string_value(v), want) != 0) {
        char *got = v ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
        fail_msg("%s: got %s, want \"%s\"", path, got ? got : "(absent)", want);
    }
}

static void assert_path_int(const json_t *obj, const char *path, json_int_t want)
{
    const json_t *v = gt_json_path(obj, path);
    if (!json_is_integer(v) || json_integer_value(v) != want) {
        fail_msg("%s: want integer %lld", path, (long long)want);
    }
}

static void test_examples_valid_and_idempotent(void **state)
{
    (void)state;
    for (int k = 0; k < GT_KIND_COUNT; k++) {
        json_t *v = valid((enum gt_kind)k);
        char *once = gt_json_dumps(v);
        struct gt_err err = {0};
        assert_int_equal(gt_api_validate((enum gt_kind)k, v, &err), 0);
        char *twice = gt_json_dumps(v);
        assert_string_equal(once, twice);
        free(once);
        free(twice);
        json_decref(v);
    }
}

/* Notebook defaults: culling on with GPUs, the home mounted at its own
 * path, a command optional; names leave room for the task's. */
static void test_notebook_defaults(void **state)
{
    (void)state;
    json_t *v = valid(GT_KIND_NOTEBOOK);
    assert_true(json_is_true(gt_json_path(v, "spec.idle.enabled")));
    assert_false(json_is_true(gt_json_path(v, "spec.stopped")));
    assert_path_str(v, "spec.home.mountPath", "/srv/home/alice");
    struct gt_api_notebook *nb = gt_api_notebook_new(v);
    assert_true(nb->spec.has_home);
    assert_true(nb->spec.idle.enabled);
    assert_true(nb->spec.idle.timeout_s == GT_API_UNSET);
    assert_int_equal(nb->status.phase, GT_NB_PENDING);
    gt_api_notebook_free(nb);
    json_decref(v);

    v = parse("{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Notebook\","
              "\"metadata\":{\"name\":\"cpu\",\"project\":\"p\"},\"spec\":{}}");
    struct gt_err err = {0};
    assert_int_equal(gt_api_validate(GT_KIND_NOTEBOOK, v, &err), 0);
    assert_false(json_is_true(gt_json_path(v, "spec.idle.enabled")));
    json_decref(v);

    v = parse("{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Notebook\","
              "\"metadata\":{\"name\":\"a123456789b123456789c123456789d123456789e123456789fg\","
              "\"project\":\"p\"}}");
    assert_int_equal(gt_api_validate(GT_KIND_NOTEBOOK, v, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "metadata.name: at most 51"));
    json_decref(v);

    v = parse("{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Notebook\","
              "\"metadata\":{\"name\":\"n\",\"project\":\"p\"},"
              "\"spec\":{\"home\":{\"hostPath\":\"relative\"}}}");
    assert_int_equal(gt_api_validate(GT_KIND_NOTEBOOK, v, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "spec.home.hostPath"));
    json_decref(v);

    /* a Volume as the home: mounted at /home/jovyan unless mountPath says */
    v = parse("{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Notebook\","
              "\"metadata\":{\"name\":\"n\",\"project\":\"p\"},"
              "\"spec\":{\"home\":{\"volume\":\"work\"}}}");
    assert_int_equal(gt_api_validate(GT_KIND_NOTEBOOK, v, &err), 0);
    assert_path_str(v, "spec.home.mountPath", GT_NOTEBOOK_VOLUME_HOME);
    nb = gt_api_notebook_new(v);
    assert_string_equal(nb->spec.home.volume, "work");
    assert_null(nb->spec.home.host_path);
    gt_api_notebook_free(nb);
    json_decref(v);
    static const struct {
        const char *home, *want;
    } bad[] = {
        {"{\"volume\":\"w\",\"hostPath\":\"/srv/h\"}",
         "spec.home.hostPath: give volume (a Volume's name) or hostPath, not both"},
        {"{\"mountPath\":\"/h\"}",
         "spec.home.volume: give volume (a Volume's name) or hostPath, one is required"},
        {"{\"volume\":\"Bad_Name\"}", "spec.home.volume"},
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(bad); i++) {
        char *text = gt_xasprintf("{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Notebook\","
                                  "\"metadata\":{\"name\":\"n\",\"project\":\"p\"},"
                                  "\"spec\":{\"home\":%s}}",
                                  bad[i].home);
        v = parse(text);
        free(text);
        memset(&err, 0, sizeof(err));
        assert_int_equal(gt_api_validate(GT_KIND_NOTEBOOK, v, &err), GT_EINVAL);
        if (!strstr(err.msg, bad[i].want)) {
            fail_msg("home %s: \"%s\", want \"%s\"", bad[i].home, err.msg, bad[i].want);
        }
        json_decref(v);
    }
}

static void test_canonical_department(void **state)
{
    (void)state;
    json_t *v = valid(GT_KIND_DEPARTMENT);
    json_t *quota = gt_json_path(v, "spec.quota");
    json_t *limit = gt_json_path(v, "spec.limit");
    assert_int_equal(json_integer_value(json_object_get(quota, "nvidia.com/gpu")), 8);
    assert_string_equal(json_string_value(json_object_get(quota, "cpu")), "64");
    assert_string_equal(json_string_value(json_object_get(quota, "memory")), "256Gi");
    assert_string_equal(json_string_value(json_object_get(limit, "cpu")), "64500m");
    assert_string_equal(json_string_value(json_object_get(limit, "memory")), "256Gi");
    struct gt_resources r;
    assert_int_equal(gt_api_resources(limit, &r, NULL), 0);
    assert_int_equal(r.cpu_milli, 64500);
    assert_int_equal(r.memory_bytes, 274877906944LL);
    assert_int_equal(r.gpu, 16);
    assert_int_equal(r.gpu_milli, 0);
    assert_int_equal(r.storage_bytes, 0);
    json_decref(v);
}

static void test_canonical_job(void **state)
{
    (void)state;
    json_t *v = valid(GT_KIND_JOB);
    assert_path_int(v, "spec.replicaSpecs.Master.replicas", 1);
    assert_path_str(v, "spec.replicaSpecs.Master.restartPolicy", "Never");
    assert_path_int(v, "spec.runPolicy.backoffLimit", 6);
    assert_path_str(v, "spec.runPolicy.cleanPodPolicy", "None");
    json_t *req = gt_json_path(v, "spec.replicaSpecs.Worker.template.resources.requests");
    assert_string_equal(json_string_value(json_object_get(req, "cpu")), "500m");
    assert_string_equal(json_string_value(json_object_get(req, "memory")), "1000000000");
    json_t *lim = gt_json_path(v, "spec.replicaSpecs.Master.template.resources.limits");
    assert_int_equal(json_integer_value(json_object_get(lim, "nvidia.com/gpu")), 1);
    assert_string_equal(json_string_value(json_object_get(lim, "memory")), "16Gi");
    assert_string_equal(gt_obj_name(v), "mnist");
    assert_string_equal(gt_obj_project(v), "vision");
    assert_string_equal(gt_obj_kind(v), "Job");
    json_decref(v);
}

static void test_canonical_others(void **state)
{
    (void)state;
    json_t *v = valid(GT_KIND_PRIORITYCLASS);
    assert_path_str(v, "preemptionPolicy", "PreemptLowerPriority");
    assert_true(json_is_false(json_object_get(v, "globalDefault")));
    json_decref(v);

    v = valid(GT_KIND_NODE);
    assert_true(json_is_false(gt_json_path(v, "spec.unschedulable")));
    assert_path_str(v, "status.allocatable.memory", "1000Gi");
    json_t *cap = gt_json_path(v, "status.capacity");
    assert_int_equal(json_integer_value(json_object_get(cap, "nvidia.com/gpu")), 8);
    json_decref(v);

    v = valid(GT_KIND_EVENT);
    assert_path_str(v, "type", "Normal");
    assert_path_int(v, "count", 1);
    json_decref(v);

    v = valid(GT_KIND_PROJECT);
    json_t *hard = gt_json_path(v, "spec.hard");
    assert_int_equal(json_integer_value(json_object_get(hard, "nvidia.com/gpu")), 4);
    assert_string_equal(json_string_value(json_object_get(hard, "storage")), "1Ti");
    json_decref(v);

    /* A Department without spec gets an empty one; explicit nulls vanish. */
    v = parse("{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Department\","
              "\"metadata\":{\"name\":\"d\",\"labels\":null},\"status\":null}");
    assert_int_equal(gt_api_validate(GT_KIND_DEPARTMENT, v, NULL), 0);
    assert_true(json_is_object(json_object_get(v, "spec")));
    assert_null(json_object_get(v, "status"));
    assert_null(gt_json_path(v, "metadata.labels"));
    json_decref(v);
}

/* A single change to a valid example, and the error it must give. */
struct bad_case {
    enum gt_kind kind;
    const char *path;  /* '|'-separated; numeric segments index lists */
    const char *value; /* JSON text, or NULL to delete the field */
    const char *want;  /* substring of the error message */
};

static const struct bad_case bad_cases[] = {
    {GT_KIND_MODEL, "spec|framework", "\"tensorflow\"", "spec.framework"},
    {GT_KIND_MODEL, "spec|framework", NULL, "spec.framework: required"},
    {GT_KIND_MODELVERSION, "spec|model", NULL, "spec.model: required"},
    {GT_KIND_MODELVERSION, "spec|stage", "\"Live\"", "spec.stage"},
    {GT_KIND_MODELVERSION, "spec|metrics", "{\"accuracy\":\"high\"}",
     "spec.metrics: \"accuracy\": must be a number"},
    {GT_KIND_MODELVERSION, "spec|source|path", NULL, "spec.source.path: required with job"},
    {GT_KIND_MODELVERSION, "spec|source|path", "\"../x\"", "spec.source.path"},
    {GT_KIND_MODELVERSION, "spec|source|hostPath", "\"/srv/m\"",
     "spec.source.job: exactly one of job and hostPath"},
    {GT_KIND_IMAGEBUILD, "spec|image", "\"App:1\"", "spec.image: must be NAME:TAG"},
    {GT_KIND_IMAGEBUILD, "spec|image", "\"app\"", "spec.image: must be NAME:TAG"},
    {GT_KIND_IMAGEBUILD, "spec|image", "\"a//b:1\"", "spec.image: must be NAME:TAG"},
    {GT_KIND_IMAGEBUILD, "spec|image", NULL, "spec.image: required"},
    {GT_KIND_IMAGEBUILD, "spec|context", "\"../x\"",
     "spec.context: must not contain a \"..\" component"},
    {GT_KIND_IMAGEBUILD, "spec|dockerfilePath", "\"/etc/passwd\"",
     "spec.dockerfilePath: must be a relative path"},
    {GT_KIND_IMAGEBUILD, "spec|dockerfile", "\"FROM x\"",
     "spec.dockerfilePath: not with an inline dockerfile"},
    {GT_KIND_IMAGEBUILD, "spec|source", NULL, "spec.dockerfile: required"},
    {GT_KIND_IMAGEBUILD, "spec|buildArgs|0|name", "\"1x\"", "spec.buildArgs[0].name"},
    {GT_KIND_JOB, "spec|replicaSpecs|Master|template|hostUsers", "false",
     "spec.replicaSpecs.Master.template.hostUsers: false is for tasks without an image"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|hostUsers", "\"no\"",
     "spec.replicaSpecs.Worker.template.hostUsers: must be a boolean"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|terminationMessagePolicy",
     "\"FallbackToLogsOnError\"",
     "spec.replicaSpecs.Worker.template.terminationMessagePolicy: must be one of"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|replicas", "0",
     "spec.replicaSpecs.Worker.replicas: must be >= 1"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|replicas", "1001",
     "spec.replicaSpecs.Worker.replicas: must be <= 1000"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|replicas", "1.5",
     "spec.replicaSpecs.Worker.replicas: must be an integer"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|replicas", "\"1\"",
     "spec.replicaSpecs.Worker.replicas: must be an integer"},
    {GT_KIND_JOB, "metadata|name", "\"Bad_Name\"", "metadata.name: must be a DNS-1123 label"},
    {GT_KIND_JOB, "metadata|name",
     "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"",
     "metadata.name: must be a DNS-1123 label"},
    {GT_KIND_JOB, "metadata|name", "\"-a\"", "metadata.name: must be a DNS-1123 label"},
    {GT_KIND_JOB, "metadata|name", NULL, "metadata.name: required"},
    {GT_KIND_JOB, "metadata|project", NULL, "metadata.project: required"},
    {GT_KIND_JOB, "metadata", "\"x\"", "metadata: must be an object"},
    {GT_KIND_JOB, "spec", NULL, "spec: required"},
    {GT_KIND_JOB, "apiVersion", "\"v1\"", "apiVersion: must be \"gantry.dev/v1\""},
    {GT_KIND_JOB, "apiVersion", NULL, "apiVersion: required"},
    {GT_KIND_JOB, "kind", "\"Task\"", "kind: must be \"Job\""},
    {GT_KIND_JOB, "extra", "1", "extra: unknown field"},
    {GT_KIND_JOB, "spec|replicaSpecs|Driver", "{\"template\":{\"command\":[\"x\"]}}",
     "spec.replicaSpecs.Driver: replica type must be one of"},
    {GT_KIND_JOB, "spec|replicaSpecs|Chief", "{\"template\":{\"command\":[\"x\"]}}",
     "spec.replicaSpecs: at most one of Master and Chief"},
    {GT_KIND_JOB, "spec|replicaSpecs|Master|replicas", "2",
     "spec.replicaSpecs.Master.replicas: must be 1"},
    {GT_KIND_JOB, "spec|replicaSpecs", "{}", "spec.replicaSpecs: must name at least one"},
    {GT_KIND_JOB, "spec|runPolicy|schedulingPolicy|minAvailable", "5",
     "spec.runPolicy.schedulingPolicy.minAvailable: must be <= the total replicas (4)"},
    {GT_KIND_JOB, "spec|runPolicy|schedulingPolicy|queue", "\"Research\"",
     "spec.runPolicy.schedulingPolicy.queue: must be a DNS-1123 label"},
    {GT_KIND_JOB, "spec|runPolicy|schedulingPolicy|topology", "{\"required\":\"rack\"}",
     "spec.runPolicy.schedulingPolicy.topology.required: must be one of node, gpu-group, numa"},
    {GT_KIND_JOB, "spec|runPolicy|schedulingPolicy|topology",
     "{\"required\":\"node\",\"preferred\":\"numa\"}",
     "spec.runPolicy.schedulingPolicy.topology.preferred: give required or preferred, not both"},
    {GT_KIND_JOB, "spec|runPolicy|schedulingPolicy|topology", "{\"spread\":\"node\"}",
     "spec.runPolicy.schedulingPolicy.topology.spread: unknown field"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|restartPolicy", "\"Sometimes\"",
     "spec.replicaSpecs.Worker.restartPolicy: must be one of Never, OnFailure, Always, ExitCode"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|command", NULL,
     "spec.replicaSpecs.Worker.template.command: required (non-empty) when there is no image"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|command", "[]",
     "spec.replicaSpecs.Worker.template.command: required"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|command", "[1]",
     "spec.replicaSpecs.Worker.template.command[0]: must be a string"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template", NULL,
     "spec.replicaSpecs.Worker.template: required"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|resources|limits|nvidia.com/gpu", "1",
     "spec.replicaSpecs.Worker.template.resources.limits.gantry.dev/gpu-milli: may not be "
     "combined with nvidia.com/gpu"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|resources|limits|gantry.dev/gpu-milli", "1001",
     "resources.limits.gantry.dev/gpu-milli: must be between 1 and 1000"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|resources|limits|gantry.dev/gpu-milli", "0",
     "resources.limits.gantry.dev/gpu-milli: must be between 1 and 1000"},
    {GT_KIND_JOB, "spec|replicaSpecs|Master|template|resources|requests", "{\"cpu\":\"8\"}",
     "spec.replicaSpecs.Master.template.resources.requests.cpu: must be <= limits.cpu"},
    {GT_KIND_JOB, "spec|replicaSpecs|Master|template|resources|limits|memory", "\"16Gb\"",
     "spec.replicaSpecs.Master.template.resources.limits.memory: quantity \"16Gb\": unknown "
     "suffix"},
    {GT_KIND_JOB, "spec|replicaSpecs|Master|template|resources|limits|cpu", "\"0.5m\"",
     "limits.cpu: quantity \"0.5m\": fractional"},
    {GT_KIND_JOB, "spec|replicaSpecs|Master|template|resources|limits|cpu", "true",
     "limits.cpu: must be a quantity"},
    {GT_KIND_JOB, "spec|volumes|0|hostPath", "\"/srv/../etc\"",
     "spec.volumes[0].hostPath: must not contain a \"..\" component"},
    {GT_KIND_JOB, "spec|volumes|0|hostPath", "\"srv/data\"",
     "spec.volumes[0].hostPath: must be an absolute path"},
    {GT_KIND_JOB, "spec|volumes|1", "{\"name\":\"data\",\"hostPath\":\"/x\"}",
     "spec.volumes[1].name: duplicate volume name \"data\""},
    {GT_KIND_JOB, "spec|replicaSpecs|Master|template|volumeMounts|0|name", "\"other\"",
     "spec.replicaSpecs.Master.template.volumeMounts[0].name: no volume named \"other\""},
    {GT_KIND_JOB, "spec|replicaSpecs|Master|template|volumeMounts|0|mountPath", "\"data\"",
     "volumeMounts[0].mountPath: must be an absolute path"},
    {GT_KIND_JOB, "spec|source|git", "\"not a url\"", "spec.source.git: must be a git URL"},
    {GT_KIND_JOB, "spec|source", "{\"revision\":\"x\"}", "spec.source.git: required"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|env", "[{\"name\":\"1BAD\"}]",
     "spec.replicaSpecs.Worker.template.env[0].name: must match"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|env",
     "[{\"name\":\"T\",\"valueFrom\":{\"gantrySecret\":\"root-password\"}}]",
     "spec.replicaSpecs.Worker.template.env[0].valueFrom.gantrySecret: must be one of"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|env", "[{\"name\":\"T\",\"valueFrom\":{}}]",
     "spec.replicaSpecs.Worker.template.env[0].valueFrom: give fieldRef or gantrySecret, one is "
     "required"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|env",
     "[{\"name\":\"T\",\"valueFrom\":{\"gantrySecret\":\"notebook-token\","
     "\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}}]",
     "spec.replicaSpecs.Worker.template.env[0].valueFrom: give fieldRef or gantrySecret, not both"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|ports", "[{\"containerPort\":70000}]",
     "spec.replicaSpecs.Worker.template.ports[0].containerPort: must be <= 65535"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|image", "\"bad image\"",
     "spec.replicaSpecs.Worker.template.image: must be an OCI image reference"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|workingDir", "\"rel\"",
     "spec.replicaSpecs.Worker.template.workingDir: must be an absolute path"},
    {GT_KIND_JOB, "spec|replicaSpecs|Worker|template|runAsUser", "-1",
     "spec.replicaSpecs.Worker.template.runAsUser: must be >= 0"},
    {GT_KIND_JOB, "spec|runPolicy|backoffLimit", "-1", "spec.runPolicy.backoffLimit: must be >= 0"},
    {GT_KIND_JOB, "spec|runPolicy|activeDeadlineSeconds", "0",
     "spec.runPolicy.activeDeadlineSeconds: must be >= 1"},
    {GT_KIND_JOB, "spec|runPolicy|cleanPodPolicy", "\"Some\"",
     "spec.runPolicy.cleanPodPolicy: must be one of All, Running, None"},
    {GT_KIND_JOB, "spec|requirements", "5", "spec.requirements: must be a path or a list"},
    {GT_KIND_JOB, "spec|requirements", "[\"a\", 2]", "spec.requirements: item 1"},
    {GT_KIND_JOB, "metadata|labels", "{\"bad key!\":\"x\"}",
     "metadata.labels.bad key!: label key name"},
    {GT_KIND_JOB, "metadata|labels", "{\"Bad_Prefix/x\":\"x\"}",
     "metadata.labels.Bad_Prefix/x: label key prefix"},
    {GT_KIND_JOB, "metadata|labels", "{\"app\":\"-x\"}", "metadata.labels.app: label value"},
    {GT_KIND_JOB, "metadata|labels", "{\"app\":1}", "metadata.labels.app: must be a string"},
    {GT_KIND_JOB, "metadata|creationTimestamp", "\"yesterday\"",
     "metadata.creationTimestamp: must be an RFC 3339"},
    {GT_KIND_JOB, "metadata|resourceVersion", "\"12a\"",
     "metadata.resourceVersion: must be a string of decimal digits"},
    {GT_KIND_JOB, "metadata|resourceVersion", "12", "metadata.resourceVersion: must be a string"},
    {GT_KIND_JOB, "metadata|creator", "{\"uid\":-1}", "metadata.creator.uid: must be >= 0"},
    {GT_KIND_JOB, "metadata|generation", "1", "metadata.generation: unknown field"},
    {GT_KIND_JOB, "status|conditions", "[{\"type\":\"Exploded\",\"status\":\"True\"}]",
     "status.conditions[0].type: must be one of Created"},
    {GT_KIND_JOB, "status|conditions", "[{\"type\":\"Running\"}]",
     "status.conditions[0].status: required"},
    {GT_KIND_JOB, "status|replicaStatuses", "{\"Worker\":{\"active\":-1}}",
     "status.replicaStatuses.Worker.active: must be >= 0"},
    {GT_KIND_DEPARTMENT, "spec|quota|cpu", "\"-1\"",
     "spec.quota.cpu: quantity \"-1\": must not be negative"},
    {GT_KIND_DEPARTMENT, "spec|quota|nvidia.com/gpu", "-1",
     "spec.quota.nvidia.com/gpu: quantity \"-1\": must not be negative"},
    {GT_KIND_DEPARTMENT, "spec|quota|nvidia.com/gpu", "\"1.5\"",
     "spec.quota.nvidia.com/gpu: quantity \"1.5\": fractional"},
    {GT_KIND_DEPARTMENT, "spec|quota|memory", "\"9Ei\"",
     "spec.quota.memory: quantity \"9Ei\": value too large"},
    {GT_KIND_DEPARTMENT, "spec|foo", "1", "spec.foo: unknown field"},
    {GT_KIND_DEPARTMENT, "spec|limit|nvidia.com/gpu", "\"7\"",
     "spec.limit.nvidia.com/gpu: must be >= the quota (8)"},
    {GT_KIND_DEPARTMENT, "spec|limit|cpu", "\"1\"",
     "spec.limit.cpu: must be >= the quota (\"64\")"},
    {GT_KIND_DEPARTMENT, "spec|quota|gantry.dev/gpu-milli", "5",
     "spec.quota.gantry.dev/gpu-milli: resource not allowed here"},
    {GT_KIND_DEPARTMENT, "spec|quota|bogus", "1", "spec.quota.bogus: unknown resource"},
    {GT_KIND_DEPARTMENT, "metadata|project", "\"vision\"", "metadata.project: must not be set"},
    {GT_KIND_DEPARTMENT, "spec|admins", "\"alice\"", "spec.admins: must be a list"},
    {GT_KIND_NODE, "status|allocated", "{}", "status.allocated: computed by the server"},
    {GT_KIND_NODE, "status|gpus|0|numaNode", "-2", "status.gpus[0].numaNode: must be >= -1"},
    {GT_KIND_NODE, "status|gpus|0|index", NULL, "status.gpus[0].index: required"},
    {GT_KIND_NODE, "status|gpus|0|health", "\"Sick\"",
     "status.gpus[0].health: must be one of Healthy, Unhealthy"},
    {GT_KIND_NODE, "status|conditions|0|status", "\"Maybe\"",
     "status.conditions[0].status: must be one of True, False, Unknown"},
    {GT_KIND_NODE, "status|conditions|0|lastHeartbeatTime", "\"2026-11-29 20:50:44\"",
     "status.conditions[0].lastHeartbeatTime: must be an RFC 3339"},
    {GT_KIND_NODE, "spec|taints|0|effect", "\"Evict\"", "spec.taints[0].effect: must be one of"},
    {GT_KIND_NODE, "status|addresses|0|type", "\"ExternalIP\"",
     "status.addresses[0].type: must be one of"},
    {GT_KIND_NODE, "status|capacity|gantry.dev/gpu-milli", "1000",
     "status.capacity.gantry.dev/gpu-milli: resource not allowed here"},
    {GT_KIND_PRIORITYCLASS, "value", "3000000000", "value: must be <= 2147483647"},
    {GT_KIND_PRIORITYCLASS, "value", NULL, "value: required"},
    {GT_KIND_PRIORITYCLASS, "preemptionPolicy", "\"Always\"",
     "preemptionPolicy: must be one of PreemptLowerPriority, Never"},
    {GT_KIND_PRIORITYCLASS, "spec", "{}", "spec: unknown field"},
    {GT_KIND_PROJECT, "spec|members|0|role", "\"owner\"",
     "spec.members[0].role: must be one of admin, member, viewer"},
    {GT_KIND_PROJECT, "spec|members|0|user", NULL, "spec.members[0].user: required"},
    {GT_KIND_PROJECT, "spec|department", NULL, "spec.department: required"},
    {GT_KIND_PROJECT, "spec|allowPrivileged", "\"yes\"", "spec.allowPrivileged: must be a boolean"},
    {GT_KIND_PROJECT, "spec|hard|cpu", "\"1e400\"", "spec.hard.cpu: quantity \"1e400\": "},
    {GT_KIND_TASK, "spec|gpus|0|milli", "0", "spec.gpus[0].milli: must be >= 1"},
    {GT_KIND_TASK, "spec|ports|0|port", "0", "spec.ports[0].port: must be >= 1"},
    {GT_KIND_TASK, "spec|stop", "{\"gracePeriodSeconds\":-5}",
     "spec.stop.gracePeriodSeconds: must be >= 0"},
    {GT_KIND_TASK, "spec|replicaType", "\"Boss\"", "spec.replicaType: must be one of"},
    {GT_KIND_TASK, "spec|nodeName", "\"Node_1\"", "spec.nodeName: must be a DNS-1123 label"},
    {GT_KIND_TASK, "status|phase", "\"Done\"", "status.phase: must be one of Pending"},
    {GT_KIND_TASK, "status|hostPid", "\"1\"", "status.hostPid: must be an integer"},
    {GT_KIND_TASK, "metadata|project", "\"Vision\"", "metadata.project: must be a DNS-1123 label"},
    {GT_KIND_EVENT, "reason", "\"not camel\"", "reason: must be a CamelCase word"},
    {GT_KIND_EVENT, "metadata|project", "\"vision\"",
     "metadata.project: must not be set: Event is cluster-scoped (use involvedObject.project)"},
    {GT_KIND_EVENT, "involvedObject|name", NULL, "involvedObject.name: required"},
    {GT_KIND_EVENT, "count", "0", "count: must be >= 1"},
    {GT_KIND_EVENT, "type", "\"Error\"", "type: must be one of Normal, Warning"},
};

/* Set (or delete, for value NULL) the field at a '|'-separated path. */
static void mutate(json_t *obj, const char *path, const char *value)
{
    char *copy = gt_xstrdup(path);
    json_t *cur = obj;
    char *seg = copy;
    for (;;) {
        char *next = strchr(seg, '|');
        if (next) {
            *next++ = '\0';
        }
        bool is_index = json_is_array(cur);
        size_t idx = is_index ? strtoul(seg, NULL, 10) : 0;
        if (!next) {
            json_t *v = value ? json_loads(value, JSON_DECODE_ANY, NULL) : NULL;
            if (value && !v) {
                fail_msg("bad test value %s", value);
            }
            if (is_index && v) {
                if (idx < json_array_size(cur)) {
                    json_array_set_new(cur, idx, v);
                } else {
                    json_array_append_new(cur, v);
                }
            } else if (is_index) {
                json_array_remove(cur, idx);
            } else if (v) {
                json_object_set_new(cur, seg, v);
            } else {
                json_object_del(cur, seg);
            }
            break;
        }
        json_t *child = is_index ? json_array_get(cur, idx) : json_object_get(cur, seg);
        if (!child) {
            child = json_object();
            json_object_set_new(cur, seg, child);
        }
        cur = child;
        seg = next;
    }
    free(copy);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    assert_true(GT_ARRAY_LEN(bad_cases) >= 30);
    for (size_t i = 0; i < GT_ARRAY_LEN(bad_cases); i++) {
        const struct bad_case *c = &bad_cases[i];
        json_t *v = parse(examples[c->kind]);
        mutate(v, c->path, c->value);
        struct gt_err err = {0};
        int rc = gt_api_validate(c->kind, v, &err);
        if (rc != GT_EINVAL || err.code != GT_EINVAL || !strstr(err.msg, c->want)) {
            fail_msg("case %zu (%s = %s): rc=%d \"%s\", want \"%s\"", i, c->path,
                     c->value ? c->value : "(deleted)", rc, err.msg, c->want);
        }
        json_decref(v);
    }
}

/* A gantry secret reference decodes into the env entry, and a user's
 * object holding one anywhere is refused naming where. */
static void test_secret_refs(void **state)
{
    (void)state;
    json_t *v = parse(examples[GT_KIND_JOB]);
    mutate(v, "spec|replicaSpecs|Worker|template|env",
           "[{\"name\":\"A\",\"value\":\"1\"},"
           "{\"name\":\"T\",\"valueFrom\":{\"gantrySecret\":\"notebook-token\"}}]");
    assert_int_equal(gt_api_validate(GT_KIND_JOB, v, NULL), 0);
    struct gt_api_job *job = gt_api_job_new(v);
    const struct gt_api_template *tmpl = NULL;
    for (size_t i = 0; i < job->spec.replica_specs.n; i++) {
        if (!strcmp(job->spec.replica_specs.v[i].type, "Worker")) {
            tmpl = &job->spec.replica_specs.v[i].template;
        }
    }
    assert_non_null(tmpl);
    assert_int_equal(tmpl->env.n, 2);
    assert_null(tmpl->env.v[0].value_from.gantry_secret);
    assert_string_equal(tmpl->env.v[1].value_from.gantry_secret, GT_API_SECRET_NOTEBOOK_TOKEN);
    assert_null(tmpl->env.v[1].value);
    struct gt_err err = {0};
    assert_int_equal(gt_api_check_no_secret_refs(v, &err), GT_EINVAL);
    assert_string_equal(err.msg, "spec.replicaSpecs.Worker.template.env[1].valueFrom.gantrySecret: "
                                 "set only by gantryd for the tasks of the kinds it runs "
                                 "(notebooks, image builds), never by a user");
    gt_api_job_free(job);
    json_decref(v);
    /* fieldRef, the downward API, is the user's own */
    v = parse(examples[GT_KIND_JOB]);
    mutate(v, "spec|replicaSpecs|Worker|template|env",
           "[{\"name\":\"N\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}}]");
    assert_int_equal(gt_api_validate(GT_KIND_JOB, v, NULL), 0);
    assert_int_equal(gt_api_check_no_secret_refs(v, NULL), 0);
    json_decref(v);
}

static void test_annotations_bounded(void **state)
{
    (void)state;
    json_t *v = parse(job_json);
    size_t n = 200 * 1024;
    char *big = gt_xcalloc(1, n + 1);
    memset(big, 'x', n);
    json_t *ann = json_object();
    json_object_set_new(ann, "a", json_string(big));
    json_object_set_new(ann, "b", json_string(big));
    json_object_set_new(json_object_get(v, "metadata"), "annotations", ann);
    struct gt_err err = {0};
    assert_int_equal(gt_api_validate(GT_KIND_JOB, v, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "metadata.annotations: total size"));
    json_object_del(ann, "b");
    assert_int_equal(gt_api_validate(GT_KIND_JOB, v, NULL), 0);
    free(big);
    json_decref(v);
}

static void test_git_urls(void **state)
{
    (void)state;
    const char *good[] = {"https://h/r.git", "http://h/r",       "git://h/r",
                          "ssh://git@h/r",   "file:///srv/repo", "git@github.com:x/y.git"};
    const char *bad[] = {"",     "h/r",  "ftp://h/r",        "https://",      "@h:r",
                         "u@:r", "u@h:", "-oProxyCommand=x", "https://h/a b", "u@h/x:r"};
    for (size_t i = 0; i < GT_ARRAY_LEN(good) + GT_ARRAY_LEN(bad); i++) {
        bool ok = i < GT_ARRAY_LEN(good);
        const char *url = ok ? good[i] : bad[i - GT_ARRAY_LEN(good)];
        json_t *v = parse(job_json);
        mutate(v, "spec|source|git", NULL);
        json_object_set_new(gt_json_path(v, "spec.source"), "git", json_string(url));
        int rc = gt_api_validate(GT_KIND_JOB, v, NULL);
        if ((rc == 0) != ok) {
            fail_msg("git URL \"%s\": rc=%d", url, rc);
        }
        json_decref(v);
    }
}

static void test_parse(void **state)
{
    (void)state;
    json_t *v = NULL;
    struct gt_err err = {0};
    const char dup[] = "{\"a\": 1,\n \"a\": 2}";
    assert_int_equal(gt_api_parse(dup, strlen(dup), &v, &err), GT_EBADREQ);
    assert_non_null(strstr(err.msg, "line 2"));
    assert_non_null(strstr(err.msg, "duplicate"));
    gt_err_clear(&err);
    assert_int_equal(gt_api_parse("[1]", 3, &v, &err), GT_EBADREQ);
    assert_non_null(strstr(err.msg, "object"));
    gt_err_clear(&err);
    assert_int_equal(gt_api_parse("{\"a\": tru}", 10, &v, &err), GT_EBADREQ);
    assert_non_null(strstr(err.msg, "column"));
    /* len bounds the text: the tail after it is never read */
    assert_int_equal(gt_api_parse("{\"a\":1}garbage", 7, &v, NULL), 0);
    assert_int_equal(json_integer_value(json_object_get(v, "a")), 1);
    json_decref(v);
    assert_int_equal(gt_api_parse("{\"a\":1}", 6, &v, NULL), GT_EBADREQ);
    assert_int_equal(gt_api_parse("{\"a\":\"\\u0000\"}", 14, &v, NULL), GT_EBADREQ);
}

static void test_kinds(void **state)
{
    (void)state;
    assert_string_equal(gt_kind_get(GT_KIND_JOB)->plural, "jobs");
    assert_true(gt_kind_get(GT_KIND_JOB)->namespaced);
    assert_true(gt_kind_get(GT_KIND_TASK)->namespaced);
    assert_false(gt_kind_get(GT_KIND_EVENT)->namespaced);
    assert_false(gt_kind_get(GT_KIND_NODE)->namespaced);
    assert_null(gt_kind_get(GT_KIND_COUNT));
    assert_int_equal(gt_kind_by_plural("priorityclasses")->kind, GT_KIND_PRIORITYCLASS);
    assert_null(gt_kind_by_plural("PriorityClass"));
    assert_null(gt_kind_by_plural("widgets"));
    assert_int_equal(gt_kind_by_name("Department")->kind, GT_KIND_DEPARTMENT);
    assert_int_equal(gt_kind_by_name("job")->kind, GT_KIND_JOB);
    assert_int_equal(gt_kind_by_name("tasks")->kind, GT_KIND_TASK);
    assert_int_equal(gt_kind_by_name("priorityclass")->kind, GT_KIND_PRIORITYCLASS);
    assert_null(gt_kind_by_name("widget"));
    assert_null(gt_kind_by_name(NULL));
    for (int k = 0; k < GT_KIND_COUNT; k++) {
        const struct gt_kind_info *info = gt_kind_get((enum gt_kind)k);
        assert_ptr_equal(gt_kind_by_plural(info->plural), info);
        assert_ptr_equal(gt_kind_by_name(info->name), info);
    }
}

static void test_validate_status(void **state)
{
    (void)state;
    json_t *node = parse(node_json);
    json_t *status = json_incref(json_object_get(node, "status"));
    struct gt_err err = {0};
    assert_int_equal(gt_api_validate_status(GT_KIND_NODE, status, &err), 0);
    assert_string_equal(json_string_value(gt_json_path(status, "capacity.memory")), "1Ti");
    json_object_set_new(status, "allocated", json_object());
    assert_int_equal(gt_api_validate_status(GT_KIND_NODE, status, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "status.allocated"));
    json_decref(status);
    json_decref(node);

    json_t *ts =
        json_loads("{\"phase\":\"Failed\",\"exitCode\":137,\"reason\":\"OOMKilled\"}", 0, NULL);
    assert_int_equal(gt_api_validate_status(GT_KIND_TASK, ts, NULL), 0);
    json_decref(ts);
    json_t *not_obj = json_string("x");
    gt_err_clear(&err);
    assert_int_equal(gt_api_validate_status(GT_KIND_JOB, not_obj, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "status: must be an object"));
    json_decref(not_obj);
    json_t *empty = json_object();
    gt_err_clear(&err);
    assert_int_equal(gt_api_validate_status(GT_KIND_PRIORITYCLASS, empty, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "PriorityClass has no status"));
    json_decref(empty);
}

static void test_check_name_and_resources(void **state)
{
    (void)state;
    assert_int_equal(gt_api_check_name("a", NULL), 0);
    assert_int_equal(gt_api_check_name("a-1", NULL), 0);
    assert_int_equal(gt_api_check_name("", NULL), GT_EINVAL);
    assert_int_equal(gt_api_check_name("a-", NULL), GT_EINVAL);
    assert_int_equal(gt_api_check_name("a.b", NULL), GT_EINVAL);
    assert_int_equal(gt_api_check_name(NULL, NULL), GT_EINVAL);

    json_t *m = json_loads("{\"cpu\":\"1500m\",\"memory\":\"16Gi\",\"storage\":\"1Ti\","
                           "\"nvidia.com/gpu\":2,\"gantry.dev/gpu-milli\":250}",
                           0, NULL);
    struct gt_resources r;
    assert_int_equal(gt_api_resources(m, &r, NULL), 0);
    assert_int_equal(r.cpu_milli, 1500);
    assert_int_equal(r.memory_bytes, 16LL << 30);
    assert_int_equal(r.storage_bytes, 1LL << 40);
    assert_int_equal(r.gpu, 2);
    assert_int_equal(r.gpu_milli, 250);
    json_object_set_new(m, "bogus", json_integer(1));
    assert_int_equal(gt_api_resources(m, &r, NULL), GT_EINVAL);
    json_decref(m);
    assert_int_equal(gt_api_resources(NULL, &r, NULL), 0);
    assert_int_equal(r.cpu_milli, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_examples_valid_and_idempotent),
        cmocka_unit_test(test_notebook_defaults),
        cmocka_unit_test(test_canonical_department),
        cmocka_unit_test(test_canonical_job),
        cmocka_unit_test(test_canonical_others),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_secret_refs),
        cmocka_unit_test(test_annotations_bounded),
        cmocka_unit_test(test_git_urls),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_validate_status),
        cmocka_unit_test(test_check_name_and_resources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
