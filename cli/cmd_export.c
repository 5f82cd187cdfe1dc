/* SPDX-License-Identifier: MIT */
/* cmd_export.c - `ncclrr export`: timelines for other tools (Chrome /
 * Perfetto JSON, CTF) and a self-contained HTML report. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "export.h"
#include "export_ctf.h"
#include "hang.h"
#include "inputs.h"

const char cmd_export_usage[] =
	"Usage: ncclrr export (--chrome OUT.json | --html OUT.html | --ctf DIR) [OPTIONS] FILE|DIR...\n"
	"\n"
	"Write the traces (every .nrt file of a DIR) as a timeline for other tools:\n"
	"  --chrome OUT.json  Chrome / Perfetto trace-event JSON ('-' for stdout): a\n"
	"                     process per rank, a thread track per traced thread,\n"
	"                     calls as slices (args: recorded arguments and result),\n"
	"                     failing calls marked (red, an 'error' instant event),\n"
	"                     log lines as instant events, calls in flight at the end\n"
	"                     running to the end (args.inflight), flow arrows for\n"
	"                     connect->accept and cuMem export->import. Open it in\n"
	"                     https://ui.perfetto.dev or chrome://tracing.\n"
	"  --html OUT.html    one self-contained page: run header, an SVG timeline\n"
	"                     of all ranks, a per-rank status table and a diagnosis\n"
	"                     (the earliest failing calls and what was in flight)\n"
	"  --ctf DIR          CTF for Babeltrace2 / Trace Compass\n"
	"More than one output may be given; the traces are read once per output.\n"
	"\n"
	"Options:\n"
	"  --rank R[,R...]    only the processes of these ranks (metadata 'rank')\n"
	NRR_USAGE_STRICT
	"  -h, --help         this text\n"
	"      --version      print the version\n"
	"\n"
	"Exit status: 0 success, 2 bad usage, unreadable trace or unwritable output,\n"
	NRR_USAGE_EXIT_SKIPPED;

/* The HTML report, with the hang analysis (analyzer/hang.h) as its
 * diagnosis when the traces show ranks waiting on each other. */
static int export_html(struct nrr_inputs *in, const char *path, char *err, size_t errlen)
{
	struct nrr_hang *h = NULL;
	char *text = NULL;
	size_t len = 0;
	struct nrr_html_extra extra = { "Hang analysis (ncclrr hang)", NULL, NULL };
	if (nrr_hang_analyze(in, &h) == 0 && nrr_hang_found(h)) {
		FILE *f = open_memstream(&text, &len);
		if (f) {
			nrr_hang_print_text(f, h);
			fclose(f);
			extra.text = text;
		}
	}
	int rc = nrr_export_html(in, path, extra.text ? &extra : NULL, err, errlen);
	free(text);
	nrr_hang_free(h);
	return rc;
}

int cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "chrome", required_argument, NULL, 'c' },
		{ "html", required_argument, NULL, 'H' },
		{ "ctf", required_argument, NULL, 't' },
		{ "rank", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *chrome = NULL, *html = NULL, *ctf = NULL, *ranks = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 'c': chrome = optarg; break;
		case 'H': html = optarg; break;
		case 't': ctf = optarg; break;
		case 'r': ranks = optarg; break;
		default:
			return nrr_cli_opt_error("export", c, argv[optind - 1]);
		}
	}
	if (!chrome && !html && !ctf)
		return nrr_cli_usage_error("export", "no output given: use --chrome OUT.json, --html OUT.html or --ctf DIR");
	if (optind >= argc)
		return nrr_cli_usage_error("export", "no trace file or directory given");
	struct nrr_inputs in;
	int rc = nrr_inputs_open(&in, "export", argv + optind, argc - optind, ranks);
	if (rc)
		return rc;
	char err[1400] = "";
	if (chrome && (rc = nrr_export_chrome(&in, chrome, err, sizeof(err))))
		fprintf(stderr, "ncclrr export: --chrome %s: %s\n", chrome, err);
	if (!rc && html && (rc = export_html(&in, html, err, sizeof(err))))
		fprintf(stderr, "ncclrr export: --html %s: %s\n", html, err);
	if (!rc && ctf && (rc = nrr_export_ctf(&in, ctf, err, sizeof(err))))
		fprintf(stderr, "ncclrr export: --ctf %s: %s\n", ctf, err);
	nrr_inputs_close(&in);
	return rc ? NRR_EXIT_USAGE : NRR_EXIT_OK;
}
