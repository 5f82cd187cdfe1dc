/* SPDX-License-Identifier: MIT */
/*
 * rerun.h - `ncclrr replay --rerun DIR -- PROGRAM [ARGS]`: run the real
 * program again on the fake cluster, with the answers of the environment
 * that decided the recorded outcome taken from the trace (the CUDA driver
 * and NVML errors it recorded, each rank's environment), record the rerun,
 * and say per rank whether it ended the same way.
 */
#ifndef NCCLRR_RERUN_H
#define NCCLRR_RERUN_H

#include <stdio.h>

struct nrr_rerun_opts {
	const char *dir;       /* the recording: a directory of .nrt files */
	const char *topo;      /* cluster file; NULL: the recorded env.NCCLRR_TOPO */
	double timeout_s;      /* ncclrr run --timeout (0: 60 s) */
	const char *outdir;    /* where the rerun is recorded; NULL: a fresh
				* ${TMPDIR:-/tmp}/ncclrr-rerun.XXXXXX (printed) */
	char *const *argv;     /* PROGRAM and ARGS, NULL-terminated */
	const char *net_plugin; /* --net-plugin: the rerun's NCCL_NET_PLUGIN (NULL: none; never
				 * the recorded one) */
	const char *nccl;      /* --nccl: the NCCL version or libnccl.so.2 (or its
				* directory) the rerun loads; NULL: the recorded
				* version when the fake cluster has it */
	const char *ncclrr;    /* the ncclrr executable that records and runs;
				* NULL: "ncclrr" next to /proc/self/exe */
	FILE *out;             /* the verdict lines (NULL: stdout) */
	FILE *err;             /* errors and notes (NULL: stderr) */
	/* escapes around the verdicts on out (cli/color.h decides): "NOT
	 * reproduced" (bad), "reproduced" (good), and the end; NULL: none */
	const char *c_bad, *c_good, *c_end;
};

/* Exit codes. */
enum { NRR_RERUN_REPRODUCED = 0, NRR_RERUN_DIFFERENT = 1, NRR_RERUN_ERROR = 2 };

/* Why the recorded variable @kv ("K=V") is not given back to a rerun, or
 * NULL when it is: only variables of NCCL, CUDA, NVIDIA, UCX and PyTorch's
 * NCCL, none that chooses code to load (plugins, injection libraries,
 * paths, module directories), none whose value is a path or names a
 * library: a trace is data, never code. */
const char *nrr_rerun_env_refused(const char *kv);

/* Run it.  @return NRR_RERUN_REPRODUCED when every recorded rank ended as
 * recorded (same end, same first failing call, every recorded NCCL
 * warning seen again), NRR_RERUN_DIFFERENT when one did not,
 * NRR_RERUN_ERROR for an unreadable or empty recording, a missing
 * topology or a rerun that could not be started (the reason on @err). */
int nrr_rerun(const struct nrr_rerun_opts *o);

#endif
