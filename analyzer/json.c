/* SPDX-License-Identifier: MIT */
/* json.c - the one JSON string rule and the streaming writer of ncclrr's
 * JSON outputs (json.h). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* Length of the valid UTF-8 sequence at p (0 if not valid). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	size_t l;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		l = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		l = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		l = 4;
	else
		return 0;
	if (l > n)
		return 0;
	for (size_t i = 1; i < l; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return l;
}

static void put_str(FILE *f, const char *s, size_t n, bool lt)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = p[i];
		if (ch == '"' || ch == '\\') {
			fputc('\\', f);
			fputc(ch, f);
		} else if (ch == '\n') {
			fputs("\\n", f);
		} else if (ch < 0x20 || ch == 0x7f || (ch == '<' && lt)) {
			fprintf(f, "\\u%04x", ch);
		} else if (ch < 0x80) {
			fputc(ch, f);
		} else {
			size_t l = utf8_len(p + i, n - i);
			if (l) {
				fwrite(p + i, 1, l, f);
				i += l - 1;
			} else {
				fprintf(f, "\\u%04x", ch);
			}
		}
	}
	fputc('"', f);
}

void nrr_json_str(FILE *f, const char *s, size_t n)
{
	put_str(f, s, n, true);
}

void nrr_json_strz(FILE *f, const char *s)
{
	if (s)
		put_str(f, s, strlen(s), false);
	else
		fputs("null", f);
}

/* ---- the streaming writer ---- */

void nrr_jw_init(struct nrr_jw *w, FILE *f, unsigned flags)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	w->flags = flags;
}

static void indent(struct nrr_jw *w, int depth)
{
	fputc('\n', w->f);
	if (!(w->flags & NRR_JW_COMPACT))
		for (int i = 0; i < depth; i++)
			fputs("  ", w->f);
}

/* Before a value (or a key): the separator its container wants. */
static void before(struct nrr_jw *w, bool is_key)
{
	if (w->key) {
		if (is_key)
			abort(); /* a key where its value is due */
		w->key = false;
		return;
	}
	if (!w->depth)
		return;
	if (w->lv[w->depth - 1].obj != is_key)
		abort(); /* a value without its key, or a key in an array */
	bool any = w->lv[w->depth - 1].any;
	if (any)
		fputc(',', w->f);
	if (w->lv[w->depth - 1].block || w->brk)
		indent(w, w->depth);
	else if (any && !(w->flags & NRR_JW_COMPACT))
		fputc(' ', w->f);
	w->lv[w->depth - 1].any = true;
	w->brk = false;
}

static void open_c(struct nrr_jw *w, bool block, bool obj)
{
	before(w, false);
	if (w->depth >= NRR_JW_MAXDEPTH)
		abort();
	w->lv[w->depth].block = block;
	w->lv[w->depth].any = false;
	w->lv[w->depth].obj = obj;
	w->depth++;
	fputc(obj ? '{' : '[', w->f);
}

void nrr_jw_obj(struct nrr_jw *w, bool block)
{
	open_c(w, block, true);
}

void nrr_jw_arr(struct nrr_jw *w, bool block)
{
	open_c(w, block, false);
}

void nrr_jw_end(struct nrr_jw *w)
{
	if (!w->depth || w->key)
		abort();
	w->depth--;
	if (w->lv[w->depth].block)
		indent(w, w->depth);
	fputc(w->lv[w->depth].obj ? '}' : ']', w->f);
}

void nrr_jw_key(struct nrr_jw *w, const char *k)
{
	before(w, true);
	put_str(w->f, k, strlen(k), w->flags & NRR_JW_HTML);
	fputs(w->flags & NRR_JW_COMPACT ? ":" : ": ", w->f);
	w->key = true;
}

void nrr_jw_strn(struct nrr_jw *w, const char *s, size_t n)
{
	before(w, false);
	put_str(w->f, s, n, w->flags & NRR_JW_HTML);
}

void nrr_jw_str(struct nrr_jw *w, const char *s)
{
	if (!s)
		nrr_jw_null(w);
	else
		nrr_jw_strn(w, s, strlen(s));
}

void nrr_jw_int(struct nrr_jw *w, long long v)
{
	before(w, false);
	fprintf(w->f, "%lld", v);
}

void nrr_jw_uint(struct nrr_jw *w, unsigned long long v)
{
	before(w, false);
	fprintf(w->f, "%llu", v);
}

void nrr_jw_bool(struct nrr_jw *w, bool v)
{
	before(w, false);
	fputs(v ? "true" : "false", w->f);
}

void nrr_jw_null(struct nrr_jw *w)
{
	before(w, false);
	fputs("null", w->f);
}

void nrr_jw_fixed(struct nrr_jw *w, double v, int prec)
{
	before(w, false);
	fprintf(w->f, "%.*f", prec, v);
}

void nrr_jw_us(struct nrr_jw *w, int64_t ns)
{
	before(w, false);
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	fprintf(w->f, "%s%llu.%03llu", ns < 0 ? "-" : "", (unsigned long long)(a / 1000),
		(unsigned long long)(a % 1000));
}

void nrr_jw_raw(struct nrr_jw *w, const char *fmt, ...)
{
	before(w, false);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(w->f, fmt, ap);
	va_end(ap);
}

void nrr_jw_value(struct nrr_jw *w)
{
	before(w, false);
}

void nrr_jw_break(struct nrr_jw *w)
{
	w->brk = true;
}

void nrr_jw_kstr(struct nrr_jw *w, const char *k, const char *s)
{
	nrr_jw_key(w, k);
	nrr_jw_str(w, s);
}

void nrr_jw_kint(struct nrr_jw *w, const char *k, long long v)
{
	nrr_jw_key(w, k);
	nrr_jw_int(w, v);
}

void nrr_jw_kuint(struct nrr_jw *w, const char *k, unsigned long long v)
{
	nrr_jw_key(w, k);
	nrr_jw_uint(w, v);
}

void nrr_jw_kbool(struct nrr_jw *w, const char *k, bool v)
{
	nrr_jw_key(w, k);
	nrr_jw_bool(w, v);
}

void nrr_jw_kfixed(struct nrr_jw *w, const char *k, double v, int prec)
{
	nrr_jw_key(w, k);
	nrr_jw_fixed(w, v, prec);
}

void nrr_jw_kus(struct nrr_jw *w, const char *k, int64_t ns)
{
	nrr_jw_key(w, k);
	nrr_jw_us(w, ns);
}
