/* SPDX-License-Identifier: MIT */
/*
 * nrr_env.h - the environment variables ncclrr knows: what the tracer
 * records, what a launcher (ncclrr run or the real cluster's) sets per
 * rank, what differs between two runs of one job, and which variables
 * give a rank's placement.  One table (env.c) that the tracer, runinfo
 * (bisect, diff) and `replay --rerun` read; the launcher sets the
 * NCCLRR_* ones it lists.
 */
#ifndef NRR_ENV_H
#define NRR_ENV_H

#include <stdbool.h>
#include <stddef.h>

enum {
	NRR_ENV_RECORD = 1 << 0,     /* the tracer records it (meta env.NAME) */
	NRR_ENV_SETTING = 1 << 1,    /* a setting of a library of the job (NCCL,
				      * CUDA ...): `replay --rerun` may give one */
	NRR_ENV_LAUNCH = 1 << 2,     /* set per rank by a launcher (placement, the
				      * fake runtime, the tracer): rerun never
				      * gives it back */
	NRR_ENV_PER_RUN = 1 << 3,    /* differs between two runs of one job
				      * (ids, ncclrr's own paths): runinfo leaves
				      * it out of the comparison */
	NRR_ENV_RANK = 1 << 4,       /* the process's rank */
	NRR_ENV_LOCAL_RANK = 1 << 5, /* its rank on its host */
	NRR_ENV_HOST_INDEX = 1 << 6, /* its host's number */
	NRR_ENV_BY_RUN = 1 << 7,     /* set per rank by `ncclrr run` itself, from
				      * the placement and its options (a subset
				      * of NRR_ENV_LAUNCH, which also holds the
				      * other launchers' and ncclrr's own switches
				      * such as NCCLRR_FAULT): a re-run under
				      * ncclrr run (bisect) never passes it on */
	NRR_ENV_FABRIC = 1 << 8,     /* a setting of the fake cluster's hardware
				      * (the verbs fabric's retry timing): part of
				      * the machine the job ran on, like its
				      * topology, so rerun gives it back though
				      * it is one of ncclrr's own (LAUNCH) */
};

/* A name, or a prefix when it ends in '_' (a prefix matches longer names
 * only), and what it is (NRR_ENV_*). */
struct nrr_env_var {
	const char *name;
	unsigned flags;
};

/* The table; the NRR_ENV_RANK entries in the order the tracer believes
 * them (nrr_env_rank_var()). */
extern const struct nrr_env_var nrr_env_vars[];
extern const size_t nrr_env_nvars;

/* The flags of the variable @name (@len bytes, no '=' needed): those of
 * every entry that matches it, together; 0 for a variable ncclrr does not
 * know. */
unsigned nrr_env_flags(const char *name, size_t len);

/* The @i-th variable that holds a rank (NRR_ENV_RANK), in the order the
 * tracer believes them; NULL past the last. */
const char *nrr_env_rank_var(size_t i);

#endif
