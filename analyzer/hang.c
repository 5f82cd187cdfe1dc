/* SPDX-License-Identifier: MIT */
/* hang.c - why a job hangs: per-process end state, wait-for graph, root
 * causes (see hang.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "callfmt.h"
#include "term_color.h"
#include "progress.h"
#include "hang.h"
#include "hang_coll.h"
#include "json.h"

#define ADDR_MAX 96
/* The most ranks a job may say it has (nranks=, WORLD_SIZE=, ...): a larger
 * count in a trace is ignored with a note (ranks are kept as a table). */
#define NRR_HANG_MAX_RANKS (1 << 20)
#define MAX_POLLFD 16
/* a trace that ends this long before the job's last one ended early
 * (a stop's burst of ends is as long) */
#define EARLY_NS NRR_STOP_BURST_NS
/* a trace without an end note is written out at most every second */
#define EARLY_NOEND_NS NRR_NOEND_SLACK_NS

/* ------------------------------------------------------------ per call kind */

enum fkind {
	F_OTHER, F_SOCKINFO, F_CONNECT, F_ACCEPT, F_RECV, F_SEND, F_POLL, F_CLOSE, F_PROXY_REQ, F_PROXY_RESP,
	F_SOCKSETUP, /* socket, setsockopt, fcntl, ...: part of a connect retry loop */
	F_SOCKPAIR,  /* socketpair: both ends are this process's (or a child's it forks) */
};

/* sockrec roles: the tracer's sock_role (1 listen, 2 connect, 3 accept),
 * and one end of a socketpair */
#define ROLE_PAIR 100

struct fninfo {
	uint8_t kind;
	const char *cat;       /* blocked-in category, NULL: not a blocking call */
	int a_fd, a_addr, a_fds, a_role, a_type, a_local, a_peer, a_opid;
};

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

/* ------------------------------------------------------------ state */

struct sockrec {
	int fd;
	uint8_t role, type;   /* sock_role, nccl_socket_type */
	bool open;
	char local[ADDR_MAX], peer[ADDR_MAX];
};

struct pending {          /* a proxy request this process sent, unanswered */
	int fd;
	uint64_t opid, wall;
	char type[40];
};

struct flight {
	char *text;            /* "name(args)" */
	const char *cat;
	uint8_t kind;
	uint64_t wall, dur, seq;
	unsigned depth;
	int fd;
	char addr[ADDR_MAX];
	int pollfd[MAX_POLLFD];
	int npoll;
	bool at_cut;           /* returned after the job was stopped: in flight then */
};

struct hstream {
	uint32_t tid;
	struct flight inner, outer;
	unsigned ninflight;
	/* trailing polling run: coalesced "not ready" answers */
	const nrr_fn_schema *run_fn;
	uint8_t run_kind;
	uint64_t run_since, run_last, run_n;
	int run_fd, run_pollfd[MAX_POLLFD], run_npoll;
	/* trailing connect retry loop */
	char cr_addr[ADDR_MAX];
	uint64_t cr_n, cr_since, cr_last;
	uint32_t cr_err;
	bool cr_trailing;
};

enum cls { C_MISSING, C_DIED, C_EXITED, C_STUCK, C_OUTSIDE, C_CYCLE, C_NONE };
static const char *const cls_name[] = { "no trace", "died", "exited", "stuck", "waits outside the traces",
					"cycle", "" };

struct hproc {
	int rank;              /* -1: none in the metadata */
	char label[64];        /* "rank 3" or "pid 1234" */
	const char *who, *path;
	char argv0[128];
	char end_how[96];      /* metadata end, or "" */
	bool exited;           /* end_how is exit or exec, before the job was stopped */
	bool in_teardown;      /* ended when (or after) the job was stopped */
	uint64_t end_wall;
	uint64_t last_wall;    /* last completed call: its leave time */
	uint32_t last_stream;
	uint64_t last_seq;
	char *last_text;
	char *fail_text;       /* its first real failure (nrr_call_real_failure()) */
	uint64_t fail_wall;
	struct hstream *st;
	uint32_t nst;
	struct sockrec *socks;
	size_t nsocks, csocks;
	struct pending *pend;
	size_t npend, cpend;
	bool waiting;
	bool waits_unknown;    /* a wait whose target no trace shows */
	struct nrr_coll_state coll; /* its collective, from NCCL profiler events */
};

struct hedge {
	int from, to;          /* node indices; to = -1: nothing the traces show */
	const char *cat;
	char addr[ADDR_MAX];   /* accept: the listener; connect: the target */
	char detail[256];
};

struct cause {
	int node;
	int cls;
	int score;             /* nodes waiting on it, directly or not */
	char *text;
	uint64_t when;         /* died / exited: when its trace ended */
};

struct nrr_hang {
	struct nrr_inputs *in;
	struct nrr_progress prog;
	struct hproc *p;
	size_t np;
	int *missing;          /* ranks expected with no trace: node np + i */
	size_t nmissing;
	int *rank_node;        /* [nranks]: the node of each rank (node_of_rank) */
	int nranks;
	char nranks_src[64];
	char root_addr[ADDR_MAX];
	int root_owner;        /* node listening at the bootstrap root, or -1 */
	uint64_t base_wall, job_end;
	/* when the job was stopped from outside (the first of the last burst
	 * of SIGTERM/SIGINT/SIGHUP ends), UINT64_MAX if it was not: the state
	 * analyzed is the one at that instant, so that what the stop itself
	 * caused (a peer's socket closing, an exit on EOF) does not hide the
	 * hang */
	uint64_t cut;
	struct hedge *e;
	size_t ne, ce;
	struct cause *c;
	size_t nc;
	char *summary;
	bool found;
	int first_bad;         /* no hang: the first rank to end abnormally, or -1 */
	char *first_bad_text;
};

static size_t nnodes(const struct nrr_hang *h)
{
	return h->np + h->nmissing;
}

static int node_rank(const struct nrr_hang *h, int node)
{
	if (node < 0)
		return -1;
	if ((size_t)node >= h->np)
		return h->missing[(size_t)node - h->np];
	return h->p[node].rank;
}

static const char *node_label(const struct nrr_hang *h, int node, char *buf, size_t len)
{
	if (node < 0)
		snprintf(buf, len, "?");
	else if ((size_t)node >= h->np)
		snprintf(buf, len, "rank %d", h->missing[(size_t)node - h->np]);
	else
		snprintf(buf, len, "%s", h->p[node].label);
	return buf;
}

/* "4.20 s", or "850.0ms" under a second */
static void put_for(FILE *f, uint64_t ns)
{
	if (ns >= 1000000000ull)
		fprintf(f, "%.2f s", (double)ns / 1e9);
	else
		nrr_format_dur(f, ns);
}

static double rel(const struct nrr_hang *h, uint64_t wall)
{
	return wall >= h->base_wall ? (double)(wall - h->base_wall) / 1e9 : -(double)(h->base_wall - wall) / 1e9;
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

static struct sockrec *sock_open(struct hproc *p, int fd)
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
	struct sockrec *s = sock_open(p, fd);
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
		struct sockrec *old = sock_open(p, fd);
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
	struct sockrec *s = sock_open(p, fd);
	if (!s || s->role != 2)   /* received by this process's proxy: not a wait */
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

static int read_proc(struct nrr_hang *h, size_t i)
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
					struct sockrec *sr = sock_open(p, arg_int(c, fi->a_fd, -1));
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

/* ------------------------------------------------------------ the job */

static void job_size(struct nrr_hang *h)
{
	static const char *const keys[] = { "nranks", "env.NCCLRR_NRANKS", "env.WORLD_SIZE", "env.OMPI_COMM_WORLD_SIZE",
					    "env.PMI_SIZE", "env.SLURM_NTASKS", NULL };
	h->nranks = 0;
	h->root_addr[0] = 0;
	for (size_t i = 0; i < h->np; i++) {
		nrr_reader *r = h->in->r[i];
		if (h->p[i].rank < 0)
			continue;
		for (size_t k = 0; keys[k]; k++) {
			const char *v = nrr_reader_meta(r, keys[k]);
			int n = v ? atoi(v) : 0;
			if (n > NRR_HANG_MAX_RANKS) {
				nrr_run_say(NRR_RUN_NOTE, "hang", "note: %s says %s=%s, more than the %d ranks this "
					"analysis takes: ignored", nrr_reader_path(r), keys[k], v, NRR_HANG_MAX_RANKS);
				continue;
			}
			if (n > h->nranks) {
				h->nranks = n;
				snprintf(h->nranks_src, sizeof(h->nranks_src), "%s", keys[k]);
			}
		}
		const char *id = nrr_reader_meta(r, "env.NCCL_COMM_ID");
		if (id && !h->root_addr[0])
			snprintf(h->root_addr, sizeof(h->root_addr), "%s", id);
		if (h->p[i].rank < NRR_HANG_MAX_RANKS && h->p[i].rank + 1 > h->nranks) {
			h->nranks = h->p[i].rank + 1;
			snprintf(h->nranks_src, sizeof(h->nranks_src), "highest traced rank");
		}
	}
}

static const char *port_of(const char *a)
{
	const char *c = strrchr(a, ':');
	return c ? c + 1 : NULL;
}

/* @a (where someone connects) is served by a listener at @l */
static bool addr_match(const char *l, const char *a)
{
	if (!*l || !*a)
		return false;
	if (!strcmp(l, a))
		return true;
	const char *pl = port_of(l), *pa = port_of(a);
	if (!pl || !pa || strcmp(pl, pa))
		return false;
	return !strncmp(l, "0.0.0.0:", 8) || !strncmp(l, "[::]:", 5);
}

static bool is_root(const struct nrr_hang *h, const char *addr)
{
	if (!h->root_addr[0] || !*addr)
		return false;
	if (!strcmp(addr, h->root_addr))
		return true;
	/* NCCL_COMM_ID by host name: the port decides */
	const char *pr = port_of(h->root_addr), *pa = port_of(addr);
	return pr && pa && !strcmp(pr, pa);
}

static int listener_of(const struct nrr_hang *h, const char *addr)
{
	for (size_t i = 0; i < h->np; i++)
		for (size_t k = 0; k < h->p[i].nsocks; k++)
			if (h->p[i].socks[k].role == 1 && addr_match(h->p[i].socks[k].local, addr))
				return (int)i;
	return -1;
}

/* the process at the other end of a connected socket of process @self */
static int peer_of(const struct nrr_hang *h, size_t self, const struct sockrec *s)
{
	if (!s->peer[0])
		return -1;
	for (size_t i = 0; i < h->np; i++)
		for (size_t k = 0; k < h->p[i].nsocks; k++) {
			const struct sockrec *o = &h->p[i].socks[k];
			if (i != self && o->role != 1 && !strcmp(o->local, s->peer) && !strcmp(o->peer, s->local))
				return (int)i;
		}
	if (s->role == 2)
		return listener_of(h, s->peer);
	return -1;
}

static int node_of_rank(const struct nrr_hang *h, int rank)
{
	if (h->rank_node && rank >= 0 && rank < h->nranks)
		return h->rank_node[rank];
	for (size_t i = 0; i < h->np; i++)
		if (h->p[i].rank == rank)
			return (int)i;
	for (size_t i = 0; i < h->nmissing; i++)
		if (h->missing[i] == rank)
			return (int)(h->np + i);
	return -1;
}

/* did process @i ever connect to the bootstrap root? */
static bool reached_root(const struct nrr_hang *h, size_t i)
{
	for (size_t k = 0; k < h->p[i].nsocks; k++) {
		const struct sockrec *s = &h->p[i].socks[k];
		if ((s->role == 2 && is_root(h, s->peer)) || (s->role == 1 && is_root(h, s->local)))
			return true;
	}
	return false;
}

static int add_edge(struct nrr_hang *h, int from, int to, const char *cat, const char *addr, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static int add_edge(struct nrr_hang *h, int from, int to, const char *cat, const char *addr, const char *fmt, ...)
{
	/* a thread waiting on another thread of its own process (NCCL's main
	 * thread on its own proxy) is no wait of the process */
	if (to == from)
		return 0;
	h->p[from].waiting = true;
	for (size_t i = 0; i < h->ne; i++)
		if (h->e[i].from == from && h->e[i].to == to && !strcmp(h->e[i].cat, cat))
			return 0;
	if (!nrr_grow(&h->e, h->ne, &h->ce, sizeof(*h->e)))
		return -ENOMEM;
	struct hedge *e = &h->e[h->ne++];
	e->from = from;
	e->to = to;
	e->cat = cat;
	snprintf(e->addr, sizeof(e->addr), "%s", addr ? addr : "");
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->detail, sizeof(e->detail), fmt, ap);
	va_end(ap);
	if (to < 0)
		h->p[from].waits_unknown = true;
	return 0;
}

/* did process @k end (exit, signal, trace cut) before the job was stopped
 * and before the job's last trace ended? */
static bool ended_early(const struct nrr_hang *h, size_t k)
{
	const struct hproc *p = &h->p[k];
	uint64_t ref = h->cut != UINT64_MAX ? h->cut : h->job_end;
	if (p->in_teardown)
		return false;
	if (p->exited)
		return true;
	if (!strncmp(p->end_how, "signal ", 7))
		return p->end_wall + EARLY_NS < ref;
	return !p->end_how[0] && p->end_wall + EARLY_NOEND_NS < ref;
}

/* a poll that serves (a listener, or a socket nobody connected: NCCL's
 * proxy service and UDS threads): waiting for requests is no wait */
static bool poll_serves(const struct nrr_hang *h, size_t i, const int *fds, int n)
{
	for (int j = 0; j < n; j++) {
		struct sockrec *s = sock_open((struct hproc *)&h->p[i], fds[j]);
		if (!s || s->role == 1)
			return true;
	}
	return false;
}

static int edges_accept(struct nrr_hang *h, size_t i, const struct sockrec *l, const char *cat)
{
	if (!is_root(h, l->local) || h->nranks <= 0) {
		/* NCCL's bootstrap listener: any peer connects to send a
		 * message; those that ended early never will */
		int rc = 0, nend = 0;
		for (size_t k = 0; k < h->np && !rc; k++)
			if (k != i && h->p[k].rank >= 0 && ended_early(h, k)) {
				nend++;
				rc = add_edge(h, (int)i, (int)k, cat, l->local,
					      "%s at %s: peers connect here to send; %s ended early (%s) and never will", cat,
					      l->local, h->p[k].label, h->p[k].end_how[0] ? h->p[k].end_how : "no end recorded");
			}
		if (rc || nend)
			return rc;
		return add_edge(h, (int)i, -1, cat, l->local, "%s: waits for a connection on %s (who should connect is not in the traces)",
				cat, l->local);
	}
	/* the bootstrap root: every other rank of the job connects once */
	int rc = 0, nmiss = 0;
	for (int r = 0; r < h->nranks && !rc; r++) {
		if (r == h->p[i].rank)
			continue;
		int n = node_of_rank(h, r);
		bool came = false;
		if (n >= 0 && (size_t)n < h->np)
			for (size_t k = 0; k < h->p[n].nsocks && !came; k++) {
				const struct sockrec *s = &h->p[n].socks[k];
				came = s->role == 2 && addr_match(l->local, s->peer);
			}
		if (!came) {
			nmiss++;
			rc = add_edge(h, (int)i, n, cat, l->local, "%s at %s (bootstrap root): rank %d never connected", cat,
				      l->local, r);
		}
	}
	if (!rc && !nmiss)
		rc = add_edge(h, (int)i, -1, cat, l->local, "%s at %s (bootstrap root): every rank connected already", cat,
			      l->local);
	return rc;
}

static int edges_fd(struct nrr_hang *h, size_t i, int fd, const char *cat)
{
	struct sockrec *s = sock_open(&h->p[i], fd);
	if (!s)
		return add_edge(h, (int)i, -1, cat, NULL, "%s on fd %d (not a socket the trace knows)", cat, fd);
	if (s->role == ROLE_PAIR)
		return 0;   /* its own socketpair: no wait on another process */
	if (s->role == 1)
		return edges_accept(h, i, s, !strcmp(cat, "poll") ? "poll" : "accept");
	int to = peer_of(h, i, s);
	if (to < 0 && is_root(h, s->peer))
		to = node_of_rank(h, 0);   /* the bootstrap root's owner, traced or not */
	static const char *const types[] = { "", ", bootstrap", ", proxy", ", NET/Socket", ", NET/IB", ", RAS" };
	return add_edge(h, (int)i, to, cat, s->peer, "%s on fd %d (%s -> %s%s)%s", cat, fd, s->local, s->peer,
			s->type < 6 ? types[s->type] : "", to < 0 ? ": no traced process owns the peer address" : "");
}

static int edges_connect(struct nrr_hang *h, size_t i, const char *addr, const char *what)
{
	int to = listener_of(h, addr);
	if (to < 0 && is_root(h, addr))
		to = node_of_rank(h, 0);   /* rank 0 makes the bootstrap root */
	return add_edge(h, (int)i, to, "connect", addr, "%s %s%s", what, addr,
			to < 0 ? ": no traced process listens there" : "");
}

static bool killed_outright(const struct nrr_hang *h, const struct hproc *p);

static int build_edges(struct nrr_hang *h)
{
	int rc = 0;
	for (size_t i = 0; i < h->np && !rc; i++) {
		struct hproc *p = &h->p[i];
		if (p->exited || killed_outright(h, p))
			continue;   /* calls left in flight at exit are not a wait */
		for (uint32_t k = 0; k < p->nst && !rc; k++) {
			struct hstream *st = &p->st[k];
			const struct flight *f = st->ninflight ? &st->inner : NULL;
			/* a socket wait says most; then a trailing polling run or
			 * connect retry loop under an NCCL call; then the call */
			bool sockwait = f && f->cat && f->kind >= F_CONNECT && f->kind <= F_POLL;
			if (sockwait) {
				if (f->kind == F_CONNECT)
					rc = edges_connect(h, i, f->addr, "connect to");
				else if (f->kind == F_ACCEPT || f->kind == F_RECV || f->kind == F_SEND)
					rc = edges_fd(h, i, f->fd, f->cat);
				else if (f->kind == F_POLL && !poll_serves(h, i, f->pollfd, f->npoll))
					for (int j = 0; j < f->npoll && !rc; j++)
						rc = edges_fd(h, i, f->pollfd[j], "poll");
			} else if (st->run_fn) {
				if (st->run_kind == F_RECV || st->run_kind == F_SEND || st->run_kind == F_ACCEPT)
					rc = edges_fd(h, i, st->run_fd, st->run_kind == F_RECV ? "recv" : st->run_kind == F_SEND ? "send" : "accept");
				else if (st->run_npoll) {
					if (!poll_serves(h, i, st->run_pollfd, st->run_npoll))
						for (int j = 0; j < st->run_npoll && !rc; j++)
							rc = edges_fd(h, i, st->run_pollfd[j], "poll");
				} else
					rc = add_edge(h, (int)i, -1, st->run_fn->name, NULL, "polling %s since %.6f s, %llu times",
						      st->run_fn->name, rel(h, st->run_since), (unsigned long long)st->run_n);
			} else if (st->cr_trailing) {
				rc = edges_connect(h, i, st->cr_addr, "retrying connect to");
			} else if (f && f->cat) {
				rc = add_edge(h, (int)i, -1, f->cat, NULL, "in %s: %s since %.6f s", f->cat,
					      f->text ? f->text : "?", rel(h, f->wall));
			}
		}
		for (size_t k = 0; k < p->npend && !rc; k++) {
			struct sockrec *s = sock_open(p, p->pend[k].fd);
			int to = s ? peer_of(h, i, s) : -1;
			rc = add_edge(h, (int)i, to, "proxy", s ? s->peer : NULL, "an answer to proxy request %s (opId 0x%llx) on fd %d",
				      p->pend[k].type, (unsigned long long)p->pend[k].opid, p->pend[k].fd);
		}
	}
	return rc;
}

/* ------------------------------------------------------------ root causes */

static bool waiting_node(const struct nrr_hang *h, int n)
{
	return n >= 0 && (size_t)n < h->np && h->p[n].waiting;
}

/* The graph's edges to known nodes, by source (adj) and by target (radj):
 * CSR arrays of edge indices. */
struct graph {
	size_t *off, *roff;
	int *adj, *radj;
	bool *term;   /* waits lead nowhere else in the graph */
};

static void graph_free(struct graph *g)
{
	free(g->off), free(g->roff), free(g->adj), free(g->radj), free(g->term);
}

static int graph_build(const struct nrr_hang *h, struct graph *g)
{
	size_t n = nnodes(h);
	g->off = calloc(n + 2, sizeof(*g->off));
	g->roff = calloc(n + 2, sizeof(*g->roff));
	g->adj = calloc(h->ne + 1, sizeof(*g->adj));
	g->radj = calloc(h->ne + 1, sizeof(*g->radj));
	g->term = calloc(n + 1, sizeof(*g->term));
	size_t *fill = calloc(n + 2, sizeof(*fill)), *rfill = calloc(n + 2, sizeof(*rfill));
	if (!g->off || !g->roff || !g->adj || !g->radj || !g->term || !fill || !rfill) {
		free(fill), free(rfill);
		graph_free(g);
		return -ENOMEM;
	}
	for (size_t i = 0; i < h->ne; i++)
		if (h->e[i].to >= 0) {
			g->off[h->e[i].from + 1]++;
			g->roff[h->e[i].to + 1]++;
		}
	for (size_t u = 0; u < n; u++) {
		g->off[u + 1] += g->off[u];
		g->roff[u + 1] += g->roff[u];
	}
	for (size_t i = 0; i < h->ne; i++)
		if (h->e[i].to >= 0) {
			size_t f = (size_t)h->e[i].from, t = (size_t)h->e[i].to;
			g->adj[g->off[f] + fill[f]++] = (int)i;
			g->radj[g->roff[t] + rfill[t]++] = (int)i;
		}
	for (size_t u = 0; u < n; u++)
		g->term[u] = !waiting_node(h, (int)u) || g->off[u] == g->off[u + 1];
	free(fill), free(rfill);
	return 0;
}

/* mark in @seen every node reachable from @n (n included) */
static void reach(const struct nrr_hang *h, const struct graph *g, int n, bool *seen, int *stack)
{
	size_t sp = 0;
	stack[sp++] = n;
	seen[n] = true;
	while (sp) {
		int u = stack[--sp];
		for (size_t k = g->off[u]; k < g->off[u + 1]; k++) {
			int t = h->e[g->adj[k]].to;
			if (!seen[t]) {
				seen[t] = true;
				stack[sp++] = t;
			}
		}
	}
}

/* Killed outright (nrr_no_end_means_killed) wherever it was: what it had
 * in flight is not a wait. */
static bool killed_outright(const struct nrr_hang *h, const struct hproc *p)
{
	if (p->end_how[0] || p->in_teardown)
		return false;   /* killed by the stop (the launcher's SIGKILL after its SIGTERM) */
	size_t without = 0;
	for (size_t i = 0; i < h->np; i++)
		without += !h->p[i].end_how[0];
	return nrr_no_end_means_killed(without, h->np);
}

static int classify_node(const struct nrr_hang *h, int n)
{
	if ((size_t)n >= h->np)
		return C_MISSING;
	const struct hproc *p = &h->p[n];
	uint64_t ref = h->cut != UINT64_MAX ? h->cut : h->job_end;
	if (killed_outright(h, p))
		return C_DIED;
	if (p->waiting)
		return C_OUTSIDE;
	if (!strncmp(p->end_how, "signal ", 7)) {
		const char *sig = p->end_how + 7;
		bool timeout_kill = !strcmp(sig, "SIGTERM") || !strcmp(sig, "SIGINT") || !strcmp(sig, "SIGHUP");
		return !timeout_kill || p->end_wall + EARLY_NS < ref ? C_DIED : C_STUCK;
	}
	if (p->exited)
		return C_EXITED;
	if (p->in_teardown)
		return C_STUCK;
	return p->end_wall + EARLY_NOEND_NS < ref ? C_DIED : C_STUCK;
}

static void rank_list(const struct nrr_hang *h, const int *nodes, size_t n, char *buf, size_t len);
static int cmp_int(const void *a, const void *b);

/* @waited: others wait on node @n (a root cause the graph leads to) */
static char *describe(const struct nrr_hang *h, int n, int cls, bool waited)
{
	char *s = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&s, &sz);
	if (!f)
		return NULL;
	char lb[64];
	node_label(h, n, lb, sizeof(lb));
	if (cls == C_MISSING) {
		fprintf(f, "%s has no trace: it never started, or its trace file is missing (%d ranks expected, from %s)", lb,
			h->nranks, h->nranks_src);
		fclose(f);
		return s;
	}
	const struct hproc *p = &h->p[n];
	const struct flight *fl = NULL, *outer = NULL;
	for (uint32_t k = 0; k < p->nst && !fl; k++)
		if (p->st[k].ninflight) {
			fl = &p->st[k].inner;
			outer = p->st[k].ninflight > 1 ? &p->st[k].outer : NULL;
		}
	switch (cls) {
	case C_DIED:
		if (p->end_how[0])
			fprintf(f, "%s died: its trace ended by %s at %.6f s", lb, p->end_how, rel(h, p->end_wall));
		else if (!p->end_wall)
			fprintf(f, "%s died: its trace holds no call and no end (killed by SIGKILL, or its host went away, "
				"before its first chunk was written)", lb);
		else
			fprintf(f, "%s died: its trace stops at %.6f s with no end recorded%s (killed by SIGKILL, or its host went away)",
				lb, rel(h, p->end_wall), p->last_seq ? "" : " and no complete call");
		break;
	case C_EXITED:
		fprintf(f, "%s ended (%s) at %.6f s%s", lb, p->end_how, rel(h, p->end_wall),
			waited ? " while others wait on it" : ", the first rank to end abnormally");
		break;
	case C_STUCK:
		if (h->root_addr[0] && h->root_owner != n && !reached_root(h, (size_t)n))
			fprintf(f, "%s never connected: it never reached the bootstrap at %s", lb, h->root_addr);
		else
			fprintf(f, "%s is alive but stuck", lb);
		break;
	case C_OUTSIDE: {
		const struct hedge *e = NULL;
		for (size_t i = 0; i < h->ne && !e; i++)
			if (h->e[i].from == n)
				e = &h->e[i];
		fprintf(f, "%s waits on nothing the traces show (%s)", lb, e ? e->detail : "?");
		break;
	}
	default:
		break;
	}
	if (p->fail_text && cls != C_OUTSIDE)
		fprintf(f, ": its first failure was %s at %.6f s;", p->fail_text, rel(h, p->fail_wall));
	if (p->last_text)
		fprintf(f, "%s its last call was %s at %.6f s", p->fail_text && cls != C_OUTSIDE ? "" : ":", p->last_text,
			rel(h, p->last_wall));
	else
		fprintf(f, ": it completed no traced call");
	if (fl && fl->text && cls == C_OUTSIDE) {
		fprintf(f, "; in flight for ");
		put_for(f, fl->dur);
	} else if (fl && fl->text) {
		fprintf(f, "; in flight: %s since %.6f s, for ", fl->text, rel(h, fl->wall));
		put_for(f, fl->dur);
		if (outer && outer->text)   /* e.g. the NCCL call (communicator, split) it is in */
			fprintf(f, ", inside %s since %.6f s", outer->text, rel(h, outer->wall));
	} else if (cls != C_OUTSIDE) {
		fprintf(f, " and it has nothing in flight");
	}
	fclose(f);
	return s;
}

/* the first rank that died or exited comes first: the others' ends may
 * follow from it (a peer's import failing once its exporter is gone) */
static int cause_group(int cls)
{
	return cls == C_EXITED ? C_DIED : cls;
}

static int cmp_cause(const void *a, const void *b)
{
	const struct cause *x = a, *y = b;
	if (cause_group(x->cls) != cause_group(y->cls))
		return cause_group(x->cls) - cause_group(y->cls);
	if (cause_group(x->cls) == C_DIED && x->when != y->when)
		return x->when < y->when ? -1 : 1;
	if (x->score != y->score)
		return y->score - x->score;
	return x->node - y->node;
}

static int find_causes(struct nrr_hang *h, const struct graph *g)
{
	size_t n = nnodes(h);
	bool *seen = calloc(n + 1, sizeof(*seen)), *back = calloc(n + 1, sizeof(*back));
	bool *in_cycle = calloc(n + 1, sizeof(*in_cycle));
	int *stack = calloc(n + 1, sizeof(*stack)), *score = calloc(n + 1, sizeof(*score));
	int *mem = calloc(n + 1, sizeof(*mem));
	bool *cyc = calloc(n + 1, sizeof(*cyc));
	h->c = calloc(n + 2, sizeof(*h->c));   /* terminals and cycles (n), the first abnormal end */
	int rc = -ENOMEM;
	if (!seen || !back || !in_cycle || !stack || !score || !mem || !cyc || !h->c)
		goto out;
	/* each waiting node credits the terminal nodes it leads to */
	for (size_t w = 0; w < h->np; w++) {
		if (!h->p[w].waiting)
			continue;
		memset(seen, 0, n * sizeof(*seen));
		reach(h, g, (int)w, seen, stack);
		bool any = false;
		for (size_t t = 0; t < n; t++)
			if (seen[t] && g->term[t]) {
				score[t]++;
				any = true;
			}
		if (!any)
			cyc[w] = true;   /* only waiting nodes ahead: a cycle */
	}
	for (size_t t = 0; t < n; t++) {
		if (!score[t] || !g->term[t])
			continue;
		int cls = classify_node(h, (int)t);
		h->c[h->nc++] = (struct cause){ (int)t, cls, score[t], describe(h, (int)t, cls, true),
						t < h->np ? h->p[t].end_wall : 0 };
	}
	/* the first rank that ended abnormally before the stop (exit status
	 * not 0, a signal, killed outright) is a root cause even when no wait
	 * the traces show leads to it: the others' waits may be on it through
	 * what no trace shows (a launcher, a peer's dead connection) */
	int first = -1;
	for (size_t i = 0; i < h->np; i++) {
		const struct hproc *p = &h->p[i];
		if (p->rank < 0 || !ended_early(h, i) || !strcmp(p->end_how, "exit 0") || !strcmp(p->end_how, "exec"))
			continue;
		if (first < 0 || p->end_wall < h->p[first].end_wall)
			first = (int)i;
	}
	for (size_t k = 0; first >= 0 && k < h->nc; k++)
		if (h->c[k].node == first)
			first = -1;
	if (first >= 0) {
		int cls = classify_node(h, first);
		if (cause_group(cls) == C_DIED)
			h->c[h->nc++] = (struct cause){ first, cls, 0, describe(h, first, cls, false), h->p[first].end_wall };
	}
	/* cycles: one cause per cycle (the nodes that reach w and that w
	 * reaches), named by its lowest node */
	for (size_t w = 0; w < h->np; w++) {
		if (!cyc[w] || in_cycle[w])
			continue;
		memset(seen, 0, n * sizeof(*seen));
		reach(h, g, (int)w, seen, stack);
		size_t nm = 0;
		for (size_t u = 0; u < n; u++) {
			if (!seen[u])
				continue;
			memset(back, 0, n * sizeof(*back));
			reach(h, g, (int)u, back, stack);
			if (back[w]) {
				mem[nm++] = (int)u;
				in_cycle[u] = true;
			}
		}
		if (nm < 2 && !(nm == 1 && g->off[w] < g->off[w + 1]))
			continue;
		/* one way round, from the lowest member: each to a member not
		 * yet passed, back to the start last */
		char list[512];
		rank_list(h, mem, nm, list, sizeof(list));
		char *s = NULL;
		size_t sz = 0;
		FILE *f = open_memstream(&s, &sz);
		if (!f)
			continue;
		fprintf(f, "%s wait on each other: ", list);
		memset(back, 0, n * sizeof(*back));
		int u = mem[0];
		for (size_t step = 0; step < nm; step++) {
			back[u] = true;
			const struct hedge *next = NULL, *home = NULL;
			for (size_t k = g->off[u]; k < g->off[u + 1]; k++) {
				const struct hedge *e = &h->e[g->adj[k]];
				if (!in_cycle[e->to] || !seen[e->to])
					continue;
				if (!back[e->to] && !next)
					next = e;
				if (e->to == mem[0] && !home)
					home = e;
			}
			if (!next)
				next = home;
			if (!next)
				break;
			char a[64], b[64];
			fprintf(f, "%s%s waits in %s for %s", step ? ", " : "", node_label(h, u, a, sizeof(a)), next->cat,
				node_label(h, next->to, b, sizeof(b)));
			u = next->to;
			if (u == mem[0])
				break;
		}
		fprintf(f, " (a cycle: nothing outside it can end it)");
		fclose(f);
		h->c[h->nc++] = (struct cause){ mem[0], C_CYCLE, (int)nm, s, 0 };
	}
	qsort(h->c, h->nc, sizeof(*h->c), cmp_cause);
	rc = 0;
out:
	free(seen), free(back), free(in_cycle), free(stack), free(score), free(mem), free(cyc);
	return rc;
}

/* "rank 3", "ranks 1-4,6-15", "ranks 1,2 and pid 77" */
static void rank_list(const struct nrr_hang *h, const int *nodes, size_t n, char *buf, size_t len)
{
	int *r = calloc(n + 1, sizeof(*r));
	size_t nr = 0, off = 0;
	buf[0] = 0;
	if (!r)
		return;
	for (size_t i = 0; i < n; i++)
		if (node_rank(h, nodes[i]) >= 0)
			r[nr++] = node_rank(h, nodes[i]);
	qsort(r, nr, sizeof(*r), cmp_int);
	if (nr)
		off += (size_t)snprintf(buf + off, len - off, "%s ", nr > 1 ? "ranks" : "rank");
	for (size_t i = 0; i < nr && off < len; i++) {
		size_t j = i;
		while (j + 1 < nr && r[j + 1] <= r[j] + 1)
			j++;
		if (j > i)
			off += (size_t)snprintf(buf + off, len - off, "%s%d-%d", i ? "," : "", r[i], r[j]);
		else
			off += (size_t)snprintf(buf + off, len - off, "%s%d", i ? "," : "", r[i]);
		i = j;
	}
	for (size_t i = 0; i < n && off < len; i++)
		if (node_rank(h, nodes[i]) < 0) {
			char lb[64];
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? " and " : "", node_label(h, nodes[i], lb, sizeof(lb)));
		}
	free(r);
}

/* How node @u waits towards the root (its edges to nodes one level
 * closer): "in accept at ADDR for rank 5", built once per node. */
static char *wait_key(const struct nrr_hang *h, const struct graph *g, const int *level, int u, int *tg)
{
	const struct hedge *e0 = NULL;
	size_t nt = 0;
	for (size_t k = g->off[u]; k < g->off[u + 1]; k++) {   /* an unanswered proxy request says most */
		const struct hedge *e = &h->e[g->adj[k]];
		if (level[e->to] == level[u] - 1 && (!e0 || (!strcmp(e->cat, "proxy") && strcmp(e0->cat, "proxy"))))
			e0 = e;
	}
	for (size_t k = g->off[u]; k < g->off[u + 1]; k++) {
		const struct hedge *e = &h->e[g->adj[k]];
		if (e0 && level[e->to] == level[u] - 1 && !strcmp(e->cat, e0->cat))
			tg[nt++] = e->to;
	}
	if (!e0)
		return NULL;
	char tl[1024];
	rank_list(h, tg, nt, tl, sizeof(tl));
	char *key = NULL;
	int rc;
	if (!strcmp(e0->cat, "accept") && !is_root(h, e0->addr))   /* each on its own listener */
		rc = asprintf(&key, "in accept on their own listener for %s", tl);
	else if (!strcmp(e0->cat, "accept") || !strcmp(e0->cat, "poll"))
		rc = asprintf(&key, "in %s at %s for %s", e0->cat, e0->addr, tl);
	else if (!strcmp(e0->cat, "connect"))
		rc = asprintf(&key, "in connect to %s for %s", e0->addr, tl);
	else if (!strcmp(e0->cat, "proxy"))
		rc = asprintf(&key, "for a proxy answer from %s", tl);
	else
		rc = asprintf(&key, "in %s for %s", e0->cat, tl);
	return rc < 0 ? NULL : key;
}

/* The chain towards the top cause: waiters grouped by level (distance to
 * the root) and by how they wait, farthest first. */
static char *chain(struct nrr_hang *h, const struct graph *g)
{
	size_t n = nnodes(h);
	int *level = malloc((n + 1) * sizeof(*level));
	int *queue = malloc((n + 1) * sizeof(*queue));
	int *grp = malloc((n + 1) * sizeof(*grp));
	char **key = calloc(n + 1, sizeof(*key));
	bool *done = calloc(n + 1, sizeof(*done));
	char *s = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&s, &sz);
	if (!level || !queue || !grp || !key || !done || !f) {
		free(level), free(queue), free(grp), free(key), free(done);
		if (f)
			fclose(f);
		free(s);
		return NULL;
	}
	const struct cause *c = &h->c[0];
	for (size_t i = 0; i < n; i++)
		level[i] = -1;
	size_t qh = 0, qt = 0;
	level[c->node] = 0;
	queue[qt++] = c->node;
	if (c->cls == C_CYCLE) {   /* the cause's text walks the cycle: start from all of it */
		bool *on = calloc(n + 1, sizeof(*on)), *back = calloc(n + 1, sizeof(*back));
		int *stack = calloc(n + 1, sizeof(*stack));
		if (on && back && stack) {
			reach(h, g, c->node, on, stack);
			for (size_t u = 0; u < n; u++) {
				if (!on[u] || (int)u == c->node)
					continue;
				memset(back, 0, n * sizeof(*back));
				reach(h, g, (int)u, back, stack);
				if (back[c->node]) {
					level[u] = 0;
					queue[qt++] = (int)u;
				}
			}
		}
		free(on), free(back), free(stack);
	}
	int maxl = 0;
	while (qh < qt) {
		int u = queue[qh++];
		for (size_t k = g->roff[u]; k < g->roff[u + 1]; k++) {
			int v = h->e[g->radj[k]].from;
			if (level[v] < 0) {
				level[v] = level[u] + 1;
				if (level[v] > maxl)
					maxl = level[v];
				queue[qt++] = v;
			}
		}
	}
	for (size_t u = 0; u < n; u++)
		if (level[u] > 0)
			key[u] = wait_key(h, g, level, (int)u, grp);
	bool first = true;
	for (int l = maxl; l >= 1; l--) {
		for (size_t u = 0; u < n; u++) {
			if (level[u] != l || done[u] || !key[u])
				continue;
			size_t ng = 0;
			for (size_t v = u; v < n; v++)
				if (level[v] == l && !done[v] && key[v] && !strcmp(key[v], key[u])) {
					done[v] = true;
					grp[ng++] = (int)v;
				}
			char what[1024];
			rank_list(h, grp, ng, what, sizeof(what));
			fprintf(f, "%s%s %s %s", first ? "" : "; ", what, ng > 1 ? "wait" : "waits", key[u]);
			first = false;
		}
	}
	fprintf(f, "%s%s", first ? "" : "; ", c->text ? c->text : "");
	fclose(f);
	for (size_t u = 0; u < n; u++)
		free(key[u]);
	free(level), free(queue), free(grp), free(key), free(done);
	return s;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static const char *meta_end(size_t i, void *arg, uint64_t *wall)
{
	const struct nrr_proc *p = &((const struct nrr_hang *)arg)->in->proc[i];
	*wall = p->end_wall;
	return nrr_proc_end_key(p);
}

int nrr_hang_analyze(struct nrr_inputs *in, struct nrr_hang **out)
{
	struct nrr_hang *h = calloc(1, sizeof(*h));
	if (!h)
		return -EINVAL;
	h->in = in;
	h->np = in->n;
	h->p = calloc(h->np + 1, sizeof(*h->p));
	h->base_wall = in->base_wall;
	h->root_owner = -1;
	h->first_bad = -1;
	if (!h->p) {
		free(h);
		return -EINVAL;
	}
	h->cut = nrr_job_stopped_at(h->np, meta_end, h);
	nrr_progress_init(&h->prog, in);
	for (size_t i = 0; i < h->np; i++) {
		int rc = read_proc(h, i);
		if (rc) {
			nrr_progress_end(&h->prog);
			nrr_hang_free(h);
			return -EINVAL;
		}
		if (h->p[i].end_wall > h->job_end)
			h->job_end = h->p[i].end_wall;
	}
	nrr_progress_end(&h->prog);
	job_size(h);
	/* rank -> node in one pass over each (not ranks x processes) */
	h->missing = calloc((size_t)h->nranks + 1, sizeof(int));
	h->rank_node = malloc(((size_t)h->nranks + 1) * sizeof(int));
	if (!h->missing || !h->rank_node) {
		nrr_hang_free(h);
		return -EINVAL;
	}
	for (int r = 0; r < h->nranks; r++)
		h->rank_node[r] = -1;
	for (size_t i = h->np; i-- > 0;)   /* (the first process of a rank wins) */
		if (h->p[i].rank >= 0 && h->p[i].rank < h->nranks)
			h->rank_node[h->p[i].rank] = (int)i;
	for (int r = 0; r < h->nranks; r++)
		if (h->rank_node[r] < 0) {
			h->rank_node[r] = (int)(h->np + h->nmissing);
			h->missing[h->nmissing++] = r;
		}
	if (h->root_addr[0]) {
		for (size_t i = 0; i < h->np && h->root_owner < 0; i++)
			for (size_t k = 0; k < h->p[i].nsocks; k++)
				if (h->p[i].socks[k].role == 1 && is_root(h, h->p[i].socks[k].local))
					h->root_owner = (int)i;
	}
	struct graph g = { 0 };
	if (build_edges(h) || graph_build(h, &g) || find_causes(h, &g)) {
		nrr_run_say(NRR_RUN_NOTE, "hang", "out of memory");
		graph_free(&g);
		nrr_hang_free(h);
		return -EINVAL;
	}
	for (size_t i = 0; i < h->np; i++)
		h->found |= h->p[i].waiting;
	if (h->found && h->nc)
		h->summary = chain(h, &g);
	else if (h->found)
		h->summary = strdup("ranks wait, but the traces do not say on what");
	else
		h->summary = strdup("no hang: no traced process waits at the end of its trace");
	/* without a hang: the first rank to end abnormally (died, killed,
	 * exit status not 0), the others' ends may follow from it */
	for (size_t i = 0; i < h->np && !h->found; i++) {
		struct hproc *p = &h->p[i];
		bool bad = p->rank >= 0 && strcmp(p->end_how, "exit 0") && strcmp(p->end_how, "exec");
		uint64_t when = nrr_end_order(p->end_how, p->end_wall, h->cut);
		if (bad && (h->first_bad < 0 ||
			    when < nrr_end_order(h->p[h->first_bad].end_how, h->p[h->first_bad].end_wall, h->cut)))
			h->first_bad = (int)i;
	}
	if (h->first_bad >= 0) {
		struct hproc *p = &h->p[h->first_bad];
		h->first_bad_text = describe(h, h->first_bad, p->end_how[0] && strncmp(p->end_how, "signal ", 7) ? C_EXITED : C_DIED, false);
	}
	graph_free(&g);
	*out = h;
	return 0;
}

bool nrr_hang_found(const struct nrr_hang *h)
{
	return h->found;
}

const char *nrr_hang_summary(const struct nrr_hang *h)
{
	return h->summary ? h->summary : "";
}

int nrr_hang_root_rank(const struct nrr_hang *h)
{
	if (!h->found)
		return h->first_bad >= 0 ? h->p[h->first_bad].rank : -1;
	return h->nc ? node_rank(h, h->c[0].node) : -1;
}

void nrr_hang_free(struct nrr_hang *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->np; i++) {
		struct hproc *p = &h->p[i];
		for (uint32_t k = 0; p->st && k < p->nst; k++) {
			free(p->st[k].inner.text);
			free(p->st[k].outer.text);
		}
		free(p->st);
		free(p->socks);
		free(p->pend);
		free(p->last_text);
		free(p->fail_text);
	}
	for (size_t i = 0; i < h->nc; i++)
		free(h->c[i].text);
	free(h->c);
	free(h->p);
	free(h->missing);
	free(h->rank_node);
	free(h->e);
	free(h->summary);
	free(h->first_bad_text);
	free(h);
}

/* ------------------------------------------------------------ output */

static void end_text(const struct nrr_hang *h, const struct hproc *p, char *buf, size_t len)
{
	if (p->end_how[0])
		snprintf(buf, len, "trace ended at %.6f s by %s", rel(h, p->end_wall), p->end_how);
	else if (!p->end_wall)
		snprintf(buf, len, "no call and no end recorded (lost with its process)");
	else
		snprintf(buf, len, "trace stops at %.6f s, no end recorded%s", rel(h, p->end_wall),
			 p->last_seq ? "" : ", no complete call");
}

static void print_proc(FILE *f, const struct nrr_hang *h, const struct hproc *p)
{
	char et[160];
	end_text(h, p, et, sizeof(et));
	fprintf(f, "  %s (%s, %s): %s; %s\n", p->label, p->who, p->path, p->waiting ? "WAITING" : p->exited ? "ended" : "not waiting", et);
	if (p->last_text)
		fprintf(f, "    last completed: %s at %.6f s\n", p->last_text, rel(h, p->last_wall));
	else
		fprintf(f, "    last completed: none\n");
	for (uint32_t k = 0; k < p->nst; k++) {
		const struct hstream *st = &p->st[k];
		if (st->ninflight) {
			fprintf(f, "    in flight, thread %u: ", st->tid);
			if (st->inner.cat)
				fprintf(f, "[%s] ", st->inner.cat);
			fprintf(f, "%s since %.6f s, for ", st->inner.text ? st->inner.text : "?", rel(h, st->inner.wall));
			put_for(f, st->inner.dur);
			if (st->inner.at_cut)
				fprintf(f, " (when the job was stopped; it returned after)");
			fputc('\n', f);
			if (st->ninflight > 1) {
				fprintf(f, "      outermost of %u: %s since %.6f s, for ", st->ninflight, st->outer.text ? st->outer.text : "?",
					rel(h, st->outer.wall));
				put_for(f, st->outer.dur);
				fputc('\n', f);
			}
		}
		if (st->run_fn)
			fprintf(f, "    thread %u: polling %s since %.6f s, %llu times (last at %.6f s)\n", st->tid, st->run_fn->name,
				rel(h, st->run_since), (unsigned long long)st->run_n, rel(h, st->run_last));
		if (st->cr_trailing)
			fprintf(f, "    thread %u: retrying connect to %s since %.6f s, %llu times refused (%s)\n", st->tid, st->cr_addr,
				rel(h, st->cr_since), (unsigned long long)st->cr_n,
				strerrorname_np((int)st->cr_err) ? strerrorname_np((int)st->cr_err) : "?");
	}
	if (p->coll.seen && !p->coll.last[0])
		fprintf(f, "    collective: none started\n");
	else if (p->coll.seen)
	{
		fprintf(f, "    collective: %s %s since %.6f s", nrr_coll_open(&p->coll) ? "in" : "last (done)", p->coll.last,
			rel(h, p->coll.last_wall));
		if (p->coll.ngroups)
			fprintf(f, ", its group not ended");
		if (p->coll.proxy_open)
			fprintf(f, ", %llu proxy operations unfinished", (unsigned long long)p->coll.proxy_open);
		fputc('\n', f);
	}
	for (size_t k = 0; k < p->npend; k++)
		fprintf(f, "    proxy request %s (opId 0x%llx) on fd %d unanswered since %.6f s\n", p->pend[k].type,
			(unsigned long long)p->pend[k].opid, p->pend[k].fd, rel(h, p->pend[k].wall));
}

void nrr_hang_print_text(FILE *f, const struct nrr_hang *h)
{
	size_t ranked = 0;
	for (size_t i = 0; i < h->np; i++)
		ranked += h->p[i].rank >= 0;
	fprintf(f, "ncclrr hang: %zu traced processes, %zu with a rank", h->np, ranked);
	if (h->nranks)
		fprintf(f, "; %d ranks expected (%s)", h->nranks, h->nranks_src);
	if (h->nmissing)
		fprintf(f, ", %zu without a trace", h->nmissing);
	if (h->root_addr[0])
		fprintf(f, "; bootstrap root %s (NCCL_COMM_ID)", h->root_addr);
	fputc('\n', f);
	if (h->cut != UINT64_MAX)
		fprintf(f, "The job was stopped at %.6f s (SIGTERM, SIGINT or SIGHUP): the state at that instant is analyzed.\n",
			rel(h, h->cut));
	if (!h->found) {
		fprintf(f, "%sNo hang%s: no traced process waits at the end of its trace.\n", nrr_color(f, NRR_COLOR_GOOD),
			nrr_color_end(f));
		if (h->first_bad_text) {
			/* the rank it begins with ("rank 5 died: ...") in the rank's colour */
			const char *t = h->first_bad_text;
			size_t lb = strncmp(t, "rank ", 5) ? 0 : 5 + strspn(t + 5, "0123456789");
			fprintf(f, "%sFirst abnormal end:%s %s%.*s%s%s\n", nrr_color(f, NRR_COLOR_ERROR), nrr_color_end(f),
				nrr_color(f, NRR_COLOR_RANK), (int)lb, t, nrr_color_end(f), t + lb);
		}
	} else {
		char lb[64];
		if (h->nc)
			fprintf(f, "%sHANG%s, root cause: %s%s%s (%s)\n", nrr_color(f, NRR_COLOR_ERROR), nrr_color_end(f),
				nrr_color(f, NRR_COLOR_RANK), node_label(h, h->c[0].node, lb, sizeof(lb)), nrr_color_end(f),
				cls_name[h->c[0].cls]);
		else
			fprintf(f, "%sHANG%s: processes wait, but the traces do not say on what\n", nrr_color(f, NRR_COLOR_ERROR),
				nrr_color_end(f));
		fprintf(f, "Chain: %s\n", nrr_hang_summary(h));
		if (h->nc) {
			fprintf(f, "\nRoot causes, most likely first:\n");
			for (size_t i = 0; i < h->nc; i++)
				fprintf(f, "  %zu. [%s, %d waiting] %s\n", i + 1, cls_name[h->c[i].cls], h->c[i].score,
					h->c[i].text ? h->c[i].text : "");
		}
		fprintf(f, "\nWait-for graph (%zu edges):\n", h->ne);
		for (size_t i = 0; i < h->ne; i++) {
			char a[64], b[64];
			fprintf(f, "  %s -> %s: %s\n", node_label(h, h->e[i].from, a, sizeof(a)),
				h->e[i].to >= 0 ? node_label(h, h->e[i].to, b, sizeof(b)) : "(nothing traced)", h->e[i].detail);
		}
	}
	if (h->nmissing) {
		char list[512];
		int *nodes = malloc(h->nmissing * sizeof(*nodes));
		if (nodes) {
			for (size_t i = 0; i < h->nmissing; i++)
				nodes[i] = (int)(h->np + i);
			rank_list(h, nodes, h->nmissing, list, sizeof(list));
			fprintf(f, "\nNo trace: %s\n", list);
			free(nodes);
		}
	}
	fprintf(f, "\nRanks:\n");
	for (size_t i = 0; i < h->np; i++)
		if (h->p[i].rank >= 0)
			print_proc(f, h, &h->p[i]);
	bool other = false;
	for (size_t i = 0; i < h->np; i++)
		if (h->p[i].rank < 0) {
			if (!other)
				fprintf(f, "\nProcesses without a rank (launchers, helpers; in the graph only if a rank waits on them):\n");
			other = true;
			print_proc(f, h, &h->p[i]);
			fprintf(f, "    argv: %s\n", h->p[i].argv0);
		}
}

/* (hang writes "" where a text is missing) */
static void json_str(FILE *f, const char *s)
{
	nrr_json_strz(f, s ? s : "");
}

static void json_node(FILE *f, const struct nrr_hang *h, int n)
{
	char lb[64];
	fprintf(f, "{\"node\": %d, \"rank\": ", n);
	if (node_rank(h, n) >= 0)
		fprintf(f, "%d", node_rank(h, n));
	else
		fputs("null", f);
	fputs(", \"label\": ", f);
	json_str(f, node_label(h, n, lb, sizeof(lb)));
	fputc('}', f);
}

void nrr_hang_print_json(FILE *f, const struct nrr_hang *h)
{
	fprintf(f, "{\n  \"hang\": %s,\n  \"summary\": ", h->found ? "true" : "false");
	json_str(f, nrr_hang_summary(h));
	fprintf(f, ",\n  \"nranks_expected\": %d,\n  \"nranks_source\": ", h->nranks);
	json_str(f, h->nranks_src);
	fputs(",\n  \"bootstrap_root\": ", f);
	if (h->root_addr[0])
		json_str(f, h->root_addr);
	else
		fputs("null", f);
	fputs(",\n  \"stopped_at_s\": ", f);
	if (h->cut != UINT64_MAX)
		fprintf(f, "%.6f", rel(h, h->cut));
	else
		fputs("null", f);
	fputs(",\n  \"root_rank\": ", f);
	if (nrr_hang_root_rank(h) >= 0)
		fprintf(f, "%d", nrr_hang_root_rank(h));
	else
		fputs("null", f);
	fputs(",\n  \"first_abnormal_end\": ", f);
	if (h->first_bad_text)
		json_str(f, h->first_bad_text);
	else
		fputs("null", f);
	fputs(",\n  \"root_causes\": [", f);
	for (size_t i = 0; i < h->nc; i++) {
		fprintf(f, "%s\n    {\"kind\": ", i ? "," : "");
		json_str(f, cls_name[h->c[i].cls]);
		fputs(", \"who\": ", f);
		json_node(f, h, h->c[i].node);
		fprintf(f, ", \"waiting\": %d, \"text\": ", h->c[i].score);
		json_str(f, h->c[i].text);
		fputc('}', f);
	}
	fputs("\n  ],\n  \"missing_ranks\": [", f);
	for (size_t i = 0; i < h->nmissing; i++)
		fprintf(f, "%s%d", i ? ", " : "", h->missing[i]);
	fputs("],\n  \"edges\": [", f);
	for (size_t i = 0; i < h->ne; i++) {
		fprintf(f, "%s\n    {\"from\": ", i ? "," : "");
		json_node(f, h, h->e[i].from);
		fputs(", \"to\": ", f);
		if (h->e[i].to >= 0)
			json_node(f, h, h->e[i].to);
		else
			fputs("null", f);
		fputs(", \"wait\": ", f);
		json_str(f, h->e[i].cat);
		fputs(", \"address\": ", f);
		json_str(f, h->e[i].addr);
		fputs(", \"detail\": ", f);
		json_str(f, h->e[i].detail);
		fputc('}', f);
	}
	fputs("\n  ],\n  \"processes\": [", f);
	for (size_t i = 0; i < h->np; i++) {
		const struct hproc *p = &h->p[i];
		fprintf(f, "%s\n    {\"node\": %zu, \"rank\": ", i ? "," : "", i);
		if (p->rank >= 0)
			fprintf(f, "%d", p->rank);
		else
			fputs("null", f);
		fputs(", \"who\": ", f);
		json_str(f, p->who);
		fputs(", \"file\": ", f);
		json_str(f, p->path);
		fprintf(f, ", \"waiting\": %s, \"end\": {\"time_s\": %.6f, \"how\": ", p->waiting ? "true" : "false",
			rel(h, p->end_wall));
		if (p->end_how[0])
			json_str(f, p->end_how);
		else
			fputs("null", f);
		fputs("}, \"last_call\": ", f);
		if (p->last_text) {
			fputs("{\"call\": ", f);
			json_str(f, p->last_text);
			fprintf(f, ", \"time_s\": %.6f}", rel(h, p->last_wall));
		} else {
			fputs("null", f);
		}
		if (p->coll.seen) {
			fputs(", \"collective\": ", f);
			if (p->coll.last[0]) {
				fputs("{\"op\": ", f);
				json_str(f, p->coll.last);
				fprintf(f, ", \"in\": %s, \"time_s\": %.6f, \"group_open\": %s, \"proxy_ops_open\": %llu}",
					nrr_coll_open(&p->coll) ? "true" : "false", rel(h, p->coll.last_wall),
					p->coll.ngroups ? "true" : "false", (unsigned long long)p->coll.proxy_open);
			} else {
				fputs("null", f);
			}
		}
		fputs(", \"threads\": [", f);
		bool first = true;
		for (uint32_t k = 0; k < p->nst; k++) {
			const struct hstream *st = &p->st[k];
			if (!st->ninflight && !st->run_fn && !st->cr_trailing)
				continue;
			fprintf(f, "%s{\"tid\": %u", first ? "" : ", ", st->tid);
			first = false;
			if (st->ninflight) {
				const struct flight *fl[2] = { &st->inner, st->ninflight > 1 ? &st->outer : &st->inner };
				const char *nm[2] = { "innermost", "outermost" };
				for (int j = 0; j < 2; j++) {
					fprintf(f, ", \"%s\": {\"call\": ", nm[j]);
					json_str(f, fl[j]->text);
					fputs(", \"blocked_in\": ", f);
					if (fl[j]->cat)
						json_str(f, fl[j]->cat);
					else
						fputs("null", f);
					fprintf(f, ", \"since_s\": %.6f, \"for_s\": %.6f, \"returned_after_stop\": %s}", rel(h, fl[j]->wall),
						fl[j]->dur / 1e9, fl[j]->at_cut ? "true" : "false");
				}
				fprintf(f, ", \"in_flight\": %u", st->ninflight);
			}
			if (st->run_fn) {
				fputs(", \"polling\": {\"call\": ", f);
				json_str(f, st->run_fn->name);
				fprintf(f, ", \"since_s\": %.6f, \"times\": %llu}", rel(h, st->run_since), (unsigned long long)st->run_n);
			}
			if (st->cr_trailing) {
				fputs(", \"retrying_connect\": {\"address\": ", f);
				json_str(f, st->cr_addr);
				fprintf(f, ", \"since_s\": %.6f, \"times\": %llu}", rel(h, st->cr_since), (unsigned long long)st->cr_n);
			}
			fputc('}', f);
		}
		fputs("], \"proxy_pending\": [", f);
		for (size_t k = 0; k < p->npend; k++) {
			fprintf(f, "%s{\"fd\": %d, \"opId\": %llu, \"type\": ", k ? ", " : "", p->pend[k].fd,
				(unsigned long long)p->pend[k].opid);
			json_str(f, p->pend[k].type);
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("\n  ]\n}\n", f);
}

static void dot_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

void nrr_hang_print_dot(FILE *f, const struct nrr_hang *h)
{
	size_t n = nnodes(h);
	fputs("digraph ncclrr_hang {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n  label=", f);
	dot_str(f, nrr_hang_summary(h));
	fputs(";\n  labelloc=t;\n", f);
	bool unknown = false;
	for (size_t u = 0; u < n; u++) {
		bool in_graph = false;
		for (size_t i = 0; i < h->ne && !in_graph; i++)
			in_graph = h->e[i].from == (int)u || h->e[i].to == (int)u;
		if (!in_graph && (u >= h->np || h->p[u].rank < 0))
			continue;
		char lb[64], label[256];
		node_label(h, (int)u, lb, sizeof(lb));
		int cause = -1;
		for (size_t i = 0; i < h->nc; i++)
			if (h->c[i].node == (int)u && cause < 0)
				cause = (int)i;
		if (u >= h->np)
			snprintf(label, sizeof(label), "%s\\nno trace", lb);
		else if (h->p[u].end_how[0])
			snprintf(label, sizeof(label), "%s\\n%s\\nended: %s", lb, h->p[u].who, h->p[u].end_how);
		else
			snprintf(label, sizeof(label), "%s\\n%s", lb, h->p[u].who);
		fprintf(f, "  n%zu [label=\"%s%s%s\"%s];\n", u, label, cause >= 0 ? "\\nroot cause: " : "",
			cause >= 0 ? cls_name[h->c[cause].cls] : "",
			cause == 0 ? ", color=red, penwidth=3, style=filled, fillcolor=\"#ffdddd\""
			: cause > 0 ? ", color=red" : u >= h->np ? ", style=dashed" : "");
	}
	for (size_t i = 0; i < h->ne; i++) {
		if (h->e[i].to < 0)
			unknown = true;
		fprintf(f, "  n%d -> %s%d [label=", h->e[i].from, h->e[i].to >= 0 ? "n" : "unknown", h->e[i].to >= 0 ? h->e[i].to : 0);
		char lab[200];
		snprintf(lab, sizeof(lab), "%s%s%s", h->e[i].cat, h->e[i].addr[0] ? " " : "", h->e[i].addr);
		dot_str(f, lab);
		fputs("];\n", f);
	}
	if (unknown)
		fputs("  unknown0 [label=\"nothing traced\", shape=ellipse, style=dashed];\n", f);
	fputs("}\n", f);
}
