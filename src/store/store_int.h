/*
 * store_int.h: what a store backend implements, shared by store.c (the
 * generic layer: queue, writer thread, callbacks, watch) and the backends
 * (sqlite.c, memory.c). Included only from src/store/.
 *
 * Threads: open/close run on the owner's thread. apply runs on the writer
 * thread (or on the owner's thread in synchronous mode), get/list on the
 * owner's thread, possibly at the same time as an apply; each backend makes
 * that safe (SQLite: one connection per side; memory: a mutex).
 */
#ifndef GT_STORE_INT_H
#define GT_STORE_INT_H

#include <stdatomic.h>

#include "store/store.h"

/* One write as handed to a backend. The generic layer owns the strings;
 * apply fills in the results. */
struct gt_store_wop {
    enum gt_store_op op;
    char *key;   /* NUL-terminated copy */
    char *value; /* NUL-terminated copy (NULL for DELETE) */
    size_t value_len;
    int64_t expected_rev; /* 0: any */
    char *guard_key;      /* NULL: unguarded; else the guard's copied strings */
    char *guard_value;
    int64_t guard_create_rev;
    gt_store_done_fn done; /* for the generic layer; backends ignore */
    void *done_arg;

    /* Filled by apply when the batch commits: */
    int rc;           /* 0 or the op's precondition failure (GT_EEXISTS, ...) */
    int64_t rev;      /* this op's revision (when rc == 0) */
    int64_t seen_rev; /* rc != 0: the store's revision its check saw (etcd: the txn's
                       * header), 0 when unknown; later reads must not be older */
    int64_t create_rev;
    bool created;    /* the op created the key */
    char *old_value; /* DELETE: the deleted value, heap, taken by the caller */
    size_t old_value_len;
};

/* Where a backend's own threads (watch feed, election) report; store.c
 * owns it, valid from feed_start/elect until the backend's close returns.
 * Every function is safe from any thread: it queues and wakes the loop. */
struct gt_store_sink;
/* A change seen by the feed (copied). */
void gt_store_sink_event(struct gt_store_sink *k, const struct gt_store_event *ev);
/* The feed ended for good (e.g. its revision was compacted): the store fails. */
void gt_store_sink_fail(struct gt_store_sink *k, const char *msg);
/* Leadership won (create_rev: the leader key's; rev: the revision then) or
 * lost (leader false, the rest ignored). */
void gt_store_sink_leader(struct gt_store_sink *k, bool leader, int64_t create_rev, int64_t rev);

struct gt_store_backend_ops {
    const char *name;
    /* Open the backend at path (its meaning is the backend's); *be gets the
     * state. 0 or GT_ESTORE with err set. */
    int (*open)(const char *path, void **be, struct gt_err *err);
    /* Close and free the state; NULL is fine. */
    void (*close)(void *be);
    /* As gt_store_get / gt_store_list. */
    int (*get)(void *be, const char *key, struct gt_store_kv *kv, struct gt_err *err);
    int (*list)(void *be, const char *prefix, gt_store_list_fn fn, void *arg, int64_t *rev,
                struct gt_err *err);
    /* Apply ops[0..n) as one transaction. Each op is checked against the
     * state including the earlier ops of the batch; one failing its
     * precondition gets its code in rc and is skipped; the others get
     * consecutive revisions. Returns 0 (committed), GT_ESTORE (nothing
     * written) or GT_EFSYNC (fsync failed; the outcome on disk is unknown
     * until reopen), with err set. */
    int (*apply)(void *be, struct gt_store_wop *ops, size_t n, struct gt_err *err);
    /* Revision of the last committed write. */
    int64_t (*revision)(void *be);
    /* As gt_store_fault_arm. Safe from any thread. */
    void (*fault_arm)(void *be, enum gt_store_fault point, int nth);
    /* Optional (NULL: this process is the only writer): start a thread that
     * reports every change after from_rev to sink, in revision order, until
     * close. 0 or GT_ESTORE with err set. */
    int (*feed_start)(void *be, int64_t from_rev, struct gt_store_sink *sink, struct gt_err *err);
    /* Optional (NULL: always the leader): start campaigning (gt_store_elect)
     * on a thread of the backend's, reporting to sink; close stops it and
     * revokes a leader's lease. 0 or GT_ESTORE with err set. */
    int (*elect)(void *be, const char *key, const char *value, int ttl_s, int renew_ms,
                 struct gt_store_sink *sink, struct gt_err *err);
};

/* Countdown for one fault point: 0 disarmed, n > 0 fails the nth hit. */
struct gt_store_faults {
    atomic_int write_nth;
    atomic_int fsync_nth;
};

/* Arm point of f (nth <= 0 disarms). */
void gt_store_faults_arm(struct gt_store_faults *f, enum gt_store_fault point, int nth);
/* Count one occurrence of point; true if this one must fail. */
bool gt_store_faults_hit(struct gt_store_faults *f, enum gt_store_fault point);

/* Precondition of w against the existing key (exists, its mod_rev): 0 or
 * GT_EEXISTS / GT_ENOTFOUND / GT_ECONFLICT. */
int gt_store_wop_check(const struct gt_store_wop *w, bool exists, int64_t mod_rev);

#endif
