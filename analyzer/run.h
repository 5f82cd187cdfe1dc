/* SPDX-License-Identifier: MIT */
/*
 * run.h - the run model: the traces of one run, opened once, and a typed
 * record per traced process built once from its metadata.
 *
 * The public contract of the analysis library (analyzer/README.md): the
 * analyses take a struct nrr_inputs, and a process's facts (rank, host,
 * program, how it ended ...) are read once, into in->proc[], here.
 * The library prints nothing itself: what it has to say (an error, a
 * skipped input, a warning about damage) goes to the message sink
 * (nrr_run_set_sink), which the CLI turns into its "ncclrr CMD:" lines;
 * its functions return 0 or a negative errno, never an exit status.
 */
#ifndef NCCLRR_ANALYZER_RUN_H
#define NCCLRR_ANALYZER_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt.h"

/* ------------------------------------------------------------ messages */

enum nrr_run_msg {
	NRR_RUN_ERROR,   /* the operation failed: what and what to do */
	NRR_RUN_USAGE,   /* failed because of how it was asked (no input given) */
	NRR_RUN_SKIP,    /* an input or chunk was damaged, skipped, and reading went on */
	NRR_RUN_NOTE,    /* a warning; or an error about the selection asked for */
};
/* Where the library's messages go: @cmd the command that opened the run
 * ("dump"), @text one line without newline.  NULL restores the default,
 * "ncclrr CMD: TEXT" on stderr. */
typedef void (*nrr_run_sink)(enum nrr_run_msg kind, const char *cmd, const char *text);
void nrr_run_set_sink(nrr_run_sink sink);
/* Say one message of @kind to the sink (errno kept): how the run library
 * and the analyses built on it (hang, diff) speak to the user. */
void nrr_run_say(enum nrr_run_msg kind, const char *cmd, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Say a reader's diagnosis @d as an NRR_RUN_ERROR: "Cannot read trace:
 * file=… offset=…: …". */
void nrr_print_diag(const char *cmd, const nrr_diag *d);

/* ------------------------------------------------- the process record */

/* How a traced process ended (FORMAT.md, "How a trace ended"). */
enum nrr_proc_end {
	NRR_END_EXIT,     /* exit, _exit, return from main: exit_code, -1 when not known */
	NRR_END_SIGNAL,   /* a fatal signal: signal_name */
	NRR_END_EXEC,     /* it exec'd another program */
	NRR_END_RUNNING,  /* no end key, the file complete: still running when last written (a dump) */
	NRR_END_KILLED,   /* no end key, the file cut (no index, dropped bytes): the writer was killed */
};

struct nrr_proc {
	long rank;              /* metadata rank (nrr_meta_rank), -1: none or damaged */
	char *rank_str;         /* rank as text, NULL when rank < 0 */
	char *host;             /* metadata host, "?" when absent */
	uint32_t pid;           /* from the file header */
	char *who;              /* "host:pid" */
	char *program;          /* metadata exe, else argv[0]; NULL when neither */
	char *argv;             /* metadata argv (the command line, one string); NULL */
	char *nccl_version;     /* metadata nccl_version; NULL */
	enum nrr_proc_end end;
	char *end_how;          /* the end key as recorded ("exit 0"), "" when none */
	int exit_code;          /* NRR_END_EXIT: the status, -1 when not known */
	char *signal_name;      /* NRR_END_SIGNAL: "SIGSEGV" */
	uint64_t end_wall;      /* wall ns of the file's end_ts, 0 when none */
	const char **env;       /* "NAME=VALUE" of the env.* keys the tracer kept, in
				 * metadata order, NULL-terminated */
	size_t nenv;
};

/* The end key as recorded ("exit 0"), NULL when the trace has none. */
static inline const char *nrr_proc_end_key(const struct nrr_proc *p)
{
	return p->end == NRR_END_RUNNING || p->end == NRR_END_KILLED ? NULL : p->end_how;
}

/* Parse an end key's value @how into @p's end, exit_code, signal_name
 * (@cut: the file had no index or dropped bytes).  @return 0, -ENOMEM. */
int nrr_proc_parse_end(struct nrr_proc *p, const char *how, bool cut);

/* -------------------------------------------------------------- the run */

/* Which processes and calls a reading command shows (the CLI's
 * selection options fill it: cli/inputs.h); decided per call by
 * nrr_select_call(): one rule for every command that takes them. */
struct nrr_select {
	const char *ranks;       /* comma list of ranks (applied by nrr_inputs_open()) */
	const char *api;         /* GLOB[,GLOB] */
	bool errors;             /* only failed calls */
	double from, to;         /* seconds since the earliest trace */
	double around;           /* seconds around the first failure, < 0: not asked */
	int64_t from_ns, to_ns;  /* the window, set by nrr_select_resolve() */
	int64_t failure_ns;      /* the failure the window is centred on */
	char failure[200];       /* "rank 3 cudaIpcOpenMemHandle #1234" */
};
/* Everything selected. */
void nrr_select_init(struct nrr_select *s);

struct nrr_inputs {
	nrr_reader **r;
	struct nrr_proc *proc;  /* per reader, built once at open */
	char **who;          /* per reader: proc[i].who */
	char **rank;         /* per reader: proc[i].rank_str (NULL: no rank) */
	size_t n;
	const char *cmd;     /* the command that opened them ("dump"): its messages
			      * and progress line name it */
	uint64_t base_wall;  /* earliest file start, wall ns */
	char *tmpdir;        /* LTTng traces converted to .nrt live here until close */
	char **tmpfiles;
	size_t ntmp;
	const struct nrr_select *sel;  /* set by nrr_select_resolve(); NULL: all */
	struct { const nrr_reader *r; uint64_t offset; } *damage;   /* said already */
	size_t ndamage;
};

/* Strict (@on, the default): a damaged input file stops nrr_inputs_open()
 * with its error, as the only input given does always.  Otherwise a file
 * that cannot be opened is named with what is wrong and skipped, a damaged
 * chunk met while reading ends its thread's calls in that file
 * (nrr_reader_on_damage), and reading goes on with the rest;
 * nrr_inputs_skipped() counts them. */
void nrr_inputs_set_strict(bool on);
/* Inputs (files or damaged chunks) skipped since the program started. */
size_t nrr_inputs_skipped(void);

/* Open every .nrt file named or found (not recursively) in a named
 * directory, sorted by name (a directory without .nrt files that holds an
 * LTTng trace of the ncclrr_* providers is converted first), keeping only
 * the ranks in the comma list @ranks when it is not NULL, and build each
 * process's record.  Says damage (rebuilt index, dropped bytes) as
 * warnings.  @return 0, or -EINVAL / -ENOMEM after saying what is wrong. */
int nrr_inputs_open(struct nrr_inputs *in, const char *cmd, char **paths, int npaths, const char *ranks);
void nrr_inputs_close(struct nrr_inputs *in);
/* Time @ts of reader @ri as ns since the earliest trace started,
 * saturated at +-INT64_MAX (times come from the trace). */
int64_t nrr_inputs_time(const struct nrr_inputs *in, size_t ri, uint64_t ts);
/* Make @s the selection of @in (in->sel): fixes the time window, for
 * s->around by reading the traces once for the first failure that
 * matters.  @return 0, or -EINVAL after saying what is wrong. */
int nrr_select_resolve(struct nrr_select *s, struct nrr_inputs *in);
/* @return true when call @c of reader @ri is selected by in->sel. */
bool nrr_select_call(const struct nrr_inputs *in, size_t ri, const nrr_call *c);

#endif
