/* SPDX-License-Identifier: MIT */
/* fuzz_reader.c - a whole .nrt image: open, every stream, merge, seek, format. */
#include <stdio.h>

#include "nrt.h"
#include "callfmt.h"
#include "driver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nrr_reader *r;
	nrr_diag d;
	if (nrr_reader_open_mem(&r, data, size, "fuzz.nrt", &d))
		return 0;
	FILE *null = fopen("/dev/null", "w");
	const nrr_call *c;
	for (uint32_t s = 0; s < nrr_reader_info(r)->nstreams; s++) {
		nrr_cursor *cur;
		if (nrr_cursor_open(&cur, r, s))
			continue;
		uint64_t last = 0;
		while (nrr_cursor_next(cur, &c) == 0)
			last = c->seq;
		if (nrr_cursor_seek(cur, last / 2 + 1) == 0)
			while (nrr_cursor_next(cur, &c) == 0)
				;
		nrr_cursor_close(cur);
	}
	nrr_merge *m;
	if (nrr_merge_open(&m, &r, 1) == 0) {
		while (nrr_merge_next(m, &c, NULL) == 0)
			nrr_format_call(null, c, 0.0, "fuzz");
		nrr_merge_close(m);
	}
	size_t n;
	fwrite(nrr_reader_meta_text(r, &n), 1, n, null);
	nrr_reader_meta(r, "host");
	fclose(null);
	nrr_reader_close(r);
	return 0;
}
