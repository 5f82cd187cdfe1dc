/* SPDX-License-Identifier: MIT */
/* cmd_run.c - placeholder until the launcher lands. */
#include "cmds.h"

const char cmd_run_usage[] = "Usage: ncclrr run --topo FILE [-np N] [--timeout S] [--env K=V] -- PROGRAM [ARGS]\n";

int cmd_run(int argc, char **argv)
{
	fprintf(stderr, "ncclrr run: not built in this version\n");
	return NRR_EXIT_USAGE;
}
