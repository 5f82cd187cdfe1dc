/* SPDX-License-Identifier: MIT */
/* test_launch.c - placement, environment building and wrapper-rank detection. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "nrr_env.h"
#include "nrr_launch.h"

static void test_place(void)
{
	struct nrr_placement p;
	/* 2 hosts x 8 GPUs, default 16 ranks */
	for (int r = 0; r < 16; r++) {
		CHECK(nrr_launch_place(2, 8, 16, r, &p) == 0, "rank %d", r);
		CHECK(p.host == r / 8 && p.local_rank == r % 8 && p.local_size == 8 &&
		      p.nranks == 16 && p.rank == r, "rank %d -> host %d local %d", r, p.host, p.local_rank);
	}
	/* 4 hosts, 8 ranks: 2 per host */
	CHECK(nrr_launch_place(4, 8, 8, 5, &p) == 0 && p.host == 2 && p.local_rank == 1 &&
	      p.local_size == 2, "4x8 np 8 rank 5");
	/* 1 host, fewer ranks than GPUs */
	CHECK(nrr_launch_place(1, 8, 3, 2, &p) == 0 && p.host == 0 && p.local_rank == 2, "1x8 np 3");
	/* errors */
	char msg[256];
	CHECK(nrr_launch_place(2, 8, 3, 0, &p) == -EINVAL, "np not a multiple of hosts");
	CHECK(nrr_launch_place_error(2, 8, 3, msg, sizeof(msg)) < 0 && strstr(msg, "multiple"), "%s", msg);
	CHECK(nrr_launch_place(2, 8, 18, 0, &p) == -EINVAL, "too many per host");
	CHECK(nrr_launch_place_error(2, 8, 18, msg, sizeof(msg)) < 0 && strstr(msg, "at most 16"), "%s", msg);
	CHECK(nrr_launch_place(2, 8, 0, 0, &p) == -EINVAL, "np 0");
	CHECK(nrr_launch_place(2, 8, 16, 16, &p) == -EINVAL, "rank out of range");
	CHECK(nrr_launch_place(2, 8, 16, -1, &p) == -EINVAL, "negative rank");
	CHECK(nrr_launch_place(0, 8, 16, 0, &p) == -EINVAL, "no hosts");
	CHECK(nrr_launch_place_error(2, 8, 16, msg, sizeof(msg)) == 0 && msg[0] == '\0', "ok");
}

static void test_env(void)
{
	char *base[] = { "PATH=/bin", "RANK=99", "LD_LIBRARY_PATH=/opt/lib", "NOEQUALS", "A=1=2", NULL };
	struct nrr_env e;
	CHECK_FATAL(nrr_env_init(&e, base) == 0, "init");
	CHECK(e.n == 4, "4 vars kept (got %zu)", e.n);
	CHECK(strcmp(nrr_env_get(&e, "A"), "1=2") == 0, "value with '='");
	CHECK(nrr_env_get(&e, "NOEQUALS") == NULL, "no '=' dropped");
	CHECK(nrr_env_get(&e, "PAT") == NULL, "prefix is not a match");
	CHECK(nrr_env_set(&e, "PATH", "/usr/bin") == 0 && strcmp(nrr_env_get(&e, "PATH"), "/usr/bin") == 0, "replace");
	CHECK(e.n == 4, "replace keeps count");
	CHECK(nrr_env_put(&e, "=x") == -EINVAL, "empty key");
	CHECK(nrr_env_put(&e, "x") == -EINVAL, "no '='");
	nrr_env_unset(&e, "A");
	CHECK(nrr_env_get(&e, "A") == NULL && e.n == 3 && e.vars[3] == NULL, "unset");

	char *user[] = { "NCCL_DEBUG=INFO", "RANK=7", "NCCL_SOCKET_IFNAME=eth0" };
	struct nrr_rank_env re;
	memset(&re, 0, sizeof(re));
	CHECK_FATAL(nrr_launch_place(2, 8, 16, 11, &re.pl) == 0, "place");
	re.topo_path = "/abs/topo.xml";
	re.host_name = "node1";
	re.host_xml = "/tmp/x/host1.xml";
	re.host_sysfs = "/tmp/x/host1.sysfs";
	re.comm_id = "127.0.0.1:4242";
	re.fake_libdir = "/fake";
	re.user_env = user;
	re.n_user_env = 2;
	CHECK_FATAL(nrr_launch_rank_env(&e, &re) == 0, "rank env");
	static const char *const want[][2] = {
		{ "NCCLRR_TOPO", "/abs/topo.xml" }, { "NCCLRR_HOST", "1" }, { "NCCLRR_RANK", "11" },
		{ "NCCLRR_NRANKS", "16" }, { "NCCLRR_LOCAL_RANK", "3" }, { "NCCLRR_LOCAL_SIZE", "8" },
		{ "RANK", "7" /* the user's --env wins */ }, { "WORLD_SIZE", "16" }, { "LOCAL_RANK", "3" },
		{ "LOCAL_WORLD_SIZE", "8" }, { "NCCL_HOSTID", "node1" }, { "NCCL_COMM_ID", "127.0.0.1:4242" },
		{ "NCCL_SOCKET_IFNAME", "lo" }, { "NCCL_TOPO_FILE", "/tmp/x/host1.xml" },
		{ "LD_LIBRARY_PATH", "/fake:/opt/lib" }, { "NCCL_DEBUG", "INFO" }, { "PATH", "/usr/bin" },
		{ "NCCLRR_SYSFS", "/tmp/x/host1.sysfs" },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *v = nrr_env_get(&e, want[i][0]);
		CHECK(v && strcmp(v, want[i][1]) == 0, "%s=%s (got %s)", want[i][0], want[i][1], v ? v : "(unset)");
		/* what the launcher sets is a launcher's variable in the one
		 * table (nrr_env.h), which rerun never gives back and the tracer
		 * records; but the user's, the inherited PATH and the
		 * NCCL_SOCKET_IFNAME=lo default (an NCCL setting, which rerun
		 * judges by its value) */
		const char *k = want[i][0];
		if (strcmp(k, "NCCL_DEBUG") && strcmp(k, "PATH") && strcmp(k, "NCCL_SOCKET_IFNAME"))
			CHECK((nrr_env_flags(k, strlen(k)) & (NRR_ENV_LAUNCH | NRR_ENV_RECORD)) ==
				      (NRR_ENV_LAUNCH | NRR_ENV_RECORD),
			      "%s, which ncclrr run sets, is a recorded launcher's variable in nrr_env.h", k);
		/* and one that bisect never passes on to the runs it makes: set
		 * by ncclrr run, or one runinfo does not compare */
		if (strcmp(k, "NCCL_DEBUG") && strcmp(k, "PATH") && strcmp(k, "NCCL_SOCKET_IFNAME"))
			CHECK(nrr_env_flags(k, strlen(k)) & (NRR_ENV_BY_RUN | NRR_ENV_PER_RUN),
			      "%s, which ncclrr run sets, is NRR_ENV_BY_RUN (or PER_RUN) in nrr_env.h", k);
	}
	/* the fault switch is a launcher's variable (rerun never gives it
	 * back) but not one ncclrr run sets: bisect searches it */
	CHECK((nrr_env_flags("NCCLRR_FAULT", 12) & (NRR_ENV_LAUNCH | NRR_ENV_BY_RUN)) == NRR_ENV_LAUNCH,
	      "NCCLRR_FAULT: a launcher's variable, not set by ncclrr run");
	/* the fake fabric's timing is ncclrr's own and the machine's: rerun
	 * gives it back (NRR_ENV_FABRIC over NRR_ENV_LAUNCH) */
	CHECK((nrr_env_flags("NCCLRR_VERBS_TIME_SCALE", 23) & (NRR_ENV_LAUNCH | NRR_ENV_FABRIC)) ==
		      (NRR_ENV_LAUNCH | NRR_ENV_FABRIC) &&
		      !(nrr_env_flags("NCCLRR_VERBS_DIR", 16) & NRR_ENV_FABRIC),
	      "NCCLRR_VERBS_TIME_SCALE: a fabric setting, NCCLRR_VERBS_DIR not");
	/* the table's rules: a prefix matches longer names only; flags add up */
	CHECK(nrr_env_flags("NCCL_", 5) == 0 && (nrr_env_flags("NCCL_DEBUG", 10) & NRR_ENV_SETTING),
	      "prefix NCCL_");
	CHECK(nrr_env_flags("NCCLRR_TRACE_DIR", 16) == (NRR_ENV_RECORD | NRR_ENV_LAUNCH | NRR_ENV_PER_RUN),
	      "NCCLRR_TRACE_DIR: recorded, set by ncclrr, not compared");
	CHECK(nrr_env_flags("RANKS", 5) == 0 && nrr_env_flags("PATH", 4) == 0, "unknown variables");
	CHECK(nrr_env_rank_var(0) && !strcmp(nrr_env_rank_var(0), "RANK") && nrr_env_rank_var(5) &&
		      !strcmp(nrr_env_rank_var(5), "NCCLRR_RANK") && !nrr_env_rank_var(6),
	      "the rank variables, RANK first and ncclrr's own last");
	/* NCCL merges NICs as it would on a real host: the launcher leaves
	 * NCCL_IB_MERGE_NICS alone (the sysfs view gives NCCL the PCI paths) */
	CHECK(nrr_env_get(&e, "NCCL_IB_MERGE_NICS") == NULL, "NCCL_IB_MERGE_NICS is not set by the launcher");
	/* user override of an ncclrr variable, and a bad user variable */
	re.user_env = user + 2;
	re.n_user_env = 1;
	CHECK(nrr_launch_rank_env(&e, &re) == 0 && strcmp(nrr_env_get(&e, "NCCL_SOCKET_IFNAME"), "eth0") == 0,
	      "--env overrides NCCL_SOCKET_IFNAME");
	/* --unset: removes an inherited variable, one ncclrr sets and one the
	 * user set, after everything else */
	char *unset[] = { "PATH", "NCCL_SOCKET_IFNAME", "NCCL_DEBUG", "NOT_THERE" };
	re.user_env = user;
	re.n_user_env = 1;
	re.unset_env = unset;
	re.n_unset_env = 4;
	CHECK(nrr_launch_rank_env(&e, &re) == 0, "rank env with unset");
	CHECK(!nrr_env_get(&e, "PATH") && !nrr_env_get(&e, "NCCL_SOCKET_IFNAME") && !nrr_env_get(&e, "NCCL_DEBUG"),
	      "--unset removes inherited, ncclrr's and the user's variables");
	CHECK(nrr_env_get(&e, "NCCLRR_RANK") != NULL, "--unset leaves the rest");
	/* --rank-env: this rank's entries only, over --env and --unset */
	char *rankenv[] = { "11:NCCL_SOCKET_IFNAME=nosuchif0", "3:NCCL_DEBUG=WARN", "11:NCCL_DEBUG=TRACE" };
	re.rank_env = rankenv;
	re.n_rank_env = 3;
	CHECK(nrr_launch_rank_env(&e, &re) == 0, "rank env with --rank-env");
	CHECK(nrr_env_get(&e, "NCCL_SOCKET_IFNAME") && strcmp(nrr_env_get(&e, "NCCL_SOCKET_IFNAME"), "nosuchif0") == 0,
	      "--rank-env wins over --unset for its rank");
	CHECK(nrr_env_get(&e, "NCCL_DEBUG") && strcmp(nrr_env_get(&e, "NCCL_DEBUG"), "TRACE") == 0,
	      "--rank-env of another rank is not applied");
	re.pl.rank = 3;
	re.n_rank_env = 2;
	nrr_env_unset(&e, "NCCL_SOCKET_IFNAME");
	CHECK(nrr_launch_rank_env(&e, &re) == 0 && !nrr_env_get(&e, "NCCL_SOCKET_IFNAME") &&
	      strcmp(nrr_env_get(&e, "NCCL_DEBUG"), "WARN") == 0, "rank 3 gets its own entries only");
	re.pl.rank = 11;
	const char *kv = NULL;
	CHECK(nrr_launch_rank_env_parse("12:A=b=c", &kv) == 12 && kv && strcmp(kv, "A=b=c") == 0, "parse R:K=V");
	static const char *const badre[] = { "A=B", ":A=B", "-1:A=B", "x:A=B", "3:=B", "3:AB", "3A=B", "99999999999:A=B" };
	for (size_t i = 0; i < sizeof(badre) / sizeof(badre[0]); i++)
		CHECK(nrr_launch_rank_env_parse(badre[i], NULL) == -EINVAL, "bad --rank-env '%s' refused", badre[i]);
	char *badrankenv[] = { "3:=x" };
	re.rank_env = badrankenv;
	re.n_rank_env = 1;
	CHECK(nrr_launch_rank_env(&e, &re) == -EINVAL, "bad --rank-env in the rank env");
	re.rank_env = NULL;
	re.n_rank_env = 0;
	char *badunset[] = { "A=B" };
	re.unset_env = badunset;
	re.n_unset_env = 1;
	CHECK(nrr_launch_rank_env(&e, &re) == -EINVAL, "bad --unset");
	re.unset_env = NULL;
	re.n_unset_env = 0;
	char *bad[] = { "NOVALUE" };
	re.user_env = bad;
	CHECK(nrr_launch_rank_env(&e, &re) == -EINVAL, "bad --env");
	nrr_env_free(&e);

	/* NCCLRR_FAULT (inherited or --rank-env) preloads the fault switch's
	 * socket library behind what LD_PRELOAD already holds; none without it */
	{
		char *base2[] = { "LD_PRELOAD=/t/libncclrr-trace.so", NULL };
		char *fre[] = { "3:NCCLRR_FAULT=connect:thread=NCCL Service:nth=1:ECONNREFUSED" };
		struct nrr_rank_env r2;
		memset(&r2, 0, sizeof(r2));
		CHECK_FATAL(nrr_launch_place(2, 8, 16, 3, &r2.pl) == 0, "place");
		r2.fake_libdir = "/fake:/nccl";
		r2.rank_env = fre;
		r2.n_rank_env = 1;
		struct nrr_env e2;
		CHECK_FATAL(nrr_env_init(&e2, base2) == 0 && nrr_launch_rank_env(&e2, &r2) == 0, "rank env with a fault");
		const char *pl = nrr_env_get(&e2, "LD_PRELOAD");
		CHECK(pl && strcmp(pl, "/t/libncclrr-trace.so:/fake/" NRR_FAKE_SOCKET_LIB) == 0,
		      "NCCLRR_FAULT appends the socket fault library to LD_PRELOAD (got %s)", pl ? pl : "(unset)");
		nrr_env_free(&e2);
		r2.pl.rank = 4;
		CHECK_FATAL(nrr_env_init(&e2, base2) == 0 && nrr_launch_rank_env(&e2, &r2) == 0, "rank env without");
		pl = nrr_env_get(&e2, "LD_PRELOAD");
		CHECK(pl && strcmp(pl, "/t/libncclrr-trace.so") == 0, "no NCCLRR_FAULT, LD_PRELOAD untouched (got %s)",
		      pl ? pl : "(unset)");
		nrr_env_free(&e2);
	}

	/* LD_LIBRARY_PATH absent or empty */
	char *empty[] = { "LD_LIBRARY_PATH=", NULL };
	CHECK_FATAL(nrr_env_init(&e, empty) == 0, "init");
	CHECK(nrr_env_prepend_path(&e, "LD_LIBRARY_PATH", "/f") == 0 &&
	      strcmp(nrr_env_get(&e, "LD_LIBRARY_PATH"), "/f") == 0, "empty path");
	nrr_env_free(&e);
	CHECK_FATAL(nrr_env_init(&e, NULL) == 0, "init NULL");
	CHECK(e.n == 0 && e.vars[0] == NULL, "empty env is NULL-terminated");
	/* many variables: growth */
	for (int i = 0; i < 500; i++) {
		char k[16];
		snprintf(k, sizeof(k), "K%d", i);
		CHECK_FATAL(nrr_env_set(&e, k, "v") == 0, "set %s", k);
	}
	CHECK(e.n == 500 && e.vars[500] == NULL && strcmp(nrr_env_get(&e, "K499"), "v") == 0, "500 vars");
	nrr_env_free(&e);
}

static void test_wrap(void)
{
	int r, n;
	const char *src;
	char *ompi[] = { "RANK=5", "WORLD_SIZE=9", "OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=16", NULL };
	CHECK(nrr_launch_wrap_rank(ompi, &r, &n, &src) == 0 && r == 3 && n == 16 &&
	      strcmp(src, "OMPI_COMM_WORLD_RANK") == 0, "Open MPI first");
	char *slurm[] = { "SLURM_PROCID=2", "SLURM_NTASKS=4", NULL };
	CHECK(nrr_launch_wrap_rank(slurm, &r, &n, &src) == 0 && r == 2 && n == 4, "Slurm");
	char *torch[] = { "RANK=1", "WORLD_SIZE=2", NULL };
	CHECK(nrr_launch_wrap_rank(torch, &r, &n, &src) == 0 && r == 1 && n == 2 &&
	      strcmp(src, "RANK") == 0, "torchrun");
	char *nosize[] = { "RANK=1", NULL };
	CHECK(nrr_launch_wrap_rank(nosize, &r, &n, &src) == -EINVAL, "no world size");
	char *badnum[] = { "RANK=x", "WORLD_SIZE=2", NULL };
	CHECK(nrr_launch_wrap_rank(badnum, &r, &n, &src) == -EINVAL, "bad number");
	char *outside[] = { "RANK=2", "WORLD_SIZE=2", NULL };
	CHECK(nrr_launch_wrap_rank(outside, &r, &n, &src) == -EINVAL, "rank >= size");
	char *none[] = { "PATH=/bin", NULL };
	CHECK(nrr_launch_wrap_rank(none, &r, &n, &src) == -ENOENT, "none");
}

static void test_misc(void)
{
	int p = nrr_launch_free_port();
	CHECK(p > 0 && p < 65536, "free port %d", p);
	char buf[4096];
	CHECK(nrr_launch_find_program("sh", buf, sizeof(buf)) == 0 && strchr(buf, '/'), "sh in PATH: %s", buf);
	CHECK(nrr_launch_find_program("/nonexistent/prog", buf, sizeof(buf)) == -ENOENT, "missing");
	CHECK(nrr_launch_find_program("no-such-program-ncclrr", buf, sizeof(buf)) == -ENOENT, "not in PATH");
	CHECK(nrr_launch_find_program("/etc/passwd", buf, sizeof(buf)) == -EACCES, "not executable");
}

int main(void)
{
	test_place();
	test_env();
	test_wrap();
	test_misc();
	return check_done("launch_units");
}
