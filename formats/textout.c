/* SPDX-License-Identifier: MIT */
/* textout.c - see textout.h. */
#include <errno.h>
#include <stdarg.h>

#include "textout.h"

int nrr_out_flush(nrr_out *o)
{
	if (o->n && !o->err && fwrite(o->buf, 1, o->n, o->f) != o->n)
		o->err = errno ? errno : EIO;
	o->n = 0;
	return o->err ? -1 : 0;
}

void nrr_out_write_slow(nrr_out *o, const void *p, size_t len)
{
	nrr_out_flush(o);
	if (len > o->cap) {
		if (!o->err && fwrite(p, 1, len, o->f) != len)
			o->err = errno ? errno : EIO;
		return;
	}
	memcpy(o->buf + o->n, p, len);
	o->n += len;
}

/* Room for @need bytes at the end of the buffer (@need <= o->cap). */
static char *room(nrr_out *o, size_t need)
{
	if (o->cap - o->n < need)
		nrr_out_flush(o);
	return o->buf + o->n;
}

static const char digits2[] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

void nrr_out_u64(nrr_out *o, uint64_t v)
{
	char t[20], *e = t + 20, *d = e;
	while (v >= 100) {
		const char *p = digits2 + 2 * (v % 100);
		v /= 100;
		*--d = p[1];
		*--d = p[0];
	}
	if (v >= 10) {
		*--d = digits2[2 * v + 1];
		*--d = digits2[2 * v];
	} else {
		*--d = (char)('0' + v);
	}
	nrr_out_write(o, d, (size_t)(e - d));
}

void nrr_out_i64(nrr_out *o, int64_t v)
{
	if (v < 0) {
		nrr_out_putc(o, '-');
		nrr_out_u64(o, 0 - (uint64_t)v);
	} else {
		nrr_out_u64(o, (uint64_t)v);
	}
}

static const char hexdig[] = "0123456789abcdef";

void nrr_out_hex(nrr_out *o, uint64_t v)
{
	size_t n = 1;
	for (uint64_t x = v; x >= 16; x >>= 4)
		n++;
	char *d = room(o, 16);
	for (size_t i = n; i--; v >>= 4)
		d[i] = hexdig[v & 15];
	o->n += n;
}

void nrr_out_hexbytes(nrr_out *o, const uint8_t *p, size_t n)
{
	while (n) {
		size_t k = n > 32 ? 32 : n;
		char *d = room(o, 64);
		for (size_t i = 0; i < k; i++) {
			d[2 * i] = hexdig[p[i] >> 4];
			d[2 * i + 1] = hexdig[p[i] & 15];
		}
		o->n += 2 * k;
		p += k;
		n -= k;
	}
}

static const uint64_t ten_to[] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000 };

void nrr_out_fixed(nrr_out *o, int64_t v, unsigned scale, unsigned dec)
{
	/* The quotient's double is within 1e-15 of it, so printf rounds it as
	 * integers do except at an exact tie, where the double's side decides. */
	uint64_t drop = scale > dec ? ten_to[scale - dec] : 1;
	if (v < 0 || scale < dec || scale > 9 || (drop > 1 && (uint64_t)v % drop == drop / 2)) {
		nrr_out_printf(o, "%.*f", (int)dec, (double)v / (double)ten_to[scale <= 9 ? scale : 9]);
		return;
	}
	uint64_t q = ((uint64_t)v + drop / 2) / drop;   /* in units of 10^-dec */
	nrr_out_u64(o, q / ten_to[dec]);
	if (dec) {
		uint64_t frac = q % ten_to[dec];
		char *d = room(o, 1 + dec);
		d[0] = '.';
		for (unsigned i = dec; i; frac /= 10)
			d[i--] = (char)('0' + frac % 10);
		o->n += 1 + dec;
	}
}

void nrr_out_printf(nrr_out *o, const char *fmt, ...)
{
	char t[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t, sizeof(t), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(t)) {
		nrr_out_write(o, t, (size_t)n);
		return;
	}
	nrr_out_flush(o);
	va_start(ap, fmt);
	if (!o->err && vfprintf(o->f, fmt, ap) < 0)
		o->err = errno ? errno : EIO;
	va_end(ap);
}
