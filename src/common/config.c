/*
 * The declarative configuration engine behind gantryd's and gantlet's
 * flags: see config.h. Values are written into the caller's struct at the
 * offsets the table gives; strings and lists are heap copies it owns.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "common/config.h"

static const char *const log_levels[] = {"debug", "info", "warn", "error"};

static void *field_of(void *cfg, const struct gt_config_opt *o)
{
    return (char *)cfg + o->offset;
}

static int set_value(void *cfg, const struct gt_config_opt *o, const char *v, const char *source,
                     struct gt_err *err)
{
    void *field = field_of(cfg, o);
    if (!*v && o->type != GT_CONFIG_BOOL) {
        return gt_err_set(err, GT_EINVAL, "%s: must not be empty", source);
    }
    switch (o->type) {
    case GT_CONFIG_STR:
        free(*(char **)field);
        *(char **)field = gt_xstrdup(v);
        return 0;
    case GT_CONFIG_LIST: {
        struct gt_config_list *l = field;
        GT_VEC_RESERVE(l->items, l->cap, l->n + 1, 4);
        l->items[l->n++] = gt_xstrdup(v);
        return 0;
    }
    case GT_CONFIG_INT: {
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
    case GT_CONFIG_BOOL:
        if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes")) {
            *(bool *)field = true;
        } else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no")) {
            *(bool *)field = false;
        } else {
            return gt_err_set(err, GT_EINVAL, "%s: %s is not true or false", source, v);
        }
        return 0;
    case GT_CONFIG_LOGLEVEL:
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

static void clear_value(void *cfg, const struct gt_config_opt *o)
{
    void *field = field_of(cfg, o);
    if (o->type == GT_CONFIG_STR) {
        free(*(char **)field);
        *(char **)field = NULL;
    } else if (o->type == GT_CONFIG_LIST) {
        struct gt_config_list *l = field;
        for (size_t i = 0; i < l->n; i++) {
            free(l->items[i]);
        }
        free(l->items);
        l->items = NULL;
        l->n = l->cap = 0;
    }
}

/* "data-dir" with prefix "GANTRYD_" -> "GANTRYD_DATA_DIR" */
static void env_name(const struct gt_config_table *t, const struct gt_config_opt *o, char *buf,
                     size_t len)
{
    int n = snprintf(buf, len, "%s%s", t->env_prefix, o->name);
    for (size_t i = strlen(t->env_prefix); n > 0 && i < (size_t)n && i < len; i++) {
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

static const struct gt_config_opt *find_opt(const struct gt_config_table *t, const char *name,
                                            size_t len)
{
    for (size_t i = 0; i < t->n_opts; i++) {
        if (strlen(t->opts[i].name) == len && !strncmp(t->opts[i].name, name, len)) {
            return &t->opts[i];
        }
    }
    return NULL;
}

static int parse_args(const struct gt_config_table *t, void *cfg, int argc, char *const *argv,
                      bool *seen, bool *flagged, bool *help, struct gt_err *err)
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
        const struct gt_config_opt *o = find_opt(t, name, nl);
        if (!o) {
            return gt_err_set(err, GT_EINVAL, "%.*s: unknown flag (see --help)", (int)nl + 2, a);
        }
        const char *v = eq ? eq + 1 : NULL;
        if (!v && o->type == GT_CONFIG_BOOL) {
            v = "true";
        } else if (!v) {
            if (i + 1 >= argc) {
                return gt_err_set(err, GT_EINVAL, "--%s: needs a value", o->name);
            }
            v = argv[++i];
        }
        size_t k = (size_t)(o - t->opts);
        if (!flagged[k]) {
            clear_value(cfg, o); /* a flag replaces the environment's list */
            flagged[k] = true;
        }
        char src[80];
        snprintf(src, sizeof(src), "--%s", o->name);
        int rc = set_value(cfg, o, v, src, err);
        if (rc) {
            return rc;
        }
        seen[k] = true;
    }
    return 0;
}

int gt_config_parse(const struct gt_config_table *t, void *cfg, int argc, char *const *argv,
                    char *const *envp, bool *help, struct gt_err *err)
{
    *help = false;
    bool *seen = gt_xcalloc(t->n_opts, sizeof(bool));
    bool *flagged = gt_xcalloc(t->n_opts, sizeof(bool));
    int rc = 0;
    for (size_t i = 0; i < t->n_opts && !rc; i++) {
        const struct gt_config_opt *o = &t->opts[i];
        char name[96];
        env_name(t, o, name, sizeof(name));
        const char *v = env_lookup(envp, name);
        if (v) {
            rc = set_value(cfg, o, v, name, err);
            seen[i] = true;
        } else if (o->def) {
            rc = set_value(cfg, o, o->def, "default", err);
        }
    }
    if (!rc) {
        rc = parse_args(t, cfg, argc, argv, seen, flagged, help, err);
    }
    for (size_t i = 0; i < t->n_opts && !rc && !*help; i++) {
        if (t->opts[i].required && !seen[i]) {
            rc = gt_err_set(err, GT_EINVAL, "--%s: required (see --help)", t->opts[i].name);
        }
    }
    free(seen);
    free(flagged);
    return rc;
}

void gt_config_fini(const struct gt_config_table *t, void *cfg)
{
    for (size_t i = 0; i < t->n_opts; i++) {
        clear_value(cfg, &t->opts[i]);
    }
}

void gt_config_usage(const struct gt_config_table *t, FILE *f)
{
    static const char *const arg[] = {" STR", " N", "", " VALUE", " LEVEL"};
    fputs(t->usage, f);
    for (size_t i = 0; i < t->n_opts; i++) {
        const struct gt_config_opt *o = &t->opts[i];
        char env[96];
        env_name(t, o, env, sizeof(env));
        fprintf(f, "  --%s%s\n      %s\n      env %s", o->name, arg[o->type], o->help, env);
        if (o->required) {
            fprintf(f, "; required");
        } else if (o->def) {
            fprintf(f, "; default %s", o->def);
        }
        if (o->type == GT_CONFIG_INT) {
            fprintf(f, "; %lld..%lld", (long long)o->min, (long long)o->max);
        }
        if (o->type == GT_CONFIG_LIST) {
            fprintf(f, "; repeatable");
        }
        fprintf(f, "\n");
    }
}
