/* SPDX-License-Identifier: MIT */
/* cmd_diff.c - `ncclrr diff` (being written). */
#include "cmds.h"

const char cmd_diff_usage[] = "Usage: ncclrr diff ...\n";

int cmd_diff(int argc, char **argv)
{
	fprintf(stderr, "ncclrr diff: not built yet\n");
	return NRR_EXIT_USAGE;
}
