"""Shared harness for gantry's end-to-end tests.

Starts real gantryd processes on loopback, each with its own temporary data
directory, token file and free port, and drives them over HTTP and with the
real `gantry` CLI. Only loopback addresses are used.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import http.client

BUILD = os.environ.get("GANTRY_BUILD_DIR") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build")
SOURCE = os.environ.get("GANTRY_SOURCE_DIR") or os.path.join(
    os.path.dirname(__file__), "..", "..")
GANTRYD = os.path.join(BUILD, "gantryd")
GANTRY = os.path.join(BUILD, "gantry")
API = "/apis/gantry.dev/v1"

# token,user,uid,"groups" as kube-apiserver's static token file
TOKENS = {
    "admin": ("admin-token", "root-admin", 0, "gantry:admins"),
    "node": ("node-token", "node-n1", 0, "gantry:nodes"),
    "alice": ("alice-token", "alice", 1001, "ml"),   # admin of project a
    "bob": ("bob-token", "bob", 1002, "ml"),         # member of project a
    "carol": ("carol-token", "carol", 1003, "ml"),   # viewer of project a
    "dave": ("dave-token", "dave", 1004, "ml"),      # member of project b
    "erin": ("erin-token", "erin", 1005, ""),        # department admin of dept-b
    "nobody": ("nobody-token", "nobody", 1006, ""),  # member of nothing
}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Gantryd:
    """One gantryd process with its own data directory and port."""

    def __init__(self, extra_args=(), data_dir=None):
        self.tmp = tempfile.mkdtemp(prefix="gantry-e2e-")
        self.data_dir = data_dir or os.path.join(self.tmp, "data")
        os.makedirs(self.data_dir, exist_ok=True)
        self.token_file = os.path.join(self.tmp, "tokens.csv")
        with open(self.token_file, "w") as f:
            for tok, user, uid, groups in TOKENS.values():
                f.write('%s,%s,%d,"%s"\n' % (tok, user, uid, groups))
        self.extra_args = list(extra_args)
        self.port = None
        self.proc = None
        self.log_path = os.path.join(self.tmp, "gantryd.log")

    def start(self):
        self.port = self.port or free_port()
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [GANTRYD, "--data-dir", self.data_dir, "--listen", "127.0.0.1:%d" % self.port,
             "--token-file", self.token_file] + self.extra_args,
            stdout=self.log, stderr=self.log)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("gantryd exited %d:\n%s" % (self.proc.returncode, self.logs()))
            try:
                st, _ = self.request("GET", "/healthz", token=None, raw=True)
                if st == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("gantryd did not become healthy:\n" + self.logs())

    def logs(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")[-4000:]

    def kill(self, sig=signal.SIGKILL):
        self.proc.send_signal(sig)
        self.proc.wait(timeout=30)
        self.log.close()
        return self.proc.returncode

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.kill(signal.SIGTERM)

    def cleanup(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def request(self, method, path, body=None, token="admin", raw=False, headers=None,
                timeout=30):
        """Send one request; returns (status, parsed JSON or text)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        hdrs = dict(headers or {})
        if token is not None:
            hdrs["Authorization"] = "Bearer " + (TOKENS[token][0] if token in TOKENS else token)
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if body is not None:
            hdrs.setdefault("Content-Type", "application/json")
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        if raw:
            return resp.status, data.decode(errors="replace")
        try:
            return resp.status, json.loads(data) if data else None
        except ValueError:
            return resp.status, data.decode(errors="replace")

    def cli(self, *args, token="admin", input=None, check=True):
        """Run the real CLI against this server; returns CompletedProcess."""
        env = dict(os.environ)
        env.pop("GANTRY_SERVER", None)
        env.pop("GANTRY_TOKEN", None)
        env["GANTRY_CONFIG"] = os.path.join(self.tmp, "no-such-config")
        p = subprocess.run([GANTRY, "--server", self.url, "--token", TOKENS[token][0]] + list(args),
                           input=input, capture_output=True, text=True, env=env, timeout=60)
        if check and p.returncode != 0:
            raise AssertionError("gantry %s failed (%d): %s%s" % (
                " ".join(args), p.returncode, p.stdout, p.stderr))
        return p


def obj(kind, name, project=None, **fields):
    """Build an object dict of kind with metadata.name (and project)."""
    md = {"name": name}
    if project:
        md["project"] = project
    o = {"apiVersion": "gantry.dev/v1", "kind": kind, "metadata": md}
    o.update(fields)
    return o


def job(name, project, gpus=1, replicas=1, **spec_extra):
    spec = {"replicaSpecs": {"Worker": {"replicas": replicas, "template": {
        "command": ["/bin/true"],
        "resources": {"limits": {"nvidia.com/gpu": gpus, "cpu": "1", "memory": "1Gi"}}}}}}
    spec.update(spec_extra)
    return obj("Job", name, project, spec=spec)


def seed_tenancy(g):
    """Two departments and two projects with the users of TOKENS."""
    for d, admins in (("dept-a", []), ("dept-b", ["erin"])):
        st, body = g.request("POST", API + "/departments", obj(
            "Department", d, spec={"quota": {"nvidia.com/gpu": 8}, "limit": {"nvidia.com/gpu": 16},
                                   "admins": admins}))
        assert st == 201, (st, body)
    for p, d, members in (("proj-a", "dept-a", [{"user": "alice", "role": "admin"},
                                                {"user": "bob", "role": "member"},
                                                {"user": "carol", "role": "viewer"}]),
                          ("proj-b", "dept-b", [{"user": "dave", "role": "member"}])):
        st, body = g.request("POST", API + "/projects", obj(
            "Project", p, spec={"department": d, "members": members}))
        assert st == 201, (st, body)


class GantrydTest(unittest.TestCase):
    """Base class: self.g is a fresh, started gantryd for each test."""
    gantryd_args = ()

    def setUp(self):
        self.g = Gantryd(self.gantryd_args).start()
        self.addCleanup(self.g.cleanup)


def main():
    unittest.main(verbosity=2)
