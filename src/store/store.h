/*
 * store: durable, versioned key/value storage for API objects, with watch.
 *
 * Keys are paths ("/jobs/proj-a/train-1"); values are opaque bytes (JSON
 * text). Every write gets the next value of one cluster-wide revision; a
 * key's mod_rev is the revision of its last write and becomes the object's
 * resourceVersion. The backend (SQLite, etcd) is a table of ops;
 * an in-memory backend serves unit tests.
 *
 * Durability: a write's done callback runs only after the write is on disk.
 * With an event base, writes queued during one loop turn are committed
 * together by a writer thread (group commit) and their callbacks run on the
 * loop thread afterwards, in revision order, followed by watch delivery.
 * Without an event base (tests, tools), each write commits synchronously and
 * its callback runs before gt_store_write returns.
 *
 * A failed write answers GT_ESTORE and leaves nothing behind. A failed fsync
 * answers GT_EFSYNC and marks the store failed: every later write gets
 * GT_EFSYNC (as PostgreSQL's fsync panic; the page cache can no longer be
 * trusted) and the owner should exit.
 *
 * Watch history: the last watch_history events are kept in memory; a watch
 * may start from any revision >= (oldest kept revision - 1), older start
 * points get GT_EGONE. History starts empty at open. With an event base,
 * a backend other processes write to (etcd) feeds the history with every
 * change from a watch of its own (from the revision at open), so watchers
 * see other writers' changes too; a write's own event may then arrive
 * after its done callback. A feed that cannot resume (its start revision
 * was compacted) fails the store.
 *
 * Error codes written "-GT_EXXX" below are the GT_EXXX constants of
 * common.h, which are already negative: compare with rc == GT_ENOTFOUND.
 *
 * Threads: every function is called from the owner's thread (the event
 * loop's, when there is one); done and watch callbacks run there too. Close
 * the store before freeing its event base.
 */
#ifndef GT_STORE_H
#define GT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

struct event_base;
struct gt_store;
struct gt_store_backend_ops;

/* The backends. */
extern const struct gt_store_backend_ops gt_store_sqlite_backend;
extern const struct gt_store_backend_ops gt_store_memory_backend;
extern const struct gt_store_backend_ops gt_store_etcd_backend;

struct gt_store_options {
    const struct gt_store_backend_ops *backend;
    const char *path;        /* sqlite: database file; memory: ignored; etcd: its endpoints,
                              * "etcd://H1:2379,H2:2379[?cafile=FILE]" (etcd.c) */
    int64_t watch_history;   /* events kept for watch; 0 means 10000 */
    struct event_base *base; /* NULL: synchronous writes */
};

/* Open a store. Returns 0 and *out (close with gt_store_close), or a
 * negative code with err set. */
int gt_store_open(const struct gt_store_options *opt, struct gt_store **out, struct gt_err *err);

/* Commit what is queued, wait for the writer, run pending callbacks, close.
 * Writes attempted from those callbacks get -GT_ESTORE. Watches still open
 * are freed (do not unwatch them afterwards). Not from a store callback.
 * NULL is fine. */
void gt_store_close(struct gt_store *st);

/* Current revision: the newest this process knows the store reached (its
 * own commits, the feed's changes, and on etcd the revision at which a
 * refused write was checked, so that a refusal is never answered from a
 * newer state than a later read). */
int64_t gt_store_revision(const struct gt_store *st);

/* True once an fsync failed; the store accepts no writes after that. */
bool gt_store_failed(const struct gt_store *st);

/* One stored key. In callbacks all pointers are borrowed for the call. */
struct gt_store_kv {
    char *key;
    char *value; /* NUL-terminated for convenience; value_len excludes it */
    size_t value_len;
    int64_t create_rev;
    int64_t mod_rev;
};
/* Free what gt_store_get filled in (not kv itself). */
void gt_store_kv_fini(struct gt_store_kv *kv);

/* Read the committed value of key into *kv (caller calls gt_store_kv_fini).
 * 0, -GT_ENOTFOUND, or -GT_ESTORE. */
int gt_store_get(struct gt_store *st, const char *key, struct gt_store_kv *kv, struct gt_err *err);

/* Called for each key under a prefix, in key order; kv is borrowed. Return
 * non-zero to stop early. */
typedef int (*gt_store_list_fn)(const struct gt_store_kv *kv, void *arg);

/* List committed keys starting with prefix. *rev (may be NULL) gets the
 * revision the listing reflects, to start a watch from. 0 or -GT_ESTORE. */
int gt_store_list(struct gt_store *st, const char *prefix, gt_store_list_fn fn, void *arg,
                  int64_t *rev, struct gt_err *err);

enum gt_store_op {
    GT_STORE_CREATE, /* fails -GT_EEXISTS if key exists */
    GT_STORE_UPDATE, /* fails -GT_ENOTFOUND if absent, -GT_ECONFLICT if expected_rev != mod_rev */
    GT_STORE_DELETE, /* same preconditions as UPDATE */
};

/* Completion of a write: rc 0 and rev (the write's revision), or rc
 * -GT_EEXISTS/-GT_ENOTFOUND/-GT_ECONFLICT (nothing written),
 * -GT_ESTORE (write failed, nothing written) or -GT_EFSYNC (store failed).
 * err is borrowed for the call. */
typedef void (*gt_store_done_fn)(int rc, int64_t rev, const struct gt_err *err, void *arg);

/* Queue a write. value/len are copied (ignored for DELETE). expected_rev 0
 * means "any" for UPDATE/DELETE. done may be NULL. Returns 0 when queued
 * (the result comes through done), or -GT_EFSYNC at once if the store has
 * failed, or -GT_ESTORE once gt_store_close has begun (done is not called). */
int gt_store_write(struct gt_store *st, enum gt_store_op op, const char *key, const char *value,
                   size_t len, int64_t expected_rev, gt_store_done_fn done, void *arg);

/* A guard: a write that carries one commits only if, in the same
 * transaction, key exists with exactly this create_rev and value (the
 * leader key of gt_store_elect: a replica deposed since it was elected
 * cannot write). A failed guard answers -GT_ENOTLEADER and writes nothing.
 * SQLite and memory serve one process, which is always the leader: there
 * the guard always holds. Strings are borrowed for the call. */
struct gt_store_guard {
    const char *key;
    int64_t create_rev;
    const char *value;
};

/* As gt_store_write, with guard (NULL: none; copied, so the caller's may go
 * after the call). */
int gt_store_write_guarded(struct gt_store *st, const struct gt_store_guard *guard,
                           enum gt_store_op op, const char *key, const char *value, size_t len,
                           int64_t expected_rev, gt_store_done_fn done, void *arg);

/* A change, as delivered to watchers. For DELETE, value is the last value
 * and mod_rev the revision of the delete. Borrowed for the call. */
enum gt_store_event_type { GT_STORE_EV_PUT, GT_STORE_EV_DELETE };
struct gt_store_event {
    enum gt_store_event_type type;
    bool created; /* PUT that created the key */
    const char *key;
    const char *value;
    size_t value_len;
    int64_t create_rev;
    int64_t mod_rev;
};
typedef void (*gt_store_watch_fn)(const struct gt_store_event *ev, void *arg);

struct gt_store_watch;
/* Watch keys under prefix for events with revision > from_rev: history is
 * replayed synchronously inside this call, then live events follow from
 * the loop. Returns 0 and *out (cancel with gt_store_unwatch), or
 * -GT_EGONE if from_rev is older than the kept history. */
int gt_store_watch(struct gt_store *st, const char *prefix, int64_t from_rev, gt_store_watch_fn fn,
                   void *arg, struct gt_store_watch **out, struct gt_err *err);
/* Stop a watch; safe to call from inside its own callback. NULL is fine. */
void gt_store_unwatch(struct gt_store_watch *w);

/* Leadership, as gt_store_elect reports it on the loop thread: leader
 * true with guard (borrowed for the call: the guard every write of the
 * leader's should carry) and rev, the store revision at which it was
 * elected (its cache is current once gt_store_seen_revision reaches it);
 * leader false: leadership is lost (the lease could not be renewed or the
 * key is gone), guard NULL. */
typedef void (*gt_store_elect_fn)(bool leader, const struct gt_store_guard *guard, int64_t rev,
                                  void *arg);

/* Campaign for leadership under key with value (this replica's id), with a
 * lease of ttl_s seconds renewed every renew_ms (etcd: lease grant and
 * keepalive through the gateway; the key is created only if absent,
 * carrying the lease, so it vanishes ttl_s after the leader stops renewing;
 * a follower retries every renew_ms). On SQLite and memory the caller is
 * the only process: fn runs at once, inside this call, with leader true.
 * Needs an event base for etcd (-GT_EINVAL without one). Once only per
 * store; closing the store revokes the lease of a leader (a clean handover).
 * 0 or a negative code with err set; fn runs on the loop thread. */
int gt_store_elect(struct gt_store *st, const char *key, const char *value, int ttl_s, int renew_ms,
                   gt_store_elect_fn fn, void *arg, struct gt_err *err);

/* True when other processes write to this store too and a feed brings
 * their changes (etcd with an event base): a write's own watch event may
 * then come after its done callback and after other writers' events. */
bool gt_store_feeding(const struct gt_store *st);

/* The revision of the newest change the watch history has seen: this
 * process's own writes, and on etcd the changes of every other writer as
 * the backend's watch feed delivers them. */
int64_t gt_store_seen_revision(const struct gt_store *st);

/* Counters since open: *commits gets the number of backend transactions
 * (batches), *writes the number of writes they carried; writes/commits is
 * the group-commit factor. Either pointer may be NULL. */
void gt_store_stats(const struct gt_store *st, uint64_t *commits, uint64_t *writes);

/* Fault injection at numbered points (SQLite-style): make the nth future
 * occurrence (1 = the next one) of a point fail. Used by tests through
 * gantryd's --fault-injection endpoint. WRITE fails a write to the
 * database (the batch answers -GT_ESTORE), FSYNC an fsync (-GT_EFSYNC; the
 * store fails). nth <= 0 disarms. */
enum gt_store_fault { GT_STORE_FAULT_WRITE, GT_STORE_FAULT_FSYNC };
void gt_store_fault_arm(struct gt_store *st, enum gt_store_fault point, int nth);

#endif
