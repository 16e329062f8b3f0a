#!/usr/bin/env python3
"""The GPU-seconds ledger over a mixed run (test_controllers.FakeAgent).

A job on two whole GPUs that succeeds, two tasks of 500 milli each, a job
that fails, and a low-priority job preempted by a high-priority one (which
then runs again): every task run that held GPUs gets exactly one ledger
record whose GPU-milli-seconds are its GPUs' milli x (finishTime -
boundTime) of its Task; utilisation samples posted as the agent would
(nodes/N/telemetry) become utilised GPU-seconds; the usage report's rows
and totals, by department, project, user and model, in JSON and through
`gantry report usage -o csv|json`, equal the sums over the records to the
milli-GPU-second; and all of it is the same after gantryd restarts.
"""
import time

from gantry_e2e import API, main, obj
import test_controllers as tc

P = tc.P


def ts_s(s):
    return int(time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone)


class MixedAgent(tc.FakeAgent):
    """FakeAgent that fails the tasks in self.fail and reports a stop's reason."""

    def __init__(self, g):
        super().__init__(g)
        self.fail = set()
        self.ends = {}  # task uid -> the Task as it ended

    def step(self, t):
        name, st = t["metadata"]["name"], t.get("status", {})
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        stop = t["spec"].get("stop")
        if st.get("phase") == "Running" and (stop or name in self.fail):
            reason = stop["reason"] if stop else "Error"
            status = dict(st, phase="Failed", exitCode=1, reason=reason, finishTime=now)
            if self.put_status(t, status) == 200:
                self.ends[t["metadata"]["uid"]] = dict(t, status=status)
            return
        if st.get("phase") == "Running" and name in self.finish:
            status = dict(st, phase="Succeeded", exitCode=0, reason="Completed", finishTime=now)
            if self.put_status(t, status) == 200:
                self.ends[t["metadata"]["uid"]] = dict(t, status=status)
            return
        super().step(t)


def job(name, gpus=0, milli=0, replicas=1, priority="mid"):
    limits = {"cpu": "1", "memory": "1Gi"}
    if gpus:
        limits["nvidia.com/gpu"] = gpus
    if milli:
        limits["gantry.dev/gpu-milli"] = milli
    tmpl = {"command": ["sleep", "1000"], "resources": {"limits": limits}}
    run = {"backoffLimit": 0}
    run["schedulingPolicy"] = {"priorityClass": priority}
    return obj("Job", name, "proj-a", spec={
        "replicaSpecs": {"Worker": {"replicas": replicas, "template": tmpl}}, "runPolicy": run})


class LedgerTest(tc.ControllerTest):
    test_job_runs_and_succeeds = test_node_lost = None
    test_waiting_job_and_task_delete = test_admission_and_status_rights = None

    def setUp(self):
        super().setUp()
        self.agent.stopped.set()
        self.agent = MixedAgent(self.g)
        self.agent.start()
        self.addCleanup(self.agent.stopped.set)

    def post(self, o, path=P + "/jobs"):
        st, body = self.g.request("POST", path, o)
        self.assertEqual(st, 201, body)

    def job_done(self, name):
        st = (self.get(P + "/jobs/" + name).get("status") or {})
        return any(c["type"] in ("Succeeded", "Failed") and c["status"] == "True"
                   for c in st.get("conditions", []))

    def records(self, query=""):
        return self.get(API + "/usagerecords" + query)["items"]

    def sample(self, task, util):
        t = self.task(task)
        st, body = self.g.request("POST", API + "/nodes/n1/telemetry", {"tasks": [{
            "uid": t["metadata"]["uid"], "project": "proj-a", "name": task,
            "gpuUtil": util, "cpuMilli": 500, "memoryBytes": 1 << 20}]}, token="node")
        self.assertEqual(st, 200, body)

    def test_mixed_run_report_equals_ledger(self):
        for name, value in (("low", 10), ("mid", 100), ("high", 1000)):
            self.post(obj("PriorityClass", name, value=value), API + "/priorityclasses")
        self.post(job("whole", gpus=2))
        self.post(job("shared", milli=500, replicas=2))
        self.post(job("broken", gpus=1))
        self.post(job("low", gpus=4, priority="low"))
        for t in ("whole-worker-0", "shared-worker-0", "shared-worker-1", "broken-worker-0",
                  "low-worker-0"):
            self.wait(t + " running", lambda t=t: self.phase(t) == "Running")
        # utilisation samples for the whole-GPU job, about a second apart
        for _ in range(4):
            self.sample("whole-worker-0", 50)
            time.sleep(1.0)
        self.agent.fail.add("broken-worker-0")
        time.sleep(1.0)
        # 8 GPUs: 2 + 0.5 + 0.5 (one or two GPUs) + 4 held; high needs 4: low is preempted
        self.post(job("high", gpus=4, priority="high"))
        self.wait("low preempted", lambda: any(
            e["status"]["reason"] == "Preempted" for e in self.agent.ends.values()), timeout=20)
        self.wait("high running", lambda: self.phase("high-worker-0") == "Running", timeout=20)
        time.sleep(1.0)
        self.agent.finish.update({"whole-worker-0", "shared-worker-0", "shared-worker-1",
                                  "high-worker-0", "low-worker-0"})
        for j in ("whole", "shared", "broken", "high", "low"):
            self.wait(j + " finished", lambda j=j: self.job_done(j), timeout=30)

        ends = self.agent.ends
        # whole, two shared, broken, low twice (preempted, then its second run), high
        self.assertEqual(len(ends), 7, sorted(e["metadata"]["name"] for e in ends.values()))
        try:
            recs = self.wait("a record per run", lambda: (lambda r: r if len(r) == 7 else None)(
                self.records()), timeout=10)
        except AssertionError:
            self.fail("records %s for runs %s" % (
                [(r["task"], r["uid"], r["reason"]) for r in self.records()],
                [(e["metadata"]["name"], u, e["status"]["reason"]) for u, e in ends.items()]))
        by_uid = {r["uid"]: r for r in recs}
        self.assertEqual(set(by_uid), set(ends))
        reasons = sorted(r["reason"] for r in recs)
        self.assertIn("Preempted", reasons)
        self.assertIn("Error", reasons)
        for uid, t in ends.items():
            r = by_uid[uid]
            secs = ts_s(t["status"]["finishTime"]) - ts_s(t["status"]["boundTime"])
            milli = sum(g.get("milli", 1000) for g in t["spec"]["gpus"])
            self.assertEqual(r["seconds"], secs, r)
            self.assertEqual(r["gpuMilliSeconds"], milli * secs, r)
            self.assertEqual([g["model"] for g in r["gpus"]], ["A100-80GB"] * len(r["gpus"]))
            self.assertEqual((r["project"], r["department"], r["user"]),
                             ("proj-a", "dept-a", "root-admin"), r)
        shared = [r for r in recs if r["job"] == "shared"]
        self.assertEqual([g["milli"] for r in shared for g in r["gpus"]], [500, 500])
        whole = [r for r in recs if r["job"] == "whole"][0]
        # 50 % of 2 GPUs for the ~3 s between the 4 samples
        self.assertGreater(whole["utilizedGpuMilliSeconds"], 2000, whole)
        self.assertLessEqual(whole["utilizedGpuMilliSeconds"], whole["gpuMilliSeconds"])

        def check_reports():
            total = sum(r["gpuMilliSeconds"] for r in self.records())
            used = sum(r["utilizedGpuMilliSeconds"] for r in self.records())
            for by in ("department", "project", "user", "model"):
                rep = self.get(API + "/usage?by=" + by)
                self.assertEqual(rep["total"]["gpuMilliSeconds"], total, (by, rep))
                self.assertEqual(rep["total"]["utilizedGpuMilliSeconds"], used, (by, rep))
                self.assertEqual(sum(x["gpuMilliSeconds"] for x in rep["rows"]), total, by)
                self.assertEqual(rep["total"]["taskRuns"], 7)
            csv = self.g.cli("report", "usage", "--by", "project", "-o", "csv").stdout
            lines = csv.strip().splitlines()
            self.assertEqual(lines[0], "project,gpu_seconds,utilized_gpu_seconds,task_runs")
            self.assertEqual(lines[1].split(",")[:2],
                             ["proj-a", "%d.%03d" % (total // 1000, total % 1000)])
            table = self.g.cli("report", "usage", "--by", "model").stdout
            self.assertIn("A100-80GB", table)
            self.assertIn("TOTAL", table)
            # a window clips each run; report and records agree inside it too
            first = min(ts_s(r["startTime"]) for r in self.records())
            frm = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(first + 2))
            inw = self.records("?from=" + frm)
            rep = self.get(API + "/usage?by=user&from=" + frm)
            self.assertEqual(rep["total"]["gpuMilliSeconds"],
                             sum(r["inWindow"]["gpuMilliSeconds"] for r in inw))
            self.assertLess(rep["total"]["gpuMilliSeconds"], total)
            return total

        before = check_reports()
        # durable: the same after a restart, and no run recorded twice
        self.agent.stopped.set()
        self.g.stop()
        self.g.start()
        time.sleep(1.5)
        self.assertEqual(len(self.records()), 7)
        self.assertEqual(check_reports(), before)

    def test_bad_queries(self):
        st, body = self.g.request("GET", API + "/usage?by=color")
        self.assertEqual(st, 400, body)
        self.assertIn("by:", body["message"])
        st, body = self.g.request("GET", API + "/usage?from=yesterday")
        self.assertEqual(st, 400, body)
        self.assertIn("from:", body["message"])
        st, body = self.g.request("POST", API + "/nodes/n1/telemetry", {"tasks": [{
            "uid": "x", "project": "proj-a", "name": "t", "gpuUtil": 150}]}, token="node")
        self.assertEqual(st, 422, body)
        self.assertIn("tasks[0].gpuUtil", body["message"])
        st, body = self.g.request("POST", API + "/nodes/n1/telemetry", {"tasks": []},
                                  token="alice")
        self.assertEqual(st, 403, body)


if __name__ == "__main__":
    main()
