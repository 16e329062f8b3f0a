#!/usr/bin/env python3
"""Restart policies against a fake node agent (test_controllers.FakeAgent).

Checks: OnFailure with backoffLimit 2 on a task that always exits 1 ends
Failed (BackoffLimitExceeded) after exactly 3 runs, with the back-off
between runs, each run a new uid whose status.previous names the last;
ExitCode fails at once on exit 2; a failed worker stops its master and
leaves no GPU held; bound tasks get ports and the PyTorch environment.
With --event-ttl 5, a job's Events are deleted 5 s after their last
occurrence (lastTimestamp, whole seconds) while the job itself stays.
With --terminated-task-gc-threshold 2, the ended Tasks of finished jobs
beyond two are deleted oldest first, the jobs keep their status and
counts, and an unfinished job's ended Task stays.
"""
import time

from gantry_e2e import main, obj
import test_controllers as tc

P = tc.P

BACKOFF_MS = 1000


class FailingAgent(tc.FakeAgent):
    def __init__(self, g):
        super().__init__(g)
        self.exit_codes = {}  # task name -> exit code on start
        self.runs = {}        # task name -> [(uid, start time)]

    def step(self, t):
        name, phase = t["metadata"]["name"], t.get("status", {}).get("phase")
        if phase == "Running" and name in self.exit_codes and not t["spec"].get("stop"):
            runs = self.runs.setdefault(name, [])
            if not runs or runs[-1][0] != t["metadata"]["uid"]:
                runs.append((t["metadata"]["uid"], time.time()))
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            self.put_status(t, dict(t["status"], phase="Failed", exitCode=self.exit_codes[name],
                                    reason="Error", finishTime=now))
            return
        super().step(t)


def job(name, policy, workers=0, backoff=2):
    tmpl = {"command": ["x"], "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "1"}}}
    specs = {"Master": {"replicas": 1, "restartPolicy": policy, "template": tmpl}}
    if workers:
        specs["Worker"] = {"replicas": workers, "restartPolicy": policy, "template": tmpl}
    return obj("Job", name, "proj-a",
               spec={"replicaSpecs": specs, "runPolicy": {"backoffLimit": backoff}})


class JobsTest(tc.ControllerTest):
    gantryd_args = ("--restart-backoff-ms", str(BACKOFF_MS))
    # the base class's own tests run in test_controllers.py
    test_job_runs_and_succeeds = test_node_lost = None
    test_waiting_job_and_task_delete = test_admission_and_status_rights = None

    def setUp(self):
        super().setUp()
        self.agent.stopped.set()
        self.agent = FailingAgent(self.g)
        self.agent.start()
        self.addCleanup(self.agent.stopped.set)

    def cond(self, name):
        st = self.get(P + "/jobs/" + name).get("status", {})
        on = [c for c in st.get("conditions", []) if c["status"] == "True"]
        return on[-1] if on else {}

    def job_events(self, name):
        """The Events about job name, by reason."""
        items = self.get("/apis/gantry.dev/v1/events?fieldSelector=involvedObject.name=" + name)
        return {e["reason"]: e for e in items.get("items", [])
                if e["involvedObject"]["kind"] == "Job"}

    def test_on_failure_backoff_limit(self):
        self.agent.exit_codes["bo-master-0"] = 1
        self.assertEqual(self.g.request("POST", P + "/jobs", job("bo", "OnFailure"))[0], 201)
        self.wait("Failed", lambda: self.cond("bo").get("type") == "Failed", timeout=30)
        self.assertEqual(self.cond("bo")["reason"], "BackoffLimitExceeded")
        runs = self.agent.runs["bo-master-0"]
        self.assertEqual(len(runs), 3, runs)
        self.assertGreaterEqual(runs[1][1] - runs[0][1], BACKOFF_MS / 1000)
        self.assertGreaterEqual(runs[2][1] - runs[1][1], 2 * BACKOFF_MS / 1000)
        self.assertEqual(self.get(P + "/jobs/bo")["status"]["restartCount"], 2)
        # the job's story as Events: two restarts, then the failure
        ev = self.job_events("bo")
        self.assertEqual(ev["BackoffLimitExceeded"]["type"], "Warning")
        # Restarting (the second restart folds into this Event's count)
        self.assertEqual(ev["TaskFailed"]["type"], "Warning")
        self.assertIn("bo-master-0 failed (Error, exit code 1); restart 1",
                      ev["TaskFailed"]["message"])
        self.assertIn("JobRunning", ev)
        t = self.task("bo-master-0")
        self.assertEqual(t["metadata"]["uid"], runs[2][0])
        self.assertEqual(t["status"]["previous"]["uid"], runs[1][0])
        self.assertEqual(self.allocated()["gpus"], [])

    def test_exit_code_permanent_and_worker_stops_master(self):
        self.agent.exit_codes["ec-worker-0"] = 2
        self.assertEqual(self.g.request("POST", P + "/jobs", job("ec", "ExitCode", 1))[0], 201)
        self.wait("Failed", lambda: self.cond("ec").get("type") == "Failed", timeout=15)
        self.assertEqual(self.cond("ec")["reason"], "TaskFailed")
        self.assertEqual(len(self.agent.runs["ec-worker-0"]), 1)
        self.wait("master stopped", lambda: self.phase("ec-master-0") == "Failed")
        m = self.task("ec-master-0")
        self.assertEqual(m["spec"]["stop"]["reason"], "JobFinished")
        env = {e["name"]: e["value"] for e in m["spec"]["template"].get("env", [])}
        ports = {p["name"]: p["port"] for p in m["spec"]["ports"]}
        self.assertEqual(env["MASTER_ADDR"], "ec-master-0")
        self.assertEqual(env["MASTER_PORT"], str(ports["gantry"]))
        self.assertEqual(env["WORLD_SIZE"], "2")
        self.assertEqual(env["RANK"], "0")
        self.wait("GPUs free", lambda: self.allocated()["gpus"] == [])


class EventTtlTest(JobsTest):
    gantryd_args = ("--restart-backoff-ms", str(BACKOFF_MS), "--event-ttl", "5")
    test_on_failure_backoff_limit = test_exit_code_permanent_and_worker_stops_master = None

    def test_events_expire_after_the_ttl(self):
        self.agent.exit_codes["ttl-master-0"] = 2
        self.assertEqual(self.g.request("POST", P + "/jobs", job("ttl", "ExitCode"))[0], 201)
        self.wait("Failed", lambda: self.cond("ttl").get("type") == "Failed", timeout=15)
        self.wait("the failure's Event", lambda: "TaskFailed" in self.job_events("ttl"))
        # swept every 2.5 s (half the TTL): gone within the TTL and a sweep
        t0 = time.time()
        self.wait("Events expired", lambda: not self.job_events("ttl"), timeout=30)
        self.assertLess(time.time() - t0, 20)
        self.assertEqual(self.cond("ttl").get("type"), "Failed")  # the job stays


class TaskGcTest(JobsTest):
    gantryd_args = ("--restart-backoff-ms", str(BACKOFF_MS), "--terminated-task-gc-threshold", "2")
    test_on_failure_backoff_limit = test_exit_code_permanent_and_worker_stops_master = None

    def task_names(self):
        return {t["metadata"]["name"] for t in self.get(P + "/tasks")["items"]}

    def test_oldest_ended_tasks_of_finished_jobs_go(self):
        # a running job whose worker has ended: its job still counts it
        self.agent.finish.add("live-worker-0")
        self.assertEqual(self.g.request("POST", P + "/jobs", job("live", "Never", 1))[0], 201)
        self.wait("live worker ended", lambda: self.phase("live-worker-0") == "Succeeded")
        names = ["gc%d" % i for i in range(4)]
        for n in names:
            self.agent.finish.add(n + "-master-0")
            self.assertEqual(self.g.request("POST", P + "/jobs", job(n, "Never"))[0], 201)
            self.wait(n + " Succeeded", lambda: self.cond(n).get("type") == "Succeeded",
                      timeout=15)
            time.sleep(1.1)  # finishTime has whole seconds: an order to keep
        kept = {"gc2-master-0", "gc3-master-0", "live-master-0", "live-worker-0"}
        # a pass every 2 s once more Tasks than the threshold are cached
        self.wait("the two oldest collected", lambda: self.task_names() == kept, timeout=20)
        for n in names:
            st = self.get(P + "/jobs/" + n)["status"]
            self.assertEqual(self.cond(n).get("type"), "Succeeded", st)
            self.assertEqual(st["replicaStatuses"]["Master"],
                             {"active": 0, "succeeded": 1, "failed": 0}, st)
        self.assertEqual(self.cond("live").get("type"), "Running")
        time.sleep(4.5)  # two more passes: nothing else goes
        self.assertEqual(self.task_names(), kept)
        self.get(P + "/tasks/gc0-master-0", code=404)


if __name__ == "__main__":
    main()
