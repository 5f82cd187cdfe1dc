/* SPDX-License-Identifier: MIT */
/*
 * replay.h - `ncclrr replay`: re-execute a recorded run on this machine.
 *
 * The coordinator (nrr_replay) checks every trace, works out the recorded
 * failure, forks one worker per recorded process (or per process of the
 * --ranks subset) and reports the first divergence or the reproduced
 * failure.  See man/ncclrr-replay.1.
 */
#ifndef NCCLRR_REPLAY_H
#define NCCLRR_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nrt.h"

/* --inject: which recorded calls are answered from the trace */
enum nrr_inject {
	NRR_INJECT_ERRORS = 0, /* calls recorded as failed fail the same way, without running */
	NRR_INJECT_ALL = 1,    /* every CUDA/NVML/verbs call answered from the trace */
	NRR_INJECT_NONE = 2,   /* everything runs; disagreements are divergences */
};

/* What the coordinator learnt about one recorded process. */
/* The end of a process killed outright (no end recorded while most
 * processes have one: nrr_no_end_means_killed). */
#define NRR_END_KILLED "killed (no end recorded: SIGKILL?)"

struct nrr_proc_info {
	const char *path;    /* its .nrt file */
	char who[96];        /* "rank 3" or "host:pid" */
	int rank;            /* -1 when the trace does not say */
	char end[64];        /* how it ended ("exit 1", "signal SIGKILL", NRR_END_KILLED, "" unknown) */
	char topo[512], host[32]; /* recorded NCCLRR_TOPO, NCCLRR_HOST */
	int inject;          /* enum nrr_inject for its CUDA/NVML/verbs calls: the
	                      * option's, or ALL when its cluster is unknown */
	bool selected;       /* replayed by a worker (else served from its trace) */
	uint64_t end_wall;   /* recorded wall time of its end (ns) */
	/* Killed outright, its trace is whole until here: the earliest last
	 * return of a thread that was running (not in a call) at the end.
	 * Other threads' records may go further (their chunks were written
	 * later), but what the running ones did then is lost. */
	uint64_t whole_wall;
	uint64_t calls;
	uint64_t units;      /* what a worker would replay */
	bool uses_cuda;      /* has CUDA driver / NVML / verbs calls to replay */
	bool gpu;            /* makes calls of the GPU stack (nrr_call_gpu_side): no helper */
	bool stopped;        /* ended by the job's stop from outside (nrr_end_by_stop) */
	bool any_killed;     /* some process of the run was killed outright */
	double wall_s;       /* recorded duration (first to last record) */
};

static inline bool nrr_proc_killed(const struct nrr_proc_info *pi)
{
	return !strcmp(pi->end, NRR_END_KILLED);
}

struct nrr_replay_opts {
	nrr_reader **readers;  /* one per recorded process */
	size_t n;
	const char *dir;       /* for messages */
	const int *ranks;      /* --ranks subset, NULL: every rank */
	size_t nranks;
	bool all_processes;    /* --all-processes: helpers too (launchers, daemons, fork stubs) */
	int inject;            /* enum nrr_inject */
	unsigned repeat;       /* 1 by default */
	bool chaos;
	uint64_t chaos_seed;
	int until_rank;        /* -1: none */
	uint64_t until_seq;
	int timeout_s;         /* no call finished anywhere for this long: hang */
	const char *topo;      /* overrides the recorded cluster file */
	const char *fake_libdir;
	const char *net_plugin; /* --net-plugin: the ncclNet plugin net calls run against (NULL: ncclrr's socket one) */
	bool verbose;
	FILE *out;
	/* escapes around the verdict on out (cli/color.h decides): diverged
	 * (bad), matches (good), and the end; NULL: none */
	const char *c_bad, *c_good, *c_end;
};

/* @return the exit status: 0 the replay matches the recording (a recorded
 * failure included), 1 it diverged (or hung), 2 bad trace or set-up. */
int nrr_replay(const struct nrr_replay_opts *o);

#endif
