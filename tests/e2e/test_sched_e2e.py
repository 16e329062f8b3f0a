"""End to end: the scheduler's decisions applied by a real gantryd to a real
gantlet with 8 fake GPUs.

Reclaim: department dept-b (guarantee 4, limit 8 GPUs) borrows all 8 GPUs
with two 4-GPU jobs; dept-a (guarantee 4, limit 8) submits a 4-GPU job; the
borrowing job is preempted (task reason Preempted), dept-a's job is bound
within 2 s of the victim's recorded exit (both measured by one watch on
the client), and the preempted job runs again once dept-a's job is done.

Cordon and drain: a cordoned node receives no binds (the job's REASON is
Unschedulable), uncordon restores binding; drain stops the node's tasks
with reason Drained and requeues their job, which runs again after
uncordon. Also checks `get departments` (used, borrowed) and `top nodes`.
"""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import API, Gantlet, GantrydTest, Watch, obj, wait_for  # noqa: E402
from gantry_e2e import main  # noqa: E402

# exits non-zero on SIGTERM at once: a stopped task ends Failed with the stop's reason
SPIN = ["sh", "-c", 'trap "exit 143" TERM; while :; do sleep 0.1; done']


class SchedE2E(GantrydTest):
    gantryd_args = ("--node-grace", "10")

    def setUp(self):
        super().setUp()
        for d in ("dept-a", "dept-b"):
            st, body = self.g.request("POST", API + "/departments", obj(
                "Department", d, spec={
                    "quota": {"nvidia.com/gpu": 4, "cpu": "8", "memory": "8Gi"},
                    "limit": {"nvidia.com/gpu": 8}}))
            self.assertEqual(st, 201, body)
        # tasks run as their submitter, never as root (admin's uid 0)
        for p, d, user in (("proj-a", "dept-a", "alice"), ("proj-b", "dept-b", "dave")):
            st, body = self.g.request("POST", API + "/projects", obj(
                "Project", p, spec={"department": d,
                                    "members": [{"user": user, "role": "member"}]}))
            self.assertEqual(st, 201, body)
        self.agent = Gantlet(self.g, fake_gpus="8xA100-80GB")
        self.addCleanup(self.agent.cleanup)
        self.agent.start()

    def submit(self, project, name, command, gpus, grace_s=1):
        tmpl = {"command": command, "terminationGracePeriodSeconds": grace_s,
                "resources": {"limits": {"nvidia.com/gpu": gpus, "cpu": "100m",
                                         "memory": "64Mi"}}}
        st, body = self.g.request("POST", API + "/projects/%s/jobs" % project, obj(
            "Job", name, project,
            spec={"replicaSpecs": {"Worker": {"replicas": 1, "template": tmpl}}}),
            token="alice" if project == "proj-a" else "dave")
        self.assertEqual(st, 201, body)
        return name + "-worker-0"

    def task(self, project, name):
        st, body = self.g.request("GET", API + "/projects/%s/tasks/%s" % (project, name))
        return body if st == 200 else {}

    def phase(self, project, name):
        return (self.task(project, name).get("status") or {}).get("phase")

    def wait_phase(self, project, name, phases, timeout=15.0):
        phases = (phases,) if isinstance(phases, str) else tuple(phases)
        wait_for("%s/%s in %s (now %s)" % (project, name, phases, self.phase(project, name)),
                 lambda: self.phase(project, name) in phases, timeout=timeout)
        return self.task(project, name)

    def job_row(self, project, name):
        out = self.g.cli("get", "jobs", "-p", project).stdout
        header, *rows = out.splitlines()
        cols = header.split()
        for r in rows:
            cells = r.split()
            if cells and cells[0] == name:
                return dict(zip(cols, cells))
        return {}

    def test_reclaim_preempts_borrower_and_binds_owner_fast(self):
        b1 = self.submit("proj-b", "b-own", SPIN, 4)
        self.wait_phase("proj-b", b1, "Running")
        b2 = self.submit("proj-b", "b-borrow", SPIN, 4)
        self.wait_phase("proj-b", b2, "Running")
        depts = self.g.cli("get", "departments").stdout
        self.assertRegex(depts, r"dept-b\s+4\s+8\s+8\s+4\s", depts)
        top = self.g.cli("top", "nodes").stdout
        self.assertRegex(top, r"n1\s+8\s+8\s+100%", top)

        watch = Watch(self.g, API + "/tasks")
        self.addCleanup(watch.close)
        a = self.submit("proj-a", "a-owner", ["sh", "-c", "sleep 3"], 4)
        self.wait_phase("proj-a", a, ("Bound", "Running", "Succeeded"), timeout=20)

        def first(pred):
            return next((t for t, _, o in watch.events if pred(o)), None)

        def is_task(o, project, name):
            return o["metadata"]["project"] == project and o["metadata"]["name"] == name

        exit_t = first(lambda o: is_task(o, "proj-b", b2) and
                       o.get("status", {}).get("phase") == "Failed")
        bound_t = first(lambda o: is_task(o, "proj-a", a) and o.get("spec", {}).get("nodeName"))
        self.assertIsNotNone(exit_t, "the borrower's task never ended")
        self.assertIsNotNone(bound_t)
        victim = next(o for _, _, o in watch.events
                      if is_task(o, "proj-b", b2) and o.get("status", {}).get("phase") == "Failed")
        self.assertEqual(victim["status"].get("reason"), "Preempted", victim["status"])
        self.assertEqual(victim["spec"]["stop"]["reason"], "Preempted")
        self.assertLess(bound_t - exit_t, 2.0, "bound %.2fs after the victim's exit"
                        % (bound_t - exit_t))
        # the owner's guarantee was reclaimed from the borrower only
        self.assertEqual(self.phase("proj-b", b1), "Running")
        ev = self.g.cli("describe", "job", "b-borrow", "-p", "proj-b").stdout
        self.assertIn("Preempted", ev)

        # the borrower runs again once the owner's job is done
        self.wait_phase("proj-a", a, "Succeeded", timeout=20)
        t = self.wait_phase("proj-b", b2, "Running", timeout=20)
        self.assertNotEqual(t["metadata"]["uid"], victim["metadata"]["uid"])

    def test_cordon_uncordon_drain(self):
        # only admins write Nodes
        self.assertNotEqual(self.g.cli("cordon", "n1", token="alice", check=False).returncode, 0)
        out = self.g.cli("cordon", "n1").stdout
        self.assertIn("node/n1 cordoned", out)
        t = self.submit("proj-a", "c1", SPIN, 1)
        # REASON reads "<none>" until the job's Queued condition has its reason
        wait_for("a wait reason",
                 lambda: self.job_row("proj-a", "c1").get("REASON") not in (None, "", "<none>"),
                 timeout=10)
        self.assertEqual(self.job_row("proj-a", "c1")["REASON"], "Unschedulable")
        self.assertIsNone(self.task("proj-a", t)["spec"].get("nodeName"))
        self.assertIn("SchedulingDisabled", self.g.cli("get", "nodes").stdout)

        self.g.cli("uncordon", "n1")
        first = self.wait_phase("proj-a", t, "Running", timeout=10)

        out = self.g.cli("drain", "n1", "--timeout", "20").stdout
        self.assertIn("node/n1 drained", out)

        def requeued():
            now = self.task("proj-a", t)
            return (now.get("metadata", {}).get("uid") != first["metadata"]["uid"] and
                    now.get("status", {}).get("phase") == "Pending" and now)
        now = wait_for("task requeued after the drain", requeued, timeout=15)
        self.assertEqual((now["status"].get("previous") or {}).get("uid"),
                         first["metadata"]["uid"])
        st, job = self.g.request("GET", API + "/projects/proj-a/jobs/c1")
        self.assertFalse(any(c["type"] == "Failed" and c["status"] == "True"
                             for c in job["status"]["conditions"]), job["status"])
        time.sleep(1.5)
        self.assertEqual(self.phase("proj-a", t), "Pending")  # still cordoned

        self.g.cli("uncordon", "n1")
        self.wait_phase("proj-a", t, "Running", timeout=10)
        node = self.agent.node()
        self.assertFalse(node["spec"].get("unschedulable"))
        self.assertFalse(node["spec"].get("taints"))


if __name__ == "__main__":
    main()
