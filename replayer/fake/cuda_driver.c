/* SPDX-License-Identifier: MIT */
/*
 * cuda_driver.c - the fake CUDA driver: initialization, devices and their
 * attributes, contexts, streams, events, modules, functions and launches.
 * Memory lives in cuda_mem.c, the entry-point table in cuda_proc.c.
 *
 * Each entry point cuX is exported by the generated nrr_fake_cuda_entry.c
 * (formats/api/cuda_driver.api: its prototype and since=), which runs the
 * preamble every call shares (FAKE_COUNT: count, log, fault switch) and
 * then fake_cuX() here: these bodies hold only what the call does.
 *
 * Streams and events complete synchronously: every operation is done when
 * its call returns. Kernels are registered and counted, never executed.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "nrr_fake_cuda_entry.h"

#define DRIVER_VERSION 13000

static int initialized;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_ullong next_id = 1;

static struct fctx *primary[64];

/* thread's context stack */
#define CTX_STACK 32
static __thread struct fctx *ctx_stack[CTX_STACK];
static __thread int ctx_depth;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

#define NEED_INIT() do { if (!initialized) return CUDA_ERROR_NOT_INITIALIZED; } while (0)

static int ndev(void)
{
	return fake_host()->ndev;
}

static const nrr_topo_gpu *gpu(CUdevice d)
{
	if (d < 0 || d >= ndev())
		return NULL;
	return fake_host()->dev[d];
}

#define NEED_DEV(d) do { NEED_INIT(); if (!gpu(d)) return CUDA_ERROR_INVALID_DEVICE; } while (0)

CUresult fake_need_dev(CUdevice d)
{
	NEED_DEV(d);
	return CUDA_SUCCESS;
}

struct fctx *fake_current_ctx(void)
{
	return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

/* Handles are checked against the registry of live objects before they are
 * dereferenced (a value never handed out must not crash the process), then
 * by their magic (a live object of another type). */
static int valid_ctx(const struct fctx *c)
{
	return c && fake_handle_live(c) && c->magic == FAKE_MAGIC_CTX && !c->destroyed;
}

static int is_event(const struct fevent *e)
{
	return e && fake_handle_live(e) && e->magic == FAKE_MAGIC_EVENT;
}

static int is_module(const struct fmodule *m)
{
	return m && fake_handle_live(m) && m->magic == FAKE_MAGIC_MODULE;
}

static int is_func(const struct ffunc *f)
{
	return f && fake_handle_live(f) && f->magic == FAKE_MAGIC_FUNC;
}

/* ---- init and version ----------------------------------------------------- */
CUresult fake_cuInit(unsigned int flags)
{
	const struct fake_host *h = fake_host();
	if (h->ndev == 0) {
		if (h->error[0])
			fake_log("cuInit: no devices: %s", h->error);
		return CUDA_ERROR_NO_DEVICE;
	}
	initialized = 1;
	return CUDA_SUCCESS;
}

CUresult fake_cuDriverGetVersion(int *v)
{
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	*v = DRIVER_VERSION;
	return CUDA_SUCCESS;
}

/* ---- devices -------------------------------------------------------------- */
CUresult fake_cuDeviceGetCount(int *count)
{
	NEED_INIT();
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = ndev();
	return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGet(CUdevice *d, int ordinal)
{
	NEED_INIT();
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal < 0 || ordinal >= ndev())
		return CUDA_ERROR_INVALID_DEVICE;
	*d = ordinal;
	return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetName(char *name, int len, CUdevice d)
{
	NEED_DEV(d);
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	const nrr_topo_gpu *g = gpu(d);
	snprintf(name, (size_t)len, "ncclrr fake GPU sm_%d (%s %s)", g->sm, fake_host()->host->name, g->busid);
	return CUDA_SUCCESS;
}

static CUresult get_uuid(CUuuid *u, CUdevice d)
{
	NEED_DEV(d);
	if (!u)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(u->bytes, gpu(d)->uuid, 16);
	return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetUuid(CUuuid *u, CUdevice d)
{
	return get_uuid(u, d);
}

CUresult fake_cuDeviceGetUuid_v2(CUuuid *u, CUdevice d)
{
	return get_uuid(u, d);
}

CUresult fake_cuDeviceGetLuid(char *luid, unsigned int *mask, CUdevice d)
{
	NEED_DEV(d);
	return CUDA_ERROR_NOT_SUPPORTED;
}

#define TOTAL_MEM (80ull << 30)

CUresult fake_cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
	NEED_DEV(d);
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	*bytes = (size_t)TOTAL_MEM;
	return CUDA_SUCCESS;
}

CUresult fake_cuDeviceComputeCapability(int *major, int *minor, CUdevice d)
{
	NEED_DEV(d);
	if (!major || !minor)
		return CUDA_ERROR_INVALID_VALUE;
	*major = gpu(d)->sm / 10;
	*minor = gpu(d)->sm % 10;
	return CUDA_SUCCESS;
}

/* attribute values of an H100-SXM-like device; bus ids and compute
 * capability from the topology */
static int attr_value(CUdevice d, int a, int *v)
{
	const nrr_topo_gpu *g = gpu(d);
	unsigned devid = (unsigned)strtoul(g->pci_device_id, NULL, 16);
	int val;
	switch (a) {
	case 1: val = 1024; break;                   /* max threads per block */
	case 2: case 3: val = 1024; break;           /* max block dim x, y */
	case 4: val = 64; break;
	case 5: val = 2147483647; break;             /* max grid dim */
	case 6: case 7: val = 65535; break;
	case 8: val = 49152; break;                  /* shared memory per block */
	case 9: val = 65536; break;                  /* constant memory */
	case 10: val = 32; break;                    /* warp size */
	case 11: val = 2147483647; break;            /* max pitch */
	case 12: val = 65536; break;                 /* registers per block */
	case 13: val = 1980000; break;               /* clock rate kHz */
	case 14: val = 512; break;
	case 15: val = 1; break;
	case 16: val = 132; break;                   /* multiprocessors */
	case 17: case 18: val = 0; break;
	case 19: val = 1; break;                     /* can map host memory */
	case 20: val = 0; break;                     /* compute mode default */
	case 21: val = 131072; break;
	case 22: val = 131072; break;
	case 23: val = 65536; break;
	case 24: case 25: case 26: val = 16384; break;
	case 27: case 28: val = 32768; break;
	case 29: val = 2048; break;
	case 30: val = 512; break;
	case 31: val = 1; break;                     /* concurrent kernels */
	case 32: val = 1; break;                     /* ECC */
	case 33: val = g->bus; break;
	case 34: val = g->device; break;
	case 35: val = 0; break;
	case 36: val = 2619000; break;               /* memory clock kHz */
	case 37: val = 5120; break;                  /* memory bus width */
	case 38: val = 52428800; break;              /* L2 */
	case 39: val = 2048; break;
	case 40: val = 3; break;                     /* async engines */
	case 41: val = 1; break;                     /* unified addressing */
	case 42: val = 32768; break;
	case 43: val = 2048; break;
	case 44: val = 1; break;
	case 45: case 46: val = 32768; break;
	case 47: case 48: val = 8192; break;
	case 49: val = 32768; break;
	case 50: val = g->domain; break;
	case 51: val = 32; break;
	case 52: case 53: val = 32768; break;
	case 54: val = 2046; break;
	case 55: case 56: val = 32768; break;
	case 57: val = 65536; break;
	case 58: case 59: case 60: val = 16384; break;
	case 61: val = 32768; break;
	case 62: val = 2048; break;
	case 63: case 64: val = 32768; break;
	case 65: val = 2048; break;
	case 66: case 67: val = 32768; break;
	case 68: val = 2046; break;
	case 69: val = 268435456; break;
	case 70: val = 131072; break;
	case 71: val = 65000; break;
	case 72: val = 2097120; break;
	case 73: case 74: val = 32768; break;
	case 75: val = g->sm / 10; break;
	case 76: val = g->sm % 10; break;
	case 77: val = 32768; break;
	case 78: case 79: case 80: val = 1; break;
	case 81: val = 233472; break;                /* shared memory per SM */
	case 82: val = 65536; break;
	case 83: val = 1; break;                     /* managed memory */
	case 84: val = 0; break;
	case 85: val = d; break;
	case 86: val = 0; break;
	case 87: val = 2; break;
	case 88: val = 0; break;
	case 89: val = 1; break;
	case 90: val = 1; break;
	case 91: val = 1; break;                     /* host pointer == device pointer */
	case 92: case 93: case 94: val = 1; break;
	case 95: val = 1; break;
	case 96: val = 0; break;
	case 97: val = 232448; break;                /* shared memory opt-in */
	case 98: val = 0; break;
	case 99: val = 1; break;                     /* host register */
	case 100: case 101: val = 0; break;
	case 102: val = 1; break;                    /* VMM */
	case 103: val = 1; break;                    /* POSIX fd handles */
	case 104: case 105: val = 0; break;
	case 106: val = 32; break;
	case 107: val = 0; break;                    /* compression */
	case 108: val = 32505856; break;
	case 109: val = 134213632; break;
	case 110: val = 1; break;                    /* GDR with VMM */
	case 111: val = 1024; break;
	case 112: case 113: case 114: val = 1; break;
	case 115: val = 0; break;                    /* memory pools: not emulated */
	case 116: val = 1; break;                    /* GPUDirect RDMA */
	case 117: val = 1; break;
	case 118: val = 0; break;
	case 119: val = 0; break;
	case 120: case 121: case 122: case 123: val = 1; break;
	case 124: val = 1; break;                    /* dma-buf */
	case 125: val = 0; break;                    /* IPC events */
	case 126: val = 4; break;
	case 127: val = 1; break;
	case 128: val = 0; break;                    /* fabric handles */
	case 129: val = 1; break;
	case 130: val = 0; break;
	case 131: val = -1; break;
	case 132: val = 0; break;                    /* multicast (NVLS): not emulated */
	case 133: val = 0; break;
	case 134: val = g->numa; break;
	case 135: case 136: case 137: case 138: val = 0; break;
	case 139: val = (int)((devid << 16) | 0x10de); break;
	case 140: val = (int)((0x16c1u << 16) | 0x10de); break;
	case 141: case 142: case 143: case 144: case 145: case 146: case 147: val = 0; break;
	default: return -1;
	}
	*v = val;
	return 0;
}

CUresult fake_cuDeviceGetAttribute(int *pi, int attrib, CUdevice d)
{
	NEED_DEV(d);
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if (attr_value(d, attrib, pi) < 0) {
		FAKE_DBG("cuDeviceGetAttribute: unknown attribute %d", attrib);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetProperties(CUdevprop *p, CUdevice d)
{
	NEED_DEV(d);
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	*p = (CUdevprop){ 1024, { 1024, 1024, 64 }, { 2147483647, 65535, 65535 }, 49152, 65536, 32,
			  2147483647, 65536, 1980000, 512 };
	return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetPCIBusId(char *busid, int len, CUdevice d)
{
	NEED_DEV(d);
	if (!busid || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	const nrr_topo_gpu *g = gpu(d);
	/* the driver's spelling: 8-digit domain, upper-case hex */
	snprintf(busid, (size_t)len, "%08X:%02X:%02X.%X", g->domain, g->bus, g->device, g->function);
	return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetByPCIBusId(CUdevice *d, const char *busid)
{
	NEED_INIT();
	if (!d || !busid)
		return CUDA_ERROR_INVALID_VALUE;
	int i = fake_dev_by_busid(busid);
	if (i < 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = i;
	return CUDA_SUCCESS;
}

CUresult fake_cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer)
{
	NEED_DEV(d);
	if (!gpu(peer))
		return CUDA_ERROR_INVALID_DEVICE;
	if (!can)
		return CUDA_ERROR_INVALID_VALUE;
	*can = d != peer;
	return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetP2PAttribute(int *value, int attrib, CUdevice src, CUdevice dst)
{
	NEED_DEV(src);
	if (!gpu(dst) || src == dst)
		return CUDA_ERROR_INVALID_DEVICE;
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attrib) {
	case 1: /* performance rank */
		*value = gpu(src)->nvlink_total > 0 ? 0 : 1;
		break;
	case 2: /* access supported */
	case 3: /* native atomics */
	case 4: /* CUDA array access */
		*value = 1;
		break;
	default:
		*value = 0;
	}
	return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetTexture1DLinearMaxWidth(size_t *w, int fmt, unsigned nch, CUdevice d)
{
	NEED_DEV(d);
	if (!w)
		return CUDA_ERROR_INVALID_VALUE;
	*w = 268435456;
	return CUDA_SUCCESS;
}

CUresult fake_cuDeviceGetExecAffinitySupport(int *pi, int type, CUdevice d)
{
	NEED_DEV(d);
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	*pi = 0;
	return CUDA_SUCCESS;
}

CUresult fake_cuFlushGPUDirectRDMAWrites(int target, int scope)
{
	NEED_INIT();
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return CUDA_SUCCESS;
}

/* ---- contexts --------------------------------------------------------------- */
static struct fctx *new_ctx(CUdevice d, int prim, unsigned flags)
{
	struct fctx *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->magic = FAKE_MAGIC_CTX;
	c->dev = d;
	c->primary = prim;
	c->flags = flags;
	c->id = atomic_fetch_add(&next_id, 1);
	if (fake_handle_add(c) < 0) {
		free(c);
		return NULL;
	}
	return c;
}

CUresult fake_primary_retain(CUcontext *pctx, CUdevice d)
{
	NEED_DEV(d);
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	if (!primary[d])
		primary[d] = new_ctx(d, 1, 0);
	struct fctx *c = primary[d];
	if (c)
		c->refcount++;
	pthread_mutex_unlock(&lock);
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*pctx = c;
	return CUDA_SUCCESS;
}

CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice d)
{
	return fake_primary_retain(pctx, d);
}

static CUresult prim_release(CUdevice d)
{
	NEED_DEV(d);
	pthread_mutex_lock(&lock);
	CUresult rc = CUDA_SUCCESS;
	if (!primary[d] || primary[d]->refcount <= 0)
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else
		primary[d]->refcount--;
	pthread_mutex_unlock(&lock);
	return rc;
}

CUresult fake_cuDevicePrimaryCtxRelease(CUdevice d)
{
	return prim_release(d);
}

CUresult fake_cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
	return prim_release(d);
}

static CUresult prim_set_flags(CUdevice d, unsigned flags)
{
	NEED_DEV(d);
	pthread_mutex_lock(&lock);
	if (!primary[d])
		primary[d] = new_ctx(d, 1, flags);
	else
		primary[d]->flags = flags;
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

CUresult fake_cuDevicePrimaryCtxSetFlags(CUdevice d, unsigned flags)
{
	return prim_set_flags(d, flags);
}

CUresult fake_cuDevicePrimaryCtxSetFlags_v2(CUdevice d, unsigned flags)
{
	return prim_set_flags(d, flags);
}

CUresult fake_cuDevicePrimaryCtxGetState(CUdevice d, unsigned *flags, int *active)
{
	NEED_DEV(d);
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	*flags = primary[d] ? primary[d]->flags : 0;
	*active = primary[d] && primary[d]->refcount > 0;
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

static CUresult prim_reset(CUdevice d)
{
	NEED_DEV(d);
	return CUDA_SUCCESS;
}

CUresult fake_cuDevicePrimaryCtxReset(CUdevice d)
{
	return prim_reset(d);
}

CUresult fake_cuDevicePrimaryCtxReset_v2(CUdevice d)
{
	return prim_reset(d);
}

static CUresult ctx_create(CUcontext *pctx, unsigned flags, CUdevice d)
{
	NEED_DEV(d);
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	struct fctx *c = new_ctx(d, 0, flags);
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->refcount = 1;
	if (ctx_depth < CTX_STACK)
		ctx_stack[ctx_depth++] = c;
	*pctx = c;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxCreate_v2(CUcontext *pctx, unsigned flags, CUdevice d)
{
	return ctx_create(pctx, flags, d);
}

CUresult fake_cuCtxCreate_v3(CUcontext *pctx, void *params, int nparams, unsigned flags, CUdevice d)
{
	return ctx_create(pctx, flags, d);
}

CUresult fake_cuCtxCreate_v4(CUcontext *pctx, void *params, unsigned flags, CUdevice d)
{
	return ctx_create(pctx, flags, d);
}

CUresult fake_cuCtxDestroy_v2(CUcontext c)
{
	NEED_INIT();
	if (!valid_ctx(c) || c->primary)
		return CUDA_ERROR_INVALID_CONTEXT;
	for (int i = 0; i < ctx_depth; i++)
		if (ctx_stack[i] == c) {
			memmove(&ctx_stack[i], &ctx_stack[i + 1], (size_t)(ctx_depth - i - 1) * sizeof(ctx_stack[0]));
			ctx_depth--;
			i--;
		}
	c->destroyed = 1; /* kept: handles may still be compared */
	fake_handle_del(c);
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxPushCurrent_v2(CUcontext c)
{
	NEED_INIT();
	if (!valid_ctx(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (ctx_depth >= CTX_STACK)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx_stack[ctx_depth++] = c;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxPopCurrent_v2(CUcontext *pc)
{
	NEED_INIT();
	if (ctx_depth == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	struct fctx *c = ctx_stack[--ctx_depth];
	if (pc)
		*pc = c;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxSetCurrent(CUcontext c)
{
	NEED_INIT();
	if (c == NULL) {
		if (ctx_depth > 0)
			ctx_depth--;
		return CUDA_SUCCESS;
	}
	if (!valid_ctx(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (ctx_depth == 0)
		ctx_stack[ctx_depth++] = c;
	else
		ctx_stack[ctx_depth - 1] = c;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetCurrent(CUcontext *pc)
{
	NEED_INIT();
	if (!pc)
		return CUDA_ERROR_INVALID_VALUE;
	*pc = fake_current_ctx();
	return CUDA_SUCCESS;
}

static struct fctx *ctx_or_current(CUcontext c)
{
	return c ? c : fake_current_ctx();
}

CUresult fake_cuCtxGetDevice(CUdevice *d)
{
	NEED_INIT();
	struct fctx *c = fake_current_ctx();
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	*d = c->dev;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetDevice_v2(CUdevice *d, CUcontext ctx)
{
	NEED_INIT();
	struct fctx *c = ctx_or_current(ctx);
	if (!valid_ctx(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	*d = c->dev;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxSynchronize(void)
{
	NEED_INIT();
	if (!fake_current_ctx())
		return CUDA_ERROR_INVALID_CONTEXT;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxSynchronize_v2(CUcontext ctx)
{
	NEED_INIT();
	if (!valid_ctx(ctx_or_current(ctx)))
		return CUDA_ERROR_INVALID_CONTEXT;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetFlags(unsigned *flags)
{
	NEED_INIT();
	struct fctx *c = fake_current_ctx();
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = c->flags;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxSetFlags(unsigned flags)
{
	NEED_INIT();
	struct fctx *c = fake_current_ctx();
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	c->flags = flags;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
	NEED_INIT();
	struct fctx *c = ctx_or_current(ctx);
	if (!valid_ctx(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	*id = c->id;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetApiVersion(CUcontext ctx, unsigned *version)
{
	NEED_INIT();
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	*version = 3020;
	return CUDA_SUCCESS;
}

static size_t limits[16] = { 1024, 1048576, 8388608, 2, 2048, 128, 0, 232448, 0, 1 };

CUresult fake_cuCtxGetLimit(size_t *v, int limit)
{
	NEED_INIT();
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	if (limit < 0 || limit > 9)
		return CUDA_ERROR_UNSUPPORTED_LIMIT;
	*v = limits[limit];
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxSetLimit(int limit, size_t v)
{
	NEED_INIT();
	if (limit < 0 || limit > 9)
		return CUDA_ERROR_UNSUPPORTED_LIMIT;
	limits[limit] = v;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetCacheConfig(int *cfg)
{
	NEED_INIT();
	if (!cfg)
		return CUDA_ERROR_INVALID_VALUE;
	*cfg = 0;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxSetCacheConfig(int cfg)
{
	NEED_INIT();
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetSharedMemConfig(int *cfg)
{
	NEED_INIT();
	if (!cfg)
		return CUDA_ERROR_INVALID_VALUE;
	*cfg = 0;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxSetSharedMemConfig(int cfg)
{
	NEED_INIT();
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
	NEED_INIT();
	if (least)
		*least = 0;
	if (greatest)
		*greatest = -5;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxResetPersistingL2Cache(void)
{
	NEED_INIT();
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxGetExecAffinity(void *aff, int type)
{
	NEED_INIT();
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult fake_cuCtxEnablePeerAccess(CUcontext peer, unsigned flags)
{
	NEED_INIT();
	struct fctx *c = fake_current_ctx();
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!valid_ctx(peer) || peer->dev == c->dev)
		return CUDA_ERROR_INVALID_DEVICE;
	if (c->peer_enabled[peer->dev])
		return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
	c->peer_enabled[peer->dev] = 1;
	return CUDA_SUCCESS;
}

CUresult fake_cuCtxDisablePeerAccess(CUcontext peer)
{
	NEED_INIT();
	struct fctx *c = fake_current_ctx();
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!valid_ctx(peer))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!c->peer_enabled[peer->dev])
		return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
	c->peer_enabled[peer->dev] = 0;
	return CUDA_SUCCESS;
}

/* ---- streams ----------------------------------------------------------------- */
#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

int fake_valid_stream(CUstream s)
{
	return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD ||
	       (fake_handle_live(s) && s->magic == FAKE_MAGIC_STREAM);
}

#define NEED_STREAM(s) do { NEED_INIT(); if (!fake_valid_stream(s)) return CUDA_ERROR_INVALID_HANDLE; } while (0)

static CUresult stream_create(CUstream *ps, unsigned flags, int prio)
{
	NEED_INIT();
	if (!ps)
		return CUDA_ERROR_INVALID_VALUE;
	struct fctx *c = fake_current_ctx();
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	struct fstream *s = calloc(1, sizeof(*s));
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->magic = FAKE_MAGIC_STREAM;
	s->ctx = c;
	s->flags = flags;
	s->priority = prio;
	s->id = atomic_fetch_add(&next_id, 1);
	if (fake_handle_add(s) < 0) {
		free(s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*ps = s;
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamCreate(CUstream *ps, unsigned flags)
{
	return stream_create(ps, flags, 0);
}

CUresult fake_cuStreamCreateWithPriority(CUstream *ps, unsigned flags, int prio)
{
	return stream_create(ps, flags, prio);
}

CUresult fake_cuStreamDestroy_v2(CUstream s)
{
	NEED_INIT();
	if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || !fake_valid_stream(s) || !fake_handle_del(s))
		return CUDA_ERROR_INVALID_HANDLE;
	s->magic = 0;
	free(s);
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamSynchronize(CUstream s)
{
	NEED_STREAM(s);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamQuery(CUstream s)
{
	NEED_STREAM(s);
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags)
{
	NEED_STREAM(s);
	if (!is_event(e))
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamGetPriority(CUstream s, int *prio)
{
	NEED_STREAM(s);
	if (!prio)
		return CUDA_ERROR_INVALID_VALUE;
	*prio = (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) ? s->priority : 0;
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamGetFlags(CUstream s, unsigned *flags)
{
	NEED_STREAM(s);
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) ? s->flags : 0;
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamGetId(CUstream s, unsigned long long *id)
{
	NEED_STREAM(s);
	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	*id = (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) ? s->id : (unsigned long long)(uintptr_t)s;
	return CUDA_SUCCESS;
}

static CUresult stream_ctx(CUstream s, CUcontext *pc)
{
	NEED_STREAM(s);
	if (!pc)
		return CUDA_ERROR_INVALID_VALUE;
	if (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) {
		*pc = s->ctx;
		return CUDA_SUCCESS;
	}
	*pc = fake_current_ctx();
	return *pc ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult fake_cuStreamGetCtx(CUstream s, CUcontext *pc)
{
	return stream_ctx(s, pc);
}

CUresult fake_cuStreamGetCtx_v2(CUstream s, CUcontext *pc, void **pgreen)
{
	if (pgreen)
		*pgreen = NULL;
	return stream_ctx(s, pc);
}

CUresult fake_cuStreamGetDevice(CUstream s, CUdevice *d)
{
	CUcontext c = NULL;
	CUresult rc = stream_ctx(s, &c);
	if (rc)
		return rc;
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	*d = c->dev;
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamAddCallback(CUstream s, CUstreamCallback cb, void *ud, unsigned flags)
{
	NEED_STREAM(s);
	if (!cb)
		return CUDA_ERROR_INVALID_VALUE;
	cb(s, CUDA_SUCCESS, ud);
	return CUDA_SUCCESS;
}

CUresult fake_cuLaunchHostFunc(CUstream s, CUhostFn fn, void *ud)
{
	NEED_STREAM(s);
	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	fn(ud);
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamAttachMemAsync(CUstream s, CUdeviceptr p, size_t len, unsigned flags)
{
	NEED_STREAM(s);
	return CUDA_SUCCESS;
}

/* stream capture: never capturing */
CUresult fake_cuStreamIsCapturing(CUstream s, int *status)
{
	NEED_STREAM(s);
	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	*status = 0;
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamGetCaptureInfo(CUstream s, int *status, cuuint64_t *id)
{
	NEED_STREAM(s);
	if (status)
		*status = 0;
	if (id)
		*id = 0;
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamGetCaptureInfo_v2(CUstream s, int *status, cuuint64_t *id, void **graph,
					       const void **deps, size_t *ndeps)
{
	NEED_STREAM(s);
	if (status)
		*status = 0;
	if (id)
		*id = 0;
	if (graph)
		*graph = NULL;
	if (deps)
		*deps = NULL;
	if (ndeps)
		*ndeps = 0;
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamGetCaptureInfo_v3(CUstream s, int *status, cuuint64_t *id, void **graph,
					       const void **deps, const void **edges, size_t *ndeps)
{
	NEED_STREAM(s);
	if (status)
		*status = 0;
	if (id)
		*id = 0;
	if (graph)
		*graph = NULL;
	if (deps)
		*deps = NULL;
	if (edges)
		*edges = NULL;
	if (ndeps)
		*ndeps = 0;
	return CUDA_SUCCESS;
}

static __thread int capture_mode;

CUresult fake_cuThreadExchangeStreamCaptureMode(int *mode)
{
	NEED_INIT();
	if (!mode)
		return CUDA_ERROR_INVALID_VALUE;
	int old = capture_mode;
	capture_mode = *mode;
	*mode = old;
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamBeginCapture_v2(CUstream s, int mode)
{
	NEED_STREAM(s);
	return CUDA_ERROR_NOT_SUPPORTED; /* graphs are not emulated */
}

CUresult fake_cuStreamBeginCapture(CUstream s)
{
	NEED_STREAM(s);
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult fake_cuStreamEndCapture(CUstream s, void **graph)
{
	NEED_STREAM(s);
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* stream attributes (access policy window, sync policy, priority, memory
 * sync domain...): kept per call as given, nothing to apply */
CUresult fake_cuStreamGetAttribute(CUstream s, int attr, void *value)
{
	NEED_STREAM(s);
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	memset(value, 0, 48); /* sizeof(CUlaunchAttributeValue) is 64; the used fields are first */
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamSetAttribute(CUstream s, int attr, const void *value)
{
	NEED_STREAM(s);
	return value ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult fake_cuStreamCopyAttributes(CUstream dst, CUstream src)
{
	NEED_STREAM(dst);
	return fake_valid_stream(src) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* stream memory operations: done at once (a wait polls for up to 10 s) */
static CUresult wait_value64(volatile uint64_t *addr, uint64_t value, unsigned flags, int is64)
{
	for (int spins = 0;; spins++) {
		uint64_t cur = is64 ? __atomic_load_n(addr, __ATOMIC_ACQUIRE)
				    : __atomic_load_n((volatile uint32_t *)addr, __ATOMIC_ACQUIRE);
		int ok;
		switch (flags & 0x3) {
		case 0: ok = is64 ? (int64_t)(cur - value) >= 0 : (int32_t)((uint32_t)cur - (uint32_t)value) >= 0; break;
		case 1: ok = cur == value; break;
		case 2: ok = (cur & value) != 0; break;
		default: ok = ~(cur | value) != 0; break;
		}
		if (ok)
			return CUDA_SUCCESS;
		if (spins > 100000) {
			fake_log("cuStreamWaitValue: %p never reached the value (kernels do not run on the fake "
				 "driver); continuing", (void *)addr);
			return CUDA_SUCCESS;
		}
		if (spins > 100)
			usleep(100);
		else
			sched_yield();
	}
}

CUresult fake_cuStreamWaitValue32_v2(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned flags)
{
	NEED_STREAM(s);
	if (!addr)
		return CUDA_ERROR_INVALID_VALUE;
	return wait_value64((volatile uint64_t *)(uintptr_t)addr, value, flags, 0);
}

CUresult fake_cuStreamWaitValue64_v2(CUstream s, CUdeviceptr addr, cuuint64_t value, unsigned flags)
{
	NEED_STREAM(s);
	if (!addr)
		return CUDA_ERROR_INVALID_VALUE;
	return wait_value64((volatile uint64_t *)(uintptr_t)addr, value, flags, 1);
}

CUresult fake_cuStreamWriteValue32_v2(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned flags)
{
	NEED_STREAM(s);
	if (!addr)
		return CUDA_ERROR_INVALID_VALUE;
	__atomic_store_n((uint32_t *)(uintptr_t)addr, value, __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamWriteValue64_v2(CUstream s, CUdeviceptr addr, cuuint64_t value, unsigned flags)
{
	NEED_STREAM(s);
	if (!addr)
		return CUDA_ERROR_INVALID_VALUE;
	__atomic_store_n((uint64_t *)(uintptr_t)addr, value, __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
}

CUresult fake_cuStreamBatchMemOp_v2(CUstream s, unsigned count, CUstreamBatchMemOpParams *ops,
					   unsigned flags)
{
	NEED_STREAM(s);
	if (count && !ops)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < count; i++) {
		CUstreamBatchMemOpParams *o = &ops[i];
		volatile uint64_t *a = (volatile uint64_t *)(uintptr_t)o->v.address;
		switch (o->operation) {
		case 1: wait_value64(a, o->v.value, o->v.flags, 0); break;
		case 4: wait_value64(a, o->v.value64, o->v.flags, 1); break;
		case 2: __atomic_store_n((uint32_t *)(uintptr_t)o->v.address, o->v.value, __ATOMIC_RELEASE); break;
		case 5: __atomic_store_n((uint64_t *)(uintptr_t)o->v.address, o->v.value64, __ATOMIC_RELEASE); break;
		case 3: case 6: __atomic_thread_fence(__ATOMIC_SEQ_CST); break;
		default: return CUDA_ERROR_INVALID_VALUE;
		}
	}
	return CUDA_SUCCESS;
}

/* ---- events ------------------------------------------------------------------- */
CUresult fake_cuEventCreate(CUevent *pe, unsigned flags)
{
	NEED_INIT();
	if (!pe)
		return CUDA_ERROR_INVALID_VALUE;
	if (!fake_current_ctx())
		return CUDA_ERROR_INVALID_CONTEXT;
	struct fevent *e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->magic = FAKE_MAGIC_EVENT;
	e->flags = flags;
	if (fake_handle_add(e) < 0) {
		free(e);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pe = e;
	return CUDA_SUCCESS;
}

CUresult fake_cuEventDestroy_v2(CUevent e)
{
	NEED_INIT();
	if (!is_event(e) || !fake_handle_del(e))
		return CUDA_ERROR_INVALID_HANDLE;
	e->magic = 0;
	free(e);
	return CUDA_SUCCESS;
}

static CUresult event_record(CUevent e, CUstream s)
{
	NEED_STREAM(s);
	if (!is_event(e))
		return CUDA_ERROR_INVALID_HANDLE;
	e->t_ms = now_ms();
	e->recorded = 1;
	return CUDA_SUCCESS;
}

CUresult fake_cuEventRecord(CUevent e, CUstream s)
{
	return event_record(e, s);
}

CUresult fake_cuEventRecordWithFlags(CUevent e, CUstream s, unsigned flags)
{
	return event_record(e, s);
}

CUresult fake_cuEventQuery(CUevent e)
{
	NEED_INIT();
	if (!is_event(e))
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

CUresult fake_cuEventSynchronize(CUevent e)
{
	NEED_INIT();
	if (!is_event(e))
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

static CUresult elapsed(float *ms, CUevent a, CUevent b)
{
	NEED_INIT();
	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	if (!is_event(a) || !is_event(b))
		return CUDA_ERROR_INVALID_HANDLE;
	if ((a->flags | b->flags) & 0x2)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!a->recorded || !b->recorded)
		return CUDA_ERROR_INVALID_HANDLE;
	*ms = (float)(b->t_ms - a->t_ms);
	return CUDA_SUCCESS;
}

CUresult fake_cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	return elapsed(ms, a, b);
}

CUresult fake_cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
	return elapsed(ms, a, b);
}

CUresult fake_cuIpcGetEventHandle(CUipcEventHandle *h, CUevent e)
{
	NEED_INIT();
	if (!is_event(e))
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult fake_cuIpcOpenEventHandle(CUevent *pe, CUipcEventHandle h)
{
	NEED_INIT();
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- modules, libraries, functions ------------------------------------------ */
static struct fmodule *modules;
static pthread_mutex_t mod_lock = PTHREAD_MUTEX_INITIALIZER;

CUresult fake_module_from_image(CUmodule *pm, const void *image, int is_library)
{
	if (!pm)
		return CUDA_ERROR_INVALID_VALUE;
	struct fmodule *m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->magic = FAKE_MAGIC_MODULE;
	m->image = image;
	m->is_library = is_library;
	if (fake_handle_add(m) < 0) {
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&mod_lock);
	m->next = modules;
	modules = m;
	pthread_mutex_unlock(&mod_lock);
	*pm = m;
	return CUDA_SUCCESS;
}

static CUresult get_func(struct ffunc **pf, struct fmodule *m, const char *name)
{
	if (!pf || !name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!is_module(m))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&mod_lock);
	struct ffunc *f;
	for (f = m->funcs; f; f = f->next)
		if (strcmp(f->name, name) == 0)
			break;
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (f)
			f->name = strdup(name);
		if (!f || !f->name) {
			free(f);
			pthread_mutex_unlock(&mod_lock);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		f->magic = FAKE_MAGIC_FUNC;
		f->mod = m;
		if (fake_handle_add(f) < 0) {
			free(f->name);
			free(f);
			pthread_mutex_unlock(&mod_lock);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		f->next = m->funcs;
		m->funcs = f;
	}
	pthread_mutex_unlock(&mod_lock);
	*pf = f;
	return CUDA_SUCCESS;
}

static CUresult get_global(CUdeviceptr *dptr, size_t *bytes, struct fmodule *m, const char *name)
{
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!is_module(m))
		return CUDA_ERROR_INVALID_HANDLE;
	pthread_mutex_lock(&mod_lock);
	struct fglobal *g;
	for (g = m->globals; g; g = g->next)
		if (strcmp(g->name, name) == 0)
			break;
	if (!g) {
		/* the real size is in the image; device code never runs here, so a
		 * zeroed 64 KiB block stands in for any variable */
		g = calloc(1, sizeof(*g));
		if (g) {
			g->name = strdup(name);
			g->size = 65536;
			g->ptr = calloc(1, g->size);
		}
		if (!g || !g->name || !g->ptr) {
			if (g) {
				free(g->name);
				free(g->ptr);
			}
			free(g);
			pthread_mutex_unlock(&mod_lock);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		g->next = m->globals;
		m->globals = g;
	}
	pthread_mutex_unlock(&mod_lock);
	if (dptr)
		*dptr = (CUdeviceptr)(uintptr_t)g->ptr;
	if (bytes)
		*bytes = g->size;
	return CUDA_SUCCESS;
}

CUresult fake_cuModuleLoadData(CUmodule *pm, const void *image)
{
	NEED_INIT();
	if (!image)
		return CUDA_ERROR_INVALID_VALUE;
	return fake_module_from_image(pm, image, 0);
}

CUresult fake_cuModuleLoadDataEx(CUmodule *pm, const void *image, unsigned n, void *opts, void **vals)
{
	NEED_INIT();
	if (!image)
		return CUDA_ERROR_INVALID_VALUE;
	return fake_module_from_image(pm, image, 0);
}

CUresult fake_cuModuleLoadFatBinary(CUmodule *pm, const void *image)
{
	NEED_INIT();
	if (!image)
		return CUDA_ERROR_INVALID_VALUE;
	return fake_module_from_image(pm, image, 0);
}

CUresult fake_cuModuleLoad(CUmodule *pm, const char *fname)
{
	NEED_INIT();
	if (!fname)
		return CUDA_ERROR_INVALID_VALUE;
	if (access(fname, R_OK) != 0)
		return 301; /* CUDA_ERROR_FILE_NOT_FOUND */
	return fake_module_from_image(pm, fname, 0);
}

CUresult fake_cuModuleUnload(CUmodule m)
{
	NEED_INIT();
	if (!is_module(m))
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS; /* kept: functions may still be referenced */
}

CUresult fake_cuModuleGetFunction(CUfunction *pf, CUmodule m, const char *name)
{
	NEED_INIT();
	return get_func(pf, m, name);
}

CUresult fake_cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name)
{
	NEED_INIT();
	return get_global(dptr, bytes, m, name);
}

CUresult fake_cuModuleGetLoadingMode(int *mode)
{
	NEED_INIT();
	if (!mode)
		return CUDA_ERROR_INVALID_VALUE;
	*mode = 1; /* CU_MODULE_EAGER_LOADING */
	return CUDA_SUCCESS;
}

CUresult fake_cuModuleGetFunctionCount(unsigned *count, CUmodule m)
{
	NEED_INIT();
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = 0;
	return CUDA_SUCCESS;
}

CUresult fake_cuLibraryLoadData(CUlibrary *pl, const void *code, void *jo, void **jv, unsigned nj,
				       void *lo, void **lv, unsigned nl)
{
	NEED_INIT();
	if (!code)
		return CUDA_ERROR_INVALID_VALUE;
	return fake_module_from_image(pl, code, 1);
}

CUresult fake_cuLibraryLoadFromFile(CUlibrary *pl, const char *fname, void *jo, void **jv, unsigned nj,
					   void *lo, void **lv, unsigned nl)
{
	NEED_INIT();
	if (!fname)
		return CUDA_ERROR_INVALID_VALUE;
	return fake_module_from_image(pl, fname, 1);
}

CUresult fake_cuLibraryUnload(CUlibrary l)
{
	NEED_INIT();
	if (!is_module(l))
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

CUresult fake_cuLibraryGetKernel(CUkernel *pk, CUlibrary l, const char *name)
{
	NEED_INIT();
	return get_func(pk, l, name);
}

CUresult fake_cuLibraryGetModule(CUmodule *pm, CUlibrary l)
{
	NEED_INIT();
	if (!pm)
		return CUDA_ERROR_INVALID_VALUE;
	if (!is_module(l))
		return CUDA_ERROR_INVALID_HANDLE;
	*pm = l;
	return CUDA_SUCCESS;
}

CUresult fake_cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary l, const char *name)
{
	NEED_INIT();
	return get_global(dptr, bytes, l, name);
}

CUresult fake_cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary l, const char *name)
{
	NEED_INIT();
	return get_global(dptr, bytes, l, name);
}

CUresult fake_cuLibraryGetKernelCount(unsigned *count, CUlibrary l)
{
	NEED_INIT();
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = 0;
	return CUDA_SUCCESS;
}

CUresult fake_cuKernelGetFunction(CUfunction *pf, CUkernel k)
{
	NEED_INIT();
	if (!pf)
		return CUDA_ERROR_INVALID_VALUE;
	if (!is_func(k))
		return CUDA_ERROR_INVALID_HANDLE;
	*pf = k;
	return CUDA_SUCCESS;
}

CUresult fake_cuKernelGetLibrary(CUlibrary *pl, CUkernel k)
{
	NEED_INIT();
	if (!pl)
		return CUDA_ERROR_INVALID_VALUE;
	if (!is_func(k))
		return CUDA_ERROR_INVALID_HANDLE;
	*pl = k->mod;
	return CUDA_SUCCESS;
}

CUresult fake_cuKernelGetName(const char **name, CUkernel k)
{
	NEED_INIT();
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!is_func(k))
		return CUDA_ERROR_INVALID_HANDLE;
	*name = k->name;
	return CUDA_SUCCESS;
}

static CUresult func_attr(int *pi, int attrib, struct ffunc *f)
{
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	switch (attrib) {
	case 0: *pi = 1024; break;              /* max threads per block */
	case 1: *pi = 0; break;                 /* static shared */
	case 2: *pi = 0; break;
	case 3: *pi = 0; break;
	case 4: *pi = 64; break;                /* registers */
	case 5: *pi = 90; break;                /* PTX version */
	case 6: *pi = 90; break;                /* binary version */
	case 7: *pi = 0; break;
	case 8: *pi = f->max_dyn_shmem; break;
	case 9: *pi = f->carveout; break;
	case 10: case 11: case 12: case 13: case 14: case 15: *pi = 0; break;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static CUresult func_set_attr(struct ffunc *f, int attrib, int value)
{
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	if (attrib == 8)
		f->max_dyn_shmem = value;
	else if (attrib == 9)
		f->carveout = value;
	return CUDA_SUCCESS;
}

CUresult fake_cuFuncGetAttribute(int *pi, int attrib, CUfunction f)
{
	NEED_INIT();
	return func_attr(pi, attrib, f);
}

CUresult fake_cuFuncSetAttribute(CUfunction f, int attrib, int value)
{
	NEED_INIT();
	return func_set_attr(f, attrib, value);
}

CUresult fake_cuKernelGetAttribute(int *pi, int attrib, CUkernel k, CUdevice d)
{
	NEED_INIT();
	return func_attr(pi, attrib, k);
}

CUresult fake_cuKernelSetAttribute(int attrib, int value, CUkernel k, CUdevice d)
{
	NEED_INIT();
	return func_set_attr(k, attrib, value);
}

CUresult fake_cuKernelSetCacheConfig(CUkernel k, int cfg, CUdevice d)
{
	NEED_INIT();
	return CUDA_SUCCESS;
}

CUresult fake_cuFuncSetCacheConfig(CUfunction f, int cfg)
{
	NEED_INIT();
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

CUresult fake_cuFuncSetSharedMemConfig(CUfunction f, int cfg)
{
	NEED_INIT();
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_SUCCESS;
}

CUresult fake_cuFuncGetModule(CUmodule *pm, CUfunction f)
{
	NEED_INIT();
	if (!pm)
		return CUDA_ERROR_INVALID_VALUE;
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	*pm = f->mod;
	return CUDA_SUCCESS;
}

CUresult fake_cuFuncGetName(const char **name, CUfunction f)
{
	NEED_INIT();
	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	*name = f->name;
	return CUDA_SUCCESS;
}

CUresult fake_cuFuncIsLoaded(int *state, CUfunction f)
{
	NEED_INIT();
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!state)
		return CUDA_ERROR_INVALID_VALUE;
	*state = 1; /* CU_FUNCTION_LOADING_STATE_LOADED */
	return CUDA_SUCCESS;
}

CUresult fake_cuFuncLoad(CUfunction f)
{
	NEED_INIT();
	return CUDA_SUCCESS;
}

CUresult fake_cuFuncGetParamInfo(CUfunction f, size_t index, size_t *off, size_t *size)
{
	NEED_INIT();
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	return CUDA_ERROR_INVALID_VALUE;
}

/* launches: counted per function, never executed */
static atomic_ullong total_launches;

static CUresult launch(CUfunction f, CUstream s)
{
	NEED_STREAM(s);
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!fake_current_ctx())
		return CUDA_ERROR_INVALID_CONTEXT;
	__atomic_fetch_add(&f->launches, 1, __ATOMIC_RELAXED);
	unsigned long long n = atomic_fetch_add(&total_launches, 1) + 1;
	FAKE_DBG("launch #%llu of %s (not executed)", n, f->name);
	(void)n;
	return CUDA_SUCCESS;
}

CUresult fake_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
				    unsigned bz, unsigned shmem, CUstream s, void **params, void **extra)
{
	NEED_INIT();
	if (!gx || !gy || !gz || !bx || !by || !bz)
		return CUDA_ERROR_INVALID_VALUE;
	return launch(f, s);
}

CUresult fake_cuLaunchKernelEx(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
{
	NEED_INIT();
	if (!cfg)
		return CUDA_ERROR_INVALID_VALUE;
	return launch(f, cfg->hStream);
}

CUresult fake_cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
					       unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params)
{
	NEED_INIT();
	return launch(f, s);
}

CUresult fake_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int bs, size_t shmem)
{
	NEED_INIT();
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	*n = bs > 0 ? (2048 / bs > 32 ? 32 : 2048 / bs) : 1;
	if (*n < 1)
		*n = 1;
	return CUDA_SUCCESS;
}

CUresult fake_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, CUfunction f, int bs,
									 size_t shmem, unsigned flags)
{
	NEED_INIT();
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	*n = bs > 0 ? (2048 / bs > 32 ? 32 : 2048 / bs) : 1;
	if (*n < 1)
		*n = 1;
	return CUDA_SUCCESS;
}

CUresult fake_cuOccupancyMaxPotentialBlockSize(int *grid, int *block, CUfunction f, void *fn,
						      size_t shmem, int limit)
{
	NEED_INIT();
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	if (grid)
		*grid = 132;
	if (block)
		*block = limit > 0 && limit < 1024 ? limit : 1024;
	return CUDA_SUCCESS;
}

CUresult fake_cuOccupancyAvailableDynamicSMemPerBlock(size_t *sz, CUfunction f, int nb, int bs)
{
	NEED_INIT();
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!sz)
		return CUDA_ERROR_INVALID_VALUE;
	*sz = 232448;
	return CUDA_SUCCESS;
}

CUresult fake_cuOccupancyMaxPotentialClusterSize(int *n, CUfunction f, const CUlaunchConfig *cfg)
{
	NEED_INIT();
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	*n = 8;
	return CUDA_SUCCESS;
}

CUresult fake_cuOccupancyMaxActiveClusters(int *n, CUfunction f, const CUlaunchConfig *cfg)
{
	NEED_INIT();
	if (!is_func(f))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	*n = 16;
	return CUDA_SUCCESS;
}

/* ---- profiler, misc ------------------------------------------------------------ */
CUresult fake_cuProfilerStart(void)
{
	return CUDA_SUCCESS;
}

CUresult fake_cuProfilerStop(void)
{
	return CUDA_SUCCESS;
}
