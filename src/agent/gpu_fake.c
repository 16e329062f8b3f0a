/*
 * Fake GPUs for development and tests: `--fake-gpus 8xA100-80GB:groups=4+4`.
 * They go through every path except NVML, so the spec is parsed strictly and
 * the devices look real: stable UUIDs derived from the node name and index
 * (FNV-1a, formatted 8-4-4-4-12), memory from the model's "-<N>GB" suffix in
 * GiB, one NUMA node per group. Fake GPUs have no device node (minor -1).
 *
 * Their readings and health come from a counters directory when one is set
 * (gt_gpu_fake_counters: one small file per GPU that tests write); the set's
 * impl then owns a copy of the directory's path.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"

#define COUNTERS_MAX_BYTES 8192

#define MAX_FAKE_GPUS 256
#define MAX_MEMORY_GB (1 << 20)

/* Parse a positive decimal at *s (no sign, no leading zeros beyond "0"),
 * advancing *s; at most max. */
static int parse_count(const char **s, long max, long *out)
{
    const char *p = *s;
    long v = 0;
    if (!isdigit((unsigned char)*p)) {
        return -1;
    }
    while (isdigit((unsigned char)*p)) {
        v = v * 10 + (*p - '0');
        if (v > max) {
            return -1;
        }
        p++;
    }
    *s = p;
    *out = v;
    return 0;
}

/* Memory in GiB from a model name ending in "-<N>GB". */
static int model_memory(const char *model, int64_t *bytes, struct gt_err *err)
{
    size_t len = strlen(model);
    const char *dash = strrchr(model, '-');
    if (len < 3 || strcmp(model + len - 2, "GB") != 0 || !dash || dash == model) {
        return gt_err_set(err, GT_EINVAL, "model %s must end in -<N>GB (memory per GPU)", model);
    }
    const char *p = dash + 1;
    long gb;
    if (parse_count(&p, MAX_MEMORY_GB, &gb) < 0 || p != model + len - 2 || gb == 0) {
        return gt_err_set(err, GT_EINVAL, "model %s: memory must be 1..%d GB", model,
                          MAX_MEMORY_GB);
    }
    *bytes = (int64_t)gb << 30;
    return 0;
}

/* Parse "groups=a+b+..." into sizes[], checking the sum. */
static int parse_groups(const char *s, long count, long *sizes, size_t *n_groups,
                        struct gt_err *err)
{
    if (strncmp(s, "groups=", 7) != 0) {
        return gt_err_set(err, GT_EINVAL, "unknown option \"%s\" (want groups=<n>+<n>...)", s);
    }
    const char *p = s + 7;
    long sum = 0;
    size_t n = 0;
    for (;;) {
        long v;
        if (parse_count(&p, MAX_FAKE_GPUS, &v) < 0 || v == 0) {
            return gt_err_set(err, GT_EINVAL, "groups: want positive sizes joined by '+' in \"%s\"",
                              s + 7);
        }
        sizes[n++] = v;
        sum += v;
        if (*p == '\0') {
            break;
        }
        if (*p != '+' || n == MAX_FAKE_GPUS) {
            return gt_err_set(err, GT_EINVAL, "groups: unexpected \"%s\"", p);
        }
        p++;
    }
    if (sum != count) {
        return gt_err_set(err, GT_EINVAL, "groups: sizes sum to %ld, not the GPU count %ld", sum,
                          count);
    }
    *n_groups = n;
    return 0;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static void fake_uuid(const char *node_name, int index, char *out, size_t len)
{
    char key[320];
    int n = snprintf(key, sizeof(key), "%s/%d", node_name, index);
    uint64_t a = fnv1a(0xcbf29ce484222325ULL, key, (size_t)n);
    uint64_t b = fnv1a(a ^ 0x9e3779b97f4a7c15ULL, key, (size_t)n);
    snprintf(out, len, "GPU-%08x-%04x-%04x-%04x-%012llx", (unsigned)(a >> 32),
             (unsigned)((a >> 16) & 0xffff), (unsigned)(a & 0xffff), (unsigned)(b >> 48),
             (unsigned long long)(b & 0xffffffffffffULL));
}

static int fake_discover(struct gt_gpu_set *set, const char *spec, const char *node_name,
                         struct gt_err *err)
{
    const char *p = spec;
    long count;
    if (parse_count(&p, MAX_FAKE_GPUS, &count) < 0 || count == 0 || *p != 'x') {
        return gt_err_set(err, GT_EINVAL,
                          "fake GPU spec \"%s\": want <count 1..%d>x<model>-<N>GB[:groups=...]",
                          spec, MAX_FAKE_GPUS);
    }
    p++;
    const char *colon = strchr(p, ':');
    size_t model_len = colon ? (size_t)(colon - p) : strlen(p);
    char model[64];
    if (model_len == 0 || model_len >= sizeof(model)) {
        return gt_err_set(err, GT_EINVAL, "fake GPU spec \"%s\": model must be 1..63 characters",
                          spec);
    }
    for (size_t i = 0; i < model_len; i++) {
        if (!isalnum((unsigned char)p[i]) && p[i] != '-' && p[i] != '_' && p[i] != '.') {
            return gt_err_set(err, GT_EINVAL,
                              "fake GPU spec \"%s\": model may hold only letters, digits, - _ .",
                              spec);
        }
    }
    memcpy(model, p, model_len);
    model[model_len] = '\0';
    int64_t mem_bytes = 0;
    long sizes[MAX_FAKE_GPUS] = {count};
    size_t n_groups = 1;
    if (model_memory(model, &mem_bytes, err) < 0 ||
        (colon && parse_groups(colon + 1, count, sizes, &n_groups, err) < 0)) {
        gt_err_prefix(err, "fake GPU spec \"%s\"", spec);
        return GT_EINVAL;
    }
    set->gpus = gt_xcalloc((size_t)count, sizeof(*set->gpus));
    set->n_gpus = (size_t)count;
    int index = 0;
    for (size_t g = 0; g < n_groups; g++) {
        for (long k = 0; k < sizes[g]; k++, index++) {
            struct gt_gpu *gpu = &set->gpus[index];
            gpu->index = index;
            fake_uuid(node_name, index, gpu->uuid, sizeof(gpu->uuid));
            memcpy(gpu->model, model, sizeof(model));
            gpu->memory_bytes = mem_bytes;
            gpu->numa_node = (int)g;
            snprintf(gpu->group, sizeof(gpu->group), "g%zu", g);
            gpu->healthy = true;
            gpu->minor = -1;
        }
    }
    return 0;
}

void gt_gpu_fake_counters(struct gt_gpu_set *set, const char *dir)
{
    if (set->ops != &gt_gpu_fake_ops) {
        return;
    }
    free(set->impl);
    set->impl = gt_xstrdup(dir);
}

/* One "key value" line of a counters file into s, *lost, *xid; -1 when malformed. */
static int counter_line(const char *line, struct gt_gpu_sample *s, bool *lost, uint64_t *xid)
{
    char key[32];
    long long a = 0, b = 0;
    double x = 0;
    int n = 0;
    if (sscanf(line, "%31s %n", key, &n) != 1) {
        return 0; /* a blank line */
    }
    const char *v = line + n;
    if (!strcmp(key, "process")) {
        if (sscanf(v, "%lld %lld", &a, &b) != 2 || a <= 0 || b < 0) {
            return -1;
        }
        if (s->n_procs == GT_GPU_PROCS_MAX) {
            s->n_procs_dropped++;
        } else {
            s->procs[s->n_procs++] = (struct gt_gpu_proc){(pid_t)a, (int64_t)b << 20};
        }
        return 0;
    }
    if (!strcmp(key, "power_w")) {
        return sscanf(v, "%lf", &x) == 1 && x >= 0 ? (s->power_w = x, 0) : -1;
    }
    if (sscanf(v, "%lld", &a) != 1 || a < 0) {
        return -1;
    }
    if (!strcmp(key, "util")) {
        s->util_pct = a;
    } else if (!strcmp(key, "mem_copy_util")) {
        s->mem_copy_util_pct = a;
    } else if (!strcmp(key, "fb_used_mib")) {
        s->fb_used_mib = a;
    } else if (!strcmp(key, "temp_c")) {
        s->temp_c = a;
    } else if (!strcmp(key, "sm_clock_mhz")) {
        s->sm_clock_mhz = a;
    } else if (!strcmp(key, "xid")) {
        *xid = (uint64_t)a;
    } else if (!strcmp(key, "lost")) {
        *lost = a != 0;
    } else {
        return -1;
    }
    return 0;
}

static int fake_sample(struct gt_gpu_set *set, size_t i, struct gt_gpu_sample *s)
{
    struct gt_gpu *gpu = &set->gpus[i];
    int64_t mem_mib = gpu->memory_bytes >> 20;
    char *text = NULL;
    size_t len;
    bool lost = false;
    uint64_t xid = 0;
    if (set->impl) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%d", (const char *)set->impl, gpu->index);
        if (gt_file_read(path, COUNTERS_MAX_BYTES, &text, &len, NULL) < 0) {
            text = NULL; /* no file: an idle device */
        }
    }
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) {
            *next++ = '\0';
        }
        if (counter_line(line, s, &lost, &xid) < 0) {
            gt_log_warn("bad fake GPU counters line; the GPU reads as lost", "gpu=%d line=\"%s\"",
                        gpu->index, line);
            lost = true;
            break;
        }
    }
    free(text);
    if (xid != gpu->last_xid) {
        gpu->n_xid += gt_gpu_xid_critical(xid);
        gpu->last_xid = xid;
    }
    gpu->xid_failed = gt_gpu_xid_critical(xid);
    s->fb_free_mib = s->fb_used_mib < mem_mib ? mem_mib - s->fb_used_mib : 0;
    return lost ? -ENODEV : 0;
}

static void fake_fini(struct gt_gpu_set *set)
{
    free(set->impl);
    set->impl = NULL;
}

const struct gt_gpu_ops gt_gpu_fake_ops = {
    .name = "fake",
    .discover = fake_discover,
    .sample = fake_sample,
    .fini = fake_fini,
};
