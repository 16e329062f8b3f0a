#!/usr/bin/env python3
"""API parts the web dashboard needs, there for every client: list paging
(limit/continue), whoami, clusterinfo, Kubeflow manifests POSTed as Jobs, and the
dashboard's files.

Checks: a list with limit gives pages in list order with metadata.continue
and remainingItemCount until the last page, which has neither; the pages
together are the whole list, each item once, also across projects and with
a label selector, for a member who sees one project only, and for a member
listing its own project (with and without selectors); bad limit and
continue values answer 400 naming the parameter; whoami answers the
caller's name, uid and groups (401 without a token); clusterinfo answers
any user the --storage-root and --image flags in flag order and no
replicas without --replica-url (401 without a
token, 405 for writes), and gantryd refuses to start with an --image that is
not NAME=REF or whose REF is no image reference, naming the flag; a PyTorchJob POSTed
to a project's jobs becomes a gantry Job in that project (its namespace
defaulting to the path's), and a manifest with a field gantry lacks is
refused with 422 naming it; `/` and `/assets/...`
are served from --ui-dir without a token, the HTML never cached, the
assets for a year; names outside assets/ and odd names are not found.
"""
import http.client
import os
import shutil
import subprocess
import tempfile
import urllib.parse

from gantry_e2e import API, GANTRYD, GantrydTest, job, main, seed_tenancy


def pages(g, path, limit, token="admin", extra=""):
    """Every page of a list; returns (items' keys, number of pages)."""
    keys, n, cont = [], 0, None
    while True:
        q = "limit=%d%s" % (limit, extra)
        if cont:
            q += "&continue=" + urllib.parse.quote(cont, safe="")
        st, body = g.request("GET", "%s?%s" % (path, q), token=token)
        assert st == 200, (st, body)
        n += 1
        items = body["items"]
        assert len(items) <= limit
        keys += ["%s/%s" % (i["metadata"].get("project", ""), i["metadata"]["name"]) for i in items]
        cont = body["metadata"].get("continue")
        left = body["metadata"].get("remainingItemCount")
        if not cont:
            assert left is None
            return keys, n
        assert left > 0 and len(items) == limit, body["metadata"]


class PagingTest(GantrydTest):
    def setUp(self):
        self.ui = tempfile.mkdtemp(prefix="gantry-ui-")
        os.makedirs(os.path.join(self.ui, "assets"))
        with open(os.path.join(self.ui, "index.html"), "w") as f:
            f.write("<!doctype html><title>gantry</title>")
        with open(os.path.join(self.ui, "assets", "app-ABC123.js"), "w") as f:
            f.write("console.log(1)")
        self.gantryd_args = ("--ui-dir", self.ui, "--storage-root", "/srv/data",
                             "--storage-root", "/scratch", "--image", "pytorch=pytorch/pytorch:2.3.1",
                             "--image", "tf=tensorflow/tensorflow:2.16.1-gpu")
        super().setUp()
        self.addCleanup(shutil.rmtree, self.ui, True)
        seed_tenancy(self.g)
        for p, n in (("proj-a", 23), ("proj-b", 7)):
            for i in range(n):
                j = job("j%03d" % i, p)
                j["metadata"]["labels"] = {"parity": "even" if i % 2 == 0 else "odd"}
                st, body = self.g.request("POST", "%s/projects/%s/jobs" % (API, p), j)
                self.assertEqual(st, 201, body)

    def test_pages_cover_the_list(self):
        for path, limit in (("%s/projects/proj-a/jobs" % API, 5), ("%s/jobs" % API, 4),
                            ("%s/jobs" % API, 30), ("%s/jobs" % API, 1)):
            st, whole = self.g.request("GET", path)
            want = ["%s/%s" % (i["metadata"]["project"], i["metadata"]["name"])
                    for i in whole["items"]]
            got, n = pages(self.g, path, limit)
            self.assertEqual(got, want, path)
            self.assertEqual(n, max(1, -(-len(want) // limit)), (path, limit))
        got, _ = pages(self.g, "%s/jobs" % API, 3, extra="&labelSelector=parity%3Deven")
        self.assertEqual(len(got), 12 + 4)
        # a member's list of its own project, plain and with selectors
        whole = ["proj-a/j%03d" % i for i in range(23)]
        self.assertEqual(pages(self.g, "%s/projects/proj-a/jobs" % API, 5, token="bob")[0], whole)
        got, _ = pages(self.g, "%s/projects/proj-a/jobs" % API, 5, token="bob",
                       extra="&labelSelector=parity%3Dodd&fieldSelector=metadata.project%3Dproj-a")
        self.assertEqual(got, whole[1::2])
        st, body = self.g.request("GET", "%s/projects/proj-a/jobs?limit=5" % API, token="dave")
        self.assertEqual(st, 403, body)
        got, _ = pages(self.g, "%s/jobs" % API, 3, token="dave")
        self.assertEqual(got, ["proj-b/j%03d" % i for i in range(7)])
        st, body = self.g.request("GET", "%s/projects/proj-a/jobs?limit=5" % API)
        self.assertEqual(body["metadata"]["continue"], "j004")
        self.assertEqual(body["metadata"]["remainingItemCount"], 18)

    def test_bad_parameters(self):
        for q, field in (("limit=-1", "limit"), ("limit=abc", "limit"),
                         ("limit=99999999999", "limit"), ("continue=" + "x" * 400, "continue")):
            st, body = self.g.request("GET", "%s/jobs?%s" % (API, q))
            self.assertEqual(st, 400, (q, body))
            self.assertTrue(body["message"].startswith(field + ":"), body)

    def test_whoami(self):
        st, body = self.g.request("GET", API + "/whoami", token="alice")
        self.assertEqual(st, 200, body)
        self.assertEqual((body["kind"], body["username"], body["uid"], body["groups"]),
                         ("UserInfo", "alice", 1001, ["ml"]))
        st, _ = self.g.request("GET", API + "/whoami", token=None)
        self.assertEqual(st, 401)

    def test_clusterinfo(self):
        st, body = self.g.request("GET", API + "/clusterinfo", token="carol")
        self.assertEqual(st, 200, body)
        self.assertEqual(body, {
            "apiVersion": "gantry.dev/v1", "kind": "ClusterInfo",
            "storageRoots": ["/srv/data", "/scratch"],
            "images": [{"name": "pytorch", "image": "pytorch/pytorch:2.3.1"},
                       {"name": "tf", "image": "tensorflow/tensorflow:2.16.1-gpu"}],
            "replicas": []})  # no --replica-url: one gantryd
        self.assertEqual(self.g.request("GET", API + "/clusterinfo", token=None)[0], 401)
        self.assertEqual(self.g.request("PUT", API + "/clusterinfo", {})[0], 405)

    def test_image_flag_refused(self):
        with tempfile.TemporaryDirectory() as d:
            for bad in ("pytorch", "=pytorch/pytorch", "pt=bad image", "pt=a//b"):
                p = subprocess.run([GANTRYD, "--data-dir", d, "--token-file", os.devnull,
                                    "--listen", "127.0.0.1:0", "--image", bad],
                                   capture_output=True, text=True, timeout=30)
                self.assertNotEqual(p.returncode, 0, bad)
                self.assertIn("--image " + bad + ":", p.stderr, bad)

    def test_kubeflow_post(self):
        tmpl = {"spec": {"containers": [{"name": "pytorch", "command": ["/bin/true"],
                                         "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
        pj = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
              "metadata": {"name": "pj"},
              "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": tmpl}}}}
        st, body = self.g.request("POST", API + "/projects/proj-a/jobs", pj)
        self.assertEqual(st, 201, body)
        self.assertEqual((body["kind"], body["metadata"]["project"]), ("Job", "proj-a"))
        self.assertEqual(body["metadata"]["annotations"]["gantry.dev/framework"], "pytorch")
        self.assertEqual(body["spec"]["replicaSpecs"]["Master"]["template"]["command"],
                         ["/bin/true"])
        pj["metadata"] = {"name": "pj2", "namespace": "proj-b"}
        st, body = self.g.request("POST", API + "/projects/proj-a/jobs", pj)
        self.assertEqual(st, 400, body)
        pj["metadata"] = {"name": "pj3"}
        pj["spec"]["elasticPolicy"] = {"minReplicas": 1}
        st, body = self.g.request("POST", API + "/projects/proj-a/jobs", pj)
        self.assertEqual(st, 422, body)
        self.assertIn("elasticPolicy", body["message"])

    def test_dashboard_files(self):
        st, hdrs, text = self._get("/")
        self.assertEqual(st, 200)
        self.assertIn("<title>gantry</title>", text)
        self.assertEqual(hdrs["cache-control"], "no-store")
        self.assertTrue(hdrs["content-type"].startswith("text/html"))
        st, hdrs, text = self._get("/assets/app-ABC123.js")
        self.assertEqual((st, text), (200, "console.log(1)"))
        self.assertIn("immutable", hdrs["cache-control"])
        self.assertTrue(hdrs["content-type"].startswith("text/javascript"))
        for bad in ("/assets/..", "/assets/.hidden", "/assets/a%2Fb", "/assets/missing.js",
                    "/tokens.csv", "/assets/"):
            st, _, _ = self._get(bad)
            self.assertEqual(st, 404, bad)

    def _get(self, path):
        c = http.client.HTTPConnection(self.g.host, self.g.port, timeout=10)
        c.request("GET", path)
        r = c.getresponse()
        data = r.read().decode(errors="replace")
        c.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data


class NoDashboardTest(GantrydTest):
    gantryd_args = ("--ui-dir", "/nonexistent-gantry-ui")

    def test_not_built(self):
        st, body = self.g.request("GET", "/", token=None)
        self.assertEqual(st, 404)
        self.assertIn("dashboard is not built", body["message"])


if __name__ == "__main__":
    main()
