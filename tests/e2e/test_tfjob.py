"""A Kubeflow TFJob (1 chief, 2 workers, 1 ps) on one real gantlet.

Each task prints its TF_CONFIG and looks up every host name of the job in
its own /etc/hosts. The test builds, from the Task objects' names and
allocated ports, the TF_CONFIG that Kubeflow's training operator writes
(Go's encoding/json of {cluster, task, environment}: compact, cluster keys
sorted, "<job>-<type>-<index>.<namespace>.svc:<port>", environment
"cloud") and compares it string for string.
"""
import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import GANTLET, AgentTest, wait_for  # noqa: E402
from gantry_e2e import main  # noqa: E402

JOB = "mnist-tf"
PROJECT = "proj-a"
REPLICAS = {"Chief": 1, "Worker": 2, "PS": 1}
HOSTS = ["%s-%s-%d%s" % (JOB, t.lower(), i, suffix)
         for t, n in REPLICAS.items() for i in range(n) for suffix in ("", "." + PROJECT + ".svc")]
# Print TF_CONFIG, then resolve every host name (a miss prints "unresolved NAME").
SCRIPT = ('printf "TF_CONFIG=%%s\\n" "$TF_CONFIG"; '
          'for h in %s; do getent hosts "$h" || echo "unresolved $h"; done' % " ".join(HOSTS))
# The job ends, stopping the others, when its chief does: the chief lingers.
CHIEF_SCRIPT = SCRIPT + "; sleep 5"


def replica(gpus, script):
    limits = {"cpu": "250m", "memory": "128Mi"}  # four tasks on one small machine
    if gpus:
        limits["nvidia.com/gpu"] = gpus
    return {"restartPolicy": "Never", "template": {"spec": {"containers": [{
        "name": "tensorflow", "command": ["/bin/sh", "-c", script],
        "resources": {"limits": limits}}]}}}


def tfjob():
    specs = {}
    for t, n in REPLICAS.items():
        specs[t] = dict(replica(0 if t == "PS" else 1, CHIEF_SCRIPT if t == "Chief" else SCRIPT),
                        replicas=n)
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": JOB, "namespace": PROJECT},
            "spec": {"tfReplicaSpecs": specs}}


def kubeflow_tf_config(tasks, me):
    """TF_CONFIG as the training operator writes it for task me."""
    cluster = {}
    for t in sorted(tasks.values(), key=lambda t: t["spec"]["replicaIndex"]):
        rt = t["spec"]["replicaType"].lower()
        cluster.setdefault(rt, []).append("%s-%s-%d.%s.svc:%d" % (
            JOB, rt, t["spec"]["replicaIndex"], PROJECT, t["spec"]["ports"][0]["port"]))
    conf = {"cluster": dict(sorted(cluster.items())),
            "task": {"type": me["spec"]["replicaType"].lower(),
                     "index": me["spec"]["replicaIndex"]},
            "environment": "cloud"}
    return json.dumps(conf, separators=(",", ":"))


@unittest.skipUnless(os.access(GANTLET, os.X_OK), "needs gantlet in the build directory")
class TFJob(AgentTest):
    def test_tf_config_and_host_names(self):
        agent = self.gantlet(fake_gpus="4xA100-80GB")
        self.g.cli("apply", "-f", "-", input=json.dumps(tfjob()), token="alice")
        names = ["%s-%s-%d" % (JOB, t.lower(), i) for t, n in REPLICAS.items() for i in range(n)]
        for n in names:
            self.wait_phase(n, ("Succeeded", "Failed"), timeout=60)
        tasks = {n: self.task(n) for n in names}
        for n, t in tasks.items():
            self.assertEqual(t["status"]["phase"], "Succeeded", (n, t["status"]))
            self.assertEqual(t["spec"]["nodeName"], agent.name)
            self.assertEqual(len(t["spec"]["ports"]), 1, t["spec"])
        ports = [t["spec"]["ports"][0]["port"] for t in tasks.values()]
        self.assertEqual(len(set(ports)), len(ports), "tasks on one node share its ports")

        for n, t in tasks.items():
            rt = t["spec"]["replicaType"].lower()
            out = self.g.cli("logs", JOB, "--replica", "%s-%d" % (rt, t["spec"]["replicaIndex"]),
                             "-p", PROJECT).stdout
            m = re.search(r"^TF_CONFIG=(.*)$", out, re.M)
            self.assertTrue(m, out)
            self.assertEqual(m.group(1), kubeflow_tf_config(tasks, t))
            self.assertNotIn("unresolved", out)
            resolved = {}
            for line in out.splitlines()[1:]:
                addr, *aliases = line.split()
                for a in aliases:
                    resolved[a] = addr
            self.assertEqual(resolved, {h: agent.host for h in HOSTS}, out)

        def succeeded():
            st, job = self.g.request("GET", self.PROJECT + "/jobs/" + JOB)
            self.assertEqual(st, 200, job)
            return any(c["type"] == "Succeeded" and c["status"] == "True"
                       for c in job.get("status", {}).get("conditions", []))
        wait_for("job %s Succeeded" % JOB, succeeded, timeout=20)


if __name__ == "__main__":
    main()
