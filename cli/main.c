/* SPDX-License-Identifier: MIT */
/* main.c - the ncclrr command: a table of subcommands. */
#include <stdarg.h>
#include <string.h>

#include "ncclrr_config.h"
#include "cmds.h"
#include "nrt.h"

static const struct nrr_cmd cmds[] = {
	{ "record", "run a command with the tracer in every process it starts", cmd_record_usage, cmd_record },
	{ "dump", "print one line per recorded call", cmd_dump_usage, cmd_dump },
	{ "stats", "calls, errors and time per rank and API", cmd_stats_usage, cmd_stats },
	{ "run", "run a program as the ranks of a virtual cluster on the fake runtime", cmd_run_usage, cmd_run },
	{ "diff", "compare two runs rank by rank; the first divergence that matters", cmd_diff_usage, cmd_diff },
	{ "bisect", "find the smallest set of differences that makes a run fail", cmd_bisect_usage, cmd_bisect },
	{ "replay", "re-execute a recorded run here; reproduce its failure or show where it diverges", cmd_replay_usage, cmd_replay },
	{ "hang", "explain a hang: what each rank waits for, and the rank at the root", cmd_hang_usage, cmd_hang },
	{ "nccl", "list the NCCL versions of the fake cluster and their build facts", cmd_nccl_usage, cmd_nccl },
	{ "export", "write a trace as Chrome/Perfetto JSON, CTF or an HTML report", cmd_export_usage, cmd_export },
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
	fprintf(stderr, "ncclrr %s: ", name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'ncclrr %s --help'.\n", name);
	return NRR_EXIT_USAGE;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: ncclrr COMMAND [OPTIONS] [ARGS]\n\n"
		   "Record, replay and analyze what NCCL asks of CUDA, NVML, verbs and sockets.\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].synopsis);
	fprintf(f, "\n'ncclrr COMMAND --help' describes a command; 'ncclrr --version' prints the version.\n");
}

int main(int argc, char **argv)
{
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
		fprintf(stderr, "ncclrr: unknown command '%s'\n\n", argv[1]);
		usage(stderr);
		return NRR_EXIT_USAGE;
	}
	if (nrr_cli_common(cmd, argc - 1, argv + 1))
		return NRR_EXIT_OK;
	return cmd->fn(argc - 1, argv + 1);
}
