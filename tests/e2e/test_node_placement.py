"""nodeSelector on node labels, node taints and tolerations, on two real
gantlets with fake GPUs (n1: 2xA100-80GB, n2: 2xH100-80GB).

- Each agent labels its node as NVIDIA's GPU feature discovery does
  (nvidia.com/gpu.present, .count, .product, .memory in MiB); an admin's
  `gantry label node` label survives the agent's restart, and changing a
  value needs --overwrite.
- A job selecting nvidia.com/gpu.product=H100-80GB runs on n2; one selecting
  the admin's label runs on n1; one no node matches is Inadmissible with
  reason NoNodeMatches and a message naming its selector (REASON column
  too), and starts once a node gets the label.
- `gantry taint node n1 dedicated=infer:NoSchedule` keeps off a task
  without a toleration (Inadmissible, naming the taint); one with an Equal
  toleration runs there; `gantry taint node n1 dedicated-` removes it.
- A NoExecute taint evicts the running tasks that do not tolerate it
  (reason Evicted, with an Event saying which taint; job requeued), keeps one that tolerates it for ever, and
  evicts one with tolerationSeconds 2 after about 2 s.
- A Kubeflow PyTorchJob's pod nodeSelector and tolerations carry over.
"""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import AgentTest, obj, wait_for  # noqa: E402
from gantry_e2e import main  # noqa: E402


class NodePlacementTest(AgentTest):
    def setUp(self):
        super().setUp()
        self.n1 = self.gantlet(name="n1", fake_gpus="2xA100-80GB")
        self.n2 = self.gantlet(name="n2", fake_gpus="2xH100-80GB")

    def job(self, name, selector=None, tolerations=None, command=("sleep", "60")):
        """A one-task job of no GPU (the nodes have 2 each; placement is by label)."""
        tmpl = {"command": list(command),
                "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}
        if selector:
            tmpl["nodeSelector"] = selector
        if tolerations:
            tmpl["tolerations"] = tolerations
        st, body = self.g.request("POST", self.PROJECT + "/jobs", obj(
            "Job", name, "proj-a", spec={"replicaSpecs": {"Worker": {
                "replicas": 1, "restartPolicy": "Never", "template": tmpl}}}), token="alice")
        self.assertEqual(st, 201, body)
        return name + "-worker-0"

    def node_of(self, task):
        return wait_for("task %s bound" % task,
                        lambda: ((self.task(task) or {}).get("spec") or {}).get("nodeName"),
                        timeout=20)

    def condition(self, name, ctype):
        st, body = self.g.request("GET", self.PROJECT + "/jobs/" + name)
        for c in (body.get("status") or {}).get("conditions", []):
            if c["type"] == ctype:
                return c
        return {}

    def inadmissible(self, name):
        wait_for("job %s Inadmissible" % name,
                 lambda: self.condition(name, "Inadmissible").get("status") == "True", timeout=15)
        return self.condition(name, "Inadmissible")

    def labels(self, node):
        st, body = self.g.request("GET", "/apis/gantry.dev/v1/nodes/" + node)
        return body["metadata"].get("labels") or {}

    def test_gfd_labels_and_admin_labels(self):
        self.assertEqual({k: v for k, v in self.labels("n1").items()
                          if k.startswith("nvidia.com/gpu.")},
                         {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "2",
                          "nvidia.com/gpu.product": "A100-80GB",
                          "nvidia.com/gpu.memory": "81920"})
        out = self.g.cli("label", "node", "n1", "team=vision").stdout
        self.assertIn("node/n1 labeled", out)
        p = self.g.cli("label", "node", "n1", "team=nlp", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--overwrite", p.stderr)
        p = self.g.cli("label", "node", "n1", "owner=alice", token="alice", check=False)
        self.assertNotEqual(p.returncode, 0)  # admins only
        # the agent restarts: its node exists, the GFD labels are merged, the admin's kept
        self.n1.kill()
        self.n1.start()
        self.g.cli("label", "node", "n1", "nvidia.com/gpu.count=9", "--overwrite")
        self.n1.kill()
        self.n1.start()
        wait_for("GFD count restored",
                 lambda: self.labels("n1").get("nvidia.com/gpu.count") == "2", timeout=15)
        self.assertEqual(self.labels("n1").get("team"), "vision")
        self.assertIn("team=vision", self.g.cli("get", "nodes", "--show-labels").stdout)
        self.g.cli("label", "node", "n1", "team-")
        self.assertNotIn("team", self.labels("n1"))

    def test_node_selector(self):
        t = self.job("h100", {"nvidia.com/gpu.product": "H100-80GB"})
        self.assertEqual(self.node_of(t), "n2")
        self.g.cli("label", "node", "n1", "team=vision")
        t = self.job("vision", {"team": "vision"})
        self.assertEqual(self.node_of(t), "n1")
        t = self.job("nowhere", {"team": "speech", "nvidia.com/gpu.present": "true"})
        c = self.inadmissible("nowhere")
        self.assertEqual(c.get("reason"), "NoNodeMatches", c)
        self.assertIn("nodeSelector team=speech nvidia.com/gpu.present=true", c["message"])
        self.assertIn("n1: no label team=speech", c["message"])
        out = self.g.cli("get", "jobs", "-p", "proj-a").stdout
        self.assertRegex(out, r"nowhere\s+.*NoNodeMatches|nowhere\s+.*Inadmissible")
        self.assertEqual(((self.task(t) or {}).get("spec") or {}).get("nodeName"), None)
        self.g.cli("label", "node", "n2", "team=speech")
        self.assertEqual(self.node_of(t), "n2")

    def test_taints_and_tolerations(self):
        self.g.cli("label", "node", "n1", "team=vision")
        out = self.g.cli("taint", "node", "n1", "dedicated=infer:NoSchedule").stdout
        self.assertIn("node/n1 tainted", out)
        p = self.g.cli("taint", "node", "n1", "dedicated=infer:Sometimes", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("effect must be NoSchedule, PreferNoSchedule or NoExecute", p.stderr)
        self.job("plain", {"team": "vision"})
        c = self.inadmissible("plain")
        self.assertIn("taint dedicated=infer:NoSchedule not tolerated", c["message"])
        t = self.job("tolerant", {"team": "vision"}, [
            {"key": "dedicated", "operator": "Equal", "value": "infer", "effect": "NoSchedule"}])
        self.assertEqual(self.node_of(t), "n1")
        t = self.job("wrong-value", {"team": "vision"}, [
            {"key": "dedicated", "value": "train", "effect": "NoSchedule"}])
        self.inadmissible("wrong-value")
        self.g.cli("taint", "node", "n1", "dedicated-")
        self.assertEqual(self.node_of("plain-worker-0"), "n1")
        self.assertEqual(self.node_of(t), "n1")

    def test_no_execute_evicts_who_does_not_tolerate(self):
        self.g.cli("cordon", "n1")
        plain = self.job("plain")
        forever = self.job("forever", tolerations=[{"operator": "Exists", "effect": "NoExecute"}])
        brief = self.job("brief", tolerations=[
            {"key": "maint", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 2}])
        for t in (plain, forever, brief):
            self.wait_phase(t, "Running")
        t0 = time.time()
        self.g.cli("taint", "node", "n2", "maint=yes:NoExecute")
        st = self.wait_phase(plain, ("Failed", "Succeeded"), timeout=20)["status"]
        self.assertEqual(st.get("reason"), "Evicted", st)
        self.assertIn("node n2 has the taint maint=yes:NoExecute, which the task does not tolerate",
                      self.g.cli("describe", "job", "plain", "-p", "proj-a").stdout)
        st = self.wait_phase(brief, ("Failed", "Succeeded"), timeout=20)["status"]
        self.assertEqual(st.get("reason"), "Evicted", st)
        self.assertGreaterEqual(time.time() - t0, 1.5)
        self.assertEqual(self.phase(forever), "Running")
        # evicted jobs go back to the queue; with the taint their tasks wait
        self.g.cli("taint", "node", "n2", "maint:NoExecute-")
        self.g.cli("uncordon", "n1")
        wait_for("plain requeued and running", lambda: self.phase(plain) == "Running", timeout=30)

    def test_kubeflow_pod_selector_and_tolerations(self):
        self.g.cli("taint", "node", "n2", "gpu=h100:NoSchedule")
        manifest = """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: kf, namespace: proj-a}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          nodeSelector: {nvidia.com/gpu.product: H100-80GB}
          tolerations: [{key: gpu, operator: Equal, value: h100, effect: NoSchedule}]
          containers:
            - name: pytorch
              command: [sleep, "30"]
              resources: {limits: {nvidia.com/gpu: 1, cpu: 100m, memory: 64Mi}}
"""
        self.g.cli("apply", "-f", "-", token="alice", input=manifest)
        self.assertEqual(self.node_of("kf-master-0"), "n2")


if __name__ == "__main__":
    main()
