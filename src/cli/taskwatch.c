/*
 * Following one Task: wait (by watch) until it has started or finished, and
 * copy its log to the output as it is written. Shared by `gantry run` and
 * `gantry logs`.
 *
 * The wait watches the project's tasks with a field selector on the name
 * from resourceVersion=0, so the current state comes first and a task the
 * job controller has not created yet simply arrives later as ADDED.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_int.h"
#include "common/jsonutil.h"

struct wait_state {
    enum gt_cli_task_goal goal;
    struct gt_api_task *task; /* last seen, owned */
    bool deleted;
};

bool gt_cli_task_reached(const struct gt_api_task *task, enum gt_cli_task_goal goal)
{
    int phase = task->status.phase;
    bool done = phase == GT_TASK_SUCCEEDED || phase == GT_TASK_FAILED;
    if (goal == GT_CLI_TASK_DONE) {
        return done;
    }
    return done || phase == GT_TASK_RUNNING || phase == GT_TASK_TERMINATING;
}

static int on_task_event(const json_t *event, void *arg)
{
    struct wait_state *w = arg;
    const char *type = json_string_value(json_object_get(event, "type"));
    json_t *obj = json_object_get(event, "object");
    if (!type || !json_is_object(obj)) {
        return 0;
    }
    gt_api_task_free(w->task);
    w->task = gt_api_task_new(obj);
    if (strcmp(type, "DELETED") == 0) {
        w->deleted = true;
        return 1;
    }
    return gt_cli_task_reached(w->task, w->goal) ? 1 : 0;
}

/* The task as it is now (w->task) and its resourceVersion into rv (32
 * bytes); GT_ENOTFOUND when there is none. */
static int read_task(struct gt_cli_client *c, const char *project, const char *name,
                     struct wait_state *w, char *rv, struct gt_err *err)
{
    char *path = gt_cli_kind_path(gt_kind_get(GT_KIND_TASK), project, name);
    json_t *obj = NULL;
    int rc = gt_cli_client_request(c, "GET", path, NULL, &obj, err);
    free(path);
    if (rc == GT_ENOTFOUND) {
        gt_err_clear(err);
        gt_err_set(err, GT_ENOTFOUND, "task %s was deleted", name);
    }
    if (rc == 0) {
        const char *v = json_string_value(gt_json_path(obj, "metadata.resourceVersion"));
        snprintf(rv, 32, "%s", v ? v : "0");
        w->task = gt_api_task_new(obj);
    }
    json_decref(obj);
    return rc;
}

int gt_cli_task_wait(struct gt_cli_client *c, const char *project, const char *name,
                     enum gt_cli_task_goal goal, bool exists, struct gt_api_task **task,
                     struct gt_err *err)
{
    *task = NULL;
    struct wait_state w = {.goal = goal};
    /* a task that must exist is read first and watched from its version, so
     * that its deletion (before or after) ends the wait */
    char rv[32] = "0";
    int rc = exists ? read_task(c, project, name, &w, rv, err) : 0;
    if (rc != 0) {
        return rc;
    }
    if (w.task && gt_cli_task_reached(w.task, goal)) {
        *task = w.task;
        return 0;
    }
    const struct gt_kind_info *k = gt_kind_get(GT_KIND_TASK);
    char *coll = gt_cli_kind_path(k, project, NULL);
    char *sel = gt_xasprintf("metadata.name=%s", name);
    char *sel_q = gt_cli_url_escape(sel);
    char *path = gt_xasprintf("%s?watch=true&resourceVersion=%s&fieldSelector=%s", coll, rv, sel_q);
    /* A stream the server ends cleanly (restart, timeout) is started again. */
    while ((rc = gt_cli_client_watch(c, path, on_task_event, &w, err)) == 0) {
    }
    if (rc == 1 && w.deleted) {
        rc = gt_err_set(err, GT_ENOTFOUND, "task %s was deleted", name);
    } else if (rc == 1) {
        rc = 0;
        *task = w.task;
        w.task = NULL;
    }
    gt_api_task_free(w.task);
    free(path);
    free(sel_q);
    free(sel);
    free(coll);
    return rc;
}

static int copy_chunk(const char *data, size_t len, void *arg)
{
    FILE *out = arg;
    if (fwrite(data, 1, len, out) != len || fflush(out) != 0) {
        return -EIO;
    }
    return 0;
}

int gt_cli_task_log_copy(struct gt_cli_client *c, const char *project, const char *name,
                         const struct gt_cli_log_opts *o, FILE *out, struct gt_err *err)
{
    char *path = gt_cli_log_path(project, name, o);
    int rc = gt_cli_client_stream(c, path, copy_chunk, out, err);
    if (rc == -EIO && !err->msg[0]) {
        gt_err_set(err, rc, "cannot write the log to the output");
    }
    free(path);
    return rc;
}
