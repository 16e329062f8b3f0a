"""Job rules on real processes: a real gantryd and a real gantlet with two
fake GPUs, tasks running as alice under the agent.

- activeDeadlineSeconds: a job whose task runs too long ends Failed with
  reason DeadlineExceeded, its task processes gone and the GPUs free.
- Preemption: a low-priority job holding both GPUs is preempted by a
  high-priority job of its department; it is requeued (requeueCount, not
  restartCount: its backoffLimit 0 is untouched) and runs again, and
  succeeds, once the high job is done.
- OnFailure with backoffLimit 2 on a task that always exits 1 ends Failed
  (BackoffLimitExceeded) after exactly 3 runs (gantryd --restart-backoff-ms
  keeps the back-off short).
- Source and requirements through the whole stack: a local git repository
  (file://) at a full sha with train.py and requirements.txt naming a wheel
  built here into gantryd's --pip-find-links directory; the task prints the
  package's value and succeeds. A revision the repository lacks fails the
  task with reason SourceFetchFailed and git's message.
- Without --storage-root gantryd refuses hostPath volumes at apply.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import (API, GANTLET, AgentTest, Watch, cgroup_pids, make_git_repo,  # noqa: E402
                        obj, pid_alive, wait_for)
from gantry_e2e import main  # noqa: E402

PY = "/usr/bin/python3"
BACKOFF_MS = 300
TIMEOUT_S = 120  # generous: the machine may be running sanitizer builds too
# exits at once on SIGTERM, so a stopped task ends with the stop's reason
SPIN = 'trap "exit 143" TERM; while :; do sleep 0.1; done'
WHEEL_VALUE = "gantry-real-42"


def has_tools():
    if not os.access(PY, os.X_OK) or not shutil.which("git"):
        return False
    return subprocess.run([PY, "-m", "pip", "--version"], capture_output=True).returncode == 0


def run(*argv, cwd=None):
    subprocess.run(list(argv), cwd=cwd, check=True, capture_output=True)


@unittest.skipUnless(os.access(GANTLET, os.X_OK), "needs gantlet in the build directory")
class JobsReal(AgentTest):
    @classmethod
    def setUpClass(cls):
        """A wheel directory for gantryd's --pip-find-links, made before it starts."""
        cls.cls_tmp = tempfile.mkdtemp(prefix="gantry-jobs-real-")
        os.chmod(cls.cls_tmp, 0o755)
        cls.wheels = os.path.join(cls.cls_tmp, "wheels")
        os.makedirs(cls.wheels)
        cls.gantryd_args = AgentTest.gantryd_args + (
            "--restart-backoff-ms", str(BACKOFF_MS), "--pip-find-links", cls.wheels)
        cls.tools = has_tools()
        if cls.tools:
            src = os.path.join(cls.cls_tmp, "pkg")
            os.makedirs(src)
            with open(os.path.join(src, "gtreal.py"), "w") as f:
                f.write("VALUE = %r\n" % WHEEL_VALUE)
            with open(os.path.join(src, "setup.py"), "w") as f:
                f.write('from setuptools import setup\n'
                        'setup(name="gtreal", version="1.0", py_modules=["gtreal"])\n')
            run(PY, "-m", "pip", "wheel", "-q", "--no-index", "--no-build-isolation", "--no-deps",
                "-w", cls.wheels, src)
            shutil.rmtree(src)
            for name in os.listdir(cls.wheels):
                os.chmod(os.path.join(cls.wheels, name), 0o644)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.cls_tmp, ignore_errors=True)

    def setUp(self):
        super().setUp()
        # a directory the tasks (alice's uid) write their marks into
        self.shared = tempfile.mkdtemp(prefix="gantry-jobs-real-shared-")
        self.addCleanup(shutil.rmtree, self.shared, True)
        os.chmod(self.shared, 0o777)
        self.agent = self.gantlet(fake_gpus="2xA100-80GB")

    # ---- helpers ----

    def post_job(self, name, script, gpus=1, policy="Never", run_policy=None, **spec_extra):
        """POST a one-task Job running script (or the argv list script); returns its task."""
        argv = script if isinstance(script, list) else ["/bin/sh", "-c", script]
        tmpl = {"command": argv,
                "resources": {"limits": {"nvidia.com/gpu": gpus, "cpu": "250m",
                                         "memory": "256Mi"}},
                "terminationGracePeriodSeconds": 5}
        spec = {"replicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": policy,
                                            "template": tmpl}}}
        if run_policy:
            spec["runPolicy"] = run_policy
        spec.update(spec_extra)
        st, body = self.g.request("POST", self.PROJECT + "/jobs",
                                  obj("Job", name, "proj-a", spec=spec), token="alice")
        self.assertEqual(st, 201, body)
        return name + "-worker-0"

    def job(self, name):
        st, body = self.g.request("GET", self.PROJECT + "/jobs/" + name)
        self.assertEqual(st, 200, body)
        return body

    def final_cond(self, name):
        """The job's True Succeeded or Failed condition, or None."""
        for c in self.job(name).get("status", {}).get("conditions", []):
            if c["type"] in ("Succeeded", "Failed") and c["status"] == "True":
                return c
        return None

    def wait_final(self, name, timeout=TIMEOUT_S):
        return wait_for("job %s finished" % name, lambda: self.final_cond(name), timeout=timeout,
                        interval=0.2)

    def gpus_allocated(self):
        node = self.agent.node() or {}
        return (node.get("status", {}).get("allocated") or {}).get("gpus") or []

    def lines(self, name):
        path = os.path.join(self.shared, name)
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return f.read().split()

    def log(self, job):
        return self.g.cli("logs", job, "-p", "proj-a").stdout

    # ---- tests ----

    def test_active_deadline(self):
        t = self.post_job("dl", SPIN, gpus=2, run_policy={"activeDeadlineSeconds": 2})
        pid = self.wait_host_pid(t, timeout=TIMEOUT_S)
        cond = self.wait_final("dl")
        self.assertEqual((cond["type"], cond["reason"]), ("Failed", "DeadlineExceeded"), cond)
        task = self.wait_phase(t, ("Succeeded", "Failed"), timeout=TIMEOUT_S)
        self.assertEqual(task["status"]["phase"], "Failed", task["status"])
        self.assertEqual(task["status"]["reason"], "DeadlineExceeded", task["status"])
        self.assertEqual(task["spec"]["stop"]["reason"], "DeadlineExceeded")
        wait_for("task processes gone", lambda: not pid_alive(pid) and
                 not cgroup_pids(task["metadata"]["uid"]), timeout=TIMEOUT_S)
        wait_for("GPUs free", lambda: self.gpus_allocated() == [], timeout=TIMEOUT_S)

    def test_preempted_job_is_requeued_not_failed(self):
        for name, value in (("low", 10), ("high", 1000)):
            st, body = self.g.request("POST", API + "/priorityclasses",
                                      obj("PriorityClass", name, value=value))
            self.assertEqual(st, 201, body)
        mark = os.path.join(self.shared, "low-ran")
        # the first run marks and spins until stopped; a later run succeeds
        low_script = ('if [ -e %s ]; then echo second run; exit 0; fi; touch %s; %s'
                      % (mark, mark, SPIN))
        low = self.post_job("low", low_script, gpus=2, run_policy={
            "backoffLimit": 0, "schedulingPolicy": {"priorityClass": "low"}})
        first = self.wait_phase(low, "Running", timeout=TIMEOUT_S)
        wait_for("the low job's first run", lambda: os.path.exists(mark), timeout=TIMEOUT_S)
        watch = Watch(self.g, self.PROJECT + "/tasks")
        self.addCleanup(watch.close)
        high = self.post_job("high", "sleep 1", gpus=2, run_policy={
            "schedulingPolicy": {"priorityClass": "high"}})

        self.assertEqual(self.wait_final("high")["type"], "Succeeded")
        cond = self.wait_final("low")
        self.assertEqual(cond["type"], "Succeeded", self.job("low")["status"])
        st = self.job("low")["status"]
        self.assertGreaterEqual(st.get("requeueCount", 0), 1, st)
        self.assertEqual(st.get("restartCount", 0), 0, st)  # backoffLimit 0 untouched
        self.assertFalse([c for c in st["conditions"] if c["type"] == "Failed"], st)
        task = self.task(low)
        self.assertEqual(task["status"]["phase"], "Succeeded", task["status"])
        self.assertNotEqual(task["metadata"]["uid"], first["metadata"]["uid"])
        self.assertIsNotNone(task["status"].get("previous"), task["status"])
        self.assertIn("second run", self.log("low"))
        # the first run ended Preempted, while the high job was bound after it
        ends = [o for _, typ, o in watch.events if o["metadata"]["name"] == low and
                o["metadata"]["uid"] == first["metadata"]["uid"] and
                o.get("status", {}).get("phase") == "Failed"]
        self.assertTrue(ends, "the preempted run's end was not seen")
        self.assertEqual(ends[0]["status"]["reason"], "Preempted", ends[0]["status"])
        self.assertEqual(self.task(high)["status"]["phase"], "Succeeded")
        wait_for("GPUs free", lambda: self.gpus_allocated() == [], timeout=TIMEOUT_S)

    def test_on_failure_backoff_limit(self):
        runs = os.path.join(self.shared, "runs")
        t = self.post_job("bo", "echo $GANTRY_TASK >> %s; exit 1" % runs, policy="OnFailure",
                          run_policy={"backoffLimit": 2})
        cond = self.wait_final("bo")
        self.assertEqual((cond["type"], cond["reason"]), ("Failed", "BackoffLimitExceeded"), cond)
        self.assertIn("backoffLimit 2 reached", cond["message"])
        self.assertEqual(self.job("bo")["status"]["restartCount"], 2)
        task = self.wait_phase(t, "Failed", timeout=TIMEOUT_S)
        self.assertEqual(task["status"]["exitCode"], 1, task["status"])
        self.assertEqual(self.lines("runs"), [t] * 3)
        time.sleep(2 * BACKOFF_MS / 1000 + 1)  # well past another back-off: no fourth run
        self.assertEqual(self.lines("runs"), [t] * 3)
        wait_for("GPUs free", lambda: self.gpus_allocated() == [], timeout=TIMEOUT_S)

    def make_repo(self):
        """A git repository with train.py and requirements.txt; returns (url, full sha)."""
        return make_git_repo(os.path.join(self.shared, "repo"), {
            "train.py": "import gtreal\nprint('value', gtreal.VALUE)\n",
            "requirements.txt": "gtreal==1.0\n"}, message="train")

    def test_source_and_requirements(self):
        if not self.tools:
            self.skipTest("needs /usr/bin/python3 with pip, and git")
        url, sha = self.make_repo()
        # the command is the fetched script, run by the environment's python
        t = self.post_job("src", ["python3", "train.py"], source={"git": url, "revision": sha},
                          requirements="requirements.txt")
        task = wait_for("task created", lambda: self.task(t), timeout=TIMEOUT_S)
        self.assertEqual(task["spec"]["pip"], {"findLinks": self.wheels})
        self.assertEqual(task["spec"]["source"], {"git": url, "revision": sha})
        cond = self.wait_final("src")
        self.assertEqual(cond["type"], "Succeeded", (cond, self.log("src")))
        self.assertIn("value %s\n" % WHEEL_VALUE, self.log("src"))

        bad = "0" * 40
        t = self.post_job("badrev", "true", source={"git": url, "revision": bad})
        cond = self.wait_final("badrev")
        self.assertEqual(cond["type"], "Failed", cond)
        task = self.wait_phase(t, "Failed", timeout=TIMEOUT_S)
        self.assertEqual(task["status"]["reason"], "SourceFetchFailed", task["status"])
        msg = task["status"]["message"]
        self.assertIn("git fetch of %s at %s failed" % (url, bad), msg)
        self.assertIn("fatal:", msg)  # git's own words
        self.assertIn("SourceFetchFailed", cond["message"])

    def test_volumes_need_cluster_storage_root(self):
        spec = {"replicaSpecs": {"Worker": {"template": {
            "command": ["true"], "volumeMounts": [{"name": "d", "mountPath": "/d"}]}}},
            "volumes": [{"name": "d", "hostPath": self.shared}]}
        st, body = self.g.request("POST", self.PROJECT + "/jobs",
                                  obj("Job", "vol", "proj-a", spec=spec), token="alice")
        self.assertEqual((st, body["reason"]), (422, "Invalid"), body)
        self.assertEqual(body["details"]["field"], "spec.volumes[0].hostPath", body)
        self.assertIn("hostPath volumes are refused", body["message"])
        self.assertIn("--storage-root", body["message"])


if __name__ == "__main__":
    main()
