/*
 * Fuzz target: `gantry apply -f` / `delete -f` manifests: a multi-document
 * YAML or JSON file (Lists flattened, Kubeflow and KServe documents
 * converted) read into dependency order, then each document's target
 * worked out. Reading fails with a message or yields documents in rank
 * order; each target is a kind and a name, or a message naming the
 * document.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli/cli_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("manifest", MFD_CLOEXEC);
    GT_ASSERT(fd >= 0);
    GT_ASSERT(size == 0 || write(fd, data, size) == (ssize_t)size);
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    const char *paths[] = {path};
    struct gt_cli_manifests m;
    struct gt_err err = {0};
    if (gt_cli_manifests_read(&m, paths, 1, false, &err) != 0) {
        GT_ASSERT(err.msg[0] != '\0' && m.n == 0);
        close(fd);
        return 0;
    }
    for (size_t i = 0; i < m.n; i++) {
        GT_ASSERT(i == 0 || m.docs[i - 1].rank <= m.docs[i].rank);
        struct gt_cli_target t = {0};
        struct gt_err terr = {0};
        char from[64];
        if (gt_cli_manifest_target(&m.docs[i], NULL, "default", &t, from, sizeof(from), &terr) ==
            0) {
            GT_ASSERT(t.kind != NULL && t.name != NULL);
            GT_ASSERT(!t.kind->namespaced || t.project != NULL);
        } else {
            gt_cli_manifest_describe_failure(&terr, m.docs[i].file, m.docs[i].index,
                                             m.docs[i].n_docs, &t);
            GT_ASSERT(terr.msg[0] != '\0');
        }
    }
    gt_cli_manifests_fini(&m);
    close(fd);
    return 0;
}
