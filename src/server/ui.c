/*
 * The web dashboard's files: gantryd serves what `make` built into the
 * dashboard directory (--ui-dir; by default `web` next to the gantryd
 * binary, where the build puts it) at `/`. Only two shapes of path are
 * served: `/` (index.html, never cached: it names the current assets) and
 * `/assets/<name>`, files whose names carry a hash of their content
 * (esbuild's [name]-[hash]), so they are cached for a year and never
 * revalidated. Nothing else is read from disk, and a name with anything
 * but letters, digits, '-', '_' and '.' (or starting with '.') is not
 * found. The page reaches gantry only through the public JSON API with the
 * user's bearer token, on this replica or another one --replica-url names
 * (the Content-Security-Policy allows exactly those); these files need no
 * token.
 *
 * Files are read per request (index.html is a few hundred bytes, the
 * bundle a few dozen KB, and browsers keep the assets), so a rebuilt
 * dashboard is served without a restart.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "server/reply.h"
#include "server/server_int.h"
#include "server/ui.h"

#define UI_FILE_MAX (16 * 1024 * 1024)
#define ASSETS_PREFIX "/assets/"

static const struct {
    const char *ext;
    const char *type;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".map", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".woff2", "font/woff2"},
};

bool gt_ui_path(const char *path)
{
    return !strcmp(path, "/") || !strcmp(path, "/index.html") ||
           !strncmp(path, ASSETS_PREFIX, strlen(ASSETS_PREFIX));
}

static bool name_ok(const char *name)
{
    if (!*name || *name == '.' || strlen(name) > 128) {
        return false;
    }
    for (const char *p = name; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.')) {
            return false;
        }
    }
    return true;
}

static const char *type_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < GT_ARRAY_LEN(types); i++) {
        if (!strcmp(dot, types[i].ext)) {
            return types[i].type;
        }
    }
    return "application/octet-stream";
}

/* The dashboard directory: --ui-dir, else "web" beside /proc/self/exe.
 * Caller frees; NULL if the binary's path is unknown. */
static char *ui_dir(const struct gt_server_config *cfg)
{
    if (cfg->ui_dir && *cfg->ui_dir) {
        return gt_xstrdup(cfg->ui_dir);
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) {
        return NULL;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) {
        return NULL;
    }
    *slash = '\0';
    return gt_xasprintf("%s/web", exe);
}

/* Read dir/rel (at most UI_FILE_MAX bytes) into *data (caller frees). 0 or
 * -errno (-EFBIG when larger). */
static int read_file(const char *dir, const char *rel, char **data, size_t *len)
{
    char *path = gt_xasprintf("%s/%s", dir, rel);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0) {
        return -errno;
    }
    int rc = 0;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = -ENOENT;
        goto out;
    }
    if (st.st_size > UI_FILE_MAX) {
        rc = -EFBIG;
        goto out;
    }
    buf = gt_xmalloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            rc = n < 0 ? -errno : -EIO;
            goto out;
        }
        got += (size_t)n;
    }
    *data = buf;
    *len = got;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return rc;
}

void gt_ui_serve(struct gt_req *r, enum evhttp_cmd_type cmd, const char *path)
{
    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        gt_req_error(r, GT_EMETHOD, "method not allowed on %.200s", path);
        return;
    }
    bool asset = !strncmp(path, ASSETS_PREFIX, strlen(ASSETS_PREFIX));
    const char *name = asset ? path + strlen(ASSETS_PREFIX) : "index.html";
    if (!name_ok(name)) {
        gt_req_error(r, GT_ENOTFOUND, "the server could not find the requested resource %.200s",
                     path);
        return;
    }
    char *dir = ui_dir(r->s->cfg);
    char *rel = asset ? gt_xasprintf("assets/%s", name) : gt_xstrdup(name);
    char *data = NULL;
    size_t len = 0;
    int rc = dir ? read_file(dir, rel, &data, &len) : -ENOENT;
    free(rel);
    if (rc) {
        gt_log_warn("ui", "path=%s dir=%s error=\"%s\"", path, dir ? dir : "-", strerror(-rc));
        if (asset) {
            gt_req_error(r, GT_ENOTFOUND, "no dashboard asset %.128s", name);
        } else {
            gt_req_error(r, GT_ENOTFOUND,
                         "the dashboard is not built in %.200s (run make, or give --ui-dir)",
                         dir ? dir : "web/");
        }
        free(dir);
        return;
    }
    free(dir);
    struct evkeyvalq *h = evhttp_request_get_output_headers(r->req);
    evhttp_add_header(h, "Cache-Control",
                      asset ? "public, max-age=31536000, immutable" : "no-store");
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    if (!asset) {
        /* the page loads only its own files and talks only to this server
         * and the other replicas (--replica-url) */
        struct gt_buf csp;
        gt_buf_init(&csp);
        gt_buf_printf(&csp, "default-src 'self'; connect-src 'self'");
        const struct gt_config_list *urls = &r->s->cfg->replica_urls;
        for (size_t i = 0; i < urls->n; i++) {
            gt_buf_printf(&csp, " %s", urls->items[i]);
        }
        gt_buf_printf(&csp, "; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
                            "frame-ancestors 'none'");
        evhttp_add_header(h, "Content-Security-Policy", csp.data);
        gt_buf_fini(&csp);
        evhttp_add_header(h, "Referrer-Policy", "no-referrer");
    }
    gt_req_reply_as(r, 200, type_of(name), data, len);
    free(data);
}
