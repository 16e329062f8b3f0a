"""Bad input: each malformed or invalid request gets its exact status code and
a message naming the field; the server stays up and the store is unchanged."""
import copy
import json
import socket

from gantry_e2e import API, GantrydTest, job, main, obj, seed_tenancy
from test_durability import everything

J = API + "/projects/proj-a/jobs"


def with_(o, path, value):
    """Copy of o with the dotted path set to value (None deletes)."""
    o = copy.deepcopy(o)
    keys = path.split(".")
    cur = o
    for k in keys[:-1]:
        cur = cur.setdefault(k, {})
    if value is None:
        cur.pop(keys[-1], None)
    else:
        cur[keys[-1]] = value
    return o


def limits(q):
    return with_(job("j", "proj-a"), "spec.replicaSpecs.Worker.template.resources.limits", q)


GOOD = job("good", "proj-a")

CASES = [
    # (description, method, path, body, code, words the message must contain)
    ("malformed JSON", "POST", J, '{"apiVersion": "gantry.dev/v1", "kind": ', 400, ["JSON"]),
    ("body not an object", "POST", J, "[1,2,3]", 400, ["object"]),
    ("empty body", "POST", J, "", 400, []),
    ("duplicate key", "POST", J, '{"kind":"Job","kind":"Job"}', 400, ["kind"]),
    ("unknown top-level field", "POST", J, with_(GOOD, "colour", "red"), 422, ["colour", "unknown"]),
    ("unknown spec field", "POST", J, with_(GOOD, "spec.gpuCount", 3), 422, ["spec.gpuCount"]),
    ("wrong type: replicas string", "POST", J,
     with_(GOOD, "spec.replicaSpecs.Worker.replicas", "2"), 422, ["spec.replicaSpecs.Worker.replicas"]),
    ("replicas zero", "POST", J,
     with_(GOOD, "spec.replicaSpecs.Worker.replicas", 0), 422, ["spec.replicaSpecs.Worker.replicas"]),
    ("replicas fractional", "POST", J,
     with_(GOOD, "spec.replicaSpecs.Worker.replicas", 1.5), 422, ["spec.replicaSpecs.Worker.replicas"]),
    ("unknown replica type", "POST", J,
     with_(GOOD, "spec.replicaSpecs", {"Boss": GOOD["spec"]["replicaSpecs"]["Worker"]}), 422,
     ["spec.replicaSpecs.Boss"]),
    ("bad restartPolicy enum", "POST", J,
     with_(GOOD, "spec.replicaSpecs.Worker.restartPolicy", "Sometimes"), 422,
     ["spec.replicaSpecs.Worker.restartPolicy"]),
    ("bad name: upper case", "POST", J, with_(GOOD, "metadata.name", "Train_1"), 422, ["metadata.name"]),
    ("bad name: too long", "POST", J, with_(GOOD, "metadata.name", "a" * 64), 422, ["metadata.name"]),
    ("bad label value", "POST", J, with_(GOOD, "metadata.labels", {"team": "a b"}), 422,
     ["metadata.labels"]),
    ("negative cpu", "POST", J, limits({"cpu": "-1"}), 422,
     ["spec.replicaSpecs.Worker.template.resources.limits.cpu"]),
    ("overflowing memory", "POST", J, limits({"memory": "9999999999999Ei"}), 422,
     ["spec.replicaSpecs.Worker.template.resources.limits.memory"]),
    ("garbage quantity", "POST", J, limits({"memory": "16Gb"}), 422,
     ["spec.replicaSpecs.Worker.template.resources.limits.memory"]),
    ("trailing garbage quantity", "POST", J, limits({"cpu": "500mx"}), 422,
     ["spec.replicaSpecs.Worker.template.resources.limits.cpu"]),
    ("fractional GPUs", "POST", J, limits({"nvidia.com/gpu": "1.5"}), 422,
     ["nvidia.com/gpu"]),
    ("unknown resource", "POST", J, limits({"tpu": 1}), 422, ["tpu"]),
    ("gpu-milli over 1000", "POST", J, limits({"gantry.dev/gpu-milli": 1500}), 422,
     ["gantry.dev/gpu-milli"]),
    ("wrong apiVersion", "POST", J, with_(GOOD, "apiVersion", "batch/v1"), 422, ["apiVersion"]),
    ("kind mismatch with path", "POST", J, with_(GOOD, "kind", "Task"), 422, ["kind"]),
    ("unknown kind path", "GET", API + "/widgets", None, 404, []),
    ("missing project", "POST", API + "/projects/no-such-project/jobs",
     with_(GOOD, "metadata.project", "no-such-project"), 404, ["no-such-project"]),
    ("project mismatch body/path", "POST", J, with_(GOOD, "metadata.project", "proj-b"), 400,
     ["metadata.project"]),
    ("job without replicaSpecs", "POST", J, with_(GOOD, "spec.replicaSpecs", None), 422,
     ["spec.replicaSpecs"]),
    ("command missing without image", "POST", J,
     with_(GOOD, "spec.replicaSpecs.Worker.template.command", None), 422,
     ["spec.replicaSpecs.Worker.template.command"]),
    ("department limit below quota", "POST", API + "/departments",
     obj("Department", "d9", spec={"quota": {"cpu": "8"}, "limit": {"cpu": "4"}}), 422,
     ["spec.limit.cpu"]),
    ("project with bad role", "POST", API + "/projects",
     obj("Project", "p9", spec={"department": "dept-a", "members": [{"user": "x", "role": "owner"}]}),
     422, ["spec.members[0].role"]),
    ("priority value not integer", "POST", API + "/priorityclasses",
     obj("PriorityClass", "pc", value="high"), 422, ["value"]),
    ("volume hostPath with ..", "POST", J,
     with_(GOOD, "spec.volumes", [{"name": "data", "hostPath": "/srv/data/../../etc"}]), 422,
     ["spec.volumes[0].hostPath"]),
    ("duplicate create", "POST", API + "/departments", obj("Department", "dept-a"), 409, ["dept-a"]),
    ("stale resourceVersion", "PUT", API + "/departments/dept-a",
     with_(obj("Department", "dept-a"), "metadata.resourceVersion", "999999"), 409, ["dept-a"]),
    ("PUT name mismatch", "PUT", API + "/departments/dept-a", obj("Department", "dept-b"), 400,
     ["metadata.name"]),
    ("get missing object", "GET", J + "/nope", None, 404, ["nope"]),
    ("delete missing object", "DELETE", J + "/nope", None, 404, ["nope"]),
    ("bad label selector", "GET", J + "?labelSelector=a%20in%20(", None, 400, ["labelSelector"]),
    ("bad watch resourceVersion", "GET", J + "?watch=true&resourceVersion=abc", None, 400,
     ["resourceVersion"]),
    ("method not allowed", "PATCH", J + "/x", "{}", 405, []),
]


class BadInput(GantrydTest):
    gantryd_args = ("--max-body-bytes", "65536")

    def test_each_bad_input_gets_its_code_and_nothing_changes(self):
        seed_tenancy(self.g)
        before = everything(self.g)
        self.assertGreaterEqual(len(CASES), 25)
        failures = []
        for desc, method, path, body, code, words in CASES:
            if isinstance(body, dict):
                body = json.dumps(body)
            st, resp = self.g.request(method, path, body)
            msg = resp.get("message", "") if isinstance(resp, dict) else str(resp)
            if st != code:
                failures.append("%s: got %d want %d (%s)" % (desc, st, code, msg))
                continue
            if isinstance(resp, dict):
                if resp.get("kind") != "Status" or resp.get("code") != code:
                    failures.append("%s: not a Status object: %r" % (desc, resp))
            for w in words:
                if w not in msg:
                    failures.append("%s: message %r lacks %r" % (desc, msg, w))
        self.assertEqual(failures, [])
        self.assertIsNone(self.g.proc.poll(), "gantryd died")
        self.assertEqual(everything(self.g), before)

    def test_oversize_body_is_413(self):
        big = job("big", "proj-a")
        big["metadata"]["annotations"] = {"blob": "x" * 100000}
        st, _ = self.g.request("POST", J, big)
        self.assertEqual(st, 413)
        self.assertIsNone(self.g.proc.poll())
        self.assertEqual(self.g.request("GET", J + "/big")[0], 404)

    def test_garbage_on_the_socket_does_not_hurt(self):
        for junk in (b"\x00\xff\xfe garbage\r\n\r\n", b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                     b"POST " + J.encode() + b" HTTP/1.1\r\nContent-Length: 10\r\n\r\n{"):
            s = socket.create_connection(("127.0.0.1", self.g.port), timeout=5)
            s.sendall(junk)
            s.shutdown(socket.SHUT_WR)
            try:
                s.recv(4096)
            except OSError:
                pass
            s.close()
        st, _ = self.g.request("GET", "/healthz", token=None, raw=True)
        self.assertEqual(st, 200)


if __name__ == "__main__":
    main()
