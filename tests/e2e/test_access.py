"""Access: no token is 401; a member of project A gets 403 on every verb
against project B and sees only A across projects; a viewer cannot write."""
import os

from gantry_e2e import API, GantrydTest, job, main, obj, seed_tenancy

A = API + "/projects/proj-a"
B = API + "/projects/proj-b"


class Access(GantrydTest):
    def setUp(self):
        super().setUp()
        seed_tenancy(self.g)
        for p in ("proj-a", "proj-b"):
            st, body = self.g.request("POST", API + "/projects/%s/jobs" % p, job("train", p))
            self.assertEqual(st, 201, body)

    def test_no_or_bad_token_is_401(self):
        for path in (A + "/jobs", A + "/jobs/train", API + "/nodes", API + "/departments"):
            self.assertEqual(self.g.request("GET", path, token=None)[0], 401, path)
            self.assertEqual(self.g.request("GET", path, token="forged-token")[0], 401, path)
        st, body = self.g.request("POST", A + "/jobs", job("x", "proj-a"), token=None)
        self.assertEqual(st, 401)
        self.assertEqual(body["reason"], "Unauthorized")
        self.assertEqual(self.g.request("GET", "/healthz", token=None, raw=True)[0], 200)

    def test_member_of_a_is_forbidden_everything_in_b(self):
        for who in ("bob", "alice", "carol"):
            reqs = [
                ("GET", B + "/jobs", None),
                ("GET", B + "/jobs/train", None),
                ("GET", B + "/jobs?watch=true&resourceVersion=0", None),
                ("GET", B + "/tasks", None),
                ("POST", B + "/jobs", job("sneaky", "proj-b")),
                ("PUT", B + "/jobs/train", job("train", "proj-b")),
                ("DELETE", B + "/jobs/train", None),
                ("PUT", B + "/jobs/train/status", {"conditions": []}),
                ("GET", API + "/projects/proj-b", None),
                ("PUT", API + "/projects/proj-b",
                 obj("Project", "proj-b", spec={"department": "dept-a"})),
                ("DELETE", API + "/projects/proj-b", None),
            ]
            for method, path, body in reqs:
                st, resp = self.g.request(method, path, body, token=who)
                self.assertEqual(st, 403, "%s %s %s -> %s %s" % (who, method, path, st, resp))
        # nothing in B changed
        st, j = self.g.request("GET", B + "/jobs/train")
        self.assertEqual(st, 200)
        self.assertEqual(self.g.request("GET", B + "/jobs/sneaky")[0], 404)

    def test_all_projects_list_shows_only_own(self):
        st, lst = self.g.request("GET", API + "/jobs", token="bob")
        self.assertEqual(st, 200)
        self.assertEqual({o["metadata"]["project"] for o in lst["items"]}, {"proj-a"})
        p = self.g.cli("get", "jobs", "-A", token="bob")
        self.assertIn("proj-a", p.stdout)
        self.assertNotIn("proj-b", p.stdout)
        st, lst = self.g.request("GET", API + "/jobs", token="admin")
        self.assertEqual({o["metadata"]["project"] for o in lst["items"]}, {"proj-a", "proj-b"})
        st, lst = self.g.request("GET", API + "/jobs", token="nobody")
        self.assertEqual((st, lst["items"]), (200, []))
        # projects: a member sees its own project only
        st, lst = self.g.request("GET", API + "/projects", token="dave")
        self.assertEqual([o["metadata"]["name"] for o in lst["items"]], ["proj-b"])

    def test_viewer_reads_but_cannot_write(self):
        self.assertEqual(self.g.request("GET", A + "/jobs/train", token="carol")[0], 200)
        self.assertEqual(self.g.request("GET", A + "/jobs", token="carol")[0], 200)
        self.assertEqual(self.g.request("POST", A + "/jobs", job("v", "proj-a"), token="carol")[0], 403)
        self.assertEqual(self.g.request("PUT", A + "/jobs/train", job("train", "proj-a"),
                                        token="carol")[0], 403)
        self.assertEqual(self.g.request("DELETE", A + "/jobs/train", token="carol")[0], 403)
        p = self.g.cli("delete", "job", "train", "-p", "proj-a", token="carol", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("error:", p.stderr + p.stdout)

    def test_member_writes_own_project_and_creator_is_recorded(self):
        st, j = self.g.request("POST", A + "/jobs", job("mine", "proj-a"), token="bob")
        self.assertEqual(st, 201, j)
        self.assertEqual(j["metadata"]["creator"], {"user": "bob", "uid": 1002})
        # creator cannot be forged or changed (retry on 409: the job
        # controller writes the job's status concurrently)
        for _ in range(10):
            st, j = self.g.request("GET", A + "/jobs/mine", token="bob")
            j["metadata"]["creator"] = {"user": "mallory", "uid": 0}
            st, resp = self.g.request("PUT", A + "/jobs/mine", j, token="bob")
            if st != 409:
                break
        if st == 200:
            self.assertEqual(resp["metadata"]["creator"], {"user": "bob", "uid": 1002})
        else:
            self.assertEqual(st, 422, resp)
        # a member may not change its project or department, nor make nodes
        self.assertEqual(self.g.request("PUT", API + "/projects/proj-a", obj(
            "Project", "proj-a", spec={"department": "dept-a", "allowPrivileged": True}),
            token="bob")[0], 403)
        self.assertEqual(self.g.request("POST", API + "/nodes", obj("Node", "n9"), token="bob")[0], 403)
        self.assertEqual(self.g.request("POST", API + "/departments", obj("Department", "x"),
                                        token="bob")[0], 403)

    def test_department_admin_manages_its_projects_only(self):
        self.assertEqual(self.g.request("GET", B + "/jobs/train", token="erin")[0], 200)
        self.assertEqual(self.g.request("POST", B + "/jobs", job("e", "proj-b"), token="erin")[0], 201)
        self.assertEqual(self.g.request("GET", A + "/jobs/train", token="erin")[0], 403)

    def test_project_defaults_to_unprivileged(self):
        st, p = self.g.request("GET", API + "/projects/proj-a")
        self.assertEqual(st, 200)
        self.assertIs(p["spec"]["allowPrivileged"], False)


if __name__ == "__main__":
    main()
