/*
 * Values no object holds. A controller that must hand a task a credential
 * (nbctl.c a notebook's Jupyter token, buildctl.c a build's registry push
 * credential) writes only a reference into the task's template, an env
 * entry {"name": ..., "valueFrom": {"gantrySecret": "notebook-token"}},
 * and users may not write such references (gt_api_check_no_secret_refs).
 * The value is derived again whenever it is needed: by the proxy, by the
 * culler, and here for the agent of the task's node, which asks once
 * before it writes the task's environment. Project viewers read the Job
 * and the Task and find the name, never the value. The values are
 * derived under gantryd's key (secretkey.c).
 */
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "server/buildctl.h"
#include "server/cache.h"
#include "server/nbctl.h"
#include "server/reply.h"
#include "server/secrets.h"

/* The value of the gantrySecret name for the task's job jo (new string),
 * or NULL with err. */
static char *resolve(const struct gt_ctl *c, const char *name, const struct gt_cobj *jo,
                     struct gt_err *err)
{
    if (!strcmp(name, GT_API_SECRET_NOTEBOOK_TOKEN)) {
        return gt_nbctl_job_token(c, jo, err);
    }
    if (!strcmp(name, GT_API_SECRET_REGISTRY_CREDENTIAL)) {
        return gt_buildctl_job_creds(c, jo, err);
    }
    gt_err_set(err, GT_EINVAL, "unknown gantry secret %s", name);
    return NULL;
}

/* May r's agent have task's secrets? Only if the task is bound to its
 * node (where the user names the node) and has not ended. 0, or replies. */
static int authorize(struct gt_req *r, const struct gt_api_task *task)
{
    const char *self = gt_server_user_node(r->user);
    if (!task->spec.node_name) {
        gt_req_error(r, GT_ECONFLICT, "tasks \"%s\" is not bound to a node", task->o.meta.name);
        return -1;
    }
    if (self && strcmp(self, task->spec.node_name) != 0) {
        gt_req_error(r, GT_EFORBIDDEN,
                     "user \"%s\" cannot get tasks/secrets of a task bound to node %s",
                     r->user->name, task->spec.node_name);
        return -1;
    }
    if (gt_api_task_phase_terminal((enum gt_task_phase)task->status.phase)) {
        gt_req_error(r, GT_ECONFLICT, "tasks \"%s\" has ended", task->o.meta.name);
        return -1;
    }
    return 0;
}

/* The env entries of task with gantrySecret, their values made (new
 * array), or NULL with err. */
static json_t *values_of(const struct gt_ctl *c, const struct gt_api_task *task, struct gt_err *err)
{
    const struct gt_cobj *jo = gt_ctl_task_job(c, task);
    json_t *env = json_array();
    const struct gt_api_template *tmpl = &task->spec.template;
    for (size_t i = 0; i < tmpl->env.n; i++) {
        const char *name = tmpl->env.v[i].value_from.gantry_secret;
        if (!name) {
            continue;
        }
        char *v = NULL;
        if (!jo) {
            gt_err_set(err, GT_ECONFLICT, "its job is gone");
        } else {
            v = resolve(c, name, jo, err);
        }
        if (!v) {
            gt_err_prefix(err, "tasks \"%s\": spec.template.env[%zu] (%s)", task->o.meta.name, i,
                          name);
            json_decref(env);
            return NULL;
        }
        json_array_append_new(env,
                              json_pack("{s:s, s:s}", "name", tmpl->env.v[i].name, "value", v));
        OPENSSL_cleanse(v, strlen(v));
        free(v);
    }
    return env;
}

void gt_secrets_serve(struct gt_ctl *c, struct gt_req *r, int method, const struct evkeyvalq *q)
{
    const struct gt_route *rt = &r->route;
    if (method != EVHTTP_REQ_GET) {
        gt_req_error(r, GT_EMETHOD, "method not allowed on tasks/secrets");
        return;
    }
    if (!r->user->node) {
        gt_req_error(r, GT_EFORBIDDEN,
                     "user \"%s\" cannot get tasks/secrets: only the agent of the task's node may",
                     r->user->name);
        return;
    }
    char *key = gt_route_key(rt->kind, rt->project, rt->name);
    const struct gt_cobj *to = gt_ctl_get(c, GT_KIND_TASK, key);
    free(key);
    const struct gt_api_task *task = to ? gt_cobj_task(to) : NULL;
    const char *uid = evhttp_find_header(q, "uid");
    if (!task || (uid && strcmp(uid, task->o.meta.uid ? task->o.meta.uid : "") != 0)) {
        gt_req_error(r, GT_ENOTFOUND, "tasks \"%s\"%s%s not found", rt->name, uid ? " of uid " : "",
                     uid ? uid : "");
        return;
    }
    if (authorize(r, task)) {
        return;
    }
    struct gt_err err = {0};
    json_t *env = values_of(c, task, &err);
    if (!env) {
        gt_req_error(r, GT_ECONFLICT, "%s", err.msg);
        return;
    }
    gt_req_reply_json(r, json_pack("{s:s, s:s, s:o}", "apiVersion", GT_API_VERSION, "kind",
                                   "TaskSecrets", "env", env));
}
