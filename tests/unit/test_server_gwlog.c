/*
 * Unit tests for the gateway's request log (gwlog.c): lines as HAProxy
 * 2.6 writes them with GT_GWLOG_FORMAT (copied from a real one), the
 * quantiles' error bound over the log-spaced buckets, the sliding window,
 * and datagrams read from the socket on an event loop. The whole path
 * through a real HAProxy is tests/e2e/test_serving.py's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "server/gwlog.h"

#define T0 1796000000000LL /* ms; any second */

static const char ok_line[] =
    "127.0.0.1:38700 [02/Dec/2026:07:28:23.135] serving proj-a.m/is-m-main-"
    "0a1b2c3d-0 0/0/0/1/7 200 116 ---- 1/1/0/0/0 0/0 \"POST "
    "/serving/proj-a/m/v2/models/m/infer HTTP/1.1\"\n";
static const char retried_line[] =
    "127.0.0.1:38710 [02/Dec/2026:07:28:23.138] serving proj-a.m/"
    "is-m-main-0a1b2c3d-0 0/0/-1/-1/3029 503 217 SC-- 1/1/0/0/+3 0/0 "
    "\"POST /x HTTP/1.1\"";

static struct gt_gwlog_hist window(const struct gt_gwlog *log, int64_t now)
{
    struct gt_gwlog_hist h;
    memset(&h, 0, sizeof(h));
    gt_gwlog_window(log, "proj-a.m", "is-m-main-0a1b2c3d-0", now, &h);
    return h;
}

static void test_lines_as_haproxy_writes_them(void **state)
{
    (void)state;
    struct gt_gwlog *log = gt_gwlog_new();
    assert_int_equal(gt_gwlog_record(log, ok_line, strlen(ok_line), T0), 0);
    assert_int_equal(gt_gwlog_record(log, retried_line, strlen(retried_line), T0), 0);
    struct gt_gwlog_hist h = window(log, T0);
    assert_int_equal(h.n, 2);
    assert_int_equal(h.n_error, 1);
    assert_int_equal(gt_gwlog_quantile_ms(&h, 0.5), 7);
    int64_t p99 = gt_gwlog_quantile_ms(&h, 0.99);
    assert_true(p99 >= 3029 && p99 <= 3029 + 3029 / 16);
    /* answered by the gateway itself (401, 404): no server, not counted */
    static const char nosrv[] = "127.0.0.1:1 [02/Dec/2026:07:28:23.138] serving proj-a.m/<NOSRV> "
                                "0/-1/-1/-1/0 401 120 LR-- 1/1/0/0/0 0/0 \"POST /x HTTP/1.1\"";
    assert_int_equal(gt_gwlog_record(log, nosrv, strlen(nosrv), T0), GT_EINVAL);
    /* not the format: refused, nothing counted */
    static const char *const bad[] = {"",
                                      "no bracket at all",
                                      "x] serving",
                                      "x] serving a/b 1/2/3/4/five 200",
                                      "x] serving a/b 1/2/3/4/5 2x0",
                                      "x] serving ab 1/2/3/4/5 200",
                                      "x] serving /b 1/2/3/4/5 200"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(gt_gwlog_record(log, bad[i], strlen(bad[i]), T0), GT_EINVAL);
    }
    /* a line cut anywhere is refused or counted, never read past its end */
    for (size_t n = 0; n < strlen(ok_line); n++) {
        char *cut = gt_xmalloc(n ? n : 1);
        memcpy(cut, ok_line, n);
        int rc = gt_gwlog_record(log, cut, n, T0);
        assert_true(rc == 0 || rc == GT_EINVAL);
        free(cut);
    }
    gt_gwlog_free(log);
}

static void test_quantiles_within_one_sixteenth(void **state)
{
    (void)state;
    struct gt_gwlog *log = gt_gwlog_new();
    char line[512];
    /* 1..1000 ms once each: the q-quantile is 1000 q */
    for (int ms = 1; ms <= 1000; ms++) {
        int n = snprintf(line, sizeof(line),
                         "c [t] serving proj-a.m/is-m-main-0a1b2c3d-0 0/0/0/0/%d 200 1 ---- "
                         "1/1/0/0/0 0/0 \"GET / HTTP/1.1\"",
                         ms);
        assert_int_equal(gt_gwlog_record(log, line, (size_t)n, T0), 0);
    }
    struct gt_gwlog_hist h = window(log, T0);
    assert_int_equal(h.n, 1000);
    assert_int_equal(h.n_error, 0);
    static const double qs[] = {0.01, 0.02, 0.5, 0.9, 0.99, 1.0};
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        int64_t want = (int64_t)(qs[i] * 1000 + 0.5);
        int64_t got = gt_gwlog_quantile_ms(&h, qs[i]);
        assert_true(got >= want);
        assert_true(got <= want + want / 16 + 1);
    }
    struct gt_gwlog_hist empty;
    memset(&empty, 0, sizeof(empty));
    assert_int_equal(gt_gwlog_quantile_ms(&empty, 0.99), -1);
    /* beyond the last bucket: counted in it */
    static const char huge[] = "c [t] serving proj-a.m/is-m-main-0a1b2c3d-0 0/0/0/0/99999999999 "
                               "200 1 ---- 1/1/0/0/0 0/0 \"GET / HTTP/1.1\"";
    assert_int_equal(gt_gwlog_record(log, huge, strlen(huge), T0), 0);
    h = window(log, T0);
    assert_int_equal(gt_gwlog_quantile_ms(&h, 1.0), (INT64_C(1) << 21) - 1);
    gt_gwlog_free(log);
}

static void test_window_slides(void **state)
{
    (void)state;
    struct gt_gwlog *log = gt_gwlog_new();
    for (int s = 0; s < 2 * GT_GWLOG_WINDOW_S; s++) {
        assert_int_equal(gt_gwlog_record(log, ok_line, strlen(ok_line), T0 + s * 1000LL), 0);
        struct gt_gwlog_hist h = window(log, T0 + s * 1000LL);
        assert_int_equal(h.n, s + 1 < GT_GWLOG_WINDOW_S ? s + 1 : GT_GWLOG_WINDOW_S);
    }
    int64_t last = T0 + (2 * GT_GWLOG_WINDOW_S - 1) * 1000LL;
    assert_int_equal(window(log, last + 3000).n, GT_GWLOG_WINDOW_S - 3);
    assert_int_equal(window(log, last + GT_GWLOG_WINDOW_S * 1000LL).n, 0);
    /* another replica, another window */
    struct gt_gwlog_hist h;
    memset(&h, 0, sizeof(h));
    gt_gwlog_window(log, "proj-a.m", "is-m-main-0a1b2c3d-1", last, &h);
    assert_int_equal(h.n, 0);
    gt_gwlog_free(log);
}

static void test_datagrams_read_on_the_loop(void **state)
{
    (void)state;
    char dir[] = "/tmp/gt-gwlog-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/reqlog.sock", dir);
    struct event_base *base = event_base_new();
    struct gt_gwlog *log = gt_gwlog_new();
    struct gt_err err = {0};
    assert_int_equal(gt_gwlog_listen(log, base, path, &err), 0);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, path, strlen(path) + 1);
    /* a Unix datagram socket queues only net.unix.max_dgram_qlen (10 by
     * default) datagrams: sent a few at a time, as the loop reads them */
    enum { N = 50 };
    for (int i = 0; i < N; i++) {
        const char *l = i % 10 ? ok_line : "garbage";
        assert_int_equal(sendto(fd, l, strlen(l), 0, (struct sockaddr *)&sa, sizeof(sa)),
                         (ssize_t)strlen(l));
        if (i % 5 == 4) {
            event_base_loop(base, EVLOOP_NONBLOCK);
        }
    }
    for (int i = 0; i < 100 && window(log, gt_now_ms()).n < N - N / 10; i++) {
        event_base_loop(base, EVLOOP_NONBLOCK);
        usleep(10000);
    }
    assert_int_equal(window(log, gt_now_ms()).n, N - N / 10);
    close(fd);
    /* a path too long for a socket is refused naming it */
    char longp[200];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = '\0';
    struct gt_gwlog *other = gt_gwlog_new();
    assert_int_equal(gt_gwlog_listen(other, base, longp, &err), GT_EINVAL);
    assert_non_null(strstr(err.msg, "too long"));
    gt_gwlog_free(other);
    gt_gwlog_free(log);
    event_base_free(base);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_as_haproxy_writes_them),
        cmocka_unit_test(test_quantiles_within_one_sixteenth),
        cmocka_unit_test(test_window_slides),
        cmocka_unit_test(test_datagrams_read_on_the_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
