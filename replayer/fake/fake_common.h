/* SPDX-License-Identifier: MIT */
/*
 * fake_common.h - what the fake CUDA driver and the fake NVML share: the
 * virtual host they describe (from NCCLRR_TOPO / NCCLRR_HOST), per-API call
 * counters written to $NCCLRR_FAKE_STATS at exit, and the fault switch
 * NCCLRR_FAULT. Each library links its own copy; nothing here is exported.
 */
#ifndef NRR_FAKE_COMMON_H
#define NRR_FAKE_COMMON_H

#include <stdatomic.h>
#include <stdint.h>

#include "nrr_topo.h"

/* The exported entry points are found by name (dlsym, cuGetProcAddress);
 * their prototypes are the CUDA / NVML ABI, not a header of this project. */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#define FAKE_HIDDEN __attribute__((visibility("hidden")))
#define FAKE_EXPORT __attribute__((visibility("default")))

/* ---- the virtual host --------------------------------------------------- */
struct fake_host {
	const nrr_topo *topo;           /* whole cluster */
	const nrr_topo_host *host;      /* this process's virtual host */
	int host_index;
	int ndev;                       /* visible devices */
	const nrr_topo_gpu *dev[64];    /* visible device i -> GPU of the host */
	int rank;                       /* NCCLRR_RANK, -1 if unset */
	int local_rank;                 /* NCCLRR_LOCAL_RANK, -1 if unset */
	char error[600];                /* why loading failed ("" if fine) */
};

/* The host, loaded once. Never NULL; ->ndev == 0 and ->error set when the
 * topology could not be loaded. */
FAKE_HIDDEN const struct fake_host *fake_host(void);

/* Visible device index of the GPU with PCI bus id @busid (any spelling), or -1. */
FAKE_HIDDEN int fake_dev_by_busid(const char *busid);

/* ---- counters and faults ------------------------------------------------ */
struct fake_api {
	const char *name;               /* base name: "cuMemAlloc" */
	atomic_ulong count;
	atomic_int registered;
	struct fake_api *next;
};

/* Count a call; @return 0, or the error code the fault switch injects. */
FAKE_HIDDEN int fake_enter(struct fake_api *api);

/* Provided by each library: the error code of a name ("CUDA_ERROR_INVALID_VALUE",
 * "cudaErrorInvalidValue", "NVML_ERROR_UNKNOWN"), -1 if unknown (numbers are
 * the fault switch's); whether an API name is its own (a rule for another
 * library is left to that one); what its error names look like, for messages. */
FAKE_HIDDEN int fake_lib_error_code(const char *name);
FAKE_HIDDEN int fake_lib_owns(const char *api);
FAKE_HIDDEN extern const char fake_lib_what[];
/* For libraries whose errors are errnos (socket calls, verbs): the errno
 * of a name such as "ECONNREFUSED", -1 if none. */
FAKE_HIDDEN int fake_errno_by_name(const char *name);

/* stderr diagnostics: always for errors; NCCLRR_FAKE_DEBUG=1 for traces. */
FAKE_HIDDEN extern int fake_debug;
FAKE_HIDDEN void fake_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define FAKE_DBG(...) do { if (fake_debug) fake_log(__VA_ARGS__); } while (0)

/* ---- live handles -------------------------------------------------------- */
/* Every object handed out as an opaque handle (context, stream, event,
 * module, function, VMM allocation handle) is registered while it lives.
 * The entry points ask fake_handle_live() before they dereference a handle,
 * so a value the fake never gave out (stale, garbage, or taken from another
 * process's trace) is an error result instead of a SIGSEGV. One lock-protected
 * open-addressing set of pointers; a lookup allocates nothing. */
/* @return 0, or -1 when out of memory (the caller fails the create). */
FAKE_HIDDEN int fake_handle_add(const void *p);
/* @return 1 when @p was live (and is now gone), 0 otherwise: of two threads
 * destroying the same handle, one frees it. */
FAKE_HIDDEN int fake_handle_del(const void *p);
FAKE_HIDDEN int fake_handle_live(const void *p);

/* Every entry point's preamble: count the call, log it, and fail it when the
 * fault switch says so. The CUDA driver's and NVML's entry points get it from
 * the generated nrr_fake_cuda_entry.c (formats/api/cuda_driver.api) and
 * nrr_fake_nvml_entry.c (formats/api/nvml.api). */
#define FAKE_COUNT(nm, errtype) \
	static struct fake_api api_ = { .name = nm }; \
	do { \
		int inj_ = fake_enter(&api_); \
		if (inj_) \
			return (errtype)inj_; \
	} while (0)

#endif
