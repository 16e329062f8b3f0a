/*
 * sqlite.c: the SQLite store backend.
 *
 * One database file in WAL mode with synchronous=FULL, so a commit is on
 * disk when COMMIT returns. Tables: kv(key, value, create_rev, mod_rev) and
 * meta('rev' -> the current revision, kept apart so that deleting the
 * newest key never moves the revision back). kv is a rowid table with key
 * as its unique index: its rows (an object's JSON, ~1 KiB) are too large
 * for a WITHOUT ROWID table, which keeps whole rows in its B-tree's leaves
 * a few to a page and rebalances them on most writes (SQLite's guidance:
 * rows under a twentieth of a page); as a rowid table an update rewrites
 * one row's page and leaves the key index alone, about half the writer's
 * CPU for the same writes. A file with the earlier WITHOUT ROWID kv is
 * converted when opened, in one transaction.
 *
 * Two connections: the writer (used by apply, on the writer thread) and the
 * reader (get/list, on the owner's thread); WAL lets the reader see the last
 * commit while the writer works. Each is used by one thread at a time, so
 * both are opened NOMUTEX. Statements are prepared once and cached.
 *
 * Fault injection: every store registers its own VFS ("gt-fault-<addr>")
 * wrapping the default one, with pAppData pointing at this store's state;
 * the writer opens the database through it. Its xWrite and xSync fail on
 * the armed occurrence (counters in struct sq, so nothing is global). The
 * reader uses the default VFS, so reads never consume a fault.
 */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store/store_int.h"

enum { BUSY_TIMEOUT_MS = 5000 };

enum wstmt { W_BEGIN, W_COMMIT, W_ROLLBACK, W_SELECT, W_INSERT, W_UPDATE, W_DELETE, W_SETREV, W_N };
enum rstmt { R_BEGIN, R_COMMIT, R_GET, R_REV, R_LIST_RANGE, R_LIST_FROM, R_N };

static const char *const wsql[W_N] = {
    [W_BEGIN] = "BEGIN IMMEDIATE",
    [W_COMMIT] = "COMMIT",
    [W_ROLLBACK] = "ROLLBACK",
    [W_SELECT] = "SELECT create_rev, mod_rev, value FROM kv WHERE key = ?1",
    [W_INSERT] = "INSERT INTO kv(key, value, create_rev, mod_rev) VALUES (?1, ?2, ?3, ?3)",
    [W_UPDATE] = "UPDATE kv SET value = ?2, mod_rev = ?3 WHERE key = ?1",
    [W_DELETE] = "DELETE FROM kv WHERE key = ?1",
    [W_SETREV] = "UPDATE meta SET v = ?1 WHERE k = 'rev'",
};

static const char *const rsql[R_N] = {
    [R_BEGIN] = "BEGIN",
    [R_COMMIT] = "COMMIT",
    [R_GET] = "SELECT key, value, create_rev, mod_rev FROM kv WHERE key = ?1",
    [R_REV] = "SELECT v FROM meta WHERE k = 'rev'",
    [R_LIST_RANGE] = ("SELECT key, value, create_rev, mod_rev FROM kv"
                      " WHERE key >= ?1 AND key < ?2 ORDER BY key"),
    [R_LIST_FROM] = "SELECT key, value, create_rev, mod_rev FROM kv WHERE key >= ?1 ORDER BY key",
};

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, value BLOB,"
    " create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL) WITHOUT ROWID;"
    "INSERT OR IGNORE INTO meta(k, v) VALUES ('rev', 0);";

/* kv as a WITHOUT ROWID table (files made before the rowid kv) into the
 * kv of schema_sql, every row kept (NULL: schema_sql's place). */
static const char *const kv_convert_sql[] = {
    "BEGIN IMMEDIATE",
    "ALTER TABLE kv RENAME TO kv_without_rowid",
    NULL,
    "INSERT INTO kv(key, value, create_rev, mod_rev)"
    " SELECT key, value, create_rev, mod_rev FROM kv_without_rowid ORDER BY key",
    "DROP TABLE kv_without_rowid",
    "COMMIT",
};

struct sq {
    sqlite3 *wdb;
    sqlite3 *rdb;
    sqlite3_stmt *w[W_N];
    sqlite3_stmt *r[R_N];
    int64_t rev; /* writer side: revision of the last commit */
    struct gt_store_faults faults;
    sqlite3_vfs vfs; /* this store's fault VFS; pAppData = this struct */
    sqlite3_vfs *real_vfs;
    char *vfs_name;
    bool vfs_registered;
};

/* ---- the fault-injecting VFS: forwards everything to real_vfs ---- */

struct shim_file {
    sqlite3_file base; /* pMethods = &shim_io while real is open */
    struct sq *s;
    sqlite3_file *real; /* follows this struct in the same allocation */
};

#define SHIM_HDR ((sizeof(struct shim_file) + 15) & ~(size_t)15)

static sqlite3_file *real_of(sqlite3_file *f)
{
    return ((struct shim_file *)f)->real;
}

static int shim_close(sqlite3_file *f)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xClose(r);
}

static int shim_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xRead(r, buf, amt, off);
}

static int shim_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
    struct shim_file *sf = (struct shim_file *)f;
    if (gt_store_faults_hit(&sf->s->faults, GT_STORE_FAULT_WRITE)) {
        return SQLITE_IOERR_WRITE;
    }
    return sf->real->pMethods->xWrite(sf->real, buf, amt, off);
}

static int shim_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xTruncate(r, size);
}

static int shim_sync(sqlite3_file *f, int flags)
{
    struct shim_file *sf = (struct shim_file *)f;
    if (gt_store_faults_hit(&sf->s->faults, GT_STORE_FAULT_FSYNC)) {
        return SQLITE_IOERR_FSYNC;
    }
    return sf->real->pMethods->xSync(sf->real, flags);
}

static int shim_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xFileSize(r, size);
}

static int shim_lock(sqlite3_file *f, int lock)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xLock(r, lock);
}

static int shim_unlock(sqlite3_file *f, int lock)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xUnlock(r, lock);
}

static int shim_check_reserved(sqlite3_file *f, int *out)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xCheckReservedLock(r, out);
}

static int shim_file_control(sqlite3_file *f, int op, void *arg)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xFileControl(r, op, arg);
}

static int shim_sector_size(sqlite3_file *f)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xSectorSize(r);
}

static int shim_device_chars(sqlite3_file *f)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xDeviceCharacteristics(r);
}

static int shim_shm_map(sqlite3_file *f, int pg, int pgsz, int extend, void volatile **pp)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xShmMap(r, pg, pgsz, extend, pp);
}

static int shim_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xShmLock(r, offset, n, flags);
}

static void shim_shm_barrier(sqlite3_file *f)
{
    sqlite3_file *r = real_of(f);
    r->pMethods->xShmBarrier(r);
}

static int shim_shm_unmap(sqlite3_file *f, int del)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xShmUnmap(r, del);
}

static int shim_fetch(sqlite3_file *f, sqlite3_int64 off, int amt, void **pp)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xFetch(r, off, amt, pp);
}

static int shim_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    sqlite3_file *r = real_of(f);
    return r->pMethods->xUnfetch(r, off, p);
}

static const sqlite3_io_methods shim_io = {
    .iVersion = 3,
    .xClose = shim_close,
    .xRead = shim_read,
    .xWrite = shim_write,
    .xTruncate = shim_truncate,
    .xSync = shim_sync,
    .xFileSize = shim_file_size,
    .xLock = shim_lock,
    .xUnlock = shim_unlock,
    .xCheckReservedLock = shim_check_reserved,
    .xFileControl = shim_file_control,
    .xSectorSize = shim_sector_size,
    .xDeviceCharacteristics = shim_device_chars,
    .xShmMap = shim_shm_map,
    .xShmLock = shim_shm_lock,
    .xShmBarrier = shim_shm_barrier,
    .xShmUnmap = shim_shm_unmap,
    .xFetch = shim_fetch,
    .xUnfetch = shim_unfetch,
};

static sqlite3_vfs *real_vfs(sqlite3_vfs *vfs)
{
    return ((struct sq *)vfs->pAppData)->real_vfs;
}

static int shim_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
    struct shim_file *sf = (struct shim_file *)f;
    sf->s = vfs->pAppData;
    sf->real = (sqlite3_file *)((char *)f + SHIM_HDR);
    int rc = sf->s->real_vfs->xOpen(sf->s->real_vfs, name, sf->real, flags, out);
    f->pMethods = sf->real->pMethods ? &shim_io : NULL;
    return rc;
}

static int shim_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    return real_vfs(vfs)->xDelete(real_vfs(vfs), name, sync_dir);
}

static int shim_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    return real_vfs(vfs)->xAccess(real_vfs(vfs), name, flags, out);
}

static int shim_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
    return real_vfs(vfs)->xFullPathname(real_vfs(vfs), name, n, out);
}

static void *shim_dlopen(sqlite3_vfs *vfs, const char *name)
{
    return real_vfs(vfs)->xDlOpen(real_vfs(vfs), name);
}

static void shim_dlerror(sqlite3_vfs *vfs, int n, char *msg)
{
    real_vfs(vfs)->xDlError(real_vfs(vfs), n, msg);
}

typedef void (*dl_sym_fn)(void);
static dl_sym_fn shim_dlsym(sqlite3_vfs *vfs, void *h, const char *sym)
{
    return real_vfs(vfs)->xDlSym(real_vfs(vfs), h, sym);
}

static void shim_dlclose(sqlite3_vfs *vfs, void *h)
{
    real_vfs(vfs)->xDlClose(real_vfs(vfs), h);
}

static int shim_randomness(sqlite3_vfs *vfs, int n, char *out)
{
    return real_vfs(vfs)->xRandomness(real_vfs(vfs), n, out);
}

static int shim_sleep(sqlite3_vfs *vfs, int us)
{
    return real_vfs(vfs)->xSleep(real_vfs(vfs), us);
}

static int shim_current_time(sqlite3_vfs *vfs, double *out)
{
    return real_vfs(vfs)->xCurrentTime(real_vfs(vfs), out);
}

static int shim_last_error(sqlite3_vfs *vfs, int n, char *out)
{
    return real_vfs(vfs)->xGetLastError(real_vfs(vfs), n, out);
}

static int shim_current_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
    return real_vfs(vfs)->xCurrentTimeInt64(real_vfs(vfs), out);
}

static int vfs_register(struct sq *s, struct gt_err *err)
{
    s->real_vfs = sqlite3_vfs_find(NULL);
    if (!s->real_vfs || s->real_vfs->iVersion < 2) {
        return gt_err_set(err, GT_ESTORE, "sqlite: no usable default VFS");
    }
    s->vfs_name = gt_xasprintf("gt-fault-%p", (void *)s);
    s->vfs = (sqlite3_vfs){
        .iVersion = 2,
        .szOsFile = (int)(SHIM_HDR + (size_t)s->real_vfs->szOsFile),
        .mxPathname = s->real_vfs->mxPathname,
        .zName = s->vfs_name,
        .pAppData = s,
        .xOpen = shim_open,
        .xDelete = shim_delete,
        .xAccess = shim_access,
        .xFullPathname = shim_full_pathname,
        .xDlOpen = shim_dlopen,
        .xDlError = shim_dlerror,
        .xDlSym = shim_dlsym,
        .xDlClose = shim_dlclose,
        .xRandomness = shim_randomness,
        .xSleep = shim_sleep,
        .xCurrentTime = shim_current_time,
        .xGetLastError = shim_last_error,
        .xCurrentTimeInt64 = shim_current_time64,
    };
    int rc = sqlite3_vfs_register(&s->vfs, 0);
    if (rc != SQLITE_OK) {
        return gt_err_set(err, GT_ESTORE, "sqlite: register VFS: %s", sqlite3_errstr(rc));
    }
    s->vfs_registered = true;
    return 0;
}

/* ---- open/close ---- */

static int db_err(sqlite3 *db, struct gt_err *err, const char *what)
{
    return gt_err_set(err, GT_ESTORE, "sqlite: %s: %s", what, sqlite3_errmsg(db));
}

static int exec(sqlite3 *db, const char *sql, struct gt_err *err)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        return db_err(db, err, sql);
    }
    return 0;
}

static int prepare_all(sqlite3 *db, const char *const *sql, sqlite3_stmt **st, int n,
                       struct gt_err *err)
{
    for (int i = 0; i < n; i++) {
        if (sqlite3_prepare_v3(db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &st[i], NULL) !=
            SQLITE_OK) {
            return db_err(db, err, sql[i]);
        }
    }
    return 0;
}

static int db_connect(const char *path, const char *vfs, bool writer, sqlite3 **db,
                      struct gt_err *err)
{
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (writer ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(path, db, flags, vfs);
    if (rc != SQLITE_OK) {
        return gt_err_set(err, GT_ESTORE, "sqlite: open %s: %s", path,
                          *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
    }
    sqlite3_extended_result_codes(*db, 1);
    sqlite3_busy_timeout(*db, BUSY_TIMEOUT_MS);
    if (writer) {
        return exec(*db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", err);
    }
    /* reads of the database file through a memory map, not a pread each
     * page: with many objects most GETs miss SQLite's small page cache */
    return exec(*db, "PRAGMA query_only=1; PRAGMA mmap_size=1073741824;", err);
}

/* Convert a WITHOUT ROWID kv (kv_convert_sql); nothing when kv is a rowid
 * table already or does not exist yet. A failure rolls back: the file
 * stays as it was. */
static int convert_kv(sqlite3 *db, const char *path, struct gt_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'kv'"
                           " AND sql LIKE '%WITHOUT ROWID%'",
                           -1, &st, NULL) != SQLITE_OK) {
        return db_err(db, err, "read schema");
    }
    int step = sqlite3_step(st);
    sqlite3_finalize(st);
    if (step == SQLITE_DONE) {
        return 0;
    }
    if (step != SQLITE_ROW) {
        return db_err(db, err, "read schema");
    }
    for (size_t i = 0; i < GT_ARRAY_LEN(kv_convert_sql); i++) {
        int rc = exec(db, kv_convert_sql[i] ? kv_convert_sql[i] : schema_sql, err);
        if (rc != 0) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return rc;
        }
    }
    gt_log_info("store converted", "path=%s table=kv to=rowid", path);
    return 0;
}

/* quick_check (not the full integrity_check, which is slow on big files). */
static int quick_check(struct sq *s, const char *path, struct gt_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->wdb, "PRAGMA quick_check", -1, &st, NULL) != SQLITE_OK) {
        return db_err(s->wdb, err, "quick_check");
    }
    int rc = 0;
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = db_err(s->wdb, err, "quick_check");
    } else {
        const char *res = (const char *)sqlite3_column_text(st, 0);
        if (!res || strcmp(res, "ok") != 0) {
            rc = gt_err_set(err, GT_ESTORE, "sqlite: %s: quick_check: %s", path, res ? res : "?");
        }
    }
    sqlite3_finalize(st);
    if (rc == 0) {
        gt_log_info("store opened", "path=%s quick_check=ok", path);
    } else {
        gt_log_error("store corrupt", "path=%s", path);
    }
    return rc;
}

static int read_rev(sqlite3 *db, sqlite3_stmt *st, int64_t *rev, struct gt_err *err)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *rev = sqlite3_column_int64(st, 0);
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 0 : db_err(db, err, "read revision");
}

static void sq_close(void *be)
{
    struct sq *s = be;
    if (!s) {
        return;
    }
    for (int i = 0; i < R_N; i++) {
        sqlite3_finalize(s->r[i]);
    }
    for (int i = 0; i < W_N; i++) {
        sqlite3_finalize(s->w[i]);
    }
    sqlite3_close(s->rdb);
    sqlite3_close(s->wdb);
    if (s->vfs_registered) {
        sqlite3_vfs_unregister(&s->vfs);
    }
    free(s->vfs_name);
    free(s);
}

static int sq_open(const char *path, void **be, struct gt_err *err)
{
    *be = NULL;
    if (!path || !*path) {
        return gt_err_set(err, GT_ESTORE, "sqlite: no database path");
    }
    struct sq *s = gt_xcalloc(1, sizeof(*s));
    int rc = vfs_register(s, err);
    if (rc == 0) {
        rc = db_connect(path, s->vfs_name, true, &s->wdb, err);
    }
    if (rc == 0) {
        rc = quick_check(s, path, err);
    }
    if (rc == 0) {
        rc = convert_kv(s->wdb, path, err);
    }
    if (rc == 0) {
        rc = exec(s->wdb, schema_sql, err);
    }
    if (rc == 0) {
        rc = db_connect(path, NULL, false, &s->rdb, err);
    }
    if (rc == 0) {
        rc = prepare_all(s->wdb, wsql, s->w, W_N, err);
    }
    if (rc == 0) {
        rc = prepare_all(s->rdb, rsql, s->r, R_N, err);
    }
    if (rc == 0) {
        rc = read_rev(s->rdb, s->r[R_REV], &s->rev, err);
    }
    if (rc != 0) {
        sq_close(s);
        return rc;
    }
    *be = s;
    return 0;
}

/* ---- reads (owner's thread, reader connection) ---- */

static char *copy_col(sqlite3_stmt *st, int col, size_t *len)
{
    const void *p = sqlite3_column_blob(st, col);
    size_t n = (size_t)sqlite3_column_bytes(st, col);
    char *out = gt_xmalloc(n + 1);
    if (n > 0) {
        memcpy(out, p, n);
    }
    out[n] = '\0';
    if (len) {
        *len = n;
    }
    return out;
}

static int sq_get(void *be, const char *key, struct gt_store_kv *kv, struct gt_err *err)
{
    struct sq *s = be;
    sqlite3_stmt *st = s->r[R_GET];
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    int ret = 0;
    if (rc == SQLITE_ROW) {
        kv->key = copy_col(st, 0, NULL);
        kv->value = copy_col(st, 1, &kv->value_len);
        kv->create_rev = sqlite3_column_int64(st, 2);
        kv->mod_rev = sqlite3_column_int64(st, 3);
    } else if (rc == SQLITE_DONE) {
        ret = gt_err_set(err, GT_ENOTFOUND, "%s: not found", key);
    } else {
        ret = db_err(s->rdb, err, "get");
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return ret;
}

/* The smallest string above every string starting with prefix, or NULL
 * when there is none (empty prefix or all 0xff). Caller frees. */
static char *prefix_end(const char *prefix)
{
    size_t n = strlen(prefix);
    while (n > 0 && (unsigned char)prefix[n - 1] == 0xff) {
        n--;
    }
    if (n == 0) {
        return NULL;
    }
    char *end = gt_xstrndup(prefix, n);
    end[n - 1] = (char)((unsigned char)end[n - 1] + 1);
    return end;
}

static int list_rows(struct sq *s, sqlite3_stmt *st, gt_store_list_fn fn, void *arg,
                     struct gt_err *err)
{
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct gt_store_kv kv = {
            .key = (char *)sqlite3_column_text(st, 0),
            .value = (char *)sqlite3_column_text(st, 1),
            .create_rev = sqlite3_column_int64(st, 2),
            .mod_rev = sqlite3_column_int64(st, 3),
        };
        kv.value_len = (size_t)sqlite3_column_bytes(st, 1);
        if (!kv.value) {
            kv.value = (char *)"";
        }
        if (fn(&kv, arg) != 0) {
            return 0;
        }
    }
    return rc == SQLITE_DONE ? 0 : db_err(s->rdb, err, "list");
}

static int sq_list(void *be, const char *prefix, gt_store_list_fn fn, void *arg, int64_t *rev,
                   struct gt_err *err)
{
    struct sq *s = be;
    char *end = prefix_end(prefix);
    sqlite3_stmt *st = s->r[end ? R_LIST_RANGE : R_LIST_FROM];
    bool own_stmt = sqlite3_stmt_busy(st); /* a list inside a list callback */
    if (own_stmt && sqlite3_prepare_v2(s->rdb, sqlite3_sql(st), -1, &st, NULL) != SQLITE_OK) {
        free(end);
        return db_err(s->rdb, err, "list");
    }
    /* One read transaction, so *rev matches the rows. */
    bool outer = sqlite3_get_autocommit(s->rdb);
    int rc = 0;
    if (outer && sqlite3_step(s->r[R_BEGIN]) != SQLITE_DONE) {
        rc = db_err(s->rdb, err, "begin");
    }
    sqlite3_reset(s->r[R_BEGIN]);
    int64_t r = 0;
    if (rc == 0) {
        rc = read_rev(s->rdb, s->r[R_REV], &r, err);
    }
    if (rc == 0) {
        sqlite3_bind_text(st, 1, prefix, -1, SQLITE_STATIC);
        if (end) {
            sqlite3_bind_text(st, 2, end, -1, SQLITE_STATIC);
        }
        rc = list_rows(s, st, fn, arg, err);
    }
    if (own_stmt) {
        sqlite3_finalize(st);
    } else {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
    if (outer && !sqlite3_get_autocommit(s->rdb)) {
        sqlite3_step(s->r[R_COMMIT]);
        sqlite3_reset(s->r[R_COMMIT]);
    }
    free(end);
    if (rc == 0 && rev) {
        *rev = r;
    }
    return rc;
}

/* ---- writes (writer thread, writer connection) ---- */

/* Step a write statement to completion and reset it; SQLite's code. */
static int run(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

/* Look key up in the writer's transaction: SQLITE_ROW (present: revs and,
 * if want_value, the value copied into w), SQLITE_DONE, or an error. */
static int lookup(struct sq *s, struct gt_store_wop *w, int64_t *mod_rev, bool want_value)
{
    sqlite3_stmt *st = s->w[W_SELECT];
    sqlite3_bind_text(st, 1, w->key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        w->create_rev = sqlite3_column_int64(st, 0);
        *mod_rev = sqlite3_column_int64(st, 1);
        if (want_value) {
            w->old_value = copy_col(st, 2, &w->old_value_len);
        }
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
}

/* One op inside the transaction: sets w->rc; returns SQLite's code of a
 * failed statement (the batch then fails) or SQLITE_OK. A create skips the
 * lookup: the key's PRIMARY KEY refuses it when it exists (that statement
 * alone is undone, the transaction goes on), which saves a SELECT on the
 * commonest write. */
static int apply_one(struct sq *s, struct gt_store_wop *w, int64_t *rev)
{
    bool create = w->op == GT_STORE_CREATE;
    int rc;
    if (!create) {
        int64_t mod_rev = 0;
        rc = lookup(s, w, &mod_rev, w->op == GT_STORE_DELETE);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
            return rc;
        }
        w->rc = gt_store_wop_check(w, rc == SQLITE_ROW, mod_rev);
        if (w->rc != 0) {
            free(w->old_value);
            w->old_value = NULL;
            return SQLITE_OK;
        }
    }
    int64_t next = *rev + 1;
    sqlite3_stmt *st = s->w[create ? W_INSERT : w->op == GT_STORE_UPDATE ? W_UPDATE : W_DELETE];
    sqlite3_bind_text(st, 1, w->key, -1, SQLITE_STATIC);
    if (w->op != GT_STORE_DELETE) {
        sqlite3_bind_blob(st, 2, w->value, (int)w->value_len, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, next);
    }
    rc = run(st);
    if (create && (rc & 0xff) == SQLITE_CONSTRAINT) {
        w->rc = GT_EEXISTS;
        return SQLITE_OK;
    }
    if (rc != SQLITE_OK) {
        return rc;
    }
    if (create) {
        w->created = true;
        w->create_rev = next;
    }
    w->rev = next;
    *rev = next;
    return SQLITE_OK;
}

static int sq_apply(void *be, struct gt_store_wop *ops, size_t n, struct gt_err *err)
{
    struct sq *s = be;
    int64_t rev = s->rev;
    int rc = run(s->w[W_BEGIN]);
    for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
        rc = apply_one(s, &ops[i], &rev);
    }
    if (rc == SQLITE_OK && rev == s->rev) {
        run(s->w[W_ROLLBACK]); /* nothing written: no need to sync */
        return 0;
    }
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s->w[W_SETREV], 1, rev);
        rc = run(s->w[W_SETREV]);
    }
    if (rc == SQLITE_OK) {
        rc = run(s->w[W_COMMIT]);
    }
    if (rc == SQLITE_OK) {
        s->rev = rev;
        return 0;
    }
    const char *msg = sqlite3_errmsg(s->wdb);
    int code = rc == SQLITE_IOERR_FSYNC || rc == SQLITE_IOERR_DIR_FSYNC ? GT_EFSYNC : GT_ESTORE;
    gt_err_set(err, code, "sqlite: commit: %s (%d)", msg, rc);
    if (!sqlite3_get_autocommit(s->wdb)) {
        run(s->w[W_ROLLBACK]);
    }
    for (size_t i = 0; i < n; i++) {
        free(ops[i].old_value);
        ops[i].old_value = NULL;
    }
    return code;
}

static int64_t sq_revision(void *be)
{
    return ((struct sq *)be)->rev;
}

static void sq_fault_arm(void *be, enum gt_store_fault point, int nth)
{
    gt_store_faults_arm(&((struct sq *)be)->faults, point, nth);
}

const struct gt_store_backend_ops gt_store_sqlite_backend = {
    .name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .get = sq_get,
    .list = sq_list,
    .apply = sq_apply,
    .revision = sq_revision,
    .fault_arm = sq_fault_arm,
};
