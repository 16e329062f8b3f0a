/*
 * Unit tests of the job controller's restart and environment rules: the
 * verdict of each restart policy per exit code and reason, the back-off
 * schedule, the gang restart decisions (counted, requeued, backoffLimit,
 * deadline, ttl, no backoffLimit), port allocation, the PyTorch,
 * TensorFlow, XGBoost, Paddle and JAX environments string for string (as
 * the training operator v1.9 writes them) and chosen by the framework
 * annotation, the storage-root admission of volumes, the cluster's pip
 * configuration in the tasks a job becomes, and gantryd's flags for both.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/server.h"
#include "test_server_util.h"

static json_t *failed(const char *type, const char *reason, int exit_code, const char *gen)
{
    return json_pack("{s:{s:s, s:s, s:{s:s}}, s:{s:s}, s:{s:s, s:s, s:i}}", "metadata", "name", "t",
                     "project", "p", "labels", GT_LABEL_GENERATION, gen, "spec", "replicaType",
                     type, "status", "phase", "Failed", "reason", reason, "exitCode", exit_code);
}

static void test_verdicts(void **state)
{
    (void)state;
    json_t *t1 = failed("Worker", "Error", 1, "0");
    json_t *t137 = failed("Worker", "Error", 137, "0");
    json_t *t2 = failed("Worker", "Error", 2, "0");
    json_t *pre = failed("Worker", "Preempted", 143, "0");
    json_t *lost = failed("Worker", "NodeLost", 0, "0");
    json_t *gpu_lost = failed("Worker", "GPULost", 137, "0");
    json_t *idle = failed("Worker", "IdleGPU", 137, "0");
    json_t *rst = failed("Worker", GT_STOP_RESTARTING, 143, "0");
    assert_int_equal(verdict_json("Never", t1), GT_RESTART_PERMANENT);
    assert_int_equal(verdict_json(NULL, t1), GT_RESTART_PERMANENT);
    assert_int_equal(verdict_json("OnFailure", t1), GT_RESTART_RETRY);
    assert_int_equal(verdict_json("Always", t2), GT_RESTART_RETRY);
    assert_int_equal(verdict_json("ExitCode", t137), GT_RESTART_RETRY);
    assert_int_equal(verdict_json("ExitCode", t2), GT_RESTART_PERMANENT);
    assert_int_equal(verdict_json("ExitCode", t1), GT_RESTART_PERMANENT);
    assert_int_equal(verdict_json("Never", pre), GT_RESTART_REQUEUE);
    assert_int_equal(verdict_json("ExitCode", lost), GT_RESTART_REQUEUE);
    assert_int_equal(verdict_json("Never", gpu_lost), GT_RESTART_REQUEUE);
    assert_int_equal(verdict_json("OnFailure", idle), GT_RESTART_PERMANENT);
    assert_int_equal(verdict_json("OnFailure", rst), GT_RESTART_NONE);
    json_t *ok = json_pack("{s:{s:s}}", "status", "phase", "Succeeded");
    assert_int_equal(verdict_json("Always", ok), GT_RESTART_NONE);
    json_decref(ok);
    json_decref(t1);
    json_decref(t137);
    json_decref(t2);
    json_decref(pre);
    json_decref(lost);
    json_decref(gpu_lost);
    json_decref(idle);
    json_decref(rst);
}

static void test_backoff(void **state)
{
    (void)state;
    const int64_t want[] = {10000, 20000, 40000, 80000, 160000, 300000, 300000};
    for (int64_t n = 1; n <= 7; n++) {
        assert_int_equal(gt_job_backoff_ms(n, 10000), want[n - 1]);
    }
    assert_int_equal(gt_job_backoff_ms(3, 100), 400);
    assert_int_equal(gt_job_backoff_ms(40, 100), 3000);
}

/* A job of 1 Master (Never) + 1 Worker (policy) with status st (taken). */
static json_t *job_with(const char *policy, json_t *st)
{
    json_t *j = json_pack(
        "{s:{s:s, s:s}, s:{s:{s:{s:i, s:s, s:{}}, s:{s:i, s:s, s:{}}}, s:{s:i, s:i}}, s:o}",
        "metadata", "name", "train", "project", "p", "spec", "replicaSpecs", "Master", "replicas",
        1, "restartPolicy", "Never", "template", "Worker", "replicas", 1, "restartPolicy", policy,
        "template", "runPolicy", "backoffLimit", 2, "activeDeadlineSeconds", 100, "status", st);
    return j;
}

static json_t *running(const char *type, const char *gen)
{
    return json_pack("{s:{s:s, s:s, s:{s:s}}, s:{s:s}, s:{s:s}}", "metadata", "name", "m",
                     "project", "p", "labels", GT_LABEL_GENERATION, gen, "spec", "replicaType",
                     type, "status", "phase", "Running");
}

static void test_decide_restart(void **state)
{
    (void)state;
    const int64_t t0 = 1700000000000;
    char ts[32];
    gt_time_format(t0, ts, sizeof(ts));
    json_t *job = job_with("OnFailure", json_pack("{s:s, s:[]}", "startTime", ts, "conditions"));
    json_t *tasks[2] = {running("Master", "0"), failed("Worker", "Error", 1, "0")};
    struct gt_job_decision d;

    /* a retryable failure begins a counted gang restart */
    decide_json(job, tasks, 2, t0 + 1000, 10000, &d);
    assert_int_equal(d.action, GT_JOB_RESTART);
    assert_true(d.begins && d.counted);
    assert_int_equal(d.generation, 1);
    assert_int_equal(d.wake_ms, t0 + 100000); /* the deadline */
    json_t *st = derive_json(job, tasks, 2, &d, NULL, t0 + 1000);
    assert_int_equal(json_integer_value(json_object_get(st, "restartCount")), 1);
    json_object_set_new(job, "status", st);

    /* the old generation still runs: keep restarting (stop it) */
    decide_json(job, tasks, 2, t0 + 2000, 10000, &d);
    assert_int_equal(d.action, GT_JOB_RESTART);
    assert_false(d.begins);
    assert_string_equal(d.reason, "TaskFailed");

    /* all terminal: recreate only after the back-off */
    json_decref(tasks[0]);
    tasks[0] = failed("Master", GT_STOP_RESTARTING, 143, "0");
    decide_json(job, tasks, 2, t0 + 5000, 10000, &d);
    assert_int_equal(d.action, GT_JOB_RESTART);
    assert_true(d.wake_ms >= t0 + 1000 + 10000);
    decide_json(job, tasks, 2, t0 + 13000, 10000, &d);
    assert_int_equal(d.action, GT_JOB_RECREATE);
    st = derive_json(job, tasks, 2, &d, NULL, t0 + 13000);
    json_object_set_new(job, "status", st);

    /* generation 1 fails twice more: the second reaches backoffLimit 2 */
    json_decref(tasks[0]);
    json_decref(tasks[1]);
    tasks[0] = running("Master", "1");
    tasks[1] = failed("Worker", "Error", 1, "1");
    decide_json(job, tasks, 2, t0 + 14000, 10000, &d);
    assert_true(d.begins && d.counted);
    json_object_set_new(json_object_get(job, "status"), "restartCount", json_integer(2));
    json_object_set_new(json_object_get(job, "status"), "requeueCount", json_integer(0));
    decide_json(job, tasks, 2, t0 + 15000, 10000, &d);
    assert_int_equal(d.action, GT_JOB_RESTART); /* generation 2 > the tasks' 1 */
    json_decref(tasks[1]);
    tasks[1] = failed("Worker", "Error", 1, "2");
    json_decref(tasks[0]);
    tasks[0] = running("Master", "2");
    decide_json(job, tasks, 2, t0 + 16000, 10000, &d);
    assert_int_equal(d.action, GT_JOB_FAIL);
    assert_string_equal(d.reason, "BackoffLimitExceeded");

    /* a preemption requeues without counting, even at the limit */
    json_decref(tasks[1]);
    tasks[1] = failed("Worker", "Preempted", 143, "2");
    decide_json(job, tasks, 2, t0 + 16000, 10000, &d);
    assert_int_equal(d.action, GT_JOB_RESTART);
    assert_true(d.begins);
    assert_false(d.counted);
    st = derive_json(job, tasks, 2, &d, NULL, t0 + 16000);
    assert_int_equal(json_integer_value(json_object_get(st, "restartCount")), 2);
    assert_int_equal(json_integer_value(json_object_get(st, "requeueCount")), 1);
    json_decref(st);

    /* the deadline ends it */
    decide_json(job, tasks, 2, t0 + 100000, 10000, &d);
    assert_int_equal(d.action, GT_JOB_FAIL);
    assert_string_equal(d.reason, "DeadlineExceeded");
    st = derive_json(job, tasks, 2, &d, NULL, t0 + 100000);
    json_t *c;
    size_t i;
    bool failed_true = false, restarting_true = false;
    json_array_foreach(json_object_get(st, "conditions"), i, c)
    {
        bool on = !strcmp(json_string_value(json_object_get(c, "status")), "True");
        const char *type = json_string_value(json_object_get(c, "type"));
        failed_true |= on && !strcmp(type, "Failed");
        restarting_true |= on && !strcmp(type, "Restarting");
    }
    assert_true(failed_true);
    assert_false(restarting_true);
    json_decref(st);
    json_decref(tasks[0]);
    json_decref(tasks[1]);
    json_decref(job);
}

/* A worker stopped by its job's end (the chief succeeded) is no failure
 * of the Worker replicas, whether it exited 0 (Succeeded) or was killed. */
static void test_job_finished_not_failed(void **state)
{
    (void)state;
    const int64_t t0 = 1700000000000;
    char ts[32];
    gt_time_format(t0, ts, sizeof(ts));
    json_t *job = job_with("Never", json_pack("{s:s, s:[]}", "startTime", ts, "conditions"));
    json_t *tasks[2] = {json_pack("{s:{s:s, s:s, s:{s:s}}, s:{s:s}, s:{s:s, s:s, s:i}}", "metadata",
                                  "name", "m", "project", "p", "labels", GT_LABEL_GENERATION, "0",
                                  "spec", "replicaType", "Master", "status", "phase", "Succeeded",
                                  "reason", "Completed", "exitCode", 0),
                        failed("Worker", "JobFinished", 143, "0")};
    struct gt_job_decision d;
    decide_json(job, tasks, 2, t0 + 1000, 10000, &d);
    json_t *st = derive_json(job, tasks, 2, &d, NULL, t0 + 1000);
    json_t *w = gt_json_path(st, "replicaStatuses.Worker");
    assert_int_equal(json_integer_value(json_object_get(w, "failed")), 0);
    json_t *m = gt_json_path(st, "replicaStatuses.Master");
    assert_int_equal(json_integer_value(json_object_get(m, "succeeded")), 1);
    json_t *c;
    size_t i;
    json_array_foreach(json_object_get(st, "conditions"), i, c)
    {
        if (!strcmp(json_string_value(json_object_get(c, "status")), "True")) {
            assert_string_not_equal(json_string_value(json_object_get(c, "type")), "Failed");
        }
    }
    json_decref(st);
    json_decref(tasks[0]);
    json_decref(tasks[1]);
    json_decref(job);
}

/* A failed pull backs off whatever the restartPolicy, as kubelet's
 * ImagePullBackOff: the job restarts with reason ImagePullBackOff and the
 * pull's error in its message, not toward backoffLimit (a requeue), and the
 * next pull waits 10 s, then 20 s, ... (the back-off of the pulls so far). */
static void test_image_pull_reasons(void **state)
{
    (void)state;
    const int64_t t0 = 1700000000000;
    char ts[32];
    gt_time_format(t0, ts, sizeof(ts));
    for (int pol = 0; pol < 2; pol++) {
        json_t *job = job_with(pol ? "OnFailure" : "Never",
                               json_pack("{s:s, s:[]}", "startTime", ts, "conditions"));
        json_t *tasks[2] = {running("Master", "0"), failed("Worker", "ImagePullFailed", 127, "0")};
        json_object_set_new(json_object_get(tasks[1], "status"), "message",
                            json_string("pulling reg/x:1: manifest unknown"));
        struct gt_job_decision d;
        decide_json(job, tasks, 2, t0 + 1000, 10000, &d);
        assert_int_equal(d.action, GT_JOB_RESTART);
        assert_false(d.counted);
        assert_true(d.pull_backoff);
        assert_string_equal(d.reason, "ImagePullBackOff");
        assert_non_null(strstr(d.message, "manifest unknown"));
        assert_non_null(strstr(d.message, "pulling again in 10s"));
        json_t *st = derive_json(job, tasks, 2, &d, NULL, t0 + 1000);
        assert_int_equal(json_integer_value(json_object_get(st, "imagePullBackOffs")), 1);
        assert_null(json_object_get(st, "restartCount"));
        json_object_set_new(job, "status", st);
        /* every task ended: the next pull waits the back-off */
        json_decref(tasks[0]);
        tasks[0] = failed("Master", GT_STOP_RESTARTING, 143, "0");
        decide_json(job, tasks, 2, t0 + 5000, 10000, &d);
        assert_int_equal(d.action, GT_JOB_RESTART);
        assert_string_equal(d.reason, "ImagePullBackOff");
        assert_true(d.wake_ms >= t0 + 1000 + 10000);
        /* a second failed pull waits twice as long */
        json_object_set_new(json_object_get(job, "status"), "imagePullBackOffs", json_integer(2));
        decide_json(job, tasks, 2, t0 + 5000, 10000, &d);
        assert_true(d.wake_ms >= t0 + 1000 + 20000);
        json_decref(tasks[0]);
        json_decref(tasks[1]);
        json_decref(job);
    }
}

static void test_decide_exit_code_and_ttl(void **state)
{
    (void)state;
    json_t *job = job_with("ExitCode", json_pack("{s:[]}", "conditions"));
    json_t *t = failed("Worker", "Error", 2, "0");
    struct gt_job_decision d;
    decide_json(job, &t, 1, 1000, 10000, &d);
    assert_int_equal(d.action, GT_JOB_FAIL);
    assert_string_equal(d.reason, "TaskFailed");
    assert_non_null(strstr(d.message, "exit code 2"));
    json_decref(t);
    t = failed("Worker", "Error", 137, "0");
    decide_json(job, &t, 1, 1000, 10000, &d);
    assert_int_equal(d.action, GT_JOB_RESTART);
    json_decref(t);
    json_decref(job);

    json_t *done = json_pack("{s:s, s:[{s:s, s:s}]}", "completionTime", "2024-01-01T00:00:00Z",
                             "conditions", "type", "Succeeded", "status", "True");
    job = job_with("Never", done);
    json_object_set_new(gt_json_path(job, "spec.runPolicy"), "ttlSecondsAfterFinished",
                        json_integer(60));
    int64_t at = 0;
    assert_int_equal(gt_time_parse("2024-01-01T00:01:00Z", &at), 0);
    decide_json(job, NULL, 0, at - 1, 10000, &d);
    assert_int_equal(d.action, GT_JOB_KEEP);
    assert_int_equal(d.wake_ms, at);
    decide_json(job, NULL, 0, at, 10000, &d);
    assert_int_equal(d.action, GT_JOB_EXPIRE);
    json_decref(job);
}

static void test_ports(void **state)
{
    (void)state;
    int32_t lo, hi, out[3];
    assert_int_equal(gt_jobenv_port_range_parse("30000-32767", &lo, &hi, NULL), 0);
    assert_int_equal(lo, 30000);
    assert_int_equal(hi, 32767);
    struct gt_err err = {0};
    assert_int_equal(gt_jobenv_port_range_parse("9-3", &lo, &hi, &err), GT_EINVAL);
    assert_int_equal(gt_jobenv_port_range_parse("x", &lo, &hi, NULL), GT_EINVAL);
    assert_int_equal(gt_jobenv_port_range_parse("1-70000", &lo, &hi, NULL), GT_EINVAL);
    const int32_t used[] = {100, 102};
    assert_int_equal(gt_jobenv_ports_alloc(100, 105, used, 2, 3, out), 0);
    assert_int_equal(out[0], 101);
    assert_int_equal(out[1], 103);
    assert_int_equal(out[2], 104);
    assert_int_equal(gt_jobenv_ports_alloc(100, 103, used, 2, 3, out), GT_EINVAL);
}

static const char *env_of(const json_t *env, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(env, i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "name")), name)) {
            return json_string_value(json_object_get(e, "value"));
        }
    }
    return NULL;
}

/* An MPIJob's launcher and workers: the MPI operator's variables per
 * implementation and its hostfile formats. */
static void test_mpi_env(void **state)
{
    (void)state;
    const struct gt_jobenv_member m[] = {
        {"Launcher", 0, 30000, "10.0.0.1"},
        {"Worker", 1, 30002, "10.0.0.3"},
        {"Worker", 0, 30001, "10.0.0.2"},
    };
    json_t *ann = json_pack("{s:s, s:s}", GT_API_ANNOTATION_MPI_SLOTS, "2",
                            GT_API_ANNOTATION_MPI_IMPL, "OpenMPI");
    json_t *env = gt_jobenv_mpi_env("pi", "team", ann, m, 3, 0);
    assert_string_equal(env_of(env, "K_MPI_JOB_ROLE"), "launcher");
    assert_string_equal(env_of(env, "OMPI_MCA_plm_rsh_agent"), GT_MPI_RSH_AGENT);
    assert_string_equal(env_of(env, "OMPI_MCA_orte_default_hostfile"), "/etc/mpi/hostfile");
    assert_string_equal(env_of(env, "OMPI_MCA_orte_keep_fqdn_hostnames"), "true");
    assert_string_equal(env_of(env, "OMPI_MCA_orte_set_default_slots"), "2");
    assert_string_equal(env_of(env, GT_MPI_HOSTFILE_ENV),
                        "pi-worker-0.pi.team.svc slots=2\npi-worker-1.pi.team.svc slots=2\n");
    json_decref(env);
    env = gt_jobenv_mpi_env("pi", "team", ann, m, 3, 1);
    assert_string_equal(env_of(env, "K_MPI_JOB_ROLE"), "worker");
    assert_null(env_of(env, GT_MPI_HOSTFILE_ENV));
    assert_null(env_of(env, "OMPI_MCA_plm_rsh_agent"));
    json_decref(env);
    json_object_set_new(ann, GT_API_ANNOTATION_MPI_IMPL, json_string("Intel"));
    env = gt_jobenv_mpi_env("pi", "team", ann, m, 3, 0);
    assert_string_equal(env_of(env, "I_MPI_HYDRA_HOST_FILE"), "/etc/mpi/hostfile");
    assert_string_equal(env_of(env, "I_MPI_HYDRA_BOOTSTRAP"), "rsh");
    assert_string_equal(env_of(env, "I_MPI_HYDRA_BOOTSTRAP_EXEC"), GT_MPI_RSH_AGENT);
    assert_string_equal(env_of(env, "I_MPI_PERHOST"), "2");
    assert_null(env_of(env, "OMPI_MCA_plm_rsh_agent"));
    assert_string_equal(env_of(env, GT_MPI_HOSTFILE_ENV),
                        "pi-worker-0.pi.team.svc:2\npi-worker-1.pi.team.svc:2\n");
    json_decref(env);
    json_object_set_new(ann, GT_API_ANNOTATION_MPI_IMPL, json_string("MPICH"));
    env = gt_jobenv_mpi_env("pi", "team", ann, m, 3, 0);
    assert_string_equal(env_of(env, "HYDRA_HOST_FILE"), "/etc/mpi/hostfile");
    assert_string_equal(env_of(env, "HYDRA_LAUNCHER"), "rsh");
    assert_string_equal(env_of(env, "HYDRA_LAUNCHER_EXEC"), GT_MPI_RSH_AGENT);
    json_decref(env);
    json_decref(ann);
}

static void test_pytorch_env(void **state)
{
    (void)state;
    const struct gt_jobenv_member m[] = {
        {"Master", 0, 30001, "10.0.0.1"},
        {"Worker", 0, 30000, "10.0.0.2"},
        {"Worker", 1, 30002, NULL},
    };
    json_t *env = gt_jobenv_env("digits", "p", NULL, m, 3, 2);
    assert_string_equal(env_of(env, "MASTER_ADDR"), "digits-master-0");
    assert_string_equal(env_of(env, "PET_MASTER_ADDR"), "digits-master-0");
    assert_string_equal(env_of(env, "MASTER_PORT"), "30001");
    assert_string_equal(env_of(env, "PET_MASTER_PORT"), "30001");
    assert_string_equal(env_of(env, "WORLD_SIZE"), "3");
    assert_string_equal(env_of(env, "RANK"), "2");
    assert_string_equal(env_of(env, "PET_NODE_RANK"), "2");
    assert_string_equal(env_of(env, "PET_NNODES"), "3");
    assert_string_equal(env_of(env, "PET_NPROC_PER_NODE"), "1");
    assert_string_equal(env_of(env, "PYTHONUNBUFFERED"), "1");
    assert_null(env_of(env, "TF_CONFIG"));
    json_decref(env);
    env = gt_jobenv_env("digits", "p", GT_FRAMEWORK_PYTORCH, m, 3, 0);
    assert_string_equal(env_of(env, "RANK"), "0");

    /* user env wins over gantry's */
    json_t *tmpl = json_pack("{s:[{s:s, s:s}]}", "env", "name", "RANK", "value", "9");
    gt_jobenv_merge(tmpl, env);
    assert_string_equal(env_of(json_object_get(tmpl, "env"), "RANK"), "9");
    assert_string_equal(env_of(json_object_get(tmpl, "env"), "MASTER_PORT"), "30001");
    json_decref(tmpl);
    json_decref(env);

    json_t *hosts = gt_jobenv_hosts("digits", "p", m, 3);
    assert_int_equal(json_array_size(hosts), 4); /* worker 1's node is not known */
    assert_string_equal(json_string_value(gt_json_path(json_array_get(hosts, 1), "hostname")),
                        "digits-master-0.p.svc");
    assert_string_equal(json_string_value(gt_json_path(json_array_get(hosts, 2), "ip")),
                        "10.0.0.2");
    json_decref(hosts);
}

static void test_operator_envs(void **state)
{
    (void)state;
    const struct gt_jobenv_member xgb[] = {
        {"Master", 0, 30001, "10.0.0.1"},
        {"Worker", 0, 30002, NULL},
        {"Worker", 1, 30003, NULL},
    };
    const struct gt_jobenv_member workers[] = {
        {"Worker", 0, 30005, "10.0.0.5"},
        {"Worker", 1, 30006, "10.0.0.6"},
    };
    const struct {
        const char *fw;
        const struct gt_jobenv_member *m;
        size_t n, self;
        const char *want;
    } cases[] = {
        /* XGBoost: workers rank after the masters; WORKER_ADDRS lists n-1
         * workers, as the operator does */
        {GT_FRAMEWORK_XGBOOST, xgb, 3, 2,
         "MASTER_PORT=30001\nMASTER_ADDR=j-master-0\nWORLD_SIZE=3\nRANK=2\n"
         "PYTHONUNBUFFERED=0\nWORKER_PORT=30002\nWORKER_ADDRS=j-worker-0,j-worker-1\n"},
        {GT_FRAMEWORK_XGBOOST, xgb, 1, 0,
         "MASTER_PORT=30001\nMASTER_ADDR=j-master-0\nWORLD_SIZE=1\nRANK=0\nPYTHONUNBUFFERED=0\n"},
        /* Paddle, PS mode: master 0 meets at its own address */
        {GT_FRAMEWORK_PADDLE, xgb, 3, 0,
         "PYTHONUNBUFFERED=1\nPADDLE_JOB_ID=j\nPADDLE_NNODES=3\n"
         "POD_IP_DUMMY=10.0.0.1\nPADDLE_MASTER=10.0.0.1:30001\nPADDLE_SERVER_NUM=1\n"},
        {GT_FRAMEWORK_PADDLE, xgb, 3, 1,
         "PYTHONUNBUFFERED=1\nPADDLE_JOB_ID=j\nPADDLE_NNODES=3\n"
         "PADDLE_MASTER=j-master-0:30001\nPADDLE_TRAINER_NUM=1\n"},
        /* Paddle, collective mode: worker 0 is the meeting point */
        {GT_FRAMEWORK_PADDLE, workers, 2, 1,
         "PYTHONUNBUFFERED=1\nPADDLE_JOB_ID=j\nPADDLE_NNODES=2\nPADDLE_MASTER=j-worker-0:30005\n"},
        {GT_FRAMEWORK_PADDLE, workers, 2, 0,
         "PYTHONUNBUFFERED=1\nPADDLE_JOB_ID=j\nPADDLE_NNODES=2\n"
         "POD_IP_DUMMY=10.0.0.5\nPADDLE_MASTER=10.0.0.5:30005\n"},
        /* JAX: worker 0 coordinates */
        {GT_FRAMEWORK_JAX, workers, 2, 1,
         "PYTHONUNBUFFERED=1\nCOORDINATOR_PORT=30005\nCOORDINATOR_ADDRESS=j-worker-0\n"
         "NUM_PROCESSES=2\nPROCESS_ID=1\n"},
    };
    for (size_t c = 0; c < GT_ARRAY_LEN(cases); c++) {
        json_t *env = gt_jobenv_env("j", "p", cases[c].fw, cases[c].m, cases[c].n, cases[c].self);
        struct gt_buf got;
        gt_buf_init(&got);
        size_t i;
        json_t *e;
        json_array_foreach(env, i, e)
        {
            gt_buf_printf(&got, "%s=%s\n", json_string_value(json_object_get(e, "name")),
                          json_string_value(json_object_get(e, "value")));
        }
        if (strcmp(got.data ? got.data : "", cases[c].want)) {
            fail_msg("case %zu: got\n%s", c, got.data);
        }
        gt_buf_fini(&got);
        json_decref(env);
    }
}

static void test_field_refs(void **state)
{
    (void)state;
    json_t *tmpl = json_loads("{\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
                              "{\"name\":\"N\",\"valueFrom\":{\"fieldRef\":"
                              "{\"fieldPath\":\"metadata.name\"}}},"
                              "{\"name\":\"IP\",\"valueFrom\":{\"fieldRef\":"
                              "{\"fieldPath\":\"status.hostIP\"}}}]}",
                              0, NULL);
    json_t *fields = json_pack("{s:s, s:n}", "metadata.name", "j-worker-0", "status.hostIP");
    gt_jobenv_field_refs(tmpl, fields);
    char *got = gt_json_dumps(tmpl);
    assert_string_equal(got, "{\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
                             "{\"name\":\"N\",\"value\":\"j-worker-0\"},"
                             "{\"name\":\"IP\",\"value\":\"\"}]}");
    free(got);
    json_decref(fields);
    json_decref(tmpl);
}

static void test_tf_config(void **state)
{
    (void)state;
    const struct gt_jobenv_member m[] = {
        {"Worker", 1, 30003, NULL}, {"PS", 0, 30000, NULL},        {"Chief", 0, 30001, NULL},
        {"Worker", 0, 30002, NULL}, {"Evaluator", 0, 30004, NULL},
    };
    char *tf = gt_jobenv_tf_config("mnist", "team", m, 5, 0);
    assert_string_equal(
        tf, "{\"cluster\":{\"chief\":[\"mnist-chief-0.team.svc:30001\"],"
            "\"ps\":[\"mnist-ps-0.team.svc:30000\"],"
            "\"worker\":[\"mnist-worker-0.team.svc:30002\",\"mnist-worker-1.team.svc:30003\"]},"
            "\"task\":{\"type\":\"worker\",\"index\":1},\"environment\":\"cloud\"}");
    free(tf);
    json_t *env = gt_jobenv_env("mnist", "team", NULL, m, 4, 1);
    assert_string_equal(env_of(env, "TF_CONFIG"),
                        "{\"cluster\":{\"chief\":[\"mnist-chief-0.team.svc:30001\"],"
                        "\"ps\":[\"mnist-ps-0.team.svc:30000\"],"
                        "\"worker\":[\"mnist-worker-0.team.svc:30002\","
                        "\"mnist-worker-1.team.svc:30003\"]},"
                        "\"task\":{\"type\":\"ps\",\"index\":0},\"environment\":\"cloud\"}");
    assert_null(env_of(env, "MASTER_ADDR"));
    json_decref(env);
    /* one replica: no TF_CONFIG */
    env = gt_jobenv_env("mnist", "team", GT_FRAMEWORK_TENSORFLOW, m, 1, 0);
    assert_int_equal(json_array_size(env), 0);
    json_decref(env);
}

/* A converted TFJob with the deprecated Master replica gets TF_CONFIG, not
 * PyTorch's variables; without the annotation a Master means PyTorch. */
static void test_framework_env(void **state)
{
    (void)state;
    const struct gt_jobenv_member m[] = {
        {"Master", 0, 30000, NULL},
        {"Worker", 0, 30001, NULL},
    };
    json_t *env = gt_jobenv_env("tfm", "team", GT_FRAMEWORK_TENSORFLOW, m, 2, 1);
    assert_null(env_of(env, "MASTER_ADDR"));
    assert_null(env_of(env, "WORLD_SIZE"));
    assert_string_equal(env_of(env, "TF_CONFIG"),
                        "{\"cluster\":{\"master\":[\"tfm-master-0.team.svc:30000\"],"
                        "\"worker\":[\"tfm-worker-0.team.svc:30001\"]},"
                        "\"task\":{\"type\":\"worker\",\"index\":0},\"environment\":\"cloud\"}");
    json_decref(env);
    env = gt_jobenv_env("tfm", "team", NULL, m, 2, 1);
    assert_string_equal(env_of(env, "MASTER_ADDR"), "tfm-master-0");
    assert_null(env_of(env, "TF_CONFIG"));
    json_decref(env);
    /* an unknown value falls back to the replica types too */
    env = gt_jobenv_env("tfm", "team", "mxnet", m, 2, 0);
    assert_string_equal(env_of(env, "RANK"), "0");
    json_decref(env);
    /* a PyTorch job without a Master gets no TF_CONFIG */
    env = gt_jobenv_env("tfm", "team", GT_FRAMEWORK_PYTORCH, m + 1, 1, 0);
    assert_int_equal(json_array_size(env), 0);
    json_decref(env);
}

static void test_backoff_unlimited(void **state)
{
    (void)state;
    const int64_t t0 = 1700000000000;
    char ts[32];
    gt_time_format(t0, ts, sizeof(ts));
    json_t *job = job_with("OnFailure", json_pack("{s:s, s:[], s:i}", "startTime", ts, "conditions",
                                                  "restartCount", 1000));
    json_object_set_new(gt_json_path(job, "spec.runPolicy"), "backoffLimit",
                        json_integer(GT_API_BACKOFF_UNLIMITED));
    json_t *tasks[2] = {running("Master", "1000"), failed("Worker", "Error", 1, "1000")};
    struct gt_job_decision d;
    decide_json(job, tasks, 2, t0 + 1000, 10000, &d);
    assert_int_equal(d.action, GT_JOB_RESTART);
    assert_true(d.begins && d.counted);
    assert_non_null(strstr(d.message, "restart 1001 (no backoffLimit)"));
    json_decref(tasks[0]);
    json_decref(tasks[1]);
    json_decref(job);
}

static void test_check_volumes(void **state)
{
    (void)state;
    char *roots[] = {(char *)"/srv/data/", (char *)"/mnt/team"};
    struct gt_api_volume v[] = {{.name = "a", .host_path = "/srv/data/x/y"},
                                {.name = "b", .host_path = "/mnt/team"}};
    struct gt_api_volumes vols = {v, 2};
    struct gt_err err = {0};
    assert_int_equal(gt_job_check_volumes(&vols, roots, 2, &err), 0);
    /* a whole-component prefix only */
    v[1].host_path = "/mnt/teamb";
    assert_int_equal(gt_job_check_volumes(&vols, roots, 2, &err), GT_EINVAL);
    assert_string_equal(err.msg, "spec.volumes[1].hostPath: /mnt/teamb is not beneath a storage "
                                 "root of this cluster (/srv/data/, /mnt/team)");
    char field[128];
    gt_status_field(err.msg, field, sizeof(field));
    assert_string_equal(field, "spec.volumes[1].hostPath");
    gt_err_clear(&err);
    /* no roots: every hostPath volume is refused, saying what to set */
    assert_int_equal(gt_job_check_volumes(&vols, NULL, 0, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "spec.volumes[0].hostPath: hostPath volumes are refused"));
    assert_non_null(strstr(err.msg, "gantryd --storage-root"));
    gt_err_clear(&err);
    /* "/" holds everything; no volumes need no roots */
    char *slash[] = {(char *)"/"};
    assert_int_equal(gt_job_check_volumes(&vols, slash, 1, &err), 0);
    struct gt_api_volumes none = {NULL, 0};
    assert_int_equal(gt_job_check_volumes(&none, NULL, 0, &err), 0);
}

/* The tasks of job (a JSON Job, borrowed), as gt_job_build_tasks makes them. */
static json_t *build_tasks_json(json_t *job, const struct gt_job_task_opts *opts)
{
    struct gt_api_job *j = gt_api_job_new(job);
    json_t *tasks = gt_job_build_tasks(j, opts);
    gt_api_job_free(j);
    return tasks;
}

static void test_build_tasks_pip(void **state)
{
    (void)state;
    json_t *job = json_pack("{s:{s:s, s:s}, s:{s:{s:{s:i, s:{s:[s]}}}, s:[s]}}", "metadata", "name",
                            "train", "project", "p", "spec", "replicaSpecs", "Worker", "replicas",
                            2, "template", "command", "train", "requirements", "numpy");
    struct gt_job_task_opts opts = {.pip_index_url = "http://pypi.local/simple",
                                    .pip_find_links = "/wheels"};
    json_t *tasks = build_tasks_json(job, &opts);
    assert_int_equal(json_array_size(tasks), 2);
    json_t *t1 = json_array_get(tasks, 1);
    assert_string_equal(json_string_value(gt_json_path(t1, "spec.pip.indexUrl")),
                        "http://pypi.local/simple");
    assert_string_equal(json_string_value(gt_json_path(t1, "spec.pip.findLinks")), "/wheels");
    assert_string_equal(json_string_value(json_array_get(gt_json_path(t1, "spec.requirements"), 0)),
                        "numpy");
    struct gt_err err = {0};
    if (gt_api_validate(GT_KIND_TASK, t1, &err) != 0) {
        fail_msg("%s", err.msg);
    }
    json_decref(tasks);
    /* nothing configured, or nothing to install: no spec.pip */
    opts.pip_index_url = opts.pip_find_links = NULL;
    tasks = build_tasks_json(job, &opts);
    assert_null(gt_json_path(json_array_get(tasks, 0), "spec.pip"));
    json_decref(tasks);
    json_object_del(json_object_get(job, "spec"), "requirements");
    opts.pip_find_links = "/wheels";
    tasks = build_tasks_json(job, &opts);
    assert_null(gt_json_path(json_array_get(tasks, 0), "spec.pip"));
    json_decref(tasks);
    json_decref(job);
}

/* gantryd's job-wide cluster settings: roots repeatable, pip from the
 * environment, a relative root refused. */
static void test_cluster_config(void **state)
{
    (void)state;
    struct gt_server_config cfg;
    struct gt_err err = {0};
    bool help;
    char *argv[] = {"gantryd",
                    "--data-dir",
                    "/d",
                    "--token-file",
                    "/t",
                    "--storage-root",
                    "/srv/a",
                    "--storage-root=/srv/b",
                    "--pip-index-url",
                    "http://pypi.local/simple",
                    NULL};
    char *env[] = {"GANTRYD_PIP_FIND_LINKS=/wheels", "GANTRYD_STORAGE_ROOT=/env", NULL};
    assert_int_equal(gt_server_config_parse(&cfg, 10, argv, env, &help, &err), 0);
    assert_int_equal(cfg.storage_roots.n, 2); /* flags replace the environment's list */
    assert_string_equal(cfg.storage_roots.items[1], "/srv/b");
    assert_string_equal(cfg.pip_find_links, "/wheels");
    assert_string_equal(cfg.pip_index_url, "http://pypi.local/simple");
    gt_server_config_fini(&cfg);
    char *bad[] = {"gantryd", "--data-dir",     "/d",  "--token-file",
                   "/t",      "--storage-root", "srv", NULL};
    assert_int_equal(gt_server_config_parse(&cfg, 7, bad, NULL, &help, &err), GT_EINVAL);
    assert_string_equal(err.msg, "--storage-root srv: want an absolute path");
    gt_server_config_fini(&cfg);
}

static void test_task_names_and_keys(void **state)
{
    (void)state;
    char *name = gt_job_task_name("train", "Worker", 3);
    assert_string_equal(name, "train-worker-3");
    free(name);
    char buf[64], *heap = (char *)"unset";
    const char *key = gt_job_task_key(buf, sizeof(buf), &heap, "ml", "train", "Master", 0);
    assert_string_equal(key, "/tasks/ml/train-master-0");
    assert_ptr_equal(key, buf);
    assert_null(heap);
    /* too long for buf: a new string, the same text */
    key = gt_job_task_key(buf, 8, &heap, "ml", "train", "Master", 12);
    assert_string_equal(key, "/tasks/ml/train-master-12");
    assert_ptr_equal(key, heap);
    free(heap);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_names_and_keys),
        cmocka_unit_test(test_verdicts),
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_decide_restart),
        cmocka_unit_test(test_job_finished_not_failed),
        cmocka_unit_test(test_image_pull_reasons),
        cmocka_unit_test(test_decide_exit_code_and_ttl),
        cmocka_unit_test(test_ports),
        cmocka_unit_test(test_pytorch_env),
        cmocka_unit_test(test_tf_config),
        cmocka_unit_test(test_operator_envs),
        cmocka_unit_test(test_field_refs),
        cmocka_unit_test(test_framework_env),
        cmocka_unit_test(test_backoff_unlimited),
        cmocka_unit_test(test_check_volumes),
        cmocka_unit_test(test_build_tasks_pip),
        cmocka_unit_test(test_cluster_config),
        cmocka_unit_test(test_mpi_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
