/*
 * Metrics over a replay, as the Tiresias and Helios papers define them:
 * JCT = finish - submit, queueing delay = first start - submit (time lost
 * to later preemptions counts in JCT only), utilisation = GPU-seconds held
 * / (capacity x makespan), makespan = first submit to last finish.
 * Percentiles are nearest-rank over the finished jobs. Jobs of at least
 * GT_SIM_LARGE_GPUS GPUs are large, the others small (0 when a class is
 * empty).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_int.h"

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile p (0..100] of sorted v[0..n). */
static double pct(const int64_t *v, size_t n, double p)
{
    if (n == 0) {
        return 0;
    }
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    return (double)v[rank > 0 ? rank - 1 : 0];
}

void gt_sim_summarize(const struct gt_sim_trace *t, const struct gt_sim_run *r, int32_t vc,
                      struct gt_sim_summary *s)
{
    memset(s, 0, sizeof(*s));
    int64_t *queue = gt_xcalloc(r->n_jobs ? r->n_jobs : 1, sizeof(*queue));
    int64_t first = INT64_MAX, last = INT64_MIN;
    double jct = 0, qsum = 0, jct_by[2] = {0};
    size_t n_by[2] = {0};
    for (size_t i = 0; i < r->n_jobs; i++) {
        const struct gt_sim_outcome *o = &r->jobs[i];
        if ((vc >= 0 && o->vc != vc) || o->finish_s < 0) {
            continue;
        }
        queue[s->jobs++] = o->start_s - o->submit_s;
        jct += (double)(o->finish_s - o->submit_s);
        bool large = o->num_gpu >= GT_SIM_LARGE_GPUS;
        jct_by[large] += (double)(o->finish_s - o->submit_s);
        n_by[large]++;
        qsum += (double)(o->start_s - o->submit_s);
        s->preemptions += o->preemptions;
        first = o->submit_s < first ? o->submit_s : first;
        last = o->finish_s > last ? o->finish_s : last;
    }
    if (s->jobs == 0) {
        free(queue);
        return;
    }
    qsort(queue, s->jobs, sizeof(*queue), i64_cmp);
    s->avg_jct_s = jct / (double)s->jobs;
    s->avg_queue_s = qsum / (double)s->jobs;
    s->avg_jct_small_s = n_by[0] ? jct_by[0] / (double)n_by[0] : 0;
    s->avg_jct_large_s = n_by[1] ? jct_by[1] / (double)n_by[1] : 0;
    s->p50_queue_s = pct(queue, s->jobs, 50);
    s->p95_queue_s = pct(queue, s->jobs, 95);
    s->p99_queue_s = pct(queue, s->jobs, 99);
    s->makespan_s = last - first;
    double busy = 0, cap = 0;
    for (size_t i = 0; i < t->n_vcs && i < r->n_vcs; i++) {
        if (vc >= 0 && (int32_t)i != vc) {
            continue;
        }
        bool used = false;
        for (size_t j = 0; !used && j < r->n_jobs; j++) {
            used = r->jobs[j].vc == (int32_t)i;
        }
        if (used) {
            busy += r->busy_gpu_s[i];
            cap += (double)t->vcs[i].nodes * t->vcs[i].gpus_per_node;
        }
    }
    s->util = s->makespan_s > 0 && cap > 0 ? busy / (cap * (double)s->makespan_s) : 0;
    free(queue);
}
