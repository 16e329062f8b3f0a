#!/usr/bin/env python3
"""Container images on a real gantlet (fake GPUs): tasks whose template
names an `image` run in it through runc.

The module starts Debian's docker-registry on loopback, builds a small OCI
image from a busybox-static rootfs with umoci and pushes it with skopeo
(tags 1.0 and 1.1, two manifests over one layer; the agent is started with
--insecure-registry for it). Then:
- a job of that image runs: its cgroup memory limit is the template's,
  CUDA_VISIBLE_DEVICES counts its 2 GPUs from 0, it runs as its creator's
  uid (not 0), it reads a file of a mounted volume; its log and exit code
  arrive as for host tasks, and the task shows Pulling/Pulled Events; one
  past its memory limit ends OOMKilled, exit code 137;
- two tasks of the image share one unpacked rootfs (one store entry, the
  same overlayfs lower directory) and a file one writes is not in the
  other's root;
- a bad reference, a missing tag and a stopped registry each fail the task
  with ImagePullFailed and a message naming the cause; the job backs off
  (Restarting, reason ImagePullBackOff, the cause in its message, shown by
  `gantry get jobs`) holding no GPU, pulls again after a delay that doubles,
  and never fails for it;
- with --image-gc-threshold 1 (byte) an image stays while a task uses it
  and goes, least recently used first, once unused and another is pulled;
- an image task survives a SIGKILL of the agent and is re-adopted; deleting
  it leaves no runc container, cgroup or mount behind;
- an image task's PID 1 is the shim's init (issue 16, defect 5), so a plain
  script without a SIGTERM handler stops within 2 s of its job's delete,
  not after its 30 s grace period.
Skipped when runc, skopeo, umoci, docker-registry or busybox is missing.
"""
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import (GANTLET, AgentTest, free_port, obj, pid_alive,  # noqa: E402
                        task_cgroups, wait_for)
from gantry_e2e import main  # noqa: E402

ALICE_UID = 1001
TOOLS = ("runc", "skopeo", "umoci", "docker-registry", "busybox")
MISSING = [t for t in TOOLS if not shutil.which(t)]
REGISTRY = {}


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def run(*argv):
    subprocess.run(list(argv), check=True, capture_output=True, timeout=120)


def start_registry(tmp):
    port = free_port()
    cfg = os.path.join(tmp, "registry.yml")
    with open(cfg, "w") as f:
        f.write("version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: %s\n"
                "http:\n  addr: 127.0.0.1:%d\n" % (os.path.join(tmp, "registry"), port))
    log = open(os.path.join(tmp, "registry.log"), "wb")
    proc = subprocess.Popen(["docker-registry", "serve", cfg], stdout=log, stderr=log)
    log.close()
    wait_for("registry on port %d" % port, lambda: port_open(port), timeout=20)
    return proc, port


def build_image(tmp, port):
    """busybox-static as /bin/*, pushed as 127.0.0.1:PORT/tools/busybox:1.0."""
    layout = os.path.join(tmp, "layout")
    bundle = os.path.join(tmp, "bundle")
    run("umoci", "init", "--layout", layout)
    run("umoci", "new", "--image", layout + ":1.0")
    run("umoci", "unpack", "--image", layout + ":1.0", bundle)
    rootfs = os.path.join(bundle, "rootfs")
    for d in ("bin", "tmp", "etc", "srv"):
        os.makedirs(os.path.join(rootfs, d), exist_ok=True)
    os.chmod(os.path.join(rootfs, "tmp"), 0o1777)
    shutil.copy(shutil.which("busybox"), os.path.join(rootfs, "bin", "busybox"))
    for applet in ("sh", "cat", "echo", "id", "sleep", "touch", "ls", "test", "env"):
        os.symlink("busybox", os.path.join(rootfs, "bin", applet))
    with open(os.path.join(rootfs, "etc", "hosts"), "w") as f:
        f.write("127.0.0.1 localhost\n")
    run("umoci", "repack", "--image", layout + ":1.0", bundle)
    run("umoci", "config", "--image", layout + ":1.0", "--config.env", "PATH=/bin",
        "--config.env", "FROM_IMAGE=yes", "--config.workingdir", "/srv",
        "--config.cmd", "/bin/sh", "--config.cmd", "-c", "--config.cmd", "echo image default")
    # 1.1: another config, so another manifest digest over the same layer
    run("umoci", "config", "--image", layout + ":1.0", "--tag", "1.1",
        "--config.env", "VARIANT=1.1")
    for tag in ("1.0", "1.1"):
        run("skopeo", "copy", "--dest-tls-verify=false", "oci:%s:%s" % (layout, tag),
            "docker://127.0.0.1:%d/tools/busybox:%s" % (port, tag))


def setUpModule():
    if MISSING or os.geteuid() != 0:
        return
    tmp = tempfile.mkdtemp(prefix="gantry-images-")
    REGISTRY["tmp"] = tmp
    REGISTRY["proc"], REGISTRY["port"] = start_registry(tmp)
    build_image(tmp, REGISTRY["port"])


def tearDownModule():
    if "proc" in REGISTRY:
        REGISTRY["proc"].kill()
        REGISTRY["proc"].wait()
    if "tmp" in REGISTRY:
        shutil.rmtree(REGISTRY["tmp"], True)


def mounts_under(path):
    with open("/proc/self/mountinfo") as f:
        return [line for line in f if (" " + path) in line]


@unittest.skipUnless(os.access(GANTLET, os.X_OK), "needs gantlet in the build directory")
@unittest.skipIf(MISSING, "container images need %s" % ", ".join(MISSING))
@unittest.skipUnless(os.geteuid() == 0, "container images need root")

def shim_is_static():
    """Is the build's gantry-shim statically linked (an ELF without a
    PT_INTERP program header, as src/agent/shim.c checks)?"""
    import struct
    with open(os.path.join(os.path.dirname(GANTLET), "gantry-shim"), "rb") as f:
        elf = f.read()
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    return all(struct.unpack_from("<I", elf, phoff + k * phentsize)[0] != 3  # PT_INTERP
               for k in range(phnum))

class Images(AgentTest):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gantry-images-vol-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.gantryd_args = AgentTest.gantryd_args + ("--storage-root", self.tmp,
                                                      "--restart-backoff-ms", "1000")
        super().setUp()
        os.chmod(self.tmp, 0o711)
        self.stopped_port = free_port()
        self.ref = "127.0.0.1:%d/tools/busybox:1.0" % REGISTRY["port"]
        self.agent = self.gantlet(fake_gpus="4xA100-80GB", extra_args=[
            "--storage-root", self.tmp,
            "--insecure-registry", "127.0.0.1:%d" % REGISTRY["port"],
            "--insecure-registry", "127.0.0.1:%d" % self.stopped_port])
        # before the agent's cleanup, which SIGKILLs shims: let them unmount
        self.addCleanup(self.delete_jobs)

    def delete_jobs(self):
        st, body = self.g.request("GET", self.PROJECT + "/jobs")
        for j in body.get("items", []) if st == 200 else []:
            self.g.request("DELETE", self.PROJECT + "/jobs/" + j["metadata"]["name"])
        wait_for("tasks gone", lambda: not self.g.request(
            "GET", self.PROJECT + "/tasks")[1].get("items"), timeout=30)
        wait_for("task state removed", lambda: not self.agent.state_dirs(), timeout=30)

    def submit_image(self, name, image, command=None, gpus=0, memory="256Mi", volume=None,
                     grace_s=1):
        tmpl = {"image": image, "terminationGracePeriodSeconds": grace_s,
                "resources": {"limits": {"nvidia.com/gpu": gpus, "cpu": "1", "memory": memory}}}
        if command:
            tmpl["command"] = command
        spec = {"replicaSpecs": {"Worker": {"replicas": 1, "template": tmpl}}}
        if volume:
            tmpl["volumeMounts"] = [{"name": "data", "mountPath": "/data", "readOnly": True}]
            spec["volumes"] = [{"name": "data", "hostPath": volume}]
        st, body = self.g.request("POST", self.PROJECT + "/jobs",
                                  obj("Job", name, "proj-a", spec=spec), token="alice")
        self.assertEqual(st, 201, body)
        return name + "-worker-0"

    def events(self, task):
        st, body = self.g.request("GET", "/apis/gantry.dev/v1/events?fieldSelector="
                                  "involvedObject.name=" + task)
        self.assertEqual(st, 200, body)
        return {e["reason"]: e for e in body.get("items", [])}

    def data_dir(self, task):
        return self.agent.data_dir(self.task(task)["metadata"]["uid"])

    def test_task_runs_in_image(self):
        data = os.path.join(self.tmp, "ds")
        os.makedirs(data)
        with open(os.path.join(data, "x"), "w") as f:
            f.write("from the volume\n")
        os.chmod(data, 0o755)
        os.chmod(os.path.join(data, "x"), 0o644)
        # a host task holds two GPUs first, so the image task's are not 0 and 1
        self.submit("holder", ["sleep", "1000"], gpus=2, grace_s=0)
        self.wait_host_pid("holder-worker-0")
        script = ("cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null ||"
                  " cat /sys/fs/cgroup/memory.max; echo CVD=$CUDA_VISIBLE_DEVICES;"
                  " echo UID=$(id -u); cat /data/x; echo IMG=$FROM_IMAGE PWD=$(pwd); exit 3")
        t = self.submit_image("img", self.ref, ["/bin/sh", "-c", script], gpus=2,
                              memory="96Mi", volume=data)
        task = self.wait_phase(t, ("Succeeded", "Failed"), timeout=60)
        st = task["status"]
        self.assertEqual((st["phase"], st["reason"], st["exitCode"]), ("Failed", "Error", 3), st)
        log = self.g.cli("logs", "img", "-p", "proj-a").stdout
        self.assertEqual(log, "%d\nCVD=0,1\nUID=%d\nfrom the volume\nIMG=yes PWD=/srv\n"
                         % (96 << 20, ALICE_UID), log)
        self.assertNotEqual(sorted(g["index"] for g in task["spec"]["gpus"]), [0, 1])
        ev = wait_for("Pulling and Pulled events",
                      lambda: (lambda e: "Pulled" in e and "Pulling" in e and e)(self.events(t)))
        self.assertIn(self.ref, ev["Pulling"]["message"])
        self.assertRegex(ev["Pulled"]["message"], r"\(sha256:[0-9a-f]{64}, \d+ bytes\) in [0-9.]+ s")
        out = self.g.cli("describe", "task", t, "-p", "proj-a").stdout
        self.assertIn("Pulled", out)
        # the image's own command and working directory when the template has none
        t2 = self.submit_image("dflt", self.ref)
        self.assertEqual(self.wait_phase(t2, ("Succeeded", "Failed"), timeout=60)["status"]["phase"],
                         "Succeeded")
        self.assertEqual(self.g.cli("logs", "dflt", "-p", "proj-a").stdout, "image default\n")
        self.assertIn("already present", self.events(t2)["Pulled"]["message"])

    def test_oom_killed(self):
        # dd's 200M buffer in a 48Mi cgroup
        t = self.submit_image("oom", self.ref, ["/bin/busybox", "dd", "if=/dev/zero",
                                                "of=/dev/null", "bs=200M", "count=1"],
                              memory="48Mi")
        st = self.wait_phase(t, ("Succeeded", "Failed"), timeout=60)["status"]
        self.assertEqual((st["phase"], st["reason"], st["exitCode"], st["signal"]),
                         ("Failed", "OOMKilled", 137, 9), st)

    def test_two_tasks_share_the_rootfs(self):
        a = self.submit_image("a", self.ref, ["/bin/sh", "-c", "echo a > /tmp/marker; sleep 1000"])
        b = self.submit_image("b", self.ref, ["/bin/sh", "-c", "sleep 1000"])
        self.wait_host_pid(a, timeout=60)
        self.wait_host_pid(b, timeout=60)
        da, db = self.data_dir(a), self.data_dir(b)
        wait_for("a's marker", lambda: os.path.exists(os.path.join(da, "rootfs", "tmp", "marker")))
        self.assertFalse(os.path.exists(os.path.join(db, "rootfs", "tmp", "marker")))
        self.assertTrue(os.path.exists(os.path.join(da, "ovl", "upper", "tmp", "marker")))
        store = glob.glob(os.path.join(self.agent.root, "images", "store", "*"))
        self.assertEqual(len(store), 1, store)
        lowers = []
        for d in (da, db):
            m = mounts_under(os.path.join(d, "rootfs"))
            self.assertEqual(len(m), 1, m)
            lowers.append([o for o in m[0].split()[-1].split(",") if o.startswith("lowerdir=")])
        self.assertEqual(lowers[0], lowers[1])
        self.assertEqual(lowers[0], ["lowerdir=" + os.path.join(store[0], "rootfs")])

    def test_pull_failures(self):
        port = REGISTRY["port"]
        cases = {
            "badref": ("127.0.0.1:%d/Tools/BusyBox:1.0" % port, "invalid image reference"),
            "notag": ("127.0.0.1:%d/tools/busybox:nope" % port, "manifest unknown"),
            "noreg": ("127.0.0.1:%d/tools/busybox:1.0" % self.stopped_port, "connection refused"),
        }
        for name, (ref, _) in cases.items():
            self.submit_image(name, ref, ["/bin/sh", "-c", "echo never"], gpus=1)
        for name, (ref, cause) in cases.items():
            task = self.wait_phase(name + "-worker-0", ("Succeeded", "Failed"), timeout=60)
            st = task["status"]
            self.assertEqual((st["phase"], st["reason"]), ("Failed", "ImagePullFailed"), st)
            self.assertIn(cause, st["message"], st)
            self.assertIn(ref, st["message"], st)
            # skopeo's "Error parsing image name" lead is not what happened
            self.assertNotIn("Error parsing image name", st["message"], st)
            # the failed pull is a Warning, and the job says why in its reason
            ev = wait_for("the Failed event", lambda: self.events(name + "-worker-0").get(
                "Failed"), timeout=20)
            self.assertEqual(ev["type"], "Warning", ev)

            # the job backs off (ImagePullBackOff, the pull's error in its
            # message) instead of failing, and pulls again later
            def backing_off():
                st, job = self.g.request("GET", self.PROJECT + "/jobs/" + name, token="alice")
                return [c for c in job["status"]["conditions"]
                        if c["type"] == "Restarting" and c["status"] == "True" and
                        c.get("reason") == "ImagePullBackOff"]
            c = wait_for("the job to back off", backing_off, timeout=20)[0]
            self.assertIn(cause, c["message"], c)
            self.assertIn("its GPUs are released, pulling again in", c["message"], c)
            out = self.g.cli("get", "jobs", "-p", "proj-a").stdout
            self.assertRegex(out, name + r"\s.*ImagePullBackOff")
        self.assertIn("cannot reach registry 127.0.0.1:%d" % self.stopped_port,
                      self.task("noreg-worker-0")["status"]["message"])
        wait_for("no GPU allocated while backing off",
                 lambda: self.agent.node()["status"]["allocated"]["gpus"] == [], timeout=20)

        # the delay grows (base 1 s here: 1 s, 2 s, ...) and never reaches
        # backoffLimit: the job is not Failed
        def pulls():
            st, job = self.g.request("GET", self.PROJECT + "/jobs/notag", token="alice")
            return job["status"].get("imagePullBackOffs", 0) >= 3 and job
        job = wait_for("three pulls backed off", pulls, timeout=40)
        self.assertNotIn("restartCount", job["status"])
        self.assertFalse([c for c in job["status"]["conditions"]
                          if c["type"] == "Failed" and c["status"] == "True"])
        c = [c for c in job["status"]["conditions"] if c["type"] == "Restarting"][0]
        self.assertIn("pulling again in 4s", c["message"], c)

    def test_gc_collects_unused_images(self):
        self.agent.kill()
        self.agent.extra_args += ["--image-gc-threshold", "1"]
        self.agent.start()
        store = os.path.join(self.agent.root, "images", "store")
        a = self.submit_image("old", self.ref, ["/bin/sh", "-c", "exit 0"])
        self.assertEqual(self.wait_phase(a, ("Succeeded", "Failed"), timeout=60)["status"]["phase"],
                         "Succeeded")
        # in use while it ran: kept although over the threshold
        old = os.listdir(store)
        self.assertEqual(len(old), 1, old)
        b = self.submit_image("new", self.ref[:-len("1.0")] + "1.1",
                              ["/bin/sh", "-c", "echo $VARIANT; sleep 1000"])
        self.wait_host_pid(b, timeout=60)
        new = os.listdir(store)
        self.assertEqual(len(new), 1, new)
        self.assertNotEqual(new, old)  # the unused one went, the used one stays
        self.assertEqual(os.listdir(os.path.join(self.agent.root, "images", "tmp")), [])

    def test_agent_restart_and_delete(self):
        t = self.submit_image("long", self.ref, ["/bin/sh", "-c", "sleep 1000"], gpus=1)
        pid = self.wait_host_pid(t, timeout=60)
        uid = self.task(t)["metadata"]["uid"]
        d = self.data_dir(t)
        self.agent.kill()
        self.agent.start()
        wait_for("re-adopted", lambda: self.agent.node() and self.phase(t) == "Running")
        time.sleep(2)  # a few agent polls: the task is not restarted or killed
        self.assertEqual(self.task(t)["status"]["hostPid"], pid)
        os.kill(pid, 0)
        self.g.cli("delete", "job", "long", "-p", "proj-a")
        wait_for("deleted task gone", lambda: self.task(t) is None, timeout=30)
        self.assertEqual(task_cgroups(uid), [])
        self.assertEqual(mounts_under(os.path.join(d, "rootfs")), [])
        oci_root = os.path.join(self.agent.root, "oci")
        self.assertFalse(os.path.exists(os.path.join(oci_root, uid)), os.listdir(oci_root))
        p = subprocess.run(["runc", "--root", oci_root, "list", "-q"], capture_output=True,
                           text=True)
        self.assertEqual(p.stdout.split(), [])
        for parent in glob.glob("/sys/fs/cgroup/*/gantry/" + uid):
            self.fail("cgroup left: " + parent)
        with self.assertRaises(ProcessLookupError):
            os.kill(pid, 0)

    def test_init_is_pid_1_and_a_stop_is_prompt(self):
        # sh execs a lone command (sleep would be PID 1); in the loop sh
        # stays and outlives each sleep the stop's SIGTERM ends. The init is
        # the shim's own binary, bind-mounted, so only a statically linked
        # shim has one (a sanitizer build's is dynamic: the task's command
        # is then PID 1 itself, as before, and stops take the grace period)
        static = shim_is_static()
        for name, script in (("plain", "sleep 1000"), ("loop", "while :; do sleep 1; done")):
            # without an init the stop takes the whole grace period (sh as
            # PID 1 ignores SIGTERM): keep it short there
            t = self.submit_image(name, self.ref, ["/bin/sh", "-c", script],
                                  grace_s=30 if static else 1)
            pid = self.wait_host_pid(t, timeout=60)
            with open("/proc/%d/cmdline" % pid) as f:
                argv = f.read().split("\0")[:-1]
            if not static:
                self.assertIn(argv, (["/bin/sh", "-c", script], script.split()))
                print("dynamically linked shim: no init; the stop's time is not checked")
                self.g.cli("delete", "job", name, "-p", "proj-a")
                continue
            self.assertEqual(argv, ["/sbin/gantry-init", "--init-exec", "3", "/bin/sh", "-c",
                                    script])
            t0 = time.monotonic()
            self.g.cli("delete", "job", name, "-p", "proj-a")
            wait_for("the task's init gone", lambda: not pid_alive(pid), timeout=40)
            self.assertLess(time.monotonic() - t0, 2.0, script)
            wait_for("deleted task gone", lambda: self.task(t) is None, timeout=30)

if __name__ == "__main__":
    main()
