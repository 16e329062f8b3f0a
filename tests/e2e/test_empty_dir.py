"""emptyDir volumes (scratch space) on one real gantlet with a fake GPU.

- A disk emptyDir with a sizeLimit is a directory of the task's own, owned
  by its uid, mounted where the volumeMount says: writing within the limit
  works, writing past it fails with "No space left on device", and the
  scratch (its image too) is gone once the task has ended and been removed.
- An emptyDir without a sizeLimit is a plain writable directory.
- `medium: Memory` is a tmpfs whose pages count in the task's memory
  cgroup: filling 96 MiB of it under a 64 MiB memory limit ends the task
  OOMKilled, while a sizeLimit below the memory limit gives ENOSPC.
- ephemeral-storage bounds the task's disk scratch: an emptyDir without a
  sizeLimit in a task with a 16Mi ephemeral-storage limit takes 8 MiB and
  then gives "No space left on device" before 16 MiB; describe shows the
  limit; sizeLimits adding up to more than the limit are refused (422,
  naming the field and both amounts), in gantry and Kubeflow form.
- A Kubeflow PaddleJob with an emptyDir (upstream's simple-gpu shape:
  medium Memory at /dev/shm) runs, and the task sees a tmpfs there.
- Bad input names the field.
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import AgentTest, obj, wait_for  # noqa: E402
from gantry_e2e import main  # noqa: E402

UID = 1001  # alice, the submitter


class EmptyDirTest(AgentTest):
    def job(self, name, script, volumes, mounts, memory="256Mi", ephemeral=None):
        limits = {"nvidia.com/gpu": 1, "cpu": "1", "memory": memory}
        if ephemeral:
            limits["ephemeral-storage"] = ephemeral
        tmpl = {"command": ["/bin/sh", "-c", script], "volumeMounts": mounts,
                "resources": {"limits": limits}}
        spec = {"replicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "Never",
                                            "template": tmpl}},
                "volumes": volumes}
        return self.g.request("POST", self.PROJECT + "/jobs", obj("Job", name, "proj-a",
                                                                   spec=spec), token="alice")

    def run_job(self, name, script, volumes, mounts, memory="256Mi", ephemeral=None):
        st, body = self.job(name, script, volumes, mounts, memory, ephemeral)
        self.assertEqual(st, 201, body)
        return self.wait_phase(name + "-worker-0", ("Succeeded", "Failed"), timeout=60)

    def log(self, name):
        return self.g.cli("logs", name, "-p", "proj-a").stdout

    def test_disk_size_limit_enforced_and_removed_with_task(self):
        a = self.gantlet()
        script = ("set -e; stat -c 'owner=%u mode=%a' /scratch; "
                  "dd if=/dev/zero of=/scratch/a bs=1M count=8 2>/dev/null; echo wrote-8; "
                  "if dd if=/dev/zero of=/scratch/b bs=1M count=64 2>/tmp/dd.err; then "
                  "echo wrote-64; else cat /tmp/dd.err; fi; "
                  "rm /scratch/b; echo ok > /scratch/after; cat /scratch/after; "
                  "grep ' /scratch ' /proc/mounts | tail -1 | cut -d' ' -f3")
        t = self.run_job("disk", script, [{"name": "s", "emptyDir": {"sizeLimit": "32Mi"}}],
                         [{"name": "s", "mountPath": "/scratch"}])
        out = self.log("disk")
        self.assertEqual(t["status"]["phase"], "Succeeded", (t["status"], out))
        self.assertIn("owner=%d mode=700" % UID, out)
        self.assertIn("wrote-8", out)
        self.assertNotIn("wrote-64", out)
        self.assertIn("No space left on device", out)
        self.assertIn("ok\next4", out)  # usable again after the refusal; its own ext4
        scratch = os.path.join(a.data_dir(t["metadata"]["uid"]), "scratch")
        st, _ = self.g.request("DELETE", self.PROJECT + "/jobs/disk")
        self.assertIn(st, (200, 202))
        wait_for("scratch of the task removed", lambda: not os.path.exists(scratch), timeout=30)
        with open("/proc/mounts") as f:
            self.assertNotIn(scratch, f.read())

    def test_plain_scratch_directory(self):
        self.gantlet()
        t = self.run_job("plain", "echo hi > /work-scratch/f && cat /work-scratch/f && "
                         "stat -c 'owner=%u' /work-scratch",
                         [{"name": "w", "emptyDir": {}}],
                         [{"name": "w", "mountPath": "/work-scratch"}])
        out = self.log("plain")
        self.assertEqual(t["status"]["phase"], "Succeeded", (t["status"], out))
        self.assertIn("hi\nowner=%d" % UID, out)

    def test_ephemeral_storage_limit_bounds_scratch(self):
        self.gantlet()
        script = ("dd if=/dev/zero of=/scratch/a bs=1M count=8 2>/dev/null && echo wrote-8; "
                  "if dd if=/dev/zero of=/scratch/b bs=1M count=16 2>/tmp/dd.err; then "
                  "echo wrote-24; else cat /tmp/dd.err; fi; "
                  "grep ' /scratch ' /proc/mounts | tail -1 | cut -d' ' -f3; "
                  "ls /cache >/dev/null && echo memory-apart")
        # the Memory one counts in memory, not in ephemeral-storage
        t = self.run_job("eph", script,
                         [{"name": "s", "emptyDir": {}},
                          {"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}}],
                         [{"name": "s", "mountPath": "/scratch"},
                          {"name": "m", "mountPath": "/cache"}], ephemeral="16Mi")
        out = self.log("eph")
        self.assertEqual(t["status"]["phase"], "Succeeded", (t["status"], out))
        self.assertIn("wrote-8", out)
        self.assertNotIn("wrote-24", out)
        self.assertIn("No space left on device", out)
        self.assertIn("ext4\nmemory-apart", out)
        self.assertEqual(t["spec"]["template"]["resources"]["limits"]["ephemeral-storage"], "16Mi")
        desc = self.g.cli("describe", "task", "eph-worker-0", "-p", "proj-a").stdout
        self.assertRegex(desc, r"ephemeral-storage:?\s+16Mi")

    def test_size_limits_past_ephemeral_storage_refused(self):
        m = [{"name": "a", "mountPath": "/a"}]
        vols = [{"name": "a", "emptyDir": {"sizeLimit": "8Mi"}},
                {"name": "b", "emptyDir": {"sizeLimit": 12 << 20}},
                {"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]
        st, body = self.job("over", "true", vols, m, ephemeral="16Mi")
        self.assertEqual(st, 422, body)
        self.assertIn("spec.volumes[1].emptyDir.sizeLimit: the disk emptyDirs' sizeLimits add up "
                      "to 20Mi, more than spec.replicaSpecs.Worker.template.resources.limits."
                      "ephemeral-storage (16Mi)", body["message"])
        st, body = self.job("bad-eph", "true", vols[:1], m, ephemeral="lots")
        self.assertEqual(st, 422, body)
        self.assertIn("limits.ephemeral-storage", body["message"])
        ctr = {"name": "pytorch", "command": ["true"],
               "resources": {"limits": {"cpu": "1", "ephemeral-storage": "1Gi"}},
               "volumeMounts": [{"mountPath": "/tmp/x", "name": "x"}]}
        pod = {"containers": [ctr], "volumes": [{"name": "x", "emptyDir": {"sizeLimit": "2Gi"}}]}
        manifest = json.dumps({
            "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "pt-over", "namespace": "proj-a"},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "restartPolicy": "Never",
                                                        "template": {"spec": pod}}}}})
        r = self.g.cli("apply", "-f", "-", token="alice", input=manifest, check=False)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("sizeLimits add up to 2Gi, more than", r.stderr)
        self.assertIn("ephemeral-storage (1Gi)", r.stderr)

    def test_memory_medium_counts_in_task_memory(self):
        self.gantlet()
        # sizeLimit above the memory limit: the pages are the task's memory
        t = self.run_job("shm-oom", "grep ' /dev/shm ' /proc/mounts | tail -1 | cut -d' ' -f3; "
                         "exec dd if=/dev/zero of=/dev/shm/big bs=1M count=96",
                         [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}],
                         [{"name": "shm", "mountPath": "/dev/shm"}], memory="64Mi")
        out = self.log("shm-oom")
        self.assertEqual(t["status"]["phase"], "Failed", (t["status"], out))
        self.assertEqual(t["status"].get("reason"), "OOMKilled", (t["status"], out))
        self.assertIn("tmpfs", out)
        self.assertEqual(t["status"].get("exitCode"), 137, t["status"])
        # sizeLimit below the memory limit: the tmpfs is full first
        t = self.run_job("shm-full", "dd if=/dev/zero of=/dev/shm/big bs=1M count=32; "
                         "echo exit=$?",
                         [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}}],
                         [{"name": "shm", "mountPath": "/dev/shm"}], memory="128Mi")
        out = self.log("shm-full")
        self.assertEqual(t["status"]["phase"], "Succeeded", (t["status"], out))
        self.assertIn("No space left on device", out)
        self.assertIn("exit=1", out)

    def test_kubeflow_paddle_job_with_memory_empty_dir(self):
        self.gantlet()
        manifest = """apiVersion: kubeflow.org/v1
kind: PaddleJob
metadata: {name: pd, namespace: proj-a}
spec:
  paddleReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: paddle
              command: ["/bin/sh", "-c", "grep ' /dev/shm ' /proc/mounts | tail -1 | cut -d' ' -f3"]
              resources: {limits: {nvidia.com/gpu: 1, cpu: "1", memory: 128Mi}}
              volumeMounts: [{mountPath: /dev/shm, name: dshm}]
          volumes:
            - name: dshm
              emptyDir: {medium: Memory}
"""
        self.g.cli("apply", "-f", "-", token="alice", input=manifest)
        t = self.wait_phase("pd-worker-0", ("Succeeded", "Failed"), timeout=60)
        self.assertEqual(t["status"]["phase"], "Succeeded", t["status"])
        self.assertEqual(self.log("pd").strip(), "tmpfs")

    def test_bad_input_names_the_field(self):
        m = [{"name": "s", "mountPath": "/s"}]
        for vol, want in (
                ({"name": "s", "emptyDir": {"medium": "HugePages"}}, "spec.volumes[0].emptyDir.medium"),
                ({"name": "s", "emptyDir": {"sizeLimit": "-1Gi"}}, "spec.volumes[0].emptyDir.sizeLimit"),
                ({"name": "s", "emptyDir": {"sizeLimit": "lots"}}, "spec.volumes[0].emptyDir.sizeLimit"),
                ({"name": "s", "emptyDir": {"sizelimit": "1Gi"}},
                 "spec.volumes[0].emptyDir.sizelimit: unknown field"),
                ({"name": "s", "emptyDir": {}, "hostPath": "/tmp"},
                 "exactly one of hostPath, volume and emptyDir"),
                ({"name": "s", "emptyDir": {}, "readOnly": True}, "spec.volumes[0].readOnly")):
            st, body = self.job("bad", "true", [vol], m)
            self.assertEqual(st, 422, body)
            self.assertIn(want, body["message"])


if __name__ == "__main__":
    main()
