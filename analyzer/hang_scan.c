/* SPDX-License-Identifier: MIT */
/* hang_scan.c - the scan of `ncclrr hang`: each trace read once, a cursor
 * per stream, into its process's end state (hang_internal.h): sockets,
 * calls in flight, trailing polling and connect retry loops, unanswered
 * proxy requests, its collective. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hang_internal.h"

static int arg_index(const nrr_fn_schema *fn, const char *name)
{
	for (unsigned i = 0; i < fn->nargs && i < NRR_MAX_ARGS; i++)
		if (!strcmp(fn->args[i].name, name))
			return (int)i;
	return -1;
}

static void classify(const nrr_fn_schema *fn, struct fninfo *fi)
{
	memset(fi, 0, sizeof(*fi));
	fi->a_fd = nrr_fn_arg(fn, NRR_ARG_FD);
	fi->a_addr = nrr_fn_arg(fn, NRR_ARG_ADDR);
	fi->a_fds = nrr_fn_arg(fn, NRR_ARG_FDS);
	fi->a_opid = nrr_fn_arg(fn, NRR_ARG_ID);
	switch ((enum nrr_role)fn->role) {
	case NRR_ROLE_SOCK_INFO:   /* the tracer's event: its own fields */
		fi->kind = F_SOCKINFO;
		fi->a_role = arg_index(fn, "role");
		fi->a_type = arg_index(fn, "type");
		fi->a_local = arg_index(fn, "local");
		fi->a_peer = arg_index(fn, "peer");
		break;
	case NRR_ROLE_CONNECT:
		fi->kind = F_CONNECT;
		fi->cat = "connect";
		break;
	case NRR_ROLE_ACCEPT:
		fi->kind = F_ACCEPT;
		fi->cat = "accept";
		break;
	case NRR_ROLE_RECV:
		fi->kind = F_RECV;
		fi->cat = "recv";
		break;
	case NRR_ROLE_SEND:
		fi->kind = F_SEND;
		fi->cat = "send";
		break;
	case NRR_ROLE_POLL:
		fi->kind = F_POLL;
		fi->cat = "poll";
		break;
	case NRR_ROLE_PROXY_REQ:
		fi->kind = F_PROXY_REQ;
		fi->a_type = arg_index(fn, "type");
		break;
	case NRR_ROLE_PROXY_RESP:
		fi->kind = F_PROXY_RESP;
		break;
	case NRR_ROLE_SOCK_PAIR:
		fi->kind = F_SOCKPAIR;
		break;
	case NRR_ROLE_CLOSE:
		fi->kind = F_CLOSE;
		break;
	case NRR_ROLE_SOCK_SETUP:
		fi->kind = F_SOCKSETUP;
		break;
	case NRR_ROLE_CQ_POLL:
		fi->cat = fn->name;
		break;
	case NRR_ROLE_NET_TEST:
		fi->cat = "net test";
		break;
	case NRR_ROLE_SYNC:
		fi->cat = "stream/event synchronize";
		break;
	default:
		if (!strcmp(fn->domain, "nccl"))
			fi->cat = "NCCL API call";
		else if (fn->flags & NRR_FN_BLOCKING)
			fi->cat = fn->name;
		break;
	}
}

/* ------------------------------------------------------------ values */

static int arg_int(const nrr_call *c, int i, int dflt)
{
	if (i < 0 || !(c->present >> i & 1))
		return dflt;
	return (int)(int64_t)c->args[i].u;
}

static void arg_text(const nrr_call *c, int i, char *buf, size_t len)
{
	buf[0] = 0;
	if (i < 0 || !(c->present >> i & 1))
		return;
	FILE *f = fmemopen(buf, len, "w");
	if (!f)
		return;
	nrr_format_value(f, &c->fn->args[i], &c->args[i]);
	fclose(f);
	buf[len - 1] = 0;
}

static char *call_text(const nrr_call *c, bool result)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	if (!f)
		return NULL;
	fprintf(f, "%s(", c->fn->name);
	nrr_format_args(f, c);
	fputc(')', f);
	if (result) {
		fputs(" = ", f);
		nrr_format_result(f, c);
	}
	fclose(f);
	return s;
}

static int pollfds(const nrr_call *c, int i, int *out)
{
	if (i < 0 || !(c->present >> i & 1))
		return 0;
	const nrr_value *v = &c->args[i];
	int n = 0;
	for (uint32_t off = 0; off + 8 <= v->len && n < MAX_POLLFD; off += 8) {
		int32_t fd;
		memcpy(&fd, v->p + off, 4);
		out[n++] = fd;
	}
	return n;
}

/* a "not ready" answer of a polling call (formats/api/'s poll=, coalesced
 * by the writer): a non-blocking socket's EAGAIN (NCCL's sockets spin
 * so; their 0 is an end of file), CUDA's NOT_READY, ncclNet_test's
 * done == 0, poll's 0 */
static bool notready(const nrr_call *c)
{
	return (c->fn->flags & NRR_FN_POLL) && (c->repeat || nrr_call_class(c) == NRR_CLASS_NOT_READY);
}

/* ------------------------------------------------------------ reading */

struct sockrec *hang_sock_open(struct hproc *p, int fd)
{
	for (size_t i = p->nsocks; i-- > 0;)
		if (p->socks[i].open && p->socks[i].fd == fd)
			return &p->socks[i];
	return NULL;
}

static int on_sockinfo(struct hproc *p, const nrr_call *c, const struct fninfo *fi)
{
	int fd = arg_int(c, fi->a_fd, -1);
	int role = arg_int(c, fi->a_role, 0), type = arg_int(c, fi->a_type, 0);
	char local[ADDR_MAX], peer[ADDR_MAX];
	arg_text(c, fi->a_local, local, sizeof(local));
	arg_text(c, fi->a_peer, peer, sizeof(peer));
	struct sockrec *s = hang_sock_open(p, fd);
	if (s && s->role == role && !strcmp(s->local, local) && !strcmp(s->peer, peer)) {
		if (type)
			s->type = (uint8_t)type;   /* the handshake told what NCCL uses it for */
		return 0;
	}
	if (s)
		s->open = false;
	if (!nrr_grow(&p->socks, p->nsocks, &p->csocks, sizeof(*p->socks)))
		return -ENOMEM;
	s = &p->socks[p->nsocks++];
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->role = (uint8_t)role;
	s->type = (uint8_t)type;
	s->open = true;
	snprintf(s->local, sizeof(s->local), "%s", local);
	snprintf(s->peer, sizeof(s->peer), "%s", peer);
	return 0;
}

/* both ends of a socketpair: a wait on one is a wait on this process
 * itself (or on a child it forks with the other end), never on a peer */
static int on_sockpair(struct hproc *p, const nrr_call *c, const struct fninfo *fi)
{
	if (c->result != 0 || fi->a_fds < 0 || !(c->present >> fi->a_fds & 1) || c->args[fi->a_fds].len < 8)
		return 0;
	for (int k = 0; k < 2; k++) {
		int32_t fd;
		memcpy(&fd, c->args[fi->a_fds].p + 4 * k, 4);
		struct sockrec *old = hang_sock_open(p, fd);
		if (old)
			old->open = false;
		if (!nrr_grow(&p->socks, p->nsocks, &p->csocks, sizeof(*p->socks)))
			return -ENOMEM;
		struct sockrec *s = &p->socks[p->nsocks++];
		memset(s, 0, sizeof(*s));
		s->fd = fd;
		s->role = ROLE_PAIR;
		s->open = true;
		snprintf(s->local, sizeof(s->local), "socketpair");
	}
	return 0;
}

static int on_proxy(struct hproc *p, const nrr_call *c, const struct fninfo *fi, uint64_t wall)
{
	int fd = arg_int(c, fi->a_fd, -1);
	uint64_t op = fi->a_opid >= 0 && (c->present >> fi->a_opid & 1) ? c->args[fi->a_opid].u : 0;
	if (fi->kind == F_PROXY_RESP) {
		for (size_t i = 0; i < p->npend; i++)
			if (p->pend[i].fd == fd && p->pend[i].opid == op) {
				p->pend[i] = p->pend[--p->npend];
				break;
			}
		return 0;
	}
	struct sockrec *s = hang_sock_open(p, fd);
	if (!s || s->role != NRR_SOCK_CONNECT)   /* received by this process's proxy: not a wait */
		return 0;
	if (!nrr_grow(&p->pend, p->npend, &p->cpend, sizeof(*p->pend)))
		return -ENOMEM;
	struct pending *q = &p->pend[p->npend++];
	q->fd = fd;
	q->opid = op;
	q->wall = wall;
	arg_text(c, fi->a_type, q->type, sizeof(q->type));
	return 0;
}

static void flight_set(struct flight *f, const nrr_call *c, const struct fninfo *fi, const nrr_reader *r, uint64_t dur,
		       bool at_cut)
{
	free(f->text);
	memset(f, 0, sizeof(*f));
	f->text = call_text(c, false);
	f->cat = fi->cat;
	f->kind = fi->kind;
	f->at_cut = at_cut;
	f->wall = nrr_reader_wall(r, c->ts);
	f->dur = dur;
	f->seq = c->seq;
	f->depth = c->depth;
	f->fd = arg_int(c, fi->a_fd, -1);
	if (fi->kind == F_CONNECT)
		arg_text(c, fi->a_addr, f->addr, sizeof(f->addr));
	if (fi->kind == F_POLL)
		f->npoll = pollfds(c, fi->a_fds, f->pollfd);
}

/* a call in flight at the end (or when the job was stopped): innermost
 * and outermost per thread */
static void flight_add(struct hstream *st, const nrr_call *c, const struct fninfo *fi, const nrr_reader *r, uint64_t dur,
		       bool at_cut)
{
	if (!st->ninflight || c->depth >= st->inner.depth)
		flight_set(&st->inner, c, fi, r, dur, at_cut);
	if (!st->ninflight || c->depth <= st->outer.depth)
		flight_set(&st->outer, c, fi, r, dur, at_cut);
	st->ninflight++;
}

static void on_done(struct hproc *p, struct hstream *st, const nrr_call *c, const struct fninfo *fi,
		    const nrr_reader *r)
{
	uint64_t wall = nrr_reader_wall(r, c->ts);
	uint64_t leave = wall + c->dur + c->repeat_ns;
	/* polling run */
	if (notready(c)) {
		if (st->run_fn != c->fn || (fi->a_fd >= 0 && arg_int(c, fi->a_fd, -1) != st->run_fd)) {
			st->run_fn = c->fn;
			st->run_kind = fi->kind;
			st->run_since = wall;
			st->run_n = 0;
			st->run_fd = arg_int(c, fi->a_fd, -1);
			st->run_npoll = fi->kind == F_POLL ? pollfds(c, fi->a_fds, st->run_pollfd) : 0;
		}
		st->run_n += 1 + c->repeat;
		st->run_last = leave;
	} else if (fi->kind != F_SOCKINFO && fi->kind != F_PROXY_REQ && fi->kind != F_PROXY_RESP) {
		st->run_fn = NULL;
	}
	/* connect retry loop */
	if (fi->kind == F_CONNECT) {
		/* refused while the peer is not listening (yet): formats/api/socket.api */
		bool refused = nrr_call_benign(c) != NULL;
		char addr[ADDR_MAX];
		arg_text(c, fi->a_addr, addr, sizeof(addr));
		if (refused) {
			if (!st->cr_trailing || strcmp(addr, st->cr_addr)) {
				snprintf(st->cr_addr, sizeof(st->cr_addr), "%s", addr);
				st->cr_n = 0;
				st->cr_since = wall;
			}
			st->cr_n++;
			st->cr_last = leave;
			st->cr_err = c->err;
			st->cr_trailing = true;
		} else {
			st->cr_trailing = false;
		}
	} else if (fi->kind != F_SOCKINFO && fi->kind != F_SOCKSETUP && fi->kind != F_SOCKPAIR && fi->kind != F_CLOSE) {
		st->cr_trailing = false;
	}
	/* last completed call (what the tracer learnt is not a call) */
	if (fi->kind != F_SOCKINFO && fi->kind != F_PROXY_REQ && fi->kind != F_PROXY_RESP && leave >= p->last_wall) {
		p->last_wall = leave;
		p->last_stream = c->stream;
		p->last_seq = c->seq;
	}
}

/* "name(args) = result" of call @seq of @stream: read again at the end, so
 * that no call is formatted while streaming */
static char *call_at(nrr_reader *r, uint32_t stream, uint64_t seq)
{
	nrr_cursor *cur;
	char *text = NULL;
	if (nrr_cursor_open(&cur, r, stream))
		return NULL;
	if (nrr_cursor_seek(cur, seq) == 0) {
		const nrr_call *c;
		while (nrr_cursor_next(cur, &c) == 0) {
			if (c->kind == NRR_CALL && c->seq == seq && (c->phase == NRR_PHASE_CALL || c->phase == NRR_PHASE_RESUME)) {
				text = call_text(c, true);
				break;
			}
			if (c->kind == NRR_CALL && c->depth == 0 && c->seq > seq)
				break;
		}
	}
	nrr_cursor_close(cur);
	return text;
}

int hang_read_proc(struct nrr_hang *h, size_t i)
{
	nrr_reader *r = h->in->r[i];
	struct hproc *p = &h->p[i];
	const nrr_file_info *info = nrr_reader_info(r);
	const nrr_schema *s = nrr_reader_schema(r);
	uint32_t nf = nrr_schema_nfns(s);
	struct fninfo *tab = calloc(nf + 1, sizeof(*tab));
	p->nst = info->nstreams;
	p->st = calloc(p->nst + 1, sizeof(*p->st));
	if (!tab || !p->st) {
		free(tab);
		return -ENOMEM;
	}
	for (uint32_t f = 1; f <= nf; f++)
		classify(nrr_schema_fn(s, f), &tab[f]);
	for (uint32_t k = 0; k < p->nst; k++)
		p->st[k].tid = nrr_reader_stream(r, k)->tid;

	const struct nrr_proc *pr = &h->in->proc[i];
	p->rank = (int)pr->rank;
	p->who = h->in->who[i];
	p->path = nrr_reader_path(r);
	if (p->rank >= 0)
		snprintf(p->label, sizeof(p->label), "rank %d", p->rank);
	else
		snprintf(p->label, sizeof(p->label), "pid %u", info->pid);
	snprintf(p->argv0, sizeof(p->argv0), "%s", pr->argv ? pr->argv : "?");
	const char *end = nrr_proc_end_key(pr);
	snprintf(p->end_how, sizeof(p->end_how), "%s", pr->end_how);
	uint64_t last = info->end_ts ? nrr_reader_wall(r, info->end_ts) : 0;
	uint64_t cut = h->cut;

	nrr_merge *m;
	int rc = nrr_merge_open(&m, &h->in->r[i], 1);
	if (rc) {
		free(tab);
		return rc;
	}
	const nrr_call *c;
	while ((rc = nrr_merge_next(m, &c, NULL)) == 0) {
		nrr_progress_note(&h->prog, i, c);
		uint64_t w = nrr_reader_wall(r, nrr_call_key(c));
		if (w > last)
			last = w;
		if (c->kind != NRR_CALL || !c->fn || c->stream >= p->nst)
			continue;
		if (nrr_coll_is_event(c->fn)) {   /* not a call the process waited in */
			if (nrr_reader_wall(r, c->ts) <= cut)
				nrr_coll_on_event(&p->coll, c, nrr_reader_wall(r, c->ts));
			continue;
		}
		const struct fninfo *fi = &tab[c->fn->id];
		struct hstream *st = &p->st[c->stream];
		uint64_t enter = nrr_reader_wall(r, c->ts), leave = enter + c->dur;
		if (enter > cut)
			continue;   /* after the job was stopped */
		switch (c->phase) {
		case NRR_PHASE_INFLIGHT:
			flight_add(st, c, fi, r, c->dur, false);
			break;
		case NRR_PHASE_CALL:
		case NRR_PHASE_RESUME:
			if (c->done && leave > cut && !notready(c)) {
				flight_add(st, c, fi, r, cut - enter, true);   /* it returned because of the stop */
			} else if (c->done) {
				if (fi->kind == F_SOCKINFO)
					rc = on_sockinfo(p, c, fi);
				else if (fi->kind == F_SOCKPAIR)
					rc = on_sockpair(p, c, fi);
				else if (fi->kind == F_CLOSE) {
					struct sockrec *sr = hang_sock_open(p, arg_int(c, fi->a_fd, -1));
					if (sr)
						sr->open = false;
				} else if (fi->kind == F_PROXY_REQ || fi->kind == F_PROXY_RESP)
					rc = on_proxy(p, c, fi, nrr_reader_wall(r, c->ts));
				on_done(p, st, c, fi, r);
				if (!p->fail_text && nrr_call_real_failure(c)) {
					p->fail_text = call_text(c, true);
					p->fail_wall = leave;
				}
			}
			break;
		default:
			break;
		}
		if (rc)
			break;
	}
	free(tab);
	if (rc && rc != NRR_EEOF) {
		if (rc == -ENOMEM)
			nrr_run_say(NRR_RUN_NOTE, "hang", "out of memory");
		else
			nrr_print_diag("hang", nrr_merge_diag(m));
		nrr_merge_close(m);
		return rc;
	}
	nrr_merge_close(m);
	p->end_wall = last;
	p->in_teardown = (cut != UINT64_MAX && last >= cut) || nrr_end_by_stop(end, last, cut);
	p->exited = end && (!strncmp(end, "exit", 4) || !strcmp(end, "exec")) && !p->in_teardown;
	if (p->last_seq)
		p->last_text = call_at(r, p->last_stream, p->last_seq);
	return 0;
}

