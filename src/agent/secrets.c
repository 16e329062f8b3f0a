/*
 * The values of a task's gantry secrets (env valueFrom.gantrySecret: a
 * notebook's token, a build's push credential), which no object holds:
 * before such a task starts, the agent asks gantryd for them (GET
 * .../tasks/T/secrets?uid=UID, which answers only the agent of the task's
 * node) and starts the task once they came, with them in its environment
 * (through the start function tasks.c gives).
 *
 * A task waiting for its values is in g->secrets (uid -> struct wait),
 * not yet in the task table: no state directory exists, so nothing is
 * started twice and an agent restart simply asks again. A newer version of
 * the Task replaces the waiting one; a Task gone or no longer to be
 * started drops it (gt_gantlet_secrets_forget). Transient failures (no
 * answer, 5xx) are asked again a second later; 404 (the task is gone, or
 * is another run now) drops it; any other refusal fails the task with
 * gantryd's message.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/http.h>

#include "agent/agent_int.h"
#include "api/api.h"

#define RETRY_MS 1000

struct wait {
    struct gt_api_task *task; /* the newest version seen (owned) */
    gt_gantlet_start_fn *start;
    bool in_flight; /* a question is out */
};

struct ask {
    struct gt_gantlet *g;
    char uid[64];
};

static void wait_free(void *p)
{
    struct wait *w = p;
    if (w) {
        gt_api_task_free(w->task);
        free(w);
    }
}

static void ask_send(struct gt_gantlet *g, const char *uid, struct wait *w);

static int retry_one(const char *uid, void *val, void *arg)
{
    struct wait *w = val;
    if (!w->in_flight) {
        ask_send(arg, uid, w);
    }
    return 0;
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gt_gantlet *g = arg;
    gt_strmap_each(&g->secrets, retry_one, g);
}

static void retry_later(struct gt_gantlet *g)
{
    if (!g->secrets_ev) {
        g->secrets_ev = evtimer_new(g->base, retry_cb, g);
    }
    if (!evtimer_pending(g->secrets_ev, NULL)) {
        struct timeval tv = {RETRY_MS / 1000, (RETRY_MS % 1000) * 1000};
        evtimer_add(g->secrets_ev, &tv);
    }
}

/* {"env": [{name, value}]} -> {NAME: value} (new), or NULL when malformed. */
static json_t *values_of(const json_t *body)
{
    const json_t *env = json_object_get(body, "env");
    if (!json_is_array(env)) {
        return NULL;
    }
    json_t *out = json_object();
    size_t i;
    const json_t *e;
    json_array_foreach(env, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        const json_t *value = json_object_get(e, "value");
        if (!name || !json_is_string(value)) {
            json_decref(out);
            return NULL;
        }
        json_object_set(out, name, (json_t *)value);
    }
    return out;
}

static void ask_done(int status, json_t *body, void *arg)
{
    struct ask *a = arg;
    struct gt_gantlet *g = a->g;
    struct wait *w = gt_strmap_get(&g->secrets, a->uid);
    if (!w) {
        free(a); /* forgotten meanwhile */
        return;
    }
    w->in_flight = false;
    json_t *values = status == 200 ? values_of(body) : NULL;
    if (status == 0 || status >= 500 || (status == 200 && !values)) {
        gt_log_warn("cannot get the task's secrets; asking again",
                    "uid=%s status=%d message=\"%s\"", a->uid, status, gt_apic_message(body));
        retry_later(g);
        free(a);
        return;
    }
    gt_strmap_del(&g->secrets, a->uid);
    struct gt_api_task *task = w->task;
    gt_gantlet_start_fn *start = w->start;
    w->task = NULL;
    wait_free(w);
    if (values) {
        start(g, task, values, NULL);
    } else if (status == 404) {
        gt_log_info("task gone before its secrets came", "uid=%s", a->uid);
        gt_api_task_free(task);
    } else {
        char why[600];
        snprintf(why, sizeof(why), "gantryd refused the task's secrets (%d): %s", status,
                 gt_apic_message(body));
        start(g, task, NULL, why);
    }
    json_decref(values);
    free(a);
}

static void ask_send(struct gt_gantlet *g, const char *uid, struct wait *w)
{
    struct ask *a = gt_xcalloc(1, sizeof(*a));
    a->g = g;
    snprintf(a->uid, sizeof(a->uid), "%s", uid);
    char *path = gt_xasprintf("/apis/gantry.dev/v1/projects/%s/tasks/%s/secrets?uid=%s",
                              w->task->o.meta.project, w->task->o.meta.name, uid);
    w->in_flight = true;
    gt_apic_request(g->api, EVHTTP_REQ_GET, path, NULL, ask_done, a);
    free(path);
}

void gt_gantlet_secrets_fetch(struct gt_gantlet *g, struct gt_api_task *task,
                              gt_gantlet_start_fn *start)
{
    const char *uid = task->o.meta.uid;
    struct wait *w = gt_strmap_get(&g->secrets, uid);
    if (w) {
        gt_api_task_free(w->task);
        w->task = task;
        return;
    }
    w = gt_xcalloc(1, sizeof(*w));
    w->task = task;
    w->start = start;
    gt_strmap_put(&g->secrets, uid, w);
    ask_send(g, uid, w);
}

void gt_gantlet_secrets_forget(struct gt_gantlet *g, const char *uid)
{
    wait_free(gt_strmap_del(&g->secrets, uid));
}

void gt_gantlet_secrets_free(struct gt_gantlet *g)
{
    gt_strmap_fini(&g->secrets, wait_free);
    if (g->secrets_ev) {
        event_free(g->secrets_ev);
        g->secrets_ev = NULL;
    }
}
