/* SPDX-License-Identifier: MIT */
/* run.c - the run model: open a run's traces, build each process's
 * record (run.h). */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "callfmt.h"
#include "nrr_meta.h"
#include "run.h"
#if NCCLRR_CTF
#include "nrt_ctf.h"
#endif

static void default_sink(enum nrr_run_msg kind, const char *cmd, const char *text)
{
	(void)kind;
	fprintf(stderr, "ncclrr %s: %s\n", cmd ? cmd : "", text);
}

static nrr_run_sink sink = default_sink;

void nrr_run_set_sink(nrr_run_sink s)
{
	sink = s ? s : default_sink;
}

void nrr_run_say(enum nrr_run_msg kind, const char *cmd, const char *fmt, ...)
{
	int e = errno;
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	sink(kind, cmd, buf);
	errno = e;
}

void nrr_print_diag(const char *cmd, const nrr_diag *d)
{
	char buf[1200];
	nrr_diag_format(d, buf, sizeof(buf));
	nrr_run_say(NRR_RUN_ERROR, cmd, "%s", buf);
}

/* --strict: the first damaged input stops the command (the default for
 * any program; main() clears it for the commands that skip); inputs
 * skipped so far otherwise */
static bool strict = true;
static size_t nskipped;

void nrr_inputs_set_strict(bool on)
{
	strict = on;
}

size_t nrr_inputs_skipped(void)
{
	return nskipped;
}

/* A damaged chunk met while reading (nrr_reader_on_damage): said once per
 * file and offset, and the rest of that thread's calls in the file
 * skipped. */
static int on_damage(void *arg, const nrr_reader *r, const nrr_diag *d)
{
	struct nrr_inputs *in = arg;
	for (size_t i = 0; i < in->ndamage; i++)
		if (in->damage[i].r == r && in->damage[i].offset == d->offset)
			return 0;
	void *x = realloc(in->damage, (in->ndamage + 1) * sizeof(*in->damage));
	if (!x)
		return -1;   /* cannot keep count: stop, as --strict does */
	in->damage = x;
	in->damage[in->ndamage].r = r;
	in->damage[in->ndamage++].offset = d->offset;
	nskipped++;
	char buf[1200];
	nrr_diag_format(d, buf, sizeof(buf));
	nrr_run_say(NRR_RUN_SKIP, in->cmd, "%s; skipped the rest of that thread's calls in this file and went on "
	    "(exit status 3; --strict stops at the first damage)", buf);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_path(char ***list, size_t *n, size_t *cap, const char *p)
{
	if (!nrr_grow(list, *n, cap, sizeof(**list)))
		return -ENOMEM;
	(*list)[*n] = strdup(p);
	if (!(*list)[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* An LTTng (CTF) trace under @dir: converted into a directory of ours,
 * its files added to the list. */
static int expand_ctf(struct nrr_inputs *in, const char *cmd, const char *dir, char ***list, size_t *n, size_t *cap)
{
#if NCCLRR_CTF
	if (!in->tmpdir) {
		const char *t = getenv("TMPDIR");
		if (asprintf(&in->tmpdir, "%s/ncclrr-ctf-XXXXXX", t && *t ? t : "/tmp") < 0 || !mkdtemp(in->tmpdir)) {
			nrr_run_say(NRR_RUN_ERROR, cmd, "Cannot create a directory for the converted LTTng trace: %s", strerror(errno));
			return -EINVAL;
		}
	}
	char **paths;
	size_t np;
	nrr_diag d;
	if (nrr_ctf_convert(dir, in->tmpdir, &paths, &np, &d)) {
		nrr_run_say(NRR_RUN_ERROR, cmd, "Cannot read LTTng trace: dir=%s: %s", dir, d.msg);
		return -EINVAL;
	}
	size_t before = *n;
	int rc = 0;
	for (size_t i = 0; i < np; i++) {
		if (!rc && add_path(list, n, cap, paths[i]))
			rc = -EINVAL;
		char **x = realloc(in->tmpfiles, (in->ntmp + 1) * sizeof(*x));
		if (x) {
			in->tmpfiles = x;
			in->tmpfiles[in->ntmp++] = paths[i];
		} else {
			free(paths[i]);
		}
	}
	free(paths);
	if (!rc && *n == before) {
		nrr_run_say(NRR_RUN_ERROR, cmd, "the LTTng trace in dir=%s has no ncclrr event", dir);
		rc = -EINVAL;
	}
	qsort(*list + before, *n - before, sizeof(char *), cmp_str);
	return rc;
#else
	nrr_run_say(NRR_RUN_ERROR, cmd, "dir=%s holds an LTTng trace, and this ncclrr was built without libbabeltrace2 "
			"(meson -Dbabeltrace2=enabled) to read it", dir);
	return -EINVAL;
#endif
}

static bool dir_has_ctf(const char *dir)
{
#if NCCLRR_CTF
	return nrr_ctf_looks_like(dir, 6);
#else
	char p[4096];
	struct stat st;
	return snprintf(p, sizeof(p), "%s/lttng", dir) < (int)sizeof(p) && !stat(p, &st);
#endif
}

static int expand(struct nrr_inputs *in, const char *cmd, const char *arg, char ***list, size_t *n, size_t *cap)
{
	struct stat st;
	if (stat(arg, &st)) {
		nrr_run_say(NRR_RUN_ERROR, cmd, "Cannot open trace: file=%s: %s", arg, strerror(errno));
		return -EINVAL;
	}
	if (!S_ISDIR(st.st_mode))
		return add_path(list, n, cap, arg) ? -ENOMEM : 0;
	DIR *d = opendir(arg);
	if (!d) {
		nrr_run_say(NRR_RUN_ERROR, cmd, "Cannot open directory: dir=%s: %s", arg, strerror(errno));
		return -EINVAL;
	}
	size_t before = *n;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l > 4 && strcmp(e->d_name + l - 4, ".nrt") == 0) {
			char *p;
			if (asprintf(&p, "%s/%s", arg, e->d_name) < 0 || add_path(list, n, cap, p)) {
				closedir(d);
				return -EINVAL;
			}
			free(p);
		}
	}
	closedir(d);
	if (*n == before && dir_has_ctf(arg))
		return expand_ctf(in, cmd, arg, list, n, cap);
	if (*n == before) {
		nrr_run_say(NRR_RUN_ERROR, cmd, "no .nrt trace files in dir=%s; record one with 'ncclrr record -o %s -- PROGRAM'", arg, arg);
		return -EINVAL;
	}
	qsort(*list + before, *n - before, sizeof(char *), cmp_str);
	return 0;
}

static int filter_ranks(struct nrr_inputs *in, const char *cmd, const char *ranks);

/* ------------------------------------------------- the process record */

static void proc_free(struct nrr_proc *p)
{
	free(p->rank_str);
	free(p->host);
	free(p->who);
	free(p->program);
	free(p->argv);
	free(p->nccl_version);
	free(p->end_how);
	free(p->signal_name);
	if (p->env)
		for (size_t i = 0; i < p->nenv; i++)
			free((char *)p->env[i]);
	free(p->env);
	memset(p, 0, sizeof(*p));
}

/* A copy of metadata value @key, NULL when absent (or no memory: *@oom). */
static char *meta_dup(const nrr_reader *r, const char *key, bool *oom)
{
	const char *v = nrr_reader_meta(r, key);   /* (a buffer the next call reuses) */
	char *c = v ? strdup(v) : NULL;
	if (v && !c)
		*oom = true;
	return c;
}

int nrr_proc_parse_end(struct nrr_proc *p, const char *how, bool cut)
{
	free(p->end_how);
	free(p->signal_name);
	p->signal_name = NULL;
	p->exit_code = -1;
	p->end_how = strdup(how ? how : "");
	if (!p->end_how)
		return -ENOMEM;
	if (!how) {
		p->end = cut ? NRR_END_KILLED : NRR_END_RUNNING;
	} else if (strncmp(how, "signal", 6) == 0 && (how[6] == ' ' || !how[6])) {
		p->end = NRR_END_SIGNAL;
		p->signal_name = strdup(how[6] ? how + 7 : "");
		if (!p->signal_name)
			return -ENOMEM;
	} else if (strcmp(how, "exec") == 0) {
		p->end = NRR_END_EXEC;
	} else {
		/* "exit STATUS", "exit", or a word this reader does not know:
		 * the process ended (end_how says how, as written) */
		p->end = NRR_END_EXIT;
		char *e;
		if (strncmp(how, "exit ", 5) == 0 && how[5] >= '0' && how[5] <= '9') {
			long v = strtol(how + 5, &e, 10);
			if (!*e && v <= 255)
				p->exit_code = (int)v;
		}
	}
	return 0;
}

/* Fill @p from @r's header and metadata: every fact an analysis takes from
 * a process, read here once.  @return 0, -ENOMEM (free @p then). */
static int proc_build(struct nrr_proc *p, const nrr_reader *r)
{
	const nrr_file_info *fi = nrr_reader_info(r);
	bool oom = false;
	memset(p, 0, sizeof(*p));
	p->pid = fi->pid;
	p->host = meta_dup(r, "host", &oom);
	if (!p->host && !oom && !(p->host = strdup("?")))
		oom = true;
	if (oom || asprintf(&p->who, "%s:%u", p->host, fi->pid) < 0)
		return p->who = NULL, -ENOMEM;
	p->rank = nrr_meta_rank(r);
	if (p->rank < 0)
		p->rank = -1;
	else if (asprintf(&p->rank_str, "%ld", p->rank) < 0)
		return p->rank_str = NULL, -ENOMEM;
	p->argv = meta_dup(r, "argv", &oom);
	p->program = meta_dup(r, "exe", &oom);
	if (!p->program && p->argv && !oom) {
		size_t l = strcspn(p->argv, " ");
		if (!(p->program = strndup(p->argv, l)))
			oom = true;
	}
	p->nccl_version = meta_dup(r, "nccl_version", &oom);
	char *end = meta_dup(r, "end", &oom);
	if (oom || nrr_proc_parse_end(p, end, fi->index_rebuilt || fi->dropped_bytes)) {
		free(end);
		return -ENOMEM;
	}
	free(end);
	p->end_wall = fi->end_ts ? nrr_reader_wall(r, fi->end_ts) : 0;
	const nrr_meta_kv *kv;
	size_t nkv = nrr_reader_meta_keys(r, &kv);
	p->env = calloc(nkv + 1, sizeof(*p->env));
	if (!p->env)
		return -ENOMEM;
	for (size_t i = 0; i < nkv; i++) {
		if (kv[i].key_len <= 4 || strncmp(kv[i].key, "env.", 4) != 0)
			continue;
		char *e;
		if (asprintf(&e, "%.*s=%.*s", (int)(kv[i].key_len - 4), kv[i].key + 4, (int)kv[i].value_len,
			     kv[i].value) < 0)
			return -ENOMEM;
		p->env[p->nenv++] = e;
	}
	return 0;
}

int nrr_inputs_open(struct nrr_inputs *in, const char *cmd, char **paths, int npaths, const char *ranks)
{
	char **list = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	memset(in, 0, sizeof(*in));
	in->cmd = cmd;
	if (npaths < 1) {
		nrr_run_say(NRR_RUN_USAGE, cmd, "no trace file or directory given");
		return -EINVAL;
	}
	for (int i = 0; i < npaths && !rc; i++)
		rc = expand(in, cmd, paths[i], &list, &n, &cap);
	if (!rc) {
		in->r = calloc(n + 1, sizeof(*in->r));
		in->who = calloc(n + 1, sizeof(*in->who));
		in->rank = calloc(n + 1, sizeof(*in->rank));
		in->proc = calloc(n + 1, sizeof(*in->proc));
		if (!in->r || !in->who || !in->rank || !in->proc)
			rc = -ENOMEM;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		nrr_diag d;
		if (nrr_reader_open(&in->r[in->n], list[i], &d)) {
			nrr_print_diag(cmd, &d);
			if (strict || n == 1) {
				rc = -EINVAL;
				break;
			}
			nrr_run_say(NRR_RUN_SKIP, cmd, "skipped file=%s and went on with the other inputs "
			    "(exit status 3; --strict stops at the first damage)", list[i]);
			nskipped++;
			continue;
		}
		nrr_reader *r = in->r[in->n];
		if (!strict)
			nrr_reader_on_damage(r, on_damage, in);
		const nrr_file_info *fi = nrr_reader_info(r);
		if (fi->dropped_bytes)
			nrr_run_say(NRR_RUN_NOTE, cmd, "warning: file=%s: %llu damaged or incomplete bytes from offset %llu skipped (writer killed or file damaged); every complete chunk is shown",
			    list[i], (unsigned long long)fi->dropped_bytes, (unsigned long long)fi->dropped_offset);
		else if (fi->index_bad_offset)
			nrr_run_say(NRR_RUN_NOTE, cmd, "warning: file=%s: the index at offset %llu does not fit this file (damaged or made by hand: entries out of file order or closer than a chunk header); rebuilt it by scanning",
			    list[i], (unsigned long long)fi->index_bad_offset);
		else if (fi->index_rebuilt)
			nrr_run_say(NRR_RUN_NOTE, cmd, "warning: file=%s: no index at the end (writer did not finish); rebuilt it by scanning",
			    list[i]);
		if (fi->schema_lost_offset)
			nrr_run_say(NRR_RUN_NOTE, cmd, "warning: file=%s: the schema chunk at offset %llu does not continue the file's functions (damaged or missing one before it); calls of the functions it and later ones describe cannot be decoded",
			    list[i], (unsigned long long)fi->schema_lost_offset);
		if (fi->meta_lost_offset)
			nrr_run_say(NRR_RUN_NOTE, cmd, "warning: file=%s: damaged metadata chunk at offset %llu skipped (keys learnt while running, e.g. the rank or how the trace ended, may be missing)",
			    list[i], (unsigned long long)fi->meta_lost_offset);
		if (proc_build(&in->proc[in->n], r)) {
			proc_free(&in->proc[in->n]);
			nrr_reader_close(r);
			rc = -ENOMEM;
			break;
		}
		in->who[in->n] = in->proc[in->n].who;
		in->rank[in->n] = in->proc[in->n].rank_str;
		if (fi->wall_ns && (!in->base_wall || fi->wall_ns < in->base_wall))   /* (0: a file without a clock) */
			in->base_wall = fi->wall_ns;
		in->n++;
	}
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
	if (!rc && !in->n) {
		nrr_run_say(NRR_RUN_ERROR, cmd, "none of the %zu trace files could be read", n);
		rc = -EINVAL;
	}
	if (!rc && ranks)
		rc = filter_ranks(in, cmd, ranks);
	if (rc)
		nrr_inputs_close(in);
	return rc;
}

void nrr_inputs_close(struct nrr_inputs *in)
{
	for (size_t i = 0; i < in->n; i++) {
		nrr_reader_close(in->r[i]);
		proc_free(&in->proc[i]);
	}
	free(in->proc);
	free(in->r);
	free(in->who);
	free(in->rank);
	for (size_t i = 0; i < in->ntmp; i++) {
		unlink(in->tmpfiles[i]);
		free(in->tmpfiles[i]);
	}
	free(in->tmpfiles);
	free(in->damage);
	if (in->tmpdir)
		rmdir(in->tmpdir);
	free(in->tmpdir);
	memset(in, 0, sizeof(*in));
}

static bool in_list(const char *list, const char *v)
{
	size_t l = strlen(v);
	for (const char *p = list; *p;) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		if (n == l && strncmp(p, v, n) == 0)
			return true;
		p += n + (c ? 1 : 0);
	}
	return false;
}

static int filter_ranks(struct nrr_inputs *in, const char *cmd, const char *ranks)
{
	size_t k = 0;
	bool any_rank = false;
	for (size_t i = 0; i < in->n; i++) {
		if (in->rank[i])
			any_rank = true;
		if (in->rank[i] && in_list(ranks, in->rank[i])) {
			in->r[k] = in->r[i];
			in->who[k] = in->who[i];
			in->rank[k] = in->rank[i];
			in->proc[k] = in->proc[i];
			k++;
		} else {
			nrr_reader_close(in->r[i]);
			proc_free(&in->proc[i]);
		}
	}
	in->n = k;
	if (!k) {
		nrr_run_say(NRR_RUN_NOTE, cmd, any_rank ? "no trace of rank %s among the inputs"
			: "the traces record no rank (metadata key 'rank'); cannot select rank %s", ranks);
		return -EINVAL;
	}
	return 0;
}

/* ------------------------------------------------ the selection options */

void nrr_select_init(struct nrr_select *s)
{
	memset(s, 0, sizeof(*s));
	s->from = -1e300;
	s->to = 1e300;
	s->around = -1;
}

static int64_t secs_ns(double s)
{
	return s < -9e9 ? INT64_MIN : s > 9e9 ? INT64_MAX : (int64_t)(s * 1e9);
}

int64_t nrr_inputs_time(const struct nrr_inputs *in, size_t ri, uint64_t ts)
{
	/* times come from the trace: saturate (a chunk whose first_ts is
	 * 2^63 once made the HTML axis loop forever) */
	uint64_t w = nrr_reader_wall(in->r[ri], ts), b = in->base_wall;
	if (w >= b)
		return w - b > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(w - b);
	return b - w > (uint64_t)INT64_MAX ? -INT64_MAX : -(int64_t)(b - w);
}

int nrr_select_resolve(struct nrr_select *s, struct nrr_inputs *in)
{
	s->from_ns = secs_ns(s->from);
	s->to_ns = secs_ns(s->to);
	in->sel = s;
	if (s->around < 0)
		return 0;
	/* the earliest failure that matters, in time order */
	nrr_merge *m;
	int rc = nrr_merge_open(&m, in->r, in->n);
	if (rc) {
		nrr_run_say(NRR_RUN_NOTE, in->cmd, "%s", nrr_strerror(rc));
		return -EINVAL;
	}
	const nrr_call *c;
	size_t ri;
	bool found = false;
	while (!found && (rc = nrr_merge_next(m, &c, &ri)) == 0) {
		if (c->kind != NRR_CALL || !c->fn || c->phase == NRR_PHASE_ENTER || c->phase == NRR_PHASE_INFLIGHT ||
		    !nrr_call_real_failure(c))
			continue;
		found = true;
		s->failure_ns = nrr_inputs_time(in, ri, nrr_call_key(c));
		snprintf(s->failure, sizeof(s->failure), "%s%s %s #%llu", in->rank[ri] ? "rank " : "",
			 in->rank[ri] ? in->rank[ri] : in->who[ri], c->fn->name, (unsigned long long)c->seq);
	}
	int ret = 0;
	if (!found && rc != NRR_EEOF) {
		nrr_print_diag(in->cmd, nrr_merge_diag(m));
		ret = -EINVAL;
	} else if (!found) {
		nrr_run_say(NRR_RUN_NOTE, in->cmd, "--around-failure: no call failed in these traces (but for the failures a "
			"healthy run has too); select a window with --from/--to instead");
		ret = -EINVAL;
	} else {
		int64_t w = secs_ns(s->around);
		int64_t a = s->failure_ns - w, b = s->failure_ns + w + 1;   /* the failure itself included */
		if (a > s->from_ns)
			s->from_ns = a;
		if (b < s->to_ns)
			s->to_ns = b;
	}
	nrr_merge_close(m);
	return ret;
}

bool nrr_select_call(const struct nrr_inputs *in, size_t ri, const nrr_call *c)
{
	const struct nrr_select *s = in->sel;
	if (!s)
		return true;
	int64_t t = nrr_inputs_time(in, ri, nrr_call_key(c));
	if (t < s->from_ns || t >= s->to_ns)
		return false;
	if (s->api && (c->kind != NRR_CALL || !c->fn || !nrr_name_match(s->api, c->fn->name)))
		return false;
	if (s->errors && (c->kind != NRR_CALL || !c->fn || c->phase == NRR_PHASE_ENTER || !nrr_call_failed(c)))
		return false;
	return true;
}
