"""The model registry and gantry-model-server on a real gantryd and gantlet.

The digits example trains briefly in a Job writing to a hostPath volume
beneath the storage root; `gantry model register --from-job` copies its
model.pt into the content-addressed model store (--model-store beneath the
storage root), where it is read-only with its digest in the ModelVersion's
status. A plain Job then runs gantry-model-server on that version, which
answers /v2/health/ready and classifies held-out test images through
/v2/models/digits/infer. An sklearn model (a directory artifact) serves
through KServe's v1 and v2 protocols. Versions are numbered 1, 2, ... (also
under concurrent registrations), identical content is stored once, one
version per model is Production, the storage quota refuses naming itself
with nothing left in the store, and viewers read but do not register.
"""
import concurrent.futures
import hashlib
import http.client
import json
import os
import shutil
import stat
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import API, BUILD, GANTLET, SOURCE, AgentTest, obj, wait_for  # noqa: E402
from gantry_e2e import main  # noqa: E402

EXAMPLE = os.path.join(SOURCE, "examples", "pytorch-digits")
SERVER = os.path.join(BUILD, "gantry-model-server")
PY = "/usr/bin/python3"

SKLEARN_TRAIN = """
import os, joblib
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
x, y = load_iris(return_X_y=True)
os.makedirs("/out/iris", exist_ok=True)
joblib.dump(LogisticRegression(max_iter=500).fit(x, y), "/out/iris/model.joblib")
"""


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def post(port, path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = json.loads(r.read())
    c.close()
    return r.status, data


def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


@unittest.skipUnless(os.access(GANTLET, os.X_OK) and os.access(SERVER, os.X_OK),
                     "needs gantlet and gantry-model-server in the build directory")
class Models(AgentTest):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gantry-models-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        os.chmod(self.tmp, 0o711)
        self.root = os.path.join(self.tmp, "storage")
        self.code = os.path.join(self.root, "code")
        self.out = os.path.join(self.root, "out")
        self.store = os.path.join(self.root, "models")
        shutil.copytree(EXAMPLE, self.code)
        os.makedirs(self.out)
        os.chmod(self.root, 0o755)
        os.chmod(self.out, 0o777)  # tasks run as alice
        self.gantryd_args = AgentTest.gantryd_args + (
            "--storage-root", self.root, "--model-store", self.store)
        super().setUp()
        self.set_storage_quota("1Gi")
        st, body = self.g.request("POST", API + "/projects/proj-a/models", obj(
            "Model", "digits", "proj-a", spec={"framework": "pytorch",
                                               "description": "8x8 digits"}), token="alice")
        self.assertEqual(st, 201, body)
        # carol may only read proj-a
        st, p = self.g.request("GET", API + "/projects/proj-a")
        p.pop("status", None)
        p["spec"]["members"].append({"user": "carol", "role": "viewer"})
        self.assertEqual(self.g.request("PUT", API + "/projects/proj-a", p)[0], 200)
        self.agent = self.gantlet(extra_args=["--storage-root", self.root], fake_gpus="1xA100-80GB")

    def set_storage_quota(self, q):
        st, dept = self.g.request("GET", API + "/departments/dept-a")
        dept.pop("status", None)
        dept["spec"]["quota"]["storage"] = q
        self.assertEqual(self.g.request("PUT", API + "/departments/dept-a", dept)[0], 200)

    def run_job(self, name, command, volumes=(), ports=None, wait=True, outputs=None):
        mounts = [{"name": "code", "mountPath": "/code", "readOnly": True},
                  {"name": "out", "mountPath": "/out"}]
        vols = [{"name": "code", "hostPath": self.code}, {"name": "out", "hostPath": self.out}]
        for vname, host in volumes:
            mounts.append({"name": vname, "mountPath": host, "readOnly": True})
            vols.append({"name": vname, "hostPath": host})
        tmpl = {"command": command, "workingDir": "/code", "volumeMounts": mounts,
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}
        if ports:
            tmpl["ports"] = ports
        spec = {"replicaSpecs": {"Master": {"replicas": 1, "template": tmpl}}, "volumes": vols}
        if outputs:
            spec["outputs"] = outputs
        st, body = self.g.request("POST", self.PROJECT + "/jobs",
                                  obj("Job", name, "proj-a", spec=spec), token="alice")
        self.assertEqual(st, 201, body)
        task = name + "-master-0"
        if wait:
            t = self.wait_phase(task, ("Succeeded", "Failed"), timeout=120)
            self.assertEqual(t["status"]["phase"], "Succeeded",
                             self.g.cli("logs", name, "-p", "proj-a", check=False).stdout)
            wait_for("job %s Succeeded" % name, lambda: self.job_succeeded(name), timeout=20)
        return task

    def job_succeeded(self, name):
        job = self.g.request("GET", self.PROJECT + "/jobs/" + name)[1]
        return any(c["type"] == "Succeeded" and c["status"] == "True"
                   for c in (job.get("status") or {}).get("conditions", []))

    def version(self, name):
        st, mv = self.g.request("GET", self.PROJECT + "/modelversions/" + name)
        self.assertEqual(st, 200, mv)
        return mv

    def serve(self, job, model, mv, fmt):
        """Run gantry-model-server on version mv in a Job; its port once ready."""
        blob = os.path.dirname(mv["status"]["path"])
        task = self.run_job(job, [SERVER, "--name", model, "--model-dir", mv["status"]["path"],
                                  "--format", fmt, "--model-version", str(mv["status"]["version"])],
                            volumes=[("model", blob)], ports=[{"name": "http",
                                                               "containerPort": 8080}], wait=False)
        self.wait_phase(task, "Running", timeout=60)
        port = self.task(task)["spec"]["ports"][0]["port"]

        def ready():
            try:
                return get(port, "/v2/health/ready") == 200
            except OSError:
                return False
        wait_for("model server ready", ready, timeout=60)
        return port

    def test_digits_trained_registered_served(self):
        self.run_job("train", [PY, "/code/train.py", "--epochs", "20", "--output-dir", "/out"])
        r = self.g.cli("model", "register", "digits", "--from-job", "train", "--path",
                       "/out/model.pt", "--metric", "accuracy=0.95", "-p", "proj-a",
                       token="alice")
        digest = "sha256:" + sha256_of(os.path.join(self.out, "model.pt"))
        self.assertEqual(r.stdout, "modelversion.gantry.dev/digits-v1 registered (version 1, "
                         "%s)\n" % digest)
        mv = self.version("digits-v1")
        st = mv["status"]
        self.assertEqual((st["phase"], st["version"], st["digest"]), ("Ready", 1, digest))
        self.assertEqual((st["sourceJob"], st["sourceTask"]), ("train", "train-master-0"))
        self.assertEqual(mv["spec"]["format"], "pytorch")  # the Model's framework
        self.assertEqual(mv["spec"]["metrics"], {"accuracy": 0.95})
        self.assertEqual(st["path"], os.path.join(self.store, "sha256", digest[7:], "model.pt"))
        self.assertEqual(stat.S_IMODE(os.stat(st["path"]).st_mode), 0o444)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(st["path"])).st_mode), 0o555)
        self.assertEqual(os.listdir(os.path.join(self.store, "tmp")), [])

        # the model server, as a plain Job, on held-out test images
        port = self.serve("serve-digits", "digits", mv, "pytorch")
        sys.path.insert(0, EXAMPLE)
        import torch
        from digits import load_split
        _, _, x_test, y_test = load_split()
        x, y = x_test, y_test  # all 450 held-out images
        local = torch.jit.load(st["path"])(x).argmax(dim=1).tolist()
        code, r = post(port, "/v2/models/digits/infer", {"inputs": [{
            "name": "input-0", "shape": list(x.shape), "datatype": "FP32",
            "data": x.reshape(-1).tolist()}]})
        self.assertEqual(code, 200, r)
        out = r["outputs"][0]
        self.assertEqual((out["shape"], out["datatype"]), ([len(y), 10], "FP32"))
        pred = torch.tensor(out["data"]).reshape(len(y), 10).argmax(dim=1)
        self.assertEqual(pred.tolist(), local)
        self.assertGreaterEqual((pred == y).float().mean().item(), 0.9)
        code, r = post(port, "/v2/models/digits/infer", {"inputs": [{
            "name": "pixels", "shape": [1, 63], "datatype": "FP32", "data": [0.0] * 63}]})
        self.assertEqual(code, 400)
        self.assertIn('input "pixels"', r["error"])
        self.assertEqual(sha256_of(st["path"]), digest[7:])  # unchanged by serving
        self.g.request("DELETE", self.PROJECT + "/jobs/serve-digits", token="alice")

        # the same artifact again: version 2, stored once, quota counted once
        r = self.g.cli("model", "register", "digits", "--from-job", "train", "--path",
                       "/out/model.pt", "-p", "proj-a", token="alice")
        self.assertIn("digits-v2 registered (version 2, %s)" % digest, r.stdout)
        self.assertEqual(self.version("digits-v2")["status"]["digest"], digest)
        self.assertEqual(os.listdir(os.path.join(self.store, "sha256")), [digest[7:]])

        # one Production version per model
        self.g.cli("model", "stage", "digits", "1", "Production", "-p", "proj-a", token="alice")
        self.g.cli("model", "stage", "digits", "2", "Production", "-p", "proj-a", token="alice")
        wait_for("v1 archived",
                 lambda: self.version("digits-v1")["spec"]["stage"] == "Archived", timeout=10)
        self.assertEqual(self.version("digits-v2")["spec"]["stage"], "Production")
        rows = self.g.cli("get", "modelversions", "-p", "proj-a").stdout.splitlines()
        self.assertEqual(rows[0].split()[:6],
                         ["NAME", "MODEL", "VERSION", "STAGE", "PHASE", "METRICS"])
        self.assertEqual(rows[1].split()[:6],
                         ["digits-v1", "digits", "1", "Archived", "Ready", "accuracy=0.95"])
        self.assertEqual(rows[2].split()[:5], ["digits-v2", "digits", "2", "Production", "Ready"])
        rows = self.g.cli("get", "mv", "-l", "gantry.dev/model=digits", "-p", "proj-a").stdout
        self.assertEqual(len(rows.splitlines()), 3, rows)

        # a version never changes: its source cannot be replaced
        mv = self.version("digits-v1")
        mv["spec"]["source"]["path"] = "/out/other.pt"
        st, body = self.g.request("PUT", self.PROJECT + "/modelversions/digits-v1", mv,
                                  token="alice")
        self.assertEqual(st, 422, body)
        self.assertIn("spec.source: cannot change", body["message"])

    def test_sklearn_directory_v1_and_v2(self):
        self.run_job("iris", [PY, "-c", SKLEARN_TRAIN])
        r = self.g.cli("model", "register", "iris", "--from-job", "iris", "--path", "/out/iris",
                       "--format", "sklearn", "-p", "proj-a", token="alice")
        self.assertIn("modelversion.gantry.dev/iris-v1 registered (version 1, sha256:", r.stdout)
        self.assertEqual(self.g.cli("get", "models", "-p", "proj-a").stdout.split()[4:7],
                         ["digits", "pytorch", "8x8"])
        mv = self.version("iris-v1")
        self.assertTrue(mv["status"]["path"].endswith("/iris"), mv["status"])
        self.assertTrue(os.path.isdir(mv["status"]["path"]))
        port = self.serve("serve-iris", "iris", mv, "sklearn")
        rows = [[5.1, 3.5, 1.4, 0.2], [6.7, 3.0, 5.2, 2.3]]
        code, r = post(port, "/v1/models/iris:predict", {"instances": rows})
        self.assertEqual((code, r), (200, {"predictions": [0, 2]}))
        code, r = post(port, "/v2/models/iris/infer", {"inputs": [{
            "name": "input-0", "shape": [2, 4], "datatype": "FP64",
            "data": [v for row in rows for v in row]}]})
        self.assertEqual(code, 200, r)
        self.assertEqual(r["outputs"][0]["data"], [0, 2])
        self.assertEqual(r["model_version"], "1")

    def test_job_outputs_register_the_model(self):
        outputs = {"model": {"name": "digits", "path": "/out/model.pt",
                             "metricsFile": "/out/metrics.json"}}
        self.run_job("auto", [PY, "/code/train.py", "--epochs", "3", "--output-dir", "/out"],
                     outputs=outputs)
        wait_for("digits-v1 registered by the job",
                 lambda: self.g.request("GET", self.PROJECT + "/modelversions/digits-v1")[0] == 200,
                 timeout=20)
        mv = self.version("digits-v1")
        with open(os.path.join(self.out, "metrics.json")) as f:
            written = json.load(f)
        self.assertEqual(mv["spec"]["metrics"]["test_accuracy"], written["test_accuracy"])
        self.assertEqual(mv["status"]["digest"],
                         "sha256:" + sha256_of(os.path.join(self.out, "model.pt")))
        self.assertEqual((mv["status"]["sourceJob"], mv["status"]["sourceTask"]),
                         ("auto", "auto-master-0"))
        self.assertEqual(mv["metadata"]["creator"]["user"], "alice")
        ev = self.g.cli("describe", "job", "auto", "-p", "proj-a").stdout
        self.assertIn("ModelRegistered", ev)
        # a Model the project lacks is refused at submission, naming the field
        st, body = self.g.request("POST", self.PROJECT + "/jobs", obj(
            "Job", "nomodel", "proj-a", spec={
                "replicaSpecs": {"Worker": {"replicas": 1, "template": {"command": ["/bin/true"]}}},
                "outputs": {"model": {"name": "nosuch", "path": "/out/m.pt"}}}), token="alice")
        self.assertEqual(st, 422, body)
        self.assertIn("spec.outputs.model.name", body["message"])

    def test_numbers_quota_and_access(self):
        art = os.path.join(self.out, "a.pt")
        with open(art, "wb") as f:
            f.write(os.urandom(4096))

        def register(i):
            return self.g.request("POST", self.PROJECT + "/modelversions", obj(
                "ModelVersion", "x", "proj-a",
                spec={"model": "digits", "source": {"hostPath": art}}), token="alice")
        with concurrent.futures.ThreadPoolExecutor(4) as ex:
            got = list(ex.map(register, range(4)))
        self.assertEqual([st for st, _ in got], [201] * 4, got)
        self.assertEqual(sorted(b["status"]["version"] for _, b in got), [1, 2, 3, 4])
        self.assertEqual(sorted(b["metadata"]["name"] for _, b in got),
                         ["digits-v%d" % i for i in (1, 2, 3, 4)])

        # viewers read, never register
        self.assertEqual(self.g.request("GET", self.PROJECT + "/modelversions",
                                        token="carol")[0], 200)
        p = self.g.cli("model", "register", "digits", "--file", art, "-p", "proj-a",
                       token="carol", check=False)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertEqual(register(0)[0], 201)  # alice still may
        st, body = self.g.request("POST", self.PROJECT + "/modelversions", obj(
            "ModelVersion", "x", "proj-a", spec={"model": "digits", "source": {"hostPath": art}}),
            token="carol")
        self.assertEqual(st, 403, body)

        # the storage quota: 4 KiB are held once; a new 8 KiB artifact is over 10Ki
        self.set_storage_quota("10Ki")
        big = os.path.join(self.out, "big.pt")
        with open(big, "wb") as f:
            f.write(os.urandom(8192))
        before = sorted(os.listdir(os.path.join(self.store, "sha256")))
        st, body = self.g.request("POST", self.PROJECT + "/modelversions", obj(
            "ModelVersion", "x", "proj-a", spec={"model": "digits", "source": {"hostPath": big}}),
            token="alice")
        self.assertEqual(st, 403, body)
        self.assertIn('exceeds the storage quota of department "dept-a"', body["message"])
        self.assertEqual(sorted(os.listdir(os.path.join(self.store, "sha256"))), before)
        self.assertEqual(os.listdir(os.path.join(self.store, "tmp")), [])
        self.assertEqual(register(0)[0], 201)  # the same content again adds nothing

        # gantryd reads a source with the registering user's permissions
        secret = os.path.join(self.out, "secret.pt")
        with open(secret, "wb") as f:
            f.write(b"root's only")
        os.chmod(secret, 0o600)
        st, body = self.g.request("POST", self.PROJECT + "/modelversions", obj(
            "ModelVersion", "x", "proj-a", spec={"model": "digits",
                                                 "source": {"hostPath": secret}}), token="alice")
        self.assertEqual(st, 403, body)
        self.assertIn("uid 1001 may not read it", body["message"])
        link = os.path.join(self.out, "link.pt")
        os.symlink(art, link)
        st, body = self.g.request("POST", self.PROJECT + "/modelversions", obj(
            "ModelVersion", "x", "proj-a", spec={"model": "digits", "source": {"hostPath": link}}),
            token="alice")
        self.assertEqual(st, 422, body)
        self.assertIn("a symlink (refused)", body["message"])
        self.assertEqual(os.listdir(os.path.join(self.store, "tmp")), [])

        # a Model with versions stays; a deleted version's blob goes with its last user
        st, body = self.g.request("DELETE", self.PROJECT + "/models/digits", token="alice")
        self.assertEqual(st, 409, body)
        self.assertIn("has versions digits-v", body["message"])

        # bad input names the field
        st, body = self.g.request("POST", self.PROJECT + "/modelversions", obj(
            "ModelVersion", "x", "proj-a", spec={"model": "nosuch", "source": {"hostPath": art}}),
            token="alice")
        self.assertEqual(st, 422, body)
        self.assertIn("spec.model", body["message"])
        st, body = self.g.request("POST", self.PROJECT + "/modelversions", obj(
            "ModelVersion", "x", "proj-a", spec={"model": "digits", "source": {"job": "nosuch",
                                                                               "path": "m.pt"}}),
            token="alice")
        self.assertEqual(st, 422, body)
        self.assertIn("spec.source.job", body["message"])

        # deleting every version that uses a blob removes it; then the Model may go
        names = [v["metadata"]["name"] for v in
                 self.g.request("GET", self.PROJECT + "/modelversions")[1]["items"]]
        for n in names:
            st, body = self.g.request("DELETE", self.PROJECT + "/modelversions/" + n,
                                      token="alice")
            self.assertEqual(st, 200, body)
        wait_for("blobs removed",
                 lambda: os.listdir(os.path.join(self.store, "sha256")) == [], timeout=10)
        self.assertEqual(self.g.request("DELETE", self.PROJECT + "/models/digits",
                                        token="alice")[0], 200)


if __name__ == "__main__":
    main()
