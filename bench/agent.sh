#!/bin/sh
# Node agent benchmarks on one local node: a release gantryd (default node
# grace, 40 s, above the agent's 10 s heartbeat) and one gantlet with 8 fake
# GPUs on loopback, its data root in a temporary directory and its run
# directory on tmpfs (/dev/shm, as /run is on a server), tasks running as
# uid 1001 (no image). Jobs are created over one kept-alive connection.
# Prints key=value lines:
#   task_start_ms_p50/_p99   Bound -> Running, seen by a client watch on
#                            tasks (status times have 1 s resolution), over
#                            200 jobs of 0 GPUs submitted one at a time, each
#                            once the previous one runs (100 `sleep` that keep
#                            running, then 100 `true`)
#   task_start_burst_ms_p50/_p99  the same for 100 `true` jobs submitted back
#                            to back: the node starts them all at once, so
#                            this measures its start throughput (CPU-bound)
#   gantlet_rss_kb           VmRSS of gantlet with the 100 `sleep` tasks running
#   shim_rss_kb              median VmRSS of their 100 gantry-shim processes
#                            (shim_rss_total_kb: their sum), found by the
#                            shim.pid of each state directory
#   e2e_jobs_per_s           1,000 one-GPU jobs running `true` (8 GPUs), submitted
#                            back to back: first submit to the last Job seen
#                            finished by a watch on jobs, the client's only
#                            one then (e2e_jobs_total_s); the median of three
#                            such rounds, one after the other (each in
#                            e2e_jobs_per_s_rounds): on a small VM one round
#                            varies by about 10 % with what the host does
#   host_true_per_s          /bin/true spawned and waited for one at a time,
#                            without gantry: how fast this machine execs, to
#                            read e2e_jobs_per_s against
#   submit_to_output_ms_p50/_p99  100 jobs `echo`, one at a time into the idle
#                            cluster: from the create call returning to the
#                            first line of the job's log (task watch until
#                            Running, then the log through gantryd with
#                            follow=true, which ends with the task)
# Needs root (cgroups, other uids). Takes about two and a half minutes.
set -eu
exec "$(dirname "$0")/python" "$@" <<'PYEOF'
import os
import sys
import time

import gantry_e2e as E

API = E.API
P = API + "/projects/bench"


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def job(name, command, gpus, grace_s=0):
    # 10m of CPU requested (so 100 tasks fit the node) but up to one CPU
    # allowed: a 10m limit is a 1 ms CFS quota per 100 ms period, which
    # throttles even the exec of `true` to several periods
    tmpl = {"command": command, "terminationGracePeriodSeconds": grace_s,
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"},
                          "limits": {"nvidia.com/gpu": gpus, "cpu": "1", "memory": "32Mi"}}}
    return E.obj("Job", name, "bench",
                 spec={"replicaSpecs": {"Worker": {"replicas": 1, "template": tmpl}}})


def host_true_per_s():
    """How fast this machine runs /bin/true with nothing of gantry around it
    (posix_spawn and wait, one at a time, 500 times): the yardstick for
    e2e_jobs_per_s, as a VM's speed at exec varies with its host."""
    t0 = time.monotonic()
    for _ in range(500):
        pid = os.posix_spawn("/bin/true", ["true"], {})
        os.waitpid(pid, 0)
    return 500 / (time.monotonic() - t0)


def dump_stacks(g, agent):
    """On a hung request: where gantryd and gantlet are (to stderr)."""
    import subprocess
    for name, pid in (("gantryd", g.proc.pid), ("gantlet", agent and agent.proc.pid)):
        if pid:
            r = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                               capture_output=True, text=True)
            sys.stderr.write("--- %s\n%s\n" % (name, r.stdout[-6000:]))


def first_log_line(g, task):
    """The first line of a task's log, followed through gantryd."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", g.port, timeout=30)
    conn.request("GET", P + "/tasks/%s/log?follow=true" % task,
                 headers={"Authorization": "Bearer " + E.TOKENS["alice"][0]})
    resp = conn.getresponse()
    line = resp.readline() if resp.status == 200 else resp.read()
    conn.close()
    return line


_conn = {}


def submit(g, o):
    """Create a Job over one kept-alive connection (as a client submitting
    many jobs would), reconnecting if gantryd closed it."""
    import http.client
    import json
    for attempt in (0, 1):
        c = _conn.get("c")
        if c is None:
            c = _conn["c"] = http.client.HTTPConnection("127.0.0.1", g.port, timeout=30)
        try:
            c.request("POST", P + "/jobs", body=json.dumps(o),
                      headers={"Authorization": "Bearer " + E.TOKENS["alice"][0],
                               "Content-Type": "application/json"})
            resp = c.getresponse()
            body = resp.read()
            break
        except (http.client.HTTPException, OSError):
            c.close()
            _conn.pop("c", None)
            if attempt:
                raise
    if resp.status != 201:
        raise RuntimeError("create %s: %d %s" % (o["metadata"]["name"], resp.status, body))


def main():
    g = E.Gantryd(("--log-level", "warn")).start()
    agent = None
    try:
        E.bench_tenancy(g)
        agent = E.Gantlet(g, fake_gpus="8xA100-80GB", heartbeat_s=10,
                          extra_args=("--log-level", "warn")).start()
        ph = E.Phases(g)
        print("setup=release gantryd and gantlet on loopback, 8 fake GPUs, %d CPUs, uid 1001"
              % os.cpu_count())

        # 1. task start latency (one at a time, then a burst) and RSS
        lat = []
        burst = []
        for batch, cmd in (("sleep", ["sleep", "1000"]), ("true", ["true"]),
                           ("burst", ["true"])):
            names = ["start-%s-%03d" % (batch, i) for i in range(100)]
            for n in names:
                submit(g, job(n, cmd, 0))
                if batch != "burst":
                    ph.wait(n + "-worker-0", ("Running", "Succeeded", "Failed"))
            for n in names:
                t = n + "-worker-0"
                bound = ph.wait(t, ("Bound",))
                run = ph.wait(t, ("Running", "Succeeded", "Failed"))
                (burst if batch == "burst" else lat).append((run - bound) * 1000.0)
            if batch == "sleep":
                shims = []
                for d in agent.state_dirs():
                    with open(os.path.join(d, "shim.pid")) as f:
                        pid = int(f.read())
                    exe = os.readlink("/proc/%d/exe" % pid)
                    assert "gantry-shim" in exe, (d, pid, exe)
                    shims.append(rss_kb(pid))
                assert len(shims) == len(names), len(shims)
                print("gantlet_rss_kb=%d" % rss_kb(agent.proc.pid))
                print("shim_rss_kb=%d" % E.pct(shims, 50))
                print("shim_rss_total_kb=%d" % sum(shims))
                print("shims_measured=%d" % len(shims))
                for n in names:
                    st, body = g.request("DELETE", P + "/jobs/" + n, token="alice")
                    assert st == 200, (st, body)
                for n in names:
                    ph.wait(n + "-worker-0", ("Failed", "Succeeded"))
        print("task_start_ms_p50=%.1f" % E.pct(lat, 50))
        print("task_start_ms_p99=%.1f" % E.pct(lat, 99))
        print("task_start_samples=%d" % len(lat))
        print("task_start_burst_ms_p50=%.1f" % E.pct(burst, 50))
        print("task_start_burst_ms_p99=%.1f" % E.pct(burst, 99))
        print("task_start_measured=client watch, Bound seen to Running seen")

        # 2. submit to first output line, one job at a time
        lat = []
        for i in range(100):
            n = "out-%03d" % i
            t = n + "-worker-0"
            submit(g, job(n, ["echo", "hello"], 0))
            ts = time.monotonic()
            ph.wait(t, ("Running", "Succeeded", "Failed"))
            line = first_log_line(g, t)
            lat.append((time.monotonic() - ts) * 1000.0)
            if line != b"hello\n":
                raise RuntimeError("log of %s: %r" % (t, line))
        print("submit_to_output_ms_p50=%.1f" % E.pct(lat, 50))
        print("submit_to_output_ms_p99=%.1f" % E.pct(lat, 99))
        # 3. throughput: 1,000 one-GPU jobs on 8 GPUs, three rounds (median);
        # the client keeps one watch (jobs) and decodes only the events that
        # can end a job
        ph.close()
        print("host_true_per_s=%.0f" % host_true_per_s())
        jw = E.Watch(g, API + "/jobs", keep=lambda line: b'"Succeeded"' in line or b'"Failed"' in line)
        seen = 0
        rounds = []
        for rnd in range(3):
            names = ["tp%d-%04d" % (rnd, i) for i in range(1000)]
            done = {}
            t0 = time.monotonic()
            for n in names:
                submit(g, job(n, ["true"], 1))
            deadline = time.monotonic() + 240
            while len(done) < len(names):
                evs = jw.events[seen:]
                seen += len(evs)
                for ts, _, o in evs:
                    st = (o.get("status") or {})
                    conds = [c["type"] for c in st.get("conditions", []) if c.get("status") == "True"]
                    if o["metadata"]["name"].startswith("tp%d-" % rnd) and (
                            "Succeeded" in conds or "Failed" in conds or
                            st.get("phase") in ("Succeeded", "Failed")):
                        done.setdefault(o["metadata"]["name"], ts)
                if time.monotonic() > deadline:
                    raise RuntimeError("only %d of 1000 jobs finished" % len(done))
                time.sleep(0.2)
            rounds.append(max(done.values()) - t0)
        jw.close()
        print("e2e_jobs_per_s=%.1f" % (1000 / E.pct(rounds, 50)))
        print("e2e_jobs_per_s_rounds=%s" % ",".join("%.1f" % (1000 / r) for r in rounds))
        print("e2e_jobs_total_s=%.1f" % E.pct(rounds, 50))

    except TimeoutError:
        dump_stacks(g, agent)
        raise
    finally:
        if agent:
            agent.cleanup()
        g.cleanup()


main()
PYEOF
