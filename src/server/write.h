/*
 * write.c: creates, replaces, deletes and bindings.
 */
#ifndef GT_SERVER_WRITE_H
#define GT_SERVER_WRITE_H

#include "server/server_int.h"

void gt_write_create(struct gt_req *r);
void gt_write_update(struct gt_req *r); /* PUT of the object or its /status */
void gt_write_delete(struct gt_req *r, int64_t expected_rev);
void gt_write_binding(struct gt_req *r);

#endif
