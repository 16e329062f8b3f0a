/*
 * Kubeflow TFJob/PyTorchJob conversion: manifests in the shape of Kubeflow's
 * documentation convert to exactly the expected gantry Job (compared as
 * JSON, after validation filled gantry's defaults); the input is left
 * unchanged; a table of single-field additions of things gantry cannot
 * honour is each refused with the field's path in the manifest's terms; an
 * unset backoffLimit keeps Kubeflow's meaning (no limit). The training
 * operator's own XGBoostJob, PaddleJob and JAXJob examples
 * (../shared/fixtures relative to the project root) each convert, with
 * their framework, replica types and restart policies, or are refused for
 * the one field gantry lacks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_api_util.h"

#include "api/api.h"
#include "common/common.h"

/* Kubeflow's pytorch-simple example, with the GPUs, environment, output
 * volume and run policy a real job has. */
static const char pytorch_yaml[] =
    "apiVersion: kubeflow.org/v1\n"
    "kind: PyTorchJob\n"
    "metadata:\n"
    "  name: pytorch-simple\n"
    "  namespace: kubeflow\n"
    "  labels: {team: vision}\n"
    "  annotations: {owner: alice}\n"
    "spec:\n"
    "  runPolicy:\n"
    "    backoffLimit: 2\n"
    "    activeDeadlineSeconds: 3600\n"
    "    ttlSecondsAfterFinished: 600\n"
    "    cleanPodPolicy: Running\n"
    "    suspend: false\n"
    "    schedulingPolicy: {minAvailable: 2, queue: research, priorityClass: high}\n"
    "  nprocPerNode: auto\n"
    "  pytorchReplicaSpecs:\n"
    "    Master:\n"
    "      replicas: 1\n"
    "      restartPolicy: OnFailure\n"
    "      template:\n"
    "        metadata:\n"
    "          annotations: {sidecar.istio.io/inject: \"false\"}\n"
    "        spec:\n"
    "          terminationGracePeriodSeconds: 30\n"
    "          securityContext: {runAsUser: 1000}\n"
    "          containers:\n"
    "            - name: pytorch\n"
    "              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727\n"
    "              imagePullPolicy: Always\n"
    "              command: [python3, /opt/pytorch-mnist/mnist.py, --epochs=1]\n"
    "              args: [--backend, gloo]\n"
    "              workingDir: /opt/pytorch-mnist\n"
    "              env:\n"
    "                - {name: OUTPUT_DIR, value: /output}\n"
    "              ports:\n"
    "                - {name: pytorchjob-port, containerPort: 23456, protocol: TCP}\n"
    "              resources:\n"
    "                limits: {nvidia.com/gpu: 1, cpu: 2, memory: 4Gi}\n"
    "                requests: {cpu: 500m, memory: 1Gi}\n"
    "              volumeMounts:\n"
    "                - {name: output, mountPath: /output}\n"
    "                - {name: data, mountPath: /data, readOnly: true}\n"
    "          volumes:\n"
    "            - {name: output, hostPath: {path: /srv/gantry/output, type: Directory}}\n"
    "            - {name: data, hostPath: {path: /srv/gantry/data}}\n"
    "    Worker:\n"
    "      replicas: 1\n"
    "      template:\n"
    "        spec:\n"
    "          containers:\n"
    "            - name: pytorch\n"
    "              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727\n"
    "              command: [python3, /opt/pytorch-mnist/mnist.py, --epochs=1]\n"
    "              resources:\n"
    "                limits: {nvidia.com/gpu: 1}\n"
    "              volumeMounts:\n"
    "                - {name: data, mountPath: /data, readOnly: true}\n"
    "          volumes:\n"
    "            - {name: data, hostPath: {path: /srv/gantry/data}}\n";

static const char pytorch_expected[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\","
    "\"metadata\":{\"name\":\"pytorch-simple\",\"project\":\"kubeflow\","
    "\"labels\":{\"team\":\"vision\"},"
    "\"annotations\":{\"owner\":\"alice\",\"gantry.dev/framework\":\"pytorch\"}},"
    "\"spec\":{\"replicaSpecs\":{"
    "\"Master\":{\"replicas\":1,\"restartPolicy\":\"OnFailure\",\"template\":{"
    "\"runAsUser\":1000,\"terminationGracePeriodSeconds\":30,"
    "\"image\":\"docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727\","
    "\"command\":[\"python3\",\"/opt/pytorch-mnist/mnist.py\",\"--epochs=1\"],"
    "\"args\":[\"--backend\",\"gloo\"],\"workingDir\":\"/opt/pytorch-mnist\","
    "\"env\":[{\"name\":\"OUTPUT_DIR\",\"value\":\"/output\"}],"
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1,\"cpu\":\"2\",\"memory\":\"4Gi\"},"
    "\"requests\":{\"cpu\":\"500m\",\"memory\":\"1Gi\"}},"
    "\"ports\":[{\"name\":\"pytorchjob-port\",\"containerPort\":23456}],"
    "\"volumeMounts\":[{\"name\":\"output\",\"mountPath\":\"/output\"},"
    "{\"name\":\"data\",\"mountPath\":\"/data\",\"readOnly\":true}]}},"
    "\"Worker\":{\"replicas\":1,\"restartPolicy\":\"OnFailure\",\"template\":{"
    "\"image\":\"docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727\","
    "\"command\":[\"python3\",\"/opt/pytorch-mnist/mnist.py\",\"--epochs=1\"],"
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}},"
    "\"volumeMounts\":[{\"name\":\"data\",\"mountPath\":\"/data\",\"readOnly\":true}]}}},"
    "\"volumes\":[{\"name\":\"output\",\"hostPath\":\"/srv/gantry/output\"},"
    "{\"name\":\"data\",\"hostPath\":\"/srv/gantry/data\"}],"
    "\"runPolicy\":{\"backoffLimit\":2,\"activeDeadlineSeconds\":3600,"
    "\"ttlSecondsAfterFinished\":600,\"cleanPodPolicy\":\"Running\","
    "\"schedulingPolicy\":{\"minAvailable\":2,\"queue\":\"research\","
    "\"priorityClass\":\"high\"}}}}";

/* Kubeflow's dist-mnist TFJob example (image only, no command), grown to a
 * chief, two workers and a parameter server. */
static const char tf_yaml[] = "apiVersion: kubeflow.org/v1\n"
                              "kind: TFJob\n"
                              "metadata:\n"
                              "  name: dist-mnist\n"
                              "  namespace: kubeflow\n"
                              "spec:\n"
                              "  successPolicy: \"\"\n"
                              "  tfReplicaSpecs:\n"
                              "    chief:\n"
                              "      template:\n"
                              "        spec:\n"
                              "          containers:\n"
                              "            - name: tensorflow\n"
                              "              image: kubeflow/tf-dist-mnist-test:latest\n"
                              "              resources: {limits: {nvidia.com/gpu: 1}}\n"
                              "    PS:\n"
                              "      replicas: 1\n"
                              "      restartPolicy: Never\n"
                              "      template:\n"
                              "        metadata:\n"
                              "          annotations: {sidecar.istio.io/inject: \"false\"}\n"
                              "        spec:\n"
                              "          containers:\n"
                              "            - name: tensorflow\n"
                              "              image: kubeflow/tf-dist-mnist-test:latest\n"
                              "    Worker:\n"
                              "      replicas: 2\n"
                              "      restartPolicy: ExitCode\n"
                              "      template:\n"
                              "        spec:\n"
                              "          containers:\n"
                              "            - name: tensorflow\n"
                              "              image: kubeflow/tf-dist-mnist-test:latest\n"
                              "              resources: {limits: {nvidia.com/gpu: 1}}\n";

static const char tf_expected[] =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\","
    "\"metadata\":{\"name\":\"dist-mnist\",\"project\":\"kubeflow\","
    "\"annotations\":{\"gantry.dev/framework\":\"tensorflow\"}},"
    "\"spec\":{\"replicaSpecs\":{"
    "\"Chief\":{\"replicas\":1,\"restartPolicy\":\"Never\",\"template\":{"
    "\"image\":\"kubeflow/tf-dist-mnist-test:latest\","
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}},"
    "\"PS\":{\"replicas\":1,\"restartPolicy\":\"Never\",\"template\":{"
    "\"image\":\"kubeflow/tf-dist-mnist-test:latest\"}},"
    "\"Worker\":{\"replicas\":2,\"restartPolicy\":\"ExitCode\",\"template\":{"
    "\"image\":\"kubeflow/tf-dist-mnist-test:latest\","
    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}}},"
    "\"runPolicy\":{\"backoffLimit\":2147483647,\"cleanPodPolicy\":\"None\"}}}";

static void assert_converts_to(json_t *in, const char *expected_json)
{
    json_t *copy = json_deep_copy(in);
    json_t *job = NULL;
    struct gt_err err = {0};
    if (gt_api_kubeflow_convert(in, &job, &err) != 0) {
        fail_msg("convert: %s", err.msg);
    }
    json_t *expected = json_loads(expected_json, 0, NULL);
    assert_non_null(expected);
    if (!json_equal(job, expected)) {
        char *got = gt_json_dumps(job);
        fail_msg("got %s", got);
    }
    assert_true(json_equal(in, copy)); /* the input is borrowed, not changed */
    json_decref(expected);
    json_decref(copy);
    json_decref(job);
}

static void test_pytorchjob(void **state)
{
    (void)state;
    json_t *in = load_yaml(pytorch_yaml);
    assert_true(gt_api_kubeflow_is(in));
    assert_converts_to(in, pytorch_expected);
    json_decref(in);
}

static void test_tfjob(void **state)
{
    (void)state;
    json_t *in = load_yaml(tf_yaml);
    assert_converts_to(in, tf_expected);
    json_decref(in);
}

/* Walk a dotted path ("spec.a.0.b", numbers index lists) to an object. */
static json_t *walk(json_t *doc, const char *dotted)
{
    json_t *cur = doc;
    for (const char *part = dotted; part; part = strchr(part, '.') ? strchr(part, '.') + 1 : NULL) {
        char key[64];
        snprintf(key, sizeof(key), "%.*s", (int)strcspn(part, "."), part);
        cur = json_is_array(cur) ? json_array_get(cur, strtoul(key, NULL, 10))
                                 : json_object_get(cur, key);
        assert_non_null(cur);
    }
    return cur;
}

#define POD "spec.pytorchReplicaSpecs.Worker.template.spec"
#define CTR POD ".containers.0"
#define CTR_PATH POD ".containers[0]"

struct bad_case {
    const char *parent; /* dotted path to the object to change ("" the root) */
    const char *key;    /* set parent[key] = value; for a list parent, append */
    const char *value;  /* JSON */
    const char *error;  /* expected err.msg */
};

static const struct bad_case bad_cases[] = {
    {POD, "nodeSelector", "[\"gpu\"]", POD ".nodeSelector: must be an object"},
    {POD, "affinity", "{}", POD ".affinity: not supported by gantry"},
    {POD, "tolerations", "[{\"key\":\"a\",\"tolerationSecond\":1}]",
     POD ".tolerations[0].tolerationSecond: unknown field"},
    {POD, "initContainers", "[{\"name\":\"x\"}]", POD ".initContainers: not supported by gantry"},
    {POD, "imagePullSecrets", "[]", POD ".imagePullSecrets: not supported by gantry"},
    {POD, "restartPolicy", "\"Never\"", POD ".restartPolicy: not supported by gantry"},
    {POD ".containers", NULL, "{\"name\":\"istio-proxy\",\"image\":\"istio/proxyv2\"}",
     POD ".containers[1]: sidecar containers are not supported by gantry (only the "
         "\"pytorch\" container runs)"},
    {POD ".volumes", NULL, "{\"name\":\"cfg\",\"configMap\":{\"name\":\"x\"}}",
     POD ".volumes[1].configMap: not supported by gantry (only hostPath, "
         "persistentVolumeClaim and emptyDir volumes are)"},
    {POD ".volumes", NULL, "{\"name\":\"scratch\",\"emptyDir\":{\"medum\":\"Memory\"}}",
     POD ".volumes[1].emptyDir.medum: unknown field"},
    {POD ".volumes.0.hostPath", "type", "\"DirectoryOrCreate\"",
     POD ".volumes[0].hostPath.type: only \"Directory\" is supported by gantry (the path must "
         "exist)"},
    {POD, "securityContext", "{\"runAsUser\":1,\"fsGroup\":100}",
     POD ".securityContext.fsGroup: not supported by gantry"},
    {CTR, "envFrom", "[]", CTR_PATH ".envFrom: not supported by gantry"},
    {CTR, "livenessProbe", "{}", CTR_PATH ".livenessProbe: not supported by gantry"},
    {CTR, "env",
     "[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"K\",\"valueFrom\":{\"secretKeyRef\":{}}}]",
     CTR_PATH ".env[1].valueFrom.secretKeyRef: not supported by gantry"},
    {CTR, "env",
     "[{\"name\":\"K\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.nodeName\"}}}]",
     "converted Job: spec.replicaSpecs.Worker.template.env[0].valueFrom.fieldRef.fieldPath: must "
     "be one of metadata.name, metadata.namespace, status.hostIP"},
    {CTR, "env",
     "[{\"name\":\"K\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v2\",\"fieldPath\":\"metadata."
     "name\"}}}]",
     CTR_PATH ".env[0].valueFrom.fieldRef.apiVersion: only \"v1\" is supported by gantry"},
    {CTR ".resources.limits", "hugepages-2Mi", "\"1Gi\"",
     CTR_PATH ".resources.limits.hugepages-2Mi: not supported by gantry"},
    {CTR ".volumeMounts.0", "subPath", "\"x\"",
     CTR_PATH ".volumeMounts[0].subPath: not supported by gantry"},
    {CTR, "ports", "[{\"containerPort\":80,\"hostPort\":80}]",
     CTR_PATH ".ports[0].hostPort: not supported by gantry"},
    {CTR, "ports", "[{\"containerPort\":80,\"protocol\":\"UDP\"}]",
     CTR_PATH ".ports[0].protocol: only TCP is supported by gantry"},
    {CTR, "securityContext", "{\"privileged\":true}",
     CTR_PATH ".securityContext.privileged: not supported by gantry"},
    {"spec", "elasticPolicy", "{\"maxReplicas\":4}", "spec.elasticPolicy: not supported by gantry"},
    {"spec", "nprocPerNode", "\"2\"",
     "spec.nprocPerNode: only \"auto\" is supported by gantry (gantry starts one process per "
     "task)"},
    {"spec", "tfReplicaSpecs", "{}", "spec.tfReplicaSpecs: unknown field"},
    /* a misspelt field is unknown, not unsupported */
    {CTR, "comand", "[\"python3\"]", CTR_PATH ".comand: unknown field"},
    {POD, "nodeSelecter", "{}", POD ".nodeSelecter: unknown field"},
    {"spec.runPolicy", "backofLimit", "3", "spec.runPolicy.backofLimit: unknown field"},
    {"metadata", "lables", "{}", "metadata.lables: unknown field"},
    {"", "sepc", "{}", "sepc: unknown field"},
    {"spec.runPolicy", "suspend", "true",
     "spec.runPolicy.suspend: not supported by gantry (only false)"},
    {"spec.runPolicy.schedulingPolicy", "minResources", "{\"cpu\":\"1\"}",
     "spec.runPolicy.schedulingPolicy.minResources: not supported by gantry"},
    {"spec.pytorchReplicaSpecs", "Chief", "{}",
     "spec.pytorchReplicaSpecs.Chief: not a PyTorchJob replica type (Master, Worker)"},
    {"spec.pytorchReplicaSpecs", "worker", "{}",
     "spec.pytorchReplicaSpecs.worker: Worker given twice"},
    {"metadata", "generateName", "\"x-\"", "metadata.generateName: not supported by gantry"},
    {"", "status", "{}", "status: not supported by gantry"},
    {"", "kind", "\"MXJob\"",
     "kind: not supported by gantry (of kubeflow.org/v1 only TFJob, PyTorchJob, XGBoostJob, "
     "PaddleJob, JAXJob and MPIJob are)"},
    {"", "apiVersion", "\"kubeflow.org/v1beta2\"",
     "apiVersion: must be kubeflow.org/v1 (or kubeflow.org/v2beta1 for an MPIJob)"},
    {"", "apiVersion", "\"kubeflow.org/v2beta1\"",
     "kind: not supported by gantry (of kubeflow.org/v2beta1 only MPIJob is)"},
    {"spec.pytorchReplicaSpecs.Worker", "replicas", "0",
     "converted Job: spec.replicaSpecs.Worker.replicas: must be >= 1"},
    {CTR, "env", "[{\"name\":7}]",
     "converted Job: spec.replicaSpecs.Worker.template.env[0].name: must be a string"},
    {CTR, "command", "\"python3 train.py\"",
     "converted Job: spec.replicaSpecs.Worker.template.command: must be a list"},
};

static void test_unsupported(void **state)
{
    (void)state;
    json_t *base = load_yaml(pytorch_yaml);
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const struct bad_case *c = &bad_cases[i];
        json_t *doc = json_deep_copy(base);
        json_t *parent = c->parent[0] ? walk(doc, c->parent) : doc;
        json_t *v = json_loads(c->value, JSON_DECODE_ANY, NULL);
        assert_non_null(v);
        if (c->key) {
            json_object_set_new(parent, c->key, v);
        } else {
            json_array_append_new(parent, v);
        }
        json_t *job = (json_t *)1;
        struct gt_err err = {0};
        int rc = gt_api_kubeflow_convert(doc, &job, &err);
        if (rc != GT_EINVAL || strcmp(err.msg, c->error) != 0) {
            fail_msg("case %zu: rc %d, got \"%s\"\n want \"%s\"", i, rc, err.msg, c->error);
        }
        assert_null(job);
        json_decref(doc);
    }
    json_decref(base);
}

/* A pod's persistentVolumeClaim becomes a volume naming a Volume of the
 * project; a claim without claimName, or with both sources, is refused. */
static void test_claim_volumes(void **state)
{
    (void)state;
    json_t *doc = load_yaml(pytorch_yaml);
    json_t *vols = walk(doc, "spec.pytorchReplicaSpecs.Master.template.spec.volumes");
    json_array_clear(vols);
    json_array_append_new(vols,
                          json_pack("{s:s, s:{s:s, s:b}}", "name", "data", "persistentVolumeClaim",
                                    "claimName", "imagenet", "readOnly", 1));
    json_array_clear(walk(doc, "spec.pytorchReplicaSpecs.Worker.template.spec.volumes"));
    json_object_del(walk(doc, "spec.pytorchReplicaSpecs.Master.template.spec.containers.0"),
                    "volumeMounts");
    json_object_del(walk(doc, "spec.pytorchReplicaSpecs.Worker.template.spec.containers.0"),
                    "volumeMounts");
    json_t *job = NULL;
    struct gt_err err = {0};
    if (gt_api_kubeflow_convert(doc, &job, &err) != 0) {
        fail_msg("convert: %s", err.msg);
    }
    json_t *want =
        json_pack("[{s:s, s:s, s:b}]", "name", "data", "volume", "imagenet", "readOnly", 1);
    assert_true(json_equal(gt_json_path(job, "spec.volumes"), want));
    json_decref(want);
    json_decref(job);
    json_object_del(json_object_get(json_array_get(vols, 0), "persistentVolumeClaim"), "claimName");
    assert_int_equal(gt_api_kubeflow_convert(doc, &job, &err), GT_EINVAL);
    assert_string_equal(err.msg, "spec.pytorchReplicaSpecs.Master.template.spec.volumes[0]."
                                 "persistentVolumeClaim.claimName: required (the name of a Volume "
                                 "of the project)");
    json_object_set_new(json_array_get(vols, 0), "hostPath", json_pack("{s:s}", "path", "/x"));
    gt_err_clear(&err);
    assert_int_equal(gt_api_kubeflow_convert(doc, &job, &err), GT_EINVAL);
    assert_string_equal(err.msg,
                        "spec.pytorchReplicaSpecs.Master.template.spec.volumes[0]: must "
                        "have a name and one of hostPath, persistentVolumeClaim and emptyDir");
    json_decref(doc);
}

/* Kubeflow's rules for picking the container and filling defaults. */
static void test_container_choice_and_defaults(void **state)
{
    (void)state;
    json_t *doc = load_yaml(pytorch_yaml);
    /* The only container is taken whatever its name; the container's
     * runAsUser wins over the pod's; worker spelled in lower case. */
    json_t *specs = walk(doc, "spec.pytorchReplicaSpecs");
    json_t *worker = json_incref(json_object_get(specs, "Worker"));
    json_object_del(specs, "Worker");
    json_object_set_new(specs, "worker", worker);
    json_t *c = walk(doc, "spec.pytorchReplicaSpecs.worker.template.spec.containers.0");
    json_object_set_new(c, "name", json_string("trainer"));
    json_object_set_new(walk(doc, "spec.pytorchReplicaSpecs.Master.template.spec.containers.0"),
                        "securityContext", json_pack("{s:i}", "runAsUser", 2000));
    json_t *job = NULL;
    struct gt_err err = {0};
    if (gt_api_kubeflow_convert(doc, &job, &err) != 0) {
        fail_msg("%s", err.msg);
    }
    assert_non_null(walk(job, "spec.replicaSpecs.Worker.template.image"));
    assert_int_equal(json_integer_value(walk(job, "spec.replicaSpecs.Master.template.runAsUser")),
                     2000);
    json_decref(job);

    gt_err_clear(&err);
    /* Two containers, none named pytorch: which one runs is ambiguous. */
    json_array_append_new(walk(doc, "spec.pytorchReplicaSpecs.worker.template.spec.containers"),
                          json_pack("{s:s,s:s}", "name", "other", "image", "busybox"));
    assert_int_equal(gt_api_kubeflow_convert(doc, &job, &err), GT_EINVAL);
    assert_string_equal(err.msg,
                        "spec.pytorchReplicaSpecs.worker.template.spec.containers: no container "
                        "named \"pytorch\" among 2 (gantry runs one container per task)");
    json_decref(doc);

    gt_err_clear(&err);
    /* One volume name, two host paths: gantry's volumes are job-wide. */
    doc = load_yaml(pytorch_yaml);
    json_object_set_new(walk(doc, POD ".volumes.0.hostPath"), "path", json_string("/srv/other"));
    assert_int_equal(gt_api_kubeflow_convert(doc, &job, &err), GT_EINVAL);
    assert_string_equal(err.msg, POD ".volumes[0]: volume \"data\" differs from the one of that "
                                     "name in another replica type (gantry volumes are shared by "
                                     "all replicas)");
    json_decref(doc);

    /* The namespace names the project; gantry has no default one. */
    gt_err_clear(&err);
    doc = load_yaml(tf_yaml);
    json_object_del(walk(doc, "metadata"), "namespace");
    assert_int_equal(gt_api_kubeflow_convert(doc, &job, &err), GT_EINVAL);
    assert_string_equal(err.msg, "metadata.namespace: required (the gantry project)");
    json_decref(doc);

    json_t *native = json_pack("{s:s}", "apiVersion", "gantry.dev/v1");
    assert_false(gt_api_kubeflow_is(native));
    json_decref(native);
}

/* The training operator restarts without limit when backoffLimit is unset
 * (no runPolicy, a runPolicy without it, or null); a given one is kept. */
static void test_backoff_limit(void **state)
{
    (void)state;
    static const struct {
        const char *run_policy; /* JSON, NULL: none */
        json_int_t want;
    } cases[] = {
        {NULL, GT_API_BACKOFF_UNLIMITED},
        {"{\"cleanPodPolicy\":\"All\"}", GT_API_BACKOFF_UNLIMITED},
        {"{\"backoffLimit\":null}", GT_API_BACKOFF_UNLIMITED},
        {"{\"backoffLimit\":0}", 0},
        {"{\"backoffLimit\":3}", 3},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *doc = load_yaml(tf_yaml);
        if (cases[i].run_policy) {
            json_object_set_new(walk(doc, "spec"), "runPolicy",
                                json_loads(cases[i].run_policy, 0, NULL));
        }
        json_t *job = NULL;
        struct gt_err err = {0};
        if (gt_api_kubeflow_convert(doc, &job, &err) != 0) {
            fail_msg("case %zu: %s", i, err.msg);
        }
        json_t *bl = walk(job, "spec.runPolicy.backoffLimit");
        assert_true(json_is_integer(bl));
        assert_int_equal(json_integer_value(bl), cases[i].want);
        json_decref(job);
        json_decref(doc);
    }
}

/* Kueue's topology annotations on the pod templates become
 * spec.runPolicy.schedulingPolicy.topology, the Kubeflow schedulingPolicy
 * kept beside it; replica types must agree, and a level gantry has no
 * counterpart for is refused naming the annotation. */
static void test_kueue_topology(void **state)
{
    (void)state;
    static const struct {
        const char *master, *worker; /* annotation "key=value", NULL: none */
        const char *want;            /* the topology as JSON, or the error */
    } cases[] = {
        {NULL, "kueue.x-k8s.io/podset-required-topology=kubernetes.io/hostname",
         "{\"required\":\"node\"}"},
        {"kueue.x-k8s.io/podset-preferred-topology=gantry.dev/gpu-group",
         "kueue.x-k8s.io/podset-preferred-topology=gpu-group", "{\"preferred\":\"gpu-group\"}"},
        {"kueue.x-k8s.io/podset-required-topology=gantry.dev/numa-node", NULL,
         "{\"required\":\"numa\"}"},
        {"kueue.x-k8s.io/podset-required-topology=node",
         "kueue.x-k8s.io/podset-preferred-topology=node",
         "spec.pytorchReplicaSpecs.Worker.template.metadata.annotations.kueue.x-k8s.io/"
         "podset-preferred-topology: differs from spec.pytorchReplicaSpecs.Master.template."
         "metadata.annotations.kueue.x-k8s.io/podset-required-topology (gantry packs the whole "
         "job at one topology level)"},
        {NULL, "kueue.x-k8s.io/podset-required-topology=cloud.provider.com/topology-rack",
         "spec.pytorchReplicaSpecs.Worker.template.metadata.annotations.kueue.x-k8s.io/"
         "podset-required-topology: topology level not supported by gantry (use "
         "kubernetes.io/hostname, gantry.dev/gpu-group or gantry.dev/numa-node)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *doc = load_yaml(pytorch_yaml);
        const char *ann[2] = {cases[i].master, cases[i].worker};
        const char *type[2] = {"Master", "Worker"};
        for (int r = 0; r < 2; r++) {
            if (!ann[r]) {
                continue;
            }
            json_t *tmpl = json_object_get(
                json_object_get(walk(doc, "spec.pytorchReplicaSpecs"), type[r]), "template");
            json_t *md = json_object_get(tmpl, "metadata");
            if (!md) {
                md = json_object();
                json_object_set_new(tmpl, "metadata", md);
            }
            json_t *a = json_object_get(md, "annotations");
            if (!a) {
                a = json_object();
                json_object_set_new(md, "annotations", a);
            }
            const char *eq = strchr(ann[r], '=');
            char key[128];
            snprintf(key, sizeof(key), "%.*s", (int)(eq - ann[r]), ann[r]);
            json_object_set_new(a, key, json_string(eq + 1));
        }
        json_t *job = NULL;
        struct gt_err err = {0};
        int rc = gt_api_kubeflow_convert(doc, &job, &err);
        if (cases[i].want[0] == '{') {
            if (rc != 0) {
                fail_msg("case %zu: %s", i, err.msg);
            }
            json_t *want = json_loads(cases[i].want, 0, NULL);
            assert_true(json_equal(walk(job, "spec.runPolicy.schedulingPolicy.topology"), want));
            assert_int_equal(
                json_integer_value(walk(job, "spec.runPolicy.schedulingPolicy.minAvailable")), 2);
            json_decref(want);
        } else if (rc != GT_EINVAL || strcmp(err.msg, cases[i].want) != 0) {
            fail_msg("case %zu: rc %d, got \"%s\"\n want \"%s\"", i, rc, err.msg, cases[i].want);
        }
        json_decref(job);
        json_decref(doc);
    }
}

/* The training operator v1.9's examples of the other kinds, and what each
 * becomes: its framework, the "<type>=<replicas>/<restartPolicy>" of its
 * replica types in order, or the error it is refused with. An example
 * without a namespace gets "kubeflow", as `kubectl apply -n` would give. */
static const struct {
    const char *path;
    const char *framework;
    const char *replicas; /* or the error */
} examples[] = {
    {"xgboost/xgboostjob.yaml", "xgboost", "Master=1/Never Worker=2/ExitCode"},
    {"xgboost/lightgbm-dist/xgboostjob_v1_lightgbm_dist_training.yaml", "xgboost",
     "Master=1/Never Worker=2/ExitCode"},
    {"xgboost/smoke-dist/xgboostjob_v1_rabit_test.yaml", "xgboost",
     "Master=1/Never Worker=2/Never"},
    {"xgboost/xgboost-dist/xgboostjob_v1_iris_train.yaml", "xgboost",
     "Master=1/Never Worker=2/ExitCode"},
    {"xgboost/xgboost-dist/xgboostjob_v1_iris_predict.yaml", "xgboost",
     "Master=1/Never Worker=2/ExitCode"},
    {"paddlepaddle/simple-cpu.yaml", "paddle", "Worker=2/OnFailure"},
    {"paddlepaddle/simple-gpu.yaml", "paddle", "Worker=2/OnFailure"},
    {"jax/cpu-demo/demo.yaml", "jax", "Worker=2/OnFailure"},
    {"jax/jax-dist-spmd-mnist/jaxjob_dist_spmd_mnist_gloo.yaml", "jax", "Worker=2/OnFailure"},
    {"mpi/tensorflow-mnist.yaml", "mpi", "Launcher=1/Never Worker=2/Never"},
    {"mpi/tensorflow-mnist-elastic.yaml", "mpi", "Launcher=1/Never Worker=2/Never"},
};

/* The MPI operator's v2beta1 MPIJob (its examples/v2beta1/pi shape). */
static const char *const mpi_yaml = "apiVersion: kubeflow.org/v2beta1\n"
                                    "kind: MPIJob\n"
                                    "metadata: {name: pi, namespace: team}\n"
                                    "spec:\n"
                                    "  slotsPerWorker: 2\n"
                                    "  mpiImplementation: Intel\n"
                                    "  launcherCreationPolicy: WaitForWorkersReady\n"
                                    "  sshAuthMountPath: /home/mpiuser/.ssh\n"
                                    "  runPolicy: {cleanPodPolicy: Running}\n"
                                    "  mpiReplicaSpecs:\n"
                                    "    Launcher:\n"
                                    "      replicas: 1\n"
                                    "      template:\n"
                                    "        spec:\n"
                                    "          containers:\n"
                                    "          - name: mpi-launcher\n"
                                    "            image: mpioperator/mpi-pi:intel\n"
                                    "            args: [mpirun, -n, '4', /home/mpiuser/pi]\n"
                                    "    Worker:\n"
                                    "      replicas: 2\n"
                                    "      template:\n"
                                    "        spec:\n"
                                    "          containers:\n"
                                    "          - name: mpi-worker\n"
                                    "            image: mpioperator/mpi-pi:intel\n";

static const char *const mpi_expected =
    "{\"apiVersion\":\"gantry.dev/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"pi\","
    "\"project\":\"team\",\"annotations\":{\"gantry.dev/framework\":\"mpi\","
    "\"gantry.dev/mpi-slots-per-worker\":\"2\",\"gantry.dev/mpi-implementation\":\"Intel\"}},"
    "\"spec\":{\"replicaSpecs\":{\"Launcher\":{\"replicas\":1,\"restartPolicy\":\"OnFailure\","
    "\"template\":{\"image\":\"mpioperator/mpi-pi:intel\",\"args\":[\"mpirun\",\"-n\",\"4\","
    "\"/home/mpiuser/pi\"]}},\"Worker\":{\"replicas\":2,\"restartPolicy\":\"Never\","
    "\"template\":{\"image\":\"mpioperator/mpi-pi:intel\",\"command\":[\"sleep\",\"365d\"]}}},"
    "\"runPolicy\":{\"cleanPodPolicy\":\"Running\",\"backoffLimit\":2147483647}}}";

static void test_mpijob(void **state)
{
    (void)state;
    json_t *in = load_yaml(mpi_yaml);
    assert_converts_to(in, mpi_expected);
    json_t *job = NULL;
    struct gt_err err = {0};
    /* v1: the spec-level cleanPodPolicy; mainContainer names the container */
    json_object_set_new(in, "apiVersion", json_string("kubeflow.org/v1"));
    json_t *spec = json_object_get(in, "spec");
    json_object_del(spec, "launcherCreationPolicy");
    json_object_del(spec, "sshAuthMountPath");
    json_object_del(spec, "runPolicy");
    json_object_set_new(spec, "cleanPodPolicy", json_string("All"));
    json_object_set_new(spec, "mainContainer", json_string("mpi-launcher"));
    assert_int_equal(gt_api_kubeflow_convert(in, &job, &err), GT_EINVAL);
    assert_string_equal(err.msg, "spec.mainContainer: must name the container of "
                                 "spec.mpiReplicaSpecs.Worker (gantry runs one container per "
                                 "task)");
    json_object_del(spec, "mainContainer");
    if (gt_api_kubeflow_convert(in, &job, &err) != 0) {
        fail_msg("convert v1: %s", err.msg);
    }
    assert_string_equal(json_string_value(gt_json_path(job, "spec.runPolicy.cleanPodPolicy")),
                        "All");
    assert_string_equal(
        json_string_value(gt_json_path(job, "spec.replicaSpecs.Launcher.restartPolicy")), "Never");
    json_decref(job);
    json_decref(in);
}

static void test_operator_examples(void **state)
{
    (void)state;
    const char *src = getenv("GANTRY_SOURCE_DIR");
    for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++) {
        char *path = gt_xasprintf("%s/../shared/fixtures/kubeflow-training-operator-v1.9.0/"
                                  "examples/%s",
                                  src ? src : ".", examples[i].path);
        char *text = NULL;
        size_t len = 0;
        struct gt_err err = {0};
        if (gt_file_read(path, 1 << 20, &text, &len, &err) != 0) {
            fail_msg("%s: %s", path, err.msg);
        }
        json_t *doc = load_yaml(text);
        json_t *md = json_object_get(doc, "metadata");
        if (!json_object_get(md, "namespace")) {
            json_object_set_new(md, "namespace", json_string("kubeflow"));
        }
        json_t *job = NULL;
        int rc = gt_api_kubeflow_convert(doc, &job, &err);
        struct gt_buf got;
        gt_buf_init(&got);
        if (rc != 0) {
            gt_buf_puts(&got, err.msg);
        }
        const char *type;
        json_t *rs;
        json_object_foreach(gt_json_path(job, "spec.replicaSpecs"), type, rs)
        {
            gt_buf_printf(&got, "%s%s=%lld/%s", got.len ? " " : "", type,
                          json_integer_value(json_object_get(rs, "replicas")),
                          json_string_value(json_object_get(rs, "restartPolicy")));
        }
        const char *fw = json_string_value(
            json_object_get(gt_json_path(job, "metadata.annotations"), "gantry.dev/framework"));
        if (strcmp(got.data ? got.data : "", examples[i].replicas) ||
            (examples[i].framework ? !fw || strcmp(fw, examples[i].framework) : fw != NULL)) {
            fail_msg("%s: got %s (framework %s)", examples[i].path, got.data, fw ? fw : "none");
        }
        gt_buf_fini(&got);
        json_decref(job);
        json_decref(doc);
        free(text);
        free(path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pytorchjob),
        cmocka_unit_test(test_tfjob),
        cmocka_unit_test(test_unsupported),
        cmocka_unit_test(test_container_choice_and_defaults),
        cmocka_unit_test(test_backoff_limit),
        cmocka_unit_test(test_kueue_topology),
        cmocka_unit_test(test_operator_examples),
        cmocka_unit_test(test_claim_volumes),
        cmocka_unit_test(test_mpijob),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
