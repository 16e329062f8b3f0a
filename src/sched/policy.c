/*
 * The policy table: every order times every placement, as const data.
 *
 * Orders (ties always go by arrival, then id):
 * - fifo: arrival; strictly head-of-line (the first job that does not start
 *   blocks all behind it), no preemption, no backfill: the papers' baseline.
 * - sjf: shortest runtime estimate first (the simulator's oracle; unknown
 *   last); head-of-line like fifo.
 * - srtf: shortest remaining time first (estimate less the time served,
 *   attained GPU-ms over the job's GPUs); skips jobs that do not fit; a job
 *   that does not fit preempts, besides what the gantry rules allow, jobs
 *   of its department and priority whose remaining time is longer than its
 *   own, longest first (Helios' preemptive SRTF).
 * - tiresias: discretized 2D least attained service (Tiresias, NSDI'19, as
 *   its simulator's dlas-gpu runs it): attained GPU-ms discretised into
 *   three queues by tiresias_thresholds, FIFO inside a queue; skips jobs
 *   that do not fit; a job that does not fit preempts, besides what the
 *   gantry rules allow, running jobs of its department and priority in a
 *   queue after its own, the last queue first. Unlike the simulator's,
 *   a queue is in arrival order, not in order of entry into the queue, and
 *   no starving job is promoted (dlas-gpu's knob is off by default too).
 * - gantry (the default): priority, then aging, then the department's
 *   dominant share (merged from the department queues, see cycle.c), then
 *   the least-attained-service queue (gt_sched_las_queue; for a job that
 *   restarts from scratch, of its current run only), then
 *   gt_sched_job_order_key: the expected remaining wall time learned
 *   online from finished jobs of the department and gang size (history.c;
 *   no job's duration is known), for a job that restarts from scratch the
 *   GPU time it is expected to cost in all (its lost runs and a run from
 *   scratch) over its GPUs to the power 0.4 instead, then arrival;
 *   backfill,
 *   preemption (also of equal-priority jobs of its department in a later
 *   queue of all the service they attained; a running job that restarts
 *   from scratch by the queue of its current run, and only while that
 *   run's service is below GT_SCHED_SCRATCH_LOSS_PCT % of what the run is
 *   still expected to need) and head-of-line reservations for jobs not yet served (a served
 *   job demoted by its queue does not reserve, which would undo the
 *   demotion; one that restarts from scratch is not served while it
 *   waits).
 * Placements: gantry, bestfit, random (place.c) and firstfit (firstfit.c).
 * "ORDER" alone means ORDER/gantry; "firstfit" is firstfit's own policy.
 */
#include <math.h>
#include <string.h>

#include "sched/firstfit.h"
#include "sched/history.h"
#include "sched/place.h"
#include "sched/policy.h"
#include "sched/sched_int.h"

static int cmp_i64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

static int fifo_order(const struct gt_sched_job *a, const struct gt_sched_job *b, int64_t now_ms)
{
    (void)now_ms;
    return cmp_i64(a->arrival_ms, b->arrival_ms);
}

static int64_t estimate(const struct gt_sched_job *j)
{
    return j->runtime_estimate_ms > 0 ? j->runtime_estimate_ms : INT64_MAX;
}

static int sjf_order(const struct gt_sched_job *a, const struct gt_sched_job *b, int64_t now_ms)
{
    (void)now_ms;
    return cmp_i64(estimate(a), estimate(b));
}

int64_t gt_sched_job_remaining_ms(const struct gt_sched_job *j)
{
    int64_t est = estimate(j);
    if (est == INT64_MAX) {
        return est;
    }
    int64_t gpu_milli = 0;
    for (size_t g = 0; g < j->n_groups; g++) {
        int64_t part;
        if (gt_mul_i64(j->groups[g].use.v[GT_RES_GPU], j->groups[g].replicas, &part) < 0 ||
            gt_add_i64(gpu_milli, part, &gpu_milli) < 0) {
            return est;
        }
    }
    /* attained is GPU-ms; served wall ms = attained * 1000 / gpu_milli. */
    int64_t served = gpu_milli > 0 ? (int64_t)((__int128)j->attained_gpu_ms * 1000 / gpu_milli)
                                   : j->attained_gpu_ms;
    return served >= est ? 0 : est - served;
}

static int srtf_order(const struct gt_sched_job *a, const struct gt_sched_job *b, int64_t now_ms)
{
    (void)now_ms;
    return cmp_i64(gt_sched_job_remaining_ms(a), gt_sched_job_remaining_ms(b));
}

/* Tiresias' queue thresholds in GPU-ms: its simulator's dlas-gpu
 * (SymbioticLab/Tiresias simulator/jobs.py: three queues, queue_limit
 * 3,250 and 7,200 GPU-seconds of attained service). */
static const int64_t tiresias_thresholds[] = {3250LL * 1000, 7200LL * 1000};

/* The job's queue: 0 below the first threshold, ..., one per threshold. */
static int64_t tiresias_rank(const struct gt_sched_job *j)
{
    int64_t q = 0;
    while (q < (int64_t)GT_ARRAY_LEN(tiresias_thresholds) &&
           j->attained_gpu_ms >= tiresias_thresholds[q]) {
        q++;
    }
    return q;
}

static int tiresias_order(const struct gt_sched_job *a, const struct gt_sched_job *b,
                          int64_t now_ms)
{
    (void)now_ms;
    return cmp_i64(tiresias_rank(a), tiresias_rank(b));
}

/* The gantry order's bound on what a preemption by rank throws away of a
 * job that restarts from scratch (gt_sched_policy.scratch_loss_pct): its
 * current run's service while that is below 8 % of the service its run is
 * still expected to need (history.c). Tuned on the Philly quarter-size
 * replay (docs/results). */
#define GT_SCHED_SCRATCH_LOSS_PCT 8

static const int64_t las_thresholds[] = {300LL * 1000, 3250LL * 1000, 7200LL * 1000,
                                         72000LL * 1000};

int64_t gt_sched_job_service_ms(const struct gt_sched_job *j)
{
    if (!j->restarts_from_scratch) {
        return j->attained_gpu_ms;
    }
    return j->n_holding > 0 && j->attained_gpu_ms > j->run_base_gpu_ms
               ? j->attained_gpu_ms - j->run_base_gpu_ms
               : 0;
}

static int64_t las_queue_of(int64_t a)
{
    int64_t q = 0;
    while (q < (int64_t)GT_ARRAY_LEN(las_thresholds) && a >= las_thresholds[q]) {
        q++;
    }
    return q;
}

int64_t gt_sched_las_queue(const struct gt_sched_job *j)
{
    return las_queue_of(gt_sched_job_service_ms(j));
}

/* The exponent of a restarting job's width in its order key: the GPU
 * time it is expected to cost in all over gpus^0.4, between the GPU time (0,
 * which left Philly 2869ce's 32-GPU gangs waiting behind every 8-GPU job:
 * 5.7 M s) and the wall time (1, which drains the VC for them first).
 * Tuned on the Philly quarter-size replay (see the commit that set it). */
#define GT_SCHED_SCRATCH_WIDTH_EXP 0.4

/* The GPU-ms a job that restarts from scratch is expected to cost in all:
 * what its lost runs took (lost, all it attained but its current run) and
 * the run from scratch it still needs, E[S | S > a] = a + E[S - a | S > a]
 * with a all the service it attained (history.c conditions on that, as for
 * every job). A fresh job: E[S]. Counting the lost runs ranks a job that
 * lost a run as the attained-service queues rank a checkpointing one, by
 * the service it has had, besides the rerun it is owed. */
static double scratch_cost_ms(const struct gt_sched_job *j)
{
    int64_t lost = j->attained_gpu_ms - gt_sched_job_service_ms(j);
    return (double)gt_sched_history_expected_remaining_ms(j) + (double)j->attained_gpu_ms +
           (double)(lost > 0 ? lost : 0);
}

double gt_sched_job_order_key(const struct gt_sched_job *j)
{
    if (j->restarts_from_scratch) {
        int64_t gpu_milli = 0;
        for (size_t g = 0; g < j->n_groups; g++) {
            gpu_milli += j->groups[g].use.v[GT_RES_GPU] * (int64_t)j->groups[g].replicas;
        }
        double gpus = gpu_milli >= 1000 ? (double)gpu_milli / 1000.0 : 1.0;
        return scratch_cost_ms(j) / pow(gpus, GT_SCHED_SCRATCH_WIDTH_EXP);
    }
    return gt_sched_history_expected_wall_ms(j);
}

/* The gantry order's rank for preemption: the queue of all the service a
 * job attained, lost runs included, so that a job that lost its run to a
 * preemption does not take back the GPUs of a job that has had less. A
 * running job that restarts from scratch would lose only its current run:
 * as a victim it is ranked by that run's queue, so a job that has just
 * restarted is not taken by the fresh job it was ordered before (which
 * would bind and evict it in one cycle). */
static int64_t las_rank(const struct gt_sched_job *j)
{
    if (j->restarts_from_scratch && j->n_holding > 0) {
        return las_queue_of(gt_sched_job_service_ms(j));
    }
    return las_queue_of(j->attained_gpu_ms);
}

#define ORDER_ROW_AT(oname, ofn, plc, hol, pre, rk, rkw, res, slm)                                 \
    {                                                                                              \
        .name = oname, .order = ofn, .place = plc, .head_of_line = hol, .preempt = pre,            \
        .rank = rk, .rank_what = rkw, .reserve = res, .scratch_loss_pct = slm                      \
    }
#define ORDER_ROW(oname, ofn, hol, pre, rk, rkw, res, slm)                                         \
    ORDER_ROW_AT(oname, ofn, gt_sched_place_gantry, hol, pre, rk, rkw, res, slm),                  \
        ORDER_ROW_AT(oname "/gantry", ofn, gt_sched_place_gantry, hol, pre, rk, rkw, res, slm),    \
        ORDER_ROW_AT(oname "/bestfit", ofn, gt_sched_place_bestfit, hol, pre, rk, rkw, res, slm),  \
        ORDER_ROW_AT(oname "/random", ofn, gt_sched_place_random, hol, pre, rk, rkw, res, slm),    \
        ORDER_ROW_AT(oname "/firstfit", ofn, gt_sched_place_firstfit, hol, pre, rk, rkw, res, slm)

static const struct gt_sched_policy policies[] = {
    ORDER_ROW("gantry", NULL, false, true, las_rank, "attained-service queue", true,
              GT_SCHED_SCRATCH_LOSS_PCT),
    ORDER_ROW("fifo", fifo_order, true, false, NULL, NULL, false, 0),
    ORDER_ROW("sjf", sjf_order, true, false, NULL, NULL, false, 0),
    ORDER_ROW("srtf", srtf_order, false, true, gt_sched_job_remaining_ms, "remaining ms", false, 0),
    ORDER_ROW("tiresias", tiresias_order, false, true, tiresias_rank, "attained-service queue",
              false, 0),
};

const struct gt_sched_policy *gt_sched_policy_by_name(const char *name)
{
    if (!name) {
        return NULL;
    }
    if (strcmp(name, "firstfit") == 0) {
        return gt_sched_policy_firstfit();
    }
    for (size_t i = 0; i < GT_ARRAY_LEN(policies); i++) {
        if (strcmp(policies[i].name, name) == 0) {
            return &policies[i];
        }
    }
    return NULL;
}

const char *gt_sched_policy_name(const struct gt_sched_policy *policy)
{
    return policy->name;
}
