#!/bin/sh
# API throughput: durable creates (64 concurrent clients) and GETs spread over
# 10,000 stored objects (32 connections), with wrk on loopback against a
# release gantryd on a disk-backed data directory (refuses tmpfs: durability
# there is meaningless). Each figure is the median of 3 runs.
set -eu
BUILD=${1:-build}
dir=$(mktemp -d "$BUILD/bench-api.XXXXXX")
fstype=$(stat -f -c %T "$dir")
if [ "$fstype" = tmpfs ] || [ "$fstype" = ramfs ]; then
    echo "api bench: $dir is on $fstype; durable creates need a real disk" >&2
    rm -rf "$dir"
    exit 1
fi
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
token=bench-admin-token
printf '%s,bench,0,"gantry:admins"\n' "$token" >"$dir/tokens.csv"
"$BUILD/gantryd" --data-dir "$dir/data" --listen "127.0.0.1:$port" --token-file "$dir/tokens.csv" \
    --log-level warn 2>"$dir/gantryd.log" &
pid=$!
cleanup() { kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"; }
# also when a signal ends the script (a closed output pipe): no gantryd left behind
trap cleanup EXIT
trap 'cleanup; trap - EXIT; exit 1' HUP INT TERM PIPE
url="http://127.0.0.1:$port"
until curl -fs "$url/healthz" >/dev/null; do sleep 0.1; done
auth="Authorization: Bearer $token"
curl -fs -H "$auth" -d '{"apiVersion":"gantry.dev/v1","kind":"Department","metadata":{"name":"bench"}}' \
    "$url/apis/gantry.dev/v1/departments" >/dev/null
curl -fs -H "$auth" -d '{"apiVersion":"gantry.dev/v1","kind":"Project","metadata":{"name":"bench"},"spec":{"department":"bench"}}' \
    "$url/apis/gantry.dev/v1/projects" >/dev/null

median() { sort -n | sed -n 2p; }
rate() { sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p'; }
non2xx() { sed -n 's/.*Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p'; }

here=$(cd "$(dirname "$0")" && pwd)
creates=""
for r in 1 2 3; do
    out=$(wrk -t2 -c64 -d5s -s "$here/api_create.lua" "$url" -- "$token" "$r")
    bad=$(echo "$out" | non2xx)
    if [ -n "$bad" ] && [ "$bad" -gt 0 ]; then
        echo "api bench: $bad creates failed" >&2
        exit 1
    fi
    creates="$creates $(echo "$out" | rate)"
done
curl -fs -H "$auth" "$url/apis/gantry.dev/v1/projects/bench/jobs" |
    /usr/bin/python3 -c 'import json,sys; [print("/apis/gantry.dev/v1/projects/bench/jobs/"+o["metadata"]["name"]) for o in json.load(sys.stdin)["items"][:10000]]' \
    >"$dir/paths"
n=$(wc -l <"$dir/paths")
gets=""
for r in 1 2 3; do
    gets="$gets $(wrk -t2 -c32 -d5s -s "$here/api_get.lua" "$url" -- "$token" "$dir/paths" | rate)"
done
echo "api_create_per_s=$(printf '%s\n' $creates | median) clients=64 durable=1 fs=$fstype runs=3 duration_s=5"
echo "api_get_per_s=$(printf '%s\n' $gets | median) connections=32 objects=$n runs=3 duration_s=5"
echo "api_bench_client=wrk-4.1 threads=2 server=gantryd-release sqlite=wal,synchronous=full"
