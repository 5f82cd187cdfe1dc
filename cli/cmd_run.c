/* SPDX-License-Identifier: MIT */
/* cmd_run.c - `ncclrr run`: a virtual multi-node cluster on this machine.
 * Options only; the work is in replayer/launch. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "color.h"
#include "nrr_launch.h"

const char cmd_run_usage[] =
"Usage: ncclrr run --topo FILE [-np N] [--timeout S] [--nccl VERSION|PATH] [--env K=V]... [--unset K]...\n"
"                  [--rank-env R:K=V]... [--start-late R:S]...\n"
"                  [--] PROGRAM [ARGS]\n"
"       ncclrr run --topo FILE [--wrap] [--comm-id HOST:PORT] [--env K=V]... [--unset K]...\n"
"                  [--rank-env R:K=V]... [--] PROGRAM [ARGS]\n"
"\n"
"Run PROGRAM as the ranks of the virtual cluster described by FILE (a topo/\n"
"cluster file), every rank a process on this machine on its own virtual host,\n"
"against the fake CUDA driver and NVML.\n"
"\n"
"Options:\n"
"  --topo FILE          the cluster file (required), e.g. topo/2node_16gpu.xml;\n"
"                       a bare name that is no file here (2node_16gpu.xml or\n"
"                       2node_16gpu) is a shipped cluster: looked for in\n"
"                       $NCCLRR_TOPO_DIR, else in the installed share/ncclrr/topo\n"
"                       (the source tree's topo/ when run from the build tree)\n"
"  -np N, --np N        number of ranks (default: hosts x GPUs per host); must be\n"
"                       a multiple of the number of hosts. Rank r goes to host\n"
"                       r / (N/hosts) with local rank (device) r % (N/hosts)\n"
"  --timeout S          kill every rank after S seconds (decimals allowed; default:\n"
"                       no limit) and report which ranks were still running, the\n"
"                       last line each printed and where each thread was blocked\n"
"  --env K=V            set K=V for every rank, after (and over) all the\n"
"                       variables below; may be repeated\n"
"  --unset K            remove K from every rank's environment, whether inherited,\n"
"                       set by ncclrr run (below) or by --env; may be repeated\n"
"  --rank-env R:K=V     set K=V for rank R only, after (and over) --env and\n"
"                       --unset; may be repeated (e.g. --rank-env\n"
"                       3:NCCL_SOCKET_IFNAME=eth9 gives one rank a different value)\n"
"  --start-late R:S     start rank R's program S seconds (decimals allowed) after\n"
"                       the others', as a node that boots late does; may be\n"
"                       repeated. NCCL 2.22's bootstrap then fails on the ranks\n"
"                       that connect to rank 0's root before it listens\n"
"                       (WL_USE_COMM_ID=1 in ncclrr's workloads; NVIDIA/nccl#1515)\n"
"  --comm-id HOST:PORT  NCCL_COMM_ID to use (default: 127.0.0.1 and a free port)\n"
"  --nccl VERSION|PATH  the NCCL every rank loads as libnccl.so.2: a version\n"
"                       relinked against ncclrr's CUDA runtime by scripts/nccl.sh\n"
"                       (e.g. 2.22.3, 2.29.7), or a libnccl.so.2 (or its directory).\n"
"                       Default: $NCCLRR_NCCL_DIR, else 2.22.3, else any version\n"
"                       relinked; none: the system's libnccl.so.2, if any.\n"
"                       --nccl also sets NCCLRR_NCCL (the path ncclrr's workloads\n"
"                       dlopen) to that libnccl.so.2\n"
"  --wrap               wrapper mode: set up this one process as a rank of an\n"
"                       outer launcher and exec PROGRAM (see below)\n"
"  -h, --help           this text;  --version  the version\n"
"\n"
"Each rank's environment is this one's plus:\n"
"  NCCLRR_TOPO (absolute cluster file), NCCLRR_HOST (host index), NCCLRR_RANK,\n"
"  NCCLRR_NRANKS, NCCLRR_LOCAL_RANK, NCCLRR_LOCAL_SIZE; RANK, WORLD_SIZE,\n"
"  LOCAL_RANK, LOCAL_WORLD_SIZE; NCCL_HOSTID (the host's name), NCCL_COMM_ID,\n"
"  NCCL_SOCKET_IFNAME=lo, NCCL_TOPO_FILE (the host's topology XML, written to a\n"
"  private temporary directory removed at exit), NCCLRR_SYSFS (the host's NICs as\n"
"  /sys shows them, beside it, which the NCCL of scripts/nccl.sh reads for\n"
"  /sys/class/infiniband), NCCLRR_ID_DIR (a directory all\n"
"  ranks see, where rank 0 of ncclrr's workloads leaves its ncclUniqueId), and\n"
"  LD_LIBRARY_PATH with the fake runtime's directory first ($NCCLRR_FAKE_LIBDIR,\n"
"  else found from this program: libcuda.so.1, libnvidia-ml.so.1,\n"
"  libcudart.so.12/.13 and, where built, libibverbs.so.1), then the NCCL of\n"
"  --nccl. Standard input is /dev/null.\n"
"  A rank whose environment has NCCLRR_FAULT (the fake cluster's fault switch,\n"
"  replayer/fake/README.md) also gets libncclrr-fake-socket.so from the fake\n"
"  runtime's directory appended to LD_PRELOAD, for the rules on connect().\n"
"\n"
"Every line a rank writes is copied to the same stream (stdout or stderr)\n"
"prefixed with \"[R] \". At the end a summary goes to stderr, with each rank's\n"
"exit status or signal when any rank failed.\n"
"\n"
"Wrapper mode: under mpirun, srun or torchrun, run 'ncclrr run --topo FILE\n"
"PROGRAM' as the per-rank command. When -np is not given and\n"
"OMPI_COMM_WORLD_RANK, SLURM_PROCID or RANK is set (or --wrap is given), the\n"
"rank and world size come from OMPI_COMM_WORLD_RANK/SIZE, SLURM_PROCID/NTASKS\n"
"or RANK/WORLD_SIZE (in that order), this process's environment is set up for\n"
"that rank only and PROGRAM is exec'ed (no prefixing, no timeout). NCCL_COMM_ID\n"
"is taken from the environment or --comm-id. The host's topology XML is left\n"
"in ${TMPDIR:-/tmp}/ncclrr-UID/.\n"
"\n"
"Under `ncclrr record` (NCCLRR_TRACE_DIR set), FILE is copied into the trace\n"
"directory as ncclrr-cluster.xml (once), so the recording replays anywhere\n"
"without --topo.\n"
"\n"
"Exit status: 0 every rank exited 0; 1 a rank failed; 2 bad usage or setup\n"
"(unknown or malformed topology, program not found, fake runtime not found);\n"
"124 the timeout fired; 130 interrupted by SIGINT, SIGTERM or SIGHUP.\n"
"\n"
"Examples:\n"
"  NCCL_DEBUG=INFO ncclrr run --topo topo/1node_8gpu.xml --timeout 120 -- ./init_allreduce\n"
"  # rank 8's first NET/Socket connect refused by the kernel (fault switch):\n"
"  NCCL_DEBUG=INFO ncclrr run --topo topo/2node_16gpu.xml --timeout 30 --env NCCL_RUNTIME_CONNECT=0 \\\n"
"      --rank-env 8:NCCL_SET_THREAD_NAME=1 \\\n"
"      --rank-env '8:NCCLRR_FAULT=connect:thread=NCCL Service:nth=1:ECONNREFUSED' -- ./tp_dp\n";

static int parse_int(const char *s, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > 1 << 20)
		return -1;
	*out = (int)v;
	return 0;
}

int cmd_run(int argc, char **argv)
{
	const char *topo = NULL, *comm_id = NULL, *nccl = NULL;
	int np = 0, wrap = 0;
	double timeout = 0;
	char **user_env = calloc((size_t)argc + 1, sizeof(char *));
	char **unset_env = calloc((size_t)argc + 1, sizeof(char *));
	char **rank_env = calloc((size_t)argc + 1, sizeof(char *));
	struct nrr_late_start *late = calloc((size_t)argc + 1, sizeof(*late));
	struct nrr_cluster_result *res = calloc(1, sizeof(*res));
	size_t n_late = 0;
	size_t n_env = 0, n_unset = 0, n_rank_env = 0;
	int i, ret = NRR_EXIT_USAGE;
	if (!user_env || !unset_env || !rank_env || !late || !res)
		goto end;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		const char *val = NULL;
		const char *eq = strchr(a, '=');
		size_t nlen = eq && a[1] == '-' ? (size_t)(eq - a) : strlen(a);
#define OPT(name) (strlen(name) == nlen && strncmp(a, name, nlen) == 0)
#define NEED_VAL() do { \
		if (eq && a[1] == '-') val = eq + 1; \
		else if (i + 1 < argc) val = argv[++i]; \
		else { ret = nrr_cli_opt_error("run", ':', a); goto end; } \
	} while (0)
		if (OPT("--topo")) {
			NEED_VAL();
			topo = val;
		} else if (OPT("-np") || OPT("--np") || OPT("-n")) {
			NEED_VAL();
			if (parse_int(val, &np) < 0) {
				ret = nrr_cli_usage_error("run", "-np needs a positive number, not '%s'", val);
				goto end;
			}
		} else if (OPT("--timeout")) {
			NEED_VAL();
			char *e;
			timeout = strtod(val, &e);
			if (e == val || *e || !(timeout > 0)) {
				ret = nrr_cli_usage_error("run", "--timeout needs a positive number of seconds, not '%s'", val);
				goto end;
			}
		} else if (OPT("--env")) {
			if (!(eq && a[1] == '-') && i + 1 >= argc) {
				ret = nrr_cli_usage_error("run", "--env needs K=V");
				goto end;
			}
			if (eq && a[1] == '-')
				val = eq + 1;
			else
				val = argv[++i];
			const char *e = strchr(val, '=');
			if (!e || e == val) {
				ret = nrr_cli_usage_error("run", "--env needs K=V, not '%s'", val);
				goto end;
			}
			user_env[n_env++] = (char *)val;
		} else if (OPT("--unset")) {
			NEED_VAL();
			if (!*val || strchr(val, '=')) {
				ret = nrr_cli_usage_error("run", "--unset needs a variable name, not '%s'", val);
				goto end;
			}
			unset_env[n_unset++] = (char *)val;
		} else if (OPT("--rank-env")) {
			NEED_VAL();
			if (nrr_launch_rank_env_parse(val, NULL) < 0) {
				ret = nrr_cli_usage_error("run", "--rank-env needs R:K=V (R a rank number), not '%s'", val);
				goto end;
			}
			rank_env[n_rank_env++] = (char *)val;
		} else if (OPT("--start-late")) {
			NEED_VAL();
			char *e;
			long rk = strtol(val, &e, 10);
			double sec = *e == ':' ? strtod(e + 1, &e) : -1;
			if (e == val || *e || rk < 0 || rk >= 1 << 20 || !(sec >= 0) || sec > 86400) {
				ret = nrr_cli_usage_error("run", "--start-late needs R:S (a rank and seconds), not '%s'", val);
				goto end;
			}
			late[n_late].rank = (int)rk;
			late[n_late++].s = sec;
		} else if (OPT("--comm-id")) {
			NEED_VAL();
			comm_id = val;
		} else if (OPT("--nccl")) {
			NEED_VAL();
			nccl = val;
		} else if (OPT("--wrap")) {
			wrap = 1;
		} else {
			ret = nrr_cli_opt_error("run", '?', a);
			goto end;
		}
#undef OPT
#undef NEED_VAL
	}
	if (!topo) {
		ret = nrr_cli_usage_error("run", "--topo FILE is required");
		goto end;
	}
	if (i >= argc) {
		ret = nrr_cli_usage_error("run", "no program given");
		goto end;
	}
	if (wrap && np) {
		ret = nrr_cli_usage_error("run", "--wrap and -np exclude each other");
		goto end;
	}
	if (!wrap && !np) {
		int r, n;
		const char *src;
		extern char **environ;
		if (nrr_launch_wrap_rank(environ, &r, &n, &src) != -ENOENT)
			wrap = 1;
	}

	struct nrr_cluster_spec spec = {
		.topo = topo,
		.nranks = np,
		.timeout_s = timeout,
		.nccl = nccl,
		.comm_id = comm_id,
		.env = user_env,
		.n_env = n_env,
		.unset = unset_env,
		.n_unset = n_unset,
		.rank_env = rank_env,
		.n_rank_env = n_rank_env,
		.late = late,
		.n_late = n_late,
		.wrap = wrap,
		.argv = argv + i,
		.out = stdout,
		.err = stderr,
		.report = stderr,
	};
	ret = nrr_cluster_run(&spec, res);
	if (ret == NRR_LAUNCH_SETUP && res->error[0])
		nrr_cli_error("run", "%s", res->error);
end:
	free(user_env);
	free(unset_env);
	free(rank_env);
	free(late);
	free(res);
	return ret;
}
