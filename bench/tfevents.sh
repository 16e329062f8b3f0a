#!/bin/sh
# TensorBoard event reader throughput (bench/tfevents_bench.c): compiled
# here against the build's libraries, then the median of TFEV_BENCH_RUNS
# runs (default 5) reading 64 MiB of the real event files in
# ../shared/fixtures/tfevents (relative to the project root), concatenated,
# from the page cache: framing, both CRC-32Cs of every record and the
# protobuf decoding, graphs and images included. Prints
#   tfevents_read_mb_per_s   bytes read and parsed per second (10^6 bytes)
#   tfevents_points_per_s    scalar points per second in the same runs
# and "skipped" where the fixtures are absent.
set -eu
BUILD=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
fx="$here/../../shared/fixtures/tfevents"
if [ ! -d "$fx" ]; then
    echo "tfevents_read_mb_per_s=skipped (no $fx)"
    exit 0
fi
bin=$(mktemp "$BUILD/tfevents_bench.XXXXXX")
data=$(mktemp "$BUILD/tfevents_bench_data.XXXXXX")
trap 'rm -f "$bin" "$data"' EXIT
cc -O2 -std=gnu17 -D_GNU_SOURCE -I "$here/../src" "$here/tfevents_bench.c" "$BUILD/libgt_agent.a" \
    "$BUILD/libgt_common.a" $(pkg-config --libs jansson yaml-0.1) -lm -o "$bin"
files=$(find "$fx" -type f -name '*tfevents*' ! -path '*/expected/*' | sort)
n_runs=${TFEV_BENCH_RUNS:-5}
median() { sort -n | sed -n "$(((n_runs + 1) / 2))p"; }
out=$(r=1; while [ "$r" -le "$n_runs" ]; do "$bin" "$data" 64 $files; r=$((r + 1)); done)
set -- $(echo "$out" | head -1)
echo "tfevents_read_mb_per_s=$(echo "$out" | cut -d' ' -f1 | median) mib=$3 runs=$n_runs"
echo "tfevents_points_per_s=$(echo "$out" | cut -d' ' -f2 | median) points=$4"
