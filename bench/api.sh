#!/bin/sh
# API throughput: durable creates (64 concurrent clients) and GETs spread over
# 10,000 stored objects (32 connections), with wrk on loopback against a
# release gantryd on a disk-backed data directory (refuses tmpfs: durability
# there is meaningless). Each figure is the median of 3 runs. Then the same
# against a gantryd on a 3-member etcd on loopback (--store etcd://...), data
# in the same directory, printed as etcd_*; skipped where etcd is absent.
set -eu
BUILD=${1:-build}
dir=$(mktemp -d "$BUILD/bench-api.XXXXXX")
fstype=$(stat -f -c %T "$dir")
if [ "$fstype" = tmpfs ] || [ "$fstype" = ramfs ]; then
    echo "api bench: $dir is on $fstype; durable creates need a real disk" >&2
    rm -rf "$dir"
    exit 1
fi
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
token=bench-admin-token
printf '%s,bench,0,"gantry:admins"\n' "$token" >"$dir/tokens.csv"
pids=""
cleanup() { for p in $pids; do kill $p 2>/dev/null || true; wait $p 2>/dev/null || true; done; rm -rf "$dir"; }
# also when a signal ends the script (a closed output pipe): no gantryd left behind
trap cleanup EXIT
trap 'cleanup; trap - EXIT; exit 1' HUP INT TERM PIPE

# run_bench PREFIX [GANTRYD_ARGS...]: a fresh gantryd, its figures as PREFIX_*
run_bench() {
prefix=$1
shift
rm -rf "$dir/data"
port=$(free_port)
"$BUILD/gantryd" --data-dir "$dir/data" --listen "127.0.0.1:$port" --token-file "$dir/tokens.csv" \
    --log-level warn "$@" 2>"$dir/gantryd.log" &
pid=$!
pids="$pids $pid"
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
echo "${prefix}_create_per_s=$(printf '%s\n' $creates | median) clients=64 durable=1 fs=$fstype runs=3 duration_s=5"
echo "${prefix}_get_per_s=$(printf '%s\n' $gets | median) connections=32 objects=$n runs=3 duration_s=5"
kill $pid
wait $pid 2>/dev/null || true
}

run_bench api
echo "api_bench_client=wrk-4.1 threads=2 server=gantryd-release sqlite=wal,synchronous=full"

if ! command -v etcd >/dev/null 2>&1; then
    echo "api bench: no etcd (Debian: etcd-server); etcd_* skipped" >&2
    exit 0
fi
cluster="" endpoints=""
for m in 1 2 3; do
    eval "client$m=$(free_port) peer$m=$(free_port)"
    eval "cluster=\"\${cluster:+\$cluster,}m$m=http://127.0.0.1:\$peer$m\""
    eval "endpoints=\"\${endpoints:+\$endpoints,}127.0.0.1:\$client$m\""
done
for m in 1 2 3; do
    eval "c=http://127.0.0.1:\$client$m p=http://127.0.0.1:\$peer$m"
    etcd --name "m$m" --data-dir "$dir/etcd$m" --listen-client-urls "$c" --advertise-client-urls "$c" \
        --listen-peer-urls "$p" --initial-advertise-peer-urls "$p" --initial-cluster "$cluster" \
        --initial-cluster-token bench --initial-cluster-state new --log-level error \
        >/dev/null 2>"$dir/etcd$m.log" &
    pids="$pids $!"
done
until curl -fs -X POST -d '{"key":"AA=="}' "http://${endpoints%%,*}/v3/kv/range" >/dev/null; do
    sleep 0.1
done
run_bench etcd --store "etcd://$endpoints"
echo "etcd_bench=members=3 loopback=1 fs=$fstype gateway=v3-json"
