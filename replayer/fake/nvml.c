/* SPDX-License-Identifier: MIT */
/*
 * nvml.c - the fake NVML (libnvidia-ml.so.1): the calls NCCL makes
 * (src/misc/nvmlwrap.cc and the topology code), answered from the same
 * virtual host as the fake CUDA driver: devices in the same order, the
 * same bus ids and UUIDs, NVLinks from the <nvlink> elements.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "fake_common.h"

typedef int nvmlReturn_t;
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_UNKNOWN = 999,
};

static const struct {
	int code;
	const char *name, *msg;
} nvml_errs[] = {
	{ 0, "NVML_SUCCESS", "Success" },
	{ 1, "NVML_ERROR_UNINITIALIZED", "Uninitialized" },
	{ 2, "NVML_ERROR_INVALID_ARGUMENT", "Invalid Argument" },
	{ 3, "NVML_ERROR_NOT_SUPPORTED", "Not Supported" },
	{ 4, "NVML_ERROR_NO_PERMISSION", "Insufficient Permissions" },
	{ 5, "NVML_ERROR_ALREADY_INITIALIZED", "Already Initialized" },
	{ 6, "NVML_ERROR_NOT_FOUND", "Not Found" },
	{ 7, "NVML_ERROR_INSUFFICIENT_SIZE", "Insufficient Size" },
	{ 8, "NVML_ERROR_INSUFFICIENT_POWER", "Insufficient External Power" },
	{ 9, "NVML_ERROR_DRIVER_NOT_LOADED", "Driver Not Loaded" },
	{ 10, "NVML_ERROR_TIMEOUT", "Timeout" },
	{ 11, "NVML_ERROR_IRQ_ISSUE", "Interrupt request issue" },
	{ 12, "NVML_ERROR_LIBRARY_NOT_FOUND", "NVML Shared Library Not Found" },
	{ 13, "NVML_ERROR_FUNCTION_NOT_FOUND", "Function Not Found" },
	{ 14, "NVML_ERROR_CORRUPTED_INFOROM", "Corrupted infoROM" },
	{ 15, "NVML_ERROR_GPU_IS_LOST", "GPU is lost" },
	{ 16, "NVML_ERROR_RESET_REQUIRED", "GPU requires restart" },
	{ 17, "NVML_ERROR_OPERATING_SYSTEM", "The operating system has blocked the request." },
	{ 18, "NVML_ERROR_LIB_RM_VERSION_MISMATCH", "RM has detected an NVML/RM version mismatch." },
	{ 19, "NVML_ERROR_IN_USE", "In use by another client" },
	{ 20, "NVML_ERROR_MEMORY", "Insufficient Memory" },
	{ 21, "NVML_ERROR_NO_DATA", "No data" },
	{ 22, "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED", "Not supported with ECC enabled" },
	{ 23, "NVML_ERROR_INSUFFICIENT_RESOURCES", "Insufficient resources" },
	{ 24, "NVML_ERROR_FREQ_NOT_SUPPORTED", "Frequency not supported" },
	{ 25, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH", "Argument version mismatch" },
	{ 26, "NVML_ERROR_DEPRECATED", "Deprecated" },
	{ 27, "NVML_ERROR_NOT_READY", "Not ready" },
	{ 28, "NVML_ERROR_GPU_NOT_FOUND", "GPU not found" },
	{ 29, "NVML_ERROR_INVALID_STATE", "Invalid state" },
	{ 999, "NVML_ERROR_UNKNOWN", "Unknown Error" },
};

const char fake_lib_what[] = "NVML (NVML_ERROR_...)";

int fake_lib_owns(const char *api)
{
	return strncmp(api, "nvml", 4) == 0;
}

int fake_lib_error_code(const char *name)
{
	for (size_t i = 0; i < sizeof(nvml_errs) / sizeof(nvml_errs[0]); i++)
		if (strcmp(nvml_errs[i].name, name) == 0)
			return nvml_errs[i].code;
	return -1;
}

FAKE_EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
	for (size_t i = 0; i < sizeof(nvml_errs) / sizeof(nvml_errs[0]); i++)
		if (nvml_errs[i].code == r)
			return nvml_errs[i].msg;
	return "Unknown Error";
}

/* ---- devices ------------------------------------------------------------------- */
struct nvml_dev {
	uint32_t magic;
	int index;
};
#define NVML_MAGIC 0x4e52524eu

typedef struct nvml_dev *nvmlDevice_t;

static struct nvml_dev devs[64];
static int init_count;

static const nrr_topo_gpu *gpu_of(nvmlDevice_t d)
{
	/* handles point at elements of devs[]: any other value (garbage, or a
	 * handle from another process's trace) is rejected before it is read */
	uintptr_t p = (uintptr_t)d, base = (uintptr_t)devs;
	if (p < base || p >= base + sizeof(devs) || (p - base) % sizeof(devs[0]) || d->magic != NVML_MAGIC)
		return NULL;
	return fake_host()->dev[d->index];
}

#define NEED_INIT() do { if (init_count <= 0) return NVML_ERROR_UNINITIALIZED; } while (0)
#define NEED_DEV(d) do { NEED_INIT(); if (!gpu_of(d)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)

static nvmlReturn_t do_init(void)
{
	const struct fake_host *h = fake_host();
	if (h->ndev == 0) {
		if (h->error[0])
			fake_log("nvmlInit: %s", h->error);
		return NVML_ERROR_DRIVER_NOT_LOADED;
	}
	for (int i = 0; i < h->ndev; i++) {
		devs[i].magic = NVML_MAGIC;
		devs[i].index = i;
	}
	init_count++;
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlInit(void)
{
	FAKE_COUNT("nvmlInit", nvmlReturn_t);
	return do_init();
}

FAKE_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	FAKE_COUNT("nvmlInit", nvmlReturn_t);
	return do_init();
}

FAKE_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned flags)
{
	FAKE_COUNT("nvmlInitWithFlags", nvmlReturn_t);
	return do_init();
}

FAKE_EXPORT nvmlReturn_t nvmlShutdown(void)
{
	FAKE_COUNT("nvmlShutdown", nvmlReturn_t);
	NEED_INIT();
	init_count--;
	return NVML_SUCCESS;
}

static nvmlReturn_t get_count(unsigned *n)
{
	NEED_INIT();
	if (!n)
		return NVML_ERROR_INVALID_ARGUMENT;
	*n = (unsigned)fake_host()->ndev;
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned *n)
{
	FAKE_COUNT("nvmlDeviceGetCount", nvmlReturn_t);
	return get_count(n);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
	FAKE_COUNT("nvmlDeviceGetCount", nvmlReturn_t);
	return get_count(n);
}

static nvmlReturn_t by_index(unsigned i, nvmlDevice_t *d)
{
	NEED_INIT();
	if (!d || i >= (unsigned)fake_host()->ndev)
		return NVML_ERROR_INVALID_ARGUMENT;
	*d = &devs[i];
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned i, nvmlDevice_t *d)
{
	FAKE_COUNT("nvmlDeviceGetHandleByIndex", nvmlReturn_t);
	return by_index(i, d);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
	FAKE_COUNT("nvmlDeviceGetHandleByIndex", nvmlReturn_t);
	return by_index(i, d);
}

static nvmlReturn_t by_busid(const char *busid, nvmlDevice_t *d)
{
	NEED_INIT();
	if (!busid || !d)
		return NVML_ERROR_INVALID_ARGUMENT;
	int i = fake_dev_by_busid(busid);
	if (i < 0)
		return NVML_ERROR_NOT_FOUND;
	*d = &devs[i];
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *busid, nvmlDevice_t *d)
{
	FAKE_COUNT("nvmlDeviceGetHandleByPciBusId", nvmlReturn_t);
	return by_busid(busid, d);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *busid, nvmlDevice_t *d)
{
	FAKE_COUNT("nvmlDeviceGetHandleByPciBusId", nvmlReturn_t);
	return by_busid(busid, d);
}

static void uuid_string(const nrr_topo_gpu *g, char *out, size_t len)
{
	const uint8_t *b = g->uuid;
	snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d)
{
	FAKE_COUNT("nvmlDeviceGetHandleByUUID", nvmlReturn_t);
	NEED_INIT();
	if (!uuid || !d)
		return NVML_ERROR_INVALID_ARGUMENT;
	const struct fake_host *h = fake_host();
	for (int i = 0; i < h->ndev; i++) {
		char u[64];
		uuid_string(h->dev[i], u, sizeof(u));
		if (strcasecmp(u, uuid) == 0) {
			*d = &devs[i];
			return NVML_SUCCESS;
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned *index)
{
	FAKE_COUNT("nvmlDeviceGetIndex", nvmlReturn_t);
	NEED_DEV(d);
	if (!index)
		return NVML_ERROR_INVALID_ARGUMENT;
	*index = (unsigned)d->index;
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned *minor)
{
	FAKE_COUNT("nvmlDeviceGetMinorNumber", nvmlReturn_t);
	NEED_DEV(d);
	if (!minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	*minor = (unsigned)gpu_of(d)->dev;
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned len)
{
	FAKE_COUNT("nvmlDeviceGetUUID", nvmlReturn_t);
	NEED_DEV(d);
	if (!uuid)
		return NVML_ERROR_INVALID_ARGUMENT;
	char u[64];
	uuid_string(gpu_of(d), u, sizeof(u));
	if (len <= strlen(u))
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(uuid, u, strlen(u) + 1);
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned len)
{
	FAKE_COUNT("nvmlDeviceGetName", nvmlReturn_t);
	NEED_DEV(d);
	if (!name || len == 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(name, len, "ncclrr fake GPU sm_%d", gpu_of(d)->sm);
	return NVML_SUCCESS;
}

/* legacy nvmlPciInfo_t (busId[16] first), what nvmlDeviceGetPciInfo and the
 * un-suffixed NvLink remote query fill */
typedef struct {
	char busId[16];
	unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
	unsigned reserved[4];
} nvmlPciInfo_legacy;

/* current nvmlPciInfo_t (_v3): busIdLegacy[16], ..., busId[32] */
typedef struct {
	char busIdLegacy[16];
	unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_v3;

static void fill_pci_legacy(nvmlPciInfo_legacy *p, const char *busid)
{
	unsigned dom = 0, bus = 0, dev = 0, fn = 0;
	memset(p, 0, sizeof(*p));
	sscanf(busid, "%x:%x:%x.%x", &dom, &bus, &dev, &fn);
	snprintf(p->busId, sizeof(p->busId), "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	p->domain = dom;
	p->bus = bus;
	p->device = dev;
}

static unsigned pci_devid(const nrr_topo_gpu *g)
{
	return ((unsigned)strtoul(g->pci_device_id, NULL, 16) << 16) | 0x10de;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_legacy *p)
{
	FAKE_COUNT("nvmlDeviceGetPciInfo", nvmlReturn_t);
	NEED_DEV(d);
	if (!p)
		return NVML_ERROR_INVALID_ARGUMENT;
	fill_pci_legacy(p, gpu_of(d)->busid);
	p->pciDeviceId = pci_devid(gpu_of(d));
	p->pciSubSystemId = (0x16c1u << 16) | 0x10de;
	return NVML_SUCCESS;
}

static nvmlReturn_t pci_v3(nvmlDevice_t d, nvmlPciInfo_v3 *p)
{
	NEED_DEV(d);
	if (!p)
		return NVML_ERROR_INVALID_ARGUMENT;
	const nrr_topo_gpu *g = gpu_of(d);
	memset(p, 0, sizeof(*p));
	snprintf(p->busIdLegacy, sizeof(p->busIdLegacy), "%04x:%02x:%02x.%x", g->domain, g->bus, g->device, g->function);
	snprintf(p->busId, sizeof(p->busId), "%08X:%02X:%02X.%X", g->domain, g->bus, g->device, g->function);
	p->domain = (unsigned)g->domain;
	p->bus = (unsigned)g->bus;
	p->device = (unsigned)g->device;
	p->pciDeviceId = pci_devid(g);
	p->pciSubSystemId = (0x16c1u << 16) | 0x10de;
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, nvmlPciInfo_v3 *p)
{
	FAKE_COUNT("nvmlDeviceGetPciInfo", nvmlReturn_t);
	return pci_v3(d, p);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_v3 *p)
{
	FAKE_COUNT("nvmlDeviceGetPciInfo", nvmlReturn_t);
	return pci_v3(d, p);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor)
{
	FAKE_COUNT("nvmlDeviceGetCudaComputeCapability", nvmlReturn_t);
	NEED_DEV(d);
	if (!major || !minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	*major = gpu_of(d)->sm / 10;
	*minor = gpu_of(d)->sm % 10;
	return NVML_SUCCESS;
}

/* link l of a GPU: the <nvlink> element it belongs to, or NULL */
static const nrr_topo_nvlink *link_of(const nrr_topo_gpu *g, unsigned l)
{
	unsigned base = 0;
	for (int i = 0; i < g->nnvlinks; i++) {
		if (l < base + (unsigned)g->nvlinks[i].count)
			return &g->nvlinks[i];
		base += (unsigned)g->nvlinks[i].count;
	}
	return NULL;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int *active)
{
	FAKE_COUNT("nvmlDeviceGetNvLinkState", nvmlReturn_t);
	NEED_DEV(d);
	if (!active)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (link >= 18)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (gpu_of(d)->nvlink_total == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	*active = link_of(gpu_of(d), link) != NULL;
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t d, unsigned link, unsigned *version)
{
	FAKE_COUNT("nvmlDeviceGetNvLinkVersion", nvmlReturn_t);
	NEED_DEV(d);
	if (!version)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!link_of(gpu_of(d), link))
		return NVML_ERROR_NOT_SUPPORTED;
	*version = gpu_of(d)->sm >= 90 ? 4 : gpu_of(d)->sm >= 80 ? 3 : 2;
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkCapability(nvmlDevice_t d, unsigned link, int cap, unsigned *result)
{
	FAKE_COUNT("nvmlDeviceGetNvLinkCapability", nvmlReturn_t);
	NEED_DEV(d);
	if (!result)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (gpu_of(d)->nvlink_total == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	const nrr_topo_nvlink *l = link_of(gpu_of(d), link);
	*result = l && cap != 4 /* SLI bridge */;
	return NVML_SUCCESS;
}

static nvmlReturn_t remote_pci(nvmlDevice_t d, unsigned link, nvmlPciInfo_legacy *p)
{
	NEED_DEV(d);
	if (!p)
		return NVML_ERROR_INVALID_ARGUMENT;
	const nrr_topo_nvlink *l = link_of(gpu_of(d), link);
	if (!l)
		return NVML_ERROR_NOT_SUPPORTED;
	fill_pci_legacy(p, l->target);
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t d, unsigned link, nvmlPciInfo_legacy *p)
{
	FAKE_COUNT("nvmlDeviceGetNvLinkRemotePciInfo", nvmlReturn_t);
	return remote_pci(d, link, p);
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned link, nvmlPciInfo_v3 *p)
{
	FAKE_COUNT("nvmlDeviceGetNvLinkRemotePciInfo", nvmlReturn_t);
	NEED_DEV(d);
	if (!p)
		return NVML_ERROR_INVALID_ARGUMENT;
	const nrr_topo_nvlink *l = link_of(gpu_of(d), link);
	if (!l)
		return NVML_ERROR_NOT_SUPPORTED;
	unsigned dom = 0, bus = 0, dev = 0, fn = 0;
	sscanf(l->target, "%x:%x:%x.%x", &dom, &bus, &dev, &fn);
	memset(p, 0, sizeof(*p));
	snprintf(p->busIdLegacy, sizeof(p->busIdLegacy), "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	snprintf(p->busId, sizeof(p->busId), "%08X:%02X:%02X.%X", dom, bus, dev, fn);
	p->domain = dom;
	p->bus = bus;
	p->device = dev;
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int index, int *status)
{
	FAKE_COUNT("nvmlDeviceGetP2PStatus", nvmlReturn_t);
	NEED_DEV(a);
	if (!gpu_of(b) || !status)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (index == 2) /* NVLINK */
		*status = gpu_of(a)->nvlink_total && gpu_of(b)->nvlink_total ? 0 : 5;
	else if (index == 0 || index == 1 || index == 3 || index == 4)
		*status = 0; /* OK */
	else
		*status = 6; /* unknown */
	return NVML_SUCCESS;
}

typedef union {
	double dVal;
	unsigned uiVal;
	unsigned long ulVal;
	unsigned long long ullVal;
	long long sllVal;
} nvmlValue_t;

typedef struct {
	unsigned fieldId;
	unsigned scopeId;
	long long timestamp;
	long long latencyUsec;
	int valueType;
	nvmlReturn_t nvmlReturn;
	nvmlValue_t value;
} nvmlFieldValue_t;

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t *v)
{
	FAKE_COUNT("nvmlDeviceGetFieldValues", nvmlReturn_t);
	NEED_DEV(d);
	if (n < 0 || (n && !v))
		return NVML_ERROR_INVALID_ARGUMENT;
	const nrr_topo_gpu *g = gpu_of(d);
	struct timeval tv;
	gettimeofday(&tv, NULL);
	for (int i = 0; i < n; i++) {
		nvmlFieldValue_t *f = &v[i];
		f->timestamp = (long long)tv.tv_sec * 1000000 + tv.tv_usec;
		f->latencyUsec = 0;
		f->valueType = 1; /* unsigned int */
		f->nvmlReturn = NVML_SUCCESS;
		f->value.ullVal = 0;
		switch (f->fieldId) {
		case 90: /* NVLink common speed, MB/s */
			if (!g->nvlink_total)
				f->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
			else
				f->value.uiVal = 25781;
			break;
		case 91: /* NVLink count */
			f->value.uiVal = (unsigned)g->nvlink_total;
			break;
		case 147: /* links to NVSwitch */ {
			unsigned c = 0;
			for (int k = 0; k < g->nnvlinks; k++)
				if (g->nvlinks[k].tclass == 0x068000)
					c += (unsigned)g->nvlinks[k].count;
			f->value.uiVal = c;
			break;
		}
		case 164: /* link speed */
			if (!link_of(g, f->scopeId))
				f->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
			else
				f->value.uiVal = 25781;
			break;
		case 165: /* link state */
			if (!g->nvlink_total)
				f->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
			else
				f->value.uiVal = link_of(g, f->scopeId) != NULL;
			break;
		case 166: /* link version */
			if (!link_of(g, f->scopeId))
				f->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
			else
				f->value.uiVal = g->sm >= 90 ? 4 : 3;
			break;
		default: /* C2C links and the rest: no such hardware */
			f->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
		}
	}
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t d, void *info)
{
	FAKE_COUNT("nvmlDeviceGetGpuFabricInfo", nvmlReturn_t);
	NEED_DEV(d);
	return NVML_ERROR_NOT_SUPPORTED; /* no multi-node NVLink */
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t d, void *info)
{
	FAKE_COUNT("nvmlDeviceGetGpuFabricInfoV", nvmlReturn_t);
	NEED_DEV(d);
	return NVML_ERROR_NOT_SUPPORTED;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetPlatformInfo(nvmlDevice_t d, void *info)
{
	FAKE_COUNT("nvmlDeviceGetPlatformInfo", nvmlReturn_t);
	NEED_DEV(d);
	return NVML_ERROR_NOT_SUPPORTED;
}

typedef struct {
	unsigned environment, ccFeature, devToolsMode;
} nvmlConfComputeSystemState_t;

FAKE_EXPORT nvmlReturn_t nvmlSystemGetConfComputeState(nvmlConfComputeSystemState_t *s)
{
	FAKE_COUNT("nvmlSystemGetConfComputeState", nvmlReturn_t);
	NEED_INIT();
	if (!s)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(s, 0, sizeof(*s));
	return NVML_SUCCESS;
}

typedef struct {
	unsigned version, environment, ccFeature, devToolsMode, multiGpuMode;
} nvmlSystemConfComputeSettings_t;

FAKE_EXPORT nvmlReturn_t nvmlSystemGetConfComputeSettings(nvmlSystemConfComputeSettings_t *s)
{
	FAKE_COUNT("nvmlSystemGetConfComputeSettings", nvmlReturn_t);
	NEED_INIT();
	if (!s)
		return NVML_ERROR_INVALID_ARGUMENT;
	unsigned v = s->version;
	memset(s, 0, sizeof(*s));
	s->version = v;
	return NVML_SUCCESS;
}

/* "00000000,0000ffff,ffffffff" (32-bit groups, most significant first) into
 * an array of unsigned long */
static void parse_mask(const char *s, unsigned long *set, unsigned n)
{
	memset(set, 0, n * sizeof(*set));
	if (!s || !*s) {
		for (unsigned i = 0; i < n; i++)
			set[i] = ~0ul;
		return;
	}
	int groups = 1;
	for (const char *c = s; *c; c++)
		groups += *c == ',';
	const char *c = s;
	for (int gi = groups - 1; gi >= 0; gi--) {
		unsigned long v = strtoul(c, NULL, 16);
		unsigned bit = (unsigned)gi * 32;
		unsigned word = bit / (8 * sizeof(unsigned long));
		if (word < n)
			set[word] |= v << (bit % (8 * sizeof(unsigned long)));
		c = strchr(c, ',');
		if (!c)
			break;
		c++;
	}
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t d, unsigned n, unsigned long *set)
{
	FAKE_COUNT("nvmlDeviceGetCpuAffinity", nvmlReturn_t);
	NEED_DEV(d);
	if (!set || n == 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	parse_mask(gpu_of(d)->cpu_affinity, set, n);
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetCpuAffinityWithinScope(nvmlDevice_t d, unsigned n, unsigned long *set, int scope)
{
	FAKE_COUNT("nvmlDeviceGetCpuAffinityWithinScope", nvmlReturn_t);
	NEED_DEV(d);
	if (!set || n == 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	parse_mask(gpu_of(d)->cpu_affinity, set, n);
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryAffinity(nvmlDevice_t d, unsigned n, unsigned long *set, int scope)
{
	FAKE_COUNT("nvmlDeviceGetMemoryAffinity", nvmlReturn_t);
	NEED_DEV(d);
	if (!set || n == 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(set, 0, n * sizeof(*set));
	int numa = gpu_of(d)->numa;
	if (numa >= 0 && (unsigned)numa < n * 8 * sizeof(unsigned long))
		set[numa / (8 * sizeof(unsigned long))] = 1ul << (numa % (8 * sizeof(unsigned long)));
	return NVML_SUCCESS;
}

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

FAKE_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	FAKE_COUNT("nvmlDeviceGetMemoryInfo", nvmlReturn_t);
	NEED_DEV(d);
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	m->total = 80ull << 30;
	m->used = 0;
	m->free = m->total;
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned len)
{
	FAKE_COUNT("nvmlSystemGetDriverVersion", nvmlReturn_t);
	NEED_INIT();
	if (!v || len < 8)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(v, len, "580.00.00");
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned len)
{
	FAKE_COUNT("nvmlSystemGetNVMLVersion", nvmlReturn_t);
	if (!v || len < 8)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(v, len, "13.580.00");
	return NVML_SUCCESS;
}

static nvmlReturn_t cuda_version(int *v)
{
	if (!v)
		return NVML_ERROR_INVALID_ARGUMENT;
	*v = 13000;
	return NVML_SUCCESS;
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
	FAKE_COUNT("nvmlSystemGetCudaDriverVersion", nvmlReturn_t);
	return cuda_version(v);
}

FAKE_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
	FAKE_COUNT("nvmlSystemGetCudaDriverVersion", nvmlReturn_t);
	return cuda_version(v);
}
