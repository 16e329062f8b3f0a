"""Kubeflow XGBoostJob, PaddleJob and JAXJob on one real gantlet.

Each task prints the variables the training operator v1.9 sets for its kind
of job (pkg/controller.v1/xgboost, paddlepaddle, jax); the test builds them
from the Task objects' names, indices and allocated ports as the operator
would (a port is the task's gantry port, where the operator has the shared
container port) and compares them string for string: XGBoost's MASTER_*,
WORLD_SIZE, RANK (workers after the master) and WORKER_* (n-1 worker names),
Paddle's collective mode (worker 0 meets at its own node address, the
others at "<job>-worker-0:<port>") and JAX's COORDINATOR_*. The JAXJob's
tasks also read their name, namespace and node address through
env[].valueFrom.fieldRef (metadata.name, metadata.namespace, status.hostIP).
"""
import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import GANTLET, AgentTest, wait_for  # noqa: E402
from gantry_e2e import main  # noqa: E402

PROJECT = "proj-a"
NAMES = ("PYTHONUNBUFFERED MASTER_ADDR MASTER_PORT WORLD_SIZE RANK WORKER_PORT WORKER_ADDRS "
         "PADDLE_JOB_ID PADDLE_NNODES PADDLE_MASTER POD_IP_DUMMY PADDLE_SERVER_NUM "
         "PADDLE_TRAINER_NUM COORDINATOR_ADDRESS COORDINATOR_PORT NUM_PROCESSES "
         "PROCESS_ID POD_NAME POD_NAMESPACE HOST_IP").split()
FIELD_REFS = [{"name": n, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": p}}}
              for n, p in (("POD_NAME", "metadata.name"), ("POD_NAMESPACE", "metadata.namespace"),
                           ("HOST_IP", "status.hostIP"))]
# Print each of NAMES that is set, as NAME=value; the master lingers so that
# the job, which ends with it, does not stop the workers first.
SCRIPT = " ".join('[ -n "${%s+x}" ] && echo "%s=$%s";' % (n, n, n) for n in NAMES) + " true"

# kind, replica specs key, framework container, {type: replicas}
JOBS = {
    "xgb": ("XGBoostJob", "xgbReplicaSpecs", "xgboost", {"Master": 1, "Worker": 2}),
    "pd": ("PaddleJob", "paddleReplicaSpecs", "paddle", {"Worker": 2}),
    "jx": ("JAXJob", "jaxReplicaSpecs", "jax", {"Worker": 2}),
}


def manifest(job):
    kind, key, container, replicas = JOBS[job]
    specs = {}
    for t, n in replicas.items():
        script = SCRIPT + ("; sleep 5" if t == "Master" else "")
        c = {"name": container, "command": ["/bin/sh", "-c", script],
             "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}
        if job == "jx":
            c["env"] = FIELD_REFS
        specs[t] = {"replicas": n, "restartPolicy": "Never", "template": {"spec": {
            "containers": [c]}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": kind,
            "metadata": {"name": job, "namespace": PROJECT}, "spec": {key: specs}}


def operator_env(job, tasks, me, node_ip):
    """The variables the training operator gives task me of job."""
    def port(t, i):
        return tasks["%s-%s-%d" % (job, t.lower(), i)]["spec"]["ports"][0]["port"]
    rtype, idx = me["spec"]["replicaType"], me["spec"]["replicaIndex"]
    n = len(tasks)
    if job == "xgb":
        env = [("MASTER_PORT", port("Master", 0)), ("MASTER_ADDR", "xgb-master-0"),
               ("WORLD_SIZE", n), ("RANK", idx + (1 if rtype == "Worker" else 0)),
               ("PYTHONUNBUFFERED", 0), ("WORKER_PORT", port("Worker", 0)),
               ("WORKER_ADDRS", ",".join("xgb-worker-%d" % i for i in range(n - 1)))]
    elif job == "pd":
        master = "pd-worker-0:%d" % port("Worker", 0)
        env = [("PYTHONUNBUFFERED", 1), ("PADDLE_JOB_ID", "pd"), ("PADDLE_NNODES", n)]
        if idx == 0:
            master = "%s:%d" % (node_ip, port("Worker", 0))
            env.append(("POD_IP_DUMMY", node_ip))
        env.append(("PADDLE_MASTER", master))
    else:
        env = [("PYTHONUNBUFFERED", 1), ("COORDINATOR_PORT", port("Worker", 0)),
               ("COORDINATOR_ADDRESS", "jx-worker-0"), ("NUM_PROCESSES", n),
               ("PROCESS_ID", idx), ("POD_NAME", "jx-worker-%d" % idx),
               ("POD_NAMESPACE", PROJECT), ("HOST_IP", node_ip)]
    return {k: str(v) for k, v in env}


@unittest.skipUnless(os.access(GANTLET, os.X_OK), "needs gantlet in the build directory")
class KubeflowEnv(AgentTest):
    def test_operator_environments(self):
        agent = self.gantlet(fake_gpus="1xA100-80GB")
        for job in JOBS:
            self.g.cli("apply", "-f", "-", input=json.dumps(manifest(job)), token="alice")
        for job, (_, _, _, replicas) in JOBS.items():
            names = ["%s-%s-%d" % (job, t.lower(), i) for t, n in replicas.items()
                     for i in range(n)]
            for n in names:
                self.wait_phase(n, ("Succeeded", "Failed"), timeout=60)
            tasks = {n: self.task(n) for n in names}
            for n, t in tasks.items():
                self.assertEqual(t["status"]["phase"], "Succeeded", (n, t["status"]))
                out = self.g.cli("logs", job, "--replica", "%s-%d" % (
                    t["spec"]["replicaType"].lower(), t["spec"]["replicaIndex"]),
                    "-p", PROJECT).stdout
                got = dict(re.findall(r"^([A-Z_]+)=(.*)$", out, re.M))
                self.assertEqual(got, operator_env(job, tasks, t, agent.host), (n, out))

            def succeeded():
                st, obj = self.g.request("GET", self.PROJECT + "/jobs/" + job)
                self.assertEqual(st, 200, obj)
                return any(c["type"] == "Succeeded" and c["status"] == "True"
                           for c in obj.get("status", {}).get("conditions", []))
            wait_for("job %s Succeeded" % job, succeeded, timeout=20)


if __name__ == "__main__":
    main()
