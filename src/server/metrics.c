/*
 * A tiny Prometheus registry for gantryd: request counts by verb and code,
 * request latency and store commit latency histograms, and objects by kind,
 * rendered in the text exposition format (version 0.0.4).
 */
#include <string.h>

#include "server/server_int.h"

const double gt_histogram_bounds[GT_HIST_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                     0.05,   0.1,   0.25,   0.5,   1,    2.5};
const double gt_histogram_wait_bounds[GT_HIST_BUCKETS] = {0.01, 0.05, 0.1, 0.25, 0.5, 1,
                                                          2.5,  5,    10,  30,   60,  300};

static const char *const verb_names[GT_MV_COUNT] = {"GET",    "LIST",   "WATCH", "CREATE",
                                                    "UPDATE", "DELETE", "OTHER"};

void gt_histogram_observe(struct gt_histogram *h, double seconds)
{
    const double *bounds = h->bounds ? h->bounds : gt_histogram_bounds;
    size_t i = 0;
    while (i < GT_HIST_BUCKETS && seconds > bounds[i]) {
        i++;
    }
    h->counts[i]++;
    h->sum += seconds;
    h->n++;
}

const char *const gt_store_req_names[GT_STORE_REQ_COUNT] = {"create", "update", "delete", "get",
                                                            "list"};

void gt_metrics_request(struct gt_metrics *m, enum gt_metrics_verb verb, int http_code,
                        double seconds)
{
    size_t slot = GT_METRICS_CODES;
    for (size_t i = 0; i < GT_METRICS_CODES; i++) {
        if (m->codes[i] == http_code || m->codes[i] == 0) {
            m->codes[i] = http_code;
            slot = i;
            break;
        }
    }
    if (slot == GT_METRICS_CODES) {
        slot = GT_METRICS_CODES - 1; /* more distinct codes than slots: lump into the last */
    }
    m->requests[verb][slot]++;
    gt_histogram_observe(&m->request_seconds, seconds);
}

void gt_metrics_render_histogram_series(struct gt_buf *out, const char *name, const char *labels,
                                        const struct gt_histogram *h)
{
    const double *bounds = h->bounds ? h->bounds : gt_histogram_bounds;
    const char *sep = labels ? "," : "";
    labels = labels ? labels : "";
    uint64_t cum = 0;
    for (size_t i = 0; i < GT_HIST_BUCKETS; i++) {
        cum += h->counts[i];
        gt_buf_printf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep, bounds[i],
                      (unsigned long long)cum);
    }
    cum += h->counts[GT_HIST_BUCKETS];
    const char *lo = labels[0] ? "{" : "", *lc = labels[0] ? "}" : "";
    gt_buf_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n%s_sum%s%s%s %.6f\n%s_count%s%s%s %llu\n",
                  name, labels, sep, (unsigned long long)cum, name, lo, labels, lc, h->sum, name,
                  lo, labels, lc, (unsigned long long)h->n);
}

void gt_metrics_render_histogram(struct gt_buf *out, const char *name, const char *help,
                                 const struct gt_histogram *h)
{
    gt_buf_printf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    gt_metrics_render_histogram_series(out, name, NULL, h);
}

void gt_metrics_render(const struct gt_metrics *m, struct gt_buf *out)
{
    gt_buf_puts(out, "# HELP gantry_http_requests_total HTTP requests by verb and code.\n"
                     "# TYPE gantry_http_requests_total counter\n");
    for (size_t v = 0; v < GT_MV_COUNT; v++) {
        for (size_t c = 0; c < GT_METRICS_CODES && m->codes[c]; c++) {
            if (m->requests[v][c]) {
                gt_buf_printf(out, "gantry_http_requests_total{verb=\"%s\",code=\"%d\"} %llu\n",
                              verb_names[v], m->codes[c], (unsigned long long)m->requests[v][c]);
            }
        }
    }
    gt_metrics_render_histogram(out, "gantry_http_request_duration_seconds",
                                "HTTP request latency (watch: until the stream starts).",
                                &m->request_seconds);
    gt_metrics_render_histogram(out, "gantry_store_commit_duration_seconds",
                                "Store write latency from submit to durable.", &m->commit_seconds);
    gt_buf_puts(out, "# HELP gantry_store_request_seconds Store request latency by operation "
                     "(writes: submit to durable).\n"
                     "# TYPE gantry_store_request_seconds histogram\n");
    for (int op = 0; op < GT_STORE_REQ_COUNT; op++) {
        char label[32];
        snprintf(label, sizeof(label), "op=\"%s\"", gt_store_req_names[op]);
        gt_metrics_render_histogram_series(out, "gantry_store_request_seconds", label,
                                           &m->store_seconds[op]);
    }
    gt_buf_puts(out, "# HELP gantry_objects Stored objects by kind.\n"
                     "# TYPE gantry_objects gauge\n");
    for (int k = 0; k < GT_KIND_COUNT; k++) {
        const struct gt_kind_info *ki = gt_kind_get((enum gt_kind)k);
        if (ki) {
            gt_buf_printf(out, "gantry_objects{kind=\"%s\"} %lld\n", ki->name,
                          (long long)m->objects[k]);
        }
    }
    gt_metrics_render_histogram(out, "gantry_scheduler_cycle_duration_seconds",
                                "Scheduler cycle latency, deciding and queueing its writes.",
                                &m->cycle_seconds);
    gt_metrics_render_histogram(out, "gantry_scheduling_latency_seconds",
                                "Task creation to its bind by the scheduler.",
                                &m->schedule_seconds);
    gt_buf_printf(out,
                  "# HELP gantry_scheduler_binds_total Tasks bound by the scheduler.\n"
                  "# TYPE gantry_scheduler_binds_total counter\n"
                  "gantry_scheduler_binds_total %llu\n"
                  "# HELP gantry_scheduler_preemptions_total Tasks stopped to make room, by "
                  "reason.\n"
                  "# TYPE gantry_scheduler_preemptions_total counter\n",
                  (unsigned long long)m->binds);
    for (int k = 0; k < 3; k++) {
        gt_buf_printf(out, "gantry_scheduler_preemptions_total{reason=\"%s\"} %llu\n",
                      gt_sched_preempt_kind_str((enum gt_sched_preempt_kind)k),
                      (unsigned long long)m->preemptions[k]);
    }
    gt_buf_printf(out,
                  "# HELP gantry_jobs_pending Jobs waiting after the last cycle, by reason.\n"
                  "# TYPE gantry_jobs_pending gauge\n"
                  "gantry_jobs_pending{reason=\"Quota\"} %lld\n"
                  "gantry_jobs_pending{reason=\"Unschedulable\"} %lld\n"
                  "gantry_jobs_pending{reason=\"Inadmissible\"} %lld\n",
                  (long long)m->jobs_pending[GT_SCHED_WAIT_QUOTA],
                  (long long)m->jobs_pending[GT_SCHED_WAIT_UNSCHEDULABLE],
                  (long long)m->jobs_pending[GT_SCHED_WAIT_INADMISSIBLE]);
}
