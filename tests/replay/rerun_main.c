/* SPDX-License-Identifier: MIT */
/*
 * rerun_main.c - nrr_rerun() on its own, until `ncclrr replay --rerun`
 * is wired in cli/cmd_replay.c:
 *   rerun_main NCCLRR --rerun DIR [--topo FILE] [--timeout S] [-o OUTDIR] -- PROGRAM [ARGS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rerun.h"

int main(int argc, char **argv)
{
	struct nrr_rerun_opts o = { 0 };
	int i = 2;
	if (argc < 2)
		goto usage;
	o.ncclrr = argv[1];
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (i + 1 >= argc)
			goto usage;
		if (!strcmp(argv[i], "--rerun"))
			o.dir = argv[++i];
		else if (!strcmp(argv[i], "--topo"))
			o.topo = argv[++i];
		else if (!strcmp(argv[i], "--timeout"))
			o.timeout_s = strtod(argv[++i], NULL);
		else if (!strcmp(argv[i], "-o"))
			o.outdir = argv[++i];
		else
			goto usage;
	}
	if (!o.dir || i >= argc)
		goto usage;
	o.argv = argv + i;
	return nrr_rerun(&o);
usage:
	fprintf(stderr, "usage: rerun_main NCCLRR --rerun DIR [--topo FILE] [--timeout S] [-o OUTDIR] -- PROGRAM [ARGS]\n");
	return 2;
}
