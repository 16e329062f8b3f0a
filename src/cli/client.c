/*
 * HTTP client for gantryd over libcurl.
 *
 * One easy handle per client, so consecutive requests (apply's GET then
 * PUT) reuse the connection. Answers are read whole into memory, bounded by
 * MAX_BODY_BYTES; watch streams are split into lines as they arrive by the
 * write callback and handed on one event at a time, so a watch never holds
 * more than one line; raw streams (task logs) are handed on chunk by chunk.
 * The bearer token travels only in the Authorization header. A client may
 * watch a cancel fd (a signalfd for SIGINT): once it is readable, the
 * transfer in progress ends within about a second with -ECANCELED.
 *
 * Several servers ("URL1,URL2,...": gantryd replicas): a request goes to
 * the one in use; a refused connection, a timeout, a dropped answer or a
 * 503 moves to the next and sends it again there, each server once. A
 * write whose first try may have been applied (sent, then no answer or a
 * 503) is recognised on a later try: a create answered 409 AlreadyExists
 * whose stored object has the spec, labels and annotations the client
 * sent is the client's own, and counts as created (its stored form is the
 * answer); a delete answered 404 counts as deleted. A watch that breaks
 * moves on too and resumes from the resourceVersion of the last event it
 * delivered, so no event is lost or repeated.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cli/cli_int.h"

enum {
    MAX_BODY_BYTES = 256 << 20, /* a List of every object still fits */
    MAX_LINE_BYTES = 64 << 20,
    CONNECT_TIMEOUT_S = 10,
    REQUEST_TIMEOUT_S = 120,
    /* with several servers, a stuck one is left for the next sooner */
    FAILOVER_CONNECT_TIMEOUT_S = 2,
    FAILOVER_TIMEOUT_S = 15,
};

struct gt_cli_client {
    CURL *curl;
    char **servers;
    size_t n_servers, cur;
    char *server; /* servers[cur] */
    struct curl_slist *headers;
    int cancel_fd;       /* borrowed; -1 none */
    long timeout_s;      /* of gt_cli_client_request; 0: none */
    char *token;         /* NULL: none */
    struct gt_buf early; /* an upgraded stream's bytes read with its answer's head */
    size_t early_off;
};

struct gt_cli_client *gt_cli_client_new(const char *server, const char *token)
{
    GT_ASSERT(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK);
    struct gt_cli_client *c = gt_xcalloc(1, sizeof(*c));
    c->curl = curl_easy_init();
    GT_ASSERT(c->curl);
    char *list = gt_xstrdup(server);
    size_t cap = 0;
    char *save = NULL;
    for (char *u = strtok_r(list, ",", &save); u; u = strtok_r(NULL, ",", &save)) {
        size_t n = strlen(u);
        while (n > 0 && u[n - 1] == '/') {
            u[--n] = '\0';
        }
        GT_VEC_RESERVE(c->servers, cap, c->n_servers + 1, 4);
        c->servers[c->n_servers++] = gt_xstrdup(u);
    }
    free(list);
    if (c->n_servers == 0) { /* "" or ",": requests fail naming it */
        GT_VEC_RESERVE(c->servers, cap, 1, 1);
        c->servers[c->n_servers++] = gt_xstrdup(server);
    }
    c->server = c->servers[0];
    c->cancel_fd = -1;
    c->timeout_s = REQUEST_TIMEOUT_S;
    c->token = gt_xstrdup(token);
    gt_buf_init(&c->early);
    c->headers = curl_slist_append(NULL, "Accept: application/json");
    c->headers = curl_slist_append(c->headers, "Content-Type: application/json");
    /* No "Expect: 100-continue" round trip before large bodies. */
    c->headers = curl_slist_append(c->headers, "Expect:");
    if (token) {
        char *h = gt_xasprintf("Authorization: Bearer %s", token);
        c->headers = curl_slist_append(c->headers, h);
        free(h);
    }
    GT_ASSERT(c->headers);
    return c;
}

void gt_cli_client_free(struct gt_cli_client *c)
{
    if (!c) {
        return;
    }
    curl_easy_cleanup(c->curl);
    curl_slist_free_all(c->headers);
    for (size_t i = 0; i < c->n_servers; i++) {
        free(c->servers[i]);
    }
    free(c->servers);
    free(c->token);
    gt_buf_fini(&c->early);
    free(c);
    curl_global_cleanup();
}

/* State of one transfer, shared with the write callback. */
struct transfer {
    CURL *curl;
    struct gt_buf body; /* whole answer, or the current partial watch line */
    bool too_large;
    /* watch only */
    gt_cli_watch_fn fn;
    gt_cli_stream_fn raw_fn; /* raw stream only */
    void *arg;
    int cancel_fd;
    bool cancelled;
    int stop_rc;     /* fn's non-zero answer, or an error below */
    size_t n_events; /* delivered so far */
    char *last_rv;   /* watch: resourceVersion of the last event delivered */
    struct gt_err *err;
};

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg);

static bool is_error_answer(CURL *curl)
{
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    return status < 200 || status > 299;
}

/* Parse one watch line and hand it on; returns 0 to go on. */
static int deliver_line(struct transfer *t, const char *line, size_t len)
{
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ')) {
        len--;
    }
    if (len == 0) {
        return 0;
    }
    json_error_t jerr;
    json_t *ev = json_loadb(line, len, 0, &jerr);
    if (!ev) {
        return gt_err_set(t->err, GT_EBADREQ, "cannot parse a watch event: %s", jerr.text);
    }
    const char *type = json_string_value(json_object_get(ev, "type"));
    int rc;
    if (type && strcmp(type, "ERROR") == 0) {
        const json_t *st = json_object_get(ev, "object");
        const char *msg = json_string_value(json_object_get(st, "message"));
        rc = gt_err_set(t->err, GT_EGONE, "watch ended by the server: %s", msg ? msg : "error");
    } else {
        t->n_events++;
        const char *rv = json_string_value(json_object_get(
            json_object_get(json_object_get(ev, "object"), "metadata"), "resourceVersion"));
        if (rv) {
            free(t->last_rv);
            t->last_rv = gt_xstrdup(rv);
        }
        rc = t->fn(ev, t->arg);
    }
    json_decref(ev);
    return rc;
}

static size_t on_watch_data(char *data, size_t size, size_t nmemb, void *arg)
{
    struct transfer *t = arg;
    size_t n = size * nmemb;
    if (is_error_answer(t->curl)) {
        if (t->body.len + n > MAX_BODY_BYTES) {
            t->too_large = true;
            return 0;
        }
        gt_buf_append(&t->body, data, n);
        return n;
    }
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(data + i, '\n', n - i);
        size_t chunk = nl ? (size_t)(nl - (data + i)) : n - i;
        if (t->body.len + chunk > MAX_LINE_BYTES) {
            t->too_large = true;
            return 0;
        }
        gt_buf_append(&t->body, data + i, chunk);
        i += chunk;
        if (!nl) {
            break;
        }
        i++;
        int rc = deliver_line(t, t->body.data, t->body.len);
        gt_buf_reset(&t->body);
        if (rc != 0) {
            t->stop_rc = rc;
            return 0;
        }
    }
    return n;
}

static size_t on_raw_data(char *data, size_t size, size_t nmemb, void *arg)
{
    struct transfer *t = arg;
    size_t n = size * nmemb;
    if (is_error_answer(t->curl)) {
        return on_data(data, size, nmemb, arg);
    }
    t->n_events++;
    int rc = t->raw_fn(data, n, t->arg);
    if (rc != 0) {
        t->stop_rc = rc;
        return 0;
    }
    return n;
}

/* libcurl's progress callback, called at least once a second: a non-zero
 * answer aborts the transfer. */
static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    struct transfer *t = arg;
    struct pollfd pfd = {.fd = t->cancel_fd, .events = POLLIN};
    if (t->cancel_fd >= 0 && poll(&pfd, 1, 0) > 0) {
        t->cancelled = true;
        return 1;
    }
    return 0;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *arg)
{
    struct transfer *t = arg;
    size_t n = size * nmemb;
    if (t->body.len + n > MAX_BODY_BYTES) {
        t->too_large = true;
        return 0;
    }
    gt_buf_append(&t->body, data, n);
    return n;
}

/* Set up c's handle for one request; the URL is the server plus path. */
static void prepare(struct gt_cli_client *c, const char *method, const char *path,
                    struct transfer *t, char *errbuf)
{
    CURL *curl = c->curl;
    curl_easy_reset(curl);
    char *url = gt_xasprintf("%s%s", c->server, path);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    free(url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT,
                     (long)(c->n_servers > 1 ? FAILOVER_CONNECT_TIMEOUT_S : CONNECT_TIMEOUT_S));
    curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, t);
    t->cancel_fd = c->cancel_fd;
    if (c->cancel_fd >= 0) {
        curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(curl, CURLOPT_XFERINFODATA, t);
        curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    }
    if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    }
    errbuf[0] = '\0';
    t->curl = curl;
}

/* Turn the outcome of curl_easy_perform into 0 or an error. */
static int finish(struct gt_cli_client *c, CURLcode cc, struct transfer *t, const char *errbuf,
                  struct gt_err *err)
{
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, NULL); /* errbuf is the caller's local */
    if (t->too_large) {
        return gt_err_set(err, GT_ETOOLARGE, "the server's answer is over %d MiB",
                          (t->fn ? MAX_LINE_BYTES : MAX_BODY_BYTES) >> 20);
    }
    if (t->stop_rc != 0) {
        return t->stop_rc;
    }
    if (t->cancelled) {
        return gt_err_set(err, -ECANCELED, "interrupted");
    }
    if (cc != CURLE_OK) {
        const char *why = *errbuf ? errbuf : curl_easy_strerror(cc);
        if (t->n_events > 0) {
            return gt_err_set(err, -EIO, "lost the stream from gantryd at %s: %s", c->server, why);
        }
        return gt_err_set(err, -EIO, "cannot reach gantryd at %s: %s", c->server, why);
    }
    long status = 0;
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status > 299) {
        return gt_cli_status_error(status, t->body.data, t->body.len, err);
    }
    return 0;
}

/* May another server help (and may this try have been applied)? */
static bool try_next(CURLcode cc, long status, bool *maybe_applied)
{
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
        return true;
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
        *maybe_applied = true;
        return true;
    case CURLE_OK:
        if (status == 503) {
            *maybe_applied = true;
            return true;
        }
        return false;
    default:
        return false;
    }
}

static void use_next_server(struct gt_cli_client *c)
{
    c->cur = (c->cur + 1) % c->n_servers;
    c->server = c->servers[c->cur];
}

/* One try of a request at the server in use: the curl outcome, *status
 * the HTTP status (0: none) and t->body the answer. */
static CURLcode request_once(struct gt_cli_client *c, const char *method, const char *path,
                             const char *text, struct transfer *t, char *errbuf, long *status)
{
    gt_buf_reset(&t->body);
    t->too_large = false;
    prepare(c, method, path, t, errbuf);
    if (text) {
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, text);
    }
    /* the default bound, shorter with other servers to move on to */
    long timeout_s = c->timeout_s;
    if (c->n_servers > 1 && timeout_s == REQUEST_TIMEOUT_S) {
        timeout_s = FAILOVER_TIMEOUT_S;
    }
    curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
    CURLcode cc = curl_easy_perform(c->curl);
    *status = 0;
    if (cc == CURLE_OK) {
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
    }
    return cc;
}

/* A create answered AlreadyExists after a try that may have been applied:
 * is the stored object the one body describes? Then *resp (if wanted)
 * gets it. */
static bool own_create(struct gt_cli_client *c, const char *path, const json_t *body, json_t **resp)
{
    const char *name =
        json_string_value(json_object_get(json_object_get(body, "metadata"), "name"));
    if (!name) {
        return false;
    }
    char *opath = gt_xasprintf("%s/%s", path, name);
    json_t *got = NULL;
    struct gt_err e = {0};
    int rc = gt_cli_client_request(c, "GET", opath, NULL, &got, &e);
    free(opath);
    if (rc != 0) {
        return false;
    }
    const json_t *md = json_object_get(body, "metadata"), *gmd = json_object_get(got, "metadata");
    const char *fields[] = {"labels", "annotations"};
    bool same =
        json_equal(json_object_get(body, "spec") ? json_object_get(body, "spec") : json_null(),
                   json_object_get(got, "spec") ? json_object_get(got, "spec") : json_null());
    for (size_t i = 0; i < GT_ARRAY_LEN(fields) && same; i++) {
        const json_t *a = json_object_get(md, fields[i]);
        const json_t *b = json_object_get(gmd, fields[i]);
        same = (!a && !b) || (a && b && json_equal(a, b));
    }
    if (same && resp) {
        *resp = got;
    } else {
        json_decref(got);
    }
    return same;
}

int gt_cli_client_request(struct gt_cli_client *c, const char *method, const char *path,
                          const json_t *body, json_t **resp, struct gt_err *err)
{
    struct transfer t = {.err = err};
    gt_buf_init(&t.body);
    char errbuf[CURL_ERROR_SIZE];
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    bool maybe_applied = false;
    CURLcode cc = CURLE_OK;
    long status = 0;
    for (size_t i = 0; i < c->n_servers; i++) {
        if (i > 0) {
            use_next_server(c);
        }
        bool applied_before = maybe_applied;
        cc = request_once(c, method, path, text, &t, errbuf, &status);
        if (applied_before && status == 409 && strcmp(method, "POST") == 0 &&
            own_create(c, path, body, resp)) {
            free(text);
            gt_buf_fini(&t.body);
            return 0;
        }
        if (applied_before && status == 404 && strcmp(method, "DELETE") == 0) {
            free(text);
            gt_buf_fini(&t.body);
            if (resp) {
                *resp = json_object();
            }
            return 0;
        }
        if (t.cancelled || !try_next(cc, status, &maybe_applied) || i + 1 == c->n_servers) {
            break;
        }
    }
    int rc = finish(c, cc, &t, errbuf, err);
    if (rc == 0 && resp) {
        json_error_t jerr;
        *resp = json_loadb(t.body.data ? t.body.data : "", t.body.len, 0, &jerr);
        if (!*resp) {
            rc = gt_err_set(err, GT_EBADREQ, "cannot parse the server's answer: %s", jerr.text);
        }
    }
    free(text);
    gt_buf_fini(&t.body);
    return rc;
}

/* path with its resourceVersion query parameter set to rv (heap). */
static char *path_from_rv(const char *path, const char *rv)
{
    struct gt_buf b;
    gt_buf_init(&b);
    const char *q = strchr(path, '?');
    gt_buf_append(&b, path, q ? (size_t)(q - path) : strlen(path));
    char sep = '?';
    if (q) {
        char *params = gt_xstrdup(q + 1);
        char *save = NULL;
        for (char *p = strtok_r(params, "&", &save); p; p = strtok_r(NULL, "&", &save)) {
            if (strncmp(p, "resourceVersion=", 16) != 0) {
                gt_buf_printf(&b, "%c%s", sep, p);
                sep = '&';
            }
        }
        free(params);
    }
    gt_buf_printf(&b, "%cresourceVersion=%s", sep, rv);
    return gt_buf_take(&b);
}

int gt_cli_client_watch(struct gt_cli_client *c, const char *path, gt_cli_watch_fn fn, void *arg,
                        struct gt_err *err)
{
    struct transfer t = {.fn = fn, .arg = arg, .err = err};
    gt_buf_init(&t.body);
    char errbuf[CURL_ERROR_SIZE];
    char *cur_path = gt_xstrdup(path);
    int rc = 0;
    /* each server once, again after every event delivered (progress) */
    for (size_t fails = 0;;) {
        size_t seen = t.n_events;
        gt_buf_reset(&t.body);
        prepare(c, "GET", cur_path, &t, errbuf);
        curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_watch_data);
        CURLcode cc = curl_easy_perform(c->curl);
        long status = 0;
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
        bool ignored = false;
        fails = t.n_events > seen ? 1 : fails + 1;
        if (c->n_servers > 1 && !t.cancelled && t.stop_rc == 0 && !t.too_large &&
            try_next(cc, cc == CURLE_OK ? status : 0, &ignored) && fails < c->n_servers + 1) {
            use_next_server(c);
            if (t.last_rv) {
                free(cur_path);
                cur_path = path_from_rv(path, t.last_rv);
            }
            continue;
        }
        rc = finish(c, cc, &t, errbuf, err);
        break;
    }
    if (rc == 0 && t.body.len > 0) {
        rc = deliver_line(&t, t.body.data, t.body.len);
    }
    free(cur_path);
    free(t.last_rv);
    gt_buf_fini(&t.body);
    return rc;
}

int gt_cli_client_stream(struct gt_cli_client *c, const char *path, gt_cli_stream_fn fn, void *arg,
                         struct gt_err *err)
{
    struct transfer t = {.raw_fn = fn, .arg = arg, .err = err};
    gt_buf_init(&t.body);
    char errbuf[CURL_ERROR_SIZE];
    prepare(c, "GET", path, &t, errbuf);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_raw_data);
    int rc = finish(c, curl_easy_perform(c->curl), &t, errbuf, err);
    gt_buf_fini(&t.body);
    return rc;
}

void gt_cli_client_set_cancel_fd(struct gt_cli_client *c, int fd)
{
    c->cancel_fd = fd;
}

void gt_cli_client_set_timeout(struct gt_cli_client *c, long seconds)
{
    c->timeout_s = seconds;
}

/* Wait up to timeout_ms for c's socket to be ready for events (POLLIN or
 * POLLOUT); false on timeout or error. */
static bool wait_socket(struct gt_cli_client *c, short events, int timeout_ms)
{
    struct pollfd pfd = {.fd = gt_cli_client_fd(c), .events = events};
    int n;
    while ((n = poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR) {
    }
    return n > 0;
}

int gt_cli_client_fd(struct gt_cli_client *c)
{
    curl_socket_t fd = CURL_SOCKET_BAD;
    curl_easy_getinfo(c->curl, CURLINFO_ACTIVESOCKET, &fd);
    return fd == CURL_SOCKET_BAD ? -1 : (int)fd;
}

int gt_cli_client_send(struct gt_cli_client *c, const void *data, size_t len)
{
    const char *d = data;
    while (len > 0) {
        size_t n = 0;
        CURLcode cc = curl_easy_send(c->curl, d, len, &n);
        if (cc == CURLE_AGAIN) {
            if (!wait_socket(c, POLLOUT, -1)) {
                return -EIO;
            }
            continue;
        }
        if (cc != CURLE_OK) {
            return -EIO;
        }
        d += n;
        len -= n;
    }
    return 0;
}

ssize_t gt_cli_client_recv(struct gt_cli_client *c, void *buf, size_t len)
{
    if (c->early_off < c->early.len) {
        size_t n = c->early.len - c->early_off < len ? c->early.len - c->early_off : len;
        memcpy(buf, c->early.data + c->early_off, n);
        c->early_off += n;
        return (ssize_t)n;
    }
    size_t n = 0;
    CURLcode cc = curl_easy_recv(c->curl, buf, len, &n);
    return cc == CURLE_AGAIN ? -EAGAIN : cc != CURLE_OK ? -EIO : (ssize_t)n;
}

/* Read from c until "\r\n\r\n" ends the answer's head in b (and maybe
 * more); the head's length with its end, or 0 (no head in time). */
static size_t read_head(struct gt_cli_client *c, struct gt_buf *b)
{
    char chunk[4096];
    for (;;) {
        const char *end = b->len ? memmem(b->data, b->len, "\r\n\r\n", 4) : NULL;
        if (end) {
            return (size_t)(end - b->data) + 4;
        }
        if (b->len > MAX_LINE_BYTES) {
            return 0;
        }
        ssize_t n = gt_cli_client_recv(c, chunk, sizeof(chunk));
        if (n == -EAGAIN) {
            if (!wait_socket(c, POLLIN, CONNECT_TIMEOUT_S * 1000 * 3)) {
                return 0;
            }
            continue;
        }
        if (n <= 0) {
            return 0;
        }
        gt_buf_append(b, chunk, (size_t)n);
    }
}

int gt_cli_client_upgrade(struct gt_cli_client *c, const char *path, const json_t *body,
                          const char *protocol, struct gt_err *err)
{
    struct transfer t = {.err = err};
    char errbuf[CURL_ERROR_SIZE];
    prepare(c, "GET", path, &t, errbuf);
    curl_easy_setopt(c->curl, CURLOPT_CONNECT_ONLY, 1L);
    CURLcode cc = curl_easy_perform(c->curl);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, NULL);
    if (cc != CURLE_OK) {
        return gt_err_set(err, -EIO, "cannot reach gantryd at %s: %s", c->server,
                          *errbuf ? errbuf : curl_easy_strerror(cc));
    }
    /* the URL's host[:port] and the rest, "/..." */
    const char *hp = strstr(c->server, "://");
    hp = hp ? hp + 3 : c->server;
    size_t hl = strcspn(hp, "/");
    char *text = json_dumps(body, JSON_COMPACT);
    struct gt_buf req;
    gt_buf_init(&req);
    gt_buf_printf(&req, "POST %s%s HTTP/1.1\r\nHost: %.*s\r\n", hp + hl, path, (int)hl, hp);
    if (c->token) {
        gt_buf_printf(&req, "Authorization: Bearer %s\r\n", c->token);
    }
    gt_buf_printf(&req,
                  "Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: %s\r\n"
                  "Content-Length: %zu\r\n\r\n%s",
                  protocol, strlen(text), text);
    free(text);
    int rc = gt_cli_client_send(c, req.data, req.len);
    gt_buf_reset(&req);
    size_t head = rc == 0 ? read_head(c, &req) : 0;
    int status = 0;
    if (rc != 0 || head == 0 || sscanf(req.data, "HTTP/1.%*d %d", &status) != 1) {
        gt_buf_fini(&req);
        return gt_err_set(err, -EIO, "gantryd at %s did not answer the upgrade", c->server);
    }
    if (status == 101) {
        gt_buf_reset(&c->early);
        gt_buf_append(&c->early, req.data + head, req.len - head);
        c->early_off = 0;
        gt_buf_fini(&req);
        return 0;
    }
    /* an error answer: its body, as long as Content-Length says */
    const char *cl = strcasestr(req.data, "\r\nContent-Length:");
    size_t want = cl && cl < req.data + head ? strtoul(cl + 17, NULL, 10) : 0;
    char chunk[4096];
    while (req.len - head < want && want < MAX_BODY_BYTES) {
        ssize_t n = gt_cli_client_recv(c, chunk, sizeof(chunk));
        if (n == -EAGAIN && wait_socket(c, POLLIN, CONNECT_TIMEOUT_S * 1000)) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        gt_buf_append(&req, chunk, (size_t)n);
    }
    rc = gt_cli_status_error(status, req.data + head, req.len - head, err);
    gt_buf_fini(&req);
    return rc;
}
