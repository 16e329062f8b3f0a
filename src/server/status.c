/*
 * Status error bodies, Kubernetes-shaped:
 * {"apiVersion":"v1","kind":"Status","status":"Failure","code":422,
 *  "reason":"Invalid","message":"spec.x: must be ...",
 *  "details":{"name":...,"kind":...,"field":"spec.x"}}
 * The field is the dotted path a validation message starts with.
 */
#include <stdlib.h>
#include <string.h>

#include "server/server_int.h"

void gt_status_field(const char *msg, char *field, size_t len)
{
    field[0] = '\0';
    const char *colon = strstr(msg, ": ");
    if (!colon || colon == msg) {
        return;
    }
    size_t n = (size_t)(colon - msg);
    for (size_t i = 0; i < n; i++) {
        char c = msg[i];
        /* a path: identifiers, dots, [i] indexes, and '/' in resource names */
        if (c == ' ' || c == '"' || c == '\'' || c == ',' || c == '(' || c == ')') {
            return;
        }
    }
    if (n >= len) {
        return;
    }
    memcpy(field, msg, n);
    field[n] = '\0';
}

void gt_status_format(struct gt_buf *out, int code, const char *message, const char *kind,
                      const char *name)
{
    char field[256];
    gt_status_field(message, field, sizeof(field));
    json_t *details = json_object();
    if (name && *name) {
        json_object_set_new(details, "name", json_string(name));
    }
    if (kind && *kind) {
        json_object_set_new(details, "kind", json_string(kind));
    }
    if (field[0]) {
        json_object_set_new(details, "field", json_string(field));
    }
    json_t *st = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:o}", "apiVersion", "v1", "kind",
                           "Status", "status", "Failure", "code", gt_errcode_http(code), "reason",
                           gt_errcode_reason(code), "message", message, "details", details);
    if (!st) {
        /* message not valid UTF-8: say so rather than fail */
        st = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s}", "apiVersion", "v1", "kind", "Status",
                       "status", "Failure", "code", gt_errcode_http(code), "reason",
                       gt_errcode_reason(code), "message", gt_errcode_str(code));
    }
    char *text = json_dumps(st, JSON_COMPACT);
    gt_buf_puts(out, text);
    gt_buf_puts(out, "\n");
    free(text);
    json_decref(st);
}
