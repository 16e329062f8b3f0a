/*
 * statemetrics.c: kube-state-metrics-style series of gantryd's /metrics.
 */
#ifndef GT_SERVER_STATEMETRICS_H
#define GT_SERVER_STATEMETRICS_H

#include "server/server_int.h"

/* Append the state series (jobs, tasks, nodes, departments; docs/metrics.md)
 * computed from c's cache and scheduler model to out, in the Prometheus
 * text format; with spill (may be NULL), out's bytes are moved to spill
 * whenever they pass GT_METRICS_SPILL_BYTES (struct gt_ctl_hooks.metrics). */
void gt_ctl_render_metrics(const struct gt_ctl *c, struct gt_buf *out, struct evbuffer *spill);

#endif
