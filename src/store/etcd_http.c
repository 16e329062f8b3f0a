/*
 * etcd_http.c: how the etcd backend speaks to etcd's JSON gateway (etcd
 * 3.4; PLATFORM-NOTES.md "etcd 3.4"): base64 bytes fields, int64 fields as
 * strings, mvccpb.KeyValue objects, and one POST with failover across the
 * endpoints (etcd_http.h).
 */
#include <stdlib.h>
#include <string.h>

#include "store/etcd_http.h"

/* ---- base64 (RFC 4648, with padding), as the gateway's bytes fields ---- */

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *gt_etcd_b64_encode(const char *src, size_t len)
{
    const unsigned char *s = (const unsigned char *)src;
    char *out = gt_xmalloc((len + 2) / 3 * 4 + 1);
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)s[i] << 16;
        if (i + 1 < len) {
            v |= (uint32_t)s[i + 1] << 8;
        }
        if (i + 2 < len) {
            v |= s[i + 2];
        }
        out[o++] = B64[(v >> 18) & 63];
        out[o++] = B64[(v >> 12) & 63];
        out[o++] = i + 1 < len ? B64[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? B64[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

int gt_etcd_b64_decode(const char *src, char **out, size_t *len)
{
    size_t n = src ? strlen(src) : 0;
    /* room for unpadded input too: n characters carry at most 6n/8 bytes */
    char *p = gt_xmalloc((n + 3) / 4 * 3 + 1);
    size_t o = 0;
    uint32_t v = 0;
    int bits = 0;
    for (size_t i = 0; i < n && src[i] != '='; i++) {
        const char *c = strchr(B64, src[i]);
        if (!c || src[i] == '\0') {
            free(p);
            return -1;
        }
        v = (v << 6) | (uint32_t)(c - B64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            p[o++] = (char)((v >> bits) & 0xff);
        }
    }
    p[o] = '\0';
    *out = p;
    *len = o;
    return 0;
}

/* ---- JSON helpers ---- */

int64_t gt_etcd_jint(const json_t *o, const char *name)
{
    const json_t *v = json_object_get(o, name);
    if (json_is_string(v)) {
        return strtoll(json_string_value(v), NULL, 10);
    }
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

json_t *gt_etcd_jint_str(int64_t v)
{
    char s[24];
    snprintf(s, sizeof(s), "%lld", (long long)v);
    return json_string(s);
}

json_t *gt_etcd_jbytes(const char *p, size_t len)
{
    char *s = gt_etcd_b64_encode(p, len);
    json_t *j = json_string(s);
    free(s);
    return j;
}

int gt_etcd_kv_from_json(const json_t *j, struct gt_store_kv *kv, struct gt_err *err)
{
    size_t key_len;
    memset(kv, 0, sizeof(*kv));
    if (gt_etcd_b64_decode(json_string_value(json_object_get(j, "key")), &kv->key, &key_len) != 0 ||
        gt_etcd_b64_decode(json_string_value(json_object_get(j, "value")), &kv->value,
                           &kv->value_len) != 0) {
        gt_store_kv_fini(kv);
        return gt_err_set(err, GT_ESTORE, "etcd: kvs[].key or .value is not base64");
    }
    kv->create_rev = gt_etcd_jint(j, "create_revision") - REV_OFFSET;
    kv->mod_rev = gt_etcd_jint(j, "mod_revision") - REV_OFFSET;
    return 0;
}

/* ---- HTTP ---- */

struct body {
    char *p;
    size_t n, cap;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct body *b = arg;
    size_t len = size * nmemb;
    if (b->n + len + 1 > MAX_RESPONSE) {
        return 0; /* curl fails the transfer with CURLE_WRITE_ERROR */
    }
    GT_VEC_RESERVE(b->p, b->cap, b->n + len + 1, 4096);
    memcpy(b->p + b->n, data, len);
    b->n += len;
    b->p[b->n] = '\0';
    return len;
}

/* The gateway's error answer: {"error":..., "code":N, "message":...}. */
static int http_error(long status, const json_t *j, const char *path, struct gt_err *err)
{
    const char *msg = json_string_value(json_object_get(j, "message"));
    if (!msg) {
        msg = json_string_value(json_object_get(j, "error"));
    }
    if (!msg) {
        msg = "no message";
    }
    int code = strstr(msg, "compacted") ? GT_EGONE : GT_ESTORE;
    return gt_err_set(err, code, "etcd %s: HTTP %ld: %s", path, status, msg);
}

void gt_etcd_setup(struct etcd *e, CURL *h, size_t i, const char *path, long request_timeout_ms)
{
    char url[512];
    snprintf(url, sizeof(url), "%s/v3/%s", e->urls[i], path);
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, request_timeout_ms);
    if (e->cafile) {
        curl_easy_setopt(h, CURLOPT_CAINFO, e->cafile);
    }
}

int gt_etcd_call(struct etcd *e, CURL *h, const char *path, json_t *req, bool retry_sent,
                 json_t **resp, struct gt_err *err)
{
    *resp = NULL;
    char *payload = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    GT_ASSERT(payload);
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    int rc = GT_ESTORE;
    char last[2 * CURL_ERROR_SIZE] = "no endpoint";
    size_t start = atomic_load(&e->cur);
    for (size_t t = 0; t < e->n_urls; t++) {
        size_t i = (start + t) % e->n_urls;
        struct body b = {0};
        char ebuf[CURL_ERROR_SIZE] = "";
        gt_etcd_setup(e, h, i, path, REQUEST_TIMEOUT_MS);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
        CURLcode cc = curl_easy_perform(h);
        if (cc == CURLE_OK) {
            long status = 0;
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
            json_t *j = json_loadb(b.p ? b.p : "", b.n, 0, NULL);
            free(b.p);
            atomic_store(&e->cur, i);
            if (status != 200 || !json_is_object(j)) {
                rc = status == 200
                         ? gt_err_set(err, GT_ESTORE, "etcd %s: answer is not a JSON object", path)
                         : http_error(status, j, path, err);
                json_decref(j);
                goto out;
            }
            *resp = j;
            rc = 0;
            goto out;
        }
        free(b.p);
        long sent = 0;
        curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &sent);
        snprintf(last, sizeof(last), "%s: %s", e->urls[i], ebuf[0] ? ebuf : curl_easy_strerror(cc));
        gt_log_warn("etcd endpoint failed", "url=%s err=\"%s\"", e->urls[i], last);
        if (sent > 0 && !retry_sent) {
            rc = gt_err_set(err, GT_EFSYNC, "etcd %s: sent, no answer (%s): outcome unknown", path,
                            last);
            goto out;
        }
    }
    rc = gt_err_set(err, GT_ESTORE, "etcd %s: no endpoint answered (last: %s)", path, last);
out:
    curl_slist_free_all(hdrs);
    free(payload);
    return rc;
}
