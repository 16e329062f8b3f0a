/*
 * `gantry label node NODE KEY=VALUE... KEY-...` and `gantry taint node
 * NODE KEY[=VALUE]:EFFECT... KEY[:EFFECT]-...`, as kubectl label and
 * kubectl taint do for nodes: labels are what nodeSelector matches (the
 * agent adds the GPU feature discovery ones, nvidia.com/gpu.*), taints
 * keep off tasks that do not tolerate them (NoSchedule, PreferNoSchedule)
 * or also evict them (NoExecute, with its timeAdded for tolerationSeconds).
 * Changing an existing label's value needs --overwrite, as in kubectl; a
 * taint of the same key and effect is replaced. Each command is one
 * read-modify-write of the Node, conditional on its resourceVersion and
 * retried on conflict (gt_cli_node_update; the agent writes the Node's
 * status every few seconds). Writing a Node needs an admin.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"

#define NODES_PATH "/apis/gantry.dev/v1/nodes"
#define MAX_CONFLICT_RETRIES 8

int gt_cli_node_update(struct gt_cli_client *client, const char *name, gt_cli_node_edit_fn *edit,
                       void *arg, bool *changed, struct gt_err *err)
{
    char *esc = gt_cli_url_escape(name);
    char *path = gt_xasprintf(NODES_PATH "/%s", esc);
    free(esc);
    int rc = 0;
    for (int attempt = 0; attempt <= MAX_CONFLICT_RETRIES; attempt++) {
        json_t *node = NULL;
        rc = gt_cli_client_request(client, "GET", path, NULL, &node, err);
        if (rc) {
            break;
        }
        json_object_del(json_object_get(node, "status"), "allocated");
        *changed = false;
        rc = edit(node, arg, changed, err);
        if (rc == 0 && *changed) {
            rc = gt_cli_client_request(client, "PUT", path, node, NULL, err);
        }
        json_decref(node);
        if (rc != GT_ECONFLICT) {
            break;
        }
        memset(err, 0, sizeof(*err));
    }
    free(path);
    return rc;
}

int gt_cli_node_label_edit(json_t *node, const char *arg, bool overwrite, bool *changed,
                           struct gt_err *err)
{
    json_t *md = json_object_get(node, "metadata");
    json_t *labels = json_object_get(md, "labels");
    size_t n = strlen(arg);
    const char *eq = strchr(arg, '=');
    if (!eq && n > 1 && arg[n - 1] == '-') {
        char key[320];
        snprintf(key, sizeof(key), "%.*s", (int)(n - 1), arg);
        *changed = json_object_get(labels, key) != NULL;
        json_object_del(labels, key);
        return 0;
    }
    if (!eq || eq == arg) {
        return gt_err_set(err, GT_EINVAL, "%s: want KEY=VALUE to set a label or KEY- to remove one",
                          arg);
    }
    char key[320];
    snprintf(key, sizeof(key), "%.*s", (int)(eq - arg), arg);
    json_t *have = json_object_get(labels, key);
    json_t *v = json_string(eq + 1);
    if (have && !json_equal(have, v) && !overwrite) {
        json_decref(v);
        return gt_err_set(err, GT_EINVAL,
                          "%s: node has label %s=%s already; --overwrite to change it", arg, key,
                          json_string_value(have) ? json_string_value(have) : "");
    }
    if (!json_is_object(labels)) {
        labels = json_object();
        json_object_set_new(md, "labels", labels);
    }
    *changed = !json_equal(have, v);
    json_object_set_new(labels, key, v);
    return 0;
}

static const char *const effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute", NULL};

static bool is_effect(const char *s)
{
    for (const char *const *e = effects; *e; e++) {
        if (!strcmp(s, *e)) {
            return true;
        }
    }
    return false;
}

/* Remove the taints of key (and effect, unless NULL); whether any went. */
static bool taints_remove(json_t *taints, const char *key, const char *effect)
{
    bool gone = false;
    for (size_t i = json_array_size(taints); i-- > 0;) {
        json_t *t = json_array_get(taints, i);
        const char *k = json_string_value(json_object_get(t, "key"));
        const char *e = json_string_value(json_object_get(t, "effect"));
        if (k && !strcmp(k, key) && (!effect || (e && !strcmp(e, effect)))) {
            json_array_remove(taints, i);
            gone = true;
        }
    }
    return gone;
}

int gt_cli_node_taint_edit(json_t *node, const char *arg, const char *now, bool *changed,
                           struct gt_err *err)
{
    json_t *spec = json_object_get(node, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(node, "spec", spec);
    }
    json_t *taints = json_object_get(spec, "taints");
    if (!json_is_array(taints)) {
        taints = json_array();
        json_object_set_new(spec, "taints", taints);
    }
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", arg);
    size_t n = strlen(buf);
    bool remove = n > 1 && buf[n - 1] == '-';
    if (remove) {
        buf[--n] = '\0';
    }
    char *colon = strrchr(buf, ':');
    const char *effect = NULL;
    if (colon) {
        *colon = '\0';
        effect = colon + 1;
        if (!is_effect(effect)) {
            return gt_err_set(err, GT_EINVAL,
                              "%s: effect must be NoSchedule, PreferNoSchedule or NoExecute", arg);
        }
    }
    char *eq = strchr(buf, '=');
    if (eq) {
        *eq = '\0';
    }
    if (!buf[0] || (!remove && !effect) || (remove && eq)) {
        return gt_err_set(err, GT_EINVAL,
                          "%s: want KEY[=VALUE]:EFFECT to add a taint, KEY[:EFFECT]- to remove",
                          arg);
    }
    if (remove) {
        *changed = taints_remove(taints, buf, effect);
    } else {
        json_t *t = json_pack("{s:s, s:s}", "key", buf, "effect", effect);
        if (eq) {
            json_object_set_new(t, "value", json_string(eq + 1));
        }
        if (!strcmp(effect, "NoExecute")) {
            json_object_set_new(t, "timeAdded", json_string(now));
        }
        /* the same taint again (but for its time) changes nothing */
        bool same = false;
        size_t i;
        json_t *have;
        json_array_foreach(taints, i, have)
        {
            json_t *a = json_deep_copy(have), *b = json_deep_copy(t);
            json_object_del(a, "timeAdded");
            json_object_del(b, "timeAdded");
            same = same || json_equal(a, b);
            json_decref(a);
            json_decref(b);
        }
        if (!same) {
            taints_remove(taints, buf, effect);
            json_array_append(taints, t);
        }
        json_decref(t);
        *changed = !same;
    }
    if (json_array_size(taints) == 0) {
        json_object_del(spec, "taints");
    }
    return 0;
}

/* The edits of one command: each argument in order. */
struct edits {
    char **args;
    size_t n;
    bool taint, overwrite;
    char now[32];
};

static int edit_all(json_t *node, void *arg, bool *changed, struct gt_err *err)
{
    const struct edits *e = arg;
    for (size_t i = 0; i < e->n; i++) {
        bool one = false;
        int rc = e->taint ? gt_cli_node_taint_edit(node, e->args[i], e->now, &one, err)
                          : gt_cli_node_label_edit(node, e->args[i], e->overwrite, &one, err);
        if (rc) {
            return rc;
        }
        *changed = *changed || one;
    }
    return 0;
}

static int on_opt(int opt, const char *value, void *arg)
{
    (void)value;
    struct edits *e = arg;
    e->overwrite = e->overwrite || opt == 'o';
    return 0;
}

int gt_cli_cmd_label(struct gt_cli_ctx *ctx, const struct gt_cli_command *cmd, int argc,
                     char **argv)
{
    static const struct option long_opts[] = {
        {"overwrite", no_argument, NULL, 'o'},
        {NULL, 0, NULL, 0},
    };
    struct edits e = {.taint = !strcmp(cmd->name, "taint")};
    int first;
    int rc =
        gt_cli_parse_opts(ctx, cmd, argc, argv, "", e.taint ? NULL : long_opts, on_opt, &e, &first);
    if (rc != 0) {
        return rc;
    }
    const struct gt_kind_info *k = argc - first >= 1 ? gt_cli_kind_lookup(argv[first]) : NULL;
    if (!k || k->kind != GT_KIND_NODE) {
        return gt_cli_usage_error(ctx, cmd, "only nodes: %s node NODE ...", cmd->name);
    }
    if (argc - first < 3) {
        return gt_cli_usage_error(ctx, cmd, argc - first < 2 ? "name a node" : "nothing to change");
    }
    e.args = argv + first + 2;
    e.n = (size_t)(argc - first - 2);
    gt_time_format(gt_now_ms(), e.now, sizeof(e.now));
    struct gt_cli_client *client;
    struct gt_err err = {0};
    if (gt_cli_ctx_client(ctx, &client, &err) != 0) {
        return gt_cli_fail(ctx, &err);
    }
    bool changed = false;
    if (gt_cli_node_update(client, argv[first + 1], edit_all, &e, &changed, &err)) {
        return gt_cli_fail(ctx, &err);
    }
    fprintf(ctx->out, "node/%s %s\n", argv[first + 1],
            changed ? (e.taint ? "tainted" : "labeled") : "not changed");
    return 0;
}
