/*
 * Named fault points (faultpoint.c): places in gantryd, gantlet and the
 * shim where a test makes the process crash or the operation fail, to check
 * what survives (../shared/INVARIANTS.md). Off unless the program is given
 * a spec (gantryd and gantlet --fault-points, the shim GANTRY_SHIM_FAULT_POINTS),
 * a comma-separated list of
 *
 *     NAME=ACTION[:nth=N | :p=P]
 *
 * ACTION is crash (the process ends at once with _exit(GT_FAULT_CRASH_STATUS),
 * no cleanup, like a SIGKILL) or fail (the operation fails as the point's
 * documentation says). nth=N fires on the Nth time the point is reached,
 * once (the default is nth=1); p=P fires each time with probability P in
 * (0, 1]. Each program names its points in a table (docs/faults.md); other
 * names are refused.
 */
#ifndef GT_COMMON_FAULTPOINT_H
#define GT_COMMON_FAULTPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/common.h"

/* The exit status of a process a crash point ended. */
#define GT_FAULT_CRASH_STATUS 86
#define GT_FAULT_MAX_POINTS 16

enum gt_fault_action { GT_FAULT_NONE, GT_FAULT_FAIL, GT_FAULT_CRASH };

/* One armed point. name is borrowed from the program's table. */
struct gt_fault_point {
    const char *name;
    enum gt_fault_action action;
    int64_t nth;  /* > 0: fire on this hit, once; 0: by probability */
    double p;     /* with nth == 0: the chance per hit */
    int64_t hits; /* times reached */
    int64_t fired;
};

/* The armed points of one process; zero-initialised means none. Owned by
 * the program's state (not global); not thread-safe: reach it from one thread. */
struct gt_faults {
    struct gt_fault_point v[GT_FAULT_MAX_POINTS];
    size_t n;
    uint64_t rng; /* xorshift64 state, never 0 */
};

/* Parse spec (NULL or "" arms nothing) into f, accepting only the names of
 * known (a NULL-terminated array; the names are borrowed and must outlive f).
 * seed: for p= points (0 picks 1). On a bad spec: GT_EINVAL with err naming
 * the entry, and f holds nothing armed. */
int gt_faults_parse(struct gt_faults *f, const char *spec, const char *const *known, uint64_t seed,
                    struct gt_err *err);

/* Reach point name: GT_FAULT_NONE (go on) or GT_FAULT_FAIL (the caller fails
 * the operation); a crash point logs and ends the process, never returning.
 * f may be NULL (nothing armed). */
enum gt_fault_action gt_fault_hit(struct gt_faults *f, const char *name);

#endif
