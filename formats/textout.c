/* SPDX-License-Identifier: MIT */
/* textout.c - see textout.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "textout.h"

/* @len bytes at @p to the FILE or the fd; o->err on failure */
static void put_out(nrr_out *o, const void *p, size_t len)
{
	if (o->err)
		return;
	if (o->f) {
		if (fwrite(p, 1, len, o->f) != len)
			o->err = errno ? errno : EIO;
		return;
	}
	const char *s = p;
	while (len) {
		ssize_t k = write(o->fd, s, len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			o->err = k < 0 ? errno : EIO;
			return;
		}
		s += k;
		len -= (size_t)k;
	}
}

int nrr_out_flush(nrr_out *o)
{
	if (o->n)
		put_out(o, o->buf, o->n);
	o->n = 0;
	return o->err ? -1 : 0;
}

void nrr_out_write_slow(nrr_out *o, const void *p, size_t len)
{
	nrr_out_flush(o);
	if (len > o->cap) {
		put_out(o, p, len);
		return;
	}
	memcpy(o->buf + o->n, p, len);
	o->n += len;
}

const char nrr_out_digits2[200] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

static const char hexdig[] = "0123456789abcdef";

void nrr_out_hex(nrr_out *o, uint64_t v)
{
	char *d = nrr_out_room(o, 16);
	o->n += (size_t)(nrr_put_hex(d, v) - d);
}

void nrr_out_hexbytes(nrr_out *o, const uint8_t *p, size_t n)
{
	while (n) {
		size_t k = n > 32 ? 32 : n;
		char *d = nrr_out_room(o, 64);
		for (size_t i = 0; i < k; i++) {
			d[2 * i] = hexdig[p[i] >> 4];
			d[2 * i + 1] = hexdig[p[i] & 15];
		}
		o->n += 2 * k;
		p += k;
		n -= k;
	}
}

uint64_t nrr_out_fixed_tie(uint64_t v, unsigned scale, unsigned dec)
{
	uint64_t p10 = 1, drop = 1;
	for (unsigned i = 0; i < scale; i++)
		p10 *= 10;
	for (unsigned i = dec; i < scale; i++)
		drop *= 10;
	/* d = (double)v / 10^scale = mant * 2^-sh exactly; the tie is
	 * v / 10^scale exactly: compare mant * 10^scale with v * 2^sh (both
	 * below 2^84, as d < 2^53 and 10^scale < 2^30) */
	double d = (double)v / (double)p10;
	uint64_t bits;
	memcpy(&bits, &d, sizeof(bits));
	unsigned exp = (unsigned)(bits >> 52 & 0x7ff);
	uint64_t mant = (bits & ((1ull << 52) - 1)) | (1ull << 52);
	unsigned sh = 1075 - exp;   /* v >= 1, so d is normal and below 2^53 */
	unsigned __int128 lhs = (unsigned __int128)mant * p10, rhs = (unsigned __int128)v << sh;
	uint64_t q = v / drop;   /* rounded down */
	if (lhs > rhs || (lhs == rhs && (q & 1)))   /* above the tie, or on it: to even */
		q++;
	return q;
}

void nrr_out_fixed_slow(nrr_out *o, int64_t v, unsigned scale, unsigned dec)
{
	double div = 1;
	for (unsigned i = 0; i < scale && i < 9; i++)
		div *= 10;
	nrr_out_printf(o, "%.*f", (int)dec, (double)v / div);
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
	char *big = malloc((size_t)n + 1);
	if (!big) {
		o->err = ENOMEM;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	nrr_out_write(o, big, (size_t)n);
	free(big);
}
