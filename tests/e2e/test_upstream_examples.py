"""Every example manifest of the Kubeflow training operator v1.9.0, applied
unchanged to a real gantryd.

The files are read from ../shared/fixtures/kubeflow-training-operator-v1.9.0/
examples (relative to the project root), never copied. Each is applied with
`gantry apply -p kubeflow -f FILE`, as a user with a default project would
(documents without metadata.namespace go to the project), and must end as
EXPECTED says: accepted (every document created), or refused with a message
containing the reason named there. A file missing from EXPECTED, or one
EXPECTED names that is gone, fails the test, so the table stays the whole
truth about which upstream manifests gantry runs. The table of outcomes is
printed in the test output. Accepted jobs are deleted again (two examples
share the name xgboost-dist-iris-test-train).
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import API, SOURCE, GantrydTest, obj, seed_tenancy  # noqa: E402
from gantry_e2e import main  # noqa: E402

EXAMPLES = os.path.join(SOURCE, "..", "shared", "fixtures",
                        "kubeflow-training-operator-v1.9.0", "examples")
ACCEPTED = "accepted"
NO_ELASTIC = "spec.elasticPolicy: not supported by gantry"

# file (relative to EXAMPLES) -> ACCEPTED, or a substring of the refusal
EXPECTED = {
    "jax/cpu-demo/demo.yaml": ACCEPTED,
    "jax/jax-dist-spmd-mnist/jaxjob_dist_spmd_mnist_gloo.yaml": ACCEPTED,
    "mpi/tensorflow-mnist-elastic.yaml": ACCEPTED,
    "mpi/tensorflow-mnist.yaml": ACCEPTED,
    "paddlepaddle/simple-cpu.yaml": ACCEPTED,
    "paddlepaddle/simple-gpu.yaml": ACCEPTED,
    # torchrun's nprocPerNode other than auto: gantry starts one process per task
    "pytorch/cpu-demo/demo.yaml": 'spec.nprocPerNode: only "auto" is supported by gantry',
    "pytorch/deepspeed-demo/pytorch_deepspeed_demo.yaml": ACCEPTED,
    "pytorch/elastic/echo/echo.yaml": NO_ELASTIC,
    # etcd for the elastic examples: a Kubernetes Service and Pod
    "pytorch/elastic/etcd.yaml": 'kind: unknown kind "Service"',
    "pytorch/elastic/imagenet/imagenet.yaml": NO_ELASTIC,
    "pytorch/mnist/v1/pytorch_job_mnist_gloo.yaml": ACCEPTED,
    "pytorch/mnist/v1/pytorch_job_mnist_mpi.yaml": ACCEPTED,
    "pytorch/mnist/v1/pytorch_job_mnist_nccl.yaml": ACCEPTED,
    "pytorch/simple.yaml": ACCEPTED,
    "pytorch/smoke-dist/pytorch_job_sendrecv.yaml": ACCEPTED,
    "tensorflow/dist-mnist/tf_job_mnist.yaml": ACCEPTED,
    # a claim names a gantry Volume of the project, which these examples
    # create with a PersistentVolumeClaim, a kind gantry does not have
    "tensorflow/distribution_strategy/multi_worker_tfjob.yaml":
        'no Volume "strategy-volume" in project "kubeflow"',
    "tensorflow/distribution_strategy/pvc.yaml": 'kind: unknown kind "PersistentVolumeClaim"',
    "tensorflow/mnist_with_summaries/tf_job_mnist.yaml":
        'no Volume "tfevent-volume" in project "kubeflow"',
    "tensorflow/mnist_with_summaries/tfevent-volume/tfevent-pv.yaml":
        'kind: unknown kind "PersistentVolume"',
    "tensorflow/mnist_with_summaries/tfevent-volume/tfevent-pvc.yaml":
        'kind: unknown kind "PersistentVolumeClaim"',
    "tensorflow/simple.yaml": ACCEPTED,
    "xgboost/lightgbm-dist/xgboostjob_v1_lightgbm_dist_training.yaml": ACCEPTED,
    "xgboost/smoke-dist/xgboostjob_v1_rabit_test.yaml": ACCEPTED,
    # upstream's v1alpha1 example puts apiVersion/kind inside the pod template
    "xgboost/smoke-dist/xgboostjob_v1alpha1_rabit_test.yaml":
        "spec.xgbReplicaSpecs.Master.template.apiVersion: unknown field",
    "xgboost/xgboost-dist/xgboostjob_v1_iris_predict.yaml": ACCEPTED,
    "xgboost/xgboost-dist/xgboostjob_v1_iris_predict_local.yaml":
        'no Volume "xgboostlocal" in project "kubeflow"',
    "xgboost/xgboost-dist/xgboostjob_v1_iris_train.yaml": ACCEPTED,
    "xgboost/xgboost-dist/xgboostjob_v1_iris_train_local.yaml":
        'no Volume "xgboostlocal" in project "kubeflow"',
    "xgboost/xgboostjob.yaml": ACCEPTED,
}


def example_files():
    out = []
    for d, _, names in os.walk(EXAMPLES):
        out += [os.path.relpath(os.path.join(d, n), EXAMPLES) for n in names
                if n.endswith((".yaml", ".yml", ".json"))]
    return sorted(out)


class UpstreamExamplesTest(GantrydTest):
    def test_every_example_is_accepted_or_refused_for_its_reason(self):
        self.assertTrue(os.path.isdir(EXAMPLES), EXAMPLES)
        seed_tenancy(self.g)
        st, body = self.g.request("POST", API + "/projects", obj(
            "Project", "kubeflow", spec={"department": "dept-a"}))
        self.assertEqual(st, 201, body)
        files = example_files()
        self.assertEqual(sorted(EXPECTED), files, "EXPECTED must name every example file")
        rows, wrong = [], []
        for rel in files:
            path = os.path.join(EXAMPLES, rel)
            p = self.g.cli("apply", "-p", "kubeflow", "-f", path, check=False)
            said = (p.stdout + p.stderr).strip()
            if p.returncode == 0:
                got = ACCEPTED
                self.g.cli("delete", "-p", "kubeflow", "-f", path)
            else:
                # the first error, without the file's path the CLI names
                got = said.splitlines()[0].split(path)[-1].lstrip("): ")
            want = EXPECTED[rel]
            ok = got == ACCEPTED if want == ACCEPTED else (p.returncode != 0 and want in said)
            rows.append((rel, "accepted" if got == ACCEPTED else "refused: " + got,
                         "ok" if ok else "UNEXPECTED"))
            if not ok:
                wrong.append("%s: want %s, got (%d) %s" % (rel, want, p.returncode, said))
        width = max(len(r[0]) for r in rows)
        print("\nupstream examples (kubeflow training-operator v1.9.0):")
        for rel, outcome, verdict in rows:
            print("  %-*s  %-10s  %s" % (width, rel, verdict, outcome))
        n_ok = sum(1 for r in rows if r[1] == "accepted")
        print("upstream examples: %d of %d accepted, %d refused" % (
            n_ok, len(rows), len(rows) - n_ok), flush=True)
        self.assertEqual(wrong, [])


if __name__ == "__main__":
    main()
