"""Serving autoscaling end to end: a real gantryd runs the gateway
(Debian's HAProxy), a real gantlet runs the replicas (serving_echo.py,
answering after DELAY_MS). A variant with replicas 1 and maxReplicas 3
scales up under concurrent requests (requests in flight per replica from
HAProxy's counters, scaleTarget 1) and back to 1 once the load has stayed
low for the stabilisation delay, every request's status and body checked
throughout; a scale-up beyond the project's hard cap waits, the Scaled
condition and an Event naming the quota, status showing desired against
ready replicas; a scale-up short of GPUs waits Pending with the scheduler's
reason, the service serving on the replica it has, and runs once a GPU is
freed. The windows are short (spec.autoscaling) so that it runs in
well under a minute."""
import os
import shutil
import time

from gantry_e2e import API, AgentTest, main, wait_for
from test_serving import PY, IsvcHelpers, Load, server_dir

# in flight: each of HEAVY client threads has a request at the gateway nearly
# all the time (a reply takes DELAY_MS); LIGHT keeps one going throughout
DELAY_MS = 200
HEAVY, LIGHT = 4, 1


class ServingAutoscaleTest(IsvcHelpers, AgentTest):
    def setUp(self):
        self.gantryd_args = ("--node-grace", "4") + self.gateway_args()
        super().setUp()
        self.dir = server_dir()
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.agent = self.gantlet(fake_gpus="2xA100-80GB")

    def spec(self, max_replicas=3, gpus=0):
        limits = {"cpu": "100m", "memory": "128Mi"}
        if gpus:
            limits["nvidia.com/gpu"] = gpus
        return {"autoscaling": {"windowSeconds": 2, "scaleDownDelaySeconds": 3},
                "variants": [{
                    "name": "main", "replicas": 1, "maxReplicas": max_replicas,
                    "scaleTarget": 1, "scaleMetric": "concurrency",
                    "template": {
                        "command": [PY, os.path.join(self.dir, "serving_echo.py")],
                        "env": [{"name": "VERSION", "value": "1"},
                                {"name": "DELAY_MS", "value": str(DELAY_MS)}],
                        "resources": {"limits": limits}}}]}

    def variant_status(self, name):
        vs = self.status(name).get("variants") or [{}]
        return vs[0]

    def cond(self, name, type_):
        for c in self.status(name).get("conditions", []):
            if c["type"] == type_:
                return c
        return {}

    def live_jobs(self):
        st, body = self.g.request("GET", self.PROJECT + "/jobs")
        return [j["metadata"]["name"] for j in body["items"]
                if not j["metadata"].get("deletionTimestamp")]

    def reasons(self):
        st, evs = self.g.request("GET", API + "/events?project=proj-a")
        return [e.get("reason") for e in (evs or {}).get("items", [])]

    def assert_no_failures(self, *loads):
        for load in loads:
            self.assertEqual(load.failures[:5], [],
                             "%d failed of %d" % (len(load.failures), load.ok))
            self.assertGreater(load.ok, 0)

    def test_scales_up_under_load_and_back_down_zero_failed_requests(self):
        self.put("as", self.spec(), create=True)
        self.wait_ready("as")
        self.assertEqual(self.variant_status("as")["replicas"], 1)
        with Load(self.gw_port, self.infer("as"), rate=50, threads=LIGHT) as light:
            with Load(self.gw_port, self.infer("as"), rate=200, threads=HEAVY) as heavy:
                t0 = time.time()
                wait_for("3 replicas ready (now %s)" % self.variant_status("as"),
                         lambda: (self.variant_status("as").get("replicas"),
                                  self.variant_status("as").get("readyReplicas")) == (3, 3),
                         timeout=45)
                up_s = time.time() - t0
                vs = self.variant_status("as")
                self.assertEqual((vs["minReplicas"], vs["maxReplicas"]), (1, 3), vs)
                wait_for("Scaled", lambda: self.cond("as", "Scaled").get("status") == "True",
                         timeout=10)
                # the heavy load goes on over the three replicas: in flight shown,
                # no replica stopped while it lasts
                wait_for("in flight shown (now %s)" % self.variant_status("as"),
                         lambda: self.variant_status("as").get("inFlight", 0) >= 2, timeout=20)
                time.sleep(2)
                self.assertEqual(self.variant_status("as")["replicas"], 3)
            t0 = time.time()
            # the heavy load stopped: back to 1 after the window and the delay,
            # the surplus replicas drained while the light load goes on
            wait_for("back to 1 replica (now %s)" % self.variant_status("as"),
                     lambda: (self.variant_status("as").get("replicas"),
                              self.variant_status("as").get("readyReplicas")) == (1, 1),
                     timeout=45)
            down_s = time.time() - t0
            wait_for("surplus replicas stopped (%s)" % self.live_jobs(),
                     lambda: len(self.live_jobs()) == 1, timeout=45)
            time.sleep(1)  # requests after the drain, on the one replica left
        self.assert_no_failures(light, heavy)
        # printed, not checked (a loaded host is slower): the window is 2 s and
        # the scale-down delay 3 s
        print("autoscale_up_s=%.1f autoscale_down_s=%.1f requests_ok=%d failed=0" % (
            up_s, down_s, light.ok + heavy.ok))
        reasons = self.reasons()
        self.assertIn("ScaledUp", reasons)
        self.assertIn("ScaledDown", reasons)
        self.assertIn("ReplicaDraining", reasons)
        out = self.g.cli("get", "isvc", "-p", "proj-a").stdout
        self.assertIn("1/1", out)

    def test_scale_up_beyond_project_cap_waits_naming_the_quota(self):
        # two replicas of 100m fit under the cap, the third does not
        st, proj = self.g.request("GET", API + "/projects/proj-a")
        proj["spec"]["hard"] = {"cpu": "250m"}
        self.assertEqual(self.g.request("PUT", API + "/projects/proj-a", proj)[0], 200)
        self.put("capped", self.spec(), create=True)
        self.wait_ready("capped")
        with Load(self.gw_port, self.infer("capped"), rate=200, threads=HEAVY) as heavy:
            wait_for("scale-up waits for the quota (now %s)" % self.cond("capped", "Scaled"),
                     lambda: self.cond("capped", "Scaled").get("reason") == "QuotaExceeded",
                     timeout=45)
            wait_for("2 of 3 ready (now %s)" % self.variant_status("capped"),
                     lambda: (self.variant_status("capped").get("replicas"),
                              self.variant_status("capped").get("readyReplicas")) == (3, 2),
                     timeout=45)
            c = self.cond("capped", "Scaled")
            self.assertEqual(c["status"], "False", c)
            self.assertIn("project proj-a", c["message"])
            self.assertIn("hard cap", c["message"])
            self.assertIn("2 of 3 replicas ready", c["message"])
            # the service itself stays Ready on the replicas it has
            self.assertEqual(self.cond("capped", "Ready").get("status"), "True")
            out = self.g.cli("get", "isvc", "-p", "proj-a").stdout
            self.assertIn("2/3", out)
            self.assertIn("QuotaExceeded", self.g.cli("describe", "isvc", "capped",
                                                      "-p", "proj-a").stdout)
        self.assert_no_failures(heavy)
        self.assertIn("QuotaExceeded", self.reasons())

    def test_scale_up_short_of_gpus_waits_then_runs_when_room_is_freed(self):
        # two GPUs: the service's first replica holds one, a plain job the
        # other, so the second replica the load calls for has none to take
        self.put("gpu", self.spec(max_replicas=2, gpus=1), create=True)
        self.wait_ready("gpu")
        hog = self.submit("hog", ["sleep", "600"], cpu="100m")
        self.wait_phase(hog, "Running")
        with Load(self.gw_port, self.infer("gpu"), rate=200, threads=HEAVY) as heavy:
            wait_for("scale-up waits for a GPU (now %s)" % self.cond("gpu", "Scaled"),
                     lambda: self.cond("gpu", "Scaled").get("reason") == "Unschedulable",
                     timeout=45)
            # the extra replica is a task like any other, Pending with the
            # scheduler's reason on its job, which the service repeats
            extra = [j for j in self.live_jobs() if j.startswith("is-gpu-") and
                     self.phase(j + "-worker-0") == "Pending"]
            self.assertEqual(len(extra), 1, self.live_jobs())
            st, job = self.g.request("GET", self.PROJECT + "/jobs/" + extra[0])
            queued = [c for c in job["status"]["conditions"] if c["type"] == "Queued"][0]
            self.assertEqual(queued["status"], "True", queued)
            self.assertTrue(queued["message"].startswith("Unschedulable: "), queued)
            why = queued["message"][len("Unschedulable: "):]
            self.assertIn("no node fits", why)
            c = self.cond("gpu", "Scaled")
            self.assertEqual(c["status"], "False", c)
            self.assertIn("1 of 2 replicas ready", c["message"])
            self.assertIn("waits: " + why, c["message"])
            vs = self.variant_status("gpu")
            self.assertEqual((vs["replicas"], vs["readyReplicas"]), (2, 1), vs)
            # nothing breaks: the service stays Ready and its one replica
            # keeps answering
            self.assertEqual(self.cond("gpu", "Ready").get("status"), "True")
            out = self.g.cli("get", "isvc", "-p", "proj-a").stdout
            self.assertIn("1/2", out)
            self.assertIn("Unschedulable", out)
            self.assertIn(why, self.g.cli("describe", "isvc", "gpu", "-p", "proj-a").stdout)
            served = heavy.ok
            time.sleep(1)
            self.assertGreater(heavy.ok, served)
            # room freed: the waiting replica gets the GPU and takes traffic
            st, body = self.g.request("DELETE", self.PROJECT + "/jobs/hog", token="alice")
            self.assertIn(st, (200, 202), body)
            wait_for("2 of 2 ready (now %s)" % self.variant_status("gpu"),
                     lambda: (self.variant_status("gpu").get("replicas"),
                              self.variant_status("gpu").get("readyReplicas")) == (2, 2),
                     timeout=45)
            self.assertEqual(self.phase(extra[0] + "-worker-0"), "Running")
            wait_for("Scaled (now %s)" % self.cond("gpu", "Scaled"),
                     lambda: self.cond("gpu", "Scaled").get("status") == "True", timeout=10)
            time.sleep(1)
        self.assert_no_failures(heavy)
        self.assertIn("Unschedulable", self.reasons())

if __name__ == "__main__":
    main()
