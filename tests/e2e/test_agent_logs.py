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
  left the log 404 and a follow hanging);
- kubectl's log flags with the CRI-format log the shim writes: a task
  prints to stdout and stderr, a line without a newline, then waits;
  `logs` shows the output as written (both streams, the unfinished line),
  `--timestamps` puts each line's RFC 3339 nanosecond time in front (in
  order, within the test's window), `--since 1s` after a pause and
  `--since-time` between two lines leave out the earlier ones, `--tail 3`
  gives the last three entries (a line written in two parts is two, as
  kubelet counts), `-f --tail 1 --timestamps` follows from the last line;
  a bad --since or --since-time is a usage error.
"""
import datetime
import http.client
import re
import time

import os
import subprocess

from gantry_e2e import GANTRY, TOKENS, AgentTest, main, wait_for

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

    def test_cli_log_flags(self):
        self.agent = self.gantlet()
        t_start = datetime.datetime.now(datetime.timezone.utc)
        # the pause lets the shim read err-1 before the unfinished line (their
        # pipes are read apart, as CRI's streams)
        script = ("echo out-1; echo err-1 >&2; sleep 1; printf 'no-newline'; sleep 1.5;"
                  " echo ' ended'; sleep 0.5;"
                  " echo out-2; touch go; while [ ! -e stop ]; do sleep 0.1; done; echo last")
        t = self.submit("flags", ["sh", "-c", script], gpus=0, cpu="10m")
        work = wait_for("the task's working directory", lambda: (lambda d: d if d and os.path.exists(
            os.path.join(d, "go")) else None)(self.agent_work_dir(t)), timeout=20)
        logs = ("logs", "flags", "-p", "proj-a")
        p = self.g.cli(*logs, token="alice")
        self.assertEqual(p.stdout, "out-1\nerr-1\nno-newline ended\nout-2\n")
        p = self.g.cli(*logs, "--timestamps", token="alice")
        lines = p.stdout.splitlines()
        self.assertEqual([line.split(" ", 1)[1] for line in lines],
                         ["out-1", "err-1", "no-newline ended", "out-2"], p.stdout)
        stamps = [line.split(" ", 1)[0] for line in lines]
        for s in stamps:
            self.assertRegex(s, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$")
        self.assertEqual(stamps, sorted(stamps))
        first = datetime.datetime.strptime(stamps[0][:26] + "Z", "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc)
        self.assertGreaterEqual(first, t_start - datetime.timedelta(seconds=1))
        # the time of "out-2", 0.5 s after the line before: --since-time just before it
        cut = stamps[3][:23] + "Z"
        p = self.g.cli(*logs, "--since-time", cut, token="alice")
        self.assertEqual(p.stdout, "out-2\n")
        time.sleep(1.2)
        p = self.g.cli(*logs, "--since", "1s", token="alice")
        self.assertEqual(p.stdout, "")
        # the tail counts the log's entries, as kubelet's does: the line
        # written in two parts is two of them
        p = self.g.cli(*logs, "--since", "1h", "--tail", "3", token="alice")
        self.assertEqual(p.stdout, "no-newline ended\nout-2\n")
        follow = subprocess.Popen(
            [GANTRY, "--server", self.g.url, "--token", TOKENS["alice"][0], *logs, "-f",
             "--tail", "1", "--timestamps"], stdout=subprocess.PIPE, text=True)
        self.assertRegex(follow.stdout.readline(), r"^\S+Z out-2\n$")
        open(os.path.join(work, "stop"), "w").close()
        self.assertRegex(follow.stdout.readline(), r"^\S+Z last\n$")
        self.assertEqual(follow.wait(timeout=20), 0)
        for bad in (("--since", "5 minutes"), ("--since-time", "yesterday")):
            p = self.g.cli(*logs, *bad, token="alice", check=False)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(bad[0] + ":", p.stderr)

    def agent_work_dir(self, task):
        t = self.task(task)
        uid = t and t["metadata"]["uid"]
        d = uid and os.path.join(self.agent.data_dir(uid), "work")
        return d if d and os.path.isdir(d) else None


if __name__ == "__main__":
    main()
