/*
 * registry.c: the cluster registry's token service (see there for the
 * token and credential formats).
 */
#ifndef GT_SERVER_REGISTRY_H
#define GT_SERVER_REGISTRY_H

#include <event2/keyvalq_struct.h>
#include <jansson.h>

#include "common/common.h"

struct gt_req;
struct gt_registry_key;

/* Load the PEM RSA private key at path (--registry-key) into *out (free
 * with gt_registry_key_free; NULL is fine). GT_EINVAL naming the flag. */
int gt_registry_key_load(const char *path, struct gt_registry_key **out, struct gt_err *err);
void gt_registry_key_free(struct gt_registry_key *k);
/* A build credential for user in project, valid 24 hours (new string). */
char *gt_registry_credential(const struct gt_registry_key *k, const char *user,
                             const char *project);
/* Whether cred is a build credential of user that has not expired; its
 * project is copied into project (len bytes, truncated) either way. */
bool gt_registry_credential_check(const struct gt_registry_key *k, const char *user,
                                  const char *cred, char *project, size_t len);
/* GET registry/token with its query q: the token answer (new reference) for
 * the 200 reply, or NULL when r was answered with an error (401 without
 * Basic credentials or with unknown ones, 404 without a key). */
json_t *gt_registry_token(struct gt_req *r, const struct evkeyvalq *q);

#endif
