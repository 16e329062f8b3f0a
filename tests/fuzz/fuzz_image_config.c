/*
 * Fuzz target: an OCI image config (from a registry: untrusted) merged with
 * a task's process. Whatever the config holds, the merge yields a
 * NULL-terminated argv of at least one entry and an env of NAME=value
 * entries, or refuses with a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void merge(const json_t *config, const struct gt_image_task *t)
{
    struct gt_image_proc p = {0};
    struct gt_err err = {0};
    if (gt_image_process_merge(config, t, &p, &err) != 0) {
        GT_ASSERT(err.msg[0] != '\0');
        return;
    }
    GT_ASSERT(p.n_argv >= 1 && p.argv[p.n_argv] == NULL && p.cwd != NULL);
    GT_ASSERT(p.env[p.n_env] == NULL);
    gt_image_proc_fini(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *config = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!config) {
        return 0;
    }
    char *const command[] = {"/bin/sh", "-c"};
    char *const args[] = {"echo hi"};
    char *const env[] = {"CUDA_VISIBLE_DEVICES=3,5", "HOME=/home/u", "A=1"};
    struct gt_image_task bare = {0};
    struct gt_image_task full = {.command = command,
                                 .n_command = 2,
                                 .args = args,
                                 .n_args = 1,
                                 .env = env,
                                 .n_env = 3,
                                 .working_dir = "/work"};
    struct gt_image_task args_only = {.args = args, .n_args = 1, .env = env, .n_env = 3};
    merge(config, &bare);
    merge(config, &full);
    merge(config, &args_only);
    json_decref(config);
    return 0;
}
