/*
 * buildctl.c: the ImageBuild controller.
 */
#ifndef GT_SERVER_BUILDCTL_H
#define GT_SERVER_BUILDCTL_H

#include "server/server_int.h"

/* A change of an ImageBuild, Job or Task at key (now: the cached object
 * after it, NULL when deleted; old: before it, may be NULL; both borrowed):
 * marks the build it concerns for gt_buildctl_run, and deletes a deleted
 * build's job. */
void gt_buildctl_event(struct gt_ctl *c, enum gt_kind kind, const char *key,
                       const struct gt_cobj *now, const struct gt_cobj *old);
/* Reconcile the marked builds: create each one's job, follow its task into
 * the build's status. Runs on the loop thread, once per kick. */
void gt_buildctl_run(struct gt_ctl *c);
/* The push credential of the build whose Job jo is (cached, borrowed), as
 * buildah --creds takes it, "USER:CREDENTIAL" (gt_registry_credential for
 * the build's creator and project; new string), or NULL with err
 * (GT_ECONFLICT) when jo is no build's or gantryd has no --registry-key. */
char *gt_buildctl_job_creds(const struct gt_ctl *c, const struct gt_cobj *jo, struct gt_err *err);
/* REGISTRY/PROJECT/IMAGE, the reference a build pushes (new string). */
char *gt_buildctl_image_ref(const char *registry, const char *project, const char *image);

#endif
