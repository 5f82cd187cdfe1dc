/* SPDX-License-Identifier: MIT */
/*
 * fuzz_records.c - the record decoder behind the checksums: the input is
 * the raw (uncompressed) payload of one data chunk, wrapped here in a
 * valid file (headers and CRCs computed), so mutations reach the prologue,
 * ENTER/LEAVE/REPEAT/LOG parsing and argument decoding.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt.h"
#include "nrt_internal.h"
#include "callfmt.h"
#include "driver.h"

static const char schema[] =
	"ncclrr-schema 1\nenum R\nv 0 OK\nv 600 NR\nenum F flags\nv 1 A\nv 2 B\n"
	"fn 1 f1 d curesult:R poll\na in h handle:x\na out o bytes\n"
	"fn 2 f2 d errno\na in s str\na inout io i\na in fl flags:F\na in sa sockaddr\n"
	"fn 3 f3 d nccl:R blocking\na in e enum:R\na out fd fd\nend\n";

static size_t put_chunk(uint8_t *at, uint8_t type, uint32_t stream, const void *payload, size_t len)
{
	nrr_chunk_header h = { .type = type, .flags = 0, .stream = stream, .tid = 1, .first_seq = 1,
			       .first_ts = 1000, .payload_size = (uint32_t)len, .raw_size = (uint32_t)len,
			       .nrecords = 1, .payload_crc = nrr_crc32c(0, payload, len) };
	nrr_chunk_header_pack(&h, at);
	memcpy(at + NRR_CHUNK_HEADER_SIZE, payload, len);
	return NRR_CHUNK_HEADER_SIZE + len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 20)
		return 0;
	size_t cap = NRR_FILE_HEADER_SIZE + 4 * NRR_CHUNK_HEADER_SIZE + sizeof(schema) + 2 * size + 16;
	uint8_t *img = malloc(cap);
	if (!img)
		return 0;
	nrr_file_header fh = { .major = 1, .minor = 0, .wall_ns = 1, .mono_ns = 1, .pid = 1 };
	nrr_file_header_pack(&fh, img);
	size_t off = NRR_FILE_HEADER_SIZE;
	off += put_chunk(img + off, NRR_CHUNK_SCHEMA, NRR_STREAM_NONE, schema, sizeof(schema) - 1);
	off += put_chunk(img + off, NRR_CHUNK_META, NRR_STREAM_NONE, "", 0);
	/* the input split in two chunks of one stream at its first 0xff byte */
	const uint8_t *cut = memchr(data, 0xff, size);
	size_t first = cut ? (size_t)(cut - data) : size;
	off += put_chunk(img + off, NRR_CHUNK_DATA, 0, data, first);
	if (cut)
		off += put_chunk(img + off, NRR_CHUNK_DATA, 0, cut + 1, size - first - 1);
	nrr_reader *r;
	nrr_diag d;
	if (nrr_reader_open_mem(&r, img, off, "fuzz.nrt", &d) == 0) {
		FILE *null = fopen("/dev/null", "w");
		nrr_cursor *c;
		const nrr_call *call;
		if (nrr_cursor_open(&c, r, 0) == 0) {
			while (nrr_cursor_next(c, &call) == 0)
				nrr_format_call(null, call, 0.0, "fuzz");
			if (nrr_cursor_seek(c, 2) == 0)
				while (nrr_cursor_next(c, &call) == 0)
					;
			nrr_cursor_close(c);
		}
		fclose(null);
		nrr_reader_close(r);
	}
	free(img);
	return 0;
}
