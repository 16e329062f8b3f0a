/*
 * The workload a model has seen and the GPU fragmentation it measures: the
 * FGD measure of Weng et al. (ATC'23, "Beware of Fragmentation"), with the
 * task distribution learned from the jobs that arrive instead of given.
 *
 * The workload is a decayed histogram of task shapes (cpu, GPUs, milli-GPU
 * per GPU) over the GPU tasks of every job added: each arrival first ages
 * every weight by WORKLOAD_DECAY, then adds the job's replicas to its
 * shape's weight, so the histogram follows a drifting mix (half-life about
 * 11 arrivals: the recent mix, the task being placed included, weighs most) and its cost stays
 * bounded at GT_SCHED_MAX_SHAPES entries (a new shape replaces the lightest one when full).
 * cpu-only tasks are not counted: no GPU is fragmented for them.
 *
 * A node's fragmentation is the milli-GPU it has free that a task drawn from
 * the workload could not use, in expectation: for each shape, all of the
 * node's free GPU capacity if the shape does not fit at all (too few GPUs
 * with its room, or too little cpu), else the capacity of the GPUs with less
 * room than the shape needs. Memory is not part of the measure (as in FGD);
 * placement still checks it. Rooms are what a new task could use of each
 * GPU (0 for one held whole, unhealthy or reserved by another job).
 */
#include <string.h>

#include "sched/frag.h"
#include "sched/sched_int.h"

/* Weight kept per arrival: 1 - 1/16 halves a weight in ~11 arrivals. */
#define WORKLOAD_DECAY (1.0 - 1.0 / 16.0)

static bool shape_eq(const struct gt_sched_shape *s, int64_t cpu, int32_t gpus, int32_t milli)
{
    return s->cpu_milli == cpu && s->gpus == gpus && s->milli == milli;
}

void gt_sched_workload_note(struct gt_sched_workload *w, const struct gt_sched_task_req *req,
                            int32_t replicas)
{
    if (req->gpus == 0 && req->gpu_milli == 0) {
        return;
    }
    int32_t gpus = req->gpus > 0 ? (int32_t)req->gpus : 1;
    int32_t milli = req->gpus > 0 ? 1000 : (int32_t)req->gpu_milli;
    size_t pos = w->n, lightest = 0;
    w->total = 0;
    for (size_t i = 0; i < w->n; i++) {
        w->shape[i].weight *= WORKLOAD_DECAY;
        w->total += w->shape[i].weight;
        if (shape_eq(&w->shape[i], req->cpu_milli, gpus, milli)) {
            pos = i;
        }
        if (w->shape[i].weight < w->shape[lightest].weight) {
            lightest = i;
        }
    }
    if (pos == w->n) {
        if (w->n == GT_SCHED_MAX_SHAPES) {
            w->total -= w->shape[lightest].weight;
            memmove(&w->shape[lightest], &w->shape[lightest + 1],
                    (w->n - lightest - 1) * sizeof(w->shape[0]));
            w->n--;
        }
        /* keep the shapes sorted by milli, so that gt_sched_frag merges */
        pos = 0;
        while (pos < w->n && w->shape[pos].milli <= milli) {
            pos++;
        }
        memmove(&w->shape[pos + 1], &w->shape[pos], (w->n - pos) * sizeof(w->shape[0]));
        w->shape[pos] = (struct gt_sched_shape){
            .cpu_milli = req->cpu_milli, .gpus = gpus, .milli = milli, .weight = 0};
        w->n++;
    }
    w->shape[pos].weight += replicas;
    w->total += replicas;
}

double gt_sched_frag(const struct gt_sched_workload *w, const int32_t *rooms, size_t n,
                     int64_t cpu_free)
{
    if (w->n == 0 || w->total <= 0) {
        return 0;
    }
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        total += rooms[i];
    }
    if (total == 0) {
        return 0;
    }
    /* Shapes and rooms both ascend: one merge gives, for each shape, the
     * GPUs with its room (fit) and the capacity of those without (small). */
    double frag = 0;
    int64_t small = 0;
    size_t i = 0;
    for (size_t s = 0; s < w->n; s++) {
        const struct gt_sched_shape *sh = &w->shape[s];
        while (i < n && rooms[i] < sh->milli) {
            small += rooms[i++];
        }
        bool fits = cpu_free >= sh->cpu_milli && n - i >= (size_t)sh->gpus;
        frag += sh->weight * (double)(fits ? small : total);
    }
    return frag / w->total;
}
