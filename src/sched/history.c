/*
 * Online service history: what finished jobs of a department and gang size
 * received, and the expected remaining service of a job given what it has
 * attained (E[S - a | S > a], the quantity Harchol-Balter's SERPT orders
 * by; for decreasing-hazard job sizes it grows with a, so jobs that have run
 * long sink as under least-attained-service, while a job whose kind is known
 * to be short starts ahead).
 *
 * Histogram buckets are powers of two of GPU-seconds; within the bucket a
 * job's attained service falls in, samples are taken as spread uniformly.
 */
#include <math.h>

#include "sched/history.h"
#include "sched/sched_int.h"

/* A department needs this many samples of a size before its own history
 * is used rather than every department's. */
#define OWN_MIN_SAMPLES 20.0

static int64_t job_gpus(const struct gt_sched_job *job)
{
    int64_t milli = 0;
    for (size_t g = 0; g < job->n_groups; g++) {
        milli += job->groups[g].use.v[GT_RES_GPU] * (int64_t)job->groups[g].replicas;
    }
    return milli / 1000;
}

bool gt_sched_history_known(const struct gt_sched_model *m)
{
    for (int c = 0; c < GT_SCHED_HIST_CLASSES; c++) {
        if (m->history.total[c] > 0.0) {
            return true;
        }
    }
    return false;
}

static int size_class(const struct gt_sched_job *job)
{
    int64_t gpus = job_gpus(job);
    int c = 0;
    while (c < GT_SCHED_HIST_CLASSES - 1 && gpus > (1LL << c)) {
        c++;
    }
    return c;
}

static int bucket_of(double gpu_ms)
{
    double s = gpu_ms / 1000.0;
    int b = s < 1.0 ? 0 : (int)log2(s) + 1;
    return b < GT_SCHED_HIST_BUCKETS ? b : GT_SCHED_HIST_BUCKETS - 1;
}

/* Bucket b's bounds in GPU-ms: [lo, hi). */
static double bucket_lo(int b)
{
    return b == 0 ? 0.0 : ldexp(1000.0, b - 1);
}

static double bucket_hi(int b)
{
    return ldexp(1000.0, b);
}

static void add(struct gt_sched_history *h, int c, double gpu_ms)
{
    int b = bucket_of(gpu_ms);
    h->bucket[c][b].count += 1.0;
    h->bucket[c][b].sum_ms += gpu_ms;
    h->total[c] += 1.0;
}

void gt_sched_history_record(struct gt_sched_model *m, const struct gt_sched_job *job)
{
    if (job->attained_gpu_ms <= 0) {
        return;
    }
    int c = size_class(job);
    add(&job->dept->history, c, (double)job->attained_gpu_ms);
    add(&m->history, c, (double)job->attained_gpu_ms);
}

int64_t gt_sched_history_expected_remaining_at_ms(const struct gt_sched_job *job,
                                                  int64_t attained_ms)
{
    int c = size_class(job);
    const struct gt_sched_history *h = &job->dept->history;
    if (h->total[c] < OWN_MIN_SAMPLES) {
        h = &job->dept->model->history;
    }
    if (h->total[c] <= 0.0) {
        return 0;
    }
    double a = (double)attained_ms;
    int b0 = bucket_of(a);
    double n = 0.0, sum = 0.0;
    for (int b = b0 + 1; b < GT_SCHED_HIST_BUCKETS; b++) {
        n += h->bucket[c][b].count;
        sum += h->bucket[c][b].sum_ms;
    }
    /* a's own bucket: the share above a, at its mean */
    double lo = bucket_lo(b0), hi = bucket_hi(b0);
    double share = hi > lo ? (hi - a) / (hi - lo) : 0.0;
    if (share > 0.0 && h->bucket[c][b0].count > 0.0) {
        n += h->bucket[c][b0].count * share;
        sum += h->bucket[c][b0].count * share * (a + hi) / 2.0;
    }
    if (n <= 0.0) {
        return attained_ms; /* past every sample: as much again */
    }
    double rem = sum / n - a;
    return rem > 0.0 ? (int64_t)rem : 0;
}

int64_t gt_sched_history_expected_remaining_ms(const struct gt_sched_job *job)
{
    return gt_sched_history_expected_remaining_at_ms(job, job->attained_gpu_ms);
}

double gt_sched_history_expected_wall_ms(const struct gt_sched_job *job)
{
    int64_t gpus = job_gpus(job);
    return (double)gt_sched_history_expected_remaining_ms(job) / (double)(gpus > 0 ? gpus : 1);
}

double gt_sched_history_expected_wall_at_ms(const struct gt_sched_job *job, int64_t attained_ms)
{
    int c = size_class(job);
    if (job->dept->history.total[c] <= 0.0 && job->dept->model->history.total[c] <= 0.0) {
        return -1.0;
    }
    int64_t gpus = job_gpus(job);
    return (double)gt_sched_history_expected_remaining_at_ms(job, attained_ms) /
           (double)(gpus > 0 ? gpus : 1);
}
