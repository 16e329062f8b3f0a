#!/usr/bin/env python3
"""Each named fault point (docs/faults.md) does what it says, and what it
leaves behind is handled: real gantryd, gantlet and shims.

- gantryd store-commit=fail: the create is answered 503 and nothing is
  stored; a bad --fault-points stops gantryd at start, naming the entry.
- gantryd commit-before-reply=crash: gantryd ends (status 86) before it
  answers a create; restarted on its data directory the job is there
  (acknowledged or not, never lost) and the retried create gets 409.
- gantlet exit-recorded-before-reported=crash: the agent ends with the
  exit recorded; restarted, it reports the task Succeeded, which ran once.
- shim task-start-before-pidfile=crash: the shim dies with its task
  running and no task.pid. The task is reported as not started AND its
  process is killed (it used to run on, unsupervised, holding its GPU).
- shim exit-before-record=crash, and a SIGKILLed shim: nothing records the
  task's end. The agent reports it Failed (TaskLost) and frees its GPU (it
  used to stay Running forever, its job never terminal).
"""
import os
import shutil
import signal
import tempfile
import time

from gantry_e2e import (API, AgentTest, Gantlet, Gantryd, cgroup_pids, main, obj, pid_alive,
                        wait_for)

CRASH_STATUS = 86
TIMEOUT_S = 60


class FaultPoints(AgentTest):
    def setUp(self):
        super().setUp()
        self.shared = tempfile.mkdtemp(prefix="gantry-faultpoints-")
        os.chmod(self.shared, 0o777)
        self.addCleanup(shutil.rmtree, self.shared, True)

    def agent(self, faults=None, shim_faults=None):
        """A gantlet with one GPU, its and its shims' fault points armed."""
        a = Gantlet(self.g, fake_gpus="1xA100-80GB")
        self.addCleanup(a.cleanup)
        a.env = dict(os.environ)
        for var, spec in (("GANTLET_FAULT_POINTS", faults),
                          ("GANTRY_SHIM_FAULT_POINTS", shim_faults)):
            if spec:
                a.env[var] = spec
        return a.start()

    def runs(self, name):
        try:
            with open(os.path.join(self.shared, name)) as f:
                return f.read().split()
        except FileNotFoundError:
            return []

    def counted(self, name, then="true"):
        """A command that appends a line to name's run file, then runs then."""
        return ["sh", "-c", "echo run >> %s; %s" % (os.path.join(self.shared, name), then)]

    def gpus_free(self, a):
        return not ((a.node() or {}).get("status", {}).get("allocated") or {}).get("gpus")

    def test_gantryd_store_commit_fail(self):
        g = Gantryd(("--fault-points", "store-commit=fail:nth=1"))
        self.addCleanup(g.cleanup)
        g.start()
        body = obj("Department", "dept-x", spec={"quota": {"nvidia.com/gpu": 1}})
        st, ans = g.request("POST", API + "/departments", body)
        self.assertEqual(st, 503, ans)
        st, ans = g.request("GET", API + "/departments/dept-x")
        self.assertEqual(st, 404, ans)  # nothing written
        st, ans = g.request("POST", API + "/departments", body)
        self.assertEqual(st, 201, ans)  # nth=1 fired once

        bad = Gantryd(("--fault-points", "store-commit=explode"))
        self.addCleanup(bad.cleanup)
        with self.assertRaises(RuntimeError) as cm:
            bad.start()
        self.assertIn("--fault-points: store-commit: action must be crash or fail",
                      str(cm.exception))

    def test_gantryd_crash_before_reply_loses_nothing(self):
        g = Gantryd(("--fault-points", "commit-before-reply=crash:nth=1"))
        self.addCleanup(g.cleanup)
        g.start()
        body = obj("Department", "dept-x", spec={"quota": {"nvidia.com/gpu": 1}})
        with self.assertRaises(OSError):  # no answer: the connection ends
            g.request("POST", API + "/departments", body)
        self.assertEqual(g.proc.wait(timeout=TIMEOUT_S), CRASH_STATUS)
        g.log.close()
        g.extra_args = [a for a in g.extra_args if a not in ("--fault-points",
                                                             "commit-before-reply=crash:nth=1")]
        g.start()
        st, ans = g.request("GET", API + "/departments/dept-x")
        self.assertEqual(st, 200, ans)
        st, ans = g.request("POST", API + "/departments", body)
        self.assertEqual(st, 409, ans)

    def test_gantlet_crash_after_exit_recorded(self):
        a = self.agent(faults="exit-recorded-before-reported=crash:nth=1")
        t = self.submit("once", self.counted("once", "sleep 0.2"))
        self.assertEqual(a.proc.wait(timeout=TIMEOUT_S), CRASH_STATUS)
        self.assertIn(self.phase(t), ("Bound", "Running"))  # the exit recorded, not reported
        a.env.pop("GANTLET_FAULT_POINTS")
        a.start()
        self.wait_phase(t, "Succeeded", timeout=TIMEOUT_S)
        self.assertEqual(self.runs("once"), ["run"])

    def test_shim_crash_before_pidfile_kills_the_task(self):
        a = self.agent(shim_faults="task-start-before-pidfile=crash:nth=1")
        t = self.submit("orphan", self.counted("orphan", "sleep 1000"))
        task = self.wait_phase(t, "Failed", timeout=TIMEOUT_S)
        uid = task["metadata"]["uid"]
        self.assertEqual(task["status"].get("exitCode"), 127, task["status"])
        wait_for("the orphaned task killed", lambda: not cgroup_pids(uid), timeout=TIMEOUT_S)
        # started at most once: on a loaded host the agent may kill the
        # process before its first line has run, so none is allowed too
        self.assertIn(self.runs("orphan"), ([], ["run"]))
        time.sleep(0.5)
        self.assertEqual(self.phase(t), "Failed")  # not restarted
        wait_for("its GPU free", lambda: self.gpus_free(a), timeout=TIMEOUT_S)

    def test_shim_crash_before_exit_record_ends_the_task(self):
        a = self.agent(shim_faults="exit-before-record=crash:nth=1")
        t = self.submit("norecord", self.counted("norecord", "sleep 0.5"))
        task = self.wait_phase(t, "Failed", timeout=TIMEOUT_S)
        self.assertEqual(task["status"].get("reason"), "TaskLost", task["status"])
        wait_for("its GPU free", lambda: self.gpus_free(a), timeout=TIMEOUT_S)

    def test_killed_shim_ends_the_task(self):
        a = self.agent()
        t = self.submit("shimless", self.counted("shimless", "sleep 1000"))
        pid = self.wait_host_pid(t)
        task = self.task(t)
        uid = task["metadata"]["uid"]
        with open(os.path.join(a.run_dir, "tasks", uid, "shim.pid")) as f:
            os.kill(int(f.read()), signal.SIGKILL)
        task = self.wait_phase(t, "Failed", timeout=TIMEOUT_S)
        self.assertEqual(task["status"].get("reason"), "TaskLost", task["status"])
        wait_for("the task's process killed", lambda: not pid_alive(pid), timeout=TIMEOUT_S)
        wait_for("its GPU free", lambda: self.gpus_free(a), timeout=TIMEOUT_S)
        time.sleep(0.5)
        self.assertEqual(self.phase(t), "Failed")


if __name__ == "__main__":
    main()
