/*
 * A fake libnvidia-ml for test_agent_gpu: built by the test at run time with
 * `cc -shared -fPIC` and loaded through the agent's NVML path. Its behaviour
 * is chosen by FAKE_NVML_MODE:
 *   ok          2 GPUs joined by NvLink, on different PCIe roots (one group)
 *   pcie        3 GPUs, 0 and 1 behind one PCIe switch, 2 alone, no NvLink
 *   init_fail   nvmlInit_v2 fails
 *   count_fail  nvmlDeviceGetCount_v2 fails
 *   uuid_fail   nvmlDeviceGetUUID fails for GPU 1
 *   xid         like ok, and one critical Xid (79) on GPU 1 plus an
 *               application Xid (13) on GPU 0 are queued
 * Readings (every mode): GPU i reports utilisation 40+i %, memory copy
 * utilisation 10+i %, 1 GiB used, 250.5 W, 60+i C, SM clock 1410 MHz; GPU 0
 * runs two compute processes (pid 4242 with 1 GiB, and the caller's own
 * pid with 512 MiB). FAKE_NVML_LOST=<index> makes that GPU stop answering
 * (NVML_ERROR_GPU_IS_LOST from its memory information) until unset.
 * Types follow nvml.h as the agent declares them; only what it calls exists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int nvmlReturn_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
    void *device;
    unsigned long long eventType, eventData;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

static int devs[3];
static int event_set;
static int events_left;
static int inited;

static const char *mode(void)
{
    const char *m = getenv("FAKE_NVML_MODE");
    return m ? m : "ok";
}

static int is(const char *m)
{
    return strcmp(mode(), m) == 0;
}

static int index_of(void *dev)
{
    return (int)((int *)dev - devs);
}

const char *nvmlErrorString(nvmlReturn_t r)
{
    return r == 999 ? "Unknown Error" : r == 10 ? "Timeout" : "Fake Error";
}

nvmlReturn_t nvmlInit_v2(void)
{
    if (is("init_fail")) {
        return 9; /* NVML_ERROR_DRIVER_NOT_LOADED */
    }
    inited = 1;
    events_left = is("xid") ? 2 : 0;
    return 0;
}

nvmlReturn_t nvmlShutdown(void)
{
    inited = 0;
    return 0;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
    if (!inited || is("count_fail")) {
        return 999;
    }
    *n = is("pcie") ? 3 : 2;
    return 0;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev)
{
    *dev = &devs[i];
    return 0;
}

nvmlReturn_t nvmlDeviceGetUUID(void *dev, char *buf, unsigned int len)
{
    if (is("uuid_fail") && index_of(dev) == 1) {
        return 999;
    }
    snprintf(buf, len, "GPU-fa4e0000-0000-0000-0000-00000000000%d", index_of(dev));
    return 0;
}

nvmlReturn_t nvmlDeviceGetName(void *dev, char *buf, unsigned int len)
{
    (void)dev;
    snprintf(buf, len, "NVIDIA H100 80GB HBM3");
    return 0;
}

static int lost(void *dev)
{
    const char *l = getenv("FAKE_NVML_LOST");
    return l && *l && strtol(l, NULL, 10) == index_of(dev);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(void *dev, nvmlMemory_t *m)
{
    if (lost(dev)) {
        return 15; /* NVML_ERROR_GPU_IS_LOST */
    }
    m->total = (80ULL << 30) + (unsigned long long)index_of(dev);
    m->used = 1ULL << 30;
    m->free = m->total - m->used;
    return 0;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(void *dev, nvmlUtilization_t *u)
{
    u->gpu = 40 + (unsigned)index_of(dev);
    u->memory = 10 + (unsigned)index_of(dev);
    return 0;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw)
{
    (void)dev;
    *mw = 250500;
    return 0;
}

nvmlReturn_t nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *c)
{
    *c = 60 + (unsigned)index_of(dev);
    return sensor == 0 ? 0 : 2; /* NVML_ERROR_INVALID_ARGUMENT */
}

nvmlReturn_t nvmlDeviceGetClockInfo(void *dev, int type, unsigned int *mhz)
{
    (void)dev;
    *mhz = 1410;
    return type == 1 ? 0 : 3;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *n,
                                                     nvmlProcessInfo_t *p)
{
    unsigned int have = index_of(dev) == 0 ? 2 : 0;
    if (*n < have) {
        *n = have;
        return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    }
    *n = have;
    if (have) {
        memset(p, 0, 2 * sizeof(*p));
        p[0].pid = 4242;
        p[0].usedGpuMemory = 1ULL << 30;
        p[1].pid = (unsigned)getpid();
        p[1].usedGpuMemory = 512ULL << 20;
    }
    return 0;
}

static void pci_of(int i, nvmlPciInfo_t *p)
{
    memset(p, 0, sizeof(*p));
    p->domain = 0xfa;
    p->bus = 0x10 + (unsigned)i;
    snprintf(p->busId, sizeof(p->busId), "000000FA:%02X:00.0", p->bus);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(void *dev, nvmlPciInfo_t *p)
{
    pci_of(index_of(dev), p);
    return 0;
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(void *a, void *b, int *level)
{
    int i = index_of(a), j = index_of(b);
    /* pcie: 0 and 1 share a switch (MULTIPLE); anything else is SYSTEM */
    *level = is("pcie") && i + j == 1 ? 20 : 50;
    return 0;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(void *dev, unsigned int link, int *active)
{
    (void)dev;
    if (is("pcie")) {
        return 3; /* NVML_ERROR_NOT_SUPPORTED */
    }
    *active = link == 0;
    return 0;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(void *dev, unsigned int link, nvmlPciInfo_t *p)
{
    (void)link;
    pci_of(1 - index_of(dev), p);
    return 0;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(void *dev, unsigned int *minor)
{
    *minor = (unsigned)index_of(dev) + 4;
    return 0;
}

nvmlReturn_t nvmlEventSetCreate(void **set)
{
    *set = &event_set;
    return 0;
}

nvmlReturn_t nvmlDeviceRegisterEvents(void *dev, unsigned long long types, void *set)
{
    (void)dev;
    (void)set;
    return types == 8 ? 0 : 3;
}

nvmlReturn_t nvmlEventSetWait_v2(void *set, nvmlEventData_t *ev, unsigned int timeout_ms)
{
    (void)set;
    (void)timeout_ms;
    if (events_left == 0) {
        return 10; /* NVML_ERROR_TIMEOUT */
    }
    memset(ev, 0, sizeof(*ev));
    ev->eventType = 8;
    ev->device = events_left == 2 ? &devs[0] : &devs[1];
    ev->eventData = events_left == 2 ? 13 : 79;
    events_left--;
    return 0;
}

nvmlReturn_t nvmlEventSetFree(void *set)
{
    (void)set;
    return 0;
}
