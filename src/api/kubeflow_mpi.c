/*
 * The MPIJob's own fields, after kubeflow.c has converted its replica specs
 * (Launcher and Worker) like any Kubeflow job's: the training operator
 * v1.9's kubeflow.org/v1 MPIJob (slotsPerWorker, the deprecated spec-level
 * cleanPodPolicy, mainContainer, mpiImplementation) and the MPI operator's
 * kubeflow.org/v2beta1 MPIJob (slotsPerWorker, runLauncherAsWorker,
 * sshAuthMountPath, launcherCreationPolicy, mpiImplementation; types and
 * defaults of pkg/apis/kubeflow/v2beta1).
 *
 * slotsPerWorker (default 1) and mpiImplementation (default OpenMPI) become
 * the annotations GT_API_ANNOTATION_MPI_SLOTS and GT_API_ANNOTATION_MPI_IMPL,
 * which the job controller reads when it writes the launcher's hostfile and
 * environment (jobenv_mpi.c). gantry starts ranks through its own rsh agent
 * (`gantry mpi-rsh`, through the workers' node agents), not ssh, so
 * sshAuthMountPath is accepted and has no effect, and a worker without a
 * command sleeps (`sleep 365d`, the training operator's default) to host
 * the ranks. The job is a gang: workers are placed with the launcher, and
 * the rsh agent waits for a worker that is not running yet, so both
 * launcherCreationPolicy values behave as WaitForWorkersReady. The MPI
 * operator v2beta1's launcher restarts OnFailure by default, its workers
 * Never; every v1 replica Never.
 *
 * Inputs are borrowed; only the job being built is changed.
 */
#include <stdio.h>
#include <string.h>

#include "api/api_int.h"

static const char *const implementations[] = {"OpenMPI", "Intel", "MPICH", NULL};
static const char *const launcher_policies[] = {"AtStartup", "WaitForWorkersReady", NULL};
static const char *const clean_policies[] = {"All", "Running", "None", NULL};

/* spec[key], when present, must be one of the strings of allowed. */
static int one_of(const json_t *spec, const char *key, const char *const *allowed,
                  struct gt_err *err)
{
    const json_t *v = json_object_get(spec, key);
    if (!v) {
        return 0;
    }
    for (const char *const *a = allowed; json_is_string(v) && *a; a++) {
        if (strcmp(json_string_value(v), *a) == 0) {
            return 0;
        }
    }
    struct gt_buf list;
    gt_buf_init(&list);
    for (const char *const *a = allowed; *a; a++) {
        gt_buf_printf(&list, "%s%s", a == allowed ? "" : ", ", *a);
    }
    gt_err_set(err, GT_EINVAL, "spec.%s: must be one of %s", key, list.data);
    gt_buf_fini(&list);
    return GT_EINVAL;
}

/* The fields both versions share: slotsPerWorker, mpiImplementation, the
 * Launcher (exactly one) and the worker's default command. */
static int convert_common(const json_t *spec, json_t *job, struct gt_err *err)
{
    const json_t *slots = json_object_get(spec, "slotsPerWorker");
    if (slots && (!json_is_integer(slots) || json_integer_value(slots) < 1 ||
                  json_integer_value(slots) > 1000000)) {
        return gt_err_set(err, GT_EINVAL, "spec.slotsPerWorker: must be an integer >= 1");
    }
    int rc = one_of(spec, "mpiImplementation", implementations, err);
    if (rc != 0) {
        return rc;
    }
    json_t *rs = gt_json_path(job, "spec.replicaSpecs");
    json_t *launcher = json_object_get(rs, "Launcher");
    if (!launcher) {
        return gt_err_set(err, GT_EINVAL, "spec.mpiReplicaSpecs.Launcher: required");
    }
    const json_t *reps = json_object_get(launcher, "replicas");
    if (reps && !(json_is_integer(reps) && json_integer_value(reps) == 1)) {
        return gt_err_set(err, GT_EINVAL,
                          "spec.mpiReplicaSpecs.Launcher.replicas: must be 1 (one mpirun)");
    }
    json_t *worker_tmpl = gt_json_path(rs, "Worker.template");
    if (worker_tmpl && !json_object_get(worker_tmpl, "command") &&
        !json_object_get(worker_tmpl, "args")) {
        json_object_set_new(worker_tmpl, "command", json_pack("[s,s]", "sleep", "365d"));
    }
    json_t *ann = gt_json_path(job, "metadata.annotations");
    char n[24];
    snprintf(n, sizeof(n), "%lld", slots ? (long long)json_integer_value(slots) : 1LL);
    json_object_set_new(ann, GT_API_ANNOTATION_MPI_SLOTS, json_string(n));
    const json_t *impl = json_object_get(spec, "mpiImplementation");
    json_object_set_new(ann, GT_API_ANNOTATION_MPI_IMPL,
                        json_string(impl ? json_string_value(impl) : implementations[0]));
    return 0;
}

int gt_api_kubeflow_mpi_v1(const json_t *spec, json_t *job, struct gt_err *err)
{
    int rc = one_of(spec, "cleanPodPolicy", clean_policies, err);
    const json_t *main = json_object_get(spec, "mainContainer");
    if (rc == 0 && main && !json_is_string(main)) {
        rc = gt_err_set(err, GT_EINVAL, "spec.mainContainer: must be a string");
    }
    if (rc != 0) {
        return rc;
    }
    /* the main container is the pod's only one (gantry runs one per task) */
    const char *key;
    const json_t *rs;
    json_object_foreach(json_object_get(spec, "mpiReplicaSpecs"), key, rs)
    {
        const json_t *c = json_array_get(gt_json_path(rs, "template.spec.containers"), 0);
        const char *name = json_string_value(json_object_get(c, "name"));
        if (main && (!name || strcmp(name, json_string_value(main)) != 0)) {
            return gt_err_set(err, GT_EINVAL,
                              "spec.mainContainer: must name the container of "
                              "spec.mpiReplicaSpecs.%s (gantry runs one container per task)",
                              key);
        }
    }
    /* the deprecated spec-level field, unless runPolicy has its own */
    const json_t *clean = json_object_get(spec, "cleanPodPolicy");
    json_t *rp = gt_json_path(job, "spec.runPolicy");
    if (clean && !json_object_get(rp, "cleanPodPolicy")) {
        json_object_set_new(rp, "cleanPodPolicy", json_deep_copy(clean));
    }
    return convert_common(spec, job, err);
}

int gt_api_kubeflow_mpi_v2beta1(const json_t *spec, json_t *job, struct gt_err *err)
{
    const json_t *as_worker = json_object_get(spec, "runLauncherAsWorker");
    if (as_worker && !json_is_false(as_worker)) {
        return gt_err_set(err, GT_EINVAL,
                          "spec.runLauncherAsWorker: only false is supported by gantry (ranks "
                          "run in the workers)");
    }
    const json_t *ssh = json_object_get(spec, "sshAuthMountPath");
    if (ssh && !json_is_string(ssh)) {
        return gt_err_set(err, GT_EINVAL, "spec.sshAuthMountPath: must be a string");
    }
    int rc = one_of(spec, "launcherCreationPolicy", launcher_policies, err);
    if (rc == 0) {
        rc = convert_common(spec, job, err);
    }
    if (rc != 0) {
        return rc;
    }
    if (!gt_json_path(spec, "mpiReplicaSpecs.Launcher.restartPolicy")) {
        json_object_set_new(gt_json_path(job, "spec.replicaSpecs.Launcher"), "restartPolicy",
                            json_string("OnFailure"));
    }
    return 0;
}
