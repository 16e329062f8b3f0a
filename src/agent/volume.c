/*
 * Volumes from the node's storage roots. A hostPath is first placed
 * lexically beneath one --storage-root (gt_volume_locate: the longest root
 * that is a whole-component prefix), then opened beneath that root's
 * directory with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), so a
 * symlink (or "..") that would leave the root fails with EXDEV instead of
 * being followed. The agent and the shim open it to refuse early with a
 * clear message; the task's process opens it once more inside its own
 * mount namespace (a bind mount's source must be in the caller's
 * namespace) and bind-mounts exactly the file it opened, through
 * /proc/self/fd/N, so nothing can be swapped in between check and mount.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/agent_int.h"

/* Length of root without trailing slashes ("/" stays "/"). */
static size_t trimmed_len(const char *root)
{
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/') {
        n--;
    }
    return n;
}

int gt_volume_locate(char *const *roots, size_t n_roots, const char *host_path, size_t *root_index,
                     const char **rel, struct gt_err *err)
{
    size_t best_len = 0;
    bool found = false;
    for (size_t i = 0; i < n_roots; i++) {
        size_t n = trimmed_len(roots[i]);
        bool is_slash = n == 1 && roots[i][0] == '/';
        if (strncmp(host_path, roots[i], n) != 0 ||
            (!is_slash && host_path[n] != '\0' && host_path[n] != '/')) {
            continue;
        }
        if (!found || n > best_len) {
            found = true;
            best_len = n;
            *root_index = i;
        }
    }
    if (!found) {
        return gt_err_set(err, GT_EFORBIDDEN, "%s is not beneath a storage root of this node",
                          host_path);
    }
    const char *r = host_path + best_len;
    while (*r == '/') {
        r++;
    }
    *rel = *r ? r : ".";
    return 0;
}

int gt_volume_open_raw(const char *root, const char *rel)
{
    int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) {
        return -1;
    }
    struct open_how how;
    memset(&how, 0, sizeof(how));
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long r;
    do {
        r = syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
    } while (r < 0 && errno == EAGAIN);
    int e = errno;
    close(root_fd);
    errno = e;
    return (int)r;
}

int gt_volume_open(const char *root, const char *rel, int *fd, struct gt_err *err)
{
    *fd = gt_volume_open_raw(root, rel);
    if (*fd < 0) {
        int e = errno;
        return gt_err_set(err, GT_EFORBIDDEN, "%s/%s: %s", root, rel,
                          e == EXDEV ? "resolves outside the storage root (symlink or ..)"
                                     : strerror(e));
    }
    return 0;
}
