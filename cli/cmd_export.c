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
	"Usage: ncclrr export (--chrome OUT.json | --perfetto OUT.pb | --html OUT.html | --ctf DIR) [OPTIONS]\n"
	"                     FILE|DIR...\n"
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
	"  --perfetto OUT.pb  the same as a native Perfetto protobuf trace ('-' for\n"
	"                     stdout): a track per process and per thread, calls as\n"
	"                     slices annotated with seq and result (and the arguments\n"
	"                     of failed, in-flight and NCCL calls), failures and log\n"
	"                     lines as instants; names interned, written packet by\n"
	"                     packet in deflated bundles (about 20 times smaller than\n"
	"                     the JSON). Schema: analyzer/perfetto_trace.proto\n"
	"  --html OUT.html    one self-contained page: run header, a timeline of all\n"
	"                     ranks (wheel or +/- zoom, drag pans, hover shows a\n"
	"                     call), a per-rank status table and a diagnosis (the\n"
	"                     earliest failing calls, each clicked shows its chain\n"
	"                     on the timeline, and what was in flight)\n"
	"  --ctf DIR          CTF for Babeltrace2 / Trace Compass (every call of the\n"
	"                     selected ranks: the other selection options do not apply)\n"
	"More than one output may be given; the traces are read once per output.\n"
	"\n"
	"Failures a healthy run has too (the benign= rules of formats/api/: NCCL's\n"
	"cuGetProcAddress NOT_FOUND probes, NVML NOT_SUPPORTED, a port in use, a\n"
	"connect refused before the peer listens) are not marked as errors (grey, args\n"
	"'benign'). A run of one function's calls on a thread that are such failures\n"
	"or successes is folded into one slice, e.g. 'cuGetProcAddress \u00d73664 (3600\n"
	"CUDA_ERROR_NOT_FOUND (500): probe)'; a run of refused connects that never got\n"
	"through is an error.\n"
	"\n"
	"Selection (as dump; --chrome, --perfetto and --html):\n"
	NRR_SELECT_USAGE
	"  --all              every call on its own slice: no folding of probes and\n"
	"                     retries\n"
	"\n"
	"Options:\n"
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
		{ "perfetto", required_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'A' },
		NRR_SELECT_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	const char *chrome = NULL, *html = NULL, *ctf = NULL, *perfetto = NULL;
	struct nrr_select sel;
	struct nrr_export_opts eo = { .all = false };
	int c, taken;
	nrr_select_init(&sel);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		taken = nrr_select_option(&sel, "export", c, optarg);
		if (taken == 1)
			continue;
		if (taken)
			return taken;
		switch (c) {
		case 'c': chrome = optarg; break;
		case 'H': html = optarg; break;
		case 't': ctf = optarg; break;
		case 'p': perfetto = optarg; break;
		case 'A': eo.all = true; break;
		default:
			return nrr_cli_opt_error("export", c, argv[optind - 1]);
		}
	}
	if (!chrome && !html && !ctf && !perfetto)
		return nrr_cli_usage_error("export", "no output given: use --chrome OUT.json, --perfetto OUT.pb, --html OUT.html "
					   "or --ctf DIR");
	if (ctf && (sel.api || sel.errors || sel.from > -1e300 || sel.to < 1e300 || sel.around >= 0))
		return nrr_cli_usage_error("export", "--ctf writes every call of the selected ranks: of the selection options "
					   "it takes only --rank (export --ctf on its own)");
	if (chrome && perfetto && !strcmp(chrome, "-") && !strcmp(perfetto, "-"))
		return nrr_cli_usage_error("export", "--chrome and --perfetto cannot both write to stdout ('-')");
	if (optind >= argc)
		return nrr_cli_usage_error("export", "no trace file or directory given");
	struct nrr_inputs in;
	if (nrr_inputs_open(&in, "export", argv + optind, argc - optind, sel.ranks))
		return NRR_EXIT_USAGE;
	if (nrr_select_resolve(&sel, &in)) {
		nrr_inputs_close(&in);
		return NRR_EXIT_USAGE;
	}
	if (sel.failure[0])
		fprintf(stderr, "ncclrr export: --around-failure: %s at %.6f s: exporting %.6f s to %.6f s\n", sel.failure,
			(double)sel.failure_ns / 1e9, (double)sel.from_ns / 1e9, (double)sel.to_ns / 1e9);
	char err[1400] = "";
	int rc = 0;
	if (chrome && (rc = nrr_export_chrome(&in, &eo, chrome, err, sizeof(err))))
		fprintf(stderr, "ncclrr export: --chrome %s: %s\n", chrome, err);
	if (!rc && perfetto && (rc = nrr_export_perfetto(&in, &eo, perfetto, err, sizeof(err))))
		fprintf(stderr, "ncclrr export: --perfetto %s: %s\n", perfetto, err);
	if (!rc && html && (rc = export_html(&in, html, err, sizeof(err))))
		fprintf(stderr, "ncclrr export: --html %s: %s\n", html, err);
	in.sel = NULL;   /* --ctf: every call */
	if (!rc && ctf && (rc = nrr_export_ctf(in.r, in.n, ctf, err, sizeof(err))))
		fprintf(stderr, "ncclrr export: --ctf %s: %s\n", ctf, err);
	nrr_inputs_close(&in);
	return rc ? NRR_EXIT_USAGE : NRR_EXIT_OK;
}
