/*
 * The serving autoscaler's decision (isvcscale.h): how many replicas an
 * autoscaled InferenceService variant runs, from the gateway's counters
 * (HAProxy's requests in flight per server, or requests/s), the way
 * Knative's pod autoscaler and Kubernetes' HPA decide:
 *
 *   - the metric is averaged over spec.autoscaling's window (Knative's
 *     stable window, 60 s by default) and over its last tenth (the panic
 *     window), each sample weighted by the time it held, and the replicas
 *     called for are ceil(max(stable, panic) / scaleTarget - 0.1), within
 *     [replicas, maxReplicas]: a burst scales up within a tenth of the
 *     window, and a load that stays at the target does not call for one
 *     more replica on noise (HPA tolerates a tenth likewise);
 *   - more replicas are taken at once; fewer only after they have been
 *     called for without a break during scaleDownDelaySeconds (HPA's
 *     scale-down stabilisation window), and then the most called for in
 *     that time.
 *
 * The state is the caller's (the serving controller keeps one per
 * variant, not stored): a restarted gantryd starts from the replicas it
 * finds. Nothing here reads a clock or the store.
 */
#include <math.h>
#include <string.h>

#include "api/api.h"
#include "server/isvcscale.h"

#define PANIC_BUCKETS (GT_ISVC_SCALE_BUCKETS / 10) /* a tenth of the window, as Knative's */
#define TOLERANCE 0.1                              /* of a replica's target, as HPA's */

static int64_t field_or(const json_t *o, const char *k, int64_t dflt)
{
    const json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

bool gt_isvc_scale_policy_of(const json_t *spec, const json_t *variant,
                             struct gt_isvc_scale_policy *out)
{
    const json_t *as = json_object_get(spec, "autoscaling");
    const char *metric = json_string_value(json_object_get(variant, "scaleMetric"));
    out->min = field_or(variant, "replicas", 1);
    out->max = field_or(variant, "maxReplicas", out->min);
    out->max = out->max < out->min ? out->min : out->max;
    out->target = (double)field_or(variant, "scaleTarget", 1);
    out->target = out->target < 1 ? 1 : out->target;
    out->rps = metric && !strcmp(metric, "rps");
    out->window_ms = field_or(as, "windowSeconds", GT_ISVC_SCALE_WINDOW_S) * 1000;
    out->down_delay_ms = field_or(as, "scaleDownDelaySeconds", GT_ISVC_SCALE_DOWN_DELAY_S) * 1000;
    return out->max > out->min;
}

void gt_isvc_scale_init(struct gt_isvc_scale *s, int64_t current)
{
    memset(s, 0, sizeof(*s));
    s->desired = current;
}

static int64_t clamp(const struct gt_isvc_scale_policy *p, int64_t n)
{
    return n < p->min ? p->min : n > p->max ? p->max : n;
}

/* The metric averaged over the last n buckets up to epoch e (0 when
 * nothing was sampled in them). */
static double average(const struct gt_isvc_scale *s, int64_t e, int64_t n)
{
    double sum = 0, ms = 0;
    for (size_t i = 0; i < GT_ISVC_SCALE_BUCKETS; i++) {
        if (s->epoch[i] > e - n && s->epoch[i] <= e) {
            sum += s->sum[i];
            ms += s->ms[i];
        }
    }
    return ms > 0 ? sum / ms : 0;
}

/* Add metric, held for the time since the last sample (at least 1 ms,
 * at most the window), to the bucket of now_ms; its epoch. */
static int64_t sample(const struct gt_isvc_scale_policy *p, struct gt_isvc_scale *s, double metric,
                      int64_t now_ms)
{
    int64_t width = p->window_ms / GT_ISVC_SCALE_BUCKETS;
    width = width > 0 ? width : 1;
    int64_t e = now_ms / width;
    size_t slot = (size_t)(e % GT_ISVC_SCALE_BUCKETS);
    if (s->epoch[slot] != e) {
        s->epoch[slot] = e;
        s->sum[slot] = s->ms[slot] = 0;
    }
    int64_t held = s->at_ms && now_ms > s->at_ms ? now_ms - s->at_ms : 1;
    held = held > p->window_ms ? p->window_ms : held;
    s->sum[slot] += metric * (double)held;
    s->ms[slot] += (double)held;
    s->at_ms = now_ms > s->at_ms ? now_ms : s->at_ms;
    return e;
}

int64_t gt_isvc_scale_decide(const struct gt_isvc_scale_policy *p, struct gt_isvc_scale *s,
                             double metric, int64_t now_ms)
{
    int64_t e = sample(p, s, metric > 0 ? metric : 0, now_ms);
    double stable = average(s, e, GT_ISVC_SCALE_BUCKETS);
    double panic = average(s, e, PANIC_BUCKETS);
    double want = ceil((stable > panic ? stable : panic) / p->target - TOLERANCE);
    int64_t called = clamp(p, want > (double)p->max ? p->max : (int64_t)want);
    s->desired = clamp(p, s->desired);
    if (called >= s->desired) {
        s->desired = called;
        s->low_since_ms = 0;
        return s->desired;
    }
    if (s->low_since_ms == 0) {
        s->low_since_ms = now_ms;
        s->low_max = called;
    }
    s->low_max = called > s->low_max ? called : s->low_max;
    if (now_ms - s->low_since_ms >= p->down_delay_ms) {
        s->desired = s->low_max;
        s->low_since_ms = 0;
    }
    return s->desired;
}

const char *gt_isvc_scale_wait_reason(const char *wait, const char **text)
{
    const char *colon = strstr(wait, ": ");
    *text = colon ? colon + 2 : wait;
    if (!strncmp(wait, "Quota:", 6) ||
        (!strncmp(wait, "Inadmissible:", 13) && (!strncmp(*text, "ExceedsDepartmentLimit", 22) ||
                                                 !strncmp(*text, "ExceedsProjectCap", 17)))) {
        return "QuotaExceeded";
    }
    return "Unschedulable";
}
