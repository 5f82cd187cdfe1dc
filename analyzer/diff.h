/* SPDX-License-Identifier: MIT */
/* diff.h - compare two runs rank by rank, call by call (`ncclrr diff`). */
#ifndef NCCLRR_ANALYZER_DIFF_H
#define NCCLRR_ANALYZER_DIFF_H

#include <stdbool.h>
#include <stdio.h>

#include "run.h"

struct nrr_diff_opts {
	size_t context;   /* calls of context around a divergence */
	size_t window;    /* calls per thread kept for the alignment */
	bool json;
	const char *api;  /* compare only calls of these functions (nrr_name_match), or NULL */
};

/* Compare run @a with run @b and write the report to @out.
 * @return 0 same, 1 different, or a negative errno for an unreadable
 * trace or no memory (said through the run model's sink, nrr_run_say()). */
int nrr_diff_run(const struct nrr_diff_opts *o, struct nrr_inputs *a, struct nrr_inputs *b, FILE *out);

#endif
