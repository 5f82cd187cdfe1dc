/* SPDX-License-Identifier: MIT */
/* runinfo.c - what a run was configured with, from trace metadata (see
 * runinfo.h for the keys and what is normalised). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nrr_env.h"
#include "nrr_hash.h"
#include "nrr_meta.h"
#include "rundir.h"
#include "runinfo.h"

struct proc {
	int rank;
	long gen;
	size_t order;
	nrr_reader *r;
	char *host;  /* NCCL_HOSTID or meta host ("?" if neither) */
	int host_index;
	int local_rank;
};

struct vec {
	struct nrr_runinfo_item *v;
	size_t n, cap;
	bool oom;
};

struct hash_cache {
	char *path[8];
	char *value[8];
	size_t n;
};

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

/* Add an item, taking ownership of @value (NULL: out of memory). */
static void vec_add(struct vec *v, const char *key, int rank, char *value)
{
	if (v->oom || !value) {
		v->oom = true;
		free(value);
		return;
	}
	if (!nrr_grow(&v->v, v->n, &v->cap, sizeof(*v->v))) {
		v->oom = true;
		free(value);
		return;
	}
	char *k = strdup(key);
	if (!k) {
		v->oom = true;
		free(value);
		return;
	}
	v->v[v->n++] = (struct nrr_runinfo_item){ k, rank, value };
}

static void items_free(struct nrr_runinfo_item *it, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(it[i].key);
		free(it[i].value);
	}
	free(it);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* "NAME fnv1a64:HEX" for the regular file @path (a file of the run
 * directory, never a path a trace names), else "NAME (unreadable)";
 * results cached per path. */
static char *file_ident(struct hash_cache *c, const char *path, const char *name)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->path[i], path) == 0)
			return strdup(c->value[i]);
	char *res = NULL;
	struct stat st;
	/* (non-blocking: a FIFO put there would block the open) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		uint64_t h = NRR_HASH_INIT;
		static unsigned char buf[1 << 16];
		ssize_t k;
		while ((k = read(fd, buf, sizeof(buf))) > 0)
			h = nrr_hash(buf, (size_t)k, h);
		if (k == 0)
			res = xasprintf("%s fnv1a64:%016llx", name, (unsigned long long)h);
	}
	if (fd >= 0)
		close(fd);
	if (!res)
		res = xasprintf("%s (unreadable)", name);
	if (res && c->n < sizeof(c->path) / sizeof(c->path[0])) {
		char *p = strdup(path), *v = strdup(res);
		if (p && v) {
			c->path[c->n] = p;
			c->value[c->n++] = v;
		} else {
			free(p);
			free(v);
		}
	}
	return res;
}

/* The cluster of process @r's run: the basename the recording gives it
 * (@recorded, never opened) and the content hash of the copy its run
 * directory keeps (nrr_run_cluster). */
static char *topo_ident(struct hash_cache *c, const nrr_reader *r, const char *recorded)
{
	const char *path = nrr_reader_path(r);
	char kept[PATH_MAX], why[1024];
	if (!path || nrr_run_cluster(path, recorded, kept, sizeof(kept), why, sizeof(why)) < 0)
		return xasprintf("%s (no copy kept)", base_name(recorded));
	return file_ident(c, kept, base_name(recorded));
}

static bool parse_int(const char *s, long *out)
{
	char *end;
	if (!s || !*s)
		return false;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

/* A NCCL_TOPO_FILE that `ncclrr run` wrote: <tmp>/ncclrr-run.XXXXXX/hostN.xml
 * or, in wrapper mode, <tmp>/ncclrr-UID/topo-HASH-hostN.xml. */
static bool launcher_topo_file(const char *v)
{
	const char *b = base_name(v);
	if (b == v)
		return false;
	const char *d = b - 1, *ds = d;
	while (ds > v && ds[-1] != '/')
		ds--;
	size_t dlen = (size_t)(d - ds);
	if (dlen > 11 && strncmp(ds, "ncclrr-run.", 11) == 0 && strncmp(b, "host", 4) == 0)
		return true;
	if (dlen > 7 && strncmp(ds, "ncclrr-", 7) == 0 && strncmp(b, "topo-", 5) == 0)
		return true;
	return false;
}

/* The normalised value of env @name=@v on process @p; NULL with *@drop set
 * to leave it out. */
static char *env_value(const struct proc *p, const char *name, const char *v,
		       bool *drop)
{
	long x;
	unsigned fl = nrr_env_flags(name, strlen(name));
	*drop = false;
	if (fl & NRR_ENV_PER_RUN) {
		*drop = true;
		return NULL;
	}
	if (strcmp(name, "NCCL_TOPO_FILE") == 0) {
		if (launcher_topo_file(v)) {
			*drop = true;
			return NULL;
		}
		return strdup(v);   /* (a path a trace names: never opened) */
	}
	if (strcmp(name, "NCCL_COMM_ID") == 0) {
		const char *c = strrchr(v, ':');
		if (c && parse_int(c + 1, &x))
			return xasprintf("%.*s:<port>", (int)(c - v), v);
		return strdup(v);
	}
	if (strcmp(name, "MASTER_PORT") == 0 && parse_int(v, &x))
		return strdup("<port>");
	if (strcmp(name, "NCCL_HOSTID") == 0)
		return strdup("<host>");
	if ((fl & NRR_ENV_RANK) && parse_int(v, &x) && x == p->rank)
		return strdup("<rank>");
	if ((fl & NRR_ENV_LOCAL_RANK) && parse_int(v, &x) && x == p->local_rank)
		return strdup("<local rank>");
	if ((fl & NRR_ENV_HOST_INDEX) && parse_int(v, &x) && x == p->host_index)
		return strdup("<host index>");
	return strdup(v);
}

static char *norm_argv(const char *argv)
{
	const char *sp = strchr(argv, ' ');
	size_t n0 = sp ? (size_t)(sp - argv) : strlen(argv);
	const char *b = argv;
	for (size_t i = 0; i < n0; i++)
		if (argv[i] == '/')
			b = argv + i + 1;
	return xasprintf("%.*s%s", (int)(argv + n0 - b), b, sp ? sp : "");
}

static int cmp_proc(const void *x, const void *y)
{
	const struct proc *a = x, *b = y;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->gen != b->gen)
		return a->gen > b->gen ? -1 : 1;  /* later exec first */
	return a->order < b->order ? -1 : a->order > b->order;
}

static int cmp_item(const void *x, const void *y)
{
	const struct nrr_runinfo_item *a = x, *b = y;
	int c = strcmp(a->key, b->key);
	if (c)
		return c;
	return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* Ranges of the sorted ranks: "0-7,9". */
static char *rank_ranges(const int *ranks, size_t n)
{
	size_t cap = n * 24 + 1, len = 0;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	s[0] = '\0';
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
			j++;
		if (j == i)
			len += (size_t)snprintf(s + len, cap - len, "%s%d", len ? "," : "", ranks[i]);
		else
			len += (size_t)snprintf(s + len, cap - len, "%s%d-%d", len ? "," : "", ranks[i], ranks[j]);
		i = j + 1;
	}
	return s;
}

/* Fold per-rank items of one key into one rank -1 item when all @nproc
 * ranks have the same value. */
static int fold(struct vec *raw, size_t nproc, struct nrr_runinfo *ri)
{
	qsort(raw->v, raw->n, sizeof(*raw->v), cmp_item);
	struct nrr_runinfo_item *out = calloc(raw->n ? raw->n : 1, sizeof(*out));
	if (!out)
		return -1;
	size_t n = 0;
	for (size_t i = 0; i < raw->n;) {
		size_t j = i;
		bool same = true;
		while (j < raw->n && strcmp(raw->v[j].key, raw->v[i].key) == 0) {
			if (strcmp(raw->v[j].value, raw->v[i].value) != 0 || raw->v[j].rank < 0)
				same = false;
			j++;
		}
		if (raw->v[i].rank < 0 || (same && j - i == nproc)) {
			out[n++] = (struct nrr_runinfo_item){ raw->v[i].key, -1, raw->v[i].value };
			for (size_t k = i + 1; k < j; k++) {
				free(raw->v[k].key);
				free(raw->v[k].value);
			}
		} else {
			for (size_t k = i; k < j; k++)
				out[n++] = raw->v[k];
		}
		i = j;
	}
	free(raw->v);
	raw->v = NULL;
	raw->n = 0;
	ri->items = out;
	ri->n = n;
	return 0;
}

int nrr_runinfo_read(struct nrr_runinfo *ri, nrr_reader *const *r, size_t n, char *err, size_t errlen)
{
	ri->items = NULL;
	ri->n = 0;
	if (n == 0) {
		snprintf(err, errlen, "no traces to read the run's configuration from");
		return -1;
	}
	struct proc *p = calloc(n, sizeof(*p));
	int *ranks = calloc(n, sizeof(int));
	struct vec raw = { 0 };
	struct hash_cache hc = { 0 };
	int ret = -1;
	if (!p || !ranks) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	size_t np = 0;
	for (size_t i = 0; i < n; i++) {
		long rk = nrr_meta_rank(r[i]), gen = 0;
		if (rk == -ENOENT)
			continue;
		if (rk < 0 || rk > 1 << 24) {   /* (a rank bisect can compare) */
			snprintf(err, errlen, "%s: meta rank=%s is not a rank number (the trace's metadata is damaged)",
				 nrr_reader_path(r[i]), nrr_reader_meta(r[i], "rank"));
			goto out;
		}
		parse_int(nrr_reader_meta(r[i], "exec_generation"), &gen);
		p[np++] = (struct proc){ .rank = (int)rk, .gen = gen, .order = i, .r = r[i] };
	}
	if (np == 0)  /* no ranks: every process, in the order given */
		for (size_t i = 0; i < n; i++)
			p[np++] = (struct proc){ .rank = (int)i, .order = i, .r = r[i] };
	qsort(p, np, sizeof(*p), cmp_proc);
	size_t m = 0;  /* one process per rank: the latest exec */
	for (size_t i = 0; i < np; i++)
		if (m == 0 || p[m - 1].rank != p[i].rank)
			p[m++] = p[i];
	np = m;

	/* hosts, in order of their first rank; local rank = index on the host */
	const char **hosts = (const char **)calloc(np, sizeof(char *));
	int *hcount = calloc(np, sizeof(int));
	size_t nh = 0;
	if (!hosts || !hcount) {
		free(hosts);
		free(hcount);
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < np; i++) {
		const char *h = nrr_runinfo_host(p[i].r);
		/* nrr_reader_meta() returns a buffer that the next call reuses */
		p[i].host = strdup(h ? h : "?");
		if (!p[i].host) {
			free(hosts);
			free(hcount);
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		size_t k;
		for (k = 0; k < nh; k++)
			if (strcmp(hosts[k], p[i].host) == 0)
				break;
		if (k == nh)
			hosts[nh++] = p[i].host;
		p[i].host_index = (int)k;
		p[i].local_rank = hcount[k]++;
		ranks[i] = p[i].rank;
	}
	vec_add(&raw, "ranks", -1, rank_ranges(ranks, np));
	vec_add(&raw, "nranks", -1, xasprintf("%zu", np));
	{
		size_t cap = 32, len;
		char *s = malloc(cap);
		if (s)
			len = (size_t)snprintf(s, cap, "%zu:", nh);
		for (size_t k = 0; s && k < nh; k++) {
			size_t c = 0;
			for (size_t i = 0; i < np; i++)
				if (p[i].host_index == (int)k)
					ranks[c++] = p[i].rank;
			char *rr = rank_ranges(ranks, c);
			size_t need = len + strlen(hosts[k]) + (rr ? strlen(rr) : 0) + 3;
			char *t = need > cap ? realloc(s, need * 2) : s;
			if (!rr || !t) {
				free(rr);
				free(t);
				s = NULL;
				break;
			}
			if (need > cap)
				cap = need * 2;
			s = t;
			len += (size_t)snprintf(s + len, cap - len, " %s=%s", hosts[k], rr);
			free(rr);
		}
		vec_add(&raw, "hosts", -1, s);
	}
	free(hosts);
	free(hcount);

	for (size_t i = 0; i < np && !raw.oom; i++) {
		const struct proc *q = &p[i];
		const char *v;
		if ((v = nrr_reader_meta(q->r, "nccl_version")))
			vec_add(&raw, "nccl_version", q->rank, strdup(v));
		/* the binary by its GNU build id (the path a trace names is
		 * never opened) */
		char *bid = (v = nrr_reader_meta(q->r, "exe_build_id")) ? strdup(v) : NULL;
		if ((v = nrr_reader_meta(q->r, "exe")))
			vec_add(&raw, "exe", q->rank, bid ? xasprintf("%s build-id:%s", base_name(v), bid)
							  : xasprintf("%s (no build id recorded)", v));
		free(bid);
		if ((v = nrr_reader_meta(q->r, "argv")))
			vec_add(&raw, "argv", q->rank, norm_argv(v));
		if ((v = nrr_reader_meta(q->r, "env.NCCLRR_TOPO")))
			vec_add(&raw, "topology", q->rank, topo_ident(&hc, q->r, v));
		/* every env.NAME key, once (later lines override earlier ones) */
		const nrr_meta_kv *kv;
		size_t nkv = nrr_reader_meta_keys(q->r, &kv);
		for (size_t j = 0; j < nkv && !raw.oom; j++) {
			if (kv[j].key_len <= 4 || kv[j].key_len >= 256 || strncmp(kv[j].key, "env.", 4) != 0)
				continue;
			char *key = strndup(kv[j].key, kv[j].key_len), *val = strndup(kv[j].value, kv[j].value_len);
			bool drop = false;
			char *nv = key && val ? env_value(q, key + 4, val, &drop) : NULL;
			if (key && val && !drop)
				vec_add(&raw, key, q->rank, nv);
			else
				free(nv);
			free(key);
			free(val);
		}
	}
	if (raw.oom || fold(&raw, np, ri) < 0) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	ret = 0;
out:
	if (raw.v)
		items_free(raw.v, raw.n);
	for (size_t i = 0; i < hc.n; i++) {
		free(hc.path[i]);
		free(hc.value[i]);
	}
	for (size_t i = 0; p && i < n; i++)
		free(p[i].host);
	free(p);
	free(ranks);
	return ret;
}

void nrr_runinfo_free(struct nrr_runinfo *ri)
{
	if (!ri)
		return;
	items_free(ri->items, ri->n);
	ri->items = NULL;
	ri->n = 0;
}

const char *nrr_runinfo_get(const struct nrr_runinfo *ri, const char *key, int rank)
{
	const char *common = NULL;
	for (size_t i = 0; i < ri->n; i++)
		if (strcmp(ri->items[i].key, key) == 0) {
			if (ri->items[i].rank == rank)
				return ri->items[i].value;
			if (ri->items[i].rank == -1)
				common = ri->items[i].value;
		}
	return common;
}

/* The ranks of @ri (from its `ranks` item); *@n = 0 when unknown. */
static int *ranks_of(const struct nrr_runinfo *ri, size_t *n)
{
	const char *s = nrr_runinfo_get(ri, "ranks", -1);
	*n = 0;
	if (!s || !*s)
		return calloc(1, sizeof(int));
	size_t cap = 16;
	int *v = malloc(cap * sizeof(int));
	while (v && *s) {
		char *e;
		long a = strtol(s, &e, 10), b = a;
		if (e == s)
			break;
		if (*e == '-')
			b = strtol(e + 1, &e, 10);
		for (long x = a; x <= b; x++) {
			if (*n == cap) {
				int *t = realloc(v, (cap *= 2) * sizeof(int));
				if (!t) {
					free(v);
					return NULL;
				}
				v = t;
			}
			v[(*n)++] = (int)x;
		}
		s = *e == ',' ? e + 1 : e;
		if (*e != ',')
			break;
	}
	return v;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool rank_in(const int *v, size_t n, int r)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == r)
			return true;
	return false;
}

size_t nrr_runinfo_diff(const struct nrr_runinfo *a, const struct nrr_runinfo *b, struct nrr_runinfo_change **out)
{
	size_t na, nb, cap = 16, n = 0;
	int *ra = ranks_of(a, &na), *rb = ranks_of(b, &nb);
	int *common = calloc(na + 1, sizeof(int));
	struct nrr_runinfo_change *c = malloc(cap * sizeof(*c));
	*out = NULL;
	if (!ra || !rb || !common || !c)
		goto oom;
	size_t nc = 0;
	for (size_t i = 0; i < na; i++)
		if (rank_in(rb, nb, ra[i]))
			common[nc++] = ra[i];
	/* keys in both sorted lists, merged */
	size_t i = 0, j = 0;
	while (i < a->n || j < b->n) {
		const char *key;
		int o = i >= a->n ? 1 : j >= b->n ? -1 : strcmp(a->items[i].key, b->items[j].key);
		key = o <= 0 ? a->items[i].key : b->items[j].key;
		size_t i2 = i, j2 = j;
		while (i2 < a->n && strcmp(a->items[i2].key, key) == 0)
			i2++;
		while (j2 < b->n && strcmp(b->items[j2].key, key) == 0)
			j2++;
		/* values over the ranks both runs have (the rank -1 values when
		 * they have none in common) */
		size_t first = n;
		bool uniform = true;
		const char *ua = NULL, *ub = NULL;
		size_t nr = nc == 0 ? 1 : nc;
		for (size_t k = 0; k < nr; k++) {
			int rank = nc == 0 ? -1 : common[k];
			const char *va = NULL, *vb = NULL;
			for (size_t x = i; x < i2; x++)
				if (a->items[x].rank == rank || (a->items[x].rank == -1 && !va))
					va = a->items[x].value;
			for (size_t x = j; x < j2; x++)
				if (b->items[x].rank == rank || (b->items[x].rank == -1 && !vb))
					vb = b->items[x].value;
			if (k == 0) {
				ua = va;
				ub = vb;
			} else if (!same_str(ua, va) || !same_str(ub, vb)) {
				uniform = false;
			}
			if (same_str(va, vb)) {
				uniform = false;
				continue;
			}
			if (n == cap) {
				struct nrr_runinfo_change *t = realloc(c, (cap *= 2) * sizeof(*c));
				if (!t)
					goto oom;
				c = t;
			}
			c[n++] = (struct nrr_runinfo_change){ key, rank, va, vb };
		}
		if (uniform && n - first == nr) {
			c[first].rank = -1;
			n = first + 1;
		}
		i = i2;
		j = j2;
	}
	free(ra);
	free(rb);
	free(common);
	*out = c;
	return n;
oom:
	free(ra);
	free(rb);
	free(common);
	free(c);
	return (size_t)-1;
}

const char *nrr_runinfo_host(nrr_reader *r)
{
	const char *h = nrr_reader_meta(r, "env.NCCL_HOSTID");
	return h ? h : nrr_reader_meta(r, "host");
}
