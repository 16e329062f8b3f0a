/*
 * reply.c: answering requests and rendering stored objects.
 */
#ifndef GT_SERVER_REPLY_H
#define GT_SERVER_REPLY_H

#include "server/server_int.h"

/* The method's name ("GET", ... "PATCH"; static), "OTHER" for the rest. */
const char *gt_http_method_name(enum evhttp_cmd_type cmd);
/* Finish r with a Status error; code is a GT_E* code. Frees r. */
void gt_req_error(struct gt_req *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Finish r with an error carried in err (its code and message). Frees r. */
void gt_req_error_err(struct gt_req *r, const struct gt_err *err);
/* Finish r with http_code and body (len bytes, copied) of Content-Type
 * ctype; counts and logs it. Frees r. */
void gt_req_reply_as(struct gt_req *r, int http_code, const char *ctype, const char *body,
                     size_t len);
/* Finish r with http_code and JSON text body (copied). Frees r. */
void gt_req_reply(struct gt_req *r, int http_code, const char *json, size_t len);
/* Finish r with 200 and o as JSON; takes o's reference. Frees r. */
void gt_req_reply_json(struct gt_req *r, json_t *o);
/* Release r without replying (the stream took over the request). */
void gt_req_free(struct gt_req *r);
/* Append obj's stored text with metadata.resourceVersion = rev (and, for
 * Nodes, the computed status.allocated) to out. */
void gt_render_object(const struct gt_server *s, struct gt_buf *out,
                      const struct gt_kind_info *kind, const char *text, size_t len, int64_t rev);
/* Same as a JSON value (caller json_decref()s), or NULL if text is bad. */
json_t *gt_render_json(const struct gt_server *s, const struct gt_kind_info *kind, const char *text,
                       size_t len, int64_t rev);
/* The project an object of kind belongs to for access: its metadata.project,
 * a Project's own name, an Event's involvedObject.project; NULL if none. */
const char *gt_access_project_of(const struct gt_kind_info *kind, const json_t *obj);
/* Parse "resourceVersion" query values: 0 and *rev, or -GT_EBADREQ. */
int gt_parse_rev(const char *s, int64_t *rev);

#endif
