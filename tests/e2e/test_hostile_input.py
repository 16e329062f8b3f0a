"""Hostile strings in the fields that reach the agent or a tool it runs (git,
the image puller, mount): refused at apply with 422 naming the field, or
passed as data and never interpreted. One test per field."""
import os
import shutil
import tempfile

from gantry_e2e import API, AgentTest, GantrydTest, job, main, obj, seed_tenancy
from test_bad_input import with_ as with_path

J = API + "/projects/proj-a/jobs"
B = API + "/projects/proj-a/imagebuilds"
TEMPLATE = "spec.replicaSpecs.Worker.template"
# shell and option syntax: none of these may run anything
SHELLISH = ["$(touch /tmp/gantry-pwned)", "`id`", "a;id", "a|id", "a&&id", "a\nid", "'", "\""]


class RefusedAtApply(GantrydTest):
    def setUp(self):
        # hostPath volumes beneath a storage root, so that only the path
        # itself can be what is refused
        self.root = tempfile.mkdtemp(prefix="gantry-hostile-root-")
        self.addCleanup(shutil.rmtree, self.root, True)
        os.makedirs(os.path.join(self.root, "data"))
        self.gantryd_args = ("--storage-root", self.root)
        super().setUp()
        seed_tenancy(self.g)

    def refused(self, url, body, field, values):
        """Each value at field is 422 naming the field, and nothing is stored."""
        for v in values:
            st, resp = self.g.request("POST", url, body(v))
            self.assertEqual(st, 422, (field, v, resp))
            self.assertEqual(resp["details"]["field"], field, (v, resp))
            self.assertIn(field + ":", resp["message"])
        st, lst = self.g.request("GET", url)
        self.assertEqual(lst["items"], [], [o["metadata"]["name"] for o in lst["items"]])

    def test_names(self):
        self.refused(J, lambda v: job(v, "proj-a"), "metadata.name",
                     SHELLISH + ["../etc", "-rf", "a/b", ".", "x" * 64, "A"])

    def test_git_url(self):
        self.refused(J, lambda v: with_path(job("j", "proj-a"), "spec.source", {"git": v}),
                     "spec.source.git",
                     ["--upload-pack=touch /tmp/gantry-pwned", "-c", "ext::sh -c touch% /tmp/x",
                      "fd::3", "a@-oProxyCommand=touch /tmp/x:repo",
                      "ssh://-oProxyCommand=touch%20x/repo", "user@-host:repo",
                      "https://h/x y", "https://h/x\n"])

    def test_git_revision(self):
        self.refused(J, lambda v: with_path(job("j", "proj-a"), "spec.source",
                                            {"git": "https://example.com/r.git", "revision": v}),
                     "spec.source.revision",
                     ["--upload-pack=touch /tmp/gantry-pwned", "-c", "--output=/etc/passwd",
                      "main; id", "main id", "main\n", ""])

    def test_imagebuild_git_url_and_revision(self):
        def build(src):
            return obj("ImageBuild", "b", "proj-a", spec={"source": src, "image": "b:1"})
        self.refused(B, lambda v: build({"git": v}), "spec.source.git",
                     ["--upload-pack=touch /tmp/x", "ext::sh -c id", "a@-oProxyCommand=id:r"])
        self.refused(B, lambda v: build({"git": "https://example.com/r.git", "revision": v}),
                     "spec.source.revision", ["--upload-pack=touch /tmp/x", "-q", "a b"])

    def test_image_reference(self):
        self.refused(J, lambda v: with_path(job("j", "proj-a"), TEMPLATE + ".image", v),
                     TEMPLATE + ".image",
                     SHELLISH + ["--privileged", "-v", "alpine latest", "a//b", "a@b@c", ""])

    def test_host_path(self):
        def vol(v):
            return with_path(job("j", "proj-a"), "spec.volumes", [{"name": "d", "hostPath": v}])
        r = self.root
        self.refused(J, vol, "spec.volumes[0].hostPath",
                     [r + "/../etc", r + "/data/..", r + "/data/../../..", "../etc", "relative",
                      r + "/./../", "/etc"])
        st, body = self.g.request("POST", J, vol(r + "/data"))
        self.assertEqual(st, 201, body)  # the same beneath the root is accepted

    def test_mount_path(self):
        def mount(v):
            j = with_path(job("j", "proj-a"), "spec.volumes",
                          [{"name": "d", "hostPath": self.root + "/data"}])
            return with_path(j, TEMPLATE + ".volumeMounts", [{"name": "d", "mountPath": v}])
        self.refused(J, mount, TEMPLATE + ".volumeMounts[0].mountPath",
                     ["relative", "../etc", "", "/data/../../etc", "/.."])

    def test_env_name(self):
        self.refused(J, lambda v: with_path(job("j", "proj-a"), TEMPLATE + ".env",
                                            [{"name": v, "value": "x"}]),
                     TEMPLATE + ".env[0].name", ["A=B", "A B", "$(id)", "", "LD_PRELOAD\n"])


class PassedAsData(AgentTest):
    """command, args and env values reach the task byte for byte, as argv
    and environment entries: nothing runs them through a shell."""

    def test_command_args_and_env_are_data(self):
        tmp = tempfile.mkdtemp(prefix="gantry-hostile-")
        self.addCleanup(shutil.rmtree, tmp, True)
        mark = os.path.join(tmp, "pwned")
        hostile = ["$(touch %s)" % mark, "`touch %s`" % mark, "a;touch %s" % mark,
                   "a|touch %s" % mark, "--help", "-e", "'\"\\", "%s%n%x"]
        self.gantlet()
        tmpl = {"command": ["/usr/bin/printf", "<%s>\\n"], "args": hostile,
                "env": [{"name": "HOSTILE", "value": "$(touch %s)" % mark}],
                "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "1", "memory": "256Mi"}}}
        st, body = self.g.request("POST", self.PROJECT + "/jobs", obj(
            "Job", "data", "proj-a", spec={"replicaSpecs": {"Worker": {
                "replicas": 1, "restartPolicy": "Never", "template": tmpl}}}), token="alice")
        self.assertEqual(st, 201, body)
        self.wait_phase("data-worker-0", ("Succeeded", "Failed"), timeout=60)
        self.assertEqual(self.phase("data-worker-0"), "Succeeded", self.task("data-worker-0"))
        out = self.g.cli("logs", "data", "-p", "proj-a").stdout
        self.assertEqual([l for l in out.splitlines() if l.startswith("<")],
                         ["<%s>" % h for h in hostile], out)
        tmpl["command"] = ["/usr/bin/env"]
        tmpl.pop("args")
        st, body = self.g.request("POST", self.PROJECT + "/jobs", obj(
            "Job", "env", "proj-a", spec={"replicaSpecs": {"Worker": {
                "replicas": 1, "restartPolicy": "Never", "template": tmpl}}}), token="alice")
        self.assertEqual(st, 201, body)
        self.wait_phase("env-worker-0", ("Succeeded", "Failed"), timeout=60)
        out = self.g.cli("logs", "env", "-p", "proj-a").stdout
        self.assertIn("HOSTILE=$(touch %s)" % mark, out.splitlines())
        self.assertFalse(os.path.exists(mark), "a hostile string was run")


if __name__ == "__main__":
    main()
