/*
 * Error codes and their one table: name (the Kubernetes Status reason), a
 * message and the HTTP status. Codes outside the table are -errno values.
 */
#include <stdio.h>
#include <string.h>

#include "common/common.h"

static const struct {
    int code;
    int http;
    const char *reason;
    const char *message;
} codes[] = {
    {GT_EBADREQ, 400, "BadRequest", "malformed request"},
    {GT_EUNAUTH, 401, "Unauthorized", "authentication required"},
    {GT_EFORBIDDEN, 403, "Forbidden", "forbidden"},
    {GT_ENOTFOUND, 404, "NotFound", "not found"},
    {GT_EEXISTS, 409, "AlreadyExists", "already exists"},
    {GT_ECONFLICT, 409, "Conflict", "conflict"},
    {GT_EGONE, 410, "Expired", "too old resource version"},
    {GT_ETOOLARGE, 413, "RequestEntityTooLarge", "request entity too large"},
    {GT_EINVAL, 422, "Invalid", "invalid"},
    {GT_ESTORE, 503, "ServiceUnavailable", "store write failed"},
    {GT_EFSYNC, 503, "ServiceUnavailable", "store fsync failed"},
    {GT_EMETHOD, 405, "MethodNotAllowed", "method not allowed"},
    {GT_EINTERNAL, 500, "InternalError", "internal error"},
    {GT_EUSAGE, 400, "BadRequest", "bad command line"},
    {GT_ENOTLEADER, 503, "ServiceUnavailable", "not the leader"},
    {GT_ETIMEOUT, 504, "Timeout", "timed out waiting for a revision"},
};

static int find(int code)
{
    for (size_t i = 0; i < GT_ARRAY_LEN(codes); i++) {
        if (codes[i].code == code) {
            return (int)i;
        }
    }
    return -1;
}

int gt_errcode_http(int code)
{
    int i = find(code);
    return i < 0 ? 500 : codes[i].http;
}

const char *gt_errcode_reason(int code)
{
    int i = find(code);
    return i < 0 ? "InternalError" : codes[i].reason;
}

const char *gt_errcode_str(int code)
{
    int i = find(code);
    if (i >= 0) {
        return codes[i].message;
    }
    return code < 0 && code > -4096 ? strerror(-code) : "unknown error";
}

int gt_err_set(struct gt_err *err, int code, const char *fmt, ...)
{
    if (err && err->code == 0) {
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return code;
}

void gt_err_prefix(struct gt_err *err, const char *fmt, ...)
{
    if (!err || err->code == 0) {
        return;
    }
    char prefix[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    size_t pl = strlen(prefix);
    size_t ml = strlen(err->msg);
    if (pl + 2 >= sizeof(err->msg)) {
        return;
    }
    if (pl + 2 + ml >= sizeof(err->msg)) {
        ml = sizeof(err->msg) - pl - 3; /* truncate the tail */
    }
    memmove(err->msg + pl + 2, err->msg, ml);
    err->msg[pl + 2 + ml] = '\0';
    memcpy(err->msg, prefix, pl);
    err->msg[pl] = ':';
    err->msg[pl + 1] = ' ';
}

void gt_err_clear(struct gt_err *err)
{
    if (err) {
        err->code = 0;
        err->msg[0] = '\0';
    }
}
