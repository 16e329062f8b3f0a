#!/usr/bin/env python3
"""Live training scalars and utilisation through a real gantlet.

A job with spec.tensorboard.logDir (relative: the task's working
directory) writes loss and accuracy as TensorBoard event files
(examples/pytorch-digits/tfevents.py) while it runs: each point appears in
GET jobs/J/scalars within 2 s of its wall time, `gantry scalars` prints the
latest per tag, the job's utilisation history and `gantry top jobs` show
its cpu and memory from its cgroup and the gpu utilisation its fake GPU's
counter file says (--fake-gpu-counters), and spec.tensorboard.server is
accepted (the node has no tensorboard; gantlet says so in its log). A
logDir outside the working directory and every volume is refused by the
agent (logged), never read.
"""
import os
import shutil
import tempfile
import time

from gantry_e2e import API, SOURCE, AgentTest, main, obj, wait_for

EXAMPLE = os.path.join(SOURCE, "examples", "pytorch-digits")
LATENCY_S = 2.0
STEPS = 8

WRITER = """
import sys, time
sys.path.insert(0, %r)
from tfevents import SummaryWriter
w = SummaryWriter("tb")
x = 0
for step in range(%d):
    w.add_scalar("loss", 1.0 / (step + 1), step)
    w.add_scalar("accuracy", step / 10.0, step)
    end = time.time() + 0.7
    while time.time() < end:
        x += 1
time.sleep(2)
""" % (EXAMPLE, STEPS)


class TensorBoardTest(AgentTest):
    def post_job(self, name, script, tensorboard):
        tmpl = {"command": ["/usr/bin/python3", "-c", script],
                "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "1", "memory": "512Mi"}}}
        st, body = self.g.request("POST", self.PROJECT + "/jobs", obj(
            "Job", name, "proj-a", spec={
                "replicaSpecs": {"Worker": {"replicas": 1, "template": tmpl}},
                "tensorboard": tensorboard}), token="alice")
        self.assertEqual(st, 201, body)
        return name + "-worker-0"

    def test_live_scalars_and_history(self):
        counters = tempfile.mkdtemp(prefix="gantry-tb-gpus-")
        self.addCleanup(shutil.rmtree, counters, True)
        with open(os.path.join(counters, "0"), "w") as f:
            f.write("util 42\n")
        a = self.gantlet(extra_args=["--fake-gpu-counters", counters])
        task = self.post_job("tb", WRITER, {"logDir": "tb", "server": True})
        self.wait_phase(task, "Running", timeout=30)
        seen = {}  # (tag, step) -> when first seen here
        history = top = None
        cpu_max = gpu_util = 0
        deadline = time.time() + 60
        while time.time() < deadline and len(seen) < 2 * STEPS:
            st, body = self.g.request("GET", self.PROJECT + "/jobs/tb/scalars", token="alice")
            self.assertEqual(st, 200, body)
            now = time.time()
            for s in body["tags"]:
                for step, wall in zip(s["steps"], s["wallTimes"]):
                    seen.setdefault((s["tag"], step), (now, wall))
            st, h = self.g.request("GET", self.PROJECT + "/jobs/tb/history", token="alice")
            cpu_max = max(cpu_max, (h.get("current") or {}).get("cpuMilli", 0))
            gpu_util = max(gpu_util, (h.get("current") or {}).get("gpuUtil", 0))
            if history is None:
                if st == 200 and h.get("current") and h["current"]["memoryBytes"] > 0:
                    history = h
                    top = self.g.cli("top", "jobs", token="alice").stdout
            time.sleep(0.05)
        self.assertEqual(len(seen), 2 * STEPS, sorted(seen))
        lat = [now - wall for now, wall in seen.values()]
        print("scalar points %d, written -> in the API: max %.2f s, median %.2f s"
              % (len(lat), max(lat), sorted(lat)[len(lat) // 2]), flush=True)
        self.assertLess(max(lat), LATENCY_S, sorted(lat))
        st, body = self.g.request("GET", self.PROJECT + "/jobs/tb/scalars?tag=loss",
                                  token="alice")
        self.assertEqual([s["tag"] for s in body["tags"]], ["loss"])
        loss = body["tags"][0]
        self.assertEqual(loss["steps"], list(range(STEPS)))
        self.assertAlmostEqual(loss["latest"]["value"], 1.0 / STEPS, places=6)
        out = self.g.cli("scalars", "tb", "-p", "proj-a", token="alice").stdout
        self.assertIn("loss", out)
        self.assertIn("accuracy", out)
        self.assertIn("%g" % (1.0 / STEPS), out)
        self.assertIsNotNone(history, "no utilisation sample with memory came")
        self.assertEqual(history["current"]["tasks"], 1)
        # the writer spins between points: up to one CPU (its limit), less on a busy machine
        self.assertGreater(cpu_max, 50, history)
        self.assertEqual(history["current"]["gpuMilli"], 1000)
        self.assertEqual(gpu_util, 42, history)
        self.assertIn("tb", top)
        self.assertIn("proj-a", top)
        wait_for("the 10 s history bucket", lambda: self.g.request(
            "GET", self.PROJECT + "/jobs/tb/history", token="alice")[1]["times"], timeout=15)
        self.wait_phase(task, ("Succeeded", "Failed"), timeout=30)
        self.assertIn("no tensorboard is installed on this node", a.logs())
        # another user's project is not readable
        st, _ = self.g.request("GET", self.PROJECT + "/jobs/tb/scalars", token="dave")
        self.assertEqual(st, 403)

    def test_log_dir_outside_is_refused(self):
        a = self.gantlet()
        task = self.post_job("out", "import time; time.sleep(3)", {"logDir": "/etc"})
        self.wait_phase(task, ("Succeeded", "Failed"), timeout=30)
        self.assertIn("neither in a volume nor in the task's working directory", a.logs())
        st, body = self.g.request("GET", self.PROJECT + "/jobs/out/scalars", token="alice")
        self.assertEqual((st, body["tags"]), (200, []))
        st, body = self.g.request("POST", self.PROJECT + "/jobs", obj(
            "Job", "bad", "proj-a", spec={
                "replicaSpecs": {"Worker": {"replicas": 1, "template": {"command": ["true"]}}},
                "tensorboard": {"logDir": "../x"}}), token="alice")
        self.assertEqual(st, 422, body)
        self.assertIn("spec.tensorboard.logDir", body["message"])


if __name__ == "__main__":
    main()
