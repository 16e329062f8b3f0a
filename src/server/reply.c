/*
 * Replies, the bottom of gantryd's transport: every request's answer goes
 * through gt_req_reply_as, which counts it in the metrics and logs it; stored
 * objects are rendered for the wire here (the resourceVersion spliced in,
 * and a Node's or Department's computed status added). A struct gt_req
 * lives from the HTTP callback until its reply is sent; answering frees it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "server/reply.h"
#include "server/server_int.h"

void gt_req_free(struct gt_req *r)
{
    if (!r) {
        return;
    }
    json_decref(r->body);
    json_decref(r->obj);
    free(r->key);
    free(r->value);
    free(r);
}

const char *gt_http_method_name(enum evhttp_cmd_type cmd)
{
    switch (cmd) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    default:
        return "OTHER";
    }
}

void gt_req_reply_as(struct gt_req *r, int http_code, const char *ctype, const char *body,
                     size_t len)
{
    struct evhttp_request *req = r->req;
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", ctype);
    if (r->s->draining) {
        evhttp_add_header(h, "Connection", "close");
    }
    evbuffer_add(evhttp_request_get_output_buffer(req), body, len);
    evhttp_send_reply(req, http_code, NULL, NULL);
    double secs = (double)(gt_now_ns() - r->start_ns) / 1e9;
    gt_metrics_request(&r->s->metrics, r->mverb, http_code, secs);
    gt_log_debug("request", "method=%s path=%s code=%d user=%s duration_ms=%.3f",
                 gt_http_method_name(evhttp_request_get_command(req)), evhttp_request_get_uri(req),
                 http_code, r->user ? r->user->name : "-", secs * 1000);
    gt_req_free(r);
}

void gt_req_reply(struct gt_req *r, int http_code, const char *json, size_t len)
{
    gt_req_reply_as(r, http_code, "application/json", json, len);
}

void gt_req_reply_json(struct gt_req *r, json_t *o)
{
    struct gt_buf b;
    gt_buf_init(&b);
    gt_api_encode_json(&b, o);
    json_decref(o);
    gt_req_reply(r, 200, b.data, b.len);
    gt_buf_fini(&b);
}

static void error_msg(struct gt_req *r, int code, const char *msg)
{
    struct gt_buf b;
    gt_buf_init(&b);
    gt_status_format(&b, code, msg, r->route.kind ? r->route.kind->name : NULL,
                     r->route.name[0] ? r->route.name : NULL);
    gt_req_reply_as(r, gt_errcode_http(code), "application/json", b.data, b.len);
    gt_buf_fini(&b);
}

void gt_req_error(struct gt_req *r, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    error_msg(r, code, msg);
}

void gt_req_error_err(struct gt_req *r, const struct gt_err *err)
{
    int code = err->code;
    error_msg(r, code ? code : GT_EINTERNAL, err->msg[0] ? err->msg : gt_errcode_str(code));
}

/* Has an object of kind parts computed on reads, never stored? */
static bool computed(const struct gt_server *s, enum gt_kind kind)
{
    return s->ctl_hooks && (s->ctl_hooks->computed_kinds & (1u << kind));
}

json_t *gt_render_json(const struct gt_server *s, const struct gt_kind_info *kind, const char *text,
                       size_t len, int64_t rev)
{
    json_t *obj = gt_api_render_json(text, len, rev);
    if (obj && computed(s, kind->kind)) {
        s->ctl_hooks->render(s->ctl, kind->kind, obj);
    }
    return obj;
}

void gt_render_object(const struct gt_server *s, struct gt_buf *out,
                      const struct gt_kind_info *kind, const char *text, size_t len, int64_t rev)
{
    if (!computed(s, kind->kind) && gt_api_render_splice(out, text, len, rev)) {
        return;
    }
    json_t *obj = gt_render_json(s, kind, text, len, rev);
    if (!obj) {
        gt_buf_puts(out, "null");
        return;
    }
    gt_api_encode_json(out, obj);
    json_decref(obj);
}

const char *gt_access_project_of(const struct gt_kind_info *kind, const json_t *obj)
{
    if (kind->namespaced) {
        return gt_obj_project(obj);
    }
    if (kind->kind == GT_KIND_PROJECT) {
        return gt_obj_name(obj);
    }
    if (kind->kind == GT_KIND_EVENT) {
        return json_string_value(gt_json_path(obj, "involvedObject.project"));
    }
    return NULL;
}

int gt_parse_rev(const char *s, int64_t *rev)
{
    if (!s || !*s || strlen(s) > 19) {
        return GT_EBADREQ;
    }
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') {
            return GT_EBADREQ;
        }
    }
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno) {
        return GT_EBADREQ;
    }
    *rev = v;
    return 0;
}
