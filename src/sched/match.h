/*
 * Where a task may go besides room: node labels against its group's
 * nodeSelector, node taints against its tolerations (match.c).
 */
#ifndef GT_SCHED_MATCH_H
#define GT_SCHED_MATCH_H

#include "sched/sched.h"

/* A node's labels ("key=value") and taints: the model's own copies. */
struct gt_sched_node_marks {
    char **labels;
    size_t n_labels;
    struct gt_sched_taint *taints; /* strings owned */
    size_t n_taints;
};

/* A group's nodeSelector ("key=value") and tolerations: the model's own
 * copies. Empty: any node without a NoSchedule/NoExecute taint. */
struct gt_sched_where {
    char **selector;
    size_t n_selector;
    struct gt_sched_toleration *tolerations; /* strings owned */
    size_t n_tolerations;
};

/* Copy the spec's labels and taints into marks (caller's storage). */
void gt_sched_node_marks_init(struct gt_sched_node_marks *marks,
                              const struct gt_sched_node_spec *spec);
void gt_sched_node_marks_fini(struct gt_sched_node_marks *marks);
/* Are marks what spec says (same labels and taints, in order)? */
bool gt_sched_node_marks_same(const struct gt_sched_node_marks *marks,
                              const struct gt_sched_node_spec *spec);

/* Copy the group spec's selector and tolerations into w. */
void gt_sched_where_init(struct gt_sched_where *w, const struct gt_sched_group_spec *gs);
void gt_sched_where_fini(struct gt_sched_where *w);

/* May a task of w go on a node with marks: every selector entry among its
 * labels, every NoSchedule and NoExecute taint tolerated? */
bool gt_sched_marks_admit(const struct gt_sched_node_marks *marks, const struct gt_sched_where *w);
/* Why not, into b: "nodeSelector a=b c=d not matched" / "taint k=v:NoSchedule
 * not tolerated" (the first reason). */
void gt_sched_marks_why(const struct gt_sched_node_marks *marks, const struct gt_sched_where *w,
                        struct gt_buf *b);

#endif
