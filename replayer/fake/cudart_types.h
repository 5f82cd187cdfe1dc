/* SPDX-License-Identifier: MIT */
/*
 * cudart_types.h - the CUDA runtime API types ncclrr's runtime library
 * (libcudart.so.12 / .13) hands across its ABI, written from the public
 * runtime API documentation. NRR_CUDART_MAJOR (12 or 13) selects the layouts
 * of that major version; their sizes are pinned below, because a caller
 * keeps these structs on its stack and a callee writing more than the
 * caller's layout is caught by the stack protector (FAKE_CUDA.md).
 * tests/test_cudart_abi.c checks every field offset against the CUDA
 * headers when a toolkit is installed.
 */
#ifndef NRR_CUDART_TYPES_H
#define NRR_CUDART_TYPES_H

#include <stddef.h>

#ifndef NRR_CUDART_MAJOR
#error "NRR_CUDART_MAJOR must be 12 or 13"
#endif

/* NRR_CUDART_LAYOUTS_ONLY: just the struct layouts, for the test that
 * compares them with the CUDA headers (which define the names below). */
#ifndef NRR_CUDART_LAYOUTS_ONLY
typedef int cudaError_t;
typedef struct fstream *cudaStream_t;
typedef struct fevent *cudaEvent_t;
typedef struct ffunc *cudaFunction_t;
#endif

typedef struct { unsigned int x, y, z; } nrr_dim3;

typedef struct { char bytes[16]; } nrr_cudaUUID;

/* cudaDeviceProp. CUDA 13 dropped eight deprecated members (marked "12
 * only") without keeping their slots. */
struct nrr_cudaDeviceProp {
	char name[256];
	nrr_cudaUUID uuid;
	char luid[8];
	unsigned int luidDeviceNodeMask;
	size_t totalGlobalMem;
	size_t sharedMemPerBlock;
	int regsPerBlock;
	int warpSize;
	size_t memPitch;
	int maxThreadsPerBlock;
	int maxThreadsDim[3];
	int maxGridSize[3];
#if NRR_CUDART_MAJOR == 12
	int clockRate;
#endif
	size_t totalConstMem;
	int major;
	int minor;
	size_t textureAlignment;
	size_t texturePitchAlignment;
#if NRR_CUDART_MAJOR == 12
	int deviceOverlap;
#endif
	int multiProcessorCount;
#if NRR_CUDART_MAJOR == 12
	int kernelExecTimeoutEnabled;
#endif
	int integrated;
	int canMapHostMemory;
#if NRR_CUDART_MAJOR == 12
	int computeMode;
#endif
	int maxTexture1D;
	int maxTexture1DMipmap;
#if NRR_CUDART_MAJOR == 12
	int maxTexture1DLinear;
#endif
	int maxTexture2D[2];
	int maxTexture2DMipmap[2];
	int maxTexture2DLinear[3];
	int maxTexture2DGather[2];
	int maxTexture3D[3];
	int maxTexture3DAlt[3];
	int maxTextureCubemap;
	int maxTexture1DLayered[2];
	int maxTexture2DLayered[3];
	int maxTextureCubemapLayered[2];
	int maxSurface1D;
	int maxSurface2D[2];
	int maxSurface3D[3];
	int maxSurface1DLayered[2];
	int maxSurface2DLayered[3];
	int maxSurfaceCubemap;
	int maxSurfaceCubemapLayered[2];
	size_t surfaceAlignment;
	int concurrentKernels;
	int ECCEnabled;
	int pciBusID;
	int pciDeviceID;
	int pciDomainID;
	int tccDriver;
	int asyncEngineCount;
	int unifiedAddressing;
#if NRR_CUDART_MAJOR == 12
	int memoryClockRate;
#endif
	int memoryBusWidth;
	int l2CacheSize;
	int persistingL2CacheMaxSize;
	int maxThreadsPerMultiProcessor;
	int streamPrioritiesSupported;
	int globalL1CacheSupported;
	int localL1CacheSupported;
	size_t sharedMemPerMultiprocessor;
	int regsPerMultiprocessor;
	int managedMemory;
	int isMultiGpuBoard;
	int multiGpuBoardGroupID;
	int hostNativeAtomicSupported;
#if NRR_CUDART_MAJOR == 12
	int singleToDoublePrecisionPerfRatio;
#endif
	int pageableMemoryAccess;
	int concurrentManagedAccess;
	int computePreemptionSupported;
	int canUseHostPointerForRegisteredMem;
	int cooperativeLaunch;
#if NRR_CUDART_MAJOR == 12
	int cooperativeMultiDeviceLaunch;
#endif
	size_t sharedMemPerBlockOptin;
	int pageableMemoryAccessUsesHostPageTables;
	int directManagedMemAccessFromHost;
	int maxBlocksPerMultiProcessor;
	int accessPolicyMaxWindowSize;
	size_t reservedSharedMemPerBlock;
	int hostRegisterSupported;
	int sparseCudaArraySupported;
	int hostRegisterReadOnlySupported;
	int timelineSemaphoreInteropSupported;
	int memoryPoolsSupported;
	int gpuDirectRDMASupported;
	unsigned int gpuDirectRDMAFlushWritesOptions;
	int gpuDirectRDMAWritesOrdering;
	unsigned int memoryPoolSupportedHandleTypes;
	int deferredMappingCudaArraySupported;
	int ipcEventSupported;
	int clusterLaunch;
	int unifiedFunctionPointers;
	int deviceNumaConfig;           /* 12.0..12.3 call these seven reserved */
	int deviceNumaId;
	int mpsEnabled;
	int hostNumaId;
	unsigned int gpuPciDeviceID;
	unsigned int gpuPciSubsystemID;
	int hostNumaMultinodeIpcSupported;
	int reserved[56];
};

struct nrr_cudaPointerAttributes {
	int type;                       /* enum cudaMemoryType */
	int device;
	void *devicePointer;
	void *hostPointer;
#if NRR_CUDART_MAJOR >= 13
	long reserved[8];
#endif
};

struct nrr_cudaFuncAttributes {
	size_t sharedSizeBytes;
	size_t constSizeBytes;
	size_t localSizeBytes;
	int maxThreadsPerBlock;
	int numRegs;
	int ptxVersion;
	int binaryVersion;
	int cacheModeCA;
	int maxDynamicSharedSizeBytes;
	int preferredShmemCarveout;
	int clusterDimMustBeSet;
	int requiredClusterWidth;
	int requiredClusterHeight;
	int requiredClusterDepth;
	int clusterSchedulingPolicyPreference;
	int nonPortableClusterSizeAllowed;
	int reserved[16];
};

/* cudaIpcMemHandle_t / cudaIpcEventHandle_t: 64 opaque bytes, passed by value */
typedef struct { char reserved[64]; } nrr_cudaIpcHandle;

#if NRR_CUDART_MAJOR == 12
_Static_assert(sizeof(struct nrr_cudaDeviceProp) == 1032, "cudaDeviceProp (CUDA 12) is 1032 bytes");
_Static_assert(sizeof(struct nrr_cudaPointerAttributes) == 24, "cudaPointerAttributes (CUDA 12) is 24 bytes");
#else
_Static_assert(sizeof(struct nrr_cudaDeviceProp) == 1008, "cudaDeviceProp (CUDA 13) is 1008 bytes");
_Static_assert(sizeof(struct nrr_cudaPointerAttributes) == 88, "cudaPointerAttributes (CUDA 13) is 88 bytes");
#endif
_Static_assert(sizeof(struct nrr_cudaFuncAttributes) == 144, "cudaFuncAttributes is 144 bytes");
_Static_assert(offsetof(struct nrr_cudaDeviceProp, totalGlobalMem) == 288, "cudaDeviceProp.totalGlobalMem");

#ifndef NRR_CUDART_LAYOUTS_ONLY
/* runtime error codes the library itself returns (cudart_errors.c has them all) */
enum {
	cudaSuccess = 0,
	cudaErrorInvalidValue = 1,
	cudaErrorMemoryAllocation = 2,
	cudaErrorInitializationError = 3,
	cudaErrorInvalidDevicePointer = 17,
	cudaErrorInvalidMemcpyDirection = 21,
	cudaErrorInsufficientDriver = 35,
	cudaErrorNoDevice = 100,
	cudaErrorInvalidDevice = 101,
	cudaErrorInvalidDeviceFunction = 98,
	cudaErrorInvalidSymbol = 13,
	cudaErrorSymbolNotFound = 500,
	cudaErrorIllegalState = 401,
	cudaErrorInvalidResourceHandle = 400,
	cudaErrorNotSupported = 801,
	cudaErrorStreamCaptureImplicit = 906,
	cudaErrorUnknown = 999,
};

/* the runtime's own table of codes, names and messages */
FAKE_HIDDEN const char *cudart_error_name(int code);
FAKE_HIDDEN const char *cudart_error_string(int code);
#endif

#endif
