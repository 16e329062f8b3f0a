/*
 * The cluster registry as gantryd names it (GET clusterinfo "registry",
 * gantryd --registry): the agent pulls from it over plain HTTP, as gantry
 * up runs it, and with its own node token as the password, which the
 * registry's token realm (gantryd) accepts for pulls of every project's
 * images. Learned once registered; nothing to set by hand on the node.
 *
 * Credentials go to skopeo as an auth file ROOT/registry-auth.json (mode
 * 0600, root's) naming only that registry. An admin's own
 * --registry-auth-file wins: it must then hold the cluster registry too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent_int.h"

static int write_auth_file(struct gt_gantlet *g, const char *registry, struct gt_err *err)
{
    struct gt_buf b64;
    gt_buf_init(&b64);
    char *pair = gt_xasprintf("%s:%s", g->cfg->name, g->token);
    gt_buf_base64(&b64, pair, strlen(pair), false);
    gt_buf_append(&b64, "", 1);
    free(pair);
    json_t *o = json_pack("{s:{s:{s:s}}}", "auths", registry, "auth", b64.data);
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    gt_buf_fini(&b64);
    snprintf(g->registry_auth, sizeof(g->registry_auth), "%s/registry-auth.json", g->cfg->root);
    int rc = 0;
    int fd = open(g->registry_auth, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t len = strlen(text);
    if (fd < 0 || fchmod(fd, 0600) < 0 || write(fd, text, len) != (ssize_t)len) {
        rc = gt_err_set(err, -errno, "%s: %s", g->registry_auth, strerror(errno));
    }
    if (fd >= 0) {
        close(fd);
    }
    free(text);
    return rc;
}

int gt_agent_registry_apply(struct gt_gantlet *g, const json_t *info, struct gt_err *err)
{
    const char *reg = json_string_value(json_object_get(info, "registry"));
    if (!reg || !*reg || (g->insecure && !strcmp(g->insecure[g->image.n_insecure - 1], reg))) {
        return 0;
    }
    const struct gt_config_list *own = &g->cfg->insecure_registries;
    gt_agent_registry_free(g);
    g->insecure = gt_xcalloc(own->n + 2, sizeof(char *));
    for (size_t i = 0; i < own->n; i++) {
        g->insecure[i] = gt_xstrdup(own->items[i]);
    }
    g->insecure[own->n] = gt_xstrdup(reg);
    g->image.insecure = g->insecure;
    g->image.n_insecure = own->n + 1;
    if (!g->cfg->registry_auth_file) {
        int rc = write_auth_file(g, reg, err);
        if (rc < 0) {
            return rc;
        }
        g->image.auth_file = g->registry_auth;
    }
    gt_log_info("cluster registry", "registry=%s auth=%s", reg,
                g->image.auth_file ? g->image.auth_file : "none");
    return 0;
}

void gt_agent_registry_free(struct gt_gantlet *g)
{
    for (size_t i = 0; g->insecure && g->insecure[i]; i++) {
        free(g->insecure[i]);
    }
    free(g->insecure);
    g->insecure = NULL;
}
