/* SPDX-License-Identifier: MIT */
/* json.h - how every JSON output of ncclrr (export --chrome, the HTML
 * report's data, diff --json, hang --json, nccl list --json) is written:
 * one string rule and one streaming writer (struct nrr_jw) that places the
 * separators, so the outputs cannot drift apart. */
#ifndef NCCLRR_ANALYZER_JSON_H
#define NCCLRR_ANALYZER_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Write @p[0..n) as a JSON string (with quotes): valid UTF-8 is kept;
 * '"', '\\' and '\n' get their short escapes; other control characters,
 * DEL and each byte of invalid UTF-8 (as U+0080..U+00FF) get \u00XX; and
 * so does '<', as the exports' JSON may stand in the HTML report's page (no
 * "</script>" inside it). */
void nrr_json_str(FILE *f, const char *p, size_t n);
/* The C string @s by the same rule but for '<', which stays as it is
 * (diff --json, hang --json: never inside a page); NULL writes null. */
void nrr_json_strz(FILE *f, const char *s);

/* ---- the streaming writer ----
 *
 * Values are written as they come, nothing is kept but the nesting: the
 * writer puts the ',' between members, the ": " after a key, and the line
 * breaks of a block container.  A container is either inline ({"a": 1,
 * "b": 2}) or a block: each member on its own line, indented two spaces a
 * level (NRR_JW_COMPACT: not indented), and the closing bracket on a line
 * of its own.  Misuse (a value where a key is due, closing what is not
 * open, nesting deeper than NRR_JW_MAXDEPTH) is a programming error and
 * aborts. */
#define NRR_JW_MAXDEPTH 16

enum {
	NRR_JW_COMPACT = 1, /* "," and ":" with no space, blocks not indented (export --chrome) */
	NRR_JW_HTML = 2,    /* strings by nrr_json_str()'s rule ('<' escaped): may stand in a page */
};

struct nrr_jw {
	FILE *f;
	unsigned flags;
	int depth;
	bool key;        /* a key was written, its value is due */
	bool brk;        /* nrr_jw_break(): the next member on a new line */
	struct {
		bool block, any, obj;
	} lv[NRR_JW_MAXDEPTH];
};

void nrr_jw_init(struct nrr_jw *w, FILE *f, unsigned flags);
/* Open an object / array as the next value; @block: a member a line. */
void nrr_jw_obj(struct nrr_jw *w, bool block);
void nrr_jw_arr(struct nrr_jw *w, bool block);
/* Close the innermost open container. */
void nrr_jw_end(struct nrr_jw *w);
/* The next member's key (in an object). */
void nrr_jw_key(struct nrr_jw *w, const char *k);
/* Values.  nrr_jw_str(NULL) writes null. */
void nrr_jw_str(struct nrr_jw *w, const char *s);
void nrr_jw_strn(struct nrr_jw *w, const char *s, size_t n);
void nrr_jw_int(struct nrr_jw *w, long long v);
void nrr_jw_uint(struct nrr_jw *w, unsigned long long v);
void nrr_jw_bool(struct nrr_jw *w, bool v);
void nrr_jw_null(struct nrr_jw *w);
/* A number with @prec decimals ("%.*f"). */
void nrr_jw_fixed(struct nrr_jw *w, double v, int prec);
/* Signed nanoseconds as microseconds with three decimals, exactly
 * ("12.345", "-0.001"; no rounding through a double): the times of
 * export --chrome. */
void nrr_jw_us(struct nrr_jw *w, int64_t ns);
/* A value the caller formats itself (printf), already JSON: a number in
 * a unit of its own, a fragment rendered earlier by a writer. */
void nrr_jw_raw(struct nrr_jw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The separator for a value the caller then writes itself to w->f, already
 * JSON: a fragment another writer wrote to a side file (the HTML report's
 * "calls" and "chain" arrays, copied in at the end). */
void nrr_jw_value(struct nrr_jw *w);
/* The next member of the (inline) container starts a new line: ",\n"
 * instead of ", " (export --chrome's "metadata" after the events). */
void nrr_jw_break(struct nrr_jw *w);
/* Key and value in one call. */
void nrr_jw_kstr(struct nrr_jw *w, const char *k, const char *s);
void nrr_jw_kint(struct nrr_jw *w, const char *k, long long v);
void nrr_jw_kuint(struct nrr_jw *w, const char *k, unsigned long long v);
void nrr_jw_kbool(struct nrr_jw *w, const char *k, bool v);
void nrr_jw_kfixed(struct nrr_jw *w, const char *k, double v, int prec);
void nrr_jw_kus(struct nrr_jw *w, const char *k, int64_t ns);

#endif
