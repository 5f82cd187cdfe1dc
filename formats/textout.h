/* SPDX-License-Identifier: MIT */
/* textout.h - a buffered text sink without stdio's per-call cost: the
 * rendering of recorded calls (callfmt.c) writes millions of short fields,
 * and printf's parsing and locking was 60 % of `ncclrr dump`'s time. */
#ifndef NCCLRR_TEXTOUT_H
#define NCCLRR_TEXTOUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct nrr_out {
	FILE *f;        /* where full buffers go (fwrite), or NULL: to fd */
	int fd;         /* where they go with f NULL (write(2), whole buffers) */
	char *buf;
	size_t cap, n;
	int err;        /* errno of the first failed write, or 0 */
} nrr_out;

/* @buf of @cap bytes (at least 64: numbers are written whole) is the caller's; nothing is allocated. */
static inline void nrr_out_init(nrr_out *o, FILE *f, char *buf, size_t cap)
{
	o->f = f;
	o->fd = -1;
	o->buf = buf;
	o->cap = cap;
	o->n = 0;
	o->err = 0;
}

/* The same, writing full buffers to file descriptor @fd with write(2):
 * one system call per buffer, no stdio copy (flush stdio's own buffer of
 * the same file first). */
static inline void nrr_out_init_fd(nrr_out *o, int fd, char *buf, size_t cap)
{
	nrr_out_init(o, NULL, buf, cap);
	o->fd = fd;
}

/* Write what is buffered to the FILE or fd (not fflush).  @return 0, or -1 once a
 * write failed (o->err says why; later output is dropped). */
int nrr_out_flush(nrr_out *o);

/* What does not fit the buffer's rest (flushes first) */
void nrr_out_write_slow(nrr_out *o, const void *p, size_t len);

/* @len (<= 32) bytes from @s to @d by fixed-size moves that overlap
 * instead of a call to libc's memcpy: most of dump's copies are names of
 * a few to 30 bytes, and the calls were 4.5 % of its time. */
static inline void nrr_out_copy_short(char *d, const char *s, size_t len)
{
	if (len >= 16) {
		memcpy(d, s, 16);
		memcpy(d + len - 16, s + len - 16, 16);
	} else if (len >= 8) {
		memcpy(d, s, 8);
		memcpy(d + len - 8, s + len - 8, 8);
	} else if (len >= 4) {
		memcpy(d, s, 4);
		memcpy(d + len - 4, s + len - 4, 4);
	} else if (len) {
		d[0] = s[0];
		d[len / 2] = s[len / 2];
		d[len - 1] = s[len - 1];
	}
}

static inline void nrr_out_write(nrr_out *o, const void *p, size_t len)
{
	if (len > o->cap - o->n) {
		nrr_out_write_slow(o, p, len);
		return;
	}
	if (!__builtin_constant_p(len) && len <= 32)
		nrr_out_copy_short(o->buf + o->n, p, len);
	else
		memcpy(o->buf + o->n, p, len);
	o->n += len;
}

static inline void nrr_out_putc(nrr_out *o, char c)
{
	if (o->n == o->cap)
		nrr_out_flush(o);
	o->buf[o->n++] = c;
}

/* A string, copied as it is scanned (no strlen pass first). */
static inline void nrr_out_puts(nrr_out *o, const char *s)
{
	for (;;) {
		char *d = o->buf + o->n, *e = o->buf + o->cap;
		while (d < e && *s)
			*d++ = *s++;
		o->n = (size_t)(d - o->buf);
		if (!*s)
			return;
		nrr_out_flush(o);
	}
}

/* Room for @need bytes at the end of the buffer (@need <= o->cap): the
 * caller writes there and adds what it wrote to o->n. */
static inline char *nrr_out_room(nrr_out *o, size_t need)
{
	if (o->cap - o->n < need)
		nrr_out_flush(o);
	return o->buf + o->n;
}

extern const char nrr_out_digits2[200];   /* "00" "01" ... "99" */

/* Decimal digits of @v (1..20). */
static inline unsigned nrr_out_ndigits(uint64_t v)
{
	unsigned n = 1;
	for (;;) {
		if (v < 10)
			return n;
		if (v < 100)
			return n + 1;
		if (v < 1000)
			return n + 2;
		if (v < 10000)
			return n + 3;
		v /= 10000;
		n += 4;
	}
}

/* @v's @nd decimal digits at @d (no terminator). */
static inline void nrr_out_digits_at(char *d, uint64_t v, unsigned nd)
{
	d += nd;
	while (v >= 100) {
		const char *p = nrr_out_digits2 + 2 * (v % 100);
		v /= 100;
		*--d = p[1];
		*--d = p[0];
	}
	if (v >= 10) {
		*--d = nrr_out_digits2[2 * v + 1];
		*--d = nrr_out_digits2[2 * v];
	} else {
		*--d = (char)('0' + v);
	}
}

/* The last @nd decimal digits of @v at @d, zeros in front. */
static inline void nrr_out_digits_pad(char *d, uint64_t v, unsigned nd)
{
	d += nd;
	for (; nd >= 2; nd -= 2) {
		const char *p = nrr_out_digits2 + 2 * (v % 100);
		v /= 100;
		*--d = p[1];
		*--d = p[0];
	}
	if (nd)
		*--d = (char)('0' + v % 10);
}

/* The nrr_put_* forms write at @d, which the caller has made room at
 * (nrr_out_room), and return the end: a line's fields written through one
 * local pointer, instead of o->n stored and loaded back around every byte
 * (a char store may alias it, so the compiler must reload it, and that
 * chain of store-forwarded loads was a fifth of dump's formatting). */
static inline char *nrr_put_u64(char *d, uint64_t v)   /* at most 20 bytes */
{
	unsigned nd = nrr_out_ndigits(v);
	nrr_out_digits_at(d, v, nd);
	return d + nd;
}

static inline char *nrr_put_i64(char *d, int64_t v)   /* at most 20 bytes */
{
	if (v < 0) {
		*d++ = '-';
		return nrr_put_u64(d, 0 - (uint64_t)v);
	}
	return nrr_put_u64(d, (uint64_t)v);
}

static inline char *nrr_put_mem(char *d, const void *p, size_t len)
{
	if (!__builtin_constant_p(len) && len <= 32)
		nrr_out_copy_short(d, p, len);
	else
		memcpy(d, p, len);
	return d + len;
}

/* lower-case hex digits of @v, no prefix: at most 16 bytes */
static inline char *nrr_put_hex(char *d, uint64_t v)
{
	unsigned n = (67 - (unsigned)__builtin_clzll(v | 1)) / 4;
	for (unsigned i = n; i--; v >>= 4)
		d[i] = "0123456789abcdef"[v & 15];
	return d + n;
}

static inline void nrr_out_u64(nrr_out *o, uint64_t v)
{
	char *d = nrr_out_room(o, 20);
	o->n += (size_t)(nrr_put_u64(d, v) - d);
}

static inline void nrr_out_i64(nrr_out *o, int64_t v)
{
	if (v < 0) {
		nrr_out_putc(o, '-');
		nrr_out_u64(o, 0 - (uint64_t)v);
	} else {
		nrr_out_u64(o, (uint64_t)v);
	}
}
/* lower-case hex digits, no prefix */
void nrr_out_hex(nrr_out *o, uint64_t v);
/* @n bytes as two hex digits each */
void nrr_out_hexbytes(nrr_out *o, const uint8_t *p, size_t n);
/* nrr_out_fixed()'s quotient in units of 10^-@dec when @v (< 2^53) lies
 * exactly halfway between two of them: rounded as printf rounds the
 * double nearest to @v / 10^@scale, decided exactly in integers. */
uint64_t nrr_out_fixed_tie(uint64_t v, unsigned scale, unsigned dec);
/* The cases of nrr_out_fixed() that take printf (negative @v, @scale > 9) */
void nrr_out_fixed_slow(nrr_out *o, int64_t v, unsigned scale, unsigned dec);

/* Whether nrr_put_fixed() takes @v (else nrr_out_fixed_slow(): printf) */
static inline bool nrr_fixed_fast(int64_t v, unsigned scale, unsigned dec)
{
	return !(v < 0 || scale < dec || scale > 9 || (uint64_t)v >= 1ull << 53);   /* (not exact as a double) */
}

/* nrr_out_fixed()'s digits at @d (at most 21 + @dec bytes) when
 * nrr_fixed_fast(@v, @scale, @dec). */
static inline __attribute__((always_inline)) char *nrr_put_fixed(char *d, int64_t v, unsigned scale, unsigned dec)
{
	static const uint64_t ten_to[] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
					   1000000000 };
	/* The quotient's double is within 1e-15 of it, so printf rounds it as
	 * integers do except at an exact tie, where the double's side decides. */
	uint64_t drop = ten_to[scale - dec], q;   /* q: in units of 10^-dec */
	if (drop > 1 && (uint64_t)v % drop == drop / 2)
		q = nrr_out_fixed_tie((uint64_t)v, scale, dec);
	else
		q = ((uint64_t)v + drop / 2) / drop;
	uint64_t whole = q / ten_to[dec];
	unsigned nd = nrr_out_ndigits(whole);
	nrr_out_digits_at(d, whole, nd);
	if (dec) {
		d[nd] = '.';
		nrr_out_digits_pad(d + nd + 1, q % ten_to[dec], dec);
		nd += 1 + dec;
	}
	return d + nd;
}

/* @v / 10^@scale with @dec decimals, exactly as printf("%.*f") prints the
 * same quotient as a double.  Always inline: with constant @scale and @dec
 * (every caller's) the divisions are by constants. */
static inline __attribute__((always_inline)) void nrr_out_fixed(nrr_out *o, int64_t v, unsigned scale, unsigned dec)
{
	if (!nrr_fixed_fast(v, scale, dec)) {
		nrr_out_fixed_slow(o, v, scale, dec);
		return;
	}
	char *d = nrr_out_room(o, 21 + dec);
	o->n += (size_t)(nrr_put_fixed(d, v, scale, dec) - d);
}

/* printf-style, for the rare fields that need it */
void nrr_out_printf(nrr_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
