/* SPDX-License-Identifier: MIT */
/* inputs.h - open the traces named on a command line (files or run dirs). */
#ifndef NCCLRR_CLI_INPUTS_H
#define NCCLRR_CLI_INPUTS_H

#include <stdbool.h>

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
	struct { const nrr_reader *r; uint64_t offset; } *damage;   /* said already */
	size_t ndamage;
};

/* --strict (@on, the default): a damaged input file stops the command
 * that opens inputs after this call with its error (NRR_EXIT_USAGE), as
 * the only input given does always.  Without it a file that cannot
 * be opened is named with what is wrong and skipped, a damaged chunk met
 * while reading ends its thread's calls in that file (nrr_reader_on_damage),
 * and the command goes on with the rest; nrr_inputs_skipped() counts them
 * and main() then exits NRR_EXIT_SKIPPED. */
void nrr_inputs_set_strict(bool on);
/* Inputs (files or damaged chunks) skipped since the program started. */
size_t nrr_inputs_skipped(void);

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
