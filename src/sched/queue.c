/*
 * Pending queues: each department keeps, per priority value (a band), a
 * doubly linked list of its jobs that have PENDING tasks, in arrival order
 * with ties by id. A job is queued exactly while n_pending > 0. The gantry
 * order merges these lists at cycle time (cycle.c) instead of sorting every
 * pending job: within one band and department, arrival order is also aging
 * order, so only the department heads need comparing.
 *
 * The department's pending use (what its queued work would add) is kept
 * here too, in 128-bit sums so that no set of valid requests overflows; the
 * admission rule uses it to protect a department's guarantee for its own
 * waiting work.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/sched_int.h"

struct gt_sched_band *gt_sched_dept_band(struct gt_sched_dept *dept, int32_t value)
{
    for (size_t i = 0; i < dept->n_bands; i++) {
        if (dept->bands[i].value == value) {
            return &dept->bands[i];
        }
    }
    return NULL;
}

void gt_sched_dept_bands_free(struct gt_sched_dept *dept)
{
    free(dept->bands);
    dept->bands = NULL;
    dept->n_bands = dept->cap_bands = 0;
}

/* The band for value, created (kept sorted, descending) if missing. */
static struct gt_sched_band *band_get(struct gt_sched_dept *dept, int32_t value)
{
    struct gt_sched_band *b = gt_sched_dept_band(dept, value);
    if (b) {
        return b;
    }
    if (dept->n_bands == dept->cap_bands) {
        dept->cap_bands = dept->cap_bands ? dept->cap_bands * 2 : 4;
        dept->bands = gt_xrealloc(dept->bands, dept->cap_bands * sizeof(*dept->bands));
    }
    size_t pos = 0;
    while (pos < dept->n_bands && dept->bands[pos].value > value) {
        pos++;
    }
    memmove(&dept->bands[pos + 1], &dept->bands[pos], (dept->n_bands - pos) * sizeof(*dept->bands));
    dept->bands[pos] = (struct gt_sched_band){.value = value};
    dept->n_bands++;
    return &dept->bands[pos];
}

/* Does a go before b inside one band? */
static bool arrives_before(const struct gt_sched_job *a, const struct gt_sched_job *b)
{
    if (a->arrival_ms != b->arrival_ms) {
        return a->arrival_ms < b->arrival_ms;
    }
    return strcmp(a->id, b->id) < 0;
}

static void enqueue(struct gt_sched_job *job)
{
    struct gt_sched_band *b = band_get(job->dept, job->priority);
    /* Arrivals come mostly in order: search from the tail. */
    struct gt_sched_job *after = b->tail;
    while (after && arrives_before(job, after)) {
        after = after->queue_prev;
    }
    job->queue_prev = after;
    job->queue_next = after ? after->queue_next : b->head;
    if (job->queue_next) {
        job->queue_next->queue_prev = job;
    } else {
        b->tail = job;
    }
    if (after) {
        after->queue_next = job;
    } else {
        b->head = job;
    }
    job->queued = true;
    job->dept->model->n_light_queued += job->light;
    job->dept->model->n_preemptor_queued += job->preemption != GT_SCHED_PREEMPT_NEVER;
}

static void dequeue(struct gt_sched_job *job)
{
    struct gt_sched_band *b = gt_sched_dept_band(job->dept, job->priority);
    GT_ASSERT(b && job->queued);
    if (job->queue_prev) {
        job->queue_prev->queue_next = job->queue_next;
    } else {
        b->head = job->queue_next;
    }
    if (job->queue_next) {
        job->queue_next->queue_prev = job->queue_prev;
    } else {
        b->tail = job->queue_prev;
    }
    job->queue_prev = job->queue_next = NULL;
    job->queued = false;
    job->dept->model->n_light_queued -= job->light;
    job->dept->model->n_preemptor_queued -= job->preemption != GT_SCHED_PREEMPT_NEVER;
}

void gt_sched_job_pending_delta(struct gt_sched_job *job, const struct gt_sched_task *task,
                                int delta)
{
    int64_t use[GT_SCHED_N_RES];
    gt_sched_res_unpack(&task->group->use, use);
    for (int i = 0; i < GT_SCHED_N_RES; i++) {
        job->dept->pending[i] += delta > 0 ? use[i] : -(__int128)use[i];
    }
    if (delta > 0) {
        if (job->n_pending++ == 0) {
            enqueue(job);
        }
    } else {
        GT_ASSERT(job->n_pending > 0);
        if (--job->n_pending == 0) {
            dequeue(job);
        }
    }
}
