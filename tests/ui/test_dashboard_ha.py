#!/usr/bin/env python3
"""The dashboard across gantryd replicas, in a real browser:
web/tests/dashboard_ha.test.mjs (Playwright driving Debian's chromium)
against a 3-member etcd and three gantryd replicas r1-r3, each started
with every replica's --replica-url and serving the built dashboard.

r1 leads. r2 is armed to crash right after it commits its first API
write, before answering (fault point commit-before-reply), so the page's
first write through r2 is one whose answer is lost although it was
stored. The browser suite opens the page on r1, SIGKILLs r1 (the leader)
and checks the page keeps working through the others: see the suite.

Before the browser, the CORS answers of one replica are checked with
plain HTTP: a replica's origin gets its preflight (204) and
Access-Control-Allow-Origin, another origin neither. Exit 77 (CTest's
skip) only when node, chromium or etcd is absent.
"""
import http.client
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import browserflow  # noqa: E402
from gantry_e2e import (API, BUILD, SANITIZED, TOKENS, EtcdCluster, Gantryd,  # noqa: E402
                        free_port, seed_tenancy, wait_for)


def readyz(g):
    try:
        st, body = g.request("GET", "/readyz", token=None, timeout=2)
    except OSError:
        return None
    return body.get("status") if st == 200 and isinstance(body, dict) else None


def answer(g, method, path, headers):
    """One request to g with headers: (status, answer headers, body text)."""
    conn = http.client.HTTPConnection(g.host, g.port, timeout=30)
    conn.request(method, path, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, dict(resp.getheaders()), data.decode(errors="replace")


def check_cors(g, replica_origin):
    """A replica's origin may call the API cross-origin, another may not;
    the replicas GET clusterinfo lists."""
    other = "http://elsewhere.example"
    pre = {"Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": "authorization,content-type"}
    path = API + "/projects/proj-a/jobs"
    st, hdrs, _ = answer(g, "OPTIONS", path, dict(pre, Origin=replica_origin))
    assert st == 204, st
    assert hdrs.get("Access-Control-Allow-Origin") == replica_origin, hdrs
    assert "Authorization" in hdrs.get("Access-Control-Allow-Headers", ""), hdrs
    assert "POST" in hdrs.get("Access-Control-Allow-Methods", ""), hdrs
    assert hdrs.get("Vary") == "Origin", hdrs
    st, hdrs, _ = answer(g, "OPTIONS", path, dict(pre, Origin=other))
    assert st == 403 and "Access-Control-Allow-Origin" not in hdrs, (st, hdrs)
    auth = "Bearer " + TOKENS["admin"][0]
    st, hdrs, text = answer(g, "GET", API + "/clusterinfo",
                            {"Origin": replica_origin, "Authorization": auth})
    replicas = json.loads(text)["replicas"]
    assert st == 200 and hdrs.get("Access-Control-Allow-Origin") == replica_origin, (st, hdrs)
    st, hdrs, _ = answer(g, "GET", API + "/clusterinfo", {"Origin": other, "Authorization": auth})
    assert st == 200 and "Access-Control-Allow-Origin" not in hdrs, hdrs
    st, hdrs, _ = answer(g, "GET", "/", {})
    csp = hdrs.get("Content-Security-Policy", "")
    assert st == 200 and ("connect-src 'self' " + " ".join(replicas)) in csp, csp
    return replicas


def main():
    node = browserflow.tools("etcd")
    if isinstance(node, int):
        return node
    ui_dir = os.path.abspath(os.path.join(BUILD, "web"))
    tmp = tempfile.mkdtemp(prefix="gantry-ui-ha-")
    procs = []
    try:
        etcd = EtcdCluster(3).start()
        procs.append(etcd)
        ports = [free_port() for _ in range(3)]
        urls = ["http://127.0.0.1:%d" % p for p in ports]
        args = ["--store", etcd.store, "--ui-dir", ui_dir, "--leader-lease-ttl", "2",
                "--leader-renew-interval", "250"]
        for u in urls:
            args += ["--replica-url", u]
        gs = []
        for i, port in enumerate(ports):
            extra = ["--replica-id", "r%d" % (i + 1)]
            if i == 1:
                extra += ["--fault-points", "commit-before-reply=crash:nth=1"]
            g = Gantryd(args + extra)
            g.port = port
            procs.append(g)
            g.start()
            gs.append(g)
            want = "leader" if i == 0 else "follower"
            wait_for("r%d is %s" % (i + 1, want), lambda: readyz(g) == want, timeout=30)
        seed_tenancy(gs[0])
        assert check_cors(gs[2], urls[0]) == urls, "clusterinfo lists every replica"
        return browserflow.run(node, "dashboard_ha.test.mjs", tmp, {
            "urls": urls, "pids": [g.proc.pid for g in gs],
            "tokens": {k: v[0] for k, v in TOKENS.items()}, "sanitized": SANITIZED},
            timeout=400, daemons=[("r%d" % (i + 1), g) for i, g in enumerate(gs)])
    finally:
        browserflow.cleanup(procs, tmp)


if __name__ == "__main__":
    sys.exit(main())
