#!/usr/bin/env python3
"""Two gantryd replicas on one etcd: one leads (scheduler and controllers),
both serve the API; killing the leader hands over to the other, and a
leader deposed while paused stops instead of writing.

A one-member etcd on loopback, gantryd --leader-lease-ttl 2
--leader-renew-interval 250 (node grace 4 s), one gantlet that talks to the
replica that stays up. Checks: /readyz says leader on one and follower on
the other (200 both), /metrics has gantry_is_leader, the leadership
counter and gantry_store_request_seconds by op; a job created through the
follower is scheduled by the leader and succeeds; after SIGKILL of the
leader the follower is leader within the lease arithmetic (printed), its
node is not declared lost, and a new job succeeds; a leader SIGSTOPped past
its lease is replaced, and when continued it exits 1 (it never writes as
leader again) while the new leader keeps scheduling. Reads come from each
replica's watch-fed cache (no store get), with read-your-writes and
resourceVersion as test_reads_from_the_cache says. Exits 77 where no etcd
is installed (Debian: etcd-server).
"""
import re
import signal
import sys
import time

from gantry_e2e import API, Etcd, Gantlet, Gantryd, free_port, main, obj, wait_for
import unittest

TTL_S, RENEW_MS, GRACE_S = 2, 250, 4
PROJECT = API + "/projects/proj-a"


def readyz(g):
    try:
        st, body = g.request("GET", "/readyz", token=None, timeout=2)
    except OSError:
        return None, None
    return st, (body or {}).get("status") if isinstance(body, dict) else None


class Replicas:
    """Several gantryd as a client sees them: url is the comma list."""

    def __init__(self, *gs):
        self.gs = gs
        self.url = ",".join(g.url for g in gs)

    def request(self, *args, **kw):
        for g in self.gs:
            if g.proc.poll() is None:
                return g.request(*args, **kw)
        raise OSError("no replica is up")


class TwoReplicas(unittest.TestCase):
    def setUp(self):
        self.etcd = Etcd().start()
        self.addCleanup(self.etcd.cleanup)
        lo = 20000 + (free_port() % 120) * 100
        self.args = ("--store", self.etcd.store, "--leader-lease-ttl", str(TTL_S),
                     "--leader-renew-interval", str(RENEW_MS), "--node-grace", str(GRACE_S),
                     "--port-range", "%d-%d" % (lo, lo + 99))
        self.g1 = self.replica("r1")
        wait_for("r1 leads", lambda: readyz(self.g1) == (200, "leader"), timeout=15)
        self.g2 = self.replica("r2")
        wait_for("r2 follows", lambda: readyz(self.g2) == (200, "follower"), timeout=15)

    def replica(self, name):
        g = Gantryd(self.args + ("--replica-id", name)).start()
        self.addCleanup(g.cleanup)
        return g

    def seed(self, g):
        st, body = g.request("POST", API + "/departments", obj(
            "Department", "dept-a", spec={"quota": {"nvidia.com/gpu": 8, "cpu": "100",
                                                    "memory": "100Gi"}}))
        self.assertEqual(st, 201, body)
        st, body = g.request("POST", API + "/projects", obj(
            "Project", "proj-a", spec={"department": "dept-a",
                                       "members": [{"user": "alice", "role": "admin"}]}))
        self.assertEqual(st, 201, body)

    def submit(self, g, name):
        tmpl = {"command": ["sh", "-c", "echo %s" % name],
                "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "1", "memory": "64Mi"}}}
        st, body = g.request("POST", PROJECT + "/jobs", obj(
            "Job", name, "proj-a",
            spec={"replicaSpecs": {"Worker": {"replicas": 1, "template": tmpl}}}), token="alice")
        self.assertEqual(st, 201, body)

    def job_phase(self, g, name):
        """The phase of the job's one task."""
        st, body = g.request("GET", PROJECT + "/tasks/%s-worker-0" % name)
        return ((body or {}).get("status") or {}).get("phase") if st == 200 else None

    def wait_succeeded(self, g, name, timeout=40):
        wait_for("job %s's task Succeeded (now %s)" % (name, self.job_phase(g, name)),
                 lambda: self.job_phase(g, name) in ("Succeeded", "Failed"), timeout=timeout)
        self.assertEqual(self.job_phase(g, name), "Succeeded")

    def node_ready(self, g):
        st, body = g.request("GET", API + "/nodes/n1")
        conds = ((body or {}).get("status") or {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)

    def metric(self, g, name):
        st, text = g.request("GET", "/metrics", token=None, raw=True)
        self.assertEqual(st, 200)
        m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
        return float(m.group(1)) if m else None, text

    def test_failover(self):
        self.seed(self.g2)  # a follower takes writes itself
        # the agent knows both replicas (r2 first) and moves on by itself
        both = Replicas(self.g2, self.g1)
        agent = Gantlet(both, name="n1", fake_gpus="2xA100-80GB")
        self.addCleanup(agent.cleanup)
        agent.start()

        is_leader, text = self.metric(self.g1, "gantry_is_leader")
        self.assertEqual(is_leader, 1)
        self.assertEqual(self.metric(self.g2, "gantry_is_leader")[0], 0)
        self.assertEqual(self.metric(self.g1, "gantry_leader_changes_total")[0], 1)
        self.assertIn('gantry_store_request_seconds_bucket{op="create",le="+Inf"}', text)
        self.assertIn('gantry_store_request_seconds_count{op="get"}', text)

        # written through the follower, scheduled by the leader
        self.submit(self.g2, "one")
        self.wait_succeeded(self.g2, "one")

        # SIGKILL the leader: the follower takes over within ttl + 0.5 s + renew
        t0 = time.time()
        self.g1.kill()
        wait_for("r2 leads", lambda: readyz(self.g2) == (200, "leader"), timeout=15)
        took = time.time() - t0
        print("failover: leader SIGKILL -> r2 leader in %.0f ms" % (took * 1000), flush=True)
        self.assertLess(took, TTL_S + 0.5 + RENEW_MS / 1000.0 + 2.0)
        self.submit(self.g2, "two")
        self.wait_succeeded(self.g2, "two")
        # the takeover gave the node its grace: never lost
        self.assertTrue(self.node_ready(self.g2))

        # the old leader comes back as a follower
        self.g1.start()
        wait_for("r1 follows", lambda: readyz(self.g1) == (200, "follower"), timeout=15)

        # a leader paused past its lease is replaced; continued, it exits
        # (lease expired or a guarded write refused) and writes nothing
        self.g2.proc.send_signal(signal.SIGSTOP)
        t0 = time.time()
        wait_for("r1 leads", lambda: readyz(self.g1) == (200, "leader"), timeout=15)
        print("failover: leader SIGSTOP -> r1 leader in %.0f ms" % ((time.time() - t0) * 1000),
              flush=True)
        self.g2.proc.send_signal(signal.SIGCONT)
        wait_for("the deposed r2 exits", lambda: self.g2.proc.poll() is not None, timeout=15)
        self.assertEqual(self.g2.proc.returncode, 1)
        log = self.g2.logs()
        self.assertTrue("leadership lost" in log or "guarded write was refused" in log, log)
        self.g2.log.close()

        # the agent's server went away with r2: it moved on to r1 itself; the
        # CLI given both (the dead one first) does the same
        self.submit(self.g1, "three")
        self.wait_succeeded(self.g1, "three")
        out = self.g1.cli("--server", both.url, "get", "tasks", "-p", "proj-a").stdout
        self.assertIn("three-worker-0", out)
        for name in ("one", "two", "three"):
            st, body = self.g1.request("GET", PROJECT + "/tasks/%s-worker-0" % name)
            self.assertEqual(st, 200, body)
            self.assertEqual(body["status"].get("restarts", 0), 0, body)

    def store_gets(self, g):
        return self.metric(g, 'gantry_store_request_seconds_count{op="get"}')[0] or 0

    def test_reads_from_the_cache(self):
        """Every replica answers get and list from its watch-fed cache: a
        client reads its own writes through the replica that acknowledged
        them, resourceVersion=N waits for N (or 504 past the store's
        revision), resourceVersion=0 answers what the cache has."""
        self.seed(self.g1)
        dept = API + "/departments/"
        gets_before = self.store_gets(self.g2)
        for i in range(30):
            # through the follower: the create, then at once its get and list
            name = "own-%d" % i
            st, body = self.g2.request("POST", API + "/departments", obj("Department", name))
            self.assertEqual(st, 201, body)
            rv = body["metadata"]["resourceVersion"]
            st, got = self.g2.request("GET", dept + name)
            self.assertEqual((st, got["metadata"]["resourceVersion"]), (200, rv), got)
            st, lst = self.g2.request("GET", API + "/departments")
            self.assertEqual(st, 200, lst)
            self.assertIn(name, [d["metadata"]["name"] for d in lst["items"]])
            self.assertGreaterEqual(int(lst["metadata"]["resourceVersion"]), int(rv))
            # an update through the leader, read through the follower not
            # older than the update's revision
            got["metadata"].setdefault("labels", {})["round"] = str(i)
            st, upd = self.g1.request("PUT", dept + name, got)
            self.assertEqual(st, 200, upd)
            rv2 = upd["metadata"]["resourceVersion"]
            st, seen = self.g2.request("GET", dept + name + "?resourceVersion=" + rv2)
            self.assertEqual(st, 200, seen)
            self.assertEqual(seen["metadata"]["labels"], {"round": str(i)})
            # a create refused (409) on one replica, read there at once
            st, body = self.g1.request("POST", API + "/departments", obj("Department", "x%d" % i))
            self.assertEqual(st, 201, body)
            st, body = self.g2.request("POST", API + "/departments", obj("Department", "x%d" % i))
            self.assertEqual(st, 409, body)
            st, body = self.g2.request("GET", dept + "x%d" % i)
            self.assertEqual(st, 200, body)
        # none of those reads went to etcd
        self.assertEqual(self.store_gets(self.g2), gets_before)
        print("reads that waited for r2's cache: %d" % self.metric(
            self.g2, "gantry_read_waits_total")[0], flush=True)
        self.assertEqual(self.metric(self.g2, "gantry_read_wait_timeouts_total")[0], 0)
        st, body = self.g2.request("GET", dept + "own-0?resourceVersion=0")
        self.assertEqual(st, 200, body)
        st, body = self.g2.request("GET", dept + "own-0?resourceVersion=soon")
        self.assertEqual(st, 400, body)
        self.assertIn("resourceVersion", body["message"])
        # a revision the store has not reached: a bounded wait, then 504
        st, body = self.g2.request("GET", API + "/departments?resourceVersion=99999999")
        self.assertEqual(st, 504, body)
        self.assertEqual(body["reason"], "Timeout")
        self.assertIn("Too large resource version", body["message"])
        self.assertEqual(self.metric(self.g2, "gantry_read_wait_timeouts_total")[0], 1)
        # a deleted object is gone from every replica's cache
        st, body = self.g1.request("DELETE", dept + "x0")
        self.assertIn(st, (200, 202), body)
        wait_for("x0 gone on r2", lambda: self.g2.request("GET", dept + "x0")[0] == 404)
        st, body = self.g1.request("GET", dept + "x0")
        self.assertEqual(st, 404, body)


if __name__ == "__main__":
    if not Etcd.available():
        print("test_ha: no etcd on PATH (Debian: etcd-server); skipped", file=sys.stderr)
        sys.exit(77)
    main()
