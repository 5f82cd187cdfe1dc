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

/* A comparison's result: both runs' processes paired by rank (else by
 * executable and order), threads by role, and for each pair its first call
 * divergence and its first meaningful one (a failure or an abnormal end in
 * one run only), the run configurations' differences, and the headline
 * (the earliest meaningful divergence of a rank).  The renderers read the
 * calls around each divergence from the traces again: keep both inputs
 * open until nrr_diff_free(). */
struct nrr_diff;

/* Compare run @a with run @b.  @return 0 and *@out (free with
 * nrr_diff_free), or a negative errno for an unreadable trace or no memory
 * (said through the run model's sink, nrr_run_say()). */
int nrr_diff_compare(const struct nrr_diff_opts *o, struct nrr_inputs *a, struct nrr_inputs *b, struct nrr_diff **out);
/* true when the runs differ: a call divergence, a meaningful one, or a
 * configuration difference (`ncclrr diff` exits 1 then). */
bool nrr_diff_differ(const struct nrr_diff *d);
/* The report as text (colours where @f is a terminal) / as one JSON object
 * (man/ncclrr-diff.1 lists the fields). */
void nrr_diff_print_text(FILE *f, const struct nrr_diff *d);
void nrr_diff_print_json(FILE *f, const struct nrr_diff *d);
void nrr_diff_free(struct nrr_diff *d);

/* nrr_diff_compare(), then the report by @o->json to @out.
 * @return 0 same, 1 different, or a negative errno for an unreadable
 * trace or no memory (said through the run model's sink, nrr_run_say()). */
int nrr_diff_run(const struct nrr_diff_opts *o, struct nrr_inputs *a, struct nrr_inputs *b, FILE *out);

#endif
