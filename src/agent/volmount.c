/*
 * Volumes' disk images on this node. A Task's spec.volumes entry naming a
 * Volume carries the Volume's image (an ext4 file system of exactly its
 * capacity, made by gantryd in a storage class's directory, which is a
 * storage root here too). Before the task's shim starts, the agent
 * loop-mounts the image once per node at VOLUMES/<id> (id: the image's
 * file name without ".img"; VOLUMES is RUN/volumes, so mounts do not
 * outlive a reboot), and the shim bind-mounts that directory into the
 * task like any other volume. The kernel enforces the size: a writer past
 * it gets ENOSPC, and the file system stays usable. "discard" gives freed
 * blocks back to the storage root (usage shrinks when files go). When no
 * task on the node that has not ended mounts an image any more,
 * gt_volume_sweep detaches it (the loop device goes with it, autoclear).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent_int.h"

void gt_volume_mountpoint(const char *volumes_dir, const char *image, char *buf, size_t len)
{
    const char *base = strrchr(image, '/');
    base = base ? base + 1 : image;
    size_t n = strlen(base);
    if (n > 4 && !strcmp(base + n - 4, ".img")) {
        n -= 4;
    }
    snprintf(buf, len, "%s/%.*s", volumes_dir, (int)n, base);
}

/* Is dir a mount point (on another device than its parent)? */
static bool is_mounted(const char *dir, const char *parent)
{
    struct stat a, b;
    return stat(dir, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

int gt_volume_attach(const char *volumes_dir, char *const *roots, size_t n_roots, const char *image,
                     bool read_only, struct gt_err *err)
{
    size_t root;
    const char *rel;
    int fd;
    int rc = gt_volume_locate(roots, n_roots, image, &root, &rel, err);
    rc = rc < 0 ? rc : gt_volume_open(roots[root], rel, &fd, err);
    if (rc < 0) {
        return rc;
    }
    struct stat st;
    bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    close(fd);
    if (!regular) {
        return gt_err_set(err, GT_EFORBIDDEN, "%s: not a volume's disk image", image);
    }
    char mnt[PATH_MAX];
    gt_volume_mountpoint(volumes_dir, image, mnt, sizeof(mnt));
    if (is_mounted(mnt, volumes_dir)) {
        return 0;
    }
    if (mkdir(mnt, 0755) < 0 && errno != EEXIST) {
        return gt_err_set(err, -errno, "%s: %s", mnt, strerror(errno));
    }
    char *argv[] = {"mount",       "-t", "ext4", "-o", read_only ? "loop,ro" : "loop,discard",
                    (char *)image, mnt,  NULL};
    char *env[] = {NULL};
    struct gt_buf out;
    gt_buf_init(&out);
    int st_wait = gt_image_tool_run(argv, env, NULL, &out);
    if (st_wait < 0 || !WIFEXITED(st_wait) || WEXITSTATUS(st_wait) != 0) {
        rc = gt_err_set(err, GT_EINTERNAL, "mounting the disk image %s: %s", image,
                        st_wait < 0 ? strerror(-st_wait)
                        : out.len   ? out.data
                                    : "mount failed");
        rmdir(mnt);
    }
    gt_buf_fini(&out);
    return rc;
}

void gt_volume_sweep(const char *volumes_dir, bool (*in_use)(const char *id, void *arg), void *arg)
{
    DIR *d = opendir(volumes_dir);
    if (!d) {
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || in_use(e->d_name, arg)) {
            continue;
        }
        char mnt[PATH_MAX];
        snprintf(mnt, sizeof(mnt), "%s/%s", volumes_dir, e->d_name);
        if (is_mounted(mnt, volumes_dir) && umount2(mnt, MNT_DETACH) < 0) {
            gt_log_warn("volume not unmounted", "dir=%s err=\"%s\"", mnt, strerror(errno));
            continue;
        }
        rmdir(mnt);
        gt_log_info("volume unmounted", "dir=%s", mnt);
    }
    closedir(d);
}
