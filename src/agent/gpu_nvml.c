/*
 * GPU discovery through NVML, loaded at run time with dlopen so one gantlet
 * binary runs on machines with and without the NVIDIA driver. This is the one
 * place in gantry that looks symbols up by name.
 *
 * The few NVML types used are declared here from nvml.h (CUDA 12, NVML API
 * v11+); only fields up to the ones read are relied on and every struct
 * matches nvml.h's layout. Required symbols missing means "no NVML"; optional
 * ones (PCI info v3, NvLink remote info, minor number, events) degrade
 * gracefully.
 *
 * Grouping: two GPUs share a group when their common PCIe ancestor is at most
 * a PCIe switch (NVML_TOPOLOGY_MULTIPLE) or when they reach the same NvLink
 * endpoint (the peer GPU, or an NVSwitch on HGX boards). Health: a GPU that
 * cannot be described at discovery is listed lost (index, and what could be
 * read) rather than dropped with the others; a critical Xid event (other
 * than application errors, which the NVIDIA device plugin also ignores)
 * marks the GPU failed for good; a device whose memory information cannot
 * be read when sampled (NVML_ERROR_GPU_IS_LOST and the like) is lost until
 * it answers again. Samples read the fields dcgm-exporter's default
 * counters take from NVML, and the running compute processes.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/agent_int.h"

/* ---- from nvml.h ---- */
typedef int nvmlReturn_t; /* enum nvmlReturn_enum; NVML_SUCCESS is 0 */
#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_TIMEOUT 10
#define NVML_VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFULL
#define NVML_TEMPERATURE_GPU 0 /* nvmlTemperatureSensors_t */
#define NVML_CLOCK_SM 1        /* nvmlClockType_t */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct nvmlMemory_st {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;
typedef struct nvmlPciInfo_st {
    char busIdLegacy[16]; /* NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE */
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32]; /* NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE */
} nvmlPciInfo_t;
typedef struct nvmlEventData_st {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData; /* the Xid for Xid events */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;
typedef struct nvmlUtilization_st {
    unsigned int gpu;    /* % of the sample period a kernel ran */
    unsigned int memory; /* % of the sample period memory was read or written */
} nvmlUtilization_t;
typedef struct nvmlProcessInfo_st { /* nvmlProcessInfo_t of the _v3 (and _v2) calls */
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes, or NVML_VALUE_NOT_AVAILABLE */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;
#define NVML_TOPOLOGY_MULTIPLE 20 /* nvmlGpuTopologyLevel_t: INTERNAL 0, SINGLE 10, MULTIPLE 20 */
#define NVML_FEATURE_ENABLED 1    /* nvmlEnableState_t */
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define nvmlEventTypeXidCriticalError 0x0000000000000008ULL

/* Entry points, resolved by name. The first group is required. */
struct nvml {
    void *dl;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    const char *(*error_string)(nvmlReturn_t);
    nvmlReturn_t (*get_count)(unsigned int *);
    nvmlReturn_t (*get_handle)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*get_uuid)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*get_name)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*get_memory)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*get_pci)(nvmlDevice_t, nvmlPciInfo_t *);
    nvmlReturn_t (*get_ancestor)(nvmlDevice_t, nvmlDevice_t, int *);
    /* optional */
    nvmlReturn_t (*get_nvlink_state)(nvmlDevice_t, unsigned int, int *);
    nvmlReturn_t (*get_nvlink_remote)(nvmlDevice_t, unsigned int, nvmlPciInfo_t *);
    nvmlReturn_t (*get_minor)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*event_set_create)(nvmlEventSet_t *);
    nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
    nvmlReturn_t (*event_set_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
    nvmlReturn_t (*event_set_free)(nvmlEventSet_t);
    nvmlReturn_t (*get_utilization)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*get_power)(nvmlDevice_t, unsigned int *); /* mW */
    nvmlReturn_t (*get_temperature)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*get_clock)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*get_processes)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
    bool inited;
    nvmlDevice_t *devs;
    nvmlEventSet_t events; /* NULL when no GPU could register */
};

static const struct {
    const char *name;
    const char *fallback; /* older name for the same call, or NULL */
    size_t offset;
    bool required;
} symbols[] = {
    {"nvmlInit_v2", NULL, offsetof(struct nvml, init), true},
    {"nvmlShutdown", NULL, offsetof(struct nvml, shutdown), true},
    {"nvmlErrorString", NULL, offsetof(struct nvml, error_string), true},
    {"nvmlDeviceGetCount_v2", NULL, offsetof(struct nvml, get_count), true},
    {"nvmlDeviceGetHandleByIndex_v2", NULL, offsetof(struct nvml, get_handle), true},
    {"nvmlDeviceGetUUID", NULL, offsetof(struct nvml, get_uuid), true},
    {"nvmlDeviceGetName", NULL, offsetof(struct nvml, get_name), true},
    {"nvmlDeviceGetMemoryInfo", NULL, offsetof(struct nvml, get_memory), true},
    {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", offsetof(struct nvml, get_pci), true},
    {"nvmlDeviceGetTopologyCommonAncestor", NULL, offsetof(struct nvml, get_ancestor), true},
    {"nvmlDeviceGetNvLinkState", NULL, offsetof(struct nvml, get_nvlink_state), false},
    {"nvmlDeviceGetNvLinkRemotePciInfo_v2", NULL, offsetof(struct nvml, get_nvlink_remote), false},
    {"nvmlDeviceGetMinorNumber", NULL, offsetof(struct nvml, get_minor), false},
    {"nvmlEventSetCreate", NULL, offsetof(struct nvml, event_set_create), false},
    {"nvmlDeviceRegisterEvents", NULL, offsetof(struct nvml, register_events), false},
    {"nvmlEventSetWait_v2", NULL, offsetof(struct nvml, event_set_wait), false},
    {"nvmlEventSetFree", NULL, offsetof(struct nvml, event_set_free), false},
    {"nvmlDeviceGetUtilizationRates", NULL, offsetof(struct nvml, get_utilization), false},
    {"nvmlDeviceGetPowerUsage", NULL, offsetof(struct nvml, get_power), false},
    {"nvmlDeviceGetTemperature", NULL, offsetof(struct nvml, get_temperature), false},
    {"nvmlDeviceGetClockInfo", NULL, offsetof(struct nvml, get_clock), false},
    {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
     offsetof(struct nvml, get_processes), false},
};

static int load(struct nvml *nv, const char *lib_path, struct gt_err *err)
{
    nv->dl = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
    if (!nv->dl) {
        return gt_err_set(err, -ENOENT, "NVML not available: %s", dlerror());
    }
    for (size_t i = 0; i < GT_ARRAY_LEN(symbols); i++) {
        void *fn = dlsym(nv->dl, symbols[i].name);
        if (!fn && symbols[i].fallback) {
            fn = dlsym(nv->dl, symbols[i].fallback);
        }
        if (!fn && symbols[i].required) {
            return gt_err_set(err, -ENOSYS, "NVML library %s lacks %s", lib_path, symbols[i].name);
        }
        memcpy((char *)nv + symbols[i].offset, &fn, sizeof(fn));
    }
    return 0;
}

static int nvml_fail(struct nvml *nv, nvmlReturn_t r, const char *call, int index,
                     struct gt_err *err)
{
    const char *why = nv->error_string ? nv->error_string(r) : NULL;
    if (index >= 0) {
        return gt_err_set(err, GT_EINTERNAL, "%s(GPU %d) failed: %s (%d)", call, index,
                          why ? why : "unknown error", r);
    }
    return gt_err_set(err, GT_EINTERNAL, "%s failed: %s (%d)", call, why ? why : "unknown error",
                      r);
}

static int numa_of(const nvmlPciInfo_t *pci)
{
    char path[128];
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%04x:%02x:%02x.0/numa_node", pci->domain,
             pci->bus, pci->device);
    FILE *f = fopen(path, "re");
    int node = -1;
    if (f) {
        if (fscanf(f, "%d", &node) != 1) {
            node = -1;
        }
        fclose(f);
    }
    return node;
}

static int describe(struct nvml *nv, unsigned int i, struct gt_gpu *gpu, nvmlPciInfo_t *pci,
                    struct gt_err *err)
{
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    nvmlReturn_t r = nv->get_handle(i, &nv->devs[i]);
    if (r != NVML_SUCCESS) {
        return nvml_fail(nv, r, "nvmlDeviceGetHandleByIndex_v2", (int)i, err);
    }
    gpu->index = (int)i;
    if ((r = nv->get_uuid(nv->devs[i], buf, sizeof(buf))) != NVML_SUCCESS) {
        return nvml_fail(nv, r, "nvmlDeviceGetUUID", (int)i, err);
    }
    snprintf(gpu->uuid, sizeof(gpu->uuid), "%.63s", buf);
    if ((r = nv->get_name(nv->devs[i], buf, sizeof(buf))) != NVML_SUCCESS) {
        return nvml_fail(nv, r, "nvmlDeviceGetName", (int)i, err);
    }
    snprintf(gpu->model, sizeof(gpu->model), "%.63s", buf);
    nvmlMemory_t mem;
    if ((r = nv->get_memory(nv->devs[i], &mem)) != NVML_SUCCESS) {
        return nvml_fail(nv, r, "nvmlDeviceGetMemoryInfo", (int)i, err);
    }
    gpu->memory_bytes = mem.total > INT64_MAX ? INT64_MAX : (int64_t)mem.total;
    if ((r = nv->get_pci(nv->devs[i], pci)) != NVML_SUCCESS) {
        return nvml_fail(nv, r, "nvmlDeviceGetPciInfo", (int)i, err);
    }
    gpu->numa_node = numa_of(pci);
    unsigned int minor;
    gpu->minor =
        nv->get_minor && nv->get_minor(nv->devs[i], &minor) == NVML_SUCCESS ? (int)minor : (int)i;
    gpu->healthy = true;
    return 0;
}

/* GPU i could not be described: list it lost, with what is known, a UUID
 * naming its index when NVML gave none, and a bus id of its own so that it
 * groups alone. Its handle is dropped: it is never sampled. */
static void describe_lost(struct nvml *nv, unsigned int i, struct gt_gpu *gpu, nvmlPciInfo_t *pci,
                          const char *why)
{
    gt_log_warn("GPU cannot be described; listed Unhealthy", "gpu=%u err=\"%s\"", i, why);
    nv->devs[i] = NULL;
    gpu->index = (int)i;
    if (!gpu->uuid[0]) {
        snprintf(gpu->uuid, sizeof(gpu->uuid), "GPU-unavailable-%u", i);
    }
    if (!gpu->model[0]) {
        snprintf(gpu->model, sizeof(gpu->model), "unknown");
    }
    memset(pci, 0, sizeof(*pci));
    snprintf(pci->busId, sizeof(pci->busId), "unavailable-%u", i);
    gpu->numa_node = -1;
    gpu->minor = -1;
    gpu->lost = true;
    gpu->healthy = false;
}

/* Index of bus id among the GPUs' and the endpoints seen so far; adds it. */
static int endpoint_of(char (*ids)[32], size_t *n_ids, const char *bus_id)
{
    for (size_t k = 0; k < *n_ids; k++) {
        if (strcasecmp(ids[k], bus_id) == 0) {
            return (int)k;
        }
    }
    snprintf(ids[*n_ids], sizeof(ids[0]), "%s", bus_id);
    return (int)(*n_ids)++;
}

static void group(struct nvml *nv, struct gt_gpu *gpus, size_t n, const nvmlPciInfo_t *pcis)
{
    /* nodes: the GPUs first (by bus id), then every other NvLink endpoint */
    size_t cap = n + n * NVML_NVLINK_MAX_LINKS;
    char(*ids)[32] = gt_xcalloc(cap, sizeof(*ids));
    int *parent = gt_xcalloc(cap, sizeof(*parent));
    size_t n_ids = 0;
    for (size_t i = 0; i < cap; i++) {
        parent[i] = (int)i;
    }
    for (size_t i = 0; i < n; i++) {
        endpoint_of(ids, &n_ids, pcis[i].busId);
    }
    for (size_t i = 0; i < n; i++) {
        if (!nv->devs[i]) {
            continue; /* lost at discovery: alone */
        }
        for (size_t j = i + 1; j < n; j++) {
            int level;
            if (nv->devs[j] && nv->get_ancestor(nv->devs[i], nv->devs[j], &level) == NVML_SUCCESS &&
                level <= NVML_TOPOLOGY_MULTIPLE) {
                gt_gpu_uf_union(parent, (int)i, (int)j);
            }
        }
        for (unsigned int link = 0;
             nv->get_nvlink_state && nv->get_nvlink_remote && link < NVML_NVLINK_MAX_LINKS;
             link++) {
            int active = 0;
            nvmlPciInfo_t remote;
            if (nv->get_nvlink_state(nv->devs[i], link, &active) != NVML_SUCCESS ||
                active != NVML_FEATURE_ENABLED ||
                nv->get_nvlink_remote(nv->devs[i], link, &remote) != NVML_SUCCESS) {
                continue;
            }
            gt_gpu_uf_union(parent, (int)i, endpoint_of(ids, &n_ids, remote.busId));
        }
    }
    gt_gpu_groups_assign(gpus, n, parent);
    free(parent);
    free(ids);
}

/* Register every GPU for critical Xid events; GPUs that cannot are left
 * out (health then stays as discovered). */
static void register_events(struct nvml *nv, size_t n)
{
    if (!nv->event_set_create || !nv->register_events || !nv->event_set_wait ||
        !nv->event_set_free || nv->event_set_create(&nv->events) != NVML_SUCCESS) {
        nv->events = NULL;
        return;
    }
    size_t registered = 0;
    for (size_t i = 0; i < n; i++) {
        if (nv->devs[i] && nv->register_events(nv->devs[i], nvmlEventTypeXidCriticalError,
                                               nv->events) == NVML_SUCCESS) {
            registered++;
        }
    }
    if (registered == 0) {
        nv->event_set_free(nv->events);
        nv->events = NULL;
    }
}

static int nvml_discover(struct gt_gpu_set *set, const char *lib_path, const char *node_name,
                         struct gt_err *err)
{
    (void)node_name;
    struct nvml *nv = gt_xcalloc(1, sizeof(*nv));
    set->impl = nv;
    int rc = load(nv, lib_path, err);
    if (rc < 0) {
        return rc;
    }
    nvmlReturn_t r = nv->init();
    if (r != NVML_SUCCESS) {
        return nvml_fail(nv, r, "nvmlInit_v2", -1, err);
    }
    nv->inited = true;
    unsigned int count;
    if ((r = nv->get_count(&count)) != NVML_SUCCESS) {
        return nvml_fail(nv, r, "nvmlDeviceGetCount_v2", -1, err);
    }
    if (count > 1024) {
        return gt_err_set(err, GT_EINTERNAL, "nvmlDeviceGetCount_v2 reports %u GPUs", count);
    }
    nv->devs = gt_xcalloc(count, sizeof(*nv->devs));
    set->gpus = gt_xcalloc(count, sizeof(*set->gpus));
    nvmlPciInfo_t *pcis = gt_xcalloc(count, sizeof(*pcis));
    for (unsigned int i = 0; i < count; i++) {
        struct gt_err derr = {0};
        if (describe(nv, i, &set->gpus[i], &pcis[i], &derr) < 0) {
            describe_lost(nv, i, &set->gpus[i], &pcis[i], derr.msg);
        }
    }
    set->n_gpus = count;
    group(nv, set->gpus, count, pcis);
    register_events(nv, count);
    free(pcis);
    return 0;
}

static int nvml_poll_health(struct gt_gpu_set *set, int timeout_ms, struct gt_err *err)
{
    struct nvml *nv = set->impl;
    if (!nv || !nv->events) {
        return 0;
    }
    int marked = 0;
    unsigned int wait_ms = timeout_ms > 0 ? (unsigned int)timeout_ms : 0;
    for (;;) {
        nvmlEventData_t ev;
        memset(&ev, 0, sizeof(ev));
        nvmlReturn_t r = nv->event_set_wait(nv->events, &ev, wait_ms);
        if (r == NVML_ERROR_TIMEOUT) {
            return marked;
        }
        if (r != NVML_SUCCESS) {
            return marked > 0 ? marked : nvml_fail(nv, r, "nvmlEventSetWait_v2", -1, err);
        }
        wait_ms = 0; /* drain what is queued without waiting again */
        if (ev.eventType != nvmlEventTypeXidCriticalError) {
            continue;
        }
        for (size_t i = 0; i < set->n_gpus; i++) {
            struct gt_gpu *g = &set->gpus[i];
            if (!nv->devs[i] || nv->devs[i] != ev.device) {
                continue;
            }
            g->last_xid = ev.eventData;
            if (!gt_gpu_xid_critical(ev.eventData)) {
                continue;
            }
            g->n_xid++;
            if (!g->xid_failed) {
                g->xid_failed = true;
                gt_log_warn("GPU unhealthy", "gpu=%zu uuid=%s xid=%llu", i, g->uuid, ev.eventData);
                marked++;
            }
        }
    }
}

/* A reading NVML does not support on this device is -1. */
static int64_t reading(nvmlReturn_t r, unsigned int v)
{
    return r == NVML_SUCCESS ? (int64_t)v : -1;
}

static void sample_processes(struct nvml *nv, nvmlDevice_t dev, struct gt_gpu_sample *s)
{
    nvmlProcessInfo_t small[GT_GPU_PROCS_MAX], *procs = small;
    unsigned int n = GT_GPU_PROCS_MAX;
    nvmlReturn_t r = nv->get_processes(dev, &n, procs);
    if (r == NVML_ERROR_INSUFFICIENT_SIZE && n > GT_GPU_PROCS_MAX && n < 65536) {
        procs = gt_xcalloc(n + 16, sizeof(*procs));
        n += 16;
        r = nv->get_processes(dev, &n, procs);
    }
    for (unsigned int k = 0; r == NVML_SUCCESS && k < n; k++) {
        if (s->n_procs == GT_GPU_PROCS_MAX) {
            s->n_procs_dropped++;
            continue;
        }
        unsigned long long used = procs[k].usedGpuMemory;
        s->procs[s->n_procs++] = (struct gt_gpu_proc){
            (pid_t)procs[k].pid,
            used == NVML_VALUE_NOT_AVAILABLE || used > INT64_MAX ? 0 : (int64_t)used};
    }
    if (procs != small) {
        free(procs);
    }
}

static int nvml_sample(struct gt_gpu_set *set, size_t i, struct gt_gpu_sample *s)
{
    struct nvml *nv = set->impl;
    nvmlDevice_t dev = nv ? nv->devs[i] : NULL;
    nvmlMemory_t mem;
    if (!dev || nv->get_memory(dev, &mem) != NVML_SUCCESS) {
        return -ENODEV;
    }
    s->fb_used_mib = (int64_t)(mem.used >> 20);
    s->fb_free_mib = (int64_t)(mem.free >> 20);
    nvmlUtilization_t u = {0, 0};
    nvmlReturn_t r = nv->get_utilization ? nv->get_utilization(dev, &u) : NVML_ERROR_NOT_SUPPORTED;
    s->util_pct = reading(r, u.gpu);
    s->mem_copy_util_pct = reading(r, u.memory);
    unsigned int v = 0;
    r = nv->get_power ? nv->get_power(dev, &v) : NVML_ERROR_NOT_SUPPORTED;
    s->power_w = r == NVML_SUCCESS ? v / 1000.0 : -1;
    r = nv->get_temperature ? nv->get_temperature(dev, NVML_TEMPERATURE_GPU, &v)
                            : NVML_ERROR_NOT_SUPPORTED;
    s->temp_c = reading(r, v);
    r = nv->get_clock ? nv->get_clock(dev, NVML_CLOCK_SM, &v) : NVML_ERROR_NOT_SUPPORTED;
    s->sm_clock_mhz = reading(r, v);
    if (nv->get_processes) {
        sample_processes(nv, dev, s);
    }
    return 0;
}

static void nvml_fini(struct gt_gpu_set *set)
{
    struct nvml *nv = set->impl;
    if (!nv) {
        return;
    }
    if (nv->events) {
        nv->event_set_free(nv->events);
    }
    if (nv->inited) {
        nv->shutdown();
    }
    if (nv->dl) {
        dlclose(nv->dl);
    }
    free(nv->devs);
    free(nv);
    set->impl = NULL;
}

const struct gt_gpu_ops gt_gpu_nvml_ops = {
    .name = "nvml",
    .discover = nvml_discover,
    .poll_health = nvml_poll_health,
    .sample = nvml_sample,
    .fini = nvml_fini,
};
