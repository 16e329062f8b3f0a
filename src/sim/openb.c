/*
 * The Alibaba PAI "openb" readers (FGD, ATC'23): the pod list and the node
 * list, as alibaba/clusterdata cluster-trace-gpu-v2023 publishes them. Only
 * the columns the allocation experiment needs are kept; the others are
 * still checked for shape (field count), and times must be integers or
 * empty.
 */
#include <stdlib.h>
#include <string.h>

#include "sim/sim_int.h"

#define POD_HEADER                                                                                 \
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"            \
    "deletion_time,scheduled_time"
#define MAX_CPU_MILLI (INT64_C(1) << 40)
#define MAX_MEMORY_MIB (INT64_C(1) << 30)

void gt_sim_openb_init(struct gt_sim_openb *o)
{
    memset(o, 0, sizeof(*o));
}

void gt_sim_openb_fini(struct gt_sim_openb *o)
{
    for (size_t i = 0; i < o->n_nodes; i++) {
        free(o->nodes[i].name);
        free(o->nodes[i].model);
    }
    free(o->nodes);
    free(o->pods);
    memset(o, 0, sizeof(*o));
}

static int header(struct gt_sim_csv *c, size_t n, const char *names, struct gt_err *err)
{
    int rc = gt_sim_csv_next(c, err);
    if (rc == 0) {
        return gt_err_set(err, GT_EINVAL, "line 1: no header");
    }
    return rc < 0 ? rc : gt_sim_csv_expect(c, n, names, err);
}

int gt_sim_openb_pods_parse(const char *data, size_t len, struct gt_sim_openb *o,
                            struct gt_err *err)
{
    struct gt_sim_csv c;
    gt_sim_csv_init(&c, data, len);
    int rc = header(&c, 11, POD_HEADER, err);
    while (rc >= 0 && (rc = gt_sim_csv_next(&c, err)) > 0) {
        int64_t cpu, mem, gpus, milli, tm;
        if ((rc = gt_sim_csv_expect(&c, 11, NULL, err)) < 0 ||
            (rc = gt_sim_csv_i64(&c, 1, "cpu_milli", 0, MAX_CPU_MILLI, false, &cpu, err)) < 0 ||
            (rc = gt_sim_csv_i64(&c, 2, "memory_mib", 0, MAX_MEMORY_MIB, false, &mem, err)) < 0 ||
            (rc = gt_sim_csv_i64(&c, 3, "num_gpu", 0, 1024, false, &gpus, err)) < 0 ||
            (rc = gt_sim_csv_i64(&c, 4, "gpu_milli", 0, 1000, false, &milli, err)) < 0) {
            return rc;
        }
        if (c.f[0].len == 0) {
            return gt_err_set(err, GT_EINVAL, "line %u: name: empty", c.line);
        }
        for (size_t i = 8; i < 11; i++) {
            static const char *const what[] = {"creation_time", "deletion_time", "scheduled_time"};
            if (c.f[i].len > 0 && (rc = gt_sim_csv_i64(&c, i, what[i - 8], 0, INT64_C(1) << 40,
                                                       false, &tm, err)) < 0) {
                return rc;
            }
        }
        if (gpus > 1 && milli != 1000) {
            return gt_err_set(err, GT_EINVAL,
                              "line %u: gpu_milli %lld: a multi-GPU pod takes whole GPUs", c.line,
                              (long long)milli);
        }
        if ((gpus == 0) != (milli == 0)) {
            return gt_err_set(err, GT_EINVAL,
                              "line %u: num_gpu %lld with gpu_milli %lld: both or neither", c.line,
                              (long long)gpus, (long long)milli);
        }
        GT_VEC_RESERVE(o->pods, o->cap_pods, o->n_pods + 1, 1024);
        o->pods[o->n_pods++] = (struct gt_sim_pod){.cpu_milli = cpu,
                                                   .memory_mib = mem,
                                                   .num_gpu = (int32_t)gpus,
                                                   .gpu_milli = (int32_t)milli};
    }
    return rc;
}

int gt_sim_openb_nodes_parse(const char *data, size_t len, struct gt_sim_openb *o,
                             struct gt_err *err)
{
    struct gt_sim_csv c;
    gt_sim_csv_init(&c, data, len);
    int rc = header(&c, 5, "sn,cpu_milli,memory_mib,gpu,model", err);
    while (rc >= 0 && (rc = gt_sim_csv_next(&c, err)) > 0) {
        int64_t cpu, mem, gpus;
        if ((rc = gt_sim_csv_expect(&c, 5, NULL, err)) < 0 ||
            (rc = gt_sim_csv_i64(&c, 1, "cpu_milli", 0, MAX_CPU_MILLI, false, &cpu, err)) < 0 ||
            (rc = gt_sim_csv_i64(&c, 2, "memory_mib", 0, MAX_MEMORY_MIB, false, &mem, err)) < 0 ||
            (rc = gt_sim_csv_i64(&c, 3, "gpu", 0, 1024, false, &gpus, err)) < 0) {
            return rc;
        }
        if (c.f[0].len == 0) {
            return gt_err_set(err, GT_EINVAL, "line %u: sn: empty", c.line);
        }
        for (size_t i = 0; i < o->n_nodes; i++) {
            if (strlen(o->nodes[i].name) == c.f[0].len &&
                memcmp(o->nodes[i].name, c.f[0].p, c.f[0].len) == 0) {
                return gt_err_set(err, GT_EINVAL, "line %u: sn %.*s listed twice", c.line,
                                  (int)c.f[0].len, c.f[0].p);
            }
        }
        GT_VEC_RESERVE(o->nodes, o->cap_nodes, o->n_nodes + 1, 256);
        o->nodes[o->n_nodes++] = (struct gt_sim_node){.name = gt_xstrndup(c.f[0].p, c.f[0].len),
                                                      .cpu_milli = cpu,
                                                      .memory_mib = mem,
                                                      .gpus = (int32_t)gpus,
                                                      .model = gt_xstrndup(c.f[4].p, c.f[4].len)};
    }
    return rc;
}
