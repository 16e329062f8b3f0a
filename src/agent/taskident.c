/*
 * Telling a live task from a stale record (Kubernetes #118559, #109595): a
 * task's state directory can outlive its processes, after a reboot (every
 * process and cgroup gone, the directory kept on a disk) or when its shim
 * was killed. What identifies the run, kept in its task.json (tasks.c):
 * the boot id the task started under (the kernel's
 * /proc/sys/kernel/random/boot_id, or --boot-id-file), the start times of
 * the shim and of the task's process (/proc/PID/stat field 22, clock ticks
 * since boot: a pid used again by another process has another start time)
 * and the task's cgroup. An adopted task whose record no longer matches a
 * running shim is ended here, with reason NodeRebooted or TaskLost.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_int.h"

int gt_boot_id_read(const char *path, char *buf, size_t len, struct gt_err *err)
{
    char *text = NULL;
    size_t n;
    int rc = gt_file_read(path, 256, &text, &n, err);
    if (rc < 0) {
        return rc;
    }
    size_t k = strcspn(text, " \t\r\n");
    if (k == 0 || k >= len) {
        free(text);
        return gt_err_set(err, GT_EINVAL, "boot id file %s: no boot id on its first line", path);
    }
    memcpy(buf, text, k);
    buf[k] = '\0';
    free(text);
    return 0;
}

/* The command name in /proc/PID/stat is in parentheses and may hold
 * anything: the fields are counted from after its last ')'. A zombie (it
 * ended, its parent has not reaped it) counts as gone. */
int gt_proc_start_ticks(pid_t pid, uint64_t *ticks)
{
    char path[64], *text = NULL;
    size_t len;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (pid <= 0 || gt_file_read(path, 4096, &text, &len, NULL) < 0) {
        free(text);
        return -ESRCH;
    }
    const char *p = strrchr(text, ')');
    int rc = -EINVAL;
    /* p + 2 is field 3, the state; field 22 follows 19 spaces later */
    if (p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X')) {
        rc = -ESRCH;
        p = NULL;
    }
    for (int field = 3; p && *p; field++) {
        p = strchr(p, ' ');
        if (!p) {
            break;
        }
        p++;
        if (field == 22) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(p, &end, 10);
            if (end != p && errno == 0) {
                *ticks = v;
                rc = 0;
            }
            break;
        }
    }
    free(text);
    return rc;
}

/* Is pid the process recorded with start time ticks (0: unknown, any live
 * process will do)? With cgroup (may be NULL), also a member of it. */
static bool proc_is(pid_t pid, uint64_t ticks, const char *cgroup)
{
    uint64_t now;
    if (gt_proc_start_ticks(pid, &now) < 0 || (ticks && now != ticks)) {
        return false;
    }
    if (!cgroup) {
        return true;
    }
    char path[64], *text = NULL;
    size_t len;
    snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
    bool in = gt_file_read(path, 65536, &text, &len, NULL) == 0 && strstr(text, cgroup);
    free(text);
    return in;
}

bool gt_task_ident_check(const struct gt_gantlet *g, struct gt_ltask *t, char *reason,
                         size_t reason_len, char *msg, size_t msg_len)
{
    if (t->boot_id[0] && g->boot_id[0] && strcmp(t->boot_id, g->boot_id) != 0) {
        snprintf(reason, reason_len, "NodeRebooted");
        snprintf(msg, msg_len,
                 "the node rebooted since the task started (boot id %s then, %s now): its "
                 "processes are gone",
                 t->boot_id, g->boot_id);
        return false;
    }
    pid_t shim;
    if (gt_shim_read_pid(t->dir, "shim.pid", &shim, NULL) < 0) {
        return true; /* not spawned yet, or spawned before the record: the start-lost check's */
    }
    if (proc_is(shim, t->shim_ticks, NULL)) {
        return true; /* the shim supervises it and records its end */
    }
    char p[PATH_MAX + 16];
    snprintf(p, sizeof(p), "%s/exit.json", t->dir);
    if (access(p, F_OK) == 0) {
        t->st.exited = true; /* the shim recorded the end and went */
        return true;
    }
    snprintf(reason, reason_len, "TaskLost");
    char cgroup[160];
    snprintf(cgroup, sizeof(cgroup), "/gantry/%s\n", t->uid);
    if (t->st.started && proc_is(t->host_pid, t->task_ticks, cgroup)) {
        snprintf(msg, msg_len,
                 "the task's shim (pid %d) is gone, so nothing records its end: its process "
                 "(pid %d) was killed",
                 (int)shim, (int)t->host_pid);
    } else {
        snprintf(msg, msg_len,
                 "the task's shim (pid %d) and its process (pid %d) are gone (not running, or "
                 "the pid is another process's now)",
                 (int)shim, (int)t->host_pid);
    }
    return false;
}
