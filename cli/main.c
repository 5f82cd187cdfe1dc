/* SPDX-License-Identifier: MIT */
/* main.c - the ncclrr command: a table of subcommands. */
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "ncclrr_config.h"
#include "cmds.h"
#include "color.h"
#include "inputs.h"
#include "nrt.h"

static const struct nrr_cmd cmds[] = {
	{ "record", "run a command with the tracer in every process it starts", cmd_record_usage, cmd_record, 0 },
	{ "dump", "print one line per recorded call", cmd_dump_usage, cmd_dump, NRR_CMD_LENIENT },
	{ "stats", "calls, errors and time per rank and API", cmd_stats_usage, cmd_stats, NRR_CMD_LENIENT },
	{ "run", "run a program as the ranks of a virtual cluster on the fake runtime", cmd_run_usage, cmd_run, 0 },
	{ "diff", "compare two runs rank by rank; the first divergence that matters", cmd_diff_usage, cmd_diff, NRR_CMD_LENIENT },
	{ "bisect", "find the smallest set of differences that makes a run fail", cmd_bisect_usage, cmd_bisect, 0 },
	{ "replay", "re-execute a recorded run here; reproduce its failure or show where it diverges", cmd_replay_usage, cmd_replay, 0 },
	{ "hang", "explain a hang: what each rank waits for, and the rank at the root", cmd_hang_usage, cmd_hang, NRR_CMD_LENIENT },
	{ "nccl", "list the NCCL versions of the fake cluster and their build facts", cmd_nccl_usage, cmd_nccl, 0 },
	{ "export", "write a trace as Chrome JSON, a Perfetto protobuf, CTF or an HTML report", cmd_export_usage, cmd_export, NRR_CMD_LENIENT },
};

int nrr_cli_opt_error(const char *name, int c, const char *opt)
{
	if (c == ':')
		return nrr_cli_usage_error(name, "option '%s' needs a value", opt);
	return nrr_cli_usage_error(name, "unknown option '%s'", opt);
}

const struct nrr_cmd *nrr_cli_find(const char *name)
{
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(cmds[i].name, name) == 0)
			return &cmds[i];
	return NULL;
}

int nrr_cli_common(const struct nrr_cmd *cmd, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(cmd->usage, stdout);
			return 1;
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("ncclrr %s %s\n", cmd->name, NCCLRR_VERSION);
			return 1;
		}
	}
	return 0;
}

int nrr_cli_usage_error(const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	nrr_cli_verror(name, fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try 'ncclrr %s --help'.\n", name);
	return NRR_EXIT_USAGE;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: ncclrr COMMAND [OPTIONS] [ARGS]\n\n"
		   "Record, replay and analyze what NCCL asks of CUDA, NVML, verbs and sockets.\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].synopsis);
	fprintf(f, "\nOptions of every command (before or after its name):\n"
		   "  --color[=WHEN]  colours for errors, the failing rank and verdicts: auto (the\n"
		   "                  default: on a terminal whose TERM is not dumb, and NO_COLOR\n"
		   "                  unset or empty), always (also without WHEN), never\n"
		   "  --strict        dump, stats, hang, export, diff: stop at the first damaged\n"
		   "                  input (default: name it, skip it, go on, exit status 3)\n"
		   "\n'ncclrr COMMAND --help' describes a command; 'ncclrr --version' prints the version.\n");
}

/* The global options --color[=WHEN] and --strict, taken out of argv
 * wherever they stand before "--" (ncclrr --color=never hang DIR, ncclrr
 * hang DIR --strict); in a command that runs a program (record, run,
 * replay, bisect, ...) only before its first operand, so that the
 * program's own options stay its own.  @return 0, or NRR_EXIT_USAGE
 * after saying why. */
static int global_opts(int *argc, char **argv, bool *strict)
{
	const struct nrr_cmd *cmd = NULL;
	bool rest = false;
	int k = 1;
	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i];
		if (!rest && strcmp(a, "--") == 0)
			rest = true;
		if (rest) {
			argv[k++] = argv[i];
			continue;
		}
		if (strcmp(a, "--strict") == 0) {
			*strict = true;
			continue;
		}
		if (strncmp(a, "--color", 7) == 0 && (a[7] == '=' || !a[7])) {
			if (nrr_color_set(a[7] ? a + 8 : "always")) {
				fprintf(stderr, "ncclrr: %s: want --color=auto, --color=always or --color=never\n", a);
				return NRR_EXIT_USAGE;
			}
			continue;
		}
		argv[k++] = argv[i];
		if (a[0] != '-') {
			if (!cmd)
				cmd = nrr_cli_find(a);
			else if (!(cmd->flags & NRR_CMD_LENIENT))
				rest = true;
		}
	}
	argv[k] = NULL;
	*argc = k;
	return 0;
}

int main(int argc, char **argv)
{
	bool strict = false;
	if (global_opts(&argc, argv, &strict))
		return NRR_EXIT_USAGE;
	if (argc < 2) {
		usage(stderr);
		return NRR_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		if (argc > 2 && nrr_cli_find(argv[2])) {
			fputs(nrr_cli_find(argv[2])->usage, stdout);
			return NRR_EXIT_OK;
		}
		usage(stdout);
		return NRR_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("ncclrr %s (trace format %d.%d)\n", NCCLRR_VERSION, NRR_FORMAT_MAJOR, NRR_FORMAT_MINOR);
		return NRR_EXIT_OK;
	}
	const struct nrr_cmd *cmd = nrr_cli_find(argv[1]);
	if (!cmd) {
		fprintf(stderr, "ncclrr: %sunknown command '%s'%s\n\n", nrr_color(stderr, NRR_COLOR_ERROR), argv[1],
			nrr_color_end(stderr));
		usage(stderr);
		return NRR_EXIT_USAGE;
	}
	if (nrr_cli_common(cmd, argc - 1, argv + 1))
		return NRR_EXIT_OK;
	if (strict && !(cmd->flags & NRR_CMD_LENIENT))
		return nrr_cli_usage_error(cmd->name, "--strict is for the commands that skip damaged inputs "
					   "(dump, stats, hang, export, diff); %s always stops at the first", cmd->name);
	nrr_run_set_sink(nrr_cli_run_sink);
	nrr_inputs_set_strict(strict || !(cmd->flags & NRR_CMD_LENIENT));
	int rc = cmd->fn(argc - 1, argv + 1);
	if ((rc == NRR_EXIT_OK || rc == NRR_EXIT_DIFF) && nrr_inputs_skipped()) {
		fprintf(stderr, "ncclrr %s: %s%zu damaged input%s skipped (exit status 3)%s\n", cmd->name,
			nrr_color(stderr, NRR_COLOR_WARN), nrr_inputs_skipped(), nrr_inputs_skipped() == 1 ? "" : "s",
			nrr_color_end(stderr));
		rc = NRR_EXIT_SKIPPED;
	}
	return rc;
}
