#!/usr/bin/env python3
"""Task logs through gantryd and a real gantlet, and tasks the agent keeps.

One node (heartbeat 1 s, so full lists race the watch often). Checks:
- a followed log (follow=true) of a short task ends with the whole output,
  whether the follow starts while the task runs or after it has exited;
- `gantry logs -f` prints a job's output as it comes and exits when the
  task ends;
- short jobs submitted one after another all succeed and keep their logs:
  the agent never takes a task the watch brought after a list was taken
  for one gantryd no longer runs (which killed it, removed its state and
  left the log 404 and a follow hanging).
"""
import http.client
import time

from gantry_e2e import TOKENS, AgentTest, main

TERMINAL = ("Succeeded", "Failed")


class Logs(AgentTest):
    def follow(self, task, timeout=15):
        """GET the task's log with follow=true; (status, body, seconds)."""
        t0 = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", self.g.port, timeout=timeout)
        conn.request("GET", self.PROJECT + "/tasks/%s/log?follow=true" % task,
                     headers={"Authorization": "Bearer " + TOKENS["alice"][0]})
        resp = conn.getresponse()
        body = resp.read().decode(errors="replace")
        conn.close()
        return resp.status, body, time.monotonic() - t0

    def test_follow_ends_with_the_task(self):
        self.gantlet()
        running = self.submit("slow", ["sh", "-c", "echo one; sleep 2; echo two"], gpus=0,
                              cpu="10m")
        self.wait_phase(running, ("Running",) + TERMINAL)
        st, body, took = self.follow(running)
        self.assertEqual((st, body), (200, "one\ntwo\n"))
        self.assertLess(took, 10)
        # the stream ends with the task; its status write follows shortly
        self.assertEqual(self.wait_phase(running, TERMINAL)["status"]["phase"], "Succeeded")

        done = self.submit("quick", ["echo", "hello"], gpus=0, cpu="10m")
        self.wait_phase(done, TERMINAL)
        st, body, took = self.follow(done)
        self.assertEqual((st, body), (200, "hello\n"))
        self.assertLess(took, 5)
        st, body = self.g.request("GET", self.PROJECT + "/tasks/%s/log?tailLines=1" % running,
                                  token="alice", raw=True)
        self.assertEqual((st, body), (200, "two\n"))

    def test_cli_logs_follow_exits(self):
        self.gantlet()
        task = self.submit("cli", ["sh", "-c", "echo first; sleep 2; echo last"], gpus=0,
                           cpu="10m")
        self.wait_phase(task, ("Running",) + TERMINAL)
        t0 = time.monotonic()
        p = self.g.cli("logs", "-f", "-p", "proj-a", "cli", token="alice")
        self.assertEqual(p.stdout, "first\nlast\n")
        self.assertLess(time.monotonic() - t0, 15)
        self.assertEqual(self.wait_phase(task, TERMINAL)["status"]["phase"], "Succeeded")

    def test_short_tasks_kept_and_logged(self):
        agent = self.gantlet(fake_gpus="2xA100-80GB")
        for i in range(40):
            task = self.submit("echo-%02d" % i, ["echo", "hello"], gpus=0, cpu="10m")
            wait_until = time.monotonic() + 20
            while not (self.task(task) or {}).get("spec", {}).get("nodeName"):
                self.assertLess(time.monotonic(), wait_until, "task %s never bound" % task)
                time.sleep(0.005)
            # follow as soon as it is bound: before, while or after it runs
            st, body, _ = self.follow(task)
            # 404: the agent had not heard of the task yet; 409: gantryd's
            # controller cache had not yet seen the bind this GET saw
            if st in (404, 409):
                self.wait_phase(task, ("Running",) + TERMINAL)
                st, body, _ = self.follow(task)
            self.assertEqual((st, body), (200, "hello\n"), task)
            self.assertEqual(self.wait_phase(task, TERMINAL)["status"]["phase"], "Succeeded")
        self.assertNotIn("no longer runs here", agent.logs())


if __name__ == "__main__":
    main()
