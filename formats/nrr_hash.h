/* SPDX-License-Identifier: MIT */
/*
 * nrr_hash.h - the one string hash of ncclrr: 64-bit FNV-1a.
 * nrr_hash(p, n, NRR_HASH_INIT) hashes @n bytes; pass a previous result
 * as @h to go on with more bytes (or another start value, a seed, for a
 * second independent hash).  nrr_hash_str() does the same for a C string.
 * Header-only: every component (formats, topo, the tracer, the replayer,
 * the analyzer) includes it.
 */
#ifndef NRR_HASH_H
#define NRR_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NRR_HASH_INIT 0xcbf29ce484222325ull

static inline uint64_t nrr_hash(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static inline uint64_t nrr_hash_str(const char *s, uint64_t h)
{
	return nrr_hash(s, strlen(s), h);
}

#endif
