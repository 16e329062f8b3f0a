/*
 * Client configuration: which gantryd to talk to and with which token.
 *
 * Each setting is resolved on its own, first match wins: command-line flag,
 * environment ($GANTRY_SERVER, $GANTRY_TOKEN), configuration file. The file
 * is JSON, {"server": "http://127.0.0.1:7070", "token": "...", "project":
 * "default", "dataDir": "..."}, written by `gantry up` through
 * gt_cli_config_write (dataDir: the local cluster it points at, which
 * `gantry down` stops when given no --data-dir): atomically
 * and readable only by its owner, since it holds a credential. "project" is
 * the project of every command given no -p (as kubectl's context
 * namespace); only the file and -p supply it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

char *gt_cli_config_path(void)
{
    const char *v = env_nonempty("GANTRY_CONFIG");
    if (v) {
        return gt_xstrdup(v);
    }
    v = env_nonempty("XDG_CONFIG_HOME");
    if (v) {
        return gt_xasprintf("%s/gantry/config", v);
    }
    v = env_nonempty("HOME");
    if (v) {
        return gt_xasprintf("%s/.config/gantry/config", v);
    }
    return NULL;
}

/* Read the file's string field key into *dst unless *dst is already set. */
static int take_field(json_t *root, const char *key, const char *path, char **dst,
                      struct gt_err *err)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) {
        return 0;
    }
    if (!json_is_string(v)) {
        return gt_err_set(err, GT_EBADREQ, "config %s: %s: must be a string", path, key);
    }
    if (!*dst && json_string_length(v) > 0) {
        *dst = gt_xstrdup(json_string_value(v));
    }
    return 0;
}

static int load_file(const char *path, struct gt_cli_config *cfg, struct gt_err *err)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (access(path, F_OK) != 0 && errno == ENOENT) {
            return 0;
        }
        return gt_err_set(err, GT_EBADREQ, "config %s: line %d: %s", path, jerr.line, jerr.text);
    }
    int rc = 0;
    if (!json_is_object(root)) {
        rc = gt_err_set(err, GT_EBADREQ, "config %s: must be a JSON object", path);
        goto out;
    }
    rc = take_field(root, "server", path, &cfg->server, err);
    if (rc == 0) {
        rc = take_field(root, "token", path, &cfg->token, err);
    }
    if (rc == 0) {
        rc = take_field(root, "project", path, &cfg->project, err);
    }
    if (rc == 0) {
        rc = take_field(root, "dataDir", path, &cfg->data_dir, err);
    }
out:
    json_decref(root);
    return rc;
}

int gt_cli_config_resolve(const char *flag_server, const char *flag_token,
                          struct gt_cli_config *cfg, struct gt_err *err)
{
    const char *server = flag_server ? flag_server : env_nonempty("GANTRY_SERVER");
    const char *token = flag_token ? flag_token : env_nonempty("GANTRY_TOKEN");
    cfg->server = gt_xstrdup(server);
    cfg->token = gt_xstrdup(token);
    cfg->project = NULL;
    cfg->data_dir = NULL;
    int rc = 0;
    if (!cfg->server || !cfg->token) {
        char *path = gt_cli_config_path();
        if (path) {
            rc = load_file(path, cfg, err);
        }
        free(path);
    }
    if (rc < 0) {
        gt_cli_config_fini(cfg);
        return rc;
    }
    if (cfg->server) {
        size_t n = strlen(cfg->server);
        while (n > 0 && cfg->server[n - 1] == '/') {
            cfg->server[--n] = '\0';
        }
    }
    return 0;
}

void gt_cli_config_fini(struct gt_cli_config *cfg)
{
    free(cfg->server);
    free(cfg->token);
    free(cfg->project);
    free(cfg->data_dir);
    cfg->server = NULL;
    cfg->token = NULL;
    cfg->project = NULL;
    cfg->data_dir = NULL;
}

int gt_cli_config_read(const char *path, struct gt_cli_config *cfg, struct gt_err *err)
{
    *cfg = (struct gt_cli_config){0};
    int rc = load_file(path, cfg, err);
    if (rc < 0) {
        gt_cli_config_fini(cfg);
    }
    return rc;
}

int gt_cli_config_project(const char *flag_project, char **project, struct gt_err *err)
{
    *project = NULL;
    if (flag_project) {
        *project = gt_xstrdup(flag_project);
        return 0;
    }
    struct gt_cli_config cfg = {0};
    char *path = gt_cli_config_path();
    int rc = path ? load_file(path, &cfg, err) : 0;
    free(path);
    if (rc == 0) {
        *project = cfg.project;
        cfg.project = NULL;
    }
    gt_cli_config_fini(&cfg);
    return rc;
}

/* mkdir -p of path's parent directories, mode 0700 for those created. */
static int make_parents(const char *path, struct gt_err *err)
{
    char *dir = gt_xstrdup(path);
    int rc = 0;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') {
            continue;
        }
        *p = '\0';
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
            rc = gt_err_set(err, -errno, "create %s: %s", dir, strerror(errno));
            break;
        }
        *p = '/';
    }
    free(dir);
    return rc;
}

static int write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

int gt_cli_config_write(const char *path, const char *server, const char *token,
                        const char *project, const char *data_dir, struct gt_err *err)
{
    int rc = make_parents(path, err);
    if (rc < 0) {
        return rc;
    }
    json_t *root = json_object();
    json_object_set_new(root, "server", json_string(server));
    if (token) {
        json_object_set_new(root, "token", json_string(token));
    }
    if (project) {
        json_object_set_new(root, "project", json_string(project));
    }
    if (data_dir) {
        json_object_set_new(root, "dataDir", json_string(data_dir));
    }
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    char *tmp = gt_xasprintf("%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        rc = gt_err_set(err, -errno, "create %s: %s", tmp, strerror(errno));
        goto out;
    }
    /* O_TRUNC on a leftover temporary keeps its old mode; make it private. */
    if (fchmod(fd, 0600) != 0 || (rc = write_all(fd, text, strlen(text))) < 0 ||
        (rc = write_all(fd, "\n", 1)) < 0 || fsync(fd) != 0) {
        rc = rc < 0 ? rc : -errno;
        gt_err_set(err, rc, "write %s: %s", tmp, strerror(-rc));
        close(fd);
        unlink(tmp);
        goto out;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        rc = -errno;
        gt_err_set(err, rc, "write %s: %s", path, strerror(-rc));
        unlink(tmp);
    }
out:
    free(tmp);
    free(text);
    return rc;
}
