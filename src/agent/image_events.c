/*
 * Events of a task's image pull, posted by the agent: the shim appends
 * "REASON\tMESSAGE" lines to STATE_DIR/events (Pulling, Pulled, or Failed)
 * before the task starts; the agent posts each new line as an Event on the
 * Task (type Warning for Failed and BackOff, else Normal)
 * (POST /apis/gantry.dev/v1/events, which gantry:nodes may create). The
 * Event's name is the task's name plus a hash of its uid and reason, so a
 * line posted again after an agent restart is refused (409) rather than
 * repeated. Once the task has started or ended the file is complete and
 * read no more.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"
#include "api/api.h"

#define EVENTS_MAX_BYTES (64 << 10)

static void post_done(int status, json_t *body, void *arg)
{
    (void)arg;
    if (status != 201 && status != 200 && status != 409) {
        gt_log_warn("event post failed", "status=%d message=\"%s\"", status, gt_apic_message(body));
    }
}

void gt_gantlet_event_post(struct gt_gantlet *g, const struct gt_ltask *t, const char *kind,
                           const char *type, const char *reason, const char *message)
{
    char key[256], hex[65], ts[32];
    bool job = !strcmp(kind, "Job") && t->obj && t->obj->spec.job;
    const char *name = job ? t->obj->spec.job : t->name;
    int n = snprintf(key, sizeof(key), "%s/%s", t->uid, reason);
    gt_sha256_hex(key, (size_t)n, hex);
    hex[16] = '\0';
    char *ev_name = gt_xasprintf("%s.%s", name, hex);
    gt_time_format(gt_now_ms(), ts, sizeof(ts));
    json_t *ev =
        json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:s}, s:s, s:s, s:s, s:i, s:s, s:s, s:{s:s}}",
                  "apiVersion", GT_API_VERSION, "kind", "Event", "metadata", "name", ev_name,
                  "involvedObject", "kind", job ? "Job" : "Task", "name", name, "project",
                  t->project, "reason", reason, "message", message, "type", type, "count", 1,
                  "firstTimestamp", ts, "lastTimestamp", ts, "source", "component", "gantlet");
    if (ev && !job) {
        json_object_set_new(json_object_get(ev, "involvedObject"), "uid", json_string(t->uid));
    }
    if (ev) {
        gt_apic_request(g->api, EVHTTP_REQ_POST, GT_API_GROUP_PREFIX "/events", ev, post_done,
                        NULL);
    }
    json_decref(ev);
    free(ev_name);
}

void gt_gantlet_task_events(struct gt_gantlet *g, struct gt_ltask *t)
{
    if (t->st.reported) {
        t->events_done = true; /* posted by an earlier run of the agent */
    }
    if (t->events_done || !t->name[0]) {
        return;
    }
    if (!t->obj->spec.template.image) {
        t->events_done = true; /* a host task pulls nothing */
        return;
    }
    /* started or ended: every line was written before */
    bool last = t->st.started || t->st.exited;
    char path[PATH_MAX + 200], *text;
    size_t len;
    snprintf(path, sizeof(path), "%s/events", t->dir);
    if (gt_file_read(path, EVENTS_MAX_BYTES, &text, &len, NULL) == 0) {
        int line = 0;
        for (char *p = text; *p;) {
            char *nl = strchr(p, '\n');
            if (!nl) {
                break; /* a line being written */
            }
            *nl = '\0';
            char *tab = strchr(p, '\t');
            if (tab && line >= t->events_posted) {
                *tab = '\0';
                /* as the kubelet's: a failed pull and its back-off are warnings */
                bool warn = !strcmp(p, "Failed") || !strcmp(p, "BackOff");
                gt_gantlet_event_post(g, t, "Task", warn ? "Warning" : "Normal", p, tab + 1);
                t->events_posted = line + 1;
            }
            line++;
            p = nl + 1;
        }
        free(text);
    }
    t->events_done = last;
}
