"""End to end: topology constraints and Inadmissible jobs, through a real
gantryd and real gantlets with fake GPUs.

Required node: two gantlets (n1, n2) of 2 GPUs each, each with one GPU
held by a running one-GPU job (the second placed while n1 is cordoned);
a 2-task gang of one GPU per task with `required: node` waits with a
reason naming the level (REASON Unschedulable), then starts on one node
once a node has two free GPUs. With `preferred: node` the same gang starts
at once, across the two nodes.

Inadmissible: a gang of 8 GPUs in a department whose limit is 4, on a
node of 8 GPUs, gets the Inadmissible condition (reason
ExceedsDepartmentLimit, message naming the limit and what would make it
fit) within one cycle, REASON Inadmissible in `gantry get jobs`, and no
placement search while it waits (gantry_scheduler_placement_attempts_total
in /metrics, read over several seconds); raising the limit to 8 clears the
condition and the gang starts.
"""
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import API, AgentTest, obj, wait_for  # noqa: E402
from gantry_e2e import main  # noqa: E402

SPIN = ["sh", "-c", 'trap "exit 143" TERM; while :; do sleep 0.1; done']


def gang(name, project, replicas, gpus, topology=None):
    tmpl = {"command": SPIN, "terminationGracePeriodSeconds": 1,
            "resources": {"limits": {"nvidia.com/gpu": gpus, "cpu": "100m", "memory": "64Mi"}}}
    spec = {"replicaSpecs": {"Worker": {"replicas": replicas, "template": tmpl}}}
    if topology:
        spec["runPolicy"] = {"schedulingPolicy": {"topology": topology}}
    return obj("Job", name, project, spec=spec)


class TopologyE2E(AgentTest):
    def condition(self, project, name, ctype):
        st, body = self.g.request("GET", API + "/projects/%s/jobs/%s" % (project, name))
        self.assertEqual(st, 200, body)
        for c in body.get("status", {}).get("conditions", []):
            if c.get("type") == ctype:
                return c
        return {}

    def reason_column(self, project, name):
        out = self.g.cli("get", "jobs", "-p", project).stdout
        header, *rows = out.splitlines()
        start = header.index("REASON")
        for r in rows:
            if r.split() and r.split()[0] == name:
                return r[start:].split()[0] if len(r) > start else ""
        return None

    def task_of(self, project, name):
        st, body = self.g.request("GET", API + "/projects/%s/tasks/%s" % (project, name))
        return body if st == 200 else {}

    def node_of(self, project, task):
        return self.task_of(project, task).get("spec", {}).get("nodeName")

    def half_full(self):
        """n1 and n2 of 2 GPUs, one GPU of each held by a running job."""
        self.gantlet(name="n1", fake_gpus="2xA100-80GB")
        t1 = self.submit("b1", SPIN, gpus=1, memory="64Mi", cpu="100m", grace_s=1)
        self.wait_phase(t1, "Running")
        self.gantlet(name="n2", fake_gpus="2xA100-80GB")
        self.g.cli("cordon", "n1")  # best fit would put b2 beside b1
        t2 = self.submit("b2", SPIN, gpus=1, memory="64Mi", cpu="100m", grace_s=1)
        self.wait_phase(t2, "Running")
        self.g.cli("uncordon", "n1")
        self.assertEqual({self.node_of("proj-a", t1), self.node_of("proj-a", t2)}, {"n1", "n2"})
        return t1, t2

    def test_required_node_waits_then_starts_on_one_node(self):
        _, t2 = self.half_full()
        st, body = self.g.request("POST", self.PROJECT + "/jobs",
                                  gang("g", "proj-a", 2, 1, {"required": "node"}), token="alice")
        self.assertEqual(st, 201, body)
        wait_for("g's wait reason",
                 lambda: "required topology node" in
                 self.condition("proj-a", "g", "Queued").get("message", ""), timeout=10)
        q = self.condition("proj-a", "g", "Queued")
        self.assertEqual(q["status"], "True")
        self.assertTrue(q["message"].startswith("Unschedulable: required topology node"), q)
        self.assertEqual(self.reason_column("proj-a", "g"), "Unschedulable")
        time.sleep(2)  # several cycles: still nothing bound, not split across nodes
        self.assertIsNone(self.node_of("proj-a", "g-worker-0"))
        self.assertIsNone(self.node_of("proj-a", "g-worker-1"))
        self.assertEqual(self.condition("proj-a", "g", "Inadmissible"), {})

        # b2 ends: its node has two free GPUs, and the gang goes there whole
        st, body = self.g.request("DELETE", self.PROJECT + "/jobs/b2", token="alice")
        self.assertIn(st, (200, 202), body)
        self.wait_phase("g-worker-0", "Running", timeout=20)
        self.wait_phase("g-worker-1", "Running", timeout=20)
        self.assertEqual(self.node_of("proj-a", "g-worker-0"), self.node_of("proj-a", "g-worker-1"))

    def test_preferred_node_starts_at_once_across_nodes(self):
        self.half_full()
        st, body = self.g.request("POST", self.PROJECT + "/jobs",
                                  gang("p", "proj-a", 2, 1, {"preferred": "node"}), token="alice")
        self.assertEqual(st, 201, body)
        self.wait_phase("p-worker-0", "Running", timeout=15)
        self.wait_phase("p-worker-1", "Running", timeout=15)
        self.assertEqual({self.node_of("proj-a", "p-worker-0"),
                          self.node_of("proj-a", "p-worker-1")}, {"n1", "n2"})

    def attempts(self, job_id):
        st, text = self.g.request("GET", "/metrics", token=None, raw=True)
        self.assertEqual(st, 200)
        text = text.decode() if isinstance(text, bytes) else text
        m = re.search(r'^gantry_scheduler_placement_attempts_total\{job="%s"\} (\d+)$'
                      % re.escape(job_id), text, re.M)
        self.assertIsNotNone(m, "no placement-attempts series for %s" % job_id)
        return int(m.group(1)), text

    def test_gang_over_department_limit_is_inadmissible_until_raised(self):
        st, body = self.g.request("POST", API + "/departments", obj(
            "Department", "dept-q", spec={"quota": {"nvidia.com/gpu": 4, "cpu": "8",
                                                    "memory": "8Gi"},
                                          "limit": {"nvidia.com/gpu": 4}}))
        self.assertEqual(st, 201, body)
        st, body = self.g.request("POST", API + "/projects", obj(
            "Project", "proj-q", spec={"department": "dept-q",
                                       "members": [{"user": "alice", "role": "admin"}]}))
        self.assertEqual(st, 201, body)
        self.gantlet(name="n1", fake_gpus="8xA100-80GB")
        t0 = time.monotonic()
        st, body = self.g.request("POST", API + "/projects/proj-q/jobs",
                                  gang("big", "proj-q", 2, 4), token="alice")
        self.assertEqual(st, 201, body)  # admission at apply stays allowed
        wait_for("big Inadmissible",
                 lambda: self.condition("proj-q", "big", "Inadmissible").get("status") == "True",
                 timeout=10)
        took = time.monotonic() - t0
        # within one cycle: the first and only wait the scheduler ever gave it
        # (one Event per reason, folded) is the verdict; a cycle runs when work
        # arrives and at least once a second (the bound is loose for loaded CI)
        st, evs = self.g.request("GET", "/apis/gantry.dev/v1/events?fieldSelector="
                                 "involvedObject.name=big")
        self.assertEqual(st, 200, evs)
        waits = {e["reason"] for e in evs.get("items", []) if e.get("type") == "Warning"}
        self.assertEqual(waits, {"Inadmissible"}, evs)
        self.assertLess(took, 5.0, "Inadmissible after %.2fs" % took)
        print("Inadmissible %.2fs after the create" % took)
        c = self.condition("proj-q", "big", "Inadmissible")
        self.assertEqual(c["reason"], "ExceedsDepartmentLimit", c)
        self.assertIn("nvidia.com/gpu 8", c["message"])
        self.assertIn("department dept-q's limit is 4 (spec.limit)", c["message"])
        self.assertIn("raise it to at least 8", c["message"])
        q = self.condition("proj-q", "big", "Queued")
        self.assertTrue(q["message"].startswith("Inadmissible: ExceedsDepartmentLimit: "), q)
        wait_for("REASON Inadmissible",
                 lambda: self.reason_column("proj-q", "big") == "Inadmissible", timeout=10)
        self.assertIn("Inadmissible", self.g.cli("describe", "job", "big", "-p", "proj-q").stdout)

        # it waits without a placement search: read the counter over a while
        first, text = self.attempts("proj-q/big")
        self.assertIn('gantry_jobs_pending{reason="Inadmissible"} 1', text)
        window = 6.0
        time.sleep(window)
        last, _ = self.attempts("proj-q/big")
        per_minute = (last - first) * 60.0 / window
        print("placement attempts while Inadmissible: %d then %d over %.0fs (%.1f/min)"
              % (first, last, window, per_minute))
        self.assertEqual(first, 0)
        self.assertLessEqual(per_minute, 5.0)

        # raise the limit to 8: the verdict clears and the gang starts
        st, dept = self.g.request("GET", API + "/departments/dept-q")
        self.assertEqual(st, 200, dept)
        dept["spec"]["limit"] = {"nvidia.com/gpu": 8}
        st, body = self.g.request("PUT", API + "/departments/dept-q", dept)
        self.assertEqual(st, 200, body)
        for t in ("big-worker-0", "big-worker-1"):
            wait_for("%s Running" % t, lambda t=t: self.task_of("proj-q", t).get(
                "status", {}).get("phase") == "Running", timeout=20)
        c = self.condition("proj-q", "big", "Inadmissible")
        self.assertEqual((c.get("status"), c.get("reason")), ("False", "Admissible"), c)
        self.assertEqual(self.attempts("proj-q/big")[0], 1)


if __name__ == "__main__":
    main()
