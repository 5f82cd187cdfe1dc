/* SPDX-License-Identifier: MIT */
/* cmd_export.c - `ncclrr export` (being written). */
#include "cmds.h"

const char cmd_export_usage[] = "Usage: ncclrr export ...\n";

int cmd_export(int argc, char **argv)
{
	fprintf(stderr, "ncclrr export: not built yet\n");
	return NRR_EXIT_USAGE;
}
