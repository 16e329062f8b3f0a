#!/usr/bin/env python3
"""ImageBuild on a real gantlet with a real registry and real buildah.

Each test starts gantryd with --registry and --registry-key (an RSA key
made with openssl) and Debian's docker-registry on loopback with token
authentication whose realm is gantryd's registry/token; the agent, given
no registry flags, learns the registry from gantryd and pulls with its node
token. The test pushes a base image (busybox) to
REGISTRY/proj-a/base:1 with root's buildah as the cluster admin. Then, as
alice (uid 1001):
- an ImageBuild from a git source (file://, a full sha) whose Dockerfile
  has FROM the base, COPY, RUN, ENV and CMD runs as a task (rootless:
  buildah in the task's own user namespace), pushes REGISTRY/proj-a/app:1
  and records its digest; the build log is the task's log; a job on the
  built image prints what COPY, RUN, ENV and CMD put there;
- the same build again on the same node hits the layer cache: every step
  "Using cache", and the build (status.buildDurationMs: buildah bud and
  push in the task) takes at most 5 s;
- alice may pull the image; dave, a member of proj-b only, may not, nor
  an unknown token;
- `gantry get images` lists the official image (gantryd --image) and the
  project's build; `gantry get imagebuilds` shows the build;
- a build whose RUN fails ends Failed, reason BuildFailed, naming the step
  and its exit code.
Skipped when buildah, docker-registry, skopeo, runc, git, busybox or
openssl is missing, or not root.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from gantry_e2e import (API, GANTLET, AgentTest, Watch, free_port, make_git_repo, obj,  # noqa: E402
                        wait_for)
from test_images import port_open  # noqa: E402
from gantry_e2e import main  # noqa: E402

TOOLS = ("buildah", "docker-registry", "skopeo", "runc", "git", "busybox", "openssl")
MISSING = [t for t in TOOLS if not shutil.which(t)]
MOD = {}
BUILD_TIMEOUT_S = 240
CACHED_BUILD_MAX_S = 5

DOCKERFILE = """FROM {base}
COPY hello.txt /hello.txt
RUN echo built-by-run > /built.txt
ENV GREETING=hello-from-env
CMD ["/bin/sh", "-c", "cat /hello.txt /built.txt; echo $GREETING"]
"""


def sh(*argv, **kw):
    return subprocess.run(list(argv), check=True, capture_output=True, timeout=300, **kw)


def start_registry(tmp, port, realm):
    """docker-registry on port with token authentication: realm (gantryd)
    issues the tokens, signed by the key whose certificate it trusts."""
    cfg = os.path.join(tmp, "registry.yml")
    with open(cfg, "w") as f:
        f.write("version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: %s\n"
                "http:\n  addr: 127.0.0.1:%d\n"
                "auth:\n  token:\n    realm: %s\n    service: gantry-registry\n"
                "    issuer: gantryd\n    rootcertbundle: %s\n"
                % (os.path.join(tmp, "registry"), port, realm, MOD["cert"]))
    log = open(os.path.join(tmp, "registry.log"), "ab")
    proc = subprocess.Popen(["docker-registry", "serve", cfg], stdout=log, stderr=log)
    log.close()
    wait_for("registry on port %d" % port, lambda: port_open(port), timeout=20)
    return proc


def push_base(tmp, registry, project="proj-a"):
    """busybox as /bin/*, built and pushed as REGISTRY/PROJECT/base:1 by
    root's buildah (a private store) with the cluster admin's token."""
    ctx = os.path.join(tmp, "base")
    os.makedirs(ctx)
    shutil.copy(shutil.which("busybox"), os.path.join(ctx, "busybox"))
    with open(os.path.join(ctx, "Dockerfile"), "w") as f:
        f.write('FROM scratch\nCOPY busybox /bin/busybox\n'
                'RUN ["/bin/busybox", "--install", "-s", "/bin"]\nENV PATH=/bin\n')
    store = ["--root", os.path.join(tmp, "store"), "--runroot", os.path.join(tmp, "runroot"),
             "--storage-driver", "vfs"]
    ref = "%s/%s/base:1" % (registry, project)
    sh("buildah", *store, "bud", "--isolation", "chroot", "-t", ref, ctx)
    sh("buildah", *store, "push", "--tls-verify=false", "--creds", "root-admin:admin-token", ref,
       "docker://" + ref)
    shutil.rmtree(os.path.join(tmp, "store"), True)
    return ref


def make_repo(tmp, base):
    os.chmod(tmp, 0o711)  # the build task clones it as its user
    return make_git_repo(os.path.join(tmp, "repo"), {
        "Dockerfile": DOCKERFILE.format(base=base), "hello.txt": "hello-from-copy\n"},
        message="app")


def setUpModule():
    if MISSING or os.geteuid() != 0:
        return
    tmp = tempfile.mkdtemp(prefix="gantry-imagebuild-")
    MOD["tmp"] = tmp
    MOD["key"], MOD["cert"] = os.path.join(tmp, "key.pem"), os.path.join(tmp, "cert.pem")
    sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", MOD["key"],
       "-out", MOD["cert"], "-days", "2", "-subj", "/CN=gantry-registry-token")
    MOD["port"] = free_port()
    MOD["registry"] = "127.0.0.1:%d" % MOD["port"]


def tearDownModule():
    if "tmp" in MOD:
        shutil.rmtree(MOD["tmp"], True)


def can_pull(ref, user, token):
    """Whether skopeo, logged in as user with its gantry token, may read ref."""
    r = subprocess.run(["skopeo", "inspect", "--tls-verify=false", "--creds",
                        "%s:%s" % (user, token), "docker://" + ref],
                       capture_output=True, text=True, timeout=60)
    return r.returncode == 0, r.stderr


@unittest.skipUnless(os.access(GANTLET, os.X_OK), "needs gantlet in the build directory")
@unittest.skipIf(MISSING, "image builds need %s" % ", ".join(MISSING))
@unittest.skipUnless(os.geteuid() == 0, "image builds need root (the agent's)")
class ImageBuilds(AgentTest):
    BUILDS = API + "/projects/proj-a/imagebuilds"

    def setUp(self):
        self.gantryd_args = AgentTest.gantryd_args + (
            "--registry", MOD["registry"], "--registry-key", MOD["key"],
            "--image", "busybox=%s/proj-a/base:1" % MOD["registry"])
        super().setUp()
        st, body = self.g.request("PUT", API + "/projects/proj-a", obj(
            "Project", "proj-a", spec={"department": "dept-a", "members": [
                {"user": "alice", "role": "admin"}, {"user": "carol", "role": "viewer"}]}))
        self.assertEqual(st, 200, body)
        st, body = self.g.request("POST", API + "/projects", obj(
            "Project", "proj-b", spec={"department": "dept-a",
                                       "members": [{"user": "dave", "role": "member"}]}))
        self.assertEqual(st, 201, body)
        tmp = tempfile.mkdtemp(prefix="gantry-imagebuild-reg-")
        self.addCleanup(shutil.rmtree, tmp, True)
        proc = start_registry(tmp, MOD["port"], self.g.url + API + "/registry/token")
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        # no registry flags on the node: it learns the registry from gantryd
        self.agent = self.gantlet(fake_gpus="1xA100-80GB")
        self.base = push_base(tmp, MOD["registry"])
        self.git, self.sha = make_repo(tmp, self.base)

    def wait_build(self, name):
        def done():
            st, body = self.g.request("GET", self.BUILDS + "/" + name)
            phase = ((body or {}).get("status") or {}).get("phase")
            return body if phase in ("Succeeded", "Failed") else None
        return wait_for("build %s done" % name, done, timeout=BUILD_TIMEOUT_S, interval=0.2)

    def test_build_run_rebuild_and_fail(self):
        watches = [Watch(self.g, self.PROJECT + "/" + kind, token="carol")
                   for kind in ("jobs", "tasks")]
        b = self.wait_build_of("app", "app:1")
        self.assertEqual(b["status"]["phase"], "Succeeded", b["status"])
        # it pushed with a credential no object holds: a viewer's GET, list
        # and watch of its Job and Task show a reference, never a value
        for w in watches:
            w.close()
        seen = [json.dumps(o) for w in watches for _, _, o in w.events]
        self.assertTrue(any("app-build-worker-0" in s for s in seen), "the watch saw nothing")
        for path in ("/jobs/app-build", "/tasks/app-build-worker-0", "/jobs", "/tasks"):
            st, body = self.g.request("GET", self.PROJECT + path, token="carol")
            self.assertEqual(st, 200, body)
            seen.append(json.dumps(body))
        for s in seen:
            self.assertNotIn("gtb1.", s)  # gt_registry_credential's form
        env = self.g.request("GET", self.PROJECT + "/jobs/app-build", token="carol")[1][
            "spec"]["replicaSpecs"]["Worker"]["template"]["env"]
        self.assertIn({"name": "GANTRY_REGISTRY_CREDS",
                       "valueFrom": {"gantrySecret": "registry-credential"}}, env)
        ref = "%s/proj-a/app:1" % MOD["registry"]
        self.assertEqual(b["status"]["image"], ref)
        self.assertRegex(b["status"]["digest"], r"^sha256:[0-9a-f]{64}$")
        log = self.g.cli("logs", "-p", "proj-a", "app-build", token="alice").stdout
        for step in ("STEP 1/5: FROM", "STEP 2/5: COPY", "STEP 3/5: RUN", "STEP 4/5: ENV",
                     "STEP 5/5: CMD"):
            self.assertIn(step, log)
        # a job on the built image: COPY, RUN, ENV and CMD are all there
        tmpl = {"image": ref + "@" + b["status"]["digest"],
                "resources": {"limits": {"cpu": "1", "memory": "256Mi"}}}
        st, body = self.g.request("POST", self.PROJECT + "/jobs", obj(
            "Job", "use", "proj-a",
            spec={"replicaSpecs": {"Worker": {"replicas": 1, "template": tmpl}}}), token="alice")
        self.assertEqual(st, 201, body)
        t = self.wait_phase("use-worker-0", ("Succeeded", "Failed"), timeout=120)
        out = self.g.cli("logs", "-p", "proj-a", "use", token="alice").stdout
        self.assertEqual(t["status"]["phase"], "Succeeded", (t["status"], out))
        self.assertEqual(out.split(), ["hello-from-copy", "built-by-run", "hello-from-env"])

        # the project's members may pull it; a member of another project may not
        self.assertTrue(can_pull(ref, "alice", "alice-token")[0])
        ok, why = can_pull(ref, "dave", "dave-token")
        self.assertFalse(ok, "dave (proj-b) pulled a proj-a image")
        self.assertRegex(why, "(?i)unauthorized|denied|authentication required")
        self.assertFalse(can_pull(ref, "x", "no-such-token")[0])

        # the catalogue: the official image and the project's build
        images = self.g.cli("get", "images", token="alice").stdout
        self.assertRegex(images, r"busybox\s+official\s+%s" % MOD["registry"])
        self.assertRegex(images, r"proj-a/app:1\s+build app\s+%s@sha256:" % ref)
        builds = self.g.cli("get", "imagebuilds", "-p", "proj-a", token="alice").stdout
        self.assertRegex(builds, r"app\s+Succeeded\s+%s\s+Pushed" % ref)

        # unchanged: every layer from the node's cache, in seconds
        start = time.monotonic()
        again = self.wait_build_of("app-again", "app:1")
        took = time.monotonic() - start
        self.assertEqual(again["status"]["phase"], "Succeeded", again["status"])
        self.assertEqual(again["status"]["digest"], b["status"]["digest"])
        log = self.g.cli("logs", "-p", "proj-a", "app-again-build", token="alice").stdout
        self.assertEqual(log.count("Using cache"), 4, log)
        build_s = again["status"]["buildDurationMs"] / 1000.0
        print("image_build_cached_s=%.2f (create to Succeeded %.2f s)" % (build_s, took),
              flush=True)
        self.assertLessEqual(build_s, CACHED_BUILD_MAX_S)
        self.assertLess(build_s, b["status"]["buildDurationMs"] / 1000.0)

        # a failing RUN: BuildFailed naming the step and its exit code
        bad = self.wait_build_of("bad", "bad:1", dockerfile=(
            "FROM %s\nRUN echo one\nRUN exit 7\nCMD [\"true\"]\n" % self.base),
            dockerfilePath=None)
        self.assertEqual(bad["status"]["phase"], "Failed", bad["status"])
        self.assertEqual(bad["status"]["reason"], "BuildFailed", bad["status"])
        self.assertEqual(bad["status"]["message"], "step 3/4 RUN exit 7: exit code 7")

    def wait_build_of(self, name, image, **spec):
        spec = {k: v for k, v in spec.items()}
        body = {"source": {"git": self.git, "revision": self.sha},
                "dockerfilePath": "Dockerfile", "image": image}
        body.update(spec)
        body = {k: v for k, v in body.items() if v is not None}
        if "dockerfile" in body:
            body.pop("source")
        st, out = self.g.request("POST", self.BUILDS, obj("ImageBuild", name, "proj-a",
                                                          spec=body), token="alice")
        self.assertEqual(st, 201, out)
        return self.wait_build(name)


if __name__ == "__main__":
    main()
