/* SPDX-License-Identifier: MIT */
/*
 * worker.c - one replay worker: the calls of one recorded process,
 * re-executed by one thread per recorded thread.
 *
 * Order inside the process comes from the recording: a call starts only
 * when every call of the other threads that had started before it (in
 * recorded time) has started, and every one that had returned before it
 * has returned here too.  Order between processes comes from the real
 * sockets themselves (a recv waits for its send, an accept for its
 * connect) and from the coordinator's table (a connect waits for its
 * listener).  Nothing depends on wall-clock timing.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "callfmt.h"
#include "engine.h"

void nrr_report(struct nrr_rproc *p, const char *fmt, ...)
{
	char buf[3800];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	for (int i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = ' ';
	buf[n++] = '\n';
	/* one write under PIPE_BUF: lines of several workers never mix */
	ssize_t w;
	do
		w = write(p->report_fd, buf, (size_t)n);
	while (w < 0 && errno == EINTR);
}

int nrr_rres_set(nrr_rres *r, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	r->status = status;
	return 0;
}

int nrr_rres_injected(nrr_rres *r, const nrr_call *c)
{
	r->status = NRR_R_INJECTED;
	r->result = c->result;
	return 0;
}

int nrr_arg_index(const nrr_call *c, const char *name)
{
	for (int i = 0; c->fn && i < c->fn->nargs; i++)
		if (!strcmp(c->fn->args[i].name, name))
			return (c->present >> i) & 1 ? i : -1;
	return -1;
}

uint8_t *nrr_arg_bytes(const nrr_call *c, int i, size_t *len)
{
	const nrr_value *v = &c->args[i];
	size_t n = v->total > v->len ? v->total : v->len;
	uint8_t *b = calloc(1, n + 1);
	if (b && v->len)
		memcpy(b, v->p, v->len);
	*len = n;
	return b;
}

/* ------------------------------------------------------------ loading */
static bool is_info(const nrr_fn_schema *fn)
{
	return fn && fn->role == NRR_ROLE_SOCK_INFO;
}

static int add_unit(struct rstream *s, const nrr_call *c, uint8_t kind)
{
	if (!nrr_grow(&s->u, s->n, &s->cap, sizeof(*s->u)))
		return -ENOMEM;
	struct unit *u = &s->u[s->n];
	memset(u, 0, sizeof(*u));
	u->c = *c;
	u->kind = kind;
	u->end = c->done ? c->ts + c->dur : UINT64_MAX;
	u->at = s->n && s->u[s->n - 1].at > c->ts ? s->u[s->n - 1].at : c->ts;
	for (int i = 0; c->fn && i < c->fn->nargs && i < NRR_MAX_ARGS; i++) {
		nrr_value *v = &u->c.args[i];
		if (!((c->present >> i) & 1) || c->fn->args[i].wire != NRR_WIRE_B || !v->p) {
			v->p = NULL;
			continue;
		}
		uint8_t *b = malloc(v->len ? v->len : 1);
		if (!b)
			return -ENOMEM;
		memcpy(b, v->p, v->len);
		v->p = b;
	}
	u->c.log = NULL;
	if (kind == U_INFO) {
		if (!nrr_grow(&s->info, s->ninfo, &s->infocap, sizeof(*s->info)))
			return -ENOMEM;
		s->info[s->ninfo++] = s->n;
	}
	s->n++;
	return 0;
}

/* Replayable calls are units at the outermost level where they occur
 * (what they called themselves is their business: ibv_get_device_list's
 * netlink socket); containers are skipped, their failures kept as marks;
 * the call in flight at the end is where the thread stops. */
int nrr_classify(struct nrr_classify *k, const nrr_call *c)
{
	if (c->kind != NRR_CALL || !c->fn)
		return -1;
	if (c->phase == NRR_PHASE_INFLIGHT) {
		if (k->stopped || (k->skip >= 0 && c->depth > k->skip))
			return -1;
		k->stopped = true;
		return U_INFLIGHT;
	}
	if (k->skip >= 0) {
		if (c->depth > k->skip)
			return -1;
		if (c->phase == NRR_PHASE_RESUME && c->depth == k->skip) {
			k->skip = -1;
			return U_EXEC;
		}
		return -1;
	}
	bool rep = rsock_handles(c->fn) || nrr_rcuda_handles(c->fn) || rnet_handles(c->fn);
	if (c->phase == NRR_PHASE_ENTER) {
		if (rep)
			k->skip = c->depth;
		return -1;
	}
	if (is_info(c->fn))
		return U_INFO;
	if (rep)
		return U_EXEC;
	return nrr_call_failed(c) ? U_MARK : -1;
}

static int load_stream(struct nrr_rproc *p, struct rstream *s, char *err, size_t errlen)
{
	nrr_cursor *cur;
	int ret = nrr_cursor_open(&cur, p->r, s->index);
	if (ret < 0) {
		snprintf(err, errlen, "Cannot read trace: file=%s stream=%u: %s", p->pi->path, s->index, nrr_strerror(ret));
		return ret;
	}
	struct nrr_classify k = { .skip = -1 };
	const nrr_call *c;
	/* a process killed outright replays while its trace is whole
	 * (nrr_proc_info.whole_wall): the rest was cut from the threads that
	 * were running, so what the others did then would run without it */
	bool killed = nrr_proc_killed(p->pi);
	while ((ret = nrr_cursor_next(cur, &c)) == 0) {
		if (killed && c->kind == NRR_CALL && nrr_reader_wall(p->r, c->ts) >= p->pi->whole_wall)
			break;
		int kind = nrr_classify(&k, c);
		/* a call that returned after then may have waited for what was
		 * cut (its own process's proxy poll for the main thread's
		 * request): the thread stops in it, as in a call in flight */
		bool cut = kind >= 0 && killed && c->done && nrr_reader_wall(p->r, c->ts + c->dur) > p->pi->whole_wall;
		if (kind >= 0 && (ret = add_unit(s, c, cut ? U_INFLIGHT : (uint8_t)kind)) < 0)
			break;
		if (cut)
			break;
	}
	if (ret == NRR_EEOF) {
		ret = 0;
	} else if (ret < 0) {
		const nrr_diag *d = nrr_cursor_diag(cur);
		if (d && d->code)
			nrr_diag_format(d, err, errlen);
		else
			snprintf(err, errlen, "Cannot read trace: file=%s: %s", p->pi->path, nrr_strerror(ret));
	}
	nrr_cursor_close(cur);
	return ret;
}

/* ------------------------------------------------------------ order */
/* Number of units of @t that had started (entered) before @ts (by their
 * place in recorded time, unit.at, which grows along a stream). */
static size_t started_before(const struct rstream *t, uint64_t ts)
{
	return nrr_units_before(t->u, NULL, t->n, ts, false);
}

/* Number of units of @t that had returned before @ts (leave times grow
 * along a stream: its calls are sequential). */
static size_t completed_before(const struct rstream *t, uint64_t ts)
{
	return nrr_units_before(t->u, NULL, t->n, ts, true);
}

/* Under p->mu: may the call of @s at @ts (recorded) start, every other
 * stream having started and finished what it had there?  If not, the
 * stream that holds it back and the counts it needs go to @s's wait. */
static bool turn_ok(struct nrr_rproc *p, struct rstream *s, uint64_t ts)
{
	for (size_t i = 0; i < p->ns; i++) {
		struct rstream *t = &p->s[i];
		if (t == s)
			continue;
		size_t ns = started_before(t, ts), nc = completed_before(t, ts);
		if (t->started < ns || t->completed < nc) {
			s->blk = t;
			s->need_started = ns;
			s->need_completed = nc;
			return false;
		}
	}
	s->blk = NULL;
	return true;
}

/* Under p->mu: @t's terms of the frontiers, in recorded wall time
 * (UINT64_MAX: none): its earliest unit not started, its earliest not
 * finished, and the recorded end of that one. */
static void stream_terms(struct nrr_rproc *p, const struct rstream *t)
{
	uint64_t *f = p->terms[t - p->s];
	f[0] = f[1] = f[2] = UINT64_MAX;
	if (t->started < t->n)
		f[0] = nrr_reader_wall(p->r, t->u[t->started].at);
	if (t->completed < t->n && t->u[t->completed].kind != U_INFLIGHT) {
		f[1] = nrr_reader_wall(p->r, t->u[t->completed].at);
		if (t->u[t->completed].end != UINT64_MAX)
			f[2] = nrr_reader_wall(p->r, t->u[t->completed].end);
	}
}

static void publish(_Atomic uint64_t *at, uint64_t v)
{
	/* other workers read it: a store of the same value would still take
	 * their copy of the line away */
	if (atomic_load_explicit(at, memory_order_relaxed) != v)
		atomic_store(at, v);
}

/* Under p->mu, after stream @s (NULL: any) started or finished a unit:
 * publish the recorded time of the earliest unit not started, not
 * finished, and the earliest recorded end of one not finished.  Only
 * @s's terms are made again (at two calls per unit, making every
 * stream's took 10 % of the replay of traces/nccl_ib/killed). */
static void update_frontier(struct nrr_rproc *p, struct rstream *s)
{
	if (s)
		stream_terms(p, s);
	else
		for (size_t i = 0; i < p->ns; i++)
			stream_terms(p, &p->s[i]);
	uint64_t f = UINT64_MAX, st = UINT64_MAX, en = UINT64_MAX;
	for (size_t i = 0; i < p->ns; i++) {
		const uint64_t *t = p->terms[i];
		f = t[0] < f ? t[0] : f;
		st = t[1] < st ? t[1] : st;
		en = t[2] < en ? t[2] : en;
	}
	publish(&p->st->frontier, f);
	publish(&p->st->settled, st);
	publish(&p->st->ended, en);
}

/* Wait until every other worker has started (@settled: finished) all it
 * recorded before this process's recorded end; give up after @max_ms
 * (< 0: never).  The sleep between looks doubles from 1 ms up to 16 ms:
 * at 1024 ranks most workers wait here for the last ones to start, and
 * a thousand processes waking every millisecond took the 2 CPUs from
 * those that still had calls to replay (no order depends on it: the
 * longer sleep only delays the exit of a worker that must wait anyway). */
static void wait_others(struct nrr_rproc *p, bool settled, int max_ms)
{
	long slept_ms = 0, step_ms = 1;
	for (;;) {
		bool ok = true;
		for (size_t i = 0; i < p->nall && ok; i++)
			if (&p->all[i] != p->st &&
			    atomic_load(settled ? &p->all[i].settled : &p->all[i].frontier) < p->pi->end_wall)
				ok = false;
		if (ok || (max_ms >= 0 && slept_ms >= max_ms))
			return;
		struct timespec t = { 0, step_ms * 1000000L };
		nanosleep(&t, NULL);
		slept_ms += step_ms;
		if (step_ms < 16)
			step_ms *= 2;
	}
}

/* ---- order of verbs calls across processes (rverbs.c) ----
 * A verbs post or teardown waits for one peer process, the owner of the
 * QP at the other end (the one its RTR named), and only for what that
 * peer did before it in recorded time, so that no two waits can wait on
 * each other: a post recorded after the peer's end waits for the peer's
 * worker to be gone; a teardown waits for the peer to have finished what
 * had returned before the teardown started.  Each wait gives up once the
 * peer has finished no call for 10 s. */
#define VERBS_WAIT_MS 10000

static struct nrr_wstat *peer_stat(struct nrr_rproc *p, uint32_t pid)
{
	for (size_t i = 0; p && pid && i < p->nall; i++)
		if (&p->all[i] != p->st && (uint32_t)atomic_load(&p->all[i].pid) == pid)
			return &p->all[i];
	return NULL;
}

/* until @done(@w, @wall), or until the peer finished no call for
 * VERBS_WAIT_MS (a peer replaying a million polls is slow, not stuck);
 * sleeps as wait_others does */
static bool wait_for(const struct nrr_wstat *w, uint64_t wall, bool (*done)(const struct nrr_wstat *, uint64_t))
{
	long slept_ms = 0, step_ms = 1;
	uint64_t seen = atomic_load(&w->done);
	while (!done(w, wall)) {
		uint64_t now = atomic_load(&w->done);
		if (now != seen) {
			seen = now;
			slept_ms = 0;
		}
		if (slept_ms >= VERBS_WAIT_MS)
			return false;
		struct timespec t = { 0, step_ms * 1000000L };
		nanosleep(&t, NULL);
		slept_ms += step_ms;
		if (step_ms < 16)
			step_ms *= 2;
	}
	return true;
}

static bool is_gone(const struct nrr_wstat *w, uint64_t wall)
{
	(void)wall;
	return atomic_load(&w->gone) != 0;
}

static bool has_ended(const struct nrr_wstat *w, uint64_t wall)
{
	return atomic_load(&w->ended) >= wall;
}

int nrr_wait_peer_gone(struct nrr_rproc *p, uint32_t pid, uint64_t ts)
{
	struct nrr_wstat *w = peer_stat(p, pid);
	if (!w || !w->end_wall || w->end_wall >= nrr_reader_wall(p->r, ts))
		return 0;
	return wait_for(w, 0, is_gone) ? 1 : -ETIMEDOUT;
}

int nrr_wait_peer_ended(struct nrr_rproc *p, uint32_t pid, uint64_t ts)
{
	struct nrr_wstat *w = peer_stat(p, pid);
	if (!w)
		return 0;
	uint64_t wall = nrr_reader_wall(p->r, ts);
	if (has_ended(w, wall))
		return 0;
	if (wait_for(w, wall, has_ended))
		return 1;
	if (nrr_debug_topic("verbs"))
		fprintf(stderr, "ncclrr replay: verbs: pid %d (%s): teardown at %.6f s gave up waiting for pid %u: it has "
				"not finished a call that returned at %.6f s\n", (int)getpid(), p->pi->who, wall / 1e9,
			pid, atomic_load(&w->ended) / 1e9);
	for (int i = 0; i < NRR_CUR_MAX && nrr_debug_topic("verbs"); i++)
		if (atomic_load(&w->cur[i].fn))
			fprintf(stderr, "ncclrr replay: verbs:   pid %u stream %d in #%" PRIu64 " fn %u\n", pid, i,
				atomic_load(&w->cur[i].seq), atomic_load(&w->cur[i].fn) - 1);
	return -ETIMEDOUT;
}

/* Before looking at what reached a call in flight at our end: every other
 * worker has finished what it recorded before it (a send that started is
 * not yet a send that arrived).  Bounded: a worker stuck elsewhere is the
 * hang detector's business. */
static void wait_settled(struct nrr_rproc *p)
{
	wait_others(p, true, 1000);
}

/* Leave only when every other worker has started all it recorded before
 * this process's recorded end: a peer still to send to us (or to read
 * what we sent) must not find us gone earlier than in the recording. */
static void wait_exit_time(struct nrr_rproc *p)
{
	wait_others(p, false, -1);
}

static bool closes_done(struct nrr_rproc *p, struct rstream *s, uint64_t end);

enum { W_TURN = 1, W_END };

/* Under p->mu: is what @w waits for there?  The stream that held it back
 * last time is looked at first: while it lacks what @w needs of it, no
 * other needs a look (a million polls of one thread are each a change
 * that the others, waiting for a turn far ahead, must not wake for). */
static bool ready(struct nrr_rproc *p, struct rstream *w)
{
	const struct rstream *b = w->blk;
	if (b && (b->started < w->need_started || b->completed < w->need_completed))
		return false;
	return turn_ok(p, w, w->wait_ts) && (w->wait != W_END || closes_done(p, w, w->wait_ts));
}

/* Under p->mu, after a stream started or finished a unit: wake the
 * waits that it let go, each on its own condition variable.  (One shared
 * condition variable broadcast twice per call woke every waiting thread
 * each time: 9.4 M futex calls for the 1.7 M calls of traces/nccl_ib/
 * killed, 27 s of system time in a 23.5 s replay.) */
static void wake_ready(struct nrr_rproc *p)
{
	for (size_t i = 0; i < p->ns; i++) {
		struct rstream *w = &p->s[i];
		if (w->wait && ready(p, w)) {
			w->wait = 0;
			pthread_cond_signal(&w->cv);
		}
	}
}

/* Under p->mu: until what @kind at @ts needs is there. */
static void wait_until(struct nrr_rproc *p, struct rstream *s, int kind, uint64_t ts)
{
	s->wait = (uint8_t)kind;
	s->wait_ts = ts;
	s->blk = NULL;
	while (!ready(p, s)) {
		s->wait = (uint8_t)kind;
		pthread_cond_wait(&s->cv, &p->mu);
	}
	s->wait = 0;
}

/* update_frontier will read the times of unit @k + 1 (a unit is 0.7 KB,
 * its times in a line of their own): fetched before the lock, not while
 * every other thread of the process waits for it (that miss was 8 % of
 * the replay of traces/nccl_ib/killed). */
static inline void prefetch_next(const struct rstream *s, size_t k)
{
	if (k + 1 < s->n)
		__builtin_prefetch(&s->u[k + 1].at);
}

/* Wait until unit @k of @s may start. */
static void wait_turn(struct nrr_rproc *p, struct rstream *s, size_t k)
{
	prefetch_next(s, k);
	pthread_mutex_lock(&p->mu);
	wait_until(p, s, W_TURN, s->u[k].at);
	s->started = k + 1;
	update_frontier(p, s);
	/* a thread may wait for this one to start (not only to finish): a
	 * start that goes on to block in a live call would otherwise never
	 * wake it */
	wake_ready(p);
	pthread_mutex_unlock(&p->mu);
}

/* Does @fn give the process a new descriptor number? (1 yes, -1 no) */
static int32_t fd_maker(const nrr_fn_schema *fn)
{
	static const char *const names[] = { "socket", "socketpair", "accept", "accept4", "recvmsg", "pipe", "pipe2",
					     "eventfd", "epoll_create", "epoll_create1", "dup", "dup2", "dup3" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(fn->name, names[i]))
			return 1;
	for (uint16_t j = 0; j < fn->nargs; j++)
		if (fn->args[j].fmt == NRR_FMT_FD && (fn->args[j].dir & NRR_DIR_OUT))
			return 1;
	return -1;
}

static bool makes_fd(struct nrr_rproc *p, const nrr_fn_schema *fn)
{
	return nrr_fn_memo(&p->fd_maker, fn, fd_maker) > 0;
}

/*
 * Descriptor numbers are reused: in the recording, fd 209 was a cuMem
 * export passed to a peer and closed (untraced) by one thread while
 * another thread's accept was still blocked, and that accept then
 * returned 209.  A call that makes a descriptor therefore waits until the
 * other threads got as far as its recorded end (what they started and
 * finished before it returned there), so the number is taken here in the
 * same order as it was there.  Nothing recorded before that end can wait
 * for this call's result, so this never deadlocks.
 */
/* Has every close() that another thread had begun, and not yet returned
 * from, at @end (recorded) returned here?  The kernel frees the number as
 * a close begins, so it may hand it out again before that close returns
 * (an accept on one thread got the number another thread's close was
 * still in, 2.7 ms long): run later, that close would close the new
 * descriptor. */
static bool closes_done(struct nrr_rproc *p, struct rstream *s, uint64_t end)
{
	for (size_t i = 0; i < p->ns; i++) {
		struct rstream *t = &p->s[i];
		size_t j = t == s ? 0 : started_before(t, end);
		if (j && t->u[j - 1].end > end && t->completed < j && nrr_call_role(&t->u[j - 1].c) == NRR_ROLE_CLOSE)
			return false;
	}
	return true;
}

static void wait_end(struct nrr_rproc *p, struct rstream *s, size_t k)
{
	uint64_t end = s->u[k].end;
	if (end == UINT64_MAX)
		return;
	pthread_mutex_lock(&p->mu);
	/* the turn of a call starting at @end */
	wait_until(p, s, W_END, end);
	pthread_mutex_unlock(&p->mu);
}

static void finish(struct nrr_rproc *p, struct rstream *s, size_t k)
{
	prefetch_next(s, k);
	pthread_mutex_lock(&p->mu);
	s->completed = k + 1;
	update_frontier(p, s);
	wake_ready(p);
	pthread_mutex_unlock(&p->mu);
	atomic_fetch_add(&p->st->done, 1);
}

/* --chaos: a seeded pause before a call, so that threads and processes
 * interleave differently from one replay to the next. */
static void chaos_pause(struct rstream *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	unsigned r = (unsigned)(s->rng % 1000);
	if (r < 600)
		return;
	if (r < 900) {
		sched_yield();
		return;
	}
	struct timespec t = { 0, (long)(s->rng % 2000) * 1000L };   /* up to 2 ms */
	nanosleep(&t, NULL);
}

/* ------------------------------------------------------------ replay */
static volatile sig_atomic_t until_wait;

static void until_cont(int sig)
{
	(void)sig;
	until_wait = 0;
}

static void until_stop(struct nrr_rproc *p, const struct unit *u)
{
	signal(SIGUSR1, until_cont);
	until_wait = 1;
	fprintf(stderr, "ncclrr replay: %s stopped before #%" PRIu64 " %s (--until): attach with  gdb -p %d  "
		"(continue: kill -USR1 %d)\n", p->pi->who, u->c.seq, u->c.fn->name, (int)getpid(), (int)getpid());
	/* the signal may land on any thread: poll the flag */
	while (until_wait) {
		struct timespec t = { 0, 50 * 1000000L };
		nanosleep(&t, NULL);
	}
}

void nrr_result_text(const nrr_call *c, char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");
	if (!f) {
		snprintf(buf, len, "%" PRId64, c->result);
		return;
	}
	nrr_format_result(f, c);
	fclose(f);
}

static void *stream_main(void *arg)
{
	struct rstream *s = arg;
	struct nrr_rproc *p = s->p;
	unsigned slot = s->index < NRR_CUR_MAX ? s->index : NRR_CUR_MAX - 1;
	for (size_t k = 0; k < s->n; k++) {
		struct unit *u = &s->u[k];
		if (p->o->chaos)
			chaos_pause(s);
		wait_turn(p, s, k);
		if (p->o->until_rank >= 0 && p->o->until_rank == p->pi->rank && u->c.seq == p->o->until_seq)
			until_stop(p, u);
		atomic_store(&p->st->cur[slot].seq, u->c.seq);
		atomic_store(&p->st->cur[slot].fn, u->c.fn->id + 1);
		nrr_rres res = { .status = NRR_R_MATCH };
		int ret = 0;
		if (u->kind == U_EXEC && u->c.result >= 0 && makes_fd(p, u->c.fn))
			wait_end(p, s, k);
		if (u->kind == U_INFLIGHT) {
			/* the recorded thread was here when the trace ended; a
			 * send of a process the job's stop ended may have gone
			 * out before the stop (its peer read it) */
			nrr_report(p, "I %u %" PRIu64 " %s", s->index, u->c.seq, u->c.fn->name);
			if (p->pi->stopped && rsock_handles(u->c.fn))
				rsock_send_inflight(p->sock, &u->c);
			/* (not blocked here: a hang report names the calls that are) */
			atomic_store(&p->st->cur[slot].fn, 0);
			break;
		} else if (u->kind == U_MARK) {
			res.status = NRR_R_INJECTED;
		} else if (rsock_handles(u->c.fn)) {
			ret = rsock_call(p->sock, s, k, &res);
		} else if (rnet_handles(u->c.fn)) {
			ret = rnet_call(p->net, s, k, &res);
		} else {
			ret = nrr_rcuda_call(p->cuda, &u->c, &res);
		}
		atomic_store(&p->st->cur[slot].fn, 0);
		if (ret < 0 && res.status != NRR_R_DIVERGED) {
			res.status = NRR_R_DIVERGED;
			if (!res.why[0])
				snprintf(res.why, sizeof(res.why), "the replayer failed: %s", strerror(-ret));
		}
		if (res.status == NRR_R_UNSUPPORTED) {
			nrr_report(p, "U %u %" PRIu64 " %s %s", s->index, u->c.seq, u->c.fn->name, res.why);
		} else if (res.status == NRR_R_DIVERGED) {
			nrr_report(p, "D %u %" PRIu64 " %" PRIu64 " %s %s", s->index, u->c.seq, u->c.ts, u->c.fn->name, res.why);
			/* The process goes, as a diverged program would: its
			 * other threads may be blocked in live calls, and its
			 * peers see its sockets close. */
			nrr_wstat_leave(p->st);
			nrr_report(p, "X 1");
			_exit(1);
		}
		if (res.status == NRR_R_INJECTED && u->kind == U_EXEC)
			atomic_fetch_add(&p->st->injected, 1);
		else if (res.status == NRR_R_UNSUPPORTED)
			atomic_fetch_add(&p->st->unsupported, 1);
		if (nrr_call_failed(&u->c)) {
			char r[128];
			nrr_result_text(&u->c, r, sizeof(r));
			nrr_report(p, "E %u %" PRIu64 " %" PRIu64 " %d %s %s", s->index, u->c.seq, u->c.ts,
				   res.status == NRR_R_INJECTED ? 1 : 0, u->c.fn->name, r);
		}
		finish(p, s, k);
	}
	return NULL;
}

static int load(struct nrr_rproc *p, char *err, size_t errlen)
{
	nrr_diag d = { 0 };
	int ret = nrr_reader_open(&p->r, p->pi->path, &d);
	if (ret < 0) {
		nrr_diag_format(&d, err, errlen);
		return ret;
	}
	p->schema = nrr_reader_schema(p->r);
	nrr_fn_memo_init(&p->fd_maker, p->schema);
	p->ns = nrr_reader_info(p->r)->nstreams;
	p->s = calloc(p->ns ? p->ns : 1, sizeof(*p->s));
	p->terms = calloc(p->ns ? p->ns : 1, sizeof(*p->terms));
	if (!p->s || !p->terms)
		return -ENOMEM;
	uint64_t total = 0;
	for (size_t i = 0; i < p->ns; i++) {
		p->s[i].p = p;
		p->s[i].index = (uint32_t)i;
		pthread_cond_init(&p->s[i].cv, NULL);
		p->s[i].rng = (p->o->chaos_seed ^ 0x9e3779b97f4a7c15ull) * (2 * (uint64_t)(p->pi->rank + 2) + 1) + i * 0x2545f4914f6cdd1dull + p->repeat;
		if (!p->s[i].rng)
			p->s[i].rng = 1;
		if ((ret = load_stream(p, &p->s[i], err, errlen)) < 0)
			return ret;
		total += p->s[i].n;
	}
	atomic_store(&p->st->total, total);
	return 0;
}

int nrr_worker_main(struct nrr_rproc *p)
{
	char err[1024] = "";
	atomic_store(&p->st->pid, (int)getpid());
	signal(SIGPIPE, SIG_IGN);
	pthread_mutex_init(&p->mu, NULL);
	pthread_mutex_init(&p->fdmu, NULL);
	int ret = load(p, err, sizeof(err));
	if (ret < 0) {
		nrr_wstat_leave(p->st);
		nrr_report(p, "F bad-trace %s", err);
		return 2;
	}
	pthread_mutex_lock(&p->mu);
	update_frontier(p, NULL);
	pthread_mutex_unlock(&p->mu);
	nrr_rcuda_opts co = {
		.fake_libdir = p->o->fake_libdir,
		.topo = p->o->topo ? p->o->topo : p->pi->topo[0] ? p->pi->topo : NULL,
		.host = p->pi->host[0] ? p->pi->host : "0",
		.rank = p->pi->rank,
		.inject = p->pi->inject,
		.schema = p->schema,
	};
	if ((ret = nrr_rcuda_open(&p->cuda, p, &co, err, sizeof(err))) < 0) {
		nrr_report(p, "F setup %s", err);
		return 2;
	}
	if ((ret = rsock_open(&p->sock, p)) < 0) {
		nrr_report(p, "F setup Cannot set up socket replay: %s", strerror(-ret));
		return 2;
	}
	if ((ret = rnet_open(&p->net, p, err, sizeof(err))) < 0) {
		nrr_report(p, "F setup %s", err);
		return 2;
	}
	for (size_t i = 0; i < p->ns; i++)
		if (pthread_create(&p->s[i].th, NULL, stream_main, &p->s[i]) != 0) {
			nrr_report(p, "F setup Cannot start a replay thread: %s", strerror(errno));
			return 2;
		}
	for (size_t i = 0; i < p->ns; i++)
		pthread_join(p->s[i].th, NULL);
	/* Calls the recorded threads were blocked in when the trace ended:
	 * once every other worker has started what it recorded before this
	 * process's end (and before any of those whose end comes later may
	 * leave: our frontier stays at our end meanwhile), each must still
	 * block here. */
	bool inflight = false;
	for (size_t i = 0; i < p->ns; i++)
		inflight |= p->s[i].n && p->s[i].u[p->s[i].n - 1].kind == U_INFLIGHT;
	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < p->ns; i++)
		p->s[i].started = p->s[i].n;
	update_frontier(p, NULL);
	if (inflight)
		atomic_store(&p->st->frontier, p->pi->end_wall);
	pthread_mutex_unlock(&p->mu);
	wait_exit_time(p);
	int div = 0;
	/* a process killed outright (replay.c mark_killed) stopped at an
	 * unknown moment, and one the job's stop ended (mpirun's SIGTERM when a
	 * rank aborts) was stopped wherever it was: data a peer sent it may
	 * have arrived before or after */
	bool killed = nrr_proc_killed(p->pi) || p->pi->stopped;
	if (inflight && !killed)
		wait_settled(p);
	for (size_t i = 0; inflight && !killed && i < p->ns; i++) {
		const struct unit *u = p->s[i].n ? &p->s[i].u[p->s[i].n - 1] : NULL;
		char why[300];
		if (u && u->kind == U_INFLIGHT && rsock_handles(u->c.fn) &&
		    rsock_inflight_check(p->sock, &u->c, why, sizeof(why))) {
			nrr_report(p, "D %u %" PRIu64 " %" PRIu64 " %s %s", (unsigned)i, u->c.seq, u->c.ts, u->c.fn->name, why);
			div = 1;
		}
	}
	nrr_wstat_leave(p->st);
	/* as the kernel delivers what a process sent before it exits; no
	 * worker waits for this one any more (peers left read it or go) */
	rsock_flush(p->sock);
	rnet_close(p->net);
	nrr_rverbs_report();
	nrr_report(p, "X %d", div);
	if (div)
		return 1;
	/* sockets and memory go with the process, as they went with the recorded one */
	return 0;
}
