/* SPDX-License-Identifier: MIT */
/*
 * cudart.c - ncclrr's CUDA runtime library (libcudart.so.12 / .so.13): the
 * runtime API over the driver API, the way NVIDIA's runtime sits over its
 * driver. Every runtime call that needs the device does so through driver
 * calls (cuMemAlloc_v2, cuLaunchKernel, ...), through the PLT, so a tracer
 * preloaded into the program sees them nested inside the runtime call.
 *
 * Semantics kept from the runtime documentation:
 * - the current device is per thread (default 0); a context made current
 *   through the driver API decides it, as with the real runtime; the device's
 *   primary context is retained and made current on first use;
 * - errors are also kept per thread: cudaGetLastError returns and clears,
 *   cudaPeekAtLastError returns;
 * - kernels are registered by their host stub (__cudaRegisterFunction) and
 *   turned into driver functions on first use, so cudaGetFuncBySymbol hands
 *   out a CUfunction the driver knows; a launch goes to cuLaunchKernel and
 *   completes at once (the fake driver executes no kernel);
 * - streams are never capturing: capture queries answer "none";
 * - memory pools, graphs and user objects are not supported (the fake
 *   driver has none).
 * Every entry point counts its calls and obeys NCCLRR_FAULT rules for cuda*
 * names (fake_common.c), like the driver's.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"
#include "cudart_types.h"

#if NRR_CUDART_MAJOR == 12
#define RUNTIME_VERSION 12040
#else
#define RUNTIME_VERSION 13000
#endif

/* ---- the driver calls this library makes (driver ABI names) ---------- */
CUresult cuInit(unsigned flags);
CUresult cuDriverGetVersion(int *v);
CUresult cuDeviceGetCount(int *n);
CUresult cuDeviceGet(CUdevice *d, int ordinal);
CUresult cuDeviceGetName(char *name, int len, CUdevice d);
CUresult cuDeviceGetUuid_v2(void *uuid, CUdevice d);
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d);
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d);
CUresult cuStreamIsCapturing(CUstream s, int *status);
CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice d);
CUresult cuDeviceGetByPCIBusId(CUdevice *d, const char *id);
CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer);
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d);
CUresult cuDevicePrimaryCtxReset_v2(CUdevice d);
CUresult cuCtxGetCurrent(CUcontext *c);
CUresult cuCtxSetCurrent(CUcontext c);
CUresult cuCtxGetDevice(CUdevice *d);
CUresult cuCtxSynchronize(void);
CUresult cuCtxSetLimit(int limit, size_t v);
CUresult cuCtxGetLimit(size_t *v, int limit);
CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned flags);
CUresult cuCtxDisablePeerAccess(CUcontext peer);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n);
CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned flags);
CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s);
CUresult cuMemFree_v2(CUdeviceptr p);
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, void *pool, CUstream s);
CUresult cuMemPoolCreate(void **pool, const void *props);
CUresult cuMemPoolDestroy(void *pool);
CUresult cuMemPoolSetAttribute(void *pool, int attr, void *v);
CUresult cuMemPoolGetAttribute(void *pool, int attr, void *v);
CUresult cuDeviceGetDefaultMemPool(void **pool, CUdevice d);
CUresult cuDeviceGetMemPool(void **pool, CUdevice d);
CUresult cuDeviceSetMemPool(CUdevice d, void *pool);
CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags);
CUresult cuMemFreeHost(void *p);
CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned flags);
CUresult cuMemHostUnregister(void *p);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned flags);
CUresult cuMemGetInfo_v2(size_t *free_, size_t *total);
CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data, CUdeviceptr p);
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n);
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream s);
CUresult cuIpcGetMemHandle(nrr_cudaIpcHandle *h, CUdeviceptr p);
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, nrr_cudaIpcHandle h, unsigned flags);
CUresult cuIpcCloseMemHandle(CUdeviceptr p);
CUresult cuIpcGetEventHandle(nrr_cudaIpcHandle *h, CUevent e);
CUresult cuIpcOpenEventHandle(CUevent *e, nrr_cudaIpcHandle h);
CUresult cuStreamCreate(CUstream *s, unsigned flags);
CUresult cuStreamCreateWithPriority(CUstream *s, unsigned flags, int prio);
CUresult cuStreamDestroy_v2(CUstream s);
CUresult cuStreamSynchronize(CUstream s);
CUresult cuStreamQuery(CUstream s);
CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags);
CUresult cuStreamGetPriority(CUstream s, int *prio);
CUresult cuStreamGetFlags(CUstream s, unsigned *flags);
CUresult cuStreamGetId(CUstream s, unsigned long long *id);
CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest);
CUresult cuEventCreate(CUevent *e, unsigned flags);
CUresult cuEventDestroy_v2(CUevent e);
CUresult cuEventRecord(CUevent e, CUstream s);
CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned flags);
CUresult cuEventQuery(CUevent e);
CUresult cuEventSynchronize(CUevent e);
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b);
CUresult cuLaunchHostFunc(CUstream s, void (*fn)(void *), void *arg);
CUresult cuModuleLoadData(CUmodule *m, const void *image);
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name);
CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *n, CUmodule m, const char *name);
CUresult cuFuncGetAttribute(int *v, int attr, CUfunction f);
CUresult cuFuncSetAttribute(CUfunction f, int attr, int v);
CUresult cuFuncSetCacheConfig(CUfunction f, int cfg);
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			unsigned bz, unsigned shmem, CUstream s, void **args, void **extra);
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
				   unsigned by, unsigned bz, unsigned shmem, CUstream s, void **args);
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int block, size_t shmem);
CUresult cuGetProcAddress_v2(const char *sym, void **fn, int ver, cuuint64_t flags, int *status);

/* ---- per-thread state --------------------------------------------------- */
static __thread int t_dev = -1;         /* cudaSetDevice; -1: never set */
static __thread cudaError_t t_err;      /* last error */
static __thread int t_capture_mode;     /* cudaThreadExchangeStreamCaptureMode */
static __thread struct {
	nrr_dim3 grid, block;
	size_t shmem;
	void *stream;
	int pushed;
} t_cfg;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CUresult init_rc;

static void do_init(void)
{
	init_rc = cuInit(0);
}

/* Runtime codes equal the driver's for every code both have, except the
 * few the runtime names differently. */
static cudaError_t from_cu(CUresult rc)
{
	switch (rc) {
	case CUDA_SUCCESS: return cudaSuccess;
	case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
	case CUDA_ERROR_INVALID_CONTEXT: return 709; /* cudaErrorContextIsDestroyed */
	case CUDA_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
	default: return (cudaError_t)rc;
	}
}

/* Every entry point ends through here: the error is also the thread's last one. */
static cudaError_t ret(cudaError_t e)
{
	if (e != cudaSuccess)
		t_err = e;
	return e;
}

#define RET_CU(call) return ret(from_cu(call))

/* The fault switch and the stats file: a counted, possibly failed entry. */
#define ENTER(nm) \
	static struct fake_api api_ = { .name = nm }; \
	do { \
		int inj_ = fake_enter(&api_); \
		if (inj_) \
			return ret((cudaError_t)inj_); \
	} while (0)

static cudaError_t lazy_init(void)
{
	pthread_once(&init_once, do_init);
	if (init_rc == CUDA_ERROR_NO_DEVICE)
		return cudaErrorNoDevice;
	return init_rc ? cudaErrorInsufficientDriver : cudaSuccess;
}

static int device_count(void)
{
	int n = 0;
	if (lazy_init() != cudaSuccess || cuDeviceGetCount(&n) != CUDA_SUCCESS)
		return 0;
	return n;
}

/* The primary context of @dev, current on this thread. */
static cudaError_t use_device(int dev)
{
	cudaError_t e = lazy_init();
	if (e)
		return e;
	if (dev < 0 || dev >= device_count())
		return cudaErrorInvalidDevice;
	CUcontext c = NULL;
	CUresult rc = cuDevicePrimaryCtxRetain(&c, dev);
	if (rc == CUDA_SUCCESS)
		rc = cuCtxSetCurrent(c);
	return from_cu(rc);
}

/* A context current on this thread: the one the program made current
 * (driver API or earlier runtime calls), else the current device's primary. */
static cudaError_t need_ctx(void)
{
	cudaError_t e = lazy_init();
	if (e)
		return e;
	CUcontext c = NULL;
	if (cuCtxGetCurrent(&c) == CUDA_SUCCESS && c)
		return cudaSuccess;
	return use_device(t_dev < 0 ? 0 : t_dev);
}

#define NEED_CTX() do { cudaError_t e_ = need_ctx(); if (e_) return ret(e_); } while (0)

static int current_device(void)
{
	CUcontext c = NULL;
	CUdevice d;
	if (cuCtxGetCurrent(&c) == CUDA_SUCCESS && c && cuCtxGetDevice(&d) == CUDA_SUCCESS)
		return d;
	return t_dev < 0 ? 0 : t_dev;
}

/* ---- errors --------------------------------------------------------- */
FAKE_EXPORT cudaError_t cudaGetLastError(void)
{
	cudaError_t e = t_err;
	t_err = cudaSuccess;
	return e;
}

FAKE_EXPORT cudaError_t cudaPeekAtLastError(void)
{
	return t_err;
}

/* ---- versions and devices ------------------------------------------------ */
FAKE_EXPORT cudaError_t cudaDriverGetVersion(int *v)
{
	ENTER("cudaDriverGetVersion");
	if (!v)
		return ret(cudaErrorInvalidValue);
	*v = 0;
	if (lazy_init() != cudaSuccess && init_rc != CUDA_ERROR_NO_DEVICE)
		return cudaSuccess; /* no driver: 0, as documented */
	RET_CU(cuDriverGetVersion(v));
}

FAKE_EXPORT cudaError_t cudaRuntimeGetVersion(int *v)
{
	ENTER("cudaRuntimeGetVersion");
	if (!v)
		return ret(cudaErrorInvalidValue);
	*v = RUNTIME_VERSION;
	return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaGetDeviceCount(int *n)
{
	ENTER("cudaGetDeviceCount");
	if (!n)
		return ret(cudaErrorInvalidValue);
	*n = 0;
	cudaError_t e = lazy_init();
	if (e)
		return ret(e);
	RET_CU(cuDeviceGetCount(n));
}

FAKE_EXPORT cudaError_t cudaSetDevice(int dev)
{
	ENTER("cudaSetDevice");
	cudaError_t e = use_device(dev);
	if (e)
		return ret(e);
	t_dev = dev;
	return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaGetDevice(int *dev)
{
	ENTER("cudaGetDevice");
	if (!dev)
		return ret(cudaErrorInvalidValue);
	cudaError_t e = lazy_init();
	if (e)
		return ret(e);
	*dev = current_device();
	return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaInitDevice(int dev, unsigned dflags, unsigned flags)
{
	ENTER("cudaInitDevice");
	(void)dflags;
	(void)flags;
	return ret(use_device(dev));
}

FAKE_EXPORT cudaError_t cudaSetDeviceFlags(unsigned flags)
{
	ENTER("cudaSetDeviceFlags");
	(void)flags;
	return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaGetDeviceFlags(unsigned *flags)
{
	ENTER("cudaGetDeviceFlags");
	if (!flags)
		return ret(cudaErrorInvalidValue);
	*flags = 0;
	return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaDeviceGetAttribute(int *v, int attr, int dev)
{
	ENTER("cudaDeviceGetAttribute");
	cudaError_t e = lazy_init();
	if (e)
		return ret(e);
	/* cudaDeviceAttr values are the driver's CUdevice_attribute values */
	RET_CU(cuDeviceGetAttribute(v, attr, dev));
}

FAKE_EXPORT cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int dev)
{
	ENTER("cudaDeviceGetPCIBusId");
	cudaError_t e = lazy_init();
	if (e)
		return ret(e);
	RET_CU(cuDeviceGetPCIBusId(id, len, dev));
}

FAKE_EXPORT cudaError_t cudaDeviceGetByPCIBusId(int *dev, const char *id)
{
	ENTER("cudaDeviceGetByPCIBusId");
	cudaError_t e = lazy_init();
	if (e)
		return ret(e);
	RET_CU(cuDeviceGetByPCIBusId(dev, id));
}

static int attr(int a, int dev)
{
	int v = 0;
	cuDeviceGetAttribute(&v, a, dev);
	return v;
}

static cudaError_t fill_props(struct nrr_cudaDeviceProp *p, int dev)
{
	if (!p)
		return cudaErrorInvalidValue;
	cudaError_t e = lazy_init();
	if (e)
		return e;
	if (dev < 0 || dev >= device_count())
		return cudaErrorInvalidDevice;
	memset(p, 0, sizeof(*p));
	cuDeviceGetName(p->name, sizeof(p->name), dev);
	cuDeviceGetUuid_v2(&p->uuid, dev);
	cuDeviceTotalMem_v2(&p->totalGlobalMem, dev);
	/* CUdevice_attribute numbers, from the driver API documentation */
	p->sharedMemPerBlock = (size_t)attr(8, dev);
	p->regsPerBlock = attr(12, dev);
	p->warpSize = attr(10, dev);
	p->memPitch = (size_t)attr(11, dev);
	p->maxThreadsPerBlock = attr(1, dev);
	for (int i = 0; i < 3; i++) {
		p->maxThreadsDim[i] = attr(2 + i, dev);
		p->maxGridSize[i] = attr(5 + i, dev);
	}
	p->totalConstMem = (size_t)attr(9, dev);
	p->major = attr(75, dev);
	p->minor = attr(76, dev);
	p->textureAlignment = (size_t)attr(14, dev);
	p->texturePitchAlignment = (size_t)attr(51, dev);
	p->multiProcessorCount = attr(16, dev);
	p->integrated = attr(18, dev);
	p->canMapHostMemory = attr(19, dev);
#if NRR_CUDART_MAJOR == 12
	p->clockRate = attr(13, dev);
	p->deviceOverlap = attr(15, dev);
	p->kernelExecTimeoutEnabled = attr(17, dev);
	p->computeMode = attr(20, dev);
	p->memoryClockRate = attr(36, dev);
	p->singleToDoublePrecisionPerfRatio = attr(87, dev);
	p->cooperativeMultiDeviceLaunch = attr(96, dev);
#endif
	p->surfaceAlignment = (size_t)attr(30, dev);
	p->concurrentKernels = attr(31, dev);
	p->ECCEnabled = attr(32, dev);
	p->pciBusID = attr(33, dev);
	p->pciDeviceID = attr(34, dev);
	p->pciDomainID = attr(50, dev);
	p->tccDriver = attr(35, dev);
	p->asyncEngineCount = attr(40, dev);
	p->unifiedAddressing = attr(41, dev);
	p->memoryBusWidth = attr(37, dev);
	p->l2CacheSize = attr(38, dev);
	p->persistingL2CacheMaxSize = attr(108, dev);
	p->maxThreadsPerMultiProcessor = attr(39, dev);
	p->streamPrioritiesSupported = attr(78, dev);
	p->globalL1CacheSupported = attr(79, dev);
	p->localL1CacheSupported = attr(80, dev);
	p->sharedMemPerMultiprocessor = (size_t)attr(81, dev);
	p->regsPerMultiprocessor = attr(82, dev);
	p->managedMemory = attr(83, dev);
	p->isMultiGpuBoard = attr(84, dev);
	p->multiGpuBoardGroupID = attr(85, dev);
	p->hostNativeAtomicSupported = attr(86, dev);
	p->pageableMemoryAccess = attr(88, dev);
	p->concurrentManagedAccess = attr(89, dev);
	p->computePreemptionSupported = attr(90, dev);
	p->canUseHostPointerForRegisteredMem = attr(91, dev);
	p->cooperativeLaunch = attr(95, dev);
	p->sharedMemPerBlockOptin = (size_t)attr(97, dev);
	p->pageableMemoryAccessUsesHostPageTables = attr(100, dev);
	p->directManagedMemAccessFromHost = attr(101, dev);
	p->maxBlocksPerMultiProcessor = attr(106, dev);
	p->accessPolicyMaxWindowSize = attr(109, dev);
	p->reservedSharedMemPerBlock = (size_t)attr(111, dev);
	p->hostRegisterSupported = attr(99, dev);
	p->memoryPoolsSupported = attr(115, dev);
	p->gpuDirectRDMASupported = attr(116, dev);
	p->ipcEventSupported = attr(125, dev);
	p->clusterLaunch = attr(120, dev);
	p->maxTexture1D = 131072;
	p->maxTexture2D[0] = p->maxTexture2D[1] = 131072;
	p->maxTexture3D[0] = p->maxTexture3D[1] = p->maxTexture3D[2] = 16384;
	p->hostNumaId = -1;
	p->deviceNumaId = -1;
	return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaGetDeviceProperties_v2(struct nrr_cudaDeviceProp *p, int dev)
{
	ENTER("cudaGetDeviceProperties");
	return ret(fill_props(p, dev));
}

FAKE_EXPORT cudaError_t cudaGetDeviceProperties(struct nrr_cudaDeviceProp *p, int dev)
{
	ENTER("cudaGetDeviceProperties");
	return ret(fill_props(p, dev));
}

FAKE_EXPORT cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer)
{
	ENTER("cudaDeviceCanAccessPeer");
	cudaError_t e = lazy_init();
	if (e)
		return ret(e);
	RET_CU(cuDeviceCanAccessPeer(can, dev, peer));
}

static cudaError_t peer_ctx(int peer, CUcontext *pc)
{
	if (peer < 0 || peer >= device_count())
		return cudaErrorInvalidDevice;
	return from_cu(cuDevicePrimaryCtxRetain(pc, peer));
}

FAKE_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned flags)
{
	ENTER("cudaDeviceEnablePeerAccess");
	NEED_CTX();
	CUcontext pc = NULL;
	cudaError_t e = peer_ctx(peer, &pc);
	if (e)
		return ret(e);
	RET_CU(cuCtxEnablePeerAccess(pc, flags));
}

FAKE_EXPORT cudaError_t cudaDeviceDisablePeerAccess(int peer)
{
	ENTER("cudaDeviceDisablePeerAccess");
	NEED_CTX();
	CUcontext pc = NULL;
	cudaError_t e = peer_ctx(peer, &pc);
	if (e)
		return ret(e);
	RET_CU(cuCtxDisablePeerAccess(pc));
}

FAKE_EXPORT cudaError_t cudaDeviceSetLimit(int limit, size_t v)
{
	ENTER("cudaDeviceSetLimit");
	NEED_CTX();
	RET_CU(cuCtxSetLimit(limit, v)); /* cudaLimit values are the driver's CUlimit values */
}

FAKE_EXPORT cudaError_t cudaDeviceGetLimit(size_t *v, int limit)
{
	ENTER("cudaDeviceGetLimit");
	NEED_CTX();
	RET_CU(cuCtxGetLimit(v, limit));
}

FAKE_EXPORT cudaError_t cudaDeviceSynchronize(void)
{
	ENTER("cudaDeviceSynchronize");
	NEED_CTX();
	RET_CU(cuCtxSynchronize());
}

FAKE_EXPORT cudaError_t cudaDeviceReset(void)
{
	ENTER("cudaDeviceReset");
	cudaError_t e = lazy_init();
	if (e)
		return ret(e);
	RET_CU(cuDevicePrimaryCtxReset_v2(current_device()));
}

FAKE_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
	ENTER("cudaDeviceGetStreamPriorityRange");
	NEED_CTX();
	RET_CU(cuCtxGetStreamPriorityRange(least, greatest));
}

/* ---- stream-ordered memory pools: the driver's (cudaMemPoolProps and the
 * attributes are the driver's types) */
FAKE_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(void **pool, int dev)
{
	ENTER("cudaDeviceGetDefaultMemPool");
	cudaError_t e = lazy_init();
	if (e)
		return ret(e);
	RET_CU(cuDeviceGetDefaultMemPool(pool, dev));
}

FAKE_EXPORT cudaError_t cudaDeviceGetMemPool(void **pool, int dev)
{
	ENTER("cudaDeviceGetMemPool");
	cudaError_t e = lazy_init();
	if (e)
		return ret(e);
	RET_CU(cuDeviceGetMemPool(pool, dev));
}

FAKE_EXPORT cudaError_t cudaDeviceSetMemPool(int dev, void *pool)
{
	ENTER("cudaDeviceSetMemPool");
	cudaError_t e = lazy_init();
	if (e)
		return ret(e);
	RET_CU(cuDeviceSetMemPool(dev, pool));
}

FAKE_EXPORT cudaError_t cudaMemPoolCreate(void **pool, const void *props)
{
	ENTER("cudaMemPoolCreate");
	cudaError_t e = lazy_init();
	if (e)
		return ret(e);
	RET_CU(cuMemPoolCreate(pool, props));
}

FAKE_EXPORT cudaError_t cudaMemPoolDestroy(void *pool)
{
	ENTER("cudaMemPoolDestroy");
	RET_CU(cuMemPoolDestroy(pool));
}

FAKE_EXPORT cudaError_t cudaMemPoolSetAttribute(void *pool, int attr, void *v)
{
	ENTER("cudaMemPoolSetAttribute");
	RET_CU(cuMemPoolSetAttribute(pool, attr, v));
}

FAKE_EXPORT cudaError_t cudaMemPoolGetAttribute(void *pool, int attr, void *v)
{
	ENTER("cudaMemPoolGetAttribute");
	RET_CU(cuMemPoolGetAttribute(pool, attr, v));
}

FAKE_EXPORT cudaError_t cudaMallocFromPoolAsync(void **p, size_t n, void *pool, cudaStream_t s)
{
	ENTER("cudaMallocFromPoolAsync");
	if (!p)
		return ret(cudaErrorInvalidValue);
	NEED_CTX();
	CUdeviceptr d = 0;
	CUresult rc = cuMemAllocFromPoolAsync(&d, n, pool, s);
	if (rc == CUDA_ERROR_OUT_OF_MEMORY)
		return ret(cudaErrorMemoryAllocation);
	*p = (void *)(uintptr_t)d;
	RET_CU(rc);
}

/* ---- memory ----------------------------------------------------------- */
FAKE_EXPORT cudaError_t cudaMalloc(void **p, size_t n)
{
	ENTER("cudaMalloc");
	if (!p)
		return ret(cudaErrorInvalidValue);
	*p = NULL;
	NEED_CTX();
	if (n == 0)
		return cudaSuccess;
	CUdeviceptr d = 0;
	CUresult rc = cuMemAlloc_v2(&d, n);
	if (rc == CUDA_ERROR_OUT_OF_MEMORY)
		return ret(cudaErrorMemoryAllocation);
	*p = (void *)(uintptr_t)d;
	RET_CU(rc);
}

FAKE_EXPORT cudaError_t cudaMallocManaged(void **p, size_t n, unsigned flags)
{
	ENTER("cudaMallocManaged");
	if (!p)
		return ret(cudaErrorInvalidValue);
	NEED_CTX();
	CUdeviceptr d = 0;
	CUresult rc = cuMemAllocManaged(&d, n, flags ? flags : 1 /* cudaMemAttachGlobal */);
	*p = (void *)(uintptr_t)d;
	RET_CU(rc);
}

FAKE_EXPORT cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s)
{
	ENTER("cudaMallocAsync");
	if (!p)
		return ret(cudaErrorInvalidValue);
	NEED_CTX();
	CUdeviceptr d = 0;
	CUresult rc = cuMemAllocAsync(&d, n, s);
	*p = (void *)(uintptr_t)d;
	RET_CU(rc);
}

FAKE_EXPORT cudaError_t cudaFree(void *p)
{
	ENTER("cudaFree");
	NEED_CTX(); /* cudaFree(NULL) is the idiom that initializes the context */
	if (!p)
		return cudaSuccess;
	CUresult rc = cuMemFree_v2((CUdeviceptr)(uintptr_t)p);
	return ret(rc == CUDA_ERROR_INVALID_VALUE ? cudaErrorInvalidDevicePointer : from_cu(rc));
}

FAKE_EXPORT cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
	ENTER("cudaFreeAsync");
	NEED_CTX();
	RET_CU(cuMemFreeAsync((CUdeviceptr)(uintptr_t)p, s));
}

FAKE_EXPORT cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags)
{
	ENTER("cudaHostAlloc");
	if (!p)
		return ret(cudaErrorInvalidValue);
	NEED_CTX();
	/* cudaHostAlloc{Portable,Mapped,WriteCombined} = CU_MEMHOSTALLOC_* bits */
	CUresult rc = cuMemHostAlloc(p, n, flags);
	return ret(rc == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation : from_cu(rc));
}

FAKE_EXPORT cudaError_t cudaMallocHost(void **p, size_t n)
{
	ENTER("cudaMallocHost");
	if (!p)
		return ret(cudaErrorInvalidValue);
	NEED_CTX();
	CUresult rc = cuMemHostAlloc(p, n, 0);
	return ret(rc == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation : from_cu(rc));
}

FAKE_EXPORT cudaError_t cudaFreeHost(void *p)
{
	ENTER("cudaFreeHost");
	NEED_CTX();
	if (!p)
		return cudaSuccess;
	RET_CU(cuMemFreeHost(p));
}

FAKE_EXPORT cudaError_t cudaHostRegister(void *p, size_t n, unsigned flags)
{
	ENTER("cudaHostRegister");
	NEED_CTX();
	RET_CU(cuMemHostRegister_v2(p, n, flags));
}

FAKE_EXPORT cudaError_t cudaHostUnregister(void *p)
{
	ENTER("cudaHostUnregister");
	NEED_CTX();
	RET_CU(cuMemHostUnregister(p));
}

FAKE_EXPORT cudaError_t cudaHostGetDevicePointer(void **d, void *p, unsigned flags)
{
	ENTER("cudaHostGetDevicePointer");
	if (!d)
		return ret(cudaErrorInvalidValue);
	NEED_CTX();
	CUdeviceptr dp = 0;
	CUresult rc = cuMemHostGetDevicePointer_v2(&dp, p, flags);
	*d = (void *)(uintptr_t)dp;
	RET_CU(rc);
}

FAKE_EXPORT cudaError_t cudaMemGetInfo(size_t *free_, size_t *total)
{
	ENTER("cudaMemGetInfo");
	NEED_CTX();
	RET_CU(cuMemGetInfo_v2(free_, total));
}

FAKE_EXPORT cudaError_t cudaPointerGetAttributes(struct nrr_cudaPointerAttributes *a, const void *p)
{
	ENTER("cudaPointerGetAttributes");
	if (!a)
		return ret(cudaErrorInvalidValue);
	cudaError_t e = lazy_init();
	if (e)
		return ret(e);
	/* MEMORY_TYPE, DEVICE_ORDINAL, DEVICE_POINTER, HOST_POINTER, IS_MANAGED */
	int attrs[] = { 2, 9, 3, 4, 8 };
	unsigned mtype = 0;
	int ordinal = -2, managed = 0;
	void *dp = NULL, *hp = NULL;
	void *data[] = { &mtype, &ordinal, &dp, &hp, &managed };
	CUresult rc = cuPointerGetAttributes(5, attrs, data, (CUdeviceptr)(uintptr_t)p);
	if (rc)
		RET_CU(rc);
	memset(a, 0, sizeof(*a));
	/* cudaMemoryType: Unregistered 0, Host 1, Device 2, Managed 3 */
	a->type = managed ? 3 : mtype == CU_MEMORYTYPE_HOST ? 1 : mtype == CU_MEMORYTYPE_DEVICE ? 2 : 0;
	a->device = ordinal >= 0 ? ordinal : (a->type ? current_device() : -2);
	a->devicePointer = a->type ? (dp ? dp : (void *)p) : NULL;
	a->hostPointer = a->type == 1 || a->type == 3 ? (hp ? hp : (void *)p) : NULL;
	return cudaSuccess;
}

/* Device pointers of the fake are host addresses: every copy direction is
 * a unified-address copy. cudaMemcpyKind: 0..4 (4 = default). */
FAKE_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	ENTER("cudaMemcpy");
	if (kind < 0 || kind > 4)
		return ret(cudaErrorInvalidMemcpyDirection);
	NEED_CTX();
	RET_CU(cuMemcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n));
}

FAKE_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, cudaStream_t s)
{
	ENTER("cudaMemcpyAsync");
	if (kind < 0 || kind > 4)
		return ret(cudaErrorInvalidMemcpyDirection);
	NEED_CTX();
	RET_CU(cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n, s));
}

FAKE_EXPORT cudaError_t cudaMemcpyPeer(void *dst, int ddev, const void *src, int sdev, size_t n)
{
	ENTER("cudaMemcpyPeer");
	(void)ddev;
	(void)sdev;
	NEED_CTX();
	RET_CU(cuMemcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n));
}

FAKE_EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int ddev, const void *src, int sdev, size_t n,
					    cudaStream_t s)
{
	ENTER("cudaMemcpyPeerAsync");
	(void)ddev;
	(void)sdev;
	NEED_CTX();
	RET_CU(cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n, s));
}

FAKE_EXPORT cudaError_t cudaMemset(void *p, int v, size_t n)
{
	ENTER("cudaMemset");
	NEED_CTX();
	RET_CU(cuMemsetD8_v2((CUdeviceptr)(uintptr_t)p, (unsigned char)v, n));
}

FAKE_EXPORT cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
	ENTER("cudaMemsetAsync");
	NEED_CTX();
	RET_CU(cuMemsetD8Async((CUdeviceptr)(uintptr_t)p, (unsigned char)v, n, s));
}

/* ---- IPC (handles by value, 64 bytes) ------------------------------------ */
FAKE_EXPORT cudaError_t cudaIpcGetMemHandle(nrr_cudaIpcHandle *h, void *p)
{
	ENTER("cudaIpcGetMemHandle");
	if (!h)
		return ret(cudaErrorInvalidValue);
	NEED_CTX();
	RET_CU(cuIpcGetMemHandle(h, (CUdeviceptr)(uintptr_t)p));
}

FAKE_EXPORT cudaError_t cudaIpcOpenMemHandle(void **p, nrr_cudaIpcHandle h, unsigned flags)
{
	ENTER("cudaIpcOpenMemHandle");
	if (!p)
		return ret(cudaErrorInvalidValue);
	NEED_CTX();
	CUdeviceptr d = 0;
	CUresult rc = cuIpcOpenMemHandle_v2(&d, h, flags); /* cudaIpcMemLazyEnablePeerAccess = 1, as the driver's */
	*p = (void *)(uintptr_t)d;
	RET_CU(rc);
}

FAKE_EXPORT cudaError_t cudaIpcCloseMemHandle(void *p)
{
	ENTER("cudaIpcCloseMemHandle");
	NEED_CTX();
	RET_CU(cuIpcCloseMemHandle((CUdeviceptr)(uintptr_t)p));
}

FAKE_EXPORT cudaError_t cudaIpcGetEventHandle(nrr_cudaIpcHandle *h, cudaEvent_t e)
{
	ENTER("cudaIpcGetEventHandle");
	NEED_CTX();
	RET_CU(cuIpcGetEventHandle(h, e));
}

FAKE_EXPORT cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *e, nrr_cudaIpcHandle h)
{
	ENTER("cudaIpcOpenEventHandle");
	NEED_CTX();
	RET_CU(cuIpcOpenEventHandle(e, h));
}

/* ---- streams and events ---------------------------------------------- */
FAKE_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *s)
{
	ENTER("cudaStreamCreate");
	NEED_CTX();
	RET_CU(cuStreamCreate(s, 0));
}

FAKE_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
	ENTER("cudaStreamCreateWithFlags");
	NEED_CTX();
	RET_CU(cuStreamCreate(s, flags)); /* cudaStreamNonBlocking = CU_STREAM_NON_BLOCKING */
}

FAKE_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned flags, int prio)
{
	ENTER("cudaStreamCreateWithPriority");
	NEED_CTX();
	RET_CU(cuStreamCreateWithPriority(s, flags, prio));
}

FAKE_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	ENTER("cudaStreamDestroy");
	NEED_CTX();
	RET_CU(cuStreamDestroy_v2(s));
}

FAKE_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	ENTER("cudaStreamSynchronize");
	NEED_CTX();
	RET_CU(cuStreamSynchronize(s));
}

FAKE_EXPORT cudaError_t cudaStreamQuery(cudaStream_t s)
{
	ENTER("cudaStreamQuery");
	NEED_CTX();
	CUresult rc = cuStreamQuery(s);
	return rc == CUDA_ERROR_NOT_READY ? 600 : ret(from_cu(rc)); /* not ready is no error */
}

FAKE_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
	ENTER("cudaStreamWaitEvent");
	NEED_CTX();
	RET_CU(cuStreamWaitEvent(s, e, flags));
}

FAKE_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t s, int *prio)
{
	ENTER("cudaStreamGetPriority");
	NEED_CTX();
	RET_CU(cuStreamGetPriority(s, prio));
}

FAKE_EXPORT cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned *flags)
{
	ENTER("cudaStreamGetFlags");
	NEED_CTX();
	RET_CU(cuStreamGetFlags(s, flags));
}

FAKE_EXPORT cudaError_t cudaStreamGetId(cudaStream_t s, unsigned long long *id)
{
	ENTER("cudaStreamGetId");
	NEED_CTX();
	RET_CU(cuStreamGetId(s, id));
}

/* cudaStreamCaptureStatusNone: no stream ever captures here */
/* A stream the runtime takes, checked as the driver checks it. */
static cudaError_t stream_ok(cudaStream_t s)
{
	int st;
	return from_cu(cuStreamIsCapturing(s, &st));
}

FAKE_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t s, int *status)
{
	ENTER("cudaStreamIsCapturing");
	if (stream_ok(s))
		return ret(stream_ok(s));
	if (!status)
		return ret(cudaErrorInvalidValue);
	*status = 0;
	return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, int *status, unsigned long long *id)
{
	ENTER("cudaStreamGetCaptureInfo");
	if (stream_ok(s))
		return ret(stream_ok(s));
	if (!status)
		return ret(cudaErrorInvalidValue);
	*status = 0;
	if (id)
		*id = 0;
	return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaStreamGetCaptureInfo_v2(cudaStream_t s, int *status, unsigned long long *id,
						    void **graph, const void **deps, size_t *ndeps)
{
	ENTER("cudaStreamGetCaptureInfo");
	if (stream_ok(s))
		return ret(stream_ok(s));
	if (!status)
		return ret(cudaErrorInvalidValue);
	*status = 0;
	if (id)
		*id = 0;
	if (graph)
		*graph = NULL;
	if (deps)
		*deps = NULL;
	if (ndeps)
		*ndeps = 0;
	return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaStreamGetCaptureInfo_v3(cudaStream_t s, int *status, unsigned long long *id,
						    void **graph, const void **deps, const void **edges,
						    size_t *ndeps)
{
	if (edges)
		*edges = NULL;
	return cudaStreamGetCaptureInfo_v2(s, status, id, graph, deps, ndeps);
}

/* Only a capturing stream has dependencies to update. */
FAKE_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t s, void *deps, size_t n, unsigned flags)
{
	ENTER("cudaStreamUpdateCaptureDependencies");
	if (stream_ok(s))
		return ret(stream_ok(s));
	(void)deps;
	(void)n;
	(void)flags;
	return ret(cudaErrorIllegalState);
}

FAKE_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies_v2(cudaStream_t s, void *deps, const void *edges,
							       size_t n, unsigned flags)
{
	(void)edges;
	return cudaStreamUpdateCaptureDependencies(s, deps, n, flags);
}

FAKE_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(int *mode)
{
	ENTER("cudaThreadExchangeStreamCaptureMode");
	if (!mode)
		return ret(cudaErrorInvalidValue);
	int old = t_capture_mode;
	t_capture_mode = *mode;
	*mode = old;
	return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaEventCreate(cudaEvent_t *e)
{
	ENTER("cudaEventCreate");
	NEED_CTX();
	RET_CU(cuEventCreate(e, 0));
}

FAKE_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
	ENTER("cudaEventCreateWithFlags");
	NEED_CTX();
	RET_CU(cuEventCreate(e, flags)); /* cudaEvent* flags = CU_EVENT_* bits */
}

FAKE_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t e)
{
	ENTER("cudaEventDestroy");
	NEED_CTX();
	RET_CU(cuEventDestroy_v2(e));
}

FAKE_EXPORT cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
	ENTER("cudaEventRecord");
	NEED_CTX();
	RET_CU(cuEventRecord(e, s));
}

FAKE_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned flags)
{
	ENTER("cudaEventRecordWithFlags");
	NEED_CTX();
	RET_CU(cuEventRecordWithFlags(e, s, flags));
}

FAKE_EXPORT cudaError_t cudaEventQuery(cudaEvent_t e)
{
	ENTER("cudaEventQuery");
	NEED_CTX();
	CUresult rc = cuEventQuery(e);
	return rc == CUDA_ERROR_NOT_READY ? 600 : ret(from_cu(rc));
}

FAKE_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
	ENTER("cudaEventSynchronize");
	NEED_CTX();
	RET_CU(cuEventSynchronize(e));
}

FAKE_EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
	ENTER("cudaEventElapsedTime");
	NEED_CTX();
	RET_CU(cuEventElapsedTime(ms, a, b));
}

FAKE_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t s, void (*fn)(void *), void *arg)
{
	ENTER("cudaLaunchHostFunc");
	NEED_CTX();
	RET_CU(cuLaunchHostFunc(s, fn, arg));
}

/* ---- kernels -------------------------------------------------------------- */
/* A fat binary registered by a program's (or NCCL's) constructors: its
 * module is loaded into the driver on first use. */
struct fatbin {
	void *slot;                     /* what the handle points at (void **) */
	const void *image;
	CUmodule mod;
};

struct kfunc {
	const void *host;               /* the host stub, the runtime's key */
	struct fatbin *fb;
	char *name;                     /* device (mangled) name */
	CUfunction f;
	struct kfunc *next;
};

struct kvar {
	const void *host;
	struct fatbin *fb;
	char *name;
	struct kvar *next;
};

#define KBUCKETS 4096
static struct kfunc *kfuncs[KBUCKETS];
static struct kvar *kvars[64];
static pthread_mutex_t klock = PTHREAD_MUTEX_INITIALIZER;

static unsigned khash(const void *p, unsigned n)
{
	uintptr_t v = (uintptr_t)p;
	v ^= v >> 17;
	v *= 0x9E3779B97F4A7C15ull;
	return (unsigned)(v >> 40) % n;
}

/* __fatBinC_Wrapper_t: magic, version, data, filename_or_fatbins */
struct fatbin_wrapper {
	int magic;
	int version;
	const void *data;
	void *extra;
};

FAKE_EXPORT void **__cudaRegisterFatBinary(void *fat)
{
	struct fatbin *fb = calloc(1, sizeof(*fb));
	if (!fb) {
		fake_log("cannot register a fat binary: out of memory");
		abort();
	}
	const struct fatbin_wrapper *w = fat;
	fb->image = w && w->data ? w->data : fat;
	fb->slot = fb;
	return &fb->slot;
}

FAKE_EXPORT void __cudaRegisterFatBinaryEnd(void **h)
{
	(void)h;
}

FAKE_EXPORT void __cudaUnregisterFatBinary(void **h)
{
	(void)h; /* kept: stubs may be called from other destructors */
}

FAKE_EXPORT char __cudaInitModule(void **h)
{
	(void)h;
	return 1;
}

static struct fatbin *fb_of(void **h)
{
	return h ? (struct fatbin *)*h : NULL;
}

FAKE_EXPORT void __cudaRegisterFunction(void **h, const char *host, char *dev, const char *name, int tlimit,
					void *tid, void *bid, void *bdim, void *gdim, int *wsize)
{
	(void)dev;
	(void)tlimit;
	(void)tid;
	(void)bid;
	(void)bdim;
	(void)gdim;
	(void)wsize;
	struct kfunc *k = calloc(1, sizeof(*k));
	if (!k || !(k->name = strdup(name ? name : ""))) {
		fake_log("cannot register kernel %s: out of memory", name ? name : "?");
		abort();
	}
	k->host = host;
	k->fb = fb_of(h);
	unsigned b = khash(host, KBUCKETS);
	pthread_mutex_lock(&klock);
	k->next = kfuncs[b];
	kfuncs[b] = k;
	pthread_mutex_unlock(&klock);
}

FAKE_EXPORT void __cudaRegisterVar(void **h, char *host, char *dev, const char *name, int ext, size_t size,
				   int constant, int global)
{
	(void)dev;
	(void)ext;
	(void)size;
	(void)constant;
	(void)global;
	struct kvar *v = calloc(1, sizeof(*v));
	if (!v || !(v->name = strdup(name ? name : ""))) {
		fake_log("cannot register variable %s: out of memory", name ? name : "?");
		abort();
	}
	v->host = host;
	v->fb = fb_of(h);
	unsigned b = khash(host, 64);
	pthread_mutex_lock(&klock);
	v->next = kvars[b];
	kvars[b] = v;
	pthread_mutex_unlock(&klock);
}

FAKE_EXPORT void __cudaRegisterManagedVar(void **h, void **host, char *dev, const char *name, int ext,
					  size_t size, int constant, int global)
{
	__cudaRegisterVar(h, (char *)host, dev, name, ext, size, constant, global);
}

/* Load @fb's module into the driver once (with klock held). */
static CUresult fb_module(struct fatbin *fb)
{
	if (!fb->mod)
		return cuModuleLoadData(&fb->mod, fb->image);
	return CUDA_SUCCESS;
}

/* The driver function of a host stub. */
static cudaError_t kfunc_of(const void *host, CUfunction *out)
{
	if (!host)
		return cudaErrorInvalidDeviceFunction;
	cudaError_t e = need_ctx();
	if (e)
		return e;
	struct kfunc *k;
	CUresult rc = CUDA_SUCCESS;
	pthread_mutex_lock(&klock);
	for (k = kfuncs[khash(host, KBUCKETS)]; k && k->host != host; k = k->next)
		;
	if (k && !k->f && k->fb) {
		rc = fb_module(k->fb);
		if (rc == CUDA_SUCCESS)
			rc = cuModuleGetFunction(&k->f, k->fb->mod, k->name);
	}
	CUfunction f = k ? k->f : NULL;
	pthread_mutex_unlock(&klock);
	if (!k)
		return cudaErrorInvalidDeviceFunction;
	if (rc)
		return from_cu(rc);
	*out = f;
	return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaGetFuncBySymbol(cudaFunction_t *f, const void *sym)
{
	ENTER("cudaGetFuncBySymbol");
	if (!f)
		return ret(cudaErrorInvalidValue);
	return ret(kfunc_of(sym, f));
}

FAKE_EXPORT cudaError_t cudaFuncGetAttributes(struct nrr_cudaFuncAttributes *a, const void *fn)
{
	ENTER("cudaFuncGetAttributes");
	if (!a)
		return ret(cudaErrorInvalidValue);
	CUfunction f;
	cudaError_t e = kfunc_of(fn, &f);
	if (e)
		return ret(e);
	memset(a, 0, sizeof(*a));
	int v = 0;
	/* CUfunction_attribute numbers */
	cuFuncGetAttribute(&v, 0, f); a->maxThreadsPerBlock = v;
	cuFuncGetAttribute(&v, 1, f); a->sharedSizeBytes = (size_t)v;
	cuFuncGetAttribute(&v, 2, f); a->constSizeBytes = (size_t)v;
	cuFuncGetAttribute(&v, 3, f); a->localSizeBytes = (size_t)v;
	cuFuncGetAttribute(&v, 4, f); a->numRegs = v;
	cuFuncGetAttribute(&v, 5, f); a->ptxVersion = v;
	cuFuncGetAttribute(&v, 6, f); a->binaryVersion = v;
	cuFuncGetAttribute(&v, 7, f); a->cacheModeCA = v;
	cuFuncGetAttribute(&v, 8, f); a->maxDynamicSharedSizeBytes = v;
	cuFuncGetAttribute(&v, 9, f); a->preferredShmemCarveout = v;
	return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaFuncSetAttribute(const void *fn, int attr_, int value)
{
	ENTER("cudaFuncSetAttribute");
	CUfunction f;
	cudaError_t e = kfunc_of(fn, &f);
	if (e)
		return ret(e);
	RET_CU(cuFuncSetAttribute(f, attr_, value)); /* cudaFuncAttribute = CUfunction_attribute */
}

FAKE_EXPORT cudaError_t cudaFuncSetCacheConfig(const void *fn, int cfg)
{
	ENTER("cudaFuncSetCacheConfig");
	CUfunction f;
	cudaError_t e = kfunc_of(fn, &f);
	if (e)
		return ret(e);
	RET_CU(cuFuncSetCacheConfig(f, cfg));
}

FAKE_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *fn, int block,
									size_t shmem)
{
	ENTER("cudaOccupancyMaxActiveBlocksPerMultiprocessor");
	CUfunction f;
	cudaError_t e = kfunc_of(fn, &f);
	if (e)
		return ret(e);
	RET_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(n, f, block, shmem));
}

FAKE_EXPORT cudaError_t cudaLaunchKernel(const void *fn, nrr_dim3 grid, nrr_dim3 block, void **args,
					 size_t shmem, cudaStream_t s)
{
	ENTER("cudaLaunchKernel");
	CUfunction f;
	cudaError_t e = kfunc_of(fn, &f);
	if (e)
		return ret(e);
	RET_CU(cuLaunchKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, (unsigned)shmem, s, args,
			      NULL));
}

FAKE_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void *fn, nrr_dim3 grid, nrr_dim3 block, void **args,
						    size_t shmem, cudaStream_t s)
{
	ENTER("cudaLaunchCooperativeKernel");
	CUfunction f;
	cudaError_t e = kfunc_of(fn, &f);
	if (e)
		return ret(e);
	RET_CU(cuLaunchCooperativeKernel(f, grid.x, grid.y, grid.z, block.x, block.y, block.z, (unsigned)shmem,
					 s, args));
}

/* The <<<...>>> syntax: the call site pushes the configuration, the
 * generated stub pops it and calls cudaLaunchKernel. */
FAKE_EXPORT unsigned __cudaPushCallConfiguration(nrr_dim3 grid, nrr_dim3 block, size_t shmem, void *stream)
{
	t_cfg.grid = grid;
	t_cfg.block = block;
	t_cfg.shmem = shmem;
	t_cfg.stream = stream;
	t_cfg.pushed = 1;
	return 0;
}

FAKE_EXPORT cudaError_t __cudaPopCallConfiguration(nrr_dim3 *grid, nrr_dim3 *block, size_t *shmem, void *stream)
{
	if (!t_cfg.pushed)
		return 52; /* cudaErrorMissingConfiguration */
	t_cfg.pushed = 0;
	*grid = t_cfg.grid;
	*block = t_cfg.block;
	*shmem = t_cfg.shmem;
	*(void **)stream = t_cfg.stream;
	return cudaSuccess;
}

static cudaError_t var_of(const void *sym, CUdeviceptr *dp, size_t *size)
{
	cudaError_t e = need_ctx();
	if (e)
		return e;
	struct kvar *v;
	CUresult rc = CUDA_SUCCESS;
	pthread_mutex_lock(&klock);
	for (v = kvars[khash(sym, 64)]; v && v->host != sym; v = v->next)
		;
	if (v && v->fb) {
		rc = fb_module(v->fb);
		if (rc == CUDA_SUCCESS)
			rc = cuModuleGetGlobal_v2(dp, size, v->fb->mod, v->name);
	}
	pthread_mutex_unlock(&klock);
	if (!v)
		return cudaErrorInvalidSymbol;
	return from_cu(rc);
}

FAKE_EXPORT cudaError_t cudaGetSymbolAddress(void **p, const void *sym)
{
	ENTER("cudaGetSymbolAddress");
	CUdeviceptr d = 0;
	cudaError_t e = var_of(sym, &d, NULL);
	if (e)
		return ret(e);
	*p = (void *)(uintptr_t)d;
	return cudaSuccess;
}

FAKE_EXPORT cudaError_t cudaGetSymbolSize(size_t *n, const void *sym)
{
	ENTER("cudaGetSymbolSize");
	CUdeviceptr d = 0;
	return ret(var_of(sym, &d, n));
}

FAKE_EXPORT cudaError_t cudaMemcpyToSymbol(const void *sym, const void *src, size_t n, size_t off, int kind)
{
	ENTER("cudaMemcpyToSymbol");
	(void)kind;
	CUdeviceptr d = 0;
	size_t size = 0;
	cudaError_t e = var_of(sym, &d, &size);
	if (e)
		return ret(e);
	if (off + n > size)
		return ret(cudaErrorInvalidValue);
	RET_CU(cuMemcpy(d + off, (CUdeviceptr)(uintptr_t)src, n));
}

FAKE_EXPORT cudaError_t cudaMemcpyFromSymbol(void *dst, const void *sym, size_t n, size_t off, int kind)
{
	ENTER("cudaMemcpyFromSymbol");
	(void)kind;
	CUdeviceptr d = 0;
	size_t size = 0;
	cudaError_t e = var_of(sym, &d, &size);
	if (e)
		return ret(e);
	if (off + n > size)
		return ret(cudaErrorInvalidValue);
	RET_CU(cuMemcpy((CUdeviceptr)(uintptr_t)dst, d + off, n));
}

/* ---- driver entry points ------------------------------------------------ */
/* cudaDriverEntryPointQueryResult: Success 0, SymbolNotFound 1, VersionNotSufficent 2 */
static cudaError_t entry_point(const char *sym, void **fn, int version, unsigned long long flags, int *status)
{
	if (!sym || !fn)
		return cudaErrorInvalidValue;
	cudaError_t e = lazy_init();
	if (e)
		return e;
	int st = 0;
	CUresult rc = cuGetProcAddress_v2(sym, fn, version, flags, &st);
	if (status)
		*status = st;
	if (rc == CUDA_ERROR_NOT_FOUND)
		return status ? cudaSuccess : cudaErrorSymbolNotFound; /* the status says which */
	return from_cu(rc);
}

FAKE_EXPORT cudaError_t cudaGetDriverEntryPoint(const char *sym, void **fn, unsigned long long flags, int *status)
{
	ENTER("cudaGetDriverEntryPoint");
	return ret(entry_point(sym, fn, RUNTIME_VERSION, flags, status));
}

FAKE_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fn, unsigned version,
							 unsigned long long flags, int *status)
{
	ENTER("cudaGetDriverEntryPointByVersion");
	return ret(entry_point(sym, fn, (int)version, flags, status));
}

/* ---- graphs and user objects: not on the fake driver ---------- */
#define UNSUPPORTED(nm, ...) \
	FAKE_EXPORT cudaError_t nm(__VA_ARGS__) \
	{ \
		ENTER(#nm); \
		return ret(cudaErrorNotSupported); \
	}

UNSUPPORTED(cudaUserObjectCreate, void **o, void *p, void (*fn)(void *), unsigned n, unsigned flags)
UNSUPPORTED(cudaGraphRetainUserObject, void *g, void *o, unsigned n, unsigned flags)
UNSUPPORTED(cudaGraphAddEventRecordNode, void **n, void *g, const void *deps, size_t nd, cudaEvent_t e)
UNSUPPORTED(cudaGraphAddEventWaitNode, void **n, void *g, const void *deps, size_t nd, cudaEvent_t e)
UNSUPPORTED(cudaGraphAddHostNode, void **n, void *g, const void *deps, size_t nd, const void *p)
UNSUPPORTED(cudaGraphAddKernelNode, void **n, void *g, const void *deps, size_t nd, const void *p)
UNSUPPORTED(cudaGraphAddDependencies, void *g, const void *from, const void *to, size_t n)
UNSUPPORTED(cudaGraphAddDependencies_v2, void *g, const void *from, const void *to, const void *e, size_t n)
