/* SPDX-License-Identifier: MIT */
/* inputs.c - open the traces named on a command line. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "callfmt.h"
#include "cmds.h"
#include "color.h"
#include "inputs.h"
#include "nrr_meta.h"
#if NCCLRR_CTF
#include "nrt_ctf.h"
#endif

void nrr_print_diag(const char *cmd, const nrr_diag *d)
{
	char buf[1200];
	nrr_diag_format(d, buf, sizeof(buf));
	nrr_cli_error(cmd, "%s", buf);
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
	fprintf(stderr, "ncclrr %s: %s%s; skipped the rest of that thread's calls in this file and went on "
			"(exit status 3; --strict stops at the first damage)%s\n", in->cmd, nrr_color(stderr, NRR_COLOR_WARN),
		buf, nrr_color_end(stderr));
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int add_path(char ***list, size_t *n, size_t *cap, const char *p)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		char **x = realloc(*list, c * sizeof(*x));
		if (!x)
			return -ENOMEM;
		*list = x;
		*cap = c;
	}
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
			nrr_cli_error(cmd, "Cannot create a directory for the converted LTTng trace: %s", strerror(errno));
			return NRR_EXIT_USAGE;
		}
	}
	char **paths;
	size_t np;
	nrr_diag d;
	if (nrr_ctf_convert(dir, in->tmpdir, &paths, &np, &d)) {
		nrr_cli_error(cmd, "Cannot read LTTng trace: dir=%s: %s", dir, d.msg);
		return NRR_EXIT_USAGE;
	}
	size_t before = *n;
	int rc = 0;
	for (size_t i = 0; i < np; i++) {
		if (!rc && add_path(list, n, cap, paths[i]))
			rc = NRR_EXIT_USAGE;
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
		nrr_cli_error(cmd, "the LTTng trace in dir=%s has no ncclrr event", dir);
		rc = NRR_EXIT_USAGE;
	}
	qsort(*list + before, *n - before, sizeof(char *), cmp_str);
	return rc;
#else
	nrr_cli_error(cmd, "dir=%s holds an LTTng trace, and this ncclrr was built without libbabeltrace2 "
			"(meson -Dbabeltrace2=enabled) to read it", dir);
	return NRR_EXIT_USAGE;
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
		nrr_cli_error(cmd, "Cannot open trace: file=%s: %s", arg, strerror(errno));
		return NRR_EXIT_USAGE;
	}
	if (!S_ISDIR(st.st_mode))
		return add_path(list, n, cap, arg) ? NRR_EXIT_USAGE : 0;
	DIR *d = opendir(arg);
	if (!d) {
		nrr_cli_error(cmd, "Cannot open directory: dir=%s: %s", arg, strerror(errno));
		return NRR_EXIT_USAGE;
	}
	size_t before = *n;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l > 4 && strcmp(e->d_name + l - 4, ".nrt") == 0) {
			char *p;
			if (asprintf(&p, "%s/%s", arg, e->d_name) < 0 || add_path(list, n, cap, p)) {
				closedir(d);
				return NRR_EXIT_USAGE;
			}
			free(p);
		}
	}
	closedir(d);
	if (*n == before && dir_has_ctf(arg))
		return expand_ctf(in, cmd, arg, list, n, cap);
	if (*n == before) {
		nrr_cli_error(cmd, "no .nrt trace files in dir=%s; record one with 'ncclrr record -o %s -- PROGRAM'", arg, arg);
		return NRR_EXIT_USAGE;
	}
	qsort(*list + before, *n - before, sizeof(char *), cmp_str);
	return 0;
}

static int filter_ranks(struct nrr_inputs *in, const char *cmd, const char *ranks);

int nrr_inputs_open(struct nrr_inputs *in, const char *cmd, char **paths, int npaths, const char *ranks)
{
	char **list = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	memset(in, 0, sizeof(*in));
	in->cmd = cmd;
	if (npaths < 1)
		return nrr_cli_usage_error(cmd, "no trace file or directory given");
	for (int i = 0; i < npaths && !rc; i++)
		rc = expand(in, cmd, paths[i], &list, &n, &cap);
	if (!rc) {
		in->r = calloc(n + 1, sizeof(*in->r));
		in->who = calloc(n + 1, sizeof(*in->who));
		in->rank = calloc(n + 1, sizeof(*in->rank));
		if (!in->r || !in->who || !in->rank)
			rc = NRR_EXIT_USAGE;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		nrr_diag d;
		if (nrr_reader_open(&in->r[in->n], list[i], &d)) {
			nrr_print_diag(cmd, &d);
			if (strict || n == 1) {
				rc = NRR_EXIT_USAGE;
				break;
			}
			fprintf(stderr, "ncclrr %s: %sskipped file=%s and went on with the other inputs "
					"(exit status 3; --strict stops at the first damage)%s\n", cmd,
				nrr_color(stderr, NRR_COLOR_WARN), list[i], nrr_color_end(stderr));
			nskipped++;
			continue;
		}
		nrr_reader *r = in->r[in->n];
		if (!strict)
			nrr_reader_on_damage(r, on_damage, in);
		const nrr_file_info *fi = nrr_reader_info(r);
		if (fi->dropped_bytes)
			fprintf(stderr, "ncclrr %s: warning: file=%s: %llu damaged or incomplete bytes from offset %llu skipped (writer killed or file damaged); every complete chunk is shown\n",
				cmd, list[i], (unsigned long long)fi->dropped_bytes, (unsigned long long)fi->dropped_offset);
		else if (fi->index_bad_offset)
			fprintf(stderr, "ncclrr %s: warning: file=%s: the index at offset %llu does not fit this file (damaged or made by hand: entries out of file order or closer than a chunk header); rebuilt it by scanning\n",
				cmd, list[i], (unsigned long long)fi->index_bad_offset);
		else if (fi->index_rebuilt)
			fprintf(stderr, "ncclrr %s: warning: file=%s: no index at the end (writer did not finish); rebuilt it by scanning\n",
				cmd, list[i]);
		if (fi->schema_lost_offset)
			fprintf(stderr, "ncclrr %s: warning: file=%s: the schema chunk at offset %llu does not continue the file's functions (damaged or missing one before it); calls of the functions it and later ones describe cannot be decoded\n",
				cmd, list[i], (unsigned long long)fi->schema_lost_offset);
		if (fi->meta_lost_offset)
			fprintf(stderr, "ncclrr %s: warning: file=%s: damaged metadata chunk at offset %llu skipped (keys learnt while running, e.g. the rank or how the trace ended, may be missing)\n",
				cmd, list[i], (unsigned long long)fi->meta_lost_offset);
		const char *host = nrr_reader_meta(r, "host");
		if (asprintf(&in->who[in->n], "%s:%u", host ? host : "?", fi->pid) < 0) {
			rc = NRR_EXIT_USAGE;
			break;
		}
		long rank = nrr_meta_rank(r);
		in->rank[in->n] = NULL;
		if (rank >= 0 && asprintf(&in->rank[in->n], "%ld", rank) < 0) {
			in->rank[in->n] = NULL;
			rc = NRR_EXIT_USAGE;
			break;
		}
		if (fi->wall_ns && (!in->base_wall || fi->wall_ns < in->base_wall))   /* (0: a file without a clock) */
			in->base_wall = fi->wall_ns;
		in->n++;
	}
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
	if (!rc && !in->n) {
		nrr_cli_error(cmd, "none of the %zu trace files could be read", n);
		rc = NRR_EXIT_USAGE;
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
		free(in->who[i]);
		free(in->rank[i]);
	}
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
			k++;
		} else {
			nrr_reader_close(in->r[i]);
			free(in->who[i]);
			free(in->rank[i]);
		}
	}
	in->n = k;
	if (!k) {
		fprintf(stderr, any_rank ? "ncclrr %s: no trace of rank %s among the inputs\n"
					 : "ncclrr %s: the traces record no rank (metadata key 'rank'); cannot select rank %s\n",
			cmd, ranks);
		return NRR_EXIT_USAGE;
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

static int parse_seconds(const char *s, double *out)
{
	char *e;
	errno = 0;
	*out = strtod(s, &e);
	return errno || e == s || *e || *out != *out ? -1 : 0;
}

int nrr_select_option(struct nrr_select *s, const char *cmd, int c, const char *arg)
{
	switch (c) {
	case NRR_SEL_RANK: s->ranks = arg; return 1;
	case NRR_SEL_API: s->api = arg; return 1;
	case NRR_SEL_ERRORS: s->errors = true; return 1;
	case NRR_SEL_FROM:
		if (parse_seconds(arg, &s->from))
			return nrr_cli_usage_error(cmd, "--from wants seconds, got '%s'", arg);
		return 1;
	case NRR_SEL_TO:
		if (parse_seconds(arg, &s->to))
			return nrr_cli_usage_error(cmd, "--to wants seconds, got '%s'", arg);
		return 1;
	case NRR_SEL_AROUND:
		if (parse_seconds(arg, &s->around) || s->around < 0)
			return nrr_cli_usage_error(cmd, "--around-failure wants seconds (0 or more), got '%s'", arg);
		return 1;
	default:
		return 0;
	}
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
		fprintf(stderr, "ncclrr %s: %s\n", in->cmd, nrr_strerror(rc));
		return NRR_EXIT_USAGE;
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
		ret = NRR_EXIT_USAGE;
	} else if (!found) {
		fprintf(stderr, "ncclrr %s: --around-failure: no call failed in these traces (but for the failures a "
			"healthy run has too); select a window with --from/--to instead\n", in->cmd);
		ret = NRR_EXIT_USAGE;
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
