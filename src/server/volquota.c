/*
 * Storage quota arithmetic for Volumes: the pure part of the volume
 * controller (volctl.c), so its rules are unit-tested without a daemon.
 * A Volume's capacity counts, from its create to its delete, against its
 * project's spec.hard.storage and its department's storage limit (a
 * resource named in spec.quota but not in spec.limit has a limit equal to
 * its quota, DESIGN.md "Resource model"). Capacity above the quota and
 * within the limit is borrowed; unlike GPUs it is never reclaimed (a disk
 * cannot be preempted), so a limit above the quota is an admin's promise.
 */
#include <inttypes.h>
#include <stdio.h>

#include "common/quantity.h"
#include "server/server.h"

static const char *bytes_text(int64_t v, char *buf, size_t len)
{
    return gt_quantity_format(v, GT_QTY_UNIT, 1, buf, len);
}

/* Would a + b stay within cap (no overflow)? */
static bool fits(int64_t a, int64_t b, int64_t cap)
{
    return a >= 0 && b >= 0 && a <= cap && b <= cap - a;
}

int gt_storage_quota_check(const struct gt_storage_quota *q, int64_t capacity_bytes,
                           struct gt_err *err)
{
    char want[32], used[32], cap[32], quota[32];
    const char *what = q->what ? q->what : "spec.capacity.storage";
    bytes_text(capacity_bytes, want, sizeof(want));
    if (q->project_hard_bytes >= 0 &&
        !fits(q->project_allocated_bytes, capacity_bytes, q->project_hard_bytes)) {
        return gt_err_set(err, GT_EFORBIDDEN,
                          "%s: %s exceeds the storage quota of project \"%s\" "
                          "(spec.hard.storage %s, %s allocated to its volumes and models)",
                          what, want, q->project,
                          bytes_text(q->project_hard_bytes, cap, sizeof(cap)),
                          bytes_text(q->project_allocated_bytes, used, sizeof(used)));
    }
    if (!fits(q->dept_allocated_bytes, capacity_bytes, q->dept_limit_bytes)) {
        return gt_err_set(err, GT_EFORBIDDEN,
                          "%s: %s exceeds the storage quota of department "
                          "\"%s\" (quota %s, limit %s, %s allocated to its volumes and models)",
                          what, want, q->department ? q->department : "",
                          bytes_text(q->dept_quota_bytes, quota, sizeof(quota)),
                          bytes_text(q->dept_limit_bytes, cap, sizeof(cap)),
                          bytes_text(q->dept_allocated_bytes, used, sizeof(used)));
    }
    return 0;
}

void gt_storage_limits(const struct gt_api_res *quota, const struct gt_api_res *limit,
                       int64_t *quota_bytes, int64_t *limit_bytes)
{
    *quota_bytes = quota && (quota->set & GT_RESF_STORAGE) ? quota->v.v[GT_RES_STORAGE] : 0;
    *limit_bytes =
        limit && (limit->set & GT_RESF_STORAGE) ? limit->v.v[GT_RES_STORAGE] : *quota_bytes;
}
