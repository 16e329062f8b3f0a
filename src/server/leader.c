/*
 * Which gantryd replica runs the scheduler and the controllers. Every
 * replica serves the API (writes go to the store, with the API's own
 * validation, from whichever replica a client reached); only the leader
 * reconciles and schedules, and every write it makes for them carries the
 * guard of its election (storeio.c), so that a replica deposed without
 * noticing yet (paused, partitioned) cannot bind a task or change a job.
 *
 *   NOT_READY --cache loaded--> FOLLOWER --elected--> ELECTED
 *   ELECTED --cache has the election's revision--> LEADER (controllers start)
 *   ELECTED/LEADER --leadership lost--> drain, exit 1
 *
 * A new leader acts only once its watch-fed cache holds every change up to
 * the revision of its election (the cache is current), and its controllers
 * start then, which gives every node the full --node-grace from the
 * takeover before it can be declared lost (nodes.c counts from the
 * controllers' start): heartbeats are Node writes any replica takes, but
 * an agent may have been moving to another replica meanwhile.
 *
 * Leaving on lost leadership, instead of stopping the controllers in
 * place, is what kube-controller-manager does: no half-stopped reconciler
 * state, and the process supervisor starts a clean follower.
 *
 * On SQLite (one process) the store reports leadership at once.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/ctl.h"
#include "server/leader.h"
#include "server/reply.h"

#define LEADER_KEY "gantry-leader" /* outside "/": no API kind sees it */
#define CATCH_UP_POLL_MS 5

static const char *role_name(enum gt_server_role r)
{
    switch (r) {
    case GT_ROLE_LEADER:
        return "leader";
    case GT_ROLE_FOLLOWER:
    case GT_ROLE_ELECTED:
        return "follower";
    default:
        return "not ready";
    }
}

/* Elected: start the controllers once the cache has caught up. */
static void on_catch_up(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gt_server *s = arg;
    if (s->role != GT_ROLE_ELECTED || s->draining) {
        return;
    }
    if (gt_store_seen_revision(s->store) < s->leader_rev) {
        struct timeval tv = {.tv_sec = 0, .tv_usec = CATCH_UP_POLL_MS * 1000};
        evtimer_add(s->leader_timer, &tv);
        return;
    }
    struct gt_err err = {0};
    if (gt_ctl_start(s->ctl, &err) != 0) {
        gt_log_error("cannot start the controllers", "err=\"%s\"", err.msg);
        s->drain(s, 1);
        return;
    }
    s->role = GT_ROLE_LEADER;
    gt_log_info("leading", "replica=%s rev=%lld", s->replica_id, (long long)s->leader_rev);
}

static void on_elect(bool leader, const struct gt_store_guard *guard, int64_t rev, void *arg)
{
    struct gt_server *s = arg;
    s->leader_changes++;
    if (!leader) {
        gt_log_error("leadership lost; exiting to restart as a follower", "replica=%s exit=1",
                     s->replica_id);
        s->role = GT_ROLE_NOT_READY;
        if (s->drain) {
            s->drain(s, 1);
        }
        return;
    }
    free((char *)s->guard.key);
    free((char *)s->guard.value);
    s->guard = (struct gt_store_guard){.key = gt_xstrdup(guard->key),
                                       .create_rev = guard->create_rev,
                                       .value = gt_xstrdup(guard->value)};
    s->have_guard = true;
    s->leader_rev = rev;
    s->role = GT_ROLE_ELECTED;
    if (s->leader_timer) {
        on_catch_up(-1, 0, s);
    }
}

int gt_server_leader_start(struct gt_server *s, struct gt_err *err)
{
    if (s->cfg->replica_id) {
        s->replica_id = gt_xstrdup(s->cfg->replica_id);
    } else {
        char host[128] = "gantryd", uid[40];
        gethostname(host, sizeof(host) - 1);
        gt_uuid4(&s->uuids, uid, sizeof(uid));
        s->replica_id = gt_xasprintf("%s-%d-%.8s", host, (int)getpid(), uid);
    }
    s->role = GT_ROLE_FOLLOWER;
    s->leader_timer = evtimer_new(s->base, on_catch_up, s);
    int rc = gt_store_elect(s->store, LEADER_KEY, s->replica_id, (int)s->cfg->leader_lease_ttl_s,
                            (int)s->cfg->leader_renew_ms, on_elect, s, err);
    return rc; /* on SQLite the controllers have started inside the call */
}

void gt_server_leader_stop(struct gt_server *s)
{
    if (s->leader_timer) {
        event_free(s->leader_timer);
        s->leader_timer = NULL;
    }
    free((char *)s->guard.key);
    free((char *)s->guard.value);
    s->guard = (struct gt_store_guard){0};
    s->have_guard = false;
    free(s->replica_id);
    s->replica_id = NULL;
}

void gt_server_readyz(struct gt_req *r)
{
    const struct gt_server *s = r->s;
    bool ready =
        (s->role == GT_ROLE_LEADER || s->role == GT_ROLE_FOLLOWER || s->role == GT_ROLE_ELECTED) &&
        !s->draining && !s->failed && !gt_store_failed(s->store);
    json_t *o = json_pack("{s:s,s:s,s:I}", "status", ready ? role_name(s->role) : "not ready",
                          "replica", s->replica_id ? s->replica_id : "", "revision",
                          (json_int_t)gt_store_seen_revision(s->store));
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    gt_req_reply(r, ready ? 200 : 503, text, strlen(text));
    free(text);
}

void gt_server_leader_metrics(const struct gt_server *s, struct gt_buf *out)
{
    gt_buf_printf(out,
                  "# HELP gantry_is_leader 1 while this replica runs the scheduler and "
                  "controllers.\n"
                  "# TYPE gantry_is_leader gauge\n"
                  "gantry_is_leader %d\n"
                  "# HELP gantry_leader_changes_total Times this replica became leader or lost "
                  "leadership.\n"
                  "# TYPE gantry_leader_changes_total counter\n"
                  "gantry_leader_changes_total %llu\n",
                  s->role == GT_ROLE_LEADER, (unsigned long long)s->leader_changes);
}
