/*
 * events.c: Events, folded by object and reason, written at most every 30 s.
 */
#ifndef GT_SERVER_EVENTS_H
#define GT_SERVER_EVENTS_H

#include "server/server_int.h"

/* The recorder of s: writes through s's store, sweeps Events older than
 * s->cfg->event_ttl_s seconds (--event-ttl; 0 or less: an hour) every
 * minute or every half TTL, at least a second apart. Free with
 * gt_events_free. */
struct gt_events *gt_events_new(struct gt_server *s);
/* Flush pending counts (shutdown) and free. */
void gt_events_free(struct gt_events *ev);
/* Record an Event about obj (a stored object, typed; borrowed): folded by
 * (uid, reason). type is "Normal" or "Warning". */
void gt_events_record(struct gt_events *ev, const struct gt_api_object *obj, const char *type,
                      const char *reason, const char *message);
/* The object uid was deleted: its Events' in-memory folds are dropped at
 * the next sweep once written (the stored Events stay until they expire).
 * uid is copied. */
void gt_events_forget(struct gt_events *ev, const char *uid);
/* Queue the writes of every pending increment now. */
void gt_events_flush(struct gt_events *ev);

#endif
