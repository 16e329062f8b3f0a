"""What a new user first meets, end to end on a `gantry up` cluster: the
regressions of the defects they hit (issue 16) and the manifest defaults.

One local cluster (gantryd and gantlet with 8 fake GPUs, started by `gantry
up` from the build directory) in a temporary directory, GANTRY_CONFIG there
too. Covered: a Kubeflow manifest without metadata.namespace goes to the
config file's project, a namespace naming no project says how to create one,
a misspelt field is an unknown field; `gantry run` ends with the reason when
the command cannot start and when its job is deleted (before and while it
runs), and a stop ends an ordinary script at once (the task's init forwards
SIGTERM) instead of after its 30 s grace period; a chief that succeeds while
a worker still runs fails nothing; deleting a project that holds jobs is
refused; `gantry up` refuses a data directory the tasks' uid cannot reach;
the README's `gantry run --gpus 2 --workdir . -- python3 train.py`; and a
second `gantry up` elsewhere says it takes over the config, which `gantry
down` then follows.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import BUILD, GANTRY, SOURCE, free_port  # noqa: E402
from gantry_e2e import main  # noqa: E402

GANTLET = os.path.join(BUILD, "gantlet")
GANTRYD = os.path.join(BUILD, "gantryd")

TFJOB = """\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: %(name)s
%(ns)sspec:
  tfReplicaSpecs:
    Chief:
      replicas: 1
      template:
        spec:
          containers:
            - name: tensorflow
              %(cmd)s: ["sh", "-c", "sleep 1; exit 0"]
    Worker:
      replicas: 1
      template:
        spec:
          containers:
            - name: tensorflow
              command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.1; done"]
"""


@unittest.skipUnless(os.access(GANTLET, os.X_OK) and os.access(GANTRYD, os.X_OK),
                     "needs gantryd and gantlet in the build directory")
class NewUser(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gantry-new-")
        os.chmod(cls.tmp, 0o711)
        cls.data = os.path.join(cls.tmp, "data")
        cls.env = dict(os.environ, GANTRY_CONFIG=os.path.join(cls.tmp, "config"),
                       XDG_DATA_HOME=os.path.join(cls.tmp, "xdg"))
        cls.env.pop("GANTRY_SERVER", None)
        cls.env.pop("GANTRY_TOKEN", None)
        r = cls.gantry("up", "--data-dir", cls.data, "--fake-gpus", "8xA100-80GB",
                       "--listen", "127.0.0.1:%d" % free_port(), timeout=120)
        if r.returncode != 0:
            cls.gantry("down", "--data-dir", cls.data)
            raise AssertionError("gantry up failed: %s" % r.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.gantry("down", "--data-dir", cls.data, timeout=120)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def gantry(cls, *args, timeout=60, cwd=None, stdin=None):
        return subprocess.run([GANTRY] + list(args), env=cls.env, capture_output=True,
                              text=True, timeout=timeout, cwd=cwd, input=stdin)

    def get(self, *args):
        r = self.gantry("get", *args, "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def wait(self, what, fn, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = fn()
            if v:
                return v
            time.sleep(0.2)
        self.fail("timed out waiting for " + what)

    def task_phase(self, name):
        r = self.gantry("get", "task", name, "-o", "json")
        return json.loads(r.stdout).get("status", {}).get("phase") if r.returncode == 0 else None

    # ---- manifests ----

    def apply_text(self, text):
        return self.gantry("apply", "-f", "-", stdin=text)

    def test_apply_without_namespace_uses_config_project(self):
        r = self.apply_text(TFJOB % {"name": "nons", "ns": "", "cmd": "command"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("tfjob.kubeflow.org/nons created (as job.gantry.dev/nons)", r.stdout)
        self.assertEqual(self.get("job", "nons", "-p", "default")["metadata"]["project"],
                         "default")
        # a namespace that names no project: the error says so and how to make one
        r = self.apply_text(TFJOB % {"name": "lost", "ns": "  namespace: nosuch\n",
                                     "cmd": "command"})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('projects "nosuch" not found: create it first (kind: Project', r.stderr)
        # a misspelt field is unknown, not unsupported
        r = self.apply_text(TFJOB % {"name": "typo", "ns": "", "cmd": "comand"})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("containers[0].comand: unknown field", r.stderr)

    def test_chief_success_fails_no_worker(self):
        """Defect 1: the worker the job's end stops exits 0 and is no failure."""
        r = self.apply_text(TFJOB % {"name": "chief", "ns": "", "cmd": "command"})
        self.assertEqual(r.returncode, 0, r.stderr)

        def done():
            job = self.get("job", "chief")
            conds = [c["type"] for c in job["status"].get("conditions", [])
                     if c["status"] == "True"]
            w = self.task_phase("chief-worker-0")
            return job if "Succeeded" in conds and w in ("Succeeded", "Failed") else None
        job = self.wait("the job to succeed and its worker to stop", done, timeout=60)
        worker = self.get("task", "chief-worker-0")["status"]
        self.assertEqual((worker["phase"], worker["reason"], worker["exitCode"]),
                         ("Succeeded", "JobFinished", 0))
        job = self.get("job", "chief")
        self.assertEqual(job["status"]["replicaStatuses"]["Worker"]["failed"], 0)
        self.assertNotIn("Failed", [c["type"] for c in job["status"]["conditions"]
                                    if c["status"] == "True"])

    # ---- gantry run ----

    def test_run_says_why_the_command_did_not_start(self):
        """Defects 3 and 4: exit 127 with the reason, in run's output and the task's log."""
        r = self.gantry("run", "--name", "nocmd", "--", "no-such-command-gt")
        self.assertEqual(r.returncode, 127, r.stderr)
        self.assertIn("error: task nocmd-worker-0 ended Failed", r.stderr)
        self.assertIn("exec no-such-command-gt: No such file or directory", r.stderr)
        r = self.gantry("logs", "nocmd")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("gantry: the task did not start: exec no-such-command-gt", r.stdout)

    def test_run_ends_when_its_job_is_deleted(self):
        """Defects 3 and 5: a deleted job ends `gantry run` at once, with why."""
        proc = subprocess.Popen([GANTRY, "run", "--name", "sleeper", "--", "sh", "-c",
                                 "echo up; sleep 300"], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.stdout.readline(), "up\n")
        t0 = time.monotonic()
        r = self.gantry("delete", "job", "sleeper")
        self.assertEqual(r.returncode, 0, r.stderr)
        out, err = proc.communicate(timeout=30)
        # the script (no SIGTERM handler) ends on the stop's SIGTERM, not
        # after its 30 s grace period
        self.assertLess(time.monotonic() - t0, 15)
        self.assertNotEqual(proc.returncode, 0)
        self.assertRegex(err, r"task sleeper-worker-0 (ended Failed: Killed|was deleted)")
        # deleted before it ever ran
        proc = subprocess.Popen([GANTRY, "run", "--name", "never", "--gpus", "64", "--", "true"],
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        self.wait("the job to exist", lambda: self.gantry("get", "job", "never").returncode == 0)
        r = self.gantry("delete", "job", "never")
        self.assertEqual(r.returncode, 0, r.stderr)
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 1, err)
        self.assertIn("error: job never was deleted before it ran", err)

    def test_readme_run_example(self):
        """Defect 9: the README's `gantry run --gpus 2 --workdir . -- python3 train.py`."""
        code = os.path.join(self.tmp, "code")
        os.mkdir(code)
        os.chmod(code, 0o755)
        with open(os.path.join(code, "train.py"), "w") as f:
            f.write(textwrap.dedent("""\
                import os
                print("gpus", os.environ["CUDA_VISIBLE_DEVICES"])
                print("beside", sorted(os.listdir(".")))
                """))
        r = self.gantry("run", "--gpus", "2", "--workdir", ".", "--", "python3", "train.py",
                        cwd=code)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines[0].split(" ")[1].split(",")), 2, r.stdout)
        self.assertEqual(lines[1], "beside ['train.py']")
        with open(os.path.join(SOURCE, "README.md")) as f:
            self.assertIn("gantry run --gpus 2 --workdir .\n  -- python3 train.py", f.read())

    # ---- projects ----

    def test_project_with_jobs_cannot_be_deleted(self):
        """Defect 6: refused while it holds jobs; gone, nothing applies into it."""
        r = self.apply_text("apiVersion: gantry.dev/v1\nkind: Project\nmetadata: {name: p6}\n"
                            "spec: {department: default}\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.apply_text(TFJOB % {"name": "inp6", "ns": "  namespace: p6\n",
                                     "cmd": "command"})
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.gantry("delete", "project", "p6")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('projects "p6" still holds 1 jobs', r.stderr)
        self.assertEqual(self.get("job", "inp6", "-p", "p6")["metadata"]["name"], "inp6")
        r = self.gantry("delete", "job", "inp6", "-p", "p6")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.wait("the job and its tasks to go", lambda: self.gantry(
            "delete", "project", "p6").returncode == 0)
        r = self.apply_text(TFJOB % {"name": "late", "ns": "  namespace: p6\n",
                                     "cmd": "command"})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('projects "p6" not found', r.stderr)

    # ---- gantry up / down ----

    def test_up_refuses_an_unreachable_data_dir(self):
        """Defect 4: a data dir under a 0700 directory, tasks as another uid."""
        if os.geteuid() != 0:
            self.skipTest("tasks run as the user itself unless gantry up runs as root")
        private = os.path.join(self.tmp, "private")
        os.mkdir(private, 0o700)
        env = dict(self.env, GANTRY_CONFIG=os.path.join(self.tmp, "config-private"))
        r = subprocess.run([GANTRY, "up", "--data-dir", os.path.join(private, "data"),
                            "--listen", "127.0.0.1:%d" % free_port()], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("tasks run as uid 65534 and could not reach", r.stderr)
        self.assertIn("%s is mode 0700" % private, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(private, "data", "gantryd.pid")))

    def test_zz_second_up_takes_over_config_and_down_follows(self):
        """Defect 7: said, remembered, and `gantry down` finds it (runs last)."""
        other = os.path.join(self.tmp, "other")
        r = self.gantry("up", "--data-dir", other, "--listen", "127.0.0.1:%d" % free_port(),
                        timeout=120)
        try:
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("pointed at the cluster in %s, which is still running" % self.data,
                          r.stderr)
            with open(self.env["GANTRY_CONFIG"]) as f:
                self.assertEqual(json.load(f)["dataDir"], other)
            r = self.gantry("down", timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertFalse(os.path.exists(os.path.join(other, "gantryd.pid")))
            # the first cluster still runs
            self.assertTrue(os.path.exists(os.path.join(self.data, "gantryd.pid")))
        finally:
            self.gantry("down", "--data-dir", other, timeout=120)


if __name__ == "__main__":
    main()
