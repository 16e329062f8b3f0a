#!/usr/bin/env python3
"""Fault chaos: short jobs on two network-namespace nodes while everything
that can fail is made to fail, the invariants of ../shared/INVARIANTS.md
sampled every 100 ms (chaoslib.Invariants), and at the end every job
terminal, none lost and none run more often than its policy allows.

The cluster: gantryd on a bridge, its data directory on a small
loop-mounted ext4 (so the store's disk can be filled), two gantlets (4 fake
GPUs each) in their own network namespaces, a department whose GPU limit (6)
is below the cluster's 8. The mix (CHAOS_JOBS jobs, default 1000, 300 under
a sanitizer build): one-GPU jobs, two-worker gangs, half-GPU jobs
(gantry.dev/gpu-milli 500), OnFailure jobs whose first run fails, and
high-priority two-GPU jobs that preempt the low ones. Every task appends its
name to its job's file in a shared directory: the runs it made.

The injections, at seeded random moments (CHAOS_SEED, printed, replays
the schedule): SIGKILL gantryd (restarted on the same data directory),
SIGKILL a gantlet (restarted), SIGSTOP a gantlet (1-8 s: sometimes past
the node grace) then SIGCONT, SIGKILL a shim, SIGKILL a task, fill the
store's file system for 3 s, refuse the next fsync (POST /debug/fault),
cut one node off for longer than the node grace (its interface down in its
namespace: nftables and iptables are not installed here), and the named
fault points (docs/faults.md) armed anew at every start of gantryd and the
gantlets (and so of the shims). A process that ends by itself (a crash
point, a refused fsync, a full disk) is restarted.

Checked: no violation in any sample; every acknowledged job (201, or 409 on
a retry whose first answer was lost) present and terminal; each task ran at
most 1 + restartCount + requeueCount times (a preemption or a lost node
requeues, a failure under OnFailure restarts), restartCount never above
backoffLimit, and 0 for restartPolicy Never; all GPUs free at the end.
Prints the seed, the injections, the fault points that fired and the counts.
Needs root (namespaces, loop mounts); exits 77 without.
"""
import errno
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import warnings

sys.path.insert(0, os.path.dirname(__file__))
from chaoslib import TERMINAL, Hosts, Invariants, Sampler, can_make_netns, job_phase  # noqa: E402
from gantry_e2e import (API, SANITIZED, Gantlet, Gantryd, main, obj, sanitizer_reports,  # noqa: E402
                        wait_for)

NODE_GRACE_S = 6
LIMIT_GPUS = 6
GPUS_PER_NODE = 4
MAX_LIVE_TASKS = 40  # the submitter waits while more tasks are not terminal
PROJECT = API + "/projects/proj-a"
LIVE = "fieldSelector=status.phase!%3DSucceeded,status.phase!%3DFailed"


def loop_mounts_work():
    return os.geteuid() == 0 and shutil.which("mkfs.ext4") and shutil.which("mount")


class LoopDisk:
    """A small ext4 file system in a file, loop-mounted at path."""

    def __init__(self, size_mb=128):
        self.tmp = tempfile.mkdtemp(prefix="gantry-chaos-disk-")
        self.image = os.path.join(self.tmp, "disk.img")
        self.path = os.path.join(self.tmp, "mnt")
        os.makedirs(self.path)
        with open(self.image, "wb") as f:
            f.truncate(size_mb << 20)
        subprocess.run(["mkfs.ext4", "-q", "-m", "0", "-F", self.image], check=True)
        subprocess.run(["mount", "-o", "loop", self.image, self.path], check=True)

    def fill(self):
        """Write a file until the file system is full; returns its path."""
        filler = os.path.join(self.path, "filler")
        chunk = b"\0" * (1 << 20)
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                os.write(fd, chunk)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
        try:  # the last blocks, smaller than a chunk
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError:
            pass
        os.close(fd)
        return filler

    def cleanup(self):
        subprocess.run(["umount", "-l", self.path], check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)


class Proc:
    """A supervised process (a Gantryd or a Gantlet): restarted with fresh
    fault points whenever it is found dead and not held down on purpose."""

    def __init__(self, name, p, faults, env_name):
        self.name, self.p, self.faults, self.env_name = name, p, faults, env_name
        self.lock = threading.Lock()
        self.held = False  # an injection is handling it
        self.exits = {}    # exit status -> times it ended by itself


class FaultChaos(unittest.TestCase):
    JOBS = int(os.environ.get("CHAOS_JOBS", "300" if SANITIZED else "1000"))
    TERMINAL_WAIT_S = 400  # after the last submission, for every job to end
    gantryd_args = ()

    def setUp(self):
        # connections cut by a kill are left to the collector
        warnings.simplefilter("ignore", ResourceWarning)
        self.seed = int(os.environ.get("CHAOS_SEED") or random.randrange(1 << 30))
        print("chaos seed=%d jobs=%d%s" % (self.seed, self.JOBS,
              " (sanitizer build: fewer jobs)" if SANITIZED else ""), flush=True)
        self.rng = random.Random(self.seed)
        self.injected = {}
        self.disk = LoopDisk()
        self.addCleanup(self.disk.cleanup)
        self.hosts = Hosts(2)
        self.addCleanup(self.hosts.destroy)
        self.hosts.create()
        self.shared = tempfile.mkdtemp(prefix="gantry-chaos-runs-")
        os.chmod(self.shared, 0o777)
        self.addCleanup(shutil.rmtree, self.shared, True)
        g = Gantryd(("--node-grace", str(NODE_GRACE_S), "--restart-backoff-ms", "200",
                     "--enable-fault-injection") + self.gantryd_args,
                    data_dir=os.path.join(self.disk.path, "data"), host=self.hosts.server_addr)
        self.addCleanup(g.cleanup)
        self.g = g
        self.gd = Proc("gantryd", g, self.gantryd_faults, "GANTRYD_FAULT_POINTS")
        self.start_proc(self.gd)
        self.seed_cluster()
        self.agents = []
        for i, (ns, addr) in enumerate(zip(self.hosts.ns, self.hosts.addrs)):
            a = Gantlet(g, name="node-%c" % (ord("a") + i),
                        fake_gpus="%dxA100-80GB" % GPUS_PER_NODE, host=addr,
                        prefix=self.hosts.enter(ns))
            self.addCleanup(a.cleanup)
            proc = Proc(a.name, a, self.gantlet_faults, "GANTLET_FAULT_POINTS")
            self.start_proc(proc)
            self.agents.append(proc)
        for a in self.agents:
            wait_for("node %s Ready" % a.name, a.p.ready, timeout=60)
        self.inv = Invariants(LIMIT_GPUS, gang_timeout_s=60)
        self.totals = {"runs": 0, "restarts": 0, "requeues": 0}
        self.stop = threading.Event()
        self.addCleanup(self.stop.set)  # first: no restarts while the rest goes

    def count(self, what):
        self.injected[what] = self.injected.get(what, 0) + 1

    # ---- the processes, their fault points and their supervision ----

    def gantryd_faults(self):
        r = self.rng
        return r.choice([
            "store-commit=crash:nth=%d" % r.randint(300, 3000),
            "commit-before-reply=crash:nth=%d" % r.randint(300, 3000),
            "after-bind-before-status=crash:nth=%d" % r.randint(30, 400),
            "store-commit=fail:p=0.01,commit-before-reply=fail:p=0.01",
            ""])

    def gantlet_faults(self):
        r = self.rng
        return r.choice([
            "exit-recorded-before-reported=crash:nth=%d" % r.randint(10, 150),
            "shim-spawn=crash:nth=%d" % r.randint(10, 150),
            "exit-recorded-before-reported=fail:p=0.05,shim-spawn=fail:p=0.01",
            ""])

    def start_proc(self, proc):
        """Start (or restart) proc with fresh fault points; False when it
        would not start (e.g. gantryd on a full disk): the supervisor tries
        again."""
        spec = proc.faults()
        env = dict(os.environ)
        env.pop(proc.env_name, None)
        if spec:
            env[proc.env_name] = spec
        if isinstance(proc.p, Gantlet):
            env["GANTRY_SHIM_FAULT_POINTS"] = \
                "task-start-before-pidfile=crash:p=0.003,exit-before-record=crash:p=0.003"
        proc.p.env = env
        if isinstance(proc.p, Gantlet):
            proc.p.start(wait_ready=False)
            return True
        if proc.p.proc is not None and not proc.p.log.closed:
            proc.p.log.close()
        try:
            proc.p.start()
        except RuntimeError:
            return False
        return True

    def supervise(self):
        while not self.stop.is_set():
            for proc in [self.gd] + self.agents:
                with proc.lock:
                    rc = proc.p.proc.poll()
                    if proc.held or rc is None:
                        continue
                    if not getattr(proc, "noted", False):
                        proc.exits[rc] = proc.exits.get(rc, 0) + 1
                        proc.noted = True
                    if self.start_proc(proc):
                        proc.noted = False
            time.sleep(0.2)

    def seed_cluster(self):
        def post(path, body):
            # a fault point armed from the start may refuse a write (503)
            for _ in range(20):
                st, b = self.g.request("POST", path, body)
                if st != 503:
                    break
                time.sleep(0.5)
            self.assertIn(st, (201, 409), b)
        res = {"nvidia.com/gpu": LIMIT_GPUS, "cpu": "1000", "memory": "1Ti"}
        post(API + "/departments", obj("Department", "dept-a",
                                       spec={"quota": res, "limit": res}))
        post(API + "/projects", obj("Project", "proj-a", spec={
            "department": "dept-a", "members": [{"user": "alice", "role": "admin"}]}))
        for name, value in (("low", 10), ("high", 1000)):
            post(API + "/priorityclasses", obj("PriorityClass", name, value=value))

    # ---- the jobs ----

    def job_doc(self, i):
        """Job i of the mix: (name, document, the restart policy)."""
        name = "c-%05d" % i
        out = os.path.join(self.shared, name)
        r = random.Random(self.seed * 7919 + i)
        kind = r.choices(["one", "gang", "half", "onfailure", "high"], [50, 15, 15, 12, 8])[0]
        run = "echo $GANTRY_TASK >> %s; " % out
        limits = {"nvidia.com/gpu": 1, "cpu": "100m", "memory": "64Mi"}
        workers, policy, prio, backoff = 1, "Never", "low", 0
        script = run + "sleep 0.%d" % r.randint(1, 5)
        if kind == "gang":
            workers = 2
        elif kind == "half":
            limits = {"gantry.dev/gpu-milli": 500, "cpu": "100m", "memory": "64Mi"}
        elif kind == "onfailure":
            policy, backoff = "OnFailure", 3
            script = run + "[ $(grep -c . %s) -ge 2 ] || exit 3; sleep 0.2" % out
        elif kind == "high":
            limits["nvidia.com/gpu"] = 2
            prio = "high"
        tmpl = {"command": ["sh", "-c", script], "resources": {"limits": limits},
                "terminationGracePeriodSeconds": 1}
        doc = obj("Job", name, "proj-a", spec={
            "runPolicy": {"backoffLimit": backoff,
                          "schedulingPolicy": {"priorityClass": prio}},
            "replicaSpecs": {"Worker": {"replicas": workers, "template": tmpl,
                                        "restartPolicy": policy}}})
        return name, doc, policy

    def submit_all(self, docs, acked):
        for name, doc, _ in docs:
            while self.live_tasks > MAX_LIVE_TASKS and not self.stop.is_set():
                time.sleep(0.05)
            while not self.stop.is_set():
                try:
                    st, _ = self.g.request("POST", PROJECT + "/jobs", doc, token="alice",
                                           timeout=10)
                except OSError:
                    st = None
                if st in (201, 409):  # 409: an earlier try was stored, its answer lost
                    acked.add(name)
                    self.live_tasks += 2
                    break
                time.sleep(0.2)

    def fetch(self):
        """The sampler's view: the live tasks; every 10th time all jobs too."""
        st, body = self.g.request("GET", PROJECT + "/tasks?" + LIVE, timeout=5)
        if st != 200:
            return None
        tasks = body.get("items") or []
        self.live_tasks = len(tasks)
        self.n_fetch += 1
        jobs = None
        if self.n_fetch % 10 == 0:
            st, body = self.g.request("GET", PROJECT + "/jobs", timeout=10)
            jobs = (body.get("items") or []) if st == 200 else None
        return tasks, jobs

    # ---- the injections ----

    def hold(self, proc):
        with proc.lock:
            proc.held = True

    def release(self, proc):
        with proc.lock:
            proc.held = False

    def kill_gantryd(self):
        self.hold(self.gd)
        try:
            if self.gd.p.proc.poll() is None:
                self.gd.p.kill()
            time.sleep(self.rng.uniform(0, 1))
            self.start_proc(self.gd)
        finally:
            self.release(self.gd)

    def kill_gantlet(self):
        a = self.rng.choice(self.agents)
        self.hold(a)
        try:
            if a.p.proc.poll() is None:
                a.p.kill()
            time.sleep(self.rng.uniform(0, 2))
            self.start_proc(a)
        finally:
            self.release(a)

    def stop_gantlet(self):
        a = self.rng.choice(self.agents)
        self.hold(a)
        try:
            if a.p.proc.poll() is None:
                a.p.signal(signal.SIGSTOP)
                time.sleep(self.rng.uniform(1, 8))  # past the node grace now and then
                a.p.signal(signal.SIGCONT)
        finally:
            self.release(a)

    def kill_pidfile(self, pidfile):
        """SIGKILL the process of pidfile in a running task's state directory."""
        dirs = [d for a in self.agents for d in a.p.state_dirs()
                if not os.path.exists(os.path.join(d, "exit.json"))]
        self.rng.shuffle(dirs)
        for d in dirs:
            try:
                with open(os.path.join(d, pidfile)) as f:
                    os.kill(int(f.read()), signal.SIGKILL)
                return True
            except (OSError, ValueError):
                continue
        return False

    def fill_disk(self):
        filler = self.disk.fill()
        time.sleep(3)
        os.unlink(filler)

    def refuse_fsync(self):
        try:
            self.g.request("POST", "/debug/fault", {"point": "fsync", "nth": "1"}, timeout=10)
        except OSError:
            pass

    def partition(self):
        i = self.rng.randrange(len(self.agents))
        self.hosts.partition(i, True)
        try:
            time.sleep(NODE_GRACE_S + 4)
        finally:
            self.hosts.partition(i, False)

    def chaos(self, until):
        acts = {"kill-gantryd": self.kill_gantryd, "kill-gantlet": self.kill_gantlet,
                "stop-gantlet": self.stop_gantlet,
                "kill-shim": lambda: self.kill_pidfile("shim.pid"),
                "kill-task": lambda: self.kill_pidfile("task.pid"),
                "full-disk": self.fill_disk, "refuse-fsync": self.refuse_fsync,
                "partition": self.partition}
        # every kind early, then a weighted draw
        first = list(acts)
        self.rng.shuffle(first)
        weights = {"kill-gantryd": 3, "kill-gantlet": 3, "stop-gantlet": 3, "kill-shim": 5,
                   "kill-task": 5, "full-disk": 1, "refuse-fsync": 1, "partition": 1}
        while not self.stop.is_set() and until():
            time.sleep(self.rng.uniform(1, 3))
            what = first.pop() if first else self.rng.choices(
                list(weights), list(weights.values()))[0]
            if acts[what]() is not False:
                self.count(what)

    # ---- the test ----

    def logs(self):
        """gantryd's, the gantlets' and their shims' logs (every run's)."""
        return [self.g.log_path] + [f for a in self.agents for f in a.p.logs_all()]

    def fired(self):
        """Fault-point firings by point, from every log (shims' too)."""
        n = {}
        for path in self.logs():
            try:
                with open(path, errors="replace") as f:
                    for line in f:
                        if "fault point fired" in line:
                            p = line.split("point=")[1].split()[0]
                            n[p] = n.get(p, 0) + 1
            except OSError:
                pass
        return n

    def dropped_runs(self):
        """Runs the gantlets dropped because gantryd refused their status
        (the Task was another run by then: docs/agent.md)."""
        n = 0
        for a in self.agents:
            try:
                with open(a.p.log_path, errors="replace") as f:
                    n += sum("the Task is another run now" in line for line in f)
            except OSError:
                pass
        return n

    def check_runs(self, doc, policy, job):
        """What job (terminal, as gantryd has it) ran beyond its policy, from
        its run file: each task at most 1 + restartCount + requeueCount
        times, restartCount within backoffLimit and 0 under Never."""
        name = doc["metadata"]["name"]
        st = job.get("status") or {}
        rc, rq = st.get("restartCount", 0), st.get("requeueCount", 0)
        self.totals["restarts"] += rc
        self.totals["requeues"] += rq
        over = []
        backoff = doc["spec"]["runPolicy"]["backoffLimit"]
        if rc > backoff or (policy == "Never" and rc):
            over.append("%s: restartCount %d (%s, backoffLimit %d)" % (name, rc, policy, backoff))
        try:
            with open(os.path.join(self.shared, name)) as f:
                lines = f.read().split()
        except FileNotFoundError:
            lines = []
        self.totals["runs"] += len(lines)
        for task in set(lines):
            if lines.count(task) > 1 + rc + rq:
                over.append("%s ran %d times, allowed 1 + %d restarts + %d requeues" % (
                    task, lines.count(task), rc, rq))
        return over

    def not_terminal(self):
        """The jobs not terminal, each with its tasks' phase and node."""
        st, body = self.g.request("GET", PROJECT + "/tasks", timeout=30)
        tasks = (body.get("items") or []) if st == 200 else []
        out = {}
        for j in self.all_jobs() or []:
            if job_phase(j) not in TERMINAL:
                name = j["metadata"]["name"]
                out[name] = ["%s %s on %s" % (t["metadata"]["name"],
                                              (t.get("status") or {}).get("phase"),
                                              t["spec"].get("nodeName") or "no node")
                             for t in tasks if t["spec"].get("job") == name]
        return out

    def all_jobs(self):
        st, body = self.g.request("GET", PROJECT + "/jobs", timeout=30)
        return (body.get("items") or []) if st == 200 else None

    def run_mix(self, docs):
        """Submit docs (job_doc's, an iterable) under chaos, which lasts as
        long as the submitter; returns (acked names, the supervisor)."""
        t0 = time.time()
        self.live_tasks, self.n_fetch = 0, 0
        acked = set()
        sampler = Sampler(self.inv, self.fetch)
        self.addCleanup(sampler.stop)
        sup = threading.Thread(target=self.supervise, daemon=True)
        sub = threading.Thread(target=self.submit_all, args=(docs, acked), daemon=True)
        for t in (sampler, sup, sub):
            t.start()
        self.sampler = sampler
        self.chaos(sub.is_alive)
        sub.join(timeout=600)
        self.assertFalse(sub.is_alive(), "the submitter never finished")
        print("chaos: submitted %d jobs in %.0f s" % (len(acked), time.time() - t0), flush=True)
        return acked, sup

    def test_fault_chaos(self):
        t0 = time.time()
        docs = [self.job_doc(i) for i in range(self.JOBS)]
        acked, sup = self.run_mix(docs)

        def terminal():
            jobs = self.all_jobs()
            if jobs is None:
                return None
            left = [j["metadata"]["name"] for j in jobs if job_phase(j) not in TERMINAL]
            return jobs if len(jobs) >= len(docs) and not left else None
        try:
            jobs = wait_for("every job terminal", terminal, timeout=self.TERMINAL_WAIT_S,
                            interval=1)
        except AssertionError:
            print("chaos: not terminal: %s" % self.not_terminal(), flush=True)
            raise
        self.stop.set()
        sup.join(timeout=30)
        self.sampler.stop()

        self.assertEqual(self.inv.violations, [])
        self.assertEqual(acked, {n for n, _, _ in docs})
        by_name = {j["metadata"]["name"]: j for j in jobs}
        phases, over = {}, []
        for name, doc, policy in docs:
            self.assertIn(name, by_name)  # acknowledged, never lost
            phase = job_phase(by_name[name])
            phases[phase] = phases.get(phase, 0) + 1
            over += self.check_runs(doc, policy, by_name[name])
        self.assertEqual(over, [])

        def gpus_free():
            for a in self.agents:
                alloc = (a.p.node() or {}).get("status", {}).get("allocated") or {}
                if alloc.get("gpus"):
                    return False
            return True
        wait_for("every GPU free", gpus_free, timeout=120, interval=0.5)
        exits = {p.name: p.exits for p in [self.gd] + self.agents if p.exits}
        reports = sanitizer_reports(self.logs())
        print("chaos: sanitizer reports in every run's logs: %d" % len(reports), flush=True)
        self.assertEqual(reports, [])
        print("chaos: injected %s" % dict(sorted(self.injected.items())), flush=True)
        print("chaos: fault points fired %s; processes that ended by themselves (status: "
              "times) %s; stale runs dropped on a refused status write %d" % (
                  dict(sorted(self.fired().items())), exits, self.dropped_runs()), flush=True)
        print("chaos: %d jobs %s, %d task runs, %d restarts, %d requeues, %d invariant "
              "samples (%d while gantryd was down), %.0f s" % (
                  len(docs), dict(sorted(phases.items())), self.totals["runs"],
                  self.totals["restarts"], self.totals["requeues"], self.inv.samples,
                  self.sampler.skipped, time.time() - t0), flush=True)


def main_if_able():
    """main(), or exit 77 (skipped) where the test cannot run."""
    if not (can_make_netns() and loop_mounts_work()):
        print("fault_chaos: needs root, ip(8), nsenter(1), network namespaces, loop "
              "mounts and gantlet; skipped", file=sys.stderr)
        sys.exit(77)
    main()


if __name__ == "__main__":
    main_if_able()
