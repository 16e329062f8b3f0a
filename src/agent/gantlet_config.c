/*
 * gantlet's configuration: one declarative table gives every setting's
 * name, type, default, bounds and help, as gantryd's does. It drives the
 * flags (--name VALUE, --name=VALUE), the environment (GANTLET_<NAME>,
 * dashes as underscores), --help and validation. Precedence: flag, then
 * environment, then default. A list setting (--storage-root) may be given
 * more than once; flags then replace what the environment gave. Strings in
 * struct gt_gantlet_config are owned by it.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "agent/gantlet.h"

enum opt_type { OPT_STR, OPT_INT, OPT_LIST, OPT_LOGLEVEL };

struct opt {
    const char *name;
    enum opt_type type;
    size_t offset;
    const char *def; /* NULL: no default */
    int64_t min, max;
    bool required;
    const char *help;
};

#define OFF(f) offsetof(struct gt_gantlet_config, f)

static const struct opt opts[] = {
    {"server", OPT_STR, OFF(server), NULL, 0, 0, true, "gantryd URL, http://HOST:PORT"},
    {"token-file", OPT_STR, OFF(token_file), NULL, 0, 0, true,
     "the node's token: first line, bare or token,user,uid,\"groups\""},
    {"name", OPT_STR, OFF(name), NULL, 0, 0, true, "node name"},
    {"listen", OPT_STR, OFF(listen), "127.0.0.1:8444", 0, 0, false,
     "ADDR:PORT serving task logs, /healthz and /metrics"},
    {"fake-gpus", OPT_STR, OFF(fake_gpus), NULL, 0, 0, false,
     "declare fake GPUs, e.g. 8xA100-80GB:groups=4+4, instead of NVML"},
    {"nvml-library", OPT_STR, OFF(nvml_lib), GT_NVML_LIBRARY, 0, 0, false,
     "NVML library to dlopen"},
    {"root", OPT_STR, OFF(root), "/var/lib/gantlet", 0, 0, false,
     "state directory (ROOT/tasks/<task-uid>/)"},
    {"storage-root", OPT_LIST, OFF(storage_roots), NULL, 0, 0, false,
     "a directory volumes may be mounted from (repeatable)"},
    {"pip-find-links", OPT_STR, OFF(pip_find_links), NULL, 0, 0, false,
     "a directory of wheels for tasks' requirements (pip --find-links; offline without "
     "--pip-index-url)"},
    {"pip-index-url", OPT_STR, OFF(pip_index_url), NULL, 0, 0, false,
     "the package index for tasks' requirements (pip --index-url)"},
    {"cluster-interface", OPT_STR, OFF(cluster_interface), NULL, 0, 0, false,
     "network interface of the cluster network for GLOO/NCCL_SOCKET_IFNAME (default: the one "
     "owning the --listen address)"},
    {"heartbeat", OPT_INT, OFF(heartbeat_s), "10", 1, 3600, false, "seconds between heartbeats"},
    {"shim", OPT_STR, OFF(shim), NULL, 0, 0, false,
     "gantry-shim binary (default: next to gantlet)"},
    {"log-max-bytes", OPT_INT, OFF(log_max_bytes), "104857600", 4096, INT64_MAX / 2, false,
     "task log file size before it is rotated (3 rotated files kept)"},
    {"log-level", OPT_LOGLEVEL, OFF(log_level), "info", 0, 0, false, "debug, info, warn or error"},
};

static const char *const log_levels[] = {"debug", "info", "warn", "error"};

static int set_value(struct gt_gantlet_config *cfg, const struct opt *o, const char *v,
                     const char *source, struct gt_err *err)
{
    void *field = (char *)cfg + o->offset;
    if (!*v) {
        return gt_err_set(err, GT_EINVAL, "%s: must not be empty", source);
    }
    switch (o->type) {
    case OPT_STR:
        free(*(char **)field);
        *(char **)field = gt_xstrdup(v);
        return 0;
    case OPT_LIST: {
        /* the count follows the array pointer in the struct */
        char ***list = field;
        size_t *n = (size_t *)((char *)field + sizeof(char **));
        *list = gt_xrealloc(*list, (*n + 1) * sizeof(**list));
        (*list)[(*n)++] = gt_xstrdup(v);
        return 0;
    }
    case OPT_INT: {
        char *end = NULL;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (errno || end == v || *end || n < o->min || n > o->max) {
            return gt_err_set(err, GT_EINVAL, "%s: %s is not an integer in [%lld, %lld]", source, v,
                              (long long)o->min, (long long)o->max);
        }
        *(int64_t *)field = n;
        return 0;
    }
    case OPT_LOGLEVEL:
        for (size_t i = 0; i < GT_ARRAY_LEN(log_levels); i++) {
            if (!strcmp(v, log_levels[i])) {
                *(int64_t *)field = (int64_t)i;
                return 0;
            }
        }
        return gt_err_set(err, GT_EINVAL, "%s: %s is not one of debug, info, warn, error", source,
                          v);
    }
    return gt_err_set(err, GT_EINTERNAL, "%s: bad option type", source);
}

static void clear_value(struct gt_gantlet_config *cfg, const struct opt *o)
{
    void *field = (char *)cfg + o->offset;
    if (o->type == OPT_STR) {
        free(*(char **)field);
        *(char **)field = NULL;
    } else if (o->type == OPT_LIST) {
        char ***list = field;
        size_t *n = (size_t *)((char *)field + sizeof(char **));
        for (size_t i = 0; i < *n; i++) {
            free((*list)[i]);
        }
        free(*list);
        *list = NULL;
        *n = 0;
    }
}

/* "token-file" -> "GANTLET_TOKEN_FILE" */
static void env_name(const struct opt *o, char *buf, size_t len)
{
    int n = snprintf(buf, len, "GANTLET_%s", o->name);
    for (int i = 8; i < n && (size_t)i < len; i++) {
        buf[i] = buf[i] == '-' ? '_' : (char)toupper((unsigned char)buf[i]);
    }
}

static const char *env_lookup(char *const *envp, const char *name)
{
    size_t nl = strlen(name);
    for (; envp && *envp; envp++) {
        if (!strncmp(*envp, name, nl) && (*envp)[nl] == '=') {
            return *envp + nl + 1;
        }
    }
    return NULL;
}

static const struct opt *find_opt(const char *name, size_t len)
{
    for (size_t i = 0; i < GT_ARRAY_LEN(opts); i++) {
        if (strlen(opts[i].name) == len && !strncmp(opts[i].name, name, len)) {
            return &opts[i];
        }
    }
    return NULL;
}

static int parse_args(struct gt_gantlet_config *cfg, int argc, char *const *argv, bool *seen,
                      bool *help, struct gt_err *err)
{
    bool flagged[GT_ARRAY_LEN(opts)] = {false};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = true;
            return 0;
        }
        if (strncmp(a, "--", 2) != 0) {
            return gt_err_set(err, GT_EINVAL, "%s: unexpected argument", a);
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nl = eq ? (size_t)(eq - name) : strlen(name);
        const struct opt *o = find_opt(name, nl);
        if (!o) {
            return gt_err_set(err, GT_EINVAL, "%.*s: unknown flag (see --help)", (int)nl + 2, a);
        }
        const char *v = eq ? eq + 1 : NULL;
        if (!v) {
            if (i + 1 >= argc) {
                return gt_err_set(err, GT_EINVAL, "--%s: needs a value", o->name);
            }
            v = argv[++i];
        }
        size_t k = (size_t)(o - opts);
        if (!flagged[k]) {
            clear_value(cfg, o); /* a flag replaces the environment's list */
            flagged[k] = true;
        }
        char src[64];
        snprintf(src, sizeof(src), "--%s", o->name);
        int rc = set_value(cfg, o, v, src, err);
        if (rc) {
            return rc;
        }
        seen[k] = true;
    }
    return 0;
}

int gt_gantlet_config_parse(struct gt_gantlet_config *cfg, int argc, char *const *argv,
                            char *const *envp, bool *help, struct gt_err *err)
{
    memset(cfg, 0, sizeof(*cfg));
    *help = false;
    bool seen[GT_ARRAY_LEN(opts)] = {false};
    for (size_t i = 0; i < GT_ARRAY_LEN(opts); i++) {
        const struct opt *o = &opts[i];
        char name[64];
        env_name(o, name, sizeof(name));
        const char *v = env_lookup(envp, name);
        int rc = 0;
        if (v) {
            rc = set_value(cfg, o, v, name, err);
            seen[i] = true;
        } else if (o->def) {
            rc = set_value(cfg, o, o->def, "default", err);
        }
        if (rc) {
            return rc;
        }
    }
    int rc = parse_args(cfg, argc, argv, seen, help, err);
    if (rc || *help) {
        return rc;
    }
    for (size_t i = 0; i < GT_ARRAY_LEN(opts); i++) {
        if (opts[i].required && !seen[i]) {
            return gt_err_set(err, GT_EINVAL, "--%s: required (see --help)", opts[i].name);
        }
    }
    return 0;
}

void gt_gantlet_config_fini(struct gt_gantlet_config *cfg)
{
    for (size_t i = 0; i < GT_ARRAY_LEN(opts); i++) {
        clear_value(cfg, &opts[i]);
    }
}

void gt_gantlet_config_usage(FILE *f)
{
    fprintf(f, "usage: gantlet --server URL --token-file FILE --name NODE [options]\n\n"
               "gantry's node agent: registers the node, runs its tasks, serves their logs.\n\n");
    for (size_t i = 0; i < GT_ARRAY_LEN(opts); i++) {
        const struct opt *o = &opts[i];
        char env[64];
        env_name(o, env, sizeof(env));
        static const char *const arg[] = {" STR", " N", " DIR", " LEVEL"};
        fprintf(f, "  --%s%s\n      %s\n      env %s", o->name, arg[o->type], o->help, env);
        if (o->required) {
            fprintf(f, "; required");
        } else if (o->def) {
            fprintf(f, "; default %s", o->def);
        }
        fprintf(f, "\n");
    }
}

int gt_gantlet_token_read(const char *path, char **token, struct gt_err *err)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        return gt_err_set(err, -errno, "%s: %s", path, strerror(errno));
    }
    char line[4096];
    bool got = fgets(line, sizeof(line), f) != NULL;
    fclose(f);
    if (!got) {
        return gt_err_set(err, GT_EINVAL, "%s: empty token file", path);
    }
    size_t n = strcspn(line, ",\r\n");
    while (n > 0 && isspace((unsigned char)line[n - 1])) {
        n--;
    }
    const char *s = line;
    while (n > 0 && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    if (n == 0) {
        return gt_err_set(err, GT_EINVAL, "%s: no token on the first line", path);
    }
    *token = gt_xstrndup(s, n);
    return 0;
}
