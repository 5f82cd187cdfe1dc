/* SPDX-License-Identifier: MIT */
/* callfmt.h - text rendering of recorded calls (dump, diff, hang). */
#ifndef NCCLRR_CALLFMT_H
#define NCCLRR_CALLFMT_H

#include <stdio.h>
#include "nrt.h"

/* @return true when @c's result is an error under its return convention
 * ("not ready" / "in progress" answers of polling calls are not errors). */
bool nrr_call_failed(const nrr_call *c);

/* A failure a healthy run has too, from a `benign=` attribute of a
 * function or a domain in formats/api/ (table generated into
 * nrr_benign_gen.c). */
typedef struct nrr_benign_rule {
	const char *fn;        /* function name, or NULL: every function of... */
	const char *domain;    /* ...this domain */
	bool err;              /* values are errno values (-1 / NULL / poserr result); else results */
	const char *why;       /* "port probing: ...", printed by diff and hang */
	uint8_t n;
	int64_t v[8];
} nrr_benign_rule;
extern const nrr_benign_rule nrr_benign_rules[];
extern const size_t nrr_benign_nrules;

/* Why failed call @c is one a healthy run has too (a port probed while
 * another process holds it, an optional device absent, a connect
 * refused while the peer is not listening yet, ...), or NULL: @c did
 * not fail (nrr_call_failed()) or its failure is a real one.  The one
 * place diff, hang and dump decide what counts as a failure. */
const char *nrr_call_benign(const nrr_call *c);

/* @return true when @c failed for real: nrr_call_failed() and not
 * nrr_call_benign(). */
bool nrr_call_real_failure(const nrr_call *c);

/* A native trace records how its process ended (exit, signal, exec).  Of
 * @n processes of one run, @without have no end: are those killed outright
 * (SIGKILL, the OOM killer, a lost host)?  Yes when they are the exception
 * (fewer than half); when most have none the whole run was cut (kill -9 of
 * a hung job, flight-recorder dumps, LTTng).  Used by replay and hang. */
static inline bool nrr_no_end_means_killed(size_t without, size_t n)
{
	return without && 2 * without < n;
}

/* Write "name=value, …" for the args of @c that are recorded. */
void nrr_format_args(FILE *f, const nrr_call *c);
/* Write one value of arg @i of @c. */
void nrr_format_value(FILE *f, const nrr_arg_schema *a, const nrr_value *v);
/* Write the result of @c: "CUDA_ERROR_INVALID_VALUE (1)", "-1 ECONNREFUSED", … */
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

#endif
