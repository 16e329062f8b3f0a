#!/usr/bin/env python3
"""The web dashboard in a real browser: web/tests/dashboard.test.mjs
(Playwright driving Debian's chromium, axe-core on every page) against a
real gantryd serving the built dashboard and two real gantlets with fake
GPUs and the serving gateway, plus a second gantryd holding 10,000 jobs
for paging.

This script starts and seeds the processes with the end-to-end harness
(tests/e2e/gantry_e2e.py), writes what the browser suite needs (addresses,
tokens, a file:// git repository, the storage root, the image gantryd
offers, the example whose event-file writer a job uses) as JSON, runs it with node, and cleans up. Exit 77 (CTest's skip) only when node or chromium is
absent; the screenshots go to GANTRY_UI_SHOTS (default BUILD/ui-shots).
"""
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import browserflow  # noqa: E402
from gantry_e2e import (API, BUILD, SOURCE, TOKENS, Gantlet, Gantryd, free_port, job,  # noqa: E402
                        seed_tenancy)

N_BULK = 10000
IMAGE = "pytorch/pytorch:2.3.1-cuda12.1-cudnn8-runtime"  # offered by gantryd --image


def seed(g):
    """The e2e harness's departments (with cpu and memory quotas) and
    projects (with a hard cap), a priority class, and one job of dave's."""
    seed_tenancy(g, quotas={
        d: ({"nvidia.com/gpu": gpus, "cpu": "16", "memory": "64Gi"},
            {"nvidia.com/gpu": gpus + 2, "cpu": "32", "memory": "128Gi"})
        for d, gpus in (("dept-a", 4), ("dept-b", 2))}, project_spec={"hard": {"nvidia.com/gpu": 8}})
    st, body = g.request("POST", API + "/priorityclasses", {
        "apiVersion": "gantry.dev/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
        "value": 1000})
    assert st == 201, (st, body)
    st, body = g.request("POST", API + "/projects/proj-b/jobs", job("dave-job", "proj-b", gpus=0))
    assert st == 201, (st, body)


def make_repo(root):
    """A git repository whose train.sh prints epochs; its file:// URL."""
    repo = os.path.join(root, "repo")
    os.makedirs(repo)
    with open(os.path.join(repo, "train.sh"), "w") as f:
        f.write("for e in 1 2 3 4 5; do echo \"epoch $e loss 0.$((10 - e))\"; sleep 0.4; done\n"
                "echo training done\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    for argv in (["git", "init", "-q", "."], ["git", "add", "."],
                 ["git", "commit", "-q", "-m", "train"]):
        subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)
    subprocess.run(["chmod", "-R", "a+rX", repo], check=True)
    return "file://" + repo


def bulk_jobs(g, n, project="proj-b"):
    """Create n jobs quickly (32 connections)."""
    errors = []

    def worker(k, step):
        c = http.client.HTTPConnection(g.host, g.port, timeout=60)
        hdrs = {"Authorization": "Bearer " + TOKENS["admin"][0],
                "Content-Type": "application/json"}
        for i in range(k, n, step):
            c.request("POST", "%s/projects/%s/jobs" % (API, project),
                      body=json.dumps(job("bulk-%05d" % i, project, gpus=0)), headers=hdrs)
            r = c.getresponse()
            r.read()
            if r.status != 201:
                errors.append(r.status)
        c.close()

    ts = [threading.Thread(target=worker, args=(k, 32)) for k in range(32)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[:5]


def main():
    node = browserflow.tools()
    if isinstance(node, int):
        return node
    ui_dir = os.path.abspath(os.path.join(BUILD, "web"))
    tmp = tempfile.mkdtemp(prefix="gantry-ui-")
    os.chmod(tmp, 0o755)
    storage = os.path.join(tmp, "storage")
    os.makedirs(os.path.join(storage, "data"))
    os.chmod(storage, 0o755)
    model_file = os.path.join(storage, "data", "model.pt")
    with open(model_file, "wb") as f:
        f.write(b"a model's bytes\n")
    # the inference services' replica server, where the tasks' uid can read it
    echo = os.path.join(tmp, "serving_echo.py")
    shutil.copy(os.path.join(SOURCE, "tests", "e2e", "serving_echo.py"), echo)
    os.chmod(echo, 0o644)
    gw_port = free_port()
    procs = []
    try:
        g = Gantryd(["--ui-dir", ui_dir, "--storage-root", storage,
                     "--storage-class", "ui=" + os.path.join(storage, "volumes"),
                     "--model-store", os.path.join(storage, "models"),
                     "--image", "pytorch=" + IMAGE,
                     "--gateway-listen", "127.0.0.1:%d" % gw_port]).start()
        procs.append(g)
        seed(g)
        for name, gpus in (("n1", "4xA100-80GB:groups=2+2"), ("n2", "2xH100-80GB")):
            a = Gantlet(g, name=name, fake_gpus=gpus,
                        extra_args=["--storage-root", storage])
            procs.append(a)
            a.start()
        big = Gantryd(["--ui-dir", ui_dir]).start()
        procs.append(big)
        seed(big)
        t0 = time.time()
        bulk_jobs(big, N_BULK)
        print("created %d jobs in %.1f s" % (N_BULK, time.time() - t0), flush=True)
        return browserflow.run(node, "dashboard.test.mjs", tmp, {
            "url": g.url, "bulkUrl": big.url, "bulkJobs": N_BULK + 1,
            "tokens": {k: v[0] for k, v in TOKENS.items()},
            "uids": {k: v[2] for k, v in TOKENS.items()},
            "repo": make_repo(tmp), "storage": storage, "image": IMAGE, "modelFile": model_file,
            "example": os.path.join(SOURCE, "examples", "pytorch-digits"),
            "gatewayUrl": "http://127.0.0.1:%d" % gw_port, "echoServer": echo},
            timeout=420, daemons=[("gantryd", g)])
    finally:
        browserflow.cleanup(procs, tmp)


if __name__ == "__main__":
    sys.exit(main())
