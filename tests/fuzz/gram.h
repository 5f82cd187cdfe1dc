/* SPDX-License-Identifier: MIT */
/*
 * gram.h - the fuzz input as a stream of choices for the grammar-aware
 * targets (fuzz_schema_gram.c, fuzz_meta_gram.c): they generate text that
 * follows a grammar (and breaks it where a choice says so), so that
 * libFuzzer's coverage steers the choices, not raw bytes that seldom get
 * past the first token.  An exhausted input chooses 0.
 */
#ifndef NCCLRR_FUZZ_GRAM_H
#define NCCLRR_FUZZ_GRAM_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gram {
	const uint8_t *p;
	size_t n, i;
	char *out;       /* the text generated */
	size_t len, cap;
};

/* An invariant of what a parser accepted: a crash the fuzzer keeps. */
#define REQUIRE(c)                                                                 \
	do {                                                                       \
		if (!(c)) {                                                        \
			fprintf(stderr, "%s: %s fails\n", __FILE__, #c);           \
			abort();                                                   \
		}                                                                  \
	} while (0)

/* A choice among @k (0 when the input is exhausted). */
static inline unsigned pick(struct gram *g, unsigned k)
{
	if (k <= 1 || g->i >= g->n)
		return 0;
	return g->p[g->i++] % k;
}

/* One of @n strings. */
static inline const char *one_of(struct gram *g, const char *const *v, unsigned n)
{
	return v[pick(g, n)];
}

/* Mostly one of the @ngood valid strings, one time in 16 one of the
 * @nbad that break the grammar (deep paths need mostly valid text). */
static inline const char *good_or_bad(struct gram *g, const char *const *good, unsigned ngood,
				      const char *const *bad, unsigned nbad)
{
	return pick(g, 16) == 15 ? one_of(g, bad, nbad) : one_of(g, good, ngood);
}
#define GOOD_OR_BAD(g, good, bad) good_or_bad(g, good, sizeof(good) / sizeof(good[0]), bad, sizeof(bad) / sizeof(bad[0]))

static inline void emit(struct gram *g, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char buf[512];
	int k = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	size_t l = (size_t)k < sizeof(buf) ? (size_t)k : sizeof(buf) - 1;
	if (g->len + l + 1 > g->cap) {
		size_t cap = (g->cap ? g->cap * 2 : 4096) + l;
		char *o = realloc(g->out, cap);
		if (!o)
			abort();
		g->out = o;
		g->cap = cap;
	}
	memcpy(g->out + g->len, buf, l);
	g->len += l;
	g->out[g->len] = '\0';
}

/* @k copies of character @c (long tokens and values) */
static inline void emit_run(struct gram *g, char c, size_t k)
{
	for (size_t j = 0; j < k; j++)
		emit(g, "%c", c);
}

/* A number at an edge: 0, ±1, the int32 and int64 limits, one past them
 * as text, a large count, or a byte of the input. */
static inline void emit_number(struct gram *g)
{
	static const char *const edge[] = { "0", "1", "-1", "2147483647", "2147483648", "-2147483648",
					    "9223372036854775807", "9223372036854775808", "-9223372036854775808",
					    "18446744073709551615", "18446744073709551616", "1000000000", "1048577",
					    "007", "+3", "1e9", "" };
	if (pick(g, 3))
		emit(g, "%s", one_of(g, edge, sizeof(edge) / sizeof(edge[0])));
	else
		emit(g, "%u", pick(g, 256));
}

/* Flip or cut a few bytes of the text (what the grammar does not reach). */
static inline void damage(struct gram *g)
{
	unsigned k = pick(g, 8) == 7 ? 1 + pick(g, 3) : 0;
	for (unsigned j = 0; j < k && g->len; j++) {
		size_t at = ((size_t)pick(g, 256) << 8 | pick(g, 256)) % g->len;
		switch (pick(g, 3)) {
		case 0: g->out[at] ^= (char)(1u << pick(g, 8)); break;
		case 1: g->len = at; g->out[at] = '\0'; break;
		default: g->out[at] = (char)" \n\t=:"[pick(g, 5)]; break;
		}
	}
}

#endif
