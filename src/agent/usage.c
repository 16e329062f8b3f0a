/*
 * A task's use of the node, for gantryd's notebook culler: CPU time of the
 * processes in its cgroup (utime + stime in /proc/PID/stat, fields 14 and
 * 15, in clock ticks) and the node's GPUs' utilization. Processes that
 * already exited are not counted, so the total may fall; the reader takes
 * differences between samples and treats a fall as no use. Fake GPUs read
 * their utilization from --fake-gpu-utilization-dir/<index> (an integer
 * percent, absent: 0), which tests drive; NVML's utilization is not read
 * here yet, so real GPUs report none.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "agent/agent_int.h"

/* utime + stime of pid in ns, or -1. */
static int64_t proc_cpu_ns(pid_t pid, long ticks_per_s)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return -1;
    }
    buf[n] = '\0';
    /* the command name (field 2) may hold spaces: fields resume after its ')' */
    const char *p = strrchr(buf, ')');
    unsigned long long utime = 0, stime = 0;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                     &stime) != 2) {
        return -1;
    }
    return (int64_t)((utime + stime) * (1000000000ULL / (unsigned long long)ticks_per_s));
}

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
    if (g->have_cgroups) {
        struct gt_cgroup cg;
        char rel[192];
        snprintf(rel, sizeof(rel), "gantry/%s", uid);
        pid_t *pids = NULL;
        size_t n = 0;
        long ticks = sysconf(_SC_CLK_TCK);
        if (gt_cgroup_init(&cg, &g->cgsys, rel, NULL) == 0 &&
            gt_cgroup_pids(&cg, &pids, &n, NULL) == 0) {
            for (size_t i = 0; i < n; i++) {
                int64_t ns = proc_cpu_ns(pids[i], ticks > 0 ? ticks : 100);
                cpu_ns += ns > 0 ? ns : 0;
            }
        }
        free(pids);
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
