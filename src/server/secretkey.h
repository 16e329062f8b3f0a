/*
 * secretkey.c: gantryd's key for the values it derives and never stores.
 */
#ifndef GT_SERVER_SECRETKEY_H
#define GT_SERVER_SECRETKEY_H

#include "server/server_int.h"

/* The key derived values are made with, the file --secret-key names
 * (default DATA_DIR/secret.key): read into s->secret_key (the SHA-256 of
 * its bytes), made with 32 random bytes (hex, mode 0600) when absent. All
 * replicas of one control plane must be given the same file. 0, or an
 * error with err naming the flag and the file. */
int gt_secretkey_load(struct gt_server *s, struct gt_err *err);
/* The value derived for purpose and subject (both borrowed): 64 hex digits
 * of HMAC-SHA256 under s's key over "PURPOSE\nSUBJECT", into hex. */
void gt_secretkey_derive(const struct gt_server *s, const char *purpose, const char *subject,
                         char hex[65]);

#endif
