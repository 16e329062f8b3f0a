#!/usr/bin/env python3
"""A SIGSTOPped gantlet loses its node; SIGCONTed, it kills before Ready.

gantryd runs with --node-grace 4, gantlet heartbeats every second. With a
1-GPU task running, the agent is SIGSTOPped: within grace + 2 s the Node is
Ready=False, the task Failed with reason NodeLost and the node's
status.allocated empty (its GPU free). The task's process itself lives on
meanwhile (nobody on the node acts). SIGCONT: the first time the Node is
seen Ready=True again (polled every few ms), the task's process is already
dead and its cgroup empty.
"""
import signal
import time

from gantry_e2e import AgentTest, cgroup_pids, main, pid_alive


def ready_status(node):
    for c in (node or {}).get("status", {}).get("conditions", []):
        if c.get("type") == "Ready":
            return c.get("status")
    return None


class NodeLost(AgentTest):
    def test_sigstop_then_sigcont(self):
        agent = self.gantlet(fake_gpus="2xA100-80GB")
        t = self.submit("lost", ["sleep", "1000"], gpus=1, grace_s=30)
        pid = self.wait_host_pid(t)
        uid = self.task(t)["metadata"]["uid"]
        self.assertEqual(len(agent.node()["status"]["allocated"]["gpus"]), 1)

        agent.signal(signal.SIGSTOP)
        t0 = time.monotonic()
        deadline = t0 + self.NODE_GRACE_S + 2
        while ready_status(agent.node()) != "False":
            self.assertLess(time.monotonic(), deadline, "node still Ready")
            time.sleep(0.05)
        while self.phase(t) != "Failed":
            self.assertLess(time.monotonic(), deadline, "task not failed")
            time.sleep(0.05)
        st = self.task(t)["status"]
        self.assertEqual(st["reason"], "NodeLost", st)
        node = agent.node()
        self.assertEqual(node["status"]["allocated"]["gpus"], [], node["status"]["allocated"])
        self.assertLessEqual(time.monotonic(), deadline)
        self.assertTrue(pid_alive(pid), "nothing on the node should have acted yet")

        agent.signal(signal.SIGCONT)
        t1 = time.monotonic()
        while ready_status(agent.node()) != "True":
            self.assertLess(time.monotonic(), t1 + 15, "node not Ready again:\n" + agent.logs())
        self.assertFalse(pid_alive(pid), "task process alive when the node is Ready again")
        self.assertEqual(cgroup_pids(uid), set())
        # the lost task's terminal status stays what gantryd wrote
        self.assertEqual(self.task(t)["status"], st)


if __name__ == "__main__":
    main()
