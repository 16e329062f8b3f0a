"""The digits PyTorchJob across two hosts, each a network namespace.

A host bridge with a private /24 used only here (gantryd listens on .1),
two network namespaces joined to it by veth pairs (.2 and .3), and a
gantlet in each with one fake GPU, so the master and the worker of the
job (one GPU each) must land on different nodes. The ranks find each
other by the host names gantryd writes into each task's /etc/hosts and
talk gloo over the namespaces' interfaces (GLOO_SOCKET_IFNAME from the
agent). The code and the output directory are volumes beneath the nodes'
storage root. Traffic goes only to loopback and these namespaces; every
name carries the test's pid so concurrent runs do not collide, and the
namespaces, bridge and veths are removed however the test ends.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from chaoslib import Hosts, can_make_netns  # noqa: E402
from gantry_e2e import SOURCE, AgentTest, Gantlet, Gantryd, GantrydTest, wait_for  # noqa: E402
from gantry_e2e import main  # noqa: E402

EXAMPLE = os.path.join(SOURCE, "examples", "pytorch-digits")
PY = "/usr/bin/python3"


def has_torch():
    return subprocess.run([PY, "-c", "import torch, sklearn"],
                          capture_output=True).returncode == 0


class BridgeServer(GantrydTest):
    """Before AgentTest's setup (it comes next in the MRO): the namespaces
    and a gantryd listening on the bridge."""
    HOSTS = 2

    def setUp(self):
        self.hosts = Hosts(self.HOSTS)
        self.addCleanup(self.hosts.destroy)  # runs last: after the processes are gone
        self.hosts.create()
        self.g = Gantryd(self.gantryd_args, host=self.hosts.server_addr)
        self.addCleanup(self.g.cleanup)
        self.g.start()


@unittest.skipUnless(can_make_netns(), "needs root, ip(8), nsenter(1), network namespaces and gantlet")
@unittest.skipUnless(has_torch(), "needs Debian's python3-torch and python3-sklearn")
class TwoHosts(AgentTest, BridgeServer):
    # gantryd admits the volumes (beneath the temporary directory); each agent
    # mounts them from its own storage root
    gantryd_args = AgentTest.gantryd_args + ("--storage-root", tempfile.gettempdir())

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="gantry-multihost-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        os.chmod(self.tmp, 0o711)  # tasks run as another uid beneath it
        self.storage = os.path.join(self.tmp, "storage")
        self.job_dir = os.path.join(self.storage, "digits")
        self.agents = []
        for i, (ns, addr) in enumerate(zip(self.hosts.ns, self.hosts.addrs)):
            a = Gantlet(self.g, name="host-%c" % (ord("a") + i), fake_gpus="1xA100-80GB",
                        host=addr, prefix=self.hosts.enter(ns),
                        extra_args=["--storage-root", self.storage])
            self.addCleanup(a.cleanup)
            self.agents.append(a.start())

    def copy_example(self):
        """The code, readable by the task's uid, and an output directory it may write."""
        shutil.copytree(EXAMPLE, os.path.join(self.job_dir, "code"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        out = os.path.join(self.job_dir, "output")
        os.makedirs(out)
        for d, dirs, files in os.walk(self.storage):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(os.path.join(d, f), 0o644)
        os.chmod(out, 0o777)
        return out

    def apply_digits(self):
        with open(os.path.join(EXAMPLE, "pytorchjob.yaml")) as f:
            manifest = f.read()
        manifest = manifest.replace("/srv/gantry/digits", self.job_dir)
        manifest = re.sub(r"(?m)^(  namespace:) default$", r"\1 proj-a", manifest)
        self.g.cli("apply", "-f", "-", input=manifest, token="alice")  # tasks run as her uid

    def job_state(self, name):
        st, body = self.g.request("GET", self.PROJECT + "/jobs/" + name)
        self.assertEqual(st, 200, body)
        for c in reversed(body.get("status", {}).get("conditions", [])):
            if c["type"] in ("Succeeded", "Failed") and c["status"] == "True":
                return c["type"]
        return None

    def log(self, job, replica):
        return self.g.cli("logs", job, "--replica", replica, "-p", "proj-a").stdout

    def test_digits_master_and_worker_on_two_hosts(self):
        out = self.copy_example()
        self.apply_digits()
        wait_for("job digits finished", lambda: self.job_state("digits"), timeout=120,
                 interval=0.5)
        tasks = {r: self.task("digits-" + r) for r in ("master-0", "worker-0")}
        logs = {r: self.log("digits", r) for r in tasks}
        self.assertEqual(self.job_state("digits"), "Succeeded",
                         (logs, {r: t.get("status") for r, t in tasks.items()},
                          [a.logs()[-1500:] for a in self.agents]))

        # One node each, and each rank saw its own node's address.
        nodes = {r: t["spec"]["nodeName"] for r, t in tasks.items()}
        self.assertEqual(sorted(nodes.values()), ["host-a", "host-b"])
        addr_of = {a.name: a.host for a in self.agents}
        seen = {}
        for rank, r in enumerate(("master-0", "worker-0")):
            m = re.search(r"^rank=%d world_size=(\d+) host=(\S+) address=(\S+) master=(\S+)$"
                          % rank, logs[r], re.M)
            self.assertTrue(m, logs[r])
            self.assertEqual(m.group(1), "2")
            self.assertEqual(m.group(2), "digits-" + r)
            self.assertEqual(m.group(3), addr_of[nodes[r]])
            self.assertEqual(m.group(4), "digits-master-0:%d" % tasks["master-0"]["spec"]["ports"][0]["port"])
            m = re.search(r"^rank=%d checksum=(\S+) ranks_agree=(\S+) test_accuracy=(\S+)"
                          % rank, logs[r], re.M)
            self.assertTrue(m, logs[r])
            self.assertEqual(m.group(2), "True")
            self.assertGreaterEqual(float(m.group(3)), 0.9)
            seen[r] = (m.group(1), m.group(3))
        self.assertNotEqual(addr_of["host-a"], addr_of["host-b"])
        self.assertEqual(seen["master-0"], seen["worker-0"])

        # The master saved the model on its node's storage; the separate
        # evaluation agrees with what the ranks printed.
        with open(os.path.join(out, "metrics.json")) as f:
            self.assertEqual(json.load(f)["world_size"], 2)
        r = subprocess.run([PY, os.path.join(self.job_dir, "code", "evaluate.py"), out,
                            "--min-accuracy", "0.9"], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("accuracy=" + seen["master-0"][1], r.stdout)

        # Every GPU is free again.
        def all_free():
            for a in self.agents:
                alloc = (a.node() or {}).get("status", {}).get("allocated") or {}
                if alloc.get("gpus"):
                    return False
            return True
        # the worker may still be finishing (or be stopped, with its grace
        # period) when the master has succeeded
        wait_for("all GPUs free", all_free, timeout=60)


if __name__ == "__main__":
    main()
