/* SPDX-License-Identifier: MIT */
/* nccl_loader.h - what the workloads need from NCCL and the CUDA driver,
 * declared here (no CUDA or NCCL headers) and loaded with dlopen. */
#ifndef NCCLRR_WL_NCCL_LOADER_H
#define NCCLRR_WL_NCCL_LOADER_H

#include <stddef.h>

/* NCCL's public ABI, as in nccl.h (2.28): */
typedef struct { char internal[128]; } wl_ncclUniqueId;
typedef void *wl_ncclComm_t;
typedef void *wl_cudaStream_t;   /* == CUstream */
typedef int wl_ncclResult_t;
enum { wl_ncclSuccess = 0, wl_ncclInProgress = 7 };
enum { wl_ncclFloat32 = 7 };     /* ncclDataType_t */
enum { wl_ncclSum = 0 };         /* ncclRedOp_t */
#define WL_NCCL_SPLIT_NOCOLOR (-1)
#define WL_NCCL_CONFIG_MAGIC 0xcafebeefu
#define WL_NCCL_CONFIG_UNDEF_INT (-2147483647 - 1)

/* ncclConfig_t: the leading fields of every version since 2.14, up to the
 * 2.28 ones.  NCCL reads only what @version tells it exists. */
typedef struct {
	size_t size;
	unsigned int magic;
	unsigned int version;
	int blocking;
	int cgaClusterSize;
	int minCTAs;
	int maxCTAs;
	const char *netName;
	int splitShare;
	int trafficClass;
	const char *commName;
	int collnetEnable;
	int CTAPolicy;
	int shrinkShare;
	int nvlsCTAs;
	int nChannelsPerNetPeer;
	int nvlinkCentricSched;
} wl_ncclConfig_t;

struct wl_nccl {
	void *handle;
	char path[4096];
	int version;
	wl_ncclResult_t (*GetVersion)(int *);
	wl_ncclResult_t (*GetUniqueId)(wl_ncclUniqueId *);
	wl_ncclResult_t (*CommInitRank)(wl_ncclComm_t *, int, wl_ncclUniqueId, int);
	wl_ncclResult_t (*CommInitRankConfig)(wl_ncclComm_t *, int, wl_ncclUniqueId, int, wl_ncclConfig_t *);
	wl_ncclResult_t (*CommSplit)(wl_ncclComm_t, int, int, wl_ncclComm_t *, wl_ncclConfig_t *);
	wl_ncclResult_t (*CommGetAsyncError)(wl_ncclComm_t, wl_ncclResult_t *);
	wl_ncclResult_t (*CommFinalize)(wl_ncclComm_t);
	wl_ncclResult_t (*CommDestroy)(wl_ncclComm_t);
	wl_ncclResult_t (*CommAbort)(wl_ncclComm_t);
	wl_ncclResult_t (*CommCount)(wl_ncclComm_t, int *);
	wl_ncclResult_t (*CommUserRank)(wl_ncclComm_t, int *);
	wl_ncclResult_t (*AllReduce)(const void *, void *, size_t, int, int, wl_ncclComm_t, wl_cudaStream_t);
	const char *(*GetErrorString)(wl_ncclResult_t);
	const char *(*GetLastError)(wl_ncclComm_t);
};

/* The CUDA driver entry points the workloads use (CUresult is int). */
struct wl_cuda {
	void *handle;
	int (*Init)(unsigned);
	int (*DeviceGet)(int *, int);
	int (*DeviceGetCount)(int *);
	int (*DevicePrimaryCtxRetain)(void **, int);
	int (*CtxSetCurrent)(void *);
	int (*MemAlloc)(unsigned long long *, size_t);
	int (*MemFree)(unsigned long long);
	int (*StreamCreate)(void **, unsigned);
	int (*StreamSynchronize)(void *);
	int (*StreamDestroy)(void *);
	int (*GetErrorName)(int, const char **);
};

/* Open NCCL: $NCCLRR_NCCL, else "libnccl.so.2" (the loader's search path),
 * else /usr/local/cuda*\/lib*\/libnccl.so.2.  @return 0, or -1 with a
 * message on stderr. */
int wl_nccl_open(struct wl_nccl *n);
/* Open libcuda.so.1 and make device @dev current (primary context).
 * @return 0, or -1 with a message on stderr. */
int wl_cuda_open(struct wl_cuda *c, int dev);
/* "NAME (code)" for a CUresult. */
const char *wl_cuda_err(const struct wl_cuda *c, int rc);

/* The job as the launcher describes it (RANK, WORLD_SIZE, LOCAL_RANK,
 * LOCAL_WORLD_SIZE).  @return 0, or -1 with a message. */
struct wl_job { int rank, nranks, local_rank, local_size; };
int wl_job_from_env(struct wl_job *j);

/* The unique id every rank must share: with NCCL_COMM_ID set every rank's
 * ncclGetUniqueId returns the same id; otherwise rank 0 writes it to
 * $NCCLRR_ID_DIR/nccl.id and the others wait for it. */
int wl_unique_id(const struct wl_nccl *n, const struct wl_job *j, wl_ncclUniqueId *id);

/* Print "rank R: WHAT failed: <string> (code) - <last error>" and @return -1
 * when @rc is neither success nor in-progress, else 0. */
int wl_check(const struct wl_nccl *n, int rank, const char *what, wl_ncclResult_t rc,
	     wl_ncclComm_t comm);
/* Poll ncclCommGetAsyncError until not in progress.  @return 0 or -1. */
/* How a workload ends its communicators (--end abort|destroy). On the fake
 * cluster kernels never run, so after a collective over NET the proxy waits
 * for GPU progress that never comes and ncclCommFinalize waits for the
 * proxy forever: abort (ncclCommAbort, the default) ends every job;
 * destroy (ncclCommFinalize + ncclCommDestroy, as on real GPUs) ends jobs
 * whose communicators use P2P and SHM only. */
enum wl_end { WL_END_ABORT, WL_END_DESTROY };
/* Parse the word after --end. @return 0, or -1 when it is neither. */
int wl_parse_end(const char *word, enum wl_end *end);
/* End @comm as @end says; prints "rank R: NAME comm aborted|destroyed". */
int wl_end_comm(const struct wl_nccl *n, int rank, const char *name, wl_ncclComm_t comm, enum wl_end end,
		int nonblocking);

int wl_wait_comm(const struct wl_nccl *n, int rank, const char *what, wl_ncclComm_t comm);
/* A config for non-blocking init. */
void wl_config_nonblocking(const struct wl_nccl *n, wl_ncclConfig_t *cfg);

#endif
