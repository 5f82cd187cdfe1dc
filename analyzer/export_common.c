/* SPDX-License-Identifier: MIT */
/* export_common.c - helpers shared by the Chrome and HTML exports. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "nrr_hash.h"
#include "progress.h"

struct nrr_export_proc *nrr_export_procs(const struct nrr_inputs *in)
{
	struct nrr_export_proc *p = calloc(in->n ? in->n : 1, sizeof(*p));
	if (!p)
		return NULL;
	long maxrank = -1;
	for (size_t i = 0; i < in->n; i++) {
		long r = in->proc[i].rank;
		if (r >= 0) {
			p[i].ranked = true;
			p[i].rank = r;
			if (r > maxrank)
				maxrank = r;
		}
	}
	long next = maxrank + 1;
	/* leave a visible gap above the ranks for the unranked processes */
	next = next < 1000 ? 1000 : next + 1000;
	for (size_t i = 0; i < in->n; i++) {
		bool dup = false;
		for (size_t j = 0; j < i && p[i].ranked; j++)
			if (p[j].ranked && p[j].pid == p[i].rank)
				dup = true;
		p[i].pid = p[i].ranked && !dup ? p[i].rank : next++;
		if (p[i].ranked) {
			snprintf(p[i].name, sizeof(p[i].name), "rank %ld (%s)", p[i].rank, in->who[i]);
		} else {
			const char *argv = in->proc[i].argv;
			const char *exe = argv ? argv : in->proc[i].program;   /* (no argv: the exe key) */
			bool launcher = argv && strstr(argv, "ncclrr") && strstr(argv, " run ");
			snprintf(p[i].name, sizeof(p[i].name), "%s (%s)%s%.60s",
				 launcher ? "ncclrr run launcher" : "unranked process", in->who[i],
				 exe && !launcher ? " " : "", exe && !launcher ? exe : "");
		}
	}
	return p;
}

int nrr_sbuf_open(struct nrr_sbuf *s)
{
	s->f = fmemopen(s->buf, sizeof(s->buf) - 1, "w");
	return s->f ? 0 : -1;
}

void nrr_sbuf_close(struct nrr_sbuf *s)
{
	if (s->f)
		fclose(s->f);
	s->f = NULL;
}

void nrr_sbuf_reset(struct nrr_sbuf *s)
{
	clearerr(s->f);
	rewind(s->f);
}

const char *nrr_sbuf_str(struct nrr_sbuf *s, size_t *len)
{
	fflush(s->f);
	long n = ftell(s->f);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(s->buf) - 1)
		n = (long)sizeof(s->buf) - 1;
	s->buf[n] = 0;
	if (len)
		*len = (size_t)n;
	return s->buf;
}

bool nrr_sock_conn(const nrr_call *c, int64_t *fd, const nrr_value **local, const nrr_value **peer,
		   bool *isconnect)
{
	if (nrr_call_role(c) != NRR_ROLE_SOCK_INFO)
		return false;
	const nrr_value *role = nrr_call_arg(c, "role", NULL), *fdv = nrr_call_arg(c, "fd", NULL);
	*local = nrr_call_arg(c, "local", NULL);
	*peer = nrr_call_arg(c, "peer", NULL);
	if (!role || !fdv || !*local || !*peer || !(*local)->len || !(*peer)->len || (role->u != NRR_SOCK_CONNECT && role->u != NRR_SOCK_ACCEPT))
		return false;
	*fd = (int64_t)fdv->u;
	*isconnect = role->u == NRR_SOCK_CONNECT;
	return true;
}

const nrr_value *nrr_call_arg(const nrr_call *c, const char *name, int *index)
{
	if (!c->fn)
		return NULL;
	for (unsigned i = 0; i < c->fn->nargs && i < NRR_MAX_ARGS; i++)
		if (strcmp(c->fn->args[i].name, name) == 0) {
			if (index)
				*index = (int)i;
			return c->present >> i & 1 ? &c->args[i] : NULL;
		}
	return NULL;
}

/* --------------------------------------------------------- a small map */

struct nrr_emap_ent *nrr_emap_get(struct nrr_emap *m, const void *key, size_t klen, bool create)
{
	uint64_t h = nrr_hash(key, klen, NRR_HASH_INIT);
	if (m->nb) {
		for (struct nrr_emap_ent *e = m->b[h & (m->nb - 1)]; e; e = e->next)
			if (e->hash == h && e->klen == klen && memcmp(e->key, key, klen) == 0)
				return e;
	}
	if (!create)
		return NULL;
	if (m->n >= m->nb) {
		size_t nb = m->nb ? m->nb * 2 : 256;
		struct nrr_emap_ent **b = calloc(nb, sizeof(*b));
		if (!b)
			return NULL;
		for (size_t i = 0; i < m->nb; i++)
			for (struct nrr_emap_ent *e = m->b[i], *nx; e; e = nx) {
				nx = e->next;
				e->next = b[e->hash & (nb - 1)];
				b[e->hash & (nb - 1)] = e;
			}
		free(m->b);
		m->b = b;
		m->nb = nb;
	}
	struct nrr_emap_ent *e = calloc(1, sizeof(*e) + klen);
	if (!e)
		return NULL;
	e->hash = h;
	e->klen = (uint32_t)klen;
	memcpy(e->key, key, klen);
	e->next = m->b[h & (m->nb - 1)];
	m->b[h & (m->nb - 1)] = e;
	m->n++;
	return e;
}

void nrr_emap_del(struct nrr_emap *m, struct nrr_emap_ent *d)
{
	if (!m->nb)
		return;
	for (struct nrr_emap_ent **pp = &m->b[d->hash & (m->nb - 1)]; *pp; pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			free(d);
			m->n--;
			return;
		}
}

void nrr_emap_free(struct nrr_emap *m)
{
	for (size_t i = 0; i < m->nb; i++)
		for (struct nrr_emap_ent *e = m->b[i], *nx; e; e = nx) {
			nx = e->next;
			free(e);
		}
	free(m->b);
	memset(m, 0, sizeof(*m));
}

void nrr_ekey_init(struct nrr_ekey *k, char tag, size_t reader)
{
	k->b[0] = (uint8_t)tag;
	memcpy(k->b + 1, &reader, sizeof(reader));
	k->n = 1 + sizeof(reader);
}

void nrr_ekey_add(struct nrr_ekey *k, const void *p, size_t n)
{
	if (n > sizeof(k->b) - k->n)
		n = sizeof(k->b) - k->n;
	memcpy(k->b + k->n, p, n);
	k->n += n;
}

/* ------------------------------------------------------ noise folding */

struct fold_thr {
	bool used;
	size_t ri;
	uint32_t tid;
	bool held;                    /* hc: a foldable call, not handed on yet */
	nrr_call hc;
	uint8_t *bytes;               /* hc's argument bytes */
	size_t cap;
	struct nrr_fold_run run;      /* run.calls >= 2: a run in progress */
	bool last_failed;
};

struct nrr_folder {
	const struct nrr_inputs *in;
	bool all;
	struct nrr_fold_ops ops;
	struct fold_thr *t;
	size_t nt, cap;               /* open addressing, cap a power of two */
	struct nrr_sbuf sb;
};

struct nrr_folder *nrr_folder_new(const struct nrr_inputs *in, bool all, const struct nrr_fold_ops *ops)
{
	struct nrr_folder *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->in = in;
	f->all = all;
	f->ops = *ops;
	f->cap = 64;
	f->t = calloc(f->cap, sizeof(*f->t));
	if (!f->t || nrr_sbuf_open(&f->sb)) {
		free(f->t);
		free(f);
		return NULL;
	}
	return f;
}

static size_t thr_slot(const struct fold_thr *t, size_t cap, size_t ri, uint32_t tid)
{
	size_t i = (ri * 0x9e3779b97f4a7c15ull ^ tid * 0xff51afd7ed558ccdull) & (cap - 1);
	while (t[i].used && (t[i].ri != ri || t[i].tid != tid))
		i = (i + 1) & (cap - 1);
	return i;
}

static struct fold_thr *thr_get(struct nrr_folder *f, size_t ri, uint32_t tid)
{
	if (2 * (f->nt + 1) > f->cap) {
		size_t cap = f->cap * 2;
		struct fold_thr *t = calloc(cap, sizeof(*t));
		if (!t)
			return NULL;
		for (size_t i = 0; i < f->cap; i++)
			if (f->t[i].used)
				t[thr_slot(t, cap, f->t[i].ri, f->t[i].tid)] = f->t[i];
		free(f->t);
		f->t = t;
		f->cap = cap;
	}
	struct fold_thr *e = &f->t[thr_slot(f->t, f->cap, ri, tid)];
	if (!e->used) {
		e->used = true;
		e->ri = ri;
		e->tid = tid;
		f->nt++;
	}
	return e;
}

/* Keep a copy of @c (its argument bytes are the reader's until the next
 * call). */
static bool hold(struct fold_thr *t, const nrr_call *c)
{
	size_t need = 0;
	/* bytes (wire B) are the reader's; other values hold no pointer */
#define HELD_BYTES(i) (c->fn->args[i].wire == NRR_WIRE_B && c->present >> (i) & 1 && c->args[i].p && c->args[i].len)
	for (unsigned i = 0; i < c->fn->nargs && i < NRR_MAX_ARGS; i++)
		if (HELD_BYTES(i))
			need += c->args[i].len;
	if (need > t->cap) {
		uint8_t *b = realloc(t->bytes, need);
		if (!b)
			return false;
		t->bytes = b;
		t->cap = need;
	}
	t->hc = *c;
	size_t off = 0;
	for (unsigned i = 0; i < c->fn->nargs && i < NRR_MAX_ARGS; i++)
		if (HELD_BYTES(i)) {
			memcpy(t->bytes + off, c->args[i].p, c->args[i].len);
			t->hc.args[i].p = t->bytes + off;
			off += c->args[i].len;
		}
#undef HELD_BYTES
	t->held = true;
	return true;
}

static const char *fold_kind(const nrr_benign_rule *r)
{
	return !strcmp(r->kind, "probe") ? "probe" : !strcmp(r->kind, "retry") ? "retried" :
	       !strcmp(r->kind, "absent") ? "absent" : !strcmp(r->kind, "done") ? "already done" : r->kind;
}

/* Hand on what thread @t holds: its run, or its held call. */
static void thr_flush(struct nrr_folder *f, struct fold_thr *t)
{
	if (t->run.calls >= 2) {
		struct nrr_fold_run *r = &t->run;
		r->real = t->last_failed && !strcmp(r->rule->kind, "retry");
		snprintf(r->name, sizeof(r->name), "%s \u00d7%llu (%llu %s: %s)", r->fn->name,
			 (unsigned long long)r->calls, (unsigned long long)r->failed, r->result,
			 r->real ? "never got through" : fold_kind(r->rule));
		f->ops.run(f->ops.ctx, r);
	} else if (t->held) {
		f->ops.call(f->ops.ctx, t->ri, &t->hc);
	}
	t->held = false;
	t->run.calls = 0;
}

static bool fn_has_rule(const nrr_fn_schema *fn)
{
	for (size_t i = 0; i < nrr_benign_nrules; i++) {
		const nrr_benign_rule *r = &nrr_benign_rules[i];
		if (r->fn ? !strcmp(r->fn, fn->name) : fn->domain && !strcmp(r->domain, fn->domain))
			return true;
	}
	return false;
}

static void run_add(struct nrr_folder *f, struct fold_thr *t, const nrr_call *c, bool failed)
{
	struct nrr_fold_run *r = &t->run;
	int64_t ts = nrr_inputs_time(f->in, t->ri, c->ts), end = ts + (int64_t)(c->dur + c->repeat_ns);
	if (!r->calls) {
		memset(r, 0, sizeof(*r));
		r->ri = t->ri;
		r->tid = t->tid;
		r->fn = c->fn;
		r->ts = ts;
		r->first_seq = c->seq;
	}
	r->calls += 1 + c->repeat;
	r->last_seq = c->seq;
	if (end > r->end)
		r->end = end;
	if (failed) {
		r->failed += 1 + c->repeat;
		if (!r->rule) {
			size_t len;
			r->rule = nrr_call_benign_rule(c);
			nrr_sbuf_reset(&f->sb);
			nrr_format_result(f->sb.f, c);
			const char *s = nrr_sbuf_str(&f->sb, &len);
			snprintf(r->result, sizeof(r->result), "%.*s", (int)len, s);
		}
	}
	t->last_failed = failed;
}

void nrr_folder_call(struct nrr_folder *f, size_t ri, const nrr_call *c)
{
	if (f->all) {
		f->ops.call(f->ops.ctx, ri, c);
		return;
	}
	struct fold_thr *t = thr_get(f, ri, c->tid);
	if (!t) {   /* out of memory: no folding */
		f->ops.call(f->ops.ctx, ri, c);
		return;
	}
	/* foldable: a complete call (no nested calls) of a function with a
	 * benign= rule that succeeded or failed the benign way */
	bool foldable = c->kind == NRR_CALL && c->fn && c->phase == NRR_PHASE_CALL && c->done && fn_has_rule(c->fn) &&
			!nrr_call_real_failure(c);
	bool failed = foldable && nrr_call_failed(c);
	const nrr_fn_schema *prev = t->run.calls ? t->run.fn : t->held ? t->hc.fn : NULL;
	if (foldable && prev == c->fn) {
		if (t->run.calls) {
			run_add(f, t, c, failed);
			return;
		}
		bool held_failed = nrr_call_failed(&t->hc);
		if (held_failed || failed) {   /* a run begins with the held call */
			run_add(f, t, &t->hc, held_failed);
			t->held = false;
			run_add(f, t, c, failed);
			return;
		}
		/* two successes: the first is an ordinary call */
	}
	thr_flush(f, t);
	if (foldable && hold(t, c))
		return;
	f->ops.call(f->ops.ctx, ri, c);
}

void nrr_folder_finish(struct nrr_folder *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->cap; i++)
		if (f->t[i].used) {
			thr_flush(f, &f->t[i]);
			free(f->t[i].bytes);
		}
	nrr_sbuf_close(&f->sb);
	free(f->t);
	free(f);
}

/* ------------------------------------------- what every exporter does */

FILE *nrr_export_open(const char *path, char *err, size_t errlen)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	if (!f)
		snprintf(err, errlen, "cannot create file=%s: %s", path, strerror(errno));
	return f;
}

int nrr_export_read(struct nrr_inputs *in, struct nrr_folder *fold, char *err, size_t errlen)
{
	nrr_merge *m;
	int rc = nrr_merge_open(&m, in->r, in->n);
	if (rc) {
		nrr_folder_finish(fold);
		snprintf(err, errlen, "%s", nrr_strerror(rc));
		return -1;
	}
	const nrr_call *c;
	size_t ri;
	struct nrr_progress prog;
	nrr_progress_init(&prog, in);
	while ((rc = nrr_merge_next(m, &c, &ri)) == 0) {
		nrr_progress_note(&prog, ri, c);
		if (nrr_select_call(in, ri, c))
			nrr_folder_call(fold, ri, c);
	}
	nrr_progress_end(&prog);
	nrr_folder_finish(fold);
	return nrr_export_read_end(m, rc, err, errlen);
}

int nrr_export_read_end(nrr_merge *m, int rc, char *err, size_t errlen)
{
	int ret = 0;
	if (rc != NRR_EEOF) {
		char buf[1200];
		nrr_diag_format(nrr_merge_diag(m), buf, sizeof(buf));
		snprintf(err, errlen, "%s", buf);
		ret = -1;
	}
	nrr_merge_close(m);
	return ret;
}

int nrr_export_close(FILE *f, const char *path, int ret, char *err, size_t errlen)
{
	if (ret == 0 && (fflush(f) == EOF || ferror(f))) {
		snprintf(err, errlen, "cannot write file=%s: %s", path, strerror(errno));
		ret = -1;
	}
	if (f != stdout && fclose(f) == EOF && ret == 0) {
		snprintf(err, errlen, "cannot write file=%s: %s", path, strerror(errno));
		ret = -1;
	}
	return ret;
}
