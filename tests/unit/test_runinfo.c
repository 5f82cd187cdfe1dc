/* SPDX-License-Identifier: MIT */
/* test_runinfo.c - analyzer/runinfo.c over traces written here: folding of
 * common values, per-rank values, normalisation of run noise and the diff. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nrt.h"
#include "check.h"
#include "write_trace.h"
#include "nrr_meta.h"
#include "runinfo.h"

static char dir[] = "/tmp/test_runinfo.XXXXXX";

/* A trace NAME.nrt in the run directory dir/SUB. */
static nrr_reader *trace(const char *sub, const char *name, const char *meta)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s.nrt", dir, sub, name);
	write_trace(path, meta, NULL, false);
	nrr_reader *r;
	nrr_diag d;
	CHECK_FATAL(nrr_reader_open(&r, path, &d) == 0, "open %s: %s", path, d.msg);
	return r;
}

/* The cluster file run directory dir/SUB keeps (as `ncclrr run` does). */
static void keep_cluster(const char *sub, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s/ncclrr-cluster.xml", dir, sub);
	FILE *f = fopen(path, "w");
	CHECK_FATAL(f, "create %s", path);
	fputs(text, f);
	fclose(f);
}

/* One run in dir/TAG: a launcher without rank and 4 ranks on 2 hosts.
 * @topo the recorded cluster file name (never opened: the run directory
 * keeps its copy); @bid the program's build id; @port the NCCL_COMM_ID
 * port; @algo; @hca2 the NCCL_IB_HCA of rank 2; @debug NCCL_DEBUG or NULL;
 * @proto or NULL. */
static void run(nrr_reader **r, const char *tag, const char *topo, const char *bid, int port, const char *algo,
		const char *hca2, const char *debug, const char *proto)
{
	char name[64], meta[4096];
	snprintf(name, sizeof(name), "%s-launcher", tag);
	snprintf(meta, sizeof(meta), "host=vm\npid=%d\nargv=ncclrr run --topo x -- ./prog\nexe=/nonexistent/ncclrr\n"
		 "env.NCCLRR_TRACE_DIR=/tmp/%s\n", port, tag);
	r[0] = trace(tag, name, meta);
	for (int k = 0; k < 4; k++) {
		int len = snprintf(meta, sizeof(meta),
				   "host=vm\npid=%d\nargv=/build/%s/prog --size 8\nexe=/nonexistent/%s/prog\nexe_build_id=%s\n"
				   "rank=%d\nnccl_version=2.21.5\nenv.LD_PRELOAD=/x/libncclrr-trace.so\n"
				   "env.NCCLRR_TRACE_DIR=/tmp/%s\nenv.NCCLRR_TOPO=%s/%s\nenv.NCCLRR_HOST=%d\n"
				   "env.NCCLRR_RANK=%d\nenv.RANK=%d\nenv.LOCAL_RANK=%d\nenv.WORLD_SIZE=4\n"
				   "env.NCCL_HOSTID=node%d\nenv.NCCL_COMM_ID=127.0.0.1:%d\n"
				   "env.NCCL_TOPO_FILE=/tmp/ncclrr-run.%s/host%d.xml\nenv.NCCL_ALGO=%s\n"
				   "env.NCCL_IB_HCA=%s\nenv.NCCLRR_TOPO_DIR=/%s/share/ncclrr/topo\n",
				   1000 + k, tag, tag, bid, k, tag, "/elsewhere", topo, k / 2, k, k, k % 2, k / 2, port, tag, k / 2,
				   algo, k == 2 ? hca2 : "mlx5_0", tag);
		if (debug)
			len += snprintf(meta + len, sizeof(meta) - (size_t)len, "env.NCCL_DEBUG=%s\n", debug);
		if (proto)
			snprintf(meta + len, sizeof(meta) - (size_t)len, "env.NCCL_PROTO=%s\n", proto);
		snprintf(name, sizeof(name), "%s-%d", tag, k);
		r[1 + k] = trace(tag, name, meta);
	}
}

static const struct nrr_runinfo_change *find(const struct nrr_runinfo_change *c, size_t n, const char *key,
					      int rank)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(c[i].key, key) == 0 && c[i].rank == rank)
			return &c[i];
	return NULL;
}

static int sv(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

int main(void)
{
	CHECK_FATAL(mkdtemp(dir), "mkdtemp");
	nrr_reader *a[5], *b[5], *c[5], *d[5], *e[5];
	run(a, "a", "topo_a.xml", "aa11", 41000, "Ring", "mlx5_0", "INFO", NULL);
	run(b, "b", "topo_a.xml", "aa11", 42000, "Tree", "mlx5_9", NULL, "LL");
	run(c, "c", "topo_c.xml", "cc33", 43000, "Ring", "mlx5_0", "INFO", NULL);
	run(d, "d", "topo_a.xml", "aa11", 44000, "Ring", "mlx5_0", "INFO", NULL);
	run(e, "e", "topo_a.xml", "aa11", 45000, "Ring", "mlx5_0", "INFO", NULL);
	keep_cluster("a", "<cluster a/>\n");
	keep_cluster("b", "<cluster a/>\n");   /* the same content */
	keep_cluster("c", "<cluster c/>\n");
	/* d keeps none; e's is a FIFO (a hostile run directory: not opened) */
	char fifo[512];
	snprintf(fifo, sizeof(fifo), "%s/e/ncclrr-cluster.xml", dir);
	CHECK_FATAL(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);

	struct nrr_runinfo ra, rb, rc;
	char err[256];
	CHECK_FATAL(nrr_runinfo_read(&ra, a, 5, err, sizeof(err)) == 0, "%s", err);
	CHECK_FATAL(nrr_runinfo_read(&rb, b, 5, err, sizeof(err)) == 0, "%s", err);
	CHECK_FATAL(nrr_runinfo_read(&rc, c, 5, err, sizeof(err)) == 0, "%s", err);

	/* sorted by key then rank */
	for (size_t i = 1; i < ra.n; i++) {
		int o = strcmp(ra.items[i - 1].key, ra.items[i].key);
		CHECK(o < 0 || (o == 0 && ra.items[i - 1].rank < ra.items[i].rank), "order at %zu", i);
	}
	CHECK(sv(nrr_runinfo_get(&ra, "nranks", -1), "4"), "nranks");
	CHECK(sv(nrr_runinfo_get(&ra, "ranks", -1), "0-3"), "ranks %s", nrr_runinfo_get(&ra, "ranks", -1));
	CHECK(sv(nrr_runinfo_get(&ra, "hosts", -1), "2: node0=0-1 node1=2-3"), "hosts %s",
	      nrr_runinfo_get(&ra, "hosts", -1));
	CHECK(sv(nrr_runinfo_get(&ra, "nccl_version", -1), "2.21.5"), "nccl_version");
	CHECK(sv(nrr_runinfo_get(&ra, "argv", -1), "prog --size 8"), "argv %s", nrr_runinfo_get(&ra, "argv", -1));
	CHECK(sv(nrr_runinfo_get(&ra, "exe", -1), "prog build-id:aa11"), "exe %s", nrr_runinfo_get(&ra, "exe", -1));
	const char *ta = nrr_runinfo_get(&ra, "topology", -1);
	CHECK(ta && strncmp(ta, "topo_a.xml fnv1a64:", 19) == 0, "topology %s", ta);
	/* no copy kept, or one that is not a regular file: the recorded path
	 * is not opened either */
	struct nrr_runinfo rd, re;
	CHECK_FATAL(nrr_runinfo_read(&rd, d, 5, err, sizeof(err)) == 0, "%s", err);
	CHECK_FATAL(nrr_runinfo_read(&re, e, 5, err, sizeof(err)) == 0, "%s", err);
	CHECK(sv(nrr_runinfo_get(&rd, "topology", -1), "topo_a.xml (no copy kept)"), "no copy: %s",
	      nrr_runinfo_get(&rd, "topology", -1));
	CHECK(sv(nrr_runinfo_get(&re, "topology", -1), "topo_a.xml (no copy kept)"), "FIFO: %s",
	      nrr_runinfo_get(&re, "topology", -1));
	nrr_runinfo_free(&rd);
	nrr_runinfo_free(&re);
	/* identity variables fold into one token item */
	CHECK(sv(nrr_runinfo_get(&ra, "env.RANK", -1), "<rank>"), "RANK");
	CHECK(sv(nrr_runinfo_get(&ra, "env.NCCLRR_RANK", -1), "<rank>"), "NCCLRR_RANK");
	CHECK(sv(nrr_runinfo_get(&ra, "env.LOCAL_RANK", -1), "<local rank>"), "LOCAL_RANK");
	CHECK(sv(nrr_runinfo_get(&ra, "env.NCCLRR_HOST", -1), "<host index>"), "NCCLRR_HOST");
	CHECK(sv(nrr_runinfo_get(&ra, "env.NCCL_HOSTID", -1), "<host>"), "NCCL_HOSTID");
	CHECK(sv(nrr_runinfo_get(&ra, "env.NCCL_COMM_ID", -1), "127.0.0.1:<port>"), "COMM_ID");
	/* noise is dropped */
	CHECK(!nrr_runinfo_get(&ra, "env.NCCLRR_TRACE_DIR", -1), "TRACE_DIR kept");
	CHECK(!nrr_runinfo_get(&ra, "env.LD_PRELOAD", -1), "LD_PRELOAD kept");
	CHECK(!nrr_runinfo_get(&ra, "env.NCCL_TOPO_FILE", -1), "TOPO_FILE kept");
	CHECK(!nrr_runinfo_get(&ra, "env.NCCLRR_TOPO", -1), "NCCLRR_TOPO kept");
	CHECK(!nrr_runinfo_get(&ra, "env.NCCLRR_TOPO_DIR", -1), "NCCLRR_TOPO_DIR kept");
	/* a value common to all ranks: one item of rank -1 */
	size_t nalgo = 0;
	for (size_t i = 0; i < ra.n; i++)
		nalgo += strcmp(ra.items[i].key, "env.NCCL_ALGO") == 0;
	CHECK(nalgo == 1, "NCCL_ALGO items %zu", nalgo);
	/* a value that differs on one rank: one item per rank */
	size_t nhca = 0;
	for (size_t i = 0; i < rb.n; i++)
		if (strcmp(rb.items[i].key, "env.NCCL_IB_HCA") == 0) {
			nhca++;
			CHECK(rb.items[i].rank == (int)nhca - 1, "hca rank %d", rb.items[i].rank);
		}
	CHECK(nhca == 4, "NCCL_IB_HCA items %zu", nhca);
	CHECK(sv(nrr_runinfo_get(&rb, "env.NCCL_IB_HCA", 2), "mlx5_9"), "hca rank 2");

	/* the diff: ALGO on every rank, HCA on rank 2, DEBUG gone, PROTO new,
	 * nothing else (the same binary, by its build id, at another path) */
	struct nrr_runinfo_change *ch;
	size_t n = nrr_runinfo_diff(&ra, &rb, &ch);
	CHECK_FATAL(n != (size_t)-1, "diff oom");
	for (size_t i = 0; i < n; i++)
		printf("  %s[%d]: %s -> %s\n", ch[i].key, ch[i].rank, ch[i].a ? ch[i].a : "(absent)",
		       ch[i].b ? ch[i].b : "(absent)");
	CHECK(n == 4, "%zu changes", n);
	const struct nrr_runinfo_change *x = find(ch, n, "env.NCCL_ALGO", -1);
	CHECK(x && sv(x->a, "Ring") && sv(x->b, "Tree"), "ALGO change");
	x = find(ch, n, "env.NCCL_IB_HCA", 2);
	CHECK(x && sv(x->a, "mlx5_0") && sv(x->b, "mlx5_9"), "HCA change");
	x = find(ch, n, "env.NCCL_DEBUG", -1);
	CHECK(x && sv(x->a, "INFO") && !x->b, "DEBUG removed");
	x = find(ch, n, "env.NCCL_PROTO", -1);
	CHECK(x && !x->a && sv(x->b, "LL"), "PROTO added");
	CHECK(!find(ch, n, "exe", -1), "exe: the same build id differs");
	for (size_t i = 1; i < n; i++) {
		int o = strcmp(ch[i - 1].key, ch[i].key);
		CHECK(o < 0 || (o == 0 && ch[i - 1].rank < ch[i].rank), "change order at %zu", i);
	}
	free(ch);

	/* a topology with other content differs; the same run against itself
	 * does not */
	n = nrr_runinfo_diff(&ra, &rc, &ch);
	CHECK(n == 2 && find(ch, n, "topology", -1) && find(ch, n, "exe", -1), "topology change (%zu)", n);
	free(ch);
	n = nrr_runinfo_diff(&ra, &ra, &ch);
	CHECK(n == 0, "self diff %zu", n);
	free(ch);

	/* a rank that is not a number is an error naming the file */
	nrr_reader *bad[1] = { trace("bad", "bad", "host=vm\nrank=x1\n") };
	struct nrr_runinfo rbad;
	CHECK(nrr_runinfo_read(&rbad, bad, 1, err, sizeof(err)) == -1 && strstr(err, "bad.nrt") &&
	      strstr(err, "rank=x1"), "bad rank: %s", err);
	CHECK(nrr_runinfo_read(&rbad, bad, 0, err, sizeof(err)) == -1, "no traces");
	nrr_reader_close(bad[0]);

	/* nrr_meta_rank(), the one reading of a trace's rank every reader uses:
	 * digits up to INT_MAX; anything else is damage, no rank is -ENOENT */
	static const struct { const char *meta; long want; } rk[] = {
		{ "host=vm\nrank=0\n", 0 },
		{ "host=vm\nrank=2147483647\n", 2147483647L },
		{ "host=vm\nrank=2147483648\n", -EINVAL },
		{ "host=vm\nrank=x1\n", -EINVAL },
		{ "host=vm\nrank=-1\n", -EINVAL },
		{ "host=vm\nrank=\n", -EINVAL },
		{ "host=vm\nnccl_rank=3\n", -ENOENT },
	};
	for (size_t i = 0; i < sizeof(rk) / sizeof(rk[0]); i++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "rank%zu", i);
		nrr_reader *t = trace("rank", nm, rk[i].meta);
		CHECK(t && nrr_meta_rank(t) == rk[i].want, "nrr_meta_rank of %s: %ld, want %ld", rk[i].meta,
		      t ? nrr_meta_rank(t) : 0L, rk[i].want);
		if (t)
			nrr_reader_close(t);
	}

	nrr_runinfo_free(&ra);
	nrr_runinfo_free(&rb);
	nrr_runinfo_free(&rc);
	for (int i = 0; i < 5; i++) {
		nrr_reader_close(a[i]);
		nrr_reader_close(b[i]);
		nrr_reader_close(c[i]);
		nrr_reader_close(d[i]);
		nrr_reader_close(e[i]);
	}
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return check_done("runinfo");
}
