/* SPDX-License-Identifier: MIT */
/*
 * engine.h - the coordinator, the workers and socket replay (private).
 */
#ifndef NCCLRR_REPLAY_ENGINE_H
#define NCCLRR_REPLAY_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "replay_internal.h"
#include "replay.h"

/* One call to replay (copied out of the reader; byte args own their data). */
enum unit_kind {
	U_EXEC = 0,     /* re-executed (or answered from the trace) */
	U_INFO = 1,     /* the tracer's own note (sock_info): no call, feeds tables */
	U_MARK = 2,     /* a container (NCCL API, proxy RPC) that failed: reported only */
	U_INFLIGHT = 3, /* the call the thread was in when the trace ended */
};

struct unit {
	nrr_call c;
	/* where the unit stands in its stream's recorded time: its entry
	 * (c.ts), but never before the unit ahead of it.  A container's mark
	 * or the container a thread was in at the end (ncclCommInitRank) comes
	 * after the calls it made, with its own earlier entry time; ordered
	 * by that, another thread waited for this one to start it before the
	 * calls ahead of it, which waited for that thread: a deadlock. */
	uint64_t at;
	uint64_t end;   /* recorded leave time; UINT64_MAX when in flight */
	uint8_t kind;
};

/* How many of the units u[idx[0]], u[idx[1]] ... u[idx[n - 1]] (@idx
 * NULL: u[0] ... u[n - 1]) had begun (@end: returned) before @ts: a
 * binary search, those times growing along a stream (worker.c, rsock.c) */
static inline size_t nrr_units_before(const struct unit *u, const size_t *idx, size_t n, uint64_t ts, bool end)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct unit *m = &u[idx ? idx[mid] : mid];
		if ((end ? m->end : m->at) < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct rstream {
	struct nrr_rproc *p;
	uint32_t index;
	struct unit *u;
	size_t n, cap;
	size_t *info, ninfo, infocap;   /* the indexes of its U_INFO units (rsock.c last_info) */
	size_t started, completed;   /* under p->mu */
	/* a wait for this stream's turn (worker.c wait_until), under p->mu:
	 * what it waits for, and the stream that held it back last time with
	 * the counts it needs there, so that a waker skips it in O(1) */
	pthread_cond_t cv;
	uint8_t wait;                /* 0, W_TURN or W_END */
	uint64_t wait_ts;
	struct rstream *blk;
	size_t need_started, need_completed;
	pthread_t th;
	uint64_t rng;                /* --chaos */
};

/* Shared with the coordinator (MAP_SHARED before fork): what each worker is doing. */
#define NRR_CUR_MAX 32
struct nrr_wstat {
	_Atomic uint64_t done;        /* units finished */
	_Atomic uint64_t total;       /* units loaded */
	_Atomic uint64_t injected;    /* units answered from the trace */
	_Atomic uint64_t unsupported; /* units the engine cannot run (answered from the trace) */
	_Atomic int pid;
	/* recorded wall time of the earliest call this worker has not started
	 * yet (UINT64_MAX: all started, or the worker is gone): a worker
	 * leaves only when every other one has started what came before its
	 * own recorded end */
	_Atomic uint64_t frontier;
	/* the same for calls not finished yet (a call in flight at the end of
	 * its trace counts as finished: it never returned there either) */
	_Atomic uint64_t settled;
	/* recorded wall time of the earliest end (return) of a call not
	 * finished yet (UINT64_MAX: none, or the worker is gone): every call
	 * that had returned before it there has returned here */
	_Atomic uint64_t ended;
	uint64_t end_wall;   /* the process's recorded end (its nrr_proc_info's), set before the fork */
	_Atomic int gone;    /* the worker process exited (the coordinator reaped it) */
	struct {
		_Atomic uint32_t fn;      /* function id + 1 of the unit in progress, 0 idle */
		_Atomic uint64_t seq;
	} cur[NRR_CUR_MAX];
};

/* The worker goes (or has none): no other worker waits for its calls. */
static inline void nrr_wstat_leave(struct nrr_wstat *w)
{
	atomic_store(&w->frontier, UINT64_MAX);
	atomic_store(&w->settled, UINT64_MAX);
	atomic_store(&w->ended, UINT64_MAX);
}

struct rfd { int64_t rec; int live; };

struct nrr_rproc {
	const struct nrr_replay_opts *o;
	const struct nrr_proc_info *pi;  /* the coordinator's description of this process */
	struct nrr_wstat *st;            /* this worker's */
	struct nrr_wstat *all;           /* every worker's (nall) */
	size_t nall;
	int report_fd;
	nrr_reader *r;
	const nrr_schema *schema;
	struct rstream *s;
	size_t ns;
	/* each stream's terms of the frontiers (worker.c update_frontier),
	 * under mu: side by side, not each in its stream's line, which its
	 * thread keeps writing on the other CPU */
	uint64_t (*terms)[3];
	pthread_mutex_t mu;     /* ordering between the threads */
	pthread_mutex_t fdmu;
	struct rfd *fds;
	size_t nfds, fdcap;
	nrr_rcuda *cuda;
	struct rsock *sock;
	struct rnet *net;       /* NULL: the trace has no net plugin calls */
	unsigned repeat;        /* which replay of --repeat (names of UNIX sockets) */
	struct nrr_fn_memo fd_maker;   /* worker.c makes_fd */
};

/* fd table value of a socket served from the trace (its peer is not replayed) */
#define RFD_SERVED (-2)

/* Messages from a worker to the coordinator (one line each, atomic). */
void nrr_report(struct nrr_rproc *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Unit selection, shared by the workers and the coordinator's pre-scan:
 * feed every call of a stream in order; @return the unit kind for @c or
 * -1 when it is not a unit. */
struct nrr_classify { int skip; bool stopped; };
int nrr_classify(struct nrr_classify *k, const nrr_call *c);

/* Run one worker: load the trace, replay it, report.  @return exit status. */
int nrr_worker_main(struct nrr_rproc *p);

/* ---- rsock.c */
struct rsock;
int rsock_open(struct rsock **out, struct nrr_rproc *p);
/* At the worker's end: wait until what the process's sends queued (the
 * kernel's part, rsock.c send_buffered) is written, or its connection
 * failed. */
void rsock_flush(struct rsock *s);
/* The key a recorded address goes by in the coordinator's table: for an
 * internet address family, port and address bytes (what identifies an
 * endpoint), else the bytes themselves (at most NRR_XMAP_MAX).  @return its
 * length. */
size_t nrr_addr_key(const uint8_t *sa, size_t len, uint8_t *key);
/* An IPv6 address holding an IPv4 one (::ffff:a.b.c.d, what a dual-stack
 * socket reports for an IPv4 peer) goes by the IPv4 key.  The keys under
 * which a listener may have published the recorded destination @sa of a
 * connect, best first: its own; the wildcard of its family on its port
 * (0.0.0.0 for an IPv4 one); the IPv6 wildcard [::] on its port (a
 * dual-stack listener accepts IPv4 too).  Wildcards are not told apart by
 * host: two hosts of a recording that both listen on a wildcard port
 * cannot both be met this way.  @return how many (0: @sa has no key). */
size_t nrr_listen_keys(const uint8_t *sa, size_t len, uint8_t keys[3][NRR_XMAP_MAX], size_t lens[3]);
/* The key of an internet connection as one end saw it: its local address
 * @a then its peer @b (nrr_addr_key each), in @key (2 * NRR_XMAP_MAX).
 * @return its length; 0 when either is not an internet address. */
size_t nrr_conn_key(const uint8_t *a, size_t al, const uint8_t *b, size_t bl, uint8_t *key);
/* Is @c a getsockopt(SOL_SOCKET, SO_ERROR)?  Then *@err is the error it
 * gave (how an in-progress connect ended; 0 when the call failed). */
bool nrr_so_error(const nrr_call *c, int *err);

/* Replay and rerun run a thread per recorded thread: a process trace with
 * more is refused (a real NCCL rank has tens; a damaged or crafted index
 * can claim a stream per 64 bytes of file).  @return true when @r is
 * within the limit, else false after saying so on @err. */
#define NRR_REPLAY_MAX_THREADS 4096
bool nrr_replay_threads_ok(nrr_reader *r, FILE *err);
/* The name bytes of a recorded AF_UNIX address (after sun_family), at most
 * NRR_XMAP_MAX: @return their length (0: none) and set *@key. */
size_t nrr_unix_key(const uint8_t *sa, size_t len, const uint8_t **key);
/* true for functions of the socket domain (sock_info included) */
bool rsock_handles(const nrr_fn_schema *fn);
/* Replay unit @k of stream @st (lookahead allowed within @st). */
int rsock_call(struct rsock *s, struct rstream *st, size_t k, nrr_rres *res);
/* @c, a send or write, was in flight when the trace of a process the
 * job's stop ended (nrr_end_by_stop) ended: its recorded bytes may have reached the
 * peer (the stop came between the call and its record), so they go out
 * now, without waiting; nothing is compared.  Other calls: nothing. */
void rsock_send_inflight(struct rsock *s, const nrr_call *c);
/* @c was in flight (blocked) when its trace ended: @return 1 (why set)
 * when its socket would let it return now, 0 when it would still block. */
int rsock_inflight_check(struct rsock *s, const nrr_call *c, char *why, size_t len);

/* ---- rnet.c: ncclNet plugin calls against a live net plugin */
struct rnet;
/* Load the net plugin (--net-plugin, $NCCLRR_NET_PLUGIN_REPLAY, or ncclrr's
 * socket transport next to ncclrr) when the loaded streams of @p have net
 * calls; *@out stays NULL when they have none.  On failure writes a
 * one-line reason to @err.  @return 0 or negative errno. */
int rnet_open(struct rnet **out, struct nrr_rproc *p, char *err, size_t errlen);
void rnet_close(struct rnet *s);
/* true for functions of the net domain (ncclNet_*) */
bool rnet_handles(const nrr_fn_schema *fn);
/* Replay unit @k of stream @st; several threads call it at once. */
int rnet_call(struct rnet *s, struct rstream *st, size_t k, nrr_rres *res);

/* Settle @r: @status with the reason from @fmt (NRR_R_DIVERGED,
 * NRR_R_UNSUPPORTED), or answered from the trace (nrr_rres_injected: the
 * recorded result of @c).  @return 0, for `return nrr_rres_set(…)`. */
int nrr_rres_set(nrr_rres *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int nrr_rres_injected(nrr_rres *r, const nrr_call *c);

/* "CUDA_ERROR_INVALID_VALUE (1)", "-1 ECONNREFUSED (…)": the result of @c as dump shows it. */
void nrr_result_text(const nrr_call *c, char *buf, size_t len);

/* The destination (sendmsg) or sender (recvmsg) name recorded in the
 * custom:msghdr arg of @c: @return its length (0: none) and set *@name. */
size_t msg_name(const nrr_call *c, const uint8_t **name);

/* A datagram that sendmsg @c sends to a UNIX name, as a key: a hash of
 * the name (nrr_unix_key) and up to NRR_DGRAM_HEAD of its recorded first bytes,
 * which is how a receiver without the sender's name (NCCL's proxy socket)
 * tells who sent it.  @return the key's length (0: not such a call). */
#define NRR_DGRAM_HEAD 32
size_t nrr_dgram_key(const nrr_call *c, uint8_t key[NRR_XMAP_MAX]);

/* The recorded bytes of a byte arg, zero-padded to its full length into
 * a malloc'ed buffer (*len = full length). */
uint8_t *nrr_arg_bytes(const nrr_call *c, int i, size_t *len);
int nrr_arg_index(const nrr_call *c, const char *name);

#endif
