/* SPDX-License-Identifier: MIT */
/*
 * diff.c - `ncclrr diff`: compare two runs rank by rank, call by call.
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
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "callfmt.h"
#include "term_color.h"
#include "diff.h"
#include "json.h"
#include "nrr_hash.h"
#include "runinfo.h"

#define MAX_CONTEXT 32
#define CONFIRM 3          /* tokens after a resync point that must agree */
#define SCAN_LIMIT 50000000ull /* events re-read at most to print one call */
#define MAX_FAILS 4096     /* real failures kept per process */
#define ROLE_CALLS 4       /* calls that name a thread's role */

/* How an argument is compared. */
enum cls {
	CL_VAL,    /* value as recorded */
	CL_ID,     /* pointer / handle / fd / pid: only null, valid, invalid */
	CL_STR,    /* text; temporary paths lose their random parts */
	CL_LEN,    /* bytes: length only (payloads, random ids) */
	CL_BYTES,  /* bytes: length and content */
	CL_SADDR,  /* socket address without its port */
};

struct fninfo {
	bool ready;
	bool data;      /* has a byte buffer: an errno-style result is a count */
	uint64_t name_h;
	uint8_t cls[NRR_MAX_ARGS];
};

struct proc {
	struct nrr_inputs *in;
	size_t idx;
	nrr_reader *r;
	char *key;          /* pairing key */
	char *label;        /* "rank 3", "ncclrr #1" */
	long rank;          /* for sorting; LONG_MAX without one */
	struct fninfo *fi;
	uint32_t nfns;
	uint32_t *streams;  /* stream indices in order of first call */
	uint32_t nstreams;
	uint64_t *role;     /* per stream index: its name, else a hash of its first calls (see proc_scan) */
	bool *gpu;          /* per stream index: it calls CUDA, NVML, verbs, NCCL, ncclNet or proxy RPCs */
	struct fail *fails; /* real failures in the order they returned */
	size_t nfails, cfails;
	char end[64];       /* metadata end ("exit 0", "signal SIGTERM"), "" when none */
	uint64_t end_wall;  /* the end, or the last record without one */
	uint64_t stop;      /* when its run was stopped from outside (nrr_job_stopped_at()) */
	const char *api;    /* --api: only these functions' calls are compared */
};

/* A call that failed for real (not nrr_call_benign()). */
struct fail {
	uint64_t key;       /* function, result and errno */
	uint64_t wall;      /* when it returned */
	uint64_t seq;
	uint32_t stream;
	uint8_t phase;
};

struct tok {
	uint64_t h, seq, wall;
	const nrr_fn_schema *fn;
	uint8_t phase;
	bool failed, taken;
	bool transient;   /* failed the way a healthy run fails too (nrr_call_benign()) */
};

struct side {
	struct proc *p;
	uint32_t stream, tid;
	nrr_cursor *c;
	struct tok *ring;
	size_t cap, head, n;
	bool eof;
	int err;
	uint64_t last_wall;
	uint64_t last_tok;   /* wall time of the last token taken */
};

enum dkind { D_CALL, D_A_ENDS, D_B_ENDS, D_THREAD_A, D_THREAD_B, D_PROC_A, D_PROC_B };

/* What makes a pair's divergence meaningful (the headline). */
enum mkind {
	M_NONE,
	M_FAIL,    /* a call fails for real in one run only */
	M_END,     /* the process ends abnormally in one run only */
};

struct divg {
	bool found;
	enum dkind kind;
	uint32_t thread_no, stream_a, stream_b, tid_a, tid_b;
	struct tok ta, tb;
	struct tok hist[MAX_CONTEXT];
	size_t nhist;
	struct tok aft_a[MAX_CONTEXT], aft_b[MAX_CONTEXT];
	size_t naft_a, naft_b;
	uint64_t t_a, t_b;   /* ns since each run's start */
};

struct pair {
	struct proc *a, *b;
	struct divg d;
	size_t other_threads;  /* further threads that diverge */
	uint32_t *sa, *sb;     /* threads paired by role: stream of thread k+1 in A, in B */
	uint32_t nth;
	/* the meaningful divergence */
	enum mkind m;
	bool m_in_b;           /* it is in B (else in A) */
	struct fail mf;        /* M_FAIL: the first failure only in that run */
	uint32_t m_thread;     /* M_FAIL: thread number */
	uint64_t m_t;          /* ns since that run's start */
	bool m_is_d;           /* M_FAIL is the first call divergence d itself */
};

struct ctx {
	const struct nrr_diff_opts *o;
	struct nrr_inputs *ia, *ib;
	uint64_t compared;
	int err;               /* a reader error was printed */
};

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
		fi->cls[i] = c;
	}
	fi->ready = true;
}

static uint64_t hash_arg(uint64_t h, uint8_t cls, const nrr_arg_schema *a, const nrr_value *v)
{
	switch (cls) {
	case CL_ID: {
		int64_t s = a->wire == NRR_WIRE_S ? (int64_t)v->u : 0;
		return mix(h, v->u == 0 ? 0 : s < 0 ? 2 : 1);
	}
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



static uint64_t hash_result(uint64_t h, const struct fninfo *fi, const nrr_call *c)
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

static struct fninfo *fninfo_of(struct proc *p, const nrr_fn_schema *fn)
{
	if (fn->id > p->nfns)
		return NULL;
	struct fninfo *fi = &p->fi[fn->id];
	if (!fi->ready)
		fninfo_init(fi, fn);
	return fi;
}

/* Is argument @i of @c one the call does not read?  fcntl's third
 * argument for a command that takes none (F_GETFD, F_GETFL, F_GETOWN,
 * F_GETSIG, F_GETLEASE, F_GETPIPE_SZ, F_GET_SEALS) is whatever the
 * caller's register held. */
static bool arg_unused(const nrr_call *c, uint16_t i)
{
	if (strcmp(c->fn->name, "fcntl") && strcmp(c->fn->name, "fcntl64"))
		return false;
	if (strcmp(c->fn->args[i].name, "arg"))
		return false;
	uint16_t ci = 0;
	while (ci < c->fn->nargs && strcmp(c->fn->args[ci].name, "cmd"))
		ci++;
	if (ci >= c->fn->nargs || ci >= NRR_MAX_ARGS || !(c->present & (1u << ci)))
		return false;
	switch ((int)c->args[ci].u) {
	case F_GETFD: case F_GETFL: case F_GETOWN: case F_GETSIG: case F_GETLEASE: case F_GETPIPE_SZ: case F_GET_SEALS:
		return true;
	default:
		return false;
	}
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
	struct fninfo *fi = fninfo_of(p, c->fn);
	if (!fi)
		return false;
	uint64_t h = mix(fi->name_h, complete ? 2 : c->phase == NRR_PHASE_ENTER ? 1 : 3);
	for (uint16_t i = 0; i < c->fn->nargs && i < NRR_MAX_ARGS; i++) {
		const nrr_arg_schema *a = &c->fn->args[i];
		if (!(c->present & (1u << i)))
			continue;
		if (!complete && a->dir == NRR_DIR_OUT)
			continue;
		if (arg_unused(c, i))
			continue;
		h = hash_arg(mix(h, i), fi->cls[i], a, &c->args[i]);
	}
	if (complete)
		h = hash_result(h, fi, c);
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
		struct fninfo *fi = fninfo_of(x->p, t->fn);
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

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static int proc_init(struct proc *p, struct nrr_inputs *in, size_t i)
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
		n = asprintf(&p->key, "exe=%s", v ? base_name(v) : "?");
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
static int proc_keys(struct proc *ps, size_t n)
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

static void proc_free(struct proc *p)
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
static int proc_scan(struct proc *p)
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
		    role_domain(c->fn->domain) && strcmp(c->fn->name, "sock_info") != 0) {
			p->role[c->stream] = mix(p->role[c->stream] ? p->role[c->stream] : 7, fninfo_of(p, c->fn)->name_h);
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
static void meaningful(struct pair *pr)
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

static int cmp_pair(const void *x, const void *y)
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
static uint64_t when_of(const struct divg *d)
{
	return d->t_a < d->t_b ? d->t_a : d->t_b;
}

/* Compare the threads of one process pair; keep the earliest divergence. */
static int diff_pair(struct ctx *x, struct pair *pr)
{
	memset(&pr->d, 0, sizeof(pr->d));
	if (!pr->a || !pr->b) {
		struct proc *p = pr->a ? pr->a : pr->b;
		pr->d.found = true;
		pr->d.kind = pr->a ? D_PROC_A : D_PROC_B;
		pr->d.t_a = pr->d.t_b = first_wall(p) - p->in->base_wall;
		return 0;
	}
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
		uint64_t when = when_of(&d);
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

/* ---------------------------------------------------------- reporting */

/* Format the events of @toks (in stream order) of @p's @stream, one
 * malloc'ed line each (NULL where not found). */
static void load_lines(struct proc *p, uint32_t stream, const struct tok *toks, size_t n, char **lines)
{
	for (size_t k = 0; k < n; k++)
		lines[k] = NULL;
	if (!n)
		return;
	nrr_cursor *c;
	if (nrr_cursor_open(&c, p->r, stream))
		return;
	uint64_t s = toks[0].seq;
	for (size_t k = 1; k < n; k++)
		if (toks[k].seq < s)
			s = toks[k].seq;
	if (toks[0].phase == NRR_PHASE_INFLIGHT && s > 1)
		s--;
	if (nrr_cursor_seek(c, s) && nrr_cursor_seek(c, 1)) {
		nrr_cursor_close(c);
		return;
	}
	char who[300];
	snprintf(who, sizeof(who), "%s:%u/%u", p->in->proc[p->idx].host, nrr_reader_info(p->r)->pid,
		 nrr_reader_stream(p->r, stream)->tid);
	const nrr_call *call;
	size_t k = 0;
	uint64_t scanned = 0;
	while (k < n && scanned++ < SCAN_LIMIT && nrr_cursor_next(c, &call) == 0) {
		for (size_t j = k; j < n; j++) {
			if (call->kind != NRR_CALL || call->seq != toks[j].seq || call->phase != toks[j].phase)
				continue;
			char *buf = NULL;
			size_t len = 0;
			FILE *f = open_memstream(&buf, &len);
			if (f) {
				double t = (double)(int64_t)(nrr_reader_wall(p->r, nrr_call_key(call)) - p->in->base_wall) / 1e9;
				nrr_format_call(f, call, t, who);
				fclose(f);
				lines[j] = buf;
			}
			if (j == k)
				while (k < n && lines[k])
					k++;
			break;
		}
	}
	nrr_cursor_close(c);
}

/* Find the event of @t on @stream; the cursor stays open in *@cp. */
static const nrr_call *find_call(struct proc *p, uint32_t stream, const struct tok *t, nrr_cursor **cp)
{
	*cp = NULL;
	if (nrr_cursor_open(cp, p->r, stream))
		return NULL;
	uint64_t s = t->phase == NRR_PHASE_INFLIGHT && t->seq > 1 ? t->seq - 1 : t->seq;
	if (nrr_cursor_seek(*cp, s))
		return NULL;
	const nrr_call *c;
	uint64_t scanned = 0;
	while (scanned++ < SCAN_LIMIT && nrr_cursor_next(*cp, &c) == 0)
		if (c->kind == NRR_CALL && c->seq == t->seq && c->phase == t->phase)
			return c;
	return NULL;
}

/* What differs between the two diverging calls, as "result, size". */
static char *what_differs(struct pair *pr)
{
	struct divg *d = &pr->d;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	nrr_cursor *ca, *cb;
	const nrr_call *a = find_call(pr->a, d->stream_a, &d->ta, &ca);
	const nrr_call *b = a ? find_call(pr->b, d->stream_b, &d->tb, &cb) : (cb = NULL, NULL);
	const char *sep = "";
	if (a && b) {
		if (strcmp(a->fn->name, b->fn->name) != 0) {
			fputs("function", f);
		} else {
			struct fninfo *fa = fninfo_of(pr->a, a->fn), *fb = fninfo_of(pr->b, b->fn);
			if ((a->phase == NRR_PHASE_INFLIGHT) != (b->phase == NRR_PHASE_INFLIGHT)) {
				fputs("completion (one never returned)", f);
				sep = ", ";
			} else if (a->phase != b->phase) {
				fputs("nesting", f);
				sep = ", ";
			}
			for (uint16_t i = 0; fa && fb && i < a->fn->nargs && i < b->fn->nargs && i < NRR_MAX_ARGS; i++) {
				bool pa = a->present & (1u << i), pb = b->present & (1u << i);
				bool open = a->phase == NRR_PHASE_ENTER || a->phase == NRR_PHASE_INFLIGHT ||
					    b->phase == NRR_PHASE_ENTER || b->phase == NRR_PHASE_INFLIGHT;
				if (open && a->fn->args[i].dir == NRR_DIR_OUT)
					continue;
				if (!pa && !pb)
					continue;
				uint64_t ha = pa ? hash_arg(1, fa->cls[i], &a->fn->args[i], &a->args[i]) : 0;
				uint64_t hb = pb ? hash_arg(1, fb->cls[i], &b->fn->args[i], &b->args[i]) : 0;
				if (ha != hb) {
					fprintf(f, "%s%s", sep, a->fn->args[i].name);
					sep = ", ";
				}
			}
			bool ca_done = a->phase == NRR_PHASE_CALL || a->phase == NRR_PHASE_RESUME;
			bool cb_done = b->phase == NRR_PHASE_CALL || b->phase == NRR_PHASE_RESUME;
			if (fa && fb && ca_done && cb_done && hash_result(1, fa, a) != hash_result(1, fb, b))
				fprintf(f, "%sresult", sep);
		}
	}
	if (ca)
		nrr_cursor_close(ca);
	if (cb)
		nrr_cursor_close(cb);
	fclose(f);
	if (buf && !*buf) {
		free(buf);
		return NULL;
	}
	return buf;
}

static const char *kind_text(enum dkind k)
{
	switch (k) {
	case D_CALL: return "call";
	case D_A_ENDS: return "A ends";
	case D_B_ENDS: return "B ends";
	case D_THREAD_A: return "thread only in A";
	case D_THREAD_B: return "thread only in B";
	case D_PROC_A: return "process only in A";
	case D_PROC_B: return "process only in B";
	}
	return "?";
}

static const char *kind_json(enum dkind k)
{
	static const char *const n[] = { "call", "a_ends", "b_ends", "thread_only_in_a", "thread_only_in_b",
					 "process_only_in_a", "process_only_in_b" };
	return n[k];
}

struct lines {
	char *hist[MAX_CONTEXT], *a[MAX_CONTEXT + 1], *b[MAX_CONTEXT + 1];
	char *what;
};

static void lines_load(struct pair *pr, struct lines *L)
{
	struct divg *d = &pr->d;
	memset(L, 0, sizeof(*L));
	if (!pr->a || !pr->b || d->kind == D_THREAD_A || d->kind == D_THREAD_B)
		return;
	struct tok ta[MAX_CONTEXT + 1], tb[MAX_CONTEXT + 1];
	size_t na = 0, nb = 0;
	if (d->kind != D_A_ENDS)
		ta[na++] = d->ta;
	for (size_t k = 0; k < d->naft_a; k++)
		ta[na++] = d->aft_a[k];
	if (d->kind != D_B_ENDS)
		tb[nb++] = d->tb;
	for (size_t k = 0; k < d->naft_b; k++)
		tb[nb++] = d->aft_b[k];
	load_lines(pr->a, d->stream_a, d->hist, d->nhist, L->hist);
	load_lines(pr->a, d->stream_a, ta, na, L->a);
	load_lines(pr->b, d->stream_b, tb, nb, L->b);
	if (d->kind == D_CALL)
		L->what = what_differs(pr);
}

static void lines_free(struct lines *L)
{
	for (size_t k = 0; k < MAX_CONTEXT; k++)
		free(L->hist[k]);
	for (size_t k = 0; k <= MAX_CONTEXT; k++) {
		free(L->a[k]);
		free(L->b[k]);
	}
	free(L->what);
}

static const char *api_of(const struct divg *d)
{
	if (d->kind == D_CALL || d->kind == D_B_ENDS)
		return d->ta.fn ? d->ta.fn->name : NULL;
	if (d->kind == D_A_ENDS)
		return d->tb.fn ? d->tb.fn->name : NULL;
	return NULL;
}

static void text_pair(FILE *f, struct pair *pr, struct lines *L)
{
	struct divg *d = &pr->d;
	const char *label = (pr->a ? pr->a : pr->b)->label;
	switch (d->kind) {
	case D_PROC_A:
	case D_PROC_B:
		fprintf(f, "%s: only in %s (%s)\n", label, d->kind == D_PROC_A ? "A" : "B",
			nrr_reader_path((pr->a ? pr->a : pr->b)->r));
		return;
	case D_THREAD_A:
	case D_THREAD_B:
		fprintf(f, "%s thread %u: only in %s (tid %u, first call at +%.6f s)\n", label, d->thread_no,
			d->kind == D_THREAD_A ? "A" : "B", d->tid_a, d->t_a / 1e9);
		return;
	default:
		break;
	}
	fprintf(f, "%s thread %u (tid %u in A, %u in B): ", label, d->thread_no, d->tid_a, d->tid_b);
	if (d->kind == D_CALL)
		fprintf(f, "call #%llu in A, #%llu in B: %s", (unsigned long long)d->ta.seq, (unsigned long long)d->tb.seq,
			d->ta.fn->name);
	else if (d->kind == D_A_ENDS)
		fprintf(f, "A ends, B goes on with call #%llu %s", (unsigned long long)d->tb.seq, d->tb.fn->name);
	else
		fprintf(f, "B ends, A goes on with call #%llu %s", (unsigned long long)d->ta.seq, d->ta.fn->name);
	if (L->what)
		fprintf(f, " (%s differs)", L->what);
	fprintf(f, " at +%.6f s in A, +%.6f s in B\n", d->t_a / 1e9, d->t_b / 1e9);
	for (size_t k = 0; k < d->nhist; k++)
		if (L->hist[k])
			fprintf(f, "    = %s\n", L->hist[k]);
	size_t na = (d->kind != D_A_ENDS) + d->naft_a, nb = (d->kind != D_B_ENDS) + d->naft_b;
	if (d->kind == D_A_ENDS)
		fputs("  A>  (no more calls)\n", f);
	for (size_t k = 0; k < na; k++)
		if (L->a[k])
			fprintf(f, "  A%s %s\n", k == 0 && d->kind != D_A_ENDS ? ">" : " ", L->a[k]);
	if (d->kind == D_B_ENDS)
		fputs("  B>  (no more calls)\n", f);
	for (size_t k = 0; k < nb; k++)
		if (L->b[k])
			fprintf(f, "  B%s %s\n", k == 0 && d->kind != D_B_ENDS ? ">" : " ", L->b[k]);
	if (pr->other_threads)
		fprintf(f, "  (%zu more thread%s of %s diverge later)\n", pr->other_threads, pr->other_threads > 1 ? "s" : "",
			label);
}

static void json_lines(FILE *f, const char *name, char **l, size_t n)
{
	fprintf(f, ", \"%s\": [", name);
	const char *sep = "";
	for (size_t k = 0; k < n; k++) {
		if (!l[k])
			continue;
		fputs(sep, f);
		nrr_json_strz(f, l[k]);
		sep = ", ";
	}
	fputc(']', f);
}

static void json_meaningful(FILE *f, struct pair *pr);

static void json_pair(FILE *f, struct pair *pr, struct lines *L)
{
	struct divg *d = &pr->d;
	const struct proc *p = pr->a ? pr->a : pr->b;
	fputs("{\"process\": ", f);
	nrr_json_strz(f, p->label);
	fputs(", \"rank\": ", f);
	if (p->rank != 0x7fffffffL)
		fprintf(f, "%ld", p->rank);
	else
		fputs("null", f);
	fprintf(f, ", \"kind\": \"%s\", \"thread\": %u, \"tid_a\": %u, \"tid_b\": %u", kind_json(d->kind),
		d->thread_no, d->tid_a, d->tid_b);
	fputs(", \"api\": ", f);
	nrr_json_strz(f, api_of(d));
	if (d->kind == D_CALL || d->kind == D_B_ENDS)
		fprintf(f, ", \"seq_a\": %llu", (unsigned long long)d->ta.seq);
	if (d->kind == D_CALL || d->kind == D_A_ENDS)
		fprintf(f, ", \"seq_b\": %llu", (unsigned long long)d->tb.seq);
	fprintf(f, ", \"t_a\": %.9f, \"t_b\": %.9f, \"differs\": ", d->t_a / 1e9, d->t_b / 1e9);
	nrr_json_strz(f, L->what);
	fputs(", \"call_a\": ", f);
	nrr_json_strz(f, d->kind != D_A_ENDS ? L->a[0] : NULL);
	fputs(", \"call_b\": ", f);
	nrr_json_strz(f, d->kind != D_B_ENDS ? L->b[0] : NULL);
	json_lines(f, "before", L->hist, d->nhist);
	json_lines(f, "after_a", L->a + (d->kind != D_A_ENDS), d->naft_a);
	json_lines(f, "after_b", L->b + (d->kind != D_B_ENDS), d->naft_b);
	fprintf(f, ", \"other_threads\": %zu", pr->other_threads);
	json_meaningful(f, pr);
	fputc('}', f);
}

/* The failing call of @pr's M_FAIL, as dump prints it (malloc'ed), or NULL. */
static char *fail_line(struct pair *pr)
{
	struct tok t = { .seq = pr->mf.seq, .phase = pr->mf.phase };
	char *line = NULL;
	load_lines(pr->m_in_b ? pr->b : pr->a, pr->mf.stream, &t, 1, &line);
	return line;
}

static const char *end_text(const struct proc *p)
{
	return p->end[0] ? p->end : "killed (its trace stops, no end recorded: SIGKILL, or the host went away)";
}

/* One line on @pr's meaningful divergence when it is not its first call
 * divergence: "  first failure only in B: ..." or "  ends only in B: ...". */
static void text_meaningful(FILE *f, struct pair *pr)
{
	const char *r = pr->m_in_b ? "B" : "A";
	if (pr->m == M_FAIL && !pr->m_is_d) {
		char *line = fail_line(pr);
		fprintf(f, "  first failure only in %s, thread %u (tid %u) at +%.6f s in %s:\n  %s> %s\n", r, pr->m_thread,
			nrr_reader_stream((pr->m_in_b ? pr->b : pr->a)->r, pr->mf.stream)->tid, pr->m_t / 1e9, r, r,
			line ? line : "?");
		free(line);
	} else if (pr->m == M_END) {
		fprintf(f, "  ends abnormally only in %s: A %s at +%.6f s, B %s at +%.6f s\n", r, end_text(pr->a),
			(pr->a->end_wall - pr->a->in->base_wall) / 1e9, end_text(pr->b),
			(pr->b->end_wall - pr->b->in->base_wall) / 1e9);
	}
}

/* The api and result of @pr's M_FAIL: "cudaIpcOpenMemHandle = cudaErrorInvalidValue (1)". */
static void fail_what(FILE *f, struct pair *pr)
{
	nrr_cursor *c;
	struct tok t = { .seq = pr->mf.seq, .phase = pr->mf.phase };
	const nrr_call *call = find_call(pr->m_in_b ? pr->b : pr->a, pr->mf.stream, &t, &c);
	if (call) {
		fprintf(f, "%s = ", call->fn->name);
		nrr_format_result(f, call);
	} else {
		fputs("?", f);
	}
	if (c)
		nrr_cursor_close(c);
}

#define ERR(f) nrr_color(f, NRR_COLOR_ERROR)
#define RANK(f) nrr_color(f, NRR_COLOR_RANK)
#define END(f) nrr_color_end(f)

static void text_headline(FILE *f, struct pair *pr)
{
	struct divg *d = &pr->d;
	const struct proc *p = pr->a ? pr->a : pr->b;
	const char *r = pr->m_in_b ? "B" : "A";
	if (pr->m == M_FAIL && !pr->m_is_d) {
		fprintf(f, "%sEarliest across ranks:%s %s%s%s thread %u, failure only in %s: ", ERR(f), END(f), RANK(f), p->label, END(f), pr->m_thread, r);
		fail_what(f, pr);
		fprintf(f, " at +%.6f s in %s\n", pr->m_t / 1e9, r);
		return;
	}
	if (pr->m == M_END) {
		fprintf(f, "%sEarliest across ranks:%s %s%s%s, abnormal end only in %s: %s at +%.6f s in %s (%s: %s)\n",
			ERR(f), END(f), RANK(f), p->label, END(f), r,
			end_text(pr->m_in_b ? pr->b : pr->a), pr->m_t / 1e9, r, pr->m_in_b ? "A" : "B",
			end_text(pr->m_in_b ? pr->a : pr->b));
		return;
	}
	const char *api = api_of(d);
	fprintf(f, "%sEarliest across ranks:%s %s%s%s thread %u, %s%s%s", ERR(f), END(f), RANK(f), p->label, END(f), d->thread_no, kind_text(d->kind), api ? ": " : "",
		api ? api : "");
	if (pr->m == M_FAIL)
		fprintf(f, " (fails only in %s)", r);
	fprintf(f, " at +%.6f s in A, +%.6f s in B\n", d->t_a / 1e9, d->t_b / 1e9);
}

static void json_meaningful(FILE *f, struct pair *pr)
{
	fputs(", \"meaningful\": ", f);
	if (pr->m == M_NONE) {
		fputs("null", f);
		return;
	}
	const char *r = pr->m_in_b ? "b" : "a";
	if (pr->m == M_END) {
		fprintf(f, "{\"kind\": \"end_only_in_%s\", \"t\": %.9f, \"end_a\": ", r, pr->m_t / 1e9);
		nrr_json_strz(f, pr->a->end[0] ? pr->a->end : NULL);
		fputs(", \"end_b\": ", f);
		nrr_json_strz(f, pr->b->end[0] ? pr->b->end : NULL);
		fputc('}', f);
		return;
	}
	char *line = fail_line(pr), *what = NULL;
	size_t len = 0;
	FILE *w = open_memstream(&what, &len);
	if (w) {
		fail_what(w, pr);
		fclose(w);
	}
	fprintf(f, "{\"kind\": \"failure_only_in_%s\", \"thread\": %u, \"seq\": %llu, \"t\": %.9f, \"first_divergence\": %s, \"failure\": ",
		r, pr->m_thread, (unsigned long long)pr->mf.seq, pr->m_t / 1e9, pr->m_is_d ? "true" : "false");
	nrr_json_strz(f, what);
	fputs(", \"call\": ", f);
	nrr_json_strz(f, line);
	fputc('}', f);
	free(line);
	free(what);
}

/* ---------------------------------------------------------- config */

struct config {
	struct nrr_runinfo a, b;
	struct nrr_runinfo_change *ch;
	size_t n;
	bool have;
};

static int config_read(struct config *c, struct nrr_inputs *ia, struct nrr_inputs *ib)
{
	memset(c, 0, sizeof(*c));
	char err[512];
	if (nrr_runinfo_read(&c->a, ia->r, ia->n, err, sizeof(err))) {
		nrr_run_say(NRR_RUN_NOTE, "diff", "run A: %s", err);
		return -1;
	}
	if (nrr_runinfo_read(&c->b, ib->r, ib->n, err, sizeof(err))) {
		nrr_run_say(NRR_RUN_NOTE, "diff", "run B: %s", err);
		nrr_runinfo_free(&c->a);
		return -1;
	}
	c->n = nrr_runinfo_diff(&c->a, &c->b, &c->ch);
	if (c->n == (size_t)-1) {
		nrr_run_say(NRR_RUN_NOTE, "diff", "out of memory");
		nrr_runinfo_free(&c->a);
		nrr_runinfo_free(&c->b);
		return -1;
	}
	c->have = true;
	return 0;
}

static void config_free(struct config *c)
{
	if (c->have) {
		free(c->ch);
		nrr_runinfo_free(&c->a);
		nrr_runinfo_free(&c->b);
	}
}

static void config_text(FILE *f, const struct config *c)
{
	if (!c->have)
		return;
	if (!c->n) {
		fputs("Configuration: no difference\n", f);
		return;
	}
	fprintf(f, "Configuration: %zu difference%s\n", c->n, c->n > 1 ? "s" : "");
	for (size_t i = 0; i < c->n; i++) {
		const struct nrr_runinfo_change *x = &c->ch[i];
		if (x->rank < 0)
			fprintf(f, "  %s (every rank): ", x->key);
		else
			fprintf(f, "  %s (rank %d): ", x->key, x->rank);
		fputs("A ", f);
		if (x->a)
			fprintf(f, "'%s'", x->a);
		else
			fputs("absent", f);
		fputs(", B ", f);
		if (x->b)
			fprintf(f, "'%s'", x->b);
		else
			fputs("absent", f);
		fputc('\n', f);
	}
}

static void config_json(FILE *f, const struct config *c)
{
	fputs("\"config\": [", f);
	for (size_t i = 0; c->have && i < c->n; i++) {
		const struct nrr_runinfo_change *x = &c->ch[i];
		fputs(i ? ", {\"key\": " : "{\"key\": ", f);
		nrr_json_strz(f, x->key);
		if (x->rank < 0)
			fputs(", \"rank\": null", f);
		else
			fprintf(f, ", \"rank\": %d", x->rank);
		fputs(", \"a\": ", f);
		nrr_json_strz(f, x->a);
		fputs(", \"b\": ", f);
		nrr_json_strz(f, x->b);
		fputc('}', f);
	}
	fputs("]", f);
}

/* ---------------------------------------------------------- driver */

static bool touches_gpu(const struct proc *p)
{
	for (uint32_t k = 0; k < p->nstreams; k++)
		if (p->gpu[k])
			return true;
	return false;
}

static const char *proc_end(size_t i, void *arg, uint64_t *wall)
{
	const struct proc *p = (const struct proc *)arg + i;
	*wall = p->end_wall;
	return p->end;
}

static int procs_open(struct nrr_inputs *in, const char *api, struct proc **out)
{
	struct proc *ps = calloc(in->n + 1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	*out = ps;
	for (size_t i = 0; i < in->n; i++) {
		ps[i].api = api;
		if (proc_init(&ps[i], in, i))
			return -ENOMEM;
	}
	for (size_t i = 0; i < in->n; i++) {
		int rc = proc_scan(&ps[i]);
		if (rc)
			return rc;
	}
	uint64_t stop = nrr_job_stopped_at(in->n, proc_end, ps);
	for (size_t i = 0; i < in->n; i++)
		ps[i].stop = stop;
	/* a helper that carries a rank (a launcher's fork stub or wrapper
	 * with the rank's variables, which execs the rank or starts it) is
	 * no rank when another process of that rank touches CUDA, NVML,
	 * verbs or NCCL and it does not: paired by executable, as helpers */
	for (size_t i = 0; i < in->n; i++) {
		if (strncmp(ps[i].key, "exe=", 4) == 0 || touches_gpu(&ps[i]))
			continue;
		bool other = false;
		for (size_t j = 0; j < in->n && !other; j++)
			other = j != i && !strcmp(ps[j].key, ps[i].key) && touches_gpu(&ps[j]);
		if (!other)
			continue;
		const char *v = nrr_reader_meta(ps[i].r, "exe");
		char *k;
		if (asprintf(&k, "exe=%s", v ? base_name(v) : "?") < 0)
			return -ENOMEM;
		free(ps[i].key);
		ps[i].key = k;
		ps[i].rank = 0x7fffffffL;
	}
	return proc_keys(ps, in->n);
}

int nrr_diff_run(const struct nrr_diff_opts *o, struct nrr_inputs *ia, struct nrr_inputs *ib, FILE *out)
{
	struct ctx x = { .o = o, .ia = ia, .ib = ib };
	struct proc *pa = NULL, *pb = NULL;
	struct pair *pairs = NULL;
	size_t np = 0;
	int ret = -EINVAL;
	struct config cfg;
	if (config_read(&cfg, ia, ib))
		return -EINVAL;
	int prc = procs_open(ia, o->api, &pa);
	if (!prc)
		prc = procs_open(ib, o->api, &pb);
	if (prc || !(pairs = calloc(ia->n + ib->n + 1, sizeof(*pairs)))) {
		if (!prc || prc == -ENOMEM)
			nrr_run_say(NRR_RUN_NOTE, "diff", "out of memory");
		goto out;
	}
	bool *used = calloc(ib->n + 1, sizeof(*used));
	if (!used)
		goto out;
	for (size_t i = 0; i < ia->n; i++) {
		pairs[np].a = &pa[i];
		for (size_t j = 0; j < ib->n; j++) {
			if (!used[j] && strcmp(pa[i].key, pb[j].key) == 0) {
				used[j] = true;
				pairs[np].b = &pb[j];
				break;
			}
		}
		np++;
	}
	for (size_t j = 0; j < ib->n; j++)
		if (!used[j])
			pairs[np++].b = &pb[j];
	free(used);
	qsort(pairs, np, sizeof(*pairs), cmp_pair);

	size_t ndiv = 0, first = 0;
	uint64_t best = 0;
	for (size_t i = 0; i < np; i++) {
		if (diff_pair(&x, &pairs[i]))
			goto out;
		meaningful(&pairs[i]);
		struct divg *d = &pairs[i].d;
		if (!d->found && pairs[i].m == M_NONE)
			continue;
		ndiv++;
	}
	/* the headline: the earliest meaningful divergence of a rank, else
	 * of any process; else the earliest call divergence of a rank, else
	 * of any process */
	for (int pass = 0; pass < 4; pass++) {
		bool have = false;
		for (size_t i = 0; i < np; i++) {
			const struct proc *p = pairs[i].a ? pairs[i].a : pairs[i].b;
			if (pass % 2 == 0 && p->rank == 0x7fffffffL)
				continue;
			if (pass < 2 ? pairs[i].m == M_NONE : !pairs[i].d.found)
				continue;
			uint64_t when = pass < 2 ? pairs[i].m_t : when_of(&pairs[i].d);
			if (!have || when < best) {
				best = when;
				first = i;
				have = true;
			}
		}
		if (have)
			break;
	}
	bool differ = ndiv || cfg.n;
	if (o->json) {
		fputs("{\"a\": ", out);
		nrr_json_strz(out, ia->n ? nrr_reader_path(ia->r[0]) : NULL);
		fputs(", \"b\": ", out);
		nrr_json_strz(out, ib->n ? nrr_reader_path(ib->r[0]) : NULL);
		fprintf(out, ", \"same\": %s, ", differ ? "false" : "true");
		config_json(out, &cfg);
		fprintf(out, ", \"processes_a\": %zu, \"processes_b\": %zu, \"calls_compared\": %llu, \"divergences\": [",
			ia->n, ib->n, (unsigned long long)x.compared);
		const char *sep = "";
		for (size_t i = 0; i < np; i++) {
			if (!pairs[i].d.found && pairs[i].m == M_NONE)
				continue;
			struct lines L;
			lines_load(&pairs[i], &L);
			fputs(sep, out);
			json_pair(out, &pairs[i], &L);
			lines_free(&L);
			sep = ", ";
		}
		fputs("], \"headline\": ", out);
		char *hl = NULL;
		size_t hlen = 0;
		FILE *hf = ndiv ? open_memstream(&hl, &hlen) : NULL;
		if (hf) {
			text_headline(hf, &pairs[first]);
			fclose(hf);
			if (hl && hlen && hl[hlen - 1] == '\n')
				hl[hlen - 1] = 0;
		}
		nrr_json_strz(out, hl);
		free(hl);
		fputs(", \"earliest\": ", out);
		if (ndiv) {
			struct lines L;
			lines_load(&pairs[first], &L);
			json_pair(out, &pairs[first], &L);
			lines_free(&L);
		} else {
			fputs("null", out);
		}
		fputs("}\n", out);
	} else {
		config_text(out, &cfg);
		if (!ndiv) {
			fprintf(out, "Calls: %sno divergence%s (%zu processes in A, %zu in B, %llu calls compared)\n",
				nrr_color(out, NRR_COLOR_GOOD), nrr_color_end(out), ia->n, ib->n,
				(unsigned long long)x.compared);
		} else {
			fprintf(out, "Calls: %zu of %zu processes diverge; first divergence of each:\n", ndiv, np);
			for (size_t i = 0; i < np; i++) {
				if (!pairs[i].d.found && pairs[i].m == M_NONE)
					continue;
				if (pairs[i].d.found) {
					struct lines L;
					lines_load(&pairs[i], &L);
					text_pair(out, &pairs[i], &L);
					lines_free(&L);
				} else {
					fprintf(out, "%s: the same calls, but\n", (pairs[i].a ? pairs[i].a : pairs[i].b)->label);
				}
				text_meaningful(out, &pairs[i]);
			}
			text_headline(out, &pairs[first]);
		}
	}
	ret = differ ? 1 : 0;
out:
	for (size_t i = 0; pa && i < ia->n; i++)
		proc_free(&pa[i]);
	for (size_t i = 0; pb && i < ib->n; i++)
		proc_free(&pb[i]);
	free(pa);
	free(pb);
	for (size_t i = 0; pairs && i < np; i++)
		free(pairs[i].sa), free(pairs[i].sb);
	free(pairs);
	config_free(&cfg);
	return ret;
}
