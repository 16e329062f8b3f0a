#!/bin/sh
# Scheduler throughput (bench/sched_bench.c): compiled here against the
# build's libraries, then the median of SCHED_BENCH_RUNS seeded runs
# (default 5, the target protocol; a run takes seconds) at 5,000 nodes (no
# preemption) and at 15,000 nodes (10 % of arrivals preempt); then the p99
# cycle time of the default policy with 10,000 jobs waiting on a full
# 5,000-node cluster, one arrival or completion per cycle (issue 22).
set -eu
BUILD=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp "$BUILD/sched_bench.XXXXXX")
trap 'rm -f "$bin"' EXIT
cc -O2 -std=gnu17 -D_GNU_SOURCE -I "$here/../src" "$here/sched_bench.c" "$BUILD/libgt_sched.a" \
    "$BUILD/libgt_common.a" $(pkg-config --libs jansson yaml-0.1) -lm -o "$bin"
n_runs=${SCHED_BENCH_RUNS:-5}
median() { sort -n | sed -n "$(((n_runs + 1) / 2))p"; }
runs() { s=1; while [ "$s" -le "$n_runs" ]; do "$bin" "$1" "$2" "$s"; s=$((s + 1)); done; }
a=$(runs 5000 0)
b=$(runs 15000 1)
cost() { s=1; while [ "$s" -le "$n_runs" ]; do "$bin" 5000 0 "$s" gantry 10000; s=$((s + 1)); done; }
c=$(cost)
echo "sched_tasks_per_s=$(echo "$a" | cut -d' ' -f1 | median) nodes=5000 gpus=40000 runs=$n_runs"
echo "sched_tasks_per_s=$(echo "$b" | cut -d' ' -f1 | median) nodes=15000 preempt=1 runs=$n_runs"
echo "sched_cycle_ms_p99=$(echo "$a" | cut -d' ' -f2 | median) nodes=5000"
echo "sched_frag_pct=$(echo "$a" | cut -d' ' -f3 | median) nodes=5000"
echo "sched_mem_kb_per_1k_pending=$(echo "$a" | cut -d' ' -f4 | median)"
echo "sched_cycle_ms_p99_10k_pending=$(echo "$c" | cut -d' ' -f1 | median) nodes=5000 pending_jobs=10000 policy=gantry runs=$n_runs"
echo "sched_cycle_cpu_ms_p99_10k_pending=$(echo "$c" | cut -d' ' -f2 | median) nodes=5000 pending_jobs=10000 policy=gantry runs=$n_runs"
