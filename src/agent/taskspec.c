/*
 * gantlet's pure decisions (see gantlet.h): a typed Task (decoded once
 * where the agent receives it) becomes the shim's spec, an exit record
 * becomes the Task's terminal status, and the local and remote states of a
 * task decide what the agent does next. No I/O beyond a passwd lookup for
 * the task user's primary group.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"
#include "agent/gantlet.h"
#include "api/api.h"

/* Names the agent sets itself: a template env entry of the same name is dropped. */
static const char *const agent_env[] = {
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",  "NVIDIA_VISIBLE_DEVICES",
    "GANTRY_JOB",           "GANTRY_TASK",        "GANTRY_REPLICA_TYPE",
    "GANTRY_REPLICA_INDEX", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME",
};

/* Names an MPI launcher's agent sets itself (mpi_env) or consumes. */
static const char *const mpi_agent_env[] = {GT_MPI_HOSTFILE_ENV, "GANTRY_SERVER", "GANTRY_TOKEN",
                                            "GANTRY_PROJECT"};

static bool is_mpi_env(const char *name)
{
    for (size_t i = 0; i < GT_ARRAY_LEN(mpi_agent_env); i++) {
        if (!strcmp(name, mpi_agent_env[i])) {
            return true;
        }
    }
    return false;
}

static bool is_agent_env(const char *name)
{
    for (size_t i = 0; i < GT_ARRAY_LEN(agent_env); i++) {
        if (!strcmp(name, agent_env[i])) {
            return true;
        }
    }
    return false;
}

struct strvec GT_VEC(char *);

static void strvec_push(struct strvec *sv, char *s)
{
    GT_VEC_RESERVE(sv->v, sv->cap, sv->n + 2, 16);
    sv->v[sv->n++] = s;
    sv->v[sv->n] = NULL;
}

static void build_argv(const struct gt_api_template *tmpl, struct gt_shim_spec *spec)
{
    struct strvec sv = {0};
    for (size_t i = 0; i < tmpl->command.n; i++) {
        strvec_push(&sv, gt_xstrdup(tmpl->command.v[i]));
    }
    for (size_t i = 0; i < tmpl->args.n; i++) {
        strvec_push(&sv, gt_xstrdup(tmpl->args.v[i]));
    }
    spec->argv = sv.v;
    spec->n_argv = sv.n;
}

char *gt_task_cache_dir(const char *cache_root, const struct gt_shim_spec *spec)
{
    if (!cache_root || !(spec->namespaces & GT_NS_USER)) {
        return NULL;
    }
    return gt_xasprintf("%s/%u", cache_root, (unsigned)spec->uid);
}

bool gt_task_needs_secrets(const struct gt_api_task *task)
{
    const struct gt_api_template *tmpl = &task->spec.template;
    for (size_t i = 0; i < tmpl->env.n; i++) {
        if (tmpl->env.v[i].value_from.gantry_secret) {
            return true;
        }
    }
    return false;
}

/* Has every env entry with valueFrom.gantrySecret its value in secrets?
 * 0, or GT_EINVAL naming the first without. */
static int check_secrets(const struct gt_api_template *tmpl, const json_t *secrets,
                         struct gt_err *err)
{
    for (size_t i = 0; i < tmpl->env.n; i++) {
        const struct gt_api_env *e = &tmpl->env.v[i];
        if (e->value_from.gantry_secret && !json_is_string(json_object_get(secrets, e->name))) {
            return gt_err_set(err, GT_EINVAL,
                              "spec.template.env[%zu] %s: the value of gantry secret %s did not "
                              "come from gantryd",
                              i, e->name, e->value_from.gantry_secret);
        }
    }
    return 0;
}

const char *gt_task_mpi_hostfile(const struct gt_api_task *task)
{
    const struct gt_api_task_spec *ts = &task->spec;
    if (!ts->replica_type || strcmp(ts->replica_type, "Launcher") != 0) {
        return NULL;
    }
    for (size_t i = 0; i < ts->template.env.n; i++) {
        const char *name = ts->template.env.v[i].name;
        if (name && !strcmp(name, GT_MPI_HOSTFILE_ENV)) {
            const char *v = ts->template.env.v[i].value;
            return v ? v : "";
        }
    }
    return NULL;
}

/* An MPI launcher's own variables (besides the rsh agent gantryd named,
 * GT_MPI_RSH_AGENT, which build_env replaces with its path): what that command
 * needs to reach its job's workers: gantryd's address, the project and the
 * job's exec credential, GT_MPI_TOKEN_PREFIX + HMAC-SHA256 under the
 * node's token of "<project>/<job>" (gantryd checks it, logproxy.c). */
static void mpi_env(const struct gt_api_task *task, const struct gt_task_spec_params *p,
                    struct strvec *sv)
{
    const char *project = task->o.meta.project ? task->o.meta.project : "";
    const char *job = task->spec.job ? task->spec.job : "";
    char *msg = gt_xasprintf("%s/%s", project, job);
    char mac[65];
    const char *key = p->node_token ? p->node_token : "";
    gt_hmac_sha256_hex(key, strlen(key), msg, strlen(msg), mac);
    free(msg);
    strvec_push(sv, gt_xasprintf("GANTRY_SERVER=%s", p->server_url ? p->server_url : ""));
    strvec_push(sv, gt_xasprintf("GANTRY_TOKEN=" GT_MPI_TOKEN_PREFIX "%s", mac));
    strvec_push(sv, gt_xasprintf("GANTRY_PROJECT=%s", project));
}

/* The task's environment; spec's uid, namespaces and termination log are
 * set, and p->secrets (checked) holds the gantry secrets' values. */
static void build_env(const struct gt_api_task *task, const struct gt_task_spec_params *p,
                      struct gt_shim_spec *spec)
{
    const char *ifname = p->cluster_ifname, *cache_root = p->cache_root;
    const json_t *secrets = p->secrets;
    const struct gt_api_task_spec *ts = &task->spec;
    bool mpi = gt_task_mpi_hostfile(task) != NULL;
    struct strvec sv = {0};
    bool has_path = false, has_home = false, mpi_role = false;
    for (size_t i = 0; i < ts->template.env.n; i++) {
        const char *name = ts->template.env.v[i].name;
        const char *val = ts->template.env.v[i].value;
        if (!name || is_agent_env(name) || (mpi && is_mpi_env(name))) {
            continue;
        }
        if (ts->template.env.v[i].value_from.gantry_secret) {
            val = json_string_value(json_object_get(secrets, name));
        }
        has_path = has_path || !strcmp(name, "PATH");
        has_home = has_home || !strcmp(name, "HOME");
        mpi_role = mpi_role || !strcmp(name, "K_MPI_JOB_ROLE");
        if (mpi && val && !strcmp(val, GT_MPI_RSH_AGENT)) {
            strvec_push(&sv, gt_xasprintf("%s=%s", name, p->mpi_rsh_bin));
            continue;
        }
        strvec_push(&sv, gt_xasprintf("%s=%s", name, val ? val : ""));
    }
    if (mpi) {
        mpi_env(task, p, &sv);
    }
    if (mpi_role && !has_home) {
        /* Open MPI's PMIx needs HOME (a container runtime sets it) */
        struct passwd *pw = getpwuid(spec->uid);
        strvec_push(&sv, gt_xasprintf("HOME=%s", pw && pw->pw_dir ? pw->pw_dir : "/"));
    }
    if (!has_path) {
        strvec_push(&sv, gt_xstrdup("PATH=" GT_GANTLET_DEFAULT_PATH));
    }
    struct gt_buf idx, uuids;
    gt_buf_init(&idx);
    gt_buf_init(&uuids);
    for (size_t i = 0; i < ts->gpus.n; i++) {
        const char *uuid = ts->gpus.v[i].uuid;
        gt_buf_printf(&idx, "%s%lld", i ? "," : "", (long long)ts->gpus.v[i].index);
        gt_buf_printf(&uuids, "%s%s", i ? "," : "", uuid ? uuid : "");
    }
    strvec_push(&sv, gt_xasprintf("CUDA_VISIBLE_DEVICES=%s", idx.len ? idx.data : ""));
    strvec_push(&sv, gt_xstrdup("CUDA_DEVICE_ORDER=PCI_BUS_ID"));
    strvec_push(&sv, gt_xasprintf("NVIDIA_VISIBLE_DEVICES=%s", uuids.len ? uuids.data : ""));
    gt_buf_fini(&idx);
    gt_buf_fini(&uuids);
    int64_t index = ts->replica_index == GT_API_UNSET ? 0 : ts->replica_index;
    strvec_push(&sv, gt_xasprintf("GANTRY_JOB=%s", ts->job ? ts->job : ""));
    strvec_push(&sv, gt_xasprintf("GANTRY_TASK=%s", task->o.meta.name));
    strvec_push(&sv,
                gt_xasprintf("GANTRY_REPLICA_TYPE=%s", ts->replica_type ? ts->replica_type : ""));
    strvec_push(&sv, gt_xasprintf("GANTRY_REPLICA_INDEX=%lld", (long long)index));
    if (spec->termination_log) {
        strvec_push(&sv, gt_xasprintf("GANTRY_TERMINATION_LOG=%s", spec->termination_log));
    }
    char *cache = gt_task_cache_dir(cache_root, spec);
    if (cache) {
        strvec_push(&sv, gt_xasprintf("GANTRY_CACHE_DIR=%s", cache));
        free(cache);
    }
    if (ifname && *ifname) {
        strvec_push(&sv, gt_xasprintf("GLOO_SOCKET_IFNAME=%s", ifname));
        strvec_push(&sv, gt_xasprintf("NCCL_SOCKET_IFNAME=%s", ifname));
    }
    spec->env = sv.v;
    spec->n_env = sv.n;
}

struct gid_entry {
    gid_t gid;
    int64_t expires_ms;
};

void gt_gid_cache_init(struct gt_gid_cache *c)
{
    gt_strmap_init(&c->by_uid);
}

void gt_gid_cache_fini(struct gt_gid_cache *c)
{
    gt_strmap_fini(&c->by_uid, free);
}

static gid_t lookup_gid(uid_t uid)
{
    struct passwd pw, *res = NULL;
    char buf[4096];
    return getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res ? pw.pw_gid : (gid_t)uid;
}

gid_t gt_gid_cache_get(struct gt_gid_cache *c, uid_t uid, int64_t now_ms)
{
    if (!c) {
        return lookup_gid(uid);
    }
    char key[16];
    snprintf(key, sizeof(key), "%u", (unsigned)uid);
    struct gid_entry *e = gt_strmap_get(&c->by_uid, key);
    if (!e) {
        e = gt_xcalloc(1, sizeof(*e));
        gt_strmap_put(&c->by_uid, key, e);
    } else if (now_ms < e->expires_ms) {
        return e->gid;
    }
    e->gid = lookup_gid(uid);
    e->expires_ms = now_ms + GT_GID_CACHE_TTL_MS;
    return e->gid;
}

static int build_user(const struct gt_api_task *task, const struct gt_task_spec_params *p,
                      struct gt_shim_spec *spec, struct gt_err *err)
{
    int64_t uid = task->spec.template.run_as_user;
    if (uid == GT_API_UNSET) {
        uid = task->o.meta.creator.uid;
    }
    if (uid < 0 || uid > (int64_t)UINT32_MAX - 1) {
        return gt_err_set(err, GT_EINVAL, "task has neither runAsUser nor a creator uid");
    }
    spec->privileged = task->spec.privileged;
    spec->uid = (uid_t)uid;
    if (spec->uid == 0 && !spec->privileged) {
        return gt_err_set(err, GT_EINVAL, "uid 0: the task is not privileged");
    }
    spec->gid = gt_gid_cache_get(p->gids, spec->uid, gt_mono_ms());
    return 0;
}

/* The cgroup's limits: the template's resources as api defaults them (a
 * limit not given is the request), and the device minors of the bound GPUs. */
static void build_limits(const struct gt_api_task *task, const struct gt_task_spec_params *p,
                         struct gt_shim_spec *spec)
{
    struct gt_api_effective eff;
    gt_api_resources_effective(&task->spec.template.resources, &eff);
    spec->limits.cpu_milli = eff.limit.v[GT_RES_CPU];
    spec->limits.memory_bytes = eff.limit.v[GT_RES_MEMORY];
    spec->limits.pids_max = GT_GANTLET_PIDS_MAX;
    spec->minors = gt_xcalloc(task->spec.gpus.n + 1, sizeof(int));
    for (size_t i = 0; i < task->spec.gpus.n; i++) {
        int64_t index = task->spec.gpus.v[i].index;
        for (size_t g = 0; p->gpus && g < p->gpus->n_gpus; g++) {
            if (p->gpus->gpus[g].index == index && p->gpus->gpus[g].minor >= 0) {
                spec->minors[spec->limits.n_gpu_minors++] = p->gpus->gpus[g].minor;
            }
        }
    }
    spec->limits.gpu_minors = spec->minors;
}

/* spec.source and spec.requirements, with the cluster's pip configuration
 * (spec.pip, set by gantryd's job controller). */
static int build_prep(const struct gt_api_task_spec *ts, const struct gt_task_spec_params *p,
                      struct gt_shim_spec *spec, struct gt_err *err)
{
    if (ts->has_source && ts->source.git) {
        spec->git_url = gt_xstrdup(ts->source.git);
        spec->git_revision = ts->source.revision ? gt_xstrdup(ts->source.revision) : NULL;
    }
    const json_t *req = ts->requirements;
    if (!req) {
        return 0;
    }
    if (!p->venv_root) {
        return gt_err_set(err, GT_EINVAL, "spec.requirements: this node has no venv directory");
    }
    struct strvec sv = {0};
    if (json_is_string(req)) {
        spec->req_file = gt_xstrdup(json_string_value(req));
    } else {
        size_t i;
        const json_t *v;
        json_array_foreach(req, i, v)
        {
            const char *line = json_string_value(v);
            if (!line || strchr(line, '\n')) {
                free(sv.v);
                return gt_err_set(err, GT_EINVAL, "spec.requirements[%zu]: want one line", i);
            }
            strvec_push(&sv, gt_xstrdup(line));
        }
        spec->req_list = sv.v ? sv.v : gt_xcalloc(1, sizeof(char *));
        spec->n_req = sv.n;
    }
    spec->venv_dir = gt_xasprintf("%s/%u", p->venv_root, (unsigned)spec->uid);
    spec->pip_find_links = ts->pip.find_links ? gt_xstrdup(ts->pip.find_links) : NULL;
    spec->pip_index_url = ts->pip.index_url ? gt_xstrdup(ts->pip.index_url) : NULL;
    return 0;
}

const struct gt_api_volume *gt_task_volume_named(const struct gt_api_volumes *vols,
                                                 const char *name)
{
    for (size_t i = 0; name && i < vols->n; i++) {
        if (vols->v[i].name && !strcmp(vols->v[i].name, name)) {
            return &vols->v[i];
        }
    }
    return NULL;
}

/* template.volumeMounts joined with spec.volumes, placed beneath the roots
 * (a Volume: at its image's mount point, which the agent makes). */
static int build_volumes(const struct gt_api_task_spec *ts, const struct gt_task_spec_params *p,
                         struct gt_shim_spec *spec, struct gt_err *err)
{
    spec->volumes = gt_xcalloc(ts->template.volume_mounts.n + 1, sizeof(*spec->volumes));
    for (size_t i = 0; i < ts->template.volume_mounts.n; i++) {
        const struct gt_api_mount *m = &ts->template.volume_mounts.v[i];
        const char *name = m->name;
        const char *mount_path = m->mount_path;
        const struct gt_api_volume *vol = gt_task_volume_named(&ts->volumes, name);
        const char *host = vol ? vol->host_path : NULL;
        if (!vol || !(host || vol->image || vol->has_empty_dir) || !mount_path ||
            (vol->image && !p->volumes_dir)) {
            return gt_err_set(err, GT_EINVAL, "spec.template.volumeMounts[%zu]: no volume %s", i,
                              name ? name : "(unnamed)");
        }
        struct gt_shim_volume *sv = &spec->volumes[spec->n_volumes];
        if (vol->image) { /* a Volume: its image's mount point (gt_volume_attach) */
            char mnt[PATH_MAX];
            gt_volume_mountpoint(p->volumes_dir, vol->image, mnt, sizeof(mnt));
            sv->root = gt_xstrdup(mnt);
            sv->path = gt_xstrdup(".");
        } else if (vol->has_empty_dir) { /* scratch: made by gt_scratch_make */
            char dir[PATH_MAX];
            gt_scratch_path(p->data_dir ? p->data_dir : p->state_dir, name, dir, sizeof(dir));
            sv->root = gt_xstrdup(dir);
            sv->path = gt_xstrdup(".");
        } else {
            size_t root;
            const char *rel;
            if (gt_volume_locate(p->storage_roots, p->n_storage_roots, host, &root, &rel, err) <
                0) {
                gt_err_prefix(err, "volume %s", name);
                return GT_EFORBIDDEN;
            }
            sv->root = gt_xstrdup(p->storage_roots[root]);
            sv->path = gt_xstrdup(rel);
        }
        spec->n_volumes++;
        sv->mount_path = gt_xstrdup(mount_path);
        sv->read_only = vol->read_only || m->read_only;
    }
    return 0;
}

static void host_add(struct gt_shim_spec *spec, const char *ip, char *hostname)
{
    struct gt_shim_host *h = &spec->hosts[spec->n_hosts++];
    h->ip = gt_xstrdup(ip);
    h->hostname = hostname;
}

static bool host_named(const struct gt_api_task_spec *ts, const char *hostname)
{
    for (size_t i = 0; i < ts->hosts.n; i++) {
        if (ts->hosts.v[i].hostname && !strcmp(ts->hosts.v[i].hostname, hostname)) {
            return true;
        }
    }
    return false;
}

/* spec.hosts, each dotless NAME also as NAME.<project>.svc. */
static int build_hosts(const struct gt_api_task *task, struct gt_shim_spec *spec,
                       struct gt_err *err)
{
    const struct gt_api_task_spec *ts = &task->spec;
    const char *project = task->o.meta.project;
    spec->hosts = gt_xcalloc(2 * ts->hosts.n + 1, sizeof(*spec->hosts));
    for (size_t i = 0; i < ts->hosts.n; i++) {
        const char *ip = ts->hosts.v[i].ip;
        const char *name = ts->hosts.v[i].hostname;
        if (!ip || !name || !gt_shim_host_valid(name, ip)) {
            return gt_err_set(err, GT_EINVAL, "spec.hosts[%zu]: want a host name and an IP address",
                              i);
        }
        host_add(spec, ip, gt_xstrdup(name));
        char *svc = project && *project && !strchr(name, '.')
                        ? gt_xasprintf("%s.%s.svc", name, project)
                        : NULL;
        /* the alias only when spec.hosts does not name it already */
        if (svc && gt_shim_host_valid(svc, ip) && !host_named(ts, svc)) {
            host_add(spec, ip, svc);
        } else {
            free(svc);
        }
    }
    return 0;
}

/* terminationGracePeriodSeconds in ms; 30 s when not given, as in Kubernetes */
static int64_t template_grace_ms(const struct gt_api_template *tmpl)
{
    return tmpl->grace_period_s != GT_API_UNSET ? tmpl->grace_period_s * 1000 : 30000;
}

int gt_task_spec_build(const struct gt_api_task *task, const struct gt_task_spec_params *p,
                       struct gt_shim_spec *spec, struct gt_err *err)
{
    memset(spec, 0, sizeof(*spec));
    const struct gt_api_template *tmpl = &task->spec.template;
    const char *uid = task->o.meta.uid;
    if (!uid || !task->o.meta.name) {
        return gt_err_set(err, GT_EINVAL, "task without a name or uid");
    }
    int rc = check_secrets(tmpl, p->secrets, err);
    if (rc < 0) {
        return rc;
    }
    build_argv(tmpl, spec);
    if (spec->n_argv == 0 && !tmpl->image) {
        gt_shim_spec_fini(spec);
        return gt_err_set(err, GT_EINVAL, "spec.template.command: required");
    }
    const char *data = p->data_dir ? p->data_dir : p->state_dir;
    if (tmpl->termination_policy == GT_API_TERMINATION_FILE && !tmpl->image) {
        spec->termination_log = gt_xasprintf("%s/termination-log", data);
    }
    spec->namespaces = GT_NS_PID | GT_NS_MOUNT | GT_NS_UTS | GT_NS_IPC |
                       (tmpl->has_host_users && !tmpl->host_users ? GT_NS_USER : 0);
    rc = build_user(task, p, spec, err);
    build_env(task, p, spec);
    build_limits(task, p, spec);
    rc = rc < 0 ? rc : build_prep(&task->spec, p, spec, err);
    rc = rc < 0 ? rc : build_volumes(&task->spec, p, spec, err);
    rc = rc < 0 ? rc : build_hosts(task, spec, err);
    if (rc == 0 && gt_task_mpi_hostfile(task)) {
        /* DATA_DIR/mpi, which the agent fills (tasks.c), read-only at /etc/mpi */
        spec->volumes = gt_xrealloc(spec->volumes, (spec->n_volumes + 1) * sizeof(*spec->volumes));
        spec->volumes[spec->n_volumes++] =
            (struct gt_shim_volume){.root = gt_xstrdup(data),
                                    .path = gt_xstrdup("mpi"),
                                    .mount_path = gt_xstrdup(GT_MPI_DIR),
                                    .read_only = true};
    }
    rc = rc < 0 || !tmpl->image ? rc : gt_task_spec_image(tmpl, p, spec, err);
    if (rc < 0) {
        gt_shim_spec_fini(spec);
        return rc;
    }
    const char *wd = tmpl->working_dir;
    spec->cwd = wd ? gt_xstrdup(wd) : gt_xasprintf("%s/work", data);
    spec->hostname = gt_xstrdup(task->o.meta.name);
    spec->cgroup_path = gt_xasprintf("gantry/%s", uid);
    if (p->cgsys && p->cgsys->version == 2) {
        spec->cg_unified = gt_xstrdup(p->cgsys->v2_root);
    }
    for (int c = 0; p->cgsys && p->cgsys->version == 1 && c < GT_CG_NCTRL; c++) {
        spec->cg_mounts[c] = p->cgsys->v1_mount[c][0] ? gt_xstrdup(p->cgsys->v1_mount[c]) : NULL;
    }
    spec->log_dir = gt_xstrdup(data);
    spec->data_dir = p->data_dir ? gt_xstrdup(p->data_dir) : NULL;
    spec->log_max_bytes = p->log_max_bytes;
    spec->log_keep_files = p->log_keep_files;
    spec->stop_grace_ms = template_grace_ms(tmpl);
    return 0;
}

const char *gt_task_stop_reason(const char *stop_reason)
{
    return !stop_reason || !*stop_reason || !strcmp(stop_reason, "Deleted") ? "Killed"
                                                                            : stop_reason;
}

json_t *gt_task_exit_status(const json_t *prev, const struct gt_shim_exit *ex)
{
    json_t *st = json_is_object(prev) ? json_deep_copy(prev) : json_object();
    const char *reason;
    if (ex->stop_requested) {
        reason = gt_task_stop_reason(ex->stop_reason);
    } else if (ex->reason[0]) {
        reason = ex->reason;
    } else if (ex->oom_killed) {
        reason = "OOMKilled";
    } else if (ex->exit_code == 0) {
        reason = "Completed";
    } else {
        reason = "Error";
    }
    /* a task its job's end stopped (jobctl.c's "JobFinished") that exits 0
     * of its own accord did its part: not a failure of the job's replicas */
    bool clean = !ex->oom_killed && ex->exit_code == 0 && ex->signal == 0;
    bool job_done = ex->stop_requested && !strcmp(ex->stop_reason, "JobFinished");
    bool ok = clean && (!ex->stop_requested || job_done);
    char ts[32];
    json_object_set_new(st, "phase", json_string(ok ? "Succeeded" : "Failed"));
    json_object_set_new(st, "reason", json_string(reason));
    json_object_set_new(st, "exitCode", json_integer(ex->exit_code));
    json_object_set_new(st, "signal", json_integer(ex->signal));
    if (ex->error[0]) {
        json_object_set_new(st, "message", json_string(ex->error));
    } else {
        json_object_del(st, "message");
    }
    if (ex->started_at_ms > 0 && !json_object_get(st, "startTime")) {
        json_object_set_new(st, "startTime",
                            json_string(gt_time_format(ex->started_at_ms, ts, sizeof(ts))));
    }
    int64_t fin = ex->finished_at_ms > 0 ? ex->finished_at_ms : gt_now_ms();
    json_object_set_new(st, "finishTime", json_string(gt_time_format(fin, ts, sizeof(ts))));
    return st;
}

int64_t gt_task_stop_grace_ms(const struct gt_api_task *task)
{
    int64_t stop_s = task->spec.has_stop ? task->spec.stop.grace_period_s : GT_API_UNSET;
    return stop_s != GT_API_UNSET ? stop_s * 1000 : template_grace_ms(&task->spec.template);
}

unsigned gt_task_decide(const struct gt_task_local *l, const struct gt_api_task *task)
{
    int phase = task ? task->status.phase : GT_TASK_PENDING;
    bool stop = task && task->spec.has_stop;
    if (!task || phase == GT_TASK_SUCCEEDED || phase == GT_TASK_FAILED) {
        if (!l->known) {
            return 0;
        }
        if (!l->exited) {
            return l->killing ? 0 : GT_TA_KILL;
        }
        if (!task || l->killing) {
            return GT_TA_REMOVE;
        }
        /* keep the logs of a finished task until its Task object goes */
        return l->reported ? 0 : GT_TA_MARK_REPORTED;
    }
    if (phase == GT_TASK_PENDING) {
        return 0;
    }
    if (!l->known) {
        if (stop) {
            return GT_TA_REPORT_UNSTARTED;
        }
        return phase == GT_TASK_BOUND ? GT_TA_START : 0;
    }
    if (l->killing) {
        return 0;
    }
    if (l->exited) {
        return l->reported ? 0 : GT_TA_REPORT_EXIT;
    }
    unsigned a = 0;
    if (stop && !l->stop_sent && l->started) {
        a |= GT_TA_STOP;
    }
    if (l->started && !l->running_reported && phase == GT_TASK_BOUND) {
        a |= GT_TA_REPORT_RUNNING;
    }
    return a;
}

bool gt_task_previous_kept(const char *uid, struct gt_api_task *const *tasks, size_t n_tasks)
{
    for (size_t i = 0; i < n_tasks; i++) {
        const char *prev = tasks[i]->status.previous.uid;
        if (prev && *prev && !strcmp(prev, uid)) {
            return true;
        }
    }
    return false;
}

size_t gt_log_tail_offset(const char *data, size_t len, int64_t n, bool is_last, int64_t *newlines)
{
    if (n <= *newlines) {
        return len;
    }
    size_t i = len;
    if (is_last && i > 0 && data[i - 1] == '\n') {
        i--;
    }
    while (i > 0) {
        i--;
        if (data[i] == '\n' && ++*newlines == n) {
            return i + 1;
        }
    }
    return 0;
}
