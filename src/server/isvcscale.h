/*
 * isvcscale.c: the serving autoscaler's decision, a pure function of a
 * variant's policy, its state and the metric now (no store, no clock).
 */
#ifndef GT_SERVER_ISVCSCALE_H
#define GT_SERVER_ISVCSCALE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

/* How one variant is autoscaled (spec fields, gt_isvc_scale_policy_of). */
struct gt_isvc_scale_policy {
    int64_t min, max;      /* replicas; autoscaled when max > min */
    double target;         /* scaleTarget: the metric per replica */
    bool rps;              /* scaleMetric rps (requests/s), else concurrency (in flight) */
    int64_t window_ms;     /* the metric is averaged over it; scale-up over a tenth of it */
    int64_t down_delay_ms; /* a lower count must be called for this long before it is taken */
};

/* The metric's window is kept in GT_ISVC_SCALE_BUCKETS buckets of
 * window_ms / GT_ISVC_SCALE_BUCKETS each (Knative keeps its window in
 * buckets too); the panic window is the last tenth of them. */
#define GT_ISVC_SCALE_BUCKETS 20

/* What the autoscaler keeps of one variant between decisions (caller's
 * storage, gt_isvc_scale_init). */
struct gt_isvc_scale {
    int64_t at_ms;                        /* the last sample; 0: none yet */
    int64_t epoch[GT_ISVC_SCALE_BUCKETS]; /* which bucket (now / bucket width) each holds */
    double sum[GT_ISVC_SCALE_BUCKETS];    /* the metric times ms, over the bucket */
    double ms[GT_ISVC_SCALE_BUCKETS];     /* ms sampled in the bucket */
    int64_t desired;                      /* replicas decided */
    int64_t low_since_ms; /* since when fewer replicas have been called for; 0: they are not */
    int64_t low_max;      /* the most replicas called for since low_since_ms */
};

/* The policy of variant (its JSON, borrowed) in service spec spec
 * (borrowed): replicas, maxReplicas, scaleTarget (default 1), scaleMetric
 * (default concurrency) and spec.autoscaling's windowSeconds and
 * scaleDownDelaySeconds (defaults GT_ISVC_SCALE_WINDOW_S and
 * GT_ISVC_SCALE_DOWN_DELAY_S, api.h). true when the variant is autoscaled
 * (maxReplicas above replicas). Both are validated objects. */
bool gt_isvc_scale_policy_of(const json_t *spec, const json_t *variant,
                             struct gt_isvc_scale_policy *out);

/* Start s at current replicas (those a restarted controller finds running
 * stay until the metric says otherwise). */
void gt_isvc_scale_init(struct gt_isvc_scale *s, int64_t current);

/* Feed the metric now (the variant's total: requests in flight over its
 * replicas, or requests/s; it holds since the last sample) and return the
 * replicas it should run, within [p->min, p->max]: ceil(average / target
 * - 0.1) (a tenth of a replica tolerated, as HPA's tolerance), from the
 * larger of the window's and the panic window's averages, as Knative's
 * autoscaler reads its stable and panic windows.
 * More replicas are taken at once; fewer only once they have been called
 * for during p->down_delay_ms (then the most called for in that time), so
 * a dip in the load does not stop replicas it needs again. now_ms: any
 * monotonic clock, in ms. */
int64_t gt_isvc_scale_decide(const struct gt_isvc_scale_policy *p, struct gt_isvc_scale *s,
                             double metric, int64_t now_ms);

/* The condition reason for a replica's scheduler wait ("Reason: text", as
 * gt_feed_wait gives it): "QuotaExceeded" for a Quota wait or an
 * Inadmissible one whose code is a quota's (ExceedsDepartmentLimit,
 * ExceedsProjectCap), else "Unschedulable" (GPUs or other resources
 * short, a volume in use). Static storage. *text: the wait's text after
 * its reason (borrowed from wait), which names the quota or resource. */
const char *gt_isvc_scale_wait_reason(const char *wait, const char **text);

#endif
