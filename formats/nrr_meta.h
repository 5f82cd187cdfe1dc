/* SPDX-License-Identifier: MIT */
/*
 * nrr_meta.h - values every reader of a trace takes from its metadata the
 * same way (header-only: the replayer, the analyzer and the CLI include it).
 */
#ifndef NRR_META_H
#define NRR_META_H

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "nrt.h"

/* The largest rank a trace's metadata may give (above it: damaged); an
 * int holds every rank. */
#define NRR_META_RANK_MAX ((long)INT_MAX)

/* The rank of the process @r traced: its metadata's `rank` (the tracer
 * writes NCCL's rank, or the launcher's when NCCL never said).
 * @return the rank (0..NRR_META_RANK_MAX), -ENOENT when the trace has
 * none, -EINVAL when the value is not a rank number (damaged metadata:
 * nrr_reader_meta(r, "rank") shows it). */
static inline long nrr_meta_rank(const nrr_reader *r)
{
	const char *v = nrr_reader_meta(r, "rank");
	char *end;
	if (!v)
		return -ENOENT;
	if (*v < '0' || *v > '9')
		return -EINVAL;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (*end || errno || n > NRR_META_RANK_MAX)
		return -EINVAL;
	return n;
}

#endif
