/* SPDX-License-Identifier: MIT */
/* hang_graph.c - the wait-for graph of `ncclrr hang` over the scanned
 * processes (matched socket endpoints, the bootstrap root, proxy RPCs) and
 * its root causes, most likely first, with the summary chain. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hang_internal.h"

/* ------------------------------------------------------------ the job */

void hang_job_size(struct nrr_hang *h)
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

bool hang_is_root(const struct nrr_hang *h, const char *addr)
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
			if (h->p[i].socks[k].role == NRR_SOCK_LISTEN && addr_match(h->p[i].socks[k].local, addr))
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
			if (i != self && o->role != NRR_SOCK_LISTEN && !strcmp(o->local, s->peer) && !strcmp(o->peer, s->local))
				return (int)i;
		}
	if (s->role == NRR_SOCK_CONNECT)
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
		if ((s->role == NRR_SOCK_CONNECT && hang_is_root(h, s->peer)) || (s->role == NRR_SOCK_LISTEN && hang_is_root(h, s->local)))
			return true;
	}
	return false;
}

/* the reports' word for a socket wait */
static const char *const wait_word[] = { [W_CONNECT] = "connect", [W_ACCEPT] = "accept", [W_POLL] = "poll",
					 [W_RECV] = "recv", [W_SEND] = "send", [W_PROXY] = "proxy" };

static int add_edge(struct nrr_hang *h, int from, int to, enum hwait kind, const char *cat, const char *addr,
		    const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static int add_edge(struct nrr_hang *h, int from, int to, enum hwait kind, const char *cat, const char *addr,
		    const char *fmt, ...)
{
	/* a thread waiting on another thread of its own process (NCCL's main
	 * thread on its own proxy) is no wait of the process */
	if (to == from)
		return 0;
	h->p[from].waiting = true;
	for (size_t i = 0; i < h->ne; i++)
		if (h->e[i].from == from && h->e[i].to == to && h->e[i].kind == kind && !strcmp(h->e[i].cat, cat))
			return 0;
	if (!nrr_grow(&h->e, h->ne, &h->ce, sizeof(*h->e)))
		return -ENOMEM;
	struct hedge *e = &h->e[h->ne++];
	e->from = from;
	e->to = to;
	e->kind = (uint8_t)kind;
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
		struct sockrec *s = hang_sock_open((struct hproc *)&h->p[i], fds[j]);
		if (!s || s->role == NRR_SOCK_LISTEN)
			return true;
	}
	return false;
}

/* @kind: W_ACCEPT, or W_POLL (a poll on the listener) */
static int edges_accept(struct nrr_hang *h, size_t i, const struct sockrec *l, enum hwait kind)
{
	const char *cat = wait_word[kind];
	if (!hang_is_root(h, l->local) || h->nranks <= 0) {
		/* NCCL's bootstrap listener: any peer connects to send a
		 * message; those that ended early never will */
		int rc = 0, nend = 0;
		for (size_t k = 0; k < h->np && !rc; k++)
			if (k != i && h->p[k].rank >= 0 && ended_early(h, k)) {
				nend++;
				rc = add_edge(h, (int)i, (int)k, kind, cat, l->local,
					      "%s at %s: peers connect here to send; %s ended early (%s) and never will", cat,
					      l->local, h->p[k].label, h->p[k].end_how[0] ? h->p[k].end_how : "no end recorded");
			}
		if (rc || nend)
			return rc;
		return add_edge(h, (int)i, -1, kind, cat, l->local, "%s: waits for a connection on %s (who should connect is not in the traces)",
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
				came = s->role == NRR_SOCK_CONNECT && addr_match(l->local, s->peer);
			}
		if (!came) {
			nmiss++;
			rc = add_edge(h, (int)i, n, kind, cat, l->local, "%s at %s (bootstrap root): rank %d never connected", cat,
				      l->local, r);
		}
	}
	if (!rc && !nmiss)
		rc = add_edge(h, (int)i, -1, kind, cat, l->local, "%s at %s (bootstrap root): every rank connected already", cat,
			      l->local);
	return rc;
}

/* @kind: W_ACCEPT, W_POLL, W_RECV or W_SEND */
static int edges_fd(struct nrr_hang *h, size_t i, int fd, enum hwait kind)
{
	const char *cat = wait_word[kind];
	struct sockrec *s = hang_sock_open(&h->p[i], fd);
	if (!s)
		return add_edge(h, (int)i, -1, kind, cat, NULL, "%s on fd %d (not a socket the trace knows)", cat, fd);
	if (s->role == ROLE_PAIR)
		return 0;   /* its own socketpair: no wait on another process */
	if (s->role == NRR_SOCK_LISTEN)
		return edges_accept(h, i, s, kind == W_POLL ? W_POLL : W_ACCEPT);
	int to = peer_of(h, i, s);
	if (to < 0 && hang_is_root(h, s->peer))
		to = node_of_rank(h, 0);   /* the bootstrap root's owner, traced or not */
	static const char *const types[] = { "", ", bootstrap", ", proxy", ", NET/Socket", ", NET/IB", ", RAS" };
	return add_edge(h, (int)i, to, kind, cat, s->peer, "%s on fd %d (%s -> %s%s)%s", cat, fd, s->local, s->peer,
			s->type < 6 ? types[s->type] : "", to < 0 ? ": no traced process owns the peer address" : "");
}

static int edges_connect(struct nrr_hang *h, size_t i, const char *addr, const char *what)
{
	int to = listener_of(h, addr);
	if (to < 0 && hang_is_root(h, addr))
		to = node_of_rank(h, 0);   /* rank 0 makes the bootstrap root */
	return add_edge(h, (int)i, to, W_CONNECT, wait_word[W_CONNECT], addr, "%s %s%s", what, addr,
			to < 0 ? ": no traced process listens there" : "");
}

static bool killed_outright(const struct nrr_hang *h, const struct hproc *p);

/* the wait of a blocked socket call (F_ACCEPT, F_RECV, F_SEND) */
static enum hwait wait_of(uint8_t fkind)
{
	return fkind == F_RECV ? W_RECV : fkind == F_SEND ? W_SEND : W_ACCEPT;
}

int hang_build_edges(struct nrr_hang *h)
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
					rc = edges_fd(h, i, f->fd, wait_of(f->kind));
				else if (f->kind == F_POLL && !poll_serves(h, i, f->pollfd, f->npoll))
					for (int j = 0; j < f->npoll && !rc; j++)
						rc = edges_fd(h, i, f->pollfd[j], W_POLL);
			} else if (st->run_fn) {
				if (st->run_kind == F_RECV || st->run_kind == F_SEND || st->run_kind == F_ACCEPT)
					rc = edges_fd(h, i, st->run_fd, wait_of(st->run_kind));
				else if (st->run_npoll) {
					if (!poll_serves(h, i, st->run_pollfd, st->run_npoll))
						for (int j = 0; j < st->run_npoll && !rc; j++)
							rc = edges_fd(h, i, st->run_pollfd[j], W_POLL);
				} else
					rc = add_edge(h, (int)i, -1, W_OTHER, st->run_fn->name, NULL, "polling %s since %.6f s, %llu times",
						      st->run_fn->name, rel(h, st->run_since), (unsigned long long)st->run_n);
			} else if (st->cr_trailing) {
				rc = edges_connect(h, i, st->cr_addr, "retrying connect to");
			} else if (f && f->cat) {
				rc = add_edge(h, (int)i, -1, W_OTHER, f->cat, NULL, "in %s: %s since %.6f s", f->cat,
					      f->text ? f->text : "?", rel(h, f->wall));
			}
		}
		for (size_t k = 0; k < p->npend && !rc; k++) {
			struct sockrec *s = hang_sock_open(p, p->pend[k].fd);
			int to = s ? peer_of(h, i, s) : -1;
			rc = add_edge(h, (int)i, to, W_PROXY, wait_word[W_PROXY], s ? s->peer : NULL, "an answer to proxy request %s (opId 0x%llx) on fd %d",
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


void hang_graph_free(struct graph *g)
{
	free(g->off), free(g->roff), free(g->adj), free(g->radj), free(g->term);
}

int hang_graph_build(const struct nrr_hang *h, struct graph *g)
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
		hang_graph_free(g);
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

static int cmp_int(const void *a, const void *b);

/* @waited: others wait on node @n (a root cause the graph leads to) */
char *hang_describe(const struct nrr_hang *h, int n, int cls, bool waited)
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
		return ends_before(x->when, y->when) ? -1 : 1;
	if (x->score != y->score)
		return y->score - x->score;
	return x->node - y->node;
}

int hang_find_causes(struct nrr_hang *h, const struct graph *g)
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
		h->c[h->nc++] = (struct cause){ (int)t, cls, score[t], hang_describe(h, (int)t, cls, true),
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
		if (first < 0 || ends_before(p->end_wall, h->p[first].end_wall))
			first = (int)i;
	}
	for (size_t k = 0; first >= 0 && k < h->nc; k++)
		if (h->c[k].node == first)
			first = -1;
	if (first >= 0) {
		int cls = classify_node(h, first);
		if (cause_group(cls) == C_DIED)
			h->c[h->nc++] = (struct cause){ first, cls, 0, hang_describe(h, first, cls, false), h->p[first].end_wall };
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
		hang_rank_list(h, mem, nm, list, sizeof(list));
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
void hang_rank_list(const struct nrr_hang *h, const int *nodes, size_t n, char *buf, size_t len)
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
		if (level[e->to] == level[u] - 1 && (!e0 || (e->kind == W_PROXY && e0->kind != W_PROXY)))
			e0 = e;
	}
	for (size_t k = g->off[u]; k < g->off[u + 1]; k++) {
		const struct hedge *e = &h->e[g->adj[k]];
		if (e0 && level[e->to] == level[u] - 1 && e->kind == e0->kind && !strcmp(e->cat, e0->cat))
			tg[nt++] = e->to;
	}
	if (!e0)
		return NULL;
	char tl[1024];
	hang_rank_list(h, tg, nt, tl, sizeof(tl));
	char *key = NULL;
	int rc;
	if (e0->kind == W_ACCEPT && !hang_is_root(h, e0->addr))   /* each on its own listener */
		rc = asprintf(&key, "in accept on their own listener for %s", tl);
	else if (e0->kind == W_ACCEPT || e0->kind == W_POLL)
		rc = asprintf(&key, "in %s at %s for %s", e0->cat, e0->addr, tl);
	else if (e0->kind == W_CONNECT)
		rc = asprintf(&key, "in connect to %s for %s", e0->addr, tl);
	else if (e0->kind == W_PROXY)
		rc = asprintf(&key, "for a proxy answer from %s", tl);
	else
		rc = asprintf(&key, "in %s for %s", e0->cat, tl);
	return rc < 0 ? NULL : key;
}

/* The chain towards the top cause: waiters grouped by level (distance to
 * the root) and by how they wait, farthest first. */
char *hang_chain(struct nrr_hang *h, const struct graph *g)
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
			hang_rank_list(h, grp, ng, what, sizeof(what));
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

