/*
 * Pending queues: each department keeps, per priority value (a band), a
 * doubly linked list of its jobs that have PENDING tasks, in arrival order
 * with ties by id. A job is queued exactly while n_pending > 0. The gantry
 * order merges these lists at cycle time (cycle.c) instead of sorting every
 * pending job: within one band and department, arrival order is also aging
 * order, so only the department heads need comparing.
 *
 * Each band is also a skip list whose levels come from a hash of the job id,
 * so inserting among many jobs of one arrival time costs O(log n), not a
 * walk from the tail; dequeue finds its predecessors the same way.
 *
 * The department's pending use (what its queued work would add) is kept
 * here too, in 128-bit sums so that no set of valid requests overflows; the
 * admission rule uses it to protect a department's guarantee for its own
 * waiting work.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/queue.h"
#include "sched/quota.h"
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
    GT_VEC_RESERVE(dept->bands, dept->cap_bands, dept->n_bands + 1, 4);
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

/* The forward link at level l of x, or of the band's head when x is NULL. */
static struct gt_sched_job **link_at(struct gt_sched_band *b, struct gt_sched_job *x, int l)
{
    if (l == 0) {
        return x ? &x->queue_next : &b->head;
    }
    return x ? &x->skip[l - 1] : &b->skip_head[l - 1];
}

/* A job's skip list height: 1 + one level per zero bit pair of a hash of
 * its id (p = 1/4), so it depends on the id alone (deterministic). */
static int32_t skip_levels(const char *id)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
        h = (h ^ *p) * 0x100000001b3ULL;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    int32_t n = 1;
    while (n < GT_SCHED_SKIP_LEVELS && (h & 3) == 0) {
        n++;
        h >>= 2;
    }
    return n;
}

/* pred[l]: the last job before job at each level (NULL: the head). */
static void find_preds(struct gt_sched_band *b, const struct gt_sched_job *job,
                       struct gt_sched_job *pred[GT_SCHED_SKIP_LEVELS])
{
    struct gt_sched_job *x = NULL;
    for (int l = GT_SCHED_SKIP_LEVELS - 1; l >= 0; l--) {
        for (struct gt_sched_job *nx = *link_at(b, x, l); nx && arrives_before(nx, job);
             nx = *link_at(b, x, l)) {
            x = nx;
        }
        pred[l] = x;
    }
}

static void enqueue(struct gt_sched_job *job)
{
    struct gt_sched_band *b = band_get(job->dept, job->priority);
    if (job->skip_levels == 0) {
        job->skip_levels = skip_levels(job->id);
        if (job->skip_levels > 1) {
            job->skip = gt_xcalloc((size_t)job->skip_levels - 1, sizeof(*job->skip));
        }
    }
    struct gt_sched_job *pred[GT_SCHED_SKIP_LEVELS];
    find_preds(b, job, pred);
    for (int l = 0; l < job->skip_levels; l++) {
        struct gt_sched_job **at = link_at(b, pred[l], l);
        *link_at(b, job, l) = *at;
        *at = job;
    }
    job->queue_prev = pred[0];
    if (job->queue_next) {
        job->queue_next->queue_prev = job;
    } else {
        b->tail = job;
    }
    job->queued = true;
    struct gt_sched_model *m = job->dept->model;
    m->n_queued++;
    if (!job->fresh) {
        GT_VEC_RESERVE(m->fresh, m->cap_fresh, m->n_fresh + 1, 64);
        m->fresh[m->n_fresh++] = job;
        job->fresh = true;
    }
    job->dept->model->n_light_queued += job->light;
    job->dept->model->n_preemptor_queued += job->preemption != GT_SCHED_PREEMPT_NEVER;
}

static void dequeue(struct gt_sched_job *job)
{
    struct gt_sched_band *b = gt_sched_dept_band(job->dept, job->priority);
    GT_ASSERT(b && job->queued);
    if (job->skip_levels > 1) {
        struct gt_sched_job *pred[GT_SCHED_SKIP_LEVELS];
        find_preds(b, job, pred);
        for (int l = 1; l < job->skip_levels; l++) {
            struct gt_sched_job **at = link_at(b, pred[l], l);
            GT_ASSERT(*at == job);
            *at = job->skip[l - 1];
            job->skip[l - 1] = NULL;
        }
    }
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
    job->dept->model->n_queued--;
    job->dept->model->n_light_queued -= job->light;
    job->dept->model->n_preemptor_queued -= job->preemption != GT_SCHED_PREEMPT_NEVER;
}

void gt_sched_task_holding_delta(const struct gt_sched_task *task, int delta)
{
    const struct gt_sched_job *job = task->job;
    struct gt_sched_band *b = band_get(job->dept, job->priority);
    size_t *deadline = &job->dept->model->n_deadline_holding;
    /* bounded: the department's use, which includes it, is checked */
    gt_sched_res_move(&b->held, &task->group->use, delta > 0 ? 1 : -1);
    if (delta > 0) {
        b->n_holding++;
        *deadline += job->active_deadline_ms > 0;
    } else {
        GT_ASSERT(b->n_holding > 0);
        b->n_holding--;
        *deadline -= job->active_deadline_ms > 0;
    }
}

void gt_sched_job_pending_delta(struct gt_sched_job *job, const struct gt_sched_task *task,
                                int delta)
{
    const struct gt_resvec *use = &task->group->use;
    for (enum gt_res r = 0; r < GT_RES_COUNT; r++) {
        job->dept->pending[r] += delta > 0 ? use->v[r] : -(__int128)use->v[r];
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
