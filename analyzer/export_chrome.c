/* SPDX-License-Identifier: MIT */
/*
 * export_chrome.c - `ncclrr export --chrome`: Chrome / Perfetto trace-event
 * JSON (object format), written while the merged calls are read.
 *
 * Tracks: pid = NCCL rank (unranked processes above every rank), tid = the
 * traced thread.  Calls are complete slices ("X"); failing calls are
 * coloured "terrible" and get an instant "error" event; log lines are
 * instant events; calls in flight at the end run to the end of the trace.
 *
 * Flow arrows ("s" -> "f", bound to the enclosing slice):
 *  - connect -> accept: the sock_info records of both ends name the same
 *    pair of addresses (connect: local=client peer=server; accept:
 *    local=server peer=client).
 *  - cuMem export -> import, the way NCCL's proxy hands out buffers: a
 *    client asks a peer's proxy over a proxy connection
 *    (ncclProxyRequest type ncclProxyMsgGetFd); the proxy exports the
 *    buffer (cuMemExportToShareableHandle -> fd N) and passes fd N with
 *    sendmsg(SCM_RIGHTS); the client's recvmsg gets fd M and imports it
 *    (cuMemImportFromShareableHandle osHandle=fd:M).  The n-th GetFd of a
 *    connection on the server side is the n-th on the client side, so
 *    (connection addresses, n) names one transfer on both sides,
 *    whatever order the ranks' events come in.
 * Memory: per open socket and per unmatched transfer, not per call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "callfmt.h"
#include "progress.h"
#include "export.h"

/* ------------------------------------------------------- the writer */
struct inflight {
	struct nrr_sref at;
	char *name, *cat, *args;   /* args: JSON object text */
};

struct chrome {
	FILE *f;
	struct nrr_jw jw;       /* the document: {"displayTimeUnit", "traceEvents": [...], "metadata"} */
	struct nrr_inputs *in;
	struct nrr_export_proc *procs;
	struct nrr_sbuf sb;
	struct nrr_emap m;
	uint64_t nevents, nslices, nerrors, nflows_conn, nflows_ipc, nfolded, nbenign;
	uint64_t flow_id;
	int64_t end;            /* latest time seen, ns since the start */
	struct inflight *infl;
	size_t ninfl, capinfl;
};

/* Open the next event of traceEvents (a line each); nrr_jw_end() closes it. */
static struct nrr_jw *ev_open(struct chrome *x)
{
	x->nevents++;
	nrr_jw_obj(&x->jw, false);
	return &x->jw;
}

static bool reserved(const char *n)
{
	return !strcmp(n, "result") || !strcmp(n, "error") || !strcmp(n, "repeat") || !strcmp(n, "repeat_us") ||
	       !strcmp(n, "inflight") || !strcmp(n, "seq") || !strcmp(n, "errno");
}

/* The args object of a call: each recorded arg formatted as dump does. */
static void put_args(struct chrome *x, struct nrr_jw *w, const nrr_call *c, bool failed, const char *benign)
{
	nrr_jw_obj(w, false);
	nrr_jw_kuint(w, "seq", c->seq);
	for (unsigned i = 0; i < c->fn->nargs && i < NRR_MAX_ARGS; i++) {
		const nrr_arg_schema *a = &c->fn->args[i];
		if (!(c->present >> i & 1))
			continue;
		size_t len;
		nrr_sbuf_reset(&x->sb);
		nrr_format_value(x->sb.f, a, &c->args[i]);
		const char *s = nrr_sbuf_str(&x->sb, &len);
		/* names come from the trace's schema: escaped like any text */
		if (reserved(a->name)) {
			char k[96];
			snprintf(k, sizeof(k), "arg_%s", a->name);
			nrr_jw_key(w, k);
		} else {
			nrr_jw_key(w, a->name);
		}
		nrr_jw_strn(w, s, len);
	}
	if (c->done && c->fn->ret != NRR_RET_VOID) {
		size_t len;
		nrr_sbuf_reset(&x->sb);
		nrr_format_result(x->sb.f, c);
		const char *s = nrr_sbuf_str(&x->sb, &len);
		nrr_jw_key(w, "result");
		nrr_jw_strn(w, s, len);
		if (failed) {
			nrr_jw_key(w, "error");
			nrr_jw_strn(w, s, len);
		}
		if (benign)
			nrr_jw_kstr(w, "benign", benign);
	}
	if (c->repeat) {
		nrr_jw_kuint(w, "repeat", c->repeat);
		nrr_jw_kus(w, "repeat_us", (int64_t)c->repeat_ns);
	}
	if (!c->done)
		nrr_jw_kbool(w, "inflight", true);
	nrr_jw_end(w);
}

/* The two kinds of flow arrows. */
enum flow { FLOW_CONNECT, FLOW_IPC };
static const char *const flow_name[] = { [FLOW_CONNECT] = "connect", [FLOW_IPC] = "cuMem export->import" };

static void put_flow(struct chrome *x, enum flow kind, const struct nrr_sref *from, const struct nrr_sref *to)
{
	uint64_t id = ++x->flow_id;
	const struct nrr_sref *r[2] = { from, to };
	for (int i = 0; i < 2; i++) {
		struct nrr_jw *w = ev_open(x);
		nrr_jw_kstr(w, "ph", i ? "f" : "s");
		nrr_jw_kuint(w, "id", id);
		nrr_jw_kstr(w, "bp", "e");
		nrr_jw_kstr(w, "cat", "flow");
		nrr_jw_kstr(w, "name", flow_name[kind]);
		nrr_jw_kint(w, "pid", r[i]->pid);
		nrr_jw_kuint(w, "tid", r[i]->tid);
		/* inside the slice, so that "e" binds to it */
		nrr_jw_kus(w, "ts", r[i]->ts + (int64_t)(r[i]->dur / 2));
		nrr_jw_end(w);
	}
}

/* Rendezvous of the two ends of a flow under @k; emits when both known. */
static void meet(struct chrome *x, const struct nrr_ekey *k, bool src, const struct nrr_sref *r, enum flow kind)
{
	struct nrr_emap_ent *e = nrr_emap_get(&x->m, k->b, k->n, true);
	if (!e)
		return;
	if (src) {
		e->a = *r;
		e->has_a = true;
	} else {
		e->b = *r;
		e->has_b = true;
	}
	if (e->has_a && e->has_b) {
		put_flow(x, kind, &e->a, &e->b);
		if (kind == FLOW_CONNECT)
			x->nflows_conn++;
		else
			x->nflows_ipc++;
		nrr_emap_del(&x->m, e);
	}
}

/* fds passed in a recorded msghdr (nrr_call_msghdr()). */
static int msghdr_fds(const nrr_value *v, int64_t *fds, int max)
{
	nrr_msghdr_rec m;
	int k = 0;
	if (nrr_msghdr_decode(v, &m))
		return 0;
	for (; k < (int)m.nfd && k < max; k++)
		fds[k] = m.fds[k];
	return k;
}

static void sock_key(struct nrr_ekey *k, size_t ri, int64_t fd)
{
	nrr_ekey_init(k, 'F', ri);
	nrr_ekey_add(k, &fd, sizeof(fd));
}

/* The descriptor a call that hands GPU memory out or in as one (role
 * fd_export / fd_import) works on: its parameter of format fd, which every
 * trace's schema says (sem= or not). */
static const nrr_value *gpu_fd(const nrr_call *c)
{
	for (unsigned i = 0; i < c->fn->nargs && i < NRR_MAX_ARGS; i++)
		if (c->fn->args[i].fmt == NRR_FMT_FD)
			return c->present >> i & 1 ? &c->args[i] : NULL;
	return NULL;
}

/* Follow the socket and IPC calls of a completed call for the flows. */
static void flows(struct chrome *x, size_t ri, const nrr_call *c, const struct nrr_sref *self)
{
	enum nrr_role role = nrr_call_role(c);
	struct nrr_ekey k;
	const nrr_value *v;
	int64_t fds[16];
	if (role == NRR_ROLE_CONNECT || role == NRR_ROLE_ACCEPT) {
		/* remember the call so that its sock_info binds the arrow to it */
		int64_t fd = role == NRR_ROLE_CONNECT ? ((v = nrr_call_role_arg(c, NRR_ARG_FD)) ? (int64_t)v->u : -1)
						      : c->result;
		nrr_ekey_init(&k, 'L', ri);
		nrr_ekey_add(&k, &c->tid, sizeof(c->tid));
		struct nrr_emap_ent *e = nrr_emap_get(&x->m, k.b, k.n, true);
		if (e) {
			e->fd = fd;
			e->a = *self;
		}
	} else if (role == NRR_ROLE_SOCK_INFO) {
		int64_t sfd;
		const nrr_value *loc, *peer;
		bool isconn;
		if (!nrr_sock_conn(c, &sfd, &loc, &peer, &isconn))
			return;
		const nrr_value *srv = isconn ? peer : loc, *cli = isconn ? loc : peer;
		uint8_t conn[264];
		uint32_t l1 = srv->len > 128 ? 128 : srv->len, l2 = cli->len > 128 ? 128 : cli->len;
		conn[0] = (uint8_t)l1;
		memcpy(conn + 1, srv->p, l1);
		conn[1 + l1] = (uint8_t)l2;
		memcpy(conn + 2 + l1, cli->p, l2);
		uint32_t clen = 2 + l1 + l2;
		/* the socket, for the GetFd requests made on it */
		sock_key(&k, ri, sfd);
		struct nrr_emap_ent *s = nrr_emap_get(&x->m, k.b, k.n, true);
		if (!s)
			return;
		bool fresh = s->connlen != clen || memcmp(s->conn, conn, clen) != 0;
		if (!fresh)
			return;   /* the second sock_info of the socket (type learnt) */
		s->connlen = clen;
		memcpy(s->conn, conn, clen);
		s->ngetfd = 0;
		s->fd = isconn ? 2 : 3;
		/* the connect / accept call that made it */
		struct nrr_sref at = *self;
		nrr_ekey_init(&k, 'L', ri);
		nrr_ekey_add(&k, &c->tid, sizeof(c->tid));
		struct nrr_emap_ent *l = nrr_emap_get(&x->m, k.b, k.n, false);
		if (l && l->fd == sfd)
			at = l->a;
		nrr_ekey_init(&k, 'C', 0);
		nrr_ekey_add(&k, conn, clen);
		meet(x, &k, isconn, &at, FLOW_CONNECT);
	} else if (role == NRR_ROLE_PROXY_REQ) {
		/* the message type by its symbol in the trace's own enum table
		 * (NCCL numbers them; proxy.api's ncclProxyMsgType).  "type" by
		 * name: a field of ncclProxyRequest's own layout, no role */
		int ti;
		const nrr_value *t = nrr_call_arg(c, "type", &ti), *fdv = nrr_call_role_arg(c, NRR_ARG_FD);
		const char *tn = t ? nrr_enum_name(c->fn->args[ti].table, (int64_t)t->u) : NULL;
		if (!tn || !fdv || strcmp(tn, "ncclProxyMsgGetFd"))
			return;
		sock_key(&k, ri, (int64_t)fdv->u);
		struct nrr_emap_ent *s = nrr_emap_get(&x->m, k.b, k.n, false);
		if (!s || !s->connlen)
			return;
		s->ngetfd++;
		/* this thread's next fd passing belongs to this request */
		nrr_ekey_init(&k, 'G', ri);
		nrr_ekey_add(&k, &c->tid, sizeof(c->tid));
		struct nrr_emap_ent *g = nrr_emap_get(&x->m, k.b, k.n, true);
		if (g) {
			g->connlen = s->connlen;
			memcpy(g->conn, s->conn, s->connlen);
			g->ngetfd = s->ngetfd;
			g->fd = s->fd;   /* 2: we asked (client), 3: we serve */
		}
	} else if (role == NRR_ROLE_FD_EXPORT) {
		if (nrr_call_failed(c) || !(v = gpu_fd(c)))
			return;
		nrr_ekey_init(&k, 'E', ri);
		int64_t fd = (int64_t)v->u;
		nrr_ekey_add(&k, &fd, sizeof(fd));
		struct nrr_emap_ent *e = nrr_emap_get(&x->m, k.b, k.n, true);
		if (e)
			e->a = *self;
	} else if ((role == NRR_ROLE_SEND || role == NRR_ROLE_RECV) && (v = nrr_call_msghdr(c))) {
		/* a send or receive that can pass fds: one with a struct msghdr */
		bool send = role == NRR_ROLE_SEND;
		if (nrr_call_failed(c))
			return;
		int nf = msghdr_fds(v, fds, 16);
		if (!nf)
			return;
		nrr_ekey_init(&k, 'G', ri);
		nrr_ekey_add(&k, &c->tid, sizeof(c->tid));
		struct nrr_emap_ent *g = nrr_emap_get(&x->m, k.b, k.n, false);
		if (!g || g->fd != (send ? 3 : 2))
			return;
		struct nrr_ekey t;
		nrr_ekey_init(&t, 'X', 0);
		nrr_ekey_add(&t, g->conn, g->connlen);
		nrr_ekey_add(&t, &g->ngetfd, sizeof(g->ngetfd));
		nrr_emap_del(&x->m, g);
		for (int i = 0; i < nf; i++) {
			struct nrr_ekey tk = t;
			int32_t idx = i;
			nrr_ekey_add(&tk, &idx, sizeof(idx));
			if (send) {
				nrr_ekey_init(&k, 'E', ri);
				nrr_ekey_add(&k, &fds[i], sizeof(fds[i]));
				struct nrr_emap_ent *e = nrr_emap_get(&x->m, k.b, k.n, false);
				if (e) {
					meet(x, &tk, true, &e->a, FLOW_IPC);
					nrr_emap_del(&x->m, e);
				}
			} else {
				/* fd M of this process now names transfer tk */
				nrr_ekey_init(&k, 'R', ri);
				nrr_ekey_add(&k, &fds[i], sizeof(fds[i]));
				struct nrr_emap_ent *r = nrr_emap_get(&x->m, k.b, k.n, true);
				if (r) {
					r->connlen = (uint32_t)(tk.n < sizeof(r->conn) ? tk.n : sizeof(r->conn));
					memcpy(r->conn, tk.b, r->connlen);
				}
			}
		}
	} else if (role == NRR_ROLE_FD_IMPORT) {
		if (!(v = gpu_fd(c)))
			return;
		int64_t fd = (int64_t)v->u;
		nrr_ekey_init(&k, 'R', ri);
		nrr_ekey_add(&k, &fd, sizeof(fd));
		struct nrr_emap_ent *r = nrr_emap_get(&x->m, k.b, k.n, false);
		if (!r)
			return;
		struct nrr_ekey tk;
		memcpy(tk.b, r->conn, r->connlen);
		tk.n = r->connlen;
		nrr_emap_del(&x->m, r);
		meet(x, &tk, false, self, FLOW_IPC);
	} else if (role == NRR_ROLE_CLOSE) {
		if (!(v = nrr_call_role_arg(c, NRR_ARG_FD)))
			return;
		int64_t fd = (int64_t)v->u;
		sock_key(&k, ri, fd);
		struct nrr_emap_ent *s = nrr_emap_get(&x->m, k.b, k.n, false);
		if (s)
			nrr_emap_del(&x->m, s);
		nrr_ekey_init(&k, 'E', ri);
		nrr_ekey_add(&k, &fd, sizeof(fd));
		if ((s = nrr_emap_get(&x->m, k.b, k.n, false)))
			nrr_emap_del(&x->m, s);
	}
}

static void thread_meta(struct chrome *x, size_t ri, uint32_t tid)
{
	struct nrr_ekey k;
	nrr_ekey_init(&k, 'T', ri);
	nrr_ekey_add(&k, &tid, sizeof(tid));
	if (nrr_emap_get(&x->m, k.b, k.n, false))
		return;
	nrr_emap_get(&x->m, k.b, k.n, true);
	const nrr_file_info *fi = nrr_reader_info(x->in->r[ri]);
	char name[32];
	snprintf(name, sizeof(name), "%s %u", tid == fi->pid ? "main" : "thread", tid);
	struct nrr_jw *w = ev_open(x);
	nrr_jw_kstr(w, "ph", "M");
	nrr_jw_kstr(w, "name", "thread_name");
	nrr_jw_kint(w, "pid", x->procs[ri].pid);
	nrr_jw_kuint(w, "tid", tid);
	nrr_jw_key(w, "args");
	nrr_jw_obj(w, false);
	nrr_jw_kstr(w, "name", name);
	nrr_jw_end(w);
	nrr_jw_end(w);
}

static int64_t rel(struct chrome *x, size_t ri, uint64_t ts)
{
	return nrr_inputs_time(x->in, ri, ts);
}

/* The red instant event of a failure. */
static void put_error(struct chrome *x, size_t ri, uint32_t tid, int64_t ts, const char *s, size_t len, uint64_t seq)
{
	struct nrr_jw *w = ev_open(x);
	nrr_jw_kstr(w, "ph", "i");
	nrr_jw_kstr(w, "s", "t");
	nrr_jw_kstr(w, "cat", "error");
	nrr_jw_kstr(w, "cname", "terrible");
	nrr_jw_kint(w, "pid", x->procs[ri].pid);
	nrr_jw_kuint(w, "tid", tid);
	nrr_jw_kus(w, "ts", ts);
	nrr_jw_key(w, "name");
	nrr_jw_strn(w, s, len);
	nrr_jw_key(w, "args");
	nrr_jw_obj(w, false);
	nrr_jw_kstr(w, "rank", x->in->rank[ri] ? x->in->rank[ri] : "");
	nrr_jw_kuint(w, "seq", seq);
	nrr_jw_end(w);
	nrr_jw_end(w);
	x->nerrors++;
}

static void on_call(void *ctx, size_t ri, const nrr_call *c)
{
	struct chrome *x = ctx;
	long pid = x->procs[ri].pid;
	int64_t key = rel(x, ri, nrr_call_key(c));
	if (key > x->end)
		x->end = key;
	thread_meta(x, ri, c->tid);
	if (c->kind == NRR_CALL_LOG) {
		uint32_t n = c->log_len;
		while (n && (c->log[n - 1] == '\n' || c->log[n - 1] == '\r'))
			n--;
		bool warn = memmem(c->log, n, "WARN", 4) != NULL;
		struct nrr_jw *w = ev_open(x);
		nrr_jw_kstr(w, "ph", "i");
		nrr_jw_kstr(w, "s", "t");
		nrr_jw_kstr(w, "cat", "log");
		if (warn)
			nrr_jw_kstr(w, "cname", "bad");
		nrr_jw_kint(w, "pid", pid);
		nrr_jw_kuint(w, "tid", c->tid);
		nrr_jw_kus(w, "ts", key);
		nrr_jw_key(w, "name");
		nrr_jw_strn(w, c->log, n > 80 ? 80 : n);
		nrr_jw_key(w, "args");
		nrr_jw_obj(w, false);
		nrr_jw_kuint(w, "level", c->log_level);
		nrr_jw_key(w, "text");
		nrr_jw_strn(w, c->log, n);
		nrr_jw_end(w);
		nrr_jw_end(w);
		return;
	}
	if (c->phase == NRR_PHASE_ENTER || !c->fn)
		return;
	struct nrr_sref self = { pid, c->tid, rel(x, ri, c->ts), c->dur + c->repeat_ns };
	if (c->phase == NRR_PHASE_INFLIGHT) {
		/* written at the end, when the end of the whole trace is known */
		if (x->ninfl == x->capinfl) {
			size_t cap = x->capinfl ? x->capinfl * 2 : 64;
			struct inflight *p = realloc(x->infl, cap * sizeof(*p));
			if (!p)
				return;
			x->infl = p;
			x->capinfl = cap;
		}
		char *args = NULL;
		size_t alen = 0;
		FILE *m = open_memstream(&args, &alen);
		if (!m)
			return;
		struct nrr_jw aw;   /* the same rules as the document's */
		nrr_jw_init(&aw, m, x->jw.flags);
		put_args(x, &aw, c, false, NULL);
		fclose(m);
		struct inflight *e = &x->infl[x->ninfl++];
		e->at = self;
		e->name = strdup(c->fn->name);
		e->cat = strdup(c->fn->domain ? c->fn->domain : "other");
		e->args = args;
		return;
	}
	int64_t end = self.ts + (int64_t)self.dur;
	if (end > x->end)
		x->end = end;
	/* a failure a healthy run has too is no error marker (grey) */
	const char *benign = nrr_call_failed(c) ? nrr_call_benign(c) : NULL;
	bool failed = nrr_call_failed(c) && !benign;
	x->nbenign += benign != NULL;
	struct nrr_jw *w = ev_open(x);
	nrr_jw_kstr(w, "ph", "X");
	nrr_jw_kstr(w, "cat", c->fn->domain ? c->fn->domain : "other");
	nrr_jw_kstr(w, "name", c->fn->name);
	if (failed || benign)
		nrr_jw_kstr(w, "cname", failed ? "terrible" : "grey");
	nrr_jw_kint(w, "pid", pid);
	nrr_jw_kuint(w, "tid", c->tid);
	nrr_jw_kus(w, "ts", self.ts);
	nrr_jw_kus(w, "dur", (int64_t)self.dur);
	nrr_jw_key(w, "args");
	put_args(x, w, c, failed, benign);
	nrr_jw_end(w);
	x->nslices++;
	if (failed) {
		size_t len;
		nrr_sbuf_reset(&x->sb);
		fprintf(x->sb.f, "error: %s = ", c->fn->name);
		nrr_format_result(x->sb.f, c);
		const char *s = nrr_sbuf_str(&x->sb, &len);
		put_error(x, ri, c->tid, self.ts + (int64_t)c->dur, s, len, c->seq);
	}
	flows(x, ri, c, &self);
}

/* A folded run of probes or retries (export_common.c): one slice; red
 * only for a retry run that never got through. */
static void on_run(void *ctx, const struct nrr_fold_run *r)
{
	struct chrome *x = ctx;
	long pid = x->procs[r->ri].pid;
	if (r->end > x->end)
		x->end = r->end;
	thread_meta(x, r->ri, r->tid);
	struct nrr_jw *w = ev_open(x);
	nrr_jw_kstr(w, "ph", "X");
	nrr_jw_kstr(w, "cat", r->fn->domain ? r->fn->domain : "other");
	nrr_jw_kstr(w, "name", r->name);
	nrr_jw_kstr(w, "cname", r->real ? "terrible" : "grey");
	nrr_jw_kint(w, "pid", pid);
	nrr_jw_kuint(w, "tid", r->tid);
	nrr_jw_kus(w, "ts", r->ts);
	nrr_jw_kus(w, "dur", r->end - r->ts);
	nrr_jw_key(w, "args");
	nrr_jw_obj(w, false);
	nrr_jw_kuint(w, "folded", r->calls);
	nrr_jw_kuint(w, "failed", r->failed);
	nrr_jw_kuint(w, "first_seq", r->first_seq);
	nrr_jw_kuint(w, "last_seq", r->last_seq);
	nrr_jw_kstr(w, r->real ? "error" : "result", r->result);
	nrr_jw_kstr(w, "benign", r->rule->why);
	nrr_jw_end(w);
	nrr_jw_end(w);
	x->nslices++;
	x->nfolded += r->calls;
	if (r->real) {
		char s[400];
		int n = snprintf(s, sizeof(s), "error: %s = %s (%llu times)", r->fn->name, r->result,
				 (unsigned long long)r->failed);
		put_error(x, r->ri, r->tid, r->end, s, n < 0 ? 0 : (size_t)n >= sizeof(s) ? sizeof(s) - 1 : (size_t)n,
			  r->last_seq);
	}
}

static void put_meta(struct chrome *x)
{
	struct nrr_jw *w = &x->jw;
	nrr_jw_key(w, "metadata");
	nrr_jw_obj(w, false);
	nrr_jw_kstr(w, "generator", "ncclrr export");
	nrr_jw_kuint(w, "start_wall_ns", x->in->base_wall);
	nrr_jw_kus(w, "duration_us", x->end);
	nrr_jw_kuint(w, "processes", x->in->n);
	nrr_jw_kuint(w, "slices", x->nslices);
	nrr_jw_kuint(w, "errors", x->nerrors);
	nrr_jw_kuint(w, "benign_failures", x->nbenign);
	nrr_jw_kuint(w, "folded_calls", x->nfolded);
	nrr_jw_kuint(w, "flows_connect", x->nflows_conn);
	nrr_jw_kuint(w, "flows_ipc", x->nflows_ipc);
	if (x->in->sel && x->in->sel->failure[0])
		nrr_jw_kstr(w, "around_failure", x->in->sel->failure);
	const char *v = NULL;
	for (size_t i = 0; i < x->in->n && !v; i++)
		v = x->in->proc[i].nccl_version;
	if (v)
		nrr_jw_kstr(w, "nccl_version", v);
	nrr_jw_key(w, "files");
	nrr_jw_arr(w, false);
	for (size_t i = 0; i < x->in->n; i++) {
		nrr_jw_obj(w, false);
		nrr_jw_kint(w, "pid", x->procs[i].pid);
		nrr_jw_kstr(w, "name", x->procs[i].name);
		nrr_jw_kstr(w, "path", nrr_reader_path(x->in->r[i]));
		nrr_jw_end(w);
	}
	nrr_jw_end(w);
	nrr_jw_end(w);
}

int nrr_export_chrome(struct nrr_inputs *in, const struct nrr_export_opts *o, const char *path, char *err,
		      size_t errlen)
{
	struct chrome x = { .in = in };
	struct nrr_folder *fold = NULL;
	int ret = 0;
	if (!(x.f = nrr_export_open(path, err, errlen)))
		return -1;
	x.procs = nrr_export_procs(in);
	const struct nrr_fold_ops ops = { on_call, on_run, &x };
	if (!x.procs || nrr_sbuf_open(&x.sb) || !(fold = nrr_folder_new(in, o->all, &ops))) {
		snprintf(err, errlen, "out of memory");
		ret = -1;
		goto out;
	}
	struct nrr_jw *w = &x.jw;
	nrr_jw_init(w, x.f, NRR_JW_COMPACT | NRR_JW_HTML);
	nrr_jw_obj(w, false);
	nrr_jw_kstr(w, "displayTimeUnit", "ns");
	nrr_jw_key(w, "traceEvents");
	nrr_jw_arr(w, true);
	for (size_t i = 0; i < in->n; i++) {
		for (int k = 0; k < 2; k++) {
			x.nevents++;
			nrr_jw_obj(w, false);
			nrr_jw_kstr(w, "ph", "M");
			nrr_jw_kstr(w, "name", k ? "process_sort_index" : "process_name");
			nrr_jw_kint(w, "pid", x.procs[i].pid);
			nrr_jw_kint(w, "tid", 0);
			nrr_jw_key(w, "args");
			nrr_jw_obj(w, false);
			if (k)
				nrr_jw_kint(w, "sort_index", x.procs[i].pid);
			else
				nrr_jw_kstr(w, "name", x.procs[i].name);
			nrr_jw_end(w);
			nrr_jw_end(w);
		}
	}
	ret = nrr_export_read(in, fold, err, errlen);
	fold = NULL;
	for (size_t i = 0; i < x.ninfl; i++) {
		struct inflight *e = &x.infl[i];
		int64_t dur = x.end - e->at.ts;
		x.nevents++;
		nrr_jw_obj(w, false);
		nrr_jw_kstr(w, "ph", "X");
		nrr_jw_kstr(w, "cat", e->cat ? e->cat : "other");
		nrr_jw_kstr(w, "name", e->name ? e->name : "?");
		nrr_jw_kstr(w, "cname", "yellow");
		nrr_jw_kint(w, "pid", e->at.pid);
		nrr_jw_kuint(w, "tid", e->at.tid);
		nrr_jw_kus(w, "ts", e->at.ts);
		nrr_jw_kus(w, "dur", dur < 0 ? 0 : dur);
		nrr_jw_key(w, "args");
		/* rendered by put_args() when the call was read */
		nrr_jw_raw(w, "%s", e->args ? e->args : "{}");
		nrr_jw_end(w);
		x.nslices++;
		free(e->name);
		free(e->cat);
		free(e->args);
	}
	nrr_jw_end(w);
	nrr_jw_break(w);
	put_meta(&x);
	nrr_jw_end(w);
	fputc('\n', x.f);
out:
	nrr_folder_finish(fold);
	nrr_sbuf_close(&x.sb);
	nrr_emap_free(&x.m);
	free(x.infl);
	free(x.procs);
	return nrr_export_close(x.f, path, ret, err, errlen);
}
