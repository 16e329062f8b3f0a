"""Shared harness for gantry's end-to-end tests.

Starts real gantryd processes on loopback, each with its own temporary data
directory, token file and free port, and drives them over HTTP and with the
real `gantry` CLI. Only loopback addresses are used.
"""
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import http.client

BUILD = os.environ.get("GANTRY_BUILD_DIR") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build")
SOURCE = os.environ.get("GANTRY_SOURCE_DIR") or os.path.join(
    os.path.dirname(__file__), "..", "..")
GANTRYD = os.path.join(BUILD, "gantryd")


def sanitizer_build():
    """Is BUILD the ASan+UBSan build (CMAKE_BUILD_TYPE Asan)? Its programs
    are several times slower: tests that measure a rate only print it."""
    try:
        with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
            return "CMAKE_BUILD_TYPE:STRING=Asan" in f.read()
    except OSError:
        return False


SANITIZED = sanitizer_build()

# The first line of a report by AddressSanitizer, LeakSanitizer or
# UndefinedBehaviorSanitizer (built with -fno-sanitize-recover=all, so a
# report ends the process; LeakSanitizer's comes at a normal exit).
SANITIZER_REPORT = re.compile(r"ERROR: (Address|Leak)Sanitizer|SUMMARY: UndefinedBehaviorSanitizer"
                              r"|:\d+:\d+: runtime error: ")


def sanitizer_reports(paths):
    """The sanitizer reports in the files at paths, each a string "PATH:"
    followed by the report's lines up to its SUMMARY line (at most 60);
    files that do not exist are passed over. A daemon's log is appended to
    by every start, so a report by a run that a test killed and restarted
    is found here even though nothing waited for that run."""
    found = []
    for path in paths:
        try:
            with open(path, errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        i = 0
        while i < len(lines):
            if not SANITIZER_REPORT.search(lines[i]):
                i += 1
                continue
            end = i + 1
            while end < len(lines) and end < i + 60 and not lines[end - 1].startswith("SUMMARY:"):
                end += 1
            found.append("%s:\n%s" % (path, "\n".join(lines[i:end])))
            i = end
    return found


def fail_on_sanitizer_reports(what, found):
    """Raise AssertionError with found, sanitizer_reports() of what's logs
    (what names the process for the message); nothing if it is empty."""
    if found:
        raise AssertionError("%d sanitizer reports in %s's logs (any of its runs):\n%s"
                             % (len(found), what, "\n".join(found[:5])))


GANTRY = os.path.join(BUILD, "gantry")
API = "/apis/gantry.dev/v1"

# token,user,uid,"groups" as kube-apiserver's static token file
TOKENS = {
    "admin": ("admin-token", "root-admin", 0, "gantry:admins"),
    "node": ("node-token", "node-n1", 0, "gantry:nodes"),  # shared: bound to no node
    "node-n1": ("node-n1-token", "system:node:n1", 0, "gantry:nodes"),  # NodeRestriction: n1
    "node-n2": ("node-n2-token", "system:node:n2", 0, "gantry:nodes"),  # NodeRestriction: n2
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

    def __init__(self, extra_args=(), data_dir=None, host="127.0.0.1"):
        self.host = host  # the address it listens on: loopback, or a test bridge's
        self.tmp = tempfile.mkdtemp(prefix="gantry-e2e-")
        self.data_dir = data_dir or os.path.join(self.tmp, "data")
        os.makedirs(self.data_dir, exist_ok=True)
        self.token_file = os.path.join(self.tmp, "tokens.csv")
        with open(self.token_file, "w") as f:
            for tok, user, uid, groups in TOKENS.values():
                f.write('%s,%s,%d,"%s"\n' % (tok, user, uid, groups))
        self.extra_args = list(extra_args)
        if "--port-range" not in self.extra_args:
            # Tasks listen on ports from this range on their node's address;
            # suites run in parallel on one host, so each gantryd gets its own
            # window below the kernel's ephemeral ports (32768-60999).
            base = 20000 + random.randrange(120) * 100
            self.extra_args += ["--port-range", "%d-%d" % (base, base + 99)]
        self.port = None
        self.proc = None
        self.env = None  # the environment of the next start (None: this one's)
        self.log_path = os.path.join(self.tmp, "gantryd.log")

    def start(self):
        self.port = self.port or free_port()
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [GANTRYD, "--data-dir", self.data_dir, "--listen", "%s:%d" % (self.host, self.port),
             "--token-file", self.token_file] + self.extra_args,
            stdout=self.log, stderr=self.log, env=self.env)
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
        """Stop it, fail on any sanitizer report in its log (restarted runs'
        too), and remove its directory."""
        try:
            self.stop()
            fail_on_sanitizer_reports("gantryd", sanitizer_reports([self.log_path]))
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    @property
    def url(self):
        return "http://%s:%d" % (self.host, self.port)

    def request(self, method, path, body=None, token="admin", raw=False, headers=None,
                timeout=30):
        """Send one request; returns (status, parsed JSON or text)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
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



def etcd_answers(port, path, body):
    """Does the etcd member on loopback port answer POST path (its JSON
    gateway) with 200?"""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            conn.request("POST", path, body=body)
            return conn.getresponse().status == 200
        finally:
            conn.close()
    except OSError:
        return False


class Etcd:
    """A one-member etcd (Debian's etcd-server) on loopback free ports, with
    its data in a temporary directory; .store is gantryd's --store value."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="gantry-etcd-")
        self.client, self.peer = free_port(), free_port()
        self.proc = None

    @staticmethod
    def available():
        return shutil.which("etcd") is not None

    @property
    def store(self):
        return "etcd://127.0.0.1:%d" % self.client

    def start(self):
        curl = "http://127.0.0.1:%d" % self.client
        purl = "http://127.0.0.1:%d" % self.peer
        self.log = open(os.path.join(self.tmp, "etcd.log"), "ab")
        self.proc = subprocess.Popen(
            ["etcd", "--name", "m1", "--data-dir", os.path.join(self.tmp, "data"),
             "--listen-client-urls", curl, "--advertise-client-urls", curl,
             "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
             "--initial-cluster", "m1=" + purl, "--log-level", "error"],
            stdout=self.log, stderr=self.log)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("etcd exited %d" % self.proc.returncode)
            if etcd_answers(self.client, "/v3/kv/range", '{"key":"AA=="}'):
                return self
            time.sleep(0.1)
        raise RuntimeError("etcd did not answer on " + curl)

    def cleanup(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
            self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

class EtcdCluster:
    """A 3-member etcd (Debian's etcd-server) on loopback free ports, each
    member's data in a temporary directory; .store is gantryd's --store
    value listing every member. kill(i) SIGKILLs member i, start(i) starts
    it again on its data (it rejoins)."""

    def __init__(self, n=3):
        self.tmp = tempfile.mkdtemp(prefix="gantry-etcd3-")
        self.ports = [(free_port(), free_port()) for _ in range(n)]
        self.procs = [None] * n
        self.logs = [None] * n
        self.cluster = ",".join("m%d=http://127.0.0.1:%d" % (i, p[1])
                                for i, p in enumerate(self.ports))

    @property
    def store(self):
        return "etcd://" + ",".join("127.0.0.1:%d" % c for c, _ in self.ports)

    def start(self, i=None):
        for m in ([i] if i is not None else range(len(self.ports))):
            c, p = self.ports[m]
            curl, purl = "http://127.0.0.1:%d" % c, "http://127.0.0.1:%d" % p
            self.logs[m] = open(os.path.join(self.tmp, "etcd%d.log" % m), "ab")
            self.procs[m] = subprocess.Popen(
                ["etcd", "--name", "m%d" % m, "--data-dir", os.path.join(self.tmp, "m%d" % m),
                 "--listen-client-urls", curl, "--advertise-client-urls", curl,
                 "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
                 "--initial-cluster", self.cluster, "--initial-cluster-token", self.tmp,
                 "--initial-cluster-state", "new", "--log-level", "error"],
                stdout=self.logs[m], stderr=self.logs[m])
        wait_for("etcd answers writes", self.writable, timeout=30)
        return self

    def writable(self):
        return any(etcd_answers(c, "/v3/kv/put", '{"key":"AQ==","value":""}')
                   for c, _ in self.ports)

    def kill(self, i):
        self.procs[i].kill()
        self.procs[i].wait(timeout=30)
        self.logs[i].close()

    def cleanup(self):
        for i, p in enumerate(self.procs):
            if p and p.poll() is None:
                self.kill(i)
        shutil.rmtree(self.tmp, ignore_errors=True)


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


def seed_tenancy(g, quotas=None, project_spec=None):
    """Two departments and two projects with the users of TOKENS. quotas:
    {department: (quota, limit)} in place of 8 and 16 GPUs; project_spec:
    fields added to both projects' spec."""
    for d, admins in (("dept-a", []), ("dept-b", ["erin"])):
        quota, limit = (quotas or {}).get(d, ({"nvidia.com/gpu": 8}, {"nvidia.com/gpu": 16}))
        st, body = g.request("POST", API + "/departments", obj(
            "Department", d, spec={"quota": quota, "limit": limit, "admins": admins}))
        assert st == 201, (st, body)
    for p, d, members in (("proj-a", "dept-a", [{"user": "alice", "role": "admin"},
                                                {"user": "bob", "role": "member"},
                                                {"user": "carol", "role": "viewer"}]),
                          ("proj-b", "dept-b", [{"user": "dave", "role": "member"}])):
        st, body = g.request("POST", API + "/projects", obj(
            "Project", p, spec=dict(project_spec or {}, department=d, members=members)))
        assert st == 201, (st, body)


class LocalClusterTest(unittest.TestCase):
    """Base class: one local cluster per class, started by `gantry up` from the
    build directory (gantryd and gantlet with 8 fake GPUs) in a temporary
    directory, with GANTRY_CONFIG there too, so nothing touches HOME.
    cls.gantry runs the CLI against it; cls.up_args are more flags of `gantry up`."""
    tmp_prefix = "gantry-up-"
    up_args = ()

    @classmethod
    def setUpClass(cls):
        if not (os.access(GANTRYD, os.X_OK) and os.access(os.path.join(BUILD, "gantlet"),
                                                          os.X_OK)):
            raise unittest.SkipTest("needs gantryd and gantlet in the build directory")
        cls.tmp = tempfile.mkdtemp(prefix=cls.tmp_prefix)
        # Tasks run as another uid (65534 under root) below the data directory.
        os.chmod(cls.tmp, 0o711)
        cls.data = os.path.join(cls.tmp, "data")
        cls.env = dict(os.environ, GANTRY_CONFIG=os.path.join(cls.tmp, "config"),
                       XDG_DATA_HOME=os.path.join(cls.tmp, "xdg"))
        cls.env.pop("GANTRY_SERVER", None)
        cls.env.pop("GANTRY_TOKEN", None)
        cls.port = free_port()
        r = cls.gantry("up", "--data-dir", cls.data, "--fake-gpus", "8xA100-80GB",
                       "--listen", "127.0.0.1:%d" % cls.port, *cls.up_args, timeout=120)
        if r.returncode != 0:
            logs = os.path.join(cls.data, "logs")
            for name in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
                with open(os.path.join(logs, name), errors="replace") as f:
                    sys.stderr.write("--- %s\n%s\n" % (name, f.read()[-4000:]))
            cls.gantry("down", "--data-dir", cls.data)
            raise AssertionError("gantry up failed: %s" % r.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.gantry("down", "--data-dir", cls.data, timeout=120)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def gantry(cls, *args, timeout=60, cwd=None, stdin=None):
        return subprocess.run([GANTRY] + list(args), env=cls.env, capture_output=True,
                              text=True, timeout=timeout, cwd=cwd, input=stdin)


class GantrydTest(unittest.TestCase):
    """Base class: self.g is a fresh, started gantryd for each test."""
    gantryd_args = ()

    def setUp(self):
        self.g = Gantryd(self.gantryd_args).start()
        self.addCleanup(self.g.cleanup)



# ---- a real node agent (gantlet) next to a Gantryd ----

GANTLET = os.path.join(BUILD, "gantlet")
CGROUP_ROOT = "/sys/fs/cgroup"


def pid_alive(pid):
    """True while pid names a process that is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def task_cgroups(task_uid):
    """The existing cgroup directories of a task, on v1 or v2."""
    import glob
    return [d for d in glob.glob(os.path.join(CGROUP_ROOT, "gantry", task_uid)) +
            glob.glob(os.path.join(CGROUP_ROOT, "*", "gantry", task_uid)) if os.path.isdir(d)]


def cgroup_pids(task_uid):
    pids = set()
    for d in task_cgroups(task_uid):
        try:
            with open(os.path.join(d, "cgroup.procs")) as f:
                pids.update(int(x) for x in f.read().split())
        except OSError:
            pass
    return pids


def bench_tenancy(g):
    """Department and project "bench" (alice admin, room for 8 GPUs), as
    the benchmarks use them."""
    for path, o in ((API + "/departments", obj("Department", "bench", spec={
            "quota": {"nvidia.com/gpu": 8, "cpu": "1000", "memory": "4Ti"}})),
                    (API + "/projects", obj("Project", "bench", spec={
                        "department": "bench",
                        "members": [{"user": "alice", "role": "admin"}]}))):
        st, body = g.request("POST", path, o)
        assert st == 201, (st, body)


def make_git_repo(repo, files, message="commit"):
    """A git repository at repo (made) holding files {relative path: text},
    readable by every uid (tasks clone it as their user); returns
    ("file://" + repo, the commit's full sha)."""
    os.makedirs(repo)
    for rel, text in files.items():
        with open(os.path.join(repo, rel), "w") as f:
            f.write(text)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    for argv in (["git", "init", "-q", "."], ["git", "add", "."],
                 ["git", "commit", "-q", "-m", message]):
        subprocess.run(argv, cwd=repo, env=env, check=True, capture_output=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True,
                         capture_output=True, text=True).stdout.strip()
    subprocess.run(["chmod", "-R", "a+rX", repo], check=True)
    return "file://" + repo, sha


def wait_for(what, fn, timeout=10.0, interval=0.05):
    """Poll fn until it returns a true value (returned); AssertionError after timeout."""
    deadline = time.time() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.time() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(interval)


class Gantlet:
    """One gantlet process for a Gantryd, with fake GPUs and its own data root
    and run directory (on tmpfs, /dev/shm, where there is one).

    The data root and its parent are 0711 so tasks running under other uids
    reach their working directories. cleanup() kills the agent, every shim
    and task process it left and removes their cgroups, also after a failed
    test (a SIGSTOPped agent is continued first)."""

    def __init__(self, g, name="n1", fake_gpus="1xA100-80GB", heartbeat_s=1, extra_args=(),
                 host="127.0.0.1", prefix=()):
        self.g, self.name, self.fake_gpus = g, name, fake_gpus
        # host: the address it listens on (its node's InternalIP); prefix: a
        # command it runs under, as `nsenter --net=PATH --` (which execs: same pid).
        self.host, self.prefix = host, list(prefix)
        self.heartbeat_s, self.extra_args = heartbeat_s, list(extra_args)
        self.tmp = tempfile.mkdtemp(prefix="gantlet-e2e-")
        os.chmod(self.tmp, 0o711)
        self.root = os.path.join(self.tmp, "root")
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.run_dir = tempfile.mkdtemp(prefix="gantlet-e2e-run-", dir=shm)
        self.token_file = os.path.join(self.tmp, "node-token")
        with open(self.token_file, "w") as f:
            f.write(TOKENS["node"][0] + "\n")
        self.log_path = os.path.join(self.tmp, "gantlet.log")
        self.port = free_port()
        self.proc = None
        self.env = None  # the environment of the next start (None: this one's)

    def start(self, wait_ready=True):
        """Start (or restart) the agent; wait_ready: until its Node is Ready."""
        if self.proc:
            self.log.close()
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            self.prefix + [GANTLET, "--server", self.g.url, "--token-file", self.token_file,
             "--name", self.name, "--listen", "%s:%d" % (self.host, self.port),
             "--fake-gpus", self.fake_gpus, "--root", self.root, "--run-dir", self.run_dir,
             "--heartbeat", str(self.heartbeat_s)] + self.extra_args,
            stdout=self.log, stderr=self.log, env=self.env)
        if wait_ready:
            wait_for("node %s Ready" % self.name, self.ready, timeout=20)
        return self

    def node(self):
        st, body = self.g.request("GET", API + "/nodes/" + self.name)
        return body if st == 200 else None

    def ready(self):
        if self.proc.poll() is not None:
            raise AssertionError("gantlet exited %d:\n%s" % (self.proc.returncode, self.logs()))
        n = self.node() or {}
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in n.get("status", {}).get("conditions", []))

    def logs(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")[-4000:]

    def signal(self, sig):
        self.proc.send_signal(sig)

    def kill(self):
        """SIGKILL the agent (its shims and tasks live on) and reap it."""
        self.proc.kill()
        self.proc.wait(timeout=10)

    def state_dirs(self):
        d = os.path.join(self.run_dir, "tasks")
        return [os.path.join(d, x) for x in os.listdir(d)] if os.path.isdir(d) else []

    def data_dir(self, task_uid):
        """A task's directory on disk: task.log*, work/, an image's rootfs/ and ovl/."""
        return os.path.join(self.root, "tasks", task_uid)

    def logs_all(self):
        """Its log and the logs of the shims whose state it still keeps."""
        return [self.log_path] + [os.path.join(d, "shim.log") for d in self.state_dirs()]

    def cleanup(self):
        """Stop it and what it left, fail on any sanitizer report in its or
        its shims' logs (restarted runs' too), and remove its directories."""
        reports = []
        try:
            if self.proc and self.proc.poll() is None:
                self.proc.send_signal(signal.SIGCONT)
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
            for d in self.state_dirs():
                try:
                    with open(os.path.join(d, "shim.pid")) as f:
                        os.kill(int(f.read()), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
                kill_task_cgroup(os.path.basename(d))
            reports = sanitizer_reports(self.logs_all())
        finally:
            if self.proc:
                self.log.close()
            shutil.rmtree(self.tmp, ignore_errors=True)
            shutil.rmtree(self.run_dir, ignore_errors=True)
        fail_on_sanitizer_reports("gantlet " + self.name, reports)


def kill_task_cgroup(task_uid):
    """SIGKILL everything in a task's cgroups and remove them."""
    for _ in range(100):
        pids = cgroup_pids(task_uid)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)
    for d in task_cgroups(task_uid):
        for _ in range(50):
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)



class Watch:
    """A watch stream read by a thread: events as (monotonic seconds, type, object)."""

    def __init__(self, g, path, token="admin", keep=None):
        """keep: a predicate on each raw line; lines it rejects are not parsed
        (a client that only waits for some events need not decode the rest)."""
        import threading
        self.keep = keep
        self.events = []
        self.conn = http.client.HTTPConnection("127.0.0.1", g.port, timeout=120)
        sep = "&" if "?" in path else "?"
        self.conn.request("GET", path + sep + "watch=true",
                          headers={"Authorization": "Bearer " + TOKENS[token][0]})
        self.resp = self.conn.getresponse()
        assert self.resp.status == 200, self.resp.status
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for line in self.resp:
                if line.strip() and (self.keep is None or self.keep(line)):
                    ev = json.loads(line)
                    self.events.append((time.monotonic(), ev["type"], ev["object"]))
        except Exception:  # noqa: BLE001 -- close() from the test thread ends the stream
            pass

    def close(self):
        try:
            self.conn.sock and self.conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()


class AgentTest(GantrydTest):
    """A gantryd (node grace NODE_GRACE_S) with department dept-a and project
    proj-a (alice admin), and helpers to run jobs on real gantlets."""
    NODE_GRACE_S = 4
    gantryd_args = ("--node-grace", str(NODE_GRACE_S))
    PROJECT = API + "/projects/proj-a"

    def setUp(self):
        super().setUp()
        st, body = self.g.request("POST", API + "/departments", obj(
            "Department", "dept-a",
            spec={"quota": {"nvidia.com/gpu": 64, "cpu": "1000", "memory": "4Ti"}}))
        self.assertEqual(st, 201, body)
        st, body = self.g.request("POST", API + "/projects", obj(
            "Project", "proj-a", spec={"department": "dept-a",
                                       "members": [{"user": "alice", "role": "admin"}]}))
        self.assertEqual(st, 201, body)

    def gantlet(self, **kw):
        """Start a gantlet (kwargs of Gantlet) and wait until its node is Ready."""
        a = Gantlet(self.g, **kw)
        self.addCleanup(a.cleanup)
        return a.start()

    def gantlet_with_gpu_counters(self, fake_gpus="2xA100-80GB"):
        """A gantlet whose fake GPUs read from self.counters, a temporary
        directory of --fake-gpu-counters files (docs/metrics.md), sampled
        every 100 ms."""
        self.counters = tempfile.mkdtemp(prefix="gantry-gpus-")
        self.addCleanup(shutil.rmtree, self.counters, True)
        return self.gantlet(fake_gpus=fake_gpus,
                            extra_args=["--fake-gpu-counters", self.counters,
                                        "--gpu-sample-ms", "100"])

    def submit(self, name, command, gpus=1, memory="256Mi", cpu="1", grace_s=None,
               token="alice"):
        """Create a one-task Job; returns its task's name."""
        tmpl = {"command": list(command),
                "resources": {"limits": {"nvidia.com/gpu": gpus, "cpu": cpu, "memory": memory}}}
        if grace_s is not None:
            tmpl["terminationGracePeriodSeconds"] = grace_s
        st, body = self.g.request("POST", self.PROJECT + "/jobs", obj(
            "Job", name, "proj-a",
            spec={"replicaSpecs": {"Worker": {"replicas": 1, "template": tmpl}}}), token=token)
        self.assertEqual(st, 201, body)
        return name + "-worker-0"

    def task(self, name):
        st, body = self.g.request("GET", self.PROJECT + "/tasks/" + name)
        return body if st == 200 else None

    def phase(self, name):
        return ((self.task(name) or {}).get("status") or {}).get("phase")

    def wait_phase(self, name, phases, timeout=20.0):
        """Wait until the task's phase is in phases; returns the Task."""
        phases = (phases,) if isinstance(phases, str) else tuple(phases)
        wait_for("task %s in %s (now %s)" % (name, phases, self.phase(name)),
                 lambda: self.phase(name) in phases, timeout=timeout)
        return self.task(name)

    def wait_host_pid(self, name, timeout=20.0):
        return wait_for("task %s hostPid" % name,
                        lambda: ((self.task(name) or {}).get("status") or {}).get("hostPid"),
                        timeout=timeout)


# The exit status of a test file that ran nothing (CTest SKIP_RETURN_CODE).
SKIP_STATUS = 77


def main():
    """unittest.main, with skips that show: exit 1 if a case failed, 77 if
    every case skipped (CTest then reports the file as not run), else 0,
    printing "gantry-test: K of N cases skipped" when only some did, which
    scripts/run-tests adds up."""
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    skipped = len(result.skipped)
    if skipped and skipped < result.testsRun:
        print("gantry-test: %d of %d cases skipped" % (skipped, result.testsRun), flush=True)
    sys.exit(SKIP_STATUS if result.testsRun and skipped == result.testsRun else 0)


# ---- for the benchmarks (bench/*.sh) ----

def pct(xs, p):
    """The p-th percentile of xs (nearest rank)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


class Phases:
    """First monotonic time each task name is seen in each phase (task watch)."""

    def __init__(self, g):
        self.seen = {}
        self.cond = threading.Condition()
        self.closed = False
        self.w = Watch(g, API + "/tasks")
        threading.Thread(target=self.pump, daemon=True).start()

    def close(self):
        """End the watch and its pump thread."""
        self.closed = True
        self.w.close()

    def pump(self):
        i = 0
        while not self.closed:
            evs = self.w.events
            if i == len(evs):
                time.sleep(0.002)
                continue
            with self.cond:
                for ts, _, o in evs[i:]:
                    ph = (o.get("status") or {}).get("phase")
                    self.seen.setdefault((o["metadata"]["name"], ph), ts)
                i = len(evs)
                self.cond.notify_all()

    def wait(self, name, phases, timeout=60):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for ph in phases:
                    if (name, ph) in self.seen:
                        return self.seen[(name, ph)]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError("%s never reached %s" % (name, phases))
                self.cond.wait(left)
