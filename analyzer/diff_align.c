/* SPDX-License-Identifier: MIT */
/*
 * diff_align.c - `ncclrr diff`: normalize calls into tokens, pair processes
 * and threads, align each thread pair and find its divergences.
 *
 * Processes are paired by their metadata rank (then their NCCL rank, then
 * for processes without one, like the `ncclrr run` launcher, by executable
 * name and order), threads by role (below).  Each thread pair is
 * streamed through two cursors; every call becomes a token whose hash
 * covers only what decides behaviour: the function, and each argument
 * normalized by its schema format (pointers, handles and descriptors
 * reduce to null / valid / invalid, socket addresses lose their port,
 * temporary paths their random parts, payloads keep their length), and the
 * result under the function's return convention.  Calls that only say
 * "not yet" (polls that did not fail, EAGAIN / EINTR / EINPROGRESS,
 * CUDA_ERROR_NOT_READY, ncclInProgress) and log lines are not compared.
 * A window of tokens per side lets the alignment accept calls that came in
 * another order (each found in the other side's window) and failed
 * attempts that were retried.  Memory: two cursors and two windows.
 *
 * Real NCCL runs differ in many calls that decide nothing (timing, polling,
 * helper threads), so the headline is a process's first *meaningful*
 * divergence: the first call that fails for real in one run and not in the
 * other (failures a healthy run has too, nrr_call_benign(), do not count),
 * or a process that ends abnormally in one run only (an exit status, a
 * signal, a trace cut by SIGKILL); only without any, the earliest call
 * divergence.  Threads are paired by role (their names when the program
 * set them, metadata thread.TID; else the first calls they make outside
 * the CUDA runtime, driver and NVML: NCCL's proxy service, proxy
 * progress, UDS and socket helper threads), the main thread with the main
 * thread, not by creation order, and a thread that touches CUDA, NVML,
 * verbs or NCCL never with one that makes socket calls only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "diff_internal.h"
#include "nrr_hash.h"

/* ------------------------------------------------------------ hashing */

static inline uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

static uint64_t hash_bytes(uint64_t h, const uint8_t *p, size_t n)
{
	return mix(h, nrr_hash(p, n, NRR_HASH_INIT) ^ n);
}

static bool is_alnum(uint8_t ch)
{
	return (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z');
}

/* Text where runs of letters and digits that hold a digit (pids, ports,
 * counters) or that are a six character mkstemp suffix count as one '*'. */
static uint64_t hash_fuzzy(uint64_t h, const uint8_t *p, size_t n)
{
	uint64_t f = NRR_HASH_INIT;
	for (size_t i = 0; i < n;) {
		if (!is_alnum(p[i])) {
			f = nrr_hash(p + i, 1, f);
			i++;
			continue;
		}
		size_t j = i;
		bool digit = false;
		while (j < n && is_alnum(p[j])) {
			digit |= p[j] >= '0' && p[j] <= '9';
			j++;
		}
		bool mkstemp = j - i == 6 && i > 0 && p[i - 1] == '.';
		if (digit || mkstemp) {
			f = nrr_hash("*", 1, f);
		} else {
			f = nrr_hash(p + i, j - i, f);
		}
		i = j;
	}
	return mix(h, f);
}

static bool has_prefix(const uint8_t *p, size_t n, const char *pre)
{
	size_t l = strlen(pre);
	return n >= l && memcmp(p, pre, l) == 0;
}

static uint64_t hash_str(uint64_t h, const uint8_t *p, size_t n)
{
	if (has_prefix(p, n, "/tmp/") || has_prefix(p, n, "/dev/shm/") || has_prefix(p, n, "/var/tmp/") ||
	    has_prefix(p, n, "/run/"))
		return hash_fuzzy(h, p, n);
	return hash_bytes(h, p, n);
}

static uint64_t hash_saddr(uint64_t h, const nrr_value *v)
{
	sa_family_t fam;
	if (v->len < sizeof(fam))
		return mix(h, v->total);
	memcpy(&fam, v->p, sizeof(fam));
	h = mix(h, fam);
	if (fam == AF_INET && v->len >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in in;
		memcpy(&in, v->p, sizeof(in));
		return mix(h, in.sin_addr.s_addr);
	}
	if (fam == AF_INET6 && v->len >= sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 in6;
		memcpy(&in6, v->p, sizeof(in6));
		return hash_bytes(h, in6.sin6_addr.s6_addr, 16);
	}
	if (fam == AF_UNIX) {
		/* an abstract name is padded with NULs to the length given:
		 * NCCL's "nccl-socket-RANK-HASH" is shorter when HASH is */
		size_t n = v->len - sizeof(fam);
		while (n > 1 && v->p[sizeof(fam) + n - 1] == 0)
			n--;
		return hash_fuzzy(h, v->p + sizeof(fam), n);
	}
	return hash_bytes(h, v->p, v->len);
}

static bool name_is_id(const char *name)
{
	size_t l = strlen(name);
	static const char *const tails[] = { "fd", "pid", "tid" };
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		size_t t = strlen(tails[i]);
		if (l >= t && strcasecmp(name + l - t, tails[i]) == 0)
			return true;
	}
	return false;
}

static bool payload_domain(const char *d)
{
	return d && (strcmp(d, "socket") == 0 || strcmp(d, "proxy") == 0 || strcmp(d, "net") == 0);
}

static void fninfo_init(struct fninfo *fi, const nrr_fn_schema *fn)
{
	fi->name_h = hash_bytes(0, (const uint8_t *)fn->name, strlen(fn->name));
	for (uint16_t i = 0; i < fn->nargs && i < NRR_MAX_ARGS; i++) {
		const nrr_arg_schema *a = &fn->args[i];
		uint8_t c = CL_VAL;
		switch (a->fmt) {
		case NRR_FMT_X:
		case NRR_FMT_HANDLE:
		case NRR_FMT_FD:
			c = CL_ID;
			break;
		case NRR_FMT_U:
		case NRR_FMT_I:
			c = name_is_id(a->name) ? CL_ID : CL_VAL;
			break;
		case NRR_FMT_STR:
			c = CL_STR;
			break;
		case NRR_FMT_SOCKADDR:
			c = CL_SADDR;
			break;
		case NRR_FMT_BYTES:
			fi->data = true;
			c = payload_domain(fn->domain) || strcasestr(a->name, "handle") || strcasestr(a->name, "uniqueid") ||
				    strcasestr(a->name, "commid")   /* ncclUniqueId: holds the bootstrap address */
				    ? CL_LEN : CL_BYTES;
			break;
		default:
			break;
		}
		/* numbers each run chooses anew, as the description says
		 * (runid: QP numbers, memory keys) */
		if (i < 32 && (fn->runid >> i & 1))
			c = CL_ID;
		else if (i == fn->runid_arg && c == CL_BYTES)
			c = CL_IDFIELDS;
		fi->cls[i] = c;
	}
	fi->ready = true;
}

static uint64_t hash_id(uint64_t h, uint64_t u, bool is_signed)
{
	int64_t s = is_signed ? (int64_t)u : 0;
	return mix(h, u == 0 ? 0 : s < 0 ? 2 : 1);
}

/* A post's work requests (custom:send_wr / recv_wr, nrr_wr_decode()):
 * the fields fn->runid_fields as ids, and of each sge its length, its
 * address and lkey (this run's buffers) as ids. */
static uint64_t hash_wrs(uint64_t h, const nrr_fn_schema *fn, const nrr_value *v, bool send)
{
	nrr_wr_rec w[NRR_ENTRIES_MAX];
	enum nrr_sges sges;
	int n = nrr_wr_decode(v, send, w, &sges);
	if (n < 0)
		return hash_bytes(mix(h, v->total), v->p, v->len);
	h = mix(mix(h, v->total), (uint64_t)n);
	for (int i = 0; i < n; i++) {
		for (unsigned k = 0; k < (send ? NRR_WR_SEND_FIELDS : NRR_WR_RECV_FIELDS); k++)
			h = fn->runid_fields >> k & 1 ? hash_id(h, w[i].f[k], false) : mix(h, w[i].f[k]);
		for (unsigned j = 0; j < w[i].nsge; j++)
			h = hash_id(mix(hash_id(h, w[i].sge[j].addr, false), w[i].sge[j].len), w[i].sge[j].lkey, false);
	}
	return h;
}

/* The uvars of @v (a plain run, or a count byte then entries of
 * fn->runid_nfields), the fields fn->runid_fields as ids; what follows the
 * last such field (qp_attr's raw dgid) and a cut value as bytes. */
static uint64_t hash_idfields(uint64_t h, const nrr_fn_schema *fn, const nrr_value *v)
{
	if (fn->role == NRR_ROLE_WR_SEND || fn->role == NRR_ROLE_WR_RECV)
		return hash_wrs(h, fn, v, fn->role == NRR_ROLE_WR_SEND);
	const uint8_t *p = v->p, *end = v->p + v->len;
	unsigned per = fn->runid_nfields, last = 0, n = 1;
	for (unsigned k = 0; k < 16; k++)
		if (fn->runid_fields >> k & 1)
			last = k;
	h = mix(h, v->total);
	if (per) {
		if (p >= end)
			return h;
		n = *p++;
		h = mix(h, n);
	} else {
		per = last + 1;
	}
	for (unsigned i = 0; i < n; i++) {
		for (unsigned k = 0; k < per; k++) {
			uint64_t u;
			if (nrr_get_uvar(&p, end, &u))
				return hash_bytes(h, p, (size_t)(end - p));
			h = fn->runid_fields >> k & 1 ? hash_id(h, u, false) : mix(h, u);
		}
	}
	return hash_bytes(h, p, (size_t)(end - p));
}

uint64_t diff_hash_arg(uint64_t h, uint8_t cls, const nrr_fn_schema *fn, const nrr_arg_schema *a, const nrr_value *v)
{
	switch (cls) {
	case CL_ID:
		return hash_id(h, v->u, a->wire == NRR_WIRE_S);
	case CL_IDFIELDS:
		return hash_idfields(h, fn, v);
	case CL_STR:
		return hash_str(mix(h, v->total), v->p, v->len);
	case CL_LEN:
		return mix(h, v->total);
	case CL_BYTES:
		return hash_bytes(mix(h, v->total), v->p, v->len);
	case CL_SADDR:
		return hash_saddr(h, v);
	default:
		return mix(h, v->u);
	}
}



uint64_t diff_hash_result(uint64_t h, const struct fninfo *fi, const nrr_call *c)
{
	switch (c->fn->ret) {
	case NRR_RET_VOID:
		return h;
	case NRR_RET_ERRNO:
		if (c->result < 0)
			return mix(mix(h, 0xe1), c->err);
		return mix(h, fi->data ? (uint64_t)c->result : 0);
	case NRR_RET_PTR:
		return c->result ? mix(h, 1) : mix(mix(h, 0), c->err);
	default:
		return mix(h, (uint64_t)c->result);
	}
}

/* Which of @fn's parameters the same function of @peer's schema lacks
 * (by name): a trace of an older build has fewer fields (ibv_reg_mr's
 * lkey/rkey results), and a field only one side records says nothing
 * about the call.  A function @peer does not describe keeps them all. */
static uint32_t own_params(const nrr_fn_schema *fn, const struct proc *peer)
{
	const nrr_fn_schema *o = nrr_schema_fn_by_name(nrr_reader_schema(peer->r), fn->name);
	uint32_t own = 0;
	for (uint16_t i = 0; o && i < fn->nargs && i < NRR_MAX_ARGS; i++) {
		bool there = false;
		for (uint16_t k = 0; k < o->nargs && !there; k++)
			there = strcmp(fn->args[i].name, o->args[k].name) == 0;
		if (!there)
			own |= 1u << i;
	}
	return own;
}

struct fninfo *diff_fninfo_of(struct proc *p, const nrr_fn_schema *fn)
{
	if (fn->id > p->nfns)
		return NULL;
	struct fninfo *fi = &p->fi[fn->id];
	if (!fi->ready)
		fninfo_init(fi, fn);
	if (!fi->own_ready && p->peer) {
		fi->own = own_params(fn, p->peer);
		fi->own_ready = true;
	}
	return fi;
}


/* @return false when @c returned an error under its return convention:
 * the callee wrote none of its out parameters, and what the tracer read
 * there is the caller's memory (NCCL's uninitialized capResult of every
 * NVML_ERROR_NOT_SUPPORTED nvmlDeviceGetNvLinkCapability).  A call
 * failed only by the entries it returned (ibv_poll_cq's completions)
 * wrote them. */
bool diff_outs_written(const nrr_call *c)
{
	unsigned first;
	int64_t status;
	return !(c->phase == NRR_PHASE_CALL || c->phase == NRR_PHASE_RESUME) || !nrr_call_failed(c) ||
	       nrr_call_entry_errors(c, &first, &status);
}

/* @return true and fill @t when @c is compared at all. */
static bool tokenize(struct proc *p, const nrr_call *c, struct tok *t)
{
	if (c->kind != NRR_CALL || !c->fn || (p->api && !nrr_name_match(p->api, c->fn->name)))
		return false;
	bool complete = c->phase == NRR_PHASE_CALL || c->phase == NRR_PHASE_RESUME;
	enum nrr_call_class cls = complete ? nrr_call_class(c) : NRR_CLASS_OK;
	bool failed = cls == NRR_CLASS_FAILED;
	if ((c->fn->flags & NRR_FN_POLL) && c->phase != NRR_PHASE_INFLIGHT && !failed)
		return false;
	/* a "not ready" or transient answer (EINTR, EINPROGRESS): how often
	 * it came is timing's */
	if (cls == NRR_CLASS_NOT_READY || cls == NRR_CLASS_TRANSIENT)
		return false;
	struct fninfo *fi = diff_fninfo_of(p, c->fn);
	if (!fi)
		return false;
	uint64_t h = mix(fi->name_h, complete ? 2 : c->phase == NRR_PHASE_ENTER ? 1 : 3);
	bool outs = diff_outs_written(c);
	uint16_t n = 0;   /* the parameters both schemas have, in order */
	for (uint16_t i = 0; i < c->fn->nargs && i < NRR_MAX_ARGS; i++) {
		const nrr_arg_schema *a = &c->fn->args[i];
		if (fi->own & (1u << i))
			continue;
		n++;
		if (!(c->present & (1u << i)))
			continue;
		if ((!complete || !outs) && a->dir == NRR_DIR_OUT)
			continue;
		if (nrr_call_arg_unread(c, i))
			continue;
		h = diff_hash_arg(mix(h, n - 1), fi->cls[i], c->fn, a, &c->args[i]);
	}
	if (complete)
		h = diff_hash_result(h, fi, c);
	t->h = h;
	t->seq = c->seq;
	t->wall = nrr_reader_wall(p->r, c->ts);   /* when the call started */
	t->fn = c->fn;
	t->phase = c->phase;
	t->failed = failed;
	t->transient = failed && nrr_call_benign(c);   /* a refused connect, a port in use: tried again */
	t->taken = false;
	return true;
}

/* ---------------------------------------------------------- windows */

static struct tok *at(struct side *s, size_t k)
{
	return &s->ring[(s->head + k) % s->cap];
}

/* Drop taken tokens from the head. */
static void settle(struct side *s)
{
	while (s->n && at(s, 0)->taken) {
		s->head = (s->head + 1) % s->cap;
		s->n--;
	}
}

static void pop(struct side *s)
{
	s->last_tok = at(s, 0)->wall;
	s->head = (s->head + 1) % s->cap;
	s->n--;
	settle(s);
}

/* Read until @k tokens are held (or the stream ends). */
static void fill(struct side *s, size_t k)
{
	if (k > s->cap)
		k = s->cap;
	while (s->n < k && !s->eof) {
		const nrr_call *c;
		int rc = nrr_cursor_next(s->c, &c);
		if (rc) {
			s->eof = true;
			if (rc != NRR_EEOF)
				s->err = rc;
			break;
		}
		uint64_t w = nrr_reader_wall(s->p->r, nrr_call_key(c));
		if (w > s->last_wall)
			s->last_wall = w;
		struct tok t;
		if (tokenize(s->p, c, &t)) {
			*at(s, s->n) = t;
			s->n++;
		}
	}
}

static int side_open(struct side *s, struct proc *p, uint32_t stream, size_t cap)
{
	memset(s, 0, sizeof(*s));
	s->p = p;
	s->stream = stream;
	s->tid = nrr_reader_stream(p->r, stream)->tid;
	s->cap = cap;
	s->ring = calloc(cap, sizeof(*s->ring));
	if (!s->ring)
		return -ENOMEM;
	int rc = nrr_cursor_open(&s->c, p->r, stream);
	if (rc) {
		free(s->ring);
		s->ring = NULL;
	}
	return rc;
}

static void side_close(struct side *s)
{
	if (s->c)
		nrr_cursor_close(s->c);
	free(s->ring);
	s->c = NULL;
	s->ring = NULL;
}

/* Index of the first untaken token in [from, limit) of @s with hash @h, or 0. */
static size_t find(struct side *s, size_t from, size_t limit, uint64_t h)
{
	for (size_t k = from; k < limit && k < s->n; k++)
		if (!at(s, k)->taken && at(s, k)->h == h)
			return k;
	return 0;
}

static bool in_window(struct side *s, uint64_t h)
{
	for (size_t k = 0; k < s->n; k++)
		if (at(s, k)->h == h)
			return true;
	return false;
}

/* Is x[0..i) a failed attempt that was retried?  It must hold a failure of
 * the call found again at x[i], every failure in it must be one a
 * connection attempt is retried after (refused, reset, timed out: a CUDA,
 * NCCL or NVML error never is), and every other call of it must be an
 * enter, a socket call that moves no data (closing and making the socket
 * again), or a call seen in @y's window.  And the calls from x[i] on must
 * agree with y's. */
static bool retried(struct side *x, size_t i, struct side *y)
{
	bool fail = false;
	const char *again = at(x, i)->fn->name;
	for (size_t k = 0; k < i; k++) {
		struct tok *t = at(x, k);
		if (t->taken)
			return false;
		if (t->failed && !t->transient)
			return false;
		if (t->failed) {
			fail |= strcmp(t->fn->name, again) == 0;
			continue;
		}
		if (t->phase == NRR_PHASE_ENTER || in_window(y, t->h))
			continue;
		struct fninfo *fi = diff_fninfo_of(x->p, t->fn);
		if (!fi || fi->data || !t->fn->domain || strcmp(t->fn->domain, "socket") != 0)
			return false;
	}
	if (!fail)
		return false;
	for (size_t k = 1; k <= CONFIRM && i + k < x->n && k < y->n; k++)
		if (at(x, i + k)->h != at(y, k)->h)
			return false;
	return true;
}

static size_t resync(struct side *x, struct side *y)
{
	for (size_t i = 1; i < x->n; i++)
		if (!at(x, i)->taken && at(x, i)->h == at(y, 0)->h && retried(x, i, y))
			return i;
	return 0;
}

static void push_hist(struct divg *d, size_t max, const struct tok *t)
{
	if (!max)
		return;
	if (d->nhist == max) {
		memmove(d->hist, d->hist + 1, (max - 1) * sizeof(d->hist[0]));
		d->nhist--;
	}
	d->hist[d->nhist++] = *t;
}

/* Align one thread pair; fills @d when they diverge. @return 0 or a
 * reader error (printed). */
static int align(struct ctx *x, struct proc *pa, uint32_t sa, struct proc *pb, uint32_t sb, struct divg *d)
{
	struct side A, B;
	size_t w = x->o->window;
	size_t ctxn = x->o->context;
	int rc = side_open(&A, pa, sa, w);
	if (rc)
		return rc;
	rc = side_open(&B, pb, sb, w);
	if (rc) {
		side_close(&A);
		return rc;
	}
	memset(d, 0, sizeof(*d));
	for (;;) {
		fill(&A, 1);
		fill(&B, 1);
		if (A.err || B.err)
			break;
		if (!A.n && !B.n)
			break;
		if (A.n && B.n && at(&A, 0)->h == at(&B, 0)->h) {
			push_hist(d, ctxn, at(&A, 0));
			pop(&A);
			pop(&B);
			x->compared++;
			continue;
		}
		fill(&A, w);
		fill(&B, w);
		if (A.err || B.err)
			break;
		if (A.n && B.n) {
			/* the same calls in another order */
			size_t j = find(&B, 1, w, at(&A, 0)->h);
			if (j && find(&A, 1, w, at(&B, 0)->h)) {
				at(&B, j)->taken = true;
				push_hist(d, ctxn, at(&A, 0));
				pop(&A);
				x->compared++;
				continue;
			}
			/* a failed attempt that was retried */
			size_t ia = resync(&A, &B), ib = resync(&B, &A);
			if (ia && (!ib || ia <= ib)) {
				while (ia--)
					pop(&A);
				continue;
			}
			if (ib) {
				while (ib--)
					pop(&B);
				continue;
			}
		}
		d->found = true;
		d->kind = !A.n ? D_A_ENDS : !B.n ? D_B_ENDS : D_CALL;
		if (A.n)
			d->ta = *at(&A, 0);
		if (B.n)
			d->tb = *at(&B, 0);
		/* a side that ended diverged after its last call */
		d->t_a = (A.n ? d->ta.wall : A.last_tok ? A.last_tok : A.last_wall) - pa->in->base_wall;
		d->t_b = (B.n ? d->tb.wall : B.last_tok ? B.last_tok : B.last_wall) - pb->in->base_wall;
		fill(&A, ctxn + 1);
		fill(&B, ctxn + 1);
		for (size_t k = 1; k < A.n && d->naft_a < ctxn; k++)
			if (!at(&A, k)->taken)
				d->aft_a[d->naft_a++] = *at(&A, k);
		for (size_t k = 1; k < B.n && d->naft_b < ctxn; k++)
			if (!at(&B, k)->taken)
				d->aft_b[d->naft_b++] = *at(&B, k);
		break;
	}
	d->stream_a = sa;
	d->stream_b = sb;
	d->tid_a = A.tid;
	d->tid_b = B.tid;
	rc = 0;
	if (A.err || B.err) {
		struct side *e = A.err ? &A : &B;
		nrr_print_diag("diff", nrr_cursor_diag(e->c));
		rc = e->err;
	}
	side_close(&A);
	side_close(&B);
	return rc;
}

/* ---------------------------------------------------------- processes */

static int cmp_stream(const void *x, const void *y, void *arg)
{
	nrr_reader *r = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	const nrr_stream_info *sa = nrr_reader_stream(r, a), *sb = nrr_reader_stream(r, b);
	if (sa->first_ts != sb->first_ts)
		return sa->first_ts < sb->first_ts ? -1 : 1;
	return a < b ? -1 : a > b;
}

const char *diff_base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

int diff_proc_init(struct proc *p, struct nrr_inputs *in, size_t i)
{
	const char *api = p->api;
	memset(p, 0, sizeof(*p));
	p->api = api;
	p->in = in;
	p->idx = i;
	p->r = in->r[i];
	p->rank = 0x7fffffffL;
	/* nrr_reader_meta() answers in one buffer: use each value at once */
	const char *v;
	int n;
	long rank = in->proc[i].rank;   /* (the run model's: nrr_meta_rank()) */
	if (rank >= 0) {
		n = asprintf(&p->key, "rank=%ld", rank);
		p->rank = rank;
	} else if ((v = nrr_reader_meta(p->r, "nccl_rank"))) {
		n = asprintf(&p->key, "nccl_rank=%s", v);
		p->rank = strtol(v, NULL, 10);
	} else {
		v = nrr_reader_meta(p->r, "exe");
		n = asprintf(&p->key, "exe=%s", v ? diff_base_name(v) : "?");
	}
	if (n < 0)
		return -ENOMEM;
	const nrr_schema *s = nrr_reader_schema(p->r);
	p->nfns = nrr_schema_nfns(s);
	p->fi = calloc(p->nfns + 1, sizeof(*p->fi));
	p->nstreams = nrr_reader_info(p->r)->nstreams;
	p->streams = calloc(p->nstreams + 1, sizeof(*p->streams));
	if (!p->fi || !p->streams)
		return -ENOMEM;
	for (uint32_t k = 0; k < p->nstreams; k++)
		p->streams[k] = k;
	qsort_r(p->streams, p->nstreams, sizeof(*p->streams), cmp_stream, p->r);
	return 0;
}

/* Make keys unique within a run ("exe=ncclrr#1") and set labels. */
int diff_proc_keys(struct proc *ps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t dup = 0;
		for (size_t j = 0; j < i; j++)
			if (strncmp(ps[j].key, ps[i].key, strlen(ps[i].key)) == 0 &&
			    (ps[j].key[strlen(ps[i].key)] == 0 || ps[j].key[strlen(ps[i].key)] == '#'))
				dup++;
		if (dup) {
			char *k;
			if (asprintf(&k, "%s#%zu", ps[i].key, dup) < 0)
				return -ENOMEM;
			free(ps[i].key);
			ps[i].key = k;
		}
		const char *eq = strchr(ps[i].key, '=');
		int rc = strncmp(ps[i].key, "rank=", 5) == 0 ? asprintf(&ps[i].label, "rank %s", eq + 1)
			 : strncmp(ps[i].key, "nccl_rank=", 10) == 0 ? asprintf(&ps[i].label, "nccl rank %s", eq + 1)
			 : asprintf(&ps[i].label, "process %s", eq + 1);
		if (rc < 0)
			return -ENOMEM;
	}
	return 0;
}

void diff_proc_free(struct proc *p)
{
	free(p->key);
	free(p->label);
	free(p->fi);
	free(p->streams);
	free(p->role);
	free(p->gpu);
	free(p->fails);
}

static bool role_domain(const char *d)
{
	/* every NCCL thread starts by setting its device: these say nothing */
	return d && strcmp(d, "cuda_driver") != 0 && strcmp(d, "cuda_runtime") != 0 && strcmp(d, "nvml") != 0;
}

static uint64_t fail_key(const nrr_call *c)
{
	uint64_t h = hash_bytes(0, (const uint8_t *)c->fn->name, strlen(c->fn->name));
	return mix(mix(h, (uint64_t)c->result), c->fn->ret == NRR_RET_CURESULT || c->fn->ret == NRR_RET_CUDART ||
						  c->fn->ret == NRR_RET_NCCL || c->fn->ret == NRR_RET_NVML ? 0 : c->err);
}

/* A thread's name (metadata thread.TID, from the tracer) into @name when
 * the program gave it one: not the name every thread inherits from the
 * main thread.  @return whether it has one. */
static bool thread_name(const struct proc *p, uint32_t stream, char *name, size_t len)
{
	char key[48];
	snprintf(key, sizeof(key), "thread.%u", nrr_reader_stream(p->r, stream)->tid);
	const char *v = nrr_reader_meta(p->r, key);   /* (a buffer the next call reuses) */
	if (!v || !*v)
		return false;
	snprintf(name, len, "%s", v);
	snprintf(key, sizeof(key), "thread.%u", nrr_reader_info(p->r)->pid);
	v = nrr_reader_meta(p->r, key);
	return !v || strcmp(v, name) != 0;
}

/* One pass over @p's trace: its real failures (nrr_call_real_failure(),
 * in the order they returned), each thread's role (its name when the
 * program named it, as NCCL does with NCCL_SET_THREAD_NAME=1; else a hash
 * of its first ROLE_CALLS calls outside the CUDA runtime, driver and
 * NVML) and class (gpu: it touches CUDA, NVML, verbs or NCCL; else a
 * helper, like a launcher's progress thread) and how it ended.  @return 0
 * or a reader error (printed). */
int diff_proc_scan(struct proc *p)
{
	uint32_t *nrole = calloc(p->nstreams + 1, sizeof(*nrole));
	p->role = calloc(p->nstreams + 1, sizeof(*p->role));
	p->gpu = calloc(p->nstreams + 1, sizeof(*p->gpu));
	if (!nrole || !p->role || !p->gpu) {
		free(nrole);
		return -ENOMEM;
	}
	nrr_merge *m;
	int rc = nrr_merge_open(&m, &p->r, 1);
	if (rc) {
		free(nrole);
		return rc;
	}
	const nrr_call *c;
	uint64_t last = 0;
	while ((rc = nrr_merge_next(m, &c, NULL)) == 0) {
		uint64_t w = nrr_reader_wall(p->r, nrr_call_key(c));
		if (w > last)
			last = w;
		if (c->kind != NRR_CALL || !c->fn || c->stream >= p->nstreams)
			continue;
		if (nrr_call_gpu_side(c))
			p->gpu[c->stream] = true;
		if ((c->phase == NRR_PHASE_CALL || c->phase == NRR_PHASE_ENTER) && nrole[c->stream] < ROLE_CALLS &&
		    role_domain(c->fn->domain) && nrr_call_role(c) != NRR_ROLE_SOCK_INFO) {
			p->role[c->stream] = mix(p->role[c->stream] ? p->role[c->stream] : 7, diff_fninfo_of(p, c->fn)->name_h);
			nrole[c->stream]++;
		}
		if ((c->phase != NRR_PHASE_CALL && c->phase != NRR_PHASE_RESUME) || p->nfails >= MAX_FAILS ||
		    !nrr_call_real_failure(c))
			continue;
		if (!nrr_grow(&p->fails, p->nfails, &p->cfails, sizeof(*p->fails))) {
			rc = -ENOMEM;
			break;
		}
		p->fails[p->nfails++] = (struct fail){ fail_key(c), nrr_reader_wall(p->r, c->ts + c->dur), c->seq, c->stream,
						       c->phase };
	}
	free(nrole);
	if (rc && rc != NRR_EEOF) {
		if (rc == -ENOMEM)
			nrr_run_say(NRR_RUN_NOTE, "diff", "out of memory");
		else
			nrr_print_diag("diff", nrr_merge_diag(m));
		nrr_merge_close(m);
		return rc;
	}
	nrr_merge_close(m);
	for (uint32_t k = 0; k < p->nstreams; k++) {
		char name[64];
		if (thread_name(p, k, name, sizeof(name)))
			p->role[k] = mix(hash_bytes(0x6e616d65, (const uint8_t *)name, strlen(name)), 2);
	}
	/* the main thread (the first to call) has its own role */
	if (p->nstreams)
		p->role[p->streams[0]] = 1;
	const struct nrr_proc *pr = &p->in->proc[p->idx];
	const char *end = nrr_proc_end_key(pr);
	snprintf(p->end, sizeof(p->end), "%s", end ? end : "");
	uint64_t ets = nrr_reader_info(p->r)->end_ts;
	p->end_wall = end && ets ? pr->end_wall : last;
	if (p->end_wall < last)
		p->end_wall = last;
	return 0;
}

/* Pair the threads of @pr by role: the main threads, then each thread of
 * A (in order of first call) with B's first unpaired thread of the same
 * role (name, or first calls), then the rest in order of first call, a
 * thread only with one of its class (never an NCCL thread with a
 * launcher's helper thread): the others are threads of one run only. */
struct role_at {
	uint64_t role;
	uint32_t j;   /* index into b->streams */
};

static int cmp_role_at(const void *x, const void *y)
{
	const struct role_at *a = x, *b = y;
	if (a->role != b->role)
		return a->role < b->role ? -1 : 1;
	return a->j < b->j ? -1 : a->j > b->j;
}

static int pair_threads(struct pair *pr)
{
	struct proc *a = pr->a, *b = pr->b;
	uint32_t n = a->nstreams + b->nstreams, nb = b->nstreams;
	pr->sa = calloc(n + 1, sizeof(*pr->sa));
	pr->sb = calloc(n + 1, sizeof(*pr->sb));
	bool *ua = calloc(a->nstreams + 1, sizeof(*ua)), *ub = calloc(nb + 1, sizeof(*ub));
	/* B's threads by (role, order), and for each run of one role the next
	 * one not yet paired: each A thread takes the first free B thread of
	 * its role in O(log n) (a trace may claim a million threads) */
	struct role_at *by = calloc(nb + 1, sizeof(*by));
	uint32_t *next = calloc(nb + 1, sizeof(*next));
	if (!pr->sa || !pr->sb || !ua || !ub || !by || !next) {
		free(ua), free(ub), free(by), free(next);
		return -ENOMEM;
	}
	for (uint32_t j = 0; j < nb; j++) {
		by[j] = (struct role_at){ b->role[b->streams[j]], j };
		next[j] = j;
	}
	qsort(by, nb, sizeof(*by), cmp_role_at);
	pr->nth = 0;
	for (uint32_t i = 0; i < a->nstreams; i++) {
		uint64_t role = a->role[a->streams[i]];
		uint32_t lo = 0, hi = nb;   /* the first of B's threads of this role */
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (by[mid].role < role)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == nb || by[lo].role != role || next[lo] == nb || by[next[lo]].role != role)
			continue;
		uint32_t j = by[next[lo]++].j;
		ua[i] = ub[j] = true;
		pr->sa[pr->nth] = a->streams[i];
		pr->sb[pr->nth++] = b->streams[j];
	}
	/* the rest by class (GPU-side or not), in order */
	uint32_t at[2] = { 0, 0 };
	for (uint32_t i = 0; i < a->nstreams; i++) {
		if (ua[i])
			continue;
		bool g = a->gpu[a->streams[i]];
		uint32_t j = at[g];
		while (j < nb && (ub[j] || b->gpu[b->streams[j]] != g))
			j++;
		at[g] = j;
		pr->sa[pr->nth] = a->streams[i];
		pr->sb[pr->nth++] = j < nb ? b->streams[j] : UINT32_MAX;
		if (j < nb)
			ub[j] = true;
	}
	for (uint32_t j = 0; j < nb; j++)
		if (!ub[j]) {
			pr->sa[pr->nth] = UINT32_MAX;
			pr->sb[pr->nth++] = b->streams[j];
		}
	free(ua), free(ub), free(by), free(next);
	return 0;
}

/* The thread number of @stream of @p in @pr (side B when @in_b). */
static uint32_t thread_no(const struct pair *pr, bool in_b, uint32_t stream)
{
	const uint32_t *s = in_b ? pr->sb : pr->sa;
	for (uint32_t k = 0; k < pr->nth; k++)
		if (s[k] == stream)
			return k + 1;
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* The first failure of @x that @y does not have (as many times): by
 * function, result and errno.  @return its index, or -1. */
static long first_new_failure(const struct proc *x, const struct proc *y)
{
	uint64_t *ky = malloc((y->nfails + 1) * sizeof(*ky));
	if (!ky)
		return -1;
	for (size_t i = 0; i < y->nfails; i++)
		ky[i] = y->fails[i].key;
	qsort(ky, y->nfails, sizeof(*ky), cmp_u64);
	long found = -1;
	for (size_t i = 0; i < x->nfails && found < 0; i++) {
		uint64_t k = x->fails[i].key;
		size_t seen = 0, have = 0;
		for (size_t j = 0; j <= i; j++)
			seen += x->fails[j].key == k;
		for (size_t j = 0; j < y->nfails; j++)
			have += ky[j] == k;
		if (seen > have)
			found = (long)i;
	}
	free(ky);
	return found;
}

static bool end_normal(const struct proc *p)
{
	return !strcmp(p->end, "exit 0") || !strcmp(p->end, "exec");
}

/* Find @pr's meaningful divergence (after diff_pair). */
void diff_meaningful(struct pair *pr)
{
	pr->m = M_NONE;
	if (!pr->a || !pr->b)
		return;
	long fa = first_new_failure(pr->a, pr->b), fb = first_new_failure(pr->b, pr->a);
	uint64_t ta = fa >= 0 ? pr->a->fails[fa].wall - pr->a->in->base_wall : UINT64_MAX;
	uint64_t tb = fb >= 0 ? pr->b->fails[fb].wall - pr->b->in->base_wall : UINT64_MAX;
	/* an abnormal end in one run only */
	bool na = end_normal(pr->a), nb = end_normal(pr->b);
	/* (a process the stop ended counts from the stop: a trace cut by the
	 * launcher's SIGKILL stops up to a second before it) */
	uint64_t ea = !na && nb ? nrr_end_order(pr->a->end, pr->a->end_wall, pr->a->stop) - pr->a->in->base_wall : UINT64_MAX;
	uint64_t eb = na && !nb ? nrr_end_order(pr->b->end, pr->b->end_wall, pr->b->stop) - pr->b->in->base_wall : UINT64_MAX;
	uint64_t best = ta < tb ? ta : tb;
	if (best != UINT64_MAX && best <= ea && best <= eb) {
		pr->m = M_FAIL;
		pr->m_in_b = tb < ta;
		pr->mf = pr->m_in_b ? pr->b->fails[fb] : pr->a->fails[fa];
		pr->m_t = best;
		pr->m_thread = thread_no(pr, pr->m_in_b, pr->mf.stream);
		const struct divg *d = &pr->d;
		const struct tok *t = pr->m_in_b ? &d->tb : &d->ta;
		uint32_t s = pr->m_in_b ? d->stream_b : d->stream_a;
		pr->m_is_d = d->found && (d->kind == D_CALL || d->kind == (pr->m_in_b ? D_A_ENDS : D_B_ENDS)) &&
			     s == pr->mf.stream && t->seq == pr->mf.seq;
	} else if (ea != UINT64_MAX || eb != UINT64_MAX) {
		pr->m = M_END;
		pr->m_in_b = eb < ea;
		pr->m_t = pr->m_in_b ? eb : ea;
	}
}

int diff_cmp_pair(const void *x, const void *y)
{
	const struct pair *a = x, *b = y;
	const struct proc *pa = a->a ? a->a : a->b, *pb = b->a ? b->a : b->b;
	if (pa->rank != pb->rank)
		return pa->rank < pb->rank ? -1 : 1;
	return strcmp(pa->key, pb->key);
}

static uint64_t first_wall(const struct proc *p)
{
	uint64_t best = UINT64_MAX;
	for (uint32_t i = 0; i < p->nstreams; i++) {
		const nrr_stream_info *s = nrr_reader_stream(p->r, i);
		if (s->records) {
			uint64_t w = nrr_reader_wall(p->r, s->first_ts);
			if (w < best)
				best = w;
		}
	}
	return best == UINT64_MAX ? p->in->base_wall : best;
}

/* When a divergence happened, to order them across threads and ranks: the
 * earlier of its times in the two runs (in the run where it shows first,
 * its consequences on other ranks come later). */
uint64_t diff_when_of(const struct divg *d)
{
	return d->t_a < d->t_b ? d->t_a : d->t_b;
}

/* Compare the threads of one process pair; keep the earliest divergence. */
int diff_compare_pair(struct ctx *x, struct pair *pr)
{
	memset(&pr->d, 0, sizeof(pr->d));
	if (!pr->a || !pr->b) {
		struct proc *p = pr->a ? pr->a : pr->b;
		pr->d.found = true;
		pr->d.kind = pr->a ? D_PROC_A : D_PROC_B;
		pr->d.t_a = pr->d.t_b = first_wall(p) - p->in->base_wall;
		return 0;
	}
	pr->a->peer = pr->b;
	pr->b->peer = pr->a;
	int prc = pair_threads(pr);
	if (prc)
		return prc;
	bool have = false;
	uint64_t best = 0;
	for (uint32_t t = 0; t < pr->nth; t++) {
		struct divg d;
		if (pr->sa[t] == UINT32_MAX || pr->sb[t] == UINT32_MAX) {
			bool ina = pr->sa[t] != UINT32_MAX;
			struct proc *p = ina ? pr->a : pr->b;
			uint32_t s = ina ? pr->sa[t] : pr->sb[t];
			memset(&d, 0, sizeof(d));
			d.found = true;
			d.kind = ina ? D_THREAD_A : D_THREAD_B;
			d.stream_a = d.stream_b = s;
			d.tid_a = d.tid_b = nrr_reader_stream(p->r, s)->tid;
			d.t_a = d.t_b = nrr_reader_wall(p->r, nrr_reader_stream(p->r, s)->first_ts) - p->in->base_wall;
		} else {
			int rc = align(x, pr->a, pr->sa[t], pr->b, pr->sb[t], &d);
			if (rc)
				return rc;
		}
		d.thread_no = t + 1;
		if (!d.found)
			continue;
		uint64_t when = diff_when_of(&d);
		if (!have || when < best) {
			if (have)
				pr->other_threads++;
			pr->d = d;
			best = when;
			have = true;
		} else {
			pr->other_threads++;
		}
	}
	return 0;
}

