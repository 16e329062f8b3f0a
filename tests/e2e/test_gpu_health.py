"""GPU health end to end, with fake GPUs driven through their counters files
(docs/metrics.md): a GPU failing while a task holds it, and one failing
before the agent starts, each leave exactly that GPU out of what the
scheduler offers while the node's other GPUs fill up; the Node status
changes at once (the agent's heartbeat is 30 s here); the holder gets an
Event and, the device being gone, fails with reason GPULost, and its job is
requeued onto a healthy GPU; a recovered GPU is offered again. Also: a critical Xid, the IdleGPU Warning, and a project
that stops idle jobs.
"""
import os
import shutil
import tempfile
import time

import gantry_e2e as E

N_GPUS = 4


class GpuHealthTest(E.AgentTest):
    # heartbeats every 30 s show that health changes do not wait for them
    NODE_GRACE_S = 90
    gantryd_args = ("--node-grace", str(NODE_GRACE_S))

    def setUp(self):
        super().setUp()
        self.counters = tempfile.mkdtemp(prefix="gantry-gpus-")
        self.addCleanup(shutil.rmtree, self.counters, True)

    def start_agent(self, *extra):
        self.agent = self.gantlet(fake_gpus="%dxA100-80GB" % N_GPUS, heartbeat_s=30,
                                  extra_args=["--fake-gpu-counters", self.counters,
                                              "--gpu-sample-ms", "100"] + list(extra))

    def set_gpu(self, index, text):
        path = os.path.join(self.counters, str(index))
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.rename(path + ".tmp", path)

    def health(self):
        gpus = self.agent.node()["status"]["gpus"]
        return {g["index"]: g["health"] for g in gpus}

    def events(self, name):
        st, body = self.g.request("GET", E.API + "/events?fieldSelector=involvedObject.name=" +
                                  name)
        self.assertEqual(st, 200, body)
        return {e["reason"]: e for e in body.get("items", [])}

    def fill(self, prefix, n):
        """Submit n one-GPU jobs; returns their task names."""
        return [self.submit("%s%d" % (prefix, i), ["sleep", "600"], cpu="100m", grace_s=0)
                for i in range(n)]

    def assert_offered_all_but(self, tasks, bad):
        """Of the tasks (one more than the healthy GPUs), all but one run, on
        every GPU except bad, and the last one waits."""
        def settled():
            ph = [self.phase(t) for t in tasks]
            return ph.count("Running") == N_GPUS - 1 and ph.count("Pending") == 1 and ph
        E.wait_for("all healthy GPUs in use", settled, timeout=30)
        time.sleep(1.5)  # more scheduler cycles: still nothing on the bad GPU
        used = sorted(self.task(t)["spec"]["gpus"][0]["index"] for t in tasks
                      if self.phase(t) == "Running")
        self.assertEqual(used, [i for i in range(N_GPUS) if i != bad])
        waiting = [t for t in tasks if self.phase(t) == "Pending"]
        self.assertEqual(len(waiting), 1)
        return waiting[0]

    def test_gpu_failing_while_held(self):
        self.start_agent()
        self.assertEqual(set(self.health().values()), {"Healthy"})
        victim = self.submit("victim", ["sleep", "600"], cpu="100m", grace_s=30)
        t = self.wait_phase(victim, "Running")
        bad = t["spec"]["gpus"][0]["index"]
        watch = E.Watch(self.g, self.PROJECT + "/tasks", keep=lambda line: b"GPULost" in line)
        self.addCleanup(watch.close)
        t0 = time.monotonic()
        self.set_gpu(bad, "lost 1\n")
        E.wait_for("GPU %d Unhealthy in the Node status" % bad,
                   lambda: self.health()[bad] == "Unhealthy", timeout=10)
        self.assertLess(time.monotonic() - t0, 5)  # at once, not at the 30 s heartbeat
        self.assertEqual([h for i, h in self.health().items() if i != bad], ["Healthy"] * 3)
        # the device is gone: the task fails at once (no 30 s grace) with a clear reason
        done = E.wait_for("the task Failed as GPULost", lambda: [
            o for _, _, o in watch.events if o["metadata"]["uid"] == t["metadata"]["uid"] and
            o["status"].get("phase") == "Failed"], timeout=15)[-1]
        self.assertEqual(done["status"]["reason"], "GPULost")
        # and its job goes back to the queue (not counted as a failure), onto another GPU
        again = E.wait_for("the job's new task running", lambda: (lambda x: x if x and x[
            "metadata"]["uid"] != t["metadata"]["uid"] and x["status"].get("phase") ==
            "Running" else None)(self.task(victim)), timeout=30)
        self.assertNotEqual(again["spec"]["gpus"][0]["index"], bad)
        st, job = self.g.request("GET", self.PROJECT + "/jobs/victim")
        self.assertEqual(job["status"].get("requeueCount"), 1, job["status"])
        self.assertFalse(job["status"].get("restartCount"), job["status"])
        ev = E.wait_for("the task's Event", lambda: self.events(victim).get("GPUUnhealthy"))
        self.assertEqual(ev["type"], "Warning")
        self.assertIn("GPU %d" % bad, ev["message"])
        self.assertIn("stopped answering", ev["message"])

        waiting = self.assert_offered_all_but([victim] + self.fill("w", N_GPUS - 1), bad)
        # it answers again: Healthy, offered, and the waiting job gets it
        self.set_gpu(bad, "util 5\n")
        E.wait_for("GPU %d Healthy again" % bad, lambda: self.health()[bad] == "Healthy",
                   timeout=10)
        got = self.wait_phase(waiting, "Running", timeout=30)
        self.assertEqual(got["spec"]["gpus"][0]["index"], bad)

    def test_gpu_failing_before_agent_start(self):
        bad = 2
        self.set_gpu(bad, "lost 1\n")
        self.start_agent()
        # listed, Unhealthy, not dropped with the healthy ones
        self.assertEqual(self.health(), {0: "Healthy", 1: "Healthy", 2: "Unhealthy",
                                         3: "Healthy"})
        self.assert_offered_all_but(self.fill("w", N_GPUS), bad)
        m = self.g.request("GET", "/metrics", token=None, raw=True)[1]
        self.assertIn('gantry_node_gpu_healthy{node="n1",gpu="2"', m)

    def test_critical_xid_keeps_the_task_and_idle_warning(self):
        self.start_agent("--idle-gpu-seconds", "1")
        t = self.submit("busy", ["sleep", "600"], cpu="100m", grace_s=0)
        gpu = self.wait_phase(t, "Running")["spec"]["gpus"][0]["index"]
        # at 0 % for a second: a Warning on the Job
        ev = E.wait_for("IdleGPU on the job", lambda: self.events("busy").get("IdleGPU"),
                        timeout=15)
        self.assertEqual(ev["type"], "Warning")
        self.assertEqual(ev["involvedObject"]["kind"], "Job")
        # an application's Xid changes nothing; a critical one fails the GPU, not the task
        self.set_gpu(gpu, "util 50\nxid 13\n")
        time.sleep(1)
        self.assertEqual(self.health()[gpu], "Healthy")
        self.set_gpu(gpu, "util 50\nxid 79\n")
        E.wait_for("GPU Unhealthy after Xid 79", lambda: self.health()[gpu] == "Unhealthy",
                   timeout=10)
        ev = E.wait_for("the task's Event", lambda: self.events(t).get("GPUUnhealthy"))
        self.assertIn("Xid 79", ev["message"])
        time.sleep(1)
        self.assertEqual(self.phase(t), "Running")
        with __import__("urllib.request").request.urlopen(
                "http://127.0.0.1:%d/metrics" % self.agent.port) as r:
            text = r.read().decode()
        self.assertRegex(text, r'DCGM_FI_DEV_XID_ERRORS\{gpu="%d",[^}]*task="%s"[^}]*\} 79\n'
                         % (gpu, t))
        self.assertRegex(text, r'gantry_gpu_xid_errors_total\{gpu="%d",[^}]*\} 1\n' % gpu)

    def test_project_stops_idle_jobs(self):
        st, body = self.g.request("POST", E.API + "/projects", E.obj(
            "Project", "proj-idle", spec={"department": "dept-a", "stopIdleGPUJobs": True,
                                          "members": [{"user": "alice", "role": "admin"}]}))
        self.assertEqual(st, 201, body)
        self.start_agent("--idle-gpu-seconds", "1")
        tmpl = {"command": ["sleep", "600"], "terminationGracePeriodSeconds": 0,
                "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "100m", "memory": "64Mi"}}}
        path = E.API + "/projects/proj-idle"
        st, body = self.g.request("POST", path + "/jobs", E.obj(
            "Job", "idler", "proj-idle", spec={"replicaSpecs": {"Worker": {
                "replicas": 1, "restartPolicy": "OnFailure", "template": tmpl}}}), token="alice")
        self.assertEqual(st, 201, body)

        def task():
            st, t = self.g.request("GET", path + "/tasks/idler-worker-0")
            return t if st == 200 else {}
        E.wait_for("the idle task stopped", lambda: task().get("status", {}).get(
            "phase") == "Failed", timeout=20)
        self.assertEqual(task()["status"]["reason"], "IdleGPU")
        self.assertTrue(task()["spec"]["stopIdleGPU"])
        ev = E.wait_for("IdleGPU on the job", lambda: self.events("idler").get("IdleGPU"))
        self.assertIn("its project stops idle jobs", ev["message"])

        # the job ends, not restarted despite OnFailure
        def job_failed():
            st, j = self.g.request("GET", path + "/jobs/idler")
            return j if any(c["type"] == "Failed" and c["status"] == "True"
                            for c in j.get("status", {}).get("conditions", [])) else None
        j = E.wait_for("the job Failed", job_failed, timeout=20)
        self.assertFalse(j["status"].get("restartCount"), j["status"])


if __name__ == "__main__":
    E.main()
