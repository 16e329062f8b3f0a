#!/bin/sh
# Cluster scale (kubemark-style density run): a release gantryd on a disk
# data directory, one `gantlet --hollow` process playing SCALE_NODES nodes of
# 8 fake GPUs each (heartbeat 10 s), and SCALE_CLIENTS load clients (one
# process each, one kept-alive connection each, loopback only) creating
# SCALE_JOBS one-task, one-GPU jobs running `true` and SCALE_GANGS 8-task
# gangs of 8 GPUs a task (minAvailable 8), the gangs spread evenly among the
# jobs. Two watch clients (all Tasks, all Jobs) time the run; the hollow
# process has a third watch on all Tasks. Defaults: 5,000 nodes, 100,000
# jobs, 2,000 gangs, 8 clients; everything ends after SCALE_TIMEOUT_S
# (default 900) whatever is left. gantryd runs with its defaults: the
# terminated-task collector keeps the ended Tasks of finished jobs to
# 12,500 (--terminated-task-gc-threshold), so the run ends with every Job
# and about that many finished Tasks, as a Kubernetes cluster with its
# PodGC would. Prints key=value lines:
#   scale_ran                 what ran (nodes, jobs, gangs, clients, CPUs)
#   scale_load_avg            the 1-minute load average before and after
#   scale_register_s          hollow start to every node Ready
#   scale_jobs_per_s          jobs created -> terminal, whole run (first
#                             create sent to the last job seen terminal)
#   scale_jobs_done           jobs seen terminal (of the jobs + gangs made)
#   scale_jobs_failed         of them Failed
#   scale_create_per_s        create calls answered per second (all clients)
#   scale_bind_p50_ms/_p99_ms task created (its job's create sent) -> the
#                             task watch sees it bound (spec.nodeName)
#   scale_api_p99_ms          every API call the run made (clients, watches'
#                             starts, the hollow nodes' status writes and
#                             heartbeats): gantryd's request latency
#                             histogram over the run, interpolated within
#                             its bucket as Prometheus' histogram_quantile
#   scale_create_p50_ms/_p99_ms  the clients' own create latency (their clock)
#   scale_store_commit_p50_ms/_p99_ms  store write submitted -> durable
#   gantryd_rss_mb            gantryd's peak RSS (VmHWM)
#   gantryd_cpu_s             gantryd's CPU time during the run
#   scale_clients_cpu_s       the load clients' CPU time, all of them
#   scale_watchers_cpu_s      the two timing watchers' CPU time
#   hollow_cpu_s              the hollow process's CPU time during the run
#   hollow_kb_per_node        the hollow process's peak RSS / nodes
#   hollow_idle_kb_per_node   its RSS once all nodes are Ready, before jobs
#   scale_watch_events_per_s  events one all-Tasks watcher received per
#                             second of the run (x3 watchers of Tasks and
#                             Jobs: the fan-out), scale_watch_mb_per_s its bytes
#   scale_watch_streams_ended  timing watches gantryd ended before the run
#                             did (a client too slow: the times are short)
#   scale_store_writes_per_job  store writes (revisions) per job lifecycle
set -eu
exec "$(dirname "$0")/python" "$@" <<'PYEOF'
import http.client
import json
import multiprocessing as mp
import os
import resource
import subprocess
import time

import gantry_e2e as E

API = E.API
P = API + "/projects/scale"
NODES = int(os.environ.get("SCALE_NODES", "5000"))
JOBS = int(os.environ.get("SCALE_JOBS", "100000"))
GANGS = int(os.environ.get("SCALE_GANGS", "2000"))
CLIENTS = int(os.environ.get("SCALE_CLIENTS", "8"))
TIMEOUT_S = float(os.environ.get("SCALE_TIMEOUT_S", "900"))
GANG_SIZE = 8


def proc_status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_s():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def job_obj(name, gpus, replicas):
    tmpl = {"command": ["true"], "terminationGracePeriodSeconds": 0,
            "resources": {"requests": {"cpu": "1m", "memory": "1Mi"},
                          "limits": {"nvidia.com/gpu": gpus, "cpu": "1", "memory": "32Mi"}}}
    spec = {"replicaSpecs": {"Worker": {"replicas": replicas, "template": tmpl}}}
    if replicas > 1:
        spec["runPolicy"] = {"schedulingPolicy": {"minAvailable": replicas}}
    return E.obj("Job", name, "scale", spec=spec)


def plan():
    """Every job to create, in order: (name, gpus, replicas); gangs spread evenly."""
    out = []
    every = (JOBS // GANGS) if GANGS else 0
    g = 0
    for i in range(JOBS):
        out.append(("j%06d" % i, 1, 1))
        if every and (i + 1) % every == 0 and g < GANGS:
            out.append(("g%05d" % g, 8, GANG_SIZE))
            g += 1
    out += [("g%05d" % k, 8, GANG_SIZE) for k in range(g, GANGS)]
    return out


def client(port, items, deadline, out_q):
    """Create items over one kept-alive connection until deadline; report
    (name, sent, latency) of each."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    hdrs = {"Authorization": "Bearer " + E.TOKENS["alice"][0],
            "Content-Type": "application/json"}
    res = []
    errors = 0
    for name, gpus, replicas in items:
        if time.monotonic() > deadline:
            break
        body = json.dumps(job_obj(name, gpus, replicas))
        for attempt in range(5):
            t0 = time.monotonic()
            try:
                conn.request("POST", P + "/jobs", body=body, headers=hdrs)
                resp = conn.getresponse()
                resp.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                errors += 1
                continue
            if resp.status == 201:
                res.append((name, t0, time.monotonic() - t0))
                break
            errors += 1
            time.sleep(0.05 * (attempt + 1))
    out_q.put((res, errors, own_cpu_s()))


def watcher(port, path, keep, want, deadline, out_q, stop):
    """One watch stream: the first monotonic time each object name shows
    keep(line, obj) true; ends with want names or at deadline (or stop).
    A thread reads the stream with blocking reads: a read timeout would
    leave the socket unreadable for good (CPython's SocketIO refuses to
    read after one), and the loop would then spin until the deadline."""
    import threading
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.request("GET", path + "?watch=true",
                 headers={"Authorization": "Bearer " + E.TOKENS["admin"][0]})
    resp = conn.getresponse()
    assert resp.status == 200, resp.status
    seen = {}
    st = {"events": 0, "nbytes": 0, "t_first": None, "ended": False}
    done = threading.Event()

    def read():
        try:
            while len(seen) < want:
                line = resp.readline()
                if not line:
                    st["ended"] = True  # gantryd ended the stream
                    break
                st["events"] += 1
                st["nbytes"] += len(line)
                if st["t_first"] is None:
                    st["t_first"] = time.monotonic()
                r = keep(line)
                if r:
                    seen.setdefault(r, time.monotonic())
        except (OSError, http.client.HTTPException):
            st["ended"] = True
        done.set()
    threading.Thread(target=read, daemon=True).start()
    while not done.wait(0.2):
        if time.monotonic() >= deadline or stop.is_set():
            break
    out_q.put((seen.copy(), st["events"], st["nbytes"], st["t_first"], time.monotonic(),
               own_cpu_s(), st["ended"]))


def bound_keep(line):
    if b'"nodeName"' not in line:
        return None
    o = json.loads(line)["object"]
    return o["metadata"]["name"] if o["spec"].get("nodeName") else None


def job_end_keep(line):
    if b'"Succeeded"' not in line and b'"Failed"' not in line:
        return None
    o = json.loads(line)["object"]
    for c in (o.get("status") or {}).get("conditions", []):
        if c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True":
            return (o["metadata"]["name"], c["type"])
    return None


def histogram(g, name):
    st, text = g.request("GET", "/metrics", raw=True)
    assert st == 200, st
    buckets = []
    for line in text.splitlines():
        if line.startswith(name + "_bucket{"):
            le = line.split('le="', 1)[1].split('"', 1)[0]
            buckets.append((float("inf") if le == "+Inf" else float(le), float(line.split()[-1])))
    return buckets


def quantile(before, after, q):
    """histogram_quantile over the difference of two cumulative bucket lists."""
    b = [(le, a - c) for (le, a), (_, c) in zip(after, before)]
    total = b[-1][1] if b else 0
    if not total:
        return 0.0
    rank = q * total
    prev_le, prev_n = 0.0, 0.0
    for le, n in b:
        if n >= rank:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * (rank - prev_n) / max(n - prev_n, 1e-9)
        prev_le, prev_n = le, n
    return prev_le


def revision(g):
    st, body = g.request("GET", API + "/nodes?limit=1")
    return int(body["metadata"]["resourceVersion"])


def main():
    items = plan()
    n_jobs = len(items)
    n_tasks = sum(r for _, _, r in items)
    data = os.path.join(os.environ["GANTRY_BUILD_DIR"], "bench-scale-data")
    subprocess.run(["rm", "-rf", data], check=True)
    g = E.Gantryd(("--log-level", "warn"), data_dir=data).start()
    hollow = None
    load0 = os.getloadavg()[0]
    try:
        for path, o in ((API + "/departments", E.obj("Department", "scale", spec={
                "quota": {"nvidia.com/gpu": NODES * 8, "cpu": "100000", "memory": "1000Ti"}})),
                        (API + "/projects", E.obj("Project", "scale", spec={
                            "department": "scale",
                            "members": [{"user": "alice", "role": "admin"}]}))):
            st, body = g.request("POST", path, o)
            assert st == 201, (st, body)
        print("scale_ran=nodes=%d gpus_per_node=8 jobs=%d gangs=%dx%d clients=%d cpus=%d" % (
            NODES, JOBS, GANGS, GANG_SIZE, CLIENTS, os.cpu_count()))
        token_file = os.path.join(g.tmp, "node-token")
        with open(token_file, "w") as f:
            f.write(E.TOKENS["node"][0] + "\n")
        hlog = open(os.path.join(g.tmp, "hollow.log"), "ab")
        t0 = time.monotonic()
        hollow = subprocess.Popen([E.GANTLET, "--server", g.url, "--token-file", token_file,
                                   "--name", "h", "--hollow", str(NODES), "--fake-gpus",
                                   "8xA100-80GB", "--heartbeat", "10", "--log-level", "warn"],
                                  stdout=hlog, stderr=hlog)

        def ready():
            if hollow.poll() is not None:
                raise RuntimeError("gantlet --hollow exited %d" % hollow.returncode)
            st, body = g.request("GET", API + "/nodes", timeout=120)
            return sum(1 for n in body["items"]
                       if any(c.get("type") == "Ready" and c.get("status") == "True"
                              for c in n.get("status", {}).get("conditions", []))) == NODES
        E.wait_for("%d hollow nodes Ready" % NODES, ready, timeout=300, interval=1)
        print("scale_register_s=%.1f" % (time.monotonic() - t0))
        time.sleep(1)
        hollow_idle_kb = proc_status(hollow.pid, "VmRSS")

        deadline = time.monotonic() + TIMEOUT_S
        stop = mp.Event()
        tq, jq, cq = mp.Queue(), mp.Queue(), mp.Queue()
        tw = mp.Process(target=watcher, args=(g.port, API + "/tasks", bound_keep, n_tasks,
                                              deadline, tq, stop))
        jw = mp.Process(target=watcher, args=(g.port, API + "/jobs", job_end_keep, n_jobs,
                                              deadline, jq, stop))
        tw.start()
        jw.start()
        time.sleep(0.5)
        hist0 = histogram(g, "gantry_http_request_duration_seconds")
        commit0 = histogram(g, "gantry_store_commit_duration_seconds")
        rev0 = revision(g)
        cpu0 = cpu_s(g.proc.pid)
        hcpu0 = cpu_s(hollow.pid)
        clients = [mp.Process(target=client, args=(g.port, items[i::CLIENTS], deadline, cq))
                   for i in range(CLIENTS)]
        t_start = time.monotonic()
        for c in clients:
            c.start()
        created = {}
        errors = 0
        lat = []
        clients_cpu = 0.0
        for _ in clients:
            res, err, ccpu = cq.get()
            errors += err
            clients_cpu += ccpu
            for name, sent, dt in res:
                created[name] = sent
                lat.append(dt)
        t_created = time.monotonic()
        for c in clients:
            c.join()
        jseen, jevents, _, _, _, jcpu, jended = jq.get()
        jw.join()
        stop.set()
        tseen, tevents, tbytes, tfirst, tlast, tcpu, tended = tq.get()
        tw.join()
        hist1 = histogram(g, "gantry_http_request_duration_seconds")
        commit1 = histogram(g, "gantry_store_commit_duration_seconds")
        rev1 = revision(g)
        cpu1 = cpu_s(g.proc.pid)
        hcpu1 = cpu_s(hollow.pid)

        ends = sorted(jseen.values())
        failed = sum(1 for (_, kind) in jseen if kind == "Failed")
        t_first = min(created.values()) if created else t_start
        run_s = (ends[-1] - t_first) if ends else float("nan")
        binds = [(ts - created[name.rsplit("-worker-", 1)[0]]) * 1000.0
                 for name, ts in tseen.items() if name.rsplit("-worker-", 1)[0] in created]
        print("scale_jobs_per_s=%.0f" % (len(ends) / run_s if ends else 0))
        print("scale_jobs_done=%d of %d" % (len(ends), n_jobs))
        print("scale_jobs_failed=%d" % failed)
        print("scale_run_s=%.1f" % run_s)
        print("scale_create_per_s=%.0f" % (len(created) / (t_created - t_start)))
        print("scale_create_errors=%d" % errors)
        if binds:
            print("scale_bind_p50_ms=%.0f" % E.pct(binds, 50))
            print("scale_bind_p99_ms=%.0f" % E.pct(binds, 99))
        print("scale_tasks_bound=%d of %d" % (len(binds), n_tasks))
        print("scale_api_p99_ms=%.1f" % (quantile(hist0, hist1, 0.99) * 1000))
        print("scale_api_calls=%d" % (hist1[-1][1] - hist0[-1][1]))
        print("scale_api_p50_ms=%.1f" % (quantile(hist0, hist1, 0.5) * 1000))
        print("scale_store_commit_p50_ms=%.1f" % (quantile(commit0, commit1, 0.5) * 1000))
        print("scale_store_commit_p99_ms=%.1f" % (quantile(commit0, commit1, 0.99) * 1000))
        if lat:
            print("scale_create_p50_ms=%.1f" % E.pct([x * 1000 for x in lat], 50))
            print("scale_create_p99_ms=%.1f" % E.pct([x * 1000 for x in lat], 99))
        print("gantryd_rss_mb=%.0f" % (proc_status(g.proc.pid, "VmHWM") / 1024.0))
        print("gantryd_cpu_s=%.1f" % (cpu1 - cpu0))
        print("scale_clients_cpu_s=%.1f" % clients_cpu)
        print("scale_watchers_cpu_s=%.1f" % (jcpu + tcpu))
        print("hollow_cpu_s=%.1f" % (hcpu1 - hcpu0))
        print("hollow_kb_per_node=%.1f" % (proc_status(hollow.pid, "VmHWM") / float(NODES)))
        print("hollow_idle_kb_per_node=%.1f" % (hollow_idle_kb / float(NODES)))
        span = (tlast - tfirst) if tfirst else 0
        if span > 0:
            print("scale_watch_events_per_s=%.0f" % (tevents / span))
            print("scale_watch_mb_per_s=%.1f" % (tbytes / span / 1e6))
        print("scale_watch_events_total=%d tasks + %d jobs" % (tevents, jevents))
        print("scale_watch_streams_ended=%d" % (tended + jended))
        print("scale_store_writes_per_job=%.1f" % ((rev1 - rev0) / float(max(len(ends), 1))))
        print("scale_load_avg=%.1f,%.1f" % (load0, os.getloadavg()[0]))
    finally:
        if hollow:
            hollow.terminate()
            hollow.wait(timeout=30)
        g.cleanup()
        subprocess.run(["rm", "-rf", data])


main()
PYEOF
