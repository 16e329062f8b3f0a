#!/bin/sh
# Image build benchmark on one local node: gantryd with --registry and
# --registry-key, Debian's docker-registry with token authentication on
# loopback, one gantlet; the build of tests/e2e/test_imagebuild.py (FROM a
# busybox base in the cluster registry, COPY, RUN, ENV, CMD from a git
# source) run by rootless buildah in a task as uid 1001. Prints:
#   image_build_first_s   the first build, the node's layer cache empty:
#                         buildah bud + push in the task, as the build's
#                         status.buildDurationMs reports it
#   image_build_cached_s  the same build unchanged (every layer from the
#                         cache, nothing new pushed), median of 3
#   image_build_*_wall_s  the same from create to Succeeded as a client sees
#                         it (scheduling, task start, git fetch included)
# Needs root, buildah, docker-registry, skopeo, runc, git, busybox and
# openssl; prints imagebuild_bench=skipped and why otherwise.
set -eu
exec "$(dirname "$0")/python" "$@" <<'PYEOF'
import os
import shutil
import tempfile
import time

import gantry_e2e as E
import test_imagebuild as TB

API = E.API
BUILDS = API + "/projects/bench/imagebuilds"
N_CACHED = 3


def build(g, name, git, sha):
    spec = {"source": {"git": git, "revision": sha}, "dockerfilePath": "Dockerfile",
            "image": "app:1"}
    start = time.monotonic()
    st, body = g.request("POST", BUILDS, E.obj("ImageBuild", name, "bench", spec=spec),
                         token="alice")
    if st != 201:
        raise RuntimeError("create %s: %d %s" % (name, st, body))
    deadline = start + 300
    while time.monotonic() < deadline:
        st, body = g.request("GET", BUILDS + "/" + name)
        phase = ((body or {}).get("status") or {}).get("phase")
        if phase == "Succeeded":
            return time.monotonic() - start, body["status"]["buildDurationMs"] / 1000.0
        if phase == "Failed":
            raise RuntimeError("build %s failed: %s" % (name, body["status"]))
        time.sleep(0.05)
    raise RuntimeError("build %s did not finish" % name)


def main():
    if TB.MISSING or os.geteuid() != 0:
        print("imagebuild_bench=skipped (needs root and %s)" % (", ".join(TB.MISSING) or "root"))
        return
    TB.setUpModule()
    tmp = tempfile.mkdtemp(prefix="gantry-imagebuild-bench-")
    g = agent = reg = None
    try:
        g = E.Gantryd(("--log-level", "warn", "--registry", TB.MOD["registry"],
                       "--registry-key", TB.MOD["key"])).start()
        E.bench_tenancy(g)
        reg = TB.start_registry(tmp, TB.MOD["port"], g.url + API + "/registry/token")
        agent = E.Gantlet(g, fake_gpus="1xA100-80GB", heartbeat_s=10,
                          extra_args=("--log-level", "warn")).start()
        base = TB.push_base(tmp, TB.MOD["registry"], project="bench")
        git, sha = TB.make_repo(tmp, base)
        wall, took = build(g, "first", git, sha)
        print("image_build_first_s=%.2f" % took)
        print("image_build_first_wall_s=%.2f" % wall)
        cached = [build(g, "cached-%d" % i, git, sha) for i in range(N_CACHED)]
        mid = N_CACHED // 2
        print("image_build_cached_s=%.2f" % sorted(t for _, t in cached)[mid])
        print("image_build_cached_wall_s=%.2f" % sorted(w for w, _ in cached)[mid])
    finally:
        if agent:
            agent.cleanup()
        if g:
            g.cleanup()
        if reg:
            reg.kill()
            reg.wait()
        shutil.rmtree(tmp, True)
        TB.tearDownModule()


main()
PYEOF
