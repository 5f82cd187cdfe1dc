/* SPDX-License-Identifier: MIT */
/* fuzz_varint.c - LEB128 decoding of arbitrary bytes, re-encoded identically. */
#include <stdlib.h>
#include <string.h>

#include "nrt.h"
#include "driver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	while (p < end) {
		const uint8_t *start = p;
		uint64_t v;
		if (nrr_get_uvar(&p, end, &v))
			break;
		uint8_t b[16];
		uint8_t *e = nrr_put_uvar(b, v);
		/* canonical encodings round-trip byte for byte */
		if ((size_t)(e - b) == (size_t)(p - start) && memcmp(b, start, (size_t)(p - start)) != 0)
			abort();
	}
	return 0;
}
