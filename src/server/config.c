/*
 * gantryd's configuration: one declarative table (as nginx's command tables)
 * gives every setting's name, type, default, bounds and help. The same table
 * drives the command-line flags (--name VALUE, --name=VALUE, --flag for
 * booleans), the environment (GANTRYD_<NAME>, dashes as underscores), the
 * --help text and validation. Precedence: flag, then environment, then
 * default. Strings in struct gt_server_config are owned by it.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

enum opt_type { OPT_STR, OPT_INT, OPT_BOOL, OPT_LOGLEVEL };

struct opt {
    const char *name;
    enum opt_type type;
    size_t offset;
    const char *def; /* NULL: no default */
    int64_t min, max;
    bool required;
    const char *help;
};

#define OFF(f) offsetof(struct gt_server_config, f)

static const struct opt opts[] = {
    {"data-dir", OPT_STR, OFF(data_dir), NULL, 0, 0, true,
     "directory for the store (DATA_DIR/gantry.db)"},
    {"listen", OPT_STR, OFF(listen), "127.0.0.1:8443", 0, 0, false,
     "ADDR:PORT to serve plain HTTP on (port 0: any free port)"},
    {"token-file", OPT_STR, OFF(token_file), NULL, 0, 0, true,
     "static tokens, lines token,user,uid,\"group1,group2\""},
    {"watch-history", OPT_INT, OFF(watch_history), "10000", 1, 100000000, false,
     "store events kept for watches; older start points get 410"},
    {"max-body-bytes", OPT_INT, OFF(max_body_bytes), "3145728", 1024, 1073741824, false,
     "largest request body; larger ones get 413"},
    {"log-level", OPT_LOGLEVEL, OFF(log_level), "info", 0, 0, false, "debug, info, warn or error"},
    {"enable-fault-injection", OPT_BOOL, OFF(enable_fault_injection), "false", 0, 0, false,
     "serve POST /debug/fault (admins only), for tests"},
    {"scheduler-policy", OPT_STR, OFF(scheduler_policy), NULL, 0, 0, false,
     "scheduling policy by name (gantry, firstfit, fifo, ...); default gantry where known, "
     "else firstfit"},
    {"node-grace", OPT_INT, OFF(node_grace_s), "40", 1, 86400, false,
     "seconds without a heartbeat after which a node is lost and its tasks fail"},
    {"port-range", OPT_STR, OFF(port_range), "30000-32767", 0, 0, false,
     "LOW-HIGH: each node's ports for tasks (MASTER_PORT, TF_CONFIG, template.ports)"},
    {"restart-backoff-ms", OPT_INT, OFF(restart_backoff_ms), "10000", 1, 3600000, false,
     "back-off before a job's first restart; doubles per restart up to 30 times this"},
};

static const char *const log_levels[] = {"debug", "info", "warn", "error"};

static int set_value(struct gt_server_config *cfg, const struct opt *o, const char *v,
                     const char *source, struct gt_err *err)
{
    void *field = (char *)cfg + o->offset;
    switch (o->type) {
    case OPT_STR: {
        char **s = field;
        if (!*v) {
            return gt_err_set(err, GT_EINVAL, "%s: must not be empty", source);
        }
        free(*s);
        *s = gt_xstrdup(v);
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
    case OPT_BOOL:
        if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes")) {
            *(bool *)field = true;
        } else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no")) {
            *(bool *)field = false;
        } else {
            return gt_err_set(err, GT_EINVAL, "%s: %s is not true or false", source, v);
        }
        return 0;
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

/* "data-dir" -> "GANTRYD_DATA_DIR" */
static void env_name(const struct opt *o, char *buf, size_t len)
{
    int n = snprintf(buf, len, "GANTRYD_%s", o->name);
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

static int parse_args(struct gt_server_config *cfg, int argc, char *const *argv, bool *seen,
                      bool *help, struct gt_err *err)
{
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
        if (!v && o->type == OPT_BOOL) {
            v = "true";
        } else if (!v) {
            if (i + 1 >= argc) {
                return gt_err_set(err, GT_EINVAL, "--%s: needs a value", o->name);
            }
            v = argv[++i];
        }
        char src[64];
        snprintf(src, sizeof(src), "--%s", o->name);
        int rc = set_value(cfg, o, v, src, err);
        if (rc) {
            return rc;
        }
        seen[o - opts] = true;
    }
    return 0;
}

int gt_server_config_parse(struct gt_server_config *cfg, int argc, char *const *argv,
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

void gt_server_config_fini(struct gt_server_config *cfg)
{
    for (size_t i = 0; i < GT_ARRAY_LEN(opts); i++) {
        if (opts[i].type == OPT_STR) {
            char **s = (char **)((char *)cfg + opts[i].offset);
            free(*s);
            *s = NULL;
        }
    }
}

void gt_server_config_usage(FILE *f)
{
    fprintf(f, "usage: gantryd --data-dir DIR --token-file FILE [options]\n\n"
               "gantry's control plane: the HTTP/JSON API server and its store.\n\n");
    for (size_t i = 0; i < GT_ARRAY_LEN(opts); i++) {
        const struct opt *o = &opts[i];
        char env[64];
        env_name(o, env, sizeof(env));
        static const char *const arg[] = {" STR", " N", "", " LEVEL"};
        fprintf(f, "  --%s%s\n      %s\n      env %s", o->name, arg[o->type], o->help, env);
        if (o->required) {
            fprintf(f, "; required");
        } else if (o->def) {
            fprintf(f, "; default %s", o->def);
        }
        if (o->type == OPT_INT) {
            fprintf(f, "; %lld..%lld", (long long)o->min, (long long)o->max);
        }
        fprintf(f, "\n");
    }
}
