#!/usr/bin/env python3
"""gantryd on etcd (--store etcd://...) serves a job end to end with a real
gantlet, and a restarted gantryd finds its objects in etcd.

A one-member etcd on loopback; gantryd writes no gantry.db. Checks: a job
runs to Succeeded on the gantlet; after SIGTERM and a restart the
department, project, job and task are there with the same
resourceVersions, the revision goes on from where it was, and a second job
runs. Exits 77 where no etcd is installed (Debian: etcd-server).
"""
import os
import sys

from gantry_e2e import API, AgentTest, Etcd, main, wait_for


class OnEtcd(AgentTest):
    def setUp(self):
        self.etcd = Etcd().start()
        self.addCleanup(self.etcd.cleanup)
        self.gantryd_args = self.gantryd_args + ("--store", self.etcd.store)
        super().setUp()

    def versions(self):
        out = {}
        for path in ("/departments/dept-a", "/projects/proj-a", "/projects/proj-a/jobs/hello",
                     "/projects/proj-a/tasks/hello-worker-0"):
            st, body = self.g.request("GET", API + path)
            self.assertEqual(st, 200, (path, body))
            out[path] = body["metadata"]["resourceVersion"]
        return out

    def job_succeeded(self, name):
        st, body = self.g.request("GET", API + "/projects/proj-a/jobs/" + name)
        conds = ((body or {}).get("status") or {}).get("conditions") or []
        return any(c["type"] == "Succeeded" and c["status"] == "True" for c in conds)

    def test_job_runs_and_survives_restart(self):
        self.gantlet(fake_gpus="1xA100-80GB")
        task = self.submit("hello", ["sh", "-c", "echo hello"], gpus=1)
        done = self.wait_phase(task, ("Succeeded", "Failed"), timeout=30)["status"]
        self.assertEqual(done["phase"], "Succeeded", done)
        self.assertFalse(os.path.exists(os.path.join(self.g.data_dir, "gantry.db")))
        # the job settles after its task: its Succeeded condition is its last write
        wait_for("job hello Succeeded", lambda: self.job_succeeded("hello"), timeout=30)

        before = self.versions()
        self.g.stop()
        self.g.start()
        self.assertEqual(self.versions(), before)
        self.assertEqual(self.phase(task), "Succeeded")

        # the store goes on from etcd's revision; the node comes back and runs more
        second = self.submit("again", ["sh", "-c", "echo again"], gpus=1)
        st, body = self.g.request("GET", API + "/projects/proj-a/jobs/again")
        self.assertGreater(int(body["metadata"]["resourceVersion"]),
                           max(int(v) for v in before.values()))
        done = self.wait_phase(second, ("Succeeded", "Failed"), timeout=40)["status"]
        self.assertEqual(done["phase"], "Succeeded", done)


if __name__ == "__main__":
    if not Etcd.available():
        print("test_etcd: no etcd on PATH (Debian: etcd-server); skipped", file=sys.stderr)
        sys.exit(77)
    main()
