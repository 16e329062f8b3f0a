#!/usr/bin/env python3
"""gantryd's controllers and scheduler wiring against a fake node agent.

The fake agent (a thread speaking docs/agent.md over the public API with
the node token) registers a Node with 8 fake GPUs, heartbeats, polls its
tasks, marks Bound tasks Running, finishes them when the test says so, and
carries out spec.stop. Checks: a Job becomes Tasks bound to distinct GPUs;
status.allocated names them while they run and is empty afterwards; the job
Succeeds; a job waiting for the same GPUs is not bound before the first
task's exit is recorded; a deleted running task keeps existing (with
spec.stop) until its terminal status is written; a node that stops
heartbeating is NotReady within grace + 2 s, its tasks Failed/NodeLost,
its GPUs free and the job requeued, and the lost node's late status writes
for the replaced run are refused (409) and change nothing. With a fifth of
the store writes refused (a fault point), every job still ends.
"""
import threading
import time
import unittest

from gantry_e2e import API, GantrydTest, main, obj

GRACE_S = 3
P = API + "/projects/proj-a"


def send(g, method, path, body, token="admin"):
    """A write, sent again while gantryd answers 503 (a store that refused
    it: nothing was written)."""
    while True:
        st, answer = g.request(method, path, body, token=token)
        if st != 503:
            return st, answer
        time.sleep(0.05)


class FakeAgent(threading.Thread):
    def __init__(self, g, name="n1"):
        super().__init__(daemon=True)
        self.g, self.name = g, name
        self.heartbeat = True
        self.paused = False   # heartbeats only, no task actions
        self.finish = set()   # task names allowed to exit 0
        self.running = {}     # name -> uid
        self.stopped = threading.Event()

    def status(self, ready=True):
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        gpus = [{"index": i, "uuid": "GPU-fake-%s-%d" % (self.name, i), "model": "A100-80GB",
                 "memoryBytes": 80 << 30, "numaNode": 0, "group": "g%d" % (i // 4),
                 "health": "Healthy"} for i in range(8)]
        res = {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": 8}
        return {"capacity": res, "allocatable": res, "gpus": gpus,
                "addresses": [{"type": "AgentURL", "address": "http://127.0.0.1:1"}],
                "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                "reason": "AgentReady", "lastHeartbeatTime": now}]}

    def register(self):
        st, body = send(self.g, "POST", API + "/nodes", obj("Node", self.name), token="node")
        assert st in (201, 409), (st, body)
        st, body = send(self.g, "PUT", API + "/nodes/%s/status" % self.name, self.status(),
                        token="node")
        assert st == 200, (st, body)

    def put_status(self, t, status):
        path = P + "/tasks/%s/status" % t["metadata"]["name"]
        return self.g.request("PUT", path, status, token="node")[0]

    def run(self):
        last_hb = 0
        while not self.stopped.is_set():
            if self.heartbeat and time.time() - last_hb > 0.5:
                self.g.request("PUT", API + "/nodes/%s/status" % self.name, self.status(),
                               token="node")
                last_hb = time.time()
            st, body = self.g.request("GET", API + "/tasks?fieldSelector=spec.nodeName=" +
                                      self.name, token="node")
            for t in (body or {}).get("items", []) if st == 200 and not self.paused else []:
                self.step(t)
            time.sleep(0.1)

    def step(self, t):
        name, phase = t["metadata"]["name"], t.get("status", {}).get("phase")
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        stop = t["spec"].get("stop")
        if phase == "Bound" and not self.heartbeat:
            return
        if phase == "Bound":
            self.put_status(t, dict(t["status"], phase="Running", startTime=now, hostPid=4242))
        elif phase == "Running" and stop:
            self.put_status(t, dict(t["status"], phase="Failed", exitCode=143, signal=15,
                                    reason="Killed", finishTime=now))
        elif phase == "Running" and name in self.finish:
            self.put_status(t, dict(t["status"], phase="Succeeded", exitCode=0,
                                    reason="Completed", finishTime=now))


def gpu_job(name, gpus, replicas=1):
    tmpl = {"command": ["sleep", "1000"],
            "resources": {"limits": {"nvidia.com/gpu": gpus, "cpu": "1", "memory": "1Gi"}}}
    return obj("Job", name, "proj-a",
               spec={"replicaSpecs": {"Worker": {"replicas": replicas, "template": tmpl}}})


class ControllerBase(GantrydTest):
    """gantryd, department dept-a, project proj-a and a FakeAgent n1."""
    gantryd_args = ("--node-grace", str(GRACE_S))

    def setUp(self):
        super().setUp()
        g = self.g
        st, body = send(g, "POST", API + "/departments", obj(
            "Department", "dept-a",
            spec={"quota": {"nvidia.com/gpu": 16, "cpu": "128", "memory": "1Ti"}}))
        self.assertEqual(st, 201, body)
        st, body = send(g, "POST", API + "/projects", obj(
            "Project", "proj-a", spec={"department": "dept-a",
                                       "members": [{"user": "alice", "role": "admin"}]}))
        self.assertEqual(st, 201, body)
        self.agent = FakeAgent(g)
        self.agent.register()
        self.agent.start()
        self.addCleanup(self.agent.stopped.set)

    def get(self, path, code=200):
        st, body = self.g.request("GET", path)
        self.assertEqual(st, code, body)
        return body

    def wait(self, what, fn, timeout=10.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = fn()
            if v:
                return v
            time.sleep(0.05)
        self.fail("timed out waiting for " + what)

    def task(self, name):
        st, body = self.g.request("GET", P + "/tasks/" + name)
        return body if st == 200 else None

    def phase(self, name):
        t = self.task(name)
        return t and t.get("status", {}).get("phase")

    def job_cond(self, name):
        st, body = self.g.request("GET", P + "/jobs/" + name)
        for c in body.get("status", {}).get("conditions", []):
            if c["status"] == "True" and c["type"] != "Created":
                return c["type"]
        return None

    def allocated(self):
        return self.get(API + "/nodes/n1")["status"]["allocated"]


class ControllerTest(ControllerBase):
    def test_job_runs_and_succeeds(self):
        st, body = self.g.request("POST", P + "/jobs", gpu_job("train", 2, replicas=2),
                                  token="alice")
        self.assertEqual(st, 201, body)
        names = ["train-worker-0", "train-worker-1"]
        for n in names:
            self.wait(n + " running", lambda n=n: self.phase(n) == "Running")
        tasks = [self.task(n) for n in names]
        for t in tasks:
            self.assertEqual(t["spec"]["nodeName"], "n1")
            self.assertEqual(t["metadata"]["labels"]["gantry.dev/job"], "train")
            self.assertEqual(t["metadata"]["creator"]["user"], "alice")
            self.assertEqual(t["spec"]["department"], "dept-a")
            self.assertIn("boundTime", t["status"])
        idx = [gp["index"] for t in tasks for gp in t["spec"]["gpus"]]
        self.assertEqual(len(set(idx)), 4, idx)
        for t in tasks:
            for gp in t["spec"]["gpus"]:
                self.assertEqual(gp["uuid"], "GPU-fake-n1-%d" % gp["index"])
        alloc = self.allocated()
        self.assertEqual(sorted(a["index"] for a in alloc["gpus"]), sorted(idx))
        self.assertEqual({a["task"] for a in alloc["gpus"]}, {"proj-a/" + n for n in names})
        self.assertEqual(alloc["resources"]["nvidia.com/gpu"], "4")
        self.wait("job Running", lambda: self.job_cond("train") == "Running")
        self.agent.finish.update(names)
        self.wait("job Succeeded", lambda: self.job_cond("train") == "Succeeded")
        job = self.get(P + "/jobs/train")
        self.assertEqual(job["status"]["replicaStatuses"]["Worker"]["succeeded"], 2)
        self.assertIn("completionTime", job["status"])
        self.assertEqual(self.allocated()["gpus"], [])

    def test_waiting_job_and_task_delete(self):
        self.assertEqual(self.g.request("POST", P + "/jobs", gpu_job("first", 8))[0], 201)
        self.wait("first running", lambda: self.phase("first-worker-0") == "Running")
        self.assertEqual(self.g.request("POST", P + "/jobs", gpu_job("second", 8))[0], 201)
        self.wait("second's task", lambda: self.task("second-worker-0"))
        time.sleep(1.5)
        self.assertEqual(self.phase("second-worker-0"), "Pending")
        self.wait("second Queued", lambda: self.job_cond("second") == "Queued")
        # stop the agent from acting so the delete's intermediate state is visible
        self.agent.paused = True
        time.sleep(0.3)
        st, body = self.g.request("DELETE", P + "/tasks/first-worker-0")
        self.assertEqual(st, 200, body)
        t = self.task("first-worker-0")
        self.assertIsNotNone(t)
        self.assertEqual(t["spec"]["stop"]["reason"], "Deleted")
        self.assertIn("deletionTimestamp", t["metadata"])
        time.sleep(1.5)
        self.assertIsNotNone(self.task("first-worker-0"))
        self.assertEqual(self.phase("second-worker-0"), "Pending")
        # the agent reports the exit: the task goes, its GPUs go to the second job
        st = self.agent.put_status(t, dict(t["status"], phase="Failed", reason="Killed",
                                          exitCode=143))
        self.assertEqual(st, 200)
        self.wait("deleted task gone", lambda: self.task("first-worker-0") is None)
        self.wait("second bound", lambda: self.phase("second-worker-0") == "Bound")
        # terminal status never changes
        st, _ = self.g.request("PUT", P + "/tasks/first-worker-0/status",
                               {"phase": "Running"}, token="node")
        self.assertEqual(st, 404)

    def test_node_lost(self):
        self.assertEqual(self.g.request("POST", P + "/jobs", gpu_job("lost", 4))[0], 201)
        self.wait("running", lambda: self.phase("lost-worker-0") == "Running")
        self.assertEqual(len(self.allocated()["gpus"]), 4)
        self.agent.heartbeat = False
        t0 = time.time()

        def not_ready():
            n = self.get(API + "/nodes/n1")
            c = [c for c in n["status"]["conditions"] if c["type"] == "Ready"][0]
            return c["status"] == "False" and c.get("reason") == "NodeLost"
        orig_uid = self.task("lost-worker-0")["metadata"]["uid"]
        self.wait("node NotReady", not_ready, timeout=GRACE_S + 3)
        # the Failed/NodeLost task is soon replaced by the requeue: either may be seen
        t = self.wait("task failed", lambda: (lambda t: t if t and (
            t["status"].get("phase") == "Failed" or t["metadata"]["uid"] != orig_uid) else None)(
            self.task("lost-worker-0")), timeout=3)
        self.assertLess(time.time() - t0, GRACE_S + 2 + 1.0)
        if t["metadata"]["uid"] == orig_uid:
            self.assertEqual(t["status"]["reason"], "NodeLost")
            self.assertIn("finishTime", t["status"])
        else:
            t = {"metadata": {"uid": orig_uid}}
        self.assertEqual(self.allocated()["gpus"], [])
        # a lost node requeues the job without counting toward backoffLimit: the
        # task is replaced (new uid) and waits, as the only node is gone
        self.wait("requeued", lambda: self.get(P + "/jobs/lost")["status"].get(
            "requeueCount") == 1)
        self.wait("replaced", lambda: self.task("lost-worker-0")["status"].get(
            "previous", {}).get("uid") == t["metadata"]["uid"])
        self.assertEqual(self.phase("lost-worker-0"), "Pending")
        self.assertEqual(self.get(P + "/jobs/lost")["status"].get("restartCount", 0), 0)
        # the lost node's late status writes for the old run are refused: the
        # new run stays Pending, never Running (or ended) with no node
        path = P + "/tasks/lost-worker-0/status"
        running = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z", "hostPid": 4242}
        st, body = self.g.request("PUT", path, {"metadata": {"uid": orig_uid},
                                                "status": running}, token="node")
        self.assertEqual((st, (body.get("details") or {}).get("field")), (409, "metadata.uid"),
                         body)
        st, body = self.g.request("PUT", path, running, token="node")
        self.assertEqual((st, (body.get("details") or {}).get("field")), (409, "spec.nodeName"),
                         body)
        t = self.task("lost-worker-0")
        self.assertEqual((t["status"]["phase"], t["spec"].get("nodeName", "")), ("Pending", ""))

    def test_admission_and_status_rights(self):
        j = gpu_job("root", 1)
        j["spec"]["replicaSpecs"]["Worker"]["template"]["runAsUser"] = 0
        st, body = self.g.request("POST", P + "/jobs", j, token="alice")
        self.assertEqual(st, 422, body)
        self.assertIn("runAsUser", body["message"])
        self.assertEqual(self.g.request("POST", P + "/jobs", gpu_job("ok", 1))[0], 201)
        self.wait("task", lambda: self.task("ok-worker-0"))
        st, _ = self.g.request("PUT", P + "/tasks/ok-worker-0/status", {"phase": "Running"},
                               token="alice")
        self.assertEqual(st, 403)
        m = self.g.request("GET", "/metrics", token=None, raw=True)[1]
        self.assertIn("gantry_scheduler_binds_total", m)
        self.assertIn("gantry_scheduler_cycle_duration_seconds_count", m)


class RefusedWrites(ControllerBase):
    """A fifth of gantryd's store writes refused before they are submitted
    (store-commit=fail, as a store that takes no writes answers), the
    controllers' own included: every job still ends, as each refused
    controller write is made again."""
    gantryd_args = ControllerBase.gantryd_args + ("--fault-points", "store-commit=fail:p=0.2")

    def test_every_job_ends(self):
        names = ["refused-%d" % i for i in range(12)]
        for n in names:
            st, body = send(self.g, "POST", P + "/jobs", gpu_job(n, 1), token="alice")
            self.assertEqual(st, 201, body)
        self.agent.finish.update(n + "-worker-0" for n in names)
        self.wait("every job Succeeded", lambda: [
            n for n in names if self.job_cond(n) != "Succeeded"] == [], timeout=60)


if __name__ == "__main__":
    main()
