#!/usr/bin/env python3
"""Task isolation on a real gantlet (fake GPUs): limits and namespaces hold.

- A task that allocates past its memory limit ends Failed, reason
  OOMKilled, exit code 137.
- A task whose children ignore SIGTERM is fully gone after `gantry delete
  job`: once the Task object disappears, every process that was in its
  cgroup is dead and the cgroup is removed.
- Two tasks running as the same uid: from inside one, `kill -0` of the
  other's host PID fails (PID namespaces), although the same uid outside
  any namespace may signal it.
"""
import os
import signal
import time

from gantry_e2e import AgentTest, Watch, cgroup_pids, main, pid_alive, task_cgroups, wait_for

ALICE_UID = 1001


def proc_uid(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Uid:"):
                return int(line.split()[1])
    return None


class Isolation(AgentTest):
    def setUp(self):
        super().setUp()
        self.agent = self.gantlet(fake_gpus="2xA100-80GB")

    def log_of(self, task):
        st, body = self.g.request("GET", self.PROJECT + "/tasks/%s/log" % task, raw=True)
        self.assertEqual(st, 200, body)
        return body

    def test_memory_limit_oom_killed(self):
        t = self.submit("oom", ["python3", "-c", "b = b'x' * (200 << 20); print(len(b))"],
                        gpus=0, memory="64Mi")
        task = self.wait_phase(t, ("Succeeded", "Failed"), timeout=30)
        st = task["status"]
        self.assertEqual(st["phase"], "Failed", st)
        self.assertEqual(st["reason"], "OOMKilled", st)
        self.assertEqual(st["exitCode"], 137, st)
        # the cgroup goes with the recorded exit
        wait_for("oom task cgroup removed", lambda: not task_cgroups(task["metadata"]["uid"]))

    def test_delete_kills_children_ignoring_sigterm(self):
        # Every process ignores SIGTERM (inherited SIG_IGN), so only the
        # SIGKILL after the grace period ends them.
        t = self.submit("stubborn", ["sh", "-c", 'trap "" TERM; sleep 1000 & sleep 1000 & wait'],
                        gpus=1, grace_s=1)
        self.wait_host_pid(t)
        uid = self.task(t)["metadata"]["uid"]
        pids = wait_for("3 processes in the task's cgroup",
                        lambda: len(cgroup_pids(uid)) >= 3 and cgroup_pids(uid))
        w = Watch(self.g, self.PROJECT + "/tasks?fieldSelector=metadata.name=" + t)
        self.addCleanup(w.close)
        t0 = time.monotonic()
        self.g.cli("delete", "job", "stubborn", "-p", "proj-a")
        wait_for("deleted task gone", lambda: self.task(t) is None, timeout=20)
        gone_s = time.monotonic() - t0
        for pid in pids:
            self.assertFalse(pid_alive(pid), "pid %d survived delete" % pid)
        self.assertEqual(task_cgroups(uid), [], "cgroup left behind")
        # the task was stopped (grace period waited), and its exit recorded before it went
        self.assertGreaterEqual(gone_s, 0.9)
        wait_for("DELETED event", lambda: any(e[1] == "DELETED" for e in w.events))
        last = [e[2] for e in w.events if e[1] == "DELETED"][0]
        self.assertEqual(last["status"]["phase"], "Failed", last["status"])
        self.assertEqual(last["status"]["reason"], "Killed", last["status"])
        self.assertEqual(last["status"]["exitCode"], 128 + signal.SIGKILL, last["status"])
        self.assertIsNone(self.task(t))

    def test_same_uid_cannot_signal_other_task(self):
        b = self.submit("victim", ["sleep", "1000"], gpus=1, grace_s=0)
        b_pid = self.wait_host_pid(b)
        self.assertTrue(pid_alive(b_pid))
        self.assertEqual(proc_uid(b_pid), ALICE_UID)
        # Control: the same uid, outside any namespace, may signal it.
        child = os.fork()
        if child == 0:
            try:
                os.setgid(ALICE_UID)
                os.setuid(ALICE_UID)
                os.kill(b_pid, 0)
                os._exit(0)
            except OSError:
                os._exit(1)
        self.assertEqual(os.waitpid(child, 0)[1], 0, "uid %d can't signal outside" % ALICE_UID)
        a = self.submit("attacker", [
            # kill's complaint to stderr is left out: the shell writes it in
            # two pieces, and the log may hold stdout's line between them
            "sh", "-c", "id -u; kill -0 %d 2>/dev/null; echo kill0=$?; kill -9 %d 2>/dev/null;"
            " echo kill9=$?"
            % (b_pid, b_pid)], gpus=1)
        task = self.wait_phase(a, ("Succeeded", "Failed"), timeout=30)
        self.assertEqual(task["status"]["phase"], "Succeeded", task["status"])
        out = self.log_of(a).split("\n")
        self.assertEqual(out[0], str(ALICE_UID), out)
        self.assertIn("kill0=1", out)
        self.assertIn("kill9=1", out)
        self.assertTrue(pid_alive(b_pid), "the other task's process died")
        self.assertEqual(self.phase(b), "Running")


if __name__ == "__main__":
    main()
