/* SPDX-License-Identifier: MIT */
/* diff_internal.h - what the parts of `ncclrr diff` share (private to
 * analyzer/): processes, tokens, windows and divergences (diff_align.c
 * fills them), the result (struct nrr_diff, diff.h) that diff.c builds and
 * the renderers of diff_report.c print. */
#ifndef NCCLRR_ANALYZER_DIFF_INTERNAL_H
#define NCCLRR_ANALYZER_DIFF_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "callfmt.h"
#include "diff.h"
#include "runinfo.h"

#define MAX_CONTEXT 32
#define CONFIRM 3          /* tokens after a resync point that must agree */
#define SCAN_LIMIT 50000000ull /* events re-read at most to print one call */
#define MAX_FAILS 4096     /* real failures kept per process */
#define ROLE_CALLS 4       /* calls that name a thread's role */

/* How an argument is compared. */
enum cls {
	CL_VAL,    /* value as recorded */
	CL_ID,     /* pointer / handle / fd / pid: only null, valid, invalid */
	CL_STR,    /* text; temporary paths lose their random parts */
	CL_LEN,    /* bytes: length only (payloads, random ids) */
	CL_BYTES,  /* bytes: length and content */
	CL_SADDR,  /* socket address without its port */
	CL_IDFIELDS, /* bytes of uvars, some of them numbers each run chooses
		      * anew (fn->runid_fields: a QP number in a struct): those
		      * as CL_ID, the rest as recorded */
};

struct fninfo {
	bool ready;
	bool data;      /* has a byte buffer: an errno-style result is a count */
	bool own_ready; /* own is set (the process is paired) */
	uint64_t name_h;
	uint8_t cls[NRR_MAX_ARGS];
	/* bit i: parameter i is one the paired process's schema does not have
	 * for this function (an older trace lacks fields a newer build
	 * records): not part of the call's identity */
	uint32_t own;
};

struct proc {
	struct nrr_inputs *in;
	size_t idx;
	nrr_reader *r;
	char *key;          /* pairing key */
	char *label;        /* "rank 3", "ncclrr #1" */
	long rank;          /* for sorting; LONG_MAX without one */
	struct fninfo *fi;
	uint32_t nfns;
	struct proc *peer;  /* the process of the other run it is compared with, or NULL */
	uint32_t *streams;  /* stream indices in order of first call */
	uint32_t nstreams;
	uint64_t *role;     /* per stream index: its name, else a hash of its first calls (see proc_scan) */
	bool *gpu;          /* per stream index: it calls CUDA, NVML, verbs, NCCL, ncclNet or proxy RPCs */
	struct fail *fails; /* real failures in the order they returned */
	size_t nfails, cfails;
	char end[64];       /* metadata end ("exit 0", "signal SIGTERM"), "" when none */
	uint64_t end_wall;  /* the end, or the last record without one */
	uint64_t stop;      /* when its run was stopped from outside (nrr_job_stopped_at()) */
	const char *api;    /* --api: only these functions' calls are compared */
};

/* A call that failed for real (not nrr_call_benign()). */
struct fail {
	uint64_t key;       /* function, result and errno */
	uint64_t wall;      /* when it returned */
	uint64_t seq;
	uint32_t stream;
	uint8_t phase;
};

struct tok {
	uint64_t h, seq, wall;
	const nrr_fn_schema *fn;
	uint8_t phase;
	bool failed, taken;
	bool transient;   /* failed the way a healthy run fails too (nrr_call_benign()) */
};

struct side {
	struct proc *p;
	uint32_t stream, tid;
	nrr_cursor *c;
	struct tok *ring;
	size_t cap, head, n;
	bool eof;
	int err;
	uint64_t last_wall;
	uint64_t last_tok;   /* wall time of the last token taken */
};

enum dkind { D_CALL, D_A_ENDS, D_B_ENDS, D_THREAD_A, D_THREAD_B, D_PROC_A, D_PROC_B };

/* What makes a pair's divergence meaningful (the headline). */
enum mkind {
	M_NONE,
	M_FAIL,    /* a call fails for real in one run only */
	M_END,     /* the process ends abnormally in one run only */
};

struct divg {
	bool found;
	enum dkind kind;
	uint32_t thread_no, stream_a, stream_b, tid_a, tid_b;
	struct tok ta, tb;
	struct tok hist[MAX_CONTEXT];
	size_t nhist;
	struct tok aft_a[MAX_CONTEXT], aft_b[MAX_CONTEXT];
	size_t naft_a, naft_b;
	uint64_t t_a, t_b;   /* ns since each run's start */
};

struct pair {
	struct proc *a, *b;
	struct divg d;
	size_t other_threads;  /* further threads that diverge */
	uint32_t *sa, *sb;     /* threads paired by role: stream of thread k+1 in A, in B */
	uint32_t nth;
	/* the meaningful divergence */
	enum mkind m;
	bool m_in_b;           /* it is in B (else in A) */
	struct fail mf;        /* M_FAIL: the first failure only in that run */
	uint32_t m_thread;     /* M_FAIL: thread number */
	uint64_t m_t;          /* ns since that run's start */
	bool m_is_d;           /* M_FAIL is the first call divergence d itself */
};

struct ctx {
	const struct nrr_diff_opts *o;
	struct nrr_inputs *ia, *ib;
	uint64_t compared;
	int err;               /* a reader error was printed */
};

/* ---------------------------------------------------------- config */

struct config {
	struct nrr_runinfo a, b;
	struct nrr_runinfo_change *ch;
	size_t n;
	bool have;
};

struct nrr_diff {
	struct nrr_diff_opts o;
	struct nrr_inputs *ia, *ib;
	struct ctx x;
	struct config cfg;
	struct proc *pa, *pb;  /* the processes of A, of B */
	struct pair *pairs;    /* paired, in report order */
	size_t np;
	size_t ndiv;           /* pairs that diverge */
	size_t first;          /* the headline's pair (when ndiv) */
	bool differ;           /* ndiv or a configuration difference */
};

/* ---------------------------------------------------------- between the parts */

/* diff_align.c: a process opened, scanned, keyed and freed; a pair's first
 * divergence and its meaningful one; the tokens' hashes the report reuses */
int diff_proc_init(struct proc *p, struct nrr_inputs *in, size_t i);
int diff_proc_scan(struct proc *p);
int diff_proc_keys(struct proc *ps, size_t n);
void diff_proc_free(struct proc *p);
const char *diff_base_name(const char *p);
int diff_cmp_pair(const void *x, const void *y);
int diff_compare_pair(struct ctx *x, struct pair *pr);
void diff_meaningful(struct pair *pr);
uint64_t diff_when_of(const struct divg *d);
struct fninfo *diff_fninfo_of(struct proc *p, const nrr_fn_schema *fn);
uint64_t diff_hash_arg(uint64_t h, uint8_t cls, const nrr_fn_schema *fn, const nrr_arg_schema *a, const nrr_value *v);
uint64_t diff_hash_result(uint64_t h, const struct fninfo *fi, const nrr_call *c);
bool diff_outs_written(const nrr_call *c);

#endif
