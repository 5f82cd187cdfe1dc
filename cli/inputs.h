/* SPDX-License-Identifier: MIT */
/* inputs.h - open the traces named on a command line (files or run dirs). */
#ifndef NCCLRR_CLI_INPUTS_H
#define NCCLRR_CLI_INPUTS_H

#include "nrt.h"

struct nrr_inputs {
	nrr_reader **r;
	char **who;          /* "host:pid" per reader */
	char **rank;         /* meta rank or NULL */
	size_t n;
	const char *cmd;     /* the command that opened them ("dump"): its messages
			      * and progress line name it */
	uint64_t base_wall;  /* earliest file start, wall ns */
	char *tmpdir;        /* LTTng traces converted to .nrt live here until close */
	char **tmpfiles;
	size_t ntmp;
};

/* Open every .nrt file named or found (not recursively) in a named
 * directory, sorted by name (a directory without .nrt files that holds an
 * LTTng trace of the ncclrr_* providers is converted first), keeping only the ranks in the comma list
 * @ranks when it is not NULL.  Reports damage (rebuilt index, dropped
 * bytes) as warnings on stderr.  @return 0, or prints the error and
 * returns NRR_EXIT_USAGE. */
int nrr_inputs_open(struct nrr_inputs *in, const char *cmd, char **paths, int npaths, const char *ranks);
void nrr_inputs_close(struct nrr_inputs *in);
/* Print a reader error as "ncclrr CMD: Cannot read trace: file=… offset=…: …". */
void nrr_print_diag(const char *cmd, const nrr_diag *d);

#endif
