/*
 * The store contract suite: every test runs against each backend (memory,
 * SQLite in a fresh temporary directory), both without an event base
 * (synchronous writes) and with one (queued writes, writer thread; the test
 * drives the loop with EVLOOP_ONCE until the callbacks it waits for ran).
 * SQLite-only tests cover reopening and the fault points on disk.
 *
 * `test_store etcd` runs the same contract (and reopening) on a real etcd
 * instead: each test starts a fresh one-member etcd on loopback (free ports,
 * data in the test's temporary directory) and kills it afterwards; exit 77
 * when no etcd binary is installed.
 */
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>
#include <sqlite3.h>

#include "store/store.h"

struct fx {
    const struct gt_store_backend_ops *backend;
    bool evented;
    char dir[64];
    char path[128];
    struct event_base *base;
    struct gt_store *st;
    pid_t etcd_pid; /* etcd backend: the member this test started */
};

static struct fx fx_mem_sync = {.backend = &gt_store_memory_backend};
static struct fx fx_mem_ev = {.backend = &gt_store_memory_backend, .evented = true};
static struct fx fx_sq_sync = {.backend = &gt_store_sqlite_backend};
static struct fx fx_sq_ev = {.backend = &gt_store_sqlite_backend, .evented = true};
static struct fx fx_etcd_sync = {.backend = &gt_store_etcd_backend};
static struct fx fx_etcd_ev = {.backend = &gt_store_etcd_backend, .evented = true};

static bool is_sqlite(const struct fx *f)
{
    return f->backend == &gt_store_sqlite_backend;
}

/* A backend whose data outlives the store (reopen finds it). */
static bool is_durable(const struct fx *f)
{
    return is_sqlite(f) || f->backend == &gt_store_etcd_backend;
}

/* ---- a real etcd for the etcd backend ---- */

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* Start a one-member etcd with its data under f->dir; f->path gets its
 * endpoint. Returns once it answers (the store opens). */
static void start_etcd(struct fx *f)
{
    int client = free_port(), peer = free_port();
    char data[96], curl[64], purl[64], cluster[80], log[96];
    snprintf(data, sizeof(data), "%s/etcd", f->dir);
    snprintf(log, sizeof(log), "%s/etcd.log", f->dir);
    snprintf(curl, sizeof(curl), "http://127.0.0.1:%d", client);
    snprintf(purl, sizeof(purl), "http://127.0.0.1:%d", peer);
    snprintf(cluster, sizeof(cluster), "m1=%s", purl);
    snprintf(f->path, sizeof(f->path), "etcd://127.0.0.1:%d", client);
    f->etcd_pid = fork();
    assert_true(f->etcd_pid >= 0);
    if (f->etcd_pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execlp("etcd", "etcd", "--name", "m1", "--data-dir", data, "--listen-client-urls", curl,
               "--advertise-client-urls", curl, "--listen-peer-urls", purl,
               "--initial-advertise-peer-urls", purl, "--initial-cluster", cluster, "--log-level",
               "error", (char *)NULL);
        _exit(127);
    }
    struct gt_store_options opt = {.backend = f->backend, .path = f->path};
    for (int i = 0; i < 300; i++) { /* up to 30 s on a loaded machine */
        struct gt_store *st;
        gt_log_set_level(GT_LOG_ERROR); /* the refused connections while it starts */
        int rc = gt_store_open(&opt, &st, NULL);
        gt_log_set_level(GT_LOG_WARN);
        if (rc == 0) {
            gt_store_close(st);
            return;
        }
        int status;
        assert_int_equal(waitpid(f->etcd_pid, &status, WNOHANG), 0);
        nanosleep(&(struct timespec){.tv_nsec = 100 * 1000 * 1000}, NULL);
    }
    fail_msg("etcd on %s never answered (see %s)", f->path, log);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void stop_etcd(struct fx *f)
{
    kill(f->etcd_pid, SIGKILL);
    waitpid(f->etcd_pid, NULL, 0);
    f->etcd_pid = 0;
    char data[96];
    snprintf(data, sizeof(data), "%s/etcd", f->dir);
    nftw(data, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    snprintf(data, sizeof(data), "%s/etcd.log", f->dir);
    unlink(data);
}

/* True if an etcd binary is on PATH. */
static bool have_etcd(void)
{
    const char *path = getenv("PATH");
    char *dirs = gt_xstrdup(path ? path : "/usr/bin:/bin"), *save = NULL;
    bool found = false;
    for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char p[512];
        snprintf(p, sizeof(p), "%s/etcd", d);
        found = access(p, X_OK) == 0;
    }
    free(dirs);
    return found;
}

static void open_store(struct fx *f, int64_t history)
{
    struct gt_store_options opt = {
        .backend = f->backend,
        .path = f->path,
        .watch_history = history,
        .base = f->base,
    };
    struct gt_err err = {0};
    int rc = gt_store_open(&opt, &f->st, &err);
    if (rc != 0) {
        fail_msg("open: %s", err.msg);
    }
}

static void reopen(struct fx *f, int64_t history)
{
    gt_store_close(f->st);
    f->st = NULL;
    open_store(f, history);
}

static int setup(void **state)
{
    struct fx *f = *state;
    snprintf(f->dir, sizeof(f->dir), "/tmp/gt-store-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/store.db", f->dir);
    if (f->backend == &gt_store_etcd_backend) {
        start_etcd(f);
    }
    f->base = f->evented ? event_base_new() : NULL;
    open_store(f, 0);
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    gt_store_close(f->st);
    f->st = NULL;
    if (f->base) {
        event_base_free(f->base);
        f->base = NULL;
    }
    if (f->etcd_pid > 0) {
        stop_etcd(f);
    }
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        char p[160];
        snprintf(p, sizeof(p), "%s%s", f->path, suffixes[i]);
        unlink(p);
    }
    rmdir(f->dir);
    return 0;
}

/* ---- writing and waiting ---- */

struct result {
    bool called;
    int rc;
    int64_t rev;
    char msg[sizeof(((struct gt_err *)0)->msg)];
};

static void on_done(int rc, int64_t rev, const struct gt_err *err, void *arg)
{
    struct result *r = arg;
    assert_false(r->called);
    r->called = true;
    r->rc = rc;
    r->rev = rev;
    snprintf(r->msg, sizeof(r->msg), "%s", err ? err->msg : "");
}

/* Run the loop until every result in rs[0..n) was called back. */
static void wait_all(struct fx *f, struct result *rs, size_t n)
{
    for (int spins = 0; spins < 100000; spins++) {
        bool all = true;
        for (size_t i = 0; i < n; i++) {
            all = all && rs[i].called;
        }
        if (all) {
            return;
        }
        assert_non_null(f->base);
        event_base_loop(f->base, EVLOOP_ONCE);
    }
    fail_msg("callbacks never arrived");
}

static void submit(struct fx *f, enum gt_store_op op, const char *key, const char *value,
                   int64_t expected_rev, struct result *r)
{
    memset(r, 0, sizeof(*r));
    int rc =
        gt_store_write(f->st, op, key, value, value ? strlen(value) : 0, expected_rev, on_done, r);
    assert_int_equal(rc, 0);
    if (!f->evented) {
        assert_true(r->called);
    }
}

/* One write, waited for; returns its rc, *rev its revision. */
static int put(struct fx *f, enum gt_store_op op, const char *key, const char *value,
               int64_t expected_rev, int64_t *rev)
{
    struct result r;
    submit(f, op, key, value, expected_rev, &r);
    wait_all(f, &r, 1);
    if (rev) {
        *rev = r.rev;
    }
    return r.rc;
}

static void assert_value(struct fx *f, const char *key, const char *value, int64_t create_rev,
                         int64_t mod_rev)
{
    struct gt_store_kv kv;
    struct gt_err err = {0};
    assert_int_equal(gt_store_get(f->st, key, &kv, &err), 0);
    assert_string_equal(kv.key, key);
    assert_string_equal(kv.value, value);
    assert_int_equal(kv.value_len, strlen(value));
    assert_int_equal(kv.create_rev, create_rev);
    assert_int_equal(kv.mod_rev, mod_rev);
    gt_store_kv_fini(&kv);
}

static void assert_absent(struct fx *f, const char *key)
{
    struct gt_store_kv kv;
    assert_int_equal(gt_store_get(f->st, key, &kv, NULL), GT_ENOTFOUND);
}

/* ---- the contract ---- */

static void test_crud(void **state)
{
    struct fx *f = *state;
    int64_t rev;
    assert_int_equal(gt_store_revision(f->st), 0);
    assert_int_equal(put(f, GT_STORE_CREATE, "/jobs/p/a", "{\"v\":1}", 0, &rev), 0);
    assert_int_equal(rev, 1);
    assert_value(f, "/jobs/p/a", "{\"v\":1}", 1, 1);
    assert_int_equal(put(f, GT_STORE_UPDATE, "/jobs/p/a", "{\"v\":2}", 1, &rev), 0);
    assert_int_equal(rev, 2);
    assert_value(f, "/jobs/p/a", "{\"v\":2}", 1, 2);
    assert_int_equal(put(f, GT_STORE_UPDATE, "/jobs/p/a", "", 0, &rev), 0);
    assert_value(f, "/jobs/p/a", "", 1, 3);
    assert_int_equal(put(f, GT_STORE_DELETE, "/jobs/p/a", NULL, 3, &rev), 0);
    assert_int_equal(rev, 4);
    assert_absent(f, "/jobs/p/a");
    assert_int_equal(gt_store_revision(f->st), 4);
    /* A re-created key starts a new life. */
    assert_int_equal(put(f, GT_STORE_CREATE, "/jobs/p/a", "x", 0, &rev), 0);
    assert_value(f, "/jobs/p/a", "x", 5, 5);
}

static void test_binary_value(void **state)
{
    struct fx *f = *state;
    const char val[] = {'a', '\0', 'b'};
    struct result r = {0};
    assert_int_equal(gt_store_write(f->st, GT_STORE_CREATE, "/bin", val, 3, 0, on_done, &r), 0);
    wait_all(f, &r, 1);
    assert_int_equal(r.rc, 0);
    struct gt_store_kv kv;
    assert_int_equal(gt_store_get(f->st, "/bin", &kv, NULL), 0);
    assert_int_equal(kv.value_len, 3);
    assert_memory_equal(kv.value, val, 3);
    assert_int_equal(kv.value[3], '\0');
    gt_store_kv_fini(&kv);
}

static void test_preconditions(void **state)
{
    struct fx *f = *state;
    int64_t rev;
    assert_int_equal(put(f, GT_STORE_CREATE, "/k", "1", 0, &rev), 0);
    assert_int_equal(put(f, GT_STORE_CREATE, "/k", "2", 0, &rev), GT_EEXISTS);
    assert_int_equal(rev, 0);
    assert_int_equal(put(f, GT_STORE_UPDATE, "/absent", "2", 0, NULL), GT_ENOTFOUND);
    assert_int_equal(put(f, GT_STORE_DELETE, "/absent", NULL, 0, NULL), GT_ENOTFOUND);
    assert_int_equal(put(f, GT_STORE_UPDATE, "/k", "2", 7, NULL), GT_ECONFLICT);
    assert_int_equal(put(f, GT_STORE_DELETE, "/k", NULL, 7, NULL), GT_ECONFLICT);
    assert_int_equal(gt_store_revision(f->st), 1);
    assert_value(f, "/k", "1", 1, 1);
    /* expected_rev 0 means any */
    assert_int_equal(put(f, GT_STORE_UPDATE, "/k", "3", 0, &rev), 0);
    assert_int_equal(rev, 2);
    assert_int_equal(put(f, GT_STORE_DELETE, "/k", NULL, 0, &rev), 0);
    assert_int_equal(rev, 3);
}

struct listing {
    char keys[16][32];
    int n;
    int stop_after;
};

static int collect(const struct gt_store_kv *kv, void *arg)
{
    struct listing *l = arg;
    assert_true(l->n < 16);
    snprintf(l->keys[l->n++], sizeof(l->keys[0]), "%s", kv->key);
    assert_int_equal(strlen(kv->value), kv->value_len);
    return l->stop_after && l->n >= l->stop_after;
}

static void test_list_prefix(void **state)
{
    struct fx *f = *state;
    const char *keys[] = {"/jobs/a/2", "/jobs/ab/1", "/jobs/a/0", "/jobs/a0",
                          "/jobsx",    "/jobs/a/1",  "/jobs/a",   "/nodes/n1"};
    for (size_t i = 0; i < GT_ARRAY_LEN(keys); i++) {
        assert_int_equal(put(f, GT_STORE_CREATE, keys[i], keys[i], 0, NULL), 0);
    }
    struct listing l = {0};
    int64_t rev = -1;
    assert_int_equal(gt_store_list(f->st, "/jobs/a/", collect, &l, &rev, NULL), 0);
    assert_int_equal(rev, 8);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.keys[0], "/jobs/a/0");
    assert_string_equal(l.keys[1], "/jobs/a/1");
    assert_string_equal(l.keys[2], "/jobs/a/2");

    memset(&l, 0, sizeof(l));
    assert_int_equal(gt_store_list(f->st, "", collect, &l, NULL, NULL), 0);
    assert_int_equal(l.n, 8);
    for (int i = 1; i < l.n; i++) {
        assert_true(strcmp(l.keys[i - 1], l.keys[i]) < 0);
    }

    memset(&l, 0, sizeof(l));
    l.stop_after = 2;
    assert_int_equal(gt_store_list(f->st, "/jobs/", collect, &l, NULL, NULL), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.keys[0], "/jobs/a");
    assert_string_equal(l.keys[1], "/jobs/a/0");

    memset(&l, 0, sizeof(l));
    assert_int_equal(gt_store_list(f->st, "/none/", collect, &l, &rev, NULL), 0);
    assert_int_equal(l.n, 0);
    assert_int_equal(rev, 8);
}

/* A list callback may read the store. */
static int get_inside(const struct gt_store_kv *kv, void *arg)
{
    struct fx *f = arg;
    struct gt_store_kv got;
    assert_int_equal(gt_store_get(f->st, kv->key, &got, NULL), 0);
    assert_string_equal(got.value, kv->value);
    gt_store_kv_fini(&got);
    return 0;
}

static void test_list_reentrant(void **state)
{
    struct fx *f = *state;
    assert_int_equal(put(f, GT_STORE_CREATE, "/a/1", "one", 0, NULL), 0);
    assert_int_equal(put(f, GT_STORE_CREATE, "/a/2", "two", 0, NULL), 0);
    assert_int_equal(gt_store_list(f->st, "/a/", get_inside, f, NULL, NULL), 0);
}

static void test_revision_sequence(void **state)
{
    struct fx *f = *state;
    int64_t prev = gt_store_revision(f->st);
    for (int i = 0; i < 30; i++) {
        char key[32];
        snprintf(key, sizeof(key), "/seq/%d", i % 7);
        int64_t rev;
        int rc = put(f, i < 7 ? GT_STORE_CREATE : (i % 5 == 0 ? GT_STORE_DELETE : GT_STORE_UPDATE),
                     key, "v", 0, &rev);
        if (rc == GT_ENOTFOUND) {
            assert_int_equal(put(f, GT_STORE_CREATE, key, "v", 0, &rev), 0);
        } else {
            assert_int_equal(rc, 0);
        }
        assert_int_equal(rev, prev + 1);
        assert_int_equal(gt_store_revision(f->st), rev);
        prev = rev;
    }
}

/* A batch where some ops fail their precondition (checked against earlier
 * ops of the same batch) and the others commit with consecutive revisions. */
static void test_batch_partial(void **state)
{
    struct fx *f = *state;
    assert_int_equal(put(f, GT_STORE_CREATE, "/b/x", "x0", 0, NULL), 0); /* rev 1 */
    uint64_t commits0;
    gt_store_stats(f->st, &commits0, NULL);
    struct result r[7];
    submit(f, GT_STORE_CREATE, "/b/a", "a1", 0, &r[0]); /* rev 2 */
    submit(f, GT_STORE_CREATE, "/b/a", "a2", 0, &r[1]); /* EEXISTS */
    submit(f, GT_STORE_UPDATE, "/b/c", "c1", 0, &r[2]); /* ENOTFOUND */
    submit(f, GT_STORE_UPDATE, "/b/a", "a3", 2, &r[3]); /* rev 3 */
    submit(f, GT_STORE_UPDATE, "/b/x", "x1", 2, &r[4]); /* ECONFLICT (x is at 1) */
    submit(f, GT_STORE_DELETE, "/b/x", NULL, 1, &r[5]); /* rev 4 */
    submit(f, GT_STORE_CREATE, "/b/x", "x2", 0, &r[6]); /* rev 5 */
    wait_all(f, r, 7);
    int want_rc[] = {0, GT_EEXISTS, GT_ENOTFOUND, 0, GT_ECONFLICT, 0, 0};
    int64_t want_rev[] = {2, 0, 0, 3, 0, 4, 5};
    for (int i = 0; i < 7; i++) {
        assert_int_equal(r[i].rc, want_rc[i]);
        assert_int_equal(r[i].rev, want_rev[i]);
    }
    assert_non_null(strstr(r[1].msg, "/b/a"));
    uint64_t commits1, writes1;
    gt_store_stats(f->st, &commits1, &writes1);
    assert_int_equal(commits1 - commits0, f->evented ? 1 : 7);
    assert_int_equal(writes1, 8);
    assert_value(f, "/b/a", "a3", 2, 3);
    assert_value(f, "/b/x", "x2", 5, 5);
    assert_int_equal(gt_store_revision(f->st), 5);
}

/* Callbacks run in revision order. */
struct order {
    int64_t last;
    int n;
};

static void on_ordered(int rc, int64_t rev, const struct gt_err *err, void *arg)
{
    (void)err;
    struct order *o = arg;
    assert_int_equal(rc, 0);
    assert_int_equal(rev, o->last + 1);
    o->last = rev;
    o->n++;
}

static void test_group_commit(void **state)
{
    struct fx *f = *state;
    struct order o = {0};
    for (int i = 0; i < 200; i++) {
        char key[32];
        snprintf(key, sizeof(key), "/gc/%03d", i);
        assert_int_equal(gt_store_write(f->st, GT_STORE_CREATE, key, "{}", 2, 0, on_ordered, &o),
                         0);
    }
    for (int spins = 0; o.n < 200 && spins < 10000; spins++) {
        event_base_loop(f->base, EVLOOP_ONCE);
    }
    assert_int_equal(o.n, 200);
    uint64_t commits, writes;
    gt_store_stats(f->st, &commits, &writes);
    assert_int_equal(writes, 200);
    assert_true(commits <= 2);
    assert_int_equal(gt_store_revision(f->st), 200);
}

/* ---- watch ---- */

struct seen {
    int n;
    struct {
        enum gt_store_event_type type;
        bool created;
        char key[32];
        char value[32];
        int64_t create_rev, mod_rev;
    } ev[32];
    struct gt_store_watch *w;
    int unwatch_after; /* unwatch from inside the callback after this many */
};

static void on_event(const struct gt_store_event *ev, void *arg)
{
    struct seen *s = arg;
    assert_true(s->n < 32);
    s->ev[s->n].type = ev->type;
    s->ev[s->n].created = ev->created;
    snprintf(s->ev[s->n].key, sizeof(s->ev[0].key), "%s", ev->key);
    snprintf(s->ev[s->n].value, sizeof(s->ev[0].value), "%.*s", (int)ev->value_len, ev->value);
    s->ev[s->n].create_rev = ev->create_rev;
    s->ev[s->n].mod_rev = ev->mod_rev;
    s->n++;
    if (s->unwatch_after && s->n == s->unwatch_after) {
        gt_store_unwatch(s->w);
    }
}

static void assert_event(const struct seen *s, int i, enum gt_store_event_type type, bool created,
                         const char *key, const char *value, int64_t create_rev, int64_t mod_rev)
{
    assert_true(i < s->n);
    assert_int_equal(s->ev[i].type, type);
    assert_int_equal(s->ev[i].created, created);
    assert_string_equal(s->ev[i].key, key);
    assert_string_equal(s->ev[i].value, value);
    assert_int_equal(s->ev[i].create_rev, create_rev);
    assert_int_equal(s->ev[i].mod_rev, mod_rev);
}

static void test_watch_replay_and_live(void **state)
{
    struct fx *f = *state;
    assert_int_equal(put(f, GT_STORE_CREATE, "/w/a", "a1", 0, NULL), 0);  /* 1 */
    assert_int_equal(put(f, GT_STORE_CREATE, "/other", "o", 0, NULL), 0); /* 2 */
    assert_int_equal(put(f, GT_STORE_UPDATE, "/w/a", "a2", 0, NULL), 0);  /* 3 */

    struct seen all = {0}, late = {0};
    struct gt_err err = {0};
    assert_int_equal(gt_store_watch(f->st, "/w/", 0, on_event, &all, &all.w, &err), 0);
    assert_int_equal(all.n, 2); /* replayed synchronously */
    assert_event(&all, 0, GT_STORE_EV_PUT, true, "/w/a", "a1", 1, 1);
    assert_event(&all, 1, GT_STORE_EV_PUT, false, "/w/a", "a2", 1, 3);
    assert_int_equal(gt_store_watch(f->st, "/w/", 1, on_event, &late, &late.w, &err), 0);
    assert_int_equal(late.n, 1);

    assert_int_equal(put(f, GT_STORE_CREATE, "/w/b", "b1", 0, NULL), 0); /* 4 */
    assert_int_equal(put(f, GT_STORE_CREATE, "/wx", "no", 0, NULL), 0);  /* 5 */
    assert_int_equal(put(f, GT_STORE_DELETE, "/w/a", NULL, 3, NULL), 0); /* 6 */
    assert_int_equal(all.n, 4);
    assert_event(&all, 2, GT_STORE_EV_PUT, true, "/w/b", "b1", 4, 4);
    assert_event(&all, 3, GT_STORE_EV_DELETE, false, "/w/a", "a2", 1, 6);
    assert_int_equal(late.n, 3);
    assert_event(&late, 2, GT_STORE_EV_DELETE, false, "/w/a", "a2", 1, 6);

    /* Future start points are fine: nothing until that revision passes. */
    struct seen future = {0};
    assert_int_equal(gt_store_watch(f->st, "/w/", 7, on_event, &future, &future.w, &err), 0);
    assert_int_equal(put(f, GT_STORE_UPDATE, "/w/b", "b2", 0, NULL), 0); /* 7 */
    assert_int_equal(put(f, GT_STORE_UPDATE, "/w/b", "b3", 0, NULL), 0); /* 8 */
    assert_int_equal(future.n, 1);
    assert_event(&future, 0, GT_STORE_EV_PUT, false, "/w/b", "b3", 4, 8);
    assert_int_equal(all.n, 6);

    gt_store_unwatch(all.w);
    gt_store_unwatch(late.w);
    gt_store_unwatch(future.w);
    gt_store_unwatch(NULL);
    assert_int_equal(put(f, GT_STORE_DELETE, "/w/b", NULL, 0, NULL), 0);
    assert_int_equal(all.n, 6);
}

static void test_watch_gone(void **state)
{
    struct fx *f = *state;
    struct gt_err err = {0};
    struct seen s = {0};
    struct gt_store_watch *w;
    for (int i = 0; i < 6; i++) { /* revs 1..6 */
        char key[16];
        snprintf(key, sizeof(key), "/g/%d", i);
        assert_int_equal(put(f, GT_STORE_CREATE, key, "v", 0, NULL), 0);
    }
    /* History holds the events since open; reopen with only 3 kept. */
    reopen(f, 3);
    assert_int_equal(gt_store_revision(f->st), is_durable(f) ? 6 : 0);
    if (!is_durable(f)) {
        return; /* memory starts empty again; the rest needs a durable past */
    }
    /* Empty history: only the current revision or later. */
    assert_int_equal(gt_store_watch(f->st, "/g/", 5, on_event, &s, &w, &err), GT_EGONE);
    assert_int_equal(err.code, GT_EGONE);
    assert_null(w);
    assert_int_equal(gt_store_watch(f->st, "/g/", 6, on_event, &s, &w, NULL), 0);
    gt_store_unwatch(w);
    for (int i = 0; i < 5; i++) { /* revs 7..11; kept: 9, 10, 11 */
        char key[16];
        snprintf(key, sizeof(key), "/g/%d", i);
        assert_int_equal(put(f, GT_STORE_UPDATE, key, "v2", 0, NULL), 0);
    }
    assert_int_equal(gt_store_watch(f->st, "/g/", 7, on_event, &s, &w, NULL), GT_EGONE);
    assert_int_equal(gt_store_watch(f->st, "/g/", 0, on_event, &s, &w, NULL), GT_EGONE);
    assert_int_equal(gt_store_watch(f->st, "/g/", 8, on_event, &s, &w, NULL), 0);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.ev[0].mod_rev, 9);
    assert_int_equal(s.ev[2].mod_rev, 11);
    gt_store_unwatch(w);
    assert_int_equal(gt_store_watch(f->st, "/g/", 100, on_event, &s, &w, NULL), 0);
    gt_store_unwatch(w);
}

static void test_watch_small_history(void **state)
{
    struct fx *f = *state;
    reopen(f, 2);
    struct seen s = {0};
    struct gt_store_watch *w;
    for (int i = 0; i < 4; i++) {
        char key[16];
        snprintf(key, sizeof(key), "/h/%d", i);
        assert_int_equal(put(f, GT_STORE_CREATE, key, "v", 0, NULL), 0);
    }
    int64_t now = gt_store_revision(f->st);
    assert_int_equal(gt_store_watch(f->st, "/h/", now - 3, on_event, &s, &w, NULL), GT_EGONE);
    assert_int_equal(gt_store_watch(f->st, "/h/", now - 2, on_event, &s, &w, NULL), 0);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.ev[0].key, "/h/2");
    assert_string_equal(s.ev[1].key, "/h/3");
    gt_store_unwatch(w);
}

static void test_unwatch_in_callback(void **state)
{
    struct fx *f = *state;
    struct seen once = {.unwatch_after = 1}, keep = {0}, replayed = {.unwatch_after = 1};
    struct gt_err err = {0};
    assert_int_equal(gt_store_watch(f->st, "/u/", 0, on_event, &once, &once.w, &err), 0);
    assert_int_equal(gt_store_watch(f->st, "/u/", 0, on_event, &keep, &keep.w, &err), 0);
    /* Both events of one batch (evented) reach keep but only one reaches once. */
    struct result r[2];
    submit(f, GT_STORE_CREATE, "/u/1", "1", 0, &r[0]);
    submit(f, GT_STORE_CREATE, "/u/2", "2", 0, &r[1]);
    wait_all(f, r, 2);
    assert_int_equal(once.n, 1);
    assert_int_equal(keep.n, 2);
    assert_int_equal(put(f, GT_STORE_CREATE, "/u/3", "3", 0, NULL), 0);
    assert_int_equal(once.n, 1);
    assert_int_equal(keep.n, 3);
    /* Unwatch during the synchronous replay. */
    assert_int_equal(gt_store_watch(f->st, "/u/", 0, on_event, &replayed, &replayed.w, &err), 0);
    assert_int_equal(replayed.n, 1);
    assert_int_equal(put(f, GT_STORE_CREATE, "/u/4", "4", 0, NULL), 0);
    assert_int_equal(replayed.n, 1);
    gt_store_unwatch(keep.w);
}

/* Writes queued when close begins are committed; writes from callbacks
 * run by close are refused. */
struct closing {
    struct gt_store *st;
    int n;
    int refused;
};

static void on_done_write_again(int rc, int64_t rev, const struct gt_err *err, void *arg)
{
    (void)rev;
    (void)err;
    struct closing *c = arg;
    assert_int_equal(rc, 0);
    c->n++;
    if (gt_store_write(c->st, GT_STORE_CREATE, "/late", "x", 1, 0, NULL, NULL) == GT_ESTORE) {
        c->refused++;
    }
}

static void test_close_flushes(void **state)
{
    struct fx *f = *state;
    struct closing c = {.st = f->st};
    for (int i = 0; i < 3; i++) {
        char key[16];
        snprintf(key, sizeof(key), "/c/%d", i);
        assert_int_equal(
            gt_store_write(f->st, GT_STORE_CREATE, key, "v", 1, 0, on_done_write_again, &c), 0);
    }
    gt_store_close(f->st);
    f->st = NULL;
    assert_int_equal(c.n, 3);
    assert_int_equal(c.refused, f->evented ? 3 : 0);
    open_store(f, 0);
    if (is_durable(f) && f->evented) {
        assert_value(f, "/c/2", "v", 3, 3);
        assert_absent(f, "/late");
    } else if (is_durable(f)) { /* synchronous: each callback's write went in */
        assert_value(f, "/c/2", "v", 4, 4);
        assert_value(f, "/late", "x", 2, 2);
    }
}

static void test_write_fault(void **state)
{
    struct fx *f = *state;
    int64_t rev;
    assert_int_equal(put(f, GT_STORE_CREATE, "/f/a", "a", 0, NULL), 0);
    gt_store_fault_arm(f->st, GT_STORE_FAULT_WRITE, 1);
    struct result r[2];
    submit(f, GT_STORE_CREATE, "/f/b", "b", 0, &r[0]);
    submit(f, GT_STORE_UPDATE, "/f/a", "a2", 0, &r[1]);
    wait_all(f, r, 2);
    assert_int_equal(r[0].rc, GT_ESTORE);
    if (f->evented) { /* one batch: all of it failed */
        assert_int_equal(r[1].rc, GT_ESTORE);
    }
    assert_false(gt_store_failed(f->st));
    assert_absent(f, "/f/b");
    if (f->evented) {
        assert_value(f, "/f/a", "a", 1, 1);
    }
    /* The store goes on. */
    int64_t before = gt_store_revision(f->st);
    assert_int_equal(put(f, GT_STORE_CREATE, "/f/c", "c", 0, &rev), 0);
    assert_int_equal(rev, before + 1);
    if (is_durable(f)) {
        reopen(f, 0);
        assert_absent(f, "/f/b");
        assert_value(f, "/f/c", "c", rev, rev);
        assert_int_equal(gt_store_revision(f->st), rev);
    }
}

static void test_fsync_fault(void **state)
{
    struct fx *f = *state;
    assert_int_equal(put(f, GT_STORE_CREATE, "/s/a", "a", 0, NULL), 0);
    gt_store_fault_arm(f->st, GT_STORE_FAULT_FSYNC, 1);
    struct result r;
    submit(f, GT_STORE_CREATE, "/s/b", "b", 0, &r);
    wait_all(f, &r, 1);
    assert_int_equal(r.rc, GT_EFSYNC);
    assert_true(gt_store_failed(f->st));
    assert_int_equal(gt_store_write(f->st, GT_STORE_CREATE, "/s/c", "c", 1, 0, NULL, NULL),
                     GT_EFSYNC);
    assert_int_equal(gt_store_revision(f->st), 1);
    if (!is_sqlite(f)) {
        return;
    }
    reopen(f, 0);
    assert_false(gt_store_failed(f->st));
    struct gt_store_kv kv;
    int rc = gt_store_get(f->st, "/s/b", &kv, NULL);
    if (rc == 0) { /* wholly present: value and revision */
        assert_string_equal(kv.value, "b");
        assert_int_equal(kv.mod_rev, 2);
        assert_int_equal(gt_store_revision(f->st), 2);
        gt_store_kv_fini(&kv);
    } else {
        assert_int_equal(rc, GT_ENOTFOUND);
        assert_int_equal(gt_store_revision(f->st), 1);
    }
    assert_value(f, "/s/a", "a", 1, 1);
    gt_store_close(f->st);
    f->st = NULL;

    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(db);
    open_store(f, 0);
}

/* A queued write behind a failed batch is answered GT_EFSYNC too. */
static void test_fsync_fault_fails_queue(void **state)
{
    struct fx *f = *state;
    struct result r[2];
    gt_store_fault_arm(f->st, GT_STORE_FAULT_FSYNC, 1);
    submit(f, GT_STORE_CREATE, "/q/a", "a", 0, &r[0]);
    if (f->evented) {
        /* One non-blocking turn hands /q/a to the writer; its completion
         * can only be processed by a later turn, so /q/b queues behind. */
        event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        assert_false(r[0].called);
        submit(f, GT_STORE_CREATE, "/q/b", "b", 0, &r[1]);
        wait_all(f, r, 2);
        assert_int_equal(r[1].rc, GT_EFSYNC);
        assert_absent(f, "/q/b");
    }
    wait_all(f, r, 1);
    assert_int_equal(r[0].rc, GT_EFSYNC);
    assert_true(gt_store_failed(f->st));
}

static void test_reopen_keeps_everything(void **state)
{
    struct fx *f = *state;
    int64_t rev;
    assert_int_equal(put(f, GT_STORE_CREATE, "/r/a", "a", 0, NULL), 0);  /* 1 */
    assert_int_equal(put(f, GT_STORE_CREATE, "/r/b", "b", 0, NULL), 0);  /* 2 */
    assert_int_equal(put(f, GT_STORE_UPDATE, "/r/a", "a2", 1, NULL), 0); /* 3 */
    assert_int_equal(put(f, GT_STORE_CREATE, "/r/z", "z", 0, NULL), 0);  /* 4 */
    assert_int_equal(put(f, GT_STORE_DELETE, "/r/z", NULL, 4, &rev), 0); /* 5 */
    assert_int_equal(rev, 5);
    reopen(f, 0);
    assert_int_equal(gt_store_revision(f->st), 5); /* not back to 3 */
    assert_value(f, "/r/a", "a2", 1, 3);
    assert_value(f, "/r/b", "b", 2, 2);
    assert_absent(f, "/r/z");
    assert_int_equal(put(f, GT_STORE_CREATE, "/r/c", "c", 0, &rev), 0);
    assert_int_equal(rev, 6);
}

/* A file with the earlier schema (kv WITHOUT ROWID) is converted to the
 * rowid kv when opened: every key, value and revision kept, and writes go
 * on from its revision. */
static void test_convert_without_rowid(void **state)
{
    struct fx *f = *state;
    gt_store_close(f->st);
    f->st = NULL;
    char p[600];
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s%s", f->path, (const char *[]){"", "-wal", "-shm"}[i]);
        unlink(p);
    }
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL;"
                     "CREATE TABLE kv(key TEXT PRIMARY KEY, value BLOB,"
                     " create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL) WITHOUT ROWID;"
                     "CREATE TABLE meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL) WITHOUT ROWID;"
                     "INSERT INTO meta(k, v) VALUES ('rev', 7);"
                     "INSERT INTO kv VALUES ('/r/a', 'a', 1, 5), ('/r/b', 'b', 2, 2),"
                     " ('/r/c', 'c', 6, 6);",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    open_store(f, 0);
    assert_int_equal(gt_store_revision(f->st), 7);
    assert_value(f, "/r/a", "a", 1, 5);
    assert_value(f, "/r/b", "b", 2, 2);
    assert_value(f, "/r/c", "c", 6, 6);
    int64_t rev;
    assert_int_equal(put(f, GT_STORE_CREATE, "/r/d", "d", 0, &rev), 0);
    assert_int_equal(rev, 8);
    assert_int_equal(put(f, GT_STORE_DELETE, "/r/b", NULL, 2, &rev), 0);
    reopen(f, 0);
    assert_value(f, "/r/d", "d", 8, 8);
    assert_absent(f, "/r/b");
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT count(*) FROM sqlite_master WHERE name = 'kv'"
                                        " AND sql NOT LIKE '%WITHOUT ROWID%'",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 1);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* SQLite's way: fail the nth write of a multi-page commit for each n; the
 * batch is never partly there, and the store goes on. */
static void test_write_fault_nth(void **state)
{
    struct fx *f = *state;
    size_t len = 20000; /* several pages, so several writes per commit */
    char *big = gt_xmalloc(len + 1);
    memset(big, 'x', len);
    big[len] = '\0';
    for (int nth = 1; nth <= 8; nth++) {
        char key[16];
        snprintf(key, sizeof(key), "/n/%d", nth);
        int64_t before = gt_store_revision(f->st);
        gt_store_fault_arm(f->st, GT_STORE_FAULT_WRITE, nth);
        assert_int_equal(put(f, GT_STORE_CREATE, key, big, 0, NULL), GT_ESTORE);
        assert_absent(f, key);
        assert_int_equal(gt_store_revision(f->st), before);
        gt_store_fault_arm(f->st, GT_STORE_FAULT_WRITE, 0);
        int64_t rev;
        assert_int_equal(put(f, GT_STORE_CREATE, key, "ok", 0, &rev), 0);
        assert_int_equal(rev, before + 1);
    }
    free(big);
    reopen(f, 0);
    assert_int_equal(gt_store_revision(f->st), 8);
    assert_value(f, "/n/8", "ok", 8, 8);
}

static void test_open_errors(void **state)
{
    (void)state;
    struct gt_store *st;
    struct gt_err err = {0};
    struct gt_store_options opt = {.backend = &gt_store_sqlite_backend,
                                   .path = "/nonexistent-dir/x/store.db"};
    assert_int_equal(gt_store_open(&opt, &st, &err), GT_ESTORE);
    assert_null(st);
    assert_non_null(strstr(err.msg, "sqlite"));
    struct gt_store_options none = {0};
    assert_int_equal(gt_store_open(&none, &st, NULL), GT_EINVAL);
    gt_store_close(NULL);
}

/* etcd: a refused endpoint is passed over; malformed endpoint lists are
 * refused at open, naming what is wrong. */
static void test_etcd_endpoints(void **state)
{
    struct fx *f = *state;
    gt_store_close(f->st);
    char path[160];
    snprintf(path, sizeof(path), "etcd://127.0.0.1:1,%s", f->path + strlen("etcd://"));
    struct gt_store_options opt = {.backend = f->backend, .path = path, .base = f->base};
    struct gt_err err = {0};
    gt_log_set_level(GT_LOG_ERROR); /* the refused endpoint's warning */
    assert_int_equal(gt_store_open(&opt, &f->st, &err), 0);
    int64_t rev;
    assert_int_equal(put(f, GT_STORE_CREATE, "/e/a", "a", 0, &rev), 0);
    assert_int_equal(rev, 1);
    assert_value(f, "/e/a", "a", 1, 1);
    gt_log_set_level(GT_LOG_WARN);

    const char *bad[] = {"", "etcd://", "etcd://127.0.0.1", "etcd://http://h:1", "etcd://h:1?x=y"};
    const char *says[] = {"no endpoints", "no endpoints", "not HOST:PORT", "not HOST:PORT",
                          "unknown option"};
    for (size_t i = 0; i < GT_ARRAY_LEN(bad); i++) {
        struct gt_store *st;
        struct gt_store_options o = {.backend = f->backend, .path = bad[i]};
        gt_err_clear(&err);
        assert_int_equal(gt_store_open(&o, &st, &err), GT_ESTORE);
        assert_null(st);
        if (!strstr(err.msg, says[i])) {
            fail_msg("%s: %s", bad[i], err.msg);
        }
    }
}

#define CONTRACT(fx)                                                                               \
    cmocka_unit_test_prestate_setup_teardown(test_crud, setup, teardown, &fx),                     \
        cmocka_unit_test_prestate_setup_teardown(test_binary_value, setup, teardown, &fx),         \
        cmocka_unit_test_prestate_setup_teardown(test_preconditions, setup, teardown, &fx),        \
        cmocka_unit_test_prestate_setup_teardown(test_list_prefix, setup, teardown, &fx),          \
        cmocka_unit_test_prestate_setup_teardown(test_list_reentrant, setup, teardown, &fx),       \
        cmocka_unit_test_prestate_setup_teardown(test_revision_sequence, setup, teardown, &fx),    \
        cmocka_unit_test_prestate_setup_teardown(test_batch_partial, setup, teardown, &fx),        \
        cmocka_unit_test_prestate_setup_teardown(test_watch_replay_and_live, setup, teardown,      \
                                                 &fx),                                             \
        cmocka_unit_test_prestate_setup_teardown(test_watch_gone, setup, teardown, &fx),           \
        cmocka_unit_test_prestate_setup_teardown(test_watch_small_history, setup, teardown, &fx),  \
        cmocka_unit_test_prestate_setup_teardown(test_unwatch_in_callback, setup, teardown, &fx),  \
        cmocka_unit_test_prestate_setup_teardown(test_close_flushes, setup, teardown, &fx),        \
        cmocka_unit_test_prestate_setup_teardown(test_write_fault, setup, teardown, &fx),          \
        cmocka_unit_test_prestate_setup_teardown(test_fsync_fault, setup, teardown, &fx),          \
        cmocka_unit_test_prestate_setup_teardown(test_fsync_fault_fails_queue, setup, teardown,    \
                                                 &fx),                                             \
        cmocka_unit_test_prestate_setup_teardown(test_guard, setup, teardown, &fx),                \
        cmocka_unit_test_prestate_setup_teardown(test_list_pages, setup, teardown, &fx)

/* ---- guards, feed and election ---- */

static int put_guarded(struct fx *f, const struct gt_store_guard *g, enum gt_store_op op,
                       const char *key, const char *value)
{
    struct result r = {0};
    assert_int_equal(
        gt_store_write_guarded(f->st, g, op, key, value, value ? strlen(value) : 0, 0, on_done, &r),
        0);
    wait_all(f, &r, 1);
    return r.rc;
}

/* A guarded write commits while the guard key is as given; on etcd one
 * with a stale guard (other value, or the key re-created since) fails
 * GT_ENOTLEADER and writes nothing; SQLite and memory serve one process,
 * where the guard always holds. */
static void test_guard(void **state)
{
    struct fx *f = *state;
    int64_t g_rev;
    assert_int_equal(put(f, GT_STORE_CREATE, "gantry-leader", "me", 0, &g_rev), 0);
    struct gt_store_guard g = {.key = "gantry-leader", .create_rev = g_rev, .value = "me"};
    assert_int_equal(put_guarded(f, &g, GT_STORE_CREATE, "/jobs/p/a", "1"), 0);
    assert_int_equal(put_guarded(f, &g, GT_STORE_UPDATE, "/jobs/p/a", "2"), 0);
    /* the op's own precondition still answers when the guard holds */
    assert_int_equal(put_guarded(f, &g, GT_STORE_CREATE, "/jobs/p/a", "x"), GT_EEXISTS);
    assert_int_equal(put_guarded(f, &g, GT_STORE_UPDATE, "/jobs/p/none", "x"), GT_ENOTFOUND);
    bool etcd = f->backend == &gt_store_etcd_backend;
    struct gt_store_guard other = {.key = "gantry-leader", .create_rev = g_rev, .value = "you"};
    assert_int_equal(put_guarded(f, &other, GT_STORE_UPDATE, "/jobs/p/a", "3"),
                     etcd ? GT_ENOTLEADER : 0);
    /* deposed: the key went and another replica created it again */
    assert_int_equal(put(f, GT_STORE_DELETE, "gantry-leader", NULL, 0, NULL), 0);
    assert_int_equal(put(f, GT_STORE_CREATE, "gantry-leader", "me", 0, NULL), 0);
    int64_t before = gt_store_revision(f->st);
    assert_int_equal(put_guarded(f, &g, GT_STORE_DELETE, "/jobs/p/a", NULL),
                     etcd ? GT_ENOTLEADER : 0);
    assert_int_equal(put_guarded(f, &g, GT_STORE_CREATE, "/jobs/p/b", "1"),
                     etcd ? GT_ENOTLEADER : 0);
    if (etcd) {
        assert_int_equal(gt_store_revision(f->st), before);
        assert_value(f, "/jobs/p/a", "2", 2, 3);
        assert_absent(f, "/jobs/p/b");
    }
}

struct count {
    int n;
    char last[32];
};

static int count_cb(const struct gt_store_kv *kv, void *arg)
{
    struct count *c = arg;
    c->n++;
    snprintf(c->last, sizeof(c->last), "%s", kv->key);
    return 0;
}

/* Listing pages through more keys than one etcd range answer holds. */
static void test_list_pages(void **state)
{
    struct fx *f = *state;
    struct result rs[64];
    int n = 0;
    for (int i = 0; i < 530; i++) {
        char k[32];
        snprintf(k, sizeof(k), "/many/%04d", i);
        submit(f, GT_STORE_CREATE, k, "v", 0, &rs[n++]);
        if (n == 64 || i == 529) {
            wait_all(f, rs, (size_t)n);
            n = 0;
        }
    }
    struct count c = {0};
    int64_t rev = 0;
    assert_int_equal(gt_store_list(f->st, "/many/", count_cb, &c, &rev, NULL), 0);
    assert_int_equal(c.n, 530);
    assert_string_equal(c.last, "/many/0529");
    assert_int_equal(rev, 530);
}

struct feed_seen {
    int n;
    int64_t last_rev;
    char last_key[32];
};

static void seen_cb(const struct gt_store_event *ev, void *arg)
{
    struct feed_seen *s = arg;
    assert_true(ev->mod_rev > s->last_rev);
    s->n++;
    s->last_rev = ev->mod_rev;
    snprintf(s->last_key, sizeof(s->last_key), "%s", ev->key);
}

static void loop_until(struct fx *f, const bool *cond, int64_t timeout_ms)
{
    int64_t end = gt_now_ms() + timeout_ms;
    while (!*cond && gt_now_ms() < end) {
        struct timeval tv = {.tv_sec = 0, .tv_usec = 10000};
        event_base_loopexit(f->base, &tv);
        event_base_dispatch(f->base);
    }
    assert_true(*cond);
}

static struct gt_store *open_second(struct fx *f)
{
    struct gt_store_options opt = {.backend = f->backend, .path = f->path, .base = f->base};
    struct gt_store *st2;
    struct gt_err err = {0};
    if (gt_store_open(&opt, &st2, &err) != 0) {
        fail_msg("open a second store: %s", err.msg);
    }
    return st2;
}

/* Two stores on one etcd: each one's watch sees the other's writes (the
 * feed), in revision order, once, and its own. */
static void test_feed_two_writers(void **state)
{
    struct fx *f = *state;
    struct gt_store *st2 = open_second(f);
    struct feed_seen s = {0};
    struct gt_store_watch *w;
    assert_int_equal(gt_store_watch(f->st, "/", 0, seen_cb, &s, &w, NULL), 0);
    struct result r2 = {0}, r1 = {0};
    assert_int_equal(gt_store_write(st2, GT_STORE_CREATE, "/jobs/p/x", "2", 1, 0, on_done, &r2), 0);
    wait_all(f, &r2, 1);
    assert_int_equal(r2.rc, 0);
    bool got = false;
    for (int64_t end = gt_now_ms() + 5000; !got && gt_now_ms() < end;) {
        event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        got = s.n == 1;
    }
    assert_int_equal(s.n, 1);
    assert_string_equal(s.last_key, "/jobs/p/x");
    assert_int_equal(gt_store_seen_revision(f->st), r2.rev);
    assert_int_equal(gt_store_write(f->st, GT_STORE_CREATE, "/jobs/p/y", "1", 1, 0, on_done, &r1),
                     0);
    wait_all(f, &r1, 1);
    assert_int_equal(r1.rc, 0);
    assert_int_equal(r1.rev, r2.rev + 1);
    got = false;
    for (int64_t end = gt_now_ms() + 5000; !got && gt_now_ms() < end;) {
        event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        got = s.n == 2;
    }
    assert_int_equal(s.n, 2);
    assert_int_equal(s.last_rev, r1.rev);
    gt_store_unwatch(w);
    gt_store_close(st2);
}

/* A write refused because of another writer's change makes the store's
 * revision at least that change's: a read after the refusal must not be
 * older than what it was refused by (the cache of gantryd's reads waits
 * for gt_store_revision). */
static void test_refusal_revision(void **state)
{
    struct fx *f = *state;
    struct gt_store_options opt = {.backend = f->backend, .path = f->path}; /* synchronous */
    struct gt_store *st2;
    assert_int_equal(gt_store_open(&opt, &st2, NULL), 0);
    struct result r2 = {0}, r1 = {0};
    assert_int_equal(gt_store_write(st2, GT_STORE_CREATE, "/jobs/p/x", "2", 1, 0, on_done, &r2), 0);
    assert_int_equal(r2.rc, 0);
    assert_int_equal(gt_store_write(f->st, GT_STORE_CREATE, "/jobs/p/x", "1", 1, 0, on_done, &r1),
                     0);
    wait_all(f, &r1, 1);
    assert_int_equal(r1.rc, GT_EEXISTS);
    assert_true(gt_store_revision(f->st) >= r2.rev);
    gt_store_close(st2);
}

struct campaign {
    bool leader, lost;
    int64_t create_rev;
};

static void elect_cb(bool leader, const struct gt_store_guard *g, int64_t rev, void *arg)
{
    struct campaign *c = arg;
    (void)rev;
    c->leader = leader;
    c->lost = !leader;
    c->create_rev = g ? g->create_rev : 0;
    if (g) {
        assert_string_equal(g->key, "gantry-leader");
    }
}

/* Two campaigners: one leads; when it closes (revoking its lease) the
 * other is elected, and the first one's guard is stale. */
static void test_elect_handover(void **state)
{
    struct fx *f = *state;
    struct gt_store *st2 = open_second(f);
    struct campaign c1 = {0}, c2 = {0};
    assert_int_equal(gt_store_elect(f->st, "gantry-leader", "one", 2, 100, elect_cb, &c1, NULL), 0);
    loop_until(f, &c1.leader, 5000);
    assert_int_equal(gt_store_elect(st2, "gantry-leader", "two", 2, 100, elect_cb, &c2, NULL), 0);
    struct gt_store_guard stale = {
        .key = "gantry-leader", .create_rev = c1.create_rev, .value = "one"};
    assert_int_equal(put_guarded(f, &stale, GT_STORE_CREATE, "/jobs/p/a", "1"), 0);
    /* st2 stays a follower while st leads */
    struct timeval tv = {.tv_sec = 0, .tv_usec = 500000};
    event_base_loopexit(f->base, &tv);
    event_base_dispatch(f->base);
    assert_false(c2.leader);
    gt_store_close(f->st);
    f->st = open_second(f);
    loop_until(f, &c2.leader, 5000);
    assert_true(c2.create_rev > c1.create_rev);
    assert_int_equal(put_guarded(f, &stale, GT_STORE_CREATE, "/jobs/p/b", "1"), GT_ENOTLEADER);
    gt_store_close(st2);
}

/* The contract and reopening on a real etcd (77 without one). */
static int run_etcd(void)
{
    if (!have_etcd()) {
        fprintf(stderr, "test_store etcd: no etcd on PATH (Debian: etcd-server); skipped\n");
        return 77;
    }
    const struct CMUnitTest etcd_sync[] = {
        CONTRACT(fx_etcd_sync),
        cmocka_unit_test_prestate_setup_teardown(test_reopen_keeps_everything, setup, teardown,
                                                 &fx_etcd_sync),
        cmocka_unit_test_prestate_setup_teardown(test_etcd_endpoints, setup, teardown,
                                                 &fx_etcd_sync),
    };
    const struct CMUnitTest etcd_ev[] = {
        CONTRACT(fx_etcd_ev),
        cmocka_unit_test_prestate_setup_teardown(test_group_commit, setup, teardown, &fx_etcd_ev),
        cmocka_unit_test_prestate_setup_teardown(test_reopen_keeps_everything, setup, teardown,
                                                 &fx_etcd_ev),
        cmocka_unit_test_prestate_setup_teardown(test_feed_two_writers, setup, teardown,
                                                 &fx_etcd_ev),
        cmocka_unit_test_prestate_setup_teardown(test_refusal_revision, setup, teardown,
                                                 &fx_etcd_ev),
        cmocka_unit_test_prestate_setup_teardown(test_elect_handover, setup, teardown, &fx_etcd_ev),
    };
    int failed = 0;
    gt_log_set_level(GT_LOG_WARN);
    failed += cmocka_run_group_tests_name("store/etcd/sync", etcd_sync, NULL, NULL);
    failed += cmocka_run_group_tests_name("store/etcd/evented", etcd_ev, NULL, NULL);
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "etcd") == 0) {
        return run_etcd();
    }
    const struct CMUnitTest mem_sync[] = {CONTRACT(fx_mem_sync)};
    const struct CMUnitTest mem_ev[] = {
        CONTRACT(fx_mem_ev),
        cmocka_unit_test_prestate_setup_teardown(test_group_commit, setup, teardown, &fx_mem_ev),
    };
    const struct CMUnitTest sq_sync[] = {
        CONTRACT(fx_sq_sync),
        cmocka_unit_test_prestate_setup_teardown(test_reopen_keeps_everything, setup, teardown,
                                                 &fx_sq_sync),
        cmocka_unit_test_prestate_setup_teardown(test_write_fault_nth, setup, teardown,
                                                 &fx_sq_sync),
        cmocka_unit_test_prestate_setup_teardown(test_convert_without_rowid, setup, teardown,
                                                 &fx_sq_sync),
        cmocka_unit_test(test_open_errors),
    };
    const struct CMUnitTest sq_ev[] = {
        CONTRACT(fx_sq_ev),
        cmocka_unit_test_prestate_setup_teardown(test_group_commit, setup, teardown, &fx_sq_ev),
        cmocka_unit_test_prestate_setup_teardown(test_reopen_keeps_everything, setup, teardown,
                                                 &fx_sq_ev),
        cmocka_unit_test_prestate_setup_teardown(test_write_fault_nth, setup, teardown, &fx_sq_ev),
    };
    int failed = 0;
    gt_log_set_level(GT_LOG_WARN);
    failed += cmocka_run_group_tests_name("store/memory/sync", mem_sync, NULL, NULL);
    failed += cmocka_run_group_tests_name("store/memory/evented", mem_ev, NULL, NULL);
    failed += cmocka_run_group_tests_name("store/sqlite/sync", sq_sync, NULL, NULL);
    failed += cmocka_run_group_tests_name("store/sqlite/evented", sq_ev, NULL, NULL);
    return failed ? 1 : 0;
}
