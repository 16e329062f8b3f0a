/*
 * nbctl.c: the notebook controller and idle culler; nbproxy.c: the proxy
 * in front of notebooks.
 */
#ifndef GT_SERVER_NBCTL_H
#define GT_SERVER_NBCTL_H

#include "server/server_int.h"

struct gt_nbctl;

/* The controller of the Notebooks in c's cache (new; gt_nbctl_free). */
struct gt_nbctl *gt_nbctl_new(struct gt_ctl *c);
void gt_nbctl_free(struct gt_nbctl *nb);
/* A cached object changed (ctl.c): obj is the object now or, when it was
 * deleted, as it was (typed, borrowed). Notebooks, their Jobs and Tasks
 * mark the notebook for the next reconcile. */
void gt_nbctl_event(struct gt_nbctl *nb, enum gt_kind kind, const char *key,
                    const struct gt_api_object *obj);
/* Reconcile the notebooks marked since the last call (once a loop turn). */
void gt_nbctl_reconcile(struct gt_nbctl *nb);
/* Every second: the idle checks when --notebook-check-interval-ms passed. */
void gt_nbctl_tick(struct gt_nbctl *nb);
/* Admission of a Notebook create or update: spec.home beneath a storage
 * root (as a Job's hostPath volumes), runAsUser as for Jobs. 0 or
 * GT_EINVAL naming the field. */
int gt_nbctl_admit(struct gt_ctl *c, const struct gt_api_notebook *nbk,
                   const struct gt_server_user *user, struct gt_err *err);

/* The Jupyter token of the notebook whose Job jo is (cached, borrowed):
 * derived from the notebook and the job's uid (secrets.c), never stored
 * (new string), or NULL with err (GT_ECONFLICT) when jo runs no notebook. */
char *gt_nbctl_job_token(const struct gt_ctl *c, const struct gt_cobj *jo, struct gt_err *err);

/* Where the proxy sends a notebook's traffic. */
struct gt_nb_target {
    char host[64];
    int port;
    char token[80]; /* the notebook's own Jupyter token (gt_nbctl_job_token) */
};
/* The running notebook name of project (its task on a Ready node): 0 and
 * *t filled, or GT_ENOTFOUND (no such notebook) or GT_ESTORE (503, not
 * running: err says its phase). */
int gt_nbctl_target(const struct gt_ctl *c, const char *project, const char *name,
                    struct gt_nb_target *t, struct gt_err *err);
/* The proxy saw use of the notebook (what: "POST /api/contents",
 * "terminal", ...; copied) at now_ms: it is not idle. */
void gt_nbctl_activity(struct gt_nbctl *nb, const char *project, const char *name, const char *what,
                       int64_t now_ms);

/* Is the request a browser's periodic polling (Jupyter's GETs of the
 * kernels, sessions, terminals, status, contents and kernelspecs lists),
 * which is not activity? path is beneath the notebook's base URL
 * ("/api/sessions"). */
bool gt_nb_is_polling(const char *method, const char *path);

/* Serve r, a request for /projects/P/notebooks/N/... (http.c):
 * authenticate (bearer token, or the gantry-token cookie that
 * ?gantry-token= sets), authorize as a write to the notebook's project,
 * and proxy the connection to the notebook's server with the notebook's
 * own token, HTTP and WebSocket alike. The connection is taken from
 * evhttp (its bufferevent, after evhttp parsed the head and body); r is
 * freed either way. */
void gt_nbproxy_serve(struct gt_req *r, const char *path);
/* Is path a notebook proxy path ("/projects/P/notebooks/N" or beneath)? */
bool gt_nbproxy_path(const char *path);

#endif
