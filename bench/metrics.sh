#!/bin/sh
# gantlet's /metrics on a busy node: a release gantryd and one gantlet with
# 8 fake GPUs on loopback, 100 `sleep` tasks of 75 milli-GPU each (13 per
# GPU), every GPU's counters file listing its tasks' processes (so each
# scrape matches 100 pids to tasks through /proc/PID/cgroup and reads 100
# task cgroups). Prints key=value lines:
#   metrics_scrape_ms        median of 200 GETs of gantlet's /metrics over
#                            one kept-alive connection, request sent to the
#                            whole body read (metrics_scrape_ms_p99, _max)
#   metrics_scrape_cpu_ms    gantlet's CPU time (user + system, /proc/PID/stat)
#                            per scrape over those 200, less what it spends
#                            as long again without scrapes (its task polls
#                            and GPU samples): what a scrape costs the node
#                            whatever else the machine runs
#   metrics_scrape_bytes     the size of one answer
#   metrics_scrape_series    its sample lines
#   gantryd_scrape_ms        the same for gantryd's /metrics with those 100
#                            jobs and tasks (median of 200)
# Needs root (cgroups, other uids). Takes about half a minute.
set -eu
exec "$(dirname "$0")/python" "$@" <<'PYEOF'
import http.client
import os
import shutil
import tempfile
import time

import gantry_e2e as E

API = E.API
P = API + "/projects/bench"
N_GPUS, N_TASKS, MILLI = 8, 100, 75


def job(name):
    tmpl = {"command": ["sleep", "1000"], "terminationGracePeriodSeconds": 0,
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"},
                          "limits": {"gantry.dev/gpu-milli": MILLI, "cpu": "1",
                                     "memory": "32Mi"}}}
    return E.obj("Job", name, "bench",
                 spec={"replicaSpecs": {"Worker": {"replicas": 1, "template": tmpl}}})


def scrape_ms(port, n):
    """Times of n GETs of /metrics over one connection, and the last body."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    times, body = [], b""
    for _ in range(n):
        t0 = time.perf_counter()
        c.request("GET", "/metrics")
        r = c.getresponse()
        body = r.read()
        times.append((time.perf_counter() - t0) * 1000.0)
        assert r.status == 200, r.status
    c.close()
    return times, body


def cpu_ms(pid):
    """utime + stime of pid in ms."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def main():
    g = E.Gantryd(("--log-level", "warn")).start()
    counters = tempfile.mkdtemp(prefix="gantry-bench-gpus-")
    agent = None
    try:
        for path, o in ((API + "/departments", E.obj("Department", "bench", spec={
                "quota": {"nvidia.com/gpu": N_GPUS, "cpu": "1000", "memory": "4Ti"}})),
                        (API + "/projects", E.obj("Project", "bench", spec={
                            "department": "bench",
                            "members": [{"user": "alice", "role": "admin"}]}))):
            st, body = g.request("POST", path, o)
            assert st == 201, (st, body)
        agent = E.Gantlet(g, fake_gpus="%dxA100-80GB" % N_GPUS, heartbeat_s=10,
                          extra_args=("--log-level", "warn", "--fake-gpu-counters",
                                      counters)).start()
        names = ["m%03d" % i for i in range(N_TASKS)]
        for n in names:
            st, body = g.request("POST", P + "/jobs", job(n), token="alice")
            assert st == 201, (st, body)
        procs = {i: [] for i in range(N_GPUS)}
        for n in names:
            t = E.wait_for(n + " running", lambda: (lambda b: b if b.get("status", {}).get(
                "hostPid") else None)(g.request("GET", P + "/tasks/%s-worker-0" % n)[1]),
                timeout=120)
            procs[t["spec"]["gpus"][0]["index"]].append(t["status"]["hostPid"])
        for i, pids in procs.items():
            with open(os.path.join(counters, str(i)), "w") as f:
                f.write("util 60\nmem_copy_util 20\nfb_used_mib 30000\npower_w 300\n"
                        "temp_c 65\nsm_clock_mhz 1410\n")
                f.writelines("process %d 2000\n" % p for p in pids)
        time.sleep(1.5)  # a sample has read them
        scrape_ms(agent.port, 20)  # warm up
        c0, w0 = cpu_ms(agent.proc.pid), time.monotonic()
        times, body = scrape_ms(agent.port, 200)
        c1, w1 = cpu_ms(agent.proc.pid), time.monotonic()
        time.sleep(w1 - w0)
        idle = cpu_ms(agent.proc.pid) - c1
        cpu = max(0.0, c1 - c0 - idle) / 200
        text = body.decode()
        series = [l for l in text.splitlines() if l and not l.startswith("#")]
        mem = [l for l in series if l.startswith("gantry_gpu_process_memory_bytes{")
               and 'task="m' in l]
        assert len(mem) == N_TASKS, len(mem)
        print("setup=release gantryd and gantlet on loopback, %d fake GPUs, %d tasks of %d "
              "milli-GPU, %d CPUs" % (N_GPUS, N_TASKS, MILLI, os.cpu_count()))
        print("metrics_scrape_ms=%.2f" % E.pct(times, 50))
        print("metrics_scrape_ms_p99=%.2f" % E.pct(times, 99))
        print("metrics_scrape_ms_max=%.2f" % max(times))
        print("metrics_scrape_cpu_ms=%.2f" % cpu)
        print("metrics_scrape_bytes=%d" % len(body))
        print("metrics_scrape_series=%d" % len(series))
        times, _ = scrape_ms(g.port, 200)
        print("gantryd_scrape_ms=%.2f" % E.pct(times, 50))
    finally:
        if agent:
            agent.cleanup()
        g.cleanup()
        shutil.rmtree(counters, ignore_errors=True)


main()
PYEOF
