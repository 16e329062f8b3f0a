/*
 * Fuzz target: the token file (kube-apiserver's static token format). A
 * file is accepted whole or refused whole with a message naming the line;
 * every user of an accepted file is found again by its own token.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void find_self(const struct gt_server_user *u, void *arg)
{
    const struct gt_server_tokens *t = arg;
    const struct gt_server_user *found = gt_server_tokens_find(t, u->token);
    /* a token listed twice resolves to one of its lines */
    GT_ASSERT(found != NULL && strcmp(found->token, u->token) == 0);
    GT_ASSERT(u->name[0] != '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = gt_xmalloc(size ? size : 1);
    memcpy(text, data, size);
    struct gt_server_tokens *t = NULL;
    struct gt_err err = {0};
    if (gt_server_tokens_parse(text, size, &t, &err) != 0) {
        GT_ASSERT(err.msg[0] != '\0');
    } else {
        gt_server_tokens_each(t, find_self, t);
        gt_server_tokens_first_node(t);
        gt_server_tokens_free(t);
    }
    free(text);
    return 0;
}
