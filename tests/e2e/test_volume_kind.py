"""Volumes (kind Volume) on one real gantlet, with real loop-mounted disk images.

gantryd has a storage class "fast" (--storage-class fast=ROOT/volumes) beneath
the node's storage root; dept-a gets a storage quota of 150Mi. A 64 MiB
Volume is an ext4 image of exactly that size: a job writing 100 MiB into it
fails with "No space left on device", and the next job finds the volume
usable. Creating Volumes past the department's storage quota is refused
(naming the quota) with nothing made; `gantry get volumes` and `describe
department` show capacity and usage; a Volume in use cannot be deleted
(naming its users), and deleting it frees its quota and its image; a
ReadWriteOnce Volume is used by one task at a time; bad input names the field.
"""
import glob
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import API, GANTLET, AgentTest, obj, wait_for  # noqa: E402
from gantry_e2e import main  # noqa: E402

MiB = 1 << 20


def volume(name, size="64Mi", **spec):
    spec = dict(spec)
    spec["capacity"] = {"storage": size}
    return obj("Volume", name, "proj-a", spec=spec)


def mounts_under(path):
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if line.split()[4].startswith(path)]


@unittest.skipUnless(os.access(GANTLET, os.X_OK), "needs gantlet in the build directory")
class VolumeKind(AgentTest):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gantry-volkind-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.addCleanup(self.assert_unmounted)
        self.root = os.path.join(self.tmp, "storage")
        self.classdir = os.path.join(self.root, "volumes")
        os.makedirs(self.root)
        os.chmod(self.tmp, 0o711)
        os.chmod(self.root, 0o755)
        self.gantryd_args = AgentTest.gantryd_args + (
            "--storage-root", self.root, "--storage-class", "fast=" + self.classdir,
            "--enable-fault-injection")
        super().setUp()
        st, dept = self.g.request("GET", API + "/departments/dept-a")
        self.assertEqual(st, 200, dept)
        dept.pop("status", None)
        dept["spec"]["quota"]["storage"] = "150Mi"
        st, body = self.g.request("PUT", API + "/departments/dept-a", dept)
        self.assertEqual(st, 200, body)
        self.agent = self.gantlet(extra_args=["--storage-root", self.root], fake_gpus="2xA100-80GB")

    def assert_unmounted(self):
        wait_for("no mounts left under " + self.tmp, lambda: not mounts_under(self.tmp),
                 timeout=10)

    def create(self, name, size="64Mi", **spec):
        return self.g.request("POST", self.PROJECT + "/volumes", volume(name, size, **spec),
                              token="alice")

    def submit(self, name, vol, command, replicas=1):
        spec = {"replicaSpecs": {"Worker": {"replicas": replicas, "template": {
            "command": ["/bin/sh", "-c", command],
            "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "1", "memory": "128Mi"}},
            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}}},
            "volumes": [{"name": "data", "volume": vol}]}
        return self.g.request("POST", self.PROJECT + "/jobs", obj("Job", name, "proj-a", spec=spec),
                              token="alice")

    def run_job(self, name, vol, command):
        st, body = self.submit(name, vol, command)
        self.assertEqual(st, 201, body)
        return self.wait_phase(name + "-worker-0", ("Succeeded", "Failed"), timeout=40)

    def wait_job_finished(self, name):
        def finished():
            job = self.g.request("GET", self.PROJECT + "/jobs/" + name)[1]
            return any(c["type"] in ("Succeeded", "Failed") and c["status"] == "True"
                       for c in (job.get("status") or {}).get("conditions", []))
        wait_for("job %s finished" % name, finished, timeout=20)

    def log(self, job):
        return self.g.cli("logs", job, "-p", "proj-a").stdout

    def images(self):
        return sorted(glob.glob(os.path.join(self.classdir, "proj-a", "*.img")))

    def test_capacity_enforced_on_disk(self):
        p = self.g.cli("volume", "create", "data", "--size", "64Mi", "-p", "proj-a", token="alice")
        self.assertEqual(p.stdout, "volume.gantry.dev/data created\n")
        st, v = self.g.request("GET", self.PROJECT + "/volumes/data")
        self.assertEqual(st, 200, v)
        self.assertEqual(v["status"]["phase"], "Available", v)
        self.assertEqual(v["status"]["storageClass"], "fast", v)
        self.assertEqual(os.path.getsize(v["status"]["path"]), 64 * MiB)
        self.assertEqual(v["spec"]["accessMode"], "ReadWriteOnce")

        t = self.run_job("fill", "data", "dd if=/dev/zero of=/data/big bs=1M count=100 2>&1")
        self.assertEqual(t["status"]["phase"], "Failed", t["status"])
        self.assertIn("No space left on device", self.log("fill"))

        out = self.g.cli("get", "volumes", "-p", "proj-a").stdout.splitlines()
        self.assertEqual(out[0].split()[:7],
                         ["NAME", "CAPACITY", "USAGE", "ACCESS", "READONLY", "CLASS", "PHASE"])
        row = out[1].split()
        self.assertEqual(row[0:2], ["data", "64Mi"])
        self.assertEqual(row[3:7], ["ReadWriteOnce", "false", "fast", "Available"])
        st, v = self.g.request("GET", self.PROJECT + "/volumes/data")
        usage = int(v["status"]["usage"].rstrip("Ki")) * 1024
        self.assertGreater(usage, 50 * MiB, v["status"])  # full
        self.assertLessEqual(usage, 64 * MiB, v["status"])
        self.assertEqual(v["status"]["users"], [])

        desc = self.g.cli("describe", "department", "dept-a").stdout
        self.assertRegex(desc, r"\n    storage: +64Mi\n")  # Status.Used: what the quota counts
        self.assertRegex(desc, r"Storage:\n +Volumes: +1\n +Allocated: +64Mi\n +Borrowed: +0\n"
                               r" +Usage: +\d+Ki\n")

        # still usable: the full file goes, a new one is written and read back
        t = self.run_job("reuse", "data", "rm /data/big && echo kept > /data/f && cat /data/f && "
                         "df -k /data | tail -1")
        self.assertEqual(t["status"]["phase"], "Succeeded", (t["status"], self.log("reuse")))
        self.assertTrue(self.log("reuse").startswith("kept\n"), self.log("reuse"))

    def test_storage_quota(self):
        for name in ("a", "b"):
            st, body = self.create(name)
            self.assertEqual(st, 201, body)
        st, body = self.create("c")
        self.assertEqual((st, body["reason"]), (403, "Forbidden"), body)
        self.assertEqual(body["message"],
                         'spec.capacity.storage: 64Mi exceeds the storage quota of department '
                         '"dept-a" (quota 150Mi, limit 150Mi, 128Mi allocated to its volumes and models)')
        self.assertEqual(body["details"]["field"], "spec.capacity.storage")
        # nothing half-made
        self.assertEqual(self.g.request("GET", self.PROJECT + "/volumes/c")[0], 404)
        self.assertEqual(len(self.images()), 2, self.images())
        dept = self.g.request("GET", API + "/departments/dept-a")[1]
        self.assertEqual(dept["status"]["used"]["storage"], "128Mi", dept["status"])
        self.assertEqual(dept["status"]["borrowed"]["storage"], "0", dept["status"])
        # a smaller one still fits; deleting frees the quota and the image
        st, body = self.create("small", "16Mi")
        self.assertEqual(st, 201, body)
        st, body = self.g.request("DELETE", self.PROJECT + "/volumes/a", token="alice")
        self.assertEqual(st, 200, body)
        wait_for("a's image removed", lambda: len(self.images()) == 2)
        st, body = self.create("c")
        self.assertEqual(st, 201, body)
        # the project's hard cap counts too
        st, proj = self.g.request("GET", API + "/projects/proj-a")
        proj["spec"]["hard"] = {"storage": "100Mi"}
        self.assertEqual(self.g.request("PUT", API + "/projects/proj-a", proj)[0], 200)
        st, body = self.create("d", "1Mi")
        self.assertEqual(st, 403, body)
        self.assertIn('storage quota of project "proj-a" (spec.hard.storage 100Mi, 144Mi '
                      'allocated', body["message"])

    def test_failed_store_write_leaves_nothing(self):
        st, _ = self.g.request("POST", "/debug/fault?point=write&nth=1")
        self.assertEqual(st, 200)
        st, body = self.create("lost", "100Mi")
        self.assertEqual((st, body["reason"]), (503, "ServiceUnavailable"), body)
        self.assertEqual(self.g.request("GET", self.PROJECT + "/volumes/lost")[0], 404)
        self.assertEqual(self.images(), [])
        # its capacity was released: the whole quota is still there
        st, body = self.create("after", "150Mi")
        self.assertEqual(st, 201, body)

    def test_concurrent_creates_never_overcommit(self):
        import threading
        results = []

        def create(i):
            results.append(self.create("v%d" % i, "40Mi")[0])
        threads = [threading.Thread(target=create, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(sorted(results), [201, 201, 201, 403, 403, 403], results)
        self.assertEqual(len(self.images()), 3)

    def test_in_use_cannot_be_deleted(self):
        self.assertEqual(self.create("busy")[0], 201)
        st, body = self.submit("hold", "busy", "sleep 60")
        self.assertEqual(st, 201, body)
        self.wait_phase("hold-worker-0", "Running", timeout=30)
        st, body = self.g.request("DELETE", self.PROJECT + "/volumes/busy", token="alice")
        self.assertEqual((st, body["reason"]), (409, "Conflict"), body)
        self.assertEqual(body["message"], 'cannot delete: volume "busy" is in use by tasks '
                                          'hold-worker-0; jobs hold')
        st, v = self.g.request("GET", self.PROJECT + "/volumes/busy")
        self.assertEqual(v["status"]["users"], ["hold-worker-0"])
        self.assertEqual(self.g.request("DELETE", self.PROJECT + "/jobs/hold", token="alice")[0],
                         200)
        wait_for("job hold gone", lambda: self.g.request(
            "GET", self.PROJECT + "/jobs/hold")[0] == 404, timeout=30)
        st, body = self.g.request("DELETE", self.PROJECT + "/volumes/busy", token="alice")
        self.assertEqual(st, 200, body)
        wait_for("image removed", lambda: not self.images())

    def test_read_write_once_one_task_at_a_time(self):
        self.assertEqual(self.create("solo")[0], 201)
        st, body = self.submit("first", "solo", "sleep 8; echo first > /data/who")
        self.assertEqual(st, 201, body)
        self.wait_phase("first-worker-0", "Running", timeout=30)
        st, body = self.submit("second", "solo", "cat /data/who")
        self.assertEqual(st, 201, body)

        def queued_message():
            job = self.g.request("GET", self.PROJECT + "/jobs/second")[1]
            return [c.get("message", "") for c in (job.get("status") or {}).get("conditions", [])
                    if c["type"] == "Queued"]
        want = 'VolumeInUse: volume "solo" is ReadWriteOnce and in use by job first'
        wait_for("second waits for the volume", lambda: want in queued_message(), timeout=10)
        self.assertEqual(self.phase("first-worker-0"), "Running")
        self.assertEqual(self.phase("second-worker-0"), "Pending")
        t = self.wait_phase("second-worker-0", ("Succeeded", "Failed"), timeout=40)
        self.assertEqual(t["status"]["phase"], "Succeeded", t["status"])
        self.assertEqual(self.log("second"), "first\n")
        # a job whose replicas would share it is refused
        st, body = self.submit("pair", "solo", "true", replicas=2)
        self.assertEqual(st, 422, body)
        self.assertEqual(body["message"], 'spec.volumes[0].volume: Volume "solo" is ReadWriteOnce '
                                          '(one task at a time) but 2 tasks of this job mount it')

    def test_dataset_read_only_many(self):
        self.assertEqual(self.create("ds")[0], 201)
        t = self.run_job("fill", "ds", "echo sample > /data/x")
        self.assertEqual(t["status"]["phase"], "Succeeded", t["status"])
        self.wait_job_finished("fill")
        st, v = self.g.request("GET", self.PROJECT + "/volumes/ds")
        v.pop("status")
        v["metadata"].pop("resourceVersion")
        v["spec"]["readOnly"] = True
        st, body = self.g.request("PUT", self.PROJECT + "/volumes/ds", v, token="alice")
        self.assertEqual(st, 200, body)
        # both replicas at once; each reads, and its write is refused
        st, body = self.submit("readers", "ds", "cat /data/x; touch /data/y 2>&1; true",
                               replicas=2)
        self.assertEqual(st, 201, body)
        for i in range(2):
            t = self.wait_phase("readers-worker-%d" % i, ("Succeeded", "Failed"), timeout=40)
            self.assertEqual(t["status"]["phase"], "Succeeded", t["status"])
            log = self.g.cli("logs", "readers", "--replica", "worker-%d" % i, "-p", "proj-a").stdout
            self.assertRegex(log, r"^sample\ntouch: .*Read-only file system\n$")
        v["spec"]["capacity"]["storage"] = "128Mi"
        st, body = self.g.request("PUT", self.PROJECT + "/volumes/ds", v, token="alice")
        self.assertEqual((st, body["message"]),
                         (422, "spec.capacity: cannot change (only spec.readOnly may)"), body)

    def test_apply_describe_delete(self):
        manifest = ("apiVersion: gantry.dev/v1\nkind: Volume\n"
                    "metadata: {name: ds, project: proj-a}\n"
                    "spec:\n  capacity: {storage: 32Mi}\n  accessMode: ReadOnlyMany\n")
        p = self.g.cli("apply", "-f", "-", input=manifest, token="alice")
        self.assertEqual(p.stdout, "volume.gantry.dev/ds created\n")
        p = self.g.cli("apply", "-f", "-", input=manifest, token="alice")
        self.assertEqual(p.stdout, "volume.gantry.dev/ds unchanged\n")
        desc = self.g.cli("describe", "volume", "ds", "-p", "proj-a").stdout
        self.assertRegex(desc, r"Access Mode: +ReadOnlyMany\n")
        self.assertRegex(desc, r"Phase: +Available\n")
        self.assertRegex(desc, r"Path: +%s/proj-a/ds\.[0-9a-f-]+\.img\n" % self.classdir)
        grown = manifest.replace("32Mi", "64Mi")
        p = self.g.cli("apply", "-f", "-", input=grown, token="alice", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("spec.capacity: cannot change (only spec.readOnly may)", p.stderr)
        p = self.g.cli("delete", "volume", "ds", "-p", "proj-a", token="alice")
        self.assertEqual(self.g.request("GET", self.PROJECT + "/volumes/ds")[0], 404)
        wait_for("image removed", lambda: not self.images())

    def test_example_applies(self):
        path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "volume.yaml")
        with open(path) as f:
            text = f.read().replace("detection", "proj-a").replace("64Gi", "64Mi")
            text = text.replace("memory: 16Gi", "memory: 64Mi").replace("cpu: 4", "cpu: 1")
        p = self.g.cli("apply", "-f", "-", input=text, token="alice")
        self.assertEqual(p.stdout, "volume.gantry.dev/imagenet created\n"
                                   "job.gantry.dev/resnet-eval created\n")
        t = self.wait_phase("resnet-eval-worker-0", ("Failed", "Succeeded"), timeout=40)
        self.assertEqual(t["spec"]["volumes"][0]["image"], self.images()[0])

    def test_bad_input_names_the_field(self):
        cases = [
            (obj("Volume", "x", "proj-a", spec={}), "spec.capacity: required"),
            (volume("x", "-1Mi"), "spec.capacity.storage: "),
            (volume("x", "0"), "spec.capacity.storage: required (a size such as 64Mi, above 0)"),
            (volume("x", accessMode="ReadWriteSometimes"), "spec.accessMode: "),
            (volume("x", storageClass="slow"),
             'spec.storageClass: no storage class "slow" in this cluster'),
            (obj("Volume", "x", "proj-a", spec={"capacity": {"memory": "1Mi"}}),
             "spec.capacity.memory: resource not allowed here"),
        ]
        for body, want in cases:
            st, reply = self.g.request("POST", self.PROJECT + "/volumes", body, token="alice")
            self.assertEqual(st, 422, (body, reply))
            self.assertTrue(reply["message"].startswith(want), (want, reply["message"]))
        st, body = self.submit("nope", "missing", "true")
        self.assertEqual((st, body["message"]),
                         (422, 'spec.volumes[0].volume: no Volume "missing" in project "proj-a"'),
                         body)
        # the images are reached only through their Volumes
        spec = {"replicaSpecs": {"Worker": {"template": {"command": ["true"]}}},
                "volumes": [{"name": "raw", "hostPath": self.classdir + "/proj-a"}]}
        st, body = self.g.request("POST", self.PROJECT + "/jobs", obj("Job", "raw", "proj-a",
                                                                      spec=spec), token="alice")
        self.assertEqual((st, body["details"]["field"]), (422, "spec.volumes[0].hostPath"), body)
        self.assertIn("beneath the directory of storage class fast", body["message"])
        spec["volumes"] = [{"name": "both", "hostPath": self.root, "volume": "x"}]
        st, body = self.g.request("POST", self.PROJECT + "/jobs", obj("Job", "both", "proj-a",
                                                                      spec=spec), token="alice")
        self.assertEqual((st, body["message"]), (422, "spec.volumes[0].volume: exactly one of "
                                                      "hostPath, volume and emptyDir is "
                                                      "required"), body)
        p = self.g.cli("volume", "create", "y", "-p", "proj-a", token="alice", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--size: required", p.stderr)
        self.assertEqual(self.images(), [])


if __name__ == "__main__":
    main()
