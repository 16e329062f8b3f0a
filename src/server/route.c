/*
 * Routing: request paths to kinds, projects, names and subresources, as
 * docs/api.md's path table says, and the store keys that mirror them
 * ("/{plural}/{name}", "/{plural}/{project}/{name}").
 */
#include <stdio.h>
#include <string.h>

#include "server/server_int.h"

#define MAX_SEGS 6

/* Path segments may hold what object names hold (Event names add '.'). */
static bool segment_ok(const char *s, size_t len, size_t max)
{
    if (len == 0 || len > max) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) {
            return false;
        }
    }
    return true;
}

static int not_found(struct gt_err *err, const char *path)
{
    return gt_err_set(err, GT_ENOTFOUND, "the server could not find the requested resource %.200s",
                      path);
}

static int split(const char *rest, size_t len, const char **seg, size_t *seg_len)
{
    int n = 0;
    size_t i = 0;
    while (i < len) {
        if (n == MAX_SEGS) {
            return -1;
        }
        const char *s = rest + i;
        const char *slash = memchr(s, '/', len - i);
        size_t sl = slash ? (size_t)(slash - s) : len - i;
        if (sl == 0) {
            return -1;
        }
        seg[n] = s;
        seg_len[n] = sl;
        n++;
        i += sl + 1;
    }
    return n;
}

static bool seg_is(const char *s, size_t len, const char *word)
{
    return strlen(word) == len && !memcmp(s, word, len);
}

static const struct gt_kind_info *kind_of(const char *s, size_t len)
{
    char plural[32];
    if (len >= sizeof(plural)) {
        return NULL;
    }
    memcpy(plural, s, len);
    plural[len] = '\0';
    const struct gt_kind_info *k = gt_kind_by_plural(plural);
    /* by_plural is exact on plurals; insist so "job" is not a path */
    return k && !strcmp(k->plural, plural) ? k : NULL;
}

static int set_sub(struct gt_route *r, const char *s, size_t len)
{
    if (seg_is(s, len, "status")) {
        memcpy(r->sub, "status", 7);
        return 0;
    }
    if (seg_is(s, len, "binding") && r->kind->kind == GT_KIND_TASK) {
        memcpy(r->sub, "binding", 8);
        return 0;
    }
    if (seg_is(s, len, "log") && r->kind->kind == GT_KIND_TASK) {
        memcpy(r->sub, "log", 4);
        return 0;
    }
    if (seg_is(s, len, "exec") && r->kind->kind == GT_KIND_TASK) {
        memcpy(r->sub, "exec", 5);
        return 0;
    }
    /* served by the controllers (telemetry.c, secrets.c) */
    static const struct {
        const char *sub;
        enum gt_kind kind;
    } served[] = {
        {"scalars", GT_KIND_JOB},
        {"history", GT_KIND_JOB},
        {"telemetry", GT_KIND_NODE},
        {"secrets", GT_KIND_TASK},
    };
    for (size_t i = 0; i < GT_ARRAY_LEN(served); i++) {
        if (seg_is(s, len, served[i].sub) && r->kind->kind == served[i].kind) {
            snprintf(r->sub, sizeof(r->sub), "%s", served[i].sub);
            return 0;
        }
    }
    return -1;
}

static int parse_api(const char *path, const char *rest, size_t len, struct gt_route *r,
                     struct gt_err *err)
{
    const char *seg[MAX_SEGS];
    size_t sl[MAX_SEGS];
    int n = split(rest, len, seg, sl);
    if (n <= 0) {
        return not_found(err, path);
    }
    bool in_project =
        n >= 3 && seg_is(seg[0], sl[0], "projects") && !seg_is(seg[2], sl[2], "status");
    int k = 0; /* index of the plural segment */
    if (in_project) {
        if (!segment_ok(seg[1], sl[1], 63)) {
            return not_found(err, path);
        }
        memcpy(r->project, seg[1], sl[1]);
        r->project[sl[1]] = '\0';
        k = 2;
    }
    r->kind = kind_of(seg[k], sl[k]);
    if (!r->kind || r->kind->namespaced != in_project) {
        if (r->kind && r->kind->namespaced && n == 1) {
            r->type = GT_ROUTE_COLLECTION;
            r->all_projects = true;
            return 0;
        }
        return not_found(err, path);
    }
    if (n == k + 1) {
        r->type = GT_ROUTE_COLLECTION;
        return 0;
    }
    if (!segment_ok(seg[k + 1], sl[k + 1], GT_ROUTE_NAME_MAX)) {
        return not_found(err, path);
    }
    memcpy(r->name, seg[k + 1], sl[k + 1]);
    r->name[sl[k + 1]] = '\0';
    r->type = GT_ROUTE_OBJECT;
    if (n == k + 2) {
        return 0;
    }
    if (n == k + 3 && set_sub(r, seg[k + 2], sl[k + 2]) == 0) {
        return 0;
    }
    return not_found(err, path);
}

int gt_route_parse(const char *path, struct gt_route *r, struct gt_err *err)
{
    static const struct {
        const char *path;
        enum gt_route_type type;
    } fixed[] = {
        {"/healthz", GT_ROUTE_HEALTHZ},
        {"/readyz", GT_ROUTE_READYZ},
        {"/metrics", GT_ROUTE_METRICS},
        {"/debug/fault", GT_ROUTE_FAULT},
        {GT_API_GROUP_PREFIX "/whoami", GT_ROUTE_WHOAMI},
        {GT_API_GROUP_PREFIX "/clusterinfo", GT_ROUTE_CLUSTERINFO},
        {GT_API_GROUP_PREFIX "/registry/token", GT_ROUTE_REGISTRY_TOKEN},
        {GT_API_GROUP_PREFIX "/usage", GT_ROUTE_USAGE},
        {GT_API_GROUP_PREFIX "/usagerecords", GT_ROUTE_USAGE_RECORDS},
        {GT_API_GROUP_PREFIX "/jobstats", GT_ROUTE_JOB_STATS},
        {GT_API_GROUP_PREFIX "/nodestats", GT_ROUTE_NODE_STATS},
        {"/version", GT_ROUTE_VERSION},
    };
    memset(r, 0, sizeof(*r));
    for (size_t i = 0; i < GT_ARRAY_LEN(fixed); i++) {
        if (!strcmp(path, fixed[i].path)) {
            r->type = fixed[i].type;
            return 0;
        }
    }
    size_t pl = strlen(GT_API_GROUP_PREFIX);
    if (strncmp(path, GT_API_GROUP_PREFIX "/", pl + 1) != 0) {
        return not_found(err, path);
    }
    const char *rest = path + pl + 1;
    size_t len = strlen(rest);
    if (len && rest[len - 1] == '/') {
        len--;
    }
    return parse_api(path, rest, len, r, err);
}

char *gt_route_key(const struct gt_kind_info *kind, const char *project, const char *name)
{
    if (kind->namespaced && project && *project) {
        return name ? gt_xasprintf("/%s/%s/%s", kind->plural, project, name)
                    : gt_xasprintf("/%s/%s/", kind->plural, project);
    }
    return name ? gt_xasprintf("/%s/%s", kind->plural, name) : gt_xasprintf("/%s/", kind->plural);
}
