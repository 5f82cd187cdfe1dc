/* SPDX-License-Identifier: MIT */
/*
 * test_rcuda - CUDA driver / NVML replay (rcuda.c) over real recordings.
 *
 * Records conn_setup on the fake 2-node cluster twice with `ncclrr record`
 * (clean, and with cuMemImportFromShareableHandle failing on rank 3), then
 * replays every CUDA/NVML/verbs call of rank 3 in one thread through
 * nrr_rcuda_call(), each scenario in a fresh child process (the fake
 * runtime reads its virtual host once per process):
 *   clean, ERRORS          no divergence, nothing unsupported
 *   clean, tampered value  cuDeviceGetCount's count changed: "out count: recorded 4, replayed 8"
 *   clean, other host      replayed as host 1: diverges (names, bus ids)
 *   fault, ERRORS          the failed import is INJECTED, no divergence
 *   fault, NONE            the import runs and diverges: "result: recorded
 *                          CUDA_ERROR_INVALID_VALUE (1), replayed CUDA_SUCCESS (0)"
 *   clean, ALL             every call INJECTED; exports get live memfds
 * The descriptor table (nrr_rfd_*) is this test's own: the export's fd
 * stands in for the one the socket replay would receive.
 *
 * usage: test_rcuda NCCLRR CONN_SETUP TOPO FAKE_LIBDIR
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nrr_meta.h"
#include "replay_internal.h"

static int failures;
#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond)) {                                            \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                     \
			fputc('\n', stderr);                              \
			failures++;                                       \
		}                                                         \
	} while (0)

/* ---- the test's descriptor table (the worker's in the real replay) */
struct nrr_rproc {
	int64_t rec[256];
	int live[256];
	int n;
	int puts;
};

void nrr_rfd_put(nrr_rproc *p, int64_t rec, int live)
{
	for (int i = 0; i < p->n; i++)
		if (p->rec[i] == rec) {
			p->live[i] = live;
			p->puts++;
			return;
		}
	if (p->n < 256) {
		p->rec[p->n] = rec;
		p->live[p->n++] = live;
		p->puts++;
	}
}

bool nrr_rfd_served(nrr_rproc *p, int64_t rec)
{
	(void)p;
	(void)rec;
	return false;
}

int nrr_rfd_get(nrr_rproc *p, int64_t rec)
{
	for (int i = 0; i < p->n; i++)
		if (p->rec[i] == rec)
			return p->live[i];
	return -1;
}

void nrr_rfd_del(nrr_rproc *p, int64_t rec)
{
	for (int i = 0; i < p->n; i++)
		if (p->rec[i] == rec)
			p->rec[i] = p->rec[--p->n], p->live[i] = p->live[p->n];
}

uint64_t nrr_rproc_wall(const nrr_rproc *p, uint64_t ts)
{
	(void)p;
	return ts;
}

/* one process: no peer worker to wait for */
int nrr_wait_peer_gone(nrr_rproc *p, uint32_t pid, uint64_t ts)
{
	(void)p;
	(void)pid;
	(void)ts;
	return 0;
}

int nrr_wait_peer_ended(nrr_rproc *p, uint32_t pid, uint64_t ts)
{
	(void)p;
	(void)pid;
	(void)ts;
	return 0;
}

/* ---- scenarios */
struct counts {
	int n[4];          /* by enum nrr_rstatus */
	int rfd_puts;
	char first_div[400];     /* "fn: why" of the first divergence */
	char first_unsup[400];
	char import_why[320];    /* cuMemImportFromShareableHandle's answer */
	int import_status;
	char tamper_why[320];
	int tamper_status;
};

static const char *fake_libdir, *topo;

static char *rank_file(const char *dir, int rank)
{
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	struct dirent *e;
	char *found = NULL;
	while (!found && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 5 || strcmp(e->d_name + l - 4, ".nrt"))
			continue;
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		nrr_reader *r;
		nrr_diag dg;
		if (nrr_reader_open(&r, path, &dg) < 0)
			continue;
		if (nrr_meta_rank(r) == rank)
			found = strdup(path);
		nrr_reader_close(r);
	}
	closedir(d);
	return found;
}

static void replay(const char *file, const char *host, int inject, bool tamper, struct counts *out)
{
	static nrr_rproc proc;
	nrr_rcuda *x;
	char err[512];
	nrr_rcuda_opts o = { .fake_libdir = fake_libdir, .topo = topo, .host = host, .rank = 3, .inject = inject };
	memset(out, 0, sizeof(*out));
	out->import_status = out->tamper_status = -1;
	if (nrr_rcuda_open(&x, &proc, &o, err, sizeof(err)) < 0) {
		fprintf(stderr, "nrr_rcuda_open: %s\n", err);
		exit(3);
	}
	nrr_reader *r;
	nrr_diag dg;
	if (nrr_reader_open(&r, file, &dg) < 0) {
		char b[1200];
		nrr_diag_format(&dg, b, sizeof(b));
		fprintf(stderr, "%s\n", b);
		exit(3);
	}
	for (uint32_t s = 0; s < nrr_reader_info(r)->nstreams; s++) {
		nrr_cursor *cur;
		const nrr_call *c;
		if (nrr_cursor_open(&cur, r, s) < 0)
			exit(3);
		while (nrr_cursor_next(cur, &c) == 0) {
			if (c->kind != NRR_CALL || !c->done || c->phase == NRR_PHASE_ENTER || !nrr_rcuda_handles(c->fn))
				continue;
			nrr_rres res;
			if (tamper && !strcmp(c->fn->name, "cuDeviceGetCount")) {
				nrr_call t = *c;
				t.args[0].u = 4;
				CHECK(nrr_rcuda_call(x, &t, &res) == 0, "tampered call failed");
				out->tamper_status = res.status;
				snprintf(out->tamper_why, sizeof(out->tamper_why), "%s", res.why);
				tamper = false;
			}
			int rc = nrr_rcuda_call(x, c, &res);
			CHECK(rc == 0, "#%llu %s: engine failure %d: %s", (unsigned long long)c->seq, c->fn->name, rc,
			      res.why);
			out->n[res.status]++;
			if (res.status == NRR_R_DIVERGED && !out->first_div[0])
				snprintf(out->first_div, sizeof(out->first_div), "#%llu %s: %s", (unsigned long long)c->seq,
					 c->fn->name, res.why);
			if (res.status == NRR_R_UNSUPPORTED && !out->first_unsup[0])
				snprintf(out->first_unsup, sizeof(out->first_unsup), "#%llu %s: %s",
					 (unsigned long long)c->seq, c->fn->name, res.why);
			if (res.status == NRR_R_INJECTED && getenv("TEST_RCUDA_VERBOSE"))
				printf("  injected #%llu %s\n", (unsigned long long)c->seq, c->fn->name);
			if (!strcmp(c->fn->name, "cuMemImportFromShareableHandle")) {
				out->import_status = res.status;
				snprintf(out->import_why, sizeof(out->import_why), "%s", res.why);
			}
		}
		nrr_cursor_close(cur);
	}
	out->rfd_puts = proc.puts;
	nrr_reader_close(r);
	nrr_rcuda_close(x);
}

/* run one scenario in a child: the fake runtime's host is per process */
static struct counts scenario(const char *name, const char *file, const char *host, int inject, bool tamper)
{
	struct counts c;
	int fds[2];
	memset(&c, 0, sizeof(c));
	if (pipe(fds) < 0)
		exit(3);
	pid_t pid = fork();
	if (pid == 0) {
		failures = 0;
		close(fds[0]);
		replay(file, host, inject, tamper, &c);
		if (write(fds[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
			_exit(3);
		_exit(failures ? 1 : 0);
	}
	close(fds[1]);
	ssize_t k = read(fds[0], &c, sizeof(c));
	close(fds[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(k == (ssize_t)sizeof(c) && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: replay child failed (status %d)",
	      name, st);
	printf("%-22s match %3d injected %3d diverged %3d unsupported %3d  fds put %d\n", name, c.n[0], c.n[1], c.n[2],
	       c.n[3], c.rfd_puts);
	if (c.first_div[0])
		printf("%-22s first divergence: %s\n", "", c.first_div);
	if (c.first_unsup[0])
		printf("%-22s first unsupported: %s\n", "", c.first_unsup);
	return c;
}

static void record(const char *ncclrr, const char *prog, const char *dir, const char *fault)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "%s%s%s%s record -o %s -q -- %s run --topo %s --timeout 60 -- %s --no-nccl >%s.log 2>&1",
		 fault ? "NCCLRR_FAULT=" : "", fault ? fault : "", fault ? " " : "", ncclrr, dir, ncclrr, topo, prog, dir);
	int st = system(cmd);
	/* the fault run exits 1 (rank 3 reports the failed import) */
	if (!WIFEXITED(st) || WEXITSTATUS(st) > 1) {
		fprintf(stderr, "recording failed (%d): %s\n", st, cmd);
		exit(3);
	}
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: test_rcuda NCCLRR CONN_SETUP TOPO FAKE_LIBDIR\n");
		return 2;
	}
	topo = argv[3];
	fake_libdir = argv[4];
	/* An AddressSanitizer build of the tracer cannot be preloaded into
	 * programs (the ASan runtime must come first): recording needs a
	 * plain build. */
	char *probe = NULL;
	if (asprintf(&probe, "ldd \"$(dirname '%s')/../tracer/libncclrr-trace.so\" 2>/dev/null | grep -q libasan",
		     argv[1]) > 0 && system(probe) == 0) {
		printf("SKIP: the tracer is built with AddressSanitizer, which cannot be preloaded; run this test in a build without -Db_sanitize\n");
		free(probe);
		return 77;
	}
	free(probe);
	if (nrr_xmap_init(256) < 0) {
		fprintf(stderr, "nrr_xmap_init failed\n");
		return 3;
	}
	char tmpl[] = "/tmp/test_rcuda.XXXXXX";
	if (!mkdtemp(tmpl))
		return 3;
	char clean[600], fault[600];
	snprintf(clean, sizeof(clean), "%s/clean", tmpl);
	snprintf(fault, sizeof(fault), "%s/fault", tmpl);
	record(argv[1], argv[2], clean, NULL);
	record(argv[1], argv[2], fault, "cuMemImportFromShareableHandle:rank=3:nth=1:CUDA_ERROR_INVALID_VALUE");
	char *cf = rank_file(clean, 3), *ff = rank_file(fault, 3);
	if (!cf || !ff) {
		fprintf(stderr, "no trace of rank 3 in %s or %s\n", clean, fault);
		return 3;
	}

	struct counts c = scenario("clean errors", cf, "0", NRR_INJECT_ERRORS, true);
	CHECK(c.n[NRR_R_DIVERGED] == 0 && c.n[NRR_R_UNSUPPORTED] == 0, "clean trace: %d diverged, %d unsupported",
	      c.n[NRR_R_DIVERGED], c.n[NRR_R_UNSUPPORTED]);
	CHECK(c.n[NRR_R_MATCH] >= 150, "clean trace: only %d calls matched", c.n[NRR_R_MATCH]);
	CHECK(c.import_status == NRR_R_MATCH, "clean import: status %d: %s", c.import_status, c.import_why);
	CHECK(c.rfd_puts >= 2, "exports put %d fds", c.rfd_puts);
	CHECK(c.tamper_status == NRR_R_DIVERGED && !strcmp(c.tamper_why, "out count: recorded 4, replayed 8"),
	      "tampered cuDeviceGetCount: status %d, why \"%s\"", c.tamper_status, c.tamper_why);

	c = scenario("clean, host 1", cf, "1", NRR_INJECT_ERRORS, false);
	CHECK(c.n[NRR_R_DIVERGED] > 0 && strstr(c.first_div, "node0"),
	      "replayed on another host: %d divergences, first \"%s\"", c.n[NRR_R_DIVERGED], c.first_div);

	c = scenario("fault errors", ff, "0", NRR_INJECT_ERRORS, false);
	CHECK(c.import_status == NRR_R_INJECTED, "fault import with ERRORS: status %d (%s)", c.import_status,
	      c.import_why);
	CHECK(c.n[NRR_R_DIVERGED] == 0 && c.n[NRR_R_UNSUPPORTED] == 0, "fault trace, ERRORS: %d diverged, %d unsupported",
	      c.n[NRR_R_DIVERGED], c.n[NRR_R_UNSUPPORTED]);

	c = scenario("fault none", ff, "0", NRR_INJECT_NONE, false);
	CHECK(c.import_status == NRR_R_DIVERGED &&
		      !strcmp(c.import_why, "result: recorded CUDA_ERROR_INVALID_VALUE (1), replayed CUDA_SUCCESS (0)"),
	      "fault import with NONE: status %d, why \"%s\"", c.import_status, c.import_why);

	c = scenario("clean all", cf, "0", NRR_INJECT_ALL, false);
	CHECK(c.n[NRR_R_MATCH] == 0 && c.n[NRR_R_DIVERGED] == 0 && c.n[NRR_R_UNSUPPORTED] == 0 &&
		      c.n[NRR_R_INJECTED] >= 150 && c.rfd_puts >= 2,
	      "ALL: match %d diverged %d unsupported %d injected %d fds %d", c.n[0], c.n[2], c.n[3], c.n[1], c.rfd_puts);

	char rm[700];
	snprintf(rm, sizeof(rm), "rm -rf %s", tmpl);
	if (!failures && system(rm) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpl);
	free(cf);
	free(ff);
	printf("%s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
