"""Notebooks end to end: a real gantryd and gantlet run Debian's Jupyter as
the notebook's task; a small client drives it through gantryd's proxy over
Jupyter's REST and WebSocket protocols, with members', viewers' and
outsiders' tokens; Stop/Start keep the home volume (a Volume of the
project) and free the GPUs; the culler stops idle notebooks and only those."""
import json
import os
import socket
import tempfile
import time
import uuid

import websocket

from gantry_e2e import (API, TOKENS, AgentTest, Gantlet, Watch, main, obj, wait_for)

STORAGE = tempfile.mkdtemp(prefix="gantry-nb-storage-")
os.chmod(STORAGE, 0o711)
ALICE_UID = TOKENS["alice"][2]


def home_dir(name, uid=ALICE_UID):
    """A home volume beneath the storage root, owned by uid (alice)."""
    d = os.path.join(STORAGE, name + "-" + uuid.uuid4().hex[:6])
    os.makedirs(d)
    os.chown(d, uid, uid)
    return d


class NotebookTest(AgentTest):
    CHECK_MS = 500
    gantryd_args = ("--node-grace", "4", "--storage-root", STORAGE,
                    "--storage-class", "fast=" + os.path.join(STORAGE, "volumes"),
                    "--notebook-check-interval-ms", str(CHECK_MS))

    def setUp(self):
        super().setUp()
        st, body = self.g.request("PUT", API + "/projects/proj-a", obj(
            "Project", "proj-a", spec={"department": "dept-a", "members": [
                {"user": "alice", "role": "admin"}, {"user": "bob", "role": "member"},
                {"user": "carol", "role": "viewer"}]}))
        self.assertEqual(st, 200, body)
        st, body = self.g.request("POST", API + "/projects", obj(
            "Project", "proj-b", spec={"department": "dept-a",
                                       "members": [{"user": "dave", "role": "member"}]}))
        self.assertEqual(st, 201, body)
        self.gpu_counters = tempfile.mkdtemp(prefix="gantry-nb-gpus-")
        self.agent = self.gantlet(fake_gpus="2xA100-80GB", extra_args=[
            "--storage-root", STORAGE, "--fake-gpu-counters", self.gpu_counters])

    # ---- helpers ----

    def create(self, name, home, gpus=1, idle=None, token="alice"):
        """home: a hostPath, or spec.home itself (a dict)."""
        spec = {"template": {"resources": {"limits": {
            "nvidia.com/gpu": gpus, "cpu": "1", "memory": "1Gi"}}},
            "home": home if isinstance(home, dict) else {"hostPath": home}}
        if idle is not None:
            spec["idle"] = idle
        st, body = self.g.request("POST", self.PROJECT + "/notebooks",
                                  obj("Notebook", name, "proj-a", spec=spec), token=token)
        self.assertEqual(st, 201, body)
        return body

    def notebook(self, name):
        st, body = self.g.request("GET", self.PROJECT + "/notebooks/" + name)
        return body if st == 200 else None

    def nb_phase(self, name):
        return ((self.notebook(name) or {}).get("status") or {}).get("phase")

    def wait_nb(self, name, phase, timeout=40):
        wait_for("notebook %s %s (now %s)" % (name, phase, self.nb_phase(name)),
                 lambda: self.nb_phase(name) == phase, timeout=timeout, interval=0.2)
        return self.notebook(name)

    def set_stopped(self, name, stopped, token="bob"):
        """spec.stopped by read-modify-write, retried while the controller's
        status writes get in between (409)."""
        for _ in range(20):
            nb = self.notebook(name)
            nb["spec"]["stopped"] = stopped
            st, body = self.g.request("PUT", self.PROJECT + "/notebooks/" + name, nb, token=token)
            if st != 409:
                self.assertEqual(st, 200, body)
                return
        self.fail("PUT kept conflicting")

    def base(self, name):
        return "/projects/proj-a/notebooks/%s/" % name

    def proxied(self, method, name, rest, token="bob", body=None, headers=None):
        return self.g.request(method, self.base(name) + rest, body=body, token=token,
                              headers=headers)

    def wait_jupyter(self, name, timeout=40):
        wait_for("jupyter of %s answering through the proxy" % name,
                 lambda: self.proxied("GET", name, "api/status")[0] == 200,
                 timeout=timeout, interval=0.2)

    def gpus_held(self):
        node = self.agent.node()
        return [g for g in node["status"]["allocated"]["gpus"] if g.get("task")]

    def start_kernel(self, name, token="bob"):
        st, k = self.proxied("POST", name, "api/kernels", token=token, body={"name": "python3"})
        self.assertEqual(st, 201, k)
        return k["id"]

    def ws(self, name, rest, token="bob"):
        url = "ws://127.0.0.1:%d%s%s" % (self.g.port, self.base(name), rest)
        return websocket.create_connection(
            url, header=["Authorization: Bearer " + TOKENS[token][0]], timeout=30)

    def execute(self, conn, code, wait=True):
        """Send an execute_request; with wait, return its stdout once idle."""
        msg_id = uuid.uuid4().hex
        conn.send(json.dumps({
            "header": {"msg_id": msg_id, "session": uuid.uuid4().hex, "username": "t",
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": code, "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False}}))
        if not wait:
            return msg_id
        out = []
        deadline = time.time() + 60
        while time.time() < deadline:
            m = json.loads(conn.recv())
            if m.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "stream":
                out.append(m["content"]["text"])
            if m["msg_type"] == "error":
                self.fail("cell failed: %s" % m["content"])
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                return "".join(out)
        self.fail("no idle status for the cell")

    def wait_status(self, conn, msg_id, state):
        """Read the channels until the kernel's status for msg_id is state."""
        deadline = time.time() + 30
        while time.time() < deadline:
            m = json.loads(conn.recv())
            if (m.get("parent_header", {}).get("msg_id") == msg_id and
                    m["msg_type"] == "status" and m["content"]["execution_state"] == state):
                return
        self.fail("no %s status for %s" % (state, msg_id))

    def kernel_state(self, name, kid):
        st, k = self.proxied("GET", name, "api/kernels/" + kid)
        self.assertEqual(st, 200, k)
        return k["execution_state"]

    def secret_values(self, task):
        """The values of the task's gantry secrets, as its node's agent gets them."""
        st, body = self.g.request("GET", self.PROJECT + "/tasks/%s/secrets" % task, token="node")
        self.assertEqual(st, 200, body)
        return {e["name"]: e["value"] for e in body["env"]}

    def events(self, name, reason):
        st, body = self.g.request("GET", API + "/events")
        return [e for e in body["items"] if e["involvedObject"]["name"] == name and
                e["involvedObject"]["kind"] == "Notebook" and e["reason"] == reason]


class TestNotebookProxy(NotebookTest):

    def test_kernel_runs_a_cell_through_the_proxy(self):
        home = home_dir("nb1")
        with open(os.path.join(home, "hello.txt"), "w") as f:
            f.write("from the home volume")
        # what a project viewer's watches show while the notebook starts
        watches = [Watch(self.g, self.PROJECT + "/" + kind, token="carol")
                   for kind in ("jobs", "tasks")]
        self.create("nb1", home)
        nb = self.wait_nb("nb1", "Running")
        self.assertEqual(nb["status"]["url"], self.base("nb1"))
        self.assertEqual(nb["status"]["task"], "nb-nb1-worker-0")
        self.wait_jupyter("nb1")
        kid = self.start_kernel("nb1")
        conn = self.ws("nb1", "api/kernels/%s/channels" % kid)
        try:
            out = self.execute(conn, "import os\nprint(os.environ.get('CUDA_VISIBLE_DEVICES'))\n"
                               "print(os.getuid())\n"
                               "print(open(os.path.join(%r, 'hello.txt')).read())" % home)
        finally:
            conn.close()
        lines = out.split("\n")
        self.assertEqual(lines[0], "0", out)
        self.assertEqual(lines[1], str(ALICE_UID), out)
        self.assertEqual(lines[2], "from the home volume", out)
        # the token is in no object: a viewer's GET, list and watch of the
        # Job and the Task show its name and reference, never its value
        token = self.secret_values("nb-nb1-worker-0")["JUPYTER_TOKEN"]
        self.assertGreaterEqual(len(token), 32)
        for w in watches:
            w.close()
        seen = [json.dumps(o) for _, _, o in watches[0].events + watches[1].events]
        for path in ("/jobs/nb-nb1", "/tasks/nb-nb1-worker-0", "/jobs", "/tasks"):
            st, body = self.g.request("GET", self.PROJECT + path, token="carol")
            self.assertEqual(st, 200, body)
            seen.append(json.dumps(body))
        self.assertTrue(any("nb-nb1-worker-0" in s for s in seen[:-4]), "the watch saw nothing")
        for s in seen:
            self.assertNotIn(token, s)
        job = self.g.request("GET", self.PROJECT + "/jobs/nb-nb1", token="carol")[1]
        env = job["spec"]["replicaSpecs"]["Worker"]["template"]["env"]
        self.assertEqual([e for e in env if e["name"] == "JUPYTER_TOKEN"], [
            {"name": "JUPYTER_TOKEN", "valueFrom": {"gantrySecret": "notebook-token"}}])
        # the notebook's own token never comes back to the browser
        st, page = self.proxied("GET", "nb1", "tree")
        self.assertEqual(st, 200)
        self.assertNotIn(token, page)
        conn = socket.create_connection(("127.0.0.1", self.g.port))
        conn.sendall(("GET %stree HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
                      % (self.base("nb1"), TOKENS["bob"][0])).encode())
        raw = b""
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            raw += chunk
        conn.close()
        head = raw.split(b"\r\n\r\n", 1)[0].decode().lower()
        self.assertNotIn("set-cookie", head)
        self.assertNotIn(token.encode(), raw)

    def test_access(self):
        self.create("nb2", home_dir("nb2"))
        self.wait_nb("nb2", "Running")
        self.wait_jupyter("nb2")
        self.assertEqual(self.proxied("GET", "nb2", "api/status", token="alice")[0], 200)
        self.assertEqual(self.proxied("GET", "nb2", "api/status", token="carol")[0], 403)
        self.assertEqual(self.proxied("GET", "nb2", "api/status", token="dave")[0], 403)
        self.assertEqual(self.proxied("GET", "nb2", "api/status", token="nobody")[0], 403)
        self.assertEqual(self.proxied("GET", "nb2", "api/status", token=None)[0], 401)
        self.assertEqual(self.proxied("GET", "nb2", "api/status", token="bogus")[0], 401)
        with self.assertRaises(websocket.WebSocketBadStatusException):
            self.ws("nb2", "api/kernels/x/channels", token="carol")
        # the token's values are for the node's agent only: every user gets 403
        secrets = self.PROJECT + "/tasks/nb-nb2-worker-0/secrets"
        for user in ("admin", "alice", "bob", "carol", "dave", "nobody"):
            st, body = self.g.request("GET", secrets, token=user)
            self.assertEqual(st, 403, (user, body))
        self.assertEqual(self.g.request("GET", secrets, token="node")[0], 200)
        self.assertEqual(self.g.request("GET", secrets + "?uid=other", token="node")[0], 404)
        # and only gantryd writes gantry secret references: a member's are refused
        ref = [{"name": "JUPYTER_TOKEN", "valueFrom": {"gantrySecret": "notebook-token"}}]
        st, body = self.g.request("POST", self.PROJECT + "/notebooks", obj(
            "Notebook", "nb6", "proj-a", spec={"template": {"env": ref}}), token="bob")
        self.assertEqual(st, 422, body)
        self.assertIn("spec.template.env[0].valueFrom.gantrySecret: set only by gantryd",
                      body["message"])
        st, body = self.g.request("POST", self.PROJECT + "/jobs", obj(
            "Job", "steal", "proj-a", spec={"replicaSpecs": {"Worker": {"template": {
                "command": ["env"], "env": ref}}}}), token="bob")
        self.assertEqual(st, 422, body)
        self.assertIn("spec.replicaSpecs.Worker.template.env[0].valueFrom.gantrySecret",
                      body["message"])
        # a browser: the cookie from ?gantry-token=, then the page with it
        st, _ = self.g.request("GET", self.base("nb2") + "tree?gantry-token=" +
                               TOKENS["bob"][0], token=None)
        self.assertEqual(st, 302)
        st, _ = self.g.request("GET", self.base("nb2") + "api/status", token=None,
                               headers={"Cookie": "gantry-token=" + TOKENS["bob"][0]})
        self.assertEqual(st, 200)
        st, _ = self.g.request("GET", self.base("nb2") + "api/status", token=None,
                               headers={"Cookie": "gantry-token=" + TOKENS["carol"][0]})
        self.assertEqual(st, 403)
        # `gantry get notebooks` shows the phase and the last activity
        out = self.g.cli("get", "notebooks", "-p", "proj-a", token="bob").stdout
        self.assertIn("LAST ACTIVITY", out)
        row = [l for l in out.splitlines() if l.startswith("nb2 ")][0]
        self.assertIn("Running", row)
        # viewers may see the Notebook object, not create one
        self.assertEqual(self.g.request("GET", self.PROJECT + "/notebooks/nb2",
                                        token="carol")[0], 200)
        st, body = self.g.request("POST", self.PROJECT + "/notebooks", obj(
            "Notebook", "nb3", "proj-a", spec={}), token="carol")
        self.assertEqual(st, 403, body)

    def test_large_upload_and_streamed_download(self):
        home = home_dir("nb5")
        big = os.urandom(24 * 1024 * 1024)
        with open(os.path.join(home, "big.bin"), "wb") as f:
            f.write(big)
        self.create("nb5", home)
        self.wait_nb("nb5", "Running")
        self.wait_jupyter("nb5")
        # an upload as Jupyter's UI sends a chunk: base64 in JSON, near the body limit
        text = "x" * (2 * 1024 * 1024)
        st, body = self.proxied("PUT", "nb5", "api/contents/up.txt", body={
            "type": "file", "format": "text", "content": text})
        self.assertIn(st, (200, 201), body)
        with open(os.path.join(home, "up.txt")) as f:
            self.assertEqual(f.read(), text)
        # past gantryd's --max-body-bytes: 413 before the notebook sees it
        conn = socket.create_connection(("127.0.0.1", self.g.port))
        conn.sendall(("PUT %sapi/contents/huge.txt HTTP/1.1\r\nHost: x\r\nAuthorization: "
                      "Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d"
                      "\r\n\r\n" % (self.base("nb5"), TOKENS["bob"][0],
                                      5 * 1024 * 1024)).encode())
        status = conn.recv(4096).split(b"\r\n")[0]
        conn.close()
        self.assertIn(b" 413 ", status)
        self.assertFalse(os.path.exists(os.path.join(home, "huge.txt")))
        # a download larger than the proxy's buffers, read slowly: back-pressure, no loss
        conn = socket.create_connection(("127.0.0.1", self.g.port))
        conn.sendall(("GET %sfiles/big.bin HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s"
                      "\r\n\r\n" % (self.base("nb5"), TOKENS["bob"][0])).encode())
        raw = bytearray()
        while True:
            chunk = conn.recv(256 * 1024)
            if not chunk:
                break
            raw += chunk
            if len(raw) < 4 * 1024 * 1024:
                time.sleep(0.01)
        conn.close()
        head, _, data = bytes(raw).partition(b"\r\n\r\n")
        self.assertIn(b" 200 ", head.split(b"\r\n")[0])
        if b"chunked" in head.lower():
            out, rest = bytearray(), data
            while True:
                size_line, _, rest = rest.partition(b"\r\n")
                n = int(size_line.split(b";")[0], 16)
                if n == 0:
                    break
                out += rest[:n]
                rest = rest[n + 2:]
            data = bytes(out)
        self.assertEqual(len(data), len(big))
        self.assertEqual(data, big)

    def test_stop_start_keeps_the_home_and_frees_gpus(self):
        # the home is a Volume of the project (64 MiB, within dept-a's storage quota)
        st, dept = self.g.request("GET", API + "/departments/dept-a")
        dept.pop("status", None)
        dept["spec"]["quota"]["storage"] = "128Mi"
        self.assertEqual(self.g.request("PUT", API + "/departments/dept-a", dept)[0], 200)
        vol = self.PROJECT + "/volumes/nb4-home"
        st, body = self.g.request("POST", self.PROJECT + "/volumes", obj(
            "Volume", "nb4-home", "proj-a", spec={"capacity": {"storage": "64Mi"}}),
            token="alice")
        self.assertEqual(st, 201, body)
        wait_for("volume Available", lambda: self.g.request("GET", vol)[1].get(
            "status", {}).get("phase") == "Available", timeout=30)
        st, body = self.g.request("POST", self.PROJECT + "/notebooks", obj(
            "Notebook", "nbx", "proj-a", spec={"home": {"volume": "no-such"}}), token="alice")
        self.assertEqual(st, 422, body)
        self.assertIn('spec.home.volume: no Volume "no-such" in project "proj-a"', body["message"])
        self.create("nb4", {"volume": "nb4-home"})
        self.wait_nb("nb4", "Running")
        job = self.g.request("GET", self.PROJECT + "/jobs/nb-nb4")[1]
        self.assertEqual(job["spec"]["volumes"], [{"name": "home", "volume": "nb4-home"}])
        self.wait_jupyter("nb4")
        self.assertEqual(len(self.gpus_held()), 1)
        st, body = self.proxied("PUT", "nb4", "api/contents/kept.txt", body={
            "type": "file", "format": "text", "content": "written before stop"})
        self.assertIn(st, (200, 201), body)
        # in use by the running notebook: the Volume cannot be deleted
        st, body = self.g.request("DELETE", vol, token="alice")
        self.assertEqual(st, 409, body)
        self.assertIn("tasks nb-nb4-worker-0; jobs nb-nb4; notebooks nb4", body["message"])
        self.set_stopped("nb4", True)
        self.wait_nb("nb4", "Stopped")
        wait_for("GPUs free", lambda: not self.gpus_held(), timeout=20)
        self.assertEqual(self.proxied("GET", "nb4", "api/status")[0], 503)
        # stopped, it is still the notebook's home
        st, body = self.g.request("DELETE", vol, token="alice")
        self.assertEqual(st, 409, body)
        self.assertIn('volume "nb4-home" is in use by notebooks nb4', body["message"])
        self.set_stopped("nb4", False)
        self.wait_nb("nb4", "Running")
        self.wait_jupyter("nb4")
        st, body = self.proxied("GET", "nb4", "api/contents/kept.txt")
        self.assertEqual(st, 200, body)
        self.assertEqual(body["content"], "written before stop")
        # delete: the job goes, the Volume stays until it is deleted itself
        st, _ = self.g.request("DELETE", self.PROJECT + "/notebooks/nb4", token="bob")
        self.assertEqual(st, 200)
        wait_for("job gone", lambda: self.g.request(
            "GET", self.PROJECT + "/jobs/nb-nb4")[0] == 404, timeout=30)
        self.assertEqual(self.g.request("GET", vol)[0], 200)
        wait_for("volume deleted", lambda: self.g.request("DELETE", vol, token="alice")[0] == 200,
                 timeout=30)


class TestNotebookCli(NotebookTest):

    def test_create_open_stop_start_delete(self):
        home = home_dir("cli", TOKENS["bob"][2])
        out = self.g.cli("notebook", "create", "cli", "--gpus", "1", "--cpu", "1",
                         "--memory", "1Gi", "--home", home, "-p", "proj-a", token="bob").stdout
        self.assertIn("notebook.gantry.dev/cli created", out)
        self.wait_nb("cli", "Running")
        self.assertEqual(self.notebook("cli")["metadata"]["creator"]["user"], "bob")
        url = self.g.cli("notebook", "open", "cli", "-p", "proj-a", token="bob").stdout.strip()
        self.assertEqual(url, "%s%s?gantry-token=%s" % (self.g.url, self.base("cli"),
                                                        TOKENS["bob"][0]))
        self.wait_jupyter("cli")
        self.g.cli("notebook", "stop", "cli", "-p", "proj-a", token="bob")
        self.wait_nb("cli", "Stopped")
        wait_for("GPUs free", lambda: not self.gpus_held(), timeout=20)
        self.g.cli("notebook", "start", "cli", "-p", "proj-a", token="bob")
        self.wait_nb("cli", "Running")
        p = self.g.cli("notebook", "stop", "cli", "-p", "proj-a", token="carol", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('user "carol" cannot update notebooks', p.stderr)
        p = self.g.cli("notebook", "create", "bad", "--gpus", "-1", "-p", "proj-a", token="bob",
                       check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("spec.template.resources.limits.nvidia.com/gpu", p.stderr)
        # --home without a leading / names a Volume of the project
        p = self.g.cli("notebook", "create", "vol", "--home", "nosuch", "-p", "proj-a",
                       token="bob", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('spec.home.volume: no Volume "nosuch" in project "proj-a"', p.stderr)
        self.g.cli("notebook", "delete", "cli", "-p", "proj-a", token="bob")
        wait_for("notebook gone", lambda: self.notebook("cli") is None, timeout=10)


class TestNotebookCulling(NotebookTest):
    """Each scenario with a short timeout (TIMEOUT_S) checked every CHECK_MS."""
    TIMEOUT_S = 6

    def idle(self):
        return {"timeoutSeconds": self.TIMEOUT_S}

    def running(self, name):
        self.create(name, home_dir(name), idle=self.idle())
        self.wait_nb(name, "Running")
        self.wait_jupyter(name)

    def assert_not_culled_for(self, name, seconds, keep_busy=None):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if keep_busy:
                keep_busy()
            nb = self.notebook(name)
            self.assertEqual(nb["status"]["phase"], "Running", nb["status"])
            time.sleep(0.5)
        self.assertEqual(self.events(name, "Culled"), [])

    def test_a_idle_is_culled_gpus_free_event(self):
        self.running("idle")
        self.assertEqual(len(self.gpus_held()), 1)
        nb = self.wait_nb("idle", "Culled", timeout=self.TIMEOUT_S + 20)
        self.assertTrue(nb["spec"]["stopped"])
        cond = [c for c in nb["status"]["conditions"] if c["type"] == "Culled"][0]
        self.assertEqual((cond["status"], cond["reason"]), ("True", "IdleTimeout"))
        wait_for("GPUs free", lambda: not self.gpus_held(), timeout=20)
        wait_for("Culled event", lambda: self.events("idle", "Culled"), timeout=40)
        wait_for("IdleWarning event", lambda: self.events("idle", "IdleWarning"), timeout=40)
        self.assertEqual(self.events("idle", "IdleWarning")[0]["type"], "Warning")

    def start_silent_cell(self, conn, name, kid, seconds):
        """Start a cell that sleeps seconds without output and return once
        Jupyter's kernel list says busy. A late control-channel idle can
        still hide a cell's busy there (jupyter_server 1.x, above); such a
        run is interrupted before the culler's timeout and sent again,
        three tries in all."""
        for _ in range(3):
            msg_id = self.execute(conn, "import time\ntime.sleep(%d)" % seconds, wait=False)
            self.wait_status(conn, msg_id, "busy")
            deadline = time.time() + self.TIMEOUT_S / 2
            while time.time() < deadline:
                if self.kernel_state(name, kid) == "busy":
                    return
                time.sleep(0.05)
            st, body = self.proxied("POST", name, "api/kernels/%s/interrupt" % kid)
            self.assertEqual(st, 204, body)
            self.wait_status(conn, msg_id, "idle")
        self.fail("Jupyter's kernel list never showed the running cell busy")

    def test_b_silent_long_cell_is_not_culled(self):
        self.running("cell")
        kid = self.start_kernel("cell")
        conn = self.ws("cell", "api/kernels/%s/channels" % kid)
        try:
            # jupyter_server 1.x sets a kernel's execution_state from every
            # status message, the control channel's too: the idle of the
            # kernel_info_request it sends on connect ("nudge") can land
            # after a cell's busy and hide it for the whole cell. A first
            # cell run to its end lets those settle, as a user's would.
            self.execute(conn, "pass")
            self.start_silent_cell(conn, "cell", kid, self.TIMEOUT_S * 3)
            self.assert_not_culled_for("cell", self.TIMEOUT_S * 2.5)
        finally:
            conn.close()

    def test_c_terminal_in_use_is_not_culled(self):
        self.running("term")
        st, term = self.proxied("POST", "term", "api/terminals")
        self.assertEqual(st, 200, term)
        conn = self.ws("term", "terminals/websocket/" + term["name"])
        try:
            self.assert_not_culled_for("term", self.TIMEOUT_S * 2.5, keep_busy=lambda: conn.send(
                json.dumps(["stdin", "echo still here\r"])))
        finally:
            conn.close()

    def set_gpu_util(self, percent):
        for i in (0, 1):
            with open(os.path.join(self.gpu_counters, str(i)), "w") as f:
                f.write("util %d\n" % percent)

    def test_d_busy_gpu_without_traffic_is_not_culled(self):
        self.running("gpu")
        self.set_gpu_util(80)
        self.assert_not_culled_for("gpu", self.TIMEOUT_S * 2.5)
        self.assertTrue(self.notebook("gpu")["status"]["lastActivity"].startswith("gpu "))
        self.set_gpu_util(0)
        self.wait_nb("gpu", "Culled", timeout=self.TIMEOUT_S + 20)

    def test_e_polling_alone_is_culled(self):
        self.running("poll")
        start = time.time()
        while self.nb_phase("poll") == "Running" and time.time() - start < self.TIMEOUT_S + 20:
            for rest in ("api/sessions", "api/terminals", "api/kernels", "api/status",
                         "api/contents?type=directory"):
                self.proxied("GET", "poll", rest)
            time.sleep(0.5)
        self.wait_nb("poll", "Culled", timeout=10)


if __name__ == "__main__":
    main()
