/*
 * `gantry up --ha`: the parts of a local highly available control plane
 * (docs/ha.md) that a one-machine cluster does not have: a 3-member etcd
 * (Debian's etcd-server, found on PATH) on free loopback ports, its
 * members' data in DATA_DIR/etcd/mN, logs in DATA_DIR/logs/etcdN.log, pids
 * in DATA_DIR/etcdN.pid; and the extra gantryd replicas, each with its own
 * data directory DATA_DIR/replicaN, log and pid (gantrydN). cmd_up.c starts
 * the first replica itself and lists them all in the client configuration
 * and the agent's --server; `gantry down` stops every one of them.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli_int.h"

enum { ETCD_START_S = 30, REPLICA_START_S = 15, POLL_MS = 50 };

int gt_cli_up_free_port(const char *host)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t len = sizeof(sa);
    int port = -1;
    if (fd >= 0 && inet_pton(AF_INET, host, &sa.sin_addr) == 1 &&
        bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0) {
        port = ntohs(sa.sin_port);
    }
    if (fd >= 0) {
        close(fd);
    }
    return port;
}

static void nap(void)
{
    usleep(POLL_MS * 1000);
}

/* Has the child pid exited? */
static bool gone(pid_t pid)
{
    return waitpid(pid, NULL, WNOHANG) == pid;
}

/* Does the etcd at url take requests (a range through its gateway)? */
static bool etcd_answers(const char *url)
{
    struct gt_cli_client *c = gt_cli_client_new(url, NULL);
    json_t *req = json_pack("{s:s}", "key", "AA=="), *resp = NULL;
    struct gt_err err = {0};
    bool ok = gt_cli_client_request(c, "POST", "/v3/kv/range", req, &resp, &err) == 0;
    json_decref(req);
    json_decref(resp);
    gt_cli_client_free(c);
    return ok;
}

int gt_cli_up_ha_etcd(const char *dir, const char *logs, const char *host, char **store,
                      struct gt_err *err)
{
    *store = NULL;
    int client[GT_CLI_UP_HA_REPLICAS], peer[GT_CLI_UP_HA_REPLICAS];
    struct gt_buf cluster, eps;
    gt_buf_init(&cluster);
    gt_buf_init(&eps);
    for (int m = 0; m < GT_CLI_UP_HA_REPLICAS; m++) {
        client[m] = gt_cli_up_free_port(host);
        peer[m] = gt_cli_up_free_port(host);
        gt_buf_printf(&cluster, "%sm%d=http://%s:%d", m ? "," : "", m + 1, host, peer[m]);
        gt_buf_printf(&eps, "%s%s:%d", m ? "," : "", host, client[m]);
    }
    int rc = 0;
    pid_t pids[GT_CLI_UP_HA_REPLICAS];
    for (int m = 0; m < GT_CLI_UP_HA_REPLICAS && rc == 0; m++) {
        char name[32], pidname[32], token[16];
        snprintf(name, sizeof(name), "m%d", m + 1);
        snprintf(pidname, sizeof(pidname), "etcd%d", m + 1);
        snprintf(token, sizeof(token), "gantry-up");
        char *data = gt_xasprintf("%s/etcd/%s", dir, name);
        char *curl = gt_xasprintf("http://%s:%d", host, client[m]);
        char *purl = gt_xasprintf("http://%s:%d", host, peer[m]);
        char *log = gt_xasprintf("%s/%s.log", logs, pidname);
        char *pid_path = gt_xasprintf("%s/%s.pid", dir, pidname);
        char *argv[] = {"etcd",       "--name",
                        name,         "--data-dir",
                        data,         "--listen-client-urls",
                        curl,         "--advertise-client-urls",
                        curl,         "--listen-peer-urls",
                        purl,         "--initial-advertise-peer-urls",
                        purl,         "--initial-cluster",
                        cluster.data, "--initial-cluster-token",
                        token,        "--initial-cluster-state",
                        "new",        "--log-level",
                        "error",      NULL};
        rc = gt_cli_up_spawn(argv, log, pid_path, &pids[m], err);
        free(data);
        free(curl);
        free(purl);
        free(log);
        free(pid_path);
    }
    char *first = gt_xasprintf("http://%s:%d", host, client[0]);
    int64_t deadline = gt_mono_ms() + ETCD_START_S * 1000;
    while (rc == 0 && !etcd_answers(first)) {
        bool dead = false;
        for (int m = 0; m < GT_CLI_UP_HA_REPLICAS; m++) {
            dead = dead || gone(pids[m]);
        }
        if (dead || gt_mono_ms() > deadline) {
            rc = gt_err_set(err, GT_EINTERNAL,
                            "etcd did not start (is etcd-server installed?); see %s/etcd1.log",
                            logs);
        }
        nap();
    }
    free(first);
    if (rc == 0) {
        *store = gt_xasprintf("etcd://%s", eps.data);
    }
    gt_buf_fini(&cluster);
    gt_buf_fini(&eps);
    return rc;
}

int gt_cli_up_ha_replica(char **argv, size_t argc, int n, const char *dir, const char *logs,
                         const char *host, int port, const char *secret_key, char **url,
                         struct gt_err *err)
{
    *url = NULL;
    char *data = gt_xasprintf("%s/replica%d", dir, n);
    char *listen = gt_xasprintf("%s:%d", host, port);
    char id[16], pidname[16];
    snprintf(id, sizeof(id), "r%d", n);
    snprintf(pidname, sizeof(pidname), "gantryd%d", n);
    char *log = gt_xasprintf("%s/%s.log", logs, pidname);
    char *pid_path = gt_xasprintf("%s/%s.pid", dir, pidname);
    char **av = gt_xcalloc(argc + 9, sizeof(*av));
    memcpy(av, argv, argc * sizeof(*av));
    size_t k = argc;
    char *extra[] = {"--data-dir",   data, "--listen",     listen,
                     "--replica-id", id,   "--secret-key", (char *)secret_key};
    for (size_t i = 0; i < GT_ARRAY_LEN(extra); i++) {
        av[k++] = extra[i]; /* later flags win over the first replica's */
    }
    pid_t pid;
    int rc = gt_cli_up_spawn(av, log, pid_path, &pid, err);
    char *u = gt_xasprintf("http://%s", listen);
    struct gt_cli_client *c = gt_cli_client_new(u, NULL);
    int64_t deadline = gt_mono_ms() + REPLICA_START_S * 1000;
    while (rc == 0) {
        struct gt_err e = {0};
        if (gt_cli_client_request(c, "GET", "/healthz", NULL, NULL, &e) == 0) {
            break;
        }
        if (gone(pid) || gt_mono_ms() > deadline) {
            rc = gt_err_set(err, GT_EINTERNAL, "gantryd replica %d did not start; see %s", n, log);
        }
        nap();
    }
    gt_cli_client_free(c);
    if (rc == 0) {
        *url = u;
    } else {
        free(u);
    }
    free(av);
    free(data);
    free(listen);
    free(log);
    free(pid_path);
    return rc;
}
