/*
 * What a bound task is given besides its GPUs, as pure functions: ports
 * from its node's range, the distributed-training environment (PyTorch's
 * MASTER_ and PET_ variables, TensorFlow's TF_CONFIG, or XGBoost's, Paddle's
 * and JAX's variables) and the host names of its job's replicas. The binding path (feeder.c via
 * jobctl.c) gathers the members of a job and writes the results into each Task in its binding
 * write, so the agent only passes them on.
 *
 * The framework comes from the job's gantry.dev/framework annotation
 * (written by the Kubeflow conversion): "pytorch" gets PyTorch's variables,
 * "tensorflow" TF_CONFIG (also for a TFJob's deprecated Master replica);
 * "xgboost", "paddle" and "jax" the variables the training operator v1.9
 * sets for XGBoostJob, PaddleJob and JAXJob, with the same names and value
 * formats (a port is the member's gantry port, where Kubeflow has the
 * container port all replicas share).
 * Without it a job is PyTorch-like when it has a Master replica type;
 * otherwise, when it has more than one replica, TensorFlow-like. As
 * Kubeflow, TF_CONFIG is given only to a distributed job (more than one
 * replica) and PyTorch's variables only when a Master exists. Host names are
 * Kubeflow's: "<job>-<lower(type)>-<index>" and that plus ".<project>.svc".
 * All returned JSON and strings are the caller's.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

int gt_jobenv_port_range_parse(const char *s, int32_t *lo, int32_t *hi, struct gt_err *err)
{
    char *end = NULL;
    long a = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end != '-') {
        return gt_err_set(err, GT_EINVAL, "port range \"%s\": want LOW-HIGH", s ? s : "");
    }
    const char *p = end + 1;
    long b = strtol(p, &end, 10);
    if (end == p || *end || a < 1 || b > 65535 || a > b) {
        return gt_err_set(err, GT_EINVAL, "port range \"%s\": want LOW-HIGH within 1-65535", s);
    }
    *lo = (int32_t)a;
    *hi = (int32_t)b;
    return 0;
}

static bool port_used(const int32_t *used, size_t n_used, int32_t port)
{
    for (size_t i = 0; i < n_used; i++) {
        if (used[i] == port) {
            return true;
        }
    }
    return false;
}

int gt_jobenv_ports_alloc(int32_t lo, int32_t hi, const int32_t *used, size_t n_used, size_t n_want,
                          int32_t *out)
{
    size_t got = 0;
    for (int32_t p = lo; p <= hi && got < n_want; p++) {
        if (!port_used(used, n_used, p)) {
            out[got++] = p;
        }
    }
    return got == n_want ? 0 : GT_EINVAL;
}

/* ---- the job's members ---- */

static void lower_type(const char *type, char *out, size_t len)
{
    size_t i = 0;
    for (; type[i] && i + 1 < len; i++) {
        out[i] = (char)tolower((unsigned char)type[i]);
    }
    out[i] = '\0';
}

static bool has_type(const struct gt_jobenv_member *m, size_t n, const char *type)
{
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(m[i].type, type)) {
            return true;
        }
    }
    return false;
}

static void env_add(json_t *env, const char *name, const char *value)
{
    json_array_append_new(env, json_pack("{s:s, s:s}", "name", name, "value", value));
}

static void env_addi(json_t *env, const char *name, long long value)
{
    char v[24];
    snprintf(v, sizeof(v), "%lld", value);
    env_add(env, name, v);
}

static void pytorch_env(json_t *env, const char *job, const struct gt_jobenv_member *m, size_t n,
                        size_t self)
{
    const struct gt_jobenv_member *master = NULL;
    for (size_t i = 0; i < n && !master; i++) {
        master = !strcmp(m[i].type, "Master") ? &m[i] : NULL;
    }
    char *addr = gt_job_task_name(job, "Master", master ? master->index : 0);
    long long rank = !strcmp(m[self].type, "Master") ? 0 : m[self].index + 1;
    env_add(env, "PYTHONUNBUFFERED", "1");
    env_add(env, "MASTER_ADDR", addr);
    env_add(env, "PET_MASTER_ADDR", addr);
    if (master && master->port) {
        env_addi(env, "MASTER_PORT", master->port);
        env_addi(env, "PET_MASTER_PORT", master->port);
    }
    env_addi(env, "WORLD_SIZE", (long long)n);
    env_addi(env, "RANK", rank);
    env_addi(env, "PET_NNODES", (long long)n);
    env_add(env, "PET_NPROC_PER_NODE", "1");
    env_addi(env, "PET_NODE_RANK", rank);
    free(addr);
}

/* TensorFlow's cluster: lower-case types in sorted order (Go's encoding of
 * Kubeflow's map), evaluators left out as Kubeflow does. */
static const char *const tf_types[] = {"Chief", "Master", "PS", "Worker"};

char *gt_jobenv_tf_config(const char *job, const char *project, const struct gt_jobenv_member *m,
                          size_t n, size_t self)
{
    struct gt_buf b;
    gt_buf_init(&b);
    gt_buf_puts(&b, "{\"cluster\":{");
    bool first_type = true;
    for (size_t t = 0; t < GT_ARRAY_LEN(tf_types); t++) {
        if (!has_type(m, n, tf_types[t])) {
            continue;
        }
        char lt[16];
        lower_type(tf_types[t], lt, sizeof(lt));
        gt_buf_printf(&b, "%s\"%s\":[", first_type ? "" : ",", lt);
        first_type = false;
        bool first = true;
        /* members are listed by index within a type */
        for (int64_t idx = 0;; idx++) {
            size_t k = 0;
            while (k < n && (strcmp(m[k].type, tf_types[t]) || m[k].index != idx)) {
                k++;
            }
            if (k == n) {
                break;
            }
            char *host = gt_job_task_name(job, m[k].type, idx);
            gt_buf_printf(&b, "%s\"%s.%s.svc:%d\"", first ? "" : ",", host, project, m[k].port);
            first = false;
            free(host);
        }
        gt_buf_puts(&b, "]");
    }
    char lt[16];
    lower_type(m[self].type, lt, sizeof(lt));
    gt_buf_printf(&b, "},\"task\":{\"type\":\"%s\",\"index\":%lld},\"environment\":\"cloud\"}", lt,
                  (long long)m[self].index);
    return gt_buf_take(&b);
}

/* The member of the given type and index; NULL when the job has none. */
static const struct gt_jobenv_member *member(const struct gt_jobenv_member *m, size_t n,
                                             const char *type, int64_t index)
{
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(m[i].type, type) && m[i].index == index) {
            return &m[i];
        }
    }
    return NULL;
}

static size_t count_type(const struct gt_jobenv_member *m, size_t n, const char *type)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        k += !strcmp(m[i].type, type);
    }
    return k;
}

static int32_t port_of(const struct gt_jobenv_member *x)
{
    return x ? x->port : 0;
}

/* XGBoost (and LightGBM on it): the master's address, ranks with the
 * workers after the masters, and with more than one replica the workers'
 * port and comma-separated host names (worker 0 .. n-2, as Kubeflow). */
static void xgboost_env(json_t *env, const char *job, const struct gt_jobenv_member *m, size_t n,
                        size_t self)
{
    char *addr = gt_job_task_name(job, "Master", 0);
    long long rank = m[self].index;
    if (!strcmp(m[self].type, "Worker")) {
        rank += (long long)count_type(m, n, "Master");
    }
    env_addi(env, "MASTER_PORT", port_of(member(m, n, "Master", 0)));
    env_add(env, "MASTER_ADDR", addr);
    env_addi(env, "WORLD_SIZE", (long long)n);
    env_addi(env, "RANK", rank);
    env_add(env, "PYTHONUNBUFFERED", "0");
    if (n > 1) {
        env_addi(env, "WORKER_PORT", port_of(member(m, n, "Worker", 0)));
        struct gt_buf b;
        gt_buf_init(&b);
        for (size_t i = 0; i + 1 < n; i++) {
            char *w = gt_job_task_name(job, "Worker", (int64_t)i);
            gt_buf_printf(&b, "%s%s", i ? "," : "", w);
            free(w);
        }
        env_add(env, "WORKER_ADDRS", b.data ? b.data : "");
        gt_buf_fini(&b);
    }
    free(addr);
}

/* Paddle: collective mode (no Master) meets at worker 0, PS mode at master
 * 0; the member that is the meeting point gets its own node's address as
 * POD_IP_DUMMY and PADDLE_MASTER "<ip>:<port>" (Kubeflow's pod IP), the
 * others "<host>:<port>". */
static void paddle_env(json_t *env, const char *job, const struct gt_jobenv_member *m, size_t n,
                       size_t self)
{
    bool ps = has_type(m, n, "Master");
    const char *lead = ps ? "Master" : "Worker";
    env_add(env, "PYTHONUNBUFFERED", "1");
    env_add(env, "PADDLE_JOB_ID", job);
    env_addi(env, "PADDLE_NNODES", (long long)n);
    int32_t port = port_of(member(m, n, lead, 0));
    char *master;
    if (!strcmp(m[self].type, lead) && m[self].index == 0 && m[self].ip) {
        env_add(env, "POD_IP_DUMMY", m[self].ip);
        master = gt_xasprintf("%s:%d", m[self].ip, port);
    } else {
        char *host = gt_job_task_name(job, lead, 0);
        master = gt_xasprintf("%s:%d", host, port);
        free(host);
    }
    env_add(env, "PADDLE_MASTER", master);
    free(master);
    if (ps) {
        env_add(env, strcmp(m[self].type, "Master") ? "PADDLE_TRAINER_NUM" : "PADDLE_SERVER_NUM",
                "1");
    }
}

/* JAX: every process meets worker 0, the coordinator. */
static void jax_env(json_t *env, const char *job, const struct gt_jobenv_member *m, size_t n,
                    size_t self)
{
    char *addr = gt_job_task_name(job, "Worker", 0);
    env_add(env, "PYTHONUNBUFFERED", "1");
    env_addi(env, "COORDINATOR_PORT", port_of(member(m, n, "Worker", 0)));
    env_add(env, "COORDINATOR_ADDRESS", addr);
    env_addi(env, "NUM_PROCESSES", (long long)n);
    env_addi(env, "PROCESS_ID", m[self].index);
    free(addr);
}

/* The frameworks whose environment depends on nothing but the members. */
static const struct {
    const char *name;
    void (*fn)(json_t *env, const char *job, const struct gt_jobenv_member *m, size_t n,
               size_t self);
} member_envs[] = {
    {GT_FRAMEWORK_XGBOOST, xgboost_env},
    {GT_FRAMEWORK_PADDLE, paddle_env},
    {GT_FRAMEWORK_JAX, jax_env},
};

json_t *gt_jobenv_env(const char *job, const char *project, const char *framework,
                      const struct gt_jobenv_member *m, size_t n, size_t self)
{
    json_t *env = json_array();
    for (size_t i = 0; framework && i < GT_ARRAY_LEN(member_envs); i++) {
        if (!strcmp(framework, member_envs[i].name)) {
            member_envs[i].fn(env, job, m, n, self);
            return env;
        }
    }
    bool tf = framework && !strcmp(framework, GT_FRAMEWORK_TENSORFLOW);
    bool pytorch = framework && !strcmp(framework, GT_FRAMEWORK_PYTORCH);
    if (!tf && !pytorch) {
        pytorch = has_type(m, n, "Master");
        tf = !pytorch;
    }
    if (pytorch && has_type(m, n, "Master")) {
        pytorch_env(env, job, m, n, self);
    } else if (tf && n > 1) {
        char *config = gt_jobenv_tf_config(job, project, m, n, self);
        env_add(env, "TF_CONFIG", config);
        free(config);
    }
    return env;
}

json_t *gt_jobenv_hosts(const char *job, const char *project, const struct gt_jobenv_member *m,
                        size_t n)
{
    json_t *hosts = json_array();
    for (size_t i = 0; i < n; i++) {
        if (!m[i].ip || !*m[i].ip) {
            continue;
        }
        char *h = gt_job_task_name(job, m[i].type, m[i].index);
        char *fq = gt_xasprintf("%s.%s.svc", h, project);
        json_array_append_new(hosts, json_pack("{s:s, s:s}", "hostname", h, "ip", m[i].ip));
        json_array_append_new(hosts, json_pack("{s:s, s:s}", "hostname", fq, "ip", m[i].ip));
        free(fq);
        free(h);
    }
    return hosts;
}

void gt_jobenv_field_refs(json_t *tmpl, const json_t *fields)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(tmpl, "env"), i, e)
    {
        json_t *path = gt_json_path(e, "valueFrom.fieldRef.fieldPath");
        if (json_is_string(path)) {
            const char *v = json_string_value(json_object_get(fields, json_string_value(path)));
            json_object_set_new(e, "value", json_string(v ? v : ""));
            json_object_del(e, "valueFrom");
        }
    }
}

void gt_jobenv_merge(json_t *tmpl, const json_t *env)
{
    json_t *have = json_object_get(tmpl, "env");
    if (!json_is_array(have)) {
        have = json_array();
        json_object_set_new(tmpl, "env", have);
    }
    size_t i;
    json_t *e;
    json_array_foreach(env, i, e)
    {
        if (!gt_json_find(have, "name", json_string_value(json_object_get(e, "name")))) {
            json_array_append(have, e);
        }
    }
}
