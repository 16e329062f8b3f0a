/*
 * Reservations (DESIGN.md "Scheduling", steps 4 and 5): the GPUs a job
 * holds (reserved_by) until the tasks occupying them exit, made by
 * preemption (preempt.c) or for the head job's backfill (cycle.c). This
 * file keeps what the model's update functions, the placements and the
 * cycle share: dropping one, asking whether it still waits, and the
 * backfill rule that lends its GPUs.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/index.h"
#include "sched/resv.h"
#include "sched/sched_int.h"

void gt_sched_resv_drop(struct gt_sched_job *job, struct gt_sched_model *m)
{
    struct gt_sched_resv *r = job->resv;
    if (!r) {
        return;
    }
    for (size_t i = 0; i < r->n; i++) {
        struct gt_sched_gpu *g = gt_sched_node_gpu(r->node[i], r->gpu_index[i]);
        if (g && g->reserved_by == job) {
            g->reserved_by = NULL;
        }
    }
    for (size_t i = 0; i < r->n; i++) {
        if (i == 0 || r->node[i] != r->node[i - 1]) {
            gt_sched_node_reindex(r->node[i], false);
        }
    }
    for (size_t i = 0; i < m->n_resv; i++) {
        if (m->resv[i] == job) {
            memmove(&m->resv[i], &m->resv[i + 1], (m->n_resv - i - 1) * sizeof(*m->resv));
            m->n_resv--;
            break;
        }
    }
    free(r->node);
    free(r->gpu_index);
    free(r);
    job->resv = NULL;
}

bool gt_sched_resv_waiting(const struct gt_sched_job *job)
{
    const struct gt_sched_resv *r = job->resv;
    for (size_t i = 0; r && i < r->n; i++) {
        const struct gt_sched_gpu *g = gt_sched_node_gpu(r->node[i], r->gpu_index[i]);
        if (g->state != GT_SCHED_GPU_FREE) {
            return true;
        }
    }
    return false;
}

bool gt_sched_resv_lends(const struct gt_sched_resv *r, const struct gt_sched_job *job,
                         int64_t now_ms)
{
    int64_t end;
    return job->active_deadline_ms > 0 && r->due_ms != INT64_MAX &&
           gt_add_i64(now_ms, job->active_deadline_ms, &end) == 0 && end <= r->due_ms;
}
