/*
 * Scratch space: a task's emptyDir volumes (Kubernetes' EmptyDirVolumeSource).
 *
 * Each emptyDir NAME of a task is the directory DATA/scratch/NAME in the
 * task's own data directory on this node, made before the shim starts,
 * owned by the task's uid and gid (mode 0700), and bind-mounted by the shim
 * where the volumeMount says, like any other volume. It goes when the
 * task's data directory goes (gt_scratch_unmount first), so it lives
 * exactly as long as the task, as an emptyDir lives as long as its pod.
 *
 * What bounds it, by medium:
 * - "Memory": a tmpfs of sizeLimit (else of the task's memory limit), so a
 *   writer past the size gets ENOSPC. The kernel charges tmpfs pages to
 *   the memory cgroup of the process that writes them, the task's, so the
 *   scratch counts in the task's memory and writing past its memory limit
 *   ends in the OOM killer, as kubelet's memory-backed emptyDir does.
 * - disk with a sizeLimit: an ext4 file system in a sparse image of
 *   exactly that size, DATA/scratch/NAME.img, loop-mounted on the
 *   directory (as Volumes are, volmount.c). The kernel enforces the limit
 *   the moment it is reached (ENOSPC, the file system stays usable) and the
 *   blocks come from the data directory's file system, where kubelet keeps
 *   emptyDirs too; a size-limited tmpfs would have enforced the size as
 *   well but taken the space from memory. Kubelet instead measures usage
 *   now and then and evicts the pod afterwards; a hard limit is stricter and
 *   needs no polling. "discard" gives freed blocks back.
 * - disk without a sizeLimit, in a task with an ephemeral-storage limit
 *   (else request): an image as above of what the disk sizeLimits leave of
 *   it, shared evenly by all such emptyDirs of the task, so the task's disk
 *   scratch never passes its ephemeral storage (validation made sure the
 *   sizeLimits leave some); as Kubernetes counts emptyDirs in a pod's
 *   ephemeral storage, but enforced by the kernel (ENOSPC) rather than by
 *   eviction. Memory-medium ones count in memory instead.
 * - disk without a sizeLimit or an ephemeral-storage amount: a plain
 *   directory, bounded only by the data directory's file system.
 * Making is idempotent: a directory already mounted is left as it is.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent_int.h"

void gt_scratch_path(const char *data_dir, const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s/scratch/%s", data_dir, name);
}

/* Is dir a mount point (on another device than its parent)? */
static bool mounted_on(const char *dir)
{
    char parent[PATH_MAX];
    snprintf(parent, sizeof(parent), "%s/..", dir);
    struct stat a, b;
    return stat(dir, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

/* Run argv (mkfs.ext4, mount), its output into the error on failure. */
static int run_tool(char *const *argv, const char *what, struct gt_err *err)
{
    char *env[] = {NULL};
    struct gt_buf out;
    gt_buf_init(&out);
    int st = gt_image_tool_run(argv, env, &out, &out);
    int rc = 0;
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        rc = gt_err_set(err, GT_EINTERNAL, "%s: %s", what,
                        st < 0    ? strerror(-st)
                        : out.len ? out.data
                                  : "failed");
    }
    gt_buf_fini(&out);
    return rc;
}

/* An ext4 file system of size_bytes in dir.img, loop-mounted on dir. */
static int make_disk(const char *dir, int64_t size_bytes, uid_t uid, gid_t gid, struct gt_err *err)
{
    char image[PATH_MAX + 8];
    snprintf(image, sizeof(image), "%s.img", dir);
    int fd = open(image, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, size_bytes) < 0) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
        }
        return gt_err_set(err, -e, "%s: %s", image, strerror(e));
    }
    close(fd);
    char opts[96];
    snprintf(opts, sizeof(opts), "root_owner=%u:%u", (unsigned)uid, (unsigned)gid);
    /* -m 0: no blocks reserved for root, the task runs as its user */
    char *mkfs[] = {"mkfs.ext4", "-q", "-F", "-m", "0", "-E", opts, image, NULL};
    char *mnt[] = {"mount", "-t", "ext4", "-o", "loop,discard", image, (char *)dir, NULL};
    int rc = run_tool(mkfs, "mkfs.ext4 (e2fsprogs)", err);
    rc = rc < 0 ? rc : run_tool(mnt, "mounting the scratch image", err);
    if (rc == 0 && chmod(dir, 0700) < 0) {
        rc = gt_err_set(err, -errno, "%s: %s", dir, strerror(errno));
    }
    return rc;
}

/* One emptyDir of the task at dir, of size bytes (0: a plain directory;
 * medium Memory: always a tmpfs of size). */
static int make_one(const char *dir, int medium, int64_t size, uid_t uid, gid_t gid,
                    struct gt_err *err)
{
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        return gt_err_set(err, -errno, "%s: %s", dir, strerror(errno));
    }
    if (mounted_on(dir)) {
        return 0;
    }
    if (medium == GT_API_MEDIUM_MEMORY) {
        char opts[128];
        snprintf(opts, sizeof(opts), "size=%lld,mode=0700,uid=%u,gid=%u", (long long)size,
                 (unsigned)uid, (unsigned)gid);
        if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
            return gt_err_set(err, -errno, "tmpfs on %s: %s", dir, strerror(errno));
        }
        return 0;
    }
    if (size) {
        return make_disk(dir, size, uid, gid, err);
    }
    if (chown(dir, uid, gid) < 0 || chmod(dir, 0700) < 0) {
        return gt_err_set(err, -errno, "%s: %s", dir, strerror(errno));
    }
    return 0;
}

/* What the disk emptyDirs of vols without a sizeLimit each get of the
 * ephemeral storage (0: no bound); n_scratch: how many emptyDirs there are. */
static int64_t unbounded_share(const struct gt_api_volumes *vols, int64_t ephemeral_bytes,
                               size_t *n_scratch)
{
    int64_t rest = ephemeral_bytes;
    int64_t n_unbounded = 0;
    *n_scratch = 0;
    for (size_t i = 0; i < vols->n; i++) {
        const struct gt_api_volume *v = &vols->v[i];
        *n_scratch += v->has_empty_dir;
        if (!v->has_empty_dir || v->empty_dir.medium == GT_API_MEDIUM_MEMORY) {
            continue;
        }
        int64_t size = gt_api_empty_dir_bytes(&v->empty_dir);
        rest -= size; /* validated: the sizeLimits add up to at most the amount */
        n_unbounded += size == 0;
    }
    return n_unbounded && rest > 0 ? rest / n_unbounded : 0;
}

int gt_scratch_make(const char *data_dir, const struct gt_api_volumes *vols, uid_t uid, gid_t gid,
                    const struct gt_api_effective *eff, struct gt_err *err)
{
    size_t n_scratch;
    int64_t share = unbounded_share(vols, eff->ephemeral_bytes, &n_scratch);
    if (n_scratch == 0) {
        return 0;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/scratch", data_dir);
    if (mkdir(dir, 0711) < 0 && errno != EEXIST) {
        return gt_err_set(err, -errno, "%s: %s", dir, strerror(errno));
    }
    for (size_t i = 0; i < vols->n; i++) {
        const struct gt_api_volume *v = &vols->v[i];
        if (!v->has_empty_dir) {
            continue;
        }
        gt_scratch_path(data_dir, v->name, dir, sizeof(dir));
        int64_t size = gt_api_empty_dir_bytes(&v->empty_dir);
        size = size                                          ? size
               : v->empty_dir.medium == GT_API_MEDIUM_MEMORY ? eff->limit.v[GT_RES_MEMORY]
                                                             : share;
        int rc = make_one(dir, v->empty_dir.medium, size, uid, gid, err);
        if (rc < 0) {
            gt_err_prefix(err, "emptyDir %s", v->name);
            return rc;
        }
    }
    return 0;
}

void gt_scratch_unmount(const char *data_dir)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/scratch", data_dir);
    DIR *d = opendir(dir);
    if (!d) {
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char sub[PATH_MAX + 256];
        snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' && mounted_on(sub) && umount2(sub, MNT_DETACH) < 0) {
            gt_log_warn("scratch not unmounted", "dir=%s err=\"%s\"", sub, strerror(errno));
        }
    }
    closedir(d);
}
