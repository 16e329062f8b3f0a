/*
 * sim: gantry-sim, which replays real GPU-cluster traces through the
 * production scheduler (src/sched) on a virtual clock.
 *
 * Readers parse trace files held in memory (so the fuzz targets drive them
 * directly) into plain arrays; they are strict: every field is checked and
 * an error names the line. The replay engine builds one scheduler model per
 * cluster (a Philly VC, or the one --cluster NxG cluster), feeds it arrivals,
 * completions and preemptions in time order through the model's update
 * functions and calls gt_sched_cycle at a fixed interval, exactly as gantryd
 * does. Durations are known to the simulator only: a job's runtime estimate
 * reaches the model only for the oracle orders (sjf, srtf).
 *
 * Time in traces and results is whole seconds since the trace's epoch
 * (Philly: seconds since 1970 of its local wall-clock time); the model is
 * given milliseconds.
 */
#ifndef GT_SIM_H
#define GT_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* ---- traces ---- */

/* One job as the trace gives it. */
struct gt_sim_job {
    int64_t submit_s;
    int64_t duration_s; /* known to the simulator only */
    int32_t num_gpu;    /* whole GPUs, >= 0 */
    int32_t vc;         /* index into gt_sim_trace.vcs */
    uint32_t line;      /* 1-based line in the trace file */
};

/* A cluster: a Philly virtual cluster, or the one generic cluster. */
struct gt_sim_vc {
    char *name;
    int32_t nodes;         /* -1: size unknown */
    int32_t gpus_per_node; /* 8 for Philly */
};

/* A job trace. Owns its arrays and VC names; init/fini. */
struct gt_sim_trace {
    struct gt_sim_job *jobs;
    size_t n_jobs, cap_jobs;
    struct gt_sim_vc *vcs;
    size_t n_vcs, cap_vcs;
    /* What gt_sim_trace_select dropped. */
    size_t n_skipped_window, n_skipped_no_gpu, n_skipped_vc, n_skipped_too_big;
};

void gt_sim_trace_init(struct gt_sim_trace *t);
void gt_sim_trace_fini(struct gt_sim_trace *t);
/* The index of VC name, added (size unknown) if absent. */
int32_t gt_sim_trace_vc(struct gt_sim_trace *t, const char *name);

/* The largest trace file read (gt_file_read's bound), far above any real
 * trace read so far (Philly's philly.csv is 3.4 MiB). */
#define GT_SIM_FILE_MAX_BYTES ((size_t)1 << 30)

/* Parse Pollux's philly.csv (header timestamp,duration,num_gpus,gpu_time,
 * cluster; timestamp "YYYY-MM-DD HH:MM:SS"; duration a float with a whole
 * value; gpu_time = duration * num_gpus) from data[0..len), appending jobs
 * to t and creating VCs by name. One trailing empty line is allowed.
 * GT_EINVAL with "line N: ..." in err; t may then hold earlier rows. */
int gt_sim_philly_parse(const char *data, size_t len, struct gt_sim_trace *t, struct gt_err *err);
/* Parse Helios' philly_vc.csv (header "vc,node num") and set each VC's node
 * count (8 GPUs per node), creating VCs not yet seen. GT_EINVAL as above. */
int gt_sim_vc_sizes_parse(const char *data, size_t len, struct gt_sim_trace *t, struct gt_err *err);
/* Parse the generic CSV: a header naming the columns submission_time,
 * duration, num_gpu and optionally vc, in any order among any others (a
 * leading job_id, say), which are ignored; every row has the header's
 * number of fields; integer seconds; without a vc column every job goes to
 * VC "default". Jobs are appended to t. GT_EINVAL as above, naming the
 * missing column. */
int gt_sim_csv_parse(const char *data, size_t len, struct gt_sim_trace *t, struct gt_err *err);

/* Divide every sized VC's node count by divisor (>= 1), rounding down but
 * keeping at least one node; VCs of unknown size stay so. For replays at a
 * fraction of a cluster's size (config node_divisor). */
void gt_sim_trace_divide_nodes(struct gt_sim_trace *t, int64_t divisor);
/* Keep jobs with GPUs, submitted in [from_s, to_s], in VCs of known size
 * that can hold them (from_s > to_s: no window); count what is dropped; sort the rest by
 * submit time (ties by line). */
void gt_sim_trace_select(struct gt_sim_trace *t, int64_t from_s, int64_t to_s);

/* "YYYY-MM-DD HH:MM:SS" or "YYYY-MM-DD" (midnight) as seconds since
 * 1970-01-01 00:00:00 of the same wall clock (no time zone). 0 or
 * GT_EINVAL. */
int gt_sim_time_parse(const char *s, size_t len, int64_t *out_s);

/* ---- openb (FGD) ---- */

struct gt_sim_pod {
    int64_t cpu_milli;
    int64_t memory_mib;
    int32_t num_gpu;   /* 0..8 */
    int32_t gpu_milli; /* per GPU, 0..1000 */
};

struct gt_sim_node {
    char *name;
    int64_t cpu_milli;
    int64_t memory_mib;
    int32_t gpus;
    char *model;
};

struct gt_sim_openb {
    struct gt_sim_pod *pods;
    size_t n_pods, cap_pods;
    struct gt_sim_node *nodes;
    size_t n_nodes, cap_nodes;
};

void gt_sim_openb_init(struct gt_sim_openb *o);
void gt_sim_openb_fini(struct gt_sim_openb *o);
/* Parse an openb pod list (name,cpu_milli,memory_mib,num_gpu,gpu_milli,
 * gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time).
 * GT_EINVAL with the line in err. */
int gt_sim_openb_pods_parse(const char *data, size_t len, struct gt_sim_openb *o,
                            struct gt_err *err);
/* Parse an openb node list (sn,cpu_milli,memory_mib,gpu,model). */
int gt_sim_openb_nodes_parse(const char *data, size_t len, struct gt_sim_openb *o,
                             struct gt_err *err);

/* ---- configuration ---- */

struct gt_sim_config {
    int64_t cycle_interval_s;   /* cycles run on multiples of this after a change */
    int64_t recheck_interval_s; /* with jobs waiting, time-ordered policies recycle this often */
    int64_t restart_overhead_s; /* lost at each restart after a preemption */
    bool borrowing;             /* must be off: one department per cluster */
    int64_t from_s, to_s;       /* submit window (inclusive); from > to: none */
    bool check;                 /* gt_sched_model_check after every step */
    uint64_t seed;
    int64_t node_divisor; /* each cluster's node count is divided by this (at least 1 node) */
    bool jct_by_size;     /* summaries add the avg JCT of small and of large jobs */
};

/* The defaults (documented in src/sim/philly-helios.conf). */
void gt_sim_config_default(struct gt_sim_config *c);
/* Parse "key = value" lines (# comments) over c. GT_EINVAL with the line. */
int gt_sim_config_parse(const char *data, size_t len, struct gt_sim_config *c, struct gt_err *err);

/* ---- replay ---- */

/* One job's outcome. start_s -1: never started. */
struct gt_sim_outcome {
    int64_t submit_s, start_s, finish_s;
    int32_t num_gpu, vc;
    int32_t preemptions;
};

/* The queue length (jobs waiting, all clusters) sampled once per hour of
 * virtual time. */
struct gt_sim_sample {
    int64_t t_s;
    int64_t waiting;
};

/* The result of one replay; init/fini. */
struct gt_sim_run {
    char *label;                 /* the row name, e.g. "gantry-restart" */
    struct gt_sim_outcome *jobs; /* [n_jobs], in trace order */
    size_t n_jobs;
    double *busy_gpu_s; /* [n_vcs]: GPU-seconds held, restarts included */
    size_t n_vcs;
    struct gt_sim_sample *samples;
    size_t n_samples, cap_samples;
    int64_t n_cycles, n_preemptions, n_violations;
    int64_t n_estimates; /* jobs given a runtime estimate (oracle orders only) */
    int64_t end_s;       /* when the last job finished */
};

void gt_sim_run_init(struct gt_sim_run *r);
void gt_sim_run_fini(struct gt_sim_run *r);

/* Does the policy's order ("sjf", "srtf", or "ORDER/PLACEMENT") see the
 * jobs' true durations? */
bool gt_sim_policy_is_oracle(const char *policy);

/* Replay t (already selected) under a row name: a scheduler policy name,
 * optionally suffixed "-restart" (a preempted job restarts from scratch).
 * Fills r (init'd by the caller). GT_ENOTFOUND for an unknown policy,
 * GT_EINVAL for a bad trace or config, GT_EINTERNAL if the scheduler
 * misbehaves (err says how). */
int gt_sim_replay(const struct gt_sim_trace *t, const char *row, const struct gt_sim_config *c,
                  struct gt_sim_run *r, struct gt_err *err);

/* ---- metrics ---- */

/* A job of at least this many GPUs is large, any other small (the summary's
 * size columns). */
#define GT_SIM_LARGE_GPUS 16

struct gt_sim_summary {
    size_t jobs; /* jobs that finished */
    double avg_jct_s, avg_queue_s;
    double avg_jct_small_s, avg_jct_large_s;      /* jobs under / at least GT_SIM_LARGE_GPUS GPUs */
    double p50_queue_s, p95_queue_s, p99_queue_s; /* nearest rank */
    int64_t makespan_s;                           /* first submit to last finish */
    double util;                                  /* busy GPU-s / (capacity x makespan) */
    int64_t preemptions;
};

/* Summarise r over VC vc (-1: every VC) of t. */
void gt_sim_summarize(const struct gt_sim_trace *t, const struct gt_sim_run *r, int32_t vc,
                      struct gt_sim_summary *s);

/* ---- reports ---- */

/* The summary CSV header line (no newline):
 * policy,jobs,avg_jct_s,avg_queue_s,p50_queue_s,p95_queue_s,p99_queue_s,util,preemptions
 * and, if by_size, ",avg_jct_small_s,avg_jct_large_s". */
const char *gt_sim_summary_header(bool by_size);
/* Append one summary CSV row (with newline) named name; by_size as for
 * the header. */
void gt_sim_summary_row(struct gt_buf *b, const char *name, const struct gt_sim_summary *s,
                        bool by_size);
/* Append the per-job CSV of r. */
void gt_sim_report_jobs(struct gt_buf *b, const struct gt_sim_trace *t, const struct gt_sim_run *r);
/* Append an SVG of the JCT CDF of each run (log-scale x). */
void gt_sim_svg_jct_cdf(struct gt_buf *b, const struct gt_sim_run *runs, size_t n_runs);
/* Append an SVG of the queue length over time of each run. */
void gt_sim_svg_queue(struct gt_buf *b, const struct gt_sim_run *runs, size_t n_runs);
/* Write b to path (create or truncate). -errno with err. */
int gt_sim_file_write(const char *path, const struct gt_buf *b, struct gt_err *err);

/* ---- openb allocation experiment (FGD, ATC'23) ---- */

#define GT_SIM_ALLOC_POINTS 9 /* 50, 60, ..., 130 % of capacity arrived */

struct gt_sim_alloc {
    double alloc_pct[GT_SIM_ALLOC_POINTS]; /* GPUs allocated, % of capacity */
    size_t n_pods, n_dropped;
    int64_t n_violations;
};

/* Run one seed: shuffle the pods by seed, re-sample them (with
 * replacement) until the GPU requests reach 130 % of the nodes' GPUs, place
 * each with policy (pods never finish; one that fits nowhere is dropped) and
 * record the GPU allocation ratio at 50, 60, ... 130 % arrived: the mean
 * over the arrivals whose arrived requests lie within half a percent of the
 * point, as the FGD paper's analysis computes it (the ratio at the first
 * arrival reaching the point where none does). GT_ENOTFOUND for an
 * unknown policy, GT_EINTERNAL on a scheduler error. */
int gt_sim_openb_alloc(const struct gt_sim_openb *o, const char *policy, uint64_t seed, bool check,
                       struct gt_sim_alloc *out, struct gt_err *err);

#endif
