/*
 * ui.c: the dashboard's files.
 */
#ifndef GT_SERVER_UI_H
#define GT_SERVER_UI_H

#include "server/server_int.h"

/* Is path one of the dashboard's ("/", "/index.html", "/assets/...")? */
bool gt_ui_path(const char *path);
/* Answer a request for a dashboard path (no token needed): the file from
 * the dashboard directory with its cache headers, 404 when absent, 405 for
 * methods other than GET and HEAD. Frees r. */
void gt_ui_serve(struct gt_req *r, enum evhttp_cmd_type cmd, const char *path);

#endif
