"""Volumes (spec.volumes hostPath) on one real gantlet with a storage root.

A volume beneath the root is mounted where the template says (read-only
when asked). gantryd's own --storage-root (here the test's whole temporary
directory, wider than the node's) refuses at apply a hostPath outside it,
or with a ".." component. One that gantryd admits but that is outside every
storage root of the node, or that leaves the root through a symlink placed
on the node, fails the task with reason VolumeDenied and a message saying
why, before the command runs.
"""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import GANTLET, AgentTest, obj  # noqa: E402
from gantry_e2e import main  # noqa: E402


@unittest.skipUnless(os.access(GANTLET, os.X_OK), "needs gantlet in the build directory")
class Volumes(AgentTest):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gantry-volumes-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.gantryd_args = AgentTest.gantryd_args + ("--storage-root", self.tmp)
        super().setUp()
        os.chmod(self.tmp, 0o711)
        self.root = os.path.join(self.tmp, "storage")
        self.outside = os.path.join(self.tmp, "outside")
        for d in (self.root, self.outside):
            os.makedirs(d)
            os.chmod(d, 0o755)
        with open(os.path.join(self.outside, "secret"), "w") as f:
            f.write("not for tasks\n")
        self.agent = self.gantlet(extra_args=["--storage-root", self.root])

    def submit_with_volume(self, name, host_path, command, read_only=False):
        """POST a one-task Job mounting host_path at /data; returns (status, body)."""
        spec = {"replicaSpecs": {"Worker": {"replicas": 1, "template": {
            "command": ["/bin/sh", "-c", command],
            "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "1", "memory": "128Mi"}},
            "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": read_only}]}}},
            "volumes": [{"name": "data", "hostPath": host_path}]}
        return self.g.request("POST", self.PROJECT + "/jobs", obj("Job", name, "proj-a", spec=spec),
                              token="alice")

    def run_with_volume(self, name, host_path, command, read_only=False):
        st, body = self.submit_with_volume(name, host_path, command, read_only)
        self.assertEqual(st, 201, body)
        return self.wait_phase(name + "-worker-0", ("Succeeded", "Failed"), timeout=30)

    def log(self, job):
        return self.g.cli("logs", job, "-p", "proj-a").stdout

    def test_volume_beneath_root_is_mounted(self):
        data = os.path.join(self.root, "ds")
        os.makedirs(data)
        with open(os.path.join(data, "x"), "w") as f:
            f.write("hello\n")
        os.chmod(data, 0o755)
        os.chmod(os.path.join(data, "x"), 0o644)
        t = self.run_with_volume("ro", data, "cat /data/x; touch /data/y 2>&1", read_only=True)
        self.assertEqual(t["status"]["phase"], "Failed", t["status"])  # touch failed
        self.assertEqual(t["status"]["exitCode"], 1, t["status"])
        self.assertRegex(self.log("ro"), r"^hello\ntouch: .*/data/y.*: Read-only file system\n$")
        self.assertFalse(os.path.exists(os.path.join(data, "y")))

    def test_dotdot_refused_at_apply(self):
        st, body = self.submit_with_volume("dots", self.root + "/../outside", "true")
        self.assertEqual((st, body["reason"]), (422, "Invalid"), body)
        self.assertEqual(body["message"],
                         'spec.volumes[0].hostPath: must not contain a ".." component')
        st, _ = self.g.request("GET", self.PROJECT + "/jobs/dots")
        self.assertEqual(st, 404)

    def test_outside_cluster_roots_refused_at_apply(self):
        st, body = self.submit_with_volume("etc", "/etc", "cat /data/passwd")
        self.assertEqual((st, body["reason"]), (422, "Invalid"), body)
        self.assertEqual(body["details"]["field"], "spec.volumes[0].hostPath", body)
        self.assertIn("/etc is not beneath a storage root of this cluster", body["message"])
        # the root is a whole path component: a sibling with a common prefix is outside
        st, body = self.submit_with_volume("sib", self.tmp + "x/data", "true")
        self.assertEqual(st, 422, body)
        st, _ = self.g.request("GET", self.PROJECT + "/jobs/etc")
        self.assertEqual(st, 404)

    def test_outside_roots_denied(self):
        t = self.run_with_volume("outside", self.outside, "cat /data/secret")
        self.assertEqual(t["status"]["phase"], "Failed", t["status"])
        self.assertEqual(t["status"]["reason"], "VolumeDenied", t["status"])
        self.assertIn("not beneath a storage root", t["status"]["message"])
        self.assertNotIn("not for tasks", self.log("outside"))

    def test_symlink_escape_denied(self):
        os.symlink(self.outside, os.path.join(self.root, "link"))
        t = self.run_with_volume("symlink", os.path.join(self.root, "link"), "cat /data/secret")
        self.assertEqual(t["status"]["phase"], "Failed", t["status"])
        self.assertEqual(t["status"]["reason"], "VolumeDenied", t["status"])
        self.assertIn("resolves outside the storage root", t["status"]["message"])
        self.assertNotIn("not for tasks", self.log("symlink"))


if __name__ == "__main__":
    main()
