#!/bin/sh
# gantryd's cost of keeping the utilisation history (telemetry.c) of 1,000
# running tasks: a release gantryd with one node (registered and kept Ready
# by this script, as gantlet would) holding 1,000 bound one-task jobs (no
# GPUs, so no GPU count limits them). Then, for MEASURE_S seconds each, its
# cpu time (utime + stime from /proc/PID/stat) is read twice: with the
# node's heartbeats only, and with, once a second as gantlet sends it, one
# telemetry report of all 1,000 tasks (cpu, memory, GPU utilisation and
# memory; no scalars). Prints key=value lines:
#   history_cpu_ms_per_s     gantryd's extra cpu per second of wall time for
#                            the reports and the once-a-second history fold
#                            (ms of cpu per s; 10 = 1 % of a core)
#   history_report_ms_p50/_max  the time to answer one report of 1,000 tasks
#   history_baseline_cpu_ms_per_s  gantryd's cpu per second without reports
set -eu
exec "$(dirname "$0")/python" "$@" <<'PYEOF'
import os
import threading
import time

from gantry_e2e import API, Gantryd, obj, pct

N_TASKS = 1000
MEASURE_S = 15


def cpu_ms(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def node_status():
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    res = {"cpu": "2000", "memory": "4Ti", "nvidia.com/gpu": 0}
    return {"capacity": res, "allocatable": res, "gpus": [],
            "addresses": [{"type": "AgentURL", "address": "http://127.0.0.1:1"}],
            "conditions": [{"type": "Ready", "status": "True", "reason": "AgentReady",
                            "lastHeartbeatTime": now}]}


g = Gantryd().start()
stop = threading.Event()
try:
    def ok(st, body, want=(200, 201)):
        assert st in want, (st, body)
    ok(*g.request("POST", API + "/departments", obj("Department", "d", spec={
        "quota": {"cpu": "2000", "memory": "4Ti"}})))
    ok(*g.request("POST", API + "/projects", obj("Project", "bench", spec={
        "department": "d", "members": [{"user": "alice", "role": "member"}]})))
    ok(*g.request("POST", API + "/nodes", obj("Node", "n1"), token="node"))
    ok(*g.request("PUT", API + "/nodes/n1/status", node_status(), token="node"))

    def heartbeats():
        while not stop.wait(2.0):
            g.request("PUT", API + "/nodes/n1/status", node_status(), token="node")
    threading.Thread(target=heartbeats, daemon=True).start()

    tmpl = {"command": ["sleep", "1000"],
            "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}
    for i in range(N_TASKS):
        ok(*g.request("POST", API + "/projects/bench/jobs", obj("Job", "h%04d" % i, "bench", spec={
            "replicaSpecs": {"Worker": {"replicas": 1, "template": tmpl}}}), token="alice"))
    deadline = time.time() + 120
    tasks = []
    while time.time() < deadline:
        st, body = g.request("GET", API + "/tasks?fieldSelector=spec.nodeName=n1", token="node")
        tasks = body.get("items", []) if st == 200 else []
        if len(tasks) == N_TASKS:
            break
        time.sleep(0.5)
    assert len(tasks) == N_TASKS, "only %d of %d tasks bound" % (len(tasks), N_TASKS)
    entries = [{"uid": t["metadata"]["uid"], "project": "bench", "name": t["metadata"]["name"]}
               for t in tasks]

    def measure(report):
        lat = []
        start_cpu, start = cpu_ms(g.proc.pid), time.time()
        k = 0
        while time.time() - start < MEASURE_S:
            k += 1
            if report:
                body = {"tasks": [dict(e, cpuMilli=250 + i % 500, memoryBytes=(1 << 28) + i,
                                       gpuUtil=(i + k) % 100, gpuMemoryBytes=1 << 30)
                                  for i, e in enumerate(entries)]}
                t0 = time.time()
                st, ans = g.request("POST", API + "/nodes/n1/telemetry", body, token="node")
                lat.append((time.time() - t0) * 1000)
                assert st == 200 and ans["stale"] == 0, (st, ans)
            time.sleep(max(0.0, start + k - time.time()))
        return (cpu_ms(g.proc.pid) - start_cpu) / (time.time() - start), lat

    base, _ = measure(False)
    with_reports, lat = measure(True)
    st, h = g.request("GET", API + "/projects/bench/jobs/h0000/history")
    assert st == 200 and h.get("current"), (st, h)
    print("history_cpu_ms_per_s=%.1f tasks=%d seconds=%d" % (with_reports - base, N_TASKS,
                                                             MEASURE_S))
    print("history_report_ms_p50=%.1f history_report_ms_max=%.1f" % (pct(lat, 50), max(lat)))
    print("history_baseline_cpu_ms_per_s=%.1f" % base)
finally:
    stop.set()
    g.cleanup()
PYEOF
