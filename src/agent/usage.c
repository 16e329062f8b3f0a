/*
 * A task's use of the node, for gantryd's notebook culler: the CPU time of
 * its cgroup (gt_cgroup_stats, as cAdvisor reads it) and the node's GPUs'
 * utilization; the reader takes differences between samples. Fake GPUs read
 * their utilization from --fake-gpu-utilization-dir/<index> (an integer
 * percent, absent: 0), which tests drive; NVML's utilization is not read
 * here yet, so real GPUs report none.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "agent/agent_int.h"

/* A fake GPU's utilization in percent from DIR/<index>: 0 when absent. */
static int fake_util(const char *dir, int index)
{
    char path[512], buf[32];
    snprintf(path, sizeof(path), "%s/%d", dir, index);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    long v = strtol(buf, NULL, 10);
    return v < 0 ? 0 : v > 100 ? 100 : (int)v;
}

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
    }
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, "{\"cpuNanoseconds\":%lld", (long long)cpu_ns);
    const char *dir = g->cfg->fake_gpu_util_dir;
    if (dir && g->cfg->fake_gpus) {
        evbuffer_add_printf(b, ",\"gpus\":[");
        for (size_t i = 0; i < g->gpus.n_gpus; i++) {
            int index = g->gpus.gpus[i].index;
            evbuffer_add_printf(b, "%s{\"index\":%d,\"utilizationPercent\":%d}", i ? "," : "",
                                index, fake_util(dir, index));
        }
        evbuffer_add_printf(b, "]");
    }
    evbuffer_add_printf(b, "}");
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}
