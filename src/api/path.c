/*
 * Field paths in messages: "spec.quota.cpu", joined without snprintf since
 * validation joins one for every field it visits. Used by the schema
 * engine and by the resource maps it calls, so it sits below both.
 */
#include <string.h>

#include "api/api_int.h"

/* Copy s at buf + o, truncated to fit len with its NUL; the new end. */
static size_t path_cat(char *buf, size_t len, size_t o, const char *s)
{
    size_t n = strlen(s);
    n = o + n < len ? n : len - 1 - o;
    memcpy(buf + o, s, n);
    buf[o + n] = '\0';
    return o + n;
}

const char *gt_path_join(char *buf, size_t len, const char *parent, const char *name)
{
    /* not snprintf: validation joins a path for every field it visits */
    size_t o = 0;
    if (len == 0) {
        return buf;
    }
    buf[0] = '\0';
    if (parent[0] != '\0') {
        o = path_cat(buf, len, o, parent);
        o = path_cat(buf, len, o, ".");
    }
    path_cat(buf, len, o, name);
    return buf;
}
