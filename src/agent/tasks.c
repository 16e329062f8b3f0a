/*
 * gantlet's local tasks: one state directory RUN/tasks/<uid>/ per task
 * ever started here (the shim's files, see shim.h, plus the agent's own
 * task.json with the Task's name and project, and a `reported` marker once
 * gantryd holds its terminal status), and beside it on disk
 * ROOT/tasks/<uid>/ with the task's log files (task.log, task.log.1, ...,
 * mode 0600) and work/ (and an image task's rootfs). The state is a dozen small files written and
 * renamed per task: on tmpfs (RUN defaults to /run/gantlet) that costs far less than on a disk file
 * system, where each new inode is allocated for real; it lives as long as the machine is up, which
 * is as long as any task can run. The directory is created exactly once, before the shim starts, so
 * a task is never started twice, also across agent restarts; it goes when the Task object is gone
 * and no Task names it as its previous run (or when a task gantryd already failed is killed).
 * gt_task_decide says what to do; this file does it. Status writes are keyed by uid, so a task
 * removed while its write is in flight is simply not found when the answer comes. Each names its
 * run's uid: gantryd refuses the status of a run its Task no longer is (a restart or requeue
 * replaced it in place), and that run is then dropped as one whose Task is gone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "agent/agent_int.h"
#include "api/api.h"

extern char **environ;

/* An adopted task without a shim after this long never started. */
#define START_LOST_MS 10000
#define RETRY_MS 1000
/* How often a running task's shim is checked for life. */
#define SHIM_CHECK_MS 1000
/* A task that ends this soon after its start is reported once, started and
 * ended in one status write (as the kubelet's status manager coalesces
 * updates), instead of Running and then its exit: half the writes for
 * short tasks, at most this much later a Running for the others. */
#define RUNNING_REPORT_DELAY_MS 10

static bool file_exists(const char *dir, const char *name)
{
    char p[PATH_MAX + 200];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

struct gt_ltask *gt_gantlet_task_find(const struct gt_gantlet *g, const char *uid)
{
    return gt_strmap_get(&g->by_uid, uid);
}

/* The active list: every task but the quiet ones, which polls skip. */
static void active_link(struct gt_gantlet *g, struct gt_ltask *t)
{
    t->act_prev = NULL;
    t->act_next = g->active;
    if (g->active) {
        g->active->act_prev = t;
    }
    g->active = t;
}

static void active_unlink(struct gt_gantlet *g, struct gt_ltask *t)
{
    if (t->act_prev) {
        t->act_prev->act_next = t->act_next;
    } else {
        g->active = t->act_next;
    }
    if (t->act_next) {
        t->act_next->act_prev = t->act_prev;
    }
    t->act_prev = t->act_next = NULL;
}

/* Its Task object changed or went: polls look at it again. */
static void wake(struct gt_gantlet *g, struct gt_ltask *t)
{
    if (t->quiet) {
        t->quiet = false;
        active_link(g, t);
    }
}

static struct gt_ltask *task_add(struct gt_gantlet *g, const char *uid)
{
    struct gt_ltask *t = gt_xcalloc(1, sizeof(*t));
    /* uids are validated short strings */
    int n = snprintf(t->uid, sizeof(t->uid), "%s", uid);
    GT_ASSERT(n >= 0 && (size_t)n < sizeof(t->uid));
    t->dir = gt_xasprintf("%s/%s", g->tasks_dir, uid);
    t->data = gt_xasprintf("%s/%s", g->data_dir, uid);
    t->st.known = true;
    t->start_fd = -1;
    t->next = g->tasks;
    g->tasks = t;
    gt_strmap_put(&g->by_uid, t->uid, t);
    active_link(g, t);
    return t;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

static void start_fd_close(struct gt_ltask *t)
{
    if (t->start_ev) {
        event_free(t->start_ev);
        t->start_ev = NULL;
    }
    if (t->start_fd >= 0) {
        close(t->start_fd);
        t->start_fd = -1;
    }
}

/* A task's directory on disk, its image overlay (left mounted when the
 * shim died) and its scratch mounts unmounted first. */
static void data_remove(const char *data)
{
    char rootfs[PATH_MAX + 300];
    snprintf(rootfs, sizeof(rootfs), "%s/rootfs", data);
    umount2(rootfs, MNT_DETACH);
    gt_scratch_unmount(data);
    nftw(data, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* The task's exit is recorded by gantryd: said once, in its state
 * directory too, so a restarted agent does not report it again. */
static void mark_reported(struct gt_ltask *t)
{
    if (!t->st.reported) {
        t->st.reported = true;
        gt_agent_file_write_atomic(t->dir, "reported", "", 0, true, NULL);
    }
}

static void task_free(struct gt_ltask *t)
{
    start_fd_close(t);
    gt_api_task_free(t->obj);
    free(t->dir);
    free(t->data);
    free(t);
}

static void task_remove(struct gt_gantlet *g, struct gt_ltask *t)
{
    data_remove(t->data);
    nftw(t->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    gt_log_info("task state removed", "task=%s uid=%s", t->name, t->uid);
    for (struct gt_ltask **p = &g->tasks; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            break;
        }
    }
    gt_strmap_del(&g->by_uid, t->uid);
    if (!t->quiet) {
        active_unlink(g, t);
    }
    task_free(t);
}

void gt_gantlet_tasks_free(struct gt_gantlet *g)
{
    while (g->tasks) {
        struct gt_ltask *t = g->tasks;
        g->tasks = t->next;
        task_free(t);
    }
    g->active = NULL;
    gt_strmap_fini(&g->by_uid, NULL);
}

/* Record an end no shim recorded as the task's exit: a start that never
 * happened (exit code 127), or a task lost with its shim (137, as killed by
 * SIGKILL); reason may be NULL. */
static void exit_synthesize(struct gt_ltask *t, int exit_code, const char *reason, const char *why)
{
    struct gt_shim_exit ex = {.exit_code = exit_code,
                              .signal = exit_code > 128 ? exit_code - 128 : 0,
                              .finished_at_ms = gt_now_ms()};
    snprintf(ex.error, sizeof(ex.error), "%s", why);
    snprintf(ex.reason, sizeof(ex.reason), "%s", reason ? reason : "");
    char *text = gt_shim_exit_to_json(&ex);
    struct gt_err err = {0};
    if (gt_agent_file_write_atomic(t->dir, "exit.json", text, strlen(text), true, &err) < 0) {
        gt_log_error("cannot record a failed start", "task=%s err=\"%s\"", t->name, err.msg);
    }
    free(text);
    t->st.exited = true;
    gt_log_warn(exit_code == 127 ? "task did not start" : "task lost", "task=%s reason=\"%s\"",
                t->name, why);
}

/* The task's name and project, from its Task. */
static void task_names_set(struct gt_ltask *t, const struct gt_api_task *task)
{
    const struct gt_api_meta *m = &task->o.meta;
    snprintf(t->name, sizeof(t->name), "%s", m->name ? m->name : "");
    snprintf(t->project, sizeof(t->project), "%s", m->project ? m->project : "");
}

static void load_meta(struct gt_ltask *t)
{
    char p[PATH_MAX + 200], *text = NULL;
    size_t len;
    snprintf(p, sizeof(p), "%s/task.json", t->dir);
    if (gt_file_read(p, 65536, &text, &len, NULL) < 0) {
        return;
    }
    json_t *m = json_loadb(text, len, 0, NULL);
    free(text);
    const char *name = json_string_value(json_object_get(m, "name"));
    const char *project = json_string_value(json_object_get(m, "project"));
    snprintf(t->name, sizeof(t->name), "%s", name ? name : "");
    snprintf(t->project, sizeof(t->project), "%s", project ? project : "");
    t->gpus = (int)json_integer_value(json_object_get(m, "gpus"));
    const char *boot = json_string_value(json_object_get(m, "bootId"));
    snprintf(t->boot_id, sizeof(t->boot_id), "%s", boot ? boot : "");
    t->shim_ticks = (uint64_t)json_integer_value(json_object_get(m, "shimStartTicks"));
    t->task_ticks = (uint64_t)json_integer_value(json_object_get(m, "taskStartTicks"));
    json_decref(m);
}

static int write_meta(struct gt_ltask *t, struct gt_err *err);
static void cgroup_kill(struct gt_gantlet *g, const struct gt_ltask *t, bool remove);

/* A task that has not ended (adopted, or running): is it still running? A
 * stale one (the node rebooted, or its shim is gone, so nothing would record
 * its end) is ended as lost, anything left in its cgroup killed. */
static void lost_check(struct gt_gantlet *g, struct gt_ltask *t)
{
    char reason[32], msg[400];
    if (gt_task_ident_check(g, t, reason, sizeof(reason), msg, sizeof(msg))) {
        return;
    }
    cgroup_kill(g, t, true);
    exit_synthesize(t, 137, reason, msg);
}

void gt_gantlet_tasks_adopt(struct gt_gantlet *g)
{
    DIR *d = opendir(g->tasks_dir);
    if (!d) {
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || gt_gantlet_task_find(g, e->d_name)) {
            continue;
        }
        struct gt_ltask *t = task_add(g, e->d_name);
        load_meta(t);
        t->st.exited = file_exists(t->dir, "exit.json");
        t->st.reported = file_exists(t->dir, "reported");
        t->st.started = gt_shim_read_pid(t->dir, "task.pid", &t->host_pid, NULL) == 0;
        t->start_ms = gt_now_ms();
        if (!t->st.exited) {
            lost_check(g, t);
        }
        gt_log_info("task adopted", "task=%s uid=%s pid=%d exited=%d reported=%d", t->name, t->uid,
                    (int)t->host_pid, t->st.exited, t->st.reported);
    }
    closedir(d);
    /* a task's directory on disk without its state (gone with a reboot) */
    if (!(d = opendir(g->data_dir))) {
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.' && !gt_gantlet_task_find(g, e->d_name)) {
            char data[PATH_MAX + 260];
            snprintf(data, sizeof(data), "%s/%s", g->data_dir, e->d_name);
            gt_log_info("removing the files of a task with no state left", "dir=%s", data);
            data_remove(data);
        }
    }
    closedir(d);
}

/* ---- status writes ---- */

static void task_act(struct gt_gantlet *g, struct gt_ltask *t, unsigned a);
static bool task_gone(struct gt_gantlet *g, struct gt_ltask *t);
static void ask_previous(struct gt_gantlet *g);

struct put_ctx {
    struct gt_gantlet *g;
    char uid[128];
    unsigned action;
};

/* Is body gantryd's refusal of a status write for a run the Task no
 * longer is (write.c: a 409 naming metadata.uid, replaced in place by a
 * restart or requeue, or spec.nodeName, bound to no node)? */
static bool run_replaced(int status, const json_t *body)
{
    const char *field = json_string_value(gt_json_path(body, "details.field"));
    return status == 409 && field &&
           (!strcmp(field, "metadata.uid") || !strcmp(field, "spec.nodeName"));
}

static void put_done(int status, json_t *body, void *arg)
{
    struct put_ctx *k = arg;
    struct gt_gantlet *g = k->g;
    struct gt_ltask *t = gt_gantlet_task_find(g, k->uid);
    bool ok = status == 200 || status == 201;
    if (t && run_replaced(status, body)) {
        /* gantryd has no such run any more: dropped as a gone one (killed
         * if it still runs), not retried */
        gt_log_info("task status refused: the Task is another run now", "task=%s uid=%s", t->name,
                    t->uid);
        t->put_in_flight = false;
        t->seen = false;
        if (task_gone(g, t)) {
            ask_previous(g);
        }
        free(k);
        return;
    }
    if (t) {
        t->put_in_flight = false;
        if (ok && json_is_object(body)) {
            gt_api_task_free(t->obj);
            t->obj = gt_api_task_new(body);
        }
        if (k->action == GT_TA_REPORT_RUNNING && ok) {
            t->st.running_reported = true;
        } else if (k->action == GT_TA_REPORT_EXIT && (ok || status == 409 || status == 404)) {
            /* 409: the status is already terminal; 404: the Task is gone.
             * The watch may have brought the terminal Task first (marked). */
            mark_reported(t);
        } else if (!ok) {
            t->retry_at_ms = gt_mono_ms() + RETRY_MS;
        }
    }
    if (!ok) {
        gt_log_warn("task status write failed", "uid=%s status=%d message=\"%s\"", k->uid, status,
                    gt_apic_message(body));
    }
    free(k);
    /* an exit found while this write was in flight is reported now, not at
     * the next poll */
    if (t && ok && t->obj && (gt_task_decide(&t->st, t->obj) & GT_TA_REPORT_EXIT)) {
        task_act(g, t, GT_TA_REPORT_EXIT);
    }
}

static void put_status(struct gt_gantlet *g, struct gt_ltask *t, json_t *status, unsigned action)
{
    /* the uid: gantryd refuses the status of a run the Task no longer is */
    json_t *body = json_pack("{s:{s:s}, s:o}", "metadata", "uid", t->uid, "status", status);
    char *path =
        gt_xasprintf("/apis/gantry.dev/v1/projects/%s/tasks/%s/status", t->project, t->name);
    struct put_ctx *k = gt_xcalloc(1, sizeof(*k));
    k->g = g;
    k->action = action;
    snprintf(k->uid, sizeof(k->uid), "%s", t->uid);
    t->put_in_flight = true;
    gt_apic_request(g->api, EVHTTP_REQ_PUT, path, body, put_done, k);
    free(path);
    json_decref(body);
}

/* The status of a Task as gantryd sent it (borrowed; NULL when none): a
 * status write starts from it, so the fields others set are kept. */
static const json_t *status_json(const struct gt_api_task *task)
{
    return task ? json_object_get(task->o.json, "status") : NULL;
}

static json_t *status_copy(const struct gt_api_task *task)
{
    const json_t *st = status_json(task);
    return json_is_object(st) ? json_deep_copy(st) : json_object();
}

static void report_running(struct gt_gantlet *g, struct gt_ltask *t)
{
    json_t *st = status_copy(t->obj);
    char ts[32], p[PATH_MAX + 200], *text = NULL;
    size_t len;
    int64_t started = t->start_ms;
    snprintf(p, sizeof(p), "%s/started", t->dir);
    if (gt_file_read(p, 64, &text, &len, NULL) == 0) {
        started = strtoll(text, NULL, 10);
        free(text);
    }
    json_object_set_new(st, "phase", json_string("Running"));
    json_object_set_new(st, "startTime", json_string(gt_time_format(started, ts, sizeof(ts))));
    json_object_set_new(st, "hostPid", json_integer(t->host_pid));
    put_status(g, t, st, GT_TA_REPORT_RUNNING);
}

static void report_exit(struct gt_gantlet *g, struct gt_ltask *t)
{
    struct gt_shim_exit ex;
    struct gt_err err = {0};
    if (gt_fault_hit(&g->faults, GT_FP_EXIT_BEFORE_REPORT) == GT_FAULT_FAIL) {
        gt_err_set(&err, GT_EINTERNAL, "fault point %s", GT_FP_EXIT_BEFORE_REPORT);
    }
    if (err.code || gt_shim_exit_read(t->dir, &ex, &err) < 0) {
        gt_log_error("cannot read the exit record", "task=%s err=\"%s\"", t->name, err.msg);
        t->retry_at_ms = gt_mono_ms() + RETRY_MS;
        return;
    }
    json_t *st = gt_task_exit_status(status_json(t->obj), &ex);
    gt_log_info("task exited", "task=%s uid=%s exit=%d reason=%s", t->name, t->uid, ex.exit_code,
                json_string_value(json_object_get(st, "reason")));
    put_status(g, t, st, GT_TA_REPORT_EXIT);
}

/* ---- start, stop, kill ---- */

/* task.json: the task's name, project and GPUs, and what identifies its
 * run (taskident.c): the boot id and the start times of shim and task. */
static int write_meta(struct gt_ltask *t, struct gt_err *err)
{
    json_t *m = json_pack("{s:s, s:s, s:I, s:s, s:I, s:I}", "name", t->name, "project", t->project,
                          "gpus", (json_int_t)t->gpus, "bootId", t->boot_id, "shimStartTicks",
                          (json_int_t)t->shim_ticks, "taskStartTicks", (json_int_t)t->task_ticks);
    char *text = gt_json_dumps(m);
    json_decref(m);
    /* not synced (nor is the state directory): a crash of the machine ends
     * the shim too (its boot id then tells), and an adopted task without a
     * name takes it from the list */
    int rc = gt_agent_file_write_atomic(t->dir, "task.json", text, strlen(text), false, err);
    free(text);
    return rc;
}

/* An MPI launcher's DATA/mpi (mounted at GT_MPI_DIR): the hostfile as
 * gantryd wrote it and discover_hosts.sh, which prints it as Horovod's
 * elastic mode reads it ("HOST:SLOTS" lines), as the training operator's
 * does. */
static int write_mpi_files(const char *data, const char *hostfile, struct gt_err *err)
{
    char *dir = gt_xasprintf("%s/mpi", data);
    struct gt_buf sh;
    gt_buf_init(&sh);
    gt_buf_puts(&sh, "#!/bin/sh\n");
    for (const char *l = hostfile; *l;) {
        size_t n = strcspn(l, "\n");
        const char *slots = memmem(l, n, " slots=", 7);
        if (n > 0) {
            gt_buf_printf(&sh, "echo %.*s:%.*s\n", (int)(slots ? slots - l : (long)n), l,
                          (int)(slots ? n - (size_t)(slots + 7 - l) : 0), slots ? slots + 7 : "");
        }
        l += n + (l[n] == '\n');
    }
    int rc = 0;
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        rc = gt_err_set(err, -errno, "%s: %s", dir, strerror(errno));
    }
    rc = rc < 0
             ? rc
             : gt_agent_file_write_atomic(dir, "hostfile", hostfile, strlen(hostfile), false, err);
    rc = rc < 0 ? rc
                : gt_agent_file_write_atomic(dir, "discover_hosts.sh", sh.data, sh.len, false, err);
    char *script = gt_xasprintf("%s/discover_hosts.sh", dir);
    if (rc == 0 && chmod(script, 0755) < 0) {
        rc = gt_err_set(err, -errno, "%s: %s", script, strerror(errno));
    }
    free(script);
    gt_buf_fini(&sh);
    free(dir);
    return rc;
}

/* Refuse early what the shim would refuse: a volume escaping its root. */
static int check_volumes(const struct gt_shim_spec *spec, struct gt_err *err)
{
    for (size_t i = 0; i < spec->n_volumes; i++) {
        int fd;
        int rc = gt_volume_open(spec->volumes[i].root, spec->volumes[i].path, &fd, err);
        if (rc < 0) {
            gt_err_prefix(err, "volume at %s", spec->volumes[i].mount_path);
            return rc;
        }
        close(fd);
    }
    return 0;
}

/* A directory of the task user's own (mode 0700): its venvs, VENVS/<uid>
 * (a cached environment is only ever used by the user who built it), and a
 * rootless task's cache, CACHES/<uid>. NULL dir: nothing to make. */
static int make_user_dir(const struct gt_shim_spec *spec, const char *dir, struct gt_err *err)
{
    if (!dir) {
        return 0;
    }
    if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || chown(dir, spec->uid, spec->gid) < 0 ||
        chmod(dir, 0700) < 0) {
        return gt_err_set(err, -errno, "directory %s: %s", dir, strerror(errno));
    }
    return 0;
}

/* Mount the disk image of every Volume the task uses (gt_volume_attach). */
static int attach_volumes(struct gt_gantlet *g, const struct gt_api_task *task, struct gt_err *err)
{
    const struct gt_api_volumes *vols = &task->spec.volumes;
    for (size_t i = 0; i < vols->n; i++) {
        if (!vols->v[i].image) {
            continue;
        }
        int rc =
            gt_volume_attach(g->volumes_dir, g->cfg->storage_roots.items, g->cfg->storage_roots.n,
                             vols->v[i].image, vols->v[i].read_only, err);
        if (rc < 0) {
            gt_err_prefix(err, "volume %s", vols->v[i].volume);
            return rc;
        }
    }
    return 0;
}

/* Does a task of g that has not ended use the image mounted as id? A
 * task adopted but not seen from gantryd yet might: its mounts stay (a
 * second mount of the same image would be a second file system on it). */
static bool image_in_use(const char *id, void *arg)
{
    struct gt_gantlet *g = arg;
    char mnt[PATH_MAX];
    for (struct gt_ltask *t = g->tasks; t; t = t->next) {
        if (!t->st.exited && !t->obj) {
            return true;
        }
        for (size_t i = 0; !t->st.exited && t->obj && i < t->obj->spec.volumes.n; i++) {
            const char *image = t->obj->spec.volumes.v[i].image;
            if (image) {
                gt_volume_mountpoint("", image, mnt, sizeof(mnt));
                if (!strcmp(mnt + 1, id)) {
                    return true;
                }
            }
        }
    }
    return false;
}

void gt_gantlet_volumes_sweep(struct gt_gantlet *g)
{
    gt_volume_sweep(g->volumes_dir, image_in_use, g);
}

static int prepare(struct gt_gantlet *g, struct gt_ltask *t, const json_t *secrets,
                   struct gt_err *err)
{
    struct gt_task_spec_params p = {.state_dir = t->dir,
                                    .data_dir = t->data,
                                    .gpus = &g->gpus,
                                    .log_max_bytes = g->cfg->log_max_bytes,
                                    .log_keep_files = 3,
                                    .storage_roots = g->cfg->storage_roots.items,
                                    .n_storage_roots = g->cfg->storage_roots.n,
                                    .venv_root = g->venvs_dir,
                                    .cache_root = g->caches_dir,
                                    .cluster_ifname = g->cluster_ifname,
                                    .image = &g->image,
                                    .gids = &g->gids,
                                    .volumes_dir = g->volumes_dir,
                                    .secrets = secrets,
                                    .mpi_rsh_bin = g->mpi_rsh_bin,
                                    .server_url = g->cfg->server,
                                    .node_token = g->token,
                                    .cgsys = g->have_cgroups ? &g->cgsys : NULL};
    struct gt_shim_spec spec;
    int rc = attach_volumes(g, t->obj, err);
    if (rc < 0) {
        return rc;
    }
    rc = gt_task_spec_build(t->obj, &p, &spec, err);
    const char *hostfile = gt_task_mpi_hostfile(t->obj);
    rc = rc < 0 || !hostfile ? rc : write_mpi_files(t->data, hostfile, err);
    struct gt_api_effective eff;
    gt_api_resources_effective(&t->obj->spec.template.resources, &eff);
    rc = rc < 0 ? rc
                : gt_scratch_make(t->data, &t->obj->spec.volumes, spec.uid, spec.gid, &eff, err);
    rc = rc < 0 ? rc : check_volumes(&spec, err);
    if (rc < 0) {
        gt_shim_spec_fini(&spec); /* a failed build left it zeroed */
        return rc;
    }
    char *cache = gt_task_cache_dir(g->caches_dir, &spec);
    rc = make_user_dir(&spec, spec.venv_dir, err);
    rc = rc < 0 ? rc : make_user_dir(&spec, cache, err);
    free(cache);
    if (rc == 0 && !t->obj->spec.template.working_dir) {
        if ((mkdir(spec.cwd, 0700) < 0 && errno != EEXIST) ||
            chown(spec.cwd, spec.uid, spec.gid) < 0) {
            rc = gt_err_set(err, -errno, "working directory %s: %s", spec.cwd, strerror(errno));
        }
    }
    if (rc == 0) {
        char *text = gt_shim_spec_to_json(&spec);
        /* read once by the shim started next; nothing needs it after a
         * crash. Only root reads it: it may hold the task's secrets. */
        rc = gt_agent_file_write_private(t->dir, "spec.json", text, strlen(text), err);
        explicit_bzero(text, strlen(text));
        free(text);
    }
    gt_shim_spec_fini(&spec);
    return rc;
}

static void started_cb(evutil_socket_t fd, short what, void *arg);

/* Start the task's shim as a session leader with the write end of a pipe
 * on fd 3 (--status-fd 3); the shim writes one byte on it once the task
 * runs or its failure to start is recorded, and end of file without it
 * means the shim died first (started_cb). No double fork: the shim is
 * this agent's child and outlives it in its own session. */
static int spawn_shim(struct gt_gantlet *g, struct gt_ltask *t)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        return -errno;
    }
    char *argv[] = {g->shim, "--status-fd", "3", "--state-dir", t->dir, NULL};
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t fa;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 3);
    pid_t pid;
    int rc = posix_spawn(&pid, g->shim, &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        return -rc;
    }
    gt_proc_start_ticks(pid, &t->shim_ticks); /* not reaped before the next poll */
    t->start_fd = p[0];
    t->start_ev = event_new(g->base, p[0], EV_READ, started_cb, g);
    event_add(t->start_ev, NULL);
    return 0;
}

void gt_gantlet_task_start(struct gt_gantlet *g, struct gt_api_task *task, const json_t *secrets,
                           const char *fail)
{
    const char *uid = task->o.meta.uid;
    char dir[PATH_MAX + 160];
    snprintf(dir, sizeof(dir), "%s/%s", g->tasks_dir, uid);
    /* the state directory is the start's one-time token */
    if (mkdir(dir, 0711) < 0) {
        gt_log_error("cannot create the task state directory", "uid=%s err=\"%s\"", uid,
                     strerror(errno));
        gt_api_task_free(task);
        return;
    }
    struct gt_ltask *t = task_add(g, uid);
    if (mkdir(t->data, 0711) < 0 && errno != EEXIST) {
        gt_log_error("cannot create the task directory", "dir=%s err=\"%s\"", t->data,
                     strerror(errno));
    }
    task_names_set(t, task);
    t->gpus = (int)task->spec.gpus.n;
    t->obj = task;
    t->start_ms = gt_now_ms();
    t->seen = true;
    snprintf(t->boot_id, sizeof(t->boot_id), "%s", g->boot_id);
    struct gt_err err = {0};
    if (fail) {
        write_meta(t, NULL);
        exit_synthesize(t, 127, "SecretUnavailable", fail);
        return;
    }
    if (write_meta(t, &err) < 0 || prepare(g, t, secrets, &err) < 0) {
        exit_synthesize(t, 127, err.code == GT_EFORBIDDEN ? "VolumeDenied" : NULL, err.msg);
        return;
    }
    if (gt_fault_hit(&g->faults, GT_FP_SHIM_SPAWN) == GT_FAULT_FAIL || spawn_shim(g, t) < 0) {
        exit_synthesize(t, 127, NULL, "cannot run gantry-shim");
        return;
    }
    g->starts_total++;
    gt_log_info("task starting", "task=%s uid=%s gpus=%d", t->name, t->uid, t->gpus);
}

static void task_stop(struct gt_ltask *t)
{
    const char *reason = t->obj->spec.stop.reason;
    int64_t grace_ms = gt_task_stop_grace_ms(t->obj);
    struct gt_err err = {0};
    t->st.stop_sent = true;
    if (gt_shim_stop(t->dir, reason ? reason : "Deleted", grace_ms, &err) < 0) {
        gt_log_warn("cannot stop the task", "task=%s err=\"%s\"", t->name, err.msg);
    } else {
        gt_log_info("task stopping", "task=%s reason=%s grace_ms=%lld", t->name,
                    reason ? reason : "Deleted", (long long)grace_ms);
    }
}

/* SIGKILL everything in the task's cgroup; with remove, remove it too
 * (what its shim would have done). */
static void cgroup_kill(struct gt_gantlet *g, const struct gt_ltask *t, bool remove)
{
    if (!g->have_cgroups) {
        return;
    }
    struct gt_err err = {0};
    struct gt_cgroup cg;
    char rel[200];
    snprintf(rel, sizeof(rel), "gantry/%s", t->uid);
    if (gt_cgroup_init(&cg, &g->cgsys, rel, &err) == 0 &&
        (gt_cgroup_kill_all(&cg, &err) < 0 || (remove && gt_cgroup_remove(&cg, &err) < 0))) {
        gt_log_error("cannot kill the task's cgroup", "task=%s err=\"%s\"", t->name, err.msg);
    }
    gt_cgroup_fini(&cg);
}

/* Kill a task gantryd no longer wants here (gone, or failed as NodeLost):
 * everything in its cgroup now, then its state goes once the shim has
 * recorded the exit. */
static void task_kill(struct gt_gantlet *g, struct gt_ltask *t)
{
    t->st.killing = true;
    gt_log_info("killing a task gantryd no longer runs here", "task=%s uid=%s", t->name, t->uid);
    gt_shim_stop(t->dir, "NodeLost", 0, NULL);
    cgroup_kill(g, t, false);
    pid_t shim;
    if (!file_exists(t->dir, "exit.json") &&
        (gt_shim_read_pid(t->dir, "shim.pid", &shim, NULL) < 0 || kill(shim, 0) < 0)) {
        t->st.exited = true; /* no shim left to record it */
    }
}

static void report_unstarted(struct gt_gantlet *g, const struct gt_api_task *task)
{
    struct gt_ltask tmp = {0};
    snprintf(tmp.uid, sizeof(tmp.uid), "%s", task->o.meta.uid);
    task_names_set(&tmp, task);
    json_t *st = status_copy(task);
    char ts[32];
    json_object_set_new(st, "phase", json_string("Failed"));
    json_object_set_new(st, "reason", json_string(gt_task_stop_reason(task->spec.stop.reason)));
    json_object_set_new(st, "finishTime", json_string(gt_time_format(gt_now_ms(), ts, sizeof(ts))));
    put_status(g, &tmp, st, GT_TA_REPORT_UNSTARTED);
}

static void poll_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    gt_gantlet_tasks_poll(arg);
}

/* Apply gt_task_decide's actions to a known task (those for an unknown
 * one are task_observe's); t may be freed (GT_TA_REMOVE). */
static void task_act(struct gt_gantlet *g, struct gt_ltask *t, unsigned a)
{
    if (a & GT_TA_KILL) {
        task_kill(g, t);
    }
    if (a & GT_TA_STOP) {
        task_stop(t);
    }
    if (a & GT_TA_MARK_REPORTED) {
        mark_reported(t);
    }
    bool can_put = !t->put_in_flight && gt_mono_ms() >= t->retry_at_ms;
    if ((a & GT_TA_REPORT_EXIT) && can_put) {
        report_exit(g, t);
        gt_gantlet_volumes_sweep(g);
    } else if ((a & GT_TA_REPORT_RUNNING) && can_put) {
        int64_t wait_ms = t->started_mono_ms + RUNNING_REPORT_DELAY_MS - gt_mono_ms();
        if (wait_ms > 0) {
            struct timeval tv = {0, (suseconds_t)wait_ms * 1000};
            event_base_once(g->base, -1, EV_TIMEOUT, poll_cb, g, &tv);
        } else {
            report_running(g, t);
        }
    }
    if ((a & GT_TA_REMOVE) && !t->put_in_flight) {
        task_remove(g, t);
    }
}

void gt_gantlet_task_observe(struct gt_gantlet *g, struct gt_api_task *task, bool deleted)
{
    const char *uid = task->o.meta.uid;
    if (!uid || strchr(uid, '/') || !strcmp(uid, ".") || !strcmp(uid, "..")) {
        gt_api_task_free(task);
        return;
    }
    struct gt_ltask *t = gt_gantlet_task_find(g, uid);
    struct gt_task_local none = {0};
    unsigned a = gt_task_decide(t ? &t->st : &none, deleted ? NULL : task);
    if (!t && (a & GT_TA_START) && gt_task_needs_secrets(task)) {
        gt_gantlet_secrets_fetch(g, task, gt_gantlet_task_start); /* started once they come */
        return;
    }
    if (!t && (a & GT_TA_START)) {
        gt_gantlet_task_start(g, task, NULL, NULL);
        return;
    }
    if (!t) {
        gt_gantlet_secrets_forget(g, uid); /* gone, or not to be started any more */
    }
    if (!t && (a & GT_TA_REPORT_UNSTARTED)) {
        report_unstarted(g, task);
    }
    if (t) {
        t->seen = true;
        wake(g, t);
        if (!t->name[0]) {
            task_names_set(t, task);
        }
        if (!deleted) {
            gt_api_task_free(t->obj);
            t->obj = task;
            task = NULL;
        }
        task_act(g, t, a);
    }
    gt_api_task_free(task);
}

/* metadata.resourceVersion of a Task as a number; 0 when absent. */
static int64_t task_rev(const struct gt_api_task *task)
{
    const char *rv = task ? task->o.meta.resource_version : NULL;
    return rv ? strtoll(rv, NULL, 10) : 0;
}

void gt_gantlet_task_listed(struct gt_gantlet *g, struct gt_api_task *task, int64_t watch_rev)
{
    const char *uid = task->o.meta.uid;
    struct gt_ltask *t = uid ? gt_gantlet_task_find(g, uid) : NULL;
    int64_t rev = task_rev(task);
    struct gt_task_local none = {0};
    if (t && task_rev(t->obj) > rev) {
        t->seen = true; /* the watch already brought a newer version */
        gt_api_task_free(task);
    } else if (!t && rev <= watch_rev && (gt_task_decide(&none, task) & GT_TA_START)) {
        /* the watch brought this version or a newer one and the task is gone
         * again (deleted, or removed after its exit): never start it twice */
        gt_api_task_free(task);
    } else {
        gt_gantlet_task_observe(g, task, false);
    }
}

void gt_gantlet_tasks_unsee(struct gt_gantlet *g)
{
    for (struct gt_ltask *t = g->tasks; t; t = t->next) {
        t->seen = false;
    }
}

/* The answer to the list of Tasks whose previous run was on this node:
 * the state of a gone, exited task none of them names goes now. */
static void previous_listed(int status, json_t *body, void *arg)
{
    struct gt_gantlet *g = arg;
    json_t *items = json_object_get(body, "items");
    if (status != 200 || !json_is_array(items)) {
        gt_log_warn("cannot list the tasks restarted from this node", "status=%d", status);
        return; /* keep the states; the next list asks again */
    }
    size_t n = json_array_size(items);
    struct gt_api_task **tasks = gt_xcalloc(n + 1, sizeof(*tasks));
    for (size_t i = 0; i < n; i++) {
        tasks[i] = gt_api_task_new(json_array_get(items, i));
    }
    struct gt_ltask *t = g->tasks;
    while (t) {
        struct gt_ltask *next = t->next;
        /* still gone (no watch event since) and not being killed */
        if (!t->seen && !t->obj && !t->st.killing && t->st.exited &&
            !gt_task_previous_kept(t->uid, tasks, n)) {
            task_act(g, t, GT_TA_REMOVE);
        }
        t = next;
    }
    for (size_t i = 0; i < n; i++) {
        gt_api_task_free(tasks[i]);
    }
    free(tasks);
}

/* Ask gantryd which Tasks name a run of this node as their previous one
 * (previous_listed removes the state of the others). */
static void ask_previous(struct gt_gantlet *g)
{
    char *path = gt_xasprintf(
        GT_API_GROUP_PREFIX "/tasks?fieldSelector=status.previous.nodeName%%3D%s", g->cfg->name);
    gt_apic_request(g->api, EVHTTP_REQ_GET, path, NULL, previous_listed, g);
    free(path);
}

/* t's Task object is gone, or is another run now: forget what gantryd sent
 * of it and do what its absence says (kill a live run; remove a killed
 * one's state once it exited). A finished run's state is kept while a
 * restarted Task may name it as its previous run: true then, and the
 * caller asks (ask_previous). */
static bool task_gone(struct gt_gantlet *g, struct gt_ltask *t)
{
    gt_api_task_free(t->obj);
    t->obj = NULL;
    wake(g, t);
    unsigned a = gt_task_decide(&t->st, NULL);
    bool ask = false;
    if ((a & GT_TA_REMOVE) && !t->st.killing) {
        /* a restart replaces a Task in place: its old run may be wanted */
        a &= ~(unsigned)GT_TA_REMOVE;
        ask = true;
    }
    task_act(g, t, a);
    return ask;
}

void gt_gantlet_tasks_gone(struct gt_gantlet *g, int64_t list_rev)
{
    bool ask = false;
    struct gt_ltask *t = g->tasks;
    while (t) {
        struct gt_ltask *next = t->next;
        /* a task the watch brought after the list was taken is not gone */
        if (!t->seen && task_rev(t->obj) <= list_rev) {
            ask |= task_gone(g, t);
        }
        t = next;
    }
    if (ask) {
        ask_previous(g);
    }
}

/* ---- exits ---- */

/* The shim's start report (one byte) or its end of file. */
static void started_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct gt_gantlet *g = arg;
    struct gt_ltask *t = g->active; /* a starting task is not quiet */
    while (t && t->start_fd != fd) {
        t = t->act_next;
    }
    if (!t) {
        return;
    }
    char c;
    ssize_t n;
    while ((n = read(fd, &c, 1)) < 0 && errno == EINTR) {
    }
    start_fd_close(t);
    if (gt_shim_read_pid(t->dir, "task.pid", &t->host_pid, NULL) == 0) {
        t->st.started = true;
        t->started_mono_ms = gt_mono_ms();
        gt_proc_start_ticks(t->host_pid, &t->task_ticks); /* 0 when it is gone already */
        write_meta(t, NULL);
    } else if (!file_exists(t->dir, "exit.json")) {
        /* the shim may have died after starting the task: none may outlive it */
        cgroup_kill(g, t, true);
        exit_synthesize(t, 127, NULL,
                        n == 1 ? "gantry-shim started no task"
                               : "gantry-shim failed (see shim.log)");
    }
    gt_gantlet_tasks_poll(g);
}

void gt_gantlet_tasks_poll(struct gt_gantlet *g)
{
    /* shims are this agent's children, or re-parented here (child
     * subreaper) after a restart: reap them all */
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    struct gt_ltask *t = g->active;
    while (t) {
        struct gt_ltask *next = t->act_next;
        if (!t->st.exited && t->start_fd < 0) {
            t->st.exited = file_exists(t->dir, "exit.json");
            if (t->st.started && !t->st.exited && gt_mono_ms() >= t->shim_check_ms) {
                t->shim_check_ms = gt_mono_ms() + SHIM_CHECK_MS;
                lost_check(g, t);
            }
            if (!t->st.started && !t->st.exited) {
                t->st.started = gt_shim_read_pid(t->dir, "task.pid", &t->host_pid, NULL) == 0;
                if (!t->st.started && !file_exists(t->dir, "shim.pid") &&
                    gt_now_ms() - t->start_ms > START_LOST_MS) {
                    exit_synthesize(t, 127, NULL, "the agent restarted while starting the task");
                }
            }
        }
        if (t->obj) {
            gt_gantlet_task_events(g, t);
        }
        /* act only on tasks whose Task object was seen (adopted ones wait for the list) */
        if (t->obj || t->st.killing) {
            unsigned a = gt_task_decide(&t->st, t->obj);
            /* ended and told: nothing changes until its Task object does */
            if (!a && t->obj && t->st.exited && t->events_done && !t->st.killing) {
                t->quiet = true;
                active_unlink(g, t);
            }
            task_act(g, t, a);
        }
        t = next;
    }
}

void gt_gantlet_tasks_count(const struct gt_gantlet *g, int *running, int *gpus)
{
    *running = 0;
    *gpus = 0;
    for (const struct gt_ltask *t = g->tasks; t; t = t->next) {
        if (!t->st.exited) {
            ++*running;
            *gpus += t->gpus;
        }
    }
}
