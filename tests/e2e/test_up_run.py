"""`gantry up`, `gantry run`, `gantry logs` and `gantry down` end to end.

A local cluster (gantryd and gantlet with 8 fake GPUs, started by `gantry
up` from the build directory) in a temporary data directory, with
GANTRY_CONFIG in a temporary directory too, so nothing touches HOME.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import GANTRY, LocalClusterTest  # noqa: E402
from gantry_e2e import main  # noqa: E402


class UpRunDown(LocalClusterTest):
    def node(self):
        r = self.gantry("get", "nodes", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        items = json.loads(r.stdout)["items"]
        self.assertEqual(len(items), 1)
        return items[0]

    def test_1_up_is_idempotent_and_configures(self):
        r = self.gantry("up", "--data-dir", self.data, "--listen", "127.0.0.1:%d" % self.port)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("already up", r.stderr)
        with open(self.env["GANTRY_CONFIG"]) as f:
            cfg = json.load(f)
        self.assertEqual(cfg["server"], "http://127.0.0.1:%d" % self.port)
        self.assertEqual(cfg["project"], "default")
        self.assertEqual(os.stat(self.env["GANTRY_CONFIG"]).st_mode & 0o777, 0o600)
        self.assertEqual(os.stat(os.path.join(self.data, "tokens")).st_mode & 0o777, 0o600)
        r = self.gantry("get", "department", "default", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["spec"]["quota"]["nvidia.com/gpu"], 8)
        r = self.gantry("get", "project", "default", "-o", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["spec"]["department"], "default")

    def test_2_run_gets_its_gpus(self):
        r = self.gantry("run", "--gpus", "2", "--", "sh", "-c",
                        "echo $CUDA_VISIBLE_DEVICES $NVIDIA_VISIBLE_DEVICES; id -u")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"job\.gantry\.dev/run-[0-9a-f]{8} created")
        lines = r.stdout.split("\n")
        indices, uuids = lines[0].split(" ")
        indices, uuids = indices.split(","), uuids.split(",")
        self.assertEqual(len(indices), 2)
        by_index = {str(g["index"]): g["uuid"] for g in self.node()["status"]["gpus"]}
        self.assertEqual(uuids, [by_index[i] for i in indices])
        self.assertNotEqual(int(lines[1]), 0)
        # Afterwards nothing is allocated.
        allocated = self.node()["status"].get("allocated") or {}
        self.assertFalse(allocated.get("gpus"), allocated)

    def test_3_run_exit_status_and_logs(self):
        r = self.gantry("run", "--name", "three", "--", "sh", "-c", "echo a; echo b; exit 3")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(r.stdout, "a\nb\n")
        r = self.gantry("logs", "three", "--tail", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "b\n")
        # A shell's child that dies of SIGTERM: the shell's exit status, as a shell reports it.
        r = self.gantry("run", "--", "sh", "-c", "sh -c 'kill -TERM $$'")
        self.assertEqual(r.returncode, 128 + signal.SIGTERM, r.stderr)

    def test_4_volume_in_the_local_class(self):
        r = self.gantry("get", "department", "default", "-o", "json")
        self.assertRegex(json.loads(r.stdout)["spec"]["quota"]["storage"], r"^[0-9]+Mi$")
        r = self.gantry("volume", "create", "scratch", "--size", "16Mi")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.gantry("run", "--volume", "scratch:/scratch", "--", "sh", "-c",
                        "echo kept > /scratch/f; df -k /scratch | tail -1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r" /scratch\n$")
        r = self.gantry("run", "--volume", "scratch:/s:ro", "--", "cat", "/s/f")
        self.assertEqual((r.returncode, r.stdout), (0, "kept\n"), r.stderr)
        r = self.gantry("get", "volumes")
        self.assertRegex(r.stdout, r"\nscratch +16Mi +\S+ +ReadWriteOnce +false +local +Available ")
        images = os.listdir(os.path.join(self.data, "volumes", "default"))
        self.assertEqual(len(images), 1, images)

    def test_9_down_stops_everything(self):
        pids = []
        for name in ("gantryd", "gantlet"):
            with open(os.path.join(self.data, name + ".pid")) as f:
                pids.append(int(f.read()))
        proc = subprocess.Popen([GANTRY, "run", "--name", "sleeper", "--", "sleep", "300"],
                                env=self.env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline:
            r = self.gantry("get", "task", "sleeper-worker-0", "-p", "default", "-o", "json")
            if r.returncode == 0 and json.loads(r.stdout).get("status", {}).get("hostPid"):
                break
            time.sleep(0.2)
        host_pid = json.loads(r.stdout)["status"]["hostPid"]
        r = self.gantry("down", "--data-dir", self.data, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        proc.wait(timeout=30)
        for pid in pids + [host_pid]:
            self.assertFalse(os.path.exists("/proc/%d" % pid) and
                             not re.search(r"State:\s+Z", open("/proc/%d/status" % pid).read()),
                             "pid %d survived gantry down" % pid)
        self.assertFalse(os.path.exists(os.path.join(self.data, "gantryd.pid")))
        r = self.gantry("down", "--data-dir", self.data)
        self.assertIn("not running", r.stderr)


if __name__ == "__main__":
    main()
