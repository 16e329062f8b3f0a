/*
 * Server errors to one line.
 *
 * gantryd answers every failure with a Kubernetes-style Status object
 * (docs/api.md "Errors") whose message already names the field and the
 * reason; the client shows that message as is. Answers that are not a
 * Status (a proxy's HTML page, an empty body) still give one line with the
 * HTTP code and the start of the body.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

enum { BODY_SNIPPET = 200 };

static int code_for(long http_status, const char *reason)
{
    static const struct {
        long http;
        int code;
    } map[] = {
        {400, GT_EBADREQ}, {401, GT_EUNAUTH},   {403, GT_EFORBIDDEN}, {404, GT_ENOTFOUND},
        {405, GT_EMETHOD}, {409, GT_ECONFLICT}, {410, GT_EGONE},      {413, GT_ETOOLARGE},
        {422, GT_EINVAL},  {503, GT_ESTORE},
    };
    if (http_status == 409 && reason && strcmp(reason, "AlreadyExists") == 0) {
        return GT_EEXISTS;
    }
    for (size_t i = 0; i < GT_ARRAY_LEN(map); i++) {
        if (map[i].http == http_status) {
            return map[i].code;
        }
    }
    return GT_EINTERNAL;
}

/* Copy at most BODY_SNIPPET bytes of body into out as one line. */
static void snippet(const char *body, size_t len, char *out, size_t out_len)
{
    size_t n = 0;
    for (size_t i = 0; i < len && i < BODY_SNIPPET && n + 1 < out_len; i++) {
        char c = body[i];
        out[n++] = (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    }
    while (n > 0 && out[n - 1] == ' ') {
        n--;
    }
    out[n] = '\0';
}

int gt_cli_status_error(long http_status, const char *body, size_t len, struct gt_err *err)
{
    json_t *root = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *reason = json_string_value(json_object_get(root, "reason"));
    const char *message = json_string_value(json_object_get(root, "message"));
    int code = code_for(http_status, reason);
    if (message && *message) {
        gt_err_set(err, code, "%s", message);
    } else if (reason && *reason) {
        gt_err_set(err, code, "server answered HTTP %ld (%s)", http_status, reason);
    } else {
        char text[BODY_SNIPPET + 1];
        snippet(body ? body : "", body ? len : 0, text, sizeof(text));
        gt_err_set(err, code, "server answered HTTP %ld%s%s", http_status, *text ? ": " : "", text);
    }
    json_decref(root);
    return code;
}
