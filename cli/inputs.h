/* SPDX-License-Identifier: MIT */
/* inputs.h - the CLI's side of opening traces (the run model, analyzer/run.h):
 * the selection options and how the run library's messages are printed. */
#ifndef NCCLRR_CLI_INPUTS_H
#define NCCLRR_CLI_INPUTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "run.h"

/* The selection options of the reading commands (dump, export): which
 * processes and calls they show, parsed into the run model's struct
 * nrr_select (analyzer/run.h) by nrr_select_option(). */
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
	"  --errors           only calls that failed (by their return convention, or\n" \
	"                     an entry they returned with an error status: an\n" \
	"                     ibv_poll_cq completion other than IBV_WC_SUCCESS)\n" \
	"  --from T           only calls at or after T seconds\n" \
	"  --to T             only calls before T seconds\n" \
	"  --around-failure S only calls within S seconds of the first failure that\n" \
	"                     matters (the earliest failed call that is not one a\n" \
	"                     healthy run has too, by the benign= rules of formats/api/)\n"

/* Take getopt_long()'s answer @c (@arg its optarg) if it is a selection
 * option.  @return 1 taken, 0 not a selection option, or NRR_EXIT_USAGE
 * after printing what is wrong with the value. */
int nrr_select_option(struct nrr_select *s, const char *cmd, int c, const char *arg);

/* Print the run library's messages as "ncclrr CMD: …" on stderr, errors
 * and skipped inputs in their colours (main() installs it). */
void nrr_cli_run_sink(enum nrr_run_msg kind, const char *cmd, const char *text);

#endif
