#!/bin/sh
# Trace replay speed: the whole Philly trace (philly.csv, every job with GPUs
# in a VC of known size, no date window) under the gantry policy, unchecked,
# best of 3 runs. Prints sim_philly_jobs, sim_philly_seconds and
# sim_philly_jobs_per_s. Needs the traces in ../shared/traces (or $TRACES).
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
TRACES=${TRACES:-../shared/traces}
P=$TRACES/philly-pollux
if [ ! -f "$P/philly.csv" ]; then
    echo "sim bench: $P/philly.csv not found (set TRACES)" >&2
    exit 1
fi
best=
for i in 1 2 3; do
    line=$("$BUILD/gantry-sim" --trace philly --jobs "$P/philly.csv" \
        --nodes "$P/philly_vc_helios.csv" --policy gantry 2>&1 >/dev/null |
        sed -n 's/^gantry-sim: gantry: \([0-9]*\) jobs in \([0-9.]*\) s.*/\1 \2/p')
    set -- $line
    if [ -z "$best" ] || awk "BEGIN{exit !($2 < $best)}"; then
        best=$2
        jobs=$1
    fi
done
echo "sim_philly_jobs=$jobs"
echo "sim_philly_seconds=$best"
awk "BEGIN{printf \"sim_philly_jobs_per_s=%.0f\n\", $jobs / ($best > 0 ? $best : 0.001)}"
