/*
 * The per-task shim (gantry-shim), as conmon is for CRI-O: the agent writes
 * a task's spec into its state directory and starts `gantry-shim
 * --status-fd 3 --state-dir DIR` in a session of its own, so it outlives
 * the agent; the shim creates the task's cgroup, starts the task in it in new
 * namespaces as the task's user, copies its output into size-capped,
 * rotated log files, waits for it and records how it ended. The agent, even
 * after a restart, learns everything from the state directory.
 *
 * State directory (every file written atomically: temporary + rename):
 *   spec.json    written by the agent before starting the shim (format below)
 *   shim.pid     the shim's pid, decimal
 *   task.pid     the task's host pid, decimal
 *   started      ms since the epoch when the task was exec'd, decimal
 *   stop         optional stop request written by the agent before it sends
 *                SIGTERM to the shim: {"reason": "...", "gracePeriodMs": N}
 *   exit.json    how the task ended (format below), fsynced; the shim's last act
 *   shim.log     the shim's own diagnostics
 *   <log dir>/task.log, task.log.1 ... task.log.<keepFiles>: stdout and
 *                stderr as CRI log entries (crilog.h), newest first
 *
 * spec.json:
 *   {"argv": ["sh", "-c", "echo hi"],         required, argv[0] searched in
 *                                              the env's PATH when it has no '/'
 *    "env": ["K=V", ...],                      exactly the task's environment
 *    "cwd": "/abs/dir",                        required, absolute
 *    "uid": 1000, "gid": 1000,                 required; 0 only if privileged
 *    "groups": [1000],                         supplementary groups (default none)
 *    "privileged": false,
 *    "hostname": "job-worker-0",               UTS namespace hostname
 *    "namespaces": ["pid", "mount", "uts", "ipc", "user"], default none; pid needs
 *                                              mount; "user": the task runs as uid and
 *                                              gid 0 of a user namespace that maps
 *                                              only its own uid and gid (rootless)
 *    "cgroup": {"path": "gantry/<task-uid>", "cpuMilli": 0, "memoryBytes": 0,
 *               "pidsMax": 0, "gpuMinors": [0, 1]},  0 = no limit
 *               optional, the agent's layout (else the shim detects it):
 *               "unified": "/sys/fs/cgroup" (v2), or "hierarchies":
 *               {"cpu": "/sys/fs/cgroup/cpu", "memory": ..., "pids": ...,
 *               "devices": ..., "cpuacct": ...} (v1, the controllers mounted)
 *    "log": {"dir": "/abs/dir", "maxBytes": 0, "keepFiles": 3},
 *    "terminationLog": "/abs/file",            made by the shim for the task's ids;
 *                                              its first 1 KiB is the exit's "error"
 *                                              (the task's status.message)
 *    "dataDir": "/abs/dir",                    the task's own directory on disk for
 *                                              an image's rootfs/ and ovl/ (default
 *                                              the state directory)
 *    "stopGracePeriodMs": 30000,
 *    "source": {"git": "URL", "revision": "REF"},  optional; revision default HEAD
 *    "requirements": "path/in/source" | ["pkg==1", ...],   optional
 *    "pip": {"findLinks": "/dir", "indexUrl": "URL"},       optional
 *    "venvDir": "/abs/dir",                   where cached venvs live; required
 *                                              with requirements, writable by uid
 *    "volumes": [{"root": "/storage", "path": "rel/in/root", "mountPath": "/abs",
 *                 "readOnly": false}],         need the mount namespace
 *    "hosts": [{"ip": "10.0.0.2", "hostname": "job-worker-0"}],  ditto
 *    "image": {"ref": "HOST/NAME:TAG", "dir": "/abs/images",  optional; argv
 *              "runtime": "runc", "runtimeRoot": "/abs/oci",   may then be empty
 *              "command": [...], "args": [...], "workingDir": "/abs",
 *              "authFile": "/abs", "insecureRegistries": ["HOST:PORT"],
 *              "gcThresholdBytes": 0, "gcThresholdPercent": 80}}
 * Unknown fields are rejected.
 *
 * An image task (see image_pull.c, oci.c and docs/agent.md) is pulled
 * first (Pulling/Pulled lines in DIR/events; a failure is exit 127 with
 * reason ImagePullFailed), then runs through the OCI runtime with the
 * bundle in DIR (config.json, rootfs/, ovl/, container.pid, runtime.log)
 * instead of the clone below; the rest of the protocol is the same.
 *
 * Before the task's command (all in its cgroup and namespaces): volumes
 * are opened beneath their root (openat2, see gt_volume_open) by the shim
 * and bind-mounted (read-only if asked) at mountPath, missing mount points
 * created; with hosts, DIR/hosts (localhost lines + "ip hostname" lines) is
 * bind-mounted read-only over /etc/hosts. These mounts are made as root in
 * the task's mount namespace. Then, as the task's user, with source or
 * requirements the shim's own binary runs as "gantry-shim --prepare" (see
 * gt_shim_prepare_main), which fetches the source into cwd, makes or reuses
 * the virtual environment, and execs the command. Tasks that are not
 * privileged run with no_new_privs (setuid binaries do not elevate).
 *
 * exit.json:
 *   {"exitCode": 137, "signal": 9, "oomKilled": true, "startedAtMs": ...,
 *    "finishedAtMs": ..., "stopRequested": false, "stopReason": "",
 *    "error": "", "reason": ""}
 * exitCode is the shell convention (128 + signal when killed by one).
 * "error" is set when the task could not be started (exitCode 127 then);
 * "reason" then may name the cause: VolumeDenied, SourceFetchFailed,
 * RequirementsFailed (absent in older records).
 *
 * Stopping: SIGTERM (or SIGINT) to the shim sends SIGTERM to the task's
 * process group, waits the grace period (from DIR/stop, else the spec),
 * then SIGKILLs everything in the task's cgroup. Note that a task running
 * as PID 1 of its PID namespace only sees SIGTERM if it handles it.
 */
#ifndef GT_SHIM_H
#define GT_SHIM_H

#include "agent/shim_log.h"
#include "agent/shim_spec.h"

/* The shim program: run the task of state_dir as described above. The
 * caller made this process a session leader (posix_spawn with
 * POSIX_SPAWN_SETSID, as the agent does); it supervises here, writes one
 * byte on status_fd once the task started or its start failure is recorded
 * in exit.json, and does not return. Returns 1 when the spec is unusable or
 * the process is not a session leader (message on stderr). */
int gt_shim_main(const char *state_dir, int status_fd);

/* `gantry-shim --prepare --spec-fd N --status-fd M`, exec'd by the task's
 * process as the task's user after its setup: read the spec from fd N
 * (from offset 0), fetch the source into cwd (git init; git fetch --depth 1
 * URL REV; git checkout --detach FETCH_HEAD, with HOME=cwd and
 * GIT_TERMINAL_PROMPT=0), make or reuse the virtual environment of the
 * requirements (venvDir/<sha256 of the requirements>, built under a flock
 * on venvDir/<hash>.lock and marked complete last), then exec argv with
 * PATH and VIRTUAL_ENV set. Tool output goes to stdout (the task log). On
 * failure it writes "REASON\nMESSAGE" to fd M (the shim puts both in
 * exit.json) and returns 127; it never returns on success. */
int gt_shim_prepare_main(int spec_fd, int status_fd);

/* "gantry-shim --init PID FD": PID 1 of a task's PID namespace (shim.c
 * execs it there, the task's main process PID already its child): forwards
 * signals to PID's process group, reaps every child, writes PID's wait
 * status (an int) to fd FD once it has exited and returns its exit code
 * (128 + signal for a signal). See shim_init.c. */
int gt_shim_init_main(pid_t main_pid, int status_fd);

/* "gantry-shim --init-exec FD ARGV...": PID 1 of an image task's
 * container (oci.c wraps the process's args in it): forks, execs ARGV in
 * the child (PATH of env searched; leader of its own process group; on
 * failure "cannot run ARGV0: why" on stderr and exit 127, 126 when found
 * but not runnable), then runs as gt_shim_init_main over it, its report on
 * FD (-1: none). argv and env are borrowed. See shim_init.c. */
int gt_shim_init_exec_main(int status_fd, char *const *argv, char *const *env);

#endif
