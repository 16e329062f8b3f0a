/*
 * Node labels and taints against a task group's nodeSelector and
 * tolerations, with Kubernetes' rules: a nodeSelector entry matches a node
 * label of the same key and value; a toleration tolerates a taint when
 * their effects match (a toleration without effect matches every one), and
 * its key is the taint's (an empty key with operator Exists: every key),
 * and with Exists any value, with Equal the same value. A task goes only
 * where every NoSchedule and NoExecute taint is tolerated; PreferNoSchedule
 * is a preference and never keeps it off a node. Pure: no I/O; the model
 * owns every copy made here.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/match.h"

static const char *str_or_empty(const char *s)
{
    return s ? s : "";
}

static char *dup_or_null(const char *s)
{
    return s ? gt_xstrdup(s) : NULL;
}

static bool str_same(const char *a, const char *b)
{
    return !strcmp(str_or_empty(a), str_or_empty(b));
}

enum gt_sched_effect gt_sched_effect_of(const char *name)
{
    static const char *const names[] = {[GT_SCHED_NO_SCHEDULE] = "NoSchedule",
                                        [GT_SCHED_PREFER_NO_SCHEDULE] = "PreferNoSchedule",
                                        [GT_SCHED_NO_EXECUTE] = "NoExecute"};
    for (size_t e = GT_SCHED_NO_SCHEDULE; name && e < GT_ARRAY_LEN(names); e++) {
        if (!strcmp(name, names[e])) {
            return (enum gt_sched_effect)e;
        }
    }
    return GT_SCHED_EFFECT_ANY;
}

static const char *effect_name(enum gt_sched_effect e)
{
    return e == GT_SCHED_NO_SCHEDULE          ? "NoSchedule"
           : e == GT_SCHED_PREFER_NO_SCHEDULE ? "PreferNoSchedule"
           : e == GT_SCHED_NO_EXECUTE         ? "NoExecute"
                                              : "";
}

bool gt_sched_tolerates(const struct gt_sched_toleration *tols, size_t n,
                        const struct gt_sched_taint *taint)
{
    for (size_t i = 0; i < n; i++) {
        const struct gt_sched_toleration *t = &tols[i];
        if (t->effect != GT_SCHED_EFFECT_ANY && t->effect != taint->effect) {
            continue;
        }
        if (!*str_or_empty(t->key)) {
            if (t->exists) {
                return true;
            }
            continue;
        }
        if (str_same(t->key, taint->key) && (t->exists || str_same(t->value, taint->value))) {
            return true;
        }
    }
    return false;
}

static char **strs_copy(const char *const *v, size_t n)
{
    char **out = n ? gt_xcalloc(n, sizeof(*out)) : NULL;
    for (size_t i = 0; i < n; i++) {
        out[i] = gt_xstrdup(v[i]);
    }
    return out;
}

static void strs_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i]);
    }
    free(v);
}

void gt_sched_node_marks_init(struct gt_sched_node_marks *marks,
                              const struct gt_sched_node_spec *spec)
{
    marks->labels = strs_copy(spec->labels, spec->n_labels);
    marks->n_labels = spec->n_labels;
    marks->n_taints = spec->n_taints;
    marks->taints = spec->n_taints ? gt_xcalloc(spec->n_taints, sizeof(*marks->taints)) : NULL;
    for (size_t i = 0; i < spec->n_taints; i++) {
        marks->taints[i] = (struct gt_sched_taint){.key = dup_or_null(spec->taints[i].key),
                                                   .value = dup_or_null(spec->taints[i].value),
                                                   .effect = spec->taints[i].effect};
    }
}

void gt_sched_node_marks_fini(struct gt_sched_node_marks *marks)
{
    strs_free(marks->labels, marks->n_labels);
    for (size_t i = 0; i < marks->n_taints; i++) {
        free((char *)marks->taints[i].key);
        free((char *)marks->taints[i].value);
    }
    free(marks->taints);
    *marks = (struct gt_sched_node_marks){0};
}

bool gt_sched_node_marks_same(const struct gt_sched_node_marks *marks,
                              const struct gt_sched_node_spec *spec)
{
    if (marks->n_labels != spec->n_labels || marks->n_taints != spec->n_taints) {
        return false;
    }
    for (size_t i = 0; i < spec->n_labels; i++) {
        if (strcmp(marks->labels[i], spec->labels[i])) {
            return false;
        }
    }
    for (size_t i = 0; i < spec->n_taints; i++) {
        const struct gt_sched_taint *a = &marks->taints[i], *b = &spec->taints[i];
        if (!str_same(a->key, b->key) || !str_same(a->value, b->value) || a->effect != b->effect) {
            return false;
        }
    }
    return true;
}

void gt_sched_where_init(struct gt_sched_where *w, const struct gt_sched_group_spec *gs)
{
    w->selector = strs_copy(gs->node_selector, gs->n_node_selector);
    w->n_selector = gs->n_node_selector;
    w->n_tolerations = gs->n_tolerations;
    w->tolerations =
        gs->n_tolerations ? gt_xcalloc(gs->n_tolerations, sizeof(*w->tolerations)) : NULL;
    for (size_t i = 0; i < gs->n_tolerations; i++) {
        const struct gt_sched_toleration *t = &gs->tolerations[i];
        w->tolerations[i] = (struct gt_sched_toleration){.key = dup_or_null(t->key),
                                                         .value = dup_or_null(t->value),
                                                         .exists = t->exists,
                                                         .effect = t->effect};
    }
}

void gt_sched_where_fini(struct gt_sched_where *w)
{
    strs_free(w->selector, w->n_selector);
    for (size_t i = 0; i < w->n_tolerations; i++) {
        free((char *)w->tolerations[i].key);
        free((char *)w->tolerations[i].value);
    }
    free(w->tolerations);
    *w = (struct gt_sched_where){0};
}

/* The first selector entry marks lack, or NULL. */
static const char *unmatched(const struct gt_sched_node_marks *marks,
                             const struct gt_sched_where *w)
{
    for (size_t i = 0; i < w->n_selector; i++) {
        bool found = false;
        for (size_t j = 0; j < marks->n_labels && !found; j++) {
            found = !strcmp(w->selector[i], marks->labels[j]);
        }
        if (!found) {
            return w->selector[i];
        }
    }
    return NULL;
}

/* The first NoSchedule or NoExecute taint w does not tolerate, or NULL. */
static const struct gt_sched_taint *untolerated(const struct gt_sched_node_marks *marks,
                                                const struct gt_sched_where *w)
{
    for (size_t i = 0; i < marks->n_taints; i++) {
        const struct gt_sched_taint *t = &marks->taints[i];
        if (t->effect != GT_SCHED_PREFER_NO_SCHEDULE &&
            !gt_sched_tolerates(w->tolerations, w->n_tolerations, t)) {
            return t;
        }
    }
    return NULL;
}

bool gt_sched_marks_admit(const struct gt_sched_node_marks *marks, const struct gt_sched_where *w)
{
    return !unmatched(marks, w) && !untolerated(marks, w);
}

void gt_sched_marks_why(const struct gt_sched_node_marks *marks, const struct gt_sched_where *w,
                        struct gt_buf *b)
{
    const char *label = unmatched(marks, w);
    const struct gt_sched_taint *t = label ? NULL : untolerated(marks, w);
    if (label) {
        gt_buf_printf(b, "no label %s", label);
    } else if (t) {
        gt_buf_printf(b, "taint %s%s%s:%s not tolerated", str_or_empty(t->key),
                      t->value && *t->value ? "=" : "", str_or_empty(t->value),
                      effect_name(t->effect));
    }
}
