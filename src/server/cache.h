/*
 * cache.c: the cache and the controllers' writes.
 */
#ifndef GT_SERVER_CACHE_H
#define GT_SERVER_CACHE_H

#include "server/server_int.h"

/* Free a cache entry (a struct gt_cobj *; NULL is fine). */
void gt_cobj_free(void *p);
/* Cache obj (taken) at key as revision rev; *old gets the replaced entry
 * (the caller's to gt_cobj_free) or NULL. */
void gt_ctl_cache_put(struct gt_ctl *c, enum gt_kind kind, const char *key, json_t *obj,
                      int64_t rev, struct gt_cobj **old);
/* The object written at key as revision rev, if this process wrote it
 * (new reference), else NULL. Forgets whatever was kept for key. */
json_t *gt_ctl_take_fresh(struct gt_ctl *c, const char *key, int64_t rev);
/* Free a c->fresh entry. */
void gt_ctl_fresh_free(void *p);
/* The cached job of task (borrowed), or NULL (none, or the task names no
 * project or job). */
const struct gt_cobj *gt_ctl_task_job(const struct gt_ctl *c, const struct gt_api_task *task);
/* Mark the job of task (borrowed) dirty. */
void gt_ctl_mark_task_job(struct gt_ctl *c, const struct gt_api_task *task);
/* The cached job at key is now job (borrowed; NULL: gone): keep c->timed,
 * the jobs gt_jobctl_tick visits, and c->live_jobs, the unfinished ones,
 * current. */
void gt_ctl_note_job(struct gt_ctl *c, const char *key, const struct gt_api_job *job);

/* c->holding, the tasks holding resources on a node, and its index by
 * node: the held tasks of node (borrowed: task key -> struct gt_cobj), or
 * NULL when it holds none. */
const struct gt_strmap *gt_ctl_holding_on(const struct gt_ctl *c, const char *node);
/* Drop key (a task's) from c->holding and its index; not there is fine. */
void gt_ctl_holding_del(struct gt_ctl *c, const char *key);
/* Free one per-node map of c->holding_on. */
void gt_ctl_holding_map_free(void *p);

/* Cache one stored object at start-up (before gt_ctl_start). */
void gt_ctl_load(struct gt_ctl *c, const struct gt_kind_info *kind, const struct gt_store_kv *kv);
/* The cached object at key (borrowed), or NULL (always for Events, which
 * are not cached, and when c is NULL: a server without controllers). */
const struct gt_cobj *gt_ctl_get(const struct gt_ctl *c, enum gt_kind kind, const char *key);
/* Run the reconcilers and the scheduler at the end of this loop turn. */
void gt_ctl_kick(struct gt_ctl *c);
void gt_ctl_mark_job(struct gt_ctl *c, const char *project, const char *job);
/* Is a controller write to key in flight? */
bool gt_ctl_busy(const struct gt_ctl *c, const char *key);
typedef void (*gt_ctl_done_fn)(struct gt_ctl *c, int rc, void *arg);
/* Write obj (NULL for DELETE) at key on the controllers' behalf,
 * conditional on expected_rev (0: any; CREATE ignores it). done (may be
 * NULL) runs when it is durable or failed; the owning job is reconciled
 * again afterwards (not after a settled job status write: c->settled). A
 * reference to obj is kept and becomes the cached object once the write
 * commits, so the caller must not change obj after the call (drop its own
 * reference as usual). Returns 0 or the immediate error (done not
 * called; the key and its job are reconciled again at the next tick). */
int gt_ctl_write(struct gt_ctl *c, enum gt_store_op op, const char *key, json_t *obj,
                 int64_t expected_rev, gt_ctl_done_fn done, void *arg);
/* Write st (a new reference, taken) as o's status, conditional on o's
 * revision, unless it equals the cached status. Errors are the write's:
 * the next reconcile tries again. */
void gt_ctl_write_status(struct gt_ctl *c, const struct gt_cobj *o, json_t *st);
/* A write of obj at key committed as revision rev (from a done callback,
 * which runs before the write's watch event): the cache takes a reference
 * and uses obj for that event instead of parsing the stored text, so obj
 * must equal what was stored and must not change afterwards. c NULL: no-op. */
void gt_ctl_written(struct gt_ctl *c, enum gt_kind kind, const char *key, int64_t rev, json_t *obj);
/* The project's allowPrivileged, stopIdleGPUJobs and department (borrowed,
 * may be NULL). */
bool gt_ctl_project_privileged(const struct gt_ctl *c, const char *project);
bool gt_ctl_project_stop_idle(const struct gt_ctl *c, const char *project);
const char *gt_ctl_project_department(const struct gt_ctl *c, const char *project);

#endif
