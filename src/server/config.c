/*
 * gantryd's configuration: one declarative table (see common/config.h)
 * gives every setting's name, type, default, bounds and help; it drives
 * the flags, the environment (GANTRYD_<NAME>), --help and validation;
 * --storage-root, --storage-class, --image and --replica-url may be repeated. Strings in struct
 * gt_server_config are owned by it.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "common/config.h"
#include "server/server.h"

#define OFF(f) offsetof(struct gt_server_config, f)

static const struct gt_config_opt opts[] = {
    {"data-dir", GT_CONFIG_STR, OFF(data_dir), NULL, 0, 0, true,
     "directory for the store (DATA_DIR/gantry.db)"},
    {"store", GT_CONFIG_STR, OFF(store), "sqlite", 0, 0, false,
     "sqlite (DATA_DIR/gantry.db) or etcd://HOST:PORT[,HOST:PORT...] (etcd v3 members, tried in "
     "turn)"},
    {"etcd-cafile", GT_CONFIG_STR, OFF(etcd_cafile), NULL, 0, 0, false,
     "CA certificates to verify the etcd members by (https); none: plain http"},
    {"leader-lease-ttl", GT_CONFIG_INT, OFF(leader_lease_ttl_s), "2", 1, 3600, false,
     "etcd store: seconds the leader's lease outlives its last renewal; with the renew "
     "interval it bounds failover (docs/ha.md: a SIGKILLed leader is replaced within about "
     "ttl + 0.5 s + renew interval)"},
    {"leader-renew-interval", GT_CONFIG_INT, OFF(leader_renew_ms), "250", 10, 3600000, false,
     "etcd store: milliseconds between lease renewals, and between a follower's tries to "
     "become leader; less than the lease ttl"},
    {"replica-id", GT_CONFIG_STR, OFF(replica_id), NULL, 0, 0, false,
     "etcd store: this replica's name in the leader key (unique among the replicas); default "
     "HOSTNAME-PID-RANDOM"},
    {"replica-url", GT_CONFIG_LIST, OFF(replica_urls), NULL, 0, 0, false,
     "http[s]://HOST[:PORT]: the URL of a gantryd replica as browsers reach it (repeatable: "
     "every replica's, this one's too, the same list on each); the dashboard fails over "
     "between them (GET clusterinfo lists them) and the API answers their cross-origin "
     "requests (CORS); none: the dashboard talks only to the replica that served it"},
    {"listen", GT_CONFIG_STR, OFF(listen), "127.0.0.1:8443", 0, 0, false,
     "ADDR:PORT to serve plain HTTP on (port 0: any free port)"},
    {"token-file", GT_CONFIG_STR, OFF(token_file), NULL, 0, 0, true,
     "static tokens, lines token,user,uid,\"group1,group2\" (re-read on SIGHUP)"},
    {"watch-history", GT_CONFIG_INT, OFF(watch_history), "10000", 1, 100000000, false,
     "store events kept for watches; older start points get 410"},
    {"event-ttl", GT_CONFIG_INT, OFF(event_ttl_s), "3600", 1, 31536000, false,
     "seconds an Event is kept after its last occurrence (as kube-apiserver's --event-ttl)"},
    {"max-body-bytes", GT_CONFIG_INT, OFF(max_body_bytes), "3145728", 1024, 1073741824, false,
     "largest request body; larger ones get 413"},
    {"log-level", GT_CONFIG_LOGLEVEL, OFF(log_level), "info", 0, 0, false,
     "debug, info, warn or error"},
    {"enable-fault-injection", GT_CONFIG_BOOL, OFF(enable_fault_injection), "false", 0, 0, false,
     "serve POST /debug/fault (admins only), for tests"},
    {"fault-points", GT_CONFIG_STR, OFF(fault_points), NULL, 0, 0, false,
     "NAME=crash|fail[:nth=N|:p=P],...: arm named fault points, for tests (docs/faults.md: "
     "store-commit, commit-before-reply, after-bind-before-status)"},
    {"scheduler-policy", GT_CONFIG_STR, OFF(scheduler_policy), NULL, 0, 0, false,
     "scheduling policy by name (gantry, firstfit, fifo, ...); default gantry where known, "
     "else firstfit"},
    {"node-grace", GT_CONFIG_INT, OFF(node_grace_s), "40", 1, 86400, false,
     "seconds without a heartbeat after which a node is lost and its tasks fail"},
    {"port-range", GT_CONFIG_STR, OFF(port_range), "30000-32767", 0, 0, false,
     "LOW-HIGH: each node's ports for tasks (MASTER_PORT, TF_CONFIG, template.ports)"},
    {"terminated-task-gc-threshold", GT_CONFIG_INT, OFF(terminated_task_gc), "12500", 0, 100000000,
     false,
     "terminated Tasks of finished jobs kept before the oldest (by finishTime) are deleted, as "
     "kube-controller-manager's --terminated-pod-gc-threshold; 0: never"},
    {"restart-backoff-ms", GT_CONFIG_INT, OFF(restart_backoff_ms), "10000", 1, 3600000, false,
     "back-off before a job's first restart; doubles per restart up to 30 times this"},
    {"notebook-idle-timeout", GT_CONFIG_INT, OFF(notebook_idle_timeout_s), "3600", 1, 31536000,
     false,
     "seconds without activity after which a notebook with culling on is stopped (Culled); "
     "projects override it with the annotation gantry.dev/notebook-idle-timeout-seconds"},
    {"notebook-check-interval-ms", GT_CONFIG_INT, OFF(notebook_check_ms), "30000", 100, 3600000,
     false, "how often running notebooks are checked for activity"},
    {"notebook-cpu-idle-milli", GT_CONFIG_INT, OFF(notebook_cpu_idle_milli), "50", 0, 1000000,
     false, "a notebook's task using more CPU than this (milli-CPU, between checks) is active"},
    {"storage-root", GT_CONFIG_LIST, OFF(storage_roots), NULL, 0, 0, false,
     "a directory Job and Task volumes (hostPath) may come from (repeatable; as the nodes' "
     "gantlet --storage-root); none: hostPath volumes are refused"},
    {"storage-class", GT_CONFIG_LIST, OFF(storage_classes), NULL, 0, 0, false,
     "NAME=DIR: a storage class for Volumes, their disk images kept in DIR (repeatable; an "
     "absolute path, a storage root the nodes' gantlet --storage-root also names); the first "
     "is the default; none: Volumes are refused"},
    {"model-store", GT_CONFIG_STR, OFF(model_store), NULL, 0, 0, false,
     "DIR: the content-addressed model store (ModelVersion artifacts, DIR/sha256/<hex>/), a "
     "storage root every node sees (not beneath a --storage-class directory, where hostPath "
     "volumes are refused); none: ModelVersions are refused"},
    {"image", GT_CONFIG_LIST, OFF(images), NULL, 0, 0, false,
     "NAME=REF: an image offered to clients by GET clusterinfo (repeatable; REF an OCI image "
     "reference); jobs may still name any image"},
    {"pip-index-url", GT_CONFIG_STR, OFF(pip_index_url), NULL, 0, 0, false,
     "the package index for tasks' requirements (pip --index-url): the spec.pip of the tasks of "
     "jobs with requirements"},
    {"pip-find-links", GT_CONFIG_STR, OFF(pip_find_links), NULL, 0, 0, false,
     "a directory of wheels on the nodes for tasks' requirements (pip --find-links; offline "
     "without --pip-index-url): the spec.pip of the tasks of jobs with requirements"},
    {"registry", GT_CONFIG_STR, OFF(registry), NULL, 0, 0, false,
     "HOST:PORT of the cluster registry (docker-registry over HTTP, as the nodes reach it): "
     "ImageBuilds push to HOST:PORT/PROJECT/NAME:TAG; none: builds fail with NoRegistry"},
    {"registry-key", GT_CONFIG_STR, OFF(registry_key), NULL, 0, 0, false,
     "a PEM RSA private key: gantryd serves GET registry/token, the token realm of the cluster "
     "registry (docker-registry auth: token, trusting this key's certificate), and builds "
     "push with credentials it signs; none: the registry is open"},
    {"gateway-listen", GT_CONFIG_STR, OFF(gateway_listen), NULL, 0, 0, false,
     "ADDR:PORT of the serving gateway: gantryd runs HAProxy there, routing "
     "/serving/PROJECT/NAME/... and Host NAME.PROJECT.<--gateway-domain> to InferenceService "
     "replicas; none: no gateway (services run but are not routed)"},
    {"gateway-domain", GT_CONFIG_STR, OFF(gateway_domain), "serving.local", 0, 0, false,
     "the DNS suffix of the gateway's Host routes (NAME.PROJECT.<domain>)"},
    {"haproxy", GT_CONFIG_STR, OFF(haproxy), "haproxy", 0, 0, false,
     "the HAProxy binary the gateway runs (2.6 or later: dynamic servers, http_auth_bearer)"},
    {"secret-key", GT_CONFIG_STR, OFF(secret_key), NULL, 0, 0, false,
     "a file of at least 32 bytes keying the values gantryd derives and never stores (notebook "
     "tokens); every replica of one control plane needs the same; default DATA_DIR/secret.key, "
     "made with random bytes on first start"},
    {"ui-dir", GT_CONFIG_STR, OFF(ui_dir), NULL, 0, 0, false,
     "the built web dashboard served at / (index.html, assets/); default: web beside the "
     "gantryd binary, where make puts it"},
};

static const struct gt_config_table table = {
    .env_prefix = "GANTRYD_",
    .usage = "usage: gantryd --data-dir DIR --token-file FILE [options]\n\n"
             "gantry's control plane: the HTTP/JSON API server and its store.\n\n",
    .opts = opts,
    .n_opts = GT_ARRAY_LEN(opts),
};

/* One --image NAME=REF: NAME non-empty, REF as a template's image. */
static int check_image_flag(const char *v, struct gt_err *err)
{
    const char *eq = strchr(v, '=');
    if (!eq || eq == v) {
        return gt_err_set(err, GT_EINVAL, "--image %s: want NAME=REF", v);
    }
    json_t *ref = json_string(eq + 1);
    struct gt_err e = {0};
    int rc = ref ? gt_check_image(ref, &e) : gt_err_set(&e, GT_EINVAL, "not UTF-8");
    json_decref(ref);
    if (rc) {
        return gt_err_set(err, GT_EINVAL, "--image %s: %s", v, e.msg);
    }
    return 0;
}

/* One --replica-url: http:// or https://, then a host (letters, digits,
 * '.', '-', or a bracketed IPv6 address) and an optional :PORT, nothing
 * after but one '/', which is dropped, so that it reads as browsers write
 * an origin. */
static int check_replica_url(char *v, struct gt_err *err)
{
    char *host = !strncmp(v, "http://", 7) ? v + 7 : !strncmp(v, "https://", 8) ? v + 8 : NULL;
    if (!host) {
        return gt_err_set(err, GT_EINVAL, "--replica-url %s: want http:// or https://", v);
    }
    size_t len = strlen(host);
    if (len > 0 && host[len - 1] == '/') {
        host[len - 1] = '\0';
    }
    const char *p = host;
    if (*p == '[') {
        p += strspn(p + 1, "0123456789abcdefABCDEF:") + 1;
        if (*p++ != ']' || p == host + 2) {
            return gt_err_set(err, GT_EINVAL, "--replica-url %s: malformed IPv6 address", v);
        }
    } else {
        p += strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-");
        if (p == host) {
            return gt_err_set(err, GT_EINVAL, "--replica-url %s: no host", v);
        }
    }
    if (*p == ':') {
        char *end = NULL;
        long port = strtol(p + 1, &end, 10);
        if (end == p + 1 || port < 1 || port > 65535) {
            return gt_err_set(err, GT_EINVAL, "--replica-url %s: port must be 1-65535", v);
        }
        p = end;
    }
    if (*p) {
        return gt_err_set(err, GT_EINVAL,
                          "--replica-url %s: only scheme, host and port (no path, query or user)",
                          v);
    }
    return 0;
}

/* One --storage-class NAME=DIR: NAME a DNS label, DIR an absolute path. */
static int check_storage_class_flag(const char *v, struct gt_err *err)
{
    const char *eq = strchr(v, '=');
    char name[64];
    if (!eq || eq == v || (size_t)(eq - v) >= sizeof(name)) {
        return gt_err_set(err, GT_EINVAL, "--storage-class %s: want NAME=DIR", v);
    }
    memcpy(name, v, (size_t)(eq - v));
    name[eq - v] = '\0';
    struct gt_err e = {0};
    if (gt_api_check_name(name, &e)) {
        return gt_err_set(err, GT_EINVAL, "--storage-class %s: NAME %s", v, e.msg);
    }
    if (eq[1] != '/') {
        return gt_err_set(err, GT_EINVAL, "--storage-class %s: DIR must be an absolute path", v);
    }
    return 0;
}

int gt_server_config_parse(struct gt_server_config *cfg, int argc, char *const *argv,
                           char *const *envp, bool *help, struct gt_err *err)
{
    *cfg = (struct gt_server_config){0};
    int rc = gt_config_parse(&table, cfg, argc, argv, envp, help, err);
    bool sqlite = rc == 0 && !*help && strcmp(cfg->store, "sqlite") == 0;
    if (rc == 0 && !*help && !sqlite && strncmp(cfg->store, "etcd://", 7) != 0) {
        rc = gt_err_set(err, GT_EINVAL, "--store %s: want sqlite or etcd://HOST:PORT,...",
                        cfg->store);
    } else if (sqlite && cfg->etcd_cafile) {
        rc = gt_err_set(err, GT_EINVAL, "--etcd-cafile: only with --store etcd://...");
    }
    for (size_t i = 0; rc == 0 && !*help && i < cfg->storage_roots.n; i++) {
        if (cfg->storage_roots.items[i][0] != '/') {
            rc = gt_err_set(err, GT_EINVAL, "--storage-root %s: want an absolute path",
                            cfg->storage_roots.items[i]);
        }
    }
    if (rc == 0 && !*help && cfg->model_store && cfg->model_store[0] != '/') {
        rc =
            gt_err_set(err, GT_EINVAL, "--model-store %s: want an absolute path", cfg->model_store);
    }
    for (size_t i = 0; rc == 0 && !*help && i < cfg->storage_classes.n; i++) {
        rc = check_storage_class_flag(cfg->storage_classes.items[i], err);
    }
    for (size_t i = 0; rc == 0 && !*help && i < cfg->images.n; i++) {
        rc = check_image_flag(cfg->images.items[i], err);
    }
    for (size_t i = 0; rc == 0 && !*help && i < cfg->replica_urls.n; i++) {
        rc = check_replica_url(cfg->replica_urls.items[i], err);
    }
    return rc;
}

void gt_server_config_fini(struct gt_server_config *cfg)
{
    gt_config_fini(&table, cfg);
}

void gt_server_config_usage(FILE *f)
{
    gt_config_usage(&table, f);
}
