#!/bin/sh
# Serving benchmarks on one local node: a release gantryd running the
# gateway (Debian's HAProxy) and one gantlet; a public InferenceService
# whose replica is the trivial server of the e2e tests
# (tests/e2e/serving_echo.py, a small asyncio server in Python).
# Prints key=value lines:
#   serving_added_latency_us_p50/_p99  what the gateway adds to a request:
#                            wrk -t1 -c1 --latency for 5 s straight to the
#                            replica's port, then 5 s through the gateway
#                            (/serving/P/N/v2/models/m/infer), twice,
#                            interleaved, same run; the difference of the
#                            medians of the two p50s and p99s
#                            (serving_direct_us_p50/_p99 and
#                            serving_gateway_us_p50/_p99: the parts)
#   serving_rps              wrk -t2 -c16 for 5 s through the gateway, with
#                            two replicas of 300m each (bounded by the Python servers)
#   serving_status_latency_ms_p50/_p99  the service's status right after
#                            that run: the percentiles gantryd keeps from
#                            HAProxy's request log (every request logged)
#   serving_log_requests/_dropped  HAProxy's CumReq and DroppedLogs then:
#                            the log lines it could not send (the socket's
#                            queue was full: net.unix.max_dgram_qlen)
#   rollout_failed_requests  requests failed (status or body) of a steady
#                            300 req/s load while the service goes through
#                            canary 10 -> 50 -> promotion
#                            (rollout_requests: how many were sent;
#                            rollout_rps: the rate the load reached, of the
#                            300/s offered)
# Needs root (cgroups, other uids). Takes about a minute.
set -eu
BUILD=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 - "$BUILD" "$here/../tests/e2e" <<'PYEOF'
import os
import re
import shutil
import socket
import subprocess
import sys
import time

os.environ["GANTRY_BUILD_DIR"] = os.path.abspath(sys.argv[1])
sys.path.insert(0, sys.argv[2])
import gantry_e2e as E  # noqa: E402
import test_serving as T  # noqa: E402

API = E.API
P = API + "/projects/bench"
UNITS = {"us": 1.0, "ms": 1000.0, "s": 1e6}


def wrk(url, threads, conns, secs=5):
    out = subprocess.run(["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % secs, "--latency",
                          url], capture_output=True, text=True, check=True).stdout
    lat = {}
    for pct, v, unit in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", out, re.M):
        lat[pct] = float(v) * UNITS[unit]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return lat, rps


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def variant(d, version, replicas=1):
    return {"name": "main", "replicas": replicas, "template": {
        "command": ["/usr/bin/python3", os.path.join(d, "serving_echo.py")],
        "env": [{"name": "VERSION", "value": str(version)}],
        "resources": {"limits": {"cpu": "300m", "memory": "128Mi"}}}}


def put(g, name, spec):
    for _ in range(20):
        st, cur = g.request("GET", P + "/inferenceservices/" + name)
        cur["spec"] = spec
        st, body = g.request("PUT", P + "/inferenceservices/" + name, cur, token="alice")
        if st != 409:
            break
    assert st == 200, body


def status(g, name):
    return g.request("GET", P + "/inferenceservices/" + name)[1].get("status") or {}


def wait_split(g, name, want):
    have = lambda: sorted((v["role"], v["weight"], v["readyReplicas"])  # noqa: E731
                          for v in status(g, name).get("variants", []))
    E.wait_for("split %s (now %s)" % (want, status(g, name)), lambda: have() == sorted(want),
               timeout=90)


def haproxy_info(g):
    """HAProxy's `show info` over the gateway's runtime socket, as a dict."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(g.data_dir, "gateway", "haproxy.sock"))
    s.sendall(b"show info\n")
    out = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        out += chunk
    s.close()
    return dict(line.split(": ", 1) for line in out.decode().splitlines() if ": " in line)


def main():
    gw_port = E.free_port()
    g = E.Gantryd(["--gateway-listen", "127.0.0.1:%d" % gw_port]).start()
    a = E.Gantlet(g, fake_gpus="8xA100-80GB")
    d = T.server_dir()
    try:
        a.start()
        st, body = g.request("POST", API + "/departments", E.obj(
            "Department", "bench", spec={"quota": {"nvidia.com/gpu": 8, "cpu": "64",
                                                   "memory": "256Gi"}}))
        assert st == 201, body
        st, body = g.request("POST", API + "/projects", E.obj(
            "Project", "bench", spec={"department": "bench",
                                      "members": [{"user": "alice", "role": "admin"}]}))
        assert st == 201, body
        st, body = g.request("POST", P + "/inferenceservices", E.obj(
            "InferenceService", "m", "bench", spec={"public": True,
                                                   "variants": [variant(d, 1)]}), token="alice")
        assert st == 201, body
        wait_split(g, "m", [("stable", 100, 1)])
        st, jobs = g.request("GET", P + "/jobs")
        task = g.request("GET", P + "/tasks/" + jobs["items"][0]["metadata"]["name"] +
                         "-worker-0")[1]
        port = task["spec"]["ports"][0]["port"]
        direct = "http://127.0.0.1:%d/v2/models/m" % port
        via = "http://127.0.0.1:%d/serving/bench/m/v2/models/m" % gw_port
        parts = {"direct": {"50": [], "99": []}, "gateway": {"50": [], "99": []}}
        for _ in range(2):
            for which, url in (("direct", direct), ("gateway", via)):
                lat, _ = wrk(url, 1, 1)
                for p in ("50", "99"):
                    parts[which][p].append(lat[p])
        for p in ("50", "99"):
            dm, gm = median(parts["direct"][p]), median(parts["gateway"][p])
            print("serving_direct_us_p%s=%.0f" % (p, dm))
            print("serving_gateway_us_p%s=%.0f" % (p, gm))
            print("serving_added_latency_us_p%s=%.0f" % (p, gm - dm))
        put(g, "m", {"public": True, "variants": [variant(d, 1, replicas=2)]})
        wait_split(g, "m", [("stable", 100, 2)])
        _, rps = wrk(via, 2, 16)
        print("serving_rps=%.0f" % rps)
        # what the status says of that run, from the gateway's request log
        E.wait_for("percentiles in the status", lambda: "latencyP99Ms" in (
            status(g, "m").get("variants") or [{}])[0], timeout=10)
        v = status(g, "m")["variants"][0]
        print("serving_status_latency_ms_p50=%d" % v["latencyP50Ms"])
        print("serving_status_latency_ms_p99=%d" % v["latencyP99Ms"])
        info = haproxy_info(g)
        print("serving_log_requests=%s" % info.get("CumReq"))
        print("serving_log_dropped=%s" % info.get("DroppedLogs"))
        # a rollout under a steady load
        load = T.Load(gw_port, "/serving/bench/m/v2/models/m/infer")
        with load:
            time.sleep(1)
            for pct in (10, 50):
                put(g, "m", {"public": True, "canaryTrafficPercent": pct,
                             "variants": [variant(d, 2, replicas=2)]})
                wait_split(g, "m", [("stable", 100 - pct, 2), ("canary", pct, 2)])
                time.sleep(2)
            put(g, "m", {"public": True, "variants": [variant(d, 2, replicas=2)]})
            wait_split(g, "m", [("stable", 100, 2)])
            E.wait_for("old replicas stopped", lambda: len([
                j for j in g.request("GET", P + "/jobs")[1]["items"]]) == 2, timeout=60)
            time.sleep(1)
        print("rollout_requests=%d" % (load.ok + len(load.failures)))
        print("rollout_failed_requests=%d" % len(load.failures))
        print("rollout_rps=%.0f" % (load.ok / load.elapsed))
        print("serving_bench_client=wrk-4.1 server=serving_echo.py(python3 asyncio) "
              "gateway=haproxy-2.6")
    finally:
        a.cleanup()
        g.cleanup()
        shutil.rmtree(d, ignore_errors=True)


main()
PYEOF
