/* SPDX-License-Identifier: MIT */
/* bench_tp.h - the LTTng-UST baseline: one event with four integer fields. */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER ncclrr_bench

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./bench_tp.h"

#if !defined(NCCLRR_BENCH_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define NCCLRR_BENCH_TP_H

#include <lttng/tracepoint.h>

TRACEPOINT_EVENT(ncclrr_bench, call4,
	TP_ARGS(uint64_t, fn, uint64_t, a, uint64_t, b, uint64_t, c),
	TP_FIELDS(
		ctf_integer(uint64_t, fn, fn)
		ctf_integer(uint64_t, a, a)
		ctf_integer(uint64_t, b, b)
		ctf_integer(uint64_t, c, c)
	)
)

#endif

#include <lttng/tracepoint-event.h>
