/* SPDX-License-Identifier: MIT */
/*
 * replay.c - the replay coordinator.
 *
 * Reads every trace once (a damaged one stops the replay here, before
 * anything runs, with the file and offset), works out the recorded failure
 * (the errors of processes that failed which processes that succeeded did
 * not have), then per replay (--repeat) forks one worker per replayed
 * process and follows them through a pipe of one-line reports and a
 * shared page of counters: divergences, recorded errors reached, calls
 * in flight at the end, hangs (no call finished anywhere for --timeout).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "callfmt.h"
#include "engine.h"
#include "nrr_meta.h"
#include "rundir.h"

/* A recorded error of the failure (or one every good process had too). */
struct perr {
	size_t proc;
	uint32_t stream;
	uint64_t seq, ts, wall;
	char fn[64];
	char res[96];
	bool api_benign;   /* a failure a healthy run has too (nrr_call_benign()) */
	bool retry;        /* a "retry" one (a connect refused) not yet retried */
	bool benign;
	bool reached, injected;   /* this replay */
	bool entries;      /* failed by the entries it returned (nrr_call_entry_errors(): a poll's completions) */
};

struct addrset { uint8_t (*k)[24]; uint8_t *kl; size_t n, cap, capl; };

struct coord {
	const struct nrr_replay_opts *o;
	struct nrr_proc_info *pi;
	size_t n;
	struct perr *err;
	size_t nerr, errcap;
	/* recorded listen addresses, connector addresses and connections
	 * (nrr_conn_key) of replayed processes */
	struct { uint8_t key[NRR_XMAP_MAX]; uint8_t len, kind; size_t proc; uint64_t wall; } *addr;
	size_t naddr, addrcap;
	/* UNIX socket names bound (sun_path bytes), sent datagrams to, and
	 * the datagrams sent (name and first bytes, nrr_dgram_key) */
	struct { uint8_t name[NRR_XMAP_MAX]; uint8_t len; uint8_t kind; size_t proc; } *unix_names;
	size_t nunix, unixcap;
	/* IPC handle bytes made by cuIpcGet{Mem,Event}Handle, with their set (nrr_rcuda_ipc_made) */
	struct { uint8_t key[NRR_XMAP_MAX]; uint8_t len; const char *kind; size_t proc; uint64_t wall; } *ipc;
	size_t nipc, ipccap;
	size_t nverbs;     /* calls whose results go into the verbs remap table (nrr_rverbs_publishes) */
	uint64_t total_units;
	uint64_t stop;     /* when the job was stopped from outside (nrr_job_stopped_at()) */
};

/* The outcome of one replay, compared between --repeat runs. */
struct proc_out {
	char inflight[200];   /* "recv #199, poll #12": where its threads stopped as recorded */
	bool diverged;
	bool ended;           /* its worker reported its end ("X") or why it could not start ("F") */
};

struct outcome {
	char first[512];     /* first divergence, "" none */
	size_t ndiv;
	char div_sig[256];   /* "rank:stream:seq:fn" of the first */
	bool hung;
	char hang[1024];
	char undesc[2048];   /* "undescribed call: …" lines */
	unsigned unsupported;
	char unsup_first[400];     /* of the lowest process index, then call number: the same every replay */
	size_t unsup_proc;
	uint64_t unsup_seq;
	unsigned reached_sig; /* chain elements reproduced (count) */
	bool fatal;
	bool fatal_setup;    /* a trace a worker cannot read, or no fake runtime (exit 2) */
	char fatal_msg[1024];
	double secs;
	uint64_t units;
	unsigned injected;
	struct proc_out *proc;   /* per process, this replay */
};

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

enum { A_LISTEN, A_CONNECT, A_CONN };

/* The local address @v of a socket of process @proc (A_LISTEN, A_CONNECT),
 * or (A_CONN) its connection to @peer. */
static int add_addr(struct coord *x, size_t proc, const nrr_value *v, const nrr_value *peer, uint8_t kind, uint64_t wall)
{
	if (!v->p || v->len < 8 || (v->p[0] != AF_INET && v->p[0] != AF_INET6))
		return 0;
	uint8_t key[2 * NRR_XMAP_MAX];
	size_t kl = kind == A_CONN ? nrr_conn_key(v->p, v->len, peer->p, peer->len, key) : nrr_addr_key(v->p, v->len, key);
	if (!kl || kl > NRR_XMAP_MAX)
		return 0;
	if (!nrr_grow(&x->addr, x->naddr, &x->addrcap, sizeof(*x->addr)))
		return -ENOMEM;
	memcpy(x->addr[x->naddr].key, key, kl);
	x->addr[x->naddr].len = (uint8_t)kl;
	x->addr[x->naddr].kind = kind;
	x->addr[x->naddr].proc = proc;
	x->addr[x->naddr].wall = wall;
	x->naddr++;
	return 0;
}

enum { UNIX_BOUND, UNIX_SENT, UNIX_DGRAM };

/* A UNIX name a process binds, or sends datagrams to; or (UNIX_DGRAM,
 * @name already a key) a datagram it sends. */
static int add_unix(struct coord *x, size_t proc, const uint8_t *name, size_t n, uint8_t kind)
{
	if (kind != UNIX_DGRAM)
		n = nrr_unix_key(name, n, &name);
	if (!n)
		return 0;
	if (!nrr_grow(&x->unix_names, x->nunix, &x->unixcap, sizeof(*x->unix_names)))
		return -ENOMEM;
	memcpy(x->unix_names[x->nunix].name, name, n);
	x->unix_names[x->nunix].len = (uint8_t)n;
	x->unix_names[x->nunix].proc = proc;
	x->unix_names[x->nunix].kind = kind;
	x->nunix++;
	return 0;
}

/* Read one process's trace through: validate, count, collect. */
/* A call of @fn succeeded on stream @s: the failures of @fn before it on
 * that stream that a retry makes benign (nrr_call_benign_rule()) were. */
static void retried(struct coord *x, size_t from, uint32_t s, const char *fn, size_t *n)
{
	for (size_t a = from; a < x->nerr; a++) {
		struct perr *e = &x->err[a];
		if (e->retry && e->stream == s && !strcmp(e->fn, fn)) {
			e->retry = false;
			e->api_benign = true;
			--*n;
		}
	}
}

bool nrr_replay_threads_ok(nrr_reader *r, FILE *err)
{
	uint32_t n = nrr_reader_info(r)->nstreams;
	if (n <= NRR_REPLAY_MAX_THREADS)
		return true;
	fprintf(err, "ncclrr replay: %s has %u threads; replay runs at most %u threads a process (an NCCL rank has tens), so this trace is not replayed: is it damaged or made by hand? (`ncclrr stats` reads it)\n",
		nrr_reader_path(r), n, NRR_REPLAY_MAX_THREADS);
	return false;
}

/* The meta whole_ts of @r's last tail, or 0 (none, or not a time of this
 * trace: before its header's clock or after its end_ts). */
static uint64_t whole_ts(nrr_reader *r)
{
	const char *v = nrr_reader_meta(r, "whole_ts");
	const nrr_file_info *fi = nrr_reader_info(r);
	char *e;
	unsigned long long t = v ? strtoull(v, &e, 10) : 0;
	if (!v || e == v || *e || t < fi->mono_ns || !fi->end_ts || t > fi->end_ts)
		return 0;
	return t;
}

static int scan(struct coord *x, size_t i)
{
	nrr_reader *r = x->o->readers[i];
	struct nrr_proc_info *pi = &x->pi[i];
	const nrr_file_info *fi = nrr_reader_info(r);
	pi->path = nrr_reader_path(r);
	const char *v;
	long rank = nrr_meta_rank(r);
	pi->rank = rank >= 0 ? (int)rank : -1;
	if (pi->rank >= 0)
		snprintf(pi->who, sizeof(pi->who), "rank %d", pi->rank);
	else {
		const char *exe = nrr_reader_meta(r, "exe"), *base = exe ? strrchr(exe, '/') : NULL;
		char host[64];
		snprintf(host, sizeof(host), "%s", (v = nrr_reader_meta(r, "host")) ? v : "?");
		snprintf(pi->who, sizeof(pi->who), "%s:%u (%s)", host, fi->pid, base ? base + 1 : exe ? exe : "no rank");
	}
	snprintf(pi->end, sizeof(pi->end), "%s", (v = nrr_reader_meta(r, "end")) ? v : "");
	snprintf(pi->topo, sizeof(pi->topo), "%s", (v = nrr_reader_meta(r, "env.NCCLRR_TOPO")) ? v : "");
	snprintf(pi->host, sizeof(pi->host), "%s", (v = nrr_reader_meta(r, "env.NCCLRR_HOST")) ? v : "");
	pi->inject = x->o->inject;
	uint64_t first = UINT64_MAX, last = 0;
	uint64_t whole = UINT64_MAX;   /* the earliest stop of a thread that was running */
	for (uint32_t s = 0; s < fi->nstreams; s++) {
		nrr_cursor *cur;
		int ret = nrr_cursor_open(&cur, r, s);
		if (ret < 0)
			return ret;
		struct nrr_classify k = { .skip = -1 };
		const nrr_call *c;
		size_t retry_from = x->nerr, nretry = 0;   /* this stream's failures not yet retried */
		uint64_t done = 0, open = 0;   /* its last return; the last call open at its end */
		while ((ret = nrr_cursor_next(cur, &c)) == 0) {
			if (c->kind != NRR_CALL || !c->fn)
				continue;
			if (c->phase == NRR_PHASE_INFLIGHT && c->ts > open)
				open = c->ts;
			else if (c->done && c->ts + c->dur > done)
				done = c->ts + c->dur;
			pi->gpu |= nrr_call_gpu_side(c);
			uint64_t key = nrr_call_key(c);
			if (c->ts < first)
				first = c->ts;
			if (key > last)
				last = key;
			int kind = nrr_classify(&k, c);
			if (kind < 0)
				continue;
			pi->units++;
			pi->calls++;
			pi->uses_cuda |= kind == U_EXEC && nrr_rcuda_handles(c->fn);
			if (kind == U_EXEC && !strcmp(c->fn->name, "bind")) {
				int ai = nrr_arg_index(c, "addr");
				if (ai >= 0 && c->args[ai].len > 2 && c->args[ai].p[0] == 1 /* AF_UNIX */ &&
				    (ret = add_unix(x, i, c->args[ai].p, c->args[ai].len, UNIX_BOUND)) < 0)
					break;
			}
			const char *param, *set = kind == U_EXEC && !nrr_call_failed(c) ? nrr_rcuda_ipc_made(c->fn, &param) : NULL;
			if (set) {
				int hi = nrr_arg_index(c, param);
				if (hi >= 0 && c->args[hi].len && c->args[hi].len <= NRR_XMAP_MAX) {
					if (!nrr_grow(&x->ipc, x->nipc, &x->ipccap, sizeof(*x->ipc))) {
						ret = -ENOMEM;
						break;
					}
					memcpy(x->ipc[x->nipc].key, c->args[hi].p, c->args[hi].len);
					x->ipc[x->nipc].len = (uint8_t)c->args[hi].len;
					x->ipc[x->nipc].kind = set;
					x->ipc[x->nipc].proc = i;
					x->ipc[x->nipc].wall = nrr_reader_wall(r, c->ts);
					x->nipc++;
				}
			}
			if (kind == U_EXEC && !nrr_call_failed(c) && nrr_rverbs_publishes(c->fn))
				x->nverbs++;
			if (kind == U_EXEC && !strcmp(c->fn->name, "sendmsg")) {
				const uint8_t *nm;
				size_t nl = msg_name(c, &nm);
				uint8_t dk[NRR_XMAP_MAX];
				size_t dl = nrr_dgram_key(c, dk);
				if (nl > 2 && nm[0] == 1 && (ret = add_unix(x, i, nm, nl, UNIX_SENT)) < 0)
					break;
				if (dl && (ret = add_unix(x, i, dk, dl, UNIX_DGRAM)) < 0)
					break;
			}
			if (kind == U_INFO) {
				int64_t role = -1;
				int ri = nrr_arg_index(c, "role");
				if (ri >= 0)
					role = (int64_t)c->args[ri].u;
				int li = nrr_arg_index(c, "local"), pe = nrr_arg_index(c, "peer");
				uint64_t wall = nrr_reader_wall(r, c->ts);
				if (li >= 0 && (role == NRR_SOCK_LISTEN || role == NRR_SOCK_CONNECT) &&
				    (ret = add_addr(x, i, &c->args[li], NULL, role == NRR_SOCK_LISTEN ? A_LISTEN : A_CONNECT,
						    wall)) < 0)
					break;
				if (li >= 0 && pe >= 0 && (role == NRR_SOCK_CONNECT || role == NRR_SOCK_ACCEPT) &&
				    (ret = add_addr(x, i, &c->args[li], &c->args[pe], A_CONN, wall)) < 0)
					break;
			}
			if (kind != U_INFLIGHT && c->done && !nrr_call_failed(c) && nretry)
				retried(x, retry_from, s, c->fn->name, &nretry);
			if (kind != U_INFLIGHT && nrr_call_failed(c)) {
				if (!nrr_grow(&x->err, x->nerr, &x->errcap, sizeof(*x->err))) {
					ret = -ENOMEM;
					break;
				}
				struct perr *e = &x->err[x->nerr++];
				memset(e, 0, sizeof(*e));
				e->proc = i;
				e->stream = s;
				e->seq = c->seq;
				e->ts = c->ts;
				/* ordered by when the call returned: a failing call comes before
				 * the NCCL call that contained it and passed its error on */
				e->wall = nrr_reader_wall(r, c->ts + c->dur);
				snprintf(e->fn, sizeof(e->fn), "%s", c->fn->name);
				nrr_result_text(c, e->res, sizeof(e->res));
				unsigned at;
				int64_t st;
				e->entries = nrr_call_entry_errors(c, &at, &st) > 0;
				const nrr_benign_rule *rule = nrr_call_benign_rule(c);
				/* a refused connect is benign once it was retried (below) */
				e->api_benign = rule && strcmp(rule->kind, "retry") != 0;
				e->retry = rule && !e->api_benign;
				nretry += e->retry;
			}
		}
		if (ret < 0 && ret != NRR_EEOF) {
			const nrr_diag *d = nrr_cursor_diag(cur);
			char msg[1200];
			if (d && d->code)
				nrr_diag_format(d, msg, sizeof(msg));
			else
				snprintf(msg, sizeof(msg), "Cannot read trace: file=%s: %s", pi->path, nrr_strerror(ret));
			fprintf(stderr, "ncclrr replay: %s\n", msg);
			nrr_cursor_close(cur);
			return ret;
		}
		nrr_cursor_close(cur);
		/* a thread that returned from its last call after entering the
		 * one it is in at the end (or is in none) was running: what it
		 * did after that return is lost */
		if (done && open < done && done < whole)
			whole = done;
	}
	/* the tracer's last tail copied every thread from whole_ts on
	 * (FORMAT.md "How a trace ended"): a thread that was running then
	 * had made no traced call since its last return, what it did after
	 * whole_ts is what is lost.  (Older files, or a file killed while
	 * writing a tail, do not say: a running thread is whole only until
	 * its last return, all that is known.) */
	uint64_t tail = whole_ts(r);
	if (whole != UINT64_MAX && tail > whole)
		whole = tail;
	uint64_t end = fi->end_ts > last ? fi->end_ts : last;
	pi->end_wall = nrr_reader_wall(r, end ? end : 0);
	pi->whole_wall = whole != UINT64_MAX ? nrr_reader_wall(r, whole) : pi->end_wall;
	pi->wall_s = first != UINT64_MAX && last > first ? (double)(last - first) / 1e9 : 0;
	/* a helper (nothing of the GPU stack: a launcher probing X displays
	 * or servers that are not there) tells its story by its end: its
	 * connects refused are probes, not the failure */
	for (size_t a = 0; !pi->gpu && a < x->nerr; a++)
		if (x->err[a].proc == i && x->err[a].retry) {
			x->err[a].retry = false;
			x->err[a].api_benign = true;
		}
	return 0;
}

/* qsort order of error indices: same call and result together, by process */
static int cmp_call_result(const void *a, const void *b, void *errs)
{
	const struct perr *e = errs, *x = &e[*(const size_t *)a], *y = &e[*(const size_t *)b];
	int c = strcmp(x->fn, y->fn);
	if (!c)
		c = strcmp(x->res, y->res);
	return c ? c : (x->proc > y->proc) - (x->proc < y->proc);
}

/* An error is part of the failure unless the API description says a
 * healthy run has it too (port probing, an optional device absent, a
 * connect refused while the peer is not listening yet: nrr_call_benign(),
 * as diff and hang decide), its process ended well anyway, or a process
 * that ended well had it too (a netlink socket refused); when none ended
 * well (a job killed at its timeout), when most had it and one of them
 * ran on until a signal ended it (not when each one that had it exited
 * right after: NCCL 2.22's bootstrap race fails 7 of 8 ranks the same
 * way); when the trace
 * does not say how its process ended (LTTng), a refused connect is a
 * retry, not the failure. */
static void mark_benign(struct coord *x)
{
	bool any_ok = false;
	for (size_t i = 0; i < x->n; i++)
		any_ok |= !strcmp(x->pi[i].end, "exit 0");
	/* per call and result: how many processes had it, whether one of them
	 * ended well, whether one ran on until a signal ended it (grouped
	 * once: a job's thousands of refused connects made this quadratic) */
	size_t *ix = malloc((x->nerr ? x->nerr : 1) * sizeof(*ix));
	struct grp { size_t have; bool in_ok, in_survivor; } *g = malloc((x->nerr ? x->nerr : 1) * sizeof(*g));
	if (!ix || !g) {
		free(ix);
		free(g);
		return;   /* (nothing marked benign: every error counts) */
	}
	for (size_t a = 0; a < x->nerr; a++)
		ix[a] = a;
	qsort_r(ix, x->nerr, sizeof(*ix), cmp_call_result, x->err);
	for (size_t a = 0; a < x->nerr;) {
		size_t b = a;
		struct grp gr = { 0, false, false };
		for (; b < x->nerr && !strcmp(x->err[ix[b]].fn, x->err[ix[a]].fn) &&
		       !strcmp(x->err[ix[b]].res, x->err[ix[a]].res); b++) {
			size_t i = x->err[ix[b]].proc;
			if (b > a && x->err[ix[b - 1]].proc == i)
				continue;   /* that process counted once */
			gr.have++;
			gr.in_ok |= !strcmp(x->pi[i].end, "exit 0");
			gr.in_survivor |= strncmp(x->pi[i].end, "exit ", 5) != 0;
		}
		for (; a < b; a++)
			g[ix[a]] = gr;
	}
	for (size_t a = 0; a < x->nerr; a++) {
		struct perr *e = &x->err[a];
		if ((e->benign = e->api_benign))
			continue;
		if (!strcmp(x->pi[e->proc].end, "exit 0") || !strcmp(x->pi[e->proc].end, "exec"))
			e->benign = true;   /* its own process ended well despite it (a fork stub exec'd) */
		else if (any_ok)
			e->benign = g[a].in_ok;
		else if (!x->pi[e->proc].end[0] && !strcmp(e->fn, "connect") && strstr(e->res, "ECONNREFUSED"))
			e->benign = true;   /* no end recorded (LTTng): a refused connect is a retry */
		else
			e->benign = 2 * g[a].have > x->n && g[a].in_survivor;
	}
	free(ix);
	free(g);
}

/* Processes killed outright (nrr_no_end_means_killed): say so, it is
 * likely the failure. */
static void mark_killed(struct coord *x)
{
	size_t without = 0;
	for (size_t i = 0; i < x->n; i++)
		without += !x->pi[i].end[0];
	bool any = false;
	for (size_t i = 0; nrr_no_end_means_killed(without, x->n) && i < x->n; i++)
		if (!x->pi[i].end[0]) {
			snprintf(x->pi[i].end, sizeof(x->pi[i].end), "%s", NRR_END_KILLED);
			any = true;
		}
	for (size_t i = 0; i < x->n; i++)
		x->pi[i].any_killed = any;
}

static const char *proc_end(size_t i, void *arg, uint64_t *wall)
{
	const struct coord *x = arg;
	*wall = x->pi[i].end_wall;
	return x->pi[i].end;
}

/* When @pi's end counts for ordering the failed processes (after
 * mark_killed: a process killed outright has no end recorded). */
static uint64_t end_order(const struct coord *x, const struct nrr_proc_info *pi)
{
	return nrr_end_order(nrr_proc_killed(pi) ? "" : pi->end, pi->end_wall, x->stop);
}

static bool proc_failed(const struct nrr_proc_info *pi)
{
	return pi->end[0] && strcmp(pi->end, "exit 0") != 0 && strcmp(pi->end, "exec") != 0;
}

/* ------------------------------------------------------------ one replay */
static struct nrr_wstat *g_stats;

/* Did process @pi, killed outright, make something at @wall, after its
 * trace stopped being whole?  Its replay stops there (worker.c), so the
 * address or handle is not made: its peers' uses are served. */
static bool after_whole(const struct nrr_proc_info *pi, uint64_t wall)
{
	return nrr_proc_killed(pi) && wall >= pi->whole_wall;
}

static void publish_sets(struct coord *x)
{
	static const uint8_t one = 1;
	for (size_t a = 0; a < x->naddr; a++)
		if (x->addr[a].kind != A_CONN && x->pi[x->addr[a].proc].selected &&
		    !after_whole(&x->pi[x->addr[a].proc], x->addr[a].wall))
			nrr_xmap_put(x->addr[a].kind == A_LISTEN ? "lsel" : "csel", x->addr[a].key, x->addr[a].len, &one, 1);
	/* the listen addresses and connections of processes killed outright
	 * (mark_killed), with the wall time until which their trace is
	 * whole: their peers' calls on connections to them from then on, and
	 * reads of what they sent last, are served from the trace (rsock.c
	 * peer_killed); and those of processes that ended by themselves, with
	 * their end: a peer's send recorded after that end succeeded because
	 * the kernel took the bytes before the ending process's sockets were
	 * closed (rsock.c peer_gone) */
	for (size_t a = 0; a < x->naddr; a++) {
		const struct nrr_proc_info *pi = &x->pi[x->addr[a].proc];
		bool listen = x->addr[a].kind == A_LISTEN;
		if (x->addr[a].kind == A_CONNECT)
			continue;
		if (nrr_proc_killed(pi))
			nrr_xmap_put(listen ? "kill" : "killc", x->addr[a].key, x->addr[a].len, &pi->whole_wall,
				     sizeof(uint64_t));
		else if (pi->end[0] && pi->end_wall && strcmp(pi->end, "exec"))
			nrr_xmap_put(listen ? "gone" : "gonec", x->addr[a].key, x->addr[a].len, &pi->end_wall,
				     sizeof(uint64_t));
	}
	/* an IPC handle made by a replayed process, with the wall time until
	 * which its maker's trace is whole (a process killed outright), or
	 * UINT64_MAX: an open from then on is answered from the trace (the
	 * maker's replay may have ended: its trace stops before it did) */
	for (size_t a = 0; a < x->nipc; a++) {
		const struct nrr_proc_info *pi = &x->pi[x->ipc[a].proc];
		uint64_t until = nrr_proc_killed(pi) ? pi->whole_wall : UINT64_MAX;
		if (pi->selected && !after_whole(pi, x->ipc[a].wall))
			nrr_xmap_put(x->ipc[a].kind, x->ipc[a].key, x->ipc[a].len, &until, sizeof(until));
	}
	static const char *const set[][2] = { [UNIX_BOUND] = { "usel", NULL }, [UNIX_SENT] = { "usnd", NULL },
					       [UNIX_DGRAM] = { "dsel", "dnot" } };
	for (size_t a = 0; a < x->nunix; a++) {
		const char *k = set[x->unix_names[a].kind][!x->pi[x->unix_names[a].proc].selected];
		if (k)
			nrr_xmap_put(k, x->unix_names[a].name, x->unix_names[a].len, &one, 1);
	}
}

static struct perr *find_err(struct coord *x, size_t proc, uint32_t stream, uint64_t seq)
{
	for (size_t a = 0; a < x->nerr; a++)
		if (x->err[a].proc == proc && x->err[a].stream == stream && x->err[a].seq == seq)
			return &x->err[a];
	return NULL;
}

static void on_line(struct coord *x, size_t proc, char *line, struct outcome *out)
{
	const struct nrr_proc_info *pi = &x->pi[proc];
	unsigned stream;
	uint64_t seq, ts;
	int64_t fdn;
	int inj, n = 0;
	char fn[80];
	switch (line[0]) {
	case 'D':
		if (sscanf(line, "D %u %" SCNu64 " %" SCNu64 " %79s %n", &stream, &seq, &ts, fn, &n) >= 4 && n) {
			out->ndiv++;
			if (out->proc)
				out->proc[proc].diverged = true;
			if (!out->first[0]) {
				snprintf(out->first, sizeof(out->first), "%s #%" PRIu64 " %s: %s", pi->who, seq, fn, line + n);
				snprintf(out->div_sig, sizeof(out->div_sig), "%zu:%u:%" PRIu64 ":%s", proc, stream, seq, fn);
			} else if (x->o->verbose) {
				fprintf(x->o->out, "  then: %s #%" PRIu64 " %s: %s\n", pi->who, seq, fn, line + n);
			}
		}
		break;
	case 'E':
		if (sscanf(line, "E %u %" SCNu64 " %" SCNu64 " %d %79s", &stream, &seq, &ts, &inj, fn) == 5) {
			struct perr *e = find_err(x, proc, stream, seq);
			if (e) {
				e->reached = true;
				e->injected = inj;
			}
			out->injected += inj ? 1 : 0;
		}
		break;
	case 'I':
		if (sscanf(line, "I %u %" SCNu64 " %79s", &stream, &seq, fn) == 3 && out->proc) {
			char *b = out->proc[proc].inflight;
			size_t l = strlen(b);
			snprintf(b + l, sizeof(out->proc[proc].inflight) - l, "%s%s #%" PRIu64, l ? ", " : "", fn, seq);
		}
		break;
	case 'U':
		if (sscanf(line, "U %u %" SCNu64 " %79s %n", &stream, &seq, fn, &n) >= 3 && n) {
			if (!out->unsupported++ || proc < out->unsup_proc || (proc == out->unsup_proc && seq < out->unsup_seq)) {
				out->unsup_proc = proc;
				out->unsup_seq = seq;
				snprintf(out->unsup_first, sizeof(out->unsup_first), "%s #%" PRIu64 " %s: %s", pi->who, seq, fn, line + n);
			}
		}
		break;
	case 'N':   /* a call not described touched a traced descriptor */
		if (sscanf(line, "N %u %" SCNu64 " %" SCNd64 " %79s", &stream, &seq, &fdn, fn) == 4) {
			size_t l = strlen(out->undesc);
			if (l + 256 < sizeof(out->undesc))
				snprintf(out->undesc + l, sizeof(out->undesc) - l,
					 "undescribed call: %s (%s) #%" PRIu64 " %s on fd %" PRId64
					 ": not in formats/api, so what it moved is not in the trace; fd %" PRId64
					 " and its peer's end are served from the trace from there on\n",
					 pi->who, pi->path, seq, fn, fdn, fdn);
		}
		break;
	case 'X':
		if (out->proc)
			out->proc[proc].ended = true;
		break;
	case 'F':   /* "F bad-trace …" or "F setup …" */
		if (out->proc)
			out->proc[proc].ended = true;
		if (!out->fatal) {
			out->fatal = true;
			out->fatal_setup = true;
			char *m = strchr(line + 2, ' ');
			snprintf(out->fatal_msg, sizeof(out->fatal_msg), "%s: %s", pi->who, m ? m + 1 : line + 2);
		}
		break;
	default:
		break;
	}
}

static void kill_all(pid_t *pids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
}

static void describe_hang(struct coord *x, struct outcome *out)
{
	size_t len = 0;
	for (size_t i = 0; i < x->n; i++) {
		if (!x->pi[i].selected)
			continue;
		for (int k = 0; k < NRR_CUR_MAX; k++) {
			uint32_t fn = atomic_load(&g_stats[i].cur[k].fn);
			if (!fn)
				continue;
			const nrr_fn_schema *f = nrr_schema_fn(nrr_reader_schema(x->o->readers[i]), fn - 1);
			len += (size_t)snprintf(out->hang + len, len < sizeof(out->hang) ? sizeof(out->hang) - len : 0,
						"%s%s blocked in #%" PRIu64 " %s", len ? ", " : "", x->pi[i].who,
						atomic_load(&g_stats[i].cur[k].seq), f ? f->name : "?");
			if (len >= sizeof(out->hang))
				return;
		}
	}
}

/* A progress line on a terminal: "replay 3/100: 14 of 16 done, 3021 of 3442 calls". */
static void progress(struct coord *x, unsigned rep, bool end)
{
	static int on = -1;
	if (on < 0) {
		const char *e = getenv("NCCLRR_PROGRESS");
		on = e && *e ? atoi(e) != 0 : isatty(2);
	}
	if (!on)
		return;
	if (end) {
		fprintf(stderr, "\r\033[K");
		return;
	}
	uint64_t done = 0, total = 0;
	size_t fin = 0, sel = 0;
	for (size_t i = 0; i < x->n; i++) {
		if (!x->pi[i].selected)
			continue;
		sel++;
		uint64_t d = atomic_load(&g_stats[i].done), t = atomic_load(&g_stats[i].total);
		done += d;
		total += t;
		fin += t && d >= t;
	}
	fprintf(stderr, "\rreplay %u/%u: %zu of %zu processes through, %" PRIu64 " of %" PRIu64 " calls\033[K", rep + 1,
		x->o->repeat ? x->o->repeat : 1, fin, sel, done, total);
}

/* -v: one line per process of the first replay. */
static void print_procs(struct coord *x, const struct outcome *out, FILE *f)
{
	for (size_t i = 0; i < x->n; i++) {
		if (!x->pi[i].selected)
			continue;
		const struct nrr_wstat *w = &g_stats[i];
		fprintf(f, "  %s: %" PRIu64 " of %" PRIu64 " calls, %" PRIu64 " answered from the trace%s", x->pi[i].who,
			atomic_load(&w->done), atomic_load(&w->total), atomic_load(&w->injected),
			out->proc[i].diverged ? ", DIVERGED" : "");
		if (atomic_load(&w->unsupported))
			fprintf(f, " (%" PRIu64 " not replayable)", atomic_load(&w->unsupported));
		if (out->proc[i].inflight[0])
			fprintf(f, "; stopped where its trace ends, in %s", out->proc[i].inflight);
		fprintf(f, "; recorded end: %s\n", x->pi[i].end[0] ? x->pi[i].end : "not recorded");
	}
}

static int replay_once(struct coord *x, unsigned rep, struct outcome *out)
{
	const struct nrr_replay_opts *o = x->o;
	struct proc_out *po = out->proc;
	memset(out, 0, sizeof(*out));
	memset(po, 0, sizeof(*po) * x->n);
	out->proc = po;
	for (size_t a = 0; a < x->nerr; a++)
		x->err[a].reached = x->err[a].injected = false;
	nrr_xmap_reset();
	publish_sets(x);
	memset(g_stats, 0, sizeof(*g_stats) * x->n);
	for (size_t i = 0; i < x->n; i++) {
		g_stats[i].end_wall = x->pi[i].end_wall;
		if (!x->pi[i].selected) {
			nrr_wstat_leave(&g_stats[i]);
			atomic_store(&g_stats[i].gone, 1);
		}
	}
	pid_t *pids = calloc(x->n, sizeof(*pids));
	int *fds = calloc(x->n, sizeof(*fds));
	char **buf = calloc(x->n, sizeof(*buf));
	size_t *blen = calloc(x->n, sizeof(*blen));
	if (!pids || !fds || !buf || !blen)
		return -ENOMEM;
	uint64_t t0 = now_ns();
	size_t running = 0;
	for (size_t i = 0; i < x->n; i++) {
		fds[i] = -1;
		if (!x->pi[i].selected)
			continue;
		int pp[2];
		if (pipe2(pp, O_CLOEXEC) < 0)
			return -errno;
		fflush(NULL);
		pid_t coord = getpid(), pid = fork();
		if (pid < 0)
			return -errno;
		if (pid == 0) {
			/* a coordinator that dies (Ctrl-C, kill) takes its workers
			 * with it: orphans would block in their replay for ever */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != coord)
				_exit(2);
			/* named after what it replays, for ps and top */
			char name[32];   /* the kernel keeps 15 bytes */
			if (x->pi[i].rank >= 0)
				snprintf(name, sizeof(name), "ncclrr-r%d", x->pi[i].rank);
			else
				snprintf(name, sizeof(name), "ncclrr-w%zu", i);
			prctl(PR_SET_NAME, name);
			close(pp[0]);
			for (size_t j = 0; j < i; j++)
				if (fds[j] >= 0)
					close(fds[j]);
			struct nrr_rproc p = {
				.o = o, .pi = &x->pi[i], .st = &g_stats[i], .all = g_stats, .nall = x->n,
				.report_fd = pp[1], .repeat = rep,
			};
			_exit(nrr_worker_main(&p));
		}
		close(pp[1]);
		pids[i] = pid;
		fds[i] = pp[0];
		buf[i] = malloc(8192);
		running++;
	}
	uint64_t last_done = 0, last_change = now_ns();
	struct pollfd *pf = calloc(x->n, sizeof(*pf));
	while (running) {
		size_t np = 0;
		for (size_t i = 0; i < x->n; i++)
			if (fds[i] >= 0) {
				pf[np].fd = fds[i];
				pf[np].events = POLLIN;
				np++;
			}
		poll(pf, np, 200);
		progress(x, rep, false);
		for (size_t i = 0, j = 0; i < x->n; i++) {
			if (fds[i] < 0)
				continue;
			short re = pf[j++].revents;
			if (!re)
				continue;
			ssize_t r = read(fds[i], buf[i] + blen[i], 8191 - blen[i]);
			if (r > 0) {
				blen[i] += (size_t)r;
				buf[i][blen[i]] = 0;
				char *line = buf[i], *nl;
				while ((nl = strchr(line, '\n'))) {
					*nl = 0;
					on_line(x, i, line, out);
					line = nl + 1;
				}
				blen[i] -= (size_t)(line - buf[i]);
				memmove(buf[i], line, blen[i]);
				continue;
			}
			/* the worker is gone */
			close(fds[i]);
			fds[i] = -1;
			int st;
			waitpid(pids[i], &st, 0);
			pids[i] = 0;
			nrr_wstat_leave(&g_stats[i]);
			atomic_store(&g_stats[i].gone, 1);
			running--;
			if (WIFSIGNALED(st) && !out->fatal && !out->hung) {
				out->fatal = true;
				snprintf(out->fatal_msg, sizeof(out->fatal_msg), "%s: the replay worker died of signal %d (%s)",
					 x->pi[i].who, WTERMSIG(st), strsignal(WTERMSIG(st)));
			} else if (WIFEXITED(st) && !out->proc[i].ended && !out->fatal && !out->hung) {
				/* gone without its end: a sanitizer's report, an abort
				 * handler's exit (its stderr says more) */
				out->fatal = true;
				snprintf(out->fatal_msg, sizeof(out->fatal_msg), "%s: the replay worker died: it exited %d before "
					 "the end of its replay (see its messages above)", x->pi[i].who, WEXITSTATUS(st));
			}
		}
		if (out->fatal) {
			kill_all(pids, x->n);
			continue;
		}
		uint64_t done = 0;
		for (size_t i = 0; i < x->n; i++)
			done += atomic_load(&g_stats[i].done);
		if (done != last_done) {
			last_done = done;
			last_change = now_ns();
		} else if (o->until_rank < 0 && o->timeout_s > 0 && now_ns() - last_change > (uint64_t)o->timeout_s * 1000000000ull && !out->hung) {
			out->hung = true;
			describe_hang(x, out);
			kill_all(pids, x->n);
		}
	}
	progress(x, rep, true);
	out->secs = (double)(now_ns() - t0) / 1e9;
	for (size_t i = 0; i < x->n; i++) {
		out->units += atomic_load(&g_stats[i].done);
		free(buf[i]);
	}
	for (size_t a = 0; a < x->nerr; a++)
		out->reached_sig += !x->err[a].benign && x->err[a].reached;
	free(pf);
	free(pids);
	free(fds);
	free(buf);
	free(blen);
	return 0;
}

/* ------------------------------------------------------------ report */
static size_t chain_len(const struct coord *x)
{
	size_t n = 0;
	for (size_t a = 0; a < x->nerr; a++)
		n += !x->err[a].benign && x->pi[x->err[a].proc].selected;
	return n;
}

static int cmp_wall(const void *a, const void *b)
{
	const struct perr *x = a, *y = b;
	return x->wall < y->wall ? -1 : x->wall > y->wall;
}

/* One failed process's chain: "cuMemImportFromShareableHandle = CUDA_ERROR_INVALID_VALUE (1) (#202) -> exit 1".
 * A run of the same answer (a connect retried while a peer is gone) is one
 * entry "(#a..#b, N times)", and so is a run of calls failed by the entries
 * they returned, shown by the first (ibv_poll_cq: the completion with
 * IBV_WC_RETRY_EXC_ERR, then the flushed ones): "(#a..#b, N calls with
 * failed entries)".  An entry is never cut: when the chain does
 * not fit, the first entries and the last one (the NCCL call that passed
 * the failure on) are kept, those between counted ("… N more"), and the
 * end always closes it. */
static int chain_entry(const struct perr *e, const struct perr *last, size_t n, bool show_reached, char *ent, size_t len)
{
	char seqs[64];
	if (n > 1 && e->entries)
		snprintf(seqs, sizeof(seqs), "#%" PRIu64 "..#%" PRIu64 ", %zu calls with failed entries", e->seq, last->seq, n);
	else if (n > 1)
		snprintf(seqs, sizeof(seqs), "#%" PRIu64 "..#%" PRIu64 ", %zu times", e->seq, last->seq, n);
	else
		snprintf(seqs, sizeof(seqs), "#%" PRIu64, e->seq);
	int l = snprintf(ent, len, "%s = %s (%s%s)", e->fn, e->res, seqs,
			 !show_reached ? "" : !last->reached ? ", NOT reached" : last->injected ? ", answered from the trace" : ", reproduced");
	return l < 0 ? 0 : (size_t)l >= len ? (int)len - 1 : l;
}

static void chain_text(struct coord *x, size_t p, bool show_reached, char *buf, size_t len)
{
	/* the entries: [first, last] error indices of each run of one answer */
	size_t ne = 0, cap = 0;
	struct run { size_t first, last, n; } *ent = NULL;
	buf[0] = 0;
	for (size_t b = 0; b < x->nerr; b++) {
		const struct perr *e = &x->err[b];
		if (e->proc != p || e->benign)
			continue;
		struct run r = { b, b, 1 };
		for (size_t c = b + 1; c < x->nerr; c++) {
			const struct perr *f = &x->err[c];
			if (f->proc != p || f->benign)
				continue;
			/* (polls returning failed completions, flushed ones after
			 * the first error: one entry, named by the first) */
			if (strcmp(f->fn, e->fn) || (strcmp(f->res, e->res) && !(e->entries && f->entries)))
				break;
			r.last = c;
			r.n++;
			b = c;
		}
		if (!nrr_grow(&ent, ne, &cap, sizeof(*ent)))
			break;
		ent[ne++] = r;
	}
	char end[80] = "", last_txt[400] = "", one[400];
	if (proc_failed(&x->pi[p]))
		snprintf(end, sizeof(end), "%.60s", x->pi[p].end);
	size_t last_len = 0, end_len = strlen(end), used = 0, i = 0;
	if (ne)
		last_len = (size_t)chain_entry(&x->err[ent[ne - 1].first], &x->err[ent[ne - 1].last], ent[ne - 1].n,
					       show_reached, last_txt, sizeof(last_txt));
	/* the room the last entry, "… N more" and the end need */
	size_t tail = (ne > 1 ? last_len + 4 : 0) + 24 + (end_len ? end_len + 4 : 0);
	for (; ne > 1 && i + 1 < ne; i++) {
		int l = chain_entry(&x->err[ent[i].first], &x->err[ent[i].last], ent[i].n, show_reached, one, sizeof(one));
		if (used + (used ? 4 : 0) + (size_t)l + tail >= len)
			break;
		used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " -> " : "", one);
	}
	if (i + 1 < ne)
		used += (size_t)snprintf(buf + used, len - used, "%s… %zu more", used ? " -> " : "", ne - 1 - i);
	if (ne && used < len)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " -> " : "", last_txt);
	if (end_len && used < len)
		snprintf(buf + used, len - used, "%s%s", used ? " -> " : "", end);
	free(ent);
}

/* The failure, one line per distinct chain, in recorded order:
 * "  rank 3: cuMemImportFromShareableHandle = … -> exit 1",
 * "  ranks 0-2,4: signal SIGTERM". */
static void print_chain(struct coord *x, FILE *f, bool show_reached)
{
	size_t *order = calloc(x->n + 1, sizeof(*order)), no = 0;
	bool *seen = calloc(x->n + 1, 1);
	char (*txt)[512] = calloc(x->n + 1, sizeof(*txt));
	if (!order || !seen || !txt)
		goto out;
	/* failed processes in the order their story began: the first error
	 * that is part of the failure, else the end (a rank killed outright
	 * has no error, but its peers' errors come after its death) */
	uint64_t *key = calloc(x->n + 1, sizeof(*key));
	if (!key)
		goto out;
	for (size_t p = 0; p < x->n; p++)
		key[p] = end_order(x, &x->pi[p]);
	for (size_t a = 0; a < x->nerr; a++) {
		size_t p = x->err[a].proc;
		if (x->err[a].benign || !x->pi[p].selected)
			continue;
		if (!seen[p]) {
			seen[p] = true;
			order[no++] = p;
		}
		if (x->err[a].wall < key[p])
			key[p] = x->err[a].wall;
	}
	for (size_t p = 0; p < x->n; p++)
		if (!seen[p] && proc_failed(&x->pi[p]) && x->pi[p].selected) {
			seen[p] = true;
			order[no++] = p;
		}
	for (size_t i = 1; i < no; i++)
		for (size_t j = i; j > 0 && key[order[j]] < key[order[j - 1]]; j--) {
			size_t t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	free(key);
	for (size_t i = 0; i < no; i++)
		chain_text(x, order[i], show_reached, txt[order[i]], sizeof(txt[0]));
	for (size_t i = 0; i < no; i++) {
		size_t p = order[i];
		if (!txt[p][0])
			continue;
		/* everyone else with the same story, on one line */
		char who[400] = "";
		size_t wl = 0, count = 0;
		for (size_t j = i; j < no; j++) {
			size_t q = order[j];
			if (strcmp(txt[q], txt[p]) || (j > i && (x->pi[q].rank < 0) != (x->pi[p].rank < 0)))
				continue;
			if (count++ && wl < sizeof(who))
				wl += (size_t)snprintf(who + wl, sizeof(who) - wl, ",");
			if (wl < sizeof(who))
				wl += (size_t)snprintf(who + wl, sizeof(who) - wl, "%s",
						       x->pi[q].rank >= 0 && count > 1 ? x->pi[q].who + 5 : x->pi[q].who);
			if (q != p)
				txt[q][0] = 0;
		}
		fprintf(f, "  %s%s: %s\n", count > 1 && x->pi[p].rank >= 0 ? "ranks " : "",
			count > 1 && x->pi[p].rank >= 0 ? who + 5 : who, txt[p]);
	}
out:
	free(order);
	free(seen);
	free(txt);
}

/* Did the recording fail at all (an error of the failure, or a process that
 * did not end well)? */
static bool recorded_failure(const struct coord *x)
{
	for (size_t p = 0; p < x->n; p++)
		if (x->pi[p].selected && proc_failed(&x->pi[p]))
			return true;
	return chain_len(x) > 0;
}

static bool same_outcome(const struct outcome *a, const struct outcome *b)
{
	return a->hung == b->hung && a->fatal == b->fatal && !strcmp(a->div_sig, b->div_sig) &&
	       a->reached_sig == b->reached_sig;
}

static bool matched(const struct coord *x, const struct outcome *o)
{
	return !o->hung && !o->fatal && !o->ndiv && o->reached_sig == chain_len(x);
}

/* Which processes workers replay; the others are served from their
 * traces (their peers' sockets to them too).  Helpers (no call of the GPU
 * stack: nrr_call_gpu_side) are served unless --all-processes: a
 * launcher, its daemons, fork stubs and wrappers carrying a rank's
 * variables; with --ranks, only those ranks.  A trace where nothing
 * touches the GPU stack (a socket-only job) is replayed whole.
 * @return how many are replayed. */
static size_t select_procs(struct coord *x)
{
	const struct nrr_replay_opts *o = x->o;
	bool any_gpu = false;
	for (size_t i = 0; i < x->n; i++)
		any_gpu |= x->pi[i].gpu;
	size_t nsel = 0;
	for (size_t i = 0; i < x->n; i++) {
		struct nrr_proc_info *pi = &x->pi[i];
		/* a rank that ended before its first GPU-stack call is no helper,
		 * unless another process of that rank made them (a fork stub or
		 * wrapper carrying the rank's variables: as diff pairs them) */
		bool helper = !pi->gpu && any_gpu;
		if (helper && pi->rank >= 0) {
			helper = false;
			for (size_t j = 0; j < x->n && !helper; j++)
				helper = j != i && x->pi[j].rank == pi->rank && x->pi[j].gpu;
		}
		bool sel = o->all_processes || !helper;
		if (o->ranks) {
			bool listed = false;
			for (size_t k = 0; k < o->nranks; k++)
				listed |= pi->rank >= 0 && pi->rank == o->ranks[k];
			sel = sel && listed;
		}
		pi->selected = sel;
		nsel += sel;
		x->total_units += sel ? pi->units : 0;
	}
	return nsel;
}

int nrr_replay(const struct nrr_replay_opts *o)
{
	struct coord x = { .o = o, .n = o->n };
	struct outcome first = { 0 }, cur = { 0 };
	FILE *f = o->out ? o->out : stdout;
	int rc = 2;
	x.pi = calloc(o->n ? o->n : 1, sizeof(*x.pi));
	if (!x.pi)
		return 2;
	for (size_t k = 0; o->ranks && k < o->nranks; k++) {
		bool found = false;
		for (size_t i = 0; i < o->n; i++) {
			found |= nrr_meta_rank(o->readers[i]) == o->ranks[k];
		}
		if (!found) {
			fprintf(stderr, "ncclrr replay: --ranks: no trace in %s is rank %d (see `ncclrr dump --meta`)\n", o->dir, o->ranks[k]);
			goto out;
		}
	}
	for (size_t i = 0; i < o->n; i++)
		if (!nrr_replay_threads_ok(o->readers[i], stderr) || scan(&x, i) < 0)
			goto out;
	size_t nsel = select_procs(&x);
	if (!nsel) {
		fprintf(stderr, "ncclrr replay: nothing to replay in %s\n", o->dir);
		goto out;
	}
	/* The fake runtime needs the cluster the recording ran on.  A process
	 * whose cluster is unknown (a job not started by `ncclrr run`, on real
	 * GPUs) has its device answers in the trace: they are its answers */
	char rec[sizeof(x.pi[0].topo)], why[3 * sizeof(rec) + 256], nocluster[sizeof(why)] = "";
	size_t nunknown = 0, first_unknown = 0;
	for (size_t i = 0; i < o->n; i++) {
		snprintf(rec, sizeof(rec), "%s", x.pi[i].topo);
		x.pi[i].topo[0] = 0;   /* the recorded path is never opened */
		if (o->topo || o->inject == NRR_INJECT_ALL || !x.pi[i].selected || !x.pi[i].uses_cuda)
			continue;
		if (nrr_run_cluster(o->dir, rec, x.pi[i].topo, sizeof(x.pi[i].topo), why, sizeof(why)) == 0)
			continue;
		if (o->inject == NRR_INJECT_NONE) {
			fprintf(stderr, "ncclrr replay: %s needs its cluster for --inject none: %s; pass --topo FILE "
				"describing it for the fake runtime (e.g. the same file from topo/)\n", x.pi[i].who, why);
			goto out;
		}
		if (!nunknown++) {
			first_unknown = i;
			snprintf(nocluster, sizeof(nocluster), "%s", why);
		}
		x.pi[i].inject = NRR_INJECT_ALL;
	}
	qsort(x.err, x.nerr, sizeof(*x.err), cmp_wall);
	x.stop = nrr_job_stopped_at(x.n, proc_end, &x);
	for (size_t i = 0; i < x.n; i++)
		x.pi[i].stopped = nrr_end_by_stop(x.pi[i].end, x.pi[i].end_wall, x.stop);
	mark_killed(&x);
	mark_benign(&x);
	if (nrr_xmap_init(4096 + 4 * (x.naddr + x.nunix + x.nipc + x.nverbs)) < 0) {
		fprintf(stderr, "ncclrr replay: Cannot map the replay table: %s\n", strerror(errno));
		goto out;
	}
	g_stats = mmap(NULL, sizeof(*g_stats) * o->n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g_stats == MAP_FAILED) {
		fprintf(stderr, "ncclrr replay: Cannot map the worker counters: %s\n", strerror(errno));
		goto out;
	}
	double rec_s = 0;
	for (size_t i = 0; i < o->n; i++)
		if (x.pi[i].selected && x.pi[i].wall_s > rec_s)
			rec_s = x.pi[i].wall_s;
	const char *mode = o->inject == NRR_INJECT_ALL ? "all" : o->inject == NRR_INJECT_NONE ? "none" : "errors";
	fprintf(f, "ncclrr replay: %zu of %zu processes from %s, %" PRIu64 " calls, --inject %s%s\n", nsel, o->n, o->dir,
		x.total_units, mode, o->chaos ? ", --chaos" : "");
	if (nunknown) {
		char others[64] = "";
		if (nunknown > 1)
			snprintf(others, sizeof(others), " and %zu other process%s", nunknown - 1, nunknown > 2 ? "es" : "");
		fprintf(f, "cluster unknown for %s%s: %s; their CUDA, NVML and verbs calls are answered from the trace "
			"(as --inject all); --topo FILE runs them on the fake runtime\n", x.pi[first_unknown].who, others,
			nocluster);
	}
	bool failed = recorded_failure(&x);
	if (failed) {
		fprintf(f, "recorded failure:\n");
		print_chain(&x, f, false);
	} else {
		fprintf(f, "recorded run: no failure\n");
	}
	unsigned reps = o->repeat ? o->repeat : 1, same = 0, ok = 0;
	first.proc = calloc(o->n, sizeof(*first.proc));
	cur.proc = calloc(o->n, sizeof(*cur.proc));
	if (!first.proc || !cur.proc)
		goto out;
	double tsum = 0, tmax = 0;
	for (unsigned r = 0; r < reps; r++) {
		struct outcome *out = r ? &cur : &first;
		if (replay_once(&x, r, out) < 0) {
			fprintf(stderr, "ncclrr replay: Cannot start the workers: %s\n", strerror(errno));
			goto out;
		}
		if (out->fatal) {
			fprintf(stderr, "ncclrr replay: %s\n", out->fatal_msg);
			rc = out->fatal_setup ? 2 : 1;
			goto out;
		}
		tsum += out->secs;
		if (out->secs > tmax)
			tmax = out->secs;
		same += !r || same_outcome(&first, out);
		ok += matched(&x, out);
		if (!r && o->verbose)
			print_procs(&x, out, f);
		if (reps > 1 && (o->verbose || !matched(&x, out)))
			fprintf(f, "replay %u/%u: %s (%.2f s)\n", r + 1, reps,
				matched(&x, out) ? "matches" : out->hung ? "hung" : "diverged", out->secs);
		if (r && !same_outcome(&first, out))
			fprintf(f, "  differs from replay 1: %s\n", out->first[0] ? out->first : out->hang[0] ? out->hang : "the failure reproduced differently");
	}
	if (first.unsupported)
		fprintf(f, "note: %u call(s) the replayer cannot run were answered from the trace; first: %s\n", first.unsupported,
			first.unsup_first);
	fputs(first.undesc, f);
	if (first.hung)
		fprintf(f, "replay hung: no call finished for %d s: %s\n", o->timeout_s, first.hang);
	if (first.first[0])
		fprintf(f, "first divergence: %s%s\n", first.first, first.ndiv > 1 ? " (and more after it: -v lists them)" : "");
	if (failed) {
		fprintf(f, "%s:\n", matched(&x, &first) ? "reproduced failure" : "recorded failure, as replayed");
		print_chain(&x, f, true);
	}
	fprintf(f, "replay: %" PRIu64 " calls in %.3f s (recorded %.3f s)\n", first.units, first.secs, rec_s);
	if (reps > 1)
		fprintf(f, "repeat: %u of %u replays %s, %u of %u identical to the first (mean %.3f s, max %.3f s)\n", ok, reps,
			failed ? "reproduced the failure" : "matched the recording", same, reps, tsum / reps, tmax);
	rc = ok == reps && same == reps ? 0 : 1;
	fprintf(f, "result: %s%s%s\n", rc == 0 ? o->c_good ? o->c_good : "" : o->c_bad ? o->c_bad : "",
		rc == 0 ? (failed ? "the replay matches the recording: failure reproduced" : "the replay matches the recording")
			: "the replay diverged from the recording",
		o->c_end ? o->c_end : "");
out:
	free(first.proc);
	free(cur.proc);
	free(x.pi);
	free(x.err);
	free(x.addr);
	free(x.unix_names);
	return rc;
}
