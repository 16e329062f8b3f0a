/*
 * The FGD allocation experiment (Weng et al., ATC'23, "Beware of
 * Fragmentation"), run through gantry's scheduler.
 *
 * The pod list is shuffled by seed, then pods are drawn from it again with
 * replacement until the GPU requests that arrived reach 130 % of the nodes'
 * GPUs ("tune 1.3" in the paper's simulator). Each pod arrives alone, one
 * cycle places it, and it never finishes; a pod no node can hold is dropped.
 * The GPU allocation ratio (milli-GPUs held / capacity) at k % arrived is
 * read as the paper's analysis reads it (merge_alloc_discrete in its
 * simulator's experiments/analysis): the mean of the ratio after every
 * arrival whose arrived requests round to k % of capacity, i.e. lie in
 * [k - 0.5, k + 0.5) %. Where no arrival falls in that window (tiny test
 * clusters) the ratio at the first arrival reaching k % stands in. The run
 * stops at the first arrival reaching 130 %, as the paper's re-sampled pod
 * list ends there. Shuffling uses our own generator, so the pod orders are
 * not the paper's, only drawn the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"
#include "sim/sim_int.h"

#define MIB (INT64_C(1) << 20)

/* splitmix64: small, seedable, well mixed. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static size_t below(uint64_t *s, size_t n)
{
    return (size_t)(next_u64(s) % n);
}

static int64_t pod_gpu_milli(const struct gt_sim_pod *p)
{
    return (int64_t)p->num_gpu * p->gpu_milli;
}

static int model_build(struct gt_sched_model *m, const struct gt_sim_openb *o, int64_t *cap_milli,
                       struct gt_err *err)
{
    struct gt_sched_res quota = {.cpu_milli = INT64_C(1) << 50,
                                 .memory_bytes = INT64_C(1) << 60,
                                 .storage_bytes = 0,
                                 .gpu_milli = INT64_C(1) << 50};
    int rc = gt_sched_department_set(m, "openb", &quota, &quota, err);
    struct gt_sched_gpu_spec g[GT_SCHED_MAX_NODE_GPUS];
    *cap_milli = 0;
    for (size_t i = 0; rc == 0 && i < o->n_nodes; i++) {
        const struct gt_sim_node *n = &o->nodes[i];
        if (n->gpus > GT_SCHED_MAX_NODE_GPUS) {
            return gt_err_set(err, GT_EINVAL, "node %s: %d GPUs", n->name, n->gpus);
        }
        for (int32_t k = 0; k < n->gpus; k++) {
            g[k] = (struct gt_sched_gpu_spec){.index = k, .healthy = true};
        }
        struct gt_sched_node_spec spec = {.name = n->name,
                                          .cpu_milli = n->cpu_milli,
                                          .memory_bytes = n->memory_mib * MIB,
                                          .ready = true,
                                          .gpus = g,
                                          .n_gpus = (size_t)n->gpus};
        rc = gt_sched_node_add(m, &spec, err);
        *cap_milli += (int64_t)n->gpus * 1000;
    }
    return rc;
}

/* Add pod p as job id and run one cycle; was it placed? */
static int place_pod(struct gt_sched_model *m, const struct gt_sched_policy *policy,
                     const struct gt_sim_pod *p, size_t seq, struct gt_sched_decisions *dec,
                     bool *placed, struct gt_err *err)
{
    char id[32];
    snprintf(id, sizeof(id), "pod-%zu", seq);
    bool whole = p->num_gpu > 1 || p->gpu_milli == 1000;
    struct gt_sched_group_spec group = {.name = "pod",
                                        .replicas = 1,
                                        .req = {.cpu_milli = p->cpu_milli,
                                                .memory_bytes = p->memory_mib * MIB,
                                                .gpus = whole ? p->num_gpu : 0,
                                                .gpu_milli = whole ? 0 : p->gpu_milli}};
    struct gt_sched_job_spec spec = {.id = id,
                                     .department = "openb",
                                     .project = "openb",
                                     .arrival_ms = (int64_t)seq,
                                     .groups = &group,
                                     .n_groups = 1};
    int rc = gt_sched_job_add(m, &spec, err);
    if (rc < 0) {
        return rc;
    }
    gt_sched_cycle(m, (int64_t)seq, policy, dec);
    *placed = dec->n_binds == 1;
    return *placed ? 0 : gt_sched_job_remove(m, id, err);
}

int gt_sim_openb_alloc(const struct gt_sim_openb *o, const char *policy_name, uint64_t seed,
                       bool check, struct gt_sim_alloc *out, struct gt_err *err)
{
    memset(out, 0, sizeof(*out));
    const struct gt_sched_policy *policy = gt_sched_policy_by_name(policy_name);
    if (!policy) {
        return gt_err_set(err, GT_ENOTFOUND, "unknown policy \"%s\"", policy_name);
    }
    if (o->n_pods == 0) {
        return gt_err_set(err, GT_EINVAL, "no pods");
    }
    struct gt_sched_model *m = gt_sched_model_new();
    gt_sched_model_set_seed(m, seed); /* random placement and tie breaks follow the run's seed */
    struct gt_sched_decisions dec;
    gt_sched_decisions_init(&dec);
    int64_t cap = 0;
    int rc = model_build(m, o, &cap, err);
    if (rc == 0 && cap == 0) {
        rc = gt_err_set(err, GT_EINVAL, "no GPUs");
    }
    size_t *order = gt_xcalloc(o->n_pods, sizeof(*order));
    uint64_t rng = seed;
    for (size_t i = 0; i < o->n_pods; i++) {
        order[i] = i;
    }
    for (size_t i = o->n_pods; i > 1; i--) {
        size_t k = below(&rng, i);
        size_t tmp = order[i - 1];
        order[i - 1] = order[k];
        order[k] = tmp;
    }
    int64_t arrived = 0, alloc = 0;
    size_t point = 0;
    double win_sum[GT_SIM_ALLOC_POINTS] = {0}, cross[GT_SIM_ALLOC_POINTS] = {0};
    size_t win_n[GT_SIM_ALLOC_POINTS] = {0};
    for (size_t seq = 0; rc == 0 && point < GT_SIM_ALLOC_POINTS; seq++) {
        const struct gt_sim_pod *p =
            &o->pods[seq < o->n_pods ? order[seq] : below(&rng, o->n_pods)];
        bool placed = false;
        rc = place_pod(m, policy, p, seq, &dec, &placed, err);
        out->n_pods++;
        out->n_dropped += !placed;
        alloc += placed ? pod_gpu_milli(p) : 0;
        arrived += pod_gpu_milli(p);
        if (check && rc == 0 && gt_sched_model_check(m, NULL) < 0) {
            out->n_violations++;
        }
        /* Point k is 50 + 10k % arrived; its window is [pct - 0.5, pct + 0.5). */
        double ratio = 100.0 * (double)alloc / (double)cap;
        for (size_t k = 0; k < GT_SIM_ALLOC_POINTS; k++) {
            int64_t pct = 50 + 10 * (int64_t)k;
            if (arrived * 200 >= (2 * pct - 1) * cap && arrived * 200 < (2 * pct + 1) * cap) {
                win_sum[k] += ratio;
                win_n[k]++;
            }
        }
        while (point < GT_SIM_ALLOC_POINTS && arrived * 100 >= (50 + 10 * (int64_t)point) * cap) {
            cross[point++] = ratio;
        }
    }
    for (size_t k = 0; k < GT_SIM_ALLOC_POINTS; k++) {
        out->alloc_pct[k] = win_n[k] ? win_sum[k] / (double)win_n[k] : cross[k];
    }
    free(order);
    gt_sched_decisions_fini(&dec);
    gt_sched_model_free(m);
    return rc;
}
