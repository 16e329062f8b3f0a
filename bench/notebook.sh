#!/bin/sh
# Notebook benchmarks on one local node: a release gantryd and one gantlet
# with 8 fake GPUs on loopback, notebooks of one GPU running Debian's
# Jupyter as uid 1001 with a home volume beneath a storage root (100m CPU
# requested, so that five fit a small node).
# Prints key=value lines:
#   notebook_start_ms        create (POST returning) -> Jupyter answering
#                            GET api/status through gantryd's proxy, polled
#                            every 20 ms; the median of 5 notebooks, started
#                            one after the other (notebook_start_ms_all: each)
#   notebook_proxy_added_ms_p50/_p99  what the proxy adds to a request: 300
#                            GETs of api/status through gantryd against 300
#                            straight to Jupyter (its node port, its token as
#                            the node's agent gets it),
#                            interleaved, a new connection each (the proxy
#                            carries one request per connection), same run;
#                            the difference of the two p50s and p99s
#                            (notebook_direct_ms_p50/_p99 and
#                            notebook_proxied_ms_p50/_p99: the parts)
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
UID = E.TOKENS["alice"][2]


def get(host, port, path, auth):
    c = http.client.HTTPConnection(host, port, timeout=30)
    c.request("GET", path, headers={"Authorization": auth})
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def main():
    storage = tempfile.mkdtemp(prefix="gantry-bench-nb-")
    os.chmod(storage, 0o711)
    g = E.Gantryd(["--storage-root", storage]).start()
    a = E.Gantlet(g, fake_gpus="8xA100-80GB", extra_args=["--storage-root", storage])
    try:
        a.start()
        st, body = g.request("POST", API + "/departments", E.obj(
            "Department", "bench", spec={"quota": {"nvidia.com/gpu": 8, "cpu": "64", "memory": "256Gi"}}))
        assert st == 201, body
        st, body = g.request("POST", API + "/projects", E.obj(
            "Project", "bench", spec={"department": "bench",
                                      "members": [{"user": "alice", "role": "admin"}]}))
        assert st == 201, body
        bearer = "Bearer " + E.TOKENS["alice"][0]
        starts = []
        for i in range(5):
            home = os.path.join(storage, "home-%d" % i)
            os.makedirs(home)
            os.chown(home, UID, UID)
            name = "nb-%d" % i
            nb = E.obj("Notebook", name, "bench", spec={
                "template": {"resources": {
                    "requests": {"cpu": "100m", "memory": "256Mi"},
                    "limits": {"nvidia.com/gpu": 1, "cpu": "1", "memory": "1Gi"}}},
                "home": {"hostPath": home}})
            t0 = time.monotonic()
            st, body = g.request("POST", P + "/notebooks", nb, token="alice")
            assert st == 201, body
            path = "/projects/bench/notebooks/%s/api/status" % name
            while get(g.host, g.port, path, bearer) != 200:
                time.sleep(0.02)
                assert time.monotonic() - t0 < 60, "notebook %s did not answer" % name
            starts.append((time.monotonic() - t0) * 1000)
        starts_sorted = sorted(starts)
        print("notebook_start_ms=%.0f" % starts_sorted[len(starts) // 2])
        print("notebook_start_ms_all=%s" % ",".join("%.0f" % s for s in starts))
        # the last notebook, straight and through the proxy
        name = "nb-4"
        task = g.request("GET", P + "/tasks/nb-%s-worker-0" % name)[1]
        port = [p["port"] for p in task["spec"]["ports"] if p["name"] == "http"][0]
        # the token is in no object: the node's agent's view of it
        secrets = g.request("GET", P + "/tasks/nb-%s-worker-0/secrets" % name, token="node")[1]
        token = [e["value"] for e in secrets["env"] if e["name"] == "JUPYTER_TOKEN"][0]
        path = "/projects/bench/notebooks/%s/api/status" % name
        direct, proxied = [], []
        for _ in range(300):
            t = time.monotonic()
            assert get("127.0.0.1", port, path, "token " + token) == 200
            direct.append((time.monotonic() - t) * 1000)
            t = time.monotonic()
            assert get(g.host, g.port, path, bearer) == 200
            proxied.append((time.monotonic() - t) * 1000)
        for q, label in ((50, "p50"), (99, "p99")):
            d, p = E.pct(direct, q), E.pct(proxied, q)
            print("notebook_direct_ms_%s=%.2f" % (label, d))
            print("notebook_proxied_ms_%s=%.2f" % (label, p))
            print("notebook_proxy_added_ms_%s=%.2f" % (label, p - d))
    finally:
        a.cleanup()
        g.cleanup()
        shutil.rmtree(storage, ignore_errors=True)


main()
PYEOF
