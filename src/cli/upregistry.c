/*
 * The cluster registry of `gantry up`: Debian's docker-registry on
 * gantryd's address and a free port, storing under DATA_DIR/registry/data,
 * with token authentication whose realm is gantryd's registry/token and
 * whose trusted certificate is that of gantryd's --registry-key
 * (DATA_DIR/registry/key.pem and cert.pem, made once with openssl). Its
 * pid is DATA_DIR/registry.pid, its log logs/registry.log; gantry down
 * stops it. Without docker-registry or openssl on PATH there is none and
 * image builds fail with NoRegistry.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli_int.h"

#define REGISTRY_SERVICE "gantry-registry"

char *gt_cli_up_registry_config(const char *data_root, const char *addr, const char *realm,
                                const char *cert)
{
    return gt_xasprintf("version: 0.1\n"
                        "storage:\n  filesystem:\n    rootdirectory: %s\n"
                        "  delete:\n    enabled: true\n"
                        "http:\n  addr: %s\n"
                        "auth:\n  token:\n    realm: %s\n    service: " REGISTRY_SERVICE "\n"
                        "    issuer: gantryd\n    rootcertbundle: %s\n",
                        data_root, addr, realm, cert);
}

/* The full path of tool on PATH (new string), or NULL. */
static char *which(const char *tool)
{
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; p && *p;) {
        size_t n = strcspn(p, ":");
        char *cand = gt_xasprintf("%.*s/%s", (int)n, p, tool);
        if (n && access(cand, X_OK) == 0) {
            return cand;
        }
        free(cand);
        p += n + (p[n] == ':');
    }
    return NULL;
}

/* Run argv to completion with output to log_fd; 0 if it exited 0. */
static int run_tool(char *const *argv, int log_fd, struct gt_err *err)
{
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        int null_fd = open("/dev/null", O_RDONLY);
        if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) {
            _exit(127);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p) {
        return gt_err_set(err, -errno, "%s: %s", argv[0], strerror(errno));
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        return gt_err_set(err, GT_EINTERNAL, "%s failed", argv[0]);
    }
    return 0;
}

int gt_cli_up_registry_start(const struct gt_cli_up_registry *r, struct gt_err *err)
{
    char *reg = which("docker-registry"), *ossl = which("openssl");
    char *dir = gt_xasprintf("%s/registry", r->dir), *data = gt_xasprintf("%s/data", dir);
    char *key = gt_xasprintf("%s/key.pem", dir), *cert = gt_xasprintf("%s/cert.pem", dir);
    char *cfg = gt_xasprintf("%s/config.yml", dir), *log = gt_xasprintf("%s/registry.log", r->logs);
    char *pid_path = gt_xasprintf("%s/registry.pid", r->dir);
    int rc = 0, log_fd = -1;
    if (!reg || !ossl) {
        rc = GT_ENOTFOUND;
        goto out;
    }
    if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || (mkdir(data, 0700) < 0 && errno != EEXIST)) {
        rc = gt_err_set(err, -errno, "mkdir %s: %s", data, strerror(errno));
        goto out;
    }
    log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log_fd < 0) {
        rc = gt_err_set(err, -errno, "open %s: %s", log, strerror(errno));
        goto out;
    }
    if (access(key, R_OK) != 0 || access(cert, R_OK) != 0) {
        char *argv[] = {
            ossl, "req",  "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
            key,  "-out", cert,    "-days",   "3650",     "-subj",  "/CN=gantry-registry-token",
            NULL};
        rc = run_tool(argv, log_fd, err);
        if (rc < 0) {
            gt_err_prefix(err, "the registry's key (see %s)", log);
            goto out;
        }
    }
    char *realm = gt_xasprintf("%s" GT_API_GROUP_PREFIX "/registry/token", r->server);
    char *text = gt_cli_up_registry_config(data, r->addr, realm, cert);
    free(realm);
    rc = gt_cli_up_write_private(cfg, text, err);
    free(text);
    if (rc == 0) {
        char *argv[] = {reg, "serve", cfg, NULL};
        pid_t pid;
        rc = gt_cli_up_spawn(argv, log, pid_path, &pid, err);
    }
out:
    if (log_fd >= 0) {
        close(log_fd);
    }
    free(reg);
    free(ossl);
    free(dir);
    free(data);
    free(cfg);
    free(log);
    free(pid_path);
    free(cert);
    if (rc == 0) {
        free(*r->key_out);
        *r->key_out = key;
    } else {
        free(key);
    }
    return rc;
}
