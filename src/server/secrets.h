/*
 * secrets.c: values gantryd derives on demand and never stores (a
 * notebook's Jupyter token, an image build's push credential), and the
 * node-only endpoint that hands them to the agent starting the task.
 */
#ifndef GT_SERVER_SECRETS_H
#define GT_SERVER_SECRETS_H

#include <event2/keyvalq_struct.h>

#include "server/server_int.h"

/* GET .../projects/P/tasks/T/secrets[?uid=UID] (r->user set): the values
 * of the task's env entries with valueFrom.gantrySecret, as
 * {"kind":"TaskSecrets","env":[{name, value}]}. Only for node agents, and
 * for an agent whose user is system:node:NAME only for a task bound to
 * NAME (403 otherwise: a user token never reads them); 404 without the
 * task or with another uid; 409 when it is not bound or has ended or a
 * value cannot be made (its notebook or build gone, no --registry-key). */
void gt_secrets_serve(struct gt_ctl *c, struct gt_req *r, int method, const struct evkeyvalq *q);

#endif
