/* SPDX-License-Identifier: MIT */
/* nrt_common.c - error strings, diagnostics, sizes, LEB128 and CRC-32C. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt.h"

const char *nrr_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case NRR_EBADMAGIC: return "not an ncclrr trace file (bad magic)";
	case NRR_EVERSION: return "trace written by a newer ncclrr format version";
	case NRR_ECORRUPT: return "trace data is corrupt";
	case NRR_ETRUNC: return "trace data is truncated";
	case NRR_ESCHEMA: return "trace schema cannot be parsed";
	case NRR_EZSTD: return "zstd decompression failed";
	case NRR_EEOF: return "end of trace";
	case NRR_ENOTFOUND: return "no such call in the trace";
	default:
		if (err < 0 && err > -4096)
			return strerror(-err);
		return "unknown error";
	}
}

void nrr_diag_format(const nrr_diag *d, char *buf, size_t len)
{
	if (d->path[0])
		snprintf(buf, len, "Cannot read trace: file=%s offset=%llu: %s",
			 d->path, (unsigned long long)d->offset,
			 d->msg[0] ? d->msg : nrr_strerror(d->code));
	else
		snprintf(buf, len, "Cannot read trace: %s",
			 d->msg[0] ? d->msg : nrr_strerror(d->code));
}

bool nrr_parse_size(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (end == s || errno || *s == '-')
		return false;
	switch (*end) {
	case 'k': case 'K': x <<= 10; end++; break;
	case 'm': case 'M': x <<= 20; end++; break;
	case 'g': case 'G': x <<= 30; end++; break;
	default: break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	*v = x;
	return *end == '\0';
}

int nrr_get_uvar(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p = *pp;
	uint64_t r = 0;
	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (p >= end)
			return NRR_ETRUNC;
		uint8_t b = *p++;
		if (shift == 63 && b > 1)
			return NRR_ECORRUPT;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*pp = p;
			*v = r;
			return 0;
		}
	}
	return NRR_ECORRUPT;
}

int nrr_get_svar(const uint8_t **pp, const uint8_t *end, int64_t *v)
{
	uint64_t u;
	int rc = nrr_get_uvar(pp, end, &u);
	if (rc == 0)
		*v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	return rc;
}

static uint32_t crc_table[8][256];
static int crc_ready;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & -(c & 1));
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
					  crc_table[0][crc_table[t - 1][i] & 0xff];
	__atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

uint32_t nrr_crc32c(uint32_t crc, const void *buf, size_t len)
{
	if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
		crc_init();  /* idempotent: racing threads compute the same table */
	const uint8_t *p = buf;
	crc = ~crc;
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		w ^= crc;
		crc = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^
		      crc_table[5][(w >> 16) & 0xff] ^ crc_table[4][(w >> 24) & 0xff] ^
		      crc_table[3][(w >> 32) & 0xff] ^ crc_table[2][(w >> 40) & 0xff] ^
		      crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

bool nrr_reserve(void *arr, size_t need, size_t *cap, size_t elem)
{
	void **a = arr;
	if (need <= *cap)
		return true;
	size_t c = *cap ? *cap : 16, bytes;
	while (c < need && c <= SIZE_MAX / 2)
		c *= 2;
	if (c < need || __builtin_mul_overflow(c, elem, &bytes))
		return false;
	void *x = realloc(*a, bytes);
	if (!x)
		return false;
	*a = x;
	*cap = c;
	return true;
}

bool nrr_grow(void *arr, size_t n, size_t *cap, size_t elem)
{
	return n < SIZE_MAX && nrr_reserve(arr, n + 1, cap, elem);
}
