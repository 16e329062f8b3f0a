#!/usr/bin/env python3
"""`gantry exec TASK -- CMD` against a real gantlet: the command runs inside
the running task.

Checks:
- the command sees the task's PID and mount namespaces, cgroup, uid,
  environment and working directory (compared with the task's own process
  from the host and with what the task printed of itself);
- its stdout and stderr come back apart and gantry exits with its code;
  a missing program exits 127;
- a project member may exec, a viewer gets 403 (API and CLI);
- a task that has ended answers 409, a bad body 400;
- `gantry describe node n1` lists the running task among its
  non-terminated tasks;
- the stream (-i, -t): stdin piped to `exec -i ... -- sh` runs and its
  exit code comes back; `exec -it ... -- sh` driven from a pseudo-terminal
  runs the shell on a terminal of its own (`tty` names a /dev/pts/) and
  echoes what is typed; a viewer's stream is refused with 403.
"""
import json
import os
import pty
import select
import socket
import subprocess
import time

from gantry_e2e import API, GANTRY, TOKENS, AgentTest, main, wait_for

ALICE_UID = 1001


def ns_of(pid, ns):
    return os.readlink("/proc/%d/ns/%s" % (pid, ns))


def proc_children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(x) for x in f.read().split()]


class Exec(AgentTest):
    def setUp(self):
        super().setUp()
        st, proj = self.g.request("GET", API + "/projects/proj-a")
        self.assertEqual(st, 200, proj)
        proj["spec"]["members"] += [{"user": "bob", "role": "member"},
                                    {"user": "carol", "role": "viewer"}]
        st, body = self.g.request("PUT", API + "/projects/proj-a", proj)
        self.assertEqual(st, 200, body)
        self.gantlet(fake_gpus="1xA100-80GB")

    def running_task(self, name):
        t = self.submit(name, ["sh", "-c", "export MARK=exec-mark; echo cwd=$(pwd); "
                                           "exec sleep 1000"], gpus=0, cpu="10m")
        host_pid = self.wait_host_pid(t)
        log = wait_for("the task's cwd line", lambda: self.g.request(
            "GET", self.PROJECT + "/tasks/%s/log" % t, raw=True)[1])
        cwd = log.strip().split("=", 1)[1]
        # with an init as PID 1 of its namespace, the task's process is its child
        main_pid = wait_for("the task's sleep", lambda: next(
            (p for p in [host_pid] + proc_children(host_pid)
             if os.readlink("/proc/%d/exe" % p).endswith("sleep")), None))
        return t, main_pid, cwd

    def test_runs_inside_the_task(self):
        t, pid, cwd = self.running_task("inside")
        p = self.g.cli("exec", t, "-p", "proj-a", "--", "sh", "-c",
                       "readlink /proc/self/ns/pid /proc/self/ns/mnt; id -u; pwd; "
                       "echo $MARK; cat /proc/self/cgroup", token="alice")
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], ns_of(pid, "pid"), p.stdout)
        self.assertEqual(lines[1], ns_of(pid, "mnt"), p.stdout)
        self.assertNotEqual(lines[0], ns_of(os.getpid(), "pid"), "the task has no PID namespace")
        self.assertEqual(lines[2], str(ALICE_UID))
        self.assertEqual(lines[3], cwd)
        self.assertEqual(lines[4], "exec-mark")
        with open("/proc/%d/cgroup" % pid) as f:
            self.assertEqual("\n".join(lines[5:]) + "\n", f.read())
        self.assertEqual(p.stderr, "")
        # describe node lists the running task
        out = self.g.cli("describe", "node", "n1").stdout
        self.assertIn("Non-terminated Tasks: (1 in total)", out)
        self.assertRegex(out, r"\n  proj-a +%s +Running\n" % t)

    def test_output_and_exit_code(self):
        t, _, _ = self.running_task("codes")
        p = self.g.cli("exec", t, "-p", "proj-a", "--", "sh", "-c",
                       "echo out; echo err >&2; exit 3", token="bob", check=False)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (3, "out\n", "err\n"))
        p = self.g.cli("exec", t, "-p", "proj-a", "--", "no-such-program", token="bob",
                       check=False)
        self.assertEqual(p.returncode, 127, p.stderr)
        self.assertIn("no-such-program", p.stderr)
        # the viewer may read the task but not run commands in it
        st, body = self.g.request("POST", self.PROJECT + "/tasks/%s/exec" % t,
                                  {"command": ["true"]}, token="carol")
        self.assertEqual(st, 403, body)
        p = self.g.cli("exec", t, "-p", "proj-a", "--", "true", token="carol", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("cannot exec", p.stderr)
        st, body = self.g.request("POST", self.PROJECT + "/tasks/%s/exec" % t,
                                  {"command": "true"}, token="alice")
        self.assertEqual(st, 400, body)
        self.assertIn("command", str(body))
        p = self.g.cli("exec", t, "-p", "proj-a", token="alice", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("after --", p.stderr)

    def test_ended_task(self):
        t = self.submit("done", ["true"], gpus=0, cpu="10m")
        self.wait_phase(t, "Succeeded")
        p = self.g.cli("exec", t, "-p", "proj-a", "--", "true", token="alice", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("not running", p.stderr)

    def test_stream_stdin(self):
        t, _, _ = self.running_task("stdin")
        p = self.g.cli("exec", "-i", t, "-p", "proj-a", "--", "sh", input="echo hi\nexit 3\n",
                       token="bob", check=False)
        self.assertEqual((p.returncode, p.stdout), (3, "hi\n"), p.stderr)
        # stdout and stderr stay apart without a terminal
        p = self.g.cli("exec", "-i", t, "-p", "proj-a", "--", "sh", "-c", "cat; echo e >&2",
                       input="in-bytes", token="bob", check=False)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, "in-bytes", "e\n"))
        # a viewer's stream is refused before it starts
        p = self.g.cli("exec", "-i", t, "-p", "proj-a", "--", "sh", input="true\n",
                       token="carol", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("cannot exec", p.stderr)
        self.assertEqual(self.upgrade_status(t, "carol"), 403)
        self.assertEqual(self.upgrade_status(t, "bob"), 101)

    def upgrade_status(self, task, token):
        """The HTTP status of a streaming exec's upgrade request."""
        body = json.dumps({"command": ["true"], "stdin": True}).encode()
        host, port = self.g.url.split("//")[1].split(":")
        with socket.create_connection((host, int(port)), timeout=30) as s:
            s.sendall(b"POST %s/tasks/%s/exec HTTP/1.1\r\nHost: %s\r\n"
                      b"Authorization: Bearer %s\r\nConnection: Upgrade\r\n"
                      b"Upgrade: v4.channel.gantry.dev\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (
                          self.PROJECT.encode(), task.encode(), host.encode(),
                          TOKENS[token][0].encode(), len(body), body))
            head = s.recv(4096)
        return int(head.split()[1])

    def test_stream_tty(self):
        t, _, _ = self.running_task("tty")
        master, slave = pty.openpty()
        env = dict(os.environ, GANTRY_CONFIG=os.path.join(self.g.tmp, "no-such-config"))
        env.pop("GANTRY_SERVER", None)
        env.pop("GANTRY_TOKEN", None)
        proc = subprocess.Popen([GANTRY, "--server", self.g.url, "--token", TOKENS["alice"][0],
                                 "exec", "-it", t, "-p", "proj-a", "--", "sh"],
                                stdin=slave, stdout=slave, stderr=slave, env=env,
                                start_new_session=True)
        os.close(slave)
        seen = b""

        def read_until(want, timeout=30):
            nonlocal seen
            end = time.time() + timeout
            while want not in seen and time.time() < end:
                r, _, _ = select.select([master], [], [], 0.5)
                if r:
                    try:
                        seen += os.read(master, 4096)
                    except OSError:
                        break
            return want in seen

        try:
            self.assertTrue(read_until(b"$ "), seen)  # the remote shell's prompt
            seen = b""
            os.write(master, b"tty; echo $((6*7))\r")
            self.assertTrue(read_until(b"42"), seen)
            self.assertIn(b"/dev/pts/", seen)
            # the typed line came back through the remote terminal's echo
            self.assertIn(b"tty; echo $((6*7))", seen)
            os.write(master, b"exit 5\r")
            self.assertEqual(proc.wait(timeout=30), 5, seen)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(master)


if __name__ == "__main__":
    main()
