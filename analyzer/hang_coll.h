/* SPDX-License-Identifier: MIT */
/*
 * hang_coll.h - which collective a process was in when its trace ended,
 * from the NCCL profiler events ncclrr's profiler plugin records
 * (formats/api/profiler.api): the last collective or point-to-point
 * operation started, whether it, the group around it and the proxy
 * operations of the process are still open.  hang.c keeps one per process.
 */
#ifndef NCCLRR_HANG_COLL_H
#define NCCLRR_HANG_COLL_H

#include <stdbool.h>
#include <stdint.h>
#include "nrt.h"

#define NRR_COLL_GROUPS 16

struct nrr_coll_state {
	bool seen;              /* a profiler event was recorded */
	char last[192];         /* "ncclAllReduce count=1048576 datatype=float seq=0", "" before one */
	uint64_t last_id;       /* its event number */
	uint64_t last_wall;     /* when it started */
	bool last_stopped;
	uint64_t groups[NRR_COLL_GROUPS];   /* open Group/GroupApi events */
	unsigned ngroups;
	uint64_t proxy_open;    /* proxy operations started and not stopped */
};

/* @return whether @fn is a profiler event (these are not calls the
 * process waited in: the caller keeps them out of its call analysis). */
bool nrr_coll_is_event(const nrr_fn_schema *fn);
/* Follow one recorded profiler event, which started at @wall. */
void nrr_coll_on_event(struct nrr_coll_state *s, const nrr_call *c, uint64_t wall);
/* @return whether the process was still in its last collective: the
 * operation, its group or a proxy operation not stopped. */
bool nrr_coll_open(const struct nrr_coll_state *s);

#endif
