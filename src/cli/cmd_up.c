/*
 * `gantry up` and `gantry down`: a one-machine cluster in the background.
 *
 * up starts gantryd and one gantlet (both found next to the gantry binary)
 * and the cluster registry (upregistry.c) as daemons in their own sessions,
 * logs in DATA_DIR/logs/, pids in DATA_DIR/{gantryd,gantlet,registry}.pid, and DATA_DIR/up.json
 * saying where the server is and what the node is called. Each up makes fresh tokens
 * (DATA_DIR/tokens for gantryd, DATA_DIR/node-token, the bare node token, for
 * gantlet), waits until the node is Ready, writes the client configuration
 * and creates Department and Project "default" when they are missing. The
 * cluster has one storage class, "local", whose Volumes' disk images live
 * in DATA_DIR/volumes (a storage root of the gantlet too); the model store
 * (gantryd --model-store) is DATA_DIR/models, a storage root of the gantlet
 * as well. An up that finds gantryd alive and healthy says so and changes
 * nothing.
 *
 * With --prometheus, up also starts Prometheus (found on PATH) scraping both
 * daemons, with the configuration of docs/metrics.md in
 * DATA_DIR/prometheus.yml, its data in DATA_DIR/prometheus, its pid in
 * DATA_DIR/prometheus.pid; down stops it first.
 *
 * down stops the tasks first, through the API: it deletes every Bound or
 * Running task on the node (their jobs end Failed, reason Killed) and waits
 * up to STOP_TASKS_S for the agent to record their exits, so no task process
 * outlives the cluster; then it SIGTERMs gantlet, then gantryd, each
 * SIGKILLed after STOP_DAEMON_S, and removes the pid files. Jobs and the
 * store stay in the data directory for the next up.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_int.h"
#include "common/resource.h"

enum {
    OPT_DATA_DIR = 1000,
    OPT_FAKE_GPUS,
    OPT_UID,
    OPT_LISTEN,
    OPT_STORAGE_ROOT,
    OPT_PROMETHEUS,
    OPT_HA,
    MAX_STORAGE_ROOTS = 8,
    START_S = 15,
    READY_S = 60,
    STOP_TASKS_S = 45,
    STOP_DAEMON_S = 15,
    POLL_MS = 50,
};

#define DEFAULT_LISTEN "127.0.0.1:8443"
#define DEFAULT_PROMETHEUS "127.0.0.1:9090"

struct up_flags {
    const char *data_dir;
    const char *fake_gpus;
    const char *listen;
    const char *prometheus;                       /* ADDR:PORT, NULL: no Prometheus */
    const char *storage_roots[MAX_STORAGE_ROOTS]; /* borrowed from argv */
    size_t n_storage_roots;
    long uid;
    bool bad_uid;
    bool too_many_roots;
    bool ha; /* --ha: a 3-member etcd and 3 gantryd replicas (upha.c) */
};

static int on_up_opt(int opt, const char *value, void *arg)
{
    struct up_flags *f = arg;
    char *end;
    switch (opt) {
    case OPT_DATA_DIR:
        f->data_dir = value;
        break;
    case OPT_FAKE_GPUS:
        f->fake_gpus = value;
        break;
    case OPT_LISTEN:
        f->listen = value;
        break;
    case OPT_PROMETHEUS:
        f->prometheus = value ? value : DEFAULT_PROMETHEUS;
        break;
    case OPT_HA:
        f->ha = true;
        break;
    case OPT_STORAGE_ROOT:
        if (f->n_storage_roots == MAX_STORAGE_ROOTS) {
            f->too_many_roots = true;
        } else {
            f->storage_roots[f->n_storage_roots++] = value;
        }
        break;
    default:
        GT_ASSERT(opt == OPT_UID);
        errno = 0;
        f->uid = strtol(value, &end, 10);
        f->bad_uid = errno != 0 || end == value || *end || f->uid < 0 || f->uid > UINT_MAX - 1;
        break;
    }
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int mkdir_p(const char *dir, struct gt_err *err)
{
    char *d = gt_xstrdup(dir);
    int rc = 0;
    for (char *p = d + 1;; p++) {
        if (*p != '/' && *p != '\0') {
            continue;
        }
        char c = *p;
        *p = '\0';
        /* parents others may pass through: tasks run as another uid below */
        if (mkdir(d, c ? 0711 : 0700) != 0 && errno != EEXIST) {
            rc = gt_err_set(err, -errno, "create %s: %s", d, strerror(errno));
            break;
        }
        *p = c;
        if (!c) {
            break;
        }
    }
    free(d);
    return rc;
}

/* The pid in dir/name.pid if that process is alive, else 0. */
static pid_t live_pid(const char *dir, const char *name)
{
    char *path = gt_xasprintf("%s/%s.pid", dir, name);
    FILE *f = fopen(path, "re");
    free(path);
    long pid = 0;
    if (!f) {
        return 0;
    }
    if (fscanf(f, "%ld", &pid) != 1 || pid <= 0 || (kill((pid_t)pid, 0) != 0 && errno != EPERM)) {
        pid = 0;
    }
    fclose(f);
    return (pid_t)pid;
}

/* Read DATA_DIR/up.json; *state is a new reference or NULL when absent. */
static json_t *read_state(const char *dir)
{
    char *path = gt_xasprintf("%s/up.json", dir);
    json_t *state = json_load_file(path, 0, NULL);
    free(path);
    return state;
}

/* Has our child pid exited? Reaps it. */
static bool child_gone(pid_t pid)
{
    int st;
    return waitpid(pid, &st, WNOHANG) == pid;
}

static bool healthz_ok(struct gt_cli_client *c)
{
    struct gt_err err = {0};
    return gt_cli_client_request(c, "GET", "/healthz", NULL, NULL, &err) == 0;
}

static bool node_ready(json_t *node)
{
    struct gt_api_node *n = gt_api_node_new(node);
    bool ready = gt_api_condition_true(&n->status.conditions, "Ready");
    gt_api_node_free(n);
    return ready;
}

/* Poll until the node is Ready (*node: its object, new reference). */
static int wait_node_ready(struct gt_cli_client *c, const char *name, pid_t agent, json_t **node,
                           const char *agent_log, struct gt_err *err)
{
    char *path = gt_cli_kind_path(gt_kind_get(GT_KIND_NODE), NULL, name);
    int64_t deadline = gt_mono_ms() + READY_S * 1000;
    int rc = 0;
    for (;;) {
        json_t *obj = NULL;
        struct gt_err e = {0};
        if (gt_cli_client_request(c, "GET", path, NULL, &obj, &e) == 0 && node_ready(obj)) {
            *node = obj;
            break;
        }
        json_decref(obj);
        if (child_gone(agent)) {
            rc = gt_err_set(err, GT_EINTERNAL, "gantlet exited; see %s", agent_log);
            break;
        }
        if (gt_mono_ms() > deadline) {
            rc = gt_err_set(err, GT_EINTERNAL, "node %s not Ready after %d s; see %s", name,
                            READY_S, agent_log);
            break;
        }
        sleep_ms(POLL_MS * 2);
    }
    free(path);
    return rc;
}

/* Create kind/name from body unless it exists. */
static int ensure(struct gt_cli_ctx *ctx, struct gt_cli_client *c, enum gt_kind kind, json_t *body,
                  struct gt_err *err)
{
    const struct gt_kind_info *k = gt_kind_get(kind);
    const char *name = gt_obj_name(body);
    char *path = gt_cli_kind_path(k, NULL, name);
    int rc = gt_cli_client_request(c, "GET", path, NULL, NULL, err);
    if (rc == GT_ENOTFOUND) {
        gt_err_clear(err);
        char *coll = gt_cli_kind_path(k, NULL, NULL);
        rc = gt_cli_client_request(c, "POST", coll, body, NULL, err);
        free(coll);
        if (rc == 0) {
            char res[64];
            fprintf(ctx->err, "%s/%s created\n", gt_cli_kind_resource(k, res, sizeof(res)), name);
        }
    }
    free(path);
    json_decref(body);
    return rc;
}

/* Department "default" with a quota of the node's allocatable GPUs, CPU
 * and memory, and of storage what the file system of dir (the data
 * directory, where the "local" storage class keeps Volumes) has free;
 * Project "default" with the local user as admin. */
static int ensure_defaults(struct gt_cli_ctx *ctx, struct gt_cli_client *c, const json_t *node,
                           const char *user, const char *dir, struct gt_err *err)
{
    json_t *quota = json_object();
    static const char *const res[] = {GT_RES_NAME_GPU, "cpu", "memory"};
    for (size_t i = 0; i < GT_ARRAY_LEN(res); i++) {
        json_t *v = json_object_get(gt_json_path(node, "status.allocatable"), res[i]);
        if (v) {
            json_object_set(quota, res[i], v);
        }
    }
    struct statvfs fs;
    if (statvfs(dir, &fs) == 0) {
        char free_mi[32];
        snprintf(free_mi, sizeof(free_mi), "%lluMi",
                 (unsigned long long)fs.f_bavail * fs.f_frsize >> 20);
        json_object_set_new(quota, GT_RES_NAME_STORAGE, json_string(free_mi));
    }
    json_t *dept = json_pack("{s:s, s:s, s:{s:s}, s:{s:o, s:[s]}}", "apiVersion", GT_API_VERSION,
                             "kind", "Department", "metadata", "name", "default", "spec", "quota",
                             quota, "admins", user);
    int rc = ensure(ctx, c, GT_KIND_DEPARTMENT, dept, err);
    if (rc == 0) {
        json_t *proj =
            json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:[{s:s, s:s}]}}", "apiVersion", GT_API_VERSION,
                      "kind", "Project", "metadata", "name", "default", "spec", "department",
                      "default", "members", "user", user, "role", "admin");
        rc = ensure(ctx, c, GT_KIND_PROJECT, proj, err);
    }
    return rc;
}

/* Files and names of one local cluster. */
struct cluster {
    char *dir, *logs, *tokens, *node_token, *gantryd_pid, *gantlet_pid, *gantryd_log, *gantlet_log,
        *store, *agent_root, *agent_run, *gantryd, *gantlet;
    char *node, *user, *server, *agent_listen;
    char *registry, *registry_key; /* HOST:PORT and gantryd's key; NULL: no registry */
    char *gateway;                 /* the serving gateway's ADDR:PORT; NULL: none */
    char *volumes, *volume_class;  /* the "local" storage class: DIR/volumes, "local=DIR/volumes" */
    char *models;                  /* DIR/models: gantryd's --model-store, an agent storage root */
};

static void cluster_fini(struct cluster *cl)
{
    char **all[] = {&cl->dir,          &cl->logs,        &cl->tokens,       &cl->node_token,
                    &cl->gantryd_pid,  &cl->gantlet_pid, &cl->gantryd_log,  &cl->gantlet_log,
                    &cl->store,        &cl->agent_root,  &cl->agent_run,    &cl->gantryd,
                    &cl->gantlet,      &cl->node,        &cl->user,         &cl->server,
                    &cl->agent_listen, &cl->registry,    &cl->registry_key, &cl->volumes,
                    &cl->volume_class, &cl->gateway,     &cl->models};
    for (size_t i = 0; i < GT_ARRAY_LEN(all); i++) {
        free(*all[i]);
        *all[i] = NULL;
    }
}

/* The primary group of uid (its own number when passwd has no entry), as
 * the agent gives a task. */
static long primary_gid(long uid)
{
    struct passwd *pw = getpwuid((uid_t)uid);
    return pw ? (long)pw->pw_gid : uid;
}

/* The data directory up and down work on (new string, or NULL): --data-dir
 * (absolute or relative); else the one the config file was written for
 * (the cluster it points at); else the default, or for root whose tasks'
 * uid (task_uid) cannot reach the default (a 0700 home),
 * GT_CLI_UP_SYSTEM_DATA_DIR. */
static char *choose_data_dir(const char *flag, long task_uid)
{
    if (flag) {
        char cwd[PATH_MAX];
        return flag[0] == '/' || !getcwd(cwd, sizeof(cwd)) ? gt_xstrdup(flag)
                                                           : gt_xasprintf("%s/%s", cwd, flag);
    }
    char *cfg_path = gt_cli_config_path();
    struct gt_cli_config cfg = {0};
    if (cfg_path && gt_cli_config_read(cfg_path, &cfg, NULL) == 0 && cfg.data_dir) {
        char *dir = cfg.data_dir;
        cfg.data_dir = NULL;
        gt_cli_config_fini(&cfg);
        free(cfg_path);
        return dir;
    }
    gt_cli_config_fini(&cfg);
    free(cfg_path);
    char *dir = gt_cli_up_data_dir();
    if (geteuid() == 0 &&
        (!dir || gt_cli_up_reachable(dir, task_uid, primary_gid(task_uid), NULL) < 0)) {
        free(dir);
        dir = gt_xstrdup(GT_CLI_UP_SYSTEM_DATA_DIR);
    }
    return dir;
}

/* Fill the paths under dir (borrowed; NULL: there is none). */
static int cluster_init(struct cluster *cl, const char *dir, struct gt_err *err)
{
    *cl = (struct cluster){0};
    if (!dir) {
        return gt_err_set(err, GT_EBADREQ, "no data directory: pass --data-dir or set HOME");
    }
    cl->dir = gt_xstrdup(dir);
    cl->logs = gt_xasprintf("%s/logs", cl->dir);
    cl->tokens = gt_xasprintf("%s/tokens", cl->dir);
    cl->node_token = gt_xasprintf("%s/node-token", cl->dir);
    cl->gantryd_pid = gt_xasprintf("%s/gantryd.pid", cl->dir);
    cl->gantlet_pid = gt_xasprintf("%s/gantlet.pid", cl->dir);
    cl->gantryd_log = gt_xasprintf("%s/gantryd.log", cl->logs);
    cl->gantlet_log = gt_xasprintf("%s/gantlet.log", cl->logs);
    cl->store = gt_xasprintf("%s/store", cl->dir);
    cl->agent_root = gt_xasprintf("%s/agent", cl->dir);
    /* its own, not the machine's /run/gantlet: several local clusters may run */
    cl->agent_run = gt_xasprintf("%s/agent-run", cl->dir);
    cl->volumes = gt_xasprintf("%s/volumes", cl->dir);
    cl->volume_class = gt_xasprintf("local=%s", cl->volumes);
    cl->models = gt_xasprintf("%s/models", cl->dir);
    return 0;
}

/* gantryd and gantlet next to this program. */
static int find_binaries(struct cluster *cl, struct gt_err *err)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) {
        return gt_err_set(err, -errno, "readlink /proc/self/exe: %s", strerror(errno));
    }
    self[n] = '\0';
    *strrchr(self, '/') = '\0';
    cl->gantryd = gt_xasprintf("%s/gantryd", self);
    cl->gantlet = gt_xasprintf("%s/gantlet", self);
    const char *const bins[] = {cl->gantryd, cl->gantlet};
    for (size_t i = 0; i < 2; i++) {
        if (access(bins[i], X_OK) != 0) {
            return gt_err_set(err, GT_ENOTFOUND,
                              "%s: %s (gantry up runs the binaries next to "
                              "gantry)",
                              bins[i], strerror(errno));
        }
    }
    return 0;
}

/* "ADDR:PORT" for the agent: a port the kernel reports free on gantryd's
 * address (port + 1 could be anyone's). NULL if the address is unusable. */
static char *agent_port(const char *listen)
{
    const char *colon = strrchr(listen, ':');
    if (!colon) {
        return NULL;
    }
    char *host = gt_xstrndup(listen, (size_t)(colon - listen));
    int port = gt_cli_up_free_port(host);
    char *out = port > 0 ? gt_xasprintf("%s:%d", host, port) : NULL;
    free(host);
    return out;
}

/* Is ADDR:PORT free to listen on? Another gantryd already there would
 * otherwise answer our health checks. 0, or an error naming the address. */
static int listen_free(const char *listen, struct gt_err *err)
{
    const char *colon = strrchr(listen, ':');
    char *host = colon ? gt_xstrndup(listen, (size_t)(colon - listen)) : NULL;
    long port = colon ? strtol(colon + 1, NULL, 10) : -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int rc = 0;
    if (!host || port < 0 || port > 65535 || inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        rc = gt_err_set(err, GT_EINVAL, "--listen %s: expected IPv4-ADDR:PORT", listen);
    } else {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        if (fd >= 0) {
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        }
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
            rc = gt_err_set(err, -errno, "--listen %s: %s", listen, strerror(errno));
        }
        if (fd >= 0) {
            close(fd);
        }
    }
    free(host);
    return rc;
}

static char *user_name(void)
{
    struct passwd *pw = getpwuid(getuid());
    return pw ? gt_xstrdup(pw->pw_name) : gt_xasprintf("uid%ld", (long)getuid());
}

/* --ha: replicas 2 and 3 beside the first (server_argv), on host's
 * ports[1..], then every replica in cl->server, the agent's --server,
 * up.json and the config. */
static int start_replicas(struct cluster *cl, char **server_argv, size_t n_server, const char *host,
                          const int *ports, struct gt_err *err)
{
    struct gt_buf all;
    gt_buf_init(&all);
    gt_buf_puts(&all, cl->server);
    int rc = 0;
    /* the first replica made it in its data directory on start */
    char *key = gt_xasprintf("%s/secret.key", cl->store);
    for (int n = 2; n <= GT_CLI_UP_HA_REPLICAS && rc == 0; n++) {
        char *url = NULL;
        rc = gt_cli_up_ha_replica(server_argv, n_server, n, cl->dir, cl->logs, host, ports[n - 1],
                                  key, &url, err);
        if (rc == 0) {
            gt_buf_printf(&all, ",%s", url);
        }
        free(url);
    }
    free(key);
    if (rc == 0) {
        free(cl->server);
        cl->server = gt_buf_take(&all);
        json_t *state = json_pack("{s:s, s:s}", "server", cl->server, "node", cl->node);
        char *text = json_dumps(state, JSON_INDENT(2));
        char *path = gt_xasprintf("%s/up.json", cl->dir);
        rc = gt_cli_up_write_private(path, text, err);
        free(text);
        free(path);
        json_decref(state);
    }
    gt_buf_fini(&all);
    return rc;
}

/* Write tokens, start both daemons, wait for the node; *admin gets the
 * admin token. */
static int start_cluster(struct cluster *cl, const struct up_flags *f, char *admin, json_t **node,
                         struct gt_err *err)
{
    char node_tok[GT_CLI_TOKEN_LEN + 1];
    gt_cli_up_token_new(admin);
    gt_cli_up_token_new(node_tok);
    long uid = gt_cli_up_task_uid((long)geteuid(), f->bad_uid ? -1 : f->uid);
    char *tokens = gt_cli_up_token_file(admin, cl->user, uid, node_tok, cl->node);
    char *node_tok_line = gt_xasprintf("%s\n", node_tok);
    json_t *state = json_pack("{s:s, s:s}", "server", cl->server, "node", cl->node);
    char *state_text = json_dumps(state, JSON_INDENT(2));
    char *state_path = gt_xasprintf("%s/up.json", cl->dir);
    int rc = gt_cli_up_write_private(cl->tokens, tokens, err);
    rc = rc ? rc : gt_cli_up_write_private(cl->node_token, node_tok_line, err);
    rc = rc ? rc : gt_cli_up_write_private(state_path, state_text, err);
    free(tokens);
    free(node_tok_line);
    free(state_text);
    free(state_path);
    json_decref(state);
    if (rc < 0) {
        return rc;
    }
    rc = listen_free(f->listen, err);
    if (rc < 0) {
        return rc;
    }
    pid_t server_pid, agent_pid;
    /* gantryd admits hostPath volumes beneath the same roots the agent
     * mounts from; Volumes' images live in the data directory's volumes/ */
    /* 11 + registry 4 + gateway 2 + HA 4 + 2 per replica + NULL, and 2 per storage root */
    char *server_argv[22 + 2 * GT_CLI_UP_HA_REPLICAS + 2 * MAX_STORAGE_ROOTS] = {
        cl->gantryd,      "--data-dir",    cl->store,         "--token-file",
        cl->tokens,       "--listen",      (char *)f->listen, "--storage-class",
        cl->volume_class, "--model-store", cl->models};
    size_t n_server = 11;
    cl->registry = agent_port(f->listen);
    struct gt_cli_up_registry reg = {.dir = cl->dir,
                                     .logs = cl->logs,
                                     .addr = cl->registry,
                                     .server = cl->server,
                                     .key_out = &cl->registry_key};
    rc = cl->registry ? gt_cli_up_registry_start(&reg, err) : GT_ENOTFOUND;
    if (rc == 0) {
        server_argv[n_server++] = "--registry";
        server_argv[n_server++] = cl->registry;
        server_argv[n_server++] = "--registry-key";
        server_argv[n_server++] = cl->registry_key;
    } else if (rc == GT_ENOTFOUND) {
        free(cl->registry);
        cl->registry = NULL;
    } else {
        return rc;
    }
    /* the serving gateway (HAProxy, run by gantryd) on a free port of its address */
    cl->gateway = agent_port(f->listen);
    if (cl->gateway) {
        server_argv[n_server++] = "--gateway-listen";
        server_argv[n_server++] = cl->gateway;
    }
    for (size_t i = 0; i < f->n_storage_roots; i++) {
        server_argv[n_server++] = "--storage-root";
        server_argv[n_server++] = (char *)f->storage_roots[i];
    }
    char *host = gt_xstrndup(f->listen, (size_t)(strrchr(f->listen, ':') - f->listen));
    char *etcd_store = NULL;
    int ports[GT_CLI_UP_HA_REPLICAS] = {0};             /* --ha: replicas 2.. listen there */
    char *replica_urls[GT_CLI_UP_HA_REPLICAS] = {NULL}; /* --ha: every replica's --replica-url */
    if (f->ha) {
        rc = gt_cli_up_ha_etcd(cl->dir, cl->logs, host, &etcd_store, err);
        server_argv[n_server++] = "--store";
        server_argv[n_server++] = etcd_store;
        server_argv[n_server++] = "--replica-id";
        server_argv[n_server++] = "r1";
        /* every replica names them all: the dashboard fails over between them */
        for (int i = 0; i < GT_CLI_UP_HA_REPLICAS && rc == 0; i++) {
            ports[i] = i == 0 ? 0 : gt_cli_up_free_port(host);
            if (ports[i] < 0) {
                rc =
                    gt_err_set(err, GT_EINTERNAL, "no free port on %s for replica %d", host, i + 1);
                break;
            }
            replica_urls[i] = i == 0 ? gt_xasprintf("http://%s", f->listen)
                                     : gt_xasprintf("http://%s:%d", host, ports[i]);
            server_argv[n_server++] = "--replica-url";
            server_argv[n_server++] = replica_urls[i];
        }
    }
    rc = rc ? rc : gt_cli_up_spawn(server_argv, cl->gantryd_log, cl->gantryd_pid, &server_pid, err);
    if (rc < 0) {
        free(host);
        free(etcd_store);
        for (int i = 0; i < GT_CLI_UP_HA_REPLICAS; i++) {
            free(replica_urls[i]);
        }
        return rc;
    }
    struct gt_cli_client *c = gt_cli_client_new(cl->server, admin);
    int64_t deadline = gt_mono_ms() + START_S * 1000;
    while (!healthz_ok(c)) {
        if (child_gone(server_pid) || gt_mono_ms() > deadline) {
            rc = gt_err_set(err, GT_EINTERNAL, "gantryd did not start; see %s", cl->gantryd_log);
            goto out;
        }
        sleep_ms(POLL_MS);
    }
    if (f->ha) {
        rc = start_replicas(cl, server_argv, n_server, host, ports, err);
        if (rc < 0) {
            goto out;
        }
    }
    /* serving tasks may mount the model store (read-only blobs) */
    char *agent_argv[20 + 2 * MAX_STORAGE_ROOTS] = {
        cl->gantlet,      "--server",  cl->server,    "--token-file",   cl->node_token,
        "--name",         cl->node,    "--listen",    cl->agent_listen, "--root",
        cl->agent_root,   "--run-dir", cl->agent_run, "--storage-root", cl->volumes,
        "--storage-root", cl->models};
    size_t n_argv = 17;
    if (f->fake_gpus) {
        agent_argv[n_argv++] = "--fake-gpus";
        agent_argv[n_argv++] = (char *)f->fake_gpus;
    }
    for (size_t i = 0; i < f->n_storage_roots; i++) {
        agent_argv[n_argv++] = "--storage-root";
        agent_argv[n_argv++] = (char *)f->storage_roots[i];
    }
    rc = gt_cli_up_spawn(agent_argv, cl->gantlet_log, cl->gantlet_pid, &agent_pid, err);
    if (rc == 0) {
        rc = wait_node_ready(c, cl->node, agent_pid, node, cl->gantlet_log, err);
    }
out:
    gt_cli_client_free(c);
    free(host);
    free(etcd_store);
    for (int i = 0; i < GT_CLI_UP_HA_REPLICAS; i++) {
        free(replica_urls[i]);
    }
    return rc;
}

/* Prometheus at listen scraping the cluster, with its configuration and
 * data in the data directory. */
static int start_prometheus(const struct cluster *cl, const char *listen, struct gt_err *err)
{
    const char *server = cl->server + strlen("http://");
    char *conf = gt_cli_up_prometheus_config(server, cl->agent_listen);
    char *conf_path = gt_xasprintf("%s/prometheus.yml", cl->dir);
    char *data = gt_xasprintf("%s/prometheus", cl->dir);
    char *log = gt_xasprintf("%s/prometheus.log", cl->logs);
    char *pid_path = gt_xasprintf("%s/prometheus.pid", cl->dir);
    char *a_conf = gt_xasprintf("--config.file=%s", conf_path);
    char *a_data = gt_xasprintf("--storage.tsdb.path=%s", data);
    char *a_listen = gt_xasprintf("--web.listen-address=%s", listen);
    char *argv[] = {"prometheus", a_conf, a_data, a_listen, NULL};
    pid_t pid;
    int rc = gt_cli_up_write_private(conf_path, conf, err);
    rc = rc ? rc : mkdir_p(data, err);
    rc = rc ? rc : gt_cli_up_spawn(argv, log, pid_path, &pid, err);
    if (rc == 0) {
        sleep_ms(300); /* a missing binary or a taken port ends it at once */
        if (child_gone(pid)) {
            rc = gt_err_set(err, GT_EINTERNAL, "prometheus did not start; see %s", log);
        }
    }
    free(conf);
    free(conf_path);
    free(data);
    free(log);
    free(pid_path);
    free(a_conf);
    free(a_data);
    free(a_listen);
    return rc;
}

/* Say so when the config file at cfg_path points at another local cluster
 * that still runs: it is about to point at the one in dir instead. */
static void note_config_takeover(struct gt_cli_ctx *ctx, const char *cfg_path, const char *dir)
{
    struct gt_cli_config old = {0};
    if (gt_cli_config_read(cfg_path, &old, NULL) == 0 && old.data_dir &&
        strcmp(old.data_dir, dir) != 0 && live_pid(old.data_dir, "gantryd")) {
        fprintf(ctx->err,
                "note: %s pointed at the cluster in %s, which is still running (stop it with "
                "'gantry down --data-dir %s'); it now points at this one\n",
                cfg_path, old.data_dir, old.data_dir);
    }
    gt_cli_config_fini(&old);
}

int gt_cli_cmd_up(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc, char **argv)
{
    static const struct option long_opts[] = {
        {"data-dir", required_argument, NULL, OPT_DATA_DIR},
        {"fake-gpus", required_argument, NULL, OPT_FAKE_GPUS},
        {"uid", required_argument, NULL, OPT_UID},
        {"listen", required_argument, NULL, OPT_LISTEN},
        {"storage-root", required_argument, NULL, OPT_STORAGE_ROOT},
        {"prometheus", optional_argument, NULL, OPT_PROMETHEUS},
        {"ha", no_argument, NULL, OPT_HA},
        {NULL, 0, NULL, 0},
    };
    struct up_flags f = {.uid = -1, .listen = DEFAULT_LISTEN};
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "", long_opts, on_up_opt, &f, &first);
    if (rc != 0) {
        return rc;
    }
    if (f.bad_uid) {
        return gt_cli_usage_error(ctx, cmd, "--uid: want a uid number");
    }
    if (f.too_many_roots) {
        return gt_cli_usage_error(ctx, cmd, "--storage-root: at most %d", MAX_STORAGE_ROOTS);
    }
    for (size_t i = 0; i < f.n_storage_roots; i++) {
        if (f.storage_roots[i][0] != '/') {
            return gt_cli_usage_error(ctx, cmd, "--storage-root %s: want an absolute path",
                                      f.storage_roots[i]);
        }
    }
    if (first != argc) {
        return gt_cli_usage_error(ctx, cmd, "unexpected argument %s", argv[first]);
    }
    struct gt_err err = {0};
    struct cluster cl;
    char admin[GT_CLI_TOKEN_LEN + 1];
    json_t *node = NULL;
    char host[256] = "localhost";
    long task_uid = gt_cli_up_task_uid((long)geteuid(), f.uid);
    char *dir = choose_data_dir(f.data_dir, task_uid);
    rc = cluster_init(&cl, dir, &err);
    free(dir);
    if (rc == 0 && gt_cli_up_reachable(cl.dir, task_uid, primary_gid(task_uid), &err) < 0) {
        gt_err_prefix(&err,
                      "data dir %s: tasks run as uid %ld and could not reach their working "
                      "directories in it",
                      cl.dir, task_uid);
        size_t n = strlen(err.msg);
        snprintf(err.msg + n, sizeof(err.msg) - n,
                 "; pass --data-dir DIR where that uid can search every directory above DIR "
                 "(e.g. %s), or --uid",
                 GT_CLI_UP_SYSTEM_DATA_DIR);
        rc = err.code;
    }
    if (rc != 0) {
        cluster_fini(&cl);
        return gt_cli_fail(ctx, &err);
    }
    if (live_pid(cl.dir, "gantryd")) {
        json_t *state = read_state(cl.dir);
        const char *server = json_string_value(json_object_get(state, "server"));
        struct gt_cli_client *c = server ? gt_cli_client_new(server, NULL) : NULL;
        bool ok = c && healthz_ok(c);
        gt_cli_client_free(c);
        if (ok) {
            fprintf(ctx->err, "gantry is already up at %s (data dir %s)\n", server, cl.dir);
        }
        json_decref(state);
        if (ok) {
            cluster_fini(&cl);
            return 0;
        }
    }
    gethostname(host, sizeof(host) - 1);
    cl.node = gt_cli_up_node_name(host);
    cl.user = user_name();
    cl.server = gt_xasprintf("http://%s", f.listen);
    cl.agent_listen = agent_port(f.listen);
    if (!cl.agent_listen) {
        rc = gt_cli_usage_error(ctx, cmd, "--listen %s: want ADDR:PORT", f.listen);
        cluster_fini(&cl);
        return rc;
    }
    rc = find_binaries(&cl, &err);
    rc = rc ? rc : mkdir_p(cl.logs, &err);
    rc = rc ? rc : mkdir_p(cl.volumes, &err);
    /* the model store: tasks' uid passes through to the blobs gantryd makes readable */
    if (rc == 0 && mkdir(cl.models, 0755) != 0 && errno != EEXIST) {
        rc = gt_err_set(&err, -errno, "create %s: %s", cl.models, strerror(errno));
    }
    /* Tasks run as another uid with working directories under the agent's
     * root in here: others may pass through, not list. */
    if (rc == 0 && chmod(cl.dir, 0711) != 0) {
        rc = gt_err_set(&err, -errno, "chmod %s: %s", cl.dir, strerror(errno));
    }
    rc = rc ? rc : start_cluster(&cl, &f, admin, &node, &err);
    char *cfg_path = gt_cli_config_path();
    if (rc == 0 && !cfg_path) {
        rc = gt_err_set(&err, GT_EBADREQ, "no config path: set GANTRY_CONFIG or HOME");
    }
    if (rc == 0) {
        note_config_takeover(ctx, cfg_path, cl.dir);
    }
    rc = rc ? rc : gt_cli_config_write(cfg_path, cl.server, admin, "default", cl.dir, &err);
    if (rc == 0) {
        struct gt_cli_client *c = gt_cli_client_new(cl.server, admin);
        rc = ensure_defaults(ctx, c, node, cl.user, cl.dir, &err);
        gt_cli_client_free(c);
    }
    if (rc == 0 && f.prometheus) {
        rc = start_prometheus(&cl, f.prometheus, &err);
        if (rc == 0) {
            fprintf(ctx->err, "prometheus at http://%s scrapes gantryd and gantlet\n",
                    f.prometheus);
        }
    }
    if (rc == 0) {
        fprintf(ctx->err,
                "gantry is up: server %s, node %s, data dir %s, registry %s\n"
                "config written to %s (project \"default\"); stop with 'gantry down'\n",
                cl.server, cl.node, cl.dir,
                cl.registry ? cl.registry : "none (docker-registry or openssl missing)", cfg_path);
    }
    if (rc == 0 && cl.gateway) {
        fprintf(ctx->err, "serving gateway at http://%s/serving/PROJECT/NAME/\n", cl.gateway);
    }
    free(cfg_path);
    json_decref(node);
    cluster_fini(&cl);
    return rc == 0 ? 0 : gt_cli_fail(ctx, &err);
}

/* Delete the node's Bound/Running tasks and wait until none is left
 * unfinished, at most STOP_TASKS_S. Best effort: failures are noted. */
static void stop_tasks(struct gt_cli_ctx *ctx, const char *server, const char *token,
                       const char *node)
{
    struct gt_cli_client *c = gt_cli_client_new(server, token);
    char *sel = gt_xasprintf("spec.nodeName=%s", node);
    char *sel_q = gt_cli_url_escape(sel);
    char *path = gt_xasprintf(GT_API_GROUP_PREFIX "/tasks?fieldSelector=%s", sel_q);
    int64_t deadline = gt_mono_ms() + STOP_TASKS_S * 1000;
    bool first = true;
    for (;;) {
        json_t *list = NULL;
        struct gt_err err = {0};
        if (gt_cli_client_request(c, "GET", path, NULL, &list, &err) != 0) {
            fprintf(ctx->err, "warning: cannot list the node's tasks: %s\n", err.msg);
            break;
        }
        size_t i, n_live = 0;
        json_t *t;
        json_array_foreach(json_object_get(list, "items"), i, t)
        {
            struct gt_api_task *task = gt_api_task_new(t);
            const struct gt_api_meta *m = &task->o.meta;
            bool live = !gt_cli_task_reached(task, GT_CLI_TASK_DONE);
            n_live += live;
            if (live && first) {
                char *tp = gt_cli_kind_path(gt_kind_get(GT_KIND_TASK), m->project, m->name);
                if (gt_cli_client_request(c, "DELETE", tp, NULL, NULL, &err) == 0) {
                    fprintf(ctx->err, "stopping task %s/%s\n", m->project, m->name);
                }
                free(tp);
            }
            gt_api_task_free(task);
        }
        json_decref(list);
        first = false;
        if (n_live == 0) {
            break;
        }
        if (gt_mono_ms() > deadline) {
            fprintf(ctx->err, "warning: %zu task(s) still running after %d s\n", n_live,
                    STOP_TASKS_S);
            break;
        }
        sleep_ms(POLL_MS * 4);
    }
    free(path);
    free(sel_q);
    free(sel);
    gt_cli_client_free(c);
}

/* SIGTERM dir/name.pid's process, SIGKILL it after STOP_DAEMON_S, remove the
 * pid file. */
static void stop_daemon(struct gt_cli_ctx *ctx, const char *dir, const char *name)
{
    pid_t pid = live_pid(dir, name);
    if (pid > 0) {
        kill(pid, SIGTERM);
        int64_t deadline = gt_mono_ms() + STOP_DAEMON_S * 1000;
        while (kill(pid, 0) == 0 && gt_mono_ms() < deadline) {
            sleep_ms(POLL_MS);
        }
        if (kill(pid, 0) == 0) {
            fprintf(ctx->err, "%s did not stop after %d s: killing it\n", name, STOP_DAEMON_S);
            kill(pid, SIGKILL);
        }
        fprintf(ctx->err, "stopped %s (pid %ld)\n", name, (long)pid);
    }
    char *path = gt_xasprintf("%s/%s.pid", dir, name);
    unlink(path);
    free(path);
}

/* The admin token: the first field of the token file's first line. */
static char *admin_token(const char *tokens_path)
{
    FILE *f = fopen(tokens_path, "re");
    char line[256];
    char *tok = NULL;
    if (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, ",\n")] = '\0';
        tok = gt_xstrdup(line);
    }
    if (f) {
        fclose(f);
    }
    return tok;
}

int gt_cli_cmd_down(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc, char **argv)
{
    static const struct option long_opts[] = {
        {"data-dir", required_argument, NULL, OPT_DATA_DIR},
        {NULL, 0, NULL, 0},
    };
    struct up_flags f = {.uid = -1};
    int first;
    int rc = gt_cli_parse_opts(ctx, cmd, argc, argv, "", long_opts, on_up_opt, &f, &first);
    if (rc != 0) {
        return rc;
    }
    if (first != argc) {
        return gt_cli_usage_error(ctx, cmd, "unexpected argument %s", argv[first]);
    }
    struct gt_err err = {0};
    struct cluster cl;
    char *dir = choose_data_dir(f.data_dir, gt_cli_up_task_uid((long)geteuid(), -1));
    rc = cluster_init(&cl, dir, &err);
    free(dir);
    if (rc != 0) {
        cluster_fini(&cl);
        return gt_cli_fail(ctx, &err);
    }
    pid_t server = live_pid(cl.dir, "gantryd");
    pid_t agent = live_pid(cl.dir, "gantlet");
    json_t *state = read_state(cl.dir);
    const char *url = json_string_value(json_object_get(state, "server"));
    const char *node = json_string_value(json_object_get(state, "node"));
    char *token = admin_token(cl.tokens);
    if (server && agent && url && node && token) {
        stop_tasks(ctx, url, token, node);
    }
    stop_daemon(ctx, cl.dir, "prometheus");
    stop_daemon(ctx, cl.dir, "gantlet");
    stop_daemon(ctx, cl.dir, "registry");
    /* --ha: the other replicas, then etcd once no gantryd uses it */
    for (int n = GT_CLI_UP_HA_REPLICAS; n >= 2; n--) {
        char name[32];
        snprintf(name, sizeof(name), "gantryd%d", n);
        stop_daemon(ctx, cl.dir, name);
    }
    stop_daemon(ctx, cl.dir, "gantryd");
    for (int m = 1; m <= GT_CLI_UP_HA_REPLICAS; m++) {
        char name[32];
        snprintf(name, sizeof(name), "etcd%d", m);
        stop_daemon(ctx, cl.dir, name);
    }
    if (!server && !agent) {
        fprintf(ctx->err, "gantry is not running (data dir %s)\n", cl.dir);
    } else {
        fprintf(ctx->err, "gantry is down\n");
    }
    free(token);
    json_decref(state);
    cluster_fini(&cl);
    return 0;
}
