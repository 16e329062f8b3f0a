/*
 * The decisions buffer a cycle fills: binds, preemptions, reservations and
 * wait reasons. The buffer owns every string and array in it; reset frees
 * them but keeps the arrays' capacity, so a daemon cycling every second
 * reuses one buffer without reallocating.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/decisions.h"
#include "sched/sched_int.h"

void gt_sched_decisions_init(struct gt_sched_decisions *d)
{
    memset(d, 0, sizeof(*d));
}

void gt_sched_decisions_reset(struct gt_sched_decisions *d)
{
    for (size_t i = 0; i < d->n_binds; i++) {
        free(d->binds[i].task_id);
        free(d->binds[i].node);
        free(d->binds[i].gpus);
    }
    for (size_t i = 0; i < d->n_preempts; i++) {
        free(d->preempts[i].task_id);
        free(d->preempts[i].reason);
    }
    for (size_t i = 0; i < d->n_reserves; i++) {
        free(d->reserves[i].job_id);
        free(d->reserves[i].node);
        free(d->reserves[i].gpu_index);
    }
    for (size_t i = 0; i < d->n_waits; i++) {
        free(d->waits[i].job_id);
        free(d->waits[i].message);
    }
    d->n_binds = d->n_preempts = d->n_reserves = d->n_waits = 0;
    memset(d->n_waiting, 0, sizeof(d->n_waiting));
}

void gt_sched_decisions_fini(struct gt_sched_decisions *d)
{
    gt_sched_decisions_reset(d);
    free(d->binds);
    free(d->preempts);
    free(d->reserves);
    free(d->waits);
    gt_sched_decisions_init(d);
}

void gt_sched_decisions_add_bind(struct gt_sched_decisions *d, const struct gt_sched_task *task)
{
    GT_VEC_RESERVE(d->binds, d->cap_binds, d->n_binds + 1, 16);
    struct gt_sched_bind *b = &d->binds[d->n_binds++];
    b->task_id = gt_xstrdup(task->id);
    b->node = gt_xstrdup(task->node->name);
    b->n_gpus = task->n_gpus;
    b->gpus = gt_xcalloc(task->n_gpus, sizeof(*b->gpus));
    memcpy(b->gpus, task->gpus, task->n_gpus * sizeof(*b->gpus));
}

const char *gt_sched_preempt_kind_str(enum gt_sched_preempt_kind kind)
{
    switch (kind) {
    case GT_SCHED_PREEMPT_RECLAIM:
        return "Reclaim";
    case GT_SCHED_PREEMPT_PRIORITY:
        return "Priority";
    case GT_SCHED_PREEMPT_POLICY:
        break;
    }
    return "Policy";
}

void gt_sched_decisions_add_preempt(struct gt_sched_decisions *d, const struct gt_sched_task *task,
                                    enum gt_sched_preempt_kind kind, char *reason)
{
    GT_VEC_RESERVE(d->preempts, d->cap_preempts, d->n_preempts + 1, 16);
    d->preempts[d->n_preempts++] =
        (struct gt_sched_preempt){.task_id = gt_xstrdup(task->id), .reason = reason, .kind = kind};
}

void gt_sched_decisions_add_reserve(struct gt_sched_decisions *d, const struct gt_sched_job *job)
{
    const struct gt_sched_resv *r = job->resv;
    for (size_t i = 0; i < r->n;) {
        size_t j = i;
        while (j < r->n && r->node[j] == r->node[i]) {
            j++;
        }
        GT_VEC_RESERVE(d->reserves, d->cap_reserves, d->n_reserves + 1, 16);
        struct gt_sched_reserve *e = &d->reserves[d->n_reserves++];
        e->job_id = gt_xstrdup(job->id);
        e->node = gt_xstrdup(r->node[i]->name);
        e->n_gpus = j - i;
        e->gpu_index = gt_xcalloc(j - i, sizeof(*e->gpu_index));
        memcpy(e->gpu_index, &r->gpu_index[i], (j - i) * sizeof(*e->gpu_index));
        i = j;
    }
}

void gt_sched_decisions_add_wait(struct gt_sched_decisions *d, const struct gt_sched_job *job,
                                 enum gt_sched_wait_reason reason, char *message)
{
    GT_VEC_RESERVE(d->waits, d->cap_waits, d->n_waits + 1, 16);
    d->waits[d->n_waits++] =
        (struct gt_sched_wait){.job_id = gt_xstrdup(job->id), .reason = reason, .message = message};
}

const char *gt_sched_wait_reason_str(enum gt_sched_wait_reason reason)
{
    switch (reason) {
    case GT_SCHED_WAIT_QUOTA:
        return "Quota";
    case GT_SCHED_WAIT_UNSCHEDULABLE:
        return "Unschedulable";
    case GT_SCHED_WAIT_INADMISSIBLE:
        return "Inadmissible";
    }
    return "Unknown";
}
