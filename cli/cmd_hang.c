/* SPDX-License-Identifier: MIT */
/* cmd_hang.c - `ncclrr hang` (being written). */
#include "cmds.h"

const char cmd_hang_usage[] = "Usage: ncclrr hang ...\n";

int cmd_hang(int argc, char **argv)
{
	fprintf(stderr, "ncclrr hang: not built yet\n");
	return NRR_EXIT_USAGE;
}
