/*
 * Fuzz target: image references (untrusted: they come from any user's
 * template) and the message extraction applied to registry tools' stderr.
 * An accepted reference names a host, a repository and a tag or digest,
 * and its skopeo transport form parses back to the same reference.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = gt_xstrndup((const char *)data, size);
    char msg[128];
    gt_image_tool_message(s, msg, sizeof(msg));
    GT_ASSERT(strlen(msg) < sizeof(msg));
    struct gt_image_ref r;
    struct gt_err err = {0};
    if (gt_image_ref_parse(s, &r, &err) != 0) {
        GT_ASSERT(err.code == GT_EINVAL && strstr(err.msg, "invalid image reference"));
        free(s);
        return 0;
    }
    GT_ASSERT(r.host[0] && r.name[0] && (r.tag[0] || r.digest[0]));
    char t[700];
    gt_image_ref_transport(&r, r.digest, t, sizeof(t));
    GT_ASSERT(strncmp(t, "docker://", 9) == 0);
    struct gt_image_ref back;
    GT_ASSERT(gt_image_ref_parse(t + 9, &back, NULL) == 0);
    GT_ASSERT(!strcmp(back.host, r.host) && !strcmp(back.name, r.name) &&
              !strcmp(back.digest, r.digest));
    GT_ASSERT(r.digest[0] || !strcmp(back.tag, r.tag));
    free(s);
    return 0;
}
