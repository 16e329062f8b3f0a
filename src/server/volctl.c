/*
 * The Volume controller: a project's named, sized disks that jobs mount
 * by name (spec.volumes[].volume), counted against storage quota.
 *
 * Life of a Volume:
 *
 *     POST ──quota check, capacity held──> image made ──store create──> Available
 *      │  (gt_volctl_prepare)              (mkfs, off     (gt_volctl_created;
 *      │                                    the loop)      held capacity is
 *      └─ over quota: 403, nothing made                    counted from the cache
 *                                                          once it has it)
 *     DELETE ──users?── 409 naming them (gt_volctl_refuse_delete)
 *        └── none ───> store delete ──> image removed (gt_volctl_changed)
 *
 * Storage classes are gantryd's --storage-class NAME=DIR: a Volume's disk
 * is an ext4 file-system image of exactly its capacity in
 * DIR/<project>/<name>.<uid>.img, so the kernel enforces the size (a
 * writer past it gets ENOSPC) on any storage root, NFS or CephFS included,
 * where this platform has no project quotas (docs/api.md "Volumes"). The
 * image is made here, by the control plane, which (like a CSI controller
 * plugin) has the class's directory mounted; gantlet loop-mounts it on the
 * node where a task uses it (src/agent/volume.c).
 *
 * Quota: creates are admitted on the loop thread, one at a time; a create
 * whose image is still being made holds its capacity in c->vol_held until
 * the cache has the stored Volume (or the create failed), so concurrent
 * creates never both fit into the same room. Access modes are enforced
 * when jobs enter the scheduler model: a writable ReadWriteOnce Volume is
 * claimed (c->vol_claims) by the one job in the model that mounts it; a
 * job wanting it waits, with reason VolumeInUse. Everything runs on the
 * loop thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/quantity.h"
#include "server/cache.h"
#include "server/modelctl.h"
#include "server/volctl.h"

extern char **environ;

/* A create whose image is being made, or whose store write is in flight. */
struct held {
    char *project;
    int64_t bytes;
    char *image;
};

static void held_free(void *p)
{
    struct held *h = p;
    if (h) {
        free(h->project);
        free(h->image);
        free(h);
    }
}

static const struct gt_api_volume_obj *cobj_volume(const struct gt_cobj *o)
{
    return (const struct gt_api_volume_obj *)o->t;
}

static const struct gt_api_volume_obj *volume_get(const struct gt_ctl *c, const char *project,
                                                  const char *name)
{
    char key[160];
    snprintf(key, sizeof(key), "/volumes/%s/%s", project ? project : "", name ? name : "");
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_VOLUME, key);
    return o ? cobj_volume(o) : NULL;
}

/* The directory of storage class name (NULL: the default, the first;
 * borrowed from the configuration), or NULL when there is no such class;
 * buf (len bytes) gets the class's name. */
static const char *class_dir(const struct gt_ctl *c, const char *name, char *buf, size_t len)
{
    const struct gt_config_list *l = &c->s->cfg->storage_classes;
    for (size_t i = 0; i < l->n; i++) {
        const char *eq = strchr(l->items[i], '=');
        size_t n = (size_t)(eq - l->items[i]);
        if (!name || (strlen(name) == n && !strncmp(name, l->items[i], n))) {
            snprintf(buf, len, "%.*s", (int)n, l->items[i]);
            return eq + 1;
        }
    }
    return NULL;
}

static int64_t capacity_of(const struct gt_api_volume_obj *v)
{
    return v->spec.capacity.v.v[GT_RES_STORAGE];
}

/* ---- quota ---- */

struct tally {
    const struct gt_ctl *c;
    const char *department, *project;
    int64_t dept_bytes, project_bytes, usage_bytes;
    int64_t n_volumes;
};

static int64_t image_usage(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 ? (int64_t)st.st_blocks * 512 : 0;
}

static void tally_add(struct tally *t, const char *project, int64_t bytes, const char *image)
{
    const char *dept = gt_ctl_project_department(t->c, project);
    if (t->department && dept && !strcmp(dept, t->department)) {
        t->dept_bytes += bytes;
        t->n_volumes++;
        t->usage_bytes += image ? image_usage(image) : 0;
    }
    if (t->project && !strcmp(project, t->project)) {
        t->project_bytes += bytes;
    }
}

static int tally_cached_cb(const char *key, void *val, void *arg)
{
    (void)key;
    const struct gt_api_volume_obj *v = cobj_volume(val);
    tally_add(arg, v->o.meta.project, capacity_of(v), v->status.path);
    return 0;
}

static int tally_held_cb(const char *key, void *val, void *arg)
{
    struct tally *t = arg;
    const struct held *h = val;
    if (!gt_ctl_get(t->c, GT_KIND_VOLUME, key)) { /* else counted from the cache */
        tally_add(t, h->project, h->bytes, NULL);
    }
    return 0;
}

/* Capacity allocated to the Volumes of department and of project (either
 * may be NULL), held creates included, and the model store's bytes of
 * their ModelVersions. */
static void tally(const struct gt_ctl *c, const char *department, const char *project,
                  struct tally *t)
{
    *t = (struct tally){.c = c, .department = department, .project = project};
    gt_strmap_each(&c->objs[GT_KIND_VOLUME], tally_cached_cb, t);
    gt_strmap_each(&c->vol_held, tally_held_cb, t);
    /* the model store's blobs count against the same quota */
    int64_t dept_models = 0, project_models = 0;
    gt_modelctl_storage(c, department, project, &dept_models, &project_models);
    t->dept_bytes += dept_models;
    t->project_bytes += project_models;
}

int gt_volctl_storage_check(const struct gt_ctl *c, const char *project, const char *what,
                            int64_t bytes, struct gt_err *err)
{
    const char *dept = gt_ctl_project_department(c, project);
    char key[96];
    snprintf(key, sizeof(key), "/departments/%s", dept ? dept : "");
    const struct gt_cobj *d = gt_ctl_get(c, GT_KIND_DEPARTMENT, key);
    snprintf(key, sizeof(key), "/projects/%s", project);
    const struct gt_cobj *p = gt_ctl_get(c, GT_KIND_PROJECT, key);
    const struct gt_api_department *dt = d ? (const struct gt_api_department *)d->t : NULL;
    const struct gt_api_project *pt = p ? (const struct gt_api_project *)p->t : NULL;
    struct tally t;
    tally(c, dept ? dept : "", project, &t);
    struct gt_storage_quota q = {.department = dept ? dept : "",
                                 .dept_allocated_bytes = t.dept_bytes,
                                 .project = project,
                                 .project_allocated_bytes = t.project_bytes,
                                 .project_hard_bytes = -1,
                                 .what = what};
    gt_storage_limits(dt ? &dt->spec.quota : NULL, dt ? &dt->spec.limit : NULL, &q.dept_quota_bytes,
                      &q.dept_limit_bytes);
    if (pt && pt->spec.has_hard && (pt->spec.hard.set & GT_RESF_STORAGE)) {
        q.project_hard_bytes = pt->spec.hard.v.v[GT_RES_STORAGE];
    }
    return gt_storage_quota_check(&q, bytes, err);
}

/* ---- users ---- */

static bool entries_name(const struct gt_api_volumes *vols, const char *name)
{
    for (size_t i = 0; i < vols->n; i++) {
        if (vols->v[i].volume && !strcmp(vols->v[i].volume, name)) {
            return true;
        }
    }
    return false;
}

struct users {
    const char *project, *name;
    struct gt_buf tasks; /* ", "-separated */
    json_t *list;        /* task names, or NULL */
    struct gt_buf jobs;
    struct gt_buf notebooks; /* whose spec.home it is, stopped or not */
};

static int task_user_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct users *u = arg;
    const struct gt_api_task *t = gt_cobj_task(val);
    if (!strcmp(t->o.meta.project, u->project) &&
        !gt_api_task_phase_terminal((enum gt_task_phase)t->status.phase) &&
        entries_name(&t->spec.volumes, u->name)) {
        gt_buf_printf(&u->tasks, "%s%s", u->tasks.len ? ", " : "", t->o.meta.name);
        if (u->list) {
            json_array_append_new(u->list, json_string(t->o.meta.name));
        }
    }
    return 0;
}

static int job_user_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct users *u = arg;
    const struct gt_api_job *j = gt_cobj_job(val);
    if (!strcmp(j->o.meta.project, u->project) && !gt_job_finished(j) &&
        entries_name(&j->spec.volumes, u->name)) {
        gt_buf_printf(&u->jobs, "%s%s", u->jobs.len ? ", " : "", j->o.meta.name);
    }
    return 0;
}

static int notebook_user_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct users *u = arg;
    const struct gt_api_notebook *nb = (const struct gt_api_notebook *)((struct gt_cobj *)val)->t;
    const char *home = nb->spec.has_home ? nb->spec.home.volume : NULL;
    if (!strcmp(nb->o.meta.project, u->project) && home && !strcmp(home, u->name)) {
        gt_buf_printf(&u->notebooks, "%s%s", u->notebooks.len ? ", " : "", nb->o.meta.name);
    }
    return 0;
}

/* The users of Volume project/name: tasks not ended that mount it (into
 * u->tasks, and u->list when set), jobs not finished that name it, and
 * notebooks whose home it is (a stopped one starts on it again). */
static void users_find(const struct gt_ctl *c, const char *project, const char *name,
                       struct users *u)
{
    u->project = project;
    u->name = name;
    gt_buf_init(&u->tasks);
    gt_buf_init(&u->jobs);
    gt_buf_init(&u->notebooks);
    gt_strmap_each(&c->objs[GT_KIND_TASK], task_user_cb, u);
    gt_strmap_each(&c->objs[GT_KIND_JOB], job_user_cb, u);
    gt_strmap_each(&c->objs[GT_KIND_NOTEBOOK], notebook_user_cb, u);
}

static void users_fini(struct users *u)
{
    gt_buf_fini(&u->tasks);
    gt_buf_fini(&u->jobs);
    gt_buf_fini(&u->notebooks);
}

/* "tasks a, b; jobs j; notebooks n" of u into err's message after prefix,
 * as GT_ECONFLICT; 0 when u has none. */
static int users_refuse(struct users *u, const char *what, struct gt_err *err)
{
    const struct {
        const char *word;
        const struct gt_buf *names;
    } parts[] = {{"tasks", &u->tasks}, {"jobs", &u->jobs}, {"notebooks", &u->notebooks}};
    struct gt_buf b;
    gt_buf_init(&b);
    for (size_t i = 0; i < GT_ARRAY_LEN(parts); i++) {
        if (parts[i].names->len) {
            gt_buf_printf(&b, "%s%s %s", b.len ? "; " : "", parts[i].word, parts[i].names->data);
        }
    }
    int rc = b.len ? gt_err_set(err, GT_ECONFLICT, "%s: volume \"%s\" is in use by %s", what,
                                u->name, b.data)
                   : 0;
    gt_buf_fini(&b);
    return rc;
}

/* ---- admission ---- */

/* A Volume update: spec.capacity, accessMode and storageClass are fixed;
 * readOnly changes only while nothing uses it. */
static int admit_volume_update(struct gt_ctl *c, const struct gt_api_volume_obj *v,
                               struct gt_err *err)
{
    const struct gt_api_volume_obj *was = volume_get(c, v->o.meta.project, v->o.meta.name);
    if (!was) {
        return 0; /* the conditional write finds it gone */
    }
    const char *field = NULL;
    if (capacity_of(was) != capacity_of(v)) {
        field = "spec.capacity";
    } else if (was->spec.access_mode != v->spec.access_mode) {
        field = "spec.accessMode";
    } else if ((was->spec.storage_class || v->spec.storage_class) &&
               (!was->spec.storage_class || !v->spec.storage_class ||
                strcmp(was->spec.storage_class, v->spec.storage_class))) {
        field = "spec.storageClass";
    }
    if (field) {
        return gt_err_set(err, GT_EINVAL, "%s: cannot change (only spec.readOnly may)", field);
    }
    if (was->spec.read_only == v->spec.read_only) {
        return 0;
    }
    struct users u = {0};
    users_find(c, v->o.meta.project, v->o.meta.name, &u);
    int rc = users_refuse(&u, "spec.readOnly: cannot change while in use", err);
    users_fini(&u);
    return rc;
}

/* Tasks of job that mount volume entry name. */
static int64_t job_mounts(const struct gt_api_job *job, const char *name)
{
    int64_t n = 0;
    for (size_t r = 0; r < job->spec.replica_specs.n; r++) {
        const struct gt_api_replica_spec *rs = &job->spec.replica_specs.v[r];
        for (size_t m = 0; m < rs->template.volume_mounts.n; m++) {
            if (!strcmp(rs->template.volume_mounts.v[m].name, name)) {
                n += rs->replicas;
                break;
            }
        }
    }
    return n;
}

/* A Job's or Task's spec.volumes on create: named Volumes exist and are
 * Available; a writable ReadWriteOnce one is mounted by one task; no
 * hostPath beneath a class directory. */
static int admit_entries(struct gt_ctl *c, const struct gt_api_object *t,
                         const struct gt_api_volumes *vols, struct gt_err *err)
{
    const struct gt_config_list *classes = &c->s->cfg->storage_classes;
    for (size_t i = 0; i < vols->n; i++) {
        const struct gt_api_volume *e = &vols->v[i];
        for (size_t k = 0; e->host_path && k < classes->n; k++) {
            const char *dir = strchr(classes->items[k], '=') + 1;
            if (gt_path_beneath(e->host_path, dir)) {
                return gt_err_set(err, GT_EINVAL,
                                  "spec.volumes[%zu].hostPath: %s is beneath the directory of "
                                  "storage class %.*s, which holds Volumes' disk images (mount "
                                  "a Volume by name: volume: NAME)",
                                  i, e->host_path, (int)(dir - 1 - classes->items[k]),
                                  classes->items[k]);
            }
        }
        if (!e->volume) {
            continue;
        }
        const struct gt_api_volume_obj *v = volume_get(c, t->meta.project, e->volume);
        if (!v) {
            return gt_err_set(err, GT_EINVAL,
                              "spec.volumes[%zu].volume: no Volume \"%s\" in project \"%s\"", i,
                              e->volume, t->meta.project);
        }
        if (v->status.phase != GT_VOLUME_AVAILABLE) {
            return gt_err_set(err, GT_EINVAL,
                              "spec.volumes[%zu].volume: Volume \"%s\" is not "
                              "Available",
                              i, e->volume);
        }
        int64_t n = t->kind == GT_KIND_JOB ? job_mounts((const struct gt_api_job *)t, e->name) : 1;
        if (n > 1 &&
            !gt_api_volume_shared((enum gt_volume_access)v->spec.access_mode, v->spec.read_only)) {
            return gt_err_set(err, GT_EINVAL,
                              "spec.volumes[%zu].volume: Volume \"%s\" is ReadWriteOnce (one task "
                              "at a time) but %lld tasks of this job mount it",
                              i, e->volume, (long long)n);
        }
    }
    return 0;
}

int gt_volctl_admit(struct gt_ctl *c, const struct gt_api_object *t, bool create,
                    struct gt_err *err)
{
    if (!t) {
        return 0;
    }
    if (t->kind == GT_KIND_VOLUME) {
        const struct gt_api_volume_obj *v = (const struct gt_api_volume_obj *)t;
        char name[64];
        if (!class_dir(c, v->spec.storage_class, name, sizeof(name))) {
            return gt_err_set(err, GT_EINVAL,
                              c->s->cfg->storage_classes.n
                                  ? "spec.storageClass: no storage class \"%s\" in this cluster"
                                  : "spec.storageClass: this cluster has no storage class (an "
                                    "admin sets gantryd --storage-class NAME=DIR)%s",
                              v->spec.storage_class ? v->spec.storage_class : "");
        }
        return create ? 0 : admit_volume_update(c, v, err);
    }
    if (!create) {
        return 0;
    }
    if (t->kind == GT_KIND_JOB) {
        return admit_entries(c, t, &((const struct gt_api_job *)t)->spec.volumes, err);
    }
    if (t->kind == GT_KIND_TASK) {
        return admit_entries(c, t, &((const struct gt_api_task *)t)->spec.volumes, err);
    }
    return 0;
}

/* ---- provisioning ---- */

struct prov {
    struct gt_ctl *c;
    char *key;
    json_t *obj;
    char *image;
    char *class_name;
    gt_prepared_fn done;
    void *arg;
    pid_t pid;
    int fd;
    struct event *ev;
    struct gt_buf out; /* mkfs's output, for a failure's message */
};

static void prov_free(struct prov *p)
{
    if (p->ev) {
        event_free(p->ev);
    }
    if (p->fd >= 0) {
        close(p->fd);
    }
    json_decref(p->obj);
    free(p->key);
    free(p->image);
    free(p->class_name);
    gt_buf_fini(&p->out);
    free(p);
}

/* Make the parent directory (the project's, beneath the class's) of image. */
static int make_parent(const char *dir, const char *project, struct gt_err *err)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, project);
    if ((mkdir(dir, 0711) < 0 && errno != EEXIST) || (mkdir(path, 0700) < 0 && errno != EEXIST)) {
        return gt_err_set(err, GT_EINTERNAL, "storage class directory %s: %s", path,
                          strerror(errno));
    }
    return 0;
}

/* Set obj's status: Available at image in class. */
static void set_available(json_t *obj, const char *class_name, const char *image)
{
    json_t *st = json_object();
    gt_obj_set_str(st, "phase", "Available");
    gt_obj_set_str(st, "storageClass", class_name);
    gt_obj_set_str(st, "path", image);
    json_object_set_new(obj, "status", st);
}

static void prov_finish(struct prov *p, int rc, const struct gt_err *err)
{
    if (rc) {
        unlink(p->image);
        held_free(gt_strmap_del(&p->c->vol_held, p->key));
    } else {
        set_available(p->obj, p->class_name, p->image);
    }
    p->done(p->arg, rc, err);
    prov_free(p);
}

static void mkfs_output_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct prov *p = arg;
    char buf[4096];
    ssize_t r = read(fd, buf, sizeof(buf));
    if (r > 0 || (r < 0 && errno == EINTR)) {
        if (r > 0 && p->out.len < 8192) {
            gt_buf_append(&p->out, buf, (size_t)r);
        }
        return;
    }
    int st = 0;
    pid_t w;
    while ((w = waitpid(p->pid, &st, 0)) < 0 && errno == EINTR) {
    }
    struct gt_err err = {0};
    int rc = 0;
    if (w < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        gt_buf_append(&p->out, "", 0);
        rc = gt_err_set(&err, GT_EINTERNAL, "making the disk image of volumes \"%s\" failed: %s",
                        gt_obj_name(p->obj), p->out.len ? p->out.data : "mkfs.ext4 failed");
    }
    prov_finish(p, rc, &err);
}

/* The uid and gid the Volume's root directory belongs to: its creator's
 * (the gid as gantlet picks a task's: the uid's primary group, else the uid). */
static void root_owner(const json_t *obj, char *buf, size_t len)
{
    json_int_t uid = json_integer_value(gt_json_path(obj, "metadata.creator.uid"));
    struct passwd pw, *res = NULL;
    char pwbuf[4096];
    gid_t gid = getpwuid_r((uid_t)uid, &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res ? pw.pw_gid
                                                                                    : (gid_t)uid;
    snprintf(buf, len, "root_owner=%lld:%u,nodiscard", (long long)uid, (unsigned)gid);
}

/* Start mkfs.ext4 on p->image (already of its size), output to a pipe. */
static int mkfs_spawn(struct prov *p, struct gt_err *err)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        return gt_err_set(err, GT_EINTERNAL, "pipe: %s", strerror(errno));
    }
    char opts[128];
    root_owner(p->obj, opts, sizeof(opts));
    /* -m 0: no blocks reserved for root, tasks run as their users */
    char *argv[] = {"mkfs.ext4", "-q", "-F", "-m", "0", "-E", opts, p->image, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    int rc = posix_spawnp(&p->pid, "mkfs.ext4", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return gt_err_set(err, GT_EINTERNAL, "cannot run mkfs.ext4 (e2fsprogs): %s", strerror(rc));
    }
    p->fd = fds[0];
    p->ev = event_new(p->c->s->base, p->fd, EV_READ | EV_PERSIST, mkfs_output_cb, p);
    event_add(p->ev, NULL);
    return 0;
}

/* An empty file of exactly bytes at path (new: never over another). */
static int image_create(const char *path, int64_t bytes, struct gt_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        return gt_err_set(err, GT_EINTERNAL, "disk image %s: %s", path, strerror(errno));
    }
    int rc = ftruncate(fd, (off_t)bytes) < 0 ? -errno : 0;
    close(fd);
    if (rc) {
        unlink(path);
        return gt_err_set(err, GT_EINTERNAL, "disk image %s: %s", path, strerror(-rc));
    }
    return 0;
}

int gt_volctl_prepare(struct gt_ctl *c, enum gt_kind kind, const char *key, json_t *obj,
                      gt_prepared_fn done, void *arg, struct gt_err *err)
{
    if (kind != GT_KIND_VOLUME) {
        return 0;
    }
    if (gt_ctl_get(c, GT_KIND_VOLUME, key) || gt_strmap_get(&c->vol_held, key)) {
        return gt_err_set(err, GT_EEXISTS, "volumes \"%s\" already exists", gt_obj_name(obj));
    }
    struct gt_api_volume_obj *v = gt_api_volume_obj_new(obj);
    const char *project = v->o.meta.project;
    char class_name[64];
    const char *dir = class_dir(c, v->spec.storage_class, class_name, sizeof(class_name));
    int rc = dir ? 0 : gt_err_set(err, GT_EINVAL, "spec.storageClass: unknown");
    rc = rc ? rc : gt_volctl_storage_check(c, project, NULL, capacity_of(v), err);
    rc = rc ? rc : make_parent(dir, project, err);
    struct prov *p = NULL;
    if (rc == 0) {
        p = gt_xcalloc(1, sizeof(*p));
        p->c = c;
        p->fd = -1;
        p->key = gt_xstrdup(key);
        p->obj = json_incref(obj);
        p->image = gt_xasprintf("%s/%s/%s.%s.img", dir, project, v->o.meta.name, v->o.meta.uid);
        p->class_name = gt_xstrdup(class_name);
        p->done = done;
        p->arg = arg;
        gt_buf_init(&p->out);
        rc = image_create(p->image, capacity_of(v), err);
    }
    if (rc == 0) {
        struct held *h = gt_xcalloc(1, sizeof(*h));
        h->project = gt_xstrdup(project);
        h->bytes = capacity_of(v);
        h->image = gt_xstrdup(p->image);
        gt_strmap_put(&c->vol_held, key, h);
        rc = mkfs_spawn(p, err);
        if (rc) {
            unlink(p->image);
            held_free(gt_strmap_del(&c->vol_held, key));
        }
    }
    gt_api_volume_obj_free(v);
    if (rc) {
        if (p) {
            prov_free(p);
        }
        return rc;
    }
    return 1;
}

void gt_volctl_created(struct gt_ctl *c, enum gt_kind kind, const char *key, int rc)
{
    if (kind != GT_KIND_VOLUME || rc == 0) {
        return; /* a stored one's capacity is released once the cache has it */
    }
    struct held *h = gt_strmap_del(&c->vol_held, key);
    if (h) {
        unlink(h->image);
        held_free(h);
    }
}

void gt_volctl_changed(struct gt_ctl *c, const char *key, const struct gt_api_object *old,
                       const struct gt_api_object *now)
{
    if (now) {
        held_free(gt_strmap_del(&c->vol_held, key));
        return;
    }
    const struct gt_api_volume_obj *v = (const struct gt_api_volume_obj *)old;
    if (v && v->status.path && unlink(v->status.path) < 0 && errno != ENOENT) {
        gt_log_warn("volume image not removed", "volume=%s path=%s err=\"%s\"", key, v->status.path,
                    strerror(errno));
    }
}

int gt_volctl_refuse_delete(const struct gt_ctl *c, const char *project, const char *name,
                            struct gt_err *err)
{
    struct users u = {0};
    users_find(c, project, name, &u);
    int rc = users_refuse(&u, "cannot delete", err);
    users_fini(&u);
    return rc;
}

/* ---- reads ---- */

static json_t *bytes_json(int64_t v)
{
    char buf[32];
    /* rounded up to whole KiB, which the binary form spells exactly */
    int64_t k = v % 1024 ? v + 1024 - v % 1024 : v;
    return json_string(gt_quantity_format(k, GT_QTY_UNIT, 1, buf, sizeof(buf)));
}

void gt_volctl_render(const struct gt_ctl *c, json_t *obj)
{
    json_t *st = json_object_get(obj, "status");
    if (!json_is_object(st)) {
        st = json_object();
        json_object_set_new(obj, "status", st);
    }
    const char *path = json_string_value(json_object_get(st, "path"));
    json_object_set_new(st, "usage", bytes_json(image_usage(path)));
    struct users u = {.list = json_array()};
    users_find(c, gt_obj_project(obj), gt_obj_name(obj), &u);
    json_object_set_new(st, "users", u.list);
    users_fini(&u);
}

json_t *gt_volctl_department_storage(const struct gt_ctl *c, const char *department)
{
    struct tally t;
    tally(c, department, NULL, &t);
    char key[96];
    snprintf(key, sizeof(key), "/departments/%s", department);
    const struct gt_cobj *d = gt_ctl_get(c, GT_KIND_DEPARTMENT, key);
    const struct gt_api_department *dt = d ? (const struct gt_api_department *)d->t : NULL;
    int64_t quota, limit;
    gt_storage_limits(dt ? &dt->spec.quota : NULL, dt ? &dt->spec.limit : NULL, &quota, &limit);
    json_t *o = json_object();
    json_object_set_new(o, "volumes", json_integer((json_int_t)t.n_volumes));
    json_object_set_new(o, "allocated", bytes_json(t.dept_bytes));
    json_object_set_new(o, "borrowed", bytes_json(t.dept_bytes > quota ? t.dept_bytes - quota : 0));
    json_object_set_new(o, "usage", bytes_json(t.usage_bytes));
    return o;
}

/* ---- access modes at bind ---- */

/* The store key of a job's writable ReadWriteOnce Volume entry e, in buf,
 * or NULL when e is not one. */
static const char *exclusive_key(const struct gt_ctl *c, const char *project,
                                 const struct gt_api_volume *e, char *buf, size_t len)
{
    const struct gt_api_volume_obj *v = e->volume ? volume_get(c, project, e->volume) : NULL;
    if (!v || gt_api_volume_shared((enum gt_volume_access)v->spec.access_mode, v->spec.read_only)) {
        return NULL;
    }
    snprintf(buf, len, "/volumes/%s/%s", project, e->volume);
    return buf;
}

bool gt_volctl_claim(struct gt_ctl *c, const char *key, const struct gt_api_job *job, char **why)
{
    const struct gt_api_volumes *vols = &job->spec.volumes;
    char vk[160];
    for (size_t i = 0; i < vols->n; i++) {
        const char *k = exclusive_key(c, job->o.meta.project, &vols->v[i], vk, sizeof(vk));
        const char *holder = k ? gt_strmap_get(&c->vol_claims, k) : NULL;
        if (holder && strcmp(holder, key)) {
            const char *slash = strrchr(holder, '/');
            *why = gt_xasprintf("volume \"%s\" is ReadWriteOnce and in use by job %s",
                                vols->v[i].volume, slash ? slash + 1 : holder);
            return false;
        }
    }
    for (size_t i = 0; i < vols->n; i++) {
        const char *k = exclusive_key(c, job->o.meta.project, &vols->v[i], vk, sizeof(vk));
        if (k) {
            free(gt_strmap_put(&c->vol_claims, k, gt_xstrdup(key)));
        }
    }
    return true;
}

struct release {
    const char *job_key;
    struct gt_buf keys; /* NUL-separated volume keys to drop */
};

static int release_cb(const char *key, void *val, void *arg)
{
    struct release *r = arg;
    if (!strcmp(val, r->job_key)) {
        gt_buf_append(&r->keys, key, strlen(key) + 1);
    }
    return 0;
}

void gt_volctl_release(struct gt_ctl *c, const char *key)
{
    struct release r = {.job_key = key};
    gt_buf_init(&r.keys);
    gt_strmap_each(&c->vol_claims, release_cb, &r);
    for (size_t off = 0; off < r.keys.len; off += strlen(r.keys.data + off) + 1) {
        free(gt_strmap_del(&c->vol_claims, r.keys.data + off));
    }
    gt_buf_fini(&r.keys);
}

int gt_volctl_bind(const struct gt_ctl *c, json_t *task, struct gt_err *err)
{
    const char *project = gt_obj_project(task);
    json_t *vols = gt_json_path(task, "spec.volumes");
    size_t i;
    json_t *e;
    json_array_foreach(vols, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "volume"));
        if (!name) {
            continue;
        }
        const struct gt_api_volume_obj *v = volume_get(c, project, name);
        if (!v || v->status.phase != GT_VOLUME_AVAILABLE || !v->status.path) {
            return gt_err_set(err, GT_ENOTFOUND, "volume \"%s\" is gone or not Available", name);
        }
        json_object_set_new(e, "image", json_string(v->status.path));
        if (gt_api_volume_mounts_ro((enum gt_volume_access)v->spec.access_mode,
                                    v->spec.read_only)) {
            json_object_set_new(e, "readOnly", json_true());
        }
    }
    return 0;
}

void gt_volctl_fini(struct gt_ctl *c)
{
    gt_strmap_fini(&c->vol_held, held_free);
    gt_strmap_fini(&c->vol_claims, free);
}
