/* SPDX-License-Identifier: MIT */
/* bisect.c - `ncclrr bisect`: delta debugging over the environment and
 * topology differences of a good and a bad run (see bisect.h).
 *
 * A caller of the libraries, not of ncclrr's own command line: an attempt
 * is nrr_cluster_run() with a recording (the launcher), a version try is
 * nrr_rerun() (the engine), the closing comparison nrr_diff_run() (the
 * analyzer).  Attempts and reruns still run in a forked child, which calls
 * the library there: the child is a process group that a timeout or a
 * signal can end as a whole, its output goes to the attempt's .log, and
 * the launcher's signal handlers stay out of this process. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bisect.h"
#include "diff.h"
#include "nrr_env.h"
#include "nrr_launch.h"
#include "rerun.h"
#include "run.h"
#include "rundir.h"
#include "runinfo.h"

/* ------------------------------------------------------------ ddmin */

int nrr_ddmin(size_t n, int (*test)(const size_t *subset, size_t k, void *ctx), void *ctx, size_t *min,
	      size_t *nmin)
{
	size_t *c = malloc((n + 1) * sizeof(size_t)), *t = malloc((n + 1) * sizeof(size_t));
	if (!c || !t) {
		free(c);
		free(t);
		return -1;
	}
	size_t nc = n, gran = 2;
	for (size_t i = 0; i < n; i++)
		c[i] = i;
	while (nc >= 2) {
		if (gran > nc)
			gran = nc;
		bool reduced = false;
		/* candidates 0..gran-1: chunk i, c[lo(i) .. lo(i+1)); then, with
		 * more than two chunks, their complements (with two they are the
		 * chunks again) */
#define LO(i) ((i) * nc / gran)
		size_t ncand = gran > 2 ? 2 * gran : gran;
		for (size_t cand = 0; cand < ncand && !reduced; cand++) {
			size_t i = cand % gran, k = 0;
			bool chunk = cand < gran;
			for (size_t j = 0; j < nc; j++)
				if ((j >= LO(i) && j < LO(i + 1)) == chunk)
					t[k++] = c[j];
			int r = test(t, k, ctx);
			if (r < 0)
				goto fail;
			if (r == 1) {
				memcpy(c, t, k * sizeof(size_t));
				nc = k;
				gran = chunk || gran - 1 < 2 ? 2 : gran - 1;
				reduced = true;
			}
		}
#undef LO
		if (!reduced) {
			if (gran >= nc)
				break;
			gran = 2 * gran < nc ? 2 * gran : nc;
		}
	}
	memcpy(min, c, nc * sizeof(size_t));
	*nmin = nc;
	free(c);
	free(t);
	return 0;
fail:
	free(c);
	free(t);
	return -1;
}

/* ------------------------------------------------------------ the command */

/* One searchable difference: an environment variable (name set) or the
 * topology (name NULL: the values are the cluster files the runs keep,
 * shown by the paths their recordings name). NULL value: absent. */
struct delta {
	const char *name;
	const char *good, *bad;
	const char *shown_good, *shown_bad;
};

struct attempt {
	char *mask;     /* '0'/'1' per delta */
	int no;         /* attempt number, from 1 */
	bool fail;
	char *dir;
};

struct bisect {
	const struct nrr_bisect_opts *o;
	char workdir[PATH_MAX];
	const char *topo_good, *topo_bad;   /* cluster files */
	int nranks;
	struct delta *d;
	size_t nd;
	char **base_env;    /* "--env" values of the good run kept as they were */
	size_t nbase_env;
	char **base_unset;  /* inherited NCCL_* names the good run did not have */
	size_t nbase_unset;
	struct attempt *att;
	size_t natt;
	int last_pass;      /* index in att of the last passing attempt, -1 */
	const char *nccl;   /* the bad run's NCCL version, which the attempts load;
			     * NULL: ncclrr run's default */
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Variables `ncclrr run` sets for each rank itself (NRR_ENV_BY_RUN of the
 * one table, formats/env.c): never passed on. Not every launcher's variable
 * (NRR_ENV_LAUNCH): NCCLRR_FAULT is one, and a difference in it is searched. */
static bool set_by_run(const char *name)
{
	return (nrr_env_flags(name, strlen(name)) & NRR_ENV_BY_RUN) != 0;
}

/* A value runinfo normalised (or the tracer redacted): cannot be set. */
static bool is_token(const char *v)
{
	return v && (strstr(v, "<port>") || strstr(v, "<redacted>") || strcmp(v, "<rank>") == 0 ||
		     strcmp(v, "<local rank>") == 0 || strcmp(v, "<host index>") == 0 || strcmp(v, "<host>") == 0);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* "NAME=bad" / "-NAME" / "topology=FILE" for a delta applied */
static void print_change(FILE *f, const struct delta *d)
{
	if (!d->name)
		fprintf(f, "topology=%s", base_name(d->shown_bad));
	else if (d->bad)
		fprintf(f, "%s=%s", d->name, d->bad);
	else
		fprintf(f, "-%s", d->name);
}

static void print_subset(FILE *f, const struct bisect *b, const char *mask)
{
	size_t k = 0;
	for (size_t i = 0; i < b->nd; i++)
		k += mask[i] == '1';
	if (k == 0) {
		fprintf(f, "{} (the good configuration)");
		return;
	}
	fputc('{', f);
	bool first = true;
	for (size_t i = 0; i < b->nd; i++)
		if (mask[i] == '1') {
			if (!first)
				fputs(", ", f);
			first = false;
			print_change(f, &b->d[i]);
		}
	fputc('}', f);
	if (k == b->nd && k > 1)
		fprintf(f, " (the bad configuration)");
}

/* Run @job(@arg) in a child process (its own process group), its output
 * into @log, its stdin /dev/null, its return value its exit status;
 * killed (process group) after @limit s or on SIGINT/SIGTERM.  @return 0
 * with its wait status in *@st (*@killed: the limit killed it), or -1
 * (errno) when it could not be run or we were interrupted. */
static int run_logged(int (*job)(void *), void *arg, const char *log, double limit, int *st, bool *killed)
{
	double t0 = now_s();
	*killed = false;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (nul >= 0)
			dup2(nul, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		int rc = job(arg);
		fflush(NULL);
		_exit(rc);
	}
	if (pid < 0)
		return -1;
	setpgid(pid, pid);
	for (;;) {
		pid_t w = waitpid(pid, st, WNOHANG);
		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -1;
		if (interrupted || (!*killed && now_s() - t0 > limit)) {
			kill(-pid, interrupted ? SIGTERM : SIGKILL);
			kill(pid, SIGKILL);
			*killed = true;
			if (interrupted) {
				waitpid(pid, st, 0);
				return -1;
			}
		}
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* An attempt's job, in the child (run_logged): the cluster run, recorded;
 * @return its status (NRR_LAUNCH_*), which `ncclrr run` exits with. */
static int attempt_job(void *arg)
{
	const struct nrr_cluster_spec *s = arg;
	struct nrr_cluster_result *res = calloc(1, sizeof(*res));
	if (!res) {
		fprintf(stderr, "ncclrr run: out of memory\n");
		return NRR_LAUNCH_SETUP;
	}
	int rc = nrr_cluster_run(s, res);
	if (rc == NRR_LAUNCH_SETUP && res->error[0])
		fprintf(stderr, "ncclrr run: %s\n", res->error);
	free(res);
	return rc;
}

/* Run one attempt: the good configuration with the deltas of @mask.
 * @return 1 fail, 0 pass, -1 could not run (printed). */
static int attempt(struct bisect *b, const char *mask)
{
	for (size_t i = 0; i < b->natt; i++)
		if (strcmp(b->att[i].mask, mask) == 0)
			return b->att[i].fail;
	struct attempt *na = realloc(b->att, (b->natt + 1) * sizeof(*na));
	if (!na)
		return -1;
	b->att = na;
	int no = (int)b->natt + 1;
	char dir[PATH_MAX + 32], log[PATH_MAX + 32];
	snprintf(dir, sizeof(dir), "%s/attempt-%02d", b->workdir, no);
	snprintf(log, sizeof(log), "%s/attempt-%02d.log", b->workdir, no);

	/* the job `ncclrr record -o DIR -q -- ncclrr run --topo T -np N
	 * --timeout S [--nccl V] [--env K=V]... [--unset K]... -- PROGRAM`
	 * runs: the good run's settable environment, the shell's NCCL_*
	 * it did not have unset, then each delta, good or bad by @mask */
	const char *topo = b->topo_good;
	char **env = calloc(b->nbase_env + b->nd + 1, sizeof(char *));
	char **unset = calloc(b->nbase_unset + b->nd + 1, sizeof(char *));
	char **owned = calloc(b->nd + 1, sizeof(char *));
	size_t nenv = 0, nunset = 0, nown = 0;
	int ret = -1;
	if (!env || !unset || !owned)
		goto out;
	for (size_t i = 0; i < b->nd; i++)
		if (!b->d[i].name && mask[i] == '1')
			topo = b->d[i].bad;
	for (size_t i = 0; i < b->nbase_env; i++)
		env[nenv++] = b->base_env[i];
	for (size_t i = 0; i < b->nbase_unset; i++)
		unset[nunset++] = b->base_unset[i];
	for (size_t i = 0; i < b->nd; i++) {
		const struct delta *d = &b->d[i];
		if (!d->name)
			continue;
		const char *v = mask[i] == '1' ? d->bad : d->good;
		if (v) {
			size_t len = strlen(d->name) + strlen(v) + 2;
			char *kv = malloc(len);
			if (!kv)
				continue;
			snprintf(kv, len, "%s=%s", d->name, v);
			owned[nown++] = kv;
			env[nenv++] = kv;
		} else {
			unset[nunset++] = (char *)d->name;
		}
	}
	struct nrr_record_opts rec = { .dir = dir, .warn = stderr };
	struct nrr_cluster_spec spec = {
		.topo = topo,
		.nranks = b->nranks,
		.timeout_s = b->o->timeout_s,
		.nccl = b->nccl,
		.env = env,
		.n_env = nenv,
		.unset = unset,
		.n_unset = nunset,
		.record = &rec,
		.argv = b->o->argv,
		.out = stdout,
		.err = stderr,
		.report = stderr,
	};

	double t0 = now_s();
	/* `ncclrr run --timeout` ends the ranks; the limit only guards
	 * against a launcher that does not come back */
	double limit = b->o->timeout_s + 30;
	int st = 0;
	bool killed = false;
	if (run_logged(attempt_job, &spec, log, limit, &st, &killed) < 0) {
		if (!interrupted)
			fprintf(stderr, "ncclrr bisect: cannot run attempt %d: %s\n", no, strerror(errno));
		goto out;
	}
	double dt = now_s() - t0;
	bool fail = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	b->att[b->natt] = (struct attempt){ strdup(mask), no, fail, strdup(dir) };
	if (!b->att[b->natt].mask || !b->att[b->natt].dir) {
		free(b->att[b->natt].mask);
		free(b->att[b->natt].dir);
		goto out;
	}
	b->natt++;
	if (!fail)
		b->last_pass = (int)b->natt - 1;
	printf("attempt %2d: ", no);
	print_subset(stdout, b, mask);
	if (!fail)
		printf(": pass");
	else if (killed)
		printf(": fail (killed after %.0f s)", limit);
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 124)
		printf(": fail (timeout after %g s)", b->o->timeout_s);
	else if (WIFEXITED(st))
		printf(": fail (exit %d)", WEXITSTATUS(st));
	else
		printf(": fail (signal %d)", WTERMSIG(st));
	printf(", %.2f s\n", dt);
	fflush(stdout);
	ret = fail;
out:
	for (size_t i = 0; i < nown; i++)
		free(owned[i]);
	free(owned);
	free(env);
	free(unset);
	return ret;
}

/* What attempt @no printed last: its last @nl lines other than `ncclrr
 * run`'s per-rank exit summary, and that summary's last line. */
static void print_log_tail(const struct bisect *b, int no, int nl)
{
	char log[PATH_MAX + 32];
	snprintf(log, sizeof(log), "%s/attempt-%02d.log", b->workdir, no);
	FILE *f = fopen(log, "r");
	if (!f)
		return;
	char *lines[16] = { 0 }, *summary = NULL;
	size_t cap = 0, n = 0;
	char *l = NULL;
	ssize_t len;
	if (nl > 16)
		nl = 16;
	while ((len = getline(&l, &cap, f)) > 0) {
		if (l[len - 1] == '\n')
			l[len - 1] = '\0';
		if (strncmp(l, "ncclrr run: ", 12) == 0) {
			free(summary);
			summary = strdup(l);
			continue;
		}
		free(lines[n % (size_t)nl]);
		lines[n++ % (size_t)nl] = strdup(l);
	}
	free(l);
	fclose(f);
	printf("attempt %d printed last:\n", no);
	for (size_t i = n > (size_t)nl ? n - (size_t)nl : 0; i < n; i++)
		printf("  %s\n", lines[i % (size_t)nl] ? lines[i % (size_t)nl] : "");
	if (summary)
		printf("  %s\n", summary);
	for (int i = 0; i < nl; i++)
		free(lines[i]);
	free(summary);
}

/* ------------------------------------------------------- NCCL versions */
struct vtry {
	char version[32];
	int outcome;        /* -1 not tried, 1 the recorded failure again, 0 not */
	bool partly;        /* 0, but some ranks did end as recorded */
};

/* what a version's outcome is called */
static const char *outcome_word(const struct vtry *v)
{
	return v->outcome > 0 ? "the recorded failure" : v->outcome < 0 ? "could not tell" : v->partly ? "changed" : "gone";
}

/* The line of @log that starts with @prefix (the last one), or "" */
static void log_line(const char *log, const char *prefix, char *buf, size_t len)
{
	buf[0] = '\0';
	FILE *f = fopen(log, "r");
	if (!f)
		return;
	char *l = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&l, &cap, f)) > 0)
		if (!strncmp(l, prefix, strlen(prefix))) {
			if (l[n - 1] == '\n')
				l[n - 1] = '\0';
			snprintf(buf, len, "%s", l);
		}
	free(l);
	fclose(f);
}

/* Rerun the bad recording with NCCL @v->version (`ncclrr replay --rerun
 * --nccl`: the recorded answers and environment, another NCCL).  @return
 * 1 every rank ended as recorded, 0 not, -1 the rerun could not say. */
static int rerun_job(void *arg)
{
	return nrr_rerun(arg);
}

static int nccl_try(struct bisect *b, struct vtry *v)
{
	char dir[PATH_MAX + 64], log[PATH_MAX + 64];
	snprintf(dir, sizeof(dir), "%s/nccl-%s", b->workdir, v->version);
	snprintf(log, sizeof(log), "%s/nccl-%s.log", b->workdir, v->version);
	/* `ncclrr replay --rerun BAD --nccl V -o DIR [--timeout S] -- PROGRAM` */
	struct nrr_rerun_opts ro = {
		.dir = b->o->bad,
		.nccl = v->version,
		.outdir = dir,
		.timeout_s = b->o->timeout_given ? b->o->timeout_s : 0,
		.argv = b->o->argv,
	};
	double t0 = now_s();
	int st = 0;
	bool killed = false;
	/* the rerun's own --timeout ends the job (by default twice the
	 * recording's story plus 15 s); the limit guards a rerun that hangs */
	int rc = run_logged(rerun_job, &ro, log, (b->o->timeout_given ? b->o->timeout_s : 600) + 60, &st, &killed);
	if (rc < 0) {
		if (!interrupted)
			fprintf(stderr, "ncclrr bisect: cannot rerun with NCCL %s: %s\n", v->version, strerror(errno));
		return -1;
	}
	char sum[512];
	log_line(log, "rerun: ", sum, sizeof(sum));
	char *cut = strstr(sum, "; the rerun took");
	if (cut)
		*cut = '\0';
	int code = WIFEXITED(st) && !killed ? WEXITSTATUS(st) : -1;
	v->outcome = code == 0 ? 1 : code == 1 ? 0 : -1;
	int same = 0;
	v->partly = sscanf(sum, "rerun: %d of", &same) == 1 && same > 0;
	printf("NCCL %-8s %s, %.1f s%s%s\n", v->version,
	       v->outcome > 0 ? "the recorded failure again" : v->outcome < 0 ? "could not tell"
			      : v->partly ? "the recorded failure CHANGED" : "the recorded failure is GONE",
	       now_s() - t0, sum[0] ? ": " : "", sum[0] ? sum + 7 : "");
	if (v->outcome < 0) {
		printf("  the rerun %s; its output is in %s:\n", killed ? "was killed at the limit" : "failed", log);
		char tail[512];
		log_line(log, "ncclrr replay: ", tail, sizeof(tail));
		if (tail[0])
			printf("  %s\n", tail);
	}
	fflush(stdout);
	return v->outcome;
}

/* The versions --nccl names: "all", "V1..V2" (the fake cluster's versions
 * in that range) or "V1,V2,...", each one the fake cluster has; sorted by
 * release.  @return the count, or -1 with a message. */
static int nccl_versions(const char *spec, struct vtry **out)
{
	struct nrr_nccl_build *have = NULL;
	int nh = nrr_launch_nccl_list(&have);
	*out = NULL;
	if (nh < 0)
		return -1;
	struct vtry *v = calloc((size_t)nh + 1, sizeof(*v));
	int n = 0, ret = -1;
	if (!v)
		goto out;
	const char *dots = strstr(spec, "..");
	char lo[32] = "", hi[32] = "";
	if (dots && (size_t)(dots - spec) < sizeof(lo))
		snprintf(lo, sizeof(lo), "%.*s", (int)(dots - spec), spec), snprintf(hi, sizeof(hi), "%s", dots + 2);
	for (int i = 0; i < nh; i++) {
		const char *ver = have[i].version;
		bool want;
		if (!strcmp(spec, "all"))
			want = true;
		else if (dots)
			want = (!*lo || nrr_nccl_vercmp(ver, lo) >= 0) && (!*hi || nrr_nccl_vercmp(ver, hi) <= 0);
		else {
			want = false;
			for (const char *p = spec; *p && !want;) {
				size_t l = strcspn(p, ",");
				want = l == strlen(ver) && !strncmp(p, ver, l);
				p += l + (p[l] == ',');
			}
		}
		if (want)
			snprintf(v[n++].version, sizeof(v[0].version), "%s", ver);
	}
	/* a version named that the fake cluster lacks */
	if (!dots && strcmp(spec, "all")) {
		for (const char *p = spec; *p;) {
			size_t l = strcspn(p, ",");
			bool found = false;
			for (int i = 0; i < n && !found; i++)
				found = l == strlen(v[i].version) && !strncmp(p, v[i].version, l);
			if (!found) {
				fprintf(stderr, "ncclrr bisect: --nccl: the fake cluster has no NCCL %.*s ('ncclrr nccl list' "
					"shows what it has; scripts/nccl.sh relink YOUR/libnccl_static.a adds one)\n",
					(int)l, p);
				goto out;
			}
			p += l + (p[l] == ',');
		}
	}
	if (n < 2) {
		fprintf(stderr, "ncclrr bisect: --nccl %s: %d NCCL version%s of the fake cluster match%s; a version "
			"bisect needs two ('ncclrr nccl list' shows them; scripts/nccl.sh setup fetches Debian's "
			"2.22.3 and sid's)\n", spec, n, n == 1 ? "" : "s", n == 1 ? "es" : "");
		goto out;
	}
	for (int i = 0; i < n; i++)
		v[i].outcome = -1;
	*out = v;
	v = NULL;
	ret = n;
out:
	free(v);
	free(have);
	return ret;
}

/* Find where the outcome of rerunning the bad recording changes along the
 * versions (oldest and newest first, then halving).  @return 1 a boundary
 * was found (@lo, @hi: the versions either side, in *@lo_out/@hi_out), 0
 * none, -1 a rerun could not tell or we were interrupted. */
static int nccl_search(struct bisect *b, struct vtry *v, int n, int *lo_out, int *hi_out)
{
	printf("rerunning %s with NCCL", b->o->bad);
	for (int i = 0; i < n; i++)
		printf("%s %s", i ? "," : "", v[i].version);
	printf(" (oldest release first; the recorded answers and environment, `ncclrr replay --rerun --nccl`):\n");
	fflush(stdout);
	int lo = 0, hi = n - 1;
	if (nccl_try(b, &v[lo]) < 0 || nccl_try(b, &v[hi]) < 0)
		return -1;
	if (v[lo].outcome == v[hi].outcome) {
		printf("no boundary: the recorded failure %s with NCCL %s and with %s\n",
		       v[lo].outcome ? "happens again" : "is not reproduced", v[lo].version, v[hi].version);
		return 0;
	}
	while (hi - lo > 1) {
		int mid = lo + (hi - lo) / 2;
		if (nccl_try(b, &v[mid]) < 0)
			return -1;
		if (v[mid].outcome == v[lo].outcome)
			lo = mid;
		else
			hi = mid;
	}
	*lo_out = lo;
	*hi_out = hi;
	printf("boundary: NCCL %s (%s) -> NCCL %s (%s)\n", v[lo].version, outcome_word(&v[lo]), v[hi].version,
	       outcome_word(&v[hi]));
	return 1;
}

static int ddmin_test(const size_t *subset, size_t k, void *ctx)
{
	struct bisect *b = ctx;
	char *mask = malloc(b->nd + 1);
	if (!mask)
		return -1;
	memset(mask, '0', b->nd);
	mask[b->nd] = '\0';
	for (size_t i = 0; i < k; i++)
		mask[subset[i]] = '1';
	int r = attempt(b, mask);
	free(mask);
	return interrupted ? -1 : r;
}

/* Open a run and read its runinfo, the cluster file it keeps
 * (nrr_run_cluster: never the path its trace names; NULL with the reason
 * in @why) and that recorded path (@recorded, to show; may be NULL). */
static int read_run(const char *path, struct nrr_runinfo *ri, char **topo, char **recorded, char *why,
		    size_t whylen)
{
	struct nrr_inputs in;
	char *p = (char *)path, err[512];
	*topo = *recorded = NULL;
	if (nrr_inputs_open(&in, "bisect", &p, 1, NULL))
		return -1;
	int rc = nrr_runinfo_read(ri, in.r, in.n, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "ncclrr bisect: %s: %s\n", path, err);
	const char *rec = NULL;
	for (size_t i = 0; i < in.n && !rec; i++)
		rec = in.rank[i] ? nrr_reader_meta(in.r[i], "env.NCCLRR_TOPO") : NULL;
	char kept[PATH_MAX];
	if (rc == 0 && nrr_run_cluster(path, rec, kept, sizeof(kept), why, whylen) == 0 && !(*topo = strdup(kept)))
		rc = -1;
	if (rc == 0 && rec && !(*recorded = strdup(rec)))
		rc = -1;
	nrr_inputs_close(&in);
	return rc;
}

/* Copy the cluster file @src to WORKDIR/@sub/NAME, NAME the basename the
 * recording gives it (@shown): an attempt recorded on it has the run's
 * topology, name and content.  @return the copy's path (malloc'd), or
 * NULL with a message. */
static char *cluster_copy(const struct bisect *b, const char *src, const char *sub, const char *shown)
{
	char dir[PATH_MAX + 32], err[PATH_MAX * 3 + 64], *dst = NULL;
	snprintf(dir, sizeof(dir), "%s/%s", b->workdir, sub);
	if ((mkdir(dir, 0755) != 0 && errno != EEXIST) || asprintf(&dst, "%s/%s", dir, base_name(shown)) < 0) {
		fprintf(stderr, "ncclrr bisect: cannot make %s for the cluster file: %s\n", dir, strerror(errno));
		return NULL;
	}
	if (nrr_copy_file(src, dst, err, sizeof(err)) < 0) {
		fprintf(stderr, "ncclrr bisect: %s\n", err);
		free(dst);
		return NULL;
	}
	return dst;
}

static bool readable(const char *p)
{
	return p && access(p, R_OK) == 0;
}

/* `ncclrr diff [--api API] A C` to our stdout (nrr_diff_run, its
 * defaults); @return its exit status: 0 same, 1 different, 2 unreadable
 * (said through the run model's sink, as `ncclrr diff` says it). */
static int run_diff(const char *a, const char *c, const char *api)
{
	struct nrr_diff_opts o = { .context = 3, .window = 128, .api = api };
	struct nrr_inputs ia, ic;
	char *pa = (char *)a, *pc = (char *)c;
	fflush(stdout);
	if (nrr_inputs_open(&ia, "diff", &pa, 1, NULL))
		return 2;
	if (nrr_inputs_open(&ic, "diff", &pc, 1, NULL)) {
		nrr_inputs_close(&ia);
		return 2;
	}
	int r = nrr_diff_run(&o, &ia, &ic, stdout);
	nrr_inputs_close(&ia);
	nrr_inputs_close(&ic);
	fflush(stdout);
	return r < 0 ? 2 : r;
}

/* Where the attempts go: --workdir (new or empty), else a temporary
 * directory (*@made). @return 0 or -1 with a message. */
static int make_workdir(struct bisect *b, bool *made)
{
	if (b->o->workdir) {
		if (mkdir(b->o->workdir, 0755) < 0 && errno != EEXIST) {
			fprintf(stderr, "ncclrr bisect: cannot create --workdir %s: %s\n", b->o->workdir, strerror(errno));
			return -1;
		}
		if (!realpath(b->o->workdir, b->workdir)) {
			fprintf(stderr, "ncclrr bisect: --workdir %s: %s\n", b->o->workdir, strerror(errno));
			return -1;
		}
		char probe[PATH_MAX + 16];
		snprintf(probe, sizeof(probe), "%s/attempt-01", b->workdir);
		if (access(probe, F_OK) == 0) {
			fprintf(stderr, "ncclrr bisect: --workdir %s already holds attempts of an earlier bisect; "
					"give an empty or new directory\n", b->o->workdir);
			return -1;
		}
	} else {
		const char *tmp = getenv("TMPDIR");
		snprintf(b->workdir, sizeof(b->workdir), "%s/ncclrr-bisect.XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(b->workdir)) {
			fprintf(stderr, "ncclrr bisect: cannot create a directory %s: %s\n", b->workdir, strerror(errno));
			return -1;
		}
		*made = true;
	}

	return 0;
}

/* The sentence that ends a version search: for which versions the
 * recorded failure happens */
static void nccl_verdict(FILE *f, const struct vtry *lo, const struct vtry *hi)
{
	if (lo->outcome)
		fprintf(f, "NCCL <= %s (%s in %s)", lo->version, outcome_word(hi), hi->version);
	else
		fprintf(f, "NCCL >= %s (a regression: %s in %s)", hi->version, outcome_word(lo), lo->version);
}

/* SIGINT and SIGTERM end the running attempt and the search (on_signal);
 * @old keeps what they did before */
static void catch_signals(struct sigaction old[2])
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old[0]);
	sigaction(SIGTERM, &sa, &old[1]);
}

/* Put back @old; @return @ret, or NRR_BISECT_INTERRUPTED (said) when a signal came */
static int release_signals(const struct sigaction old[2], int ret)
{
	sigaction(SIGINT, &old[0], NULL);
	sigaction(SIGTERM, &old[1], NULL);
	if (!interrupted)
		return ret;
	fprintf(stderr, "ncclrr bisect: interrupted\n");
	return NRR_BISECT_INTERRUPTED;
}

static void keep_or_remove(const struct bisect *b, bool made)
{
	if (made && !b->o->keep)
		nftw(b->workdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	else
		printf("attempts kept in %s (attempt-NN and nccl-VERSION: the traces, .log: the output, cluster-good/ "
		       "and cluster-bad/: the cluster files they ran on)\n", b->workdir);
}

/* `bisect --nccl LIST --bad B`: rerun B with each version until the
 * outcome's boundary is found */
static int bisect_nccl_only(struct bisect *b, struct vtry *v, int n)
{
	bool made = false;
	int ret = NRR_BISECT_ERROR, lo = -1, hi = -1;
	if (make_workdir(b, &made) < 0)
		return NRR_BISECT_ERROR;
	struct sigaction old[2];
	catch_signals(old);
	int r = nccl_search(b, v, n, &lo, &hi);
	if (r == 1) {
		printf("the recorded failure needs ");
		nccl_verdict(stdout, &v[lo], &v[hi]);
		printf("\n");
		char a[PATH_MAX + 64], c[PATH_MAX + 64];
		snprintf(a, sizeof(a), "%s/nccl-%s", b->workdir, v[lo].version);
		snprintf(c, sizeof(c), "%s/nccl-%s", b->workdir, v[hi].version);
		printf("\nncclrr diff --api 'socket,connect,accept*,dup*,close,getsockopt' of the reruns with NCCL %s and %s "
		       "(how the two retry and connect; 'ncclrr diff' of the two directories shows every call):\n",
		       v[lo].version, v[hi].version);
		run_diff(a, c, "socket,connect,accept*,dup*,close,getsockopt");
		ret = NRR_BISECT_FOUND;
	} else if (r == 0) {
		ret = NRR_BISECT_NOFAIL;
	}
	ret = release_signals(old, ret);
	keep_or_remove(b, made);
	return ret;
}

enum nrr_bisect_status nrr_bisect_main(const struct nrr_bisect_opts *o)
{
	struct bisect b = { .o = o, .last_pass = -1 };
	struct nrr_runinfo ga = { 0 }, ba = { 0 };
	struct nrr_runinfo_change *ch = NULL;
	char *topo_a = NULL, *topo_b = NULL, *rec_a = NULL, *rec_b = NULL, why_a[1024] = "", why_b[1024] = "";
	char *copy_good = NULL, *copy_bad = NULL;   /* (cluster_copy) */
	size_t nch = 0, *min = NULL, nmin = 0;
	bool made_workdir = false;
	int ret = NRR_BISECT_ERROR;
	extern char **environ;

	struct vtry *vers = NULL;
	int nvers = 0, vlo = -1, vhi = -1;
	if (o->nccl && (nvers = nccl_versions(o->nccl, &vers)) < 0)
		return NRR_BISECT_ERROR;
	if (!o->good) {
		/* the version search alone */
		ret = bisect_nccl_only(&b, vers, nvers);
		free(vers);
		return ret;
	}
	if (read_run(o->good, &ga, &topo_a, &rec_a, why_a, sizeof(why_a)) < 0 ||
	    read_run(o->bad, &ba, &topo_b, &rec_b, why_b, sizeof(why_b)) < 0)
		goto out;
	/* the attempts load the NCCL the bad run had, when the fake cluster has it */
	const char *bad_nccl = nrr_runinfo_get(&ba, "nccl_version", -1);
	char ndir[PATH_MAX], nwhy[1024];
	if (bad_nccl && nrr_launch_find_nccl_dir(bad_nccl, ndir, sizeof(ndir), nwhy, sizeof(nwhy)) == 0)
		b.nccl = bad_nccl;
	else if (bad_nccl)
		printf("note: the bad run had NCCL %s, which the fake cluster does not have: the attempts load ncclrr run's "
		       "default ('ncclrr nccl list')\n", bad_nccl);
	nch = nrr_runinfo_diff(&ga, &ba, &ch);
	if (nch == (size_t)-1) {
		fprintf(stderr, "ncclrr bisect: out of memory\n");
		ch = NULL;
		goto out;
	}
	const char *nr = nrr_runinfo_get(&ga, "nranks", -1);
	b.nranks = nr ? atoi(nr) : 0;

	/* the good run's cluster file */
	b.topo_good = o->topo ? o->topo : topo_a;
	if (!b.topo_good) {
		fprintf(stderr, "ncclrr bisect: %s; give the good run's cluster file with --topo FILE\n", why_a);
		goto out;
	}
	if (!readable(b.topo_good)) {
		fprintf(stderr, "ncclrr bisect: cannot read the good run's cluster file %s: %s; give it with --topo FILE\n",
			b.topo_good, strerror(errno));
		goto out;
	}

	/* candidates and the rest */
	b.d = calloc(nch + 1, sizeof(*b.d));
	b.base_env = calloc(ga.n + 1, sizeof(char *));
	size_t nenv = 0;
	for (char **e = environ; e && *e; e++)
		nenv++;
	b.base_unset = calloc(nenv + 1, sizeof(char *));
	if (!b.d || !b.base_env || !b.base_unset) {
		fprintf(stderr, "ncclrr bisect: out of memory\n");
		goto out;
	}
	printf("good: %s\nbad:  %s\n", o->good, o->bad);
	size_t nskip = 0;
	for (size_t i = 0; i < nch; i++) {
		const struct nrr_runinfo_change *c = &ch[i];
		const char *why = NULL;
		bool env = strncmp(c->key, "env.", 4) == 0;
		if (c->rank != -1)
			why = "differs between ranks";
		else if (env && (is_token(c->a) || is_token(c->b)))
			why = "not a value that can be set";
		else if (env && set_by_run(c->key + 4))
			why = "set by ncclrr run";
		else if (strcmp(c->key, "topology") == 0) {
			if (!topo_b)
				why = "the bad run keeps no copy of its cluster file (ncclrr run keeps one when it runs recorded)";
		} else if (!env) {
			why = "not something a re-run can change";
		}
		if (!why && strcmp(c->key, "topology") == 0) {
			b.d[b.nd++] = (struct delta){ NULL, b.topo_good, topo_b, o->topo ? o->topo : rec_a,
						      rec_b ? rec_b : topo_b };
			continue;
		}
		if (!why) {
			b.d[b.nd++] = (struct delta){ c->key + 4, c->a, c->b, NULL, NULL };
			continue;
		}
		if (nskip++ == 0)
			printf("not searched:\n");
		printf("  %s", c->key);
		if (c->rank >= 0)
			printf(" (rank %d)", c->rank);
		printf(": %s -> %s (%s)\n", c->a ? c->a : "(unset)", c->b ? c->b : "(unset)", why);
	}
	/* the good run's environment, as far as it can be set */
	for (size_t i = 0; i < ga.n; i++) {
		const struct nrr_runinfo_item *it = &ga.items[i];
		if (it->rank != -1 || strncmp(it->key, "env.", 4) != 0 || is_token(it->value) ||
		    set_by_run(it->key + 4))
			continue;
		bool cand = false;
		for (size_t j = 0; j < b.nd; j++)
			cand |= b.d[j].name && strcmp(b.d[j].name, it->key + 4) == 0;
		if (!cand)
			b.base_env[b.nbase_env++] = it->key;  /* "env.K": made K=V below */
	}
	for (size_t i = 0; i < b.nbase_env; i++) {
		const char *key = b.base_env[i];
		const char *v = nrr_runinfo_get(&ga, key, -1);
		size_t len = strlen(key) + strlen(v) + 2;
		char *kv = malloc(len);
		if (!kv) {
			fprintf(stderr, "ncclrr bisect: out of memory\n");
			b.nbase_env = i;
			goto out;
		}
		snprintf(kv, len, "%s=%s", key + 4, v);
		b.base_env[i] = kv;
	}
	/* NCCL_* variables of this shell that the good run did not have */
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq || strncmp(*e, "NCCL_", 5) != 0)
			continue;
		char key[256];
		size_t kl = (size_t)(eq - *e);
		if (kl + 4 >= sizeof(key))
			continue;
		snprintf(key, sizeof(key), "env.%.*s", (int)kl, *e);
		bool cand = false;
		for (size_t j = 0; j < b.nd; j++)
			cand |= b.d[j].name && strcmp(b.d[j].name, key + 4) == 0;
		bool had = false;
		for (size_t j = 0; j < ga.n && !had; j++)
			had = strcmp(ga.items[j].key, key) == 0;
		if (!cand && !had && !set_by_run(key + 4)) {
			char *k = strdup(key + 4);
			if (k)
				b.base_unset[b.nbase_unset++] = k;
		}
	}
	printf("searching %zu difference%s:\n", b.nd, b.nd == 1 ? "" : "s");
	for (size_t i = 0; i < b.nd; i++) {
		const struct delta *d = &b.d[i];
		if (d->name)
			printf("  %s: %s -> %s\n", d->name, d->good ? d->good : "(unset)", d->bad ? d->bad : "(unset)");
		else
			printf("  topology: %s -> %s\n", d->shown_good, d->shown_bad);
	}

	if (o->dry_run) {
		ret = b.nd ? NRR_BISECT_FOUND : NRR_BISECT_NOFAIL;
		goto out;
	}

	if (make_workdir(&b, &made_workdir) < 0)
		goto out;

	struct sigaction old[2];
	catch_signals(old);

	/* attempts run on copies of the cluster files the runs keep, named as
	 * their recordings name them (the name is part of the topology) */
	if (!o->topo && !(copy_good = cluster_copy(&b, b.topo_good, "cluster-good", rec_a ? rec_a : b.topo_good)))
		goto restore;
	for (size_t i = 0; i < b.nd; i++)
		if (!b.d[i].name) {
			if (!(copy_bad = cluster_copy(&b, b.d[i].bad, "cluster-bad", b.d[i].shown_bad)))
				goto restore;
			b.d[i].bad = copy_bad;
		}
	if (copy_good) {
		b.topo_good = copy_good;
		for (size_t i = 0; i < b.nd; i++)
			if (!b.d[i].name)
				b.d[i].good = copy_good;
	}

	char *mask = malloc(b.nd + 1);
	min = malloc((b.nd + 1) * sizeof(size_t));
	if (!mask || !min) {
		free(mask);
		fprintf(stderr, "ncclrr bisect: out of memory\n");
		goto restore;
	}
	memset(mask, '0', b.nd);
	mask[b.nd] = '\0';
	int rg = attempt(&b, mask);
	if (rg < 0 || interrupted) {
		free(mask);
		goto restore;
	}
	if (rg == 1) {
		printf("the good configuration fails when re-run: nothing to search\n");
		print_log_tail(&b, 1, 3);
		free(mask);
		ret = NRR_BISECT_ERROR;
		goto restore;
	}
	memset(mask, '1', b.nd);
	int rb = attempt(&b, mask);
	free(mask);
	if (rb < 0 || interrupted)
		goto restore;
	if (rb == 0) {
		printf("the bad configuration does not fail when re-run: its failure is not caused by %s\n",
		       b.nd ? "these differences" : "the environment or the topology (no searchable differences)");
		ret = NRR_BISECT_NOFAIL;
		goto restore;
	}
	if (nrr_ddmin(b.nd, ddmin_test, &b, min, &nmin) < 0)
		goto restore;
	printf("minimal failing set (%zu of %zu difference%s):\n", nmin, b.nd, b.nd == 1 ? "" : "s");
	char *mmask = calloc(b.nd + 1, 1);
	if (!mmask)
		goto restore;
	memset(mmask, '0', b.nd);
	for (size_t i = 0; i < nmin; i++) {
		const struct delta *d = &b.d[min[i]];
		mmask[min[i]] = '1';
		if (d->name)
			printf("  %s: %s -> %s\n", d->name, d->good ? d->good : "(unset)", d->bad ? d->bad : "(unset)");
		else
			printf("  topology: %s -> %s\n", d->shown_good, d->shown_bad);
	}
	const struct attempt *first_bad = NULL;
	for (size_t i = 0; i < b.natt && !first_bad; i++)
		if (strcmp(b.att[i].mask, mmask) == 0)
			first_bad = &b.att[i];
	free(mmask);
	ret = NRR_BISECT_FOUND;
	/* and across NCCL versions: the failure needs this set and which NCCL */
	if (vers) {
		printf("\n");
		int vr = nccl_search(&b, vers, nvers, &vlo, &vhi);
		if (vr < 0)
			goto restore;
		printf("the failure needs: ");
		for (size_t i = 0; i < nmin; i++) {
			const struct delta *d = &b.d[min[i]];
			if (d->name && d->bad)
				printf("%s=%s, ", d->name, d->bad);
			else if (d->name)
				printf("%s unset, ", d->name);
			else
				printf("topology %s, ", d->shown_bad);
		}
		if (vr == 1)
			nccl_verdict(stdout, &vers[vlo], &vers[vhi]);
		else
			printf("any NCCL tried (%s to %s)", vers[0].version, vers[nvers - 1].version);
		printf("\n");
	}
	if (first_bad)
		print_log_tail(&b, first_bad->no, 3);
	if (first_bad && b.last_pass >= 0) {
		const struct attempt *lg = &b.att[b.last_pass];
		printf("\nncclrr diff of attempt %d (the last that passed) against attempt %d (the first that failed "
		       "with the minimal set):\n", lg->no, first_bad->no);
		int dr = run_diff(lg->dir, first_bad->dir, NULL);
		if (dr != 0 && dr != 1)
			printf("ncclrr bisect: 'ncclrr diff %s %s' exited %d: no diff to show\n", lg->dir,
			       first_bad->dir, dr);
	}
restore:
	ret = release_signals(old, ret);
	keep_or_remove(&b, made_workdir);
out:
	for (size_t i = 0; i < b.natt; i++) {
		free(b.att[i].mask);
		free(b.att[i].dir);
	}
	free(b.att);
	for (size_t i = 0; b.base_env && i < b.nbase_env; i++)
		free(b.base_env[i]);
	for (size_t i = 0; b.base_unset && i < b.nbase_unset; i++)
		free(b.base_unset[i]);
	free(b.base_env);
	free(b.base_unset);
	free(b.d);
	free(min);
	free(ch);
	free(topo_a);
	free(topo_b);
	free(rec_a);
	free(rec_b);
	free(copy_good);
	free(copy_bad);
	free(vers);
	nrr_runinfo_free(&ga);
	nrr_runinfo_free(&ba);
	return ret;
}
