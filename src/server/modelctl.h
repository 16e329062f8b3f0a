/*
 * modelctl.c: the model registry's controller (Model, ModelVersion) and
 * the content-addressed model store.
 */
#ifndef GT_SERVER_MODELCTL_H
#define GT_SERVER_MODELCTL_H

#include "server/server_int.h"

struct gt_modelctl;

/* Labels gantryd gives a ModelVersion: its model's name, and for one a
 * job's spec.outputs.model registered, the job's uid. */
#define GT_MODEL_LABEL "gantry.dev/model"
#define GT_MODEL_JOB_UID_LABEL "gantry.dev/job-uid"

/* The storage quota check a version's new bytes go through (the one
 * Volumes use, which counts both: gt_volctl_storage_check): 0, or
 * GT_EFORBIDDEN with err naming the quota. */
typedef int gt_storage_check_fn(const struct gt_ctl *c, const char *project, const char *what,
                                int64_t bytes, struct gt_err *err);

/* The controller of c (c borrowed, outlives it), checking storage with
 * check; free with gt_modelctl_free (NULL is fine). */
struct gt_modelctl *gt_modelctl_new(struct gt_ctl *c, gt_storage_check_fn *check);
void gt_modelctl_free(struct gt_modelctl *mc);

/* The name hook, for every create of kind in project (borrowed): a
 * ModelVersion's name is the server's, "<spec.model>-v<N>" with N one
 * more than any version of that model had, given one create at a time on
 * the loop (concurrent registrations get different numbers); obj's
 * metadata.name is set (replacing any). 0, or GT_EINVAL naming spec.model. */
int gt_modelctl_name(struct gt_ctl *c, enum gt_kind kind, const char *project, json_t *obj,
                     struct gt_err *err);
/* Admission of a Model or ModelVersion t (typed, borrowed): a version's
 * Model exists, its source job has Succeeded, its artifact is reachable;
 * on update only spec.stage, spec.metrics and labels change. 0, or
 * GT_EINVAL / GT_ENOTFOUND with err naming the field. */
int gt_modelctl_admit(struct gt_ctl *c, const struct gt_api_object *t, bool create,
                      struct gt_err *err);
/* The prepare hook for a ModelVersion create (obj at key, admitted): the
 * artifact is copied and hashed off the loop into the model store, then
 * on the loop checked against the storage quota and put in place
 * (STORE/sha256/<hex>/, read-only; identical content is kept once), and
 * obj gets its status. done(arg, rc, err) runs on the loop. Returns 1
 * (done will run), 0 (not a ModelVersion) or the error with err. */
int gt_modelctl_prepare(struct gt_ctl *c, enum gt_kind kind, const char *key, json_t *obj,
                        gt_prepared_fn done, void *arg, struct gt_err *err);
/* For the refuse_delete hook: a Model project/name (borrowed) with
 * versions stays: GT_ECONFLICT with err naming them; else 0. */
int gt_modelctl_refuse_delete(const struct gt_ctl *c, const char *project, const char *name,
                              struct gt_err *err);
/* The store write of a prepared ModelVersion create finished with rc: on
 * failure its bytes are no longer held and a blob no version uses goes. */
void gt_modelctl_created(struct gt_ctl *c, enum gt_kind kind, const char *key, int rc);
/* A cached ModelVersion changed (old, now: typed, borrowed, either NULL):
 * a held create is now counted from the cache; a version set to
 * Production moves the model's other Production versions to Archived; a
 * deleted version's blob goes when no version uses it. */
void gt_modelctl_changed(struct gt_ctl *c, const char *key, const struct gt_api_object *old,
                         const struct gt_api_object *now);
/* A cached Job changed (now: typed, borrowed; NULL: deleted): once a job
 * with spec.outputs.model has Succeeded, its version is registered as a
 * POST would (labelled GT_MODEL_JOB_UID_LABEL: the job's uid, so it is
 * registered once, also across restarts), with Events ModelRegistered or
 * ModelNotRegistered (why) on the job. */
void gt_modelctl_job_changed(struct gt_ctl *c, const char *key, const struct gt_api_object *now);
/* Bytes the model store holds for the versions of department's projects
 * (each digest once per department) and of project's (either may be
 * NULL), held creates included. */
void gt_modelctl_storage(const struct gt_ctl *c, const char *department, const char *project,
                         int64_t *dept_bytes, int64_t *project_bytes);

#endif
