/* SPDX-License-Identifier: MIT */
/* cmd_bisect.c - `ncclrr bisect`: options only; the work is in
 * tools/bisect.c. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "bisect.h"
#include "cmds.h"

const char cmd_bisect_usage[] =
"Usage: ncclrr bisect --good A --bad B [--nccl VERSIONS] [--timeout S] [--workdir DIR]\n"
"                     [--keep] [--topo FILE] [--dry-run] -- PROGRAM [ARGS]\n"
"       ncclrr bisect --nccl VERSIONS --bad B [--timeout S] [--workdir DIR] [--keep]\n"
"                     -- PROGRAM [ARGS]\n"
"\n"
"Find the smallest set of differences between a good run A and a bad run B\n"
"(each a run directory or trace file recorded under 'ncclrr run') that still\n"
"makes PROGRAM fail. The differences are those of 'ncclrr diff' in the\n"
"environment (NCCL_* and the other variables the tracer keeps) and in the\n"
"cluster file; others (NCCL version, number of ranks, values that differ\n"
"between ranks) are listed as not searched. Each attempt re-runs PROGRAM on the\n"
"fake cluster with A's configuration plus some of B's differences:\n"
"  ncclrr record -o DIR/attempt-NN -q -- ncclrr run --topo T -np N --timeout S\n"
"      [--env K=V]... [--unset K]... -- PROGRAM [ARGS]\n"
"and fails when its exit status is not 0 (a timeout included). A's environment\n"
"is set with --env where runinfo keeps a settable value; NCCL_* variables of\n"
"this shell that A did not have are unset. The search is delta debugging\n"
"(ddmin): the result is 1-minimal, removing any one of its differences makes\n"
"the run pass. Outcomes are cached per subset.\n"
"\n"
"With --nccl, B is also rerun with other NCCL versions of the fake cluster\n"
"('ncclrr nccl list'): 'ncclrr replay --rerun B --nccl V -- PROGRAM', the\n"
"recorded answers and environment with NCCL V, recorded in DIR/nccl-V. A\n"
"version where every rank ends as recorded has the failure; one where a rank\n"
"does not has it gone. The oldest and the newest release are tried first, then\n"
"the range is halved until the two versions either side of the change are\n"
"found; then 'ncclrr diff --api ...' of those two reruns shows how their\n"
"socket calls differ. With --good too, the environment search comes first and\n"
"the answer names both: the failure needs SET and NCCL <= V1 (gone in V2).\n"
"\n"
"Options:\n"
"  --good A          the run that worked (required without --nccl)\n"
"  --bad B           the run that failed (required)\n"
"  --nccl VERSIONS   also bisect across NCCL versions: 'all' (every version of\n"
"                    the fake cluster), V1..V2 (those in that range) or\n"
"                    V1,V2,... (at least two)\n"
"  --timeout S       seconds per attempt (default 120); a run that takes longer\n"
"                    is killed and counts as failing. Version reruns take the\n"
"                    rerun's own default (from the recording) unless given\n"
"  --workdir DIR     keep the attempts (traces and output) in DIR (created if\n"
"                    needed; must not hold an earlier bisect's attempts)\n"
"  --keep            keep the temporary directory used without --workdir\n"
"  --topo FILE       A's cluster file, when the path recorded in A is gone\n"
"  -n, --dry-run     list the differences that would be searched, run nothing\n"
"                    (exit 1 when there are some, 0 when none)\n"
"  -h, --help        this text;  --version  the version\n"
"\n"
"Output: the differences searched, one line per attempt (the changes applied,\n"
"pass or fail, seconds), the minimal failing set, then 'ncclrr diff' of the\n"
"last attempt that passed against the first that failed with the minimal set.\n"
"\n"
"Exit status: 1 a minimal failing set (or a version boundary) was found; 0 the\n"
"bad configuration does not fail when re-run (versions: the outcome is the same\n"
"with every version tried); 2 bad usage, unreadable traces, a rerun that could\n"
"not say, or the good configuration fails when re-run; 130 interrupted.\n"
"\n"
"Example:\n"
"  ncclrr bisect --good runs/monday --bad runs/tuesday -- ./conn_setup --no-nccl\n"
"  # NCCL 2.22's bootstrap race (traces/nccl/bootstrap_race): which release fixed it?\n"
"  WL_USE_COMM_ID=1 ncclrr bisect --nccl all --bad traces/nccl/bootstrap_race -- ./init_allreduce\n";

int cmd_bisect(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "good", required_argument, NULL, 'g' },
		{ "bad", required_argument, NULL, 'b' },
		{ "timeout", required_argument, NULL, 't' },
		{ "workdir", required_argument, NULL, 'w' },
		{ "keep", no_argument, NULL, 'k' },
		{ "topo", required_argument, NULL, 'T' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "nccl", required_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 },
	};
	struct nrr_bisect_opts o = { .timeout_s = 120 };
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:n", opts, NULL)) != -1) {
		switch (c) {
		case 'g': o.good = optarg; break;
		case 'b': o.bad = optarg; break;
		case 'w': o.workdir = optarg; break;
		case 'k': o.keep = true; break;
		case 'T': o.topo = optarg; break;
		case 'n': o.dry_run = true; break;
		case 'N': o.nccl = optarg; break;
		case 't': {
			char *e;
			o.timeout_s = strtod(optarg, &e);
			if (e == optarg || *e || !(o.timeout_s > 0) || o.timeout_s > 1e6)
				return nrr_cli_usage_error("bisect", "--timeout needs a positive number of seconds, not '%s'",
							   optarg);
			o.timeout_given = true;
			break;
		}
		default:
			return nrr_cli_opt_error("bisect", c, argv[optind - 1]);
		}
	}
	if (!o.bad || (!o.good && !o.nccl))
		return nrr_cli_usage_error("bisect", "--bad B and either --good A or --nccl VERSIONS (or both) are required");
	if (o.dry_run && !o.good)
		return nrr_cli_usage_error("bisect", "--dry-run lists the differences between --good and --bad");
	if (optind >= argc)
		return nrr_cli_usage_error("bisect", "no program given: ncclrr bisect --good A --bad B -- PROGRAM [ARGS]");
	o.argv = argv + optind;
	switch (nrr_bisect_main(&o)) {
	case NRR_BISECT_NOFAIL:
		return NRR_EXIT_OK;
	case NRR_BISECT_FOUND:
		return NRR_EXIT_DIFF;
	case NRR_BISECT_INTERRUPTED:
		return 130;
	case NRR_BISECT_ERROR:
	default:
		return NRR_EXIT_USAGE;
	}
}
