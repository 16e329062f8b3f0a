#!/bin/sh
# API throughput of a release gantryd on SQLite (bench/api_run: durable
# creates by 64 concurrent clients, GETs over 10,000 stored objects, wrk on
# loopback, medians of 3 runs), as api_*. The same on a 3-member etcd, side
# by side with SQLite, is ha.sh's.
set -eu
BUILD=${1:-build}
sh "$(dirname "$0")/api_run" "$BUILD" api
echo "api_bench_client=wrk-4.1 threads=2 server=gantryd-release sqlite=wal,synchronous=full"
