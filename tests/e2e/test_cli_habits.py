#!/usr/bin/env python3
"""kubectl habits of the real CLI against a real gantryd: `gantry version`
and `gantry completion bash|zsh`.

Checks:
- `version` prints the client's and the server's release and API version
  (GET /version); `--client` asks no server; a bad token fails;
- `completion bash`, sourced in a real bash, completes command names and
  the kinds after get; `completion zsh` is the same script behind zsh's
  bashcompinit; an unknown shell is a usage error;
- `explain KIND[.field...]` prints kubectl's layout from the schema tables
  (a replica type's map stepped through into its template; kind aliases
  such as pods), and an unknown field or kind is an error naming it;
- the list formats on jobs: `--no-headers`, `--sort-by JSONPATH` and
  `--show-labels` together; `get jobs -o yaml` of a list is re-appliable
  (saved, every job deleted, `apply -f` of the file recreates them with
  their labels and specs, as new objects).
"""
import json
import os
import subprocess
import tempfile

from gantry_e2e import GANTRY, GantrydTest, job, main, seed_tenancy, wait_for


class Habits(GantrydTest):
    def test_version(self):
        p = self.g.cli("version", token="carol")
        self.assertRegex(p.stdout, r"^Client Version: \d+\.\d+\.\d+\n"
                                   r"Server Version: \d+\.\d+\.\d+\nAPI Version: gantry.dev/v1\n$")
        client = p.stdout.splitlines()[0].split(": ")[1]
        self.assertEqual(p.stdout.splitlines()[1].split(": ")[1], client)
        st, body = self.g.request("GET", "/version", token="carol")
        self.assertEqual((st, body["apiVersion"]), (200, "gantry.dev/v1"))
        p = subprocess.run([GANTRY, "--server", "http://127.0.0.1:1", "version", "--client"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual((p.returncode, p.stdout), (0, "Client Version: %s\n" % client))
        p = subprocess.run([GANTRY, "--server", self.g.url, "--token", "bad", "version"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("Client Version", p.stdout)

    def complete(self, script, *words):
        """COMPREPLY of bash completing words (the last one partial)."""
        cmd = script + "\nCOMP_WORDS=(%s); COMP_CWORD=%d; _gantry; echo \"${COMPREPLY[*]}\"\n" % (
            " ".join("'%s'" % w for w in words), len(words) - 1)
        p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.split()

    def test_completion(self):
        script = self.g.cli("completion", "bash").stdout
        self.assertEqual(self.complete(script, "gantry", "ex"), ["exec", "explain"])
        self.assertEqual(sorted(self.complete(script, "gantry", "de")), ["delete", "describe"])
        self.assertEqual(self.complete(script, "gantry", "get", "jo"), ["jobs"])
        self.assertIn("tasks", self.complete(script, "gantry", "describe", ""))
        self.assertEqual(self.complete(script, "gantry", "completion", "z"), ["zsh"])
        zsh = self.g.cli("completion", "zsh").stdout
        self.assertTrue(zsh.startswith("#compdef gantry\n"), zsh)
        self.assertIn(script, zsh)
        p = self.g.cli("completion", "fish", check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("bash or zsh", p.stderr)

    def test_explain(self):
        p = self.g.cli("explain", "jobs.spec")
        self.assertTrue(p.stdout.startswith("KIND:     Job\nVERSION:  gantry.dev/v1\n\n"
                                            "FIELD:    spec <Object> -required-\n\n"
                                            "DESCRIPTION:\n     What the job runs"), p.stdout)
        self.assertIn("\nFIELDS:\n   replicaSpecs\t<map[string]Object> -required-\n", p.stdout)
        p = self.g.cli("explain", "job.spec.replicaSpecs.template.resources")
        self.assertIn("FIELD:    resources <Object>\n", p.stdout)
        self.assertIn("   limits\t<map[string]Quantity>\n", p.stdout)
        p = self.g.cli("explain", "pods.status.phase")
        self.assertIn("KIND:     Task\n", p.stdout)
        self.assertIn("One of: Pending, Bound, Running, Terminating, Succeeded, Failed.",
                      p.stdout)
        p = self.g.cli("explain", "job.spec.replicaSpecs.template.comand", check=False)
        self.assertEqual((p.returncode, p.stdout), (1, ""))
        self.assertEqual(p.stderr, 'error: field "comand" does not exist in '
                                   "Job.spec.replicaSpecs.template\n")
        p = self.g.cli("explain", "frobs.spec", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn('unknown kind "frobs"', p.stderr)

    def test_list_formats_and_yaml_round_trip(self):
        seed_tenancy(self.g)
        path = "/apis/gantry.dev/v1/projects/proj-a/jobs"
        for name, rank in (("rt-a", "2"), ("rt-b", "1")):
            j = job(name, "proj-a", gpus=0)
            j["metadata"]["labels"] = {"rank": rank, "team": "x"}
            st, body = self.g.request("POST", path, j)
            self.assertEqual(st, 201, body)
        p = self.g.cli("get", "jobs", "-p", "proj-a", "--no-headers", "--sort-by",
                       "{.metadata.labels.rank}", "--show-labels")
        rows = [line.split() for line in p.stdout.splitlines()]
        self.assertEqual([(r[0], r[-1]) for r in rows],
                         [("rt-b", "rank=1,team=x"), ("rt-a", "rank=2,team=x")], p.stdout)
        before = json.loads(self.g.cli("get", "jobs", "-p", "proj-a", "-o", "json").stdout)
        saved = self.g.cli("get", "jobs", "-p", "proj-a", "-o", "yaml").stdout
        self.assertIn("kind: JobList\n", saved)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(saved)
        self.addCleanup(os.unlink, f.name)
        self.g.cli("delete", "jobs", "--all", "-p", "proj-a")
        wait_for("jobs deleted", lambda: not self.g.request("GET", path)[1].get("items"))
        p = self.g.cli("apply", "-f", f.name)
        self.assertEqual(p.stdout, "job.gantry.dev/rt-a created\njob.gantry.dev/rt-b created\n")
        after = json.loads(self.g.cli("get", "jobs", "-p", "proj-a", "-o", "json").stdout)
        self.assertEqual(len(after["items"]), 2)
        for old, new in zip(before["items"], after["items"]):
            for field in ("name", "labels"):
                self.assertEqual(new["metadata"][field], old["metadata"][field])
            self.assertEqual(new["spec"], old["spec"])
            self.assertNotEqual(new["metadata"]["uid"], old["metadata"]["uid"])


if __name__ == "__main__":
    main()
