/* SPDX-License-Identifier: MIT */
/* callfmt.h - text rendering of recorded calls (dump, diff, hang). */
#ifndef NCCLRR_CALLFMT_H
#define NCCLRR_CALLFMT_H

#include <stdio.h>
#include "nrt.h"
#include "textout.h"

/* @return true when the function name @name matches one of @globs
 * (comma-separated fnmatch(3) patterns, e.g. "cuMem*,connect"): the
 * --api selection of dump and diff. */
bool nrr_name_match(const char *globs, const char *name);

/* What a finished call's answer means, from its function's semantics
 * (nrr_fn_schema's notready / transient, declared in formats/api/):
 * NOT_READY: a polling call's "not yet" (CUDA_ERROR_NOT_READY, a
 * non-blocking socket's EAGAIN, ncclNet_test's done == 0, poll's 0);
 * TRANSIENT: an error that is no failure (EINTR, EINPROGRESS); FAILED:
 * an error under its return convention; OK otherwise, and for what is
 * not a finished call. */
enum nrr_call_class { NRR_CLASS_OK, NRR_CLASS_NOT_READY, NRR_CLASS_TRANSIENT, NRR_CLASS_FAILED };
/* A call whose result is no error but that returned entries with an error
 * status (its function's failed= parameter: ibv_poll_cq's completions) is
 * FAILED too. */
enum nrr_call_class nrr_call_class(const nrr_call *c);

/* The entries of @c's failed= parameter (nrr_fn_schema.fail_arg: a count
 * byte, then fail_nfields uvars each) whose status field is not 0.
 * @return how many (0: none, or @c's function has no such parameter),
 * with the first one's index in @first and its status in @status (named
 * by fn->fail_table). */
unsigned nrr_call_entry_errors(const nrr_call *c, unsigned *first, int64_t *status);

/* @return what @c's function does (enum nrr_role, formats/nrt.h). */
static inline enum nrr_role nrr_call_role(const nrr_call *c)
{
	return c->fn ? (enum nrr_role)c->fn->role : NRR_ROLE_NONE;
}

/* @return the index of @fn's parameter of role @r (the fd, the address,
 * ...), or -1. */
static inline int nrr_fn_arg(const nrr_fn_schema *fn, enum nrr_argrole r)
{
	return fn->arg[r];
}

/* @return the recorded value of @c's parameter of role @r, or NULL (none,
 * or not recorded). */
static inline const nrr_value *nrr_call_role_arg(const nrr_call *c, enum nrr_argrole r)
{
	int a = c->fn ? c->fn->arg[r] : -1;
	return a >= 0 && (c->present >> a & 1) ? &c->args[a] : NULL;
}

/* @return true when @c's result is an error under its return convention
 * that is neither "not ready" nor transient (nrr_call_class()). */
bool nrr_call_failed(const nrr_call *c);

/* A failure a healthy run has too, from a `benign=` attribute of a
 * function or a domain in formats/api/ (table generated into
 * nrr_benign_gen.c). */
typedef struct nrr_benign_rule {
	const char *fn;        /* function name, or NULL: every function of... */
	const char *domain;    /* ...this domain */
	bool err;              /* values are errno values (-1 / NULL / poserr result); else results */
	const char *kind;      /* the WHY of benign=: "probe", "absent", "retry", "done" */
	const char *why;       /* "port probing: ...", printed by diff and hang */
	uint8_t n;
	int64_t v[8];
	/* benign=...:PARAM=N: only when the call's recorded PARAM (a number
	 * recorded at enter, found by name in the trace's schema) is N; NULL:
	 * any call */
	const char *arg;
	int64_t arg_v;
} nrr_benign_rule;
extern const nrr_benign_rule nrr_benign_rules[];
extern const size_t nrr_benign_nrules;

/* Why failed call @c is one a healthy run has too (a port probed while
 * another process holds it, an optional device absent, a connect
 * refused while the peer is not listening yet, ...), or NULL: @c did
 * not fail (nrr_call_failed()) or its failure is a real one.  The one
 * place diff, hang and dump decide what counts as a failure. */
const char *nrr_call_benign(const nrr_call *c);
/* The rule that makes @c benign, or NULL (as nrr_call_benign()).  A
 * "retry" rule's failure (a connect refused) is benign once it was
 * retried; one never followed by a success is how a peer's absence
 * showed (the replay's recorded failure keeps it then). */
const nrr_benign_rule *nrr_call_benign_rule(const nrr_call *c);

/* The functions described with `fault` (formats/api/verbs.api): the fake
 * counts them by name and its fault switch can make them fail (table
 * generated into nrr_benign_gen.c, sorted by name). */
extern const char *const nrr_fault_fns[];
extern const size_t nrr_fault_nfns;
/* true when function @name is one of them */
bool nrr_fn_fault(const char *name);

/* A parameter a call does not read for some values of another, from an
 * `unread=` attribute in formats/api/ (fcntl's arg for F_GETFD: the
 * recorded value is whatever the caller's register held). */
typedef struct nrr_unread_rule {
	const char *fn, *arg, *when;
	uint8_t n;
	int64_t v[8];
} nrr_unread_rule;
extern const nrr_unread_rule nrr_unread_rules[];
extern const size_t nrr_unread_nrules;
/* true when argument @i of @c is one the call did not read (a rule's
 * parameter, with its WHEN parameter recorded and one of its values) */
bool nrr_call_arg_unread(const nrr_call *c, uint16_t i);

/* @return true when @c failed for real: nrr_call_failed() and not
 * nrr_call_benign(). */
bool nrr_call_real_failure(const nrr_call *c);

/* @return true when @c is a call of the GPU communication stack (CUDA,
 * NVML, verbs, NCCL, its net plugin and proxy), not a plain socket call.
 * A process that makes none is a helper (a launcher, its daemon, a fork
 * stub), whatever rank its variables give it: diff pairs it as one,
 * replay serves it from its trace. */
bool nrr_call_gpu_side(const nrr_call *c);

/* A native trace records how its process ended (exit, signal, exec).  Of
 * @n processes of one run, @without have no end: are those killed outright
 * (SIGKILL, the OOM killer, a lost host)?  Yes when they are the exception
 * (fewer than half); when most have none the whole run was cut (kill -9 of
 * a hung job, flight-recorder dumps, LTTng).  Used by replay and hang. */
static inline bool nrr_no_end_means_killed(size_t without, size_t n)
{
	return without && 2 * without < n;
}

/* A job stopped from outside (a launcher's timeout, mpirun aborting the
 * job when one rank exited non-zero, a scheduler, ^C): its processes' ends
 * by SIGTERM, SIGINT or SIGHUP come in one burst at the end (ends less
 * than NRR_STOP_BURST_NS apart); the burst's first end is the instant of
 * the stop.  A process with no end recorded whose trace stops less than
 * NRR_NOEND_SLACK_NS before it was killed by the stop (the launcher's
 * SIGKILL after its SIGTERM): the tracer writes its trace out about every
 * second, so the last second before a SIGKILL is lost. */
#define NRR_STOP_BURST_NS 500000000ull
#define NRR_NOEND_SLACK_NS 1500000000ull

/* @return the instant (wall ns) the job of @n processes was stopped from
 * outside, or UINT64_MAX when it was not.  @end(i, arg, &wall) gives
 * process i's recorded end ("signal SIGTERM", "exit 1", NULL when none)
 * and its wall time.  Used by replay, diff and hang. */
uint64_t nrr_job_stopped_at(size_t n, const char *(*end)(size_t i, void *arg, uint64_t *wall), void *arg);

/* Did a process that ended as @end (NULL or "": no end recorded) at
 * @end_wall (its end, or its last record without one) end because the
 * job was stopped at @stop (nrr_job_stopped_at())? */
bool nrr_end_by_stop(const char *end, uint64_t end_wall, uint64_t stop);

/* When a process's end counts for ordering the ends of a job: its end,
 * but not before the stop when the stop ended it (a trace cut by the
 * launcher's SIGKILL stops up to a second before the kill). */
static inline uint64_t nrr_end_order(const char *end, uint64_t end_wall, uint64_t stop)
{
	return nrr_end_by_stop(end, end_wall, stop) && end_wall < stop ? stop : end_wall;
}

/* The renderings below, into a buffered sink (textout.h): what dump and
 * every bulk writer use.  @t_ns of nrr_out_call: nanoseconds since the
 * start of the listing, printed as seconds with 6 decimals. */
void nrr_out_args(nrr_out *o, const nrr_call *c);
void nrr_out_value(nrr_out *o, const nrr_arg_schema *a, const nrr_value *v);
void nrr_out_result(nrr_out *o, const nrr_call *c);
void nrr_out_dur(nrr_out *o, uint64_t ns);
/* @who: "host:pid/tid", @wholen bytes (no terminator needed) */
void nrr_out_call(nrr_out *o, const nrr_call *c, int64_t t_ns, const char *who, size_t wholen);

/* The same into a FILE: */
/* Write "name=value, …" for the args of @c that are recorded. */
void nrr_format_args(FILE *f, const nrr_call *c);
/* Write one value of arg @i of @c. */
void nrr_format_value(FILE *f, const nrr_arg_schema *a, const nrr_value *v);
/* Write the result of @c: "CUDA_ERROR_INVALID_VALUE (1)", "-1 ECONNREFUSED",
 * "4 [wc[0] IBV_WC_RETRY_EXC_ERR (12), +3 failed]" (nrr_call_entry_errors()), … */
void nrr_format_result(FILE *f, const nrr_call *c);
/* Write a duration: "850ns", "3.1us", "12.0ms", "1.25s". */
void nrr_format_dur(FILE *f, uint64_t ns);
/* Write one dump line (no newline) for @c: "[T] [who] #SEQ name(args) = result dur".
 * @t_rel: seconds since the start of the listing; @who: "host:pid/tid". */
void nrr_format_call(FILE *f, const nrr_call *c, double t_rel, const char *who);

/* A recorded `custom:msghdr` value (sendmsg/recvmsg msg; layout in
 * formats/api/README.md). */
typedef struct nrr_msghdr_rec {
	uint64_t iovlen;
	uint64_t len;          /* bytes sent, or received (the result) */
	const uint8_t *head;   /* first <= 64 bytes of iov[0] */
	uint32_t head_len;
	uint32_t nfd;
	int64_t fds[16];       /* passed fds (SCM_RIGHTS), as numbered in the recording process */
	bool has_name;         /* false: written before msg_name was recorded */
	const uint8_t *name;   /* msg_name bytes (a struct sockaddr), NULL when none */
	uint32_t name_len;     /* 0: msg_name was NULL (or recvmsg failed) */
} nrr_msghdr_rec;

/* Decode @v (valid while @v is).  Records from before msg_name was
 * recorded end after the fds: has_name is false then.  @return 0, or
 * NRR_ETRUNC / NRR_ECORRUPT. */
int nrr_msghdr_decode(const nrr_value *v, nrr_msghdr_rec *m);
/* @return @c's recorded struct msghdr (sendmsg's / recvmsg's custom:msghdr
 * `msg`, what nrr_msghdr_decode() reads), or NULL: not such a call, or
 * not recorded. */
const nrr_value *nrr_call_msghdr(const nrr_call *c);

/* One message of sendmmsg's / recvmmsg's `msgvec` (custom:mmsghdr,
 * formats/api/README.md). */
typedef struct nrr_mmsg_rec {
	uint64_t len;          /* msg_len: bytes sent or received */
	const uint8_t *head;   /* first <= 32 bytes of its iov[0] */
	uint32_t head_len;
	const uint8_t *name;   /* msg_name, NULL when none */
	uint32_t name_len;
} nrr_mmsg_rec;

#define NRR_MMSG_MAX 64

/* Decode at most @max messages of @v into @m (valid while @v is).
 * @return the number of messages recorded (0 for an empty value), or
 * NRR_ETRUNC / NRR_ECORRUPT. */
int nrr_mmsg_decode(const nrr_value *v, nrr_mmsg_rec *m, int max);

/* The sge trailer of custom:send_wr / custom:recv_wr (formats/api/README.md)
 * is written only for chains of at most NRR_SGE_WRS work requests with at
 * most NRR_SGE_MAX sges each: the writer (formats/api/custom.c) and the
 * replayer (replayer/engine/rverbs.c) read these bounds here. */
#define NRR_SGE_WRS 8
#define NRR_SGE_MAX 4

/* custom:recv_wr keeps at most this many work requests of one call, and
 * custom:wc at most NRR_WC_MAX completions (the first ones): the writer and
 * the replayer read the bounds here.  A replayed poll takes a live
 * completion for each recorded one by its wr_id and QP; one that returned
 * more than were kept takes the oldest queued for the rest, which may be
 * a completion a later poll recorded (ibv_srq_pingpong's 16 QPs poll up to
 * 32 at once: cut at 16, a replay stole the next round's and hung in 1 of
 * 2 runs). */
#define NRR_ENTRIES_MAX 16
#define NRR_WC_MAX 64

/* One work request of a post as custom:send_wr / custom:recv_wr record it
 * (formats/api/README.md): the entry's fields (NRR_WR_SEND_FIELDS of a
 * send request: wr_id, opcode, send_flags, imm_data, num_sge, total
 * length, remote_addr, rkey; NRR_WR_RECV_FIELDS of a receive one: wr_id,
 * num_sge, total length), then from the sge trailer its sges. */
#define NRR_WR_SEND_FIELDS 8
#define NRR_WR_RECV_FIELDS 3
typedef struct nrr_sge_rec {
	uint64_t addr, len, lkey;
} nrr_sge_rec;
typedef struct nrr_wr_rec {
	uint64_t f[NRR_WR_SEND_FIELDS];
	unsigned nsge;
	nrr_sge_rec sge[NRR_SGE_MAX];
} nrr_wr_rec;

/* Whether a post's value kept its sges, and if not why.  A tracer that
 * leaves the trailer out writes in its place a chain length of 0 and one
 * of the NRR_SGES_MANY_WRS..NRR_SGES_NO_ROOM codes (formats/api/README.md):
 * a reader before that mark sees a trailer of another chain, as if none. */
enum nrr_sges {
	NRR_SGES_KEPT = 0,       /* the trailer, whole and for every request */
	NRR_SGES_NONE,           /* no trailer: recorded by a tracer before it */
	NRR_SGES_MANY_WRS,       /* a chain of more than NRR_SGE_WRS requests */
	NRR_SGES_MANY_SGES,      /* a request with more than NRR_SGE_MAX sges (or none listed) */
	NRR_SGES_NO_ROOM,        /* the value's NRR_CUSTOM_MAX bytes were full */
	NRR_SGES_CUT,            /* a trailer cut short or damaged */
};

/* Why the sges of @s are not there, in words ("" when they are). */
const char *nrr_sges_why(enum nrr_sges s);

/* Decode the work requests of @v (custom:send_wr when @send, else
 * custom:recv_wr) into @w (NRR_ENTRIES_MAX of them).  *@sges: whether the
 * value kept its sge trailer (when it did not, each nsge is 0).
 * @return the number of requests, or NRR_ETRUNC / NRR_ECORRUPT. */
int nrr_wr_decode(const nrr_value *v, bool send, nrr_wr_rec *w, enum nrr_sges *sges);

#endif
