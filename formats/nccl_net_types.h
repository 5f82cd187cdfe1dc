/* SPDX-License-Identifier: MIT */
/*
 * nccl_net_types.h - ncclrr's own declarations of the plugin tables NCCL
 * 2.18-2.28 loads from a net plugin (ncclNetPlugin_v6 .. _v11) and from a
 * profiler plugin (ncclProfiler_v1 .. _v6).
 *
 * Written from the ABI NCCL documents in its ext-net / ext-profiler headers:
 * same member order and C types, so a table declared here can be handed to
 * NCCL or read from a plugin.  Pointers the wrapper only passes through
 * (device properties, device handles, property structs) are void *; the
 * layouts that matter to ncclrr (the profiler event descriptors it reads)
 * are spelt out.
 *
 *   net   v6: 2.12-2.18   v7: 2.19   v8: 2.20-2.23   v9: 2.24-2.25
 *         v10: 2.26-2.27  v11: 2.28
 *   prof  v1: 2.23   v2: 2.24   v3: 2.25-2.26   v4: 2.27   v5: 2.28
 *         v6: 2.29 (NCCL 2.22 and older have no profiler plugin)
 */
#ifndef NCCLRR_NCCL_NET_TYPES_H
#define NCCLRR_NCCL_NET_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ncclResult_t values (nccl.h). */
typedef int nrr_nccl_result;
enum {
	NRR_NCCL_SUCCESS = 0,
	NRR_NCCL_UNHANDLED_CUDA_ERROR = 1,
	NRR_NCCL_SYSTEM_ERROR = 2,
	NRR_NCCL_INTERNAL_ERROR = 3,
	NRR_NCCL_INVALID_ARGUMENT = 4,
	NRR_NCCL_INVALID_USAGE = 5,
	NRR_NCCL_REMOTE_ERROR = 6,
	NRR_NCCL_IN_PROGRESS = 7,
};

/* ncclDebugLogLevel / ncclDebugLogSubSys (nccl_common.h). */
enum { NRR_NCCL_LOG_WARN = 2, NRR_NCCL_LOG_INFO = 3, NRR_NCCL_LOG_TRACE = 5 };
enum { NRR_NCCL_INIT = 0x1, NRR_NCCL_NET = 0x10, NRR_NCCL_PROFILE = 0x4000 };

typedef void (*nrr_nccl_logger)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);
/* ncclProfilerCallback_t (net v10+ init). */
typedef nrr_nccl_result (*nrr_nccl_prof_callback)(void **eHandle, int type, void *pHandle, int64_t pluginId, void *extData);

#define NRR_NET_HANDLE_MAXSIZE 128
#define NRR_NET_MAX_DEVS_PER_NIC 4

/* ------------------------------------------------------------- ncclNet */
/* Members common to every version, in order, after name/init. */
typedef struct nrr_ncclNet_v6 {
	const char *name;
	nrr_nccl_result (*init)(nrr_nccl_logger logFunction);
	nrr_nccl_result (*devices)(int *ndev);
	nrr_nccl_result (*getProperties)(int dev, void *props);
	nrr_nccl_result (*listen)(int dev, void *handle, void **listenComm);
	nrr_nccl_result (*connect)(int dev, void *handle, void **sendComm);
	nrr_nccl_result (*accept)(void *listenComm, void **recvComm);
	nrr_nccl_result (*regMr)(void *comm, void *data, int size, int type, void **mhandle);
	nrr_nccl_result (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd, void **mhandle);
	nrr_nccl_result (*deregMr)(void *comm, void *mhandle);
	nrr_nccl_result (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle, void **request);
	nrr_nccl_result (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles, void **request);
	nrr_nccl_result (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
	nrr_nccl_result (*test)(void *request, int *done, int *sizes);
	nrr_nccl_result (*closeSend)(void *sendComm);
	nrr_nccl_result (*closeRecv)(void *recvComm);
	nrr_nccl_result (*closeListen)(void *listenComm);
} nrr_ncclNet_v6;

/* v7: connect/accept gain the device handle; getDeviceMr, irecvConsumed. */
typedef struct nrr_ncclNet_v7 {
	const char *name;
	nrr_nccl_result (*init)(nrr_nccl_logger logFunction);
	nrr_nccl_result (*devices)(int *ndev);
	nrr_nccl_result (*getProperties)(int dev, void *props);
	nrr_nccl_result (*listen)(int dev, void *handle, void **listenComm);
	nrr_nccl_result (*connect)(int dev, void *handle, void **sendComm, void **sendDevComm);
	nrr_nccl_result (*accept)(void *listenComm, void **recvComm, void **recvDevComm);
	nrr_nccl_result (*regMr)(void *comm, void *data, int size, int type, void **mhandle);
	nrr_nccl_result (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd, void **mhandle);
	nrr_nccl_result (*deregMr)(void *comm, void *mhandle);
	nrr_nccl_result (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle, void **request);
	nrr_nccl_result (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles, void **request);
	nrr_nccl_result (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
	nrr_nccl_result (*test)(void *request, int *done, int *sizes);
	nrr_nccl_result (*closeSend)(void *sendComm);
	nrr_nccl_result (*closeRecv)(void *recvComm);
	nrr_nccl_result (*closeListen)(void *listenComm);
	nrr_nccl_result (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	nrr_nccl_result (*irecvConsumed)(void *recvComm, int n, void *request);
} nrr_ncclNet_v7;

/* v8: regMr takes a size_t size. */
typedef struct nrr_ncclNet_v8 {
	const char *name;
	nrr_nccl_result (*init)(nrr_nccl_logger logFunction);
	nrr_nccl_result (*devices)(int *ndev);
	nrr_nccl_result (*getProperties)(int dev, void *props);
	nrr_nccl_result (*listen)(int dev, void *handle, void **listenComm);
	nrr_nccl_result (*connect)(int dev, void *handle, void **sendComm, void **sendDevComm);
	nrr_nccl_result (*accept)(void *listenComm, void **recvComm, void **recvDevComm);
	nrr_nccl_result (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	nrr_nccl_result (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd, void **mhandle);
	nrr_nccl_result (*deregMr)(void *comm, void *mhandle);
	nrr_nccl_result (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle, void **request);
	nrr_nccl_result (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles, void **request);
	nrr_nccl_result (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
	nrr_nccl_result (*test)(void *request, int *done, int *sizes);
	nrr_nccl_result (*closeSend)(void *sendComm);
	nrr_nccl_result (*closeRecv)(void *recvComm);
	nrr_nccl_result (*closeListen)(void *listenComm);
	nrr_nccl_result (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	nrr_nccl_result (*irecvConsumed)(void *recvComm, int n, void *request);
} nrr_ncclNet_v8;

/* ncclNetVDeviceProps_v9..v11 */
typedef struct nrr_ncclNetVDeviceProps {
	int ndevs;
	int devs[NRR_NET_MAX_DEVS_PER_NIC];
} nrr_ncclNetVDeviceProps;

/* v9: isend/irecv sizes are size_t; makeVDevice. */
typedef struct nrr_ncclNet_v9 {
	const char *name;
	nrr_nccl_result (*init)(nrr_nccl_logger logFunction);
	nrr_nccl_result (*devices)(int *ndev);
	nrr_nccl_result (*getProperties)(int dev, void *props);
	nrr_nccl_result (*listen)(int dev, void *handle, void **listenComm);
	nrr_nccl_result (*connect)(int dev, void *handle, void **sendComm, void **sendDevComm);
	nrr_nccl_result (*accept)(void *listenComm, void **recvComm, void **recvDevComm);
	nrr_nccl_result (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	nrr_nccl_result (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd, void **mhandle);
	nrr_nccl_result (*deregMr)(void *comm, void *mhandle);
	nrr_nccl_result (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle, void **request);
	nrr_nccl_result (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles, void **request);
	nrr_nccl_result (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
	nrr_nccl_result (*test)(void *request, int *done, int *sizes);
	nrr_nccl_result (*closeSend)(void *sendComm);
	nrr_nccl_result (*closeRecv)(void *recvComm);
	nrr_nccl_result (*closeListen)(void *listenComm);
	nrr_nccl_result (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	nrr_nccl_result (*irecvConsumed)(void *recvComm, int n, void *request);
	nrr_nccl_result (*makeVDevice)(int *d, nrr_ncclNetVDeviceProps *props);
} nrr_ncclNet_v9;

/* ncclNetCommConfig_v10/v11 */
typedef struct nrr_ncclNetCommConfig {
	int trafficClass;
} nrr_ncclNetCommConfig;

/* v10: init gains the profiler callback, connect a config, isend/irecv
 * the profiler handles. */
typedef struct nrr_ncclNet_v10 {
	const char *name;
	nrr_nccl_result (*init)(nrr_nccl_logger logFunction, nrr_nccl_prof_callback profFunction);
	nrr_nccl_result (*devices)(int *ndev);
	nrr_nccl_result (*getProperties)(int dev, void *props);
	nrr_nccl_result (*listen)(int dev, void *handle, void **listenComm);
	nrr_nccl_result (*connect)(int dev, nrr_ncclNetCommConfig *config, void *handle, void **sendComm, void **sendDevComm);
	nrr_nccl_result (*accept)(void *listenComm, void **recvComm, void **recvDevComm);
	nrr_nccl_result (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	nrr_nccl_result (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd, void **mhandle);
	nrr_nccl_result (*deregMr)(void *comm, void *mhandle);
	nrr_nccl_result (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle, void **request);
	nrr_nccl_result (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles, void **phandles, void **request);
	nrr_nccl_result (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
	nrr_nccl_result (*test)(void *request, int *done, int *sizes);
	nrr_nccl_result (*closeSend)(void *sendComm);
	nrr_nccl_result (*closeRecv)(void *recvComm);
	nrr_nccl_result (*closeListen)(void *listenComm);
	nrr_nccl_result (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	nrr_nccl_result (*irecvConsumed)(void *recvComm, int n, void *request);
	nrr_nccl_result (*makeVDevice)(int *d, nrr_ncclNetVDeviceProps *props);
} nrr_ncclNet_v10;

/* ncclNetCommAttr_v11 / ncclNetAttr_v11 (44 bytes) */
typedef struct nrr_ncclNetCommAttr {
	int32_t maxConcurrentPeers, minConcurrentPeers, maxFlowsPerPeer, minFlowsPerPeer;
} nrr_ncclNetCommAttr;
typedef struct nrr_ncclNetAttr {
	nrr_ncclNetCommAttr sendCommAttr, recvCommAttr;
	uint32_t op, algo, proto;
} nrr_ncclNetAttr;

/* v11: per-communicator context (init/listen/connect), finalize, setNetAttr. */
typedef struct nrr_ncclNet_v11 {
	const char *name;
	nrr_nccl_result (*init)(void **ctx, uint64_t commId, nrr_ncclNetCommConfig *config, nrr_nccl_logger logFunction, nrr_nccl_prof_callback profFunction);
	nrr_nccl_result (*devices)(int *ndev);
	nrr_nccl_result (*getProperties)(int dev, void *props);
	nrr_nccl_result (*listen)(void *ctx, int dev, void *handle, void **listenComm);
	nrr_nccl_result (*connect)(void *ctx, int dev, void *handle, void **sendComm, void **sendDevComm);
	nrr_nccl_result (*accept)(void *listenComm, void **recvComm, void **recvDevComm);
	nrr_nccl_result (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	nrr_nccl_result (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd, void **mhandle);
	nrr_nccl_result (*deregMr)(void *comm, void *mhandle);
	nrr_nccl_result (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle, void **request);
	nrr_nccl_result (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles, void **phandles, void **request);
	nrr_nccl_result (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
	nrr_nccl_result (*test)(void *request, int *done, int *sizes);
	nrr_nccl_result (*closeSend)(void *sendComm);
	nrr_nccl_result (*closeRecv)(void *recvComm);
	nrr_nccl_result (*closeListen)(void *listenComm);
	nrr_nccl_result (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	nrr_nccl_result (*irecvConsumed)(void *recvComm, int n, void *request);
	nrr_nccl_result (*makeVDevice)(int *d, nrr_ncclNetVDeviceProps *props);
	nrr_nccl_result (*finalize)(void *ctx);
	nrr_nccl_result (*setNetAttr)(void *ctx, nrr_ncclNetAttr *netAttr);
} nrr_ncclNet_v11;

#define NRR_NET_VERSION_MIN 6
#define NRR_NET_VERSION_MAX 11

/* ------------------------------------------------------------ profiler */
/* Event types (nccl_profiler.h ncclProfile*). */
enum {
	NRR_PROF_GROUP = 1 << 0,
	NRR_PROF_COLL = 1 << 1,
	NRR_PROF_P2P = 1 << 2,
	NRR_PROF_PROXY_OP = 1 << 3,
	NRR_PROF_PROXY_STEP = 1 << 4,
	NRR_PROF_PROXY_CTRL = 1 << 5,
	NRR_PROF_KERNEL_CH = 1 << 6,
	NRR_PROF_NET_PLUGIN = 1 << 7,
	NRR_PROF_GROUP_API = 1 << 8,
	NRR_PROF_COLL_API = 1 << 9,
	NRR_PROF_P2P_API = 1 << 10,
	NRR_PROF_KERNEL_LAUNCH = 1 << 11,
	NRR_PROF_CE_COLL = 1 << 12,      /* v6: copy-engine collectives */
	NRR_PROF_CE_SYNC = 1 << 13,
	NRR_PROF_CE_BATCH = 1 << 14,
};

/* ncclProfilerEventState_t values ncclrr names in its log lines. */
enum {
	NRR_PROF_STATE_PROXY_CTRL_IDLE = 13,
	NRR_PROF_STATE_PROXY_CTRL_ACTIVE = 14,
	NRR_PROF_STATE_PROXY_CTRL_SLEEP = 15,
	NRR_PROF_STATE_PROXY_CTRL_WAKEUP = 16,
	NRR_PROF_STATE_PROXY_CTRL_APPEND = 17,
	NRR_PROF_STATE_PROXY_CTRL_APPEND_END = 18,
	NRR_PROF_STATE_PROXY_OP_IN_PROGRESS_V4 = 19,
	NRR_PROF_STATE_NET_PLUGIN_UPDATE = 21,
};

/* ncclProfilerNetType: the high 16 bits of a NetPlugin event's id. */
#define NRR_PROF_NET_VER_MASK 0xffffu
#define NRR_PROF_NET_TYPE_MASK 0xffff0000u
#define NRR_PROF_NET_TYPE_IB (1u << 16)
#define NRR_PROF_NET_TYPE_SOCK (2u << 16)

/* ncclProfilerNetIbDescr_v1_t / ncclProfilerNetSockDescr_v1_t */
typedef struct nrr_prof_net_ib_v1 {
	uint8_t type;
	union {
		struct { int device; uint64_t wr_id; int opcode; int qpNum; size_t length; } qp;
	};
} nrr_prof_net_ib_v1;
typedef struct nrr_prof_net_sock_v1 {
	uint8_t type;
	union {
		struct { int fd; int op; size_t length; } sock;
	};
} nrr_prof_net_sock_v1;

/* The proxyOp member is the same in every version. */
typedef struct nrr_prof_proxy_op {
	pid_t pid;
	uint8_t channelId;
	int peer;
	int nSteps;
	int chunkSize;
	int isSend;
} nrr_prof_proxy_op;
typedef struct nrr_prof_net_plugin {
	int64_t id;
	void *data;
} nrr_prof_net_plugin;

/* v1 */
typedef struct nrr_prof_descr_v1 {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name; uint64_t commHash; uint64_t seqNumber; uint8_t func;
			const void *sendBuff; void *recvBuff; size_t count; int root; uint8_t datatype;
			uint32_t op; size_t trafficBytes; uint8_t nMaxChannels, nWarps, algo, proto;
			int isCollnet, isNvls;
		} coll;
		struct {
			const char *name; uint64_t commHash; uint8_t func; void *buff; uint8_t datatype;
			size_t count; int peer;
		} p2p;
		nrr_prof_proxy_op proxyOp;
		struct { int step; } proxyStep;
	};
} nrr_prof_descr_v1;
typedef union nrr_prof_state_args_v1 {
	struct { size_t transSize; int steps; } proxyOp;
	struct { int appendedProxyOps; } proxyCtrl;
} nrr_prof_state_args_v1;
typedef struct nrr_ncclProfiler_v1 {
	const char *name;
	nrr_nccl_result (*init)(void **context, int *eActivationMask);
	nrr_nccl_result (*startEvent)(void *context, void **eHandle, nrr_prof_descr_v1 *eDescr);
	nrr_nccl_result (*stopEvent)(void *eHandle);
	nrr_nccl_result (*recordEventState)(void *eHandle, int eState, nrr_prof_state_args_v1 *eStateArgs);
	nrr_nccl_result (*finalize)(void *context);
} nrr_ncclProfiler_v1;

/* v2: names instead of enum codes in coll/p2p. */
typedef struct nrr_prof_descr_v2 {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name; uint64_t commHash; uint64_t seqNumber; const char *func;
			const void *sendBuff; void *recvBuff; size_t count; int root; const char *datatype;
			size_t trafficBytes; uint8_t nMaxChannels, nWarps; const char *algo; const char *proto;
		} coll;
		struct {
			const char *name; uint64_t commHash; const char *func; void *buff; const char *datatype;
			size_t count; int peer;
		} p2p;
		nrr_prof_proxy_op proxyOp;
		struct { int step; } proxyStep;
	};
} nrr_prof_descr_v2;
typedef nrr_prof_state_args_v1 nrr_prof_state_args_v2;
typedef struct nrr_ncclProfiler_v2 {
	const char *name;
	nrr_nccl_result (*init)(void **context, int *eActivationMask);
	nrr_nccl_result (*startEvent)(void *context, void **eHandle, nrr_prof_descr_v2 *eDescr);
	nrr_nccl_result (*stopEvent)(void *eHandle);
	nrr_nccl_result (*recordEventState)(void *eHandle, int eState, nrr_prof_state_args_v2 *eStateArgs);
	nrr_nccl_result (*finalize)(void *context);
} nrr_ncclProfiler_v2;

/* v3: kernel channel and net plugin events. */
typedef struct nrr_prof_descr_v3 {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name; uint64_t commHash; uint64_t seqNumber; const char *func;
			const void *sendBuff; void *recvBuff; size_t count; int root; const char *datatype;
			uint8_t nMaxChannels, nWarps; const char *algo; const char *proto;
		} coll;
		struct {
			const char *name; uint64_t commHash; const char *func; void *buff; const char *datatype;
			size_t count; int peer;
		} p2p;
		nrr_prof_proxy_op proxyOp;
		struct { int step; } proxyStep;
		struct { uint8_t channelId; } kernelCh;
		nrr_prof_net_plugin netPlugin;
	};
} nrr_prof_descr_v3;
typedef nrr_prof_state_args_v1 nrr_prof_state_args_v3;
typedef struct nrr_ncclProfiler_v3 {
	const char *name;
	nrr_nccl_result (*init)(void **context, int *eActivationMask);
	nrr_nccl_result (*startEvent)(void *context, void **eHandle, nrr_prof_descr_v3 *eDescr);
	nrr_nccl_result (*stopEvent)(void *eHandle);
	nrr_nccl_result (*recordEventState)(void *eHandle, int eState, nrr_prof_state_args_v3 *eStateArgs);
	nrr_nccl_result (*finalize)(void *context);
} nrr_ncclProfiler_v3;

/* v4 */
typedef struct nrr_prof_descr_v4 {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff;
			size_t count; int root; const char *datatype; uint8_t nChannels, nWarps;
			const char *algo; const char *proto;
		} coll;
		struct {
			const char *func; void *buff; const char *datatype; size_t count; int peer;
			uint8_t nChannels;
		} p2p;
		nrr_prof_proxy_op proxyOp;
		struct { int step; } proxyStep;
		struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
		nrr_prof_net_plugin netPlugin;
	};
} nrr_prof_descr_v4;
typedef union nrr_prof_state_args_v4 {
	struct { size_t transSize; } proxyStep;
	struct { int appendedProxyOps; } proxyCtrl;
	struct { void *data; } netPlugin;
	struct { uint64_t pTimer; } kernelCh;
} nrr_prof_state_args_v4;
typedef struct nrr_ncclProfiler_v4 {
	const char *name;
	nrr_nccl_result (*init)(void **context, int *eActivationMask, const char *commName, uint64_t commHash,
				int nNodes, int nranks, int rank, nrr_nccl_logger logfn);
	nrr_nccl_result (*startEvent)(void *context, void **eHandle, nrr_prof_descr_v4 *eDescr);
	nrr_nccl_result (*stopEvent)(void *eHandle);
	nrr_nccl_result (*recordEventState)(void *eHandle, int eState, nrr_prof_state_args_v4 *eStateArgs);
	nrr_nccl_result (*finalize)(void *context);
} nrr_ncclProfiler_v4;

/* The v5 union members, which v6 extends. */
#define NRR_PROF_DESCR_V5_MEMBERS \
		struct { bool graphCaptured; int groupDepth; } groupApi; \
		struct { const char *func; size_t count; const char *datatype; int root; void *stream; bool graphCaptured; } collApi; \
		struct { const char *func; size_t count; const char *datatype; void *stream; bool graphCaptured; } p2pApi; \
		struct { void *stream; } kernelLaunch; \
		struct { \
			uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff; \
			size_t count; int root; const char *datatype; uint8_t nChannels, nWarps; \
			const char *algo; const char *proto; void *parentGroup; \
		} coll; \
		struct { \
			const char *func; void *buff; const char *datatype; size_t count; int peer; \
			uint8_t nChannels; void *parentGroup; \
		} p2p; \
		nrr_prof_proxy_op proxyOp; \
		struct { int step; } proxyStep; \
		struct { uint8_t channelId; uint64_t pTimer; } kernelCh; \
		nrr_prof_net_plugin netPlugin;

/* v5: 64-bit type, API events; coll/p2p keep a parentGroup handle. */
typedef struct nrr_prof_descr_v5 {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		NRR_PROF_DESCR_V5_MEMBERS
	};
} nrr_prof_descr_v5;
typedef nrr_prof_state_args_v4 nrr_prof_state_args_v5;
/* The v5 and v6 tables: the same members over their own descriptors. */
#define NRR_PROF_TABLE_V56(K) \
typedef struct nrr_ncclProfiler_v##K { \
	const char *name; \
	nrr_nccl_result (*init)(void **context, uint64_t commId, int *eActivationMask, const char *commName, \
				int nNodes, int nranks, int rank, nrr_nccl_logger logfn); \
	nrr_nccl_result (*startEvent)(void *context, void **eHandle, nrr_prof_descr_v##K *eDescr); \
	nrr_nccl_result (*stopEvent)(void *eHandle); \
	nrr_nccl_result (*recordEventState)(void *eHandle, int eState, nrr_prof_state_args_v##K *eStateArgs); \
	nrr_nccl_result (*finalize)(void *context); \
} nrr_ncclProfiler_v##K;
NRR_PROF_TABLE_V56(5)

/* v6: v5 plus the copy-engine (CE) descriptors; init and state args as v5. */
typedef struct nrr_prof_descr_v6 {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		NRR_PROF_DESCR_V5_MEMBERS
		struct {
			uint64_t seqNumber; const char *func; const void *sendBuff; void *recvBuff;
			size_t count; int root; const char *datatype; const char *syncStrategy;
			bool intraBatchSync; uint32_t batchSize, numBatches, ceSeqNum; void *stream;
		} ceColl;
		struct { bool isComplete; int nRanks; } ceCollSync;
		struct { int numOps; size_t totalBytes; bool useIntraSync; } ceCollBatch;
	};
} nrr_prof_descr_v6;
typedef nrr_prof_state_args_v4 nrr_prof_state_args_v6;
NRR_PROF_TABLE_V56(6)

#define NRR_PROF_VERSION_MIN 1
#define NRR_PROF_VERSION_MAX 6

/* The layouts NCCL 2.29.7's headers give on LP64 (sizes and the offsets
 * of the last members ncclrr reads): a member out of place fails here. */
#if defined(__LP64__) && !defined(__cplusplus)
#define NRR_PROF_ASSERT(x) _Static_assert(x, #x)
NRR_PROF_ASSERT(sizeof(nrr_prof_descr_v1) == 120 && offsetof(nrr_prof_descr_v1, coll.isNvls) == 112);
NRR_PROF_ASSERT(sizeof(nrr_prof_descr_v2) == 128 && offsetof(nrr_prof_descr_v2, coll.proto) == 120);
NRR_PROF_ASSERT(sizeof(nrr_prof_descr_v3) == 120 && offsetof(nrr_prof_descr_v3, coll.proto) == 112);
NRR_PROF_ASSERT(sizeof(nrr_prof_descr_v4) == 104 && offsetof(nrr_prof_descr_v4, coll.proto) == 96);
NRR_PROF_ASSERT(sizeof(nrr_prof_descr_v5) == 112 && offsetof(nrr_prof_descr_v5, coll.parentGroup) == 104 &&
		offsetof(nrr_prof_descr_v5, p2p.parentGroup) == 64);
NRR_PROF_ASSERT(sizeof(nrr_prof_descr_v6) == 112 && offsetof(nrr_prof_descr_v6, coll) == 24 &&
		offsetof(nrr_prof_descr_v6, ceColl.stream) == 104);
NRR_PROF_ASSERT(sizeof(nrr_prof_state_args_v1) == 16 && sizeof(nrr_prof_state_args_v4) == 8);
NRR_PROF_ASSERT(sizeof(nrr_ncclProfiler_v1) == 48 && sizeof(nrr_ncclProfiler_v6) == 48);
#undef NRR_PROF_ASSERT
#endif

#ifdef __cplusplus
}
#endif
#endif
