/* SPDX-License-Identifier: MIT */
/* textout.h - a buffered text sink without stdio's per-call cost: the
 * rendering of recorded calls (callfmt.c) writes millions of short fields,
 * and printf's parsing and locking was 60 % of `ncclrr dump`'s time. */
#ifndef NCCLRR_TEXTOUT_H
#define NCCLRR_TEXTOUT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct nrr_out {
	FILE *f;        /* where full buffers go (fwrite) */
	char *buf;
	size_t cap, n;
	int err;        /* errno of the first failed write, or 0 */
} nrr_out;

/* @buf of @cap bytes (at least 64: numbers are written whole) is the caller's; nothing is allocated. */
static inline void nrr_out_init(nrr_out *o, FILE *f, char *buf, size_t cap)
{
	o->f = f;
	o->buf = buf;
	o->cap = cap;
	o->n = 0;
	o->err = 0;
}

/* Write what is buffered to the FILE (not fflush).  @return 0, or -1 once a
 * write failed (o->err says why; later output is dropped). */
int nrr_out_flush(nrr_out *o);

/* What does not fit the buffer's rest (flushes first) */
void nrr_out_write_slow(nrr_out *o, const void *p, size_t len);

static inline void nrr_out_write(nrr_out *o, const void *p, size_t len)
{
	if (len > o->cap - o->n) {
		nrr_out_write_slow(o, p, len);
		return;
	}
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

void nrr_out_u64(nrr_out *o, uint64_t v);
void nrr_out_i64(nrr_out *o, int64_t v);
/* lower-case hex digits, no prefix */
void nrr_out_hex(nrr_out *o, uint64_t v);
/* @n bytes as two hex digits each */
void nrr_out_hexbytes(nrr_out *o, const uint8_t *p, size_t n);
/* @v / 10^@scale with @dec decimals, rounded as printf("%.*f") rounds the
 * same quotient as a double (ties and negative values take printf). */
void nrr_out_fixed(nrr_out *o, int64_t v, unsigned scale, unsigned dec);
/* printf-style, for the rare fields that need it */
void nrr_out_printf(nrr_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
