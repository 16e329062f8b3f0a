/*
 * The node's image cache, run by the shim as root before its container
 * starts (see gt_image_pull). Layout of IMAGE_DIR:
 *   store/<hex>/   one unpacked image per manifest digest: rootfs/ (the
 *                  read-only lower layer every task of the image shares),
 *                  config.json (umoci's runtime config), image.json (the
 *                  image config), size (bytes); it appears by rename, so
 *                  a crash never leaves half an image there
 *   locks/<hex>.pull  exclusive flock while the digest is pulled/unpacked
 *   locks/<hex>.use   shared flock held by each task using the image, for
 *                  its whole life; GC removes an image only when it can
 *                  take this one exclusively
 *   tmp/           OCI layouts and bundles being made; skopeo's TMPDIR
 * The mtime of store/<hex> is its last use (touched at every task start).
 * skopeo, umoci run with fork + execve and an explicit argv, never a
 * shell; their stderr becomes the error message.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/shim_spec.h"

#define TOOL_OUTPUT_MAX (1 << 20)
#define PULL_ATTEMPTS 3
#define PULL_BACKOFF_MS 500
#define BLOB_MAX_BYTES (4 << 20)

/* ---- running tools ---- */

static void append_capped(struct gt_buf *b, const char *data, size_t n)
{
    if (b && b->len < TOOL_OUTPUT_MAX) {
        gt_buf_append(b, data, n < TOOL_OUTPUT_MAX - b->len ? n : TOOL_OUTPUT_MAX - b->len);
    }
}

int gt_image_tool_run(char *const *argv, char *const *env, struct gt_buf *out,
                      struct gt_buf *errout)
{
    int o[2] = {-1, -1}, e[2] = {-1, -1};
    if (pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0) {
        int rc = -errno;
        for (int i = 0; i < 2; i++) {
            if (o[i] >= 0) {
                close(o[i]);
            }
        }
        return rc;
    }
    pid_t pid = fork();
    if (pid == 0) {
        gt_shim_exec_tool(argv, env, o[1], e[1]);
    }
    close(o[1]);
    close(e[1]);
    if (pid < 0) {
        int rc = -errno;
        close(o[0]);
        close(e[0]);
        return rc;
    }
    struct pollfd pfd[2] = {{o[0], POLLIN, 0}, {e[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (pfd[i].fd < 0 || !pfd[i].revents) {
                continue;
            }
            char buf[8192];
            ssize_t r = read(pfd[i].fd, buf, sizeof(buf));
            if (r > 0) {
                append_capped(i == 0 ? out : errout, buf, (size_t)r);
            } else if (r == 0 || errno != EINTR) {
                close(pfd[i].fd);
                pfd[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++) {
        if (pfd[i].fd >= 0) {
            close(pfd[i].fd);
        }
    }
    int st = -1;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (out) {
        gt_buf_append(out, "", 0);
    }
    return st;
}

/* ---- events for the agent ---- */

void gt_image_event_add(const char *state_dir, const char *reason, const char *fmt, ...)
{
    char msg[1024], path[PATH_MAX + 16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++) {
        if (*p == '\t' || *p == '\n') {
            *p = ' ';
        }
    }
    snprintf(path, sizeof(path), "%s/events", state_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        gt_log_warn("cannot record an event", "reason=%s err=\"%s\"", reason, strerror(errno));
        return;
    }
    if (dprintf(fd, "%s\t%s\n", reason, msg) < 0) {
        gt_log_warn("cannot record an event", "reason=%s err=\"%s\"", reason, strerror(errno));
    }
    close(fd);
}

/* ---- files ---- */

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

static void rm_tree(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Bytes on disk below the directory fd (taken), symlinks not followed. */
static int64_t du_fd(int fd, int depth)
{
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return 0;
    }
    int64_t sum = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            continue;
        }
        sum += (int64_t)st.st_blocks * 512;
        if (S_ISDIR(st.st_mode) && depth < 256) {
            int c = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            sum += c >= 0 ? du_fd(c, depth + 1) : 0;
        }
    }
    closedir(d);
    return sum;
}

static int64_t du(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd < 0 ? 0 : du_fd(fd, 0);
}

static int mkdir_p2(const char *dir, const char *sub, struct gt_err *err)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/%s", dir, sub);
    if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || (mkdir(p, 0700) < 0 && errno != EEXIST)) {
        return gt_err_set(err, -errno, "mkdir %s: %s", p, strerror(errno));
    }
    return 0;
}

/* Open IMAGE_DIR/locks/<hex>.<kind> and flock it (LOCK_SH/LOCK_EX, maybe
 * LOCK_NB). The fd, or -errno. */
static int lock_open(const char *image_dir, const char *hex, const char *kind, int op)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "%s/locks/%s.%s", image_dir, hex, kind);
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        return -errno;
    }
    while (flock(fd, op) < 0) {
        if (errno != EINTR) {
            int rc = -errno;
            close(fd);
            return rc;
        }
    }
    return fd;
}

/* ---- pulling ---- */

struct puller {
    const struct gt_shim_image *im;
    struct gt_faults *faults; /* borrowed; may be NULL */
    struct gt_image_ref ref;
    char *env[4];
    char path_env[128], home_env[PATH_MAX + 8], tmp_env[PATH_MAX + 16];
    char tls_flag[32];
};

static bool insecure(const struct puller *p)
{
    for (size_t i = 0; i < p->im->n_insecure; i++) {
        if (!strcmp(p->im->insecure[i], p->ref.host)) {
            return true;
        }
    }
    return false;
}

/* Transient failures are retried; a missing tag or a refused login is not. */
static bool permanent(const char *msg)
{
    static const char *const words[] = {"manifest unknown", "name unknown",  "unauthorized",
                                        "denied",           "invalid",       "not found",
                                        "no such image",    "does not match"};
    for (size_t i = 0; i < GT_ARRAY_LEN(words); i++) {
        if (strstr(msg, words[i])) {
            return true;
        }
    }
    return false;
}

/* Run a skopeo command with retries; stdout into out. */
static int skopeo(struct puller *p, char **argv, struct gt_buf *out, struct gt_err *err)
{
    char msg[700] = "";
    for (int attempt = 0; attempt < PULL_ATTEMPTS; attempt++) {
        if (attempt > 0) {
            struct timespec ts = {0, (long)(PULL_BACKOFF_MS << (attempt - 1)) * 1000000L};
            while (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            nanosleep(&ts, NULL);
        }
        struct gt_buf eb;
        gt_buf_init(&eb);
        gt_buf_reset(out);
        int st = gt_image_tool_run(argv, p->env, out, &eb);
        gt_buf_append(&eb, "", 0);
        if (st == 0) {
            gt_buf_fini(&eb);
            return 0;
        }
        gt_image_tool_message(eb.data ? eb.data : "", msg, sizeof(msg));
        gt_buf_fini(&eb);
        if (st < 0) {
            snprintf(msg, sizeof(msg), "cannot run skopeo: %s", strerror(-st));
            break;
        }
        if (permanent(msg)) {
            break;
        }
    }
    return gt_err_set(err, GT_EINVAL, "%s", msg[0] ? msg : "skopeo failed");
}

static void skopeo_argv(struct puller *p, char **argv, size_t *n, const char *cmd, bool src)
{
    argv[(*n)++] = (char *)"skopeo";
    argv[(*n)++] = (char *)cmd;
    snprintf(p->tls_flag, sizeof(p->tls_flag), "--%stls-verify=%s", src ? "src-" : "",
             insecure(p) ? "false" : "true");
    argv[(*n)++] = p->tls_flag;
    if (p->im->auth_file) {
        argv[(*n)++] = (char *)(src ? "--src-authfile" : "--authfile");
        argv[(*n)++] = p->im->auth_file;
    }
}

/* The digest the reference names now (asks the registry for a tag). */
static int resolve(struct puller *p, char *digest, size_t len, struct gt_err *err)
{
    if (p->ref.digest[0]) {
        snprintf(digest, len, "%s", p->ref.digest);
        return 0;
    }
    char src[1024];
    char *argv[12];
    size_t n = 0;
    gt_image_ref_transport(&p->ref, NULL, src, sizeof(src));
    skopeo_argv(p, argv, &n, "inspect", false);
    argv[n++] = (char *)"--format";
    argv[n++] = (char *)"{{.Digest}}";
    argv[n++] = src;
    argv[n] = NULL;
    struct gt_buf out;
    gt_buf_init(&out);
    int rc = skopeo(p, argv, &out, err);
    if (rc == 0) {
        size_t k = out.data ? strcspn(out.data, "\r\n ") : 0;
        snprintf(digest, len, "%.*s", (int)k, out.data ? out.data : "");
        if (strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != 71) {
            rc = gt_err_set(err, GT_EINVAL, "skopeo inspect gave no digest");
        }
    }
    gt_buf_fini(&out);
    return rc;
}

/* A blob of an OCI layout, parsed. */
static json_t *layout_blob(const char *layout, const char *digest, struct gt_err *err)
{
    if (!digest || strncmp(digest, "sha256:", 7) != 0 || strchr(digest, '/')) {
        gt_err_set(err, GT_EINVAL, "OCI layout %s: bad digest", layout);
        return NULL;
    }
    char path[PATH_MAX + 100], *text;
    size_t len;
    snprintf(path, sizeof(path), "%s/blobs/sha256/%s", layout, digest + 7);
    if (gt_file_read(path, BLOB_MAX_BYTES, &text, &len, err) < 0) {
        return NULL;
    }
    json_t *j = json_loadb(text, len, 0, NULL);
    free(text);
    if (!j) {
        gt_err_set(err, GT_EINVAL, "%s: not JSON", path);
    }
    return j;
}

/* The image config of the single image of an OCI layout. */
static json_t *layout_config(const char *layout, struct gt_err *err)
{
    char path[PATH_MAX + 16], *text;
    size_t len;
    snprintf(path, sizeof(path), "%s/index.json", layout);
    if (gt_file_read(path, BLOB_MAX_BYTES, &text, &len, err) < 0) {
        return NULL;
    }
    json_t *index = json_loadb(text, len, 0, NULL);
    free(text);
    const char *mdig = json_string_value(
        gt_json_path(json_array_get(json_object_get(index, "manifests"), 0), "digest"));
    json_t *manifest = layout_blob(layout, mdig, err);
    json_t *config =
        manifest
            ? layout_blob(layout, json_string_value(gt_json_path(manifest, "config.digest")), err)
            : NULL;
    json_decref(manifest);
    json_decref(index);
    return config;
}

/* Remove what an interrupted pull of hex left in IMAGE_DIR/tmp. Safe under
 * the digest's pull lock: nobody else works on that digest meanwhile. */
static void remove_leftovers(const char *image_dir, const char *hex)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s/tmp", image_dir);
    DIR *d = opendir(tmp);
    struct dirent *de;
    size_t n = strlen(hex);
    while (d && (de = readdir(d)) != NULL) {
        if (!strncmp(de->d_name, hex, n) && de->d_name[n] == '.') {
            char p[PATH_MAX + 300];
            snprintf(p, sizeof(p), "%s/%s", tmp, de->d_name);
            rm_tree(p);
        }
    }
    if (d) {
        closedir(d);
    }
}

/* Pull digest into IMAGE_DIR/store/<hex> (the caller holds the pull lock). */
static int fetch(struct puller *p, const char *digest, const char *store, struct gt_err *err)
{
    const char *hex = digest + 7;
    char layout[PATH_MAX], bundle[PATH_MAX], src[1024], dst[PATH_MAX + 16], image[PATH_MAX + 16];
    snprintf(layout, sizeof(layout), "%s/tmp/%s.%d.oci", p->im->dir, hex, (int)getpid());
    snprintf(bundle, sizeof(bundle), "%s/tmp/%s.%d.bundle", p->im->dir, hex, (int)getpid());
    rm_tree(layout);
    rm_tree(bundle);
    gt_image_ref_transport(&p->ref, digest, src, sizeof(src));
    snprintf(dst, sizeof(dst), "oci:%s:img", layout);
    char *argv[12];
    size_t n = 0;
    skopeo_argv(p, argv, &n, "copy", true);
    argv[n++] = (char *)"-q";
    argv[n++] = src;
    argv[n++] = dst;
    argv[n] = NULL;
    struct gt_buf out;
    gt_buf_init(&out);
    int rc = skopeo(p, argv, &out, err);
    json_t *config = rc == 0 ? layout_config(layout, err) : NULL;
    if (rc == 0 && !config) {
        rc = GT_EINVAL;
    }
    if (rc == 0 && gt_fault_hit(p->faults, GT_FP_IMAGE_UNPACK) == GT_FAULT_FAIL) {
        rc = gt_err_set(err, GT_EINVAL, "umoci unpack: fault point %s", GT_FP_IMAGE_UNPACK);
    }
    if (rc == 0) {
        snprintf(image, sizeof(image), "%s:img", layout);
        char *unpack[] = {(char *)"umoci", (char *)"unpack", (char *)"--image",
                          image,           bundle,           NULL};
        struct gt_buf eb;
        gt_buf_init(&eb);
        int st = gt_image_tool_run(unpack, p->env, NULL, &eb);
        gt_buf_append(&eb, "", 0);
        if (st != 0) {
            char msg[700];
            gt_image_tool_message(eb.data ? eb.data : "", msg, sizeof(msg));
            rc = gt_err_set(err, GT_EINVAL, "umoci unpack: %s", msg);
        }
        gt_buf_fini(&eb);
    }
    if (rc == 0) {
        char *text = gt_json_dumps(config);
        rc = gt_agent_file_write_atomic(bundle, "image.json", text, strlen(text), true, err);
        free(text);
    }
    if (rc == 0) {
        char num[32];
        int k = snprintf(num, sizeof(num), "%lld\n", (long long)du(bundle));
        rc = gt_agent_file_write_atomic(bundle, "size", num, (size_t)k, true, err);
    }
    if (rc == 0 && rename(bundle, store) < 0) {
        rc = gt_err_set(err, -errno, "rename %s: %s", store, strerror(errno));
    }
    json_decref(config);
    gt_buf_fini(&out);
    rm_tree(layout);
    rm_tree(bundle);
    return rc;
}

static int64_t read_size(const char *store)
{
    char path[PATH_MAX + 8], *text;
    size_t len;
    snprintf(path, sizeof(path), "%s/size", store);
    if (gt_file_read(path, 64, &text, &len, NULL) < 0) {
        return 0;
    }
    int64_t v = strtoll(text, NULL, 10);
    free(text);
    return v;
}

/* ---- garbage collection ---- */

/* Usage and limit in bytes: the images' total against a byte threshold,
 * or the file system's use against a percentage of its size. */
static void gc_usage(const struct gt_shim_image *im, int64_t images_bytes, int64_t *usage,
                     int64_t *limit)
{
    struct statvfs sv;
    if (im->gc_threshold_bytes > 0 || statvfs(im->dir, &sv) < 0) {
        *usage = images_bytes;
        *limit = im->gc_threshold_bytes > 0 ? im->gc_threshold_bytes : INT64_MAX;
        return;
    }
    int64_t size = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
    *usage = ((int64_t)sv.f_blocks - (int64_t)sv.f_bfree) * (int64_t)sv.f_frsize;
    *limit = size / 100 * im->gc_threshold_percent;
}

static void gc(const struct gt_shim_image *im)
{
    if (im->gc_threshold_bytes <= 0 && im->gc_threshold_percent <= 0) {
        return;
    }
    char store[PATH_MAX];
    snprintf(store, sizeof(store), "%s/store", im->dir);
    DIR *d = opendir(store);
    if (!d) {
        return;
    }
    struct gt_image_entry *e = NULL;
    size_t n = 0, cap = 0;
    int64_t total = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        char p[PATH_MAX + 300];
        if (strlen(de->d_name) != 64) {
            continue;
        }
        snprintf(p, sizeof(p), "%s/%s", store, de->d_name);
        if (stat(p, &st) < 0) {
            continue;
        }
        GT_VEC_RESERVE(e, cap, n + 1, 16);
        memset(&e[n], 0, sizeof(e[n]));
        snprintf(e[n].digest_hex, sizeof(e[n].digest_hex), "%.64s", de->d_name);
        e[n].size_bytes = read_size(p);
        e[n].last_used_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
        int fd = lock_open(im->dir, de->d_name, "use", LOCK_EX | LOCK_NB);
        e[n].in_use = fd < 0;
        if (fd >= 0) {
            close(fd);
        }
        total += e[n].size_bytes;
        n++;
    }
    closedir(d);
    int64_t usage, limit;
    gc_usage(im, total, &usage, &limit);
    size_t *victims = gt_xcalloc(n + 1, sizeof(size_t));
    size_t k = gt_image_gc_plan(e, n, usage, limit, victims);
    for (size_t i = 0; i < k; i++) {
        const char *hex = e[victims[i]].digest_hex;
        /* taken exclusively: no task uses it and none can start meanwhile */
        int fd = lock_open(im->dir, hex, "use", LOCK_EX | LOCK_NB);
        if (fd < 0) {
            continue;
        }
        char p[PATH_MAX + 80], trash[PATH_MAX + 80];
        snprintf(p, sizeof(p), "%s/%s", store, hex);
        snprintf(trash, sizeof(trash), "%s/tmp/%s.%d.gc", im->dir, hex, (int)getpid());
        if (rename(p, trash) == 0) {
            rm_tree(trash);
            gt_log_info("image collected", "digest=sha256:%s bytes=%lld", hex,
                        (long long)e[victims[i]].size_bytes);
        }
        close(fd);
    }
    free(victims);
    free(e);
}

/* ---- the whole pull ---- */

static int pull_locked(struct puller *p, const char *state_dir, struct gt_image_pulled *out,
                       struct gt_err *err)
{
    const char *hex = out->digest + 7;
    snprintf(out->dir, sizeof(out->dir), "%s/store/%s", p->im->dir, hex);
    int pull_fd = lock_open(p->im->dir, hex, "pull", LOCK_EX);
    if (pull_fd < 0) {
        return gt_err_set(err, pull_fd, "lock image %s: %s", out->digest, strerror(-pull_fd));
    }
    int rc = 0;
    if (access(out->dir, F_OK) == 0) {
        out->cached = true;
    } else {
        gt_image_event_add(state_dir, "Pulling", "Pulling image \"%s\"", p->im->ref);
        remove_leftovers(p->im->dir, hex);
        int64_t t0 = gt_mono_ms();
        rc = fetch(p, out->digest, out->dir, err);
        out->pull_ms = gt_mono_ms() - t0;
    }
    close(pull_fd);
    if (rc < 0) {
        return rc;
    }
    utimensat(AT_FDCWD, out->dir, NULL, 0); /* last use: now */
    out->size_bytes = read_size(out->dir);
    char path[PATH_MAX + 16], *text;
    size_t len;
    snprintf(path, sizeof(path), "%s/image.json", out->dir);
    rc = gt_file_read(path, BLOB_MAX_BYTES, &text, &len, err);
    if (rc < 0) {
        return rc;
    }
    out->config = json_loadb(text, len, 0, NULL);
    free(text);
    if (!out->config) {
        return gt_err_set(err, GT_EINVAL, "%s: not JSON", path);
    }
    if (out->cached) {
        gt_image_event_add(state_dir, "Pulled",
                           "Container image \"%s\" already present on machine (%s, %lld bytes)",
                           p->im->ref, out->digest, (long long)out->size_bytes);
    } else {
        gt_image_event_add(
            state_dir, "Pulled", "Successfully pulled image \"%s\" (%s, %lld bytes) in %.3f s",
            p->im->ref, out->digest, (long long)out->size_bytes, (double)out->pull_ms / 1000.0);
    }
    return 0;
}

int gt_image_pull(const struct gt_shim_image *im, const char *state_dir, struct gt_faults *faults,
                  struct gt_image_pulled *out, struct gt_err *err)
{
    memset(out, 0, sizeof(*out));
    out->use_fd = -1;
    struct puller p = {.im = im, .faults = faults};
    int rc = gt_image_ref_parse(im->ref, &p.ref, err);
    rc = rc < 0 ? rc : mkdir_p2(im->dir, "store", err);
    rc = rc < 0 ? rc : mkdir_p2(im->dir, "locks", err);
    rc = rc < 0 ? rc : mkdir_p2(im->dir, "tmp", err);
    if (rc < 0) {
        return rc;
    }
    snprintf(p.path_env, sizeof(p.path_env), "PATH=%s", GT_GANTLET_DEFAULT_PATH);
    snprintf(p.home_env, sizeof(p.home_env), "HOME=%s", im->dir);
    snprintf(p.tmp_env, sizeof(p.tmp_env), "TMPDIR=%s/tmp", im->dir);
    p.env[0] = p.path_env;
    p.env[1] = p.home_env;
    p.env[2] = p.tmp_env;
    p.env[3] = NULL;
    rc = resolve(&p, out->digest, sizeof(out->digest), err);
    if (rc < 0) {
        return rc;
    }
    /* held first: GC cannot take the image away between pull and use */
    out->use_fd = lock_open(im->dir, out->digest + 7, "use", LOCK_SH);
    if (out->use_fd < 0) {
        return gt_err_set(err, out->use_fd, "lock image %s: %s", out->digest,
                          strerror(-out->use_fd));
    }
    rc = pull_locked(&p, state_dir, out, err);
    if (rc == 0) {
        gc(im);
    }
    return rc;
}

void gt_image_pulled_fini(struct gt_image_pulled *p)
{
    if (p->use_fd >= 0) {
        close(p->use_fd);
    }
    json_decref(p->config);
    memset(p, 0, sizeof(*p));
    p->use_fd = -1;
}
