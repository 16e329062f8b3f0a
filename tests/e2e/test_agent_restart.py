#!/usr/bin/env python3
"""A SIGKILLed gantlet, restarted, re-adopts its running task.

One node with one fake GPU. Job `first` (1 GPU, sleeps ~6 s, exits 7)
runs; job `second` (1 GPU) waits for that GPU. gantlet is SIGKILLed and
restarted. Checks: the task keeps running with the same host PID (same
process, alive across the restart, one state directory, one shim
started), finishes, and its exit is recorded once (exactly one watch event
carries its terminal phase, and the stored finishTime does not change
afterwards); `second` is bound only after `first`'s exit is recorded (in
the watch's revision order, and boundTime >= finishTime).
"""
import time

from gantry_e2e import AgentTest, Watch, main, pid_alive

TERMINAL = ("Succeeded", "Failed")


def start_ticks(pid):
    """The process's start time (clock ticks since boot): with the pid, its identity."""
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def phase_of(o):
    return (o.get("status") or {}).get("phase")


class Restart(AgentTest):
    def test_sigkilled_agent_readopts_task(self):
        agent = self.gantlet(fake_gpus="1xA100-80GB")
        w = Watch(self.g, self.PROJECT + "/tasks")
        self.addCleanup(w.close)
        first = self.submit("first", ["sh", "-c", "sleep 6; exit 7"], gpus=1)
        pid = self.wait_host_pid(first)
        proc_start = start_ticks(pid)
        second = self.submit("second", ["sh", "-c", "echo second"], gpus=1)

        agent.kill()
        self.assertTrue(pid_alive(pid), "task died with its agent")
        time.sleep(1)
        self.assertEqual(self.phase(second), "Pending")
        agent.start(wait_ready=False)
        time.sleep(1.5)  # a heartbeat and a reconcile later
        self.assertIsNone(agent.proc.poll(), agent.logs())
        # same process: same pid and same start time, still running
        self.assertTrue(pid_alive(pid), "task died across the agent's restart")
        self.assertEqual(start_ticks(pid), proc_start)
        self.assertEqual(self.task(first)["status"]["hostPid"], pid)
        self.assertEqual(self.phase(first), "Running")
        self.assertEqual(self.phase(second), "Pending")
        self.assertEqual(len(agent.state_dirs()), 1, "a second shim was started")

        done = self.wait_phase(first, TERMINAL, timeout=15)["status"]
        self.assertEqual((done["phase"], done["exitCode"], done["reason"]),
                         ("Failed", 7, "Error"), done)
        self.assertEqual(done["hostPid"], pid)
        self.assertFalse(pid_alive(pid))
        self.wait_phase(second, TERMINAL, timeout=15)
        time.sleep(2)  # room for a duplicate report
        self.assertEqual(self.task(first)["status"], done)

        # the watch, in revision order
        evs = [(t, o) for _, t, o in list(w.events)]
        first_terminal = [i for i, (t, o) in enumerate(evs)
                          if o["metadata"]["name"] == first and phase_of(o) in TERMINAL]
        self.assertEqual(len(first_terminal), 1, [phase_of(o) for _, o in evs])
        second_bound = [i for i, (t, o) in enumerate(evs)
                        if o["metadata"]["name"] == second and o["spec"].get("nodeName")]
        self.assertTrue(second_bound)
        self.assertGreater(second_bound[0], first_terminal[0],
                           "second was bound before first's exit was recorded")
        # every Running report of first names the one process
        self.assertEqual({o["status"].get("hostPid") for _, o in evs
                          if o["metadata"]["name"] == first and phase_of(o) == "Running"}, {pid})
        s = self.task(second)["status"]
        self.assertGreaterEqual(s["boundTime"], done["finishTime"])
        self.assertEqual(s["phase"], "Succeeded", s)
        self.assertIsNone(agent.proc.poll(), agent.logs())


if __name__ == "__main__":
    main()
