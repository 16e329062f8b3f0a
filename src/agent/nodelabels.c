/*
 * The labels the agent puts on its Node, as NVIDIA's GPU feature discovery
 * (GFD) does on Kubernetes, so that nodeSelector manifests written for GFD
 * select the same nodes here:
 *   nvidia.com/gpu.present  "true"
 *   nvidia.com/gpu.count    the node's GPUs, e.g. "8"
 *   nvidia.com/gpu.product  the model, whitespace runs made "-" as GFD
 *                           does ("NVIDIA A100-SXM4-80GB" ->
 *                           "NVIDIA-A100-SXM4-80GB"), then cut to a valid
 *                           label value (a fake GPU's model as it is given)
 *   nvidia.com/gpu.memory   memory per GPU in MiB, e.g. "81920"
 * A node without GPUs gets none of them. The agent owns only these keys:
 * other labels (an admin's `gantry label node`) are never touched. The
 * labels go with the Node's creation; when the Node exists already
 * (409), the agent reads it and writes it back with these keys set, only
 * if they differ, conditional on its resourceVersion (a conflict is tried
 * again at the next registration).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent_int.h"

#define GFD_PREFIX "nvidia.com/gpu."
#define NODES_PATH "/apis/gantry.dev/v1/nodes"

/* GFD's product name: whitespace runs as one "-", then only label-value
 * characters, at most 63, starting and ending alphanumeric. */
static void product_label(const char *model, char *buf, size_t len)
{
    size_t n = 0;
    bool gap = false;
    for (const char *p = model; *p && n + 1 < len && n < 63; p++) {
        unsigned char ch = (unsigned char)*p;
        if (isspace(ch)) {
            gap = n > 0;
            continue;
        }
        if (gap && n + 1 < len) {
            buf[n++] = '-';
        }
        gap = false;
        buf[n++] = isalnum(ch) || ch == '-' || ch == '_' || ch == '.' ? (char)ch : '_';
    }
    while (n > 0 && !isalnum((unsigned char)buf[n - 1])) {
        n--;
    }
    buf[n] = '\0';
    size_t lead = 0;
    while (buf[lead] && !isalnum((unsigned char)buf[lead])) {
        lead++;
    }
    memmove(buf, buf + lead, n - lead + 1);
}

json_t *gt_agent_gfd_labels(const struct gt_gpu_set *gpus)
{
    json_t *labels = json_object();
    if (gpus->n_gpus == 0) {
        return labels;
    }
    char product[64], count[24], mib[24];
    product_label(gpus->gpus[0].model, product, sizeof(product));
    snprintf(count, sizeof(count), "%zu", gpus->n_gpus);
    snprintf(mib, sizeof(mib), "%" PRId64, gpus->gpus[0].memory_bytes / (1024 * 1024));
    json_object_set_new(labels, GFD_PREFIX "present", json_string("true"));
    json_object_set_new(labels, GFD_PREFIX "count", json_string(count));
    if (product[0]) {
        json_object_set_new(labels, GFD_PREFIX "product", json_string(product));
    }
    json_object_set_new(labels, GFD_PREFIX "memory", json_string(mib));
    return labels;
}

/* Set the GFD keys of node's labels to want's (and drop GFD keys want
 * lacks); true if anything changed. */
static bool merge_labels(json_t *node, const json_t *want)
{
    json_t *md = json_object_get(node, "metadata");
    json_t *labels = json_object_get(md, "labels");
    if (!json_is_object(labels)) {
        labels = json_object();
        json_object_set_new(md, "labels", labels);
    }
    bool changed = false;
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(labels, tmp, key, v)
    {
        if (!strncmp(key, GFD_PREFIX, strlen(GFD_PREFIX)) && !json_object_get(want, key)) {
            json_object_del(labels, key);
            changed = true;
        }
    }
    json_object_foreach((json_t *)want, key, v)
    {
        if (!json_equal(json_object_get(labels, key), v)) {
            json_object_set(labels, key, v);
            changed = true;
        }
    }
    return changed;
}

static void put_done(int status, json_t *body, void *arg)
{
    (void)arg;
    if (status != 200) {
        gt_log_warn("node labels not written", "status=%d message=\"%s\"", status,
                    gt_apic_message(body));
    }
}

static void get_done(int status, json_t *body, void *arg)
{
    struct gt_gantlet *g = arg;
    if (status != 200 || !json_is_object(body)) {
        gt_log_warn("cannot read the node for its labels", "status=%d", status);
        return;
    }
    json_t *want = gt_agent_gfd_labels(&g->gpus);
    json_t *node = json_deep_copy(body);
    json_object_del(json_object_get(node, "status"), "allocated"); /* computed on reads */
    if (merge_labels(node, want)) {
        char *path = gt_xasprintf(NODES_PATH "/%s", g->cfg->name);
        gt_apic_request(g->api, EVHTTP_REQ_PUT, path, node, put_done, g);
        free(path);
    }
    json_decref(node);
    json_decref(want);
}

void gt_agent_node_labels_sync(struct gt_gantlet *g)
{
    char *path = gt_xasprintf(NODES_PATH "/%s", g->cfg->name);
    gt_apic_request(g->api, EVHTTP_REQ_GET, path, NULL, get_done, g);
    free(path);
}
