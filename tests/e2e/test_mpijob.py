#!/usr/bin/env python3
"""MPIJobs (kubeflow.org/v2beta1 and v1) across two hosts, each a network
namespace (the bridge and namespaces of test_multihost), with Debian's
Open MPI and mpi4py.

One launcher and two workers (one fake GPU each, so the workers land on
different hosts): the launcher runs `mpirun -np 2 python3 -c ...allreduce`,
mpirun starts its daemons in the workers through gantry's rsh agent
(`gantry mpi-rsh`, through the workers' node agents, no ssh), and every
rank prints its rank, the allreduce's sum and the host name of the task it
runs in. Checks:
- the launcher's log has both ranks' lines with the right sum, each from
  its own worker task, on different nodes;
- /etc/mpi/hostfile is the MPI operator's ("HOST slots=1" per worker) and
  the launcher's environment names the hostfile and the rsh agent;
- the job Succeeds when the launcher does, and the workers are stopped then;
- the launcher's credential execs into its own job's workers only (another
  job's task answers 403), and no stored object carries it;
- the v1 variant (spec-level cleanPodPolicy, the "mpi" container) does the
  same.

And, without agents: every upstream example manifest in
../shared/fixtures/kubeflow-training-operator-v1.9.0/examples/mpi is
accepted unchanged by POST to a project's jobs (or refused only for a
reason named here), with a table of outcomes.
"""
import glob
import json
import os
import re
import sys
import unittest

import yaml

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import (API, SOURCE, AgentTest, Gantlet, GantrydTest,  # noqa: E402
                        main, obj, wait_for)
import test_multihost  # noqa: E402
from test_multihost import BridgeServer, can_make_netns  # noqa: E402

PY = "/usr/bin/python3"
EXAMPLES = os.path.join(SOURCE, "..", "shared", "fixtures", "kubeflow-training-operator-v1.9.0",
                        "examples", "mpi")
RANK_SCRIPT = ("import socket; from mpi4py import MPI; c = MPI.COMM_WORLD; "
               "s = c.allreduce(c.rank + 1); "
               "print('rank=%d size=%d sum=%d host=%s' % "
               "(c.rank, c.size, s, socket.gethostname()), flush=True)")
# The launcher shows its hostfile and environment, runs the ranks, then
# tries its credential on another job's task.
LAUNCHER = ("cat /etc/mpi/hostfile; /bin/sh /etc/mpi/discover_hosts.sh; "
            "echo agent=$OMPI_MCA_plm_rsh_agent; echo hostfile=$OMPI_MCA_orte_default_hostfile; "
            "echo token=${GANTRY_TOKEN%%:*}; "
            "mpirun -np 2 " + PY + " -c \"" + RANK_SCRIPT + "\" || exit 1; "
            "$OMPI_MCA_plm_rsh_agent other-worker-0 true; echo other_rc=$?")


def manifest(name, version):
    launcher = {"name": "mpi", "command": ["/bin/sh", "-c", LAUNCHER],
                "resources": {"limits": {"cpu": "200m", "memory": "512Mi"}}}
    worker = {"name": "mpi", "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "200m",
                                                      "memory": "512Mi"}}}
    spec = {"slotsPerWorker": 1, "mpiReplicaSpecs": {
        "Launcher": {"replicas": 1, "template": {"spec": {"containers": [launcher]}}},
        "Worker": {"replicas": 2, "template": {"spec": {"containers": [worker]}}}}}
    if version == "v1":
        spec["cleanPodPolicy"] = "Running"
    else:
        spec.update({"runPolicy": {"cleanPodPolicy": "None"}, "mpiImplementation": "OpenMPI",
                     "launcherCreationPolicy": "WaitForWorkersReady",
                     "sshAuthMountPath": "/home/mpiuser/.ssh"})
    return {"apiVersion": "kubeflow.org/" + version, "kind": "MPIJob",
            "metadata": {"name": name, "namespace": "proj-a"}, "spec": spec}


@unittest.skipUnless(can_make_netns(), "needs root, ip(8), nsenter(1), network namespaces and gantlet")
class TwoHostMPI(AgentTest, BridgeServer):
    def setUp(self):
        super().setUp()
        self.agents = []
        for i, (ns, addr) in enumerate(zip(self.hosts.ns, self.hosts.addrs)):
            a = Gantlet(self.g, name="host-%c" % (ord("a") + i), fake_gpus="1xA100-80GB",
                        host=addr, prefix=self.hosts.enter(ns))
            self.addCleanup(a.cleanup)
            self.agents.append(a.start())

    job_state = test_multihost.TwoHosts.job_state  # "Succeeded", "Failed" or None

    def run_mpijob(self, name, version):
        doc = manifest(name, version)
        self.g.cli("apply", "-f", "-", input=json.dumps(doc), token="alice")
        try:
            wait_for("job %s finished" % name, lambda: self.job_state(name), timeout=150,
                     interval=0.5)
        finally:
            log = self.g.cli("logs", name, "--replica", "launcher-0", "-p", "proj-a",
                             check=False).stdout
            tasks = {r: self.task("%s-%s" % (name, r)) for r in
                     ("launcher-0", "worker-0", "worker-1")}
            if self.job_state(name) != "Succeeded":
                print(log, {r: (t or {}).get("status") for r, t in tasks.items()},
                      [a.logs()[-3000:] for a in self.agents], flush=True)
        self.assertEqual(self.job_state(name), "Succeeded",
                         (log, {r: (t or {}).get("status") for r, t in tasks.items()},
                          [a.logs()[-2000:] for a in self.agents]))
        return log, tasks

    def check_run(self, name, log, clean):
        # the MPI operator's hostfile, and discover_hosts.sh for Horovod
        for i in range(2):
            host = "%s-worker-%d.%s.proj-a.svc" % (name, i, name)
            self.assertRegex(log, r"(?m)^%s slots=1$" % re.escape(host))
            self.assertRegex(log, r"(?m)^%s:1$" % re.escape(host))
        self.assertRegex(log, r"(?m)^agent=/\S+/gantry-mpi-rsh$")
        self.assertIn("hostfile=/etc/mpi/hostfile\n", log)
        self.assertIn("token=gtmpi\n", log)
        # both ranks, each in its own worker, with the allreduce's sum
        for rank in range(2):
            self.assertRegex(log, r"(?m)^rank=%d size=2 sum=3 host=%s-worker-\d$" % (rank, name))
        hosts = sorted(re.findall(r"(?m)^rank=\d size=2 sum=3 host=(\S+)$", log))
        self.assertEqual(hosts, ["%s-worker-0" % name, "%s-worker-1" % name], log)
        # the launcher decided the job; the workers were stopped after it
        # (cleanPodPolicy None: kept, stopped by the job's end; Running: deleted)
        for w in ("worker-0", "worker-1"):
            task = "%s-%s" % (name, w)
            if clean == "None":
                t = self.wait_phase(task, ("Succeeded", "Failed"), timeout=60)
                self.assertEqual(t["status"].get("reason"), "JobFinished", t["status"])
            else:
                wait_for("%s deleted" % task, lambda: self.task(task) is None, timeout=60)
        self.assertEqual(self.phase(name + "-launcher-0"), "Succeeded")
        st, body = self.g.request("GET", self.PROJECT + "/jobs/" + name)
        self.assertEqual(body["status"]["replicaStatuses"]["Launcher"]["succeeded"], 1, body)

        def all_free():
            return not any(((a.node() or {}).get("status", {}).get("allocated") or {}).get("gpus")
                           for a in self.agents)
        wait_for("all GPUs free", all_free, timeout=60)

    def test_v2beta1_allreduce_on_two_hosts(self):
        # another job's running task, which the launcher's credential must not reach
        self.submit("other", ["sleep", "600"], gpus=0, cpu="10m")
        self.wait_phase("other-worker-0", "Running", timeout=60)
        log, tasks = self.run_mpijob("allr", "v2beta1")
        nodes = {r: t["spec"]["nodeName"] for r, t in tasks.items()}
        self.assertNotEqual(nodes["worker-0"], nodes["worker-1"])
        self.check_run("allr", log, "None")
        m = re.search(r"(?m)^other_rc=(\d+)$", log)
        self.assertTrue(m and m.group(1) != "0", log)
        self.assertIn("the MPI credential is not for the job of task", log)
        # the credential is in no stored object
        for kind in ("tasks", "jobs"):
            st, body = self.g.request("GET", self.PROJECT + "/" + kind)
            self.assertEqual(st, 200, body)
            self.assertNotIn("gtmpi:", json.dumps(body))

    def test_v1_allreduce_on_two_hosts(self):
        log, _ = self.run_mpijob("allr1", "v1")
        self.check_run("allr1", log, "Running")
        st, job = self.g.request("GET", self.PROJECT + "/jobs/allr1")
        self.assertEqual(job["spec"]["runPolicy"]["cleanPodPolicy"], "Running")


# Upstream examples refused by gantry, and the reason named in the refusal.
REFUSED = {}


class UpstreamMPIExamples(GantrydTest):
    def setUp(self):
        super().setUp()
        st, body = self.g.request("POST", API + "/departments", obj(
            "Department", "dept-a", spec={"quota": {"nvidia.com/gpu": 8}}))
        self.assertEqual(st, 201, body)
        st, body = self.g.request("POST", API + "/projects", obj(
            "Project", "proj-a", spec={"department": "dept-a"}))
        self.assertEqual(st, 201, body)

    def test_examples_apply_unchanged(self):
        files = sorted(glob.glob(os.path.join(EXAMPLES, "*.yaml")))
        self.assertTrue(files, "no MPI examples in " + EXAMPLES)
        rows = []
        for path in files:
            with open(path) as f:
                docs = [d for d in yaml.safe_load_all(f) if d]
            for doc in docs:
                st, body = self.g.request("POST", API + "/projects/proj-a/jobs", doc)
                base = os.path.basename(path)
                if base in REFUSED:
                    self.assertEqual(st, 422, body)
                    self.assertIn(REFUSED[base], body["message"])
                    rows.append((base, "refused: " + body["message"]))
                    continue
                self.assertEqual(st, 201, (base, body))
                spec = body["spec"]
                self.assertEqual(sorted(spec["replicaSpecs"]), ["Launcher", "Worker"])
                ann = body["metadata"]["annotations"]
                self.assertEqual(ann["gantry.dev/framework"], "mpi")
                self.assertEqual(ann["gantry.dev/mpi-slots-per-worker"], "1")
                self.assertEqual(ann["gantry.dev/mpi-implementation"], "OpenMPI")
                self.assertEqual(spec["runPolicy"]["cleanPodPolicy"], "Running")
                worker = spec["replicaSpecs"]["Worker"]["template"]
                self.assertEqual(worker["command"], ["sleep", "365d"])
                rows.append((base, "accepted (Launcher 1, Worker %d)"
                             % spec["replicaSpecs"]["Worker"]["replicas"]))
        print("\nupstream MPI examples:")
        for base, outcome in rows:
            print("  %-32s %s" % (base, outcome))

    def test_refusals_name_the_field(self):
        doc = manifest("bad", "v2beta1")
        cases = [
            (("spec", "runLauncherAsWorker"), True, "spec.runLauncherAsWorker"),
            (("spec", "mpiImplementation"), "LAM", "spec.mpiImplementation: must be one of"),
            (("spec", "slotsPerWorker"), 0, "spec.slotsPerWorker"),
            (("spec", "launcherCreationPolicy"), "Later", "spec.launcherCreationPolicy"),
            (("spec", "sshAuthMountpath"), "/x", "spec.sshAuthMountpath: unknown field"),
        ]
        for (a, b), value, want in cases:
            d = json.loads(json.dumps(doc))
            d[a][b] = value
            st, body = self.g.request("POST", API + "/projects/proj-a/jobs", d)
            self.assertEqual(st, 422, (b, body))
            self.assertIn(want, body["message"])
        d = json.loads(json.dumps(doc))
        d["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"] = 2
        st, body = self.g.request("POST", API + "/projects/proj-a/jobs", d)
        self.assertEqual(st, 422, body)
        self.assertIn("Launcher.replicas: must be 1", body["message"])
        d = json.loads(json.dumps(doc))
        d["apiVersion"] = "kubeflow.org/v2beta1"
        d["kind"] = "PyTorchJob"
        st, body = self.g.request("POST", API + "/projects/proj-a/jobs", d)
        self.assertEqual(st, 422, body)
        self.assertIn("only MPIJob is", body["message"])


if __name__ == "__main__":
    main()
