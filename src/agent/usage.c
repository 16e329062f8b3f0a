/*
 * A task's use of the node, for gantryd's notebook culler: the CPU time of
 * its cgroup (gt_cgroup_stats, as cAdvisor reads it) and the node's GPUs'
 * utilization of the GPUs it holds in their last sample (NVML's, or fake
 * GPUs' util lines from --fake-gpu-counters); the reader takes differences
 * between samples.
 */
#include <stdio.h>

#include <event2/buffer.h>

#include "agent/agent_int.h"

void gt_gantlet_serve_usage(struct gt_gantlet *g, struct evhttp_request *req, const char *uid)
{
    int64_t cpu_ns = 0;
    struct gt_cgroup cg;
    char rel[192];
    snprintf(rel, sizeof(rel), "gantry/%s", uid);
    if (g->have_cgroups && gt_cgroup_init(&cg, &g->cgsys, rel, NULL) == 0) {
        struct gt_cgroup_stats st;
        gt_cgroup_stats(&cg, &st);
        cpu_ns = st.cpu_usage_ns > 0 ? st.cpu_usage_ns : 0;
        gt_cgroup_fini(&cg);
    }
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, "{\"cpuNanoseconds\":%lld", (long long)cpu_ns);
    const struct gt_ltask *t = gt_gantlet_task_find(g, uid);
    size_t n = 0;
    for (size_t i = 0; t && i < g->gpus.n_gpus; i++) {
        int64_t util = gt_gantlet_task_gpu_util(g, t, i);
        if (util >= 0) {
            evbuffer_add_printf(b, "%s{\"index\":%d,\"utilizationPercent\":%lld}",
                                n++ ? "," : ",\"gpus\":[", g->gpus.gpus[i].index, (long long)util);
        }
    }
    if (n) {
        evbuffer_add_printf(b, "]");
    }
    evbuffer_add_printf(b, "}");
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}
