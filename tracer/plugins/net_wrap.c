/* SPDX-License-Identifier: MIT */
/*
 * net_wrap.c - the ncclrr net plugin: records every ncclNet call and
 * forwards it to the user's plugin (NCCLRR_NET_PLUGIN, a path set by
 * `ncclrr record`).
 *
 * Built once per NCCL net API version as libncclrr-net-vN.so with
 * -DNRR_NET_MAX=N; variant N exports ncclNetPlugin_v6 .. ncclNetPlugin_vN.
 * NCCL takes the highest version it knows that a plugin exports, so
 * `ncclrr record` picks the variant equal to the user plugin's highest
 * version (nrr_net_plugin_version()) and NCCL then talks to the same
 * version of the user's plugin it would have used without ncclrr: no
 * version adapters, nothing translated.
 *
 * The exported symbols are GNU indirect functions whose resolver runs in
 * dlsym(): it returns the table for version K only when the user's plugin
 * has ncclNetPlugin_vK, so a version the user's plugin lacks is not found
 * (dlsym returns NULL) and NCCL goes on to the next lower one exactly as
 * with the plugin itself.  ncclCollNetPlugin_vK, ncclGinPlugin_v11,
 * ncclTunerPlugin_vK and ncclProfiler_vK, which NCCL also looks up in the
 * net plugin's library, resolve to the user plugin's own (untraced) tables.
 *
 * Every call is recorded in the v11 form of formats/api/net.api; older
 * forms are widened (int sizes -> size_t, missing ctx/config/device
 * handles/profiler handles -> NULL).
 *
 * Without a user plugin (NCCLRR_NET_PLUGIN unset or empty) init fails
 * with one INFO line, and NCCL uses its internal IB/Socket nets as it
 * would without ncclrr; those are traced by the interposer at the verbs
 * and socket layers.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_net_types.h"
#include "net_trace.h"

#ifndef NRR_NET_MAX
#error "build with -DNRR_NET_MAX=N (6..11)"
#endif
#if NRR_NET_MAX < NRR_NET_VERSION_MIN || NRR_NET_MAX > NRR_NET_VERSION_MAX
#error "NRR_NET_MAX must be 6..11"
#endif

#define NRR_EXPORT __attribute__((visibility("default")))
#define NRR_STR_(x) #x
#define NRR_STR(x) NRR_STR_(x)

/* ------------------------------------------------------------ the inner plugin */
static pthread_once_t inner_once = PTHREAD_ONCE_INIT;
static void *inner_lib;                /* dlopen handle of the user's plugin */
static const void *inner_tbl[NRR_NET_VERSION_MAX + 1]; /* its ncclNetPlugin_vK */
static bool inner_any;                 /* it has at least one version we export */
static char inner_err[768];            /* why the user's plugin cannot be used */

static void inner_load(void)
{
	const char *path = getenv("NCCLRR_NET_PLUGIN");

	if (!path || !*path)
		return;
	inner_lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!inner_lib) {
		const char *e = dlerror();
		snprintf(inner_err, sizeof(inner_err),
			 "ncclrr: Cannot load the net plugin to trace: path=%s error=%s (check NCCLRR_NET_PLUGIN; "
			 "`ncclrr record` sets it from NCCL_NET_PLUGIN)", path, e ? e : "unknown");
		return;
	}
	for (int k = NRR_NET_VERSION_MIN; k <= NRR_NET_MAX; k++) {
		char sym[32];
		snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", k);
		inner_tbl[k] = dlsym(inner_lib, sym);
		if (inner_tbl[k])
			inner_any = true;
	}
	if (!inner_any)
		snprintf(inner_err, sizeof(inner_err),
			 "ncclrr: Cannot trace the net plugin: path=%s exports=none-of-ncclNetPlugin_v6..v%d "
			 "(the wrapper libncclrr-net-v%d.so is for plugins of that version; let `ncclrr record` pick it)",
			 path, NRR_NET_MAX, NRR_NET_MAX);
}

/* Runs when NCCL dlopens us, so that the tables' names are the user
 * plugin's before NCCL reads them (NCCL_NET=<name> matching). */
__attribute__((constructor)) static void inner_ctor(void)
{
	pthread_once(&inner_once, inner_load);
}

/* No user plugin (or an unusable one): fail init so NCCL falls back to
 * its internal nets unchanged. */
static nrr_nccl_result no_inner(nrr_nccl_logger log)
{
	if (inner_err[0]) {
		if (log)
			log(NRR_NCCL_LOG_WARN, NRR_NCCL_INIT | NRR_NCCL_NET, __FILE__, __LINE__, "%s", inner_err);
		else
			fprintf(stderr, "%s\n", inner_err);
	} else if (log) {
		log(NRR_NCCL_LOG_INFO, NRR_NCCL_INIT | NRR_NCCL_NET, __FILE__, __LINE__,
		    "NET/ncclrr: no external net plugin to trace (NCCLRR_NET_PLUGIN unset); "
		    "NCCL uses its internal nets, traced at the socket and verbs layers");
	}
	return NRR_NCCL_INTERNAL_ERROR;
}

/* Widen an int size array to size_t for the record. */
#define NRR_WIDE_STACK 64
static size_t *widen_sizes(size_t *stack, int n, const int *sizes)
{
	if (!sizes || n <= 0)
		return NULL;
	size_t *w = n <= NRR_WIDE_STACK ? stack : malloc((size_t)n * sizeof(size_t));
	if (!w)
		return NULL;
	for (int i = 0; i < n; i++)
		w[i] = (size_t)(long)sizes[i];
	return w;
}
static void widen_free(size_t *stack, size_t *w)
{
	if (w && w != stack)
		free(w);
}

#define IN(K) ((const nrr_ncclNet_v##K *)inner_tbl[K])
/* The user's plugin is a black box behind the ncclNet interface: the calls
 * it makes itself (its sockets, its verbs) are not recorded, so each ncclNet
 * call is one record (and identical polls coalesce). */
#define OPAQUE(call) \
	({ \
		int o_ = nrr_trace_opaque_begin(); \
		nrr_nccl_result r_ = (call); \
		nrr_trace_opaque_end(o_); \
		r_; \
	})
#define NEED(K) do { if (!IN(K)) return NRR_NCCL_INTERNAL_ERROR; } while (0)

/* ------------------------------------------------ members alike in every version */
#define NRR_COMMON(K) \
static nrr_nccl_result w##K##_devices(int *ndev) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_devices_enter(ndev); \
	nrr_nccl_result r = OPAQUE(IN(K)->devices(ndev)); \
	nrr_trace_ncclNet_devices_leave(r, errno, ndev); \
	return r; \
} \
static nrr_nccl_result w##K##_getProperties(int dev, void *props) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_getProperties_enter(dev, (ncclNetProperties_t *)props); \
	nrr_nccl_result r = OPAQUE(IN(K)->getProperties(dev, props)); \
	nrr_trace_ncclNet_getProperties_leave(r, errno, dev, (ncclNetProperties_t *)props); \
	return r; \
} \
static nrr_nccl_result w##K##_regMrDmaBuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd, void **mhandle) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_regMrDmaBuf_enter(comm, data, size, type, offset, fd, mhandle); \
	nrr_nccl_result r = OPAQUE(IN(K)->regMrDmaBuf(comm, data, size, type, offset, fd, mhandle)); \
	nrr_trace_ncclNet_regMrDmaBuf_leave(r, errno, comm, data, size, type, offset, fd, mhandle); \
	return r; \
} \
static nrr_nccl_result w##K##_deregMr(void *comm, void *mhandle) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_deregMr_enter(comm, mhandle); \
	nrr_nccl_result r = OPAQUE(IN(K)->deregMr(comm, mhandle)); \
	nrr_trace_ncclNet_deregMr_leave(r, errno, comm, mhandle); \
	return r; \
} \
static nrr_nccl_result w##K##_iflush(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_iflush_enter(recvComm, n, data, sizes, mhandles, request); \
	nrr_nccl_result r = OPAQUE(IN(K)->iflush(recvComm, n, data, sizes, mhandles, request)); \
	nrr_trace_ncclNet_iflush_leave(r, errno, recvComm, n, data, sizes, mhandles, request); \
	return r; \
} \
static nrr_nccl_result w##K##_test(void *request, int *done, int *sizes) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_test_enter(request, done, sizes); \
	nrr_nccl_result r = OPAQUE(IN(K)->test(request, done, sizes)); \
	nrr_trace_ncclNet_test_leave(r, errno, request, done, sizes); \
	return r; \
} \
static nrr_nccl_result w##K##_closeSend(void *c) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_closeSend_enter(c); \
	nrr_nccl_result r = OPAQUE(IN(K)->closeSend(c)); \
	nrr_trace_ncclNet_closeSend_leave(r, errno, c); \
	return r; \
} \
static nrr_nccl_result w##K##_closeRecv(void *c) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_closeRecv_enter(c); \
	nrr_nccl_result r = OPAQUE(IN(K)->closeRecv(c)); \
	nrr_trace_ncclNet_closeRecv_leave(r, errno, c); \
	return r; \
} \
static nrr_nccl_result w##K##_closeListen(void *c) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_closeListen_enter(c); \
	nrr_nccl_result r = OPAQUE(IN(K)->closeListen(c)); \
	nrr_trace_ncclNet_closeListen_leave(r, errno, c); \
	return r; \
}

/* v7+: getDeviceMr, irecvConsumed; accept with a device handle */
#define NRR_V7(K) \
static nrr_nccl_result w##K##_getDeviceMr(void *comm, void *mhandle, void **dptr_mhandle) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_getDeviceMr_enter(comm, mhandle, dptr_mhandle); \
	nrr_nccl_result r = OPAQUE(IN(K)->getDeviceMr(comm, mhandle, dptr_mhandle)); \
	nrr_trace_ncclNet_getDeviceMr_leave(r, errno, comm, mhandle, dptr_mhandle); \
	return r; \
} \
static nrr_nccl_result w##K##_irecvConsumed(void *recvComm, int n, void *request) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_irecvConsumed_enter(recvComm, n, request); \
	nrr_nccl_result r = OPAQUE(IN(K)->irecvConsumed(recvComm, n, request)); \
	nrr_trace_ncclNet_irecvConsumed_leave(r, errno, recvComm, n, request); \
	return r; \
} \
static nrr_nccl_result w##K##_accept(void *listenComm, void **recvComm, void **recvDevComm) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_accept_enter(listenComm, recvComm, (ncclNetDeviceHandle_t **)recvDevComm); \
	nrr_nccl_result r = OPAQUE(IN(K)->accept(listenComm, recvComm, recvDevComm)); \
	nrr_trace_ncclNet_accept_leave(r, errno, listenComm, recvComm, (ncclNetDeviceHandle_t **)recvDevComm); \
	return r; \
}

/* v9+: makeVDevice */
#define NRR_V9(K) \
static nrr_nccl_result w##K##_makeVDevice(int *d, nrr_ncclNetVDeviceProps *props) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_makeVDevice_enter(d, (ncclNetVDeviceProps_t *)props); \
	nrr_nccl_result r = OPAQUE(IN(K)->makeVDevice(d, props)); \
	nrr_trace_ncclNet_makeVDevice_leave(r, errno, d, (ncclNetVDeviceProps_t *)props); \
	return r; \
}

/* v6..v9: init(logFunction) */
#define NRR_INIT_LOG(K) \
static nrr_nccl_result w##K##_init(nrr_nccl_logger log) \
{ \
	if (!IN(K)) \
		return no_inner(log); \
	nrr_trace_ncclNet_init_enter(NULL, 0, NULL, (ncclDebugLogger_t)log, NULL); \
	nrr_nccl_result r = OPAQUE(IN(K)->init(log)); \
	nrr_trace_ncclNet_init_leave(r, errno, NULL, 0, NULL, (ncclDebugLogger_t)log, NULL); \
	return r; \
}

/* v6..v10: listen(dev, handle, listenComm) */
#define NRR_LISTEN_DEV(K) \
static nrr_nccl_result w##K##_listen(int dev, void *handle, void **listenComm) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_listen_enter(NULL, dev, handle, listenComm); \
	nrr_nccl_result r = OPAQUE(IN(K)->listen(dev, handle, listenComm)); \
	nrr_trace_ncclNet_listen_leave(r, errno, NULL, dev, handle, listenComm); \
	return r; \
}

/* v7..v9: connect(dev, handle, sendComm, sendDevComm) */
#define NRR_CONNECT_DEV(K) \
static nrr_nccl_result w##K##_connect(int dev, void *handle, void **sendComm, void **sendDevComm) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_connect_enter(NULL, dev, handle, sendComm, (ncclNetDeviceHandle_t **)sendDevComm); \
	nrr_nccl_result r = OPAQUE(IN(K)->connect(dev, handle, sendComm, sendDevComm)); \
	nrr_trace_ncclNet_connect_leave(r, errno, NULL, dev, handle, sendComm, (ncclNetDeviceHandle_t **)sendDevComm); \
	return r; \
}

/* v6, v7: regMr with an int size */
#define NRR_REGMR_INT(K) \
static nrr_nccl_result w##K##_regMr(void *comm, void *data, int size, int type, void **mhandle) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_regMr_enter(comm, data, (size_t)(long)size, type, mhandle); \
	nrr_nccl_result r = OPAQUE(IN(K)->regMr(comm, data, size, type, mhandle)); \
	nrr_trace_ncclNet_regMr_leave(r, errno, comm, data, (size_t)(long)size, type, mhandle); \
	return r; \
}

/* v8+: regMr with a size_t size */
#define NRR_REGMR_SIZE(K) \
static nrr_nccl_result w##K##_regMr(void *comm, void *data, size_t size, int type, void **mhandle) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_regMr_enter(comm, data, size, type, mhandle); \
	nrr_nccl_result r = OPAQUE(IN(K)->regMr(comm, data, size, type, mhandle)); \
	nrr_trace_ncclNet_regMr_leave(r, errno, comm, data, size, type, mhandle); \
	return r; \
}

/* v6..v8: isend/irecv with int sizes, no profiler handles */
#define NRR_SENDRECV_INT(K) \
static nrr_nccl_result w##K##_isend(void *sendComm, void *data, int size, int tag, void *mhandle, void **request) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_isend_enter(sendComm, data, (size_t)(long)size, tag, mhandle, NULL, request); \
	nrr_nccl_result r = OPAQUE(IN(K)->isend(sendComm, data, size, tag, mhandle, request)); \
	nrr_trace_ncclNet_isend_leave(r, errno, sendComm, data, (size_t)(long)size, tag, mhandle, NULL, request); \
	return r; \
} \
static nrr_nccl_result w##K##_irecv(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles, void **request) \
{ \
	NEED(K); \
	size_t stack[NRR_WIDE_STACK]; \
	size_t *wide = widen_sizes(stack, n, sizes); \
	nrr_trace_ncclNet_irecv_enter(recvComm, n, data, wide, tags, mhandles, NULL, request); \
	nrr_nccl_result r = OPAQUE(IN(K)->irecv(recvComm, n, data, sizes, tags, mhandles, request)); \
	nrr_trace_ncclNet_irecv_leave(r, errno, recvComm, n, data, wide, tags, mhandles, NULL, request); \
	widen_free(stack, wide); \
	return r; \
}

/* v10, v11: isend/irecv with size_t sizes and profiler handles */
#define NRR_SENDRECV_P(K) \
static nrr_nccl_result w##K##_isend(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle, void **request) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_isend_enter(sendComm, data, size, tag, mhandle, phandle, request); \
	nrr_nccl_result r = OPAQUE(IN(K)->isend(sendComm, data, size, tag, mhandle, phandle, request)); \
	nrr_trace_ncclNet_isend_leave(r, errno, sendComm, data, size, tag, mhandle, phandle, request); \
	return r; \
} \
static nrr_nccl_result w##K##_irecv(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles, void **phandles, void **request) \
{ \
	NEED(K); \
	nrr_trace_ncclNet_irecv_enter(recvComm, n, data, sizes, tags, mhandles, phandles, request); \
	nrr_nccl_result r = OPAQUE(IN(K)->irecv(recvComm, n, data, sizes, tags, mhandles, phandles, request)); \
	nrr_trace_ncclNet_irecv_leave(r, errno, recvComm, n, data, sizes, tags, mhandles, phandles, request); \
	return r; \
}

/* The exported symbol ncclNetPlugin_vK: an indirect function resolved in
 * dlsym() to our table when the user's plugin has version K (or when
 * there is no usable user plugin: then init explains and fails), else to
 * NULL. */
#define NRR_EXPORT_NET(K) \
static void (*resolve_net_v##K(void))(void) \
{ \
	pthread_once(&inner_once, inner_load); \
	if (IN(K)) { \
		tbl_v##K.name = IN(K)->name; \
		return (void (*)(void))(void *)&tbl_v##K; \
	} \
	if (inner_any) \
		return NULL; \
	return (void (*)(void))(void *)&tbl_v##K; \
} \
NRR_EXPORT void ncclNetPlugin_v##K(void) __attribute__((ifunc("resolve_net_v" #K)));

/* A table the user's plugin library provides besides its net, forwarded
 * untouched (NCCL looks for these in the net plugin's library). */
#define NRR_FORWARD(SYM) \
static void (*resolve_##SYM(void))(void) \
{ \
	pthread_once(&inner_once, inner_load); \
	return inner_lib ? (void (*)(void))dlsym(inner_lib, #SYM) : NULL; \
} \
NRR_EXPORT void SYM(void) __attribute__((ifunc("resolve_" #SYM)));

/* ------------------------------------------------------------------ v6 */
NRR_COMMON(6)
NRR_INIT_LOG(6)
NRR_LISTEN_DEV(6)
NRR_REGMR_INT(6)
NRR_SENDRECV_INT(6)

static nrr_nccl_result w6_connect(int dev, void *handle, void **sendComm)
{
	NEED(6);
	nrr_trace_ncclNet_connect_enter(NULL, dev, handle, sendComm, NULL);
	nrr_nccl_result r = OPAQUE(IN(6)->connect(dev, handle, sendComm));
	nrr_trace_ncclNet_connect_leave(r, errno, NULL, dev, handle, sendComm, NULL);
	return r;
}

static nrr_nccl_result w6_accept(void *listenComm, void **recvComm)
{
	NEED(6);
	nrr_trace_ncclNet_accept_enter(listenComm, recvComm, NULL);
	nrr_nccl_result r = OPAQUE(IN(6)->accept(listenComm, recvComm));
	nrr_trace_ncclNet_accept_leave(r, errno, listenComm, recvComm, NULL);
	return r;
}

static nrr_ncclNet_v6 tbl_v6 = {
	"ncclrr", w6_init, w6_devices, w6_getProperties, w6_listen, w6_connect, w6_accept,
	w6_regMr, w6_regMrDmaBuf, w6_deregMr, w6_isend, w6_irecv, w6_iflush, w6_test,
	w6_closeSend, w6_closeRecv, w6_closeListen,
};
NRR_EXPORT_NET(6)
NRR_FORWARD(ncclCollNetPlugin_v6)

/* ------------------------------------------------------------------ v7 */
#if NRR_NET_MAX >= 7
NRR_COMMON(7)
NRR_V7(7)
NRR_INIT_LOG(7)
NRR_LISTEN_DEV(7)
NRR_CONNECT_DEV(7)
NRR_REGMR_INT(7)
NRR_SENDRECV_INT(7)

static nrr_ncclNet_v7 tbl_v7 = {
	"ncclrr", w7_init, w7_devices, w7_getProperties, w7_listen, w7_connect, w7_accept,
	w7_regMr, w7_regMrDmaBuf, w7_deregMr, w7_isend, w7_irecv, w7_iflush, w7_test,
	w7_closeSend, w7_closeRecv, w7_closeListen, w7_getDeviceMr, w7_irecvConsumed,
};
NRR_EXPORT_NET(7)
NRR_FORWARD(ncclCollNetPlugin_v7)
#endif

/* ------------------------------------------------------------------ v8 */
#if NRR_NET_MAX >= 8
NRR_COMMON(8)
NRR_V7(8)
NRR_INIT_LOG(8)
NRR_LISTEN_DEV(8)
NRR_CONNECT_DEV(8)
NRR_REGMR_SIZE(8)
NRR_SENDRECV_INT(8)

static nrr_ncclNet_v8 tbl_v8 = {
	"ncclrr", w8_init, w8_devices, w8_getProperties, w8_listen, w8_connect, w8_accept,
	w8_regMr, w8_regMrDmaBuf, w8_deregMr, w8_isend, w8_irecv, w8_iflush, w8_test,
	w8_closeSend, w8_closeRecv, w8_closeListen, w8_getDeviceMr, w8_irecvConsumed,
};
NRR_EXPORT_NET(8)
NRR_FORWARD(ncclCollNetPlugin_v8)
#endif

/* ------------------------------------------------------------------ v9 */
#if NRR_NET_MAX >= 9
NRR_COMMON(9)
NRR_V7(9)
NRR_V9(9)
NRR_INIT_LOG(9)
NRR_LISTEN_DEV(9)
NRR_CONNECT_DEV(9)
NRR_REGMR_SIZE(9)

static nrr_nccl_result w9_isend(void *sendComm, void *data, size_t size, int tag, void *mhandle, void **request)
{
	NEED(9);
	nrr_trace_ncclNet_isend_enter(sendComm, data, size, tag, mhandle, NULL, request);
	nrr_nccl_result r = OPAQUE(IN(9)->isend(sendComm, data, size, tag, mhandle, request));
	nrr_trace_ncclNet_isend_leave(r, errno, sendComm, data, size, tag, mhandle, NULL, request);
	return r;
}

static nrr_nccl_result w9_irecv(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles, void **request)
{
	NEED(9);
	nrr_trace_ncclNet_irecv_enter(recvComm, n, data, sizes, tags, mhandles, NULL, request);
	nrr_nccl_result r = OPAQUE(IN(9)->irecv(recvComm, n, data, sizes, tags, mhandles, request));
	nrr_trace_ncclNet_irecv_leave(r, errno, recvComm, n, data, sizes, tags, mhandles, NULL, request);
	return r;
}

static nrr_ncclNet_v9 tbl_v9 = {
	"ncclrr", w9_init, w9_devices, w9_getProperties, w9_listen, w9_connect, w9_accept,
	w9_regMr, w9_regMrDmaBuf, w9_deregMr, w9_isend, w9_irecv, w9_iflush, w9_test,
	w9_closeSend, w9_closeRecv, w9_closeListen, w9_getDeviceMr, w9_irecvConsumed,
	w9_makeVDevice,
};
NRR_EXPORT_NET(9)
NRR_FORWARD(ncclCollNetPlugin_v9)
#endif

/* ----------------------------------------------------------------- v10 */
#if NRR_NET_MAX >= 10
NRR_COMMON(10)
NRR_V7(10)
NRR_V9(10)
NRR_LISTEN_DEV(10)
NRR_REGMR_SIZE(10)
NRR_SENDRECV_P(10)

static nrr_nccl_result w10_init(nrr_nccl_logger log, nrr_nccl_prof_callback prof)
{
	if (!IN(10))
		return no_inner(log);
	nrr_trace_ncclNet_init_enter(NULL, 0, NULL, (ncclDebugLogger_t)log, (void *)prof);
	nrr_nccl_result r = OPAQUE(IN(10)->init(log, prof));
	nrr_trace_ncclNet_init_leave(r, errno, NULL, 0, NULL, (ncclDebugLogger_t)log, (void *)prof);
	return r;
}

/* v10's connect takes the comm config, which the v11 form moved to init:
 * the record has ctx NULL and no config. */
static nrr_nccl_result w10_connect(int dev, nrr_ncclNetCommConfig *config, void *handle, void **sendComm, void **sendDevComm)
{
	NEED(10);
	nrr_trace_ncclNet_connect_enter(NULL, dev, handle, sendComm, (ncclNetDeviceHandle_t **)sendDevComm);
	nrr_nccl_result r = OPAQUE(IN(10)->connect(dev, config, handle, sendComm, sendDevComm));
	nrr_trace_ncclNet_connect_leave(r, errno, NULL, dev, handle, sendComm, (ncclNetDeviceHandle_t **)sendDevComm);
	return r;
}

static nrr_ncclNet_v10 tbl_v10 = {
	"ncclrr", w10_init, w10_devices, w10_getProperties, w10_listen, w10_connect, w10_accept,
	w10_regMr, w10_regMrDmaBuf, w10_deregMr, w10_isend, w10_irecv, w10_iflush, w10_test,
	w10_closeSend, w10_closeRecv, w10_closeListen, w10_getDeviceMr, w10_irecvConsumed,
	w10_makeVDevice,
};
NRR_EXPORT_NET(10)
NRR_FORWARD(ncclCollNetPlugin_v10)
#endif

/* ----------------------------------------------------------------- v11 */
#if NRR_NET_MAX >= 11
NRR_COMMON(11)
NRR_V7(11)
NRR_V9(11)
NRR_REGMR_SIZE(11)
NRR_SENDRECV_P(11)

static nrr_nccl_result w11_init(void **ctx, uint64_t commId, nrr_ncclNetCommConfig *config, nrr_nccl_logger log,
				nrr_nccl_prof_callback prof)
{
	if (!IN(11))
		return no_inner(log);
	nrr_trace_ncclNet_init_enter(ctx, commId, (ncclNetCommConfig_t *)config, (ncclDebugLogger_t)log, (void *)prof);
	nrr_nccl_result r = OPAQUE(IN(11)->init(ctx, commId, config, log, prof));
	nrr_trace_ncclNet_init_leave(r, errno, ctx, commId, (ncclNetCommConfig_t *)config, (ncclDebugLogger_t)log, (void *)prof);
	return r;
}

static nrr_nccl_result w11_listen(void *ctx, int dev, void *handle, void **listenComm)
{
	NEED(11);
	nrr_trace_ncclNet_listen_enter(ctx, dev, handle, listenComm);
	nrr_nccl_result r = OPAQUE(IN(11)->listen(ctx, dev, handle, listenComm));
	nrr_trace_ncclNet_listen_leave(r, errno, ctx, dev, handle, listenComm);
	return r;
}

static nrr_nccl_result w11_connect(void *ctx, int dev, void *handle, void **sendComm, void **sendDevComm)
{
	NEED(11);
	nrr_trace_ncclNet_connect_enter(ctx, dev, handle, sendComm, (ncclNetDeviceHandle_t **)sendDevComm);
	nrr_nccl_result r = OPAQUE(IN(11)->connect(ctx, dev, handle, sendComm, sendDevComm));
	nrr_trace_ncclNet_connect_leave(r, errno, ctx, dev, handle, sendComm, (ncclNetDeviceHandle_t **)sendDevComm);
	return r;
}

static nrr_nccl_result w11_finalize(void *ctx)
{
	NEED(11);
	nrr_trace_ncclNet_finalize_enter(ctx);
	nrr_nccl_result r = OPAQUE(IN(11)->finalize(ctx));
	nrr_trace_ncclNet_finalize_leave(r, errno, ctx);
	return r;
}

static nrr_nccl_result w11_setNetAttr(void *ctx, nrr_ncclNetAttr *attr)
{
	NEED(11);
	nrr_trace_ncclNet_setNetAttr_enter(ctx, (ncclNetAttr_t *)attr);
	nrr_nccl_result r = OPAQUE(IN(11)->setNetAttr(ctx, attr));
	nrr_trace_ncclNet_setNetAttr_leave(r, errno, ctx, (ncclNetAttr_t *)attr);
	return r;
}

static nrr_ncclNet_v11 tbl_v11 = {
	"ncclrr", w11_init, w11_devices, w11_getProperties, w11_listen, w11_connect, w11_accept,
	w11_regMr, w11_regMrDmaBuf, w11_deregMr, w11_isend, w11_irecv, w11_iflush, w11_test,
	w11_closeSend, w11_closeRecv, w11_closeListen, w11_getDeviceMr, w11_irecvConsumed,
	w11_makeVDevice, w11_finalize, w11_setNetAttr,
};
NRR_EXPORT_NET(11)
NRR_FORWARD(ncclCollNetPlugin_v11)
NRR_FORWARD(ncclGinPlugin_v11)
#endif

/* Tables NCCL also looks up in the net plugin's library when no tuner or
 * profiler plugin of their own is found (NCCL 2.19+ / 2.26+). */
NRR_FORWARD(ncclTunerPlugin_v2)
NRR_FORWARD(ncclTunerPlugin_v3)
NRR_FORWARD(ncclTunerPlugin_v4)
NRR_FORWARD(ncclTunerPlugin_v5)
NRR_FORWARD(ncclProfiler_v1)
NRR_FORWARD(ncclProfiler_v2)
NRR_FORWARD(ncclProfiler_v3)
NRR_FORWARD(ncclProfiler_v4)
NRR_FORWARD(ncclProfiler_v5)

/* Which variant this is (`ncclrr record` and the tests check it). */
NRR_EXPORT const int ncclrr_net_wrapper_version = NRR_NET_MAX;
