/* SPDX-License-Identifier: MIT */
/* cmd_hang.c - `ncclrr hang`: which rank a hung job waits on, and why
 * (the analysis is analyzer/hang.c). */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmds.h"
#include "color.h"
#include "hang.h"
#include "inputs.h"

const char cmd_hang_usage[] =
	"Usage: ncclrr hang [OPTIONS] DIR|FILE...\n"
	"\n"
	"Explain a hang from the traces of a job (a run directory: one .nrt per\n"
	"process). For each rank: how its trace ended, its last completed call,\n"
	"the calls still in flight at the end (innermost and outermost, and for\n"
	"how long), a trailing polling run or connect retry loop, unanswered\n"
	"proxy requests. Then a wait-for graph across ranks from the matched\n"
	"socket endpoints (a recv waits for the peer's owner, an accept on the\n"
	"bootstrap root at NCCL_COMM_ID for the expected ranks that never\n"
	"connected, a connect for the listener's owner) and proxy RPCs, and the\n"
	"root causes, most likely first: a rank with no trace, one that died or\n"
	"exited, one stuck before or in an earlier phase, a cycle; with the chain\n"
	"of waiting ranks. Processes without a rank (the `ncclrr run` launcher)\n"
	"are listed apart.\n"
	"\n"
	"Options:\n"
	"  --json           one JSON document on stdout instead of text\n"
	"  --dot FILE       also write the wait-for graph as Graphviz to FILE, and\n"
	"                   FILE.svg when `dot` is on PATH\n"
	NRR_USAGE_STRICT
	"  -h, --help       this text\n"
	"      --version    print the version\n"
	"\n"
	"Exit status: 0 no hang (no traced process waits at the end of its\n"
	"trace), 1 a hang (explained as far as the traces allow), 2 bad usage\n"
	"or unreadable trace,\n"
	NRR_USAGE_EXIT_SKIPPED;

/* FILE.svg from FILE with dot, if there is one on PATH */
static void render_svg(const char *dot)
{
	char *svg = NULL;
	if (asprintf(&svg, "%s.svg", dot) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		execlp("dot", "dot", "-Tsvg", "-o", svg, dot, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		fprintf(stderr, "ncclrr hang: wrote %s and %s\n", dot, svg);
	else if (pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 127)
		fprintf(stderr, "ncclrr hang: wrote %s; no SVG: `dot` is not on PATH (install graphviz)\n", dot);
	else
		fprintf(stderr, "ncclrr hang: wrote %s; `dot -Tsvg` failed, no %s\n", dot, svg);
	free(svg);
}

int cmd_hang(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "dot", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	bool json = false;
	const char *dot = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'd': dot = optarg; break;
		default:
			return nrr_cli_opt_error("hang", c, argv[optind - 1]);
		}
	}
	struct nrr_inputs in;
	if (nrr_inputs_open(&in, "hang", argv + optind, argc - optind, NULL))
		return NRR_EXIT_USAGE;
	struct nrr_hang *h;
	int rc = nrr_hang_analyze(&in, &h);
	if (rc) {
		nrr_inputs_close(&in);
		return NRR_EXIT_USAGE;
	}
	int ret = nrr_hang_found(h) ? NRR_EXIT_DIFF : NRR_EXIT_OK;
	if (dot) {
		FILE *f = fopen(dot, "w");
		if (!f) {
			nrr_cli_error("hang", "Cannot write --dot file=%s: %s", dot, strerror(errno));
			ret = NRR_EXIT_USAGE;
		} else {
			nrr_hang_print_dot(f, h);
			if (fclose(f)) {
				nrr_cli_error("hang", "Cannot write --dot file=%s: %s", dot, strerror(errno));
				ret = NRR_EXIT_USAGE;
			} else {
				render_svg(dot);
			}
		}
	}
	if (json)
		nrr_hang_print_json(stdout, h);
	else
		nrr_hang_print_text(stdout, h);
	nrr_hang_free(h);
	nrr_inputs_close(&in);
	return ret;
}
