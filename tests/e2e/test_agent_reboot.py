#!/usr/bin/env python3
"""A stale task record is not re-adopted as Running (Kubernetes #118559, #109595).

One node with 4 fake GPUs; gantlet reads its boot id from a file the test
owns (--boot-id-file). A 2-GPU job (restart Never) runs; gantlet is
SIGKILLed and the node's workloads are cleared as a reboot clears them
(the shim and the task SIGKILLed, the task's cgroup removed) while the
state directory stays. Restarted, gantlet must report the task ended:

- reboot: the boot id changed too: the task Failed with reason
  NodeRebooted, its job Failed;
- lost: the same boot, only the shim and the task gone: reason TaskLost;
- reused pids: shim.pid and task.pid name a live process of someone else
  (another start time, another cgroup): TaskLost, and that process lives on.

In each case the node's GPUs are all free again (4 of 4: allocated empty,
and a 4-GPU job then runs to Succeeded). A plain agent restart keeping a
live task is test_agent_restart.py.
"""
import os
import shutil
import signal
import subprocess
import tempfile

from gantry_e2e import AgentTest, kill_task_cgroup, main, pid_alive, wait_for


class Reboot(AgentTest):
    def start_agent(self):
        d = tempfile.mkdtemp(prefix="gantry-boot-")
        self.addCleanup(shutil.rmtree, d, True)
        self.boot_file = os.path.join(d, "boot_id")
        self.set_boot("0f3c5b8e-1111-4a2b-9c3d-000000000001")
        return self.gantlet(fake_gpus="4xA100-80GB",
                            extra_args=("--boot-id-file", self.boot_file))

    def set_boot(self, boot_id):
        with open(self.boot_file, "w") as f:
            f.write(boot_id + "\n")

    def job_failed_cond(self, job):
        st, body = self.g.request("GET", self.PROJECT + "/jobs/" + job)
        self.assertEqual(st, 200, body)
        for c in body.get("status", {}).get("conditions", []):
            if c["type"] == "Failed" and c["status"] == "True":
                return c
        return None

    def clear_workloads(self, agent, task):
        """SIGKILL the agent, then the task's shim and processes, and remove its cgroup."""
        uid = self.task(task)["metadata"]["uid"]
        pid = self.task(task)["status"]["hostPid"]
        agent.kill()
        (state,) = agent.state_dirs()
        with open(os.path.join(state, "shim.pid")) as f:
            shim = int(f.read())
        os.kill(shim, signal.SIGKILL)
        kill_task_cgroup(uid)
        wait_for("shim and task gone", lambda: not pid_alive(shim) and not pid_alive(pid))
        self.assertFalse(os.path.exists(os.path.join(state, "exit.json")))
        return state

    def check_ended(self, agent, task, job, reason):
        done = self.wait_phase(task, ("Succeeded", "Failed"), timeout=20)["status"]
        self.assertEqual((done["phase"], done["reason"]), ("Failed", reason), done)
        self.assertTrue(done.get("message"), done)
        wait_for("job %s Failed" % job, lambda: self.job_failed_cond(job), timeout=20)
        wait_for("the node's GPUs free",
                 lambda: (agent.node() or {}).get("status", {}).get("allocated", {})
                 .get("gpus") == [], timeout=20)
        self.assertEqual(len(agent.node()["status"]["gpus"]), 4)
        # all 4 GPUs can be bound again
        after = self.submit("after", ["sh", "-c", "exit 0"], gpus=4)
        self.assertEqual(self.wait_phase(after, ("Succeeded", "Failed"))["status"]["phase"],
                         "Succeeded")
        self.assertIsNone(agent.proc.poll(), agent.logs())
        return done

    def test_reboot_ends_task_as_node_rebooted(self):
        agent = self.start_agent()
        task = self.submit("gone", ["sleep", "1000"], gpus=2)
        self.wait_host_pid(task)
        self.assertEqual(len(agent.node()["status"]["allocated"]["gpus"]), 2)
        self.clear_workloads(agent, task)
        self.set_boot("0f3c5b8e-2222-4a2b-9c3d-000000000002")
        agent.start(wait_ready=False)
        done = self.check_ended(agent, task, "gone", "NodeRebooted")
        self.assertIn("rebooted", done["message"])

    def test_lost_shim_ends_task_as_task_lost(self):
        agent = self.start_agent()
        task = self.submit("lost", ["sleep", "1000"], gpus=2)
        self.wait_host_pid(task)
        self.clear_workloads(agent, task)
        agent.start(wait_ready=False)
        done = self.check_ended(agent, task, "lost", "TaskLost")
        self.assertIn("shim", done["message"])

    def test_reused_pids_are_not_the_task(self):
        agent = self.start_agent()
        task = self.submit("reused", ["sleep", "1000"], gpus=2)
        self.wait_host_pid(task)
        state = self.clear_workloads(agent, task)
        # someone else's process now has the pids the record names
        other = subprocess.Popen(["sleep", "60"])
        self.addCleanup(other.wait)
        self.addCleanup(other.kill)
        for name in ("shim.pid", "task.pid"):
            with open(os.path.join(state, name), "w") as f:
                f.write("%d\n" % other.pid)
        agent.start(wait_ready=False)
        self.check_ended(agent, task, "reused", "TaskLost")
        self.assertTrue(pid_alive(other.pid), "the agent killed a process that is not its task")


if __name__ == "__main__":
    main()
