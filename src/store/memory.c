/*
 * memory.c: the in-memory store backend, for unit tests and tools.
 *
 * A sorted array of entry pointers (binary search by key, byte order). The
 * writer thread's apply and the owner's get/list may overlap, so all access
 * holds mu; it is recursive because a list callback may read (or, without
 * an event base, write) the store. A batch keeps an undo log so that an
 * injected fault rolls the whole batch back. Fault points: WRITE counts
 * each key written, FSYNC each batch that wrote something.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"

struct mem_entry {
    char *key;
    char *value; /* NUL-terminated */
    size_t value_len;
    int64_t create_rev;
    int64_t mod_rev;
};

enum undo_kind { UNDO_CREATE, UNDO_UPDATE, UNDO_DELETE };

/* How to take back one op of the batch being applied. */
struct undo {
    enum undo_kind kind;
    struct mem_entry *e; /* CREATE: the new entry; UPDATE: the entry; DELETE: the removed one */
    char *old_value;     /* UPDATE: previous value */
    size_t old_value_len;
    int64_t old_mod_rev;
};

struct mem {
    pthread_mutex_t mu;
    struct mem_entry **v;
    size_t n, cap;
    int64_t rev;
    uint64_t gen; /* bumped by every batch, so a list knows to re-find its place */
    struct undo *undo;
    size_t undo_cap;
    struct gt_store_faults faults;
};

/* Index of key, or where it would go; true if present. */
static bool find(const struct mem *m, const char *key, size_t *idx)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->v[mid]->key, key);
        if (c == 0) {
            *idx = mid;
            return true;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *idx = lo;
    return false;
}

static void insert_at(struct mem *m, size_t i, struct mem_entry *e)
{
    GT_VEC_RESERVE(m->v, m->cap, m->n + 1, 64);
    memmove(&m->v[i + 1], &m->v[i], (m->n - i) * sizeof(*m->v));
    m->v[i] = e;
    m->n++;
}

static void remove_at(struct mem *m, size_t i)
{
    memmove(&m->v[i], &m->v[i + 1], (m->n - i - 1) * sizeof(*m->v));
    m->n--;
}

static void entry_free(struct mem_entry *e)
{
    free(e->key);
    free(e->value);
    free(e);
}

static char *copy_value(const char *value, size_t len)
{
    char *p = gt_xmalloc(len + 1);
    if (len > 0) {
        memcpy(p, value, len);
    }
    p[len] = '\0';
    return p;
}

static int mem_open(const char *path, void **be, struct gt_err *err)
{
    (void)path;
    (void)err;
    struct mem *m = gt_xcalloc(1, sizeof(*m));
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&m->mu, &attr);
    pthread_mutexattr_destroy(&attr);
    *be = m;
    return 0;
}

static void mem_close(void *be)
{
    struct mem *m = be;
    if (!m) {
        return;
    }
    for (size_t i = 0; i < m->n; i++) {
        entry_free(m->v[i]);
    }
    free(m->v);
    free(m->undo);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static int mem_get(void *be, const char *key, struct gt_store_kv *kv, struct gt_err *err)
{
    struct mem *m = be;
    size_t i;
    pthread_mutex_lock(&m->mu);
    if (!find(m, key, &i)) {
        pthread_mutex_unlock(&m->mu);
        return gt_err_set(err, GT_ENOTFOUND, "%s: not found", key);
    }
    const struct mem_entry *e = m->v[i];
    kv->key = gt_xstrdup(e->key);
    kv->value = copy_value(e->value, e->value_len);
    kv->value_len = e->value_len;
    kv->create_rev = e->create_rev;
    kv->mod_rev = e->mod_rev;
    pthread_mutex_unlock(&m->mu);
    return 0;
}

static int mem_list(void *be, const char *prefix, gt_store_list_fn fn, void *arg, int64_t *rev,
                    struct gt_err *err)
{
    (void)err;
    struct mem *m = be;
    size_t plen = strlen(prefix);
    struct gt_buf last; /* key just visited, to find our place after a write */
    gt_buf_init(&last);
    pthread_mutex_lock(&m->mu);
    if (rev) {
        *rev = m->rev;
    }
    size_t i;
    find(m, prefix, &i);
    while (i < m->n && strncmp(m->v[i]->key, prefix, plen) == 0) {
        const struct mem_entry *e = m->v[i];
        struct gt_store_kv kv = {
            .key = e->key,
            .value = e->value,
            .value_len = e->value_len,
            .create_rev = e->create_rev,
            .mod_rev = e->mod_rev,
        };
        uint64_t gen = m->gen;
        gt_buf_reset(&last);
        gt_buf_puts(&last, e->key);
        if (fn(&kv, arg) != 0) {
            break;
        }
        if (m->gen == gen) {
            i++;
        } else if (find(m, last.data, &i)) {
            i++;
        }
    }
    pthread_mutex_unlock(&m->mu);
    gt_buf_fini(&last);
    return 0;
}

static struct undo *undo_push(struct mem *m, size_t *n_undo)
{
    GT_VEC_RESERVE(m->undo, m->undo_cap, *n_undo + 1, 64);
    struct undo *u = &m->undo[(*n_undo)++];
    memset(u, 0, sizeof(*u));
    return u;
}

/* Apply one op whose precondition holds at index i (found: key present). */
static void mutate(struct mem *m, struct gt_store_wop *w, size_t i, bool found, int64_t rev,
                   struct undo *u)
{
    w->rev = rev;
    if (w->op == GT_STORE_CREATE) {
        struct mem_entry *e = gt_xcalloc(1, sizeof(*e));
        e->key = gt_xstrdup(w->key);
        e->value = copy_value(w->value, w->value_len);
        e->value_len = w->value_len;
        e->create_rev = e->mod_rev = rev;
        insert_at(m, i, e);
        u->kind = UNDO_CREATE;
        u->e = e;
        w->created = true;
        w->create_rev = rev;
        return;
    }
    GT_ASSERT(found);
    struct mem_entry *e = m->v[i];
    u->e = e;
    w->create_rev = e->create_rev;
    if (w->op == GT_STORE_UPDATE) {
        u->kind = UNDO_UPDATE;
        u->old_value = e->value;
        u->old_value_len = e->value_len;
        u->old_mod_rev = e->mod_rev;
        e->value = copy_value(w->value, w->value_len);
        e->value_len = w->value_len;
        e->mod_rev = rev;
    } else {
        u->kind = UNDO_DELETE;
        remove_at(m, i);
        w->old_value = copy_value(e->value, e->value_len);
        w->old_value_len = e->value_len;
    }
}

/* Take back the batch's ops, newest first. */
static void rollback(struct mem *m, struct gt_store_wop *ops, size_t n_ops, size_t n_undo)
{
    for (size_t k = n_undo; k-- > 0;) {
        struct undo *u = &m->undo[k];
        size_t i;
        bool found = find(m, u->e->key, &i);
        if (u->kind == UNDO_CREATE) {
            GT_ASSERT(found);
            remove_at(m, i);
            entry_free(u->e);
        } else if (u->kind == UNDO_UPDATE) {
            free(u->e->value);
            u->e->value = u->old_value;
            u->e->value_len = u->old_value_len;
            u->e->mod_rev = u->old_mod_rev;
        } else {
            GT_ASSERT(!found);
            insert_at(m, i, u->e);
        }
    }
    for (size_t k = 0; k < n_ops; k++) {
        free(ops[k].old_value);
        ops[k].old_value = NULL;
    }
}

static void commit(struct mem *m, size_t n_undo)
{
    for (size_t k = 0; k < n_undo; k++) {
        struct undo *u = &m->undo[k];
        if (u->kind == UNDO_UPDATE) {
            free(u->old_value);
        } else if (u->kind == UNDO_DELETE) {
            entry_free(u->e);
        }
    }
}

static int mem_apply(void *be, struct gt_store_wop *ops, size_t n, struct gt_err *err)
{
    struct mem *m = be;
    int rc = 0;
    size_t n_undo = 0;
    pthread_mutex_lock(&m->mu);
    int64_t rev = m->rev;
    for (size_t k = 0; k < n && rc == 0; k++) {
        struct gt_store_wop *w = &ops[k];
        size_t i;
        bool found = find(m, w->key, &i);
        w->rc = gt_store_wop_check(w, found, found ? m->v[i]->mod_rev : 0);
        if (w->rc != 0) {
            continue;
        }
        if (gt_store_faults_hit(&m->faults, GT_STORE_FAULT_WRITE)) {
            rc = gt_err_set(err, GT_ESTORE, "memory store: injected write fault at %s", w->key);
            break;
        }
        mutate(m, w, i, found, ++rev, undo_push(m, &n_undo));
    }
    if (rc == 0 && n_undo > 0 && gt_store_faults_hit(&m->faults, GT_STORE_FAULT_FSYNC)) {
        rc = gt_err_set(err, GT_EFSYNC, "memory store: injected fsync fault");
    }
    if (rc != 0) {
        rollback(m, ops, n, n_undo);
    } else {
        commit(m, n_undo);
        m->rev = rev;
    }
    m->gen++;
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int64_t mem_revision(void *be)
{
    struct mem *m = be;
    pthread_mutex_lock(&m->mu);
    int64_t rev = m->rev;
    pthread_mutex_unlock(&m->mu);
    return rev;
}

static void mem_fault_arm(void *be, enum gt_store_fault point, int nth)
{
    struct mem *m = be;
    gt_store_faults_arm(&m->faults, point, nth);
}

const struct gt_store_backend_ops gt_store_memory_backend = {
    .name = "memory",
    .open = mem_open,
    .close = mem_close,
    .get = mem_get,
    .list = mem_list,
    .apply = mem_apply,
    .revision = mem_revision,
    .fault_arm = mem_fault_arm,
};
