"""Watch: a client watching Jobs from revision N receives every later change,
in order; a start point older than the kept history answers 410."""
import http.client
import json
import os
import subprocess
import threading
import time

from gantry_e2e import API, GANTRY, TOKENS, GantrydTest, job, main, seed_tenancy

J = API + "/projects/proj-a/jobs"


class Stream:
    """An open watch stream; yields decoded events."""

    def __init__(self, g, path, token="admin"):
        self.conn = http.client.HTTPConnection("127.0.0.1", g.port, timeout=10)
        self.conn.request("GET", path, headers={"Authorization": "Bearer " + TOKENS[token][0]})
        self.resp = self.conn.getresponse()
        self.status = self.resp.status

    def next(self):
        line = self.resp.readline()
        if not line:
            return None
        return json.loads(line)

    def close(self):
        self.conn.close()


class Watch(GantrydTest):
    gantryd_args = ("--watch-history", "50")

    def test_every_change_after_n_in_order(self):
        seed_tenancy(self.g)
        st, lst = self.g.request("GET", J)
        n = int(lst["metadata"]["resourceVersion"])
        # changes made before the watch starts, after revision n
        expect = []
        for i in range(5):
            st, o = self.g.request("POST", J, job("j%d" % i, "proj-a"))
            self.assertEqual(st, 201)
            expect.append(("ADDED", "j%d" % i, o["metadata"]["resourceVersion"]))
        s = Stream(self.g, J + "?watch=true&resourceVersion=%d" % n)
        self.assertEqual(s.status, 200)
        # and changes made while it runs
        for _ in range(10):  # the job controller writes j1's status concurrently
            st, o = self.g.request("GET", J + "/j1")
            o["metadata"]["labels"] = {"phase": "two"}
            st, o = self.g.request("PUT", J + "/j1", o)
            if st != 409:
                break
        self.assertEqual(st, 200, o)
        expect.append(("MODIFIED", "j1", o["metadata"]["resourceVersion"]))
        st, o = self.g.request("DELETE", J + "/j3")
        self.assertEqual(st, 200, o)
        deadline = time.time() + 10  # the job goes once its tasks are gone
        while self.g.request("GET", J + "/j3")[0] != 404 and time.time() < deadline:
            time.sleep(0.05)
        st, o = self.g.request("POST", J, job("j9", "proj-a"))
        expect.append(("DELETED", "j3", None))
        expect.append(("ADDED", "j9", o["metadata"]["resourceVersion"]))
        # the job controller's own writes (status, deletion) are changes too:
        # every event must arrive in revision order, and ours among them in order
        got, ours = [], []
        while len(ours) < len(expect):
            ev = s.next()
            self.assertIsNotNone(ev)
            md = ev["object"]["metadata"]
            got.append(int(md["resourceVersion"]))
            mine = ev["type"] in ("ADDED", "DELETED") or md.get("labels") == {"phase": "two"}
            if mine and not (ev["type"] == "MODIFIED" and
                             (md["name"], "MODIFIED") in [(o[1], o[0]) for o in ours]):
                ours.append((ev["type"], md["name"], md["resourceVersion"]))
        s.close()
        self.assertEqual([o[:2] for o in ours], [e[:2] for e in expect])
        for o, e in zip(ours, expect):
            if e[2] is not None:
                self.assertEqual(o[2], e[2])
        self.assertEqual(got, sorted(set(got)))
        self.assertTrue(all(r > n for r in got))

    def test_selector_and_access_filter_the_stream(self):
        seed_tenancy(self.g)
        st, lst = self.g.request("GET", API + "/jobs")
        n = lst["metadata"]["resourceVersion"]
        s = Stream(self.g, API + "/jobs?watch=true&resourceVersion=%s&labelSelector=keep%%3Dyes" % n,
                   token="bob")
        self.assertEqual(s.status, 200)
        for p, name, keep in (("proj-b", "other", "yes"), ("proj-a", "drop", "no"),
                              ("proj-a", "mine", "yes")):
            o = job(name, p)
            o["metadata"]["labels"] = {"keep": keep}
            self.assertEqual(self.g.request("POST", API + "/projects/%s/jobs" % p, o)[0], 201)
        ev = s.next()
        self.assertEqual((ev["type"], ev["object"]["metadata"]["name"]), ("ADDED", "mine"))
        s.close()

    def test_compacted_start_point_is_410(self):
        seed_tenancy(self.g)
        for i in range(60):
            self.assertEqual(self.g.request("POST", J, job("c%d" % i, "proj-a"))[0], 201)
        st, body = self.g.request("GET", J + "?watch=true&resourceVersion=1")
        self.assertEqual(st, 410, body)
        self.assertEqual(body["code"], 410)
        # a recent start point still works
        st, c57 = self.g.request("GET", J + "/c57")
        rv = int(c57["metadata"]["resourceVersion"])
        s = Stream(self.g, J + "?watch=true&resourceVersion=%d" % (rv - 1))
        self.assertEqual(s.status, 200)
        self.assertEqual(s.next()["object"]["metadata"]["name"], "c57")
        s.close()

    def test_cli_get_watch_prints_changes(self):
        seed_tenancy(self.g)
        env = dict(os.environ, GANTRY_CONFIG=os.path.join(self.g.tmp, "no-config"))
        p = subprocess.Popen([GANTRY, "--server", self.g.url,
                              "--token", TOKENS["admin"][0], "get", "jobs", "-p", "proj-a", "--watch"],
                             stdout=subprocess.PIPE, text=True, env=env)
        time.sleep(0.5)
        self.assertEqual(self.g.request("POST", J, job("watched", "proj-a"))[0], 201)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(iter(p.stdout.readline, "")),
                                  daemon=True)
        reader.start()
        deadline = time.time() + 10
        while time.time() < deadline and not any("watched" in ln for ln in lines):
            time.sleep(0.1)
        p.terminate()
        p.wait(timeout=10)
        seen = "".join(lines)
        self.assertIn("watched", seen)


if __name__ == "__main__":
    main()
