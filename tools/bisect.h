/* SPDX-License-Identifier: MIT */
/* bisect.h - `ncclrr bisect`: search the environment and topology
 * differences between a good and a bad run for the smallest set that still
 * makes the program fail, by re-running it on the fake cluster. */
#ifndef NCCLRR_TOOLS_BISECT_H
#define NCCLRR_TOOLS_BISECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Delta debugging (Zeller's ddmin) over @n changes: @test(subset, k, ctx)
 * says whether the good configuration plus the k changes listed (sorted
 * indices) fails (1), passes (0) or could not be tried (-1: stop).  The
 * caller has checked that all n fail and none pass.  On return @min holds
 * a 1-minimal failing subset (removing any one change makes it pass) and
 * *@nmin its size.  @return 0, or -1 when a test returned -1 or on ENOMEM. */
int nrr_ddmin(size_t n, int (*test)(const size_t *subset, size_t k, void *ctx), void *ctx, size_t *min,
	      size_t *nmin);

struct nrr_bisect_opts {
	const char *good, *bad;   /* trace file or run directory each */
	const char *workdir;      /* NULL: a temporary directory */
	bool keep;                /* keep the temporary directory */
	double timeout_s;         /* per attempt */
	bool timeout_given;       /* --timeout was given (else a rerun takes its own) */
	const char *nccl;         /* --nccl: versions to bisect ("all", "V1..V2",
				   * "V1,V2,..."), or NULL */
	const char *topo;         /* cluster file of the good run, when its own is gone */
	bool dry_run;             /* list the differences, run nothing */
	char *const *argv;        /* the program and its arguments, NULL-terminated */
};

/* How a bisect ended (cli/cmd_bisect.c turns it into the exit status). */
enum nrr_bisect_status {
	NRR_BISECT_NOFAIL = 0,      /* the bad configuration does not fail; dry run: nothing to search */
	NRR_BISECT_FOUND = 1,       /* a minimal failing set found; dry run: differences to search */
	NRR_BISECT_ERROR = 2,       /* bad options or setup (said) */
	NRR_BISECT_INTERRUPTED = 3, /* a signal came (said) */
};

/* The whole command; @return how it ended. */
enum nrr_bisect_status nrr_bisect_main(const struct nrr_bisect_opts *o);

#endif
