/* SPDX-License-Identifier: MIT */
/*
 * fake_cuda.h - the CUDA driver API types the fake driver needs, written
 * from the public driver API documentation (values are the driver's ABI).
 * Not the CUDA headers: the fake runtime builds without them.
 */
#ifndef NRR_FAKE_CUDA_H
#define NRR_FAKE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "fake_common.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct fctx *CUcontext;
typedef struct fstream *CUstream;
typedef struct fevent *CUevent;
typedef struct fmodule *CUmodule;
typedef struct ffunc *CUfunction;
typedef struct fmodule *CUlibrary;
typedef struct ffunc *CUkernel;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef unsigned long long cuuint64_t;
typedef unsigned int cuuint32_t;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_DEINITIALIZED = 4,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_IMAGE = 200,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_MAP_FAILED = 205,
	CUDA_ERROR_UNMAP_FAILED = 206,
	CUDA_ERROR_ALREADY_MAPPED = 208,
	CUDA_ERROR_NOT_MAPPED = 211,
	CUDA_ERROR_UNSUPPORTED_LIMIT = 215,
	CUDA_ERROR_OPERATING_SYSTEM = 304,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
	CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
	CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
	CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
	CUDA_ERROR_NOT_PERMITTED = 800,
	CUDA_ERROR_NOT_SUPPORTED = 801,
	CUDA_ERROR_UNKNOWN = 999,
};

/* cuGetProcAddress */
enum {
	CU_GET_PROC_ADDRESS_SUCCESS = 0,
	CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
	CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
};

/* memory types (CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CUDA_MEMCPY2D) */
enum { CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2, CU_MEMORYTYPE_ARRAY = 3, CU_MEMORYTYPE_UNIFIED = 4 };

/* shareable handle types */
enum {
	CU_MEM_HANDLE_TYPE_NONE = 0,
	CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1,
	CU_MEM_HANDLE_TYPE_WIN32 = 2,
	CU_MEM_HANDLE_TYPE_WIN32_KMT = 4,
	CU_MEM_HANDLE_TYPE_FABRIC = 8,
};

typedef struct {
	int type;                       /* CU_MEM_LOCATION_TYPE_DEVICE = 1 */
	int id;
} CUmemLocation;

typedef struct {
	int type;                       /* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
	int requestedHandleTypes;
	CUmemLocation location;
	void *win32HandleMetaData;
	unsigned char compressionType;
	unsigned char gpuDirectRDMACapable;
	unsigned short usage;
	unsigned char reserved[4];
} CUmemAllocationProp;

typedef struct {
	CUmemLocation location;
	int flags;                      /* CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3 */
} CUmemAccessDesc;

/* CUmemPoolProps (88 bytes in CUDA 12 and 13) */
typedef struct {
	int allocType;                  /* CU_MEM_ALLOCATION_TYPE_PINNED = 1 */
	int handleTypes;
	CUmemLocation location;
	void *win32SecurityAttributes;
	size_t maxSize;
	unsigned short usage;
	unsigned char reserved[54];
} CUmemPoolProps;
_Static_assert(sizeof(CUmemPoolProps) == 88, "CUmemPoolProps");
typedef struct fpool *CUmemoryPool;

typedef struct {
	unsigned char bytes[16];
} CUuuid;

/* legacy IPC handles: 64 opaque bytes, passed by value */
typedef struct {
	char reserved[64];
} CUipcMemHandle;
typedef struct {
	char reserved[64];
} CUipcEventHandle;

typedef struct {
	size_t srcXInBytes, srcY;
	int srcMemoryType;
	const void *srcHost;
	CUdeviceptr srcDevice;
	void *srcArray;
	size_t srcPitch;
	size_t dstXInBytes, dstY;
	int dstMemoryType;
	void *dstHost;
	CUdeviceptr dstDevice;
	void *dstArray;
	size_t dstPitch;
	size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;

typedef struct {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	void *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;

/* the legacy CUdevprop (cuDeviceGetProperties) */
typedef struct {
	int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], sharedMemPerBlock, totalConstantMemory,
	    SIMDWidth, memPitch, regsPerBlock, clockRate, textureAlign;
} CUdevprop;

typedef union {
	int operation;
	struct {
		int operation;
		CUdeviceptr address;
		union {
			cuuint32_t value;
			cuuint64_t value64;
		};
		unsigned flags;
		CUdeviceptr alias;
	} v;
	cuuint64_t pad[6];
} CUstreamBatchMemOpParams;

/* Enums the prototypes of formats/api/cuda_driver.api name (the generated
 * entry points take them): the fake reads them as the ints they are. */
typedef int CUdevice_attribute;
typedef int CUpointer_attribute;
typedef int CUfunction_attribute;
typedef int CUmemAllocationGranularity_flags;
typedef int CUmemAllocationHandleType;
typedef int CUmemRangeHandleType;
typedef int CUmulticastGranularity_flags;
typedef int CUmoduleLoadingMode;
typedef int CUdriverProcAddressQueryResult;
/* multicast objects are refused (cuMulticastCreate): never read */
typedef struct CUmulticastObjectProp_st CUmulticastObjectProp;

typedef void (*CUhostFn)(void *userData);
typedef void (*CUstreamCallback)(CUstream hStream, CUresult status, void *userData);

/* the handle objects */
#define FAKE_MAGIC_CTX 0x4e525243u    /* "NRRC" */
#define FAKE_MAGIC_STREAM 0x4e525253u /* "NRRS" */
#define FAKE_MAGIC_EVENT 0x4e525245u  /* "NRRE" */
#define FAKE_MAGIC_MODULE 0x4e52524du /* "NRRM" */
#define FAKE_MAGIC_FUNC 0x4e525246u   /* "NRRF" */

struct fctx {
	uint32_t magic;
	int dev;
	int primary;
	int refcount;
	unsigned flags;
	unsigned long long id;
	int destroyed;
	int peer_enabled[64];
};

struct fstream {
	uint32_t magic;
	struct fctx *ctx;
	unsigned flags;
	int priority;
	unsigned long long id;
};

struct fevent {
	uint32_t magic;
	unsigned flags;
	double t_ms;
	int recorded;
};

struct fmodule {
	uint32_t magic;
	const void *image;
	int is_library;
	struct ffunc *funcs;
	struct fglobal *globals;
	struct fmodule *next;   /* every module ever loaded (kept, see cuModuleUnload) */
};

struct ffunc {
	uint32_t magic;
	struct fmodule *mod;
	char *name;
	int max_dyn_shmem;
	int carveout;
	unsigned long long launches;
	struct ffunc *next;
};

struct fglobal {
	char *name;
	void *ptr;
	size_t size;
	struct fglobal *next;
};

/* cuda_driver.c internals shared with cuda_proc.c */
FAKE_HIDDEN const char *fake_cuda_error_name(int code);
FAKE_HIDDEN CUresult fake_primary_retain(CUcontext *pctx, CUdevice dev);
FAKE_HIDDEN CUresult fake_module_from_image(CUmodule *mod, const void *image, int is_library);
FAKE_HIDDEN struct fctx *fake_current_ctx(void);
/* a stream a driver call takes: NULL, the legacy or per-thread one, or a
 * live created stream (cuda_mem.c's asynchronous calls check theirs) */
FAKE_HIDDEN int fake_valid_stream(CUstream s);
/* CUDA_SUCCESS when the driver is initialized and @d is a device of this
 * host; else CUDA_ERROR_NOT_INITIALIZED or CUDA_ERROR_INVALID_DEVICE */
FAKE_HIDDEN CUresult fake_need_dev(CUdevice d);
/* CUDA_SUCCESS when the driver is initialized and @d is a device of this
 * host; else CUDA_ERROR_NOT_INITIALIZED or CUDA_ERROR_INVALID_DEVICE */
CUresult fake_need_dev(CUdevice d);

/* cuGetProcAddress's table lookup */
FAKE_HIDDEN void *fake_proc_lookup(const char *name, int version, int *status);

#endif
