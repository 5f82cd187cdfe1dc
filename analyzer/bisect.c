/* SPDX-License-Identifier: MIT */
/* bisect.c - `ncclrr bisect`: delta debugging over the environment and
 * topology differences of a good and a bad run (see bisect.h). */
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
#include "cmds.h"
#include "inputs.h"
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
	char self[PATH_MAX];
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

/* Variables `ncclrr run` sets for each rank itself: never passed on. */
static bool set_by_run(const char *name)
{
	static const char *const v[] = {
		"NCCLRR_TOPO", "NCCLRR_HOST", "NCCLRR_RANK", "NCCLRR_NRANKS", "NCCLRR_LOCAL_RANK",
		"NCCLRR_LOCAL_SIZE", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NCCL_HOSTID",
		"NCCL_COMM_ID", "NCCL_TOPO_FILE", "LD_LIBRARY_PATH", NULL,
	};
	for (size_t i = 0; v[i]; i++)
		if (strcmp(name, v[i]) == 0)
			return true;
	return false;
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
	char dir[PATH_MAX + 32], log[PATH_MAX + 32], np[16], to[32];
	snprintf(dir, sizeof(dir), "%s/attempt-%02d", b->workdir, no);
	snprintf(log, sizeof(log), "%s/attempt-%02d.log", b->workdir, no);
	snprintf(np, sizeof(np), "%d", b->nranks);
	snprintf(to, sizeof(to), "%g", b->o->timeout_s);

	const char *topo = b->topo_good;
	size_t nargs = 16 + 2 * (b->nbase_env + b->nbase_unset + b->nd), k = 0;
	for (char *const *a = b->o->argv; *a; a++)
		nargs++;
	char **argv = calloc(nargs, sizeof(char *));
	char **owned = calloc(b->nd + 1, sizeof(char *));
	if (!argv || !owned) {
		free(argv);
		free(owned);
		return -1;
	}
	for (size_t i = 0; i < b->nd; i++)
		if (!b->d[i].name && mask[i] == '1')
			topo = b->d[i].bad;
	argv[k++] = b->self;
	argv[k++] = "record";
	argv[k++] = "-o";
	argv[k++] = dir;
	argv[k++] = "-q";
	argv[k++] = "--";
	argv[k++] = b->self;
	argv[k++] = "run";
	argv[k++] = "--topo";
	argv[k++] = (char *)topo;
	if (b->nranks > 0) {
		argv[k++] = "-np";
		argv[k++] = np;
	}
	argv[k++] = "--timeout";
	argv[k++] = to;
	for (size_t i = 0; i < b->nbase_env; i++) {
		argv[k++] = "--env";
		argv[k++] = b->base_env[i];
	}
	for (size_t i = 0; i < b->nbase_unset; i++) {
		argv[k++] = "--unset";
		argv[k++] = b->base_unset[i];
	}
	size_t nown = 0;
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
			argv[k++] = "--env";
			argv[k++] = kv;
		} else {
			argv[k++] = "--unset";
			argv[k++] = (char *)d->name;
		}
	}
	argv[k++] = "--";
	for (char *const *a = b->o->argv; *a; a++)
		argv[k++] = *a;
	argv[k] = NULL;

	double t0 = now_s();
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
		execv(b->self, argv);
		_exit(127);
	}
	int st = 0, ret = -1;
	bool killed = false;
	if (pid < 0) {
		fprintf(stderr, "ncclrr bisect: cannot start attempt %d: %s\n", no, strerror(errno));
		goto out;
	}
	setpgid(pid, pid);
	/* `ncclrr run --timeout` ends the ranks; this only guards against a
	 * launcher that does not come back */
	double limit = b->o->timeout_s + 30;
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			fprintf(stderr, "ncclrr bisect: attempt %d: waitpid: %s\n", no, strerror(errno));
			goto out;
		}
		if (interrupted || (!killed && now_s() - t0 > limit)) {
			kill(-pid, interrupted ? SIGTERM : SIGKILL);
			kill(pid, SIGKILL);
			killed = true;
			if (interrupted) {
				waitpid(pid, &st, 0);
				goto out;
			}
		}
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
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
	free(argv);
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

static int run_diff(struct bisect *b, const char *a, const char *c)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		execl(b->self, b->self, "diff", a, c, (char *)NULL);
		_exit(127);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int nrr_bisect_main(const struct nrr_bisect_opts *o)
{
	struct bisect b = { .o = o, .last_pass = -1 };
	struct nrr_runinfo ga = { 0 }, ba = { 0 };
	struct nrr_runinfo_change *ch = NULL;
	char *topo_a = NULL, *topo_b = NULL, *rec_a = NULL, *rec_b = NULL, why_a[1024] = "", why_b[1024] = "";
	char *copy_good = NULL, *copy_bad = NULL;   /* (cluster_copy) */
	size_t nch = 0, *min = NULL, nmin = 0;
	bool made_workdir = false;
	int ret = NRR_EXIT_USAGE;
	extern char **environ;

	ssize_t sl = readlink("/proc/self/exe", b.self, sizeof(b.self) - 1);
	if (sl <= 0) {
		fprintf(stderr, "ncclrr bisect: cannot find this program (/proc/self/exe): %s\n", strerror(errno));
		return NRR_EXIT_USAGE;
	}
	b.self[sl] = '\0';
	if (read_run(o->good, &ga, &topo_a, &rec_a, why_a, sizeof(why_a)) < 0 ||
	    read_run(o->bad, &ba, &topo_b, &rec_b, why_b, sizeof(why_b)) < 0)
		goto out;
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
		ret = b.nd ? NRR_EXIT_DIFF : NRR_EXIT_OK;
		goto out;
	}

	/* where the attempts go */
	if (o->workdir) {
		if (mkdir(o->workdir, 0755) < 0 && errno != EEXIST) {
			fprintf(stderr, "ncclrr bisect: cannot create --workdir %s: %s\n", o->workdir, strerror(errno));
			goto out;
		}
		if (!realpath(o->workdir, b.workdir)) {
			fprintf(stderr, "ncclrr bisect: --workdir %s: %s\n", o->workdir, strerror(errno));
			goto out;
		}
		char probe[PATH_MAX + 16];
		snprintf(probe, sizeof(probe), "%s/attempt-01", b.workdir);
		if (access(probe, F_OK) == 0) {
			fprintf(stderr, "ncclrr bisect: --workdir %s already holds attempts of an earlier bisect; "
					"give an empty or new directory\n", o->workdir);
			goto out;
		}
	} else {
		const char *tmp = getenv("TMPDIR");
		snprintf(b.workdir, sizeof(b.workdir), "%s/ncclrr-bisect.XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(b.workdir)) {
			fprintf(stderr, "ncclrr bisect: cannot create a directory %s: %s\n", b.workdir, strerror(errno));
			goto out;
		}
		made_workdir = true;
	}

	struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);

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
		ret = NRR_EXIT_USAGE;
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
		ret = NRR_EXIT_OK;
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
	ret = NRR_EXIT_DIFF;
	if (first_bad)
		print_log_tail(&b, first_bad->no, 3);
	if (first_bad && b.last_pass >= 0) {
		const struct attempt *lg = &b.att[b.last_pass];
		printf("\nncclrr diff of attempt %d (the last that passed) against attempt %d (the first that failed "
		       "with the minimal set):\n", lg->no, first_bad->no);
		int dr = run_diff(&b, lg->dir, first_bad->dir);
		if (dr != 0 && dr != 1)
			printf("ncclrr bisect: 'ncclrr diff %s %s' exited %d: no diff to show\n", lg->dir,
			       first_bad->dir, dr);
	}
restore:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (interrupted) {
		fprintf(stderr, "ncclrr bisect: interrupted\n");
		ret = 130;
	}
	if (made_workdir && !o->keep) {
		nftw(b.workdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	} else {
		printf("attempts kept in %s (attempt-NN: the traces, attempt-NN.log: the output, cluster-good/ and cluster-bad/: the cluster files they ran on)\n", b.workdir);
	}
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
	nrr_runinfo_free(&ga);
	nrr_runinfo_free(&ba);
	return ret;
}
