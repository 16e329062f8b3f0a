/*
 * gantlet's configuration: one declarative table (see common/config.h), as
 * gantryd's, drives the flags, the environment (GANTLET_<NAME>), --help and
 * validation; --storage-root may be repeated. Also the agent's token file.
 * Strings in struct gt_gantlet_config are owned by it.
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "agent/agent_int.h"
#include "common/config.h"

#define OFF(f) offsetof(struct gt_gantlet_config, f)

static const struct gt_config_opt opts[] = {
    {"server", GT_CONFIG_STR, OFF(server), NULL, 0, 0, true,
     "gantryd URL, http://HOST:PORT; several replicas: URL1,URL2,... (the next is tried when one "
     "does not answer or answers 503)"},
    {"token-file", GT_CONFIG_STR, OFF(token_file), NULL, 0, 0, true,
     "the node's token: first line, bare or token,user,uid,\"groups\""},
    {"name", GT_CONFIG_STR, OFF(name), NULL, 0, 0, true, "node name"},
    {"listen", GT_CONFIG_STR, OFF(listen), "127.0.0.1:8444", 0, 0, false,
     "ADDR:PORT serving task logs, /healthz and /metrics"},
    {"fake-gpus", GT_CONFIG_STR, OFF(fake_gpus), NULL, 0, 0, false,
     "declare fake GPUs, e.g. 8xA100-80GB:groups=4+4, instead of NVML"},
    {"fake-gpu-counters", GT_CONFIG_STR, OFF(fake_gpu_counters), NULL, 0, 0, false,
     "directory of the fake GPUs' readings and health: a file per GPU index (docs/metrics.md)"},
    {"gpu-sample-ms", GT_CONFIG_INT, OFF(gpu_sample_ms), "1000", 50, 60000, false,
     "milliseconds between GPU samples (readings, processes, health), on the agent's loop"},
    {"idle-gpu-seconds", GT_CONFIG_INT, OFF(idle_gpu_s), "0", 0, 604800, false,
     "a task whose GPUs all read 0 % utilisation this long gets a Warning Event IdleGPU "
     "(0: never)"},
    {"nvml-library", GT_CONFIG_STR, OFF(nvml_lib), GT_NVML_LIBRARY, 0, 0, false,
     "NVML library to dlopen"},
    {"root", GT_CONFIG_STR, OFF(root), "/var/lib/gantlet", 0, 0, false,
     "data directory: task logs and working directories (ROOT/tasks/<task-uid>/), "
     "virtual environments, images"},
    {"run-dir", GT_CONFIG_STR, OFF(run_dir), "/run/gantlet", 0, 0, false,
     "runtime state of the tasks (RUN/tasks/<task-uid>/: the shims' small files), best on "
     "tmpfs; kept across agent restarts, not needed across reboots"},
    {"boot-id-file", GT_CONFIG_STR, OFF(boot_id_file), "/proc/sys/kernel/random/boot_id", 0, 0,
     false,
     "the boot id, recorded with each task: a task recorded under another boot is gone (the "
     "node rebooted); tests point it at a file of their own"},
    {"storage-root", GT_CONFIG_LIST, OFF(storage_roots), NULL, 0, 0, false,
     "a directory volumes may be mounted from (repeatable)"},
    {"cluster-interface", GT_CONFIG_STR, OFF(cluster_interface), NULL, 0, 0, false,
     "network interface of the cluster network for GLOO/NCCL_SOCKET_IFNAME (default: the one "
     "owning the --listen address)"},
    {"heartbeat", GT_CONFIG_INT, OFF(heartbeat_s), "10", 1, 3600, false,
     "seconds between heartbeats"},
    {"shim", GT_CONFIG_STR, OFF(shim), NULL, 0, 0, false,
     "gantry-shim binary (default: next to gantlet)"},
    {"log-max-bytes", GT_CONFIG_INT, OFF(log_max_bytes), "104857600", 4096, INT64_MAX / 2, false,
     "task log file size before it is rotated (3 rotated files kept)"},
    {"image-dir", GT_CONFIG_STR, OFF(image_dir), NULL, 0, 0, false,
     "container image cache (default ROOT/images)"},
    {"image-gc-threshold", GT_CONFIG_STR, OFF(image_gc_threshold), "80%", 0, 0, false,
     "collect unused images, least recently used first, above this: bytes of images (20Gi) "
     "or how full the image file system is (80%)"},
    {"registry-auth-file", GT_CONFIG_STR, OFF(registry_auth_file), NULL, 0, 0, false,
     "registry credentials in the format skopeo reads (containers-auth.json)"},
    {"insecure-registry", GT_CONFIG_LIST, OFF(insecure_registries), NULL, 0, 0, false,
     "HOST:PORT of a registry reached over plain HTTP (repeatable)"},
    {"oci-runtime", GT_CONFIG_STR, OFF(oci_runtime), "runc", 0, 0, false,
     "OCI runtime of image tasks: runc or crun (crun needs a pure cgroup v2 machine)"},
    {"hollow", GT_CONFIG_INT, OFF(hollow), "0", 0, 100000, false,
     "run this many hollow nodes NAME-0 .. NAME-(N-1) instead of one real node: registered, "
     "heartbeated and their tasks' lives played through the API, no process started "
     "(needs --fake-gpus; for scale tests)"},
    {"hollow-start-ms", GT_CONFIG_INT, OFF(hollow_start_ms), "0", 0, 3600000, false,
     "a hollow node's task reports Running this long after it is bound"},
    {"hollow-connections", GT_CONFIG_INT, OFF(hollow_connections), "64", 1, GT_APIC_POOL_MAX, false,
     "keep-alive connections the hollow nodes' status writes share"},
    {"log-level", GT_CONFIG_LOGLEVEL, OFF(log_level), "info", 0, 0, false,
     "debug, info, warn or error"},
    {"fault-points", GT_CONFIG_STR, OFF(fault_points), NULL, 0, 0, false,
     "NAME=crash|fail[:nth=N|:p=P],...: arm named fault points, for tests (docs/faults.md: "
     "shim-spawn, exit-recorded-before-reported; the shim's come from GANTRY_SHIM_FAULT_POINTS)"},
};

static const struct gt_config_table table = {
    .env_prefix = "GANTLET_",
    .usage = "usage: gantlet --server URL --token-file FILE --name NODE [options]\n\n"
             "gantry's node agent: registers the node, runs its tasks, serves their logs.\n\n",
    .opts = opts,
    .n_opts = GT_ARRAY_LEN(opts),
};

int gt_gantlet_config_parse(struct gt_gantlet_config *cfg, int argc, char *const *argv,
                            char *const *envp, bool *help, struct gt_err *err)
{
    *cfg = (struct gt_gantlet_config){0};
    return gt_config_parse(&table, cfg, argc, argv, envp, help, err);
}

void gt_gantlet_config_fini(struct gt_gantlet_config *cfg)
{
    gt_config_fini(&table, cfg);
}

void gt_gantlet_config_usage(FILE *f)
{
    gt_config_usage(&table, f);
}

int gt_gantlet_token_read(const char *path, char **token, struct gt_err *err)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        return gt_err_set(err, -errno, "%s: %s", path, strerror(errno));
    }
    char line[4096];
    bool got = fgets(line, sizeof(line), f) != NULL;
    fclose(f);
    if (!got) {
        return gt_err_set(err, GT_EINVAL, "%s: empty token file", path);
    }
    size_t n = strcspn(line, ",\r\n");
    while (n > 0 && isspace((unsigned char)line[n - 1])) {
        n--;
    }
    const char *s = line;
    while (n > 0 && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    if (n == 0) {
        return gt_err_set(err, GT_EINVAL, "%s: no token on the first line", path);
    }
    *token = gt_xstrndup(s, n);
    return 0;
}
