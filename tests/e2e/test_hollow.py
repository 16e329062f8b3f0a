#!/usr/bin/env python3
"""`gantlet --hollow N`: one process plays N nodes through the real API.

20 hollow nodes (prefix h, 8 fake GPUs each, --hollow-start-ms 200) beside
a gantryd: all 20 Nodes register Ready with 8 GPUs of their own UUIDs and
keep heartbeating (lastHeartbeatTime moves). Jobs then live on them
without a process: `sleep 1` goes Bound -> Running (at least the start
delay after bound) -> Succeeded (about 1 s later); `sh -c "sleep 0.5;
python3 train.py"` runs half a second; `true` ends Succeeded
in one report; then an 8-task gang of 8 GPUs each lands on 8 distinct
nodes and succeeds; then a job deleted while running ends Failed with
reason Killed; with every job done the nodes' GPUs are all free.

A job's first Queued status, its tasks all bound at once, is held back
and folded into the next status write: `true` and `sleep 1` are never
written Queued True, yet end with Queued False among their conditions as
before; with a start delay of 2.5 s (one more hollow process) the job is
written Queued True about a second after its bind, before Running.
"""
import subprocess

from gantry_e2e import (API, GANTLET, TOKENS, AgentTest, Watch, main, obj,
                        wait_for)

N = 20


def phase_of(o):
    return (o.get("status") or {}).get("phase")


class Hollow(AgentTest):
    def start_hollow(self, n=N, start_ms=200):
        token_file = self.g.tmp + "/node-token"
        with open(token_file, "w") as f:
            f.write(TOKENS["node"][0] + "\n")
        self.log_path = self.g.tmp + "/hollow.log"
        log = open(self.log_path, "ab")
        self.addCleanup(log.close)
        p = subprocess.Popen([GANTLET, "--server", self.g.url, "--token-file", token_file,
                              "--name", "h", "--hollow", str(n), "--fake-gpus", "8xA100-80GB",
                              "--hollow-start-ms", str(start_ms), "--heartbeat", "1"],
                             stdout=log, stderr=log)
        self.addCleanup(p.wait)
        self.addCleanup(p.terminate)
        self.hollow = p
        return p

    def logs(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")[-3000:]

    def nodes(self):
        st, body = self.g.request("GET", API + "/nodes")
        self.assertEqual(st, 200, body)
        return {n["metadata"]["name"]: n for n in body["items"]}

    def ready_nodes(self):
        return [n for n in self.nodes().values()
                if any(c.get("type") == "Ready" and c.get("status") == "True"
                       for c in n.get("status", {}).get("conditions", []))]

    def submit_job(self, name, command, gpus=1, replicas=1, gang=False):
        tmpl = {"command": command,
                "resources": {"requests": {"cpu": "10m", "memory": "32Mi"},
                              "limits": {"nvidia.com/gpu": gpus, "cpu": "1", "memory": "32Mi"}}}
        spec = {"replicaSpecs": {"Worker": {"replicas": replicas, "template": tmpl}}}
        if gang:
            spec["runPolicy"] = {"schedulingPolicy": {"minAvailable": replicas}}
        st, body = self.g.request("POST", self.PROJECT + "/jobs", obj("Job", name, "proj-a",
                                                                      spec=spec), token="alice")
        self.assertEqual(st, 201, body)

    def test_hollow_nodes_play_task_lives(self):
        self.start_hollow()
        wait_for("%d hollow nodes Ready" % N, lambda: len(self.ready_nodes()) == N, timeout=20)
        nodes = self.nodes()
        self.assertEqual(sorted(nodes), sorted("h-%d" % i for i in range(N)))
        uuids = [g["uuid"] for n in nodes.values() for g in n["status"]["gpus"]]
        self.assertEqual(len(uuids), 8 * N)
        self.assertEqual(len(set(uuids)), 8 * N, "hollow nodes share GPU UUIDs")
        beat = nodes["h-3"]["status"]["conditions"][0]["lastHeartbeatTime"]
        wait_for("a later heartbeat", lambda: self.nodes()["h-3"]["status"]["conditions"][0]
                 ["lastHeartbeatTime"] != beat, timeout=5)

        w = Watch(self.g, self.PROJECT + "/tasks")
        self.addCleanup(w.close)
        jw = Watch(self.g, self.PROJECT + "/jobs")
        self.addCleanup(jw.close)
        self.submit_job("sleeper", ["sleep", "1"])
        self.submit_job("script", ["sh", "-c", "sleep 0.5; python3 train.py"])
        self.submit_job("quick", ["true"])
        for t in ("sleeper", "script", "quick"):
            self.wait_phase(t + "-worker-0", "Succeeded", timeout=20)
        # 64 GPUs: the whole quota of the department
        self.submit_job("gang", ["sh", "-c", "sleep 0.3"], gpus=8, replicas=8, gang=True)
        gang = ["gang-worker-%d" % i for i in range(8)]
        for t in gang:
            self.wait_phase(t, "Succeeded", timeout=20)
        self.assertEqual(len({self.task(t)["spec"]["nodeName"] for t in gang}), 8)

        def times(name):
            evs = [(ts, phase_of(o)) for ts, _, o in list(w.events)
                   if o["metadata"]["name"] == name]
            first = {}
            for ts, ph in evs:
                first.setdefault(ph, ts)
            return first
        s = times("sleeper-worker-0")
        self.assertIn("Running", s)
        self.assertGreaterEqual(s["Running"] - s["Bound"], 0.15, s)
        self.assertGreaterEqual(s["Succeeded"] - s["Running"], 0.9, s)
        self.assertLess(s["Succeeded"] - s["Running"], 3.0, s)
        a = times("script-worker-0")
        self.assertGreaterEqual(a["Succeeded"] - a["Running"], 0.4, a)
        self.assertLess(a["Succeeded"] - a["Running"], 2.5, a)
        q = times("quick-worker-0")
        self.assertNotIn("Running", q, "a task ending within its start delay is one report")
        self.assertEqual(self.task("quick-worker-0")["status"]["reason"], "Completed")
        for name in ("quick", "sleeper"):
            self.assertEqual(queued_true_writes(jw, name), [], name)
            conds = self.job_conditions(name)
            self.assertEqual([(c["type"], c["status"]) for c in conds][:2],
                             [("Created", "True"), ("Queued", "False")], conds)
            self.assertEqual((conds[1]["reason"], conds[1]["message"]),
                             ("Queued", "waiting to be scheduled"), conds)

        self.submit_job("victim", ["sleep", "1000"])
        self.wait_phase("victim-worker-0", "Running", timeout=20)
        st, body = self.g.request("DELETE", self.PROJECT + "/jobs/victim", token="alice")
        self.assertIn(st, (200, 202), body)
        def victim_failed():
            return [o for _, _, o in list(w.events)
                    if o["metadata"]["name"] == "victim-worker-0" and phase_of(o) == "Failed"]
        killed = wait_for("victim Failed", victim_failed, timeout=20)
        self.assertEqual(killed[0]["status"]["reason"], "Killed", killed[0]["status"])
        wait_for("every hollow GPU free", lambda: all(
            not n.get("status", {}).get("allocated", {}).get("gpus")
            for n in self.nodes().values()), timeout=20)
        self.assertIsNone(self.hollow.poll(), self.logs())

    def job_conditions(self, name):
        st, body = self.g.request("GET", self.PROJECT + "/jobs/" + name)
        self.assertEqual(st, 200, body)
        return body["status"]["conditions"]

    def test_held_queued_written_when_start_is_slow(self):
        self.start_hollow(n=1, start_ms=2500)
        wait_for("the hollow node Ready", lambda: len(self.ready_nodes()) == 1, timeout=20)
        w = Watch(self.g, self.PROJECT + "/tasks")
        self.addCleanup(w.close)
        jw = Watch(self.g, self.PROJECT + "/jobs")
        self.addCleanup(jw.close)
        self.submit_job("slow", ["true"])
        self.wait_phase("slow-worker-0", "Succeeded", timeout=20)
        bound = min(ts for ts, _, o in list(w.events)
                    if o["metadata"]["name"] == "slow-worker-0" and phase_of(o) == "Bound")
        queued = queued_true_writes(jw, "slow")
        self.assertEqual(len(queued), 1, queued)
        # held for a second, written at the next one-second tick after it
        self.assertGreaterEqual(queued[0] - bound, 0.9)
        self.assertLess(queued[0] - bound, 2.4)
        conds = self.job_conditions("slow")
        self.assertEqual([(c["type"], c["status"]) for c in conds],
                         [("Created", "True"), ("Queued", "False"), ("Succeeded", "True")])


def queued_true_writes(jw, name):
    """When the job watch saw name's status with Queued as its True phase."""
    out = []
    for ts, _, o in list(jw.events):
        conds = (o.get("status") or {}).get("conditions", [])
        true = [c["type"] for c in conds if c.get("status") == "True"]
        if o["metadata"]["name"] == name and true and true[-1] == "Queued":
            out.append(ts)
    return out


if __name__ == "__main__":
    main()
