#!/bin/sh
# The HA control plane on a 3-member local etcd (loopback), printed as
# key=value lines:
#   ha_failover_ms_p50/_p99  leader SIGKILL -> first write accepted from the
#                            new leader: 3 gantryd replicas (--leader-lease-ttl
#                            2, --leader-renew-interval 250); right after each
#                            of 10 kills a job is created through a live
#                            replica, and the time is until its Task exists
#                            (the job controller's create, a write guarded by
#                            the leader key, so only a leader's is accepted);
#                            the killed replica is restarted before the next
#   etcd_create_per_s, etcd_get_per_s    bench/api_run against one gantryd on
#                            that etcd (durable creates, 64 clients; GETs,
#                            32 connections; medians of 3 runs)
#   sqlite_create_per_s, sqlite_get_per_s  the same run on SQLite, side by side
# Skipped (exit 0, a note on stderr) where etcd is absent. About a minute
# and a half.
set -eu
BUILD=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v etcd >/dev/null 2>&1; then
    echo "ha bench: no etcd (Debian: etcd-server); skipped" >&2
    exit 0
fi
dir=$(mktemp -d "$BUILD/bench-ha.XXXXXX")
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pids=""
cleanup() { for p in $pids; do kill $p 2>/dev/null || true; wait $p 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
trap 'cleanup; trap - EXIT; exit 1' HUP INT TERM PIPE
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
GANTRY_BUILD_DIR=$BUILD /usr/bin/python3 - "$here/../tests/e2e" "etcd://$endpoints" <<'PYEOF'
import sys, time
sys.path.insert(0, sys.argv[1])
from gantry_e2e import API, Gantryd, obj, pct

TTL_S, RENEW_MS, KILLS = 2, 250, 10
args = ("--store", sys.argv[2], "--leader-lease-ttl", str(TTL_S),
        "--leader-renew-interval", str(RENEW_MS), "--log-level", "warn")
gs = [Gantryd(args + ("--replica-id", "b%d" % i)).start() for i in range(3)]


def status(g):
    try:
        st, body = g.request("GET", "/readyz", token=None, timeout=2)
        return body.get("status") if st == 200 else None
    except OSError:
        return None


def until(what, fn, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.01)
    raise SystemExit("ha bench: timed out waiting for " + what)


try:
    until("a leader", lambda: any(status(g) == "leader" for g in gs))
    g0 = next(g for g in gs if status(g) == "leader")
    g0.request("POST", API + "/departments", obj("Department", "ha"))
    g0.request("POST", API + "/projects", obj("Project", "ha", spec={"department": "ha"}))
    tmpl = {"command": ["true"], "resources": {"limits": {"cpu": "1", "memory": "16Mi"}}}
    times = []
    for i in range(KILLS):
        lead = until("a leader", lambda: next((g for g in gs if status(g) == "leader"), None))
        t0 = time.time()
        lead.kill()
        live = next(g for g in gs if g is not lead)
        name = "probe-%d" % i
        until("the probe's create", lambda: live.request("POST", API + "/projects/ha/jobs", obj(
            "Job", name, "ha", spec={"replicaSpecs": {"Worker": {"replicas": 1,
                                                                 "template": tmpl}}}))[0] == 201)
        until("the new leader's Task", lambda: live.request(
            "GET", API + "/projects/ha/tasks/%s-worker-0" % name)[0] == 200)
        times.append((time.time() - t0) * 1000)
        lead.log.close()
        lead.start()
    print("ha_failover_ms_p50=%.0f kills=%d replicas=3 lease_ttl_s=%d renew_ms=%d"
          % (pct(times, 50), KILLS, TTL_S, RENEW_MS))
    print("ha_failover_ms_p99=%.0f max=%.0f target=5000" % (pct(times, 99), max(times)))
finally:
    for g in gs:
        g.cleanup()
PYEOF
# after the failover runs: the throughput gantryd's thousands of jobs would
# otherwise be reconciled by every new leader first
sh "$here/api_run" "$BUILD" sqlite
sh "$here/api_run" "$BUILD" etcd --store "etcd://$endpoints"
echo "etcd_bench=members=3 loopback=1 gateway=v3-json"
