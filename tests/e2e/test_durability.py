"""Durability: acknowledged writes survive SIGKILL; injected write and fsync
failures answer 503 and leave the object wholly present or absent."""
import os
import signal
import sqlite3
import subprocess
import time

from gantry_e2e import API, GantrydTest, Gantryd, SOURCE, job, main, obj


def everything(g):
    """Every stored object, keyed by kind/project/name -> resourceVersion."""
    out = {}
    for plural in ("departments", "projects", "priorityclasses", "nodes", "jobs", "tasks"):
        st, lst = g.request("GET", API + "/" + plural)
        assert st == 200, (plural, st, lst)
        for o in lst["items"]:
            md = o["metadata"]
            out[(o["kind"], md.get("project", ""), md["name"])] = md["resourceVersion"]
    return out


class Durability(GantrydTest):
    gantryd_args = ("--enable-fault-injection",)

    def apply_examples(self):
        ex = os.path.join(SOURCE, "examples")
        args = []
        for f in ("department.yaml", "project.yaml", "priorityclass.yaml", "job.yaml"):
            args += ["-f", os.path.join(ex, f)]
        p = self.g.cli("apply", *args)  # every -f is applied, in order
        for res in ("department.gantry.dev/vision", "project.gantry.dev/detection",
                    "priorityclass.gantry.dev/research-high", "priorityclass.gantry.dev/batch-low",
                    "job.gantry.dev/resnet-train"):
            self.assertIn(res + " created", p.stdout)

    def quiesced(self):
        """everything() once the controllers have stopped writing."""
        prev = everything(self.g)
        deadline = time.time() + 20
        while time.time() < deadline:
            time.sleep(0.5)
            cur = everything(self.g)
            if cur == prev:
                return cur
            prev = cur
        self.fail("controllers never settled")

    def test_sigkill_after_ack_keeps_everything(self):
        self.apply_examples()
        p = self.g.cli("get", "jobs", "-A")
        self.assertIn("resnet-train", p.stdout)
        self.assertIn("detection", p.stdout)
        before = self.quiesced()
        # one more write, acknowledged, then SIGKILL at once
        st, created = self.g.request("POST", API + "/departments", obj("Department", "last-write"))
        self.assertEqual(st, 201, created)
        self.g.kill(signal.SIGKILL)
        before[("Department", "", "last-write")] = created["metadata"]["resourceVersion"]
        self.g.start()
        self.assertEqual(self.quiesced(), before)
        # the applied Job keeps its spec, its creator and its Created condition
        st, j = self.g.request("GET", API + "/projects/detection/jobs/resnet-train")
        self.assertEqual(st, 200)
        self.assertEqual(j["spec"]["replicaSpecs"]["Worker"]["replicas"], 2)
        self.assertEqual(j["status"]["conditions"][0]["type"], "Created")
        self.assertEqual(j["metadata"]["creator"]["user"], "root-admin")

    def test_many_concurrent_acked_writes_survive_sigkill(self):
        self.g.request("POST", API + "/departments", obj("Department", "d"))
        self.g.request("POST", API + "/projects", obj("Project", "p", spec={"department": "d"}))
        # 40 clients write in parallel; every one acknowledged must survive
        script = ("import sys,json,http.client\n"
                  "c=http.client.HTTPConnection('127.0.0.1',%d)\n"
                  "b=json.dumps({'apiVersion':'gantry.dev/v1','kind':'Job','metadata':"
                  "{'name':sys.argv[1],'project':'p'},'spec':{'replicaSpecs':{'Worker':"
                  "{'template':{'command':['true']}}}}})\n"
                  "c.request('POST','/apis/gantry.dev/v1/projects/p/jobs',b,"
                  "{'Authorization':'Bearer admin-token'})\n"
                  "r=c.getresponse(); r.read(); print(r.status)\n") % self.g.port
        procs = [subprocess.Popen(["/usr/bin/python3", "-c", script, "j%d" % i],
                                  stdout=subprocess.PIPE, text=True) for i in range(40)]
        acked = [i for i, p in enumerate(procs) if p.communicate()[0].strip() == "201"]
        self.assertEqual(len(acked), 40)
        self.g.kill(signal.SIGKILL)
        self.g.start()
        st, lst = self.g.request("GET", API + "/projects/p/jobs")
        names = {o["metadata"]["name"] for o in lst["items"]}
        self.assertEqual(names, {"j%d" % i for i in acked})

    def test_write_fault_answers_503_and_leaves_nothing(self):
        self.g.request("POST", API + "/departments", obj("Department", "d"))
        st, _ = self.g.request("POST", "/debug/fault?point=write&nth=1")
        self.assertEqual(st, 200)
        st, body = self.g.request("POST", API + "/departments", obj("Department", "broken"))
        self.assertEqual(st, 503, body)
        self.assertEqual(body["reason"], "ServiceUnavailable")
        st, _ = self.g.request("GET", API + "/departments/broken")
        self.assertEqual(st, 404)
        # the server keeps serving and writing
        st, _ = self.g.request("POST", API + "/departments", obj("Department", "after"))
        self.assertEqual(st, 201)
        self.g.kill(signal.SIGKILL)
        self.g.start()
        self.assertEqual(self.g.request("GET", API + "/departments/broken")[0], 404)
        self.assertEqual(self.g.request("GET", API + "/departments/after")[0], 200)

    def test_fsync_fault_stops_writes_and_exits(self):
        self.g.request("POST", API + "/departments", obj("Department", "d"))
        st, _ = self.g.request("POST", "/debug/fault?point=fsync&nth=1")
        self.assertEqual(st, 200)
        st, body = self.g.request("POST", API + "/departments", obj("Department", "maybe"))
        self.assertEqual(st, 503, body)
        # no further writes are accepted, and gantryd exits on its own
        try:
            st2, _ = self.g.request("POST", API + "/departments", obj("Department", "later"),
                                    timeout=5)
            self.assertEqual(st2, 503)
        except OSError:
            pass
        self.g.proc.wait(timeout=20)
        self.assertNotEqual(self.g.proc.returncode, 0)
        self.g.log.close()
        db = os.path.join(self.g.data_dir, "gantry.db")
        con = sqlite3.connect(db)
        self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        con.close()
        self.g.start()
        st, got = self.g.request("GET", API + "/departments/maybe")
        self.assertIn(st, (200, 404))
        if st == 200:  # wholly present: a complete, valid object
            self.assertEqual(got["kind"], "Department")
            self.assertTrue(got["metadata"]["uid"])
        self.assertEqual(self.g.request("GET", API + "/departments/later")[0], 404)
        self.assertEqual(self.g.request("GET", API + "/departments/d")[0], 200)
        st, _ = self.g.request("POST", API + "/departments", obj("Department", "again"))
        self.assertEqual(st, 201)


if __name__ == "__main__":
    main()
