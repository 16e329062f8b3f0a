/*
 * The network-free parts of `gantry up`: where a local cluster keeps its
 * files, the credentials it makes, and which uid the local user's tasks run
 * as. Kept apart from the process handling in cmd_up.c so unit tests can
 * check them.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "cli/cli.h"

enum { NOBODY_UID = 65534, TOKEN_BYTES = 32 };

char *gt_cli_up_data_dir(void)
{
    const char *v = getenv("XDG_DATA_HOME");
    if (v && *v) {
        return gt_xasprintf("%s/gantry", v);
    }
    v = getenv("HOME");
    if (v && *v) {
        return gt_xasprintf("%s/.local/share/gantry", v);
    }
    return NULL;
}

int gt_cli_up_reachable(const char *dir, long uid, long gid, struct gt_err *err)
{
    if (uid == 0) {
        return 0;
    }
    char *path = gt_xstrdup(dir);
    int rc = 0;
    /* each prefix ending before a '/', then the whole path */
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0') {
            continue;
        }
        char c = *p;
        *p = '\0';
        struct stat st;
        if (stat(path, &st) != 0) {
            break; /* not there yet: made by up, searchable */
        }
        mode_t need = (long)st.st_uid == uid ? S_IXUSR : (long)st.st_gid == gid ? S_IXGRP : S_IXOTH;
        if (S_ISDIR(st.st_mode) && !(st.st_mode & need)) {
            rc = gt_err_set(err, GT_EFORBIDDEN, "%s is mode %04o (owner uid %ld)", path,
                            (unsigned)(st.st_mode & 07777), (long)st.st_uid);
            break;
        }
        *p = c;
        if (!c) {
            break;
        }
    }
    free(path);
    return rc;
}

long gt_cli_up_task_uid(long euid, long flag_uid)
{
    if (flag_uid >= 0) {
        return flag_uid;
    }
    return euid == 0 ? NOBODY_UID : euid;
}

void gt_cli_up_token_new(char out[GT_CLI_TOKEN_LEN + 1])
{
    unsigned char raw[TOKEN_BYTES];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0) {
            GT_ASSERT(errno == EINTR);
            continue;
        }
        got += (size_t)n;
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof(raw); i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[GT_CLI_TOKEN_LEN] = '\0';
}

char *gt_cli_up_token_file(const char *admin_token, const char *user, long uid,
                           const char *node_token, const char *node)
{
    return gt_xasprintf("%s,%s,%ld,\"gantry:admins\"\n"
                        "%s,system:node:%s,%d,\"gantry:nodes\"\n",
                        admin_token, user, uid, node_token, node, NOBODY_UID);
}

char *gt_cli_up_prometheus_config(const char *gantryd, const char *gantlet)
{
    return gt_xasprintf("global:\n"
                        "  scrape_interval: 5s\n"
                        "scrape_configs:\n"
                        "  - job_name: gantryd\n"
                        "    honor_labels: true\n"
                        "    static_configs:\n"
                        "      - targets: [\"%s\"]\n"
                        "  - job_name: gantlet\n"
                        "    honor_labels: true\n"
                        "    static_configs:\n"
                        "      - targets: [\"%s\"]\n"
                        "    metric_relabel_configs:\n"
                        "      - source_labels: [model_name]\n"
                        "        regex: \"(.+)\"\n"
                        "        target_label: modelName\n"
                        "      - regex: model_name\n"
                        "        action: labeldrop\n",
                        gantryd, gantlet);
}

char *gt_cli_up_node_name(const char *hostname)
{
    struct gt_buf b;
    gt_buf_init(&b);
    /* The first label, lower case, other characters as '-': a DNS label. */
    for (const char *p = hostname; *p && *p != '.' && b.len < 63; p++) {
        char c = (char)tolower((unsigned char)*p);
        gt_buf_append(&b, isalnum((unsigned char)c) ? &c : "-", 1);
    }
    while (b.len > 0 && b.data[b.len - 1] == '-') {
        b.data[--b.len] = '\0';
    }
    if (b.len == 0 || b.data[0] == '-') {
        gt_buf_fini(&b);
        return gt_xstrdup("localhost");
    }
    return gt_buf_take(&b);
}
