/*
 * The model registry's controller and the content-addressed model store
 * (docs/api.md "Models").
 *
 *   POST ModelVersion ─ name hook: <model>-v<N> (N from c->models->next,
 *      │                on the loop, one create at a time)
 *      ├─ admit: Model exists, source job Succeeded, artifact resolvable
 *      ├─ prepare: a thread copies the artifact into STORE/tmp/<uid>/ and
 *      │  hashes it ──> on the loop: digest known? drop the copy (stored
 *      │  once) : storage quota (403, copy removed) then rename to
 *      │  STORE/sha256/<hex>/, read-only; obj gets its status; the bytes
 *      │  are held until the cache has the version
 *      └─ store write ──> cached (held bytes released) | failed (a blob
 *                         no version uses is removed)
 *
 * The store is gantryd's --model-store DIR (none: versions are refused),
 * beneath a storage root every node sees, so a task serving a version
 * reads its status.path there (read-only to the task's user). A blob never
 * changes once renamed into place: files 0444, directories 0555. Storage
 * used counts each digest once per department, with its Volumes, against
 * the department's storage limit and the project's hard cap.
 *
 * gantryd reads a source with the file-system permissions of the user
 * registering it (setfsuid on the copy thread), never its own, so a member
 * cannot copy out another user's files beneath a storage root.
 *
 * Everything but the copy runs on the loop thread; the copy thread owns
 * its struct copy until it writes its byte into the pipe, after which the
 * loop joins it and owns it again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/cache.h"
#include "server/events.h"
#include "server/modelctl.h"

#define STORE_DIR_MODE 0555
#define STORE_FILE_MODE 0444
#define COPY_DEPTH_MAX 32
#define GT_NOGROUP_GID 65534 /* Debian's nogroup: no group permission is used */

struct gt_modelctl {
    struct gt_ctl *c;
    gt_storage_check_fn *storage_check;
    struct gt_strmap next;       /* "/models/P/M" -> int64_t *: the next number to give */
    struct gt_strmap held;       /* ModelVersion key -> struct held */
    struct gt_strmap registered; /* uids of jobs whose spec.outputs.model was registered */
};

/* A create whose blob is in place (or being copied) but not yet cached. */
struct held {
    char *project, *digest;
    int64_t bytes;
};

static void held_free(void *p)
{
    struct held *h = p;
    if (h) {
        free(h->project);
        free(h->digest);
        free(h);
    }
}

struct gt_modelctl *gt_modelctl_new(struct gt_ctl *c, gt_storage_check_fn *check)
{
    struct gt_modelctl *mc = gt_xcalloc(1, sizeof(*mc));
    mc->c = c;
    mc->storage_check = check;
    gt_strmap_init(&mc->next);
    gt_strmap_init(&mc->held);
    gt_strmap_init(&mc->registered);
    return mc;
}

void gt_modelctl_free(struct gt_modelctl *mc)
{
    if (mc) {
        gt_strmap_fini(&mc->next, free);
        gt_strmap_fini(&mc->held, held_free);
        gt_strmap_fini(&mc->registered, NULL);
        free(mc);
    }
}

static const struct gt_api_modelversion *cobj_mv(const struct gt_cobj *o)
{
    return (const struct gt_api_modelversion *)o->t;
}

/* The store's directory (borrowed from the configuration), or NULL. */
static const char *store_dir(const struct gt_ctl *c)
{
    return c->s->cfg->model_store;
}

/* ---- version numbers ---- */

struct highest {
    const char *project, *model;
    int64_t n;
};

static int highest_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct highest *h = arg;
    const struct gt_api_modelversion *mv = cobj_mv(val);
    if (!strcmp(mv->o.meta.project, h->project) && mv->spec.model &&
        !strcmp(mv->spec.model, h->model) && mv->status.version > h->n) {
        h->n = mv->status.version;
    }
    return 0;
}

/* The number in a name this controller gave ("digits-v12" -> 12), or 0. */
static int64_t number_of(const char *name)
{
    const char *v = name ? strrchr(name, 'v') : NULL;
    if (!v || v == name || v[-1] != '-' || !v[1]) {
        return 0;
    }
    char *end;
    long long n = strtoll(v + 1, &end, 10);
    return *end ? 0 : n;
}

int gt_modelctl_name(struct gt_ctl *c, enum gt_kind kind, const char *project, json_t *obj,
                     struct gt_err *err)
{
    if (kind != GT_KIND_MODELVERSION) {
        return 0;
    }
    json_t *md = json_object_get(obj, "metadata");
    const char *model = json_string_value(gt_json_path(obj, "spec.model"));
    if (!json_is_object(md) || !model) {
        return 0; /* validation names what is missing */
    }
    if (strlen(model) > GT_MODEL_NAME_MAX) {
        return gt_err_set(err, GT_EINVAL,
                          "spec.model: at most %d characters (versions are named <model>-v<N>)",
                          GT_MODEL_NAME_MAX);
    }
    struct gt_modelctl *mc = c->models;
    char *mkey = gt_xasprintf("/models/%s/%s", project, model);
    int64_t *next = gt_strmap_get(&mc->next, mkey);
    if (!next) {
        struct highest h = {.project = project, .model = model};
        gt_strmap_each(&c->objs[GT_KIND_MODELVERSION], highest_cb, &h);
        next = gt_xcalloc(1, sizeof(*next));
        *next = h.n + 1;
        gt_strmap_put(&mc->next, mkey, next);
    }
    char name[96];
    snprintf(name, sizeof(name), "%s-v%" PRId64, model, (*next)++);
    json_object_set_new(md, "name", json_string(name));
    free(mkey);
    return 0;
}

/* ---- admission ---- */

/* The replica a source names: task "<job>-<type>-<index>" or, by
 * default, the first Master or Chief, else the first replica spec. */
static const struct gt_api_replica_spec *source_replica(const struct gt_api_job *job,
                                                        const char *task, char *name, size_t len)
{
    const struct gt_api_replica_spec *pick = NULL;
    for (size_t i = 0; i < job->spec.replica_specs.n; i++) {
        const struct gt_api_replica_spec *rs = &job->spec.replica_specs.v[i];
        for (int64_t j = 0; task && j < rs->replicas; j++) {
            char n[256];
            snprintf(n, sizeof(n), "%s-%s-%" PRId64, job->o.meta.name, rs->type, j);
            for (char *p = n; *p; p++) {
                *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
            }
            if (!strcmp(n, task)) {
                snprintf(name, len, "%s", n);
                return rs;
            }
        }
        if (!task && !pick && (!strcmp(rs->type, "Master") || !strcmp(rs->type, "Chief"))) {
            pick = rs;
        }
    }
    if (task) {
        return NULL;
    }
    pick = pick ? pick : (job->spec.replica_specs.n ? &job->spec.replica_specs.v[0] : NULL);
    if (pick) {
        snprintf(name, len, "%s-%s-0", job->o.meta.name, pick->type);
        for (char *p = name; *p; p++) {
            *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        }
    }
    return pick;
}

/* The host path (buf) of path as the task of replica rs saw it: through
 * the mount of a hostPath volume of the job holding it (the deepest). */
static int host_path_of(const struct gt_api_job *job, const struct gt_api_replica_spec *rs,
                        const char *path, char *buf, size_t len, struct gt_err *err)
{
    char abs[PATH_MAX];
    const char *wd = rs->template.working_dir;
    if (path[0] != '/' && !wd) {
        return gt_err_set(err, GT_EINVAL,
                          "spec.source.path: relative, but the task has no workingDir: give the "
                          "path as the task saw it, on a volume it mounts");
    }
    snprintf(abs, sizeof(abs), "%s%s%s", path[0] == '/' ? "" : wd, path[0] == '/' ? "" : "/", path);
    const struct gt_api_mount *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < rs->template.volume_mounts.n; i++) {
        const struct gt_api_mount *m = &rs->template.volume_mounts.v[i];
        size_t n = strlen(m->mount_path);
        while (n > 1 && m->mount_path[n - 1] == '/') {
            n--;
        }
        if (n > best_len && !strncmp(abs, m->mount_path, n) && (abs[n] == '/' || !abs[n])) {
            best = m;
            best_len = n;
        }
    }
    const char *host = NULL;
    for (size_t i = 0; best && i < job->spec.volumes.n; i++) {
        if (!strcmp(job->spec.volumes.v[i].name, best->name)) {
            host = job->spec.volumes.v[i].host_path;
        }
    }
    if (!host) {
        return gt_err_set(err, GT_EINVAL,
                          "spec.source.path: %s is not on a hostPath volume of job \"%s\" (write "
                          "the model to a volume beneath a storage root, which gantryd reads)",
                          abs, job->o.meta.name);
    }
    snprintf(buf, len, "%s%s", host, abs + best_len);
    return 0;
}

/* The artifact's host path (buf) and source task (task, may stay "") of a
 * ModelVersion's source; the job must have Succeeded. */
static int resolve_source(const struct gt_ctl *c, const struct gt_api_modelversion *mv, char *buf,
                          size_t len, char *task, size_t task_len, struct gt_err *err)
{
    const struct gt_api_model_source *src = &mv->spec.source;
    task[0] = '\0';
    if (src->host_path) {
        snprintf(buf, len, "%s", src->host_path);
        return 0;
    }
    char key[160];
    snprintf(key, sizeof(key), "/jobs/%s/%s", mv->o.meta.project, src->job);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_JOB, key);
    if (!o) {
        return gt_err_set(err, GT_EINVAL, "spec.source.job: no job \"%s\" in project \"%s\"",
                          src->job, mv->o.meta.project);
    }
    const struct gt_api_job *job = (const struct gt_api_job *)o->t;
    const struct gt_api_condition *done =
        gt_api_condition_find(&job->status.conditions, "Succeeded");
    if (!done || !done->status || strcmp(done->status, "True") != 0) {
        return gt_err_set(err, GT_EINVAL, "spec.source.job: job \"%s\" has not Succeeded",
                          src->job);
    }
    const struct gt_api_replica_spec *rs = source_replica(job, src->task, task, task_len);
    if (!rs) {
        return gt_err_set(err, GT_EINVAL, "spec.source.task: job \"%s\" has no task \"%s\"",
                          src->job, src->task ? src->task : "");
    }
    return host_path_of(job, rs, src->path, buf, len, err);
}

/* Only stage, metrics and labels change after registration. */
static int check_update(const struct gt_ctl *c, const struct gt_api_modelversion *mv,
                        struct gt_err *err)
{
    char key[160];
    snprintf(key, sizeof(key), "/modelversions/%s/%s", mv->o.meta.project, mv->o.meta.name);
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_MODELVERSION, key);
    if (!o) {
        return 0; /* the store answers 404 */
    }
    const char *const fixed[] = {"spec.model", "spec.format", "spec.source"};
    for (size_t i = 0; i < GT_ARRAY_LEN(fixed); i++) {
        json_t *now = gt_json_path(mv->o.json, fixed[i]);
        json_t *was = gt_json_path(o->obj, fixed[i]);
        if (now && !json_equal(now, was)) {
            return gt_err_set(err, GT_EINVAL,
                              "%s: cannot change (a version never changes after registration; "
                              "register a new one)",
                              fixed[i]);
        }
    }
    return 0;
}

/* Does the Model name exist in project? */
static bool model_exists(const struct gt_ctl *c, const char *project, const char *name)
{
    char key[160];
    snprintf(key, sizeof(key), "/models/%s/%s", project, name);
    return gt_ctl_get(c, GT_KIND_MODEL, key) != NULL;
}

int gt_modelctl_admit(struct gt_ctl *c, const struct gt_api_object *t, bool create,
                      struct gt_err *err)
{
    if (t && t->kind == GT_KIND_JOB) {
        const struct gt_api_job *job = (const struct gt_api_job *)t;
        const struct gt_api_job_outputs *out = &job->spec.outputs;
        if (job->spec.has_outputs && out->has_model &&
            !model_exists(c, job->o.meta.project, out->model.name)) {
            return gt_err_set(err, GT_EINVAL,
                              "spec.outputs.model.name: no Model \"%s\" in project \"%s\"",
                              out->model.name, job->o.meta.project);
        }
        return 0;
    }
    if (!t || t->kind != GT_KIND_MODELVERSION) {
        return 0;
    }
    const struct gt_api_modelversion *mv = (const struct gt_api_modelversion *)t;
    if (!create) {
        return check_update(c, mv, err);
    }
    char path[PATH_MAX], task[256];
    if (!model_exists(c, mv->o.meta.project, mv->spec.model)) {
        return gt_err_set(err, GT_EINVAL,
                          "spec.model: no Model \"%s\" in project \"%s\" (create it first: kind: "
                          "Model with spec.framework)",
                          mv->spec.model, mv->o.meta.project);
    }
    return resolve_source(c, mv, path, sizeof(path), task, sizeof(task), err);
}

/* ---- the copy (on its own thread) ---- */

struct copy {
    struct gt_ctl *c;
    char *key, *src, *tmp, *base; /* tmp: STORE/tmp/<uid>; base: the artifact's name */
    char *store;
    char task[256];
    int64_t uid; /* the registering user's: the source is read with its permissions */
    json_t *obj;
    gt_prepared_fn done;
    void *arg;
    pthread_t thread;
    int pipe_fd[2];
    struct event *ev;
    /* the thread's results */
    int rc;
    struct gt_err err;
    int64_t bytes;
    char hex[65];
};

static void copy_free(struct copy *cp)
{
    if (cp->ev) {
        event_free(cp->ev);
    }
    for (int i = 0; i < 2; i++) {
        if (cp->pipe_fd[i] >= 0) {
            close(cp->pipe_fd[i]);
        }
    }
    json_decref(cp->obj);
    free(cp->key);
    free(cp->src);
    free(cp->tmp);
    free(cp->base);
    free(cp->store);
    free(cp);
}

static void hex_of(const unsigned char *d, unsigned n, char out[65])
{
    for (unsigned i = 0; i < n && i < 32; i++) {
        snprintf(out + 2 * i, 3, "%02x", d[i]);
    }
}

/* Copy the regular file src_fd into dir_fd/name (mode 0444) hashing it;
 * hex gets its SHA-256. */
static int copy_file(int src_fd, int dir_fd, const char *name, char hex[65], int64_t *bytes,
                     struct gt_err *err)
{
    int out = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (out < 0) {
        return gt_err_set(err, -errno, "%s: %s", name, strerror(errno));
    }
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    char buf[1 << 16];
    int rc = 0;
    for (;;) {
        ssize_t n = read(src_fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            rc = gt_err_set(err, -errno, "reading %s: %s", name, strerror(errno));
            break;
        }
        if (n == 0) {
            break;
        }
        EVP_DigestUpdate(md, buf, (size_t)n);
        for (ssize_t off = 0; off < n && rc == 0;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno != EINTR) {
                rc = gt_err_set(err, -errno, "writing %s: %s", name, strerror(errno));
            }
            off += w > 0 ? w : 0;
        }
        if (rc) {
            break;
        }
        *bytes += n;
    }
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned dn = 0;
    EVP_DigestFinal_ex(md, d, &dn);
    EVP_MD_CTX_free(md);
    hex_of(d, dn, hex);
    if (rc == 0 && (fsync(out) < 0 || fchmod(out, STORE_FILE_MODE) < 0)) {
        rc = gt_err_set(err, -errno, "%s: %s", name, strerror(errno));
    }
    close(out);
    return rc;
}

struct entry_list GT_VEC(char *);

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One copy's walk: the directory listing's digest (NULL for a lone file),
 * bytes copied, the error, and the uid whose permissions reading the
 * source is under (0 or less: gantryd's own). */
struct walk {
    EVP_MD_CTX *listing;
    int64_t bytes;
    struct gt_err *err;
    int64_t uid;
};

/* openat(dir_fd, path, flags) with the file-system permissions of uid
 * (and group nogroup): gantryd, often root, copies only what the user who
 * registers could read. setfsuid is per thread, so only this open is
 * affected; errno is that of the open. */
static int open_as(int64_t uid, int dir_fd, const char *path, int flags)
{
    if (uid > 0) {
        setfsgid(GT_NOGROUP_GID);
        setfsuid((uid_t)uid);
    }
    int fd = openat(dir_fd, path, flags);
    int e = errno;
    if (uid > 0) {
        setfsuid(0);
        setfsgid(0);
    }
    errno = e;
    return fd;
}

/* Why the source path could not be opened (errno): 422 for a symlink or a
 * missing file, 403 when uid may not read it. */
static int open_error(struct gt_err *err, const char *path, int64_t uid)
{
    int e = errno;
    if (e == EACCES || e == EPERM) {
        return gt_err_set(err, GT_EFORBIDDEN, "spec.source: %s: uid %lld may not read it", path,
                          (long long)uid);
    }
    return gt_err_set(err, e == ELOOP || e == ENOENT || e == ENOTDIR ? GT_EINVAL : -e,
                      "spec.source: %s: %s", path,
                      e == ELOOP ? "a symlink (refused)" : strerror(e));
}

/* Copy what src_fd (opened O_PATH-free, O_NOFOLLOW) is into dir_fd/name:
 * a regular file, or a directory whose entries (sorted) are copied in
 * turn; anything else (symlinks included) is refused. The digest line of
 * each file ("<sha256> <relative path>\n", as sha256sum prints it) goes
 * into listing; a lone file's digest is its own SHA-256. */
static int copy_tree(struct walk *w, int src_fd, int dir_fd, const char *name, const char *rel,
                     int depth, char hex[65])
{
    EVP_MD_CTX *listing = w->listing;
    struct gt_err *err = w->err;
    struct stat st;
    if (fstat(src_fd, &st) < 0) {
        return gt_err_set(err, -errno, "%s: %s", rel, strerror(errno));
    }
    if (S_ISREG(st.st_mode)) {
        int rc = copy_file(src_fd, dir_fd, name, hex, &w->bytes, err);
        if (rc == 0 && listing) {
            EVP_DigestUpdate(listing, hex, 64);
            EVP_DigestUpdate(listing, "  ", 2);
            EVP_DigestUpdate(listing, rel, strlen(rel));
            EVP_DigestUpdate(listing, "\n", 1);
        }
        return rc;
    }
    if (!S_ISDIR(st.st_mode) || depth > COPY_DEPTH_MAX) {
        return gt_err_set(err, GT_EINVAL,
                          "spec.source: %s is not a regular file or directory (symlinks and "
                          "devices are refused)",
                          rel);
    }
    if (!listing) {
        return gt_err_set(err, GT_EINVAL, "spec.source: %s: a directory inside a file", rel);
    }
    if (mkdirat(dir_fd, name, 0755) < 0) {
        return gt_err_set(err, -errno, "%s: %s", rel, strerror(errno));
    }
    int sub = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    int dup_fd = dup(src_fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    struct entry_list names = {0};
    int rc = 0;
    if (sub < 0 || !d) {
        rc = gt_err_set(err, -errno, "%s: %s", rel, strerror(errno));
        if (dup_fd >= 0 && !d) {
            close(dup_fd);
        }
    }
    for (struct dirent *de; rc == 0 && (de = readdir(d));) {
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            *GT_VEC_PUSH(&names, 16) = gt_xstrdup(de->d_name);
        }
    }
    if (names.n) {
        qsort(names.v, names.n, sizeof(names.v[0]), name_cmp);
    }
    for (size_t i = 0; i < names.n; i++) {
        if (rc == 0) {
            char *crel = gt_xasprintf("%s/%s", rel, names.v[i]);
            int fd =
                open_as(w->uid, src_fd, names.v[i], O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
            if (fd < 0) {
                rc = open_error(err, crel, w->uid);
            } else {
                char fhex[65] = "";
                rc = copy_tree(w, fd, sub, names.v[i], crel, depth + 1, fhex);
                close(fd);
            }
            free(crel);
        }
        free(names.v[i]);
    }
    free(names.v);
    if (d) {
        closedir(d);
    }
    if (sub >= 0) {
        if (rc == 0 && fchmod(sub, STORE_DIR_MODE) < 0) {
            rc = gt_err_set(err, -errno, "%s: %s", rel, strerror(errno));
        }
        close(sub);
    }
    return rc;
}

static void *copy_main(void *arg)
{
    struct copy *cp = arg;
    int src = open_as(cp->uid, AT_FDCWD, cp->src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    int dir = -1;
    if (src < 0) {
        cp->rc = open_error(&cp->err, cp->src, cp->uid);
    } else if (mkdir(cp->tmp, 0755) < 0 ||
               (dir = open(cp->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        cp->rc = gt_err_set(&cp->err, -errno, "model store %s: %s", cp->tmp, strerror(errno));
    } else {
        struct stat st;
        bool is_dir = fstat(src, &st) == 0 && S_ISDIR(st.st_mode);
        struct walk w = {
            .listing = is_dir ? EVP_MD_CTX_new() : NULL, .err = &cp->err, .uid = cp->uid};
        if (w.listing) {
            EVP_DigestInit_ex(w.listing, EVP_sha256(), NULL);
        }
        cp->rc = copy_tree(&w, src, dir, cp->base, cp->base, 0, cp->hex);
        cp->bytes = w.bytes;
        if (w.listing) {
            unsigned char d[EVP_MAX_MD_SIZE];
            unsigned dn = 0;
            EVP_DigestFinal_ex(w.listing, d, &dn);
            EVP_MD_CTX_free(w.listing);
            hex_of(d, dn, cp->hex);
        }
        if (cp->rc == 0 && fchmod(dir, STORE_DIR_MODE) < 0) {
            cp->rc = gt_err_set(&cp->err, -errno, "model store: %s", strerror(errno));
        }
    }
    if (dir >= 0) {
        close(dir);
    }
    if (src >= 0) {
        close(src);
    }
    char one = 1;
    while (write(cp->pipe_fd[1], &one, 1) < 0 && errno == EINTR) {
    }
    return NULL;
}

/* Remove a tree this controller made (made writable first). */
static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        chmod(path, 0755);
        DIR *d = opendir(path);
        for (struct dirent *de; d && (de = readdir(d));) {
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
                char *sub = gt_xasprintf("%s/%s", path, de->d_name);
                remove_tree(sub);
                free(sub);
            }
        }
        if (d) {
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* ---- storage accounting ---- */

struct usage {
    const struct gt_ctl *c;
    const char *department, *project, *skip_key;
    struct gt_strmap seen; /* digests counted for the department */
    int64_t dept_bytes, project_bytes;
};

static void usage_add(struct usage *u, const char *key, const char *project, const char *digest,
                      int64_t bytes)
{
    if (!digest || (u->skip_key && !strcmp(key, u->skip_key))) {
        return;
    }
    const char *dept = gt_ctl_project_department(u->c, project);
    if (u->department && dept && !strcmp(dept, u->department) && !gt_strmap_get(&u->seen, digest)) {
        gt_strmap_put(&u->seen, digest, (void *)u);
        u->dept_bytes += bytes;
    }
    if (u->project && !strcmp(project, u->project)) {
        u->project_bytes += bytes;
    }
}

static int usage_cached_cb(const char *key, void *val, void *arg)
{
    const struct gt_api_modelversion *mv = cobj_mv(val);
    usage_add(arg, key, mv->o.meta.project, mv->status.digest, mv->status.size_bytes);
    return 0;
}

static int usage_held_cb(const char *key, void *val, void *arg)
{
    struct usage *u = arg;
    const struct held *h = val;
    if (!gt_ctl_get(u->c, GT_KIND_MODELVERSION, key)) {
        usage_add(u, key, h->project, h->digest, h->bytes);
    }
    return 0;
}

static void usage_tally(const struct gt_ctl *c, struct usage *u)
{
    gt_strmap_init(&u->seen);
    gt_strmap_each(&c->objs[GT_KIND_MODELVERSION], usage_cached_cb, u);
    gt_strmap_each(&c->models->held, usage_held_cb, u);
}

void gt_modelctl_storage(const struct gt_ctl *c, const char *department, const char *project,
                         int64_t *dept_bytes, int64_t *project_bytes)
{
    struct usage u = {.c = c, .department = department, .project = project};
    usage_tally(c, &u);
    gt_strmap_fini(&u.seen, NULL);
    *dept_bytes = u.dept_bytes;
    *project_bytes = u.project_bytes;
}

/* The storage quota for cp's version of bytes with this digest: none
 * added when its department already holds the digest. */
static int quota_check(struct gt_ctl *c, const char *project, const char *digest, int64_t bytes,
                       struct gt_err *err)
{
    const char *dept = gt_ctl_project_department(c, project);
    struct usage u = {.c = c, .department = dept ? dept : "", .project = project};
    usage_tally(c, &u);
    bool have = gt_strmap_get(&u.seen, digest) != NULL;
    gt_strmap_fini(&u.seen, NULL);
    return have ? 0 : c->models->storage_check(c, project, "the model artifact", bytes, err);
}

/* ---- prepare and its completion on the loop ---- */

static void set_status(struct copy *cp, const char *digest, const char *path)
{
    json_t *obj = cp->obj;
    json_t *spec = json_object_get(obj, "spec");
    if (!json_object_get(spec, "format")) {
        char key[160];
        snprintf(key, sizeof(key), "/models/%s/%s", gt_obj_project(obj),
                 json_string_value(json_object_get(spec, "model")));
        const struct gt_cobj *m = gt_ctl_get(cp->c, GT_KIND_MODEL, key);
        json_t *fw = m ? gt_json_path(m->obj, "spec.framework") : NULL;
        json_object_set(spec, "format", fw ? fw : json_string("sklearn"));
    }
    /* so that `gantry get modelversions -l gantry.dev/model=M` lists a model's */
    json_t *md = json_object_get(obj, "metadata");
    json_t *labels = json_object_get(md, "labels");
    if (!json_is_object(labels)) {
        labels = json_object();
        json_object_set_new(md, "labels", labels);
    }
    json_object_set(labels, GT_MODEL_LABEL, json_object_get(spec, "model"));
    char now[40];
    json_t *st = json_object();
    json_object_set_new(st, "phase", json_string("Ready"));
    json_object_set_new(st, "version", json_integer(number_of(gt_obj_name(obj))));
    json_object_set_new(st, "digest", json_string(digest));
    json_object_set_new(st, "path", json_string(path));
    json_object_set_new(st, "size", json_integer(cp->bytes));
    const char *job = json_string_value(gt_json_path(obj, "spec.source.job"));
    if (job) {
        json_object_set_new(st, "sourceJob", json_string(job));
    }
    if (cp->task[0]) {
        json_object_set_new(st, "sourceTask", json_string(cp->task));
    }
    json_object_set_new(st, "createdTime",
                        json_string(gt_time_format(gt_now_ms(), now, sizeof(now))));
    json_object_set_new(obj, "status", st);
}

/* The copy is done: dedupe, quota, put in place, status; then done(). */
static void copy_finish(struct copy *cp)
{
    struct gt_ctl *c = cp->c;
    struct gt_err err = cp->err;
    int rc = cp->rc;
    char digest[80], *final = NULL;
    snprintf(digest, sizeof(digest), "sha256:%s", cp->hex);
    if (rc == 0) {
        rc = quota_check(c, gt_obj_project(cp->obj), digest, cp->bytes, &err);
    }
    if (rc == 0) {
        final = gt_xasprintf("%s/sha256/%s", cp->store, cp->hex);
        struct stat st;
        if (stat(final, &st) == 0) {
            remove_tree(cp->tmp); /* identical content: stored once */
        } else if (rename(cp->tmp, final) < 0) {
            rc = gt_err_set(&err, -errno, "model store %s: %s", final, strerror(errno));
        }
    }
    if (rc) {
        remove_tree(cp->tmp);
        cp->done(cp->arg, rc, &err);
    } else {
        struct held *h = gt_xcalloc(1, sizeof(*h));
        h->project = gt_xstrdup(gt_obj_project(cp->obj));
        h->digest = gt_xstrdup(digest);
        h->bytes = cp->bytes;
        held_free(gt_strmap_put(&c->models->held, cp->key, h));
        char *path = gt_xasprintf("%s/%s", final, cp->base);
        set_status(cp, digest, path);
        free(path);
        cp->done(cp->arg, 0, NULL);
    }
    free(final);
    copy_free(cp);
}

static void on_copied(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct copy *cp = arg;
    char b;
    while (read(cp->pipe_fd[0], &b, 1) < 0 && errno == EINTR) {
    }
    pthread_join(cp->thread, NULL);
    copy_finish(cp);
}

int gt_modelctl_prepare(struct gt_ctl *c, enum gt_kind kind, const char *key, json_t *obj,
                        gt_prepared_fn done, void *arg, struct gt_err *err)
{
    if (kind != GT_KIND_MODELVERSION) {
        return 0;
    }
    if (gt_ctl_get(c, kind, key) || gt_strmap_get(&c->models->held, key)) {
        return gt_err_set(err, GT_EEXISTS, "modelversions \"%s\" already exists", gt_obj_name(obj));
    }
    char path[PATH_MAX];
    const char *store = store_dir(c);
    if (!store) {
        return gt_err_set(err, GT_EINVAL,
                          "spec.source: this cluster has no model store (gantryd --model-store "
                          "DIR)");
    }
    struct gt_api_modelversion *mv = gt_api_modelversion_new(obj);
    struct copy *cp = gt_xcalloc(1, sizeof(*cp));
    cp->pipe_fd[0] = cp->pipe_fd[1] = -1;
    int rc = resolve_source(c, mv, path, sizeof(path), cp->task, sizeof(cp->task), err);
    char *sha = gt_xasprintf("%s/sha256", store), *tmpd = gt_xasprintf("%s/tmp", store);
    if (rc == 0 &&
        ((mkdir(store, 0755) < 0 && errno != EEXIST) || (mkdir(sha, 0755) < 0 && errno != EEXIST) ||
         (mkdir(tmpd, 0700) < 0 && errno != EEXIST))) {
        rc = gt_err_set(err, -errno, "model store %s: %s", store, strerror(errno));
    }
    if (rc == 0 && pipe2(cp->pipe_fd, O_CLOEXEC) < 0) {
        rc = gt_err_set(err, -errno, "pipe: %s", strerror(errno));
    }
    free(sha);
    if (rc == 0) {
        const char *slash = strrchr(path, '/');
        cp->c = c;
        cp->key = gt_xstrdup(key);
        cp->src = gt_xstrdup(path);
        cp->base = gt_xstrdup(slash && slash[1] ? slash + 1 : "model");
        cp->store = gt_xstrdup(store);
        cp->tmp = gt_xasprintf("%s/%s", tmpd, mv->o.meta.uid ? mv->o.meta.uid : "x");
        cp->obj = json_incref(obj);
        cp->uid = mv->o.meta.creator.user ? mv->o.meta.creator.uid : -1;
        cp->done = done;
        cp->arg = arg;
        cp->ev = event_new(c->s->base, cp->pipe_fd[0], EV_READ, on_copied, cp);
        event_add(cp->ev, NULL);
        if (pthread_create(&cp->thread, NULL, copy_main, cp) != 0) {
            rc = gt_err_set(err, GT_EINTERNAL, "cannot start the copy");
        }
    }
    free(tmpd);
    gt_api_modelversion_free(mv);
    if (rc) {
        copy_free(cp);
        return rc;
    }
    return 1;
}

struct versions_of {
    const char *project, *model;
    struct gt_buf names;
};

static int versions_of_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct versions_of *v = arg;
    const struct gt_api_modelversion *mv = cobj_mv(val);
    if (!strcmp(mv->o.meta.project, v->project) && mv->spec.model &&
        !strcmp(mv->spec.model, v->model)) {
        gt_buf_printf(&v->names, "%s%s", v->names.len ? ", " : "", mv->o.meta.name);
    }
    return 0;
}

int gt_modelctl_refuse_delete(const struct gt_ctl *c, const char *project, const char *name,
                              struct gt_err *err)
{
    struct versions_of v = {.project = project, .model = name};
    gt_buf_init(&v.names);
    gt_strmap_each(&c->objs[GT_KIND_MODELVERSION], versions_of_cb, &v);
    int rc = 0;
    if (v.names.len) {
        rc = gt_err_set(err, GT_ECONFLICT,
                        "cannot delete: model \"%s\" has versions %s (delete them first)", name,
                        v.names.data);
    }
    gt_buf_fini(&v.names);
    return rc;
}

/* ---- after the store write ---- */

struct users {
    const char *digest, *skip;
    bool used;
};

static int digest_used_cb(const char *key, void *val, void *arg)
{
    struct users *u = arg;
    const struct gt_api_modelversion *mv = cobj_mv(val);
    u->used |= strcmp(key, u->skip) && mv->status.digest && !strcmp(mv->status.digest, u->digest);
    return 0;
}

static int digest_held_cb(const char *key, void *val, void *arg)
{
    struct users *u = arg;
    const struct held *h = val;
    u->used |= strcmp(key, u->skip) && !strcmp(h->digest, u->digest);
    return 0;
}

/* Remove the blob of digest unless a version other than key uses it. */
static void drop_blob(struct gt_ctl *c, const char *key, const char *digest)
{
    struct users u = {.digest = digest, .skip = key};
    gt_strmap_each(&c->objs[GT_KIND_MODELVERSION], digest_used_cb, &u);
    gt_strmap_each(&c->models->held, digest_held_cb, &u);
    const char *store = store_dir(c);
    if (!u.used && store && !strncmp(digest, "sha256:", 7) && !strchr(digest + 7, '/')) {
        char *blob = gt_xasprintf("%s/sha256/%s", store, digest + 7);
        remove_tree(blob);
        free(blob);
    }
}

void gt_modelctl_created(struct gt_ctl *c, enum gt_kind kind, const char *key, int rc)
{
    if (kind != GT_KIND_MODELVERSION || rc == 0) {
        return;
    }
    struct held *h = gt_strmap_del(&c->models->held, key);
    if (h) {
        drop_blob(c, key, h->digest);
        held_free(h);
    }
}

struct demote {
    struct gt_ctl *c;
    const char *key, *project, *model;
};

static int demote_cb(const char *key, void *val, void *arg)
{
    struct demote *d = arg;
    const struct gt_cobj *o = val;
    const struct gt_api_modelversion *mv = cobj_mv(o);
    if (strcmp(key, d->key) && !strcmp(mv->o.meta.project, d->project) && mv->spec.model &&
        !strcmp(mv->spec.model, d->model) && mv->spec.stage == GT_STAGE_PRODUCTION &&
        !gt_ctl_busy(d->c, key)) {
        json_t *obj = json_deep_copy(o->obj);
        json_object_set_new(json_object_get(obj, "spec"), "stage", json_string("Archived"));
        if (gt_ctl_write(d->c, GT_STORE_UPDATE, key, obj, o->rev, NULL, NULL)) {
            gt_log_warn("model version not archived", "key=%s", key);
        }
        json_decref(obj);
    }
    return 0;
}

void gt_modelctl_changed(struct gt_ctl *c, const char *key, const struct gt_api_object *old,
                         const struct gt_api_object *now)
{
    const struct gt_api_modelversion *o = (const struct gt_api_modelversion *)old;
    const struct gt_api_modelversion *n = (const struct gt_api_modelversion *)now;
    if (n) {
        held_free(gt_strmap_del(&c->models->held, key));
        if (n->spec.stage == GT_STAGE_PRODUCTION && (!o || o->spec.stage != GT_STAGE_PRODUCTION)) {
            struct demote d = {
                .c = c, .key = key, .project = n->o.meta.project, .model = n->spec.model};
            gt_strmap_each(&c->objs[GT_KIND_MODELVERSION], demote_cb, &d);
        }
    } else if (o && o->status.digest) {
        drop_blob(c, key, o->status.digest);
    }
}

/* ---- a Job's spec.outputs.model ---- */

#define METRICS_FILE_MAX (64 * 1024)

/* The numbers of the JSON object the job's task wrote at om->metrics_file
 * (new reference), or NULL. A small bounded read on the loop. */
static json_t *metrics_from_file(const struct gt_api_job *job, const struct gt_api_output_model *om)
{
    char task[256], path[PATH_MAX];
    struct gt_err err = {0};
    const struct gt_api_replica_spec *rs = source_replica(job, om->task, task, sizeof(task));
    if (!om->metrics_file || !rs ||
        host_path_of(job, rs, om->metrics_file, path, sizeof(path), &err)) {
        return NULL;
    }
    int fd = open_as(job->o.meta.creator.user ? job->o.meta.creator.uid : -1, AT_FDCWD, path,
                     O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    char *buf = gt_xmalloc(METRICS_FILE_MAX);
    ssize_t n = fd >= 0 ? read(fd, buf, METRICS_FILE_MAX) : -1;
    json_t *doc = n > 0 ? json_loadb(buf, (size_t)n, 0, NULL) : NULL;
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach(doc, k, v)
    {
        json_t *key = json_string(k);
        if (json_is_number(v) && json_object_size(out) < 64 && key &&
            gt_check_label_key(key, &err) == 0) {
            json_object_set(out, k, v);
        }
        json_decref(key);
    }
    json_decref(doc);
    free(buf);
    if (fd >= 0) {
        close(fd);
    }
    if (!json_object_size(out)) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* A registration for a job: the version (obj, a reference) at key, the
 * job's key. */
struct job_reg {
    struct gt_ctl *c;
    char *key, *job_key;
    json_t *obj;
};

static void job_reg_free(struct job_reg *jr)
{
    json_decref(jr->obj);
    free(jr->key);
    free(jr->job_key);
    free(jr);
}

/* An Event on the job (if it is still cached). */
static void job_event(struct gt_ctl *c, const char *job_key, const char *type, const char *reason,
                      const char *msg)
{
    const struct gt_cobj *o = gt_ctl_get(c, GT_KIND_JOB, job_key);
    if (o) {
        gt_events_record(c->s->events, o->t, type, reason, msg);
    }
}

static void job_reg_written(struct gt_ctl *c, int rc, void *arg)
{
    struct job_reg *jr = arg;
    gt_modelctl_created(c, GT_KIND_MODELVERSION, jr->key, rc);
    char msg[256];
    snprintf(msg, sizeof(msg), rc ? "model version %s not stored" : "registered model version %s",
             gt_obj_name(jr->obj));
    job_event(c, jr->job_key, rc ? "Warning" : "Normal",
              rc ? "ModelNotRegistered" : "ModelRegistered", msg);
    job_reg_free(jr);
}

/* The artifact is in the store (rc 0, jr->obj has its status): store the
 * version; else say why on the job. */
static void job_reg_prepared(void *arg, int rc, const struct gt_err *err)
{
    struct job_reg *jr = arg;
    struct gt_ctl *c = jr->c;
    if (rc == 0) {
        rc = gt_ctl_write(c, GT_STORE_CREATE, jr->key, jr->obj, 0, job_reg_written, jr);
        if (rc == 0) {
            return;
        }
        gt_modelctl_created(c, GT_KIND_MODELVERSION, jr->key, rc);
    }
    job_event(c, jr->job_key, "Warning", "ModelNotRegistered",
              err && err->msg[0] ? err->msg : "the store refused the model version");
    job_reg_free(jr);
}

struct by_job {
    const char *uid;
    bool found;
};

static int by_job_cb(const char *key, void *val, void *arg)
{
    (void)key;
    struct by_job *b = arg;
    const json_t *uid = gt_json_path(((const struct gt_cobj *)val)->obj, "metadata.labels");
    uid = json_object_get(uid, GT_MODEL_JOB_UID_LABEL);
    b->found |= json_is_string(uid) && !strcmp(json_string_value(uid), b->uid);
    return 0;
}

/* The ModelVersion spec.outputs.model of job asks for (new reference). */
static json_t *job_version(struct gt_ctl *c, const struct gt_api_job *job)
{
    const struct gt_api_output_model *om = &job->spec.outputs.model;
    char uid[40], ts[40];
    gt_uuid4(&c->s->uuids, uid, sizeof(uid));
    json_t *src = json_pack("{s:s, s:s}", "job", job->o.meta.name, "path", om->path);
    if (om->task) {
        json_object_set_new(src, "task", json_string(om->task));
    }
    json_t *spec = json_pack("{s:s, s:o}", "model", om->name, "source", src);
    if (om->format) {
        json_object_set_new(spec, "format", json_string(om->format));
    }
    json_t *metrics = metrics_from_file(job, om);
    if (metrics) {
        json_object_set_new(spec, "metrics", metrics);
    }
    json_t *md =
        json_pack("{s:s, s:s, s:s, s:s, s:{s:s}}", "name", om->name, "project", job->o.meta.project,
                  "uid", uid, "creationTimestamp", gt_time_format(gt_now_ms(), ts, sizeof(ts)),
                  "labels", GT_MODEL_JOB_UID_LABEL, job->o.meta.uid);
    json_t *creator = gt_json_path(job->o.json, "metadata.creator");
    if (creator) {
        json_object_set(md, "creator", creator);
    }
    return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "gantry.dev/v1", "kind", "ModelVersion",
                     "metadata", md, "spec", spec);
}

void gt_modelctl_job_changed(struct gt_ctl *c, const char *key, const struct gt_api_object *now)
{
    const struct gt_api_job *job = (const struct gt_api_job *)now;
    if (!job || !job->spec.has_outputs || !job->spec.outputs.has_model || !job->o.meta.uid) {
        return;
    }
    const struct gt_api_condition *done =
        gt_api_condition_find(&job->status.conditions, "Succeeded");
    struct gt_modelctl *mc = c->models;
    if (!done || !done->status || strcmp(done->status, "True") != 0 ||
        gt_strmap_get(&mc->registered, job->o.meta.uid)) {
        return;
    }
    gt_strmap_put(&mc->registered, job->o.meta.uid, mc);
    struct by_job b = {.uid = job->o.meta.uid};
    gt_strmap_each(&c->objs[GT_KIND_MODELVERSION], by_job_cb, &b);
    if (b.found) {
        return; /* registered before a restart */
    }
    json_t *obj = job_version(c, job);
    struct gt_err err = {0};
    struct gt_api_object *t = NULL;
    int rc = gt_modelctl_name(c, GT_KIND_MODELVERSION, job->o.meta.project, obj, &err);
    rc = rc ? rc : gt_api_decode(GT_KIND_MODELVERSION, obj, &t, &err);
    rc = rc ? rc : gt_modelctl_admit(c, t, true, &err);
    gt_api_object_free(t);
    if (rc == 0) {
        struct job_reg *jr = gt_xcalloc(1, sizeof(*jr));
        jr->c = c;
        jr->key =
            gt_route_key(gt_kind_get(GT_KIND_MODELVERSION), job->o.meta.project, gt_obj_name(obj));
        jr->job_key = gt_xstrdup(key);
        jr->obj = json_incref(obj);
        rc = gt_modelctl_prepare(c, GT_KIND_MODELVERSION, jr->key, obj, job_reg_prepared, jr, &err);
        if (rc != 1) {
            job_reg_free(jr);
        }
    }
    if (rc < 0) {
        job_event(c, key, "Warning", "ModelNotRegistered", err.msg);
    }
    json_decref(obj);
}
