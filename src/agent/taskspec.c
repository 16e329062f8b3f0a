/*
 * gantlet's pure decisions (see gantlet.h): a Task object becomes the
 * shim's spec, an exit record becomes the Task's terminal status, and the
 * local and remote states of a task decide what the agent does next. No
 * I/O beyond a passwd lookup for the task user's primary group.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"
#include "agent/gantlet.h"
#include "api/api.h"

static const char *str_at(const json_t *obj, const char *path)
{
    return json_string_value(gt_json_path(obj, path));
}

/* Names the agent sets itself: a template env entry of the same name is dropped. */
static const char *const agent_env[] = {
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",  "NVIDIA_VISIBLE_DEVICES",
    "GANTRY_JOB",           "GANTRY_TASK",        "GANTRY_REPLICA_TYPE",
    "GANTRY_REPLICA_INDEX", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME",
};

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

static void build_argv(const json_t *tmpl, struct gt_shim_spec *spec)
{
    struct strvec sv = {0};
    const char *parts[] = {"command", "args"};
    for (size_t p = 0; p < GT_ARRAY_LEN(parts); p++) {
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(tmpl, parts[p]), i, v)
        {
            strvec_push(&sv, gt_xstrdup(json_string_value(v)));
        }
    }
    spec->argv = sv.v;
    spec->n_argv = sv.n;
}

static void build_env(const json_t *task, const json_t *tmpl, const char *ifname,
                      struct gt_shim_spec *spec)
{
    struct strvec sv = {0};
    bool has_path = false;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(tmpl, "env"), i, v)
    {
        const char *name = json_string_value(json_object_get(v, "name"));
        const char *val = json_string_value(json_object_get(v, "value"));
        if (!name || is_agent_env(name)) {
            continue;
        }
        has_path = has_path || !strcmp(name, "PATH");
        strvec_push(&sv, gt_xasprintf("%s=%s", name, val ? val : ""));
    }
    if (!has_path) {
        strvec_push(&sv, gt_xstrdup("PATH=" GT_GANTLET_DEFAULT_PATH));
    }
    struct gt_buf idx, uuids;
    gt_buf_init(&idx);
    gt_buf_init(&uuids);
    json_array_foreach(gt_json_path(task, "spec.gpus"), i, v)
    {
        const char *uuid = json_string_value(json_object_get(v, "uuid"));
        gt_buf_printf(&idx, "%s%lld", i ? "," : "",
                      (long long)json_integer_value(json_object_get(v, "index")));
        gt_buf_printf(&uuids, "%s%s", i ? "," : "", uuid ? uuid : "");
    }
    strvec_push(&sv, gt_xasprintf("CUDA_VISIBLE_DEVICES=%s", idx.len ? idx.data : ""));
    strvec_push(&sv, gt_xstrdup("CUDA_DEVICE_ORDER=PCI_BUS_ID"));
    strvec_push(&sv, gt_xasprintf("NVIDIA_VISIBLE_DEVICES=%s", uuids.len ? uuids.data : ""));
    gt_buf_fini(&idx);
    gt_buf_fini(&uuids);
    const char *job = str_at(task, "spec.job");
    const char *rtype = str_at(task, "spec.replicaType");
    strvec_push(&sv, gt_xasprintf("GANTRY_JOB=%s", job ? job : ""));
    strvec_push(&sv, gt_xasprintf("GANTRY_TASK=%s", gt_obj_name(task)));
    strvec_push(&sv, gt_xasprintf("GANTRY_REPLICA_TYPE=%s", rtype ? rtype : ""));
    strvec_push(
        &sv, gt_xasprintf("GANTRY_REPLICA_INDEX=%lld",
                          (long long)json_integer_value(gt_json_path(task, "spec.replicaIndex"))));
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

static int build_user(const json_t *task, const json_t *tmpl, const struct gt_task_spec_params *p,
                      struct gt_shim_spec *spec, struct gt_err *err)
{
    json_t *uid = json_object_get(tmpl, "runAsUser");
    if (!json_is_integer(uid)) {
        uid = gt_json_path(task, "metadata.creator.uid");
    }
    if (!json_is_integer(uid) || json_integer_value(uid) < 0 ||
        json_integer_value(uid) > (json_int_t)UINT32_MAX - 1) {
        return gt_err_set(err, GT_EINVAL, "task has neither runAsUser nor a creator uid");
    }
    spec->privileged = json_is_true(gt_json_path(task, "spec.privileged"));
    spec->uid = (uid_t)json_integer_value(uid);
    if (spec->uid == 0 && !spec->privileged) {
        return gt_err_set(err, GT_EINVAL, "uid 0: the task is not privileged");
    }
    spec->gid = gt_gid_cache_get(p->gids, spec->uid, gt_mono_ms());
    return 0;
}

static int build_limits(const json_t *task, const json_t *tmpl, const struct gt_task_spec_params *p,
                        struct gt_shim_spec *spec, struct gt_err *err)
{
    struct gt_resources lim = {0}, req = {0};
    json_t *res = json_object_get(tmpl, "resources");
    if (gt_api_resources(json_object_get(res, "limits"), &lim, err) < 0 ||
        gt_api_resources(json_object_get(res, "requests"), &req, err) < 0) {
        gt_err_prefix(err, "spec.template.resources");
        return GT_EINVAL;
    }
    spec->limits.cpu_milli = lim.cpu_milli ? lim.cpu_milli : req.cpu_milli;
    spec->limits.memory_bytes = lim.memory_bytes ? lim.memory_bytes : req.memory_bytes;
    spec->limits.pids_max = GT_GANTLET_PIDS_MAX;
    json_t *gpus = gt_json_path(task, "spec.gpus");
    spec->minors = gt_xcalloc(json_array_size(gpus) + 1, sizeof(int));
    size_t i;
    json_t *v;
    json_array_foreach(gpus, i, v)
    {
        json_int_t index = json_integer_value(json_object_get(v, "index"));
        for (size_t g = 0; p->gpus && g < p->gpus->n_gpus; g++) {
            if (p->gpus->gpus[g].index == index && p->gpus->gpus[g].minor >= 0) {
                spec->minors[spec->limits.n_gpu_minors++] = p->gpus->gpus[g].minor;
            }
        }
    }
    spec->limits.gpu_minors = spec->minors;
    return 0;
}

/* spec.source and spec.requirements, with the cluster's pip configuration
 * (spec.pip, set by gantryd's job controller). */
static int build_prep(const json_t *task, const struct gt_task_spec_params *p,
                      struct gt_shim_spec *spec, struct gt_err *err)
{
    const char *git = str_at(task, "spec.source.git");
    const char *rev = str_at(task, "spec.source.revision");
    if (git) {
        spec->git_url = gt_xstrdup(git);
        spec->git_revision = rev ? gt_xstrdup(rev) : NULL;
    }
    json_t *req = gt_json_path(task, "spec.requirements");
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
        json_t *v;
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
    const char *links = str_at(task, "spec.pip.findLinks");
    const char *url = str_at(task, "spec.pip.indexUrl");
    spec->pip_find_links = links ? gt_xstrdup(links) : NULL;
    spec->pip_index_url = url ? gt_xstrdup(url) : NULL;
    return 0;
}

static const json_t *volume_named(const json_t *task, const char *name)
{
    return gt_json_find(gt_json_path(task, "spec.volumes"), "name", name);
}

/* template.volumeMounts joined with spec.volumes, placed beneath the roots. */
static int build_volumes(const json_t *task, const json_t *tmpl,
                         const struct gt_task_spec_params *p, struct gt_shim_spec *spec,
                         struct gt_err *err)
{
    json_t *mounts = json_object_get(tmpl, "volumeMounts");
    spec->volumes = gt_xcalloc(json_array_size(mounts) + 1, sizeof(*spec->volumes));
    size_t i;
    json_t *m;
    json_array_foreach(mounts, i, m)
    {
        const char *name = json_string_value(json_object_get(m, "name"));
        const char *mount_path = json_string_value(json_object_get(m, "mountPath"));
        const json_t *vol = volume_named(task, name);
        const char *host = json_string_value(json_object_get(vol, "hostPath"));
        if (!vol || !host || !mount_path) {
            return gt_err_set(err, GT_EINVAL, "spec.template.volumeMounts[%zu]: no volume %s", i,
                              name ? name : "(unnamed)");
        }
        size_t root;
        const char *rel;
        if (gt_volume_locate(p->storage_roots, p->n_storage_roots, host, &root, &rel, err) < 0) {
            gt_err_prefix(err, "volume %s", name);
            return GT_EFORBIDDEN;
        }
        struct gt_shim_volume *sv = &spec->volumes[spec->n_volumes++];
        sv->root = gt_xstrdup(p->storage_roots[root]);
        sv->path = gt_xstrdup(rel);
        sv->mount_path = gt_xstrdup(mount_path);
        sv->read_only = json_is_true(json_object_get(vol, "readOnly")) ||
                        json_is_true(json_object_get(m, "readOnly"));
    }
    return 0;
}

static void host_add(struct gt_shim_spec *spec, const char *ip, char *hostname)
{
    struct gt_shim_host *h = &spec->hosts[spec->n_hosts++];
    h->ip = gt_xstrdup(ip);
    h->hostname = hostname;
}

/* spec.hosts, each dotless NAME also as NAME.<project>.svc. */
static int build_hosts(const json_t *task, struct gt_shim_spec *spec, struct gt_err *err)
{
    json_t *hosts = gt_json_path(task, "spec.hosts");
    const char *project = gt_obj_project(task);
    spec->hosts = gt_xcalloc(2 * json_array_size(hosts) + 1, sizeof(*spec->hosts));
    size_t i;
    json_t *h;
    json_array_foreach(hosts, i, h)
    {
        const char *ip = json_string_value(json_object_get(h, "ip"));
        const char *name = json_string_value(json_object_get(h, "hostname"));
        if (!ip || !name || !gt_shim_host_valid(name, ip)) {
            return gt_err_set(err, GT_EINVAL, "spec.hosts[%zu]: want a host name and an IP address",
                              i);
        }
        host_add(spec, ip, gt_xstrdup(name));
        char *svc = project && *project && !strchr(name, '.')
                        ? gt_xasprintf("%s.%s.svc", name, project)
                        : NULL;
        /* the alias only when spec.hosts does not name it already */
        if (svc && gt_shim_host_valid(svc, ip) && !gt_json_find(hosts, "hostname", svc)) {
            host_add(spec, ip, svc);
        } else {
            free(svc);
        }
    }
    return 0;
}

int gt_task_spec_build(const json_t *task, const struct gt_task_spec_params *p,
                       struct gt_shim_spec *spec, struct gt_err *err)
{
    memset(spec, 0, sizeof(*spec));
    const json_t *tmpl = gt_json_path(task, "spec.template");
    const char *uid = str_at(task, "metadata.uid");
    if (!json_is_object(tmpl) || !uid || !gt_obj_name(task)) {
        return gt_err_set(err, GT_EINVAL, "task without spec.template, name or uid");
    }
    bool image = json_object_get(tmpl, "image") != NULL;
    build_argv(tmpl, spec);
    if (spec->n_argv == 0 && !image) {
        gt_shim_spec_fini(spec);
        return gt_err_set(err, GT_EINVAL, "spec.template.command: required");
    }
    build_env(task, tmpl, p->cluster_ifname, spec);
    int rc = build_user(task, tmpl, p, spec, err);
    rc = rc < 0 ? rc : build_limits(task, tmpl, p, spec, err);
    rc = rc < 0 ? rc : build_prep(task, p, spec, err);
    rc = rc < 0 ? rc : build_volumes(task, tmpl, p, spec, err);
    rc = rc < 0 ? rc : build_hosts(task, spec, err);
    rc = rc < 0 || !image ? rc : gt_task_spec_image(tmpl, p, spec, err);
    if (rc < 0) {
        gt_shim_spec_fini(spec);
        return rc;
    }
    const char *wd = json_string_value(json_object_get(tmpl, "workingDir"));
    const char *data = p->data_dir ? p->data_dir : p->state_dir;
    spec->cwd = wd ? gt_xstrdup(wd) : gt_xasprintf("%s/work", data);
    spec->hostname = gt_xstrdup(gt_obj_name(task));
    spec->namespaces = GT_NS_PID | GT_NS_MOUNT | GT_NS_UTS | GT_NS_IPC;
    spec->cgroup_path = gt_xasprintf("gantry/%s", uid);
    spec->log_dir = gt_xstrdup(data);
    spec->data_dir = p->data_dir ? gt_xstrdup(p->data_dir) : NULL;
    spec->log_max_bytes = p->log_max_bytes;
    spec->log_keep_files = p->log_keep_files;
    json_t *grace = json_object_get(tmpl, "terminationGracePeriodSeconds");
    spec->stop_grace_ms = json_is_integer(grace) ? json_integer_value(grace) * 1000 : 30000;
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
    bool ok = !ex->stop_requested && !ex->oom_killed && ex->exit_code == 0;
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

static bool phase_terminal(const char *phase)
{
    return phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
}

unsigned gt_task_decide(const struct gt_task_local *l, const json_t *task)
{
    const char *phase = task ? str_at(task, "status.phase") : NULL;
    bool stop = task && json_is_object(gt_json_path(task, "spec.stop"));
    if (!task || phase_terminal(phase)) {
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
    if (!phase || !strcmp(phase, "Pending")) {
        return 0;
    }
    if (!l->known) {
        if (stop) {
            return GT_TA_REPORT_UNSTARTED;
        }
        return !strcmp(phase, "Bound") ? GT_TA_START : 0;
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
    if (l->started && !l->running_reported && !strcmp(phase, "Bound")) {
        a |= GT_TA_REPORT_RUNNING;
    }
    return a;
}

bool gt_task_previous_kept(const char *uid, const json_t *tasks)
{
    size_t i;
    json_t *t;
    json_array_foreach(tasks, i, t)
    {
        const char *prev = str_at(t, "status.previous.uid");
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
