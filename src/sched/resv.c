/*
 * Reservations (DESIGN.md "Scheduling", steps 4 and 5): the GPUs a job
 * holds (reserved_by) until the tasks occupying them exit, made by
 * preemption (preempt.c) or for the head job's backfill (cycle.c). This
 * file keeps what the model's update functions, the placements and the
 * cycle share: dropping one, asking whether it still waits, and the
 * backfill rule that lends its GPUs.
 *
 * Backfill (a head job's reservation, made only waiting): its due time is
 * when the tasks it waits for are expected to end, the latest of them; a
 * later job borrows its free GPUs only if it is expected to end by then.
 * A task's or job's end is its activeDeadlineSeconds end when it has one,
 * else its learned expected remaining wall time E[S - a | S > a] over the
 * finished jobs of its department and gang size (history.c; a the service
 * of its current run for a job that restarts from scratch, so none for
 * one waiting), as EASY backfill uses user estimates. With nothing learned
 * for a task's gang size the due time is unknown and nothing is lent. The
 * reservation is remade every cycle, but its due time never moves later
 * than the first one made for the job since it last started
 * (job->backfill_due_ms, preempt.c), so what it lends cannot push its
 * start back beyond the estimate it was made with; a due time that has
 * passed lends nothing. A reservation made by preemption lends only by
 * deadlines: its GPUs are free once the victims exit.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/history.h"
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

int64_t gt_sched_resv_end_ms(const struct gt_sched_job *job, int64_t bound_ms, int64_t now_ms,
                             bool learned)
{
    int64_t end;
    if (job->active_deadline_ms > 0) {
        return gt_add_i64(bound_ms >= 0 ? bound_ms : now_ms, job->active_deadline_ms, &end) == 0
                   ? end
                   : INT64_MAX;
    }
    if (!learned) {
        return INT64_MAX;
    }
    /* the service its current run keeps: a job that restarts from scratch
     * keeps none unless running (the what-if searches unhold the tasks
     * they wait for, so n_holding cannot tell) */
    int64_t service_ms = job->attained_gpu_ms;
    if (job->restarts_from_scratch) {
        service_ms = bound_ms >= 0 && job->attained_gpu_ms > job->run_base_gpu_ms
                         ? job->attained_gpu_ms - job->run_base_gpu_ms
                         : 0;
    }
    double wall_ms = gt_sched_history_expected_wall_at_ms(job, service_ms);
    if (wall_ms < 0.0 || wall_ms >= (double)(INT64_MAX / 2) || now_ms > INT64_MAX / 2) {
        return INT64_MAX;
    }
    return now_ms + (int64_t)wall_ms;
}

bool gt_sched_resv_lends(const struct gt_sched_resv *r, const struct gt_sched_job *job,
                         int64_t now_ms)
{
    return r->due_ms != INT64_MAX && gt_sched_resv_end_ms(job, -1, now_ms, r->learned) <= r->due_ms;
}
