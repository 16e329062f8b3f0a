/*
 * gantlet's control loop (docs/agent.md): register the Node, then every
 * heartbeat list this node's Tasks fresh, reconcile the local tasks with
 * them (which kills what gantryd no longer runs here) and only then write
 * the Node status with Ready=True; between lists a watch stream delivers
 * changes as they happen. A lost or expired watch is re-listed with
 * backoff. Exits are found by polling the state directories (and at once
 * on SIGCHLD, since the agent is the shims' child subreaper). SIGTERM ends
 * the loop and leaves every task to its shim.
 */
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "agent/agent_int.h"
#include "common/resource.h"

#define POLL_MS 150
/* Telemetry rounds: scalars reach gantryd within about this of being written. */
#define TELEMETRY_MS 1000
#define BACKOFF_MIN_MS 200
#define BACKOFF_MAX_MS 10000
#define API "/apis/gantry.dev/v1"

int64_t gt_agent_mem_total_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "re");
    char line[256];
    long long kb = 0;
    while (f && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "MemTotal: %lld kB", &kb) == 1) {
            break;
        }
    }
    if (f) {
        fclose(f);
    }
    return (int64_t)kb * 1024;
}

int64_t gt_agent_cpu_milli(void)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    return (int64_t)(ncpu > 0 ? ncpu : 1) * 1000;
}

static json_t *resources_json(const struct gt_gpu_set *gpus, int64_t cpu_milli, int64_t mem_bytes)
{
    char cpu[32], mem[32];
    return json_pack("{s:s, s:s, s:I}", "cpu",
                     gt_quantity_format(cpu_milli, GT_QTY_MILLI, 0, cpu, sizeof(cpu)), "memory",
                     gt_quantity_format(mem_bytes, GT_QTY_UNIT, 1, mem, sizeof(mem)),
                     GT_RES_NAME_GPU, (json_int_t)gpus->n_gpus);
}

json_t *gt_agent_node_status(const struct gt_gpu_set *set, int64_t cpu_milli, int64_t mem_bytes,
                             const char *listen, const char *agent_url)
{
    char ts[32];
    gt_time_format(gt_now_ms(), ts, sizeof(ts));
    json_t *gpus = json_array();
    for (size_t i = 0; i < set->n_gpus; i++) {
        const struct gt_gpu *d = &set->gpus[i];
        json_array_append_new(gpus, json_pack("{s:i, s:s, s:s, s:I, s:i, s:s, s:s}", "index",
                                              d->index, "uuid", d->uuid, "model", d->model,
                                              "memoryBytes", (json_int_t)d->memory_bytes,
                                              "numaNode", d->numa_node, "group", d->group, "health",
                                              d->healthy ? "Healthy" : "Unhealthy"));
    }
    char host[256];
    const char *colon = strrchr(listen, ':');
    snprintf(host, sizeof(host), "%.*s", colon ? (int)(colon - listen) : 0, listen);
    return json_pack("{s:o, s:o, s:o, s:[{s:s, s:s}, {s:s, s:s}], s:[{s:s, s:s, s:s, s:s}], s:s}",
                     "capacity", resources_json(set, cpu_milli, mem_bytes), "allocatable",
                     resources_json(set, cpu_milli, mem_bytes), "gpus", gpus, "addresses", "type",
                     "InternalIP", "address", host, "type", "AgentURL", "address", agent_url,
                     "conditions", "type", "Ready", "status", "True", "reason", "AgentReady",
                     "lastHeartbeatTime", ts, "lastHeartbeatTime", ts);
}

static json_t *node_status(const struct gt_gantlet *g)
{
    return gt_agent_node_status(&g->gpus, gt_agent_cpu_milli(), gt_agent_mem_total_bytes(),
                                g->cfg->listen, g->agent_url);
}

static void backoff_next(struct gt_gantlet *g)
{
    g->backoff_ms = g->backoff_ms ? g->backoff_ms * 2 : BACKOFF_MIN_MS;
    if (g->backoff_ms > BACKOFF_MAX_MS) {
        g->backoff_ms = BACKOFF_MAX_MS;
    }
}

static void schedule_rewatch(struct gt_gantlet *g, int delay_ms)
{
    struct timeval tv = {delay_ms / 1000, (delay_ms % 1000) * 1000};
    evtimer_add(g->rewatch_ev, &tv);
}

/* ---- watch ---- */

static void watch_event(json_t *ev, void *arg)
{
    struct gt_gantlet *g = arg;
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    if (!type || !json_is_object(obj)) {
        return;
    }
    struct gt_api_task *task = gt_api_task_new(obj);
    const char *rv = task->o.meta.resource_version;
    if (rv && strcmp(type, "ERROR") != 0) {
        snprintf(g->watch_rv, sizeof(g->watch_rv), "%s", rv);
    }
    g->backoff_ms = 0;
    gt_gantlet_task_observe(g, task, !strcmp(type, "DELETED"));
}

static void watch_end(int status, void *arg)
{
    struct gt_gantlet *g = arg;
    g->watch = NULL;
    if (g->stopping) {
        return;
    }
    gt_log_warn("task watch ended; listing again", "status=%d", status);
    backoff_next(g);
    schedule_rewatch(g, status == 410 ? 0 : g->backoff_ms);
}

static void watch_open(struct gt_gantlet *g)
{
    char *path = gt_xasprintf(API "/tasks?fieldSelector=spec.nodeName%%3D%s&watch=true"
                                  "&resourceVersion=%s",
                              g->cfg->name, g->watch_rv);
    g->watch = gt_apic_stream_open(g->api, path, watch_event, watch_end, g);
    free(path);
}

/* ---- list, reconcile, heartbeat ---- */

static void heartbeat_done(int status, json_t *body, void *arg)
{
    (void)arg;
    if (status != 200 && status != 201) {
        gt_log_warn("node status write failed", "status=%d message=\"%s\"", status,
                    gt_apic_message(body));
    }
}

static void list_done(int status, json_t *body, void *arg)
{
    struct gt_gantlet *g = arg;
    g->listing = false;
    json_t *items = json_object_get(body, "items");
    if (status != 200 || !json_is_array(items)) {
        gt_log_warn("cannot list this node's tasks", "status=%d", status);
        backoff_next(g);
        schedule_rewatch(g, g->backoff_ms);
        return;
    }
    /* the list may be older than the watch's latest event (both race) */
    const char *rv = json_string_value(gt_json_path(body, "metadata.resourceVersion"));
    int64_t list_rev = rv ? strtoll(rv, NULL, 10) : INT64_MAX;
    int64_t watch_rev = g->watch ? strtoll(g->watch_rv, NULL, 10) : 0;
    gt_gantlet_tasks_unsee(g);
    size_t i;
    json_t *t;
    json_array_foreach(items, i, t)
    {
        gt_gantlet_task_listed(g, gt_api_task_new(t), watch_rev);
    }
    gt_gantlet_tasks_gone(g, list_rev);
    /* reconciled: what gantryd failed is dead, so the node may say Ready */
    json_t *st = json_pack("{s:o}", "status", node_status(g));
    char *path = gt_xasprintf(API "/nodes/%s/status", g->cfg->name);
    gt_apic_request(g->api, EVHTTP_REQ_PUT, path, st, heartbeat_done, g);
    free(path);
    json_decref(st);
    if (!g->watch && rv) {
        snprintf(g->watch_rv, sizeof(g->watch_rv), "%s", rv);
        watch_open(g);
    }
}

static void list_start(struct gt_gantlet *g)
{
    if (g->listing) {
        return;
    }
    g->listing = true;
    char *path = gt_xasprintf(API "/tasks?fieldSelector=spec.nodeName%%3D%s", g->cfg->name);
    gt_apic_request(g->api, EVHTTP_REQ_GET, path, NULL, list_done, g);
    free(path);
}

/* What the cluster offers nodes (the registry), then the task list. An
 * older gantryd without clusterinfo, or a failure, leaves the image
 * settings as the flags made them. */
static void clusterinfo_done(int status, json_t *body, void *arg)
{
    struct gt_gantlet *g = arg;
    struct gt_err err = {0};
    if (status == 200 && gt_agent_registry_apply(g, body, &err) < 0) {
        gt_log_warn("cannot use the cluster registry", "err=\"%s\"", err.msg);
    }
    list_start(g);
}

static void register_done(int status, json_t *body, void *arg)
{
    struct gt_gantlet *g = arg;
    if (status == 201 || status == 200 || status == 409) {
        if (status == 409) {
            gt_agent_node_labels_sync(g);
        }
        g->registered = true;
        g->backoff_ms = 0;
        gt_log_info("node registered", "node=%s gpus=%zu", g->cfg->name, g->gpus.n_gpus);
        gt_apic_request(g->api, EVHTTP_REQ_GET, API "/clusterinfo", NULL, clusterinfo_done, g);
        return;
    }
    gt_log_warn("cannot register the node", "status=%d message=\"%s\"", status,
                gt_apic_message(body));
    backoff_next(g);
    schedule_rewatch(g, g->backoff_ms);
}

static void register_start(struct gt_gantlet *g)
{
    json_t *node =
        json_pack("{s:s, s:s, s:{s:s, s:o}}", "apiVersion", "gantry.dev/v1", "kind", "Node",
                  "metadata", "name", g->cfg->name, "labels", gt_agent_gfd_labels(&g->gpus));
    gt_apic_request(g->api, EVHTTP_REQ_POST, API "/nodes", node, register_done, g);
    json_decref(node);
}

static void sync_now(struct gt_gantlet *g)
{
    if (!g->registered) {
        register_start(g);
    } else {
        list_start(g);
    }
}

static void on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sync_now(arg);
}

static void on_rewatch(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sync_now(arg);
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    gt_gantlet_tasks_poll(arg);
}

static void on_gpu_sample(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gt_gantlet *g = arg;
    /* at once: the scheduler stops (or starts again) offering that GPU */
    if (gt_gantlet_gpus_tick(g) && g->registered) {
        sync_now(g);
    }
}

static void on_telemetry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    gt_gantlet_telemetry_poll(arg);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    struct gt_gantlet *g = arg;
    if (sig == SIGCHLD) {
        gt_gantlet_tasks_poll(g);
        return;
    }
    gt_log_info("stopping; tasks keep running under their shims", "signal=%d", (int)sig);
    g->stopping = true;
    event_base_loopbreak(g->base);
}

/* ---- setup ---- */

/* The shim (--shim, else next to gantlet) and GT_MPI_RSH_AGENT, the link
 * to the gantry CLI next to gantlet (MPI launchers' rsh agent; needed only
 * by them). */
static int find_shim(struct gt_gantlet *g, struct gt_err *err)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n < 0) {
        return gt_err_set(err, -errno, "/proc/self/exe: %s", strerror(errno));
    }
    exe[n] = '\0';
    const char *dir = dirname(exe);
    snprintf(g->mpi_rsh_bin, sizeof(g->mpi_rsh_bin), "%s/" GT_MPI_RSH_AGENT, dir);
    if (g->cfg->shim) {
        snprintf(g->shim, sizeof(g->shim), "%s", g->cfg->shim);
    } else {
        snprintf(g->shim, sizeof(g->shim), "%s/gantry-shim", dir);
    }
    if (access(g->shim, X_OK) < 0) {
        return gt_err_set(err, -errno, "shim %s: %s", g->shim, strerror(errno));
    }
    return 0;
}

static int mkdirs(const char *path)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s", path);
    for (char *s = p + 1; *s; s++) {
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0755) < 0 && errno != EEXIST) {
                return -errno;
            }
            *s = '/';
        }
    }
    return mkdir(p, 0711) < 0 && errno != EEXIST ? -errno : 0;
}

/* The image cache, the OCI runtime's root and the parsed image flags. */
static int image_setup(struct gt_gantlet *g, struct gt_err *err)
{
    const struct gt_gantlet_config *c = g->cfg;
    struct gt_task_image_params *ip = &g->image;
    int rc = gt_image_gc_threshold_parse(c->image_gc_threshold, &ip->gc_threshold_bytes,
                                         &ip->gc_threshold_percent, err);
    if (rc < 0) {
        return rc;
    }
    if (strcmp(c->oci_runtime, "runc") != 0 && strcmp(c->oci_runtime, "crun") != 0) {
        return gt_err_set(err, GT_EINVAL, "--oci-runtime %s: want runc or crun", c->oci_runtime);
    }
    snprintf(g->images_dir, sizeof(g->images_dir), "%s", c->image_dir ? c->image_dir : "");
    if (!c->image_dir) {
        snprintf(g->images_dir, sizeof(g->images_dir), "%s/images", c->root);
    }
    snprintf(g->runtime_root, sizeof(g->runtime_root), "%s/oci", c->root);
    if ((rc = mkdirs(g->images_dir)) < 0 || (rc = mkdirs(g->runtime_root)) < 0) {
        return gt_err_set(err, rc, "image directories: %s", strerror(-rc));
    }
    ip->dir = g->images_dir;
    ip->runtime = c->oci_runtime;
    ip->runtime_root = g->runtime_root;
    ip->auth_file = c->registry_auth_file;
    ip->insecure = c->insecure_registries.items;
    ip->n_insecure = c->insecure_registries.n;
    return 0;
}

static void discover_gpus(struct gt_gantlet *g)
{
    struct gt_err err = {0};
    if (g->cfg->fake_gpus) {
        if (gt_gpu_discover_fake(&g->gpus, g->cfg->fake_gpus, g->cfg->name, &err) < 0) {
            gt_log_error("bad --fake-gpus; no GPUs", "err=\"%s\"", err.msg);
        }
    } else if (gt_gpu_discover_nvml(&g->gpus, g->cfg->nvml_lib, &err) < 0) {
        gt_log_info("no GPUs: NVML unavailable", "err=\"%s\"", err.msg);
    }
    if (g->cfg->fake_gpu_counters && !g->cfg->fake_gpus) {
        gt_log_warn("--fake-gpu-counters without --fake-gpus: ignored", "dir=%s",
                    g->cfg->fake_gpu_counters);
    } else if (g->cfg->fake_gpu_counters) {
        gt_gpu_fake_counters(&g->gpus, g->cfg->fake_gpu_counters);
    }
    /* the first sample: a GPU failing already is registered Unhealthy */
    gt_gpu_sample_all(&g->gpus);
    for (size_t i = 0; i < g->gpus.n_gpus; i++) {
        if (!g->gpus.gpus[i].healthy) {
            gt_log_warn("GPU unhealthy at start", "gpu=%d uuid=%s", g->gpus.gpus[i].index,
                        g->gpus.gpus[i].uuid);
        }
    }
}

static int setup(struct gt_gantlet *g, struct gt_err *err)
{
    static const char *const fault_points[] = {GT_FP_SHIM_SPAWN, GT_FP_EXIT_BEFORE_REPORT, NULL};
    int rc = gt_faults_parse(&g->faults, g->cfg->fault_points, fault_points,
                             (uint64_t)gt_now_ns() ^ (uint64_t)getpid(), err);
    if (rc < 0) {
        gt_err_prefix(err, "--fault-points");
        return rc;
    }
    rc = gt_gantlet_token_read(g->cfg->token_file, &g->token, err);
    rc = rc < 0 ? rc : find_shim(g, err);
    if (rc < 0) {
        return rc;
    }
    snprintf(g->tasks_dir, sizeof(g->tasks_dir), "%s/tasks", g->cfg->run_dir);
    snprintf(g->data_dir, sizeof(g->data_dir), "%s/tasks", g->cfg->root);
    if ((rc = mkdirs(g->tasks_dir)) < 0 || (rc = mkdirs(g->data_dir)) < 0) {
        return gt_err_set(err, rc, "%s or %s: %s", g->tasks_dir, g->data_dir, strerror(-rc));
    }
    snprintf(g->venvs_dir, sizeof(g->venvs_dir), "%s/venvs", g->cfg->root);
    snprintf(g->caches_dir, sizeof(g->caches_dir), "%s/caches", g->cfg->root);
    if ((rc = mkdirs(g->venvs_dir)) < 0 || (rc = mkdirs(g->caches_dir)) < 0) {
        return gt_err_set(err, rc, "%s or %s: %s", g->venvs_dir, g->caches_dir, strerror(-rc));
    }
    snprintf(g->volumes_dir, sizeof(g->volumes_dir), "%s/volumes", g->cfg->run_dir);
    if ((rc = mkdirs(g->volumes_dir)) < 0) {
        return gt_err_set(err, rc, "%s: %s", g->volumes_dir, strerror(-rc));
    }
    if ((rc = image_setup(g, err)) < 0) {
        return rc;
    }
    struct gt_err cgerr = {0};
    if (g->cfg->cluster_interface) {
        snprintf(g->cluster_ifname, sizeof(g->cluster_ifname), "%s", g->cfg->cluster_interface);
    } else if (gt_netif_of_listen(g->cfg->listen, g->cluster_ifname, sizeof(g->cluster_ifname),
                                  &cgerr) < 0) {
        gt_log_warn("no cluster interface; tasks get no GLOO/NCCL_SOCKET_IFNAME", "err=\"%s\"",
                    cgerr.msg);
        gt_err_clear(&cgerr);
    }
    g->have_cgroups = gt_cgroup_sys_detect(&g->cgsys, &cgerr) == 0;
    if (!g->have_cgroups) {
        gt_log_warn("no cgroups; tasks cannot be killed as a whole", "err=\"%s\"", cgerr.msg);
    }
    if (gt_boot_id_read(g->cfg->boot_id_file, g->boot_id, sizeof(g->boot_id), &cgerr) < 0) {
        gt_log_warn("no boot id; a reboot is told only by the tasks' processes", "err=\"%s\"",
                    cgerr.msg);
        gt_err_clear(&cgerr);
    }
    discover_gpus(g);
    /* shims outlive a restart of the agent; as subreaper it inherits and reaps them */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    g->base = event_base_new();
    rc = gt_apic_new(g->base, g->cfg->server, g->token, &g->api, err);
    rc = rc < 0 ? rc : gt_gantlet_http_start(g, err);
    return rc;
}

int gt_gantlet_run(const struct gt_gantlet_config *cfg)
{
    struct gt_gantlet *g = gt_xcalloc(1, sizeof(*g));
    g->cfg = cfg;
    gt_strmap_init(&g->by_uid);
    gt_strmap_init(&g->tel);
    gt_strmap_init(&g->secrets);
    gt_gid_cache_init(&g->gids);
    gt_log_set_level((enum gt_log_level)cfg->log_level);
    signal(SIGPIPE, SIG_IGN);
    struct gt_err err = {0};
    int status = 1;
    if (setup(g, &err) < 0) {
        gt_log_error("gantlet cannot start", "err=\"%s\"", err.msg);
        goto out;
    }
    gt_gantlet_tasks_adopt(g);
    gt_gantlet_volumes_sweep(g);
    struct event *sigs[3];
    const int signums[3] = {SIGTERM, SIGINT, SIGCHLD};
    for (int i = 0; i < 3; i++) {
        sigs[i] = evsignal_new(g->base, signums[i], on_signal, g);
        evsignal_add(sigs[i], NULL);
    }
    g->heartbeat_ev = event_new(g->base, -1, EV_PERSIST, on_heartbeat, g);
    g->poll_ev = event_new(g->base, -1, EV_PERSIST, on_poll, g);
    g->rewatch_ev = evtimer_new(g->base, on_rewatch, g);
    g->gpu_ev = event_new(g->base, -1, EV_PERSIST, on_gpu_sample, g);
    g->tel_ev = event_new(g->base, -1, EV_PERSIST, on_telemetry, g);
    struct timeval hb = {cfg->heartbeat_s, 0}, poll = {0, POLL_MS * 1000},
                   tel = {TELEMETRY_MS / 1000, TELEMETRY_MS % 1000 * 1000};
    struct timeval sample = {cfg->gpu_sample_ms / 1000, (cfg->gpu_sample_ms % 1000) * 1000};
    event_add(g->heartbeat_ev, &hb);
    event_add(g->poll_ev, &poll);
    event_add(g->gpu_ev, &sample);
    event_add(g->tel_ev, &tel);
    gt_log_info("gantlet started", "node=%s server=%s listen=%s root=%s", cfg->name, cfg->server,
                g->agent_url, cfg->root);
    sync_now(g);
    event_base_dispatch(g->base);
    status = 0;
    gt_apic_stream_close(g->watch);
    for (int i = 0; i < 3; i++) {
        event_free(sigs[i]);
    }
    event_free(g->heartbeat_ev);
    event_free(g->poll_ev);
    event_free(g->rewatch_ev);
    event_free(g->gpu_ev);
    event_free(g->tel_ev);
out:
    gt_gantlet_exec_streams_free(g);
    if (g->http) {
        evhttp_free(g->http);
    }
    gt_apic_free(g->api);
    gt_gantlet_telemetry_free(g);
    gt_gantlet_secrets_free(g);
    gt_gantlet_tasks_free(g); /* frees the events of starting tasks: before their base */
    if (g->base) {
        event_base_free(g->base);
    }
    gt_gpu_set_fini(&g->gpus);
    gt_gid_cache_fini(&g->gids);
    free(g->token);
    gt_agent_registry_free(g);
    free(g);
    return status;
}
