/*
 * Authorization: who may do what, as docs/api.md "Authentication and
 * access" says. Decisions come from an in-memory index of Projects
 * (department, members with roles) and Departments (admins) that the server
 * keeps current from a store watch, so no request reads the store to
 * decide. The index owns copies of everything it holds.
 */
#include <stdlib.h>
#include <string.h>

#include "server/server_int.h"

enum role { ROLE_NONE, ROLE_VIEWER, ROLE_MEMBER, ROLE_ADMIN, ROLE_DEPT_ADMIN };

struct member {
    char *user;
    enum role role;
};

struct project {
    char *department;
    struct member *members;
    size_t n_members;
};

struct department {
    char **admins;
    size_t n_admins;
};

struct gt_server_access {
    struct gt_strmap projects;    /* name -> struct project */
    struct gt_strmap departments; /* name -> struct department */
};

static void project_free(void *p)
{
    struct project *pr = p;
    if (!pr) {
        return;
    }
    free(pr->department);
    for (size_t i = 0; i < pr->n_members; i++) {
        free(pr->members[i].user);
    }
    free(pr->members);
    free(pr);
}

static void department_free(void *p)
{
    struct department *d = p;
    if (!d) {
        return;
    }
    for (size_t i = 0; i < d->n_admins; i++) {
        free(d->admins[i]);
    }
    free(d->admins);
    free(d);
}

struct gt_server_access *gt_server_access_new(void)
{
    struct gt_server_access *a = gt_xcalloc(1, sizeof(*a));
    gt_strmap_init(&a->projects);
    gt_strmap_init(&a->departments);
    return a;
}

void gt_server_access_free(struct gt_server_access *a)
{
    if (!a) {
        return;
    }
    gt_strmap_fini(&a->projects, project_free);
    gt_strmap_fini(&a->departments, department_free);
    free(a);
}

static enum role role_by_name(const char *s)
{
    if (!s) {
        return ROLE_NONE;
    }
    if (!strcmp(s, "admin")) {
        return ROLE_ADMIN;
    }
    if (!strcmp(s, "member")) {
        return ROLE_MEMBER;
    }
    if (!strcmp(s, "viewer")) {
        return ROLE_VIEWER;
    }
    return ROLE_NONE;
}

static void put_project(struct gt_server_access *a, const struct gt_api_project *obj)
{
    struct project *pr = gt_xcalloc(1, sizeof(*pr));
    pr->department = gt_xstrdup(obj->spec.department);
    size_t n = obj->spec.members.n;
    pr->members = gt_xcalloc(n ? n : 1, sizeof(*pr->members));
    for (size_t i = 0; i < n; i++) {
        const char *user = obj->spec.members.v[i].user;
        enum role role = role_by_name(obj->spec.members.v[i].role);
        if (user && role != ROLE_NONE) {
            pr->members[pr->n_members].user = gt_xstrdup(user);
            pr->members[pr->n_members].role = role;
            pr->n_members++;
        }
    }
    project_free(gt_strmap_put(&a->projects, obj->o.meta.name, pr));
}

static void put_department(struct gt_server_access *a, const struct gt_api_department *obj)
{
    struct department *d = gt_xcalloc(1, sizeof(*d));
    size_t n = obj->spec.admins.n;
    d->admins = gt_xcalloc(n ? n : 1, sizeof(*d->admins));
    for (size_t i = 0; i < n; i++) {
        const char *user = obj->spec.admins.v[i];
        if (user) {
            d->admins[d->n_admins++] = gt_xstrdup(user);
        }
    }
    department_free(gt_strmap_put(&a->departments, obj->o.meta.name, d));
}

void gt_server_access_put(struct gt_server_access *a, const struct gt_api_object *obj)
{
    if (!obj->meta.name) {
        return;
    }
    if (obj->kind == GT_KIND_PROJECT) {
        put_project(a, (const struct gt_api_project *)obj);
    } else if (obj->kind == GT_KIND_DEPARTMENT) {
        put_department(a, (const struct gt_api_department *)obj);
    }
}

void gt_server_access_delete(struct gt_server_access *a, enum gt_kind kind, const char *name)
{
    if (kind == GT_KIND_PROJECT) {
        project_free(gt_strmap_del(&a->projects, name));
    } else if (kind == GT_KIND_DEPARTMENT) {
        department_free(gt_strmap_del(&a->departments, name));
    }
}

const char *gt_server_access_project_department(const struct gt_server_access *a,
                                                const char *project)
{
    const struct project *pr = gt_strmap_get(&a->projects, project);
    return pr ? pr->department : NULL;
}

static bool dept_admin(const struct gt_server_access *a, const char *user, const char *dept)
{
    const struct department *d = dept ? gt_strmap_get(&a->departments, dept) : NULL;
    for (size_t i = 0; d && i < d->n_admins; i++) {
        if (!strcmp(d->admins[i], user)) {
            return true;
        }
    }
    return false;
}

static enum role project_role(const struct gt_server_access *a, const char *user,
                              const char *project)
{
    const struct project *pr = project ? gt_strmap_get(&a->projects, project) : NULL;
    if (!pr) {
        return ROLE_NONE;
    }
    if (dept_admin(a, user, pr->department)) {
        return ROLE_DEPT_ADMIN;
    }
    for (size_t i = 0; i < pr->n_members; i++) {
        if (!strcmp(pr->members[i].user, user)) {
            return pr->members[i].role;
        }
    }
    return ROLE_NONE;
}

struct dept_member_q {
    const struct gt_server_access *a;
    const char *user;
    const char *dept;
    bool found;
};

static int dept_member_cb(const char *name, void *val, void *arg)
{
    struct dept_member_q *q = arg;
    const struct project *pr = val;
    if (pr->department && !strcmp(pr->department, q->dept) &&
        project_role(q->a, q->user, name) != ROLE_NONE) {
        q->found = true;
        return 1;
    }
    return 0;
}

/* Members read the departments of their projects. */
static bool member_in_department(const struct gt_server_access *a, const char *user,
                                 const char *dept)
{
    struct dept_member_q q = {a, user, dept, false};
    gt_strmap_each(&a->projects, dept_member_cb, &q);
    return q.found;
}

bool gt_server_can_read_project(const struct gt_server_access *a, const struct gt_server_user *user,
                                const char *project)
{
    if (user->admin || user->node) {
        return true;
    }
    return project_role(a, user->name, project) != ROLE_NONE;
}

const char *gt_server_user_node(const struct gt_server_user *user)
{
    static const char prefix[] = "system:node:";
    if (!user->node || strncmp(user->name, prefix, sizeof(prefix) - 1) != 0 ||
        !user->name[sizeof(prefix) - 1]) {
        return NULL;
    }
    return user->name + sizeof(prefix) - 1;
}

/* Nodes read everything, write Nodes and Task /status, create Events; a
 * node user bound to one node (NodeRestriction) writes only its own Node
 * and the status of tasks bound to it. */
static bool node_may(const struct gt_server_user *user, const struct gt_server_authz *req)
{
    if (req->verb == GT_VERB_READ) {
        return true;
    }
    const char *self = gt_server_user_node(user);
    if (req->kind == GT_KIND_NODE) {
        return !self || (req->name && !strcmp(req->name, self));
    }
    if (req->kind == GT_KIND_TASK && req->sub && !strcmp(req->sub, "status")) {
        return !self || !req->bound_node || !strcmp(req->bound_node, self);
    }
    return req->kind == GT_KIND_EVENT && req->verb == GT_VERB_CREATE && !req->sub;
}

static bool project_object_may(const struct gt_server_access *a, const char *user,
                               const struct gt_server_authz *req)
{
    enum role role = ROLE_NONE;
    switch (req->verb) {
    case GT_VERB_READ:
        return project_role(a, user, req->project) != ROLE_NONE;
    case GT_VERB_CREATE:
        return req->department && dept_admin(a, user, req->department);
    case GT_VERB_UPDATE:
        role = project_role(a, user, req->project);
        if (role != ROLE_ADMIN && role != ROLE_DEPT_ADMIN) {
            return false;
        }
        /* moving a project needs the new department's admin too */
        if (req->department) {
            const char *cur = gt_server_access_project_department(a, req->project);
            if (!cur || strcmp(cur, req->department) != 0) {
                return dept_admin(a, user, req->department);
            }
        }
        return true;
    case GT_VERB_DELETE:
        return project_role(a, user, req->project) == ROLE_DEPT_ADMIN;
    }
    return false;
}

int gt_server_authorize(const struct gt_server_access *a, const struct gt_server_user *user,
                        const struct gt_server_authz *req)
{
    bool ok = false;
    if (user->admin) {
        return 0;
    }
    if (user->node) {
        return node_may(user, req) ? 0 : GT_EFORBIDDEN;
    }
    if (req->sub) {
        return GT_EFORBIDDEN; /* status and binding: controllers, scheduler, agents */
    }
    switch (req->kind) {
    case GT_KIND_NODE:
    case GT_KIND_PRIORITYCLASS:
        ok = req->verb == GT_VERB_READ;
        break;
    case GT_KIND_DEPARTMENT:
        ok = req->verb == GT_VERB_READ && req->name &&
             (dept_admin(a, user->name, req->name) ||
              member_in_department(a, user->name, req->name));
        break;
    case GT_KIND_PROJECT:
        ok = project_object_may(a, user->name, req);
        break;
    case GT_KIND_JOB:
    case GT_KIND_TASK:
    case GT_KIND_NOTEBOOK:
    case GT_KIND_VOLUME:
    case GT_KIND_IMAGEBUILD:
    case GT_KIND_MODEL:
    case GT_KIND_MODELVERSION:
    case GT_KIND_INFERENCESERVICE: {
        enum role role = project_role(a, user->name, req->project);
        ok = req->verb == GT_VERB_READ ? role != ROLE_NONE : role >= ROLE_MEMBER;
        break;
    }
    case GT_KIND_EVENT:
        ok = req->verb == GT_VERB_READ && req->project &&
             project_role(a, user->name, req->project) != ROLE_NONE;
        break;
    case GT_KIND_COUNT:
        break;
    }
    return ok ? 0 : GT_EFORBIDDEN;
}
