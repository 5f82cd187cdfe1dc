/* SPDX-License-Identifier: MIT */
/* cmd_replay.c - `ncclrr replay`: re-execute a recorded run on this machine
 * (options only; the engine is replayer/engine). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "color.h"
#include "inputs.h"
#include "nrr_launch.h"
#include "replay.h"
#include "rerun.h"

const char cmd_replay_usage[] =
	"Usage: ncclrr replay [OPTIONS] DIR|FILE...\n"
	"       ncclrr replay --rerun DIR [--nccl VERSION|PATH] [--topo FILE] [--timeout S]\n"
	"                     [--net-plugin PATH] [-o OUTDIR] -- PROGRAM [ARGS]\n"
	"\n"
	"Re-execute a recorded run (a run directory: one .nrt per process) on\n"
	"this machine, one worker process per recorded process and one thread\n"
	"per recorded thread, and check that it does what the recording did.\n"
	"CUDA driver, NVML and verbs calls run against the fake runtime; socket\n"
	"calls run on real loopback sockets (recorded listen addresses mapped to\n"
	"live ones, connects and accepts paired, the recorded bytes sent and the\n"
	"received bytes compared). ncclNet plugin calls run against a live net\n"
	"plugin (ncclrr's socket transport unless --net-plugin names one): handles\n"
	"mapped, payloads of the recorded sizes, completed sizes compared. Calls\n"
	"of the NCCL API, the CUDA runtime and proxy RPCs are not re-executed:\n"
	"what they called is.\n"
	"Order across processes comes from the recording (connect/accept pairs,\n"
	"message order, fds passed before use), never from timing.\n"
	"\n"
	"Prints the recorded failure (the errors of failed processes that\n"
	"processes which ended well did not have, less the failures a healthy\n"
	"run has too: the benign= rules of formats/api/, as diff and hang; each\n"
	"ending in how the process ended; an entry is never cut), the first\n"
	"divergence (rank, call number, API, recorded vs replayed) and the\n"
	"failure as replayed.\n"
	"\n"
	"Which processes run: those that make calls of the GPU stack (CUDA,\n"
	"NVML, verbs, NCCL); helpers that make none (mpirun, orted, srun's\n"
	"steps, `ncclrr run`'s launcher, fork stubs and wrappers) are served\n"
	"from their traces: their peers' calls on sockets to them return what\n"
	"they returned.  A trace with no GPU-stack call at all runs whole.\n"
	"\n"
	"Options:\n"
	"  --ranks R[,R...]   replay only these ranks; sockets to the others are\n"
	"                     served from the trace (their calls return what they\n"
	"                     returned)\n"
	"  --all-processes    replay the helpers too\n"
	"  --inject MODE      errors (default): a call recorded as failed fails the\n"
	"                     same way without running; all: every CUDA/NVML/verbs\n"
	"                     call is answered from the trace; none: everything\n"
	"                     runs and each disagreement is a divergence\n"
	"  --repeat N         replay N times; report whether every outcome was the\n"
	"                     same\n"
	"  --chaos SEED       perturb thread and process scheduling (seeded pauses)\n"
	"                     within the recorded order\n"
	"  --until R:#SEQ     stop rank R before its call #SEQ (as `dump` numbers\n"
	"                     them) and wait for `gdb -p PID`; kill -USR1 PID goes on\n"
	"  --timeout S        no call finished anywhere for S seconds: the replay\n"
	"                     hung, say where, stop (default 60)\n"
	"  --topo FILE        cluster file for the fake runtime (default: the\n"
	"                     run directory's ncclrr-cluster.xml, kept by ncclrr run;\n"
	"                     without it, as from real GPUs, CUDA/NVML/verbs calls\n"
	"                     are answered from the trace; the recorded path is\n"
	"                     never opened)\n"
	"  --net-plugin PATH  the ncclNet plugin (.so, tables v6..v11) that net\n"
	"                     plugin calls run against (default: ncclrr's socket\n"
	"                     transport, libnccl-net-ncclrr-socket.so)\n"
	"  -v, --verbose      every divergence, each replay of --repeat\n"
	"\n"
	"Rerun mode (--rerun DIR -- PROGRAM [ARGS]): run the real program again\n"
	"on the fake cluster (`ncclrr record` of `ncclrr run`), with what the\n"
	"environment decided taken from the trace: each recorded CUDA runtime,\n"
	"driver or NVML error becomes a fault-switch rule (NCCLRR_FAULT) for the\n"
	"same call of the same rank (a failed runtime call over a failed driver\n"
	"call is one rule; a failure after another rank had ended is a\n"
	"consequence, not repeated), and environment variables that differed per\n"
	"rank are given back to that rank (--rank-env): only variables of NCCL,\n"
	"CUDA, NVIDIA, UCX and PyTorch's NCCL, none that chooses code to load\n"
	"(plugins, injection libraries, paths) and none whose value is a path or\n"
	"a library (a note names each one left out). A net plugin is loaded only\n"
	"when --net-plugin names it, never because the recording used one.\n"
	"Then compare each rank's\n"
	"end, its first failing call and NCCL's WARN and `file.cc:N -> R` lines\n"
	"(masked) with the recording: reproduced, NOT reproduced, or timing.\n"
	"  --nccl VERSION|PATH  the NCCL the rerun loads: a version of the fake\n"
	"                     cluster ('ncclrr nccl list'), or a libnccl.so.2 (or its\n"
	"                     directory). Default: the recorded version (metadata\n"
	"                     nccl_version) when the fake cluster has it, else ncclrr\n"
	"                     run's default. With another version the verdict says\n"
	"                     per rank whether the recorded failure happened again,\n"
	"                     and NCCL's lines only one run printed (\"is it fixed in\n"
	"                     that NCCL?\")\n"
	"  --timeout S        for the rerun job (default: from the recording's\n"
	"                     length, see the man page)\n"
	"  -o OUTDIR          record the rerun there (default: a new directory\n"
	"                     under ${TMPDIR:-/tmp}, printed)\n"
	"  -h, --help         this text\n"
	"      --version      print the version\n"
	"\n"
	"Environment: NCCLRR_FAKE_LIBDIR, the fake runtime's directory (as for\n"
	"`ncclrr run`); NCCLRR_NET_PLUGIN_REPLAY, the net plugin (a .so or the\n"
	"directory holding libnccl-net-ncclrr-socket.so) when --net-plugin is not\n"
	"given; NCCL_DEBUG set: the net plugin's log lines go to stderr.\n"
	"\n"
	"Exit status: 0 the replay matches the recording (a recorded failure\n"
	"included, reproduced; --rerun: every rank ended as recorded), 1 it\n"
	"diverged or hung (--rerun: a rank did not), 2 bad usage, unreadable\n"
	"trace or no fake runtime.\n";

static int parse_ranks(const char *s, int **out, size_t *n)
{
	*n = 0;
	*out = NULL;
	size_t cap = 0;
	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s || v < 0 || v > 1 << 24 || (*end && *end != ','))
			return -1;
		if (!nrr_grow(out, *n, &cap, sizeof(**out)))
			return -1;
		(*out)[(*n)++] = (int)v;
		s = *end ? end + 1 : end;
	}
	return *n ? 0 : -1;
}

int cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ranks", required_argument, NULL, 'r' },
		{ "all-processes", no_argument, NULL, 'A' },
		{ "inject", required_argument, NULL, 'i' },
		{ "repeat", required_argument, NULL, 'n' },
		{ "chaos", required_argument, NULL, 'c' },
		{ "until", required_argument, NULL, 'u' },
		{ "timeout", required_argument, NULL, 't' },
		{ "topo", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "rerun", required_argument, NULL, 'R' },
		{ "net-plugin", required_argument, NULL, 'P' },
		{ "nccl", required_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 },
	};
	struct nrr_replay_opts o = { .repeat = 1, .until_rank = -1, .timeout_s = 60, .inject = NRR_INJECT_ERRORS };
	int *ranks = NULL;
	const char *rerun = NULL, *outdir = NULL, *nccl = NULL;
	bool timeout_given = false;
	int c, rc;
	char *end;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:vo:", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (parse_ranks(optarg, &ranks, &o.nranks) < 0)
				return nrr_cli_usage_error("replay", "--ranks wants rank numbers separated by commas, not '%s'", optarg);
			o.ranks = ranks;
			break;
		case 'A':
			o.all_processes = true;
			break;
		case 'i':
			if (!strcmp(optarg, "errors"))
				o.inject = NRR_INJECT_ERRORS;
			else if (!strcmp(optarg, "all"))
				o.inject = NRR_INJECT_ALL;
			else if (!strcmp(optarg, "none"))
				o.inject = NRR_INJECT_NONE;
			else
				return nrr_cli_usage_error("replay", "--inject wants errors, all or none, not '%s'", optarg);
			break;
		case 'n': {
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 100000)
				return nrr_cli_usage_error("replay", "--repeat wants a count from 1 to 100000, not '%s'", optarg);
			o.repeat = (unsigned)v;
			break;
		}
		case 'c':
			o.chaos_seed = strtoull(optarg, &end, 0);
			if (*end || !*optarg)
				return nrr_cli_usage_error("replay", "--chaos wants a number (the seed), not '%s'", optarg);
			o.chaos = true;
			break;
		case 'u': {
			long r = strtol(optarg, &end, 10);
			if (end == optarg || r < 0 || *end != ':')
				return nrr_cli_usage_error("replay", "--until wants RANK:#SEQ (e.g. 3:#202), not '%s'", optarg);
			const char *q = end + 1;
			if (*q == '#')
				q++;
			uint64_t seq = strtoull(q, &end, 10);
			if (*end || !*q || !seq)
				return nrr_cli_usage_error("replay", "--until wants RANK:#SEQ (e.g. 3:#202), not '%s'", optarg);
			o.until_rank = (int)r;
			o.until_seq = seq;
			break;
		}
		case 't': {
			long v = strtol(optarg, &end, 10);
			if (*end || v <= 0 || v > 86400)
				return nrr_cli_usage_error("replay", "--timeout wants seconds (1..86400), not '%s'", optarg);
			o.timeout_s = (int)v;
			timeout_given = true;
			break;
		}
		case 'T':
			o.topo = optarg;
			break;
		case 'P':
			if (access(optarg, R_OK) < 0)
				return nrr_cli_usage_error("replay", "--net-plugin %s: %s", optarg, strerror(errno));
			o.net_plugin = optarg;
			break;
		case 'N':
			nccl = optarg;
			break;
		case 'v':
			o.verbose = true;
			break;
		case 'R':
			rerun = optarg;
			break;
		case 'o':
			outdir = optarg;
			break;
		default:
			return nrr_cli_opt_error("replay", c, argv[optind - 1]);
		}
	}
	if (rerun) {
		free(ranks);
		if (optind >= argc)
			return nrr_cli_usage_error("replay", "--rerun wants the program to run after --");
		struct nrr_rerun_opts ro = {
			.dir = rerun, .topo = o.topo, .timeout_s = timeout_given ? o.timeout_s : 0, .outdir = outdir, .argv = argv + optind,
			.net_plugin = o.net_plugin, .nccl = nccl, .c_bad = nrr_color(stdout, NRR_COLOR_ERROR),
			.c_good = nrr_color(stdout, NRR_COLOR_GOOD), .c_end = nrr_color_end(stdout),
		};
		return nrr_rerun(&ro);
	}
	if (outdir || nccl) {
		free(ranks);
		return nrr_cli_usage_error("replay", "%s is for --rerun (a replay runs no NCCL)", outdir ? "-o" : "--nccl");
	}
	if (optind >= argc)
		return nrr_cli_usage_error("replay", "name a run directory or trace files");
	char libdir[4096], err[512];
	if (nrr_launch_find_fake_libdir(libdir, sizeof(libdir), err, sizeof(err)) < 0) {
		nrr_cli_error("replay", "%s", err);
		free(ranks);
		return NRR_EXIT_USAGE;
	}
	struct nrr_inputs in;
	if (nrr_inputs_open(&in, "replay", argv + optind, argc - optind, NULL)) {
		free(ranks);
		return NRR_EXIT_USAGE;
	}
	o.readers = in.r;
	o.n = in.n;
	o.dir = argv[optind];
	o.fake_libdir = libdir;
	o.out = stdout;
	o.c_bad = nrr_color(stdout, NRR_COLOR_ERROR);
	o.c_good = nrr_color(stdout, NRR_COLOR_GOOD);
	o.c_end = nrr_color_end(stdout);
	rc = nrr_replay(&o);
	nrr_inputs_close(&in);
	free(ranks);
	return rc;
}
