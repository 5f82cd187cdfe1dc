/* SPDX-License-Identifier: MIT */
/* cmd_bisect.c - `ncclrr bisect` (being written). */
#include "cmds.h"

const char cmd_bisect_usage[] = "Usage: ncclrr bisect ...\n";

int cmd_bisect(int argc, char **argv)
{
	fprintf(stderr, "ncclrr bisect: not built yet\n");
	return NRR_EXIT_USAGE;
}
