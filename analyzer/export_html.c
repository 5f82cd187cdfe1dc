/* SPDX-License-Identifier: MIT */
/*
 * export_html.c - `ncclrr export --html`: one self-contained page (inline
 * CSS, SVG and script, no external reference): the run, a timeline of
 * every rank, a status table per rank and a diagnosis.
 *
 * The SVG reads without script.  The inline script (report.js, embedded
 * at build time) makes the timeline zoom and pan, shows a call's details
 * on hover and, from a failure clicked in the diagnosis, highlights its
 * chain: the failing call, the rank at the other end of the socket it
 * used last before failing (sock_info names both addresses; the rank
 * whose own address it is is the peer), and the WARN lines it logged.
 * The details come from a JSON block of bounded size: the lasting
 * failures, the calls in flight, and the last DETAIL_BEFORE calls before
 * (and DETAIL_AFTER after) the failure on at most MAXFOCUS failing rows
 * and their peers.
 *
 * Two passes over the merged calls: the first counts and finds errors,
 * in-flight calls and the end of the trace; the second draws.  Calls
 * shorter than a pixel are summed into one-pixel bins per row (coloured
 * by the domain that took most of the bin), so the SVG grows with rows x
 * width, not with the number of calls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "callfmt.h"
#include "export.h"
#include "runinfo.h"
#include "report_js.h"

#define PLOT_W 1100     /* px of the time axis */
#define LABEL_W 170
#define AXIS_H 28
#define NDOM 9

static const char *const dom_name[NDOM] = { "nccl", "cuda_driver", "cuda_runtime", "nvml", "verbs",
					    "socket", "net", "proxy", "other" };
static const char *const dom_color[NDOM] = { "#9c755f", "#4e79a7", "#76b7b2", "#59a14f", "#edc948",
					     "#b07aa1", "#bab0ac", "#f28e2b", "#888888" };
#define ERR_COLOR "#e00000"
#define MAXFOCUS 12      /* failing rows (and as many peers) with details */
#define DETAIL_BEFORE 160 /* calls kept per focused row up to its failure */
#define DETAIL_AFTER 40  /* and after it */
#define ADDR_MAX 112     /* socket address bytes compared (sockaddr_un fits) */
#define COMMON_ERR_COLOR "#f2a7a7"

static int dom_of(const nrr_call *c)
{
	const char *d = c->fn ? c->fn->domain : NULL;
	for (int i = 0; d && i < NDOM - 1; i++)
		if (!strcmp(d, dom_name[i]))
			return i;
	return NDOM - 1;
}

struct bin {
	long x;                 /* pixel, -1: none */
	uint64_t busy[NDOM];
	uint64_t n;             /* calls summed into it */
};

struct addr {
	uint8_t len;
	uint8_t b[ADDR_MAX];
};

/* a connected socket of a row, as its sock_info described it */
struct rsock {
	int64_t fd;
	struct addr peer;
};

/* an address a row's own end of a socket had: who owns it */
struct owner {
	struct addr a;
	size_t row;
};

/* a call kept for the hover details */
struct dcall {
	int64_t ts, dur;
	uint32_t tid;
	uint8_t depth, dom, failed;
	char name[64];
	char args[200];
	char res[80];
};

/* A kind of failure (API = result) and on how many processes it happened:
 * one seen on most ranks is a probe or a retry the program expects
 * (cuGetProcAddress of a missing symbol, connect before the peer listens);
 * the rare ones are what the diagnosis leads with. */
#define MAXSIG 512
#define ROWSIG 16
struct sig {
	char txt[200];
	size_t nrows;           /* distinct rows (processes) that had it */
	uint8_t *seen;          /* a bit per row: calls of the rows come
				 * interleaved in time, so a row is counted
				 * once by its bit (a "last row" counted it
				 * again after each other row: "106 of 17") */
};

struct rowerr {
	int sig;                /* index in html.sigs, -1: table full */
	const nrr_fn_schema *fn;
	bool recovered;         /* a later call of the same function succeeded */
	int64_t t;
	char txt[300];
	int nwarn;              /* NCCL WARN lines logged after it */
	int64_t warn_t[3];
	char warn[3][200];
	/* the socket its thread used last before it failed */
	struct addr peer;
	int64_t peer_fd, peer_t;
	char peer_fn[40];
	long peer_row;          /* the row owning @peer, -1: none found */
	long mark;              /* detail index of its mark, -1: none */
	int ndetail;            /* marks of its kind given details */
};

struct row {
	size_t reader;
	struct rowerr err[ROWSIG];
	int nerr;

	uint64_t calls, errors, warns;
	bool has_err;
	int64_t err_t;
	char err_txt[300];
	char last_txt[300];
	int64_t last_t;
	char infl[600];
	int ninfl;
	/* its first call in flight on a connected socket: whom it waits on
	 * (t, peer, peer_fd, peer_t, peer_fn, peer_row, mark) */
	struct rowerr wait;
	bool has_wait;

	struct rsock *socks;    /* connected sockets (last one per fd wins) */
	size_t nsocks, capsocks;
	struct {
		uint32_t tid;
		int64_t fd, t;
		char fn[40];
	} lastfd[8];            /* per thread: its last socket call */

	/* pass 2 */
	struct bin bin[2];
	long last_err_x;
	int last_err_sig;       /* lasting kind of the last mark drawn */
	const nrr_fn_schema *last_err_fn; /* and the last failure seen there */
	int64_t last_err_res;
	bool focus;             /* details kept around focus_t */
	int64_t focus_t;
	struct dcall *ring;     /* DETAIL_BEFORE before focus_t, then after */
	size_t nring, nafter;
};

struct html {
	struct nrr_inputs *in;
	struct nrr_export_proc *procs;
	struct row *rows;
	size_t *row_of;         /* reader -> row */
	size_t nrows;
	int64_t end;            /* ns since the start */
	struct nrr_sbuf sb;
	double scale;           /* px per ns */
	int rh;                 /* row height */
	FILE *layer[3];         /* depth 0, nested, errors + in flight */
	struct sig sigs[MAXSIG];
	int nsigs;
	uint64_t nrects;
	struct owner *owners;
	size_t nowners, capowners;
	FILE *detail;           /* the JSON array of the hover details, */
	struct nrr_jw djw;      /* written by this writer (a line an item) */
	long ndetail;
};

static void esc(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i]; i++) {
		switch (s[i]) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if ((unsigned char)s[i] < 0x20 && s[i] != '\n' && s[i] != '\t')
				fputc('?', f);
			else
				fputc(s[i], f);
		}
	}
}

static void escs(FILE *f, const char *s)
{
	esc(f, s, strlen(s));
}

static void fmt_t(char *b, size_t n, int64_t ns)
{
	double v = (double)ns;
	if (ns < 0)
		v = -v;
	if (v < 1e3)
		snprintf(b, n, "%s%.0f ns", ns < 0 ? "-" : "", v);
	else if (v < 1e6)
		snprintf(b, n, "%s%.3g us", ns < 0 ? "-" : "", v / 1e3);
	else if (v < 1e9)
		snprintf(b, n, "%s%.4g ms", ns < 0 ? "-" : "", v / 1e6);
	else
		snprintf(b, n, "%s%.4g s", ns < 0 ? "-" : "", v / 1e9);
}

/* Times come from the trace: arithmetic on them saturates (a chunk whose
 * first_ts is 2^63 once made the axis loop forever; nrr_inputs_time). */
static int64_t rel(struct html *h, size_t ri, uint64_t ts)
{
	return nrr_inputs_time(h->in, ri, ts);
}

/* @ts + @d, at most INT64_MAX */
static int64_t later(int64_t ts, uint64_t d)
{
	uint64_t room = ts < 0 ? (uint64_t)INT64_MAX + (uint64_t)-ts : (uint64_t)(INT64_MAX - ts);
	return d > room ? INT64_MAX : (int64_t)((uint64_t)ts + d);
}

/* "API = RESULT" of a call into @b. */
static void call_txt(struct html *h, const nrr_call *c, char *b, size_t n)
{
	nrr_sbuf_reset(&h->sb);
	fputs(c->fn->name, h->sb.f);
	if (c->done && c->fn->ret != NRR_RET_VOID) {
		fputs(" = ", h->sb.f);
		nrr_format_result(h->sb.f, c);
	}
	snprintf(b, n, "%s", nrr_sbuf_str(&h->sb, NULL));
}

/* ---------------------------------------------------------------- pass 1 */
static int sig_of(struct html *h, const char *txt, bool add)
{
	for (int i = 0; i < h->nsigs; i++)
		if (!strcmp(h->sigs[i].txt, txt))
			return i;
	if (!add || h->nsigs == MAXSIG)
		return -1;
	snprintf(h->sigs[h->nsigs].txt, sizeof(h->sigs[0].txt), "%s", txt);
	return h->nsigs++;
}

/* Whether failures of kind @sig are rare across processes. */
/* A failure the benign= rules of formats/api/ call one a healthy run has
 * too (a probe, a missing optional part, done already) is counted but is
 * drawn as a call, never a row's failure, as in the other exports; a refused
 * connect retried is judged by whether a later call got through
 * (recovered). */
static bool expected_failure(const nrr_call *c)
{
	const nrr_benign_rule *r = nrr_call_benign_rule(c);
	return r && strcmp(r->kind, "retry") != 0;
}

static bool notable(const struct html *h, int sig)
{
	size_t n = sig < 0 ? 1 : h->sigs[sig].nrows;
	return h->nrows < 3 || n * 2 <= h->nrows;
}

static const struct rsock *sock_of(const struct row *w, int64_t fd)
{
	for (size_t i = w->nsocks; i-- > 0;)
		if (w->socks[i].fd == fd)
			return &w->socks[i];
	return NULL;
}

static void set_addr(struct addr *a, const nrr_value *v)
{
	a->len = (uint8_t)(v->len > ADDR_MAX ? ADDR_MAX : v->len);
	memcpy(a->b, v->p, a->len);
}

/* Socket peers: sock_info of a connected socket (role connect or
 * accept) gives the row its fd -> peer address and the address of its
 * own end (whoever finds that address as its peer talks to this row);
 * any other socket call on a known fd is the thread's last socket call. */
static void note_sock(struct html *h, size_t row, const nrr_call *c, int64_t ts)
{
	struct row *w = &h->rows[row];
	const nrr_value *v, *loc, *peer;
	int64_t fd;
	bool isconn;
	if (!c->fn->domain || strcmp(c->fn->domain, "socket"))
		return;
	if (nrr_sock_conn(c, &fd, &loc, &peer, &isconn)) {
		if (!nrr_grow(&w->socks, w->nsocks, &w->capsocks, sizeof(*w->socks)))
			return;
		w->socks[w->nsocks].fd = fd;
		set_addr(&w->socks[w->nsocks++].peer, peer);
		/* (sorted once after pass 1: pick_focus) */
		if (!nrr_grow(&h->owners, h->nowners, &h->capowners, sizeof(*h->owners)))
			return;
		h->owners[h->nowners].row = row;
		set_addr(&h->owners[h->nowners++].a, loc);
		return;
	}
	if (nrr_call_role(c) == NRR_ROLE_SOCK_INFO || !(v = nrr_call_role_arg(c, NRR_ARG_FD)))
		return;
	/* calls that move data or wait for it, not the socket's upkeep */
	static const char *const upkeep[] = { "close", "shutdown", "setsockopt", "getsockopt", "fcntl",
					      "fcntl64", "getsockname", "getpeername" };
	for (size_t i = 0; i < sizeof(upkeep) / sizeof(upkeep[0]); i++)
		if (!strcmp(c->fn->name, upkeep[i]))
			return;
	if (!sock_of(w, (int64_t)v->u))
		return;
	int k = 0;
	while (k < 7 && w->lastfd[k].tid && w->lastfd[k].tid != c->tid)
		k++;
	w->lastfd[k].tid = c->tid;
	w->lastfd[k].fd = (int64_t)v->u;
	w->lastfd[k].t = ts;
	snprintf(w->lastfd[k].fn, sizeof(w->lastfd[k].fn), "%s", c->fn->name);
}

static void note_err(struct html *h, size_t row, const nrr_call *c, const char *txt, int64_t ts)
{
	const nrr_fn_schema *fn = c->fn;
	struct row *w = &h->rows[row];
	int s = sig_of(h, txt, true);
	struct sig *g = s >= 0 ? &h->sigs[s] : NULL;
	if (g && !g->seen)
		g->seen = calloc(h->nrows / 8 + 1, 1);
	if (g && g->seen && !(g->seen[row / 8] & (1u << (row % 8)))) {
		g->seen[row / 8] |= (uint8_t)(1u << (row % 8));
		g->nrows++;
	}
	for (int i = 0; i < w->nerr; i++)
		if (w->err[i].sig == s && s >= 0) {
			if (w->err[i].recovered) {
				/* failed again after a success: this one counts */
				w->err[i].recovered = false;
				w->err[i].t = ts;
				w->err[i].nwarn = 0;
			}
			return;
		}
	if (w->nerr == ROWSIG)
		return;
	w->err[w->nerr].fn = fn;
	w->err[w->nerr].nwarn = 0;
	w->err[w->nerr].recovered = false;
	w->err[w->nerr].sig = s;
	w->err[w->nerr].t = ts;
	snprintf(w->err[w->nerr].txt, sizeof(w->err[0].txt), "%s", txt);
	w->err[w->nerr].peer.len = 0;
	w->err[w->nerr].peer_row = -1;
	w->err[w->nerr].mark = -1;
	w->err[w->nerr].ndetail = 0;
	for (int k = 0; k < 8 && w->lastfd[k].tid; k++) {
		const struct rsock *so;
		if (w->lastfd[k].tid != c->tid || !(so = sock_of(w, w->lastfd[k].fd)))
			continue;
		struct rowerr *e = &w->err[w->nerr];
		e->peer = so->peer;
		e->peer_fd = w->lastfd[k].fd;
		e->peer_t = w->lastfd[k].t;
		snprintf(e->peer_fn, sizeof(e->peer_fn), "%s", w->lastfd[k].fn);
	}
	w->nerr++;
}

/* The row's earliest failure that it did not recover from (a later call
 * of the same function succeeding) and that is rare across processes. */
static const struct rowerr *first_notable(const struct html *h, const struct row *w)
{
	const struct rowerr *best = NULL;
	for (int i = 0; i < w->nerr; i++)
		if (!w->err[i].recovered && notable(h, w->err[i].sig) && (!best || w->err[i].t < best->t))
			best = &w->err[i];
	return best;
}

/* Whether failure kind @sig matters on some row (listed in the chain). */
static bool sig_leads(const struct html *h, int sig)
{
	if (!notable(h, sig))
		return false;
	for (size_t r = 0; r < h->nrows; r++)
		for (int i = 0; i < h->rows[r].nerr; i++)
			if (h->rows[r].err[i].sig == sig && !h->rows[r].err[i].recovered)
				return true;
	return false;
}

static void scan(struct html *h, size_t ri, const nrr_call *c)
{
	struct row *w = &h->rows[h->row_of[ri]];
	int64_t key = rel(h, ri, nrr_call_key(c));
	if (key > h->end)
		h->end = key;
	if (c->kind == NRR_CALL_LOG) {
		uint32_t n = c->log_len;
		while (n && (c->log[n - 1] == '\n' || c->log[n - 1] == '\r'))
			n--;
		if (!memmem(c->log, n, "WARN", 4))
			return;
		w->warns++;
		for (int i = 0; i < w->nerr; i++) {
			struct rowerr *e = &w->err[i];
			if (e->recovered || e->nwarn == 3 || key < e->t)
				continue;
			e->warn_t[e->nwarn] = key;
			snprintf(e->warn[e->nwarn++], sizeof(e->warn[0]), "%.*s", (int)(n > 190 ? 190 : n), c->log);
		}
		return;
	}
	if (c->phase == NRR_PHASE_ENTER || !c->fn)
		return;
	char t[40];
	if (c->phase == NRR_PHASE_INFLIGHT) {
		int64_t ts = rel(h, ri, c->ts);
		size_t l = strlen(w->infl);
		fmt_t(t, sizeof(t), ts);
		if (w->ninfl < 4 && l < sizeof(w->infl) - 1)
			snprintf(w->infl + l, sizeof(w->infl) - l, "%s%s (since %s)", l ? "; " : "", c->fn->name, t);
		else if (w->ninfl == 4 && l < sizeof(w->infl) - 8)
			snprintf(w->infl + l, sizeof(w->infl) - l, "; ...");
		const nrr_value *v;
		const struct rsock *so;
		if (!w->has_wait && c->fn->domain && !strcmp(c->fn->domain, "socket") &&
		    (v = nrr_call_role_arg(c, NRR_ARG_FD)) &&
		    (so = sock_of(w, (int64_t)v->u))) {
			w->has_wait = true;
			w->wait.t = w->wait.peer_t = ts;
			w->wait.peer = so->peer;
			w->wait.peer_fd = (int64_t)v->u;
			w->wait.peer_row = w->wait.mark = -1;
			snprintf(w->wait.peer_fn, sizeof(w->wait.peer_fn), "%s", c->fn->name);
		}
		w->ninfl++;
		w->calls++;
		return;
	}
	w->calls++;
	int64_t ts = rel(h, ri, c->ts), end = later(later(ts, c->dur), c->repeat_ns);
	if (end > h->end)
		h->end = end;
	note_sock(h, h->row_of[ri], c, ts);
	if (end >= w->last_t) {
		w->last_t = end;
		call_txt(h, c, w->last_txt, sizeof(w->last_txt));
	}
	if (nrr_call_failed(c) && expected_failure(c)) {
		w->errors++;   /* counted, never the failure of the row */
	} else if (nrr_call_failed(c)) {
		w->errors++;
		char txt[300];
		call_txt(h, c, txt, sizeof(txt));
		/* a failure counts from when it was returned: an enclosing
		 * call fails after the nested call that made it fail */
		if (!w->has_err || end < w->err_t) {
			w->has_err = true;
			w->err_t = end;
			snprintf(w->err_txt, sizeof(w->err_txt), "%s", txt);
		}
		note_err(h, h->row_of[ri], c, txt, end);
	} else {
		for (int i = 0; i < w->nerr; i++)
			if (w->err[i].fn == c->fn)
				w->err[i].recovered = true;
	}
}

/* After pass 1: the row that owns each failure's peer address, and the
 * rows whose calls are kept for the details: the MAXFOCUS earliest
 * failing rows around their failure, their peers around the last socket
 * call the failing thread made to them. */
static int cmp_focus(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] > y[1]) - (x[1] < y[1]);
}

static int cmp_addr(const void *a, const void *b)
{
	const struct addr *x = a, *y = b;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(x->b, y->b, x->len);
}

/* The row (not @r) whose own end of a socket had @e's peer address. */
static void resolve_peer(struct html *h, size_t r, struct rowerr *e)
{
	const struct owner *o = e->peer.len && h->nowners ?
		bsearch(&e->peer, h->owners, h->nowners, sizeof(*h->owners), cmp_addr) : NULL;
	/* an address seen on two rows (a port used again) names no one: the
	 * first and the last of its run must agree */
	const struct owner *lo = o, *hi = o;
	while (lo && lo > h->owners && !cmp_addr(&lo[-1].a, &o->a))
		lo--;
	while (hi && hi < h->owners + h->nowners - 1 && !cmp_addr(&hi[1].a, &o->a))
		hi++;
	bool one = o != NULL;
	for (const struct owner *k = lo; one && k <= hi; k++)
		one = k->row == o->row;
	if (one && o->row != r)
		e->peer_row = (long)o->row;
}

static void pick_focus(struct html *h)
{
	int64_t(*f)[2] = calloc(h->nrows + 1, sizeof(*f));
	size_t n = 0;
	if (h->nowners)
		qsort(h->owners, h->nowners, sizeof(*h->owners), cmp_addr);
	for (size_t r = 0; r < h->nrows; r++) {
		struct row *w = &h->rows[r];
		for (int i = 0; i < w->nerr; i++)
			resolve_peer(h, r, &w->err[i]);
		if (w->has_wait)
			resolve_peer(h, r, &w->wait);
		const struct rowerr *e = first_notable(h, w);
		if (e && f) {
			f[n][0] = e->t;
			f[n++][1] = (int64_t)r;
		}
	}
	if (!f)
		return;
	qsort(f, n, sizeof(*f), cmp_focus);
	for (size_t i = 0; i < n && i < MAXFOCUS; i++) {
		struct row *w = &h->rows[f[i][1]];
		const struct rowerr *e = first_notable(h, w);
		w->focus = true;
		w->focus_t = e->t;
		if (e->peer_row >= 0 && !h->rows[e->peer_row].focus) {
			h->rows[e->peer_row].focus = true;
			h->rows[e->peer_row].focus_t = e->peer_t;
		}
	}
	for (size_t r = 0; r < h->nrows; r++)
		if (h->rows[r].focus && !(h->rows[r].ring = calloc(DETAIL_BEFORE + DETAIL_AFTER, sizeof(struct dcall))))
			h->rows[r].focus = false;
	free(f);
}

/* ---------------------------------------------------------------- pass 2 */
static void make_dcall(struct html *h, const nrr_call *c, int64_t ts, int64_t dur, struct dcall *d)
{
	d->ts = ts;
	d->dur = dur;
	d->tid = c->tid;
	d->depth = c->depth;
	d->dom = (uint8_t)dom_of(c);
	d->failed = c->done && nrr_call_failed(c);
	snprintf(d->name, sizeof(d->name), "%s", c->fn->name);
	nrr_sbuf_reset(&h->sb);
	nrr_format_args(h->sb.f, c);
	snprintf(d->args, sizeof(d->args), "%s", nrr_sbuf_str(&h->sb, NULL));
	d->res[0] = 0;
	if (!c->done) {
		snprintf(d->res, sizeof(d->res), "(in flight at the end)");
	} else if (c->fn->ret != NRR_RET_VOID) {
		nrr_sbuf_reset(&h->sb);
		nrr_format_result(h->sb.f, c);
		snprintf(d->res, sizeof(d->res), "%s", nrr_sbuf_str(&h->sb, NULL));
	}
	if (c->repeat) {
		size_t l = strlen(d->res);
		snprintf(d->res + l, sizeof(d->res) - l, " (and %llu more times)", (unsigned long long)c->repeat);
	}
}

/* One item of the details array (row, tid, start, duration, depth,
 * domain, failed, name, args, result); @return its index. */
static long put_detail(struct html *h, size_t row, const struct dcall *d)
{
	/* (a line each: the array is copied in as the data's "calls") */
	struct nrr_jw *w = &h->djw;
	if (h->ndetail)
		nrr_jw_break(w);
	nrr_jw_arr(w, false);
	nrr_jw_uint(w, row);
	nrr_jw_uint(w, d->tid);
	nrr_jw_int(w, d->ts);
	nrr_jw_int(w, d->dur);
	nrr_jw_uint(w, d->depth);
	nrr_jw_uint(w, d->dom);
	nrr_jw_uint(w, d->failed);
	nrr_jw_str(w, d->name);
	nrr_jw_str(w, d->args);
	nrr_jw_str(w, d->res);
	nrr_jw_end(w);
	return h->ndetail++;
}

/* Keep @c in its focused row's ring: the last DETAIL_BEFORE calls that
 * started by focus_t, then DETAIL_AFTER more. */
static void keep_detail(struct html *h, struct row *w, const nrr_call *c, int64_t ts, int64_t end)
{
	struct dcall *d;
	if (ts <= w->focus_t)
		d = &w->ring[w->nring++ % DETAIL_BEFORE];
	else if (w->nafter < DETAIL_AFTER)
		d = &w->ring[DETAIL_BEFORE + w->nafter++];
	else
		return;
	make_dcall(h, c, ts, end - ts, d);
}

static void put_rings(struct html *h)
{
	for (size_t r = 0; r < h->nrows; r++) {
		struct row *w = &h->rows[r];
		if (!w->focus)
			continue;
		size_t n = w->nring < DETAIL_BEFORE ? w->nring : DETAIL_BEFORE;
		size_t first = w->nring < DETAIL_BEFORE ? 0 : w->nring % DETAIL_BEFORE;
		for (size_t i = 0; i < n; i++)
			put_detail(h, r, &w->ring[(first + i) % DETAIL_BEFORE]);
		for (size_t i = 0; i < w->nafter; i++)
			put_detail(h, r, &w->ring[DETAIL_BEFORE + i]);
	}
}

static double row_y(struct html *h, size_t row)
{
	return AXIS_H + (double)row * h->rh;
}

static void flush_bin(struct html *h, size_t row, int layer)
{
	struct bin *b = &h->rows[row].bin[layer];
	if (b->x < 0)
		return;
	int best = 0;
	uint64_t tot = 0;
	for (int i = 0; i < NDOM; i++) {
		tot += b->busy[i];
		if (b->busy[i] > b->busy[best])
			best = i;
	}
	double y = row_y(h, row), hh = h->rh;
	if (layer) {
		y += h->rh * 0.45;
		hh = h->rh * 0.55;
	}
	/* class b: a pixel's sum, faded by the script when zoomed in */
	fprintf(h->layer[layer], "<rect class=\"b\" x=\"%ld\" y=\"%.1f\" width=\"1\" height=\"%.1f\" fill=\"%s\"/>\n",
		LABEL_W + b->x, y, hh, dom_color[best]);
	h->nrects++;
	(void)tot;
	memset(b->busy, 0, sizeof(b->busy));
	b->x = -1;
}

static void draw(struct html *h, size_t ri, const nrr_call *c)
{
	if (c->kind != NRR_CALL || c->phase == NRR_PHASE_ENTER || !c->fn)
		return;
	size_t row = h->row_of[ri];
	struct row *w = &h->rows[row];
	int64_t ts = rel(h, ri, c->ts);
	int64_t end = c->phase == NRR_PHASE_INFLIGHT ? h->end : later(later(ts, c->dur), c->repeat_ns);
	double x0 = (double)ts * h->scale, x1 = (double)end * h->scale;
	if (x0 < 0)
		x0 = 0;
	if (x1 > PLOT_W)
		x1 = PLOT_W;
	int d = dom_of(c);
	double y = row_y(h, row);
	char tb[40];
	struct dcall dc;
	if (c->phase == NRR_PHASE_INFLIGHT) {
		fmt_t(tb, sizeof(tb), ts);
		make_dcall(h, c, ts, end - ts, &dc);
		long k = put_detail(h, row, &dc);
		if (w->has_wait && w->wait.mark < 0 && ts == w->wait.t && !strcmp(c->fn->name, w->wait.peer_fn))
			w->wait.mark = k;
		fprintf(h->layer[2],
			"<rect class=\"inflight\" data-c=\"%ld\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"url(#hatch)\" stroke=\"#333\" stroke-width=\"1\"><title>",
			k, LABEL_W + x0, y + 0.5, x1 - x0 < 2 ? 2 : x1 - x0, h->rh > 2 ? h->rh - 1 : 1);
		esc(h->layer[2], h->procs[ri].name, sizeof(h->procs[ri].name));
		fputs(": ", h->layer[2]);
		escs(h->layer[2], c->fn->name);
		fprintf(h->layer[2], " in flight at the end (since %s)</title></rect>\n", tb);
		h->nrects++;
		return;
	}
	if (w->focus)
		keep_detail(h, w, c, ts, end);
	if (nrr_call_failed(c) && !expected_failure(c)) {
		long px = (long)x0;
		char txt[300];
		/* the same failure again in the pixel (a retry loop): marked */
		if (px == w->last_err_x && c->fn == w->last_err_fn && c->result == w->last_err_res)
			return;
		w->last_err_fn = c->fn;
		w->last_err_res = c->result;
		call_txt(h, c, txt, sizeof(txt));
		int sg = sig_of(h, txt, false);
		bool rare = false;
		struct rowerr *re = NULL;
		for (int i = 0; i < w->nerr; i++)
			if (w->err[i].sig == sg && sg >= 0) {
				rare = !w->err[i].recovered && notable(h, sg);
				re = &w->err[i];
			}
		/* a mark per pixel, and one per lasting kind of failure in it
		 * (a nested call failing makes its callers fail in the same
		 * pixel: each is a step of the chain) */
		if (px != w->last_err_x || (rare && sg != w->last_err_sig)) {
			w->last_err_x = px;
			w->last_err_sig = rare ? sg : -1;
			fmt_t(tb, sizeof(tb), ts);
			FILE *lf = h->layer[rare ? 2 : 1];
			fprintf(lf, "<rect class=\"%s\"", rare ? "error" : "error-common");
			if (rare && re && re->mark < 0 && (re->t == end || re->ndetail < 4)) {
				/* the lasting failures: in the details (the one
				 * the diagnosis lists, found by its index, and a
				 * few before it; a retry loop's later marks, one
				 * a pixel, keep their title only) */
				make_dcall(h, c, ts, end - ts, &dc);
				long k = put_detail(h, row, &dc);
				fprintf(lf, " data-c=\"%ld\"", k);
				re->ndetail++;
				if (re->t == end)
					re->mark = k;
			}
			fprintf(lf, " x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>", LABEL_W + x0, y,
				x1 - x0 < 3 ? 3 : x1 - x0, h->rh, rare ? ERR_COLOR : COMMON_ERR_COLOR);
			esc(lf, h->procs[ri].name, sizeof(h->procs[ri].name));
			fputs(": ", lf);
			escs(lf, txt);
			fprintf(lf, " at %s%s</title></rect>\n", tb, rare ? "" : " (recovered, or fails like this on most ranks)");
			h->nrects++;
		}
		return;
	}
	int layer = c->depth ? 1 : 0;
	double ly = y, lh = h->rh;
	if (layer) {
		ly += h->rh * 0.45;
		lh = h->rh * 0.55;
	}
	if (x1 - x0 >= 1.0) {
		fprintf(h->layer[layer], "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">",
			LABEL_W + x0, ly, x1 - x0, lh, dom_color[d]);
		if (x1 - x0 >= 4) {
			fmt_t(tb, sizeof(tb), end - ts);
			fputs("<title>", h->layer[layer]);
			escs(h->layer[layer], c->fn->name);
			fprintf(h->layer[layer], " %s</title>", tb);
		}
		fputs("</rect>\n", h->layer[layer]);
		h->nrects++;
		return;
	}
	struct bin *b = &w->bin[layer];
	long px = (long)x0;
	if (px >= PLOT_W)
		px = PLOT_W - 1;
	if (b->x >= 0 && px < b->x) {
		/* an enclosing call delivered at its end: its own pixel */
		fprintf(h->layer[layer], "<rect class=\"b\" x=\"%ld\" y=\"%.1f\" width=\"1\" height=\"%.1f\" fill=\"%s\"/>\n",
			LABEL_W + px, ly, lh, dom_color[d]);
		h->nrects++;
		return;
	}
	if (px != b->x)
		flush_bin(h, row, layer);
	b->x = px;
	b->busy[d] += c->dur + c->repeat_ns + 1;
}

/* ---------------------------------------------------------------- page */
static const char css[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#222;background:#fff}"
	"h1{font-size:20px;margin:0 0 8px}h2{font-size:17px;margin:20px 0 6px}"
	"dl.run{display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:0}"
	"dl.run dt{font-weight:600}dl.run dd{margin:0;font-family:monospace}"
	"table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}"
	"th{background:#f0f0f0}tr.err td{background:#fde8e8}td.num{text-align:right}"
	"td.mono,pre{font-family:monospace}.legend span{display:inline-block;margin-right:14px}"
	".sw{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle;border:1px solid #666}"
	"ol.chain li{margin-bottom:6px}.warn{color:#8a4b00;font-family:monospace;margin-left:18px}"
	"svg text{font:11px monospace;fill:#222}"
	/* the script's controls, tooltip and chain highlight */
	".tl-ctl{margin:4px 0;font-size:13px}.tl-ctl button{min-width:28px;margin-right:4px}"
	"#tl-range{margin-left:10px;font-family:monospace}svg.timeline{cursor:grab;user-select:none}"
	"#tl-tip{position:fixed;display:none;max-width:560px;background:#fffff0;border:1px solid #888;padding:4px 8px;"
	"font:12px/1.35 monospace;white-space:pre-wrap;pointer-events:none;box-shadow:2px 2px 6px #0004;z-index:9}"
	"li[data-chain]{cursor:pointer}li.active{outline:2px solid #e00000;outline-offset:2px}"
	"li.active .warn{background:#fff0b0}.peer{color:#225;font-size:13px;margin-left:18px}"
	"g.tl-row.chain-row>rect{fill:#ffd6d6}g.tl-row.chain-peer>rect{fill:#d6e4ff}"
	"rect.chain-call{stroke:#000;stroke-width:2}svg.zoomed rect.b{opacity:.3}";

static void put_header(struct html *h, FILE *f)
{
	struct nrr_inputs *in = h->in;
	char buf[64], dur[40];
	time_t s = (time_t)(in->base_wall / 1000000000ull);
	struct tm tm;
	gmtime_r(&s, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
	fmt_t(dur, sizeof(dur), h->end);
	const char *cmd = NULL, *ver = NULL, *v;
	char cmdb[1024] = "", verb[128] = "";
	size_t nranked = 0;
	long lo = -1, hi = -1;
	for (size_t i = 0; i < in->n; i++) {
		if (!cmd && !h->procs[i].ranked && (v = in->proc[i].argv))
			cmd = strncpy(cmdb, v, sizeof(cmdb) - 1);
		if (!ver && (v = in->proc[i].nccl_version))
			ver = strncpy(verb, v, sizeof(verb) - 1);
		if (h->procs[i].ranked) {
			nranked++;
			if (lo < 0 || h->procs[i].rank < lo)
				lo = h->procs[i].rank;
			if (h->procs[i].rank > hi)
				hi = h->procs[i].rank;
		}
	}
	for (size_t i = 0; i < in->n && !cmd; i++)
		if ((v = in->proc[i].argv))
			cmd = strncpy(cmdb, v, sizeof(cmdb) - 1);
	fputs("<h1>ncclrr report</h1>\n<dl class=\"run\">\n<dt>hosts</dt><dd>", f);
	/* as the job saw them: `ncclrr run`'s virtual hosts (NCCL_HOSTID), not
	 * the one machine they ran on ("vm (1)" for two virtual hosts) */
	size_t nh = 0;
	char machine[256] = "";
	bool virt = false;
	for (size_t i = 0; i < in->n && !virt; i++)
		virt = nrr_reader_meta(in->r[i], "env.NCCL_HOSTID") != NULL;
	for (size_t i = 0; i < in->n; i++) {
		char host[256];
		/* with virtual hosts, a process that has none (the launcher)
		 * ran on the machine, which is named apart */
		if (virt && !nrr_reader_meta(in->r[i], "env.NCCL_HOSTID"))
			continue;
		if (!(v = nrr_runinfo_host(in->r[i])))
			continue;
		snprintf(host, sizeof(host), "%s", v);
		if ((v = nrr_reader_meta(in->r[i], "host")) && virt)
			snprintf(machine, sizeof(machine), "%s", v);
		bool seen = false;
		for (size_t j = 0; j < i; j++) {
			const char *o = nrr_runinfo_host(in->r[j]);
			if (o && !strcmp(o, host))
				seen = true;
		}
		if (seen)
			continue;
		if (nh < 8) {
			fputs(nh ? ", " : "", f);
			escs(f, host);
		}
		nh++;
	}
	if (nh > 8)
		fprintf(f, " (+%zu more)", nh - 8);
	if (virt) {
		fprintf(f, " (%zu virtual host%s%s", nh, nh == 1 ? "" : "s", machine[0] ? " on " : "");
		escs(f, machine);
		fputs(")", f);
	} else {
		fprintf(f, " (%zu)", nh);
	}
	fprintf(f, "</dd>\n<dt>ranks</dt><dd>%zu", nranked);
	if (nranked)
		fprintf(f, " (%ld-%ld)", lo, hi);
	fprintf(f, ", %zu traced processes</dd>\n<dt>nccl_version</dt><dd>", in->n);
	escs(f, ver ? ver : "(not recorded)");
	fputs("</dd>\n<dt>command</dt><dd>", f);
	escs(f, cmd ? cmd : "(not recorded)");
	fprintf(f, "</dd>\n<dt>start</dt><dd>%s</dd>\n<dt>duration</dt><dd>%s</dd>\n</dl>\n", buf, dur);
}

static void put_axis(struct html *h, FILE *f)
{
	/* a tick step of 1, 2 or 5 x 10^k ns giving at most 10 ticks */
	int64_t step = 1, limit = h->end / 10;   /* (no product that overflows) */
	static const int mul[3] = { 2, 5, 10 };
	for (int64_t base = 1; step < limit; base *= 10)
		for (int i = 0; i < 3 && step < limit; i++)
			step = base * mul[i];
	double bottom = row_y(h, h->nrows);
	for (int64_t k = 0, n = h->end / step; k <= n; k++) {
		int64_t t = k * step;
		double x = LABEL_W + (double)t * h->scale;
		char b[40];
		fmt_t(b, sizeof(b), t);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>"
			   "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
			x, AXIS_H - 6, x, bottom, x, AXIS_H - 10, b);
	}
}

/* A row label that fits the label column (22 characters): the name up
 * to its " (host:pid)" part, else cut at a word with an ellipsis; the
 * row's title keeps the whole name ("ncclrr run launcher (v" was cut in
 * the middle of a word) */
#define LABEL_CHARS 22
static void put_short_label(FILE *f, const char *name)
{
	size_t n = strlen(name);
	const char *paren = strstr(name, " (");
	if (paren && (size_t)(paren - name) <= LABEL_CHARS)
		n = (size_t)(paren - name);
	if (n <= LABEL_CHARS) {
		esc(f, name, n);
		return;
	}
	size_t cut = LABEL_CHARS - 1;
	while (cut > LABEL_CHARS / 2 && name[cut] != ' ')
		cut--;
	if (name[cut] != ' ')
		cut = LABEL_CHARS - 1;
	esc(f, name, cut);
	fputs("\u2026", f);
}

static void put_labels(struct html *h, FILE *f)
{
	/* label every row when there is room, else every k-th */
	size_t every = h->rh >= 10 ? 1 : (size_t)(12 / h->rh + 1);
	for (size_t r = 0; r < h->nrows; r++) {
		size_t ri = h->rows[r].reader;
		double y = row_y(h, r);
		fprintf(f, "<g class=\"tl-row\"%s", h->procs[ri].ranked ? " data-rank=\"" : "");
		if (h->procs[ri].ranked)
			fprintf(f, "%ld\"", h->procs[ri].rank);
		fprintf(f, " data-row=\"%zu\"><rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"%s\"/>", r, LABEL_W, y, PLOT_W, h->rh,
			r % 2 ? "#f7f7f7" : "#ffffff");
		if (r % every == 0) {
			fprintf(f, "<text x=\"4\" y=\"%.1f\">", y + (h->rh < 12 ? h->rh : 12) - 1);
			if (h->procs[ri].ranked)
				fprintf(f, "rank %ld", h->procs[ri].rank);
			else
				put_short_label(f, h->procs[ri].name);
			fputs("</text>", f);
		}
		fputs("<title>", f);
		escs(f, h->procs[ri].name);
		fputs("</title></g>\n", f);
	}
}

static void put_legend(FILE *f)
{
	fputs("<p class=\"legend\">", f);
	for (int i = 0; i < NDOM; i++)
		fprintf(f, "<span><i class=\"sw\" style=\"background:%s\"></i>%s</span>", dom_color[i], dom_name[i]);
	fputs("<span><i class=\"sw\" style=\"background:" ERR_COLOR "\"></i>failed call</span>"
	      "<span><i class=\"sw\" style=\"background:" COMMON_ERR_COLOR "\"></i>failure recovered from or common to most ranks</span>"
	      "<span><svg width=\"14\" height=\"14\"><rect x=\"1\" y=\"1\" width=\"12\" height=\"12\" fill=\"url(#hatch)\" stroke=\"#333\"/></svg> in flight at the end</span>"
	      "</p>\n", f);
}

static void put_table(struct html *h, FILE *f)
{
	fputs("<h2>Ranks</h2>\n<table class=\"status\">\n<thead><tr><th>rank</th><th>host:pid</th><th>calls</th>"
	      "<th>errors</th><th>first error</th><th>last call</th><th>in flight at end</th></tr></thead>\n<tbody>\n", f);
	for (size_t r = 0; r < h->nrows; r++) {
		struct row *w = &h->rows[r];
		size_t ri = w->reader;
		char t[40];
		fprintf(f, "<tr class=\"rank-row%s\" id=\"row-%ld\"><td>", first_notable(h, w) ? " err" : "", h->procs[ri].pid);
		if (h->procs[ri].ranked)
			fprintf(f, "%ld", h->procs[ri].rank);
		else
			fputs("-", f);
		fputs("</td><td class=\"mono\">", f);
		escs(f, h->in->who[ri]);
		fprintf(f, "</td><td class=\"num\">%llu</td><td class=\"num\">%llu</td><td class=\"mono\">",
			(unsigned long long)w->calls, (unsigned long long)w->errors);
		const struct rowerr *ne = first_notable(h, w);
		if (ne) {
			fmt_t(t, sizeof(t), ne->t);
			escs(f, ne->txt);
			fprintf(f, " at %s", t);
		} else if (w->has_err) {
			fmt_t(t, sizeof(t), w->err_t);
			escs(f, w->err_txt);
			fprintf(f, " at %s (recovered, or common to most ranks)", t);
		}
		fputs("</td><td class=\"mono\">", f);
		if (w->last_txt[0]) {
			fmt_t(t, sizeof(t), w->last_t);
			escs(f, w->last_txt);
			fprintf(f, " (ends %s)", t);
		}
		fputs("</td><td class=\"mono\">", f);
		escs(f, w->infl);
		fputs("</td></tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
}

/* Item @n of the script's chain array for @e on @row, left open at its
 * warn array (the caller closes both), and the line naming the socket
 * peer (@how: what the socket call was to the failure). */
static void put_link(struct html *h, FILE *f, struct nrr_jw *cj, size_t n, size_t row, const struct rowerr *e,
		     const char *how)
{
	char t[40];
	if (n)
		nrr_jw_break(cj);   /* an item a line */
	nrr_jw_obj(cj, false);
	nrr_jw_kuint(cj, "row", row);
	nrr_jw_kint(cj, "t", e->t);
	nrr_jw_kint(cj, "c", e->mark);
	nrr_jw_kint(cj, "peer", e->peer.len ? e->peer_row : -1);
	nrr_jw_kint(cj, "pt", e->peer.len ? e->peer_t : e->t);
	nrr_jw_key(cj, "warn");
	nrr_jw_arr(cj, false);
	if (!e->peer.len)
		return;
	fmt_t(t, sizeof(t), e->peer_t);
	fprintf(f, "<div class=\"peer\">%s: %s on fd %lld at %s, ", how, e->peer_fn, (long long)e->peer_fd, t);
	if (e->peer_row >= 0) {
		fputs("peer <b>", f);
		escs(f, h->procs[h->rows[e->peer_row].reader].name);
		fputs("</b></div>", f);
	} else {
		fputs("a peer outside these traces</div>", f);
	}
}

struct noted {
	const struct row *w;
	const struct rowerr *e;
	int64_t next;           /* time of the row's next listed failure */
};

static int cmp_err(const void *a, const void *b)
{
	const struct noted *x = a, *y = b;
	return x->e->t < y->e->t ? -1 : x->e->t > y->e->t;
}

static bool lasting(const struct html *h, const struct rowerr *e)
{
	return !e->recovered && notable(h, e->sig);
}

/*
 * The diagnosis.  Today: the earliest failing call of each rank in time
 * order (with the NCCL WARN lines that rank logged after it) and the calls
 * in flight at the end.  @extra adds another analysis (e.g. the hang
 * wait-for graph): a title, preformatted text and an inline SVG.  The
 * listed failures go to @cj too, as the items of the script's chain
 * array (in the order of the list's data-chain indices).
 */
static void html_diagnosis(FILE *f, struct nrr_jw *cj, struct nrr_inputs *in, struct html *h,
			   const struct nrr_html_extra *extra)
{
	fputs("<h2>Diagnosis</h2>\n<section class=\"diagnosis\">\n", f);
	size_t nerr = 0, ninfl = 0, nrowerr = 0;
	/* every failure that matters (not recovered from, rare across
	 * processes) of every row, in the order they were returned */
	struct noted *e = calloc(h->nrows * ROWSIG + 1, sizeof(*e));
	for (size_t r = 0; r < h->nrows; r++) {
		const struct row *w = &h->rows[r];
		if (first_notable(h, w))
			nrowerr++;
		for (int i = 0; i < w->nerr && e; i++)
			if (lasting(h, &w->err[i]))
				e[nerr++] = (struct noted){ w, &w->err[i], INT64_MAX };
		if (w->ninfl)
			ninfl++;
	}
	if (nerr && e) {
		qsort(e, nerr, sizeof(*e), cmp_err);
		for (size_t i = 0; i < nerr; i++)
			for (size_t j = i + 1; j < nerr; j++)
				if (e[j].w == e[i].w) {
					e[i].next = e[j].e->t;
					break;
				}
		fprintf(f, "<h3>Failing calls, earliest first (%zu processes of %zu)</h3>\n<ol class=\"chain\">\n", nrowerr,
			in->n);
		for (size_t i = 0; i < nerr && i < 30; i++) {
			char t[40];
			const struct row *w = e[i].w;
			size_t ri = w->reader;
			const struct rowerr *re = e[i].e;
			fmt_t(t, sizeof(t), re->t);
			fprintf(f, "<li data-chain=\"%zu\">%s: <b>", i, t);
			escs(f, h->procs[ri].name);
			fputs("</b>: <code>", f);
			escs(f, re->txt);
			fputs("</code>", f);
			put_link(h, f, cj, i, (size_t)(w - h->rows), re, "its thread's last socket call before");
			int shown = 0;
			for (int k = 0; k < re->nwarn && shown < 3; k++) {
				if (re->warn_t[k] >= e[i].next)
					continue;
				nrr_jw_arr(cj, false);
				nrr_jw_int(cj, re->warn_t[k]);
				nrr_jw_str(cj, re->warn[k]);
				nrr_jw_end(cj);
				shown++;
				fputs("<div class=\"warn\">", f);
				escs(f, re->warn[k]);
				fputs("</div>", f);
			}
			nrr_jw_end(cj);   /* warn */
			nrr_jw_end(cj);
			fputs("</li>\n", f);
		}
		if (nerr > 30)
			fprintf(f, "<li>... and %zu more failing calls (see the table)</li>\n", nerr - 30);
		fputs("</ol>\n", f);
	}
	if (ninfl) {
		/* each waiting on a socket peer: a chain too, after the failures' */
		size_t nchain = nerr < 30 ? nerr : 30;
		fprintf(f, "<h3>Calls in flight at the end (%zu processes)</h3>\n<ul class=\"inflight\">\n", ninfl);
		size_t k = 0;
		for (size_t r = 0; r < h->nrows && k < 20; r++) {
			const struct row *w = &h->rows[r];
			if (!w->ninfl)
				continue;
			k++;
			if (w->has_wait)
				fprintf(f, "<li data-chain=\"%zu\"><b>", nchain);
			else
				fputs("<li><b>", f);
			escs(f, h->procs[w->reader].name);
			fputs("</b>: <code>", f);
			escs(f, w->infl);
			fputs("</code>", f);
			if (w->has_wait) {
				put_link(h, f, cj, nchain++, r, &w->wait, "waits in");
				nrr_jw_end(cj);   /* warn: none */
				nrr_jw_end(cj);
			}
			fputs("</li>\n", f);
		}
		if (ninfl > 20)
			fprintf(f, "<li>... and %zu more (see the table)</li>\n", ninfl - 20);
		fputs("</ul>\n", f);
	}
	size_t ncommon = 0;
	bool *lead = calloc((size_t)h->nsigs + 1, sizeof(*lead));
	for (int i = 0; i < h->nsigs && lead; i++)
		if (!(lead[i] = sig_leads(h, i)))
			ncommon++;
	if (ncommon) {
		fputs("<h3>Other failures (probes, retries that later succeeded, or common to most ranks)</h3>\n<ul class=\"common\">\n", f);
		for (int i = 0; i < h->nsigs; i++)
			if (!lead[i]) {
				fputs("<li><code>", f);
				escs(f, h->sigs[i].txt);
				fprintf(f, "</code> on %zu of %zu processes</li>\n", h->sigs[i].nrows, h->nrows);
			}
		fputs("</ul>\n", f);
	}
	free(lead);
	if (!nerr && !ninfl)
		fprintf(f, "<p>No lasting failure and no call in flight at the end of the trace%s.</p>\n",
			ncommon ? " (only the failures above)" : "");
	if (extra && (extra->title || extra->text || extra->svg)) {
		fputs("<h3>", f);
		escs(f, extra->title ? extra->title : "Analysis");
		fputs("</h3>\n", f);
		if (extra->text) {
			fputs("<pre>", f);
			escs(f, extra->text);
			fputs("</pre>\n", f);
		}
		if (extra->svg)
			fputs(extra->svg, f);   /* trusted: made by ncclrr */
	}
	fputs("</section>\n", f);
	free(e);
}

static int cmp_row(const void *a, const void *b, void *arg)
{
	const struct nrr_export_proc *p = arg;
	const struct row *x = a, *y = b;
	/* ranks in order (a rank seen twice: by file), unranked processes last */
	const struct nrr_export_proc *a1 = &p[x->reader], *b1 = &p[y->reader];
	if (a1->ranked != b1->ranked)
		return a1->ranked ? -1 : 1;
	if (a1->ranked && a1->rank != b1->rank)
		return a1->rank < b1->rank ? -1 : 1;
	return x->reader < y->reader ? -1 : x->reader > y->reader;
}

static int run_pass(struct html *h, int pass, char *err, size_t errlen)
{
	nrr_merge *m;
	int rc = nrr_merge_open(&m, h->in->r, h->in->n);
	if (rc) {
		snprintf(err, errlen, "%s", nrr_strerror(rc));
		return -1;
	}
	const nrr_call *c;
	size_t ri;
	while ((rc = nrr_merge_next(m, &c, &ri)) == 0) {
		if (!nrr_select_call(h->in, ri, c))
			continue;   /* export's selection options */
		if (pass == 1)
			scan(h, ri, c);
		else
			draw(h, ri, c);
	}
	return nrr_export_read_end(m, rc, err, errlen);
}

static int copy_layer(FILE *to, FILE *from)
{
	char buf[65536];
	size_t n;
	rewind(from);
	while ((n = fread(buf, 1, sizeof(buf), from)) > 0)
		if (fwrite(buf, 1, n, to) != n)
			return -1;
	return ferror(from) ? -1 : 0;
}

int nrr_export_html(struct nrr_inputs *in, const char *path, const struct nrr_html_extra *extra, char *err,
		    size_t errlen)
{
	struct html h = { .in = in, .nrows = in->n };
	int ret = 0;
	FILE *f = NULL, *cj = NULL;
	struct nrr_jw cjw;      /* the chain array, written to cj */
	h.procs = nrr_export_procs(in);
	h.rows = calloc(in->n ? in->n : 1, sizeof(*h.rows));
	h.row_of = calloc(in->n ? in->n : 1, sizeof(*h.row_of));
	if (!h.procs || !h.rows || !h.row_of || nrr_sbuf_open(&h.sb)) {
		snprintf(err, errlen, "out of memory");
		ret = -1;
		goto out;
	}
	for (size_t i = 0; i < in->n; i++)
		h.rows[i].reader = i;
	qsort_r(h.rows, h.nrows, sizeof(*h.rows), cmp_row, h.procs);
	for (size_t r = 0; r < h.nrows; r++) {
		h.row_of[h.rows[r].reader] = r;
		h.rows[r].bin[0].x = h.rows[r].bin[1].x = -1;
		h.rows[r].last_err_x = -1;
		h.rows[r].last_err_sig = -1;
	}
	if ((ret = run_pass(&h, 1, err, errlen)))
		goto out;
	pick_focus(&h);
	if (h.end < 1)
		h.end = 1;
	h.scale = (double)PLOT_W / (double)h.end;
	h.rh = h.nrows ? (int)(800 / h.nrows) : 18;
	h.rh = h.rh > 18 ? 18 : h.rh < 1 ? 1 : h.rh;

	f = fopen(path, "w");
	if (!f) {
		snprintf(err, errlen, "cannot create file=%s: %s", path, strerror(errno));
		ret = -1;
		goto out;
	}
	for (int i = 1; i < 3; i++)
		if (!(h.layer[i] = tmpfile())) {
			snprintf(err, errlen, "cannot create a temporary file: %s", strerror(errno));
			ret = -1;
			goto out;
		}
	if (!(h.detail = tmpfile()) || !(cj = tmpfile())) {
		snprintf(err, errlen, "cannot create a temporary file: %s", strerror(errno));
		ret = -1;
		goto out;
	}
	/* the script's data: JSON whose strings escape '<' (no "</script>") */
	nrr_jw_init(&h.djw, h.detail, NRR_JW_COMPACT | NRR_JW_HTML);
	nrr_jw_arr(&h.djw, false);
	nrr_jw_init(&cjw, cj, NRR_JW_COMPACT | NRR_JW_HTML);
	nrr_jw_arr(&cjw, false);
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>ncclrr report</title>\n<style>", f);
	fputs(css, f);
	fputs("</style></head><body>\n", f);
	put_header(&h, f);
	fputs("<h2>Timeline</h2>\n", f);
	put_legend(f);
	fputs("<div class=\"tl-ctl\"><button type=\"button\" id=\"tl-in\" title=\"zoom in (+)\">+</button>"
	      "<button type=\"button\" id=\"tl-out\" title=\"zoom out (-)\">&#8722;</button>"
	      "<button type=\"button\" id=\"tl-reset\" title=\"the whole run (0)\">reset</button>"
	      "<span id=\"tl-range\"></span></div>\n", f);
	int width = LABEL_W + PLOT_W + 10;
	double height = row_y(&h, h.nrows) + 6;
	fprintf(f, "<svg class=\"timeline\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\">\n", width, height, width,
		height);
	fprintf(f, "<clipPath id=\"plotclip\"><rect x=\"%d\" y=\"0\" width=\"%d\" height=\"%.0f\"/></clipPath>\n", LABEL_W,
		PLOT_W, height);
	fputs("<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
	      "<rect width=\"6\" height=\"6\" fill=\"#ffe9a8\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#555\" stroke-width=\"2\"/>"
	      "</pattern></defs>\n", f);
	put_labels(&h, f);
	fputs("<g class=\"axis\">\n", f);
	put_axis(&h, f);
	fputs("</g>\n<g class=\"plot\" clip-path=\"url(#plotclip)\">\n", f);
	h.layer[0] = f;
	fputs("<g class=\"calls\">\n", f);
	if ((ret = run_pass(&h, 2, err, errlen)))
		goto out;
	for (size_t r = 0; r < h.nrows; r++)
		for (int l = 0; l < 2; l++)
			flush_bin(&h, r, l);
	fputs("</g>\n<g class=\"nested\">\n", f);
	if (copy_layer(f, h.layer[1]))
		goto werr;
	fputs("</g>\n<g class=\"marks\">\n", f);
	if (copy_layer(f, h.layer[2]))
		goto werr;
	fputs("</g>\n<g class=\"detail\"></g>\n<g class=\"chain\"></g>\n</g>\n</svg>\n<div id=\"tl-tip\"></div>\n", f);
	put_rings(&h);
	put_table(&h, f);
	html_diagnosis(f, &cjw, in, &h, extra);
	fputs("<p><small>Written by ncclrr export from ", f);
	fprintf(f, "%zu trace files.</small></p>\n", in->n);
	fputs("<script type=\"application/json\" id=\"nrr-data\">", f);
	struct nrr_jw jw, *w = &jw;
	nrr_jw_init(w, f, NRR_JW_COMPACT | NRR_JW_HTML);
	nrr_jw_obj(w, false);
	nrr_jw_kint(w, "end", h.end);
	nrr_jw_kint(w, "lw", LABEL_W);
	nrr_jw_kint(w, "pw", PLOT_W);
	nrr_jw_kint(w, "top", AXIS_H);
	nrr_jw_kint(w, "rh", h.rh);
	nrr_jw_key(w, "doms");
	nrr_jw_arr(w, false);
	for (int i = 0; i < NDOM; i++) {
		nrr_jw_arr(w, false);
		nrr_jw_str(w, dom_name[i]);
		nrr_jw_str(w, dom_color[i]);
		nrr_jw_end(w);
	}
	nrr_jw_end(w);
	nrr_jw_break(w);
	nrr_jw_key(w, "rows");
	nrr_jw_arr(w, false);
	for (size_t r = 0; r < h.nrows; r++)
		nrr_jw_str(w, h.procs[h.rows[r].reader].name);
	nrr_jw_end(w);
	/* the calls and the chain were written (by items) while reading */
	nrr_jw_end(&h.djw);
	nrr_jw_end(&cjw);
	nrr_jw_break(w);
	nrr_jw_key(w, "calls");
	nrr_jw_value(w);
	if (copy_layer(f, h.detail))
		goto werr;
	nrr_jw_break(w);
	nrr_jw_key(w, "chain");
	nrr_jw_value(w);
	if (copy_layer(f, cj))
		goto werr;
	nrr_jw_end(w);
	fputs("</script>\n<script>", f);
	fputs(report_js, f);
	fputs("</script>\n</body></html>\n", f);
	if (fflush(f) == EOF || ferror(f)) {
werr:
		snprintf(err, errlen, "cannot write file=%s: %s", path, strerror(errno));
		ret = -1;
	}
out:
	for (int i = 1; i < 3; i++)
		if (h.layer[i])
			fclose(h.layer[i]);
	if (h.detail)
		fclose(h.detail);
	if (cj)
		fclose(cj);
	if (f && fclose(f) == EOF && !ret) {
		snprintf(err, errlen, "cannot write file=%s: %s", path, strerror(errno));
		ret = -1;
	}
	nrr_sbuf_close(&h.sb);
	free(h.procs);
	for (size_t r = 0; h.rows && r < h.nrows; r++) {
		free(h.rows[r].socks);
		free(h.rows[r].ring);
	}
	free(h.owners);
	free(h.rows);
	for (int i = 0; i < h.nsigs; i++)
		free(h.sigs[i].seen);
	free(h.row_of);
	return ret;
}
