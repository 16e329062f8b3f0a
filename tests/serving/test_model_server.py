#!/usr/bin/python3
"""gantry-model-server: request parsing (good and bad input) and the real
server over HTTP with a tiny scikit-learn model and a TorchScript net:
v2 metadata/readiness/infer, v1 predict, 400s naming the input, concurrent
requests, and the graceful drain on SIGTERM."""
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy

SOURCE = os.environ.get("GANTRY_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
BUILD = os.environ.get("GANTRY_BUILD_DIR") or os.path.join(SOURCE, "build")
SERVER = os.path.join(BUILD, "gantry-model-server")
sys.path.insert(0, os.path.join(SOURCE, "src", "serving"))
sys.path.insert(0, os.path.join(SOURCE, "tests", "e2e"))

import gantry_model_server as gms  # noqa: E402
from gantry_e2e import free_port  # noqa: E402


class FakeModel(gms.Model):
    platform = "test"

    def __init__(self):
        super().__init__("m", "1")
        self.n_features = 4


class Parsing(unittest.TestCase):
    def parse(self, body):
        return gms.parse_infer_request(body, FakeModel())

    def bad(self, body, *words):
        with self.assertRaises(gms.BadRequest) as cm:
            self.parse(body)
        for w in words:
            self.assertIn(w, str(cm.exception))
        return str(cm.exception)

    def test_flat_and_nested_row_major(self):
        t = {"name": "x", "shape": [2, 4], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6, 7, 8]}
        rid, [a] = self.parse({"id": "r1", "inputs": [t]})
        self.assertEqual(rid, "r1")
        self.assertEqual(a.dtype, numpy.float32)
        self.assertEqual(a.tolist(), [[1, 2, 3, 4], [5, 6, 7, 8]])
        t["data"] = [[1, 2, 3, 4], [5, 6, 7, 8]]
        _, [b] = self.parse({"inputs": [t]})
        self.assertEqual(b.tolist(), a.tolist())

    def test_integer_datatypes(self):
        _, [a] = self.parse({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "INT64",
                                         "data": [1, 2, 3, 4]}]})
        self.assertEqual(a.dtype, numpy.int64)
        self.bad({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "INT64",
                              "data": [1, 2, 3.5, 4]}]}, 'input "x"', "INT64", "3.5")
        self.bad({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "UINT8",
                              "data": [1, 2, 300, 4]}]}, 'input "x"', "out of range")
        self.bad({"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32",
                              "data": [1, True, 3, 4]}]}, 'input "x"', "FP32")

    def test_bad_inputs_name_the_input(self):
        self.bad({"inputs": [{"name": "pixels", "shape": [1, 3], "datatype": "FP32",
                              "data": [1, 2, 3]}]}, 'input "pixels"', "4 features")
        self.bad({"inputs": [{"name": "pixels", "shape": [2, 4], "datatype": "FP32",
                              "data": [1, 2, 3]}]}, 'input "pixels"', "holds 8 values", "has 3")
        self.bad({"inputs": [{"name": "pixels", "shape": [1, 4], "datatype": "FLOAT",
                              "data": [1, 2, 3, 4]}]}, 'input "pixels"', "datatype")
        self.bad({"inputs": [{"name": "pixels", "shape": [1, 4], "datatype": "BYTES",
                              "data": ["a", "b", "c", "d"]}]}, 'input "pixels"', "BYTES")
        self.bad({"inputs": [{"name": "pixels", "shape": [1, -4], "datatype": "FP32",
                              "data": [1, 2, 3, 4]}]}, 'input "pixels"', "shape")
        self.bad({"inputs": [{"name": "pixels", "shape": [4], "datatype": "FP32",
                              "data": [1, 2, 3, 4]}]}, 'input "pixels"', "2 dimensions")
        self.bad({"inputs": [{"name": "pixels", "shape": [1, 4], "datatype": "FP32"}]},
                 'input "pixels"', "data")
        self.bad({"inputs": [{"shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
                 "inputs[0].name")
        self.bad({"inputs": []}, "inputs")
        self.bad([], "JSON object")

    def test_v1_instances(self):
        a = gms.parse_v1_request({"instances": [[1, 2, 3, 4], [5, 6, 7, 8]]}, FakeModel())
        self.assertEqual(a.shape, (2, 4))
        with self.assertRaises(gms.BadRequest) as cm:
            gms.parse_v1_request({"instances": [[1, 2, 3, 4], [5, 6]]}, FakeModel())
        self.assertIn("instances[1]", str(cm.exception))
        with self.assertRaises(gms.BadRequest):
            gms.parse_v1_request({"inputs": []}, FakeModel())


def request(port, method, path, body=None, timeout=30):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    data = None if body is None else json.dumps(body).encode()
    c.request(method, path, body=data, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    raw = r.read()
    c.close()
    return r.status, json.loads(raw) if raw else None


class ServerProcess:
    def __init__(self, *args):
        self.port = free_port()
        self.proc = subprocess.Popen([SERVER, "--port", str(self.port), "--host", "127.0.0.1"] +
                                     list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if request(self.port, "GET", "/v2/health/ready")[0] == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise AssertionError("server exited: %s" % self.proc.stdout.read().decode())
            time.sleep(0.1)
        raise AssertionError("server not ready in %d s" % timeout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


class SklearnServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import joblib
        from sklearn.datasets import load_iris
        from sklearn.linear_model import LogisticRegression
        cls.tmp = tempfile.mkdtemp(prefix="gms-test-")
        x, y = load_iris(return_X_y=True)
        cls.x, cls.y = x, y
        est = LogisticRegression(max_iter=500).fit(x, y)
        cls.expected = est.predict(x[:5]).tolist()
        joblib.dump(est, os.path.join(cls.tmp, "model.joblib"))
        cls.srv = ServerProcess("--name", "iris", "--model-dir", cls.tmp, "--format", "sklearn")
        cls.srv.wait_ready()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def test_health_and_metadata(self):
        p = self.srv.port
        self.assertEqual(request(p, "GET", "/v2/health/live"), (200, {"live": True}))
        self.assertEqual(request(p, "GET", "/v2/models/iris/ready")[0], 200)
        code, md = request(p, "GET", "/v2/models/iris")
        self.assertEqual(code, 200)
        self.assertEqual(md["name"], "iris")
        self.assertEqual(md["platform"], "sklearn")
        self.assertEqual(md["inputs"][0]["shape"], [-1, 4])
        self.assertEqual(request(p, "GET", "/v2/models/other")[0], 404)

    def test_v2_infer(self):
        body = {"id": "q", "inputs": [{"name": "input-0", "shape": [5, 4], "datatype": "FP64",
                                       "data": self.x[:5].reshape(-1).tolist()}]}
        code, r = request(self.srv.port, "POST", "/v2/models/iris/infer", body)
        self.assertEqual(code, 200, r)
        self.assertEqual(r["model_name"], "iris")
        self.assertEqual(r["id"], "q")
        out = r["outputs"][0]
        self.assertEqual(out["shape"], [5])
        self.assertEqual(out["datatype"], "INT64")
        self.assertEqual(out["data"], self.expected)

    def test_v2_bad_input_is_400_naming_it(self):
        body = {"inputs": [{"name": "petals", "shape": [1, 3], "datatype": "FP32",
                            "data": [1, 2, 3]}]}
        code, r = request(self.srv.port, "POST", "/v2/models/iris/infer", body)
        self.assertEqual(code, 400)
        self.assertIn('input "petals"', r["error"])
        c = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=10)
        c.request("POST", "/v2/models/iris/infer", body=b"{not json")
        resp = c.getresponse()
        self.assertEqual(resp.status, 400)
        self.assertIn("not JSON", json.loads(resp.read())["error"])
        c.close()

    def test_v1_predict(self):
        code, r = request(self.srv.port, "POST", "/v1/models/iris:predict",
                          {"instances": self.x[:5].tolist()})
        self.assertEqual(code, 200, r)
        self.assertEqual(r, {"predictions": self.expected})

    def test_concurrent_keepalive_clients(self):
        errors = []
        body = json.dumps({"instances": self.x[:2].tolist()}).encode()

        def client():
            c = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=30)
            for _ in range(50):
                c.request("POST", "/v1/models/iris:predict", body=body)
                r = c.getresponse()
                got = json.loads(r.read())
                if r.status != 200 or got["predictions"] != self.expected[:2]:
                    errors.append((r.status, got))
            c.close()

        ts = [threading.Thread(target=client) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])


class TorchScriptServer(unittest.TestCase):
    def test_infer_and_drain(self):
        import torch
        tmp = tempfile.mkdtemp(prefix="gms-test-")
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        torch.jit.save(torch.jit.script(net), os.path.join(tmp, "model.pt"))
        x = [[0.1, 0.2, 0.3], [1.0, -1.0, 0.5]]
        with torch.no_grad():
            want = net(torch.tensor(x)).numpy()
        srv = ServerProcess("--name", "tiny", "--model-dir", os.path.join(tmp, "model.pt"),
                            "--format", "pytorch", "--model-version", "3")
        try:
            srv.wait_ready()
            code, md = request(srv.port, "GET", "/v2/models/tiny/versions/3")
            self.assertEqual((code, md["versions"], md["inputs"][0]["shape"]), (200, ["3"], [-1, 3]))
            body = {"inputs": [{"name": "input-0", "shape": [2, 3], "datatype": "FP32",
                                "data": [v for r in x for v in r]}]}
            code, r = request(srv.port, "POST", "/v2/models/tiny/infer", body)
            self.assertEqual(code, 200, r)
            out = r["outputs"][0]
            self.assertEqual((out["shape"], out["datatype"]), ([2, 2], "FP32"))
            numpy.testing.assert_allclose(out["data"], want.reshape(-1), rtol=1e-5)
            self.assertEqual(request(srv.port, "POST", "/v2/models/tiny/versions/2/infer",
                                     body)[0], 404)
            # A keep-alive connection left idle and requests in flight when
            # SIGTERM comes: every request started gets its full answer.
            idle = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
            idle.request("GET", "/v2/health/live")
            idle.getresponse().read()
            results = []

            def client():
                try:
                    results.append(request(srv.port, "POST", "/v2/models/tiny/infer", body)[0])
                except OSError as e:
                    results.append(repr(e))

            ts = [threading.Thread(target=client) for _ in range(20)]
            for t in ts:
                t.start()
            time.sleep(0.05)
            srv.proc.send_signal(signal.SIGTERM)
            for t in ts:
                t.join()
            self.assertEqual(srv.proc.wait(timeout=20), 0)
            # Requests sent before the signal all succeeded; ones that came
            # after found the port closed (refused), never a broken answer.
            self.assertTrue(all(r == 200 or "ConnectionRefused" in str(r) for r in results),
                            results)
            self.assertIn(200, results)
            idle.close()
        finally:
            srv.stop()


if __name__ == "__main__":
    unittest.main()
