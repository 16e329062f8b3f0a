/*
 * An MPIJob's environment, as a pure function of its members and
 * annotations (see server.h): what the MPI operator (v2beta1,
 * pkg/controller/mpi_job_controller.go) gives its launcher and workers, with
 * the rsh agent pointing at gantry's own (`gantry mpi-rsh`, which starts a
 * process in a worker task through its node's agent) where the operator
 * configures ssh.
 *
 * The hostfile names the workers as the operator's v2beta1 does,
 * "<job>-worker-<i>.<job>.<project>.svc". These names are deliberately not
 * in the tasks' /etc/hosts: tasks share their node's network, so a worker
 * on the launcher's node would resolve to one of the launcher's own
 * addresses, and Open MPI takes such a host for the local one and starts
 * its ranks inside the launcher. mpirun only hands the name to the rsh
 * agent, which finds the worker task by the name's first label; the ranks
 * meet over the addresses their nodes publish.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

/* The launcher's variables per MPI implementation: the hostfile, how
 * processes are started (rsh agent) and the slots per host. */
static const struct {
    const char *impl;
    const char *hostfile;  /* NAME of the hostfile's path */
    const char *bootstrap; /* NAME=rsh where the implementation needs it; NULL: none */
    const char *agent;     /* NAME of the rsh agent */
    const char *slots;     /* NAME of the default slots per host; NULL: none */
} impls[] = {
    {"OpenMPI", "OMPI_MCA_orte_default_hostfile", NULL, "OMPI_MCA_plm_rsh_agent",
     "OMPI_MCA_orte_set_default_slots"},
    {"Intel", "I_MPI_HYDRA_HOST_FILE", "I_MPI_HYDRA_BOOTSTRAP", "I_MPI_HYDRA_BOOTSTRAP_EXEC",
     "I_MPI_PERHOST"},
    {"MPICH", "HYDRA_HOST_FILE", "HYDRA_LAUNCHER", "HYDRA_LAUNCHER_EXEC", NULL},
};

static void add(json_t *env, const char *name, const char *value)
{
    json_array_append_new(env, json_pack("{s:s, s:s}", "name", name, "value", value));
}

char *gt_jobenv_mpi_hostfile(const char *job, const char *project, const char *impl,
                             long long slots, const struct gt_jobenv_member *m, size_t n)
{
    bool openmpi = !impl || !strcmp(impl, "OpenMPI");
    struct gt_buf b;
    gt_buf_init(&b);
    for (int64_t idx = 0;; idx++) {
        size_t k = 0;
        while (k < n && (strcmp(m[k].type, "Worker") || m[k].index != idx)) {
            k++;
        }
        if (k == n) {
            break;
        }
        char *host = gt_job_task_name(job, "Worker", idx);
        gt_buf_printf(&b, openmpi ? "%s.%s.%s.svc slots=%lld\n" : "%s.%s.%s.svc:%lld\n", host, job,
                      project, slots);
        free(host);
    }
    return b.data ? gt_buf_take(&b) : gt_xstrdup("");
}

json_t *gt_jobenv_mpi_env(const char *job, const char *project, const json_t *annotations,
                          const struct gt_jobenv_member *m, size_t n, size_t self)
{
    json_t *env = json_array();
    bool launcher = !strcmp(m[self].type, "Launcher");
    add(env, "K_MPI_JOB_ROLE", launcher ? "launcher" : "worker");
    if (!launcher) {
        return env;
    }
    const char *impl = json_string_value(json_object_get(annotations, GT_API_ANNOTATION_MPI_IMPL));
    const char *slots_s =
        json_string_value(json_object_get(annotations, GT_API_ANNOTATION_MPI_SLOTS));
    long long slots = slots_s ? strtoll(slots_s, NULL, 10) : 1;
    size_t i = 0; /* OpenMPI unless the annotation names another */
    for (size_t k = 0; impl && k < GT_ARRAY_LEN(impls); k++) {
        i = strcmp(impls[k].impl, impl) ? i : k;
    }
    if (!strcmp(impls[i].impl, "OpenMPI")) {
        add(env, "OMPI_MCA_orte_keep_fqdn_hostnames", "true");
    }
    add(env, impls[i].hostfile, GT_MPI_DIR "/hostfile");
    if (impls[i].bootstrap) {
        add(env, impls[i].bootstrap, "rsh");
    }
    add(env, impls[i].agent, GT_MPI_RSH_AGENT);
    if (impls[i].slots) {
        char v[24];
        snprintf(v, sizeof(v), "%lld", slots);
        add(env, impls[i].slots, v);
    }
    char *hostfile = gt_jobenv_mpi_hostfile(job, project, impls[i].impl, slots, m, n);
    add(env, GT_MPI_HOSTFILE_ENV, hostfile);
    free(hostfile);
    return env;
}
