#!/bin/sh
# Container image benchmarks on one local node: gantryd and one gantlet with
# 2 fake GPUs on loopback, Debian's docker-registry on loopback holding a
# busybox-static image built with umoci (as tests/e2e/test_images.py does),
# tasks running as uid 1001 through runc. Prints key=value lines:
#   image_pull_ms            the first pull of the test image: skopeo copy +
#                            umoci unpack, as the task's Pulled event reports it
#   image_task_start_ms_p50  (and _p99) Bound -> Running of a task of the
#                            cached image (reference resolved with the
#                            registry, overlay mounted, runc run), seen by a
#                            client watch, over 20 tasks one at a time
# Needs root, runc, skopeo, umoci, docker-registry and busybox; prints
# image_bench=skipped and why otherwise. Takes about half a minute.
set -eu
exec "$(dirname "$0")/python" "$@" <<'PYEOF'
import os
import re
import shutil
import tempfile
import time

import gantry_e2e as E
import test_images as TI

API = E.API
P = API + "/projects/bench"
N_TASKS = 20


def job(name, ref):
    tmpl = {"image": ref, "command": ["sleep", "1000"], "terminationGracePeriodSeconds": 0,
            "resources": {"limits": {"nvidia.com/gpu": 0, "cpu": "1", "memory": "32Mi"}}}
    return E.obj("Job", name, "bench",
                 spec={"replicaSpecs": {"Worker": {"replicas": 1, "template": tmpl}}})


def submit(g, o):
    st, body = g.request("POST", P + "/jobs", o, token="alice")
    if st != 201:
        raise RuntimeError("create %s: %d %s" % (o["metadata"]["name"], st, body))


def pulled_ms(g, task):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        st, body = g.request("GET", API + "/events?fieldSelector=involvedObject.name=" + task)
        for e in body.get("items", []) if st == 200 else []:
            m = re.search(r"in ([0-9.]+) s$", e.get("message", ""))
            if e.get("reason") == "Pulled" and m:
                return float(m.group(1)) * 1000.0
        time.sleep(0.05)
    raise RuntimeError("no Pulled event for " + task)


def delete_and_wait(g, name):
    g.request("DELETE", P + "/jobs/" + name)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        st, _ = g.request("GET", P + "/tasks/%s-worker-0" % name)
        if st == 404:
            return
        time.sleep(0.05)
    raise RuntimeError("task of %s not gone" % name)


def main():
    if TI.MISSING or os.geteuid() != 0:
        print("image_bench=skipped (needs root and %s)" % (", ".join(TI.MISSING) or "root"))
        return
    tmp = tempfile.mkdtemp(prefix="gantry-image-bench-")
    reg, port = TI.start_registry(tmp)
    g = agent = None
    try:
        TI.build_image(tmp, port)
        ref = "127.0.0.1:%d/tools/busybox:1.0" % port
        g = E.Gantryd(("--log-level", "warn")).start()
        E.bench_tenancy(g)
        agent = E.Gantlet(g, fake_gpus="2xA100-80GB", heartbeat_s=10, extra_args=(
            "--log-level", "warn", "--insecure-registry", "127.0.0.1:%d" % port)).start()
        ph = E.Phases(g)
        submit(g, job("pull", ref))
        ph.wait("pull-worker-0", ("Running",))
        print("image_pull_ms=%.0f" % pulled_ms(g, "pull-worker-0"))
        delete_and_wait(g, "pull")
        lat = []
        for i in range(N_TASKS):
            name = "start-%02d" % i
            submit(g, job(name, ref))
            t = name + "-worker-0"
            bound = ph.wait(t, ("Bound",))
            run = ph.wait(t, ("Running", "Failed"))
            lat.append((run - bound) * 1000.0)
            delete_and_wait(g, name)
        print("image_task_start_ms_p50=%.0f" % E.pct(lat, 50))
        print("image_task_start_ms_p99=%.0f" % E.pct(lat, 99))
    finally:
        if agent:
            agent.cleanup()
        if g:
            g.cleanup()
        reg.kill()
        reg.wait()
        shutil.rmtree(tmp, True)


main()
PYEOF
