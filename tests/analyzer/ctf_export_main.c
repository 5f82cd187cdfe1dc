/* SPDX-License-Identifier: MIT */
/*
 * ctf_export_main.c - test driver for nrr_export_ctf() until `ncclrr export
 * --ctf` calls it: ctf_export OUTDIR FILE|DIR...  Exit status as the
 * command's: 0 written, 2 bad usage, bad trace or bad output directory.
 */
#include <stdarg.h>
#include <stdio.h>

#include "cmds.h"
#include "export_ctf.h"
#include "inputs.h"

int nrr_cli_usage_error(const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "ncclrr %s: ", name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return NRR_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: ctf_export OUTDIR FILE|DIR...\n");
		return NRR_EXIT_USAGE;
	}
	struct nrr_inputs in;
	int rc = nrr_inputs_open(&in, "export", argv + 2, argc - 2, NULL);
	if (rc)
		return rc;
	char err[1500];
	rc = nrr_export_ctf(&in, argv[1], err, sizeof(err));
	if (rc)
		fprintf(stderr, "ncclrr export: %s\n", err);
	nrr_inputs_close(&in);
	return rc;
}
