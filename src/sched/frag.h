/*
 * sched frag (frag.c): the workload seen (a decayed histogram of the GPU
 * task shapes of arriving jobs) and the fragmentation measure over it.
 * Included only from src/sched.
 */
#ifndef GT_SCHED_FRAG_H
#define GT_SCHED_FRAG_H

#include "sched/sched.h"

#define GT_SCHED_MAX_SHAPES 64

/* A kind of GPU task: gpus GPUs with at least milli room each (1000 for
 * whole GPUs) and cpu_milli on their node; weight: decayed count. */
struct gt_sched_shape {
    int64_t cpu_milli;
    int32_t gpus, milli;
    double weight;
};

/* The decayed histogram of the GPU task shapes of arriving jobs. */
struct gt_sched_workload {
    struct gt_sched_shape shape[GT_SCHED_MAX_SHAPES]; /* by milli, ascending */
    size_t n;
    double total; /* sum of the weights */
};

/* Count replicas more tasks asking req (cpu-only ones are not counted),
 * after aging the histogram by one arrival. */
void gt_sched_workload_note(struct gt_sched_workload *w, const struct gt_sched_task_req *req,
                            int32_t replicas);
/* The expected milli-GPU of a node with GPU rooms rooms[0..n) (milli a new
 * task could use of each GPU, ascending) and cpu_free milli-CPU free that a
 * task drawn from w could not use; 0 while w is empty. */
double gt_sched_frag(const struct gt_sched_workload *w, const int32_t *rooms, size_t n,
                     int64_t cpu_free);

#endif
