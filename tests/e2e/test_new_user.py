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
the README's `gantry run --gpus 2 --workdir . -- python3 train.py`; a
second `gantry up` elsewhere says it takes over the config, which `gantry
down` then follows. And kubectl's habits: `apply -f DIR` and `-R` (name
order, dependencies first, failures reported and the rest applied, exit 1),
`unchanged` with no write, a started job's template refused naming the
field; kind aliases (pods, tfjobs, pytorchjobs, mpijobs), comma lists,
`-o name` output fed back to get/describe/delete, `delete KIND --all`,
`delete -f DIR`; `--no-headers`, `--sort-by`, `--show-labels`, `-o jsonpath`
and `-o custom-columns`.
"""
import json
import os
import subprocess
import sys
import textwrap
import time

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import GANTRY, SOURCE, LocalClusterTest, free_port, wait_for  # noqa: E402
from gantry_e2e import main  # noqa: E402

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


class NewUser(LocalClusterTest):
    tmp_prefix = "gantry-new-"

    def get(self, *args):
        r = self.gantry("get", *args, "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def wait(self, what, fn, timeout=30):
        return wait_for(what, fn, timeout=timeout, interval=0.2)

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

    # ---- kubectl habits ----

    def test_apply_dir_in_order_unchanged_and_immutable(self):
        """apply -f DIR (-R): name order, dependencies first, failures do not
        stop the rest; an unchanged object is not written; a started job's
        template cannot change."""
        d = os.path.join(self.tmp, "manifests")
        os.makedirs(os.path.join(d, "sub"))
        files = {
            "a-job.yaml": "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: habit, "
                          "project: default}\nspec:\n  replicaSpecs:\n    Worker:\n"
                          "      replicas: 1\n      template: {command: [sleep, '300']}\n",
            "b-project.yaml": "apiVersion: gantry.dev/v1\nkind: Project\nmetadata: {name: "
                              "p-habit}\nspec: {department: d-habit}\n",
            "c-dept.yaml": "apiVersion: gantry.dev/v1\nkind: Department\nmetadata: {name: "
                           "d-habit}\nspec: {quota: {nvidia.com/gpu: 1}}\n",
            "notes.txt": "not a manifest\n",
            "sub/d-bad.yaml": "apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: bad, "
                              "project: default}\nspec: {replicaSpecs: {Worker: {replicas: 0, "
                              "template: {command: ['true']}}}}\n",
        }
        for name, text in files.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        r = self.gantry("apply", "-f", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "department.gantry.dev/d-habit created\n"
                                   "project.gantry.dev/p-habit created\n"
                                   "job.gantry.dev/habit created\n")
        self.wait("the job to start", lambda: self.get("job", "habit")["status"].get(
            "startTime"))
        rv = self.get("department", "d-habit")["metadata"]["resourceVersion"]
        r = self.gantry("apply", "-R", "-f", d)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stdout, "department.gantry.dev/d-habit unchanged\n"
                                   "project.gantry.dev/p-habit unchanged\n"
                                   "job.gantry.dev/habit unchanged\n")
        self.assertIn('job.gantry.dev "bad" (document 1 of 1 in %s/sub/d-bad.yaml): '
                      "spec.replicaSpecs.Worker.replicas: must be >= 1" % d, r.stderr)
        self.assertEqual(self.get("department", "d-habit")["metadata"]["resourceVersion"], rv)
        # a running job's template cannot change; its deadline can
        with open(os.path.join(d, "a-job.yaml"), "w") as f:
            f.write(files["a-job.yaml"].replace("'300'", "'301'"))
        r = self.gantry("apply", "-f", os.path.join(d, "a-job.yaml"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("spec.replicaSpecs.Worker.template.command[1]: field is immutable once "
                      "the job has started", r.stderr)
        with open(os.path.join(d, "a-job.yaml"), "w") as f:
            f.write(files["a-job.yaml"] + "  runPolicy: {activeDeadlineSeconds: 600}\n")
        r = self.gantry("apply", "-f", os.path.join(d, "a-job.yaml"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "job.gantry.dev/habit configured\n")
        # delete -f: what the manifests name, the job before its dependencies
        r = self.gantry("delete", "-f", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, 'job.gantry.dev "habit" deleted\n'
                                   'project.gantry.dev "p-habit" deleted\n'
                                   'department.gantry.dev "d-habit" deleted\n')

    def test_kind_names_lists_and_delete_all(self):
        """Kind aliases, comma lists, `-o name` fed back, `delete KIND --all`."""
        r = self.apply_text("apiVersion: gantry.dev/v1\nkind: Project\nmetadata: {name: p-all}\n"
                            "spec: {department: default}\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        job = ("apiVersion: gantry.dev/v1\nkind: Job\nmetadata: {name: %s, project: p-all}\n"
               "spec: {replicaSpecs: {Worker: {replicas: 1, template: {command: ['true']}}}}\n")
        for name in ("alias1", "alias2"):
            r = self.apply_text(job % name)
            self.assertEqual(r.returncode, 0, r.stderr)
        self.wait("the tasks", lambda: self.gantry("get", "task", "alias2-worker-0", "-p",
                                                   "p-all").returncode == 0)
        for kind in ("pytorchjobs", "tfjobs", "mpijobs", "jobs.gantry.dev"):
            r = self.gantry("get", kind, "-p", "p-all", "-o", "name")
            self.assertEqual(r.stdout, "job.gantry.dev/alias1\njob.gantry.dev/alias2\n", kind)
        r = self.gantry("get", "pods", "-p", "p-all", "-o", "name")
        self.assertEqual(r.stdout, "task.gantry.dev/alias1-worker-0\n"
                                   "task.gantry.dev/alias2-worker-0\n", r.stderr)
        # a comma list: one table per kind, a blank line between
        r = self.gantry("get", "jobs,pods", "-p", "p-all")
        self.assertEqual(r.returncode, 0, r.stderr)
        tables = r.stdout.split("\n\n")
        self.assertEqual(len(tables), 2, r.stdout)
        self.assertTrue(tables[0].startswith("NAME ") and "alias2 " in tables[0], r.stdout)
        self.assertTrue(tables[1].startswith("NAME ") and "alias2-worker-0" in tables[1])
        # -o name output goes back into get, describe and delete
        name = self.gantry("get", "job", "alias1", "-p", "p-all", "-o", "name").stdout.strip()
        self.assertEqual(name, "job.gantry.dev/alias1")
        r = self.gantry("get", name, "-p", "p-all", "-o", "json")
        self.assertEqual(json.loads(r.stdout)["metadata"]["name"], "alias1", r.stderr)
        r = self.gantry("describe", "job/alias1", "-p", "p-all")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("alias1", r.stdout)
        r = self.gantry("delete", name, "-p", "p-all")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, 'job.gantry.dev "alias1" deleted\n')
        r = self.gantry("delete", "jobs", "--all", "-p", "p-all")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('job.gantry.dev "alias2" deleted\n', r.stdout)
        self.wait("the project to empty", lambda: self.gantry(
            "delete", "project", "p-all").returncode == 0)

    def test_output_formats(self):
        """--no-headers, --sort-by, --show-labels, -o jsonpath, -o custom-columns."""
        for name, rank in (("fmt-a", "2"), ("fmt-b", "1")):
            r = self.apply_text("apiVersion: gantry.dev/v1\nkind: Project\nmetadata: {name: %s, "
                                "labels: {fmt: 'yes', rank: '%s'}}\nspec: {department: default}\n"
                                % (name, rank))
            self.assertEqual(r.returncode, 0, r.stderr)
        sel = ("-l", "fmt")
        r = self.gantry("get", "projects", *sel, "--no-headers")
        self.assertEqual([line.split()[0] for line in r.stdout.splitlines()], ["fmt-a", "fmt-b"])
        r = self.gantry("get", "projects", *sel, "--sort-by", "{.metadata.labels.rank}",
                        "-o", "name")
        self.assertEqual(r.stdout, "project.gantry.dev/fmt-b\nproject.gantry.dev/fmt-a\n",
                         r.stderr)
        r = self.gantry("get", "projects", *sel, "--show-labels")
        lines = r.stdout.splitlines()
        self.assertTrue(lines[0].split()[-1] == "LABELS", r.stdout)
        self.assertEqual(lines[1].split()[-1], "fmt=yes,rank=2")
        r = self.gantry("get", "projects", *sel, "-o", "jsonpath={.items[*].metadata.name}")
        self.assertEqual(r.stdout, "fmt-a fmt-b", r.stderr)
        r = self.gantry("get", "projects", *sel, "-o",
                        'jsonpath={range .items[*]}{.metadata.name}:{.spec.department}{"\\n"}{end}')
        self.assertEqual(r.stdout, "fmt-a:default\nfmt-b:default\n", r.stderr)
        r = self.gantry("get", "projects", *sel, "--sort-by", ".metadata.labels.rank", "-o",
                        "custom-columns=NAME:.metadata.name,DEPT:.spec.department,X:.spec.nope")
        self.assertEqual(r.stdout.splitlines(), ["NAME    DEPT      X",
                                                 "fmt-b   default   <none>",
                                                 "fmt-a   default   <none>"], r.stderr)
        r = self.gantry("get", "project", "fmt-a", "-o", "jsonpath={.metadata.labels.rank}")
        self.assertEqual(r.stdout, "2", r.stderr)
        for name in ("fmt-a", "fmt-b"):
            self.gantry("delete", "project", name)

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
