/*
 * isvcctl.c: the serving controller (InferenceServices, their replica
 * jobs and the gateway's desired state).
 */
#ifndef GT_SERVER_ISVCCTL_H
#define GT_SERVER_ISVCCTL_H

#include "server/server_int.h"

struct gt_isvcctl;

/* The controller of the InferenceServices in c's cache (new;
 * gt_isvcctl_free), with the gateway when --gateway-listen is set. */
struct gt_isvcctl *gt_isvcctl_new(struct gt_ctl *c);
void gt_isvcctl_free(struct gt_isvcctl *ic);
/* Start the gateway (when configured). 0 or the error, with err. */
int gt_isvcctl_start(struct gt_isvcctl *ic, struct gt_err *err);
/* A cached object changed (ctl.c): services, replica jobs and their tasks,
 * and projects (their members decide the gateway's access) mark the
 * services for the next reconcile. obj: the object now or as it was. */
void gt_isvcctl_event(struct gt_isvcctl *ic, enum gt_kind kind, const struct gt_api_object *obj);
/* Reconcile the services when something marked them (once a loop turn). */
void gt_isvcctl_reconcile(struct gt_isvcctl *ic);

/* Where a running task serves: its node's InternalIP and the host port
 * bound to its template's first port (by name; "port-0" when unnamed).
 * 0, or GT_ESTORE when the task has no address yet. */
int gt_task_endpoint(const struct gt_ctl *c, const struct gt_api_task *task, char *host,
                     size_t host_len, int *port);

/* Delete a cached Job the way DELETE does: deletionTimestamp set (a
 * conditional write at its cached revision), then the job controller stops
 * its tasks and removes it; nothing when already deleting or a write of
 * ours is in flight. Used by the notebook and serving controllers. */
void gt_ctl_delete_job(struct gt_ctl *c, const struct gt_cobj *jo);

/* The ModelVersion storage_uri names ("models://PROJECT/NAME/VERSION" or
 * "gantry://PROJECT/NAME/VERSION"), found in c's cache by its model's name
 * and version (borrowed JSON), or NULL with err "model version not found"
 * (GT_ENOTFOUND), or GT_EINVAL when the URI is not of that form. */
int gt_isvc_find_model_version(const struct gt_ctl *c, const char *storage_uri, const json_t **out,
                               struct gt_err *err);

#endif
