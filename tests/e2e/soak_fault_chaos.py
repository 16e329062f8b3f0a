#!/usr/bin/env python3
"""The soak (`make soak`, not CI): fault_chaos's cluster and job mix
for SOAK_MINUTES (default 30), jobs submitted without end and deleted once
terminal (after their runs are checked), while gantryd's and each gantlet's
anonymous resident memory (RssAnon; file-backed pages printed beside it)
and open file descriptors are sampled every 5 s.

Growth is measured over one process lifetime, so the faults here are the
ones that leave gantryd and the gantlets running: SIGSTOP/SIGCONT of a
gantlet, SIGKILLed shims and tasks, a partition past the node grace, and the
fault points that fail an operation (store-commit, commit-before-reply,
exit-recorded-before-reported, shim-spawn) or crash a shim. The invariants
are sampled every 100 ms as in the test. Prints key=value lines: per process
the first and last samples, the least-squares slope over the last third of
the run (after warm-up; gantryd keeps Events SOAK_EVENT_TTL_S, default
300, so that their plateau falls in it) and whether it is flat (RSS growth over the last
third under max(2 MiB, 5 %), descriptors under 4); exits 1 if any is not
flat, an invariant broke, or a job never ended (its reaper then waits in
vain, and the idle time after the submissions would look flat).
"""
import itertools
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from chaoslib import TERMINAL, job_phase  # noqa: E402
from gantry_e2e import SKIP_STATUS  # noqa: E402
import fault_chaos  # noqa: E402
from fault_chaos import PROJECT, FaultChaos  # noqa: E402

MINUTES = float(os.environ.get("SOAK_MINUTES", "30"))
SAMPLE_S = 5


def proc_usage(pid):
    """(anonymous RSS in MiB, open fds, file-backed RSS in MiB) of pid, or
    None when it is gone. Growth is judged on the anonymous part (RssAnon:
    heap and stacks, where a leak shows); the file-backed part (RssFile)
    holds the pages of files the process maps, such as the store's SQLite
    database read through mmap, which grow with the database and are the
    kernel's to reclaim."""
    try:
        with open("/proc/%d/status" % pid) as f:
            kb = {ln.split(":")[0]: int(ln.split()[1]) for ln in f
                  if ln.startswith(("RssAnon:", "RssFile:"))}
        return (kb["RssAnon"] / 1024.0, len(os.listdir("/proc/%d/fd" % pid)),
                kb["RssFile"] / 1024.0)
    except (OSError, KeyError, ValueError):
        return None


def slope(points):
    """Least-squares slope of [(t, v)] (units of v per unit of t)."""
    n = len(points)
    if n < 2:
        return 0.0
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    den = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (v - mv) for t, v in points) / den if den else 0.0


class Soak(FaultChaos):
    # Events are kept (and held in memory) for --event-ttl after their last
    # occurrence: at the default hour, a 30-minute soak would see them pile
    # up by design. Five minutes puts their plateau inside the warm-up.
    gantryd_args = ("--event-ttl", str(int(os.environ.get("SOAK_EVENT_TTL_S", "300"))))

    def gantryd_faults(self):
        return "store-commit=fail:p=0.005,commit-before-reply=fail:p=0.005"

    def gantlet_faults(self):
        return "exit-recorded-before-reported=fail:p=0.05,shim-spawn=fail:p=0.01"

    def chaos(self, until):
        acts = {"stop-gantlet": self.stop_gantlet,
                "kill-shim": lambda: self.kill_pidfile("shim.pid"),
                "kill-task": lambda: self.kill_pidfile("task.pid"),
                "partition": self.partition}
        weights = [3, 5, 5, 1]
        while not self.stop.is_set() and until():
            time.sleep(self.rng.uniform(2, 6))
            what = self.rng.choices(list(acts), weights)[0]
            if acts[what]() is not False:
                self.count(what)

    def reap(self, docs_by_name, over, deadline):
        """Check and delete terminal jobs, until the deadline and then until
        every job is gone."""
        while not self.stop.is_set():
            jobs = self.all_jobs()
            if jobs is None:
                time.sleep(1)
                continue
            if time.time() > deadline and not jobs:
                return
            for j in jobs:
                name = j["metadata"]["name"]
                if job_phase(j) not in TERMINAL or name not in docs_by_name:
                    continue
                doc, policy = docs_by_name[name]
                over += self.check_runs(doc, policy, j)
                st, _ = self.g.request("DELETE", PROJECT + "/jobs/" + name, token="alice")
                if st in (200, 404):
                    self.reaped += 1
                    try:
                        os.unlink(os.path.join(self.shared, name))
                    except FileNotFoundError:
                        pass
            time.sleep(1)

    def test_soak(self):
        t0 = time.time()
        deadline = t0 + MINUTES * 60
        docs_by_name, over, self.reaped = {}, [], 0

        def docs():
            for i in itertools.count():
                if time.time() > deadline:
                    return
                name, doc, policy = self.job_doc(i)
                docs_by_name[name] = (doc, policy)
                yield name, doc, policy

        usage = {}

        def sample():
            while not self.stop.is_set():
                for p in [self.gd] + self.agents:
                    u = proc_usage(p.p.proc.pid)
                    if u:
                        usage.setdefault(p.name, []).append((time.time() - t0,) + u)
                time.sleep(SAMPLE_S)
        threading.Thread(target=sample, daemon=True).start()
        reaper = threading.Thread(target=self.reap, args=(docs_by_name, over, deadline),
                                  daemon=True)
        reaper.start()
        acked, sup = self.run_mix(docs())
        reaper.join(timeout=600)
        # a reaper still waiting: jobs that never ended (the window after the
        # submissions is then idle, and would look flat)
        left = self.not_terminal() if reaper.is_alive() else {}
        self.stop.set()
        sup.join(timeout=30)
        self.sampler.stop()

        flat = True
        print("soak_minutes=%.1f jobs=%d reaped=%d injected=%s" % (
            (time.time() - t0) / 60, len(acked), self.reaped,
            dict(sorted(self.injected.items()))), flush=True)
        for name, pts in sorted(usage.items()):
            last = [p for p in pts if p[0] >= pts[-1][0] * 2 / 3]
            span_min = (last[-1][0] - last[0][0]) / 60 if len(last) > 1 else 0
            rss_slope = slope([(t / 60, r) for t, r, _, _ in last])
            fd_slope = slope([(t / 60, f) for t, _, f, _ in last])
            mean_rss = sum(r for _, r, _, _ in last) / len(last)
            ok = (rss_slope * span_min < max(2.0, 0.05 * mean_rss) and fd_slope * span_min < 4)
            flat = flat and ok
            print("%s_anon_rss_mb_first=%.1f %s_anon_rss_mb_last=%.1f "
                  "%s_anon_rss_slope_mb_per_min=%.3f %s_file_rss_mb_first=%.1f "
                  "%s_file_rss_mb_last=%.1f %s_fds_first=%d %s_fds_last=%d "
                  "%s_fds_slope_per_min=%.3f %s_flat=%s" % (
                      name, pts[0][1], name, pts[-1][1], name, rss_slope, name, pts[0][3],
                      name, pts[-1][3], name, pts[0][2], name, pts[-1][2], name, fd_slope,
                      name, "yes" if ok else "no"),
                  flush=True)
        print("soak_invariant_samples=%d soak_violations=%d soak_over_policy=%d "
              "soak_jobs_not_ended=%d soak_flat=%s" % (
                  self.inv.samples, len(self.inv.violations), len(over), len(left),
                  "yes" if flat else "no"), flush=True)
        self.assertEqual(left, {})
        self.assertEqual(self.inv.violations, [])
        self.assertEqual(over, [])
        self.assertTrue(flat, usage)


if __name__ == "__main__":
    if not (fault_chaos.can_make_netns() and fault_chaos.loop_mounts_work()):
        print("soak: needs root, network namespaces and loop mounts", file=sys.stderr)
        sys.exit(SKIP_STATUS)
    import unittest
    unittest.main(defaultTest="Soak.test_soak", verbosity=2)
