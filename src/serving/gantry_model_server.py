#!/usr/bin/python3
"""gantry-model-server: serves one scikit-learn or TorchScript model over REST.

It speaks the KServe v2 Open Inference Protocol (REST: health, server and
model metadata, model readiness, infer) and KServe's v1 `:predict`, as
docs/api.md "The model server" describes. The model is loaded once, on a
background thread after the socket listens (so /v2/health/live answers at
once and /v2/health/ready turns 200 when the model is in memory), and shared
by the request threads; no request reloads it. SIGTERM (and SIGINT) stop
accepting connections, let the requests in flight finish, close idle
keep-alive connections and exit 0 (graceful drain).

Runs with Debian's /usr/bin/python3 (python3-sklearn, python3-torch); torch
and joblib are imported only for the format that needs them.
"""
import argparse
import json
import math
import os
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy

SERVER_NAME = "gantry-model-server"
SERVER_VERSION = "0.1.0"
MAX_BODY_BYTES = 64 << 20  # a request body past this answers 413

# The Open Inference Protocol's tensor datatypes (KServe v2, "Tensor Data
# Types") and their numpy types; BYTES has no numeric form and is refused.
DATATYPES = {
    "BOOL": numpy.bool_,
    "UINT8": numpy.uint8, "UINT16": numpy.uint16, "UINT32": numpy.uint32,
    "UINT64": numpy.uint64,
    "INT8": numpy.int8, "INT16": numpy.int16, "INT32": numpy.int32, "INT64": numpy.int64,
    "FP16": numpy.float16, "FP32": numpy.float32, "FP64": numpy.float64,
}


class BadRequest(Exception):
    """A request the protocol refuses: answered 400 {"error": message}."""


class NotFound(Exception):
    """A path or model this server does not have: answered 404."""


class Unavailable(Exception):
    """The model is not loaded (yet, or it failed): answered 503."""


def datatype_of(dtype):
    """The protocol's datatype name of a numpy dtype (FP32 for float32, ...)."""
    for name, t in DATATYPES.items():
        if numpy.dtype(t) == dtype:
            return name
    if dtype.kind == "f":
        return "FP64"
    if dtype.kind in "iu":
        return "INT64"
    raise ValueError("no protocol datatype for %s" % dtype)


def flatten(data):
    """Row-major flattening of nested lists (the protocol allows either form)."""
    out = []
    stack = [iter(data)]
    while stack:
        for v in stack[-1]:
            if isinstance(v, list):
                stack.append(iter(v))
                break
            out.append(v)
        else:
            stack.pop()
    return out


def check_values(values, datatype, where):
    """Each value fits the datatype: booleans for BOOL, integers in range for
    (U)INT*, finite-or-not numbers for FP*; bool is not a number here."""
    if datatype == "BOOL":
        bad = next((v for v in values if not isinstance(v, bool)), None)
        if bad is not None:
            raise BadRequest("%s: datatype BOOL but data holds %s" % (where, json.dumps(bad)))
        return
    if datatype.startswith(("INT", "UINT")):
        info = numpy.iinfo(DATATYPES[datatype])
        for v in values:
            if isinstance(v, bool) or not isinstance(v, int):
                raise BadRequest("%s: datatype %s but data holds %s" %
                                 (where, datatype, json.dumps(v)))
            if v < info.min or v > info.max:
                raise BadRequest("%s: %d is out of range for %s" % (where, v, datatype))
        return
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise BadRequest("%s: datatype %s but data holds %s" %
                             (where, datatype, json.dumps(v)))


def parse_tensor(t, i):
    """One request input {name, shape, datatype, data} as a numpy array of
    that shape and datatype. Raises BadRequest naming the input."""
    if not isinstance(t, dict):
        raise BadRequest("inputs[%d]: not an object" % i)
    name = t.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequest("inputs[%d].name: required, a string" % i)
    where = 'input "%s"' % name
    shape = t.get("shape")
    if (not isinstance(shape, list) or
            not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)):
        raise BadRequest("%s: shape must be a list of non-negative integers" % where)
    datatype = t.get("datatype")
    if datatype not in DATATYPES:
        raise BadRequest("%s: datatype %s is not one of %s" %
                         (where, json.dumps(datatype), ", ".join(DATATYPES)))
    data = t.get("data")
    if not isinstance(data, list):
        raise BadRequest("%s: data is required, a list" % where)
    values = flatten(data)
    check_values(values, datatype, where)
    n = math.prod(shape)
    if len(values) != n:
        raise BadRequest("%s: shape %s holds %d values but data has %d" %
                         (where, json.dumps(shape), n, len(values)))
    return name, numpy.array(values, dtype=DATATYPES[datatype]).reshape(shape)


def parse_infer_request(body, model):
    """The inputs of a v2 infer request, checked against the model's inputs:
    (request id or None, [numpy array, ...]). Raises BadRequest."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    inputs = body.get("inputs")
    if not isinstance(inputs, list) or not inputs:
        raise BadRequest("inputs: required, a non-empty list")
    rid = body.get("id")
    if rid is not None and not isinstance(rid, str):
        raise BadRequest("id: must be a string")
    if len(inputs) != len(model.inputs):
        raise BadRequest("inputs: the model takes %d input(s), the request has %d" %
                         (len(model.inputs), len(inputs)))
    arrays = []
    for i, t in enumerate(inputs):
        name, a = parse_tensor(t, i)
        model.check_input(name, a)
        arrays.append(a)
    return rid, arrays


def parse_v1_request(body, model):
    """The instances of a KServe v1 predict request as one array (a row each)."""
    if not isinstance(body, dict) or not isinstance(body.get("instances"), list):
        raise BadRequest("instances: required, a list")
    inst = body["instances"]
    if not inst:
        raise BadRequest("instances: must not be empty")
    rows = [flatten(r) if isinstance(r, list) else [r] for r in inst]
    for i, r in enumerate(rows):
        if len(r) != len(rows[0]):
            raise BadRequest("instances[%d]: %d values, instances[0] has %d" %
                             (i, len(r), len(rows[0])))
        check_values(r, "FP64", "instances[%d]" % i)
    a = numpy.array(rows, dtype=numpy.float64)
    model.check_input(model.inputs[0]["name"], a.astype(model.input_dtype()))
    return a


class Model:
    """A loaded model: its metadata and a thread-safe predict()."""

    platform = ""

    def __init__(self, name, version):
        self.name = name
        self.version = version
        self.n_features = None  # the last dimension of the input, when known
        self.inputs = [{"name": "input-0", "datatype": "FP32", "shape": [-1, -1]}]
        self.outputs = [{"name": "output-0", "datatype": "FP32", "shape": [-1]}]

    def input_dtype(self):
        return DATATYPES[self.inputs[0]["datatype"]]

    def check_input(self, name, a):
        where = 'input "%s"' % name
        if a.ndim != 2:
            raise BadRequest("%s: shape %s must have 2 dimensions [batch, features]" %
                             (where, json.dumps(list(a.shape))))
        if self.n_features is not None and a.shape[1] != self.n_features:
            raise BadRequest("%s: shape %s does not match the model's %d features" %
                             (where, json.dumps(list(a.shape)), self.n_features))

    def metadata(self):
        return {"name": self.name, "versions": [self.version], "platform": self.platform,
                "inputs": self.inputs, "outputs": self.outputs}


def find_file(model_dir, names, suffix):
    """model_dir itself when it is a file, else the first of names in it, else
    its only file ending in suffix."""
    if os.path.isfile(model_dir):
        return model_dir
    for n in names:
        p = os.path.join(model_dir, n)
        if os.path.isfile(p):
            return p
    found = sorted(f for f in os.listdir(model_dir) if f.endswith(suffix))
    if len(found) == 1:
        return os.path.join(model_dir, found[0])
    raise FileNotFoundError("%s: no %s (found %s)" %
                            (model_dir, " or ".join(names), ", ".join(found) or "nothing"))


class SklearnModel(Model):
    """A joblib or pickle file, as KServe's sklearn server loads it."""

    platform = "sklearn"

    def __init__(self, name, version, model_dir):
        super().__init__(name, version)
        import joblib
        self.path = find_file(model_dir, ("model.joblib", "model.pkl", "model.pickle"), ".joblib")
        self.est = joblib.load(self.path)
        self.n_features = getattr(self.est, "n_features_in_", None)
        self.inputs = [{"name": "input-0", "datatype": "FP64",
                        "shape": [-1, self.n_features or -1]}]
        classes = getattr(self.est, "classes_", None)
        out = datatype_of(numpy.asarray(classes).dtype) if classes is not None else "FP64"
        self.outputs = [{"name": "output-0", "datatype": out, "shape": [-1]}]

    def predict(self, a):
        return numpy.asarray(self.est.predict(a))


class TorchScriptModel(Model):
    """A TorchScript file (torch.jit.save), run in inference mode."""

    platform = "pytorch_torchscript"

    def __init__(self, name, version, model_dir):
        super().__init__(name, version)
        import torch
        self.torch = torch
        self.path = find_file(model_dir, ("model.pt",), ".pt")
        self.net = torch.jit.load(self.path, map_location="cpu")
        self.net.eval()
        # The first 2-D weight's columns are the input features (a Linear
        # first layer, as the digits net has); unknown otherwise.
        for p in self.net.parameters():
            if p.dim() == 2:
                self.n_features = int(p.shape[1])
                break
        self.inputs = [{"name": "input-0", "datatype": "FP32",
                        "shape": [-1, self.n_features or -1]}]

    def predict(self, a):
        with self.torch.inference_mode():
            out = self.net(self.torch.from_numpy(numpy.ascontiguousarray(a, dtype=numpy.float32)))
        return out.numpy()


FORMATS = {"sklearn": SklearnModel, "pytorch": TorchScriptModel}


def tensor_out(name, a):
    return {"name": name, "shape": list(a.shape), "datatype": datatype_of(a.dtype),
            "data": a.reshape(-1).tolist()}


class Server(ThreadingHTTPServer):
    """The HTTP server: the model (None until loaded) and the drain state."""

    daemon_threads = False
    block_on_close = True
    allow_reuse_address = True

    def __init__(self, addr, args):
        self.address_family = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
        super().__init__(addr, Handler)
        self.args = args
        self.model = None
        self.load_error = None
        self.draining = False
        self.lock = threading.Lock()
        self.idle = set()  # connections waiting for their next request

    def load(self):
        try:
            m = FORMATS[self.args.format](self.args.name, self.args.model_version,
                                          self.args.model_dir)
            self.model = m
            print("%s: model %s loaded from %s" % (SERVER_NAME, m.name, m.path), flush=True)
        except Exception as e:  # noqa: BLE001 - any load failure keeps the server unready
            self.load_error = "%s: %s" % (type(e).__name__, e)
            print("%s: cannot load the model: %s" % (SERVER_NAME, self.load_error), flush=True)

    def drain(self):
        """Stop accepting; idle keep-alive connections are closed, busy ones
        close after their response."""
        with self.lock:
            self.draining = True
            for conn in list(self.idle):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self.shutdown()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = SERVER_NAME + "/" + SERVER_VERSION
    timeout = 60  # an idle keep-alive connection is closed after this

    def log_message(self, fmt, *args):  # requests are not logged one by one
        pass

    def handle_one_request(self):
        with self.server.lock:
            if self.server.draining:
                self.close_connection = True
                return
            self.server.idle.add(self.connection)
        try:
            super().handle_one_request()
        finally:
            with self.server.lock:
                self.server.idle.discard(self.connection)

    def parse_request(self):
        with self.server.lock:
            self.server.idle.discard(self.connection)
        return super().parse_request()

    def reply(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.server.draining:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_json(self):
        try:
            n = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            raise BadRequest("Content-Length: not a number") from None
        if n > MAX_BODY_BYTES:
            self.close_connection = True
            raise OverflowError("the request body is over %d bytes" % MAX_BODY_BYTES)
        raw = self.rfile.read(n) if n > 0 else b""
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise BadRequest("the request body is not JSON: %s" % e) from None

    def route(self):
        """(handler, model-name) for the path, or raises NotFound."""
        path = self.path.split("?", 1)[0].rstrip("/")
        s = self.server
        get = self.command in ("GET", "HEAD")
        if get and path == "/v2/health/live":
            return lambda: (200, {"live": True})
        if get and path == "/v2/health/ready":
            return lambda: (200, {"ready": True}) if s.model else (503, {"ready": False})
        if get and path in ("/v2", ""):
            return lambda: (200, {"name": SERVER_NAME, "version": SERVER_VERSION,
                                  "extensions": []})
        if path.startswith("/v2/models/"):
            return self.route_v2(path[len("/v2/models/"):].split("/"), get)
        if path.startswith("/v1/models/"):
            rest = path[len("/v1/models/"):]
            if self.command == "POST" and rest.endswith(":predict"):
                name = rest[:-len(":predict")]
                return lambda: self.v1_predict(self.model_named(name))
            if get and "/" not in rest:
                return lambda: (200, {"name": self.model_named(rest).name, "ready": True})
        raise NotFound("no such path: %s %s" % (self.command, path))

    def route_v2(self, parts, get):
        name, rest = parts[0], parts[1:]
        if len(rest) >= 2 and rest[0] == "versions":
            version, rest = rest[1], rest[2:]
        else:
            version = None
        if get and not rest:
            return lambda: (200, self.model_named(name, version).metadata())
        if get and rest == ["ready"]:
            return lambda: (200, {"name": self.model_named(name, version).name, "ready": True})
        if self.command == "POST" and rest == ["infer"]:
            return lambda: self.v2_infer(self.model_named(name, version))
        raise NotFound("no such path: %s %s" % (self.command, self.path))

    def model_named(self, name, version=None):
        s = self.server
        if name != s.args.name or (version is not None and version != s.args.model_version):
            raise NotFound("no model %s%s (this server has %s version %s)" %
                           (name, "" if version is None else " version " + version,
                            s.args.name, s.args.model_version))
        if s.model is None:
            raise Unavailable("model %s is not ready%s" %
                              (name, ": " + s.load_error if s.load_error else ""))
        return s.model

    def v2_infer(self, model):
        rid, arrays = parse_infer_request(self.read_json(), model)
        out = model.predict(arrays[0])
        resp = {"model_name": model.name, "model_version": model.version,
                "outputs": [tensor_out(model.outputs[0]["name"], out)]}
        if rid is not None:
            resp["id"] = rid
        return 200, resp

    def v1_predict(self, model):
        a = parse_v1_request(self.read_json(), model)
        return 200, {"predictions": model.predict(a.astype(model.input_dtype())).tolist()}

    def dispatch(self):
        try:
            code, obj = self.route()()
        except BadRequest as e:
            code, obj = 400, {"error": str(e)}
        except NotFound as e:
            code, obj = 404, {"error": str(e)}
        except Unavailable as e:
            code, obj = 503, {"error": str(e)}
        except OverflowError as e:
            code, obj = 413, {"error": str(e)}
        except Exception as e:  # noqa: BLE001 - a model failure is the request's 500
            code, obj = 500, {"error": "%s: %s" % (type(e).__name__, e)}
        self.reply(code, obj)

    do_GET = do_HEAD = do_POST = dispatch



def parse_args(argv):
    p = argparse.ArgumentParser(prog=SERVER_NAME, description=__doc__.split("\n")[0])
    p.add_argument("--name", required=True, help="the model's name in the URL paths")
    p.add_argument("--model-dir", required=True,
                   help="the model's file or the directory holding it (a ModelVersion's status.path)")
    p.add_argument("--format", required=True, choices=sorted(FORMATS))
    p.add_argument("--model-version", default=os.environ.get("GANTRY_MODEL_VERSION", "1"),
                   help="the version reported in metadata (default $GANTRY_MODEL_VERSION, else 1)")
    p.add_argument("--port", type=int, default=int(os.environ.get("GANTRY_PORT_HTTP", "8080")),
                   help="default $GANTRY_PORT_HTTP (a task's port named http), else 8080")
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads per request (default 1)")
    args = p.parse_args(argv)
    if not 0 < args.port < 65536:
        p.error("--port: must be 1..65535")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.format == "pytorch":
        import torch
        torch.set_num_threads(max(1, args.threads))
    srv = Server((args.host, args.port), args)
    stop = threading.Event()

    def on_signal(signum, frame):
        if not stop.is_set():
            stop.set()
            print("%s: signal %d, draining" % (SERVER_NAME, signum), flush=True)
            threading.Thread(target=srv.drain).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print("%s: listening on %s:%d for model %s (%s)" %
          (SERVER_NAME, args.host, args.port, args.name, args.format), flush=True)
    threading.Thread(target=srv.load, daemon=True).start()
    srv.serve_forever(poll_interval=0.2)
    srv.server_close()  # joins the request threads: in-flight requests finish
    print("%s: drained, exiting" % SERVER_NAME, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
