/*
 * gantry-shim --init: the minimal init a task runs under as PID 1 of its
 * PID namespace, as tini and `docker --init` do. The kernel delivers to a
 * namespace's PID 1 only the signals it handles, so a script started as
 * PID 1 ignores SIGTERM and every stop would wait out its grace period;
 * and orphans re-parented to PID 1 would stay zombies.
 *
 * The task's main process is the init's only direct child, leader of its
 * own process group. The init blocks every asynchronous signal and takes
 * them with sigwaitinfo: SIGCHLD reaps whatever exited, anything else is
 * forwarded to the main process's group. Once the main process has exited
 * the init writes its raw wait status (an int) to the given fd, so the
 * shim records the task's own exit code or signal, and exits with the
 * same code (128 + the signal's number for a signal: PID 1 cannot die of
 * its own signal). Leaving PID 1 ends the namespace: the kernel kills what
 * is left in it. It owns nothing and allocates nothing.
 *
 * An image task's container has no shim inside to fork its main process:
 * there the runtime starts this binary (bind-mounted read-only from the
 * host) as `--init-exec FD ARGV...`, which forks and execs ARGV itself and
 * then does the same, as docker-init does for `docker --init`.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/shim.h"

/* Faults and the like are the init's own; terminal stops do not apply. */
static const int not_forwarded[] = {SIGFPE, SIGILL,  SIGSEGV, SIGBUS,  SIGABRT, SIGTRAP,
                                    SIGSYS, SIGCHLD, SIGTTIN, SIGTTOU, SIGTSTP};

static bool forwarded(int sig)
{
    for (size_t i = 0; i < sizeof(not_forwarded) / sizeof(not_forwarded[0]); i++) {
        if (not_forwarded[i] == sig) {
            return false;
        }
    }
    return true;
}

/* Reap every child that has exited; true once main did (*status set). */
static bool reap(pid_t main_pid, int *status)
{
    bool done = false;
    int st;
    pid_t p;
    while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
        if (p == main_pid) {
            *status = st;
            done = true;
        }
    }
    /* no child left and main not seen (its exit was taken elsewhere):
     * nothing would ever wake the wait below */
    return done || (p < 0 && errno == ECHILD);
}

/* Every asynchronous signal: the ones the init takes with sigwaitinfo. */
static void async_signals(sigset_t *set)
{
    sigfillset(set);
    static const int sync_sigs[] = {SIGFPE, SIGILL, SIGSEGV, SIGBUS, SIGABRT, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof(sync_sigs) / sizeof(sync_sigs[0]); i++) {
        sigdelset(set, sync_sigs[i]);
    }
}

int gt_shim_init_main(pid_t main_pid, int status_fd)
{
    sigset_t set;
    async_signals(&set);
    /* blocked signals are queued even for PID 1, handled or not (shim.c
     * execs this with all of them blocked, so none sent meanwhile is lost) */
    sigprocmask(SIG_SETMASK, &set, NULL);
    int status = 0;
    /* the main process may have ended before the mask was set */
    while (!reap(main_pid, &status)) {
        siginfo_t si;
        int sig = sigwaitinfo(&set, &si);
        if (sig < 0 || !forwarded(sig)) {
            continue;
        }
        if (kill(-main_pid, sig) < 0) {
            kill(main_pid, sig);
        }
    }
    if (status_fd >= 0) {
        ssize_t w = write(status_fd, &status, sizeof(status));
        (void)w;
    }
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int gt_shim_init_exec_main(int status_fd, char *const *argv, char *const *env)
{
    sigset_t set, none;
    async_signals(&set);
    sigemptyset(&none);
    /* blocked before the fork: a stop that comes meanwhile waits for the init */
    sigprocmask(SIG_SETMASK, &set, NULL);
    if (status_fd >= 0) {
        fcntl(status_fd, F_SETFD, FD_CLOEXEC);
    }
    pid_t pid = fork();
    if (pid < 0) {
        dprintf(STDERR_FILENO, "gantry-init: fork: %s\n", strerror(errno));
        return 127;
    }
    if (pid == 0) {
        setpgid(0, 0);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int e = 0;
        gt_shim_exec_search(argv, env, &e);
        dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    /* both sides set the group, so a signal forwarded at once finds it */
    setpgid(pid, pid);
    return gt_shim_init_main(pid, status_fd);
}
