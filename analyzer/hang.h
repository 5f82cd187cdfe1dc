/* SPDX-License-Identifier: MIT */
/*
 * hang.h - why a job hangs, from its traces (`ncclrr hang`, and the HTML
 * report's diagnosis).
 *
 * nrr_hang_analyze() streams every trace once (a cursor per stream, memory
 * per process: its sockets, the calls in flight at the end, no history)
 * and builds, per process: how its trace ended, its last completed call,
 * the calls still in flight (innermost and outermost per thread), a
 * trailing polling run or connect retry loop; then a cross-process
 * wait-for graph from matched socket endpoints (sock_info, accept,
 * connect, the bootstrap root at NCCL_COMM_ID against the expected ranks)
 * and unanswered proxy RPCs; then the root causes, most likely first: a
 * rank with no trace, one that died or exited, one stuck before or in an
 * earlier phase, a cycle.
 */
#ifndef NCCLRR_ANALYZER_HANG_H
#define NCCLRR_ANALYZER_HANG_H

#include <stdbool.h>
#include <stdio.h>

#include "run.h"

struct nrr_hang;

/* Analyze the opened inputs (keep them open until nrr_hang_free: the
 * result points at their names).  @return 0 and *@out (free with
 * nrr_hang_free), or a negative errno after saying the reader's error
 * through the run model's sink ("Cannot read trace: file=… offset=…: …",
 * nrr_run_say()). */
int nrr_hang_analyze(struct nrr_inputs *in, struct nrr_hang **out);
/* true when some process waits (a blocking call in flight, a polling or
 * retry loop, an unanswered proxy request) at the end of a trace that did
 * not end by exit: `ncclrr hang` exits 1 then. */
bool nrr_hang_found(const struct nrr_hang *h);
/* One line: the top root cause and the chain of waiting ranks, e.g.
 * "ranks 1-4,6-15 wait in recv for rank 0; rank 0 waits in accept at
 * 127.0.0.1:PORT for rank 5; rank 5 never reached the bootstrap: …", or
 * "no hang: …".  Owned by @h. */
const char *nrr_hang_summary(const struct nrr_hang *h);
/* The rank of the top root cause, or -1 (none, or not a rank). */
int nrr_hang_root_rank(const struct nrr_hang *h);
void nrr_hang_print_text(FILE *f, const struct nrr_hang *h);
/* One JSON document (see man/ncclrr-hang.1 for the fields). */
void nrr_hang_print_json(FILE *f, const struct nrr_hang *h);
/* A Graphviz digraph: a node per process (and per rank with no trace),
 * an edge per wait, root causes in red. */
void nrr_hang_print_dot(FILE *f, const struct nrr_hang *h);
void nrr_hang_free(struct nrr_hang *h);

#endif
