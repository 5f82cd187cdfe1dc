/* SPDX-License-Identifier: MIT */
/* hang_internal.h - what the parts of `ncclrr hang` share (private to
 * analyzer/): the per-process state the scan fills (hang_scan.c), the
 * wait-for graph and root causes built over it (hang_graph.c), which the
 * renderers read (hang_report.c); hang.c runs them in order. */
#ifndef NCCLRR_ANALYZER_HANG_INTERNAL_H
#define NCCLRR_ANALYZER_HANG_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "callfmt.h"
#include "progress.h"
#include "hang.h"
#include "hang_coll.h"


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

/* sockrec roles: the tracer's sock_role (enum nrr_sock_role, nrt.h), and
 * one end of a socketpair */
#define ROLE_PAIR 100

struct fninfo {
	uint8_t kind;
	const char *cat;       /* blocked-in category, NULL: not a blocking call */
	int a_fd, a_addr, a_fds, a_role, a_type, a_local, a_peer, a_opid;
};

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
/* what each class is called in the reports */
extern const char *const nrr_hang_cls_name[];

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

/* What a wait-for edge waits in: the graph decides by this, never by
 * the edge's text (W_OTHER: a call with no socket role, cat names it). */
enum hwait { W_OTHER, W_CONNECT, W_ACCEPT, W_POLL, W_RECV, W_SEND, W_PROXY };

struct hedge {
	int from, to;          /* node indices; to = -1: nothing the traces show */
	uint8_t kind;          /* enum hwait */
	const char *cat;       /* how the reports name it: "accept", a call's name, ... */
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

/* The graph's edges to known nodes, by source (adj) and by target (radj):
 * CSR arrays of edge indices. */
struct graph {
	size_t *off, *roff;
	int *adj, *radj;
	bool *term;   /* waits lead nowhere else in the graph */
};

/* ------------------------------------------------------------ node helpers */

/* Did an end at @a come before one at @b?  0 is a trace that holds
 * nothing, which cannot be placed in time: after those that can (mpirun's
 * SIGKILL cut short the one tail of a rank that started last; ranked
 * first, it hid rank 3, whose failure the traces hold). */
static inline bool ends_before(uint64_t a, uint64_t b)
{
	return a && (!b || a < b);
}

static inline size_t nnodes(const struct nrr_hang *h)
{
	return h->np + h->nmissing;
}

static inline int node_rank(const struct nrr_hang *h, int node)
{
	if (node < 0)
		return -1;
	if ((size_t)node >= h->np)
		return h->missing[(size_t)node - h->np];
	return h->p[node].rank;
}

static inline const char *node_label(const struct nrr_hang *h, int node, char *buf, size_t len)
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
static inline void put_for(FILE *f, uint64_t ns)
{
	if (ns >= 1000000000ull)
		fprintf(f, "%.2f s", (double)ns / 1e9);
	else
		nrr_format_dur(f, ns);
}

static inline double rel(const struct nrr_hang *h, uint64_t wall)
{
	return wall >= h->base_wall ? (double)(wall - h->base_wall) / 1e9 : -(double)(h->base_wall - wall) / 1e9;
}

/* ------------------------------------------------------------ between the parts */

/* hang_scan.c: read process @i's trace into h->p[i]; the socket record of @fd */
int hang_read_proc(struct nrr_hang *h, size_t i);
struct sockrec *hang_sock_open(struct hproc *p, int fd);
/* hang_graph.c: the job's size and bootstrap root, the edges, the graph
 * over them, the root causes and the summary chain */
void hang_job_size(struct nrr_hang *h);
bool hang_is_root(const struct nrr_hang *h, const char *addr);
int hang_build_edges(struct nrr_hang *h);
int hang_graph_build(const struct nrr_hang *h, struct graph *g);
void hang_graph_free(struct graph *g);
int hang_find_causes(struct nrr_hang *h, const struct graph *g);
char *hang_describe(const struct nrr_hang *h, int n, int cls, bool waited);
char *hang_chain(struct nrr_hang *h, const struct graph *g);
void hang_rank_list(const struct nrr_hang *h, const int *nodes, size_t n, char *buf, size_t len);

#endif
