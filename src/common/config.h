/*
 * Declarative configuration tables (as nginx's command tables): one row per
 * setting gives its name, type, default, bounds and help, and the same table
 * drives command-line flags (--name VALUE, --name=VALUE, a bare --name for
 * booleans), the environment (PREFIX + NAME upper-cased, dashes as
 * underscores), --help and validation. Precedence: flag, then environment,
 * then default. A list setting may be given more than once; flags then
 * replace what the environment gave.
 */
#ifndef GT_CONFIG_H
#define GT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct gt_err;

enum gt_config_type {
    GT_CONFIG_STR,      /* char *, owned by the config struct */
    GT_CONFIG_INT,      /* int64_t within [min, max] */
    GT_CONFIG_BOOL,     /* bool: true/false, 1/0, yes/no */
    GT_CONFIG_LIST,     /* struct gt_config_list, repeatable */
    GT_CONFIG_LOGLEVEL, /* int64_t holding an enum gt_log_level */
};

/* A repeatable string setting; items are owned by the config struct. */
struct gt_config_list {
    char **items;
    size_t n, cap;
};

struct gt_config_opt {
    const char *name; /* flag name without dashes: "data-dir" */
    enum gt_config_type type;
    size_t offset;    /* of the field in the program's config struct */
    const char *def;  /* default as text, NULL for none */
    int64_t min, max; /* GT_CONFIG_INT bounds */
    bool required;
    const char *help;
};

struct gt_config_table {
    const char *env_prefix; /* "GANTRYD_" */
    const char *usage;      /* first lines of --help */
    const struct gt_config_opt *opts;
    size_t n_opts;
};

/* Fill cfg (the program's struct, zeroed here) from envp and argv by the
 * table. *help is set (and nothing validated further) on --help/-h.
 * Returns 0 or GT_EINVAL with err naming the flag or variable and the
 * reason. Free what it holds with gt_config_fini. */
int gt_config_parse(const struct gt_config_table *t, void *cfg, int argc, char *const *argv,
                    char *const *envp, bool *help, struct gt_err *err);
/* Free the strings and lists cfg holds (not cfg itself). */
void gt_config_fini(const struct gt_config_table *t, void *cfg);
/* Print usage, each flag, its variable, default, bounds and help to f. */
void gt_config_usage(const struct gt_config_table *t, FILE *f);

#endif
