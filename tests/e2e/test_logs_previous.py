#!/usr/bin/env python3
"""`gantry logs --previous` and distributed `gantry run` against a real gantlet.

Checks:
- a one-task job (OnFailure, backoffLimit 2) whose command prints a line
  of its own per run and exits 1 runs three times; afterwards, across
  several of the agent's full lists, `gantry logs --previous` prints the
  second run's line and plain `gantry logs` the third's, and the node
  keeps exactly two state directories (the first run's went once the
  third replaced the second);
- `gantry logs TASK` prints that task's log (a name that is neither a job
  nor a task fails with the job's 404);
- `gantry run --workers 1` makes a Master and a Worker and follows the
  master's output (rank 0 of world size 2).
"""
import time

from gantry_e2e import AgentTest, main, obj

BACKOFF_MS = 300


class LogsPrevious(AgentTest):
    gantryd_args = AgentTest.gantryd_args + ("--restart-backoff-ms", str(BACKOFF_MS))

    def job_condition(self, name):
        st, body = self.g.request("GET", self.PROJECT + "/jobs/" + name)
        on = [c for c in body.get("status", {}).get("conditions", []) if c["status"] == "True"]
        return on[-1]["type"] if on else None

    def test_previous_run_log(self):
        a = self.gantlet(heartbeat_s=1)
        tmpl = {"command": ["sh", "-c", "echo run-$(date +%s%N); exit 1"],
                "resources": {"limits": {"nvidia.com/gpu": 0, "cpu": "10m", "memory": "64Mi"}}}
        st, body = self.g.request("POST", self.PROJECT + "/jobs", obj(
            "Job", "flaky", "proj-a",
            spec={"replicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "OnFailure",
                                              "template": tmpl}},
                  "runPolicy": {"backoffLimit": 2}}), token="alice")
        self.assertEqual(st, 201, body)
        deadline = time.time() + 40
        while self.job_condition("flaky") != "Failed":
            self.assertLess(time.time(), deadline, "job flaky never Failed")
            time.sleep(0.2)
        task = self.task("flaky-worker-0")
        self.assertEqual(task["status"]["phase"], "Failed")
        prev = task["status"]["previous"]
        self.assertEqual(prev["nodeName"], "n1")
        self.assertNotEqual(prev["uid"], task["metadata"]["uid"])
        time.sleep(3.5)  # several full lists: the agent must keep the previous run
        cur = self.g.cli("logs", "flaky", "-p", "proj-a", token="alice").stdout
        old = self.g.cli("logs", "flaky", "-p", "proj-a", "--previous", token="alice").stdout
        self.assertRegex(cur, r"^run-\d+\n$")
        self.assertRegex(old, r"^run-\d+\n$")
        self.assertLess(int(old.strip()[4:]), int(cur.strip()[4:]))
        dirs = sorted(d.rsplit("/", 1)[1] for d in a.state_dirs())
        self.assertEqual(dirs, sorted([prev["uid"], task["metadata"]["uid"]]))
        # --replica works the same way; a task never restarted has no previous run
        same = self.g.cli("logs", "flaky", "-p", "proj-a", "--replica", "worker-0",
                          "--previous", token="alice").stdout
        self.assertEqual(same, old)
        st, body = self.g.request("GET", self.PROJECT + "/tasks/flaky-worker-0/log?previous=x")
        self.assertEqual(st, 400, body)

    def test_no_previous_run(self):
        self.gantlet()
        name = self.submit("once", ["sh", "-c", "echo hi"], gpus=0, cpu="10m")
        self.wait_phase(name, "Succeeded")
        p = self.g.cli("logs", "once", "-p", "proj-a", "--previous", token="alice", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no previous run", p.stderr)
        # a task's name works where a job's does; neither: the job's 404
        p = self.g.cli("logs", name, "-p", "proj-a", "--tail", "1", token="alice")
        self.assertEqual(p.stdout, "hi\n")
        p = self.g.cli("logs", "nothing", "-p", "proj-a", token="alice", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("jobs \"nothing\" not found", p.stderr)

    def test_run_workers_follows_master(self):
        self.gantlet(fake_gpus="2xA100-80GB")
        p = self.g.cli("run", "-p", "proj-a", "--name", "ddp", "--workers", "1", "--gpus", "1",
                       "--cpu", "10m", "--memory", "64Mi", "--",
                       "sh", "-c", "echo rank=$RANK world=$WORLD_SIZE", token="alice")
        self.assertEqual(p.stdout, "rank=0 world=2\n")
        st, body = self.g.request("GET", self.PROJECT + "/tasks/ddp-worker-0")
        self.assertEqual(st, 200, body)
        self.assertEqual(body["spec"]["replicaType"], "Worker")


if __name__ == "__main__":
    main()
