/* SPDX-License-Identifier: MIT */
/* export.h - `ncclrr export`: Chrome/Perfetto trace-event JSON and a
 * self-contained HTML report, written while the traces are read. */
#ifndef NCCLRR_ANALYZER_EXPORT_H
#define NCCLRR_ANALYZER_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "inputs.h"

/* Write @in as Chrome trace-event JSON to @path ("-": stdout).
 * @return 0, or 2 with @err filled (what failed, file and offset). */
int nrr_export_chrome(struct nrr_inputs *in, const char *path, char *err, size_t errlen);

/* Extra diagnosis shown in the HTML report (e.g. the hang analysis):
 * a title, preformatted text and an inline SVG; any may be NULL. */
struct nrr_html_extra {
	const char *title;
	const char *text;
	const char *svg;
};

/* Write @in as one self-contained HTML page to @path.  @extra may be NULL.
 * @return 0, or 2 with @err filled. */
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

/* Write @p[0..n) as a JSON string (with quotes), keeping valid UTF-8 and
 * escaping everything else, and '<' (no "</script>" inside a page). */
void nrr_json_str(FILE *f, const char *p, size_t n);
/* Signed ns as µs with three decimals ("12.345"). */
void nrr_put_us(FILE *f, int64_t ns);
/* The recorded value of the argument named @name, or NULL. */
const nrr_value *nrr_call_arg(const nrr_call *c, const char *name, int *index);
/* Whether @c is a sock_info record of a connected socket (role connect or
 * accept, both addresses recorded): then *@fd, its own address *@local,
 * the other end's *@peer and *@isconnect (false: accepted). */
bool nrr_sock_conn(const nrr_call *c, int64_t *fd, const nrr_value **local, const nrr_value **peer,
		   bool *isconnect);

#endif
