/*
 * Kubeflow training-operator manifests (kubeflow.org/v1 TFJob, PyTorchJob,
 * XGBoostJob, PaddleJob, JAXJob and MPIJob, and the MPI operator's
 * kubeflow.org/v2beta1 MPIJob, whose own fields kubeflow_mpi.c converts)
 * converted into gantry Jobs, so people can apply the manifests they
 * already have.
 *
 * The conversion is strict in the same way as validation: every field of the
 * input is either carried over or refused with its path and "not supported
 * by gantry" (a field the object has upstream) or "unknown field" (one it
 * does not have, such as a misspelt "comand"); nothing that changes how the
 * job runs is dropped. The only fields accepted without a counterpart are
 * the ones that address Kubernetes machinery gantry has no equivalent of
 * and that do not change what runs: the container's name and
 * imagePullPolicy, and the pod template's labels and annotations
 * (Kubernetes uses them for services and sidecar injection), except
 * Kueue's podset-required-topology and podset-preferred-topology
 * annotations, which become the job's schedulingPolicy.topology. Kubeflow's
 * defaults that differ from gantry's are written out
 * (restartPolicy OnFailure for PyTorchJob and PaddleJob, Never for TFJob,
 * XGBoostJob and JAXJob; no
 * runPolicy.backoffLimit: GT_API_BACKOFF_UNLIMITED, as the operator does not
 * limit restarts then), and the output
 * is annotated gantry.dev/framework (pytorch | tensorflow | xgboost |
 * paddle | jax | mpi) so that the job
 * controller knows which distributed environment the tasks expect. The
 * annotation gantry.dev/tensorboard-log-dir becomes spec.tensorboard.logDir.
 *
 * The input is borrowed and never changed; the output is a new object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api_int.h"

#define KUBEFLOW_API_VERSION "kubeflow.org/v1"
#define KUBEFLOW_API_V2BETA1 "kubeflow.org/v2beta1" /* the MPI operator's MPIJob */
#define KUBEFLOW_GROUP "kubeflow.org/"
#define FRAMEWORK_ANNOTATION "gantry.dev/framework"
/* Where the job writes TensorBoard event files: its spec.tensorboard.logDir. */
#define TENSORBOARD_ANNOTATION "gantry.dev/tensorboard-log-dir"

/* What differs between the job kinds. */
struct framework {
    const char *kind;            /* "PyTorchJob" */
    const char *api_version;     /* "kubeflow.org/v1" */
    const char *specs_key;       /* spec.<specs_key> holds the replica specs */
    const char *container;       /* the framework container's name */
    const char *name;            /* value of the gantry.dev/framework annotation */
    const char *restart;         /* Kubeflow's default restartPolicy */
    const char *const *types;    /* replica types, canonical spelling */
    const char *const *extras;   /* other spec fields, handled by check_extras */
    const char *const *upstream; /* every field of its spec upstream */
    /* the kind's own spec fields (extras) into the converted job; NULL: none */
    int (*finish)(const json_t *spec, json_t *job, struct gt_err *err);
};

static const char *const tf_types[] = {"Chief", "PS", "Worker", "Evaluator", "Master", NULL};
static const char *const master_worker_types[] = {"Master", "Worker", NULL};
static const char *const worker_types[] = {"Worker", NULL};
static const char *const pytorch_extras[] = {"nprocPerNode", NULL};
static const char *const no_extras[] = {NULL};
static const char *const tf_extras[] = {"successPolicy", "enableDynamicWorker", NULL};
static const char *const pytorch_upstream[] = {"runPolicy", "elasticPolicy", "pytorchReplicaSpecs",
                                               "nprocPerNode", NULL};
static const char *const tf_upstream[] = {"runPolicy", "successPolicy", "tfReplicaSpecs",
                                          "enableDynamicWorker", NULL};
static const char *const xgb_upstream[] = {"runPolicy", "xgbReplicaSpecs", NULL};
static const char *const paddle_upstream[] = {"runPolicy", "elasticPolicy", "paddleReplicaSpecs",
                                              NULL};
static const char *const jax_upstream[] = {"runPolicy", "jaxReplicaSpecs", NULL};
static const char *const mpi_types[] = {"Launcher", "Worker", NULL};
/* MPIJob of the training operator v1.9 (kubeflow.org/v1) and of the MPI
 * operator (kubeflow.org/v2beta1): every spec field is taken (kubeflow_mpi.c) */
static const char *const mpi_v1_extras[] = {"slotsPerWorker", "cleanPodPolicy", "mainContainer",
                                            "mpiImplementation", NULL};
static const char *const mpi_v1_upstream[] = {"runPolicy",
                                              "mpiReplicaSpecs",
                                              "slotsPerWorker",
                                              "cleanPodPolicy",
                                              "mainContainer",
                                              "mpiImplementation",
                                              NULL};
static const char *const mpi_v2_extras[] = {"slotsPerWorker",    "runLauncherAsWorker",
                                            "sshAuthMountPath",  "launcherCreationPolicy",
                                            "mpiImplementation", NULL};
static const char *const mpi_v2_upstream[] = {
    "runPolicy",        "mpiReplicaSpecs",        "slotsPerWorker",    "runLauncherAsWorker",
    "sshAuthMountPath", "launcherCreationPolicy", "mpiImplementation", NULL};

static const struct framework frameworks[] = {
    {"PyTorchJob", KUBEFLOW_API_VERSION, "pytorchReplicaSpecs", "pytorch", "pytorch", "OnFailure",
     master_worker_types, pytorch_extras, pytorch_upstream, NULL},
    {"TFJob", KUBEFLOW_API_VERSION, "tfReplicaSpecs", "tensorflow", "tensorflow", "Never", tf_types,
     tf_extras, tf_upstream, NULL},
    {"XGBoostJob", KUBEFLOW_API_VERSION, "xgbReplicaSpecs", "xgboost", "xgboost", "Never",
     master_worker_types, no_extras, xgb_upstream, NULL},
    {"PaddleJob", KUBEFLOW_API_VERSION, "paddleReplicaSpecs", "paddle", "paddle", "OnFailure",
     master_worker_types, no_extras, paddle_upstream, NULL},
    {"JAXJob", KUBEFLOW_API_VERSION, "jaxReplicaSpecs", "jax", "jax", "Never", worker_types,
     no_extras, jax_upstream, NULL},
    {"MPIJob", KUBEFLOW_API_VERSION, "mpiReplicaSpecs", "mpi", GT_API_FRAMEWORK_MPI, "Never",
     mpi_types, mpi_v1_extras, mpi_v1_upstream, gt_api_kubeflow_mpi_v1},
    {"MPIJob", KUBEFLOW_API_V2BETA1, "mpiReplicaSpecs", "mpi", GT_API_FRAMEWORK_MPI, "Never",
     mpi_types, mpi_v2_extras, mpi_v2_upstream, gt_api_kubeflow_mpi_v2beta1},
};

/* Field paths in messages: "spec.pytorchReplicaSpecs.Worker.template". */
typedef char path_t[GT_API_PATH_MAX];

static const char *join(path_t buf, const char *parent, const char *name)
{
    return gt_path_join(buf, sizeof(path_t), parent, name);
}

static const char *index_path(path_t buf, const char *parent, size_t i)
{
    snprintf(buf, sizeof(path_t), "%s[%zu]", parent, i);
    return buf;
}

static bool in_list(const char *const *list, const char *s)
{
    for (; *list; list++) {
        if (strcmp(*list, s) == 0) {
            return true;
        }
    }
    return false;
}

static bool str_is(const json_t *v, const char *s)
{
    return json_is_string(v) && strcmp(json_string_value(v), s) == 0;
}

static int unsupported(const char *path, const char *key, struct gt_err *err)
{
    path_t p;
    return gt_err_set(err, GT_EINVAL, "%s: not supported by gantry", join(p, path, key));
}

/*
 * The fields each object has upstream (Kubernetes core/v1 and the training
 * operator's kubeflow.org/v1 types, as of v1.30 and v1.9.0), so that a
 * field gantry lacks is told from a misspelt one: a key in neither the
 * object's gantry list nor its upstream list is an unknown field.
 */
static const char *const k8s_object_meta[] = {"name",
                                              "generateName",
                                              "namespace",
                                              "selfLink",
                                              "uid",
                                              "resourceVersion",
                                              "generation",
                                              "creationTimestamp",
                                              "deletionTimestamp",
                                              "deletionGracePeriodSeconds",
                                              "labels",
                                              "annotations",
                                              "ownerReferences",
                                              "finalizers",
                                              "managedFields",
                                              NULL};
static const char *const k8s_container[] = {"name",
                                            "image",
                                            "command",
                                            "args",
                                            "workingDir",
                                            "ports",
                                            "envFrom",
                                            "env",
                                            "resources",
                                            "resizePolicy",
                                            "restartPolicy",
                                            "volumeMounts",
                                            "volumeDevices",
                                            "livenessProbe",
                                            "readinessProbe",
                                            "startupProbe",
                                            "lifecycle",
                                            "terminationMessagePath",
                                            "terminationMessagePolicy",
                                            "imagePullPolicy",
                                            "securityContext",
                                            "stdin",
                                            "stdinOnce",
                                            "tty",
                                            NULL};
static const char *const k8s_pod_spec[] = {"volumes",
                                           "initContainers",
                                           "containers",
                                           "ephemeralContainers",
                                           "restartPolicy",
                                           "terminationGracePeriodSeconds",
                                           "activeDeadlineSeconds",
                                           "dnsPolicy",
                                           "nodeSelector",
                                           "serviceAccountName",
                                           "serviceAccount",
                                           "automountServiceAccountToken",
                                           "nodeName",
                                           "hostNetwork",
                                           "hostPID",
                                           "hostIPC",
                                           "shareProcessNamespace",
                                           "securityContext",
                                           "imagePullSecrets",
                                           "hostname",
                                           "subdomain",
                                           "affinity",
                                           "schedulerName",
                                           "tolerations",
                                           "hostAliases",
                                           "priorityClassName",
                                           "priority",
                                           "dnsConfig",
                                           "readinessGates",
                                           "runtimeClassName",
                                           "enableServiceLinks",
                                           "preemptionPolicy",
                                           "overhead",
                                           "topologySpreadConstraints",
                                           "setHostnameAsFQDN",
                                           "os",
                                           "hostUsers",
                                           "schedulingGates",
                                           "resourceClaims",
                                           NULL};
static const char *const k8s_env_var[] = {"name", "value", "valueFrom", NULL};
static const char *const k8s_resources[] = {"limits", "requests", "claims", NULL};
static const char *const k8s_port[] = {"name",     "hostPort", "containerPort",
                                       "protocol", "hostIP",   NULL};
static const char *const k8s_mount[] = {"name",        "readOnly", "recursiveReadOnly",
                                        "mountPath",   "subPath",  "mountPropagation",
                                        "subPathExpr", NULL};
static const char *const k8s_security[] = {
    "capabilities", "privileged", "seLinuxOptions", "windowsOptions", "runAsUser", "runAsGroup",
    "runAsNonRoot", "readOnlyRootFilesystem", "allowPrivilegeEscalation", "procMount",
    "seccompProfile", "appArmorProfile",
    /* PodSecurityContext's own */
    "supplementalGroups", "supplementalGroupsPolicy", "fsGroup", "sysctls", "fsGroupChangePolicy",
    "seLinuxChangePolicy", NULL};
static const char *const k8s_host_path[] = {"path", "type", NULL};
static const char *const k8s_pod_template[] = {"metadata", "spec", NULL};
static const char *const kf_replica_spec[] = {"replicas", "template", "restartPolicy", NULL};
static const char *const kf_run_policy[] = {"cleanPodPolicy",
                                            "ttlSecondsAfterFinished",
                                            "activeDeadlineSeconds",
                                            "backoffLimit",
                                            "schedulingPolicy",
                                            "suspend",
                                            "managedBy",
                                            NULL};
static const char *const kf_scheduling_policy[] = {
    "minAvailable", "queue", "minResources", "priorityClass", "scheduleTimeoutSeconds", NULL};
static const char *const kf_object[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};

/* Refuse the first key of obj that is not in known: "not supported by
 * gantry" when upstream has it (upstream NULL: any key, as for the open set
 * of resource names), else "unknown field". */
static int only_keys(const json_t *obj, const char *path, const char *const *known,
                     const char *const *upstream, struct gt_err *err)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (in_list(known, key)) {
            continue;
        }
        if (!upstream || in_list(upstream, key)) {
            return unsupported(path, key, err);
        }
        path_t p;
        return gt_err_set(err, GT_EINVAL, "%s: unknown field", join(p, path, key));
    }
    return 0;
}

static int want_type(const json_t *v, json_type type, const char *path, struct gt_err *err)
{
    static const char *const names[] = {[JSON_OBJECT] = "an object",
                                        [JSON_ARRAY] = "a list",
                                        [JSON_STRING] = "a string",
                                        [JSON_INTEGER] = "an integer"};
    if (json_typeof(v) != type) {
        return gt_err_set(err, GT_EINVAL, "%s: must be %s", path, names[type]);
    }
    return 0;
}

/* obj[key] (if present) must have the given type; *out is borrowed or NULL. */
static int get_typed(const json_t *obj, const char *key, json_type type, const char *path,
                     json_t **out, struct gt_err *err)
{
    path_t p;
    *out = json_object_get(obj, key);
    return *out ? want_type(*out, type, join(p, path, key), err) : 0;
}

/* Copy src[key] into dst[key] when present (a new reference). */
static void copy_field(json_t *dst, const json_t *src, const char *key)
{
    json_t *v = json_object_get(src, key);
    if (v) {
        json_object_set_new(dst, key, json_deep_copy(v));
    }
}

/* ---- containers ---- */

/* valueFrom: only fieldRef, the task's own fields (gantry's schema names
 * which); its apiVersion may only be Kubernetes' "v1". */
static int convert_value_from(const json_t *vf, const char *path, struct gt_err *err)
{
    static const char *const known[] = {"fieldRef", NULL};
    static const char *const upstream[] = {"fieldRef", "resourceFieldRef", "configMapKeyRef",
                                           "secretKeyRef", NULL};
    static const char *const ref_known[] = {"fieldPath", "apiVersion", NULL};
    path_t p, q;
    json_t *ref = NULL;
    int rc = want_type(vf, JSON_OBJECT, path, err);
    if (rc == 0) {
        rc = only_keys(vf, path, known, upstream, err);
    }
    if (rc == 0) {
        rc = get_typed(vf, "fieldRef", JSON_OBJECT, path, &ref, err);
    }
    if (rc == 0 && ref) {
        rc = only_keys(ref, join(p, path, "fieldRef"), ref_known, ref_known, err);
    }
    json_t *api = json_object_get(ref, "apiVersion");
    if (rc == 0 && api && !str_is(api, "v1")) {
        rc = gt_err_set(err, GT_EINVAL, "%s: only \"v1\" is supported by gantry",
                        join(q, p, "apiVersion"));
    }
    return rc;
}

static int convert_env(const json_t *env, const char *path, json_t *tmpl, struct gt_err *err)
{
    static const char *const known[] = {"name", "value", "valueFrom", NULL};
    json_t *out = json_array();
    json_object_set_new(tmpl, "env", out);
    size_t i;
    json_t *e;
    json_array_foreach(env, i, e)
    {
        path_t p;
        index_path(p, path, i);
        int rc = want_type(e, JSON_OBJECT, p, err);
        if (rc == 0) {
            rc = only_keys(e, p, known, k8s_env_var, err);
        }
        json_t *vf = json_object_get(e, "valueFrom");
        path_t q;
        if (rc == 0 && vf) {
            rc = convert_value_from(vf, join(q, p, "valueFrom"), err);
        }
        if (rc != 0) {
            return rc;
        }
        json_t *o = json_deep_copy(e);
        json_object_del(gt_json_path(o, "valueFrom.fieldRef"), "apiVersion");
        json_array_append_new(out, o);
    }
    return 0;
}

/* resources.limits / resources.requests: the quantities gantry schedules. */
static int convert_resources(const json_t *res, const char *path, json_t *tmpl, struct gt_err *err)
{
    static const char *const known[] = {"limits", "requests", NULL};
    static const char *const names[] = {GT_RES_NAME_CPU,       GT_RES_NAME_MEMORY,
                                        GT_RES_NAME_GPU,       GT_RES_NAME_GPU_MILLI,
                                        GT_RES_NAME_EPHEMERAL, NULL};
    int rc = only_keys(res, path, known, k8s_resources, err);
    if (rc != 0) {
        return rc;
    }
    for (const char *const *k = known; *k; k++) {
        path_t p;
        json_t *map;
        if ((rc = get_typed(res, *k, JSON_OBJECT, path, &map, err)) != 0) {
            return rc;
        }
        if (map && (rc = only_keys(map, join(p, path, *k), names, NULL, err)) != 0) {
            return rc;
        }
    }
    json_object_set_new(tmpl, "resources", json_deep_copy(res));
    return 0;
}

static int convert_ports(const json_t *ports, const char *path, json_t *tmpl, struct gt_err *err)
{
    static const char *const known[] = {"name", "containerPort", "protocol", NULL};
    json_t *out = json_array();
    json_object_set_new(tmpl, "ports", out);
    size_t i;
    json_t *port;
    json_array_foreach(ports, i, port)
    {
        path_t p, q;
        index_path(p, path, i);
        int rc = want_type(port, JSON_OBJECT, p, err);
        if (rc == 0) {
            rc = only_keys(port, p, known, k8s_port, err);
        }
        if (rc != 0) {
            return rc;
        }
        json_t *proto = json_object_get(port, "protocol");
        if (proto && !str_is(proto, "TCP")) {
            return gt_err_set(err, GT_EINVAL, "%s: only TCP is supported by gantry",
                              join(q, p, "protocol"));
        }
        json_t *o = json_object();
        copy_field(o, port, "name");
        copy_field(o, port, "containerPort");
        json_array_append_new(out, o);
    }
    return 0;
}

static int convert_mounts(const json_t *mounts, const char *path, json_t *tmpl, struct gt_err *err)
{
    static const char *const known[] = {"name", "mountPath", "readOnly", NULL};
    json_t *out = json_array();
    json_object_set_new(tmpl, "volumeMounts", out);
    size_t i;
    json_t *m;
    json_array_foreach(mounts, i, m)
    {
        path_t p;
        index_path(p, path, i);
        int rc = want_type(m, JSON_OBJECT, p, err);
        if (rc == 0) {
            rc = only_keys(m, p, known, k8s_mount, err);
        }
        if (rc != 0) {
            return rc;
        }
        json_array_append_new(out, json_deep_copy(m));
    }
    return 0;
}

/* securityContext (pod or container level): only runAsUser has a gantry
 * counterpart. The container's value wins, as in Kubernetes. */
static int convert_security(const json_t *sc, const char *path, json_t *tmpl, struct gt_err *err)
{
    static const char *const known[] = {"runAsUser", NULL};
    int rc = want_type(sc, JSON_OBJECT, path, err);
    if (rc == 0) {
        rc = only_keys(sc, path, known, k8s_security, err);
    }
    if (rc == 0) {
        copy_field(tmpl, sc, "runAsUser");
    }
    return rc;
}

/* The framework container's fields into the gantry template tmpl. */
static int convert_container(const json_t *c, const char *path, json_t *tmpl, struct gt_err *err)
{
    static const char *const known[] = {"name",  "image",        "imagePullPolicy", "command",
                                        "args",  "env",          "workingDir",      "resources",
                                        "ports", "volumeMounts", "securityContext", NULL};
    int rc = only_keys(c, path, known, k8s_container, err);
    if (rc != 0) {
        return rc;
    }
    copy_field(tmpl, c, "image");
    copy_field(tmpl, c, "command");
    copy_field(tmpl, c, "args");
    copy_field(tmpl, c, "workingDir");
    static const struct {
        const char *key;
        json_type type;
        int (*fn)(const json_t *v, const char *path, json_t *tmpl, struct gt_err *err);
    } parts[] = {
        {"env", JSON_ARRAY, convert_env},
        {"resources", JSON_OBJECT, convert_resources},
        {"ports", JSON_ARRAY, convert_ports},
        {"volumeMounts", JSON_ARRAY, convert_mounts},
        {"securityContext", JSON_OBJECT, convert_security},
    };
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        path_t p;
        json_t *v;
        if ((rc = get_typed(c, parts[i].key, parts[i].type, path, &v, err)) != 0) {
            return rc;
        }
        if (v && (rc = parts[i].fn(v, join(p, path, parts[i].key), tmpl, err)) != 0) {
            return rc;
        }
    }
    return 0;
}

/* Pick the container named after the framework, else the only one; any
 * other container would be a sidecar gantry cannot run. */
static int pick_container(const json_t *containers, const char *path, const char *name,
                          const json_t **out, struct gt_err *err)
{
    size_t n = json_array_size(containers);
    if (n == 0) {
        return gt_err_set(err, GT_EINVAL, "%s: must name one container", path);
    }
    size_t chosen = n;
    for (size_t i = 0; i < n; i++) {
        path_t p;
        json_t *c = json_array_get(containers, i);
        int rc = want_type(c, JSON_OBJECT, index_path(p, path, i), err);
        if (rc != 0) {
            return rc;
        }
        const char *cname = json_string_value(json_object_get(c, "name"));
        if (cname && strcmp(cname, name) == 0 && chosen == n) {
            chosen = i;
        }
    }
    if (chosen == n && n > 1) {
        return gt_err_set(err, GT_EINVAL,
                          "%s: no container named \"%s\" among %zu (gantry runs one container "
                          "per task)",
                          path, name, n);
    }
    chosen = chosen == n ? 0 : chosen;
    if (n > 1) {
        path_t p;
        return gt_err_set(err, GT_EINVAL,
                          "%s: sidecar containers are not supported by gantry (only the "
                          "\"%s\" container runs)",
                          index_path(p, path, chosen == 0 ? 1 : 0), name);
    }
    *out = json_array_get(containers, chosen);
    return 0;
}

/* ---- pod volumes, merged into the job's spec.volumes ---- */

/* A pod hostPath volume (host, at path "...hostPath") as gantry's
 * {hostPath: "<path>"} into out. */
static int convert_host_path(const json_t *host, const char *path, json_t *out, struct gt_err *err)
{
    static const char *const host_known[] = {"path", "type", NULL};
    int rc = only_keys(host, path, host_known, k8s_host_path, err);
    if (rc != 0) {
        return rc;
    }
    const char *type = json_string_value(json_object_get(host, "type"));
    if (json_object_get(host, "type") && (!type || (*type && strcmp(type, "Directory") != 0))) {
        path_t q;
        return gt_err_set(err, GT_EINVAL,
                          "%s: only \"Directory\" is supported by gantry (the path must exist)",
                          join(q, path, "type"));
    }
    json_t *hp = json_object_get(host, "path");
    if (hp) { /* gantry's field is spec.volumes[].hostPath, a string */
        json_object_set(out, "hostPath", hp);
    }
    return 0;
}

/* A pod persistentVolumeClaim volume (pvc, at path
 * "...persistentVolumeClaim") as gantry's {volume: claimName, readOnly}
 * into out: the claim is a Volume of the job's project, by name. */
static int convert_claim(const json_t *pvc, const char *path, json_t *out, struct gt_err *err)
{
    /* every field of PersistentVolumeClaimVolumeSource is taken */
    static const char *const pvc_known[] = {"claimName", "readOnly", NULL};
    int rc = only_keys(pvc, path, pvc_known, pvc_known, err);
    if (rc != 0) {
        return rc;
    }
    json_t *claim = json_object_get(pvc, "claimName");
    if (!json_is_string(claim)) {
        path_t q;
        return gt_err_set(err, GT_EINVAL, "%s: required (the name of a Volume of the project)",
                          join(q, path, "claimName"));
    }
    json_object_set(out, "volume", claim);
    copy_field(out, pvc, "readOnly");
    return 0;
}

/* A pod emptyDir volume (ed, at path "...emptyDir") as gantry's emptyDir,
 * field for field: scratch space of the task's own (medium "" or Memory,
 * sizeLimit), which gantry's validation checks. */
static int convert_empty_dir(const json_t *ed, const char *path, json_t *out, struct gt_err *err)
{
    /* every field of EmptyDirVolumeSource is taken */
    static const char *const ed_known[] = {"medium", "sizeLimit", NULL};
    int rc = only_keys(ed, path, ed_known, ed_known, err);
    if (rc == 0) {
        json_object_set_new(out, "emptyDir", json_deep_copy(ed));
    }
    return rc;
}

static int convert_volume(const json_t *vol, const char *path, json_t *volumes, struct gt_err *err)
{
    static const char *const known[] = {"name", "hostPath", "persistentVolumeClaim", "emptyDir",
                                        NULL};
    path_t p;
    int rc = want_type(vol, JSON_OBJECT, path, err);
    if (rc != 0) {
        return rc;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)vol, key, v)
    {
        if (!in_list(known, key)) {
            return gt_err_set(err, GT_EINVAL,
                              "%s: not supported by gantry (only hostPath, "
                              "persistentVolumeClaim and emptyDir volumes are)",
                              join(p, path, key));
        }
    }
    json_t *name = json_object_get(vol, "name");
    json_t *host, *pvc, *ed;
    if ((rc = get_typed(vol, "hostPath", JSON_OBJECT, path, &host, err)) != 0 ||
        (rc = get_typed(vol, "persistentVolumeClaim", JSON_OBJECT, path, &pvc, err)) != 0 ||
        (rc = get_typed(vol, "emptyDir", JSON_OBJECT, path, &ed, err)) != 0) {
        return rc;
    }
    if (!json_is_string(name) || (host != NULL) + (pvc != NULL) + (ed != NULL) != 1) {
        return gt_err_set(err, GT_EINVAL,
                          "%s: must have a name and one of hostPath, persistentVolumeClaim and "
                          "emptyDir",
                          path);
    }
    json_t *out = json_object();
    json_object_set(out, "name", name);
    rc = host  ? convert_host_path(host, join(p, path, "hostPath"), out, err)
         : pvc ? convert_claim(pvc, join(p, path, "persistentVolumeClaim"), out, err)
               : convert_empty_dir(ed, join(p, path, "emptyDir"), out, err);
    if (rc != 0) {
        json_decref(out);
        return rc;
    }
    size_t i;
    json_t *have;
    json_array_foreach(volumes, i, have)
    {
        if (json_equal(json_object_get(have, "name"), name)) {
            bool same = json_equal(have, out);
            json_decref(out);
            return same ? 0
                        : gt_err_set(err, GT_EINVAL,
                                     "%s: volume \"%s\" differs from the one of that name in "
                                     "another replica type (gantry volumes are shared by all "
                                     "replicas)",
                                     path, json_string_value(name));
        }
    }
    json_array_append_new(volumes, out);
    return 0;
}

/* ---- the pod template ---- */

/* nodeSelector (a map, which gantry's validation checks) and tolerations
 * (every field of core/v1 Toleration is taken) into the template. */
static int convert_placement(const json_t *pod, const char *path, json_t *tmpl, struct gt_err *err)
{
    static const char *const tol_known[] = {"key",    "operator",          "value",
                                            "effect", "tolerationSeconds", NULL};
    json_t *sel = NULL, *tols = NULL;
    int rc = get_typed(pod, "nodeSelector", JSON_OBJECT, path, &sel, err);
    if (rc == 0) {
        rc = get_typed(pod, "tolerations", JSON_ARRAY, path, &tols, err);
    }
    size_t i;
    json_t *t;
    json_array_foreach(tols, i, t)
    {
        path_t p, q;
        index_path(q, join(p, path, "tolerations"), i);
        if (rc == 0) {
            rc = want_type(t, JSON_OBJECT, q, err);
        }
        if (rc == 0) {
            rc = only_keys(t, q, tol_known, tol_known, err);
        }
    }
    if (rc == 0) {
        copy_field(tmpl, pod, "nodeSelector");
        copy_field(tmpl, pod, "tolerations");
    }
    return rc;
}

static int convert_pod_spec(const json_t *pod, const char *path, const struct framework *fw,
                            json_t *tmpl, json_t *volumes, struct gt_err *err)
{
    static const char *const known[] = {"containers",
                                        "volumes",
                                        "securityContext",
                                        "terminationGracePeriodSeconds",
                                        "nodeSelector",
                                        "tolerations",
                                        NULL};
    path_t p;
    json_t *containers, *vols, *sc;
    int rc = only_keys(pod, path, known, k8s_pod_spec, err);
    if (rc == 0) {
        rc = get_typed(pod, "containers", JSON_ARRAY, path, &containers, err);
    }
    if (rc == 0) {
        rc = get_typed(pod, "volumes", JSON_ARRAY, path, &vols, err);
    }
    if (rc == 0) {
        rc = get_typed(pod, "securityContext", JSON_OBJECT, path, &sc, err);
    }
    if (rc != 0) {
        return rc;
    }
    const json_t *c = NULL;
    if ((rc = pick_container(containers, join(p, path, "containers"), fw->container, &c, err))) {
        return rc;
    }
    if (sc && (rc = convert_security(sc, join(p, path, "securityContext"), tmpl, err)) != 0) {
        return rc;
    }
    copy_field(tmpl, pod, "terminationGracePeriodSeconds");
    if ((rc = convert_placement(pod, path, tmpl, err)) != 0) {
        return rc;
    }
    size_t ci = 0;
    while (json_array_get(containers, ci) != c) {
        ci++;
    }
    path_t cp;
    index_path(cp, join(p, path, "containers"), ci);
    if ((rc = convert_container(c, cp, tmpl, err)) != 0) {
        return rc;
    }
    size_t i;
    json_t *vol;
    json_array_foreach(vols, i, vol)
    {
        path_t vp;
        index_path(vp, join(p, path, "volumes"), i);
        if ((rc = convert_volume(vol, vp, volumes, err)) != 0) {
            return rc;
        }
    }
    return 0;
}

static int convert_template(const json_t *in, const char *path, const struct framework *fw,
                            json_t *tmpl, json_t *volumes, struct gt_err *err)
{
    static const char *const known[] = {"metadata", "spec", NULL};
    static const char *const meta_known[] = {"labels", "annotations", NULL};
    path_t p;
    json_t *meta, *pod;
    int rc = want_type(in, JSON_OBJECT, path, err);
    if (rc == 0) {
        rc = only_keys(in, path, known, k8s_pod_template, err);
    }
    if (rc == 0) {
        rc = get_typed(in, "metadata", JSON_OBJECT, path, &meta, err);
    }
    if (rc == 0 && meta) {
        rc = only_keys(meta, join(p, path, "metadata"), meta_known, k8s_object_meta, err);
    }
    if (rc == 0) {
        rc = get_typed(in, "spec", JSON_OBJECT, path, &pod, err);
    }
    if (rc != 0) {
        return rc;
    }
    if (!pod) {
        return gt_err_set(err, GT_EINVAL, "%s: required", join(p, path, "spec"));
    }
    return convert_pod_spec(pod, join(p, path, "spec"), fw, tmpl, volumes, err);
}

/* ---- replica specs ---- */

/* Kubeflow accepts replica types in any case ("worker") and camel-cases
 * them; *out is the canonical spelling. */
static int replica_type(const struct framework *fw, const char *key, const char *path,
                        const char **out, struct gt_err *err)
{
    for (const char *const *t = fw->types; *t; t++) {
        if (strcasecmp(*t, key) == 0) {
            *out = *t;
            return 0;
        }
    }
    struct gt_buf list;
    gt_buf_init(&list);
    for (const char *const *t = fw->types; *t; t++) {
        gt_buf_printf(&list, "%s%s", t == fw->types ? "" : ", ", *t);
    }
    path_t p;
    gt_err_set(err, GT_EINVAL, "%s: not a %s replica type (%s)", join(p, path, key), fw->kind,
               list.data);
    gt_buf_fini(&list);
    return GT_EINVAL;
}

static int convert_replica(const json_t *rs, const char *path, const struct framework *fw,
                           json_t *out, json_t *volumes, struct gt_err *err)
{
    static const char *const known[] = {"replicas", "restartPolicy", "template", NULL};
    path_t p;
    int rc = want_type(rs, JSON_OBJECT, path, err);
    if (rc == 0) {
        rc = only_keys(rs, path, known, kf_replica_spec, err);
    }
    if (rc != 0) {
        return rc;
    }
    json_t *in_tmpl = json_object_get(rs, "template");
    if (!in_tmpl) {
        return gt_err_set(err, GT_EINVAL, "%s: required", join(p, path, "template"));
    }
    copy_field(out, rs, "replicas");
    copy_field(out, rs, "restartPolicy");
    if (!json_object_get(out, "restartPolicy")) {
        json_object_set_new(out, "restartPolicy", json_string(fw->restart));
    }
    json_t *tmpl = json_object();
    json_object_set_new(out, "template", tmpl);
    return convert_template(in_tmpl, join(p, path, "template"), fw, tmpl, volumes, err);
}

static int convert_replicas(const json_t *specs, const char *path, const struct framework *fw,
                            json_t *gspec, struct gt_err *err)
{
    json_t *out = json_object();
    json_t *volumes = json_array();
    json_object_set_new(gspec, "replicaSpecs", out);
    const char *key;
    json_t *rs;
    json_object_foreach((json_t *)specs, key, rs)
    {
        const char *type;
        path_t p;
        int rc = replica_type(fw, key, path, &type, err);
        if (rc != 0) {
            json_decref(volumes);
            return rc;
        }
        if (json_object_get(out, type)) {
            json_decref(volumes);
            return gt_err_set(err, GT_EINVAL, "%s: %s given twice", join(p, path, key), type);
        }
        json_t *grs = json_object();
        json_object_set_new(out, type, grs);
        if ((rc = convert_replica(rs, join(p, path, key), fw, grs, volumes, err)) != 0) {
            json_decref(volumes);
            return rc;
        }
    }
    if (json_array_size(volumes) > 0) {
        json_object_set(gspec, "volumes", volumes);
    }
    json_decref(volumes);
    return 0;
}

/* ---- runPolicy ---- */

static int convert_run_policy(const json_t *rp, const char *path, json_t *gspec, struct gt_err *err)
{
    static const char *const shared[] = {
        "backoffLimit",   "activeDeadlineSeconds", "ttlSecondsAfterFinished",
        "cleanPodPolicy", "schedulingPolicy",      NULL};
    static const char *const known[] = {"backoffLimit",
                                        "activeDeadlineSeconds",
                                        "ttlSecondsAfterFinished",
                                        "cleanPodPolicy",
                                        "schedulingPolicy",
                                        "suspend",
                                        "managedBy",
                                        NULL};
    static const char *const sched_known[] = {"minAvailable", "queue", "priorityClass", NULL};
    path_t p;
    json_t *sp;
    int rc = only_keys(rp, path, known, kf_run_policy, err);
    if (rc == 0) {
        rc = get_typed(rp, "schedulingPolicy", JSON_OBJECT, path, &sp, err);
    }
    if (rc == 0 && sp) {
        rc = only_keys(sp, join(p, path, "schedulingPolicy"), sched_known, kf_scheduling_policy,
                       err);
    }
    if (rc != 0) {
        return rc;
    }
    json_t *suspend = json_object_get(rp, "suspend");
    if (suspend && !json_is_false(suspend)) {
        return gt_err_set(err, GT_EINVAL, "%s: not supported by gantry (only false)",
                          join(p, path, "suspend"));
    }
    json_t *by = json_object_get(rp, "managedBy");
    if (by && !str_is(by, "kubeflow.org/training-operator")) {
        return gt_err_set(err, GT_EINVAL,
                          "%s: not supported by gantry (gantry manages the job itself)",
                          join(p, path, "managedBy"));
    }
    json_t *out = json_object();
    json_object_set_new(gspec, "runPolicy", out);
    for (const char *const *k = shared; *k; k++) {
        copy_field(out, rp, *k);
    }
    return 0;
}

/* ---- Kueue's topology annotations ---- */

/* Kueue's topology-aware scheduling annotations on a pod template, and the
 * gantry field each maps to (spec.runPolicy.schedulingPolicy.topology). */
static const struct {
    const char *annotation;
    const char *field;
} kueue_topology[] = {
    {"kueue.x-k8s.io/podset-required-topology", "required"},
    {"kueue.x-k8s.io/podset-preferred-topology", "preferred"},
};

/* Topology levels as Kueue names them (node label keys; gantry's own level
 * names are accepted as well), and gantry's level for each. */
static const struct {
    const char *label;
    const char *level;
} kueue_levels[] = {
    {"kubernetes.io/hostname", "node"},    {"node", "node"},
    {"gantry.dev/gpu-group", "gpu-group"}, {"gpu-group", "gpu-group"},
    {"gantry.dev/numa-node", "numa"},      {"numa", "numa"},
};

/* The Kueue topology annotations of the replica specs' pod templates as
 * gspec's runPolicy.schedulingPolicy.topology: gantry packs the whole job
 * at one level, so every replica type that names one must name the same
 * (a replica type without one follows the others). */
static int convert_topology(const json_t *specs, const char *path, json_t *gspec,
                            struct gt_err *err)
{
    const char *field = NULL, *level = NULL, *key;
    path_t first = "";
    json_t *rs;
    json_object_foreach((json_t *)specs, key, rs)
    {
        json_t *ann = gt_json_path(rs, "template.metadata.annotations");
        for (size_t a = 0; a < GT_ARRAY_LEN(kueue_topology); a++) {
            json_t *v = json_object_get(ann, kueue_topology[a].annotation);
            if (!v) {
                continue;
            }
            path_t p, q;
            join(p, join(q, path, key), "template.metadata.annotations");
            join(q, p, kueue_topology[a].annotation);
            const char *lv = NULL;
            for (size_t l = 0; l < GT_ARRAY_LEN(kueue_levels) && json_is_string(v); l++) {
                if (str_is(v, kueue_levels[l].label)) {
                    lv = kueue_levels[l].level;
                }
            }
            if (!lv) {
                return gt_err_set(err, GT_EINVAL,
                                  "%s: topology level not supported by gantry (use "
                                  "kubernetes.io/hostname, gantry.dev/gpu-group or "
                                  "gantry.dev/numa-node)",
                                  q);
            }
            if (level && (strcmp(level, lv) || strcmp(field, kueue_topology[a].field))) {
                return gt_err_set(err, GT_EINVAL,
                                  "%s: differs from %s (gantry packs the whole job at one "
                                  "topology level)",
                                  q, first);
            }
            level = lv;
            field = kueue_topology[a].field;
            snprintf(first, sizeof(first), "%s", q);
        }
    }
    if (!level) {
        return 0;
    }
    json_t *rp = json_object_get(gspec, "runPolicy");
    json_t *sp = json_object_get(rp, "schedulingPolicy");
    if (!sp) {
        sp = json_object();
        json_object_set_new(rp, "schedulingPolicy", sp);
    }
    json_object_set_new(sp, "topology", json_pack("{s:s}", field, level));
    return 0;
}

/* ---- the job ---- */

/* Kind-specific spec fields: accepted only at their Kubeflow default. */
static int check_extras(const json_t *spec, const char *path, struct gt_err *err)
{
    static const struct {
        const char *key;
        const char *json; /* the one accepted value */
        const char *why;
    } extras[] = {
        {"nprocPerNode", "\"auto\"", "gantry starts one process per task"},
        {"successPolicy", "\"\"", "success is the chief's, or all workers'"},
        {"enableDynamicWorker", "false", "the cluster is fixed at start"},
    };
    for (size_t i = 0; i < sizeof(extras) / sizeof(extras[0]); i++) {
        json_t *v = json_object_get(spec, extras[i].key);
        json_t *ok = json_loads(extras[i].json, JSON_DECODE_ANY, NULL);
        bool bad = v && !json_equal(v, ok);
        json_decref(ok);
        if (bad) {
            path_t p;
            return gt_err_set(err, GT_EINVAL, "%s: only %s is supported by gantry (%s)",
                              join(p, path, extras[i].key), extras[i].json, extras[i].why);
        }
    }
    return 0;
}

static int convert_spec(const json_t *spec, const struct framework *fw, json_t *gspec,
                        struct gt_err *err)
{
    const char *known[12] = {"runPolicy", fw->specs_key};
    size_t n = 2;
    for (const char *const *x = fw->extras; *x && n + 1 < GT_ARRAY_LEN(known); x++) {
        known[n++] = *x;
    }
    known[n] = NULL;
    json_t *specs, *rp;
    int rc = only_keys(spec, "spec", known, fw->upstream, err);
    if (rc == 0) {
        rc = check_extras(spec, "spec", err);
    }
    if (rc == 0) {
        rc = get_typed(spec, fw->specs_key, JSON_OBJECT, "spec", &specs, err);
    }
    if (rc == 0) {
        rc = get_typed(spec, "runPolicy", JSON_OBJECT, "spec", &rp, err);
    }
    if (rc != 0) {
        return rc;
    }
    if (!specs) {
        return gt_err_set(err, GT_EINVAL, "spec.%s: required", fw->specs_key);
    }
    path_t p;
    rc = convert_replicas(specs, join(p, "spec", fw->specs_key), fw, gspec, err);
    if (rc == 0 && rp) {
        rc = convert_run_policy(rp, "spec.runPolicy", gspec, err);
    }
    if (rc == 0) {
        /* the training operator restarts without limit when backoffLimit
         * is unset; gantry's default would be 6 */
        json_t *out = json_object_get(gspec, "runPolicy");
        if (!out) {
            out = json_object();
            json_object_set_new(gspec, "runPolicy", out);
        }
        json_t *bl = json_object_get(out, "backoffLimit");
        if (!bl || json_is_null(bl)) {
            json_object_set_new(out, "backoffLimit", json_integer(GT_API_BACKOFF_UNLIMITED));
        }
        rc = convert_topology(specs, join(p, "spec", fw->specs_key), gspec, err);
    }
    return rc;
}

static int convert_metadata(const json_t *md, const struct framework *fw, json_t *out,
                            struct gt_err *err)
{
    static const char *const known[] = {"name", "namespace", "labels", "annotations", NULL};
    int rc = only_keys(md, "metadata", known, k8s_object_meta, err);
    if (rc != 0) {
        return rc;
    }
    copy_field(out, md, "name");
    copy_field(out, md, "labels");
    json_t *ns = json_object_get(md, "namespace");
    if (!ns) {
        return gt_err_set(err, GT_EINVAL, "metadata.namespace: required (the gantry project)");
    }
    json_object_set_new(out, "project", json_deep_copy(ns));
    json_t *ann;
    if ((rc = get_typed(md, "annotations", JSON_OBJECT, "metadata", &ann, err)) != 0) {
        return rc;
    }
    json_t *gann = ann ? json_deep_copy(ann) : json_object();
    json_object_set_new(gann, FRAMEWORK_ANNOTATION, json_string(fw->name));
    json_object_set_new(out, "annotations", gann);
    return 0;
}

/* The annotation TENSORBOARD_ANNOTATION (Kubeflow's jobs have no such
 * field) becomes spec.tensorboard.logDir of the converted job. */
static void convert_tensorboard(const json_t *md, json_t *gspec)
{
    const json_t *dir = json_object_get(json_object_get(md, "annotations"), TENSORBOARD_ANNOTATION);
    if (json_is_string(dir)) {
        json_object_set_new(gspec, "tensorboard", json_pack("{s:O}", "logDir", dir));
    }
}

bool gt_api_kubeflow_is(const json_t *doc)
{
    const char *v = json_string_value(json_object_get(doc, "apiVersion"));
    return v && strncmp(v, KUBEFLOW_GROUP, strlen(KUBEFLOW_GROUP)) == 0;
}

static int find_framework(const json_t *in, const struct framework **out, struct gt_err *err)
{
    if (!json_is_object(in)) {
        return gt_err_set(err, GT_EINVAL, "not an object");
    }
    const char *version = json_string_value(json_object_get(in, "apiVersion"));
    const char *kind = json_string_value(json_object_get(in, "kind"));
    bool v2 = version && strcmp(version, KUBEFLOW_API_V2BETA1) == 0;
    if (!version || (strcmp(version, KUBEFLOW_API_VERSION) != 0 && !v2)) {
        return gt_err_set(err, GT_EINVAL,
                          "apiVersion: must be " KUBEFLOW_API_VERSION " (or " KUBEFLOW_API_V2BETA1
                          " for an MPIJob)");
    }
    for (size_t i = 0; kind && i < sizeof(frameworks) / sizeof(frameworks[0]); i++) {
        if (strcmp(kind, frameworks[i].kind) == 0 &&
            strcmp(version, frameworks[i].api_version) == 0) {
            *out = &frameworks[i];
            return 0;
        }
    }
    if (v2) {
        return gt_err_set(err, GT_EINVAL,
                          "kind: not supported by gantry (of " KUBEFLOW_API_V2BETA1
                          " only MPIJob is)");
    }
    return gt_err_set(err, GT_EINVAL,
                      "kind: not supported by gantry (of " KUBEFLOW_API_VERSION
                      " only TFJob, PyTorchJob, XGBoostJob, PaddleJob, JAXJob and MPIJob are)");
}

int gt_api_kubeflow_convert(const json_t *in, json_t **job_out, struct gt_err *err)
{
    static const char *const known[] = {"apiVersion", "kind", "metadata", "spec", NULL};
    const struct framework *fw = NULL;
    json_t *md = NULL, *spec = NULL;
    *job_out = NULL;
    int rc = find_framework(in, &fw, err);
    if (rc == 0) {
        rc = only_keys(in, "", known, kf_object, err);
    }
    if (rc == 0) {
        rc = get_typed(in, "metadata", JSON_OBJECT, "", &md, err);
    }
    if (rc == 0) {
        rc = get_typed(in, "spec", JSON_OBJECT, "", &spec, err);
    }
    if (rc == 0 && (!md || !spec)) {
        rc = gt_err_set(err, GT_EINVAL, "%s: required", md ? "spec" : "metadata");
    }
    if (rc != 0) {
        return rc;
    }
    json_t *job = json_object();
    json_t *gmd = json_object();
    json_t *gspec = json_object();
    json_object_set_new(job, "apiVersion", json_string(GT_API_VERSION));
    json_object_set_new(job, "kind", json_string("Job"));
    json_object_set_new(job, "metadata", gmd);
    json_object_set_new(job, "spec", gspec);
    rc = convert_metadata(md, fw, gmd, err);
    if (rc == 0) {
        rc = convert_spec(spec, fw, gspec, err);
        convert_tensorboard(md, gspec);
    }
    if (rc == 0 && fw->finish) {
        rc = fw->finish(spec, job, err);
    }
    if (rc == 0 && (rc = gt_api_validate(GT_KIND_JOB, job, err)) != 0) {
        gt_err_prefix(err, "converted Job");
    }
    if (rc != 0) {
        json_decref(job);
        return rc;
    }
    *job_out = job;
    return 0;
}
