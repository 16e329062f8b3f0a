/*
 * volctl.c: the Volume controller.
 */
#ifndef GT_SERVER_VOLCTL_H
#define GT_SERVER_VOLCTL_H

#include "server/server_int.h"

/* Admission (the admit hook, for every create and update): a Volume's
 * storage class must exist and, on update, only spec.readOnly may change
 * (and not while the volume has users); a Job's or Task's create: every
 * spec.volumes[].volume names a Volume of the project that is Available,
 * a ReadWriteOnce one mounted by at most one task of the job; a
 * hostPath never beneath a storage class's directory (the disk images).
 * 0, or GT_EINVAL with err naming the field (GT_ECONFLICT: readOnly
 * changed while in use). */
int gt_volctl_admit(struct gt_ctl *c, const struct gt_api_object *t, bool create,
                    struct gt_err *err);
/* The prepare hook: for a Volume create (obj, validated, at key), check
 * the storage quota, hold the capacity, and make the disk image off the
 * loop; done(arg, rc, err) runs on the loop when it is made (rc 0: obj
 * now has its status) or failed (nothing left behind). Returns 1 (done
 * will run), 0 (not a Volume: nothing to prepare) or the error with err
 * (done not called). */
int gt_volctl_prepare(struct gt_ctl *c, enum gt_kind kind, const char *key, json_t *obj,
                      gt_prepared_fn done, void *arg, struct gt_err *err);
/* May bytes more of storage be allocated in project (borrowed) under
 * its hard cap and its department's storage limit, counting Volumes and
 * the model store? what names what asks (NULL: "spec.capacity.storage").
 * 0, or GT_EFORBIDDEN with err naming the quota. */
int gt_volctl_storage_check(const struct gt_ctl *c, const char *project, const char *what,
                            int64_t bytes, struct gt_err *err);
/* The created hook: the store write of a create prepared above finished
 * (rc); on failure the image is removed and the capacity released. */
void gt_volctl_created(struct gt_ctl *c, enum gt_kind kind, const char *key, int rc);
/* For the refuse_delete hook: a Volume project/name (borrowed) in use
 * (tasks not ended that mount it, or jobs not finished that name it)
 * cannot be deleted: GT_ECONFLICT with err naming them; else 0. */
int gt_volctl_refuse_delete(const struct gt_ctl *c, const char *project, const char *name,
                            struct gt_err *err);
/* A cached Volume changed (old, now: typed, borrowed, either NULL): a
 * created one's held capacity is now counted from the cache; a deleted
 * one's disk image is removed. */
void gt_volctl_changed(struct gt_ctl *c, const char *key, const struct gt_api_object *old,
                       const struct gt_api_object *now);
/* Add to a rendered Volume (modified in place) status.usage (bytes its
 * disk image holds on the storage root) and status.users (the tasks not
 * ended that mount it). */
void gt_volctl_render(const struct gt_ctl *c, json_t *obj);
/* The storage part of a department's computed status (new reference):
 * {"volumes": N, "allocated": capacity of its projects' Volumes,
 * "borrowed": the part above its storage quota, "usage": what their
 * images hold}; quantities as text. */
json_t *gt_volctl_department_storage(const struct gt_ctl *c, const char *department);
/* May the job at key (typed, borrowed) enter the scheduler model? Not
 * while a writable ReadWriteOnce Volume it mounts is claimed by another
 * job in the model: false, with *why (caller frees) saying which. True:
 * its ReadWriteOnce volumes are now claimed by it. */
bool gt_volctl_claim(struct gt_ctl *c, const char *key, const struct gt_api_job *job, char **why);
/* The job at key left the model: its claims go. */
void gt_volctl_release(struct gt_ctl *c, const char *key);
/* At bind, in task (the binding's copy, modified): every
 * spec.volumes[].volume entry gets the Volume's disk image and, for a
 * read-only volume, readOnly. 0, or GT_ENOTFOUND with err when a Volume is
 * gone or not Available (the task is not bound). */
int gt_volctl_bind(const struct gt_ctl *c, json_t *task, struct gt_err *err);
/* Free the controller's state in c (held capacity, claims). */
void gt_volctl_fini(struct gt_ctl *c);

#endif
