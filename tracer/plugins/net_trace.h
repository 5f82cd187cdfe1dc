/* SPDX-License-Identifier: MIT */
/*
 * net_trace.h - the recording hooks the net-plugin wrapper calls, one
 * enter/leave pair per ncclNet member in its widest (v11) form as
 * formats/api/net.api describes it.  They are defined by the tracer core
 * (generated into nrr_wrap_gen.h / libncclrr-trace.so: the prototypes
 * here must stay identical to the generated ones) or, in the unit tests,
 * by tracer/plugins/tests/stub_trace.c.
 */
#ifndef NCCLRR_NET_TRACE_H
#define NCCLRR_NET_TRACE_H

#include "nrr_api_gen.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Calls made by this thread between begin and end are not recorded.
 * @return what to pass to end (nesting-safe). */
int nrr_trace_opaque_begin(void);
void nrr_trace_opaque_end(int token);

void nrr_trace_ncclNet_init_enter(void** ctx, uint64_t commId, ncclNetCommConfig_t* config, ncclDebugLogger_t logFunction, void* profFunction);
void nrr_trace_ncclNet_init_leave(ncclResult_t nrr_ret, int nrr_err, void** ctx, uint64_t commId, ncclNetCommConfig_t* config, ncclDebugLogger_t logFunction, void* profFunction);
void nrr_trace_ncclNet_devices_enter(int* ndev);
void nrr_trace_ncclNet_devices_leave(ncclResult_t nrr_ret, int nrr_err, int* ndev);
void nrr_trace_ncclNet_getProperties_enter(int dev, ncclNetProperties_t* props);
void nrr_trace_ncclNet_getProperties_leave(ncclResult_t nrr_ret, int nrr_err, int dev, ncclNetProperties_t* props);
void nrr_trace_ncclNet_listen_enter(void* ctx, int dev, void* handle, void** listenComm);
void nrr_trace_ncclNet_listen_leave(ncclResult_t nrr_ret, int nrr_err, void* ctx, int dev, void* handle, void** listenComm);
void nrr_trace_ncclNet_connect_enter(void* ctx, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_t** sendDevComm);
void nrr_trace_ncclNet_connect_leave(ncclResult_t nrr_ret, int nrr_err, void* ctx, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_t** sendDevComm);
void nrr_trace_ncclNet_accept_enter(void* listenComm, void** recvComm, ncclNetDeviceHandle_t** recvDevComm);
void nrr_trace_ncclNet_accept_leave(ncclResult_t nrr_ret, int nrr_err, void* listenComm, void** recvComm, ncclNetDeviceHandle_t** recvDevComm);
void nrr_trace_ncclNet_regMr_enter(void* comm, void* data, size_t size, int type, void** mhandle);
void nrr_trace_ncclNet_regMr_leave(ncclResult_t nrr_ret, int nrr_err, void* comm, void* data, size_t size, int type, void** mhandle);
void nrr_trace_ncclNet_regMrDmaBuf_enter(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
void nrr_trace_ncclNet_regMrDmaBuf_leave(ncclResult_t nrr_ret, int nrr_err, void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
void nrr_trace_ncclNet_deregMr_enter(void* comm, void* mhandle);
void nrr_trace_ncclNet_deregMr_leave(ncclResult_t nrr_ret, int nrr_err, void* comm, void* mhandle);
void nrr_trace_ncclNet_isend_enter(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
void nrr_trace_ncclNet_isend_leave(ncclResult_t nrr_ret, int nrr_err, void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
void nrr_trace_ncclNet_irecv_enter(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles, void** request);
void nrr_trace_ncclNet_irecv_leave(ncclResult_t nrr_ret, int nrr_err, void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles, void** request);
void nrr_trace_ncclNet_iflush_enter(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
void nrr_trace_ncclNet_iflush_leave(ncclResult_t nrr_ret, int nrr_err, void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
void nrr_trace_ncclNet_test_enter(void* request, int* done, int* sizes);
void nrr_trace_ncclNet_test_leave(ncclResult_t nrr_ret, int nrr_err, void* request, int* done, int* sizes);
void nrr_trace_ncclNet_closeSend_enter(void* sendComm);
void nrr_trace_ncclNet_closeSend_leave(ncclResult_t nrr_ret, int nrr_err, void* sendComm);
void nrr_trace_ncclNet_closeRecv_enter(void* recvComm);
void nrr_trace_ncclNet_closeRecv_leave(ncclResult_t nrr_ret, int nrr_err, void* recvComm);
void nrr_trace_ncclNet_closeListen_enter(void* listenComm);
void nrr_trace_ncclNet_closeListen_leave(ncclResult_t nrr_ret, int nrr_err, void* listenComm);
void nrr_trace_ncclNet_getDeviceMr_enter(void* comm, void* mhandle, void** dptr_mhandle);
void nrr_trace_ncclNet_getDeviceMr_leave(ncclResult_t nrr_ret, int nrr_err, void* comm, void* mhandle, void** dptr_mhandle);
void nrr_trace_ncclNet_irecvConsumed_enter(void* recvComm, int n, void* request);
void nrr_trace_ncclNet_irecvConsumed_leave(ncclResult_t nrr_ret, int nrr_err, void* recvComm, int n, void* request);
void nrr_trace_ncclNet_makeVDevice_enter(int* d, ncclNetVDeviceProps_t* props);
void nrr_trace_ncclNet_makeVDevice_leave(ncclResult_t nrr_ret, int nrr_err, int* d, ncclNetVDeviceProps_t* props);
void nrr_trace_ncclNet_finalize_enter(void* ctx);
void nrr_trace_ncclNet_finalize_leave(ncclResult_t nrr_ret, int nrr_err, void* ctx);
void nrr_trace_ncclNet_setNetAttr_enter(void* ctx, ncclNetAttr_t* netAttr);
void nrr_trace_ncclNet_setNetAttr_leave(ncclResult_t nrr_ret, int nrr_err, void* ctx, ncclNetAttr_t* netAttr);

#ifdef __cplusplus
}
#endif
#endif
