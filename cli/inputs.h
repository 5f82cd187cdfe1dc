/* SPDX-License-Identifier: MIT */
/* inputs.h - open the traces named on a command line (files or run dirs). */
#ifndef NCCLRR_CLI_INPUTS_H
#define NCCLRR_CLI_INPUTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "nrt.h"

/* The selection options of the reading commands (dump, export): which
 * processes and calls they show.  Parsed by nrr_select_option(), decided
 * per call by nrr_select_call(): one rule for every command that takes
 * them. */
struct nrr_select {
	const char *ranks;       /* --rank R[,R...] (applied by nrr_inputs_open()) */
	const char *api;         /* --api GLOB[,GLOB] */
	bool errors;             /* --errors */
	double from, to;         /* --from / --to, seconds since the earliest trace */
	double around;           /* --around-failure SECONDS, < 0: not given */
	int64_t from_ns, to_ns;  /* the window, set by nrr_select_resolve() */
	int64_t failure_ns;      /* the failure --around-failure centred on */
	char failure[200];       /* "rank 3 cudaIpcOpenMemHandle #1234" */
};

/* getopt_long() entries of the selection options (ids NRR_SEL_*). */
enum { NRR_SEL_RANK = 0x1000, NRR_SEL_API, NRR_SEL_ERRORS, NRR_SEL_FROM, NRR_SEL_TO, NRR_SEL_AROUND };
#define NRR_SELECT_OPTIONS \
	{ "rank", required_argument, NULL, NRR_SEL_RANK }, \
	{ "api", required_argument, NULL, NRR_SEL_API }, \
	{ "errors", no_argument, NULL, NRR_SEL_ERRORS }, \
	{ "from", required_argument, NULL, NRR_SEL_FROM }, \
	{ "to", required_argument, NULL, NRR_SEL_TO }, \
	{ "around-failure", required_argument, NULL, NRR_SEL_AROUND }
/* Their --help lines. */
#define NRR_SELECT_USAGE \
	"  --rank R[,R...]    only the processes of these ranks (metadata 'rank')\n" \
	"  --api GLOB[,GLOB]  only calls whose name matches a glob (e.g. 'cuMem*')\n" \
	"  --errors           only calls that failed (by their return convention)\n" \
	"  --from T           only calls at or after T seconds\n" \
	"  --to T             only calls before T seconds\n" \
	"  --around-failure S only calls within S seconds of the first failure that\n" \
	"                     matters (the earliest failed call that is not one a\n" \
	"                     healthy run has too, by the benign= rules of formats/api/)\n"

void nrr_select_init(struct nrr_select *s);
/* Take getopt_long()'s answer @c (@arg its optarg) if it is a selection
 * option.  @return 1 taken, 0 not a selection option, or NRR_EXIT_USAGE
 * after printing what is wrong with the value. */
int nrr_select_option(struct nrr_select *s, const char *cmd, int c, const char *arg);

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
	const struct nrr_select *sel;  /* set by nrr_select_resolve(); NULL: all */
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
/* Time @ts of reader @ri as ns since the earliest trace started,
 * saturated at +-INT64_MAX (times come from the trace). */
int64_t nrr_inputs_time(const struct nrr_inputs *in, size_t ri, uint64_t ts);
/* Make @s the selection of @in (in->sel): fixes the time window, for
 * --around-failure by reading the traces once for the first failure that
 * matters.  @return 0, or prints the error and returns NRR_EXIT_USAGE. */
int nrr_select_resolve(struct nrr_select *s, struct nrr_inputs *in);
/* @return true when call @c of reader @ri is selected by in->sel. */
bool nrr_select_call(const struct nrr_inputs *in, size_t ri, const nrr_call *c);
/* Print a reader error as "ncclrr CMD: Cannot read trace: file=… offset=…: …". */
void nrr_print_diag(const char *cmd, const nrr_diag *d);

#endif
