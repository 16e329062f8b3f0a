/*
 * The serving gateway: an HAProxy (2.6, Debian's) that gantryd runs as its
 * child, configures from the InferenceServices (isvcctl.c says what) and
 * supervises: restarted when it dies, killed with gantryd
 * (PR_SET_PDEATHSIG), so no gateway outlives its control plane.
 *
 * One frontend on --gateway-listen routes /serving/P/N/... (prefix
 * stripped: /serving/P/N/v2/models/x reaches the replica's /v2/models/x)
 * and Host N.P.<--gateway-domain> (path kept) to the backend "P.N", one
 * per service; anything else gets 404. A backend balances roundrobin over
 * its replicas ("server" = the replica's job name) by weight, checks each
 * on the service's readiness path every 500 ms (rise 1, fall 2), and
 * retries a request whose connection failed or got no answer on another
 * replica (retry-on conn-failure empty-response response-timeout,
 * redispatch), so a killed replica's requests are answered by the others.
 * A request is read whole before it is sent (http-buffer-request): a layer
 * 7 retry needs the whole request at hand, else a reused server connection
 * that closes under a request with a body ends in a 502.
 *
 * Access (docs/api.md "Serving gateway"): a service not spec.public needs
 * `Authorization: Bearer TOKEN` of a user who may read its project. The
 * check is HAProxy's own, with no call-out per request: the map file
 * auth.map holds "<sha256(token) hex>:<project> yes" for every user of
 * the token file and every project of a non-public service the user may
 * read, kept current through the runtime API (add map / del map) as
 * projects' members change; HAProxy hashes the request's bearer token
 * (sha2(256)) and looks it up. No token: 401; a token without access: 403.
 * The plain tokens never reach the gateway's files.
 *
 * Changes go through the runtime socket (one command per connection, as
 * HAProxy's stats socket wants): `set server B/S weight W`, `set server
 * B/S state drain|ready`, `set server B/S addr IP port N`, `add server`
 * (added at weight 0 and in maintenance, then `enable health` and `enable
 * server`: dynamic servers take no default-server settings, so the check
 * settings are spelled out) and `del server` (after `state maint` and
 * `shutdown sessions`). A reload happens only when the set of backends,
 * a readiness path or a service's access changes: the whole file is
 * written from the desired state (servers and weights included, so no
 * runtime change is lost) and a new HAProxy takes the listeners over the
 * socket (-x) and tells the old one to finish its requests (-sf).
 * Runtime commands are synchronous on the loop thread over a local Unix
 * socket with a 1 s timeout: HAProxy answers them in microseconds. A
 * command that fails leaves the known state unchanged, so the next commit
 * tries again.
 *
 * Every GT_GATEWAY_POLL_MS the gateway reads `show stat` (requests in
 * flight, counters, health, HAProxy's average response times) into the
 * per-replica stats isvcctl.c reads, and calls polled().
 *
 * Request log: HAProxy sends a line per request (GT_GWLOG_FORMAT) to the
 * datagram socket reqlog.sock, which gwlog.c reads into per-replica
 * latency windows (gt_gateway_latency). With `option log-separate-errors`
 * a request that was answered 5xx, retried, redispatched or ended
 * abnormally (termination flags, as HAProxy's manual section 8.5 lists
 * them) is logged at level err, and those alone also go to HAProxy's
 * stderr, haproxy.log: a 502 can be told from there (which replica, the
 * timers, the flags, the retries).
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/gateway.h"
#include "server/gwlog.h"

#define RT_TIMEOUT_MS 1000
#define STAT_MAX_BYTES (4 << 20)
#define RESTART_GAP_MS 1000
#define START_MAX_MS 5000 /* a started HAProxy answers on its socket by then */

static const char marker[] = "";
#define MARK ((void *)marker)

struct gw_srv {
    char host[64];
    int port;
    int weight;
    bool drain;
};

struct gw_svc {
    char *project, *name;
    bool public_;
    char *ready_path;
    struct gt_strmap servers; /* server name -> struct gw_srv */
};

struct pids GT_VEC(pid_t);

struct gt_gateway {
    struct gt_server *s;
    gt_gateway_polled_fn *polled;
    void *arg;
    char *dir, *cfg_path, *sock_path, *map_path, *log_path, *reqlog_path;
    char url[160];
    pid_t pid;                             /* the HAProxy serving now; -1: none */
    struct pids old;                       /* older ones finishing their requests */
    int64_t started_ms;                    /* when pid was started */
    bool answering;                        /* pid answers on the socket (not the one it replaces) */
    struct gt_strmap want, have;           /* "P.N" -> struct gw_svc */
    struct gt_strmap want_auth, have_auth; /* auth map keys -> MARK */
    struct gt_strmap stats;                /* "P.N/server" -> struct gt_gw_track */
    struct gt_gwlog *reqlog;               /* every request's latency, from HAProxy's log */
    struct event *timer;
};

/* ---- the desired and known states ---- */

static void svc_free(void *p)
{
    struct gw_svc *v = p;
    if (!v) {
        return;
    }
    free(v->project);
    free(v->name);
    free(v->ready_path);
    gt_strmap_fini(&v->servers, free);
    free(v);
}

static struct gw_svc *svc_new(const char *project, const char *name, bool public_,
                              const char *ready_path)
{
    struct gw_svc *v = gt_xcalloc(1, sizeof(*v));
    v->project = gt_xstrdup(project);
    v->name = gt_xstrdup(name);
    v->public_ = public_;
    v->ready_path = gt_xstrdup(ready_path);
    gt_strmap_init(&v->servers);
    return v;
}

static char *svc_id(const char *project, const char *name)
{
    return gt_xasprintf("%s.%s", project, name);
}

void gt_gateway_begin(struct gt_gateway *gw)
{
    gt_strmap_fini(&gw->want, svc_free);
    gt_strmap_init(&gw->want);
}

void gt_gateway_service(struct gt_gateway *gw, const char *project, const char *name, bool public_,
                        const char *readiness_path)
{
    char *id = svc_id(project, name);
    svc_free(gt_strmap_put(&gw->want, id, svc_new(project, name, public_, readiness_path)));
    free(id);
}

void gt_gateway_server(struct gt_gateway *gw, const char *project, const char *name,
                       const char *server, const char *host, int port, int weight, bool drain)
{
    char *id = svc_id(project, name);
    struct gw_svc *v = gt_strmap_get(&gw->want, id);
    free(id);
    if (!v) {
        return;
    }
    struct gw_srv *srv = gt_xcalloc(1, sizeof(*srv));
    snprintf(srv->host, sizeof(srv->host), "%s", host);
    srv->port = port;
    srv->weight = weight < 0 ? 0 : weight > 256 ? 256 : weight;
    srv->drain = drain;
    free(gt_strmap_put(&v->servers, server, srv));
}

/* ---- files ---- */

static int write_file(const char *path, const char *data, size_t len, struct gt_err *err)
{
    char *tmp = gt_xasprintf("%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int rc = 0;
    if (fd < 0 || write(fd, data, len) != (ssize_t)len) {
        rc = gt_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
    }
    if (fd >= 0 && close(fd) != 0 && rc == 0) {
        rc = gt_err_set(err, -errno, "%s: %s", tmp, strerror(errno));
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = gt_err_set(err, -errno, "%s: %s", path, strerror(errno));
    }
    free(tmp);
    return rc;
}

struct cfg_ctx {
    struct gt_gateway *gw;
    struct gt_buf *b;
};

static int server_line_cb(const char *name, void *val, void *arg)
{
    const struct gw_srv *srv = val;
    gt_buf_printf(arg, "    server %s %s:%d weight %d check inter 500ms fall 2 rise 1\n", name,
                  srv->host, srv->port, srv->drain ? 0 : srv->weight);
    return 0;
}

static int route_cb(const char *id, void *val, void *arg)
{
    const struct gw_svc *v = val;
    struct cfg_ctx *x = arg;
    gt_buf_printf(x->b,
                  "    use_backend %s if { path_beg /serving/%s/%s/ } || { path /serving/%s/%s }\n",
                  id, v->project, v->name, v->project, v->name);
    gt_buf_printf(x->b, "    use_backend %s if { var(txn.host) -m str %s.%s.%s }\n", id, v->name,
                  v->project, x->gw->s->cfg->gateway_domain);
    return 0;
}

static int backend_cb(const char *id, void *val, void *arg)
{
    const struct gw_svc *v = val;
    struct cfg_ctx *x = arg;
    struct gt_buf *b = x->b;
    gt_buf_printf(b,
                  "backend %s\n"
                  "    balance roundrobin\n"
                  "    option httpchk GET %s\n"
                  "    http-check expect status 200\n"
                  "    option http-buffer-request\n"
                  "    retry-on conn-failure empty-response response-timeout\n"
                  "    retries 3\n"
                  "    option redispatch 1\n",
                  id, v->ready_path);
    if (!v->public_) {
        gt_buf_printf(b,
                      "    http-request return status 401 content-type text/plain string "
                      "\"a bearer token is required\" hdr www-authenticate Bearer unless "
                      "{ http_auth_bearer -m found }\n"
                      "    http-request set-var(txn.ak) http_auth_bearer,sha2(256),hex,lower,"
                      "concat(:%s,,)\n"
                      "    http-request return status 403 content-type text/plain string "
                      "\"the token may not read project %s\" unless "
                      "{ var(txn.ak),map(%s,no) -m str yes }\n",
                      v->project, v->project, x->gw->map_path);
    }
    gt_buf_printf(b,
                  "    http-request replace-path ^/serving/%s/%s/?(.*)$ /\\1 if { path_beg "
                  "/serving/%s/%s }\n",
                  v->project, v->name, v->project, v->name);
    gt_strmap_each(&v->servers, server_line_cb, b);
    return 0;
}

/* The whole configuration for the desired state. */
static void render_config(struct gt_gateway *gw, struct gt_buf *b)
{
    gt_buf_printf(b,
                  "# written by gantryd from the InferenceServices; changes are lost\n"
                  "global\n"
                  "    stats socket %s mode 600 level admin expose-fd listeners\n"
                  "    maxconn 8192\n"
                  "defaults\n"
                  "    mode http\n"
                  "    timeout connect 2s\n"
                  "    timeout client 60s\n"
                  "    timeout server 60s\n"
                  "    timeout check 2s\n"
                  "    timeout http-request 30s\n"
                  "    log unix@%s len 4096 format raw local0 info\n"
                  "    log stderr len 4096 format raw local0 err\n"
                  "    option log-separate-errors\n"
                  "    option dontlognull\n"
                  "    log-format \"%s\"\n"
                  "frontend serving\n"
                  "    bind %s\n"
                  "    http-request set-var(txn.host) req.hdr(host),field(1,:),lower\n",
                  gw->sock_path, gw->reqlog_path, GT_GWLOG_FORMAT, gw->s->cfg->gateway_listen);
    struct cfg_ctx x = {gw, b};
    gt_strmap_each(&gw->want, route_cb, &x);
    gt_buf_puts(b, "    default_backend no_service\n"
                   "backend no_service\n"
                   "    http-request return status 404 content-type text/plain string "
                   "\"no such inference service\"\n");
    gt_strmap_each(&gw->want, backend_cb, &x);
}

static int auth_line_cb(const char *key, void *val, void *arg)
{
    (void)val;
    gt_buf_printf(arg, "%s yes\n", key);
    return 0;
}

/* ---- the process ---- */

static void spawn(struct gt_gateway *gw)
{
    char *old = gw->pid > 0 ? gt_xasprintf("%d", (int)gw->pid) : NULL;
    int log_fd = open(gw->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    pid_t parent = getpid();
    pid_t p = fork();
    if (p == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) {
            _exit(1);
        }
        int null_fd = open("/dev/null", O_RDONLY);
        dup2(null_fd, 0);
        if (log_fd >= 0) {
            dup2(log_fd, 1);
            dup2(log_fd, 2);
        }
        const char *argv[10] = {gw->s->cfg->haproxy, "-db", "-f", gw->cfg_path};
        int n = 4;
        if (old) {
            argv[n++] = "-x";
            argv[n++] = gw->sock_path;
            argv[n++] = "-sf";
            argv[n++] = old;
        }
        argv[n] = NULL;
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    if (log_fd >= 0) {
        close(log_fd);
    }
    if (p < 0) {
        gt_log_error("gateway: cannot start haproxy", "error=\"%s\"", strerror(errno));
    } else {
        if (gw->pid > 0) {
            *GT_VEC_PUSH(&gw->old, 4) = gw->pid;
        }
        gw->pid = p;
        gw->answering = false;
        gw->started_ms = gt_now_ms();
        gt_log_info("gateway: haproxy started", "pid=%d listen=%s reload=%s", (int)p,
                    gw->s->cfg->gateway_listen, old ? "yes" : "no");
    }
    free(old);
}

/* Reap the HAProxies that exited; the serving one's exit is logged and it
 * is started again at the next commit. */
static void reap(struct gt_gateway *gw)
{
    for (size_t i = 0; i < gw->old.n;) {
        if (waitpid(gw->old.v[i], NULL, WNOHANG) == gw->old.v[i]) {
            gw->old.v[i] = gw->old.v[--gw->old.n];
        } else {
            i++;
        }
    }
    int st;
    if (gw->pid > 0 && waitpid(gw->pid, &st, WNOHANG) == gw->pid) {
        gt_log_warn("gateway: haproxy exited", "pid=%d status=%d log=%s", (int)gw->pid, st,
                    gw->log_path);
        gw->pid = -1;
        gt_strmap_fini(&gw->have, svc_free);
        gt_strmap_init(&gw->have);
    }
}

/* ---- the runtime API ---- */

/* Send one command; its answer (if out) in out. 0 or -1 (not reachable). */
static int rt_cmd(const struct gt_gateway *gw, const char *cmd, struct gt_buf *out)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    struct timeval tv = {RT_TIMEOUT_MS / 1000, (RT_TIMEOUT_MS % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", gw->sock_path);
    char *line = gt_xasprintf("%s\n", cmd);
    size_t len = strlen(line);
    int rc =
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && write(fd, line, len) == (ssize_t)len
            ? 0
            : -1;
    free(line);
    char buf[8192];
    ssize_t n;
    size_t total = 0;
    struct gt_buf answer;
    gt_buf_init(&answer);
    while (rc == 0 && (n = read(fd, buf, sizeof(buf))) > 0 && total < STAT_MAX_BYTES) {
        gt_buf_append(&answer, buf, (size_t)n);
        total += (size_t)n;
    }
    close(fd);
    /* HAProxy answers errors in words on the first line ("No such
     * server.", "Unknown command", "Require 'backend/server'."); stats
     * start with their "# " header */
    const char *a = answer.data ? answer.data : "";
    size_t first = strcspn(a, "\n");
    char line1[256];
    snprintf(line1, sizeof(line1), "%.*s", (int)(first < 255 ? first : 255), a);
    if (rc == 0 && strncmp(a, "# ", 2) != 0 &&
        (strstr(line1, "No such") || strstr(line1, "Unknown") || strstr(line1, "rror") ||
         strstr(line1, "Require") || strstr(line1, "nvalid") || strstr(line1, "not found"))) {
        gt_log_warn("gateway: runtime command refused", "cmd=\"%s\" answer=\"%.200s\"", cmd, a);
        rc = -1;
    }
    if (out) {
        gt_buf_puts(out, a);
    }
    gt_buf_fini(&answer);
    return rc;
}

static int rt_printf(const struct gt_gateway *gw, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int rt_printf(const struct gt_gateway *gw, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *cmd = NULL;
    if (vasprintf(&cmd, fmt, ap) < 0) {
        GT_ASSERT(!"out of memory");
    }
    va_end(ap);
    int rc = rt_cmd(gw, cmd, NULL);
    free(cmd);
    return rc;
}

/* ---- commit ---- */

struct auth_ctx {
    struct gt_gateway *gw;
    const char *project;
};

static void auth_user_cb(const struct gt_server_user *u, void *arg)
{
    struct auth_ctx *x = arg;
    if (u->node || !gt_server_can_read_project(x->gw->s->access, u, x->project)) {
        return;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(u->token, strlen(u->token), md, &n, EVP_sha256(), NULL);
    char key[160];
    size_t off = 0;
    for (unsigned int i = 0; i < n; i++) {
        off += (size_t)snprintf(key + off, sizeof(key) - off, "%02x", md[i]);
    }
    snprintf(key + off, sizeof(key) - off, ":%s", x->project);
    gt_strmap_put(&x->gw->want_auth, key, MARK);
}

static int want_auth_cb(const char *id, void *val, void *arg)
{
    (void)id;
    const struct gw_svc *v = val;
    struct gt_gateway *gw = arg;
    if (!v->public_) {
        struct auth_ctx x = {gw, v->project};
        gt_server_tokens_each(gw->s->tokens, auth_user_cb, &x);
    }
    return 0;
}

/* Do the desired and known states differ in what only a reload changes? */
struct diff_ctx {
    const struct gt_strmap *other;
    bool differ;
};

static int structure_cb(const char *id, void *val, void *arg)
{
    const struct gw_svc *a = val;
    struct diff_ctx *d = arg;
    const struct gw_svc *b = gt_strmap_get(d->other, id);
    if (!b || a->public_ != b->public_ || strcmp(a->ready_path, b->ready_path) != 0) {
        d->differ = true;
    }
    return 0;
}

static bool needs_reload(const struct gt_gateway *gw)
{
    if (gw->pid <= 0 || gw->want.n != gw->have.n) {
        return true;
    }
    struct diff_ctx d = {&gw->have, false};
    gt_strmap_each(&gw->want, structure_cb, &d);
    return d.differ;
}

static struct gw_srv *srv_copy(const struct gw_srv *s)
{
    struct gw_srv *c = gt_xmalloc(sizeof(*c));
    *c = *s;
    return c;
}

static int copy_srv_cb(const char *name, void *val, void *arg)
{
    gt_strmap_put(arg, name, srv_copy(val));
    return 0;
}

static int copy_svc_cb(const char *id, void *val, void *arg)
{
    const struct gw_svc *v = val;
    struct gw_svc *c = svc_new(v->project, v->name, v->public_, v->ready_path);
    gt_strmap_each(&v->servers, copy_srv_cb, &c->servers);
    svc_free(gt_strmap_put(arg, id, c));
    return 0;
}

static int copy_key_cb(const char *key, void *val, void *arg)
{
    (void)val;
    gt_strmap_put(arg, key, MARK);
    return 0;
}

static void reload(struct gt_gateway *gw)
{
    if (gw->pid <= 0 && gt_now_ms() - gw->started_ms < RESTART_GAP_MS) {
        return; /* it just died: not in a loop */
    }
    struct gt_buf b;
    gt_buf_init(&b);
    gt_buf_puts(&b, "");
    gt_strmap_each(&gw->want_auth, auth_line_cb, &b);
    struct gt_err err = {0};
    int rc = write_file(gw->map_path, b.data, b.len, &err);
    gt_buf_fini(&b);
    gt_buf_init(&b);
    render_config(gw, &b);
    rc = rc ? rc : write_file(gw->cfg_path, b.data, b.len, &err);
    gt_buf_fini(&b);
    if (rc) {
        gt_log_error("gateway: cannot write its configuration", "error=\"%s\"", err.msg);
        return;
    }
    spawn(gw);
    gt_strmap_fini(&gw->have, svc_free);
    gt_strmap_init(&gw->have);
    gt_strmap_each(&gw->want, copy_svc_cb, &gw->have);
    gt_strmap_fini(&gw->have_auth, NULL);
    gt_strmap_init(&gw->have_auth);
    gt_strmap_each(&gw->want_auth, copy_key_cb, &gw->have_auth);
}

struct conv_ctx {
    struct gt_gateway *gw;
    const char *id;
    struct gw_svc *have;
};

/* A desired server: added, moved, reweighted, drained or readied. */
static int converge_srv_cb(const char *name, void *val, void *arg)
{
    const struct gw_srv *w = val;
    struct conv_ctx *x = arg;
    const struct gt_gateway *gw = x->gw;
    struct gw_srv *h = gt_strmap_get(&x->have->servers, name);
    if (!h) {
        if (rt_printf(gw, "add server %s/%s %s:%d weight 0 check inter 500ms fall 2 rise 1", x->id,
                      name, w->host, w->port) != 0 ||
            rt_printf(gw, "enable health %s/%s", x->id, name) != 0 ||
            rt_printf(gw, "enable server %s/%s", x->id, name) != 0) {
            return 0;
        }
        h = gt_xcalloc(1, sizeof(*h));
        *h = *w;
        h->weight = -1; /* set below */
        h->drain = false;
        gt_strmap_put(&x->have->servers, name, h);
    }
    if ((strcmp(h->host, w->host) != 0 || h->port != w->port) &&
        rt_printf(gw, "set server %s/%s addr %s port %d", x->id, name, w->host, w->port) == 0) {
        snprintf(h->host, sizeof(h->host), "%s", w->host);
        h->port = w->port;
    }
    if (h->drain != w->drain && rt_printf(gw, "set server %s/%s state %s", x->id, name,
                                          w->drain ? "drain" : "ready") == 0) {
        h->drain = w->drain;
    }
    if (h->weight != w->weight &&
        rt_printf(gw, "set server %s/%s weight %d", x->id, name, w->weight) == 0) {
        h->weight = w->weight;
    }
    return 0;
}

struct names GT_VEC(char *);

static int gone_srv_cb(const char *name, void *val, void *arg)
{
    (void)val;
    struct conv_ctx *x = arg;
    struct gw_svc *w = gt_strmap_get(&x->gw->want, x->id);
    if (!gt_strmap_get(&w->servers, name)) {
        const struct gt_gateway *gw = x->gw;
        rt_printf(gw, "set server %s/%s state maint", x->id, name);
        rt_printf(gw, "shutdown sessions server %s/%s", x->id, name);
        if (rt_printf(gw, "del server %s/%s", x->id, name) == 0) {
            free(gt_strmap_del(&x->have->servers, name));
            return 1; /* the map changed: walk again */
        }
    }
    return 0;
}

static int converge_svc_cb(const char *id, void *val, void *arg)
{
    struct gw_svc *w = val;
    struct gt_gateway *gw = arg;
    struct conv_ctx x = {gw, id, gt_strmap_get(&gw->have, id)};
    if (!x.have) {
        return 0;
    }
    /* removed replicas first, then the rest (an added one may reuse a port) */
    for (int i = 0; i < 64; i++) {
        size_t before = x.have->servers.n;
        gt_strmap_each(&x.have->servers, gone_srv_cb, &x);
        if (x.have->servers.n == before) {
            break;
        }
    }
    gt_strmap_each(&w->servers, converge_srv_cb, &x);
    return 0;
}

static int auth_add_cb(const char *key, void *val, void *arg)
{
    (void)val;
    struct gt_gateway *gw = arg;
    if (!gt_strmap_get(&gw->have_auth, key) &&
        rt_printf(gw, "add map %s %s yes", gw->map_path, key) == 0) {
        gt_strmap_put(&gw->have_auth, key, MARK);
    }
    return 0;
}

static int auth_del_cb(const char *key, void *val, void *arg)
{
    (void)val;
    struct gt_gateway *gw = arg;
    if (!gt_strmap_get(&gw->want_auth, key) &&
        rt_printf(gw, "del map %s %s", gw->map_path, key) == 0) {
        gt_strmap_del(&gw->have_auth, key);
        return 1;
    }
    return 0;
}

/* Does the socket reach the HAProxy started last? Until it does, the one
 * it replaces may still answer there, and changes made to that one are lost. */
static bool answering(struct gt_gateway *gw)
{
    if (gw->pid > 0 && !gw->answering) {
        struct gt_buf out;
        gt_buf_init(&out);
        char want[32];
        snprintf(want, sizeof(want), "\nPid: %d\n", (int)gw->pid);
        gw->answering = rt_cmd(gw, "show info", &out) == 0 && out.data && strstr(out.data, want);
        gt_buf_fini(&out);
    }
    return gw->answering;
}

void gt_gateway_commit(struct gt_gateway *gw)
{
    reap(gw);
    gt_strmap_fini(&gw->want_auth, NULL);
    gt_strmap_init(&gw->want_auth);
    gt_strmap_each(&gw->want, want_auth_cb, gw);
    if (needs_reload(gw)) {
        /* not while the current one is still starting: it might take the
         * signal to stop before it listens, and then listen beside its
         * successor (SO_REUSEPORT) with the old configuration */
        if (gw->pid > 0 && !answering(gw)) {
            if (gt_now_ms() - gw->started_ms > START_MAX_MS) {
                gt_log_warn("gateway: haproxy does not answer; restarting it", "pid=%d",
                            (int)gw->pid);
                kill(gw->pid, SIGKILL);
                *GT_VEC_PUSH(&gw->old, 4) = gw->pid;
                gw->pid = -1;
            }
            return;
        }
        reload(gw);
        return;
    }
    if (!answering(gw)) {
        return; /* the next commit converges (one every poll) */
    }
    gt_strmap_each(&gw->want, converge_svc_cb, gw);
    gt_strmap_each(&gw->want_auth, auth_add_cb, gw);
    for (int i = 0; i < 4096; i++) {
        size_t before = gw->have_auth.n;
        gt_strmap_each(&gw->have_auth, auth_del_cb, gw);
        if (gw->have_auth.n == before) {
            break;
        }
    }
}

/* ---- stats ---- */

/* Field i (0-based) of a CSV line (no quoting in HAProxy's stats), copied
 * into out (truncated to len - 1 bytes); "" past the line's last field. The
 * line ends at '\n' or the text's end: a short line never reads the next
 * line's fields. */
static const char *csv_field(const char *line, int i, char *out, size_t len)
{
    const char *p = line;
    int k = 0;
    while (k < i && *p && *p != '\n') {
        if (*p++ == ',') {
            k++;
        }
    }
    size_t n = 0;
    while (k == i && p[n] && p[n] != ',' && p[n] != '\n' && n + 1 < len) {
        n++;
    }
    memcpy(out, p, n);
    out[n] = '\0';
    return out;
}

enum col {
    C_PX,
    C_SV,
    C_QCUR,
    C_SCUR,
    C_STOT,
    C_ECON,
    C_ERESP,
    C_STATUS,
    C_CHECK,
    C_5XX,
    C_RTIME,
    C_TTIME,
    C_N
};
static const char *const col_names[C_N] = {"pxname",       "svname",   "qcur",  "scur",
                                           "stot",         "econ",     "eresp", "status",
                                           "check_status", "hrsp_5xx", "rtime", "ttime"};

/* A counter of HAProxy's: negative, junk or past int64 reads as 0. */
static int64_t counter(const char *line, int i)
{
    char v[64];
    long long n = strtoll(csv_field(line, i, v, sizeof(v)), NULL, 10);
    return n > 0 && n < INT64_MAX / 4 ? (int64_t)n : 0;
}

void gt_gateway_stats_parse(struct gt_strmap *stats, const char *text, int64_t now_ms)
{
    int idx[C_N];
    for (int c = 0; c < C_N; c++) {
        idx[c] = -1;
    }
    const char *nl = strchr(text, '\n');
    if (strncmp(text, "# ", 2) != 0 || !nl) {
        return;
    }
    /* one pass over the header's first 512 fields */
    char f[256];
    const char *hdr = text + 2;
    for (int i = 0; i < 512 && hdr; i++) {
        csv_field(hdr, 0, f, sizeof(f));
        for (int c = 0; c < C_N; c++) {
            if (!strcmp(f, col_names[c])) {
                idx[c] = i;
            }
        }
        const char *end = hdr + strcspn(hdr, ",\n");
        hdr = *end == ',' ? end + 1 : NULL;
    }
    for (int c = 0; c < C_N; c++) {
        if (idx[c] < 0) {
            return;
        }
    }
    for (const char *line = nl + 1; *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : "") {
        char px[128], sv[128];
        csv_field(line, idx[C_PX], px, sizeof(px));
        csv_field(line, idx[C_SV], sv, sizeof(sv));
        if (!px[0] || !strcmp(sv, "FRONTEND") || !strcmp(sv, "BACKEND")) {
            continue;
        }
        char *key = gt_xasprintf("%s/%s", px, sv);
        struct gt_gw_track *st = gt_strmap_get(stats, key);
        if (!st) {
            st = gt_xcalloc(1, sizeof(*st));
            gt_strmap_put(stats, key, st);
        }
        free(key);
        struct gt_gw_stat *p = &st->pub;
        p->qcur = counter(line, idx[C_QCUR]);
        p->scur = counter(line, idx[C_SCUR]);
        p->stot = counter(line, idx[C_STOT]);
        p->hrsp_5xx = counter(line, idx[C_5XX]);
        p->errors = counter(line, idx[C_ECON]) + counter(line, idx[C_ERESP]);
        p->rtime_ms = counter(line, idx[C_RTIME]);
        p->ttime_ms = counter(line, idx[C_TTIME]);
        char status[32], check[32];
        csv_field(line, idx[C_STATUS], status, sizeof(status));
        csv_field(line, idx[C_CHECK], check, sizeof(check));
        /* "* L7OK" while the next check is in progress */
        const char *chk = !strncmp(check, "* ", 2) ? check + 2 : check;
        p->ready =
            !strcmp(chk, "L7OK") && (!strncmp(status, "UP", 2) || !strncmp(status, "DRAIN", 5) ||
                                     !strncmp(status, "NOLB", 4));
        int64_t bad = p->hrsp_5xx + p->errors;
        if (st->prev_ms && now_ms > st->prev_ms) {
            double dt = (double)(now_ms - st->prev_ms) / 1000.0;
            double dreq = (double)(p->stot - st->prev_total);
            p->rate_rps = dreq / dt;
            p->error_rate = dreq > 0 ? (double)(bad - st->prev_bad) / dreq : 0;
        }
        st->prev_ms = now_ms;
        st->prev_total = p->stot;
        st->prev_bad = bad;
    }
}

static void on_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gt_gateway *gw = arg;
    reap(gw);
    if (answering(gw)) {
        struct gt_buf out;
        gt_buf_init(&out);
        if (rt_cmd(gw, "show stat", &out) == 0 && out.data) {
            gt_gateway_stats_parse(&gw->stats, out.data, gt_now_ms());
        }
        gt_buf_fini(&out);
    }
    if (gw->polled) {
        gw->polled(gw->arg);
    }
}

const struct gt_gw_stat *gt_gateway_stat(const struct gt_gateway *gw, const char *project,
                                         const char *name, const char *server)
{
    char *key = gt_xasprintf("%s.%s/%s", project, name, server);
    const struct gt_gw_track *st = gt_strmap_get(&gw->stats, key);
    free(key);
    return st && st->prev_ms ? &st->pub : NULL;
}

void gt_gateway_latency(const struct gt_gateway *gw, const char *project, const char *name,
                        const char *server, struct gt_gwlog_hist *sum)
{
    char *id = svc_id(project, name);
    gt_gwlog_window(gw->reqlog, id, server, gt_now_ms(), sum);
    free(id);
}

const char *gt_gateway_url(const struct gt_gateway *gw)
{
    return gw->url;
}

/* ---- life cycle ---- */

struct gt_gateway *gt_gateway_new(struct gt_server *s, gt_gateway_polled_fn *polled, void *arg)
{
    if (!s->cfg->gateway_listen) {
        return NULL;
    }
    struct gt_gateway *gw = gt_xcalloc(1, sizeof(*gw));
    gw->s = s;
    gw->polled = polled;
    gw->arg = arg;
    gw->pid = -1;
    gw->dir = gt_xasprintf("%s/gateway", s->cfg->data_dir);
    gw->cfg_path = gt_xasprintf("%s/haproxy.cfg", gw->dir);
    gw->sock_path = gt_xasprintf("%s/haproxy.sock", gw->dir);
    gw->map_path = gt_xasprintf("%s/auth.map", gw->dir);
    gw->log_path = gt_xasprintf("%s/haproxy.log", gw->dir);
    gw->reqlog_path = gt_xasprintf("%s/reqlog.sock", gw->dir);
    gw->reqlog = gt_gwlog_new();
    snprintf(gw->url, sizeof(gw->url), "http://%s", s->cfg->gateway_listen);
    gt_strmap_init(&gw->want);
    gt_strmap_init(&gw->have);
    gt_strmap_init(&gw->want_auth);
    gt_strmap_init(&gw->have_auth);
    gt_strmap_init(&gw->stats);
    return gw;
}

int gt_gateway_start(struct gt_gateway *gw, struct gt_err *err)
{
    if (mkdir(gw->dir, 0700) != 0 && errno != EEXIST) {
        return gt_err_set(err, -errno, "%s: %s", gw->dir, strerror(errno));
    }
    struct sockaddr_un sa;
    if (strlen(gw->sock_path) >= sizeof(sa.sun_path)) {
        return gt_err_set(err, GT_EINVAL,
                          "--data-dir: too long for the gateway's socket %s (at most %zu bytes)",
                          gw->sock_path, sizeof(sa.sun_path) - 1);
    }
    int rc = gt_gwlog_listen(gw->reqlog, gw->s->base, gw->reqlog_path, err);
    if (rc) {
        return rc;
    }
    gw->started_ms = 0;
    reload(gw);
    if (gw->pid <= 0) {
        return gt_err_set(err, GT_EINVAL, "--gateway-listen: cannot start %s (see %s)",
                          gw->s->cfg->haproxy, gw->log_path);
    }
    gw->timer = event_new(gw->s->base, -1, EV_PERSIST, on_poll, gw);
    struct timeval tv = {0, GT_GATEWAY_POLL_MS * 1000};
    evtimer_add(gw->timer, &tv);
    return 0;
}

static void stop_wait(pid_t p)
{
    kill(p, SIGTERM);
    for (int i = 0; i < 200; i++) {
        if (waitpid(p, NULL, WNOHANG) == p) {
            return;
        }
        usleep(10000);
    }
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
}

void gt_gateway_free(struct gt_gateway *gw)
{
    if (!gw) {
        return;
    }
    if (gw->timer) {
        event_free(gw->timer);
    }
    if (gw->pid > 0) {
        stop_wait(gw->pid);
    }
    for (size_t i = 0; i < gw->old.n; i++) {
        stop_wait(gw->old.v[i]);
    }
    GT_VEC_FREE(&gw->old);
    gt_strmap_fini(&gw->want, svc_free);
    gt_strmap_fini(&gw->have, svc_free);
    gt_strmap_fini(&gw->want_auth, NULL);
    gt_strmap_fini(&gw->have_auth, NULL);
    gt_strmap_fini(&gw->stats, free);
    free(gw->dir);
    free(gw->cfg_path);
    free(gw->sock_path);
    free(gw->map_path);
    free(gw->log_path);
    free(gw->reqlog_path);
    gt_gwlog_free(gw->reqlog);
    free(gw);
}
