/*
 * Telemetry of the running tasks, reported to gantryd once a second in one
 * batch per node (POST nodes/NODE/telemetry, docs/api.md "Telemetry"):
 * each task's cpu (milli-CPUs over the last interval) and memory working
 * set from its cgroup (gt_cgroup_stats), and the new scalars of its TensorBoard event files
 * (spec.tensorboard.logDir), read as they are written (tfevents.h).
 *
 * A task's state here (struct ltel, by Task uid) lives while the task is
 * started and not yet reported terminal; after its exit its files are read
 * once more so that the last scalars written before the exit are sent.
 * Bounded: at most TEL_FILES_MAX event files per task, TEL_READ_MAX bytes
 * per file per round and TEL_PENDING_MAX scalars waiting per task (further
 * ones are dropped and counted); a report carries at most TEL_SEND_MAX
 * scalars of a task and TEL_REPORT_SCALARS_MAX in all, the rest wait. One report is in flight at a
 * time; a round that finds one still in flight is skipped (its scalars wait). A report that fails
 * is not sent again: telemetry is not durable.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/agent_int.h"
#include "agent/tfevents.h"

#define TEL_FILES_MAX 64
#define TEL_READ_MAX (4u << 20)
#define TEL_PENDING_MAX 10000
#define TEL_TAG_MAX 256 /* gantryd's longest tag (GT_TEL_TAG_MAX_LEN) */
/* Scalars per task and per report in one round: a report stays well under
 * gantryd's --max-body-bytes (3 MiB by default; about 100 bytes a scalar). */
#define TEL_SEND_MAX 2000
#define TEL_REPORT_SCALARS_MAX 20000

struct tel_file {
    struct gt_tfev_file f;
    char *run; /* its directory below logDir ("" for logDir itself) */
};

struct ltel {
    char log_dir[PATH_MAX]; /* "" when the task has none */
    bool warned;            /* the log directory's problem was logged */
    struct tel_file *files;
    size_t n_files;
    json_t *pending; /* scalars not yet sent */
    int64_t n_dropped;
    int64_t prev_cpu_ns, prev_ms; /* the last cgroup reading (wall clock) */
    bool seen;                    /* in this round */
};

static void ltel_free(void *p)
{
    struct ltel *t = p;
    if (!t) {
        return;
    }
    for (size_t i = 0; i < t->n_files; i++) {
        gt_tfev_file_fini(&t->files[i].f);
        free(t->files[i].run);
    }
    free(t->files);
    json_decref(t->pending);
    free(t);
}

/* Does path start with the directory dir (a whole-component prefix)? *rest
 * gets what follows it (without the slash). */
static bool beneath(const char *path, const char *dir, const char **rest)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') {
        n--;
    }
    if (strncmp(path, dir, n) != 0 || (path[n] != '\0' && path[n] != '/')) {
        return false;
    }
    *rest = path[n] == '/' ? path + n + 1 : path + n;
    return true;
}

int gt_tel_log_dir_host(const struct gt_api_task *task, const char *data_dir, char *buf, size_t len,
                        struct gt_err *err)
{
    const struct gt_api_task_spec *ts = &task->spec;
    const char *dir = ts->tensorboard.log_dir;
    const char *wd = ts->template.working_dir;
    char abs[PATH_MAX];
    if (dir[0] != '/') {
        if (!wd && ts->template.image) {
            return gt_err_set(err, GT_EINVAL,
                              "spec.tensorboard.logDir %s: relative, and the image's working "
                              "directory is not on the node",
                              dir);
        }
        int n = wd ? snprintf(abs, sizeof(abs), "%s/%s", wd, dir)
                   : snprintf(abs, sizeof(abs), "%s/work/%s", data_dir, dir);
        if (n < 0 || (size_t)n >= sizeof(abs)) {
            return gt_err_set(err, GT_EINVAL, "spec.tensorboard.logDir: too long");
        }
        dir = abs;
    }
    for (size_t i = 0; i < ts->template.volume_mounts.n; i++) {
        const struct gt_api_mount *m = &ts->template.volume_mounts.v[i];
        const struct gt_api_volume *vol = gt_task_volume_named(&ts->volumes, m->name);
        const char *rest;
        if (vol && vol->host_path && m->mount_path && beneath(dir, m->mount_path, &rest)) {
            int n = snprintf(buf, len, "%s%s%s", vol->host_path, *rest ? "/" : "", rest);
            return n < 0 || (size_t)n >= len ? gt_err_set(err, GT_EINVAL, "logDir: too long") : 0;
        }
    }
    /* a task on the node's own filesystem: its working directory is the node's */
    const char *rest;
    const char *work = wd ? wd : NULL;
    char data_work[PATH_MAX];
    if (!work) {
        snprintf(data_work, sizeof(data_work), "%s/work", data_dir);
        work = data_work;
    }
    if (ts->template.image || !beneath(dir, work, &rest)) {
        return gt_err_set(err, GT_EFORBIDDEN,
                          "spec.tensorboard.logDir %s: neither in a volume nor in the task's "
                          "working directory",
                          ts->tensorboard.log_dir);
    }
    int n = snprintf(buf, len, "%s", dir);
    return n < 0 || (size_t)n >= len ? gt_err_set(err, GT_EINVAL, "logDir: too long") : 0;
}

static bool has_file(const struct ltel *t, const char *path)
{
    for (size_t i = 0; i < t->n_files; i++) {
        if (!strcmp(t->files[i].f.path, path)) {
            return true;
        }
    }
    return false;
}

/* Follow the event files in dir (run: its name below logDir) not yet
 * followed; with depth > 0 also those of its subdirectories. */
static void scan_dir(struct ltel *t, const char *dir, const char *run, int depth)
{
    DIR *d = opendir(dir);
    if (!d) {
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL && t->n_files < TEL_FILES_MAX) {
        if (e->d_name[0] == '.') {
            continue;
        }
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path)) {
            continue;
        }
        struct stat sb;
        if (stat(path, &sb) != 0) {
            continue;
        }
        if (S_ISDIR(sb.st_mode) && depth > 0) {
            scan_dir(t, path, e->d_name, depth - 1);
        } else if (S_ISREG(sb.st_mode) && strstr(e->d_name, "tfevents") && !has_file(t, path)) {
            t->files = gt_xrealloc(t->files, (t->n_files + 1) * sizeof(*t->files));
            struct tel_file *f = &t->files[t->n_files++];
            gt_tfev_file_init(&f->f, path);
            f->run = gt_xstrdup(run);
        }
    }
    closedir(d);
}

/* Read what the task's event files gained into t->pending. */
static void read_scalars(struct ltel *t)
{
    scan_dir(t, t->log_dir, "", 1);
    for (size_t i = 0; i < t->n_files; i++) {
        struct tel_file *f = &t->files[i];
        struct gt_tfev_points pts = {0};
        struct gt_err err = {0};
        if (gt_tfev_file_poll(&f->f, TEL_READ_MAX, &pts, &err) < 0) {
            gt_log_debug("event file not read", "err=\"%s\"", err.msg);
        }
        for (size_t k = 0; k < pts.n; k++) {
            if (json_array_size(t->pending) >= TEL_PENDING_MAX) {
                t->n_dropped += (int64_t)(pts.n - k);
                break;
            }
            const struct gt_tfev_point *p = &pts.v[k];
            char tag[TEL_TAG_MAX + 1];
            snprintf(tag, sizeof(tag), "%s%s%s", f->run, *f->run ? "/" : "", p->tag);
            json_array_append_new(t->pending, json_pack("{s:s, s:I, s:f, s:f}", "tag", tag, "step",
                                                        (json_int_t)p->step, "wallTime",
                                                        p->wall_time, "value", p->value));
        }
        GT_VEC_FREE(&pts);
    }
}

static struct ltel *tel_get(struct gt_gantlet *g, const struct gt_ltask *lt)
{
    struct ltel *t = gt_strmap_get(&g->tel, lt->uid);
    if (t) {
        return t;
    }
    t = gt_xcalloc(1, sizeof(*t));
    t->pending = json_array();
    const struct gt_api_task *task = lt->obj;
    if (task->spec.has_tensorboard && task->spec.tensorboard.log_dir) {
        struct gt_err err = {0};
        if (gt_tel_log_dir_host(task, lt->data, t->log_dir, sizeof(t->log_dir), &err) < 0) {
            t->log_dir[0] = '\0';
            gt_log_warn("task's event files are not read", "task=%s err=\"%s\"", lt->name, err.msg);
        }
        if (task->spec.tensorboard.server) {
            gt_log_warn("spec.tensorboard.server: no tensorboard is installed on this node",
                        "task=%s", lt->name);
        }
    }
    gt_strmap_put(&g->tel, lt->uid, t);
    return t;
}

/* The report entry of one task (new reference), or NULL when there is
 * nothing to say. live: it runs, so its cgroup is sampled. At most
 * TEL_SEND_MAX of its scalars and *budget (decreased) go; the rest wait. */
/* e's gpuUtil (mean util_pct over lt's GPUs in their last sample) and
 * gpuMemoryBytes (its processes' device memory), where known. */
static void put_gpu_usage(const struct gt_gantlet *g, const struct gt_ltask *lt, json_t *e)
{
    int64_t sum = 0, n = 0;
    for (size_t i = 0; i < g->gpus.n_gpus; i++) {
        int64_t util = gt_gantlet_task_gpu_util(g, lt, i);
        if (util >= 0) {
            sum += util;
            n++;
        }
    }
    if (n) {
        json_object_set_new(e, "gpuUtil", json_real((double)sum / (double)n));
    }
    int64_t mem = gt_gantlet_task_gpu_memory(g, lt);
    if (mem >= 0) {
        json_object_set_new(e, "gpuMemoryBytes", json_integer(mem));
    }
}

static json_t *task_entry(struct gt_gantlet *g, const struct gt_ltask *lt, struct ltel *t,
                          bool live, int64_t now_ms, size_t *budget)
{
    if (t->log_dir[0]) {
        read_scalars(t);
    }
    json_t *e =
        json_pack("{s:s, s:s, s:s}", "uid", lt->uid, "project", lt->project, "name", lt->name);
    struct gt_cgroup cg;
    char rel[200];
    snprintf(rel, sizeof(rel), "gantry/%s", lt->uid);
    if (live && g->have_cgroups && gt_cgroup_init(&cg, &g->cgsys, rel, NULL) == 0) {
        struct gt_cgroup_stats u;
        gt_cgroup_stats(&cg, &u);
        gt_cgroup_fini(&cg);
        if (u.cpu_usage_ns >= 0 && t->prev_ms && now_ms > t->prev_ms &&
            u.cpu_usage_ns >= t->prev_cpu_ns) {
            int64_t milli = (u.cpu_usage_ns - t->prev_cpu_ns) / (now_ms - t->prev_ms) / 1000;
            json_object_set_new(e, "cpuMilli", json_integer(milli));
        }
        if (u.cpu_usage_ns >= 0) {
            t->prev_cpu_ns = u.cpu_usage_ns;
            t->prev_ms = now_ms;
        }
        if (u.memory_working_set_bytes >= 0) {
            json_object_set_new(e, "memoryBytes", json_integer(u.memory_working_set_bytes));
        }
    }
    if (live) {
        put_gpu_usage(g, lt, e);
    }
    size_t n = json_array_size(t->pending);
    size_t k = n < TEL_SEND_MAX ? n : TEL_SEND_MAX;
    k = k < *budget ? k : *budget;
    if (k) {
        json_t *sent = json_array(), *rest = json_array();
        for (size_t i = 0; i < n; i++) {
            json_array_append(i < k ? sent : rest, json_array_get(t->pending, i));
        }
        json_decref(t->pending);
        t->pending = rest;
        *budget -= k;
        json_object_set_new(e, "scalars", sent);
    } else if (json_object_size(e) == 3) { /* uid, project and name: no figure */
        json_decref(e);
        return NULL;
    }
    return e;
}

static void report_done(int status, json_t *body, void *arg)
{
    struct gt_gantlet *g = arg;
    g->tel_in_flight = false;
    if (status != 200) {
        gt_log_warn("telemetry not accepted", "status=%d err=\"%s\"", status,
                    gt_apic_message(body));
    }
}

struct sweep_ctx {
    struct GT_VEC(char *) gone;
};

static int sweep_cb(const char *key, void *val, void *arg)
{
    struct sweep_ctx *x = arg;
    struct ltel *t = val;
    if (!t->seen) {
        *GT_VEC_PUSH(&x->gone, 16) = gt_xstrdup(key);
    }
    t->seen = false;
    return 0;
}

void gt_gantlet_telemetry_poll(struct gt_gantlet *g)
{
    if (g->tel_in_flight || !g->registered) {
        return;
    }
    int64_t now_ms = gt_now_ms();
    size_t budget = TEL_REPORT_SCALARS_MAX;
    json_t *tasks = json_array();
    for (struct gt_ltask *lt = g->tasks; lt; lt = lt->next) {
        /* a task reported terminal gets one last read of its files */
        bool last = lt->st.reported;
        if (!lt->obj || !lt->st.started || (last && !gt_strmap_get(&g->tel, lt->uid))) {
            continue;
        }
        struct ltel *t = tel_get(g, lt);
        json_t *e = task_entry(g, lt, t, !lt->st.exited && !last, now_ms, &budget);
        t->seen = !last || json_array_size(t->pending) > 0; /* kept until all is sent */
        if (e) {
            json_array_append_new(tasks, e);
        }
    }
    struct sweep_ctx x = {0};
    gt_strmap_each(&g->tel, sweep_cb, &x);
    for (size_t i = 0; i < x.gone.n; i++) {
        ltel_free(gt_strmap_del(&g->tel, x.gone.v[i]));
        free(x.gone.v[i]);
    }
    GT_VEC_FREE(&x.gone);
    if (json_array_size(tasks)) {
        char path[128 + 64];
        snprintf(path, sizeof(path), "/apis/gantry.dev/v1/nodes/%s/telemetry", g->cfg->name);
        json_t *body = json_pack("{s:o}", "tasks", tasks);
        g->tel_in_flight = true;
        gt_apic_request(g->api, EVHTTP_REQ_POST, path, body, report_done, g);
        json_decref(body);
    } else {
        json_decref(tasks);
    }
}

void gt_gantlet_telemetry_free(struct gt_gantlet *g)
{
    gt_strmap_fini(&g->tel, ltel_free);
}
