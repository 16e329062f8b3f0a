"""What the fault-injecting tests share: network-namespace hosts (a bridge
and veth pairs; test_multihost, fault_chaos) and the invariant checker
of ../shared/INVARIANTS.md that a sampler runs on every list of tasks
(fault_chaos, the soak).
"""
import http.client
import os
import shutil
import subprocess
import threading
import time
import unittest

from gantry_e2e import GANTLET

HOLDING = ("Bound", "Running", "Terminating")
TERMINAL = ("Succeeded", "Failed")


def ip(*args, check=True):
    return subprocess.run(["ip"] + list(args), capture_output=True, text=True, check=check)


def can_make_netns():
    if os.geteuid() != 0 or not (shutil.which("ip") and shutil.which("nsenter")) or \
            not os.access(GANTLET, os.X_OK):
        return False
    probe = "gtp%d" % os.getpid()
    if ip("netns", "add", probe, check=False).returncode != 0:
        return False
    ip("netns", "del", probe, check=False)
    return True


def free_subnet():
    """A 10.213.N.0/24 no interface of this host has an address in."""
    used = ip("-4", "-o", "addr").stdout
    for n in range(os.getpid() % 200, os.getpid() % 200 + 250):
        prefix = "10.213.%d." % (n % 250 + 1)
        if prefix not in used:
            return prefix
    raise unittest.SkipTest("no free 10.213.N.0/24")


class Hosts:
    """A bridge with address PREFIX.1 and namespaces at PREFIX.2, .3, ..."""

    def __init__(self, count):
        tag = os.getpid() % 100000
        self.prefix = free_subnet()
        self.bridge = "gtb%d" % tag
        self.ns = ["gt%d-%c" % (tag, ord("a") + i) for i in range(count)]
        self.veths = ["gtv%d%c" % (tag, ord("a") + i) for i in range(count)]
        self.addrs = ["%s%d" % (self.prefix, i + 2) for i in range(count)]
        self.server_addr = self.prefix + "1"
        self.ifname = "gtn0"  # the cluster interface inside every namespace

    def create(self):
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", self.server_addr + "/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        for ns, veth, addr in zip(self.ns, self.veths, self.addrs):
            ip("netns", "add", ns)
            ip("link", "add", veth, "type", "veth", "peer", "name", self.ifname, "netns", ns)
            ip("link", "set", veth, "master", self.bridge, "up")
            ip("-n", ns, "addr", "add", addr + "/24", "dev", self.ifname)
            ip("-n", ns, "link", "set", self.ifname, "up")
            ip("-n", ns, "link", "set", "lo", "up")

    def partition(self, i, cut):
        """Cut host i off the bridge (its cluster interface down inside its
        namespace: nothing in or out) or join it again."""
        ip("-n", self.ns[i], "link", "set", self.ifname, "down" if cut else "up")

    @staticmethod
    def enter(ns):
        """A command prefix running a program in ns's network namespace only.
        Not `ip netns exec`: it also remounts /sys, hiding the cgroup tree
        from the agent. nsenter execs, so the pid stays the program's."""
        return ["nsenter", "--net=/run/netns/" + ns, "--"]

    def destroy(self):
        for ns, veth in zip(self.ns, self.veths):
            ip("link", "del", veth, check=False)
            ip("netns", "del", ns, check=False)
        ip("link", "del", self.bridge, check=False)


def job_phase(job):
    """A Job's state from its conditions: "Succeeded" or "Failed" once one
    is True, else the last True condition's type (Running, Restarting...)."""
    conds = [c for c in (job.get("status") or {}).get("conditions") or []
             if c.get("status") == "True"]
    for c in conds:
        if c["type"] in TERMINAL:
            return c["type"]
    return conds[-1]["type"] if conds else None


class Invariants:
    """The invariants one list of tasks (and of jobs) shows, checked on each
    sample; violations collects what broke (thread-safe).

    INV-G: no (node, GPU UUID) held by live tasks for more than 1000 milli
    (a whole GPU counts 1000). INV-Q: the live tasks of the department hold
    at most limit_gpus GPUs (milli summed). INV-GANG: no job holds GPUs
    with some of its tasks bound and others still Pending for longer than
    gang_timeout_s. INV-T: a job seen terminal never shows another phase."""

    def __init__(self, limit_gpus, gang_timeout_s=30):
        self.limit_milli = limit_gpus * 1000
        self.gang_timeout_s = gang_timeout_s
        self.partial_since = {}
        self.terminal = {}  # job name -> the terminal phase first seen
        self.lock = threading.Lock()
        self.violations = []
        self.samples = 0

    def violate(self, what):
        with self.lock:
            self.violations.append(what)

    def check_tasks(self, tasks):
        holders, milli, by_job = {}, 0, {}
        for t in tasks:
            phase = (t.get("status") or {}).get("phase")
            job = t["metadata"].get("labels", {}).get("gantry.dev/job")
            live = phase in HOLDING
            by_job.setdefault(job, []).append((live, phase == "Pending"))
            if not live:
                continue
            for gp in t["spec"].get("gpus") or []:
                key = (t["spec"].get("nodeName"), gp.get("uuid", gp.get("index")))
                share = gp.get("milli") or 1000
                held, names = holders.get(key, (0, []))
                holders[key] = (held + share, names + [t["metadata"]["name"]])
                if held + share > 1000:
                    self.violate("INV-G: %s held by %s" % (key, holders[key][1]))
                milli += share
        if milli > self.limit_milli:
            self.violate("INV-Q: %d milli-GPUs held, limit %d" % (milli, self.limit_milli))
        now = time.time()
        for job, tl in by_job.items():
            if any(live for live, _ in tl) and any(pending for _, pending in tl):
                since = self.partial_since.setdefault(job, now)
                if now - since > self.gang_timeout_s:
                    self.violate("INV-GANG: %s partly bound for %.0f s" % (job, now - since))
            else:
                self.partial_since.pop(job, None)
        self.samples += 1

    def check_jobs(self, jobs):
        for j in jobs:
            name = j["metadata"]["name"]
            phase = job_phase(j)
            was = self.terminal.get(name)
            if was and phase != was:
                self.violate("INV-T: job %s was %s, now %s" % (name, was, phase))
            elif phase in TERMINAL:
                self.terminal[name] = phase


class Sampler(threading.Thread):
    """Every interval_s: fetch() -> (tasks, jobs) or None (the server is
    down: skipped), checked by inv. Stop with stop()."""

    def __init__(self, inv, fetch, interval_s=0.1):
        super().__init__(daemon=True)
        self.inv, self.fetch, self.interval_s = inv, fetch, interval_s
        self.done = threading.Event()
        self.skipped = 0

    def run(self):
        while not self.done.is_set():
            t0 = time.time()
            try:
                got = self.fetch()
            except (OSError, http.client.HTTPException, ValueError):
                got = None
            if got is None:
                self.skipped += 1
            else:
                tasks, jobs = got
                self.inv.check_tasks(tasks)
                if jobs is not None:
                    self.inv.check_jobs(jobs)
            time.sleep(max(0.0, self.interval_s - (time.time() - t0)))

    def stop(self):
        self.done.set()
        self.join(timeout=30)
