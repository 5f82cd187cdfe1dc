/* SPDX-License-Identifier: MIT */
/*
 * nvml.c - the fake NVML (libnvidia-ml.so.1): the calls NCCL makes
 * (src/misc/nvmlwrap.cc and the topology code), answered from the same
 * virtual host as the fake CUDA driver: devices in the same order, the
 * same bus ids and UUIDs, NVLinks from the <nvlink> elements.
 *
 * Each entry point nvmlX is exported by the generated nrr_fake_nvml_entry.c
 * (formats/api/nvml.api: its prototype, `fake` or an entry line), which runs
 * the preamble every call shares (FAKE_COUNT: count, log, fault switch) and
 * then fake_nvmlX() here: these bodies hold only what the call does.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "fake_nvml.h"
#include "nrr_fake_nvml_entry.h"

/* nvmlReturn_t's values, codes, names and messages: enum nvmlReturn_t of
 * formats/api/nvml.api, the table the traces decode it with
 * (ncclrr_gen.py --emit fake-nvml) */
#include "nrr_fake_nvml_errors.h"

#define NERRS (sizeof(nrr_nvml_errors) / sizeof(nrr_nvml_errors[0]))

const char fake_lib_what[] = "NVML (NVML_ERROR_...)";

int fake_lib_owns(const char *api)
{
	return strncmp(api, "nvml", 4) == 0;
}

int fake_lib_error_code(const char *name)
{
	for (size_t i = 0; i < NERRS; i++)
		if (strcmp(nrr_nvml_errors[i].name, name) == 0)
			return nrr_nvml_errors[i].code;
	return -1;
}

const char *fake_nvmlErrorString(nvmlReturn_t r)
{
	for (size_t i = 0; i < NERRS; i++)
		if (nrr_nvml_errors[i].code == r)
			return nrr_nvml_errors[i].msg;
	return "Unknown Error";
}

/* ---- devices ------------------------------------------------------------------- */
struct nvml_dev {
	uint32_t magic;
	int index;
};
#define NVML_MAGIC 0x4e52524eu

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

nvmlReturn_t fake_nvmlInit(void)
{
	return do_init();
}

nvmlReturn_t fake_nvmlInit_v2(void)
{
	return do_init();
}

nvmlReturn_t fake_nvmlInitWithFlags(unsigned flags)
{
	return do_init();
}

nvmlReturn_t fake_nvmlShutdown(void)
{
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

nvmlReturn_t fake_nvmlDeviceGetCount(unsigned *n)
{
	return get_count(n);
}

nvmlReturn_t fake_nvmlDeviceGetCount_v2(unsigned *n)
{
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

nvmlReturn_t fake_nvmlDeviceGetHandleByIndex(unsigned i, nvmlDevice_t *d)
{
	return by_index(i, d);
}

nvmlReturn_t fake_nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
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

nvmlReturn_t fake_nvmlDeviceGetHandleByPciBusId(const char *busid, nvmlDevice_t *d)
{
	return by_busid(busid, d);
}

nvmlReturn_t fake_nvmlDeviceGetHandleByPciBusId_v2(const char *busid, nvmlDevice_t *d)
{
	return by_busid(busid, d);
}

static void uuid_string(const nrr_topo_gpu *g, char *out, size_t len)
{
	const uint8_t *b = g->uuid;
	snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

nvmlReturn_t fake_nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d)
{
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

nvmlReturn_t fake_nvmlDeviceGetIndex(nvmlDevice_t d, unsigned *index)
{
	NEED_DEV(d);
	if (!index)
		return NVML_ERROR_INVALID_ARGUMENT;
	*index = (unsigned)d->index;
	return NVML_SUCCESS;
}

nvmlReturn_t fake_nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned *minor)
{
	NEED_DEV(d);
	if (!minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	*minor = (unsigned)gpu_of(d)->dev;
	return NVML_SUCCESS;
}

nvmlReturn_t fake_nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned len)
{
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

nvmlReturn_t fake_nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned len)
{
	NEED_DEV(d);
	if (!name || len == 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(name, len, "ncclrr fake GPU sm_%d", gpu_of(d)->sm);
	return NVML_SUCCESS;
}

static void fill_pci_legacy(nvmlPciInfo_v1_t *p, const char *busid)
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

nvmlReturn_t fake_nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_v1_t *p)
{
	NEED_DEV(d);
	if (!p)
		return NVML_ERROR_INVALID_ARGUMENT;
	fill_pci_legacy(p, gpu_of(d)->busid);
	p->pciDeviceId = pci_devid(gpu_of(d));
	p->pciSubSystemId = (0x16c1u << 16) | 0x10de;
	return NVML_SUCCESS;
}

static nvmlReturn_t pci_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
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

nvmlReturn_t fake_nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, nvmlPciInfo_t *p)
{
	return pci_v3(d, p);
}

nvmlReturn_t fake_nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
	return pci_v3(d, p);
}

nvmlReturn_t fake_nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor)
{
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

nvmlReturn_t fake_nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int *active)
{
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

nvmlReturn_t fake_nvmlDeviceGetNvLinkVersion(nvmlDevice_t d, unsigned link, unsigned *version)
{
	NEED_DEV(d);
	if (!version)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!link_of(gpu_of(d), link))
		return NVML_ERROR_NOT_SUPPORTED;
	*version = gpu_of(d)->sm >= 90 ? 4 : gpu_of(d)->sm >= 80 ? 3 : 2;
	return NVML_SUCCESS;
}

nvmlReturn_t fake_nvmlDeviceGetNvLinkCapability(nvmlDevice_t d, unsigned link, int cap, unsigned *result)
{
	NEED_DEV(d);
	if (!result)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (gpu_of(d)->nvlink_total == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	const nrr_topo_nvlink *l = link_of(gpu_of(d), link);
	*result = l && cap != 4 /* SLI bridge */;
	return NVML_SUCCESS;
}

static nvmlReturn_t remote_pci(nvmlDevice_t d, unsigned link, nvmlPciInfo_v1_t *p)
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

/* the un-suffixed entry fills the legacy layout */
nvmlReturn_t fake_nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t d, unsigned link, nvmlPciInfo_v1_t *p)
{
	return remote_pci(d, link, p);
}

nvmlReturn_t fake_nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned link, nvmlPciInfo_t *p)
{
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

nvmlReturn_t fake_nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int index, int *status)
{
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

nvmlReturn_t fake_nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t *v)
{
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

nvmlReturn_t fake_nvmlDeviceGetGpuFabricInfo(nvmlDevice_t d, void *info)
{
	NEED_DEV(d);
	return NVML_ERROR_NOT_SUPPORTED; /* no multi-node NVLink */
}

nvmlReturn_t fake_nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t d, void *info)
{
	NEED_DEV(d);
	return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t fake_nvmlDeviceGetPlatformInfo(nvmlDevice_t d, void *info)
{
	NEED_DEV(d);
	return NVML_ERROR_NOT_SUPPORTED;
}

typedef struct {
	unsigned environment, ccFeature, devToolsMode;
} nvmlConfComputeSystemState_t;

nvmlReturn_t fake_nvmlSystemGetConfComputeState(void *state)
{
	nvmlConfComputeSystemState_t *s = state;
	NEED_INIT();
	if (!s)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(s, 0, sizeof(*s));
	return NVML_SUCCESS;
}

typedef struct {
	unsigned version, environment, ccFeature, devToolsMode, multiGpuMode;
} nvmlSystemConfComputeSettings_t;

nvmlReturn_t fake_nvmlSystemGetConfComputeSettings(void *settings)
{
	nvmlSystemConfComputeSettings_t *s = settings;
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

nvmlReturn_t fake_nvmlDeviceGetCpuAffinity(nvmlDevice_t d, unsigned n, unsigned long *set)
{
	NEED_DEV(d);
	if (!set || n == 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	parse_mask(gpu_of(d)->cpu_affinity, set, n);
	return NVML_SUCCESS;
}

nvmlReturn_t fake_nvmlDeviceGetCpuAffinityWithinScope(nvmlDevice_t d, unsigned n, unsigned long *set, int scope)
{
	NEED_DEV(d);
	if (!set || n == 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	parse_mask(gpu_of(d)->cpu_affinity, set, n);
	return NVML_SUCCESS;
}

nvmlReturn_t fake_nvmlDeviceGetMemoryAffinity(nvmlDevice_t d, unsigned n, unsigned long *set, int scope)
{
	NEED_DEV(d);
	if (!set || n == 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(set, 0, n * sizeof(*set));
	int numa = gpu_of(d)->numa;
	if (numa >= 0 && (unsigned)numa < n * 8 * sizeof(unsigned long))
		set[numa / (8 * sizeof(unsigned long))] = 1ul << (numa % (8 * sizeof(unsigned long)));
	return NVML_SUCCESS;
}

nvmlReturn_t fake_nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	NEED_DEV(d);
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	m->total = 80ull << 30;
	m->used = 0;
	m->free = m->total;
	return NVML_SUCCESS;
}

nvmlReturn_t fake_nvmlSystemGetDriverVersion(char *v, unsigned len)
{
	NEED_INIT();
	if (!v || len < 8)
		return NVML_ERROR_INVALID_ARGUMENT;
	snprintf(v, len, "580.00.00");
	return NVML_SUCCESS;
}

nvmlReturn_t fake_nvmlSystemGetNVMLVersion(char *v, unsigned len)
{
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

nvmlReturn_t fake_nvmlSystemGetCudaDriverVersion(int *v)
{
	return cuda_version(v);
}

nvmlReturn_t fake_nvmlSystemGetCudaDriverVersion_v2(int *v)
{
	return cuda_version(v);
}
