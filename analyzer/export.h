/* SPDX-License-Identifier: MIT */
/* export.h - `ncclrr export`: Chrome/Perfetto trace-event JSON and a
 * self-contained HTML report, written while the traces are read. */
#ifndef NCCLRR_ANALYZER_EXPORT_H
#define NCCLRR_ANALYZER_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "callfmt.h"
#include "run.h"
#include "json.h"

/* What the exporters leave out or fold (cmd_export.c sets it; the
 * selection itself is in->sel, nrr_select_call()). */
struct nrr_export_opts {
	bool all;   /* --all: every call on its own, no folding */
};

/* Write @in as Chrome trace-event JSON to @path ("-": stdout).
 * @return 0, or -1 with @err filled (what failed, file and offset). */
int nrr_export_chrome(struct nrr_inputs *in, const struct nrr_export_opts *o, const char *path, char *err,
		      size_t errlen);

/* Write @in as a Perfetto protobuf trace (TracePacket / TrackEvent, the
 * schema subset in analyzer/perfetto_trace.proto) to @path ("-": stdout),
 * packet by packet.  @return 0, or -1 with @err filled. */
int nrr_export_perfetto(struct nrr_inputs *in, const struct nrr_export_opts *o, const char *path, char *err,
			size_t errlen);

/* Extra diagnosis shown in the HTML report (e.g. the hang analysis):
 * a title, preformatted text and an inline SVG; any may be NULL. */
struct nrr_html_extra {
	const char *title;
	const char *text;
	const char *svg;
};

/* Write @in as one self-contained HTML page to @path.  @extra may be NULL.
 * @return 0, or -1 with @err filled. */
int nrr_export_html(struct nrr_inputs *in, const char *path, const struct nrr_html_extra *extra, char *err,
		    size_t errlen);

/* ---- shared by the exporters (export_common.c) ---- */

/* Per input file: the track id (the rank, or a number above every rank
 * for unranked processes such as the `ncclrr run` launcher) and a name. */
struct nrr_export_proc {
	long pid;
	bool ranked;
	long rank;
	char name[320];
};
/* @return an array of in->n entries (free()), or NULL. */
struct nrr_export_proc *nrr_export_procs(const struct nrr_inputs *in);

/* Text built with the FILE* formatters of callfmt.h, reused per call. */
struct nrr_sbuf {
	FILE *f;
	char buf[16384];
};
int nrr_sbuf_open(struct nrr_sbuf *s);
void nrr_sbuf_close(struct nrr_sbuf *s);
/* Start a new text; write to s->f; then nrr_sbuf_str() gives it. */
void nrr_sbuf_reset(struct nrr_sbuf *s);
const char *nrr_sbuf_str(struct nrr_sbuf *s, size_t *len);

/* The recorded value of the argument named @name, or NULL. */
const nrr_value *nrr_call_arg(const nrr_call *c, const char *name, int *index);
/* Whether @c is a sock_info record of a connected socket (role connect or
 * accept, both addresses recorded): then *@fd, its own address *@local,
 * the other end's *@peer and *@isconnect (false: accepted). */
bool nrr_sock_conn(const nrr_call *c, int64_t *fd, const nrr_value **local, const nrr_value **peer,
		   bool *isconnect);

/* A small hash map of byte keys (export_chrome.c's flows, the Perfetto
 * writer's interned names): entries carry the Chrome writer's rendezvous
 * fields; other users keep a number in fd. */
struct nrr_sref {
	long pid;
	uint32_t tid;
	int64_t ts;   /* ns since the start of the listing */
	uint64_t dur;
};

struct nrr_emap_ent {
	struct nrr_emap_ent *next;
	uint64_t hash;
	uint32_t klen;
	bool has_a, has_b;
	struct nrr_sref a, b;      /* rendezvous: a = source, b = destination */
	int64_t fd;            /* last connect/accept: its fd */
	uint32_t ngetfd;       /* socket: GetFd requests seen on it */
	uint32_t connlen;
	uint8_t conn[264];     /* socket: server||client address bytes */
	uint8_t key[];
};

struct nrr_emap {
	struct nrr_emap_ent **b;
	size_t nb, n;
};

struct nrr_emap_ent *nrr_emap_get(struct nrr_emap *m, const void *key, size_t klen, bool create);
void nrr_emap_del(struct nrr_emap *m, struct nrr_emap_ent *d);
void nrr_emap_free(struct nrr_emap *m);

/* Keys: a tag byte, the reader index and whatever names the thing. */
struct nrr_ekey {
	uint8_t b[300];
	size_t n;
};

void nrr_ekey_init(struct nrr_ekey *k, char tag, size_t reader);
void nrr_ekey_add(struct nrr_ekey *k, const void *p, size_t n);

/* ---- what every exporter does (export_common.c) ---- */
/* Open @path for writing ("-": stdout).  @return it, or NULL with @err
 * filled. */
FILE *nrr_export_open(const char *path, char *err, size_t errlen);
struct nrr_folder;
/* Read @in in time order with a progress line, handing the calls its
 * selection takes (nrr_select_call()) to @fold, then finish @fold
 * (nrr_folder_finish(): it is freed).  @return 0, or -1 with @err filled
 * (the reader's diagnosis: file, offset). */
int nrr_export_read(struct nrr_inputs *in, struct nrr_folder *fold, char *err, size_t errlen);
/* The end of a merged read that stopped with @rc: close @m.  @return 0
 * at the end of the traces, else -1 with @err filled (the reader's
 * diagnosis). */
int nrr_export_read_end(nrr_merge *m, int rc, char *err, size_t errlen);
/* Flush and close @f (stdout: flush only) written to @path; @ret is the
 * result so far.  @return @ret, or -1 with @err filled when writing failed. */
int nrr_export_close(FILE *f, const char *path, int ret, char *err, size_t errlen);

/* ---- noise folding (export_common.c) ----
 * Probing and polling make runs of one function's calls on one thread
 * that fail the way a healthy run fails too (the benign= rules of
 * formats/api/, nrr_call_benign_rule()): NCCL's cuGetProcAddress probes
 * (thousands of CUDA_ERROR_NOT_FOUND per process), connect retries while
 * a peer is not listening yet.  A folder takes the selected calls in time
 * order and hands each to the exporter, except that such a run (two or
 * more consecutive complete calls of one function on a thread, each a
 * success or a benign failure, at least one failure) comes out as one
 * nrr_fold_run.  Memory: one held call per thread. */
struct nrr_fold_run {
	size_t ri;
	uint32_t tid;
	const nrr_fn_schema *fn;
	int64_t ts, end;              /* ns since the earliest trace started */
	uint64_t calls, failed;       /* calls in the run (writer-coalesced repeats counted), failures */
	uint64_t first_seq, last_seq;
	const nrr_benign_rule *rule;  /* the rule of its first failure */
	bool real;                    /* a retry run that ends failing: the peer never answered */
	char result[128];             /* the first failure's result, formatted */
	char name[256];               /* "cuGetProcAddress ×3664 (3600 CUDA_ERROR_NOT_FOUND (500): probe)" */
};

struct nrr_fold_ops {
	void (*call)(void *ctx, size_t ri, const nrr_call *c);
	void (*run)(void *ctx, const struct nrr_fold_run *r);
	void *ctx;
};

struct nrr_folder;
/* @all: fold nothing (every call straight to ops->call).  @return NULL
 * when out of memory. */
struct nrr_folder *nrr_folder_new(const struct nrr_inputs *in, bool all, const struct nrr_fold_ops *ops);
/* Pass call or log @c of reader @ri on (now or when its thread's run ends). */
void nrr_folder_call(struct nrr_folder *f, size_t ri, const nrr_call *c);
/* Hand on what is held (at the end of the traces) and free @f. */
void nrr_folder_finish(struct nrr_folder *f);
#endif
