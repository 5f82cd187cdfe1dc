/* SPDX-License-Identifier: MIT */
/*
 * rerun.c - `ncclrr replay --rerun`: the real program again, on the fake
 * cluster, with what the environment answered taken from the trace where
 * it decided the outcome, then a per-rank verdict.
 *
 * From the recording (every .nrt of DIR) it takes:
 *  - the CUDA driver and NVML calls that failed, as rules for the fake
 *    runtime's fault switch (NCCLRR_FAULT, replayer/fake/fake_common.c),
 *    counted the way the fake counts them;
 *  - each rank's environment (metadata env.*), given back per rank where
 *    it differs from what the rerun would have anyway;
 *  - per rank, the outcome: how it ended (meta `end`), its first failing
 *    call and NCCL's warnings (LOG records).
 * It records the rerun (`ncclrr record -- ncclrr run ...`, the same
 * executables the user runs), reads that back the same way and compares.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "callfmt.h"
#include "nrt.h"
#include "rerun.h"

/* ------------------------------------------------------------ small lists */
struct strv {
	char **v;
	size_t n, cap;
};

static int strv_add(struct strv *s, char *str)   /* takes @str */
{
	if (!str || !nrr_grow(&s->v, s->n + 1, &s->cap, sizeof(char *))) {
		free(str);
		return -ENOMEM;
	}
	s->v[s->n++] = str;
	s->v[s->n] = NULL;
	return 0;
}

static int strv_addf(struct strv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int strv_addf(struct strv *s, const char *fmt, ...)
{
	va_list ap;
	char *str = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&str, fmt, ap);
	va_end(ap);
	return strv_add(s, n < 0 ? NULL : str);
}

static bool strv_has(const struct strv *s, const char *str)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i], str))
			return true;
	return false;
}

static void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* ------------------------------------------------------- one process's trace */
struct proc {
	char *path;
	int rank;              /* -1: not a rank (the launcher, a helper) */
	long pid, ppid;
	char end[96];          /* meta `end`, "" when the trace has none */
	uint64_t end_wall;     /* wall-clock time of the end (0: unknown) */
	char fail[320];        /* "fn = RESULT" of the first failing call, "" none */
	uint64_t fail_wall;    /* its wall-clock time */
	struct strv warns;     /* normalized NCCL warnings, each once */
	struct strv rules;     /* NCCLRR_FAULT rules */
	struct strv env;       /* "K=V" of the recorded env.* */
	char *variants;        /* a note when a rule's function was called under
				* several names (see rule_for) */
};

static void proc_free(struct proc *p)
{
	free(p->path);
	free(p->variants);
	strv_free(&p->warns);
	strv_free(&p->rules);
	strv_free(&p->env);
}

/* The rank of a trace: the tracer's `rank` (NCCL's, or the launcher's
 * when NCCL never said), else a launcher's variable. */
static int trace_rank(nrr_reader *r)
{
	static const char *const keys[] = { "rank", "env.NCCLRR_RANK", "env.RANK", "env.OMPI_COMM_WORLD_RANK",
					    "env.SLURM_PROCID", "env.PMI_RANK" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = nrr_reader_meta(r, keys[i]);
		char *e;
		if (!v || !*v)
			continue;
		long n = strtol(v, &e, 10);
		if (!*e && n >= 0 && n < INT_MAX)
			return (int)n;
	}
	return -1;
}

/* An answer the fake runtime gives by itself: the entry-point lookup of a
 * symbol it does not have (CUDA_ERROR_NOT_FOUND).  The CUDA runtime probes
 * for entry points this way and goes on; the fake answers the same for
 * every symbol it lacks, so injecting it would change nothing but could,
 * counted by nth, land on a lookup the fake does serve. */
static bool fake_answers_itself(const nrr_call *c)
{
	return !strncmp(c->fn->name, "cuGetProcAddress", 16) && c->result == 500;
}

/* What the fake runtime's fault switch can make fail. */
static bool faultable(const nrr_fn_schema *fn)
{
	return !strcmp(fn->domain, "cuda_driver") || !strcmp(fn->domain, "nvml");
}

/* Failures that say little about where a run went: socket and verbs calls
 * probe and retry (a connect refused until the peer listens, the netlink
 * socket of a verbs provider), and their number depends on timing.  The
 * rank's end and NCCL's warnings carry what the network decided. */
static bool counts_as_first_failure(const nrr_call *c)
{
	return strcmp(c->fn->domain, "socket") && strcmp(c->fn->domain, "verbs") && !fake_answers_itself(c);
}

/* "FILE.cc:123 -> 3": NCCL's error trail (printed at INFO or WARN). */
static bool is_trail(const char *s, size_t n)
{
	for (size_t i = 0; i + 4 <= n; i++) {
		if (memcmp(s + i, " -> ", 4) || i + 4 >= n || s[i + 4] < '0' || s[i + 4] > '9')
			continue;
		size_t j = i;
		while (j > 0 && s[j - 1] >= '0' && s[j - 1] <= '9')
			j--;
		if (j == i || j == 0 || s[j - 1] != ':')
			continue;
		for (size_t k = j - 1; k > 0 && s[k - 1] != ' '; k--)
			if (s[k - 1] == '.')
				return true;
	}
	return false;
}

/* A log line as compared: from "NCCL WARN "/"NCCL INFO " on (the host,
 * pid and thread before it differ between runs), numbers as '#' except a
 * source line ("x.cc:123") and an error trail's code ("-> 3"). */
static char *normalize_log(const char *s, size_t n)
{
	static const char *const marks[] = { "NCCL WARN ", "NCCL INFO " };
	for (size_t m = 0; m < 2; m++) {
		const char *at = memmem(s, n, marks[m], strlen(marks[m]));
		if (at) {
			n -= (size_t)(at + strlen(marks[m]) - s);
			s = at + strlen(marks[m]);
			break;
		}
	}
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' '))
		n--;
	char *out = malloc(n + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		if (s[i] >= '0' && s[i] <= '9') {
			size_t j = i;
			while (j < n && ((s[j] >= '0' && s[j] <= '9') || (i + 1 < n && s[i] == '0' && s[i + 1] == 'x' &&
									    (j == i + 1 || (s[j] >= 'a' && s[j] <= 'f')))))
				j++;
			bool keep = (i > 0 && s[i - 1] == ':' && i > 1 && s[i - 2] >= 'a' && s[i - 2] <= 'z') ||
				    (i >= 3 && !memcmp(s + i - 3, "-> ", 3));
			if (keep) {
				memcpy(out + o, s + i, j - i);
				o += j - i;
			} else {
				out[o++] = '#';
			}
			i = j;
		} else {
			out[o++] = s[i++];
		}
	}
	out[o] = 0;
	return out;
}

static void result_text(const nrr_call *c, char *buf, size_t len)
{
	const char *name = c->fn->rtable ? nrr_enum_name(c->fn->rtable, c->result) : NULL;
	if (name) {
		snprintf(buf, len, "%s", name);
		return;
	}
	FILE *f = fmemopen(buf, len, "w");
	if (!f) {
		snprintf(buf, len, "%lld", (long long)c->result);
		return;
	}
	nrr_format_result(f, c);
	fclose(f);
}

/* Base name as the fake runtime's counters name a function: without _vN,
 * _ptds, _ptsz (fake_common.c strip_version). */
static void base_name(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s", name);
	size_t n = strlen(out);
	if (n > 5 && (!strcmp(out + n - 5, "_ptds") || !strcmp(out + n - 5, "_ptsz")))
		out[n -= 5] = 0;
	char *v = strrchr(out, '_');
	if (v && v[1] == 'v' && v[2] && strspn(v + 2, "0123456789") == strlen(v + 2))
		*v = 0;
}

/*
 * Read one trace.  The fault rules count calls as the fake runtime does
 * (replayer/fake/fake_common.c fake_enter): per process, per exported
 * entry point (each variant, cuDeviceGetUuid and cuDeviceGetUuid_v2, has
 * a counter of its own), counting every call, the failed ones included,
 * in the order they were entered; a rule names the function without its
 * version suffix and fires at the call whose own counter equals nth.  So
 * the K of a failed call is the number of calls of its exact recorded
 * name the process had entered up to and including it.  Calls are counted
 * in the order the trace's merge delivers their entries (enter time
 * across threads), which is the fake's order unless two threads call the
 * same function within the clock's resolution.
 */
static int read_proc(const char *path, struct proc *p, bool want_rules, FILE *err)
{
	nrr_reader *r = NULL;
	nrr_merge *m = NULL;
	nrr_diag d;
	uint64_t *counts = NULL, *entered = NULL;
	int rc = nrr_reader_open(&r, path, &d);
	if (rc < 0) {
		char line[1200];
		nrr_diag_format(&d, line, sizeof(line));
		fprintf(err, "ncclrr replay: %s\n", line);
		return rc;
	}
	memset(p, 0, sizeof(*p));
	p->path = strdup(path);
	p->rank = trace_rank(r);
	const char *v = nrr_reader_meta(r, "pid");
	p->pid = v ? strtol(v, NULL, 10) : (long)nrr_reader_info(r)->pid;
	v = nrr_reader_meta(r, "ppid");
	p->ppid = v ? strtol(v, NULL, 10) : 0;
	v = nrr_reader_meta(r, "end");
	snprintf(p->end, sizeof(p->end), "%s", v ? v : "");
	if (nrr_reader_info(r)->end_ts)
		p->end_wall = nrr_reader_wall(r, nrr_reader_info(r)->end_ts);
	size_t mlen;
	const char *meta = nrr_reader_meta_text(r, &mlen);
	for (const char *l = meta, *e; l && l < meta + mlen; l = e + 1) {
		e = memchr(l, '\n', (size_t)(meta + mlen - l));
		if (!e)
			e = meta + mlen;
		if (e - l > 4 && !memcmp(l, "env.", 4) && memchr(l, '=', (size_t)(e - l))) {
			/* later lines of a key replace earlier ones */
			const char *eq = memchr(l, '=', (size_t)(e - l));
			size_t kl = (size_t)(eq - l) - 4;
			for (size_t i = 0; i < p->env.n; i++)
				if (!strncmp(p->env.v[i], l + 4, kl) && p->env.v[i][kl] == '=') {
					free(p->env.v[i]);
					p->env.v[i] = p->env.v[--p->env.n];
					p->env.v[p->env.n] = NULL;
					break;
				}
			strv_addf(&p->env, "%.*s", (int)(e - l - 4), l + 4);
		}
	}

	const nrr_schema *s = nrr_reader_schema(r);
	uint32_t nfns = nrr_schema_nfns(s), nstreams = nrr_reader_info(r)->nstreams;
	counts = calloc((size_t)nfns + 1, sizeof(*counts));
	entered = calloc((size_t)nstreams * NRR_MAX_DEPTH + 1, sizeof(*entered));
	if (!counts || !entered) {
		rc = -ENOMEM;
		goto out;
	}
	rc = nrr_merge_open(&m, &r, 1);
	if (rc < 0)
		goto out;
	const nrr_call *c;
	size_t ri;
	while ((rc = nrr_merge_next(m, &c, &ri)) == 0) {
		if (c->kind == NRR_CALL_LOG) {
			if (c->log_level == 2 || is_trail(c->log, c->log_len)) {
				char *w = normalize_log(c->log, c->log_len);
				if (w && !strv_has(&p->warns, w))
					strv_add(&p->warns, w);
				else
					free(w);
			}
			continue;
		}
		if (!c->fn)
			continue;
		size_t slot = (size_t)c->stream * NRR_MAX_DEPTH + (c->depth < NRR_MAX_DEPTH ? c->depth : 0);
		uint64_t k = 0;
		if (c->phase == NRR_PHASE_CALL || c->phase == NRR_PHASE_ENTER) {
			k = ++counts[c->fn->id <= nfns ? c->fn->id : 0];
			if (c->phase == NRR_PHASE_ENTER && c->stream < nstreams)
				entered[slot] = k;
		} else if (c->phase == NRR_PHASE_RESUME) {
			k = c->stream < nstreams ? entered[slot] : 0;
		}
		if (c->phase == NRR_PHASE_ENTER || c->phase == NRR_PHASE_INFLIGHT || !nrr_call_failed(c))
			continue;
		char res[160];
		result_text(c, res, sizeof(res));
		if (!p->fail[0] && counts_as_first_failure(c)) {
			snprintf(p->fail, sizeof(p->fail), "%s = %s", c->fn->name, res);
			p->fail_wall = nrr_reader_wall(r, nrr_call_key(c));
		}
		if (!want_rules || !faultable(c->fn) || fake_answers_itself(c) || !k)
			continue;
		if (p->rank < 0) {
			fprintf(err, "ncclrr replay: note: %s: %s failed in a process without a rank; the fault switch "
				"cannot aim at it, so the rerun does not repeat it\n", path, c->fn->name);
			continue;
		}
		char base[128];
		base_name(c->fn->name, base, sizeof(base));
		/* The fake's rule names the base; another variant with a counter of
		 * its own reaching the same nth would fail too. */
		for (uint32_t id = 1; id <= nfns; id++) {
			const nrr_fn_schema *o = nrr_schema_fn(s, id);
			char ob[128];
			if (!o || o == c->fn || !counts[id])
				continue;
			base_name(o->name, ob, sizeof(ob));
			if (!strcmp(ob, base) && !p->variants &&
			    asprintf(&p->variants, "%s and %s were both called; the rule for %s may also fire on %s",
				     c->fn->name, o->name, c->fn->name, o->name) < 0)
				p->variants = NULL;
		}
		strv_addf(&p->rules, "%s:rank=%d:nth=%llu:%s", base, p->rank, (unsigned long long)k, res);
	}
	if (rc == NRR_EEOF) {
		rc = 0;
	} else {
		char line[1200];
		nrr_diag_format(nrr_merge_diag(m), line, sizeof(line));
		fprintf(err, "ncclrr replay: %s\n", line);
	}
out:
	free(counts);
	free(entered);
	if (m)
		nrr_merge_close(m);
	nrr_reader_close(r);
	if (rc < 0)
		proc_free(p);
	return rc;
}

/* ------------------------------------------------------- a whole recording */
struct rank_sum {
	int rank;
	const struct proc *root;   /* the rank's first process (its end counts) */
	char fail[320];            /* earliest first failure over its processes */
	uint64_t fail_wall;
	struct strv warns;
	bool present;
};

struct run {
	struct proc *procs;
	size_t n, cap;
	struct rank_sum *ranks;    /* indexed by rank */
	int nranks;                /* max rank + 1 */
};

static void run_free(struct run *x)
{
	for (size_t i = 0; i < x->n; i++)
		proc_free(&x->procs[i]);
	free(x->procs);
	for (int i = 0; i < x->nranks; i++)
		strv_free(&x->ranks[i].warns);
	free(x->ranks);
	memset(x, 0, sizeof(*x));
}

static bool killed(const char *end)
{
	return !*end || !strcmp(end, "signal SIGTERM") || !strcmp(end, "signal SIGKILL");
}

/*
 * A job that `ncclrr run` stopped at its --timeout (its own trace, the
 * process without a rank, ends "exit 124"): the ranks still running were
 * sent SIGTERM one after the other, and one whose peer died first may see
 * the connection close and exit on its own in between.  How such a rank
 * ended says when the teardown reached it, not what the environment
 * answered, so every rank that ended by SIGTERM/SIGKILL, without an end,
 * or after the first of those counts as "killed at the timeout".
 */
static void mark_teardown(struct run *x)
{
	bool timed_out = false;
	uint64_t first = 0;
	for (size_t i = 0; i < x->n; i++)
		if (x->procs[i].rank < 0 && !strcmp(x->procs[i].end, "exit 124"))
			timed_out = true;
	if (!timed_out)
		return;
	for (int r = 0; r < x->nranks; r++) {
		const struct proc *p = x->ranks[r].root;
		if (p && *p->end && killed(p->end) && p->end_wall && (!first || p->end_wall < first))
			first = p->end_wall;
	}
	for (int r = 0; r < x->nranks; r++) {
		struct proc *p = (struct proc *)x->ranks[r].root;
		if (p && (killed(p->end) || (first && p->end_wall >= first)))
			snprintf(p->end, sizeof(p->end), "killed at the timeout");
	}
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int load_run(const char *dir, struct run *x, bool want_rules, FILE *err)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, by_name);
	if (n < 0) {
		fprintf(err, "ncclrr replay: cannot read the trace directory %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	int rc = 0;
	for (int i = 0; i < n; i++) {
		size_t l = strlen(ents[i]->d_name);
		if (!rc && l > 4 && !strcmp(ents[i]->d_name + l - 4, ".nrt")) {
			char path[PATH_MAX];
			snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
			if (!nrr_grow(&x->procs, x->n, &x->cap, sizeof(*x->procs))) {
				rc = -ENOMEM;
			} else {
				rc = read_proc(path, &x->procs[x->n], want_rules, err);
				if (rc == 0)
					x->n++;
			}
		}
		free(ents[i]);
	}
	free(ents);
	if (rc < 0)
		return rc;
	if (!x->n) {
		fprintf(err, "ncclrr replay: %s holds no .nrt trace (record one with 'ncclrr record -o %s -- ...')\n",
			dir, dir);
		return -ENOENT;
	}
	for (size_t i = 0; i < x->n; i++)
		if (x->procs[i].rank >= x->nranks)
			x->nranks = x->procs[i].rank + 1;
	x->ranks = calloc((size_t)x->nranks + 1, sizeof(*x->ranks));
	if (!x->ranks)
		return -ENOMEM;
	for (size_t i = 0; i < x->n; i++) {
		const struct proc *p = &x->procs[i];
		if (p->rank < 0)
			continue;
		struct rank_sum *s = &x->ranks[p->rank];
		s->rank = p->rank;
		s->present = true;
		/* the root: a process whose parent is not of the same rank */
		bool child = false;
		for (size_t j = 0; j < x->n; j++)
			if (j != i && x->procs[j].rank == p->rank && x->procs[j].pid == p->ppid)
				child = true;
		if (!child && (!s->root || p->pid < s->root->pid))
			s->root = p;
		if (p->fail[0] && (!s->fail[0] || p->fail_wall < s->fail_wall)) {
			snprintf(s->fail, sizeof(s->fail), "%s", p->fail);
			s->fail_wall = p->fail_wall;
		}
		for (size_t w = 0; w < p->warns.n; w++)
			if (!strv_has(&s->warns, p->warns.v[w]))
				strv_addf(&s->warns, "%s", p->warns.v[w]);
	}
	for (int r = 0; r < x->nranks; r++)
		if (x->ranks[r].present && !x->ranks[r].root)   /* parents form a cycle: pid reuse */
			for (size_t i = 0; i < x->n; i++)
				if (x->procs[i].rank == r && !x->ranks[r].root)
					x->ranks[r].root = &x->procs[i];
	mark_teardown(x);
	return 0;
}

/* ------------------------------------------------------- the environment */
/* Set by `ncclrr run` for every rank (placement, the fake runtime), by
 * `ncclrr record` (the tracer), or describing the real cluster's own
 * launcher, which the virtual cluster replaces: never given back. */
static bool env_is_ours(const char *kv)
{
	static const char *const exact[] = {
		"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NCCL_HOSTID", "NCCL_COMM_ID",
		"NCCL_TOPO_FILE", "LD_LIBRARY_PATH", "LD_PRELOAD", "NCCL_TOPO_DUMP_FILE", "PMI_RANK", "PMI_SIZE",
		"PMIX_RANK", "GROUP_RANK", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
		"NCCL_NET_PLUGIN" /* given to record, which wraps it again */,
	};
	static const char *const prefix[] = { "NCCLRR_", "OMPI_COMM_WORLD_", "SLURM_" };
	size_t kl = strcspn(kv, "=");
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (strlen(exact[i]) == kl && !strncmp(kv, exact[i], kl))
			return true;
	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (!strncmp(kv, prefix[i], strlen(prefix[i])))
			return true;
	/* ncclrr run's default: a rank that had it needs nothing */
	return !strcmp(kv, "NCCL_SOCKET_IFNAME=lo");
}

/* Families the tracer records (tracer/core.c env_keep): a variable of
 * these that this environment has and the recording's rank did not have
 * was unset there. */
static bool env_family_recorded(const char *k)
{
	static const char *const fam[] = { "NCCL_", "CUDA_", "NVIDIA_", "UCX_", "TORCH_NCCL_" };
	for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++)
		if (!strncmp(k, fam[i], strlen(fam[i])))
			return true;
	return false;
}

static const char *env_in(const struct strv *e, const char *k, size_t kl)
{
	for (size_t i = 0; i < e->n; i++)
		if (!strncmp(e->v[i], k, kl) && e->v[i][kl] == '=')
			return e->v[i] + kl + 1;
	return NULL;
}

/* The --env / --unset / --rank-env options that give each rank back its
 * recorded environment. */
static int env_options(const struct run *x, struct strv *args, FILE *err)
{
	extern char **environ;
	struct strv keys = { 0 };
	for (int r = 0; r < x->nranks; r++) {
		const struct proc *p = x->ranks[r].root;
		for (size_t i = 0; p && i < p->env.n; i++) {
			const char *kv = p->env.v[i];
			size_t kl = strcspn(kv, "=");
			if (env_is_ours(kv))
				continue;
			char *k = strndup(kv, kl);
			if (k && !strv_has(&keys, k))
				strv_add(&keys, k);
			else
				free(k);
		}
	}
	for (char **e = environ; e && *e; e++) {
		size_t kl = strcspn(*e, "=");
		char *k = strndup(*e, kl);
		if (k && env_family_recorded(k) && !env_is_ours(*e) && !strv_has(&keys, k))
			strv_add(&keys, k);
		else
			free(k);
	}
	for (size_t i = 0; i < keys.n; i++) {
		const char *k = keys.v[i];
		size_t kl = strlen(k);
		const char *now = getenv(k), *first = NULL;
		bool same = true, any = false, all = true;
		for (int r = 0; r < x->nranks; r++) {
			if (!x->ranks[r].root)
				continue;
			const char *v = env_in(&x->ranks[r].root->env, k, kl);
			if (v && strstr(v, "<redacted>")) {
				fprintf(err, "ncclrr replay: note: rank %d's %s was redacted in the recording; the rerun "
					"has this environment's value\n", r, k);
				v = now;
			}
			if (!v)
				all = false;
			if (v && !any)
				first = v;
			any |= v != NULL;
			if (!v || (first && strcmp(v, first)))
				same = false;
		}
		if (all && same && any) {
			if (!now || strcmp(now, first))
				strv_addf(args, "--env"), strv_addf(args, "%s=%s", k, first);
			continue;
		}
		if (now)
			strv_addf(args, "--unset"), strv_addf(args, "%s", k);
		for (int r = 0; r < x->nranks; r++) {
			const char *v = x->ranks[r].root ? env_in(&x->ranks[r].root->env, k, kl) : NULL;
			if (v && strstr(v, "<redacted>"))
				v = now;
			if (v)
				strv_addf(args, "--rank-env"), strv_addf(args, "%d:%s=%s", r, k, v);
		}
	}
	strv_free(&keys);
	return 0;
}

/* ------------------------------------------------------- running it */
static int find_ncclrr(const struct nrr_rerun_opts *o, char *buf, size_t len, FILE *err)
{
	if (o->ncclrr) {
		snprintf(buf, len, "%s", o->ncclrr);
		return 0;
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		fprintf(err, "ncclrr replay: cannot read /proc/self/exe: %s\n", strerror(errno));
		return -ENOENT;
	}
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	snprintf(buf, len, "%s/ncclrr", self);
	if (access(buf, X_OK)) {
		fprintf(err, "ncclrr replay: no ncclrr executable at %s (the rerun records and runs through it)\n", buf);
		return -ENOENT;
	}
	return 0;
}

static void print_cmd(FILE *f, char *const *argv)
{
	fputs("ncclrr replay: rerun:", f);
	for (size_t i = 0; argv[i]; i++) {
		const char *a = argv[i];
		bool plain = *a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=:,./@%") ==
					 strlen(a);
		if (plain) {
			fprintf(f, " %s", a);
		} else {
			fputs(" '", f);
			for (; *a; a++)
				if (*a == '\'')
					fputs("'\\''", f);
				else
					fputc(*a, f);
			fputc('\'', f);
		}
	}
	fputc('\n', f);
}

/* @return the exit status of the rerun (the job's), or -1. */
static int run_child(char *const *argv, const char *net_plugin, FILE *err)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(err, "ncclrr replay: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		/* the rules come from the trace (--env NCCLRR_FAULT), never from here */
		unsetenv("NCCLRR_FAULT");
		/* the job's output goes with the notes, the verdict alone to out */
		if (dup2(fileno(err), 1) < 0)
			_exit(127);
		if (net_plugin)
			setenv("NCCL_NET_PLUGIN", net_plugin, 1);
		execv(argv[0], argv);
		fprintf(stderr, "ncclrr replay: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ------------------------------------------------------- the verdict */
static void describe(char *buf, size_t len, const struct rank_sum *s)
{
	snprintf(buf, len, "%s, %s", s->fail[0] ? s->fail : "no failing call",
		 s->root && s->root->end[0] ? s->root->end : "no end recorded (killed?)");
}

static int compare(const struct run *rec, const struct run *re, FILE *out)
{
	int bad = 0;
	for (int r = 0; r < rec->nranks; r++) {
		const struct rank_sum *a = &rec->ranks[r];
		if (!a->present)
			continue;
		char da[512], db[512];
		describe(da, sizeof(da), a);
		const struct rank_sum *b = r < re->nranks && re->ranks[r].present ? &re->ranks[r] : NULL;
		if (!b) {
			fprintf(out, "rank %d: NOT reproduced: recorded %s, rerun has no trace of rank %d\n", r, da, r);
			bad++;
			continue;
		}
		describe(db, sizeof(db), b);
		size_t missing = 0;
		for (size_t i = 0; i < a->warns.n; i++)
			missing += !strv_has(&b->warns, a->warns.v[i]);
		if (!strcmp(da, db) && !missing) {
			fprintf(out, "rank %d: reproduced: %s\n", r, da);
			continue;
		}
		bad++;
		fprintf(out, "rank %d: NOT reproduced: recorded %s, rerun %s\n", r, da, db);
		for (size_t i = 0; i < a->warns.n; i++)
			if (!strv_has(&b->warns, a->warns.v[i]))
				fprintf(out, "  recorded warning not seen again: %s\n", a->warns.v[i]);
	}
	for (int r = rec->nranks; r < re->nranks; r++)
		if (re->ranks[r].present)
			fprintf(out, "rank %d: not in the recording (the rerun has more ranks)\n", r);
	return bad;
}

int nrr_rerun(const struct nrr_rerun_opts *o)
{
	FILE *out = o->out ? o->out : stdout, *err = o->err ? o->err : stderr;
	struct run rec = { 0 }, re = { 0 };
	struct strv args = { 0 };
	int ret = NRR_RERUN_ERROR;
	char ncclrr[PATH_MAX], outdir[PATH_MAX], topo[PATH_MAX];
	if (!o->dir || !o->argv || !o->argv[0]) {
		fprintf(err, "ncclrr replay: --rerun needs the recording's directory and the program to run\n");
		return NRR_RERUN_ERROR;
	}
	if (find_ncclrr(o, ncclrr, sizeof(ncclrr), err) < 0)
		return NRR_RERUN_ERROR;
	if (load_run(o->dir, &rec, true, err) < 0)
		goto end;
	if (!rec.nranks) {
		fprintf(err, "ncclrr replay: no trace in %s says which rank it was (metadata rank, env.RANK, ...); "
			"record the job's ranks, not only its launcher\n", o->dir);
		goto end;
	}

	/* the cluster: given, or the one the recording ran on */
	const char *rec_topo = NULL;
	for (int r = 0; r < rec.nranks && !rec_topo; r++)
		if (rec.ranks[r].root)
			rec_topo = env_in(&rec.ranks[r].root->env, "NCCLRR_TOPO", 11);
	if (o->topo) {
		snprintf(topo, sizeof(topo), "%s", o->topo);
	} else if (rec_topo && !access(rec_topo, R_OK)) {
		snprintf(topo, sizeof(topo), "%s", rec_topo);
	} else {
		if (rec_topo)
			fprintf(err, "ncclrr replay: the recorded cluster file (env.NCCLRR_TOPO=%s) cannot be read here; ",
				rec_topo);
		else
			fprintf(err, "ncclrr replay: the recording names no cluster file (env.NCCLRR_TOPO); ");
		fprintf(err, "pass the cluster to rerun on with --topo FILE (e.g. topo/2node_16gpu.xml)\n");
		goto end;
	}

	if (o->outdir) {
		snprintf(outdir, sizeof(outdir), "%s", o->outdir);
	} else {
		const char *t = getenv("TMPDIR");
		snprintf(outdir, sizeof(outdir), "%s/ncclrr-rerun.XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(outdir)) {
			fprintf(err, "ncclrr replay: cannot make a directory for the rerun's trace (%s): %s\n", outdir,
				strerror(errno));
			goto end;
		}
	}

	/* the rules, one process after another */
	struct strv rules = { 0 };
	for (size_t i = 0; i < rec.n; i++) {
		const struct proc *p = &rec.procs[i];
		for (size_t j = 0; j < p->rules.n; j++)
			strv_addf(&rules, "%s", p->rules.v[j]);
		if (p->rules.n && rec.ranks[p->rank].root != p)
			fprintf(err, "ncclrr replay: note: %s (rank %d) is not the rank's first process; the fault switch "
				"counts per process and aims by rank, so its rules may fire in another process of rank %d\n",
				p->path, p->rank, p->rank);
		if (p->variants && p->rules.n)
			fprintf(err, "ncclrr replay: note: %s: %s\n", p->path, p->variants);
	}
	size_t flen = 0;
	for (size_t i = 0; i < rules.n; i++)
		flen += strlen(rules.v[i]) + 1;
	char *fault = calloc(1, flen + 1);
	for (size_t i = 0; fault && i < rules.n; i++) {
		if (i)
			strcat(fault, ";");
		strcat(fault, rules.v[i]);
	}
	strv_free(&rules);
	if (!fault)
		goto end;

	char tmo[32];
	snprintf(tmo, sizeof(tmo), "%g", o->timeout_s > 0 ? o->timeout_s : 60.0);
	strv_addf(&args, "%s", ncclrr);
	strv_addf(&args, "record");
	strv_addf(&args, "-q");
	strv_addf(&args, "-o");
	strv_addf(&args, "%s", outdir);
	strv_addf(&args, "--");
	strv_addf(&args, "%s", ncclrr);
	strv_addf(&args, "run");
	strv_addf(&args, "--topo");
	strv_addf(&args, "%s", topo);
	strv_addf(&args, "--timeout");
	strv_addf(&args, "%s", tmo);
	strv_addf(&args, "-np");
	strv_addf(&args, "%d", rec.nranks);
	if (*fault)
		strv_addf(&args, "--env"), strv_addf(&args, "NCCLRR_FAULT=%s", fault);
	else
		strv_addf(&args, "--unset"), strv_addf(&args, "NCCLRR_FAULT");
	free(fault);
	env_options(&rec, &args, err);
	strv_addf(&args, "--");
	for (size_t i = 0; o->argv[i]; i++)
		strv_addf(&args, "%s", o->argv[i]);
	if (!args.v)
		goto end;
	const char *net_plugin = NULL;
	for (int r = 0; r < rec.nranks && !net_plugin; r++)
		if (rec.ranks[r].root)
			net_plugin = env_in(&rec.ranks[r].root->env, "NCCLRR_NET_PLUGIN", 17);

	print_cmd(err, args.v);
	fprintf(err, "ncclrr replay: the rerun is recorded in %s\n", outdir);
	int st = run_child(args.v, net_plugin, err);
	if (st < 0 || st == 127) {
		fprintf(err, "ncclrr replay: the rerun could not be started\n");
		goto end;
	}
	if (load_run(outdir, &re, false, err) < 0) {
		fprintf(err, "ncclrr replay: the rerun (exit %d) left no readable trace in %s\n", st, outdir);
		goto end;
	}
	ret = compare(&rec, &re, out) ? NRR_RERUN_DIFFERENT : NRR_RERUN_REPRODUCED;
	fflush(out);
end:
	strv_free(&args);
	run_free(&rec);
	run_free(&re);
	return ret;
}
