/* SPDX-License-Identifier: MIT */
/* cmd_diff.c - `ncclrr diff`: compare two runs rank by rank. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "color.h"
#include "diff.h"
#include "inputs.h"

const char cmd_diff_usage[] =
	"Usage: ncclrr diff [OPTIONS] A B\n"
	"\n"
	"Compare two runs (each a run directory or a .nrt file) and report what\n"
	"differs that decides behaviour: first the configuration (environment,\n"
	"topology, versions), then for each rank the first call where the runs\n"
	"diverge, with a few calls of context, and the earliest divergence across\n"
	"ranks (by time since each run's start).\n"
	"\n"
	"Processes are paired by metadata rank, then NCCL rank, else (the\n"
	"`ncclrr run` launcher) by executable; threads by order of first call.\n"
	"Pointers, handles, descriptors, pids, ports, timestamps, temporary paths\n"
	"and payload contents are not compared (payload lengths are); polls that\n"
	"did not fail, EAGAIN/EINTR/EINPROGRESS answers and log lines are skipped;\n"
	"calls that came in another order within the window and failed attempts\n"
	"that were retried are accepted.\n"
	"\n"
	"Options:\n"
	"  --context N   calls shown before and after a divergence (default 3, max 32)\n"
	"  --window N    calls per thread looked ahead for reordering and retries\n"
	"                (default 128; memory grows with it, not with the trace)\n"
	"  --api GLOB[,GLOB]  compare only calls whose name matches a glob, as in\n"
	"                dump (e.g. 'socket,connect,close' shows how two NCCL versions\n"
	"                retry a refused connect)\n"
	"  --json        one JSON object instead of text\n"
	NRR_USAGE_STRICT
	"  -h, --help    this text\n"
	"      --version print the version\n"
	"\n"
	"Exit status: 0 the runs agree, 1 they differ, 2 bad usage or unreadable trace,\n"
	NRR_USAGE_EXIT_SKIPPED;

static int parse_num(const char *s, long lo, long hi, size_t *out)
{
	char *e;
	errno = 0;
	long v = strtol(s, &e, 10);
	if (errno || e == s || *e || v < lo || v > hi)
		return -1;
	*out = (size_t)v;
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "context", required_argument, NULL, 'c' },
		{ "window", required_argument, NULL, 'w' },
		{ "json", no_argument, NULL, 'j' },
		{ "api", required_argument, NULL, 'a' },
		{ NULL, 0, NULL, 0 },
	};
	struct nrr_diff_opts o = { .context = 3, .window = 128, .json = false };
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (parse_num(optarg, 0, 32, &o.context))
				return nrr_cli_usage_error("diff", "--context wants a number from 0 to 32, got '%s'", optarg);
			break;
		case 'w':
			if (parse_num(optarg, 8, 1 << 20, &o.window))
				return nrr_cli_usage_error("diff", "--window wants a number from 8 to 1048576, got '%s'", optarg);
			break;
		case 'j': o.json = true; break;
		case 'a': o.api = optarg; break;
		default:
			return nrr_cli_opt_error("diff", c, argv[optind - 1]);
		}
	}
	if (argc - optind != 2)
		return nrr_cli_usage_error("diff", "wants two runs A and B (directories or .nrt files), got %d argument%s",
					   argc - optind, argc - optind == 1 ? "" : "s");
	if (o.window < o.context + 2)
		o.window = o.context + 2;
	struct nrr_inputs a, b;
	if (nrr_inputs_open(&a, "diff", argv + optind, 1, NULL))
		return NRR_EXIT_USAGE;
	if (nrr_inputs_open(&b, "diff", argv + optind + 1, 1, NULL)) {
		nrr_inputs_close(&a);
		return NRR_EXIT_USAGE;
	}
	int ret = nrr_diff_run(&o, &a, &b, stdout);
	ret = ret < 0 ? NRR_EXIT_USAGE : ret ? NRR_EXIT_DIFF : NRR_EXIT_OK;
	nrr_inputs_close(&a);
	nrr_inputs_close(&b);
	if (fflush(stdout) == EOF && errno != EPIPE) {
		nrr_cli_error("diff", "cannot write output: %s", strerror(errno));
		ret = NRR_EXIT_USAGE;
	}
	return ret;
}
