/* SPDX-License-Identifier: MIT */
/*
 * trace.h - the tracer core as hooks see it (libncclrr-trace.so).
 *
 * The generated wrappers (nrr_wrap_gen.c, from formats/api/ by
 * formats/gen/ncclrr_gen.py --emit wrappers) and the hand-written hooks
 * (dlopen/dlsym, cuGetProcAddress, verbs ops, net and profiler plugins)
 * record a call like this:
 *
 *     nrr_trace_cuMemAlloc_v2_enter(dptr, bytesize);
 *     CUresult r = real(dptr, bytesize);
 *     nrr_trace_cuMemAlloc_v2_leave(r, errno, dptr, bytesize);
 *
 * nrr_trace_<fn>_enter/_leave (generated, nrr_wrap_gen.h) preserve errno,
 * do nothing while tracing is off or the tracer itself runs on this thread,
 * and send the event to the native writer or, with --backend lttng, to
 * the LTTng-UST provider (nrr_lt_<fn>_enter/_leave in
 * libncclrr-trace-lttng.so).
 */
#ifndef NCCLRR_TRACE_H
#define NCCLRR_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include "nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

enum nrr_backend { NRR_BACKEND_OFF = 0, NRR_BACKEND_NATIVE = 1, NRR_BACKEND_LTTNG = 2 };

/* Which backend records (NRR_BACKEND_OFF until the tracer is set up, and
 * again after it gave up, e.g. on a full disk). */
extern int nrr_trace_backend;

/*
 * @return the calling thread's native stream and marks the thread busy,
 * or NULL when nothing may be recorded now (backend off or not native,
 * the thread is already inside the tracer, the stream could not be
 * created).  Every non-NULL return is paired with nrr_trace_end().
 * LTTng hooks use nrr_trace_lttng_begin() instead.
 */
nrr_tls *nrr_trace_begin(void);
void nrr_trace_end(void);
/* @return true (and marks the thread busy) when an LTTng event may be
 * emitted now; pair with nrr_trace_end(). */
bool nrr_trace_lttng_begin(void);

/* Append "key=value" metadata lines to this process's trace (rank, comm
 * ids, versions learnt while running).  Not async-signal-safe. */
void nrr_trace_meta(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A log line (NCCL_DEBUG output) on the calling thread's timeline. */
void nrr_trace_log(unsigned level, const char *text, size_t len);

#ifdef __cplusplus
}
#endif
#endif
